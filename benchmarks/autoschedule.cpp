// How long autoschedule() takes, and what it finds on the Zero Bubble paper's 12 settings.
//
//   BM_autoschedule/<placement>/p<ranks>_m<microbatches>_limit<L>   one full search with the
//       28.3B model's profiled times, over one placement (loop: one stage per rank) or all
//       (any: loop, V and interleaved with 2 chunks); the targets: placement any, p = 8, m = 32
//       under 50 ms and p = 32, m = 256 under 1 s.
//   BM_paper/<model>/m<microbatches>/limit<L>[/paper_memory]   one search (one stage per rank,
//       the placement of the heuristic it is compared with) per setting of Qi et
//       al. (ICLR 2024), Table 3 models with the profiled T_F, T_B (= T_I here), T_W and T_comm
//       of the paper's appendix, memory limit p (ZB-1p's) or 2p (ZB-2p's) activations. Without
//       the suffix M_B = M_W = 1 (I releases nothing); with /paper_memory the authors' model
//       (their runtime.py: F allocates 34h + 5as, W releases 32h, limit p or 2p times the F's
//       allocation), which lets I release most of an activation. Counters: bubble
//       (autoschedule), heuristic_bubble (the published heuristic's eight variants, as
//       implemented here and checked against the authors' code), bound_bubble (the bubble of
//       autoschedule_result::lower_bound: no schedule does better), improvement = 1 -
//       span / heuristic_span.
//   BM_v_schedule/<v_min|v_half>/p<ranks>_m<microbatches>   building the V-Min / V-Half order.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include <pipesched/search/autoschedule.hpp>
#include <pipesched/policies/v_half.hpp>
#include <pipesched/policies/v_min.hpp>

namespace {

namespace ps = pipesched;

struct model {
    const char* name;
    std::uint32_t ranks;
    double forward, backward_input, backward_weight, p2p;
    std::uint32_t microbatches[3];
    double hidden, heads, sequence; ///< for the authors' memory model
};

// Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024): Table 3 (models: hidden size,
// heads, sequence length 1024, p, m) and the appendix table of profiled times. Transcribed from
// the paper without a stored copy here: neither the search corpora nor the authors' repository
// (sail-sg/zero-bubble-pipeline-parallelism at 39f2c186, which has no profiled numbers) hold
// the tables, so the values are unverified (see benchmarks/README.md).
constexpr model paper_models[] = {
    {"1.5B", 8, 18.522, 18.086, 9.337, 0.601, {24, 32, 64}, 2304, 24, 1024},
    {"6.2B", 8, 29.718, 29.444, 19.927, 0.527, {24, 32, 64}, 4096, 32, 1024},
    {"14.6B", 16, 45.619, 45.374, 33.844, 0.789, {48, 64, 128}, 5120, 40, 1024},
    {"28.3B", 32, 57.502, 57.071, 42.939, 1.049, {96, 128, 256}, 6144, 48, 1024},
};

/// The authors' activation model (runtime.py of their repository): F allocates 34h + 5as per
/// token and layer, W releases 32h; in units of F's allocation.
double paper_weight_memory(const model& md) {
    return 32.0 * md.hidden / (34.0 * md.hidden + 5.0 * md.heads * md.sequence);
}

ps::pipeline_costs costs_of(const model& md) {
    ps::pipeline_costs c{};
    c.uniform = {md.forward, md.backward_input, md.backward_weight};
    c.p2p = md.p2p;
    return c;
}

void BM_autoschedule(benchmark::State& state, ps::search_placement placement, std::uint32_t p, std::uint32_t m,
                     double limit) {
    const ps::pipeline_costs costs = costs_of(paper_models[3]);
    ps::pipeline_memory memory{};
    memory.uniform.limit = limit;
    ps::autoschedule_options options{};
    options.placement = placement;
    double span = 0.0;
    for (auto _ : state) {
        const ps::autoschedule_result r = ps::autoschedule({p, m, 1}, costs, memory, options);
        span = r.span;
        benchmark::DoNotOptimize(r.span); // const: the non-const overload's "+m,r" can clobber a double with g++

    }
    state.counters["span"] = span;
}

void BM_paper(benchmark::State& state, const model& md, std::uint32_t m, double limit, bool paper_memory) {
    const ps::pipeline_costs costs = costs_of(md);
    ps::pipeline_memory memory{};
    memory.uniform.limit = limit;
    if (paper_memory) memory.uniform.weight = paper_weight_memory(md);
    ps::autoschedule_options options{};
    options.placement = ps::search_placement::loop;
    ps::autoschedule_result r{};
    for (auto _ : state) {
        r = ps::autoschedule({md.ranks, m, 1}, costs, memory, options);
        benchmark::DoNotOptimize(std::as_const(r).span);
    }
    if (!r) {
        state.SkipWithError(r.message.c_str());
        return;
    }
    const double work = m * (md.forward + md.backward_input + md.backward_weight);
    state.counters["bubble"] = r.bubble_fraction;
    state.counters["heuristic_bubble"] = (r.heuristic_span - work) / r.heuristic_span;
    state.counters["bound_bubble"] = (r.lower_bound - work) / r.lower_bound;
    state.counters["improvement"] = 1.0 - r.span / r.heuristic_span;
}

template <class P>
void BM_v_schedule(benchmark::State& state, std::uint32_t p, std::uint32_t m) {
    for (auto _ : state) {
        const P pol{{p, m, 2}};
        const std::size_t n = pol.size(0);
        benchmark::DoNotOptimize(n);
    }
}

const bool autoschedule_benchmarks_registered = [] {
    for (const ps::search_placement placement : {ps::search_placement::loop, ps::search_placement::any}) {
        for (const auto& [p, m, limit] : {std::tuple{8u, 32u, 8.0}, std::tuple{8u, 32u, 4.0}, std::tuple{32u, 256u, 32.0},
                                          std::tuple{32u, 256u, 20.0}}) {
            const std::string name = "BM_autoschedule/" + std::string{ps::to_string(placement)} + "/p" +
                                     std::to_string(p) + "_m" + std::to_string(m) + "_limit" +
                                     std::to_string(static_cast<int>(limit));
            benchmark::RegisterBenchmark(name.c_str(), BM_autoschedule, placement, p, m, limit)
                ->Unit(benchmark::kMillisecond);
        }
    }
    for (const model& md : paper_models) {
        for (const std::uint32_t m : md.microbatches) {
            for (const bool paper_memory : {false, true}) {
                for (const std::uint32_t factor : {1u, 2u}) {
                    const double limit = static_cast<double>(factor * md.ranks);
                    const std::string name = std::string{"BM_paper/"} + md.name + "/m" + std::to_string(m) +
                                             "/limit" + std::to_string(factor * md.ranks) +
                                             (paper_memory ? "/paper_memory" : "");
                    benchmark::RegisterBenchmark(name.c_str(), BM_paper, md, m, limit, paper_memory)
                        ->Unit(benchmark::kMillisecond)
                        ->Iterations(1);
                }
            }
        }
    }
    for (const auto& [p, m] : {std::pair{8u, 32u}, std::pair{32u, 256u}}) {
        const std::string shape = "p" + std::to_string(p) + "_m" + std::to_string(m);
        benchmark::RegisterBenchmark(("BM_v_schedule/v_min/" + shape).c_str(), BM_v_schedule<ps::v_min>, p, m)
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("BM_v_schedule/v_half/" + shape).c_str(), BM_v_schedule<ps::v_half>, p, m)
            ->Unit(benchmark::kMillisecond);
    }
    return true;
}();

} // namespace
