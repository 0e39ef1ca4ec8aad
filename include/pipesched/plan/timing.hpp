// pipesched plan: seconds per pipeline stage, on one GPU.
//
// A stage's F, I and W are the sums of its operations' seconds (operations.hpp: GEMMs by shape,
// FlashAttention, memory-bound kernels, tensor/context/expert-parallel collectives on the links
// their groups span), with what recompute runs again added to I. The p2p time between stages
// and the data-parallel collectives after the pipeline (plan.hpp) use the same link model.
//
// Forward FLOPs as Megatron-LM counts them (megatron/training/training.py,
// num_floating_point_operations, whose total is three times the forward) stay here for
// utilisation figures (the validation table in docs/plan.md): 2 FLOPs per weight and token for
// every matrix, plus the core attention, causal: s^2 b (width of Q + width of the attention
// output) per layer; the output layer's logits, 2 h V per token, on the last stage (and on each
// MTP layer, with its 2h -> h projection); divided over TP (routed experts over expert TP) and
// CP.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gpu.hpp"
#include "model.hpp"
#include "operations.hpp"
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

/// The seconds of one stage's F, I and W from its operations (operations.hpp): its layers,
/// the embedding on the first stage, the final norm, output layer and cross entropy on the
/// last, and its MTP layers. Recompute adds to I exactly what it runs again: each recomputed
/// layer's forward (full: every layer with the uniform method, the first n with block), or the
/// core attention's forward (selective).
[[nodiscard]] inline stage_seconds seconds_of_stage(const model_config& m, const training_config& t,
                                                    const stage_content& st, const gpu_spec& g, const time_options& o) {
    const auto core_forward = [&](const std::vector<operation>& ops) {
        double f = 0.0;
        for (const operation& op : ops)
            if (op.core_attention) f += seconds_of(op, g, o).forward;
        return f;
    };
    const std::vector<operation> dense_ops = layer_operations(m, t, false, g);
    const pass_seconds dense = seconds_of(dense_ops, t, g, o);
    const double dense_core = core_forward(dense_ops);
    pass_seconds moe = dense;
    double moe_core = dense_core;
    if (m.experts > 0) {
        const std::vector<operation> moe_ops = layer_operations(m, t, true, g);
        moe = seconds_of(moe_ops, t, g, o);
        moe_core = core_forward(moe_ops);
    }
    pass_seconds sum;
    const std::uint64_t n = std::max<std::uint64_t>(1, t.recompute_layers);
    for (std::uint64_t i = 0; i < st.layers; ++i) {
        const bool is_moe = m.is_moe(st.first_layer + i);
        const pass_seconds& layer = is_moe ? moe : dense;
        sum += layer;
        if (t.recompute == recompute_kind::full && (t.method == recompute_method::uniform || i < n))
            sum.backward_input += layer.forward;
        else if (t.recompute == recompute_kind::selective)
            sum.backward_input += is_moe ? moe_core : dense_core;
    }
    const pass_seconds loss = seconds_of(loss_operations(m, t, g), t, g, o);
    if (st.embedding) sum += seconds_of(embedding_operations(m, t, g), t, g, o);
    if (st.loss) sum += loss;
    if (st.mtp > 0) {
        // Each MTP layer: two norms and the 2h -> h projection, a layer, its own output and loss.
        const double tokens = static_cast<double>(t.seq_length) / static_cast<double>(t.context_parallel) *
                              static_cast<double>(t.micro_batch);
        const double h = static_cast<double>(m.hidden);
        operation projection{.name = "mtp projection", .m = tokens, .n = h / static_cast<double>(t.tensor_parallel),
                             .k = 2.0 * h};
        pass_seconds one = m.mtp_is_moe() ? moe : dense;
        one += loss;
        one += seconds_of(projection, g, o);
        for (std::uint64_t k = 0; k < st.mtp; ++k) sum += one;
    }
    return {sum.forward, sum.backward_input + sum.backward_weight, sum.backward_input, sum.backward_weight};
}

/// Bandwidth between neighbouring pipeline ranks: Megatron-LM orders ranks TP, CP, (EP,) DP,
/// PP from fastest to slowest varying, so pipeline neighbours are TP x CP x DP GPUs apart, in
/// one node only when that is less than a node.
[[nodiscard]] inline link_kind pipeline_link(const training_config& t, const gpu_spec& g) {
    return link_of(t.tensor_parallel * t.context_parallel * t.data_parallel, 2, g);
}

/// Bytes of one microbatch's activation (or its gradient) that one GPU sends to the next
/// stage: s b h / CP 16-bit values, divided over TP with sequence parallelism (or Megatron
/// 2021's scatter/gather).
[[nodiscard]] inline double p2p_bytes(const model_config& m, const training_config& t) {
    const double tp = static_cast<double>(t.tensor_parallel);
    const bool split = t.sequence_parallel || t.scatter_gather_p2p;
    return 2.0 * static_cast<double>(t.seq_length) / static_cast<double>(t.context_parallel) *
           static_cast<double>(t.micro_batch) * static_cast<double>(m.hidden) / (split ? tp : 1.0);
}

/// Seconds one stage spends sending a microbatch's activation (or gradient) to its neighbour
/// on another rank: the bytes over the link's bus bandwidth (every TP rank has its own NVLink
/// ports and NIC) and, with scatter/gather, the receivers' all-gather inside the node. The
/// send/receive latency (gpu_spec::p2p_latency) is the replay's, on every cross-rank dependency.
[[nodiscard]] inline double p2p_transfer_seconds(const model_config& m, const training_config& t, const gpu_spec& g) {
    const bool nv = pipeline_link(t, g) == link_kind::nvlink;
    const double bus = nv ? g.nvlink_bandwidth * g.nvlink_bus_efficiency : g.network_bandwidth * g.network_bus_efficiency;
    double s = p2p_bytes(m, t) / bus;
    if (t.scatter_gather_p2p && !t.sequence_parallel && t.tensor_parallel > 1)
        s += collective_seconds(collective_kind::all_gather, p2p_bytes(m, t) * static_cast<double>(t.tensor_parallel),
                                static_cast<double>(t.tensor_parallel), link_of(1, t.tensor_parallel, g), g);
    return s;
}

} // namespace pipesched::plan
