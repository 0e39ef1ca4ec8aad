// Instructions of emitting and checking one whole iteration against emitting the compute order
// alone, for callgrind (load-independent, unlike the wall-clock benchmarks on a shared machine):
//   iteration_probe <schedule> <ranks> <microbatches> <mode> <calls>
// with a schedule name the catalog knows (chunks: 2 for the multi-chunk schedules, else 1) and
// one of the modes
//   order                 emit(pol) into an order-dependent hash (the reference)
//   emit_iteration        emit(iteration{pol}) into the same hash
//   validate_iteration    validate(iteration{pol})
//   emit_validate         emit(iteration{pol}) and validate(iteration{pol})
//   validate_simulate     validate(pol) and simulate(pol)
//   none                  builds the policy only
// Instructions per call = (Ir of 3 calls - Ir of 1 call) / 2, with Ir the program total of
// `valgrind --tool=callgrind`; the ratio of two modes' figures is what benchmarks/README.md
// reports ("Iteration against the order"). The printed checksum keeps the calls from being
// optimised away and must be the same before and after a change.
#include <pipesched/analysis/simulate.hpp>
#include <pipesched/analysis/validate.hpp>
#include <pipesched/analysis/validate_iteration.hpp>
#include <pipesched/catalog.hpp>
#include <pipesched/iteration.hpp>
#include <pipesched/policy.hpp>
#include <pipesched/sink.hpp>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

namespace ps = pipesched;

struct hash_sink {
    std::uint64_t acc = 0;
    void push(const ps::event& e) noexcept { acc = std::rotl(acc, 5) ^ std::bit_cast<std::uint64_t>(e); }
};

template <class P>
[[gnu::noinline]] double one_call(const P& pol, std::string_view mode) {
    if (mode == "order") {
        hash_sink s;
        ps::emit(pol, s);
        return static_cast<double>(s.acc & 0xFFFF);
    }
    if (mode == "emit_iteration" || mode == "emit_validate") {
        const ps::iteration it{pol};
        hash_sink s;
        ps::emit(it, s);
        double x = static_cast<double>(s.acc & 0xFFFF);
        if (mode == "emit_validate") x += ps::validate(it) ? 1.0 : 0.0;
        return x;
    }
    if (mode == "validate_iteration") return ps::validate(ps::iteration{pol}) ? 1.0 : 0.0;
    if (mode == "validate_simulate") return (ps::validate(pol) ? 1.0 : 0.0) + ps::simulate(pol).makespan;
    return 0.0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: iteration_probe <schedule> <ranks> <microbatches> "
                             "<order|emit_iteration|validate_iteration|emit_validate|validate_simulate|none> <calls>\n");
        return 2;
    }
    const auto id = ps::find_schedule(argv[1]);
    if (!id) {
        std::fprintf(stderr, "iteration_probe: unknown schedule\n");
        return 2;
    }
    // Through volatile reads, so that the optimiser cannot fold a call into a constant.
    volatile std::uint32_t ranks = static_cast<std::uint32_t>(std::atoi(argv[2]));
    volatile std::uint32_t microbatches = static_cast<std::uint32_t>(std::atoi(argv[3]));
    const std::uint32_t chunks = ps::info(*id).multi_chunk ? 2 : 1;
    const std::string_view mode = argv[4];
    const int calls = std::atoi(argv[5]);
    double sum = 0;
    std::size_t events = 0;
    const ps::schedule_options o{{ranks, microbatches, chunks}};
    ps::with_schedule(*id, o, [&](const auto& pol) {
        if (!pol.check()) return;
        events = ps::event_count(pol);
        for (int i = 0; i < calls; ++i) sum += one_call(pol, mode);
    });
    std::printf("%s %s events %zu checksum %.17g\n", argv[1], argv[4], events, sum);
    return 0;
}
