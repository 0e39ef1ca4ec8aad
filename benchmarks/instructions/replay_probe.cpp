// Instructions per event of validate, simulate and their iteration forms, for callgrind
// (load-independent, unlike the wall-clock benchmarks on a shared machine):
//   replay_probe <validate|simulate|validate_iteration|simulate_iteration> <calls>
// runs `calls` calls on interleaved_1f1b<>{{32, 256, 2}} (32,768 schedule events; 97,664 in its
// iteration). Instructions per event = (Ir of 3 calls - Ir of 1 call) / 2 / events, with Ir the
// program total of `valgrind --tool=callgrind`; the difference of whole runs removes start-up
// and the policy's construction. The printed checksum keeps the calls from being optimised
// away and must be the same before and after a change.
#include <pipesched/analysis/simulate_iteration.hpp>
#include <pipesched/analysis/validate_iteration.hpp>
#include <pipesched/iteration.hpp>
#include <pipesched/policies/interleaved_1f1b.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

namespace ps = pipesched;

using policy = ps::interleaved_1f1b<>;

// The policy goes through a volatile read so the optimiser cannot fold a call into a constant.
policy make_policy() {
    volatile std::uint32_t p = 32, m = 256, v = 2;
    return policy{{p, m, v}};
}

template <class F>
double run(int calls, F&& f) {
    double sum = 0;
    for (int i = 0; i < calls; ++i) sum += f();
    return sum;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: replay_probe <validate|simulate|validate_iteration|simulate_iteration> <calls>\n");
        return 2;
    }
    const std::string_view what = argv[1];
    const int calls = std::atoi(argv[2]);
    const policy pol = make_policy();
    double sum = 0;
    if (what == "validate") {
        sum = run(calls, [&] { return ps::validate(pol) ? 1.0 : 0.0; });
    } else if (what == "simulate") {
        sum = run(calls, [&] { return ps::simulate(pol).makespan; });
    } else if (what == "validate_iteration") {
        sum = run(calls, [&] { return ps::validate(ps::iteration{pol}) ? 1.0 : 0.0; });
    } else if (what == "simulate_iteration") {
        sum = run(calls, [&] { return ps::simulate(ps::iteration{pol}).makespan; });
    } else {
        std::fprintf(stderr, "replay_probe: unknown call '%.*s'\n", static_cast<int>(what.size()), what.data());
        return 2;
    }
    std::printf("%s %d %.17g\n", argv[1], calls, sum);
    return 0;
}
