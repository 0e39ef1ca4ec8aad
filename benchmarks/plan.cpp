// How long plan() takes for a large model: every catalogued schedule at every legal chunk
// count, and the auto-scheduler, replayed with real-unit per-stage costs.
//
//   BM_plan/layers128_pp16_m256   a 128-layer, 16384-wide GQA model (about 350 B parameters),
//       TP 8, PP 16, 256 microbatches, full recompute: schedules at 1, 2, 4 and 8 chunks. The
//       target is under 2 s on the project's 2-core machine (docs/plan.md).
//   BM_layout_search/<model>_<gpus>   plan --search: every layout of the model on that many
//       H100s with every schedule (plan/layout_search.hpp), two threads; items are layouts in
//       the space. Llama-3-70B on 256 GPUs (docs/plan.md's example) and Llama-3.1-405B on
//       16,384 (the target: under 10 s).
#include <benchmark/benchmark.h>

#include <string_view>
#include <vector>

#include <pipesched/plan/megatron_args.hpp>
#include <pipesched/plan/layout_search.hpp>
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

/// A Llama-3 shape by flags: hidden, layers, heads, FFN width (8 KV heads, 128256 vocabulary).
pl::model_config llama(std::uint64_t hidden, std::uint64_t layers, std::uint64_t heads, std::uint64_t ffn) {
    pl::model_config m;
    m.name = "llama";
    m.hidden = hidden;
    m.layers = layers;
    m.heads = heads;
    m.kv_heads = 8;
    m.ffn_hidden = ffn;
    m.vocab = 128256;
    return m;
}

void BM_layout_search(benchmark::State& state, pl::model_config m, std::uint64_t gpus, std::uint64_t batch) {
    pl::training_config t;
    t.seq_length = 8192;
    t.global_batch = batch;
    pl::search_space space;
    space.gpus = gpus;
    space.jobs = 2;
    const pl::gpu_spec gpu = *pl::find_gpu("h100");
    std::size_t layouts = 0;
    for (auto _ : state) {
        const pl::layout_search_result r = pl::search_layouts(m, t, gpu, {}, space);
        layouts += r.layouts;
        benchmark::DoNotOptimize(r.candidates.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(layouts));
}
BENCHMARK_CAPTURE(BM_layout_search, llama3_70b_256, llama(8192, 80, 64, 28672), 256, 512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_layout_search, llama3_405b_16384, llama(16384, 126, 128, 53248), 16384, 2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

} // namespace
