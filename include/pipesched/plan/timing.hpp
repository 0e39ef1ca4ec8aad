// pipesched plan: seconds per pipeline stage, on one GPU.
//
// Forward FLOPs per layer as Megatron-LM counts them (megatron/training/training.py,
// num_floating_point_operations, whose total is three times the forward): 2 FLOPs per weight
// and token for every matrix (GQA's narrower K and V, SwiGLU's three matrices, the top-k routed
// experts and the shared experts of an MoE layer, MLA's low-rank projections), plus the core
// attention, causal: s^2 b (width of Q + width of the attention output) per layer; the output
// layer's logits, 2 h V per token, on the last stage (and on each MTP layer, with its 2h -> h
// projection). A stage's FLOPs are divided over TP (routed experts over expert TP), tokens over
// CP, and the time is FLOPs / (peak x efficiency).
//
// Backward: the input gradient I and the weight gradient W each run one GEMM per forward GEMM,
// so I = W = F for the matrices; core attention has no weights, its backward (twice its
// forward) is all in I. B = I + W = 2F. Recompute adds its forward again to B and I: the whole
// forward of each recomputed layer (full), or the core attention (selective).
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpu.hpp"
#include "model.hpp"
#include "training.hpp"

namespace pipesched::plan {

/// One stage's compute for one microbatch, in seconds.
struct stage_seconds {
    double forward = 0.0;
    double backward = 0.0;        ///< B = I + W
    double backward_input = 0.0;  ///< I
    double backward_weight = 0.0; ///< W
};

/// Forward FLOPs of one stage for one microbatch on one GPU, split into the matrices (which
/// have a weight gradient) and the core attention (which does not).
struct stage_flops {
    double matrices = 0.0;
    double attention_core = 0.0;
    double recomputed = 0.0; ///< forward FLOPs that the backward runs again
};

namespace detail {

/// Matrix FLOPs per token of one layer on one GPU (forward).
inline double layer_matrix_flops(const model_config& m, const training_config& t, bool moe) {
    const layer_parameters p = parameters_of_layer(m, moe);
    const double tp = static_cast<double>(t.tensor_parallel);
    double f = 2.0 * p.tensor_parallel / tp;
    if (moe) {
        f += 2.0 * static_cast<double>(m.hidden * m.experts); // router
        f += 2.0 * p.active_expert / static_cast<double>(t.expert_tp());
    }
    return f;
}

} // namespace detail

[[nodiscard]] inline stage_flops flops_of_stage(const model_config& m, const training_config& t, const stage_content& st) {
    const double tp = static_cast<double>(t.tensor_parallel);
    const double cp = static_cast<double>(t.context_parallel);
    const double s = static_cast<double>(t.seq_length);
    const double b = static_cast<double>(t.micro_batch);
    const double tokens = s / cp * b;
    const double h = static_cast<double>(m.hidden);
    const double out = m.mla() ? static_cast<double>(m.heads * m.v_head_dim) : static_cast<double>(m.query_width());
    const double core = s * s * b * (static_cast<double>(m.query_width()) + out) / (tp * cp);
    const double dense = detail::layer_matrix_flops(m, t, false) * tokens;
    const double moe = m.experts > 0 ? detail::layer_matrix_flops(m, t, true) * tokens : dense;
    stage_flops f;
    const std::uint64_t n = std::max<std::uint64_t>(1, t.recompute_layers);
    for (std::uint64_t i = 0; i < st.layers; ++i) {
        const double layer = m.is_moe(st.first_layer + i) ? moe : dense;
        f.matrices += layer;
        f.attention_core += core;
        if (t.recompute == recompute_kind::full && (t.method == recompute_method::uniform || i < n))
            f.recomputed += layer + core;
        else if (t.recompute == recompute_kind::selective)
            f.recomputed += core;
    }
    const double logits = 2.0 * h * static_cast<double>(m.vocab) / tp * tokens;
    if (st.loss) f.matrices += logits;
    if (st.mtp > 0) {
        const double layer = m.mtp_is_moe() ? moe : dense;
        f.matrices += static_cast<double>(st.mtp) * (layer + logits + 2.0 * 2.0 * h * h / tp * tokens);
        f.attention_core += static_cast<double>(st.mtp) * core;
    }
    return f;
}

/// Seconds of F, B, I, W for `f` at `flops_per_second` (the GPU's peak times the efficiency).
[[nodiscard]] inline stage_seconds seconds_of(const stage_flops& f, double flops_per_second) {
    stage_seconds s;
    s.forward = (f.matrices + f.attention_core) / flops_per_second;
    s.backward_input = (f.matrices + 2.0 * f.attention_core + f.recomputed) / flops_per_second;
    s.backward_weight = f.matrices / flops_per_second;
    s.backward = s.backward_input + s.backward_weight;
    return s;
}

/// Bandwidth between neighbouring pipeline ranks: Megatron-LM orders ranks TP, CP, (EP,) DP,
/// PP from fastest to slowest varying, so pipeline neighbours are TP x CP x DP GPUs apart, in
/// one node only when that is less than a node.
[[nodiscard]] inline double pipeline_bandwidth(const training_config& t, const gpu_spec& g) {
    return t.tensor_parallel * t.context_parallel * t.data_parallel < g.gpus_per_node ? g.nvlink_bandwidth
                                                                                      : g.network_bandwidth;
}

/// Bytes of one microbatch's activation (or its gradient) sent to the next stage: s b h / CP
/// 16-bit values, divided over TP with sequence parallelism.
[[nodiscard]] inline double p2p_bytes(const model_config& m, const training_config& t) {
    const double tp = static_cast<double>(t.tensor_parallel);
    return 2.0 * static_cast<double>(t.seq_length) / static_cast<double>(t.context_parallel) *
           static_cast<double>(t.micro_batch) * static_cast<double>(m.hidden) / (t.sequence_parallel ? tp : 1.0);
}

[[nodiscard]] inline double p2p_seconds(const model_config& m, const training_config& t, const gpu_spec& g) {
    return p2p_bytes(m, t) / pipeline_bandwidth(t, g);
}

/// Ring collective over `n` ranks moving `bytes` per rank: reduce-scatter or all-gather take
/// (n - 1) / n x bytes / bandwidth, an all-reduce twice that.
[[nodiscard]] inline double ring_seconds(double bytes, double n, double bandwidth) {
    return n <= 1.0 ? 0.0 : (n - 1.0) / n * bytes / bandwidth;
}

} // namespace pipesched::plan
