// How long plan() takes for a large model: every catalogued schedule at every legal chunk
// count, and the auto-scheduler, replayed with real-unit per-stage costs.
//
//   BM_plan/layers128_pp16_m256   a 128-layer, 16384-wide GQA model (about 350 B parameters),
//       TP 8, PP 16, 256 microbatches, full recompute: schedules at 1, 2, 4 and 8 chunks. The
//       target is under 2 s on the project's 2-core machine (docs/plan.md).
#include <benchmark/benchmark.h>

#include <string_view>
#include <vector>

#include <pipesched/plan/megatron_args.hpp>
#include <pipesched/plan/plan.hpp>

namespace {

namespace pl = pipesched::plan;

void BM_plan(benchmark::State& state) {
    const std::vector<std::string_view> args{
        "--num-layers", "128", "--hidden-size", "16384", "--num-attention-heads", "128", "--group-query-attention",
        "--num-query-groups", "8", "--swiglu", "--normalization", "RMSNorm", "--untie-embeddings-and-output-weights",
        "--disable-bias-linear", "--vocab-size", "128256", "--seq-length", "8192", "--micro-batch-size", "1",
        "--global-batch-size", "256", "--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "16",
        "--sequence-parallel", "--use-distributed-optimizer", "--recompute-granularity", "full"};
    const pl::megatron_arguments a = pl::read_megatron_arguments(args);
    const pl::gpu_spec gpu = *pl::find_gpu("h100");
    std::size_t rows = 0;
    for (auto _ : state) {
        const pl::plan_result r = pl::plan(a.model, a.training, gpu);
        rows += r.schedules.size();
        benchmark::DoNotOptimize(r.recommended);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(rows));
}
BENCHMARK(BM_plan)->Name("BM_plan/layers128_pp16_m256")->Unit(benchmark::kMillisecond);

} // namespace
