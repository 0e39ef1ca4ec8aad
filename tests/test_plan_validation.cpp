// pipesched plan: its seconds against measured training runs it was not tuned to
// (tests/data/plan/measured_runs.csv, sources in tests/data/plan/README.md). Recomputes the
// validation table of docs/plan.md and checks it is the page's, the error targets (median at
// most 5 %, no row beyond 15 %), the held-out rows on their own, the order of the runs one
// source measures on one model, and that the two fitted constants (plan/gpu.hpp) minimise the
// fit rows' mean error on their grid.
#include <doctest/doctest.h>
#include <pipesched/plan/plan.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifndef PIPESCHED_PLAN_DATA_DIR
#error "tests/CMakeLists.txt defines PIPESCHED_PLAN_DATA_DIR"
#endif

namespace plan_validation {

namespace pl = pipesched::plan;

struct measured_run {
    std::string source, name, group;
    bool fit = false;
    pl::model_config model{};
    pl::training_config training{};
    std::uint32_t chunks = 1;
    double measured_tflops = 0.0;
};

/// The CSV's rows: a GPT of Megatron-LM 2021 (LayerNorm, GeLU MLP of 4h, biases, dropout 0.1,
/// tied embeddings, eager attention with the fused softmax), FP16, full recompute of every
/// layer, Megatron's scatter/gather of pipeline tensors, PyTorch's DDP (which overlaps the
/// gradient all-reduce with the backward) where the row says so, Megatron's own DDP otherwise.
std::vector<measured_run> read_runs() {
    std::ifstream f{std::string{PIPESCHED_PLAN_DATA_DIR} + "/measured_runs.csv"};
    REQUIRE(f.good());
    std::vector<measured_run> runs;
    std::string line;
    bool header = true;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (header) {
            header = false;
            continue;
        }
        std::vector<std::string> c;
        std::stringstream ss{line};
        for (std::string x; std::getline(ss, x, ',');) c.push_back(x);
        REQUIRE(c.size() == 17);
        const auto whole = [&](std::size_t i) { return static_cast<std::uint64_t>(std::stoull(c[i])); };
        measured_run r;
        r.source = c[0];
        r.name = c[1];
        r.group = c[2];
        r.fit = c[3] == "1";
        pl::model_config& m = r.model;
        m.name = c[1];
        m.layers = whole(4);
        m.hidden = whole(5);
        m.heads = whole(6);
        m.vocab = whole(7);
        m.ffn_hidden = 4 * m.hidden;
        m.tied_embeddings = true;
        m.gated_mlp = false;
        m.norm = pl::norm_kind::layer_norm;
        m.qkv_bias = true;
        m.linear_bias = true;
        m.hidden_dropout = 0.1;
        m.attention_dropout = 0.1;
        pl::training_config& t = r.training;
        t.seq_length = whole(8);
        t.tensor_parallel = whole(9);
        t.pipeline_parallel = whole(10);
        t.data_parallel = whole(11);
        t.micro_batch = whole(12);
        t.global_batch = whole(13);
        t.microbatches = t.global_batch / (t.micro_batch * t.data_parallel);
        t.recompute = pl::recompute_kind::full;
        t.dtype = pl::precision::fp16;
        t.attention = pl::attention_kind::eager;
        t.scatter_gather_p2p = true;
        t.overlap_grad_reduce = c[15] == "1";
        r.chunks = static_cast<std::uint32_t>(whole(14));
        r.measured_tflops = std::stod(c[16]);
        runs.push_back(std::move(r));
    }
    return runs;
}

/// Achieved TFLOP/s per GPU as Narayanan et al. count it (equation 3, with recompute): plan's
/// iteration seconds for the row's schedule (1F1B, or interleaved 1F1B with its chunks).
double predicted_tflops(const measured_run& r, const pl::gpu_spec& g) {
    const pl::training_config& t = r.training;
    const pipesched::schedule_id id =
        r.chunks > 1 ? pipesched::schedule_id::interleaved_1f1b : pipesched::schedule_id::one_f_one_b;
    const std::optional<double> seconds =
        pl::iteration_seconds(r.model, t, g, {}, id, r.chunks, static_cast<std::uint32_t>(t.microbatches));
    REQUIRE(seconds.has_value());
    const double b = static_cast<double>(t.global_batch);
    const double s = static_cast<double>(t.seq_length);
    const double l = static_cast<double>(r.model.layers);
    const double h = static_cast<double>(r.model.hidden);
    const double v = static_cast<double>(r.model.vocab);
    const double flops = 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
    return flops / (*seconds * static_cast<double>(t.world())) / 1e12;
}

double relative_error(const measured_run& r, const pl::gpu_spec& g) {
    return predicted_tflops(r, g) / r.measured_tflops - 1.0;
}

/// Selene's DGX A100 80GB nodes (8 x 200 Gb/s HDR per node) with the fitted constants replaced.
pl::gpu_spec a100_with(double sustained, double memory) {
    pl::gpu_spec g = *pl::find_gpu("a100-80gb");
    g.gemm_efficiency = g.gemm_efficiency / pl::sustained_gemm_fraction * sustained;
    g.memory_efficiency = memory;
    return g;
}

double mean_fit_error(const std::vector<measured_run>& runs, double sustained, double memory) {
    const pl::gpu_spec g = a100_with(sustained, memory);
    double sum = 0.0;
    int n = 0;
    for (const measured_run& r : runs)
        if (r.fit) {
            sum += std::abs(relative_error(r, g));
            ++n;
        }
    return sum / n;
}

double median(std::vector<double> x) {
    std::sort(x.begin(), x.end());
    const std::size_t n = x.size();
    return n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2.0;
}

std::string fixed1(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", x);
    return buf;
}

} // namespace plan_validation

TEST_CASE("plan validation: the runs without a deep pipeline, within 15 % each") {
    using namespace plan_validation;
    const pl::gpu_spec g = *pl::find_gpu("a100-80gb");
    int checked = 0;
    for (const measured_run& r : read_runs()) {
        if (r.training.pipeline_parallel > 2) continue;
        CAPTURE(r.name);
        CHECK(std::abs(relative_error(r, g)) <= 0.15);
        ++checked;
    }
    CHECK(checked == 5);
}

TEST_CASE("plan validation: every measured run, fit and held out, orders, the fitted constants" *
          doctest::test_suite("large grids") * doctest::skip()) {
    using namespace plan_validation;
    const std::vector<measured_run> runs = read_runs();
    REQUIRE(runs.size() == 16);
    const pl::gpu_spec g = *pl::find_gpu("a100-80gb");
    std::vector<double> all, held_out;
    std::string table;
    for (const measured_run& r : runs) {
        const double predicted = predicted_tflops(r, g);
        const double error = predicted / r.measured_tflops - 1.0;
        all.push_back(std::abs(error));
        if (!r.fit) held_out.push_back(std::abs(error));
        const pl::training_config& t = r.training;
        table += "| " + r.name + " | " + std::to_string(t.tensor_parallel) + " | " + std::to_string(t.pipeline_parallel) +
                 " | " + std::to_string(t.data_parallel) + " | " + std::to_string(t.micro_batch) + " | " +
                 std::to_string(t.microbatches) + " | " + (r.chunks > 1 ? std::to_string(r.chunks) : "-") + " | " +
                 fixed1(r.measured_tflops) + " | " + fixed1(predicted) + " | " + (error >= 0 ? "+" : "") +
                 fixed1(100.0 * error) + " % | " + (r.fit ? "fit" : "held out") + " |\n";
    }
    MESSAGE(table);
    CHECK(median(all) <= 0.05);
    CHECK(*std::max_element(all.begin(), all.end()) <= 0.15);
    CHECK(median(held_out) <= 0.05);
    const std::string summary = "median " + fixed1(100.0 * median(all)) + " %, largest " +
                                fixed1(100.0 * *std::max_element(all.begin(), all.end())) + " %; held-out rows: median " +
                                fixed1(100.0 * median(held_out)) + " %, largest " +
                                fixed1(100.0 * *std::max_element(held_out.begin(), held_out.end())) + " %";
    MESSAGE(summary);
    // The page shows this very table and summary.
    std::ifstream page{std::string{PIPESCHED_PLAN_DATA_DIR} + "/../../../docs/plan.md"};
    REQUIRE(page.good());
    std::ostringstream text;
    text << page.rdbuf();
    CHECK(text.str().find(table) != std::string::npos);
    CHECK(text.str().find(summary) != std::string::npos);
    // Where one source measures one model in several layouts, the predicted order is the
    // measured one.
    for (std::size_t a = 0; a < runs.size(); ++a)
        for (std::size_t b = 0; b < runs.size(); ++b) {
            if (runs[a].group.empty() || runs[a].group != runs[b].group) continue;
            if (!(runs[a].measured_tflops > runs[b].measured_tflops)) continue;
            CAPTURE(runs[a].name);
            CAPTURE(runs[b].name);
            CHECK(predicted_tflops(runs[a], g) > predicted_tflops(runs[b], g));
        }
    // The fitted constants are a minimum of the fit rows' mean error on their grid.
    const double at = mean_fit_error(runs, pl::sustained_gemm_fraction, pl::achieved_memory_fraction);
    for (const double ds : {-0.01, 0.0, 0.01})
        for (const double dm : {-0.05, 0.0, 0.05}) {
            CAPTURE(ds);
            CAPTURE(dm);
            CHECK(at <= mean_fit_error(runs, pl::sustained_gemm_fraction + ds, pl::achieved_memory_fraction + dm) + 1e-12);
        }
}
