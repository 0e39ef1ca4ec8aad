// Instructions of one autoschedule() call, for callgrind (load-independent, unlike the
// wall-clock benchmarks on a shared machine):
//   autoschedule_probe <loop|any> <calls> [limit]
// runs `calls` searches at p = 32, m = 256 with the 28.3B model's profiled times of
// benchmarks/autoschedule.cpp (T_F 57.502, T_I 57.071, T_W 42.939, p2p 1.049), M_B = M_W = 1
// and a memory limit of `limit` activations per rank (default 32), over one stage per rank
// (loop) or every placement (any). Instructions per search = (Ir of 2 calls - Ir of 1 call),
// with Ir the program total of `valgrind --tool=callgrind`. The printed span must be the same
// before and after a change.
#include <pipesched/search/autoschedule.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

int main(int argc, char** argv) {
    namespace ps = pipesched;
    if (argc != 3 && argc != 4) {
        std::fprintf(stderr, "usage: autoschedule_probe <loop|any> <calls> [limit]\n");
        return 2;
    }
    const std::string_view where = argv[1];
    if (where != "loop" && where != "any") {
        std::fprintf(stderr, "autoschedule_probe: unknown placement '%.*s'\n", static_cast<int>(where.size()), where.data());
        return 2;
    }
    const int calls = std::atoi(argv[2]);
    ps::pipeline_costs costs{};
    costs.uniform = {57.502, 57.071, 42.939};
    costs.p2p = 1.049;
    ps::pipeline_memory memory{};
    memory.uniform.limit = argc == 4 ? std::atof(argv[3]) : 32.0;
    ps::autoschedule_options options{};
    options.placement = where == "loop" ? ps::search_placement::loop : ps::search_placement::any;
    volatile std::uint32_t p = 32, m = 256; // not folded into the call
    double sum = 0.0;
    for (int i = 0; i < calls; ++i) sum += ps::autoschedule({p, m, 1}, costs, memory, options).span;
    std::printf("%.6f\n", sum / calls);
    return 0;
}
