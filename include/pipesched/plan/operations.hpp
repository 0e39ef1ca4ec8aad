// pipesched plan: the operations one transformer layer (and the end stages) runs on one GPU,
// and the seconds each takes in the forward (F), the input gradient (I) and the weight
// gradient (W).
//
// The list follows Megatron-LM's layer (megatron/core/transformer/transformer_layer.py,
// attention.py, mlp.py, moe/) per TP/CP/EP shard: the input norm, the QKV projection (GQA's
// narrower K and V, or MLA's low-rank down and up projections with their norms), the core
// attention (FlashAttention, or eager: two batched GEMMs around a fused softmax and its
// dropout), the output projection, the tensor-parallel all-reduce (or, with sequence
// parallelism, all-gather before and reduce-scatter after each block), bias-dropout-add, the
// second norm, the MLP (SwiGLU's or GeLU's up projection, the activation, the down projection)
// or the MoE block (router, permutation, all-to-all dispatch, the local experts' grouped GEMMs,
// all-to-all combine, shared experts); context parallelism's ring exchange of K and V. The
// first stage adds the embedding (and its TP reduction), the last the final norm, the output
// layer and the vocabulary-parallel cross entropy.
//
// Seconds per operation:
//   GEMM Y[m,n] = X[m,k] W[k,n]: F runs (m, n, k), I computes dX = dY W^T (m, k, n), W computes
//     dW = X^T dY (k, n, m); a GEMM without a weight (attention's batched GEMMs) puts both
//     backward GEMMs in I. Each takes max(FLOPs / achieved, bytes / HBM) + the launch gap, where
//     achieved = peak x gemm_efficiency x (unaligned_gemm when a dimension is not a multiple of
//     the alignment) x the tile-and-wave fill: 128 x 128 output tiles over sm_count
//     multiprocessors, useful work / (waves x SMs x tile). So W < F and I < F fall out for shapes
//     that quantise worse, and W is only the weight-gradient GEMMs.
//   FlashAttention: forward 2 b a s_q s_k (d_qk + d_v) FLOPs (half when causal), backward
//     2 b a s_q s_k (3 d_qk + 2 d_v) (recomputed scores, dV, dP, dQ, dK: 2.5x the forward when the
//     widths match, Dao 2023), at attention_forward/backward_efficiency of the peak; all in I.
//   memory-bound (norms, activations, dropout, residual adds, softmax, permutation, cross
//     entropy): bytes read and written / (HBM bandwidth x memory_efficiency); backward bytes in I.
//   collectives: NCCL's ring costs over the bus bandwidth of the link the group spans (NVLink
//     inside a node, the NIC across nodes): all-reduce 2(n-1)/n x bytes, all-gather and
//     reduce-scatter (n-1)/n x bytes, all-to-all (n-1)/n x bytes, a ring pass of K and V (n-1)
//     steps of its chunk; plus one latency per step.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "gpu.hpp"
#include "model.hpp"
#include "training.hpp"

namespace pipesched::plan {

enum class operation_kind : std::uint8_t { gemm, attention, memory, collective };
enum class collective_kind : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, ring_pass };
/// Where a collective's group sits: inside one node, or across nodes.
enum class link_kind : std::uint8_t { nvlink, network };
/// What a collective may hide behind (the launch line says whether it does).
enum class overlap_kind : std::uint8_t { none, tensor_parallel, context_parallel };

struct operation {
    std::string_view name{};
    operation_kind kind = operation_kind::gemm;
    // gemm: Y[m,n] = X[m,k] W[k,n], `count` of them (grouped experts, batched attention heads).
    double m = 0.0, n = 0.0, k = 0.0, count = 1.0;
    bool weight = true; ///< W is a parameter: its gradient is the W pass
    // attention: `count` = batch x heads on this GPU, queries and keys, head widths.
    double queries = 0.0, keys = 0.0, qk_dim = 0.0, v_dim = 0.0;
    bool causal = true;
    // memory: bytes read and written in the forward and in the backward.
    double bytes = 0.0, backward_bytes = 0.0;
    // collective: bytes per rank (the whole buffer), the group, its link, and in which passes.
    collective_kind collective = collective_kind::all_reduce;
    double group = 1.0;
    link_kind link = link_kind::nvlink;
    double forward_times = 1.0, backward_times = 1.0; ///< how often it runs in F and in I
    overlap_kind overlap = overlap_kind::none;
    bool core_attention = false; ///< part of the core attention (what selective recompute reruns)
};

/// Seconds of one operation (or a sum of them) in each pass.
struct pass_seconds {
    double forward = 0.0;
    double backward_input = 0.0;
    double backward_weight = 0.0;
    pass_seconds& operator+=(const pass_seconds& o) noexcept {
        forward += o.forward;
        backward_input += o.backward_input;
        backward_weight += o.backward_weight;
        return *this;
    }
};

/// How the time model runs: the efficiency override and the precision of the GEMMs.
struct time_options {
    double gemm_scale = 1.0; ///< --efficiency: scales the GEMM throughput (1: the table's)
    bool fp8 = false;        ///< GEMMs at the FP8 peak
};

namespace detail {

/// Seconds of one GEMM (m, n, k), `count` times, on `g`.
inline double gemm_seconds(double m, double n, double k, double count, const gpu_spec& g, const time_options& o) {
    if (m <= 0.0 || n <= 0.0 || k <= 0.0 || count <= 0.0) return 0.0;
    const double tile = 128.0;
    const double tiles = std::ceil(m / tile) * std::ceil(n / tile) * count;
    const double sms = static_cast<double>(g.sm_count);
    const double waves = std::ceil(tiles / sms);
    const double fill = m * n * count / (waves * sms * tile * tile);
    const double a = static_cast<double>(g.gemm_alignment);
    const bool aligned = std::fmod(m, a) == 0.0 && std::fmod(n, a) == 0.0 && std::fmod(k, a) == 0.0;
    const double peak = o.fp8 && g.fp8_peak_flops > 0.0 ? g.fp8_peak_flops : g.peak_flops;
    const double rate = peak * g.gemm_efficiency * o.gemm_scale * (aligned ? 1.0 : g.unaligned_gemm) * fill;
    const double flops = 2.0 * m * n * k * count;
    const double element = o.fp8 && g.fp8_peak_flops > 0.0 ? 1.0 : 2.0;
    const double bytes = element * (m * k + k * n + m * n) * count;
    return std::max(flops / rate, bytes / (g.memory_bandwidth * g.memory_efficiency)) + g.kernel_overhead;
}

inline double memory_seconds(double bytes, const gpu_spec& g) {
    return bytes <= 0.0 ? 0.0 : bytes / (g.memory_bandwidth * g.memory_efficiency) + g.kernel_overhead;
}

} // namespace detail

/// Seconds of one collective on `g`, with NCCL's ring cost over the link's bus bandwidth.
[[nodiscard]] inline double collective_seconds(collective_kind kind, double bytes, double group, link_kind link,
                                               const gpu_spec& g) {
    if (group <= 1.0 || bytes <= 0.0) return 0.0;
    const bool nv = link == link_kind::nvlink;
    const double bus = nv ? g.nvlink_bandwidth * g.nvlink_bus_efficiency : g.network_bandwidth * g.network_bus_efficiency;
    const double step = nv ? g.nvlink_latency : g.network_latency;
    const double share = (group - 1.0) / group;
    switch (kind) {
    case collective_kind::all_reduce: return 2.0 * share * bytes / bus + 2.0 * (group - 1.0) * step;
    case collective_kind::all_gather:
    case collective_kind::reduce_scatter:
    case collective_kind::all_to_all: return share * bytes / bus + (group - 1.0) * step;
    case collective_kind::ring_pass: return (group - 1.0) * (bytes / bus + step);
    }
    return 0.0;
}

/// F, I and W seconds of one operation.
[[nodiscard]] inline pass_seconds seconds_of(const operation& op, const gpu_spec& g, const time_options& o) {
    pass_seconds s;
    switch (op.kind) {
    case operation_kind::gemm:
        s.forward = detail::gemm_seconds(op.m, op.n, op.k, op.count, g, o);
        s.backward_input = detail::gemm_seconds(op.m, op.k, op.n, op.count, g, o);
        s.backward_weight = detail::gemm_seconds(op.k, op.n, op.m, op.count, g, o);
        if (!op.weight) {
            s.backward_input += s.backward_weight;
            s.backward_weight = 0.0;
        }
        break;
    case operation_kind::attention: {
        const double area = op.count * op.queries * op.keys * (op.causal ? 0.5 : 1.0);
        const double peak = o.fp8 && g.fp8_peak_flops > 0.0 ? g.fp8_peak_flops : g.peak_flops;
        s.forward = 2.0 * area * (op.qk_dim + op.v_dim) / (peak * g.attention_forward_efficiency) + g.kernel_overhead;
        s.backward_input =
            2.0 * area * (3.0 * op.qk_dim + 2.0 * op.v_dim) / (peak * g.attention_backward_efficiency) + g.kernel_overhead;
        break;
    }
    case operation_kind::memory:
        s.forward = detail::memory_seconds(op.bytes, g);
        s.backward_input = detail::memory_seconds(op.backward_bytes, g);
        break;
    case operation_kind::collective: {
        const double once = collective_seconds(op.collective, op.bytes, op.group, op.link, g);
        s.forward = op.forward_times * once;
        s.backward_input = op.backward_times * once;
        break;
    }
    }
    return s;
}

/// The link a group of `size` ranks, `stride` ranks apart in Megatron's order (TP fastest, then
/// CP, EP, DP, PP), spans.
[[nodiscard]] inline link_kind link_of(std::uint64_t stride, std::uint64_t size, const gpu_spec& g) {
    return stride * size <= g.gpus_per_node ? link_kind::nvlink : link_kind::network;
}

namespace detail {

/// Appends the attention block (norm to residual add) of one layer.
inline void attention_operations(std::vector<operation>& ops, const model_config& m, const training_config& t,
                                 const gpu_spec& g) {
    const double tp = static_cast<double>(t.tensor_parallel);
    const double cp = static_cast<double>(t.context_parallel);
    const double s = static_cast<double>(t.seq_length);
    const double b = static_cast<double>(t.micro_batch);
    const double tokens = s / cp * b;
    const double sp = t.sequence_parallel ? tp : 1.0;
    const double h = static_cast<double>(m.hidden);
    const double a = static_cast<double>(m.heads) / tp;
    const link_kind tp_link = link_of(1, t.tensor_parallel, g);
    const double act = tokens * h * 2.0; // one BF16 activation of the layer's width
    ops.push_back({.name = "input norm", .kind = operation_kind::memory, .bytes = 4.0 * h * tokens / sp,
                   .backward_bytes = 6.0 * h * tokens / sp});
    if (t.sequence_parallel)
        ops.push_back({.name = "sp all-gather", .kind = operation_kind::collective, .bytes = act,
                       .collective = collective_kind::all_gather, .group = tp, .link = tp_link,
                       .overlap = overlap_kind::tensor_parallel});
    double qk_dim = static_cast<double>(m.kv_channels());
    double v_dim = qk_dim;
    if (m.mla()) {
        const double rope = static_cast<double>(m.qk_rope_head_dim);
        const double nope = static_cast<double>(m.qk_nope_head_dim);
        const double ql = static_cast<double>(m.q_lora_rank);
        const double kvl = static_cast<double>(m.kv_lora_rank);
        qk_dim = nope + rope;
        v_dim = static_cast<double>(m.v_head_dim);
        if (m.q_lora_rank > 0) {
            ops.push_back({.name = "q down", .m = tokens, .n = ql, .k = h});
            ops.push_back({.name = "q norm", .kind = operation_kind::memory, .bytes = 4.0 * ql * tokens,
                           .backward_bytes = 6.0 * ql * tokens});
            ops.push_back({.name = "q up", .m = tokens, .n = a * qk_dim, .k = ql});
        } else {
            ops.push_back({.name = "q", .m = tokens, .n = a * qk_dim, .k = h});
        }
        ops.push_back({.name = "kv down", .m = tokens, .n = kvl + rope, .k = h});
        ops.push_back({.name = "kv norm", .kind = operation_kind::memory, .bytes = 4.0 * kvl * tokens,
                       .backward_bytes = 6.0 * kvl * tokens});
        ops.push_back({.name = "kv up", .m = tokens, .n = a * (nope + v_dim), .k = kvl});
    } else {
        const double width = static_cast<double>(m.query_width() + m.key_width() + m.value_width()) / tp;
        ops.push_back({.name = "qkv", .m = tokens, .n = width, .k = h});
    }
    if (t.context_parallel > 1) // K and V around the ring, in F; their gradients back in I
        ops.push_back({.name = "cp ring exchange", .kind = operation_kind::collective,
                       .bytes = 2.0 * tokens * a * (qk_dim + v_dim),
                       .collective = collective_kind::ring_pass, .group = cp,
                       .link = link_of(t.tensor_parallel, t.context_parallel, g), .backward_times = 2.0,
                       .overlap = overlap_kind::context_parallel});
    const double heads = b * a;
    if (t.attention == attention_kind::flash) {
        ops.push_back({.name = "flash attention", .kind = operation_kind::attention, .count = heads,
                       .queries = s / cp, .keys = s, .qk_dim = qk_dim, .v_dim = v_dim, .core_attention = true});
    } else { // eager: the whole s x s scores, a fused scale-mask-softmax, dropout
        const double scores = heads * (s / cp) * s;
        ops.push_back({.name = "scores", .m = s / cp, .n = s, .k = qk_dim, .count = heads, .weight = false,
                       .core_attention = true});
        ops.push_back({.name = "softmax", .kind = operation_kind::memory, .bytes = 4.0 * scores,
                       .backward_bytes = 6.0 * scores, .core_attention = true});
        if (m.attention_dropout > 0.0)
            ops.push_back({.name = "attention dropout", .kind = operation_kind::memory, .bytes = 5.0 * scores,
                           .backward_bytes = 5.0 * scores, .core_attention = true});
        ops.push_back({.name = "context", .m = s / cp, .n = v_dim, .k = s, .count = heads, .weight = false,
                       .core_attention = true});
    }
    ops.push_back({.name = "attention out", .m = tokens, .n = h, .k = a * v_dim});
    if (t.tensor_parallel > 1)
        ops.push_back({.name = t.sequence_parallel ? "sp reduce-scatter" : "tp all-reduce",
                       .kind = operation_kind::collective, .bytes = act,
                       .collective = t.sequence_parallel ? collective_kind::reduce_scatter : collective_kind::all_reduce,
                       .group = tp, .link = tp_link, .overlap = overlap_kind::tensor_parallel});
    const double dropout_mask = m.hidden_dropout > 0.0 ? 1.0 : 0.0;
    ops.push_back({.name = "bias-dropout-add", .kind = operation_kind::memory,
                   .bytes = (6.0 + dropout_mask) * h * tokens / sp, .backward_bytes = (4.0 + dropout_mask) * h * tokens / sp});
}

/// Appends one MLP (dense or one expert group) of `width` per shard on `tokens` rows, `count`
/// times (grouped GEMMs).
inline void mlp_operations(std::vector<operation>& ops, const model_config& m, double tokens, double width,
                           double count, double h) {
    const double gate = m.gated_mlp ? 2.0 : 1.0;
    ops.push_back({.name = "mlp up", .m = tokens, .n = gate * width, .k = h, .count = count});
    ops.push_back({.name = "activation", .kind = operation_kind::memory, .bytes = 2.0 * (gate + 1.0) * width * tokens * count,
                   .backward_bytes = 2.0 * (2.0 * gate + 1.0) * width * tokens * count});
    ops.push_back({.name = "mlp down", .m = tokens, .n = h, .k = width, .count = count});
}

} // namespace detail

/// The operations of one transformer layer on one GPU, in execution order; `moe` selects the
/// MoE block for the MLP.
[[nodiscard]] inline std::vector<operation> layer_operations(const model_config& m, const training_config& t, bool moe,
                                                             const gpu_spec& g) {
    std::vector<operation> ops;
    detail::attention_operations(ops, m, t, g);
    const double tp = static_cast<double>(t.tensor_parallel);
    const double tokens = static_cast<double>(t.seq_length) / static_cast<double>(t.context_parallel) *
                          static_cast<double>(t.micro_batch);
    const double sp = t.sequence_parallel ? tp : 1.0;
    const double h = static_cast<double>(m.hidden);
    const double act = tokens * h * 2.0;
    const link_kind tp_link = link_of(1, t.tensor_parallel, g);
    ops.push_back({.name = "mlp norm", .kind = operation_kind::memory, .bytes = 4.0 * h * tokens / sp,
                   .backward_bytes = 6.0 * h * tokens / sp});
    if (t.sequence_parallel)
        ops.push_back({.name = "sp all-gather", .kind = operation_kind::collective, .bytes = act,
                       .collective = collective_kind::all_gather, .group = tp, .link = tp_link,
                       .overlap = overlap_kind::tensor_parallel});
    if (moe) {
        const double experts = static_cast<double>(m.experts);
        const double topk = static_cast<double>(m.experts_per_token);
        const double ep = static_cast<double>(t.expert_parallel);
        const double etp = static_cast<double>(t.expert_tp());
        ops.push_back({.name = "router", .m = tokens, .n = experts, .k = h});
        ops.push_back({.name = "permute", .kind = operation_kind::memory, .bytes = 4.0 * topk * h * tokens,
                       .backward_bytes = 4.0 * topk * h * tokens});
        const link_kind ep_link = link_of(t.tensor_parallel * t.context_parallel, t.expert_parallel, g);
        if (t.expert_parallel > 1)
            ops.push_back({.name = "dispatch all-to-all", .kind = operation_kind::collective, .bytes = topk * act,
                           .collective = collective_kind::all_to_all, .group = ep, .link = ep_link});
        // Balanced routing: each local expert gets ep x tokens x top-k / experts rows.
        detail::mlp_operations(ops, m, ep * tokens * topk / experts, static_cast<double>(m.moe_ffn_hidden) / etp,
                               experts / ep, h);
        if (t.expert_parallel > 1)
            ops.push_back({.name = "combine all-to-all", .kind = operation_kind::collective, .bytes = topk * act,
                           .collective = collective_kind::all_to_all, .group = ep, .link = ep_link});
        ops.push_back({.name = "unpermute", .kind = operation_kind::memory, .bytes = 4.0 * topk * h * tokens,
                       .backward_bytes = 4.0 * topk * h * tokens});
        if (m.shared_expert_ffn > 0)
            detail::mlp_operations(ops, m, tokens, static_cast<double>(m.shared_expert_ffn) / tp, 1.0, h);
    } else {
        detail::mlp_operations(ops, m, tokens, static_cast<double>(m.ffn_hidden) / tp, 1.0, h);
    }
    if (t.tensor_parallel > 1)
        ops.push_back({.name = t.sequence_parallel ? "sp reduce-scatter" : "tp all-reduce",
                       .kind = operation_kind::collective, .bytes = act,
                       .collective = t.sequence_parallel ? collective_kind::reduce_scatter : collective_kind::all_reduce,
                       .group = tp, .link = tp_link, .overlap = overlap_kind::tensor_parallel});
    const double dropout_mask = m.hidden_dropout > 0.0 ? 1.0 : 0.0;
    ops.push_back({.name = "bias-dropout-add", .kind = operation_kind::memory,
                   .bytes = (6.0 + dropout_mask) * h * tokens / sp, .backward_bytes = (4.0 + dropout_mask) * h * tokens / sp});
    return ops;
}

/// The first stage's embedding lookup: the rows written, the FP32 gradient scattered back, and
/// the vocabulary-parallel reduction (all-reduce, or reduce-scatter with SP) in F.
[[nodiscard]] inline std::vector<operation> embedding_operations(const model_config& m, const training_config& t,
                                                                 const gpu_spec& g) {
    const double tp = static_cast<double>(t.tensor_parallel);
    const double tokens = static_cast<double>(t.seq_length) / static_cast<double>(t.context_parallel) *
                          static_cast<double>(t.micro_batch);
    const double h = static_cast<double>(m.hidden);
    std::vector<operation> ops;
    ops.push_back({.name = "embedding", .kind = operation_kind::memory, .bytes = 4.0 * h * tokens,
                   .backward_bytes = 10.0 * h * tokens});
    if (t.tensor_parallel > 1)
        ops.push_back({.name = "embedding reduce", .kind = operation_kind::collective, .bytes = 2.0 * h * tokens,
                       .collective = t.sequence_parallel ? collective_kind::reduce_scatter : collective_kind::all_reduce,
                       .group = tp, .link = link_of(1, t.tensor_parallel, g), .backward_times = 0.0});
    return ops;
}

/// The last stage's final norm, output layer and vocabulary-parallel cross entropy (logits read
/// in BF16, the FP32 softmax written and read back for the gradient).
[[nodiscard]] inline std::vector<operation> loss_operations(const model_config& m, const training_config& t,
                                                            const gpu_spec& g) {
    const double tp = static_cast<double>(t.tensor_parallel);
    const double tokens = static_cast<double>(t.seq_length) / static_cast<double>(t.context_parallel) *
                          static_cast<double>(t.micro_batch);
    const double sp = t.sequence_parallel ? tp : 1.0;
    const double h = static_cast<double>(m.hidden);
    const double vocab = static_cast<double>(m.vocab) / tp;
    std::vector<operation> ops;
    ops.push_back({.name = "final norm", .kind = operation_kind::memory, .bytes = 4.0 * h * tokens / sp,
                   .backward_bytes = 6.0 * h * tokens / sp});
    if (t.sequence_parallel)
        ops.push_back({.name = "sp all-gather", .kind = operation_kind::collective, .bytes = 2.0 * h * tokens,
                       .collective = collective_kind::all_gather, .group = tp, .link = link_of(1, t.tensor_parallel, g)});
    ops.push_back({.name = "output layer", .m = tokens, .n = vocab, .k = h});
    ops.push_back({.name = "cross entropy", .kind = operation_kind::memory, .bytes = 6.0 * vocab * tokens,
                   .backward_bytes = 6.0 * vocab * tokens});
    return ops;
}

/// F, I, W of a list of operations run in order, with what the launch line overlaps: TP
/// collectives behind the GEMMs with --tp-comm-overlap (what outlasts them stays), the CP ring
/// behind the core attention (as Megatron's ring attention always does).
[[nodiscard]] inline pass_seconds seconds_of(const std::vector<operation>& ops, const training_config& t,
                                             const gpu_spec& g, const time_options& o) {
    pass_seconds sum, gemms, attention, tp_comm, cp_comm;
    for (const operation& op : ops) {
        const pass_seconds s = seconds_of(op, g, o);
        if (op.overlap == overlap_kind::tensor_parallel && t.tp_comm_overlap) tp_comm += s;
        else if (op.overlap == overlap_kind::context_parallel) cp_comm += s;
        else sum += s;
        if (op.kind == operation_kind::gemm) gemms += s;
        if (op.kind == operation_kind::attention || (op.kind == operation_kind::gemm && !op.weight)) attention += s;
    }
    sum.forward += std::max(0.0, tp_comm.forward - gemms.forward) + std::max(0.0, cp_comm.forward - attention.forward);
    sum.backward_input += std::max(0.0, tp_comm.backward_input - gemms.backward_input - gemms.backward_weight) +
                          std::max(0.0, cp_comm.backward_input - attention.backward_input);
    return sum;
}

} // namespace pipesched::plan
