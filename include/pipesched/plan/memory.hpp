// pipesched plan: bytes per pipeline stage, on one GPU.
//
// Weights, gradients and optimizer states: mixed-precision Adam keeps a bf16 (or fp16) weight,
// an fp32 main gradient, an fp32 master weight and two fp32 Adam moments, 2 + 4 + 12 = 18 bytes
// per parameter; the distributed optimizer shards the 12 over the data-parallel group (6 + 12/DP,
// Megatron-LM's docs/.../dist_optimizer.md); fp32 training keeps 4 + 4 + 8 (8 sharded); SGD with
// momentum keeps one moment where Adam keeps two (14 bytes, 6 + 8/DP; fp32 12). Routed
// experts are sharded over the expert data-parallel group, world / (expert TP x EP x PP).
//
// Activations follow Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
// Models" (2022), section 4 and Table 2: per layer and token, in bytes (16-bit values, 1-byte
// dropout masks), with s the sequence length on this GPU (divided by CP), b the micro-batch:
//   kept whole on every TP rank unless sequence parallel (then / t): the two norm inputs 4h, the
//     QKV and MLP inputs 2h each, and the two dropout masks h each when dropout is on;
//   split over TP ranks: Q, K, V (2 per element of each), the output projection's input, the
//     MLP's up-projection output (twice as wide when gated) and its activation output;
//   Gemma-2's norms after attention and after the MLP keep their inputs (2h each, like the
//     other norm inputs), Qwen3's per-head norms the unnormalised Q and K (split over TP);
//   eager attention only (not with FlashAttention, and not with selective recompute): the
//     softmax output 2as and, with attention dropout, its mask and output 3as, split over TP.
// With h = width of Q, K, V and a 4h GeLU MLP this is the paper's 34h + 5as (10h + 24h/t +
// 5as/t with TP; 34h/t + 5as/t with sequence parallelism). Full recompute keeps each recomputed
// layer's input only (2h, / t with sequence parallelism). MoE layers keep the router's input and,
// for each of the top-k experts a token visits, the expert MLP's input and intermediates (split
// over expert TP). The first stage adds the token ids (8 bytes) and the embedding's dropout
// mask; the last stage adds the final norm's and output layer's inputs (2h each) and the fp32
// softmax the cross entropy keeps (4 bytes per logit, split over TP).
//
// M_W, what the weight-gradient pass W still needs after the input-gradient pass I (the split
// backward of the zero-bubble schedules): every linear layer's W computes X^T dY, so it keeps the
// layer's input X (already part of M_B) and the gradient of its output dY (made by I). So M_W is
// the sum over the stage's linear layers of their inputs plus their output gradients; I frees
// M_B - M_W (negative when recompute made M_B small) and W frees M_W (analysis/simulate.hpp's
// memory model).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "model.hpp"
#include "training.hpp"

namespace pipesched::plan {

/// Parameters of one stage on one GPU, by how they are sharded.
struct stage_parameters {
    double dense = 0.0;  ///< everything but routed experts, on this GPU (after TP)
    double expert = 0.0; ///< routed experts on this GPU (after EP and expert TP)
    [[nodiscard]] double total() const noexcept { return dense + expert; }
};

/// Parameters one GPU holds for `st`. The output layer of a tied model is a copy of the
/// embedding when the last stage is on another rank (Megatron keeps both in sync).
[[nodiscard]] inline stage_parameters parameters_of_stage(const model_config& m, const training_config& t,
                                                          const stage_content& st, bool output_copy_needed) {
    const double tp = static_cast<double>(t.tensor_parallel);
    const double ex = static_cast<double>(t.expert_parallel * t.expert_tp());
    const layer_parameters dense = parameters_of_layer(m, false);
    const layer_parameters moe = m.experts > 0 ? parameters_of_layer(m, true) : dense;
    stage_parameters p;
    for (std::uint64_t l = st.first_layer; l < st.first_layer + st.layers; ++l) {
        const layer_parameters& lp = m.is_moe(l) ? moe : dense;
        p.dense += lp.tensor_parallel / tp + lp.replicated;
        p.expert += lp.expert / ex;
    }
    const double h = static_cast<double>(m.hidden);
    const double embedding = static_cast<double>(m.vocab) * h;
    if (st.embedding) p.dense += embedding / tp;
    if (st.loss) {
        p.dense += (m.norm == norm_kind::rms_norm ? 1.0 : 2.0) * h;
        if (!m.tied_embeddings || output_copy_needed) p.dense += embedding / tp;
    }
    if (st.mtp > 0) {
        const layer_parameters& lp = m.mtp_is_moe() ? moe : dense;
        const double norm = m.norm == norm_kind::rms_norm ? 1.0 : 2.0;
        const double per = lp.tensor_parallel / tp + lp.replicated + 3.0 * norm * h + 2.0 * h * h / tp;
        p.dense += static_cast<double>(st.mtp) * per;
        p.expert += static_cast<double>(st.mtp) * lp.expert / ex;
    }
    return p;
}

/// Bytes per parameter for weight, gradient and optimizer state, the optimizer part sharded
/// over `dp` ranks with the distributed optimizer.
[[nodiscard]] inline double state_bytes_per_parameter(const training_config& t, double dp) {
    const double weight_and_grad = t.dtype == precision::fp32 ? 8.0 : 6.0;
    // Adam: (master weight and) two moments; SGD with momentum: one moment.
    const double moments = t.optimizer == optimizer_kind::sgd ? 4.0 : 8.0;
    const double optimizer = t.dtype == precision::fp32 ? moments : 4.0 + moments;
    return weight_and_grad + (t.distributed_optimizer ? optimizer / dp : optimizer);
}

/// Data-parallel size of the routed experts: world / (expert TP x EP x PP), at least 1.
[[nodiscard]] inline double expert_data_parallel(const training_config& t) {
    const std::uint64_t d = t.expert_tp() * t.expert_parallel * t.pipeline_parallel;
    return static_cast<double>(std::max<std::uint64_t>(1, t.world() / std::max<std::uint64_t>(1, d)));
}

[[nodiscard]] inline double state_bytes(const training_config& t, const stage_parameters& p) {
    return p.dense * state_bytes_per_parameter(t, static_cast<double>(t.data_parallel)) +
           p.expert * state_bytes_per_parameter(t, expert_data_parallel(t));
}

/// Activation bytes of one stage for one microbatch: M_B (held from F to B, or to I) and M_W
/// (held from I to W), and the working set of one recomputed group during its backward.
struct stage_activation {
    double activation = 0.0; ///< M_B
    double weight = 0.0;     ///< M_W
    double recompute_working_set = 0.0;
};

namespace detail {

/// Per token, one layer: what F keeps with no recompute (`kept`) and what W needs (`for_w`).
struct layer_token_bytes {
    double kept = 0.0;
    double for_w = 0.0;
    double input = 0.0; ///< the layer's input, kept alone under full recompute
};

inline layer_token_bytes layer_bytes(const model_config& m, const training_config& t, bool moe, double s_local) {
    const double h = static_cast<double>(m.hidden);
    const double tp = static_cast<double>(t.tensor_parallel);
    const double sp = t.sequence_parallel ? tp : 1.0;
    const double q = static_cast<double>(m.query_width());
    const double k = static_cast<double>(m.key_width());
    const double v = static_cast<double>(m.value_width());
    const double out = m.mla() ? static_cast<double>(m.heads * m.v_head_dim) : q;
    const bool dropout = m.hidden_dropout > 0.0;
    layer_token_bytes b;
    b.input = 2.0 * h / sp;
    // Attention block.
    b.kept += (4.0 * h + 2.0 * h + (dropout ? h : 0.0)) / sp; // norm inputs, QKV input, dropout mask
    b.kept += (2.0 * q + 2.0 * k + 2.0 * v + 2.0 * out) / tp;
    if (m.qk_norm) b.kept += (2.0 * q + 2.0 * k) / tp; // the per-head norms' inputs
    // Gemma-2's norms after attention and after the MLP keep their inputs, the outputs of the
    // attention's and the MLP's last projections.
    if (m.norms_per_layer > 2) b.kept += 2.0 * h * static_cast<double>(m.norms_per_layer - 2) / sp;
    if (m.mla()) b.kept += 4.0 * static_cast<double>(m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim);
    if (t.attention == attention_kind::eager && t.recompute != recompute_kind::selective) {
        const double a = static_cast<double>(m.heads);
        b.kept += (2.0 + (m.attention_dropout > 0.0 ? 3.0 : 0.0)) * a * s_local / tp;
    }
    b.for_w += 2.0 * h / sp + 2.0 * out / tp;        // inputs of QKV and the output projection
    b.for_w += 2.0 * (q + k + v) / tp + 2.0 * h / sp; // gradients of their outputs
    // MLP block.
    const double gate = m.gated_mlp ? 2.0 : 1.0;
    const auto mlp = [&](double width, double split, double tokens) {
        b.kept += tokens * (2.0 * gate * width + 2.0 * width) / split;
        b.for_w += tokens * (2.0 * width + 2.0 * gate * width) / split + tokens * 2.0 * h / sp * 2.0;
    };
    b.kept += (2.0 * h + (dropout ? h : 0.0)) / sp; // MLP input, dropout mask
    if (moe) {
        const double topk = static_cast<double>(m.experts_per_token);
        const double etp = static_cast<double>(t.expert_tp());
        b.kept += topk * 2.0 * h / sp; // the permuted copies of each token, one per expert
        mlp(static_cast<double>(m.moe_ffn_hidden), etp, topk);
        if (m.shared_expert_ffn > 0) mlp(static_cast<double>(m.shared_expert_ffn), tp, 1.0);
    } else {
        mlp(static_cast<double>(m.ffn_hidden), tp, 1.0);
    }
    return b;
}

} // namespace detail

/// M_B and M_W of stage `st` for one microbatch on one GPU.
[[nodiscard]] inline stage_activation activation_of_stage(const model_config& m, const training_config& t,
                                                          const stage_content& st) {
    const double s_local = static_cast<double>(t.seq_length) / static_cast<double>(t.context_parallel);
    const double tokens = s_local * static_cast<double>(t.micro_batch);
    const double h = static_cast<double>(m.hidden);
    const double tp = static_cast<double>(t.tensor_parallel);
    const double sp = t.sequence_parallel ? tp : 1.0;
    const detail::layer_token_bytes dense = detail::layer_bytes(m, t, false, s_local);
    const detail::layer_token_bytes moe = m.experts > 0 ? detail::layer_bytes(m, t, true, s_local) : dense;
    stage_activation a;
    // Which of the stage's layers keep only their input: all with full uniform recompute (a
    // group of n layers keeps its first input), the first n with block recompute.
    const std::uint64_t n = std::max<std::uint64_t>(1, t.recompute_layers);
    double largest_group = 0.0;
    for (std::uint64_t i = 0; i < st.layers; ++i) {
        const std::uint64_t l = st.first_layer + i;
        const detail::layer_token_bytes& lb = m.is_moe(l) ? moe : dense;
        const bool recomputed = t.recompute == recompute_kind::full &&
                                (t.method == recompute_method::uniform || i < n);
        if (recomputed) {
            if (t.method == recompute_method::block || i % n == 0) a.activation += tokens * lb.input;
            largest_group = std::max(largest_group, tokens * lb.kept * static_cast<double>(
                                                        t.method == recompute_method::uniform ? n : 1));
        } else {
            a.activation += tokens * lb.kept;
        }
        a.weight += tokens * lb.for_w;
    }
    if (st.mtp > 0) {
        const detail::layer_token_bytes& lb = m.mtp_is_moe() ? moe : dense;
        const double vocab = static_cast<double>(m.vocab);
        // Each MTP layer: its two norms' inputs and the 2h -> h projection's input, a layer,
        // and its own logits.
        const double per = lb.kept + (4.0 * h + 4.0 * h) / sp + 4.0 * vocab / tp;
        a.activation += tokens * static_cast<double>(st.mtp) * per;
        a.weight += tokens * static_cast<double>(st.mtp) * (lb.for_w + 4.0 * h / sp + 2.0 * vocab / tp);
    }
    if (st.embedding) {
        a.activation += tokens * (8.0 + (m.hidden_dropout > 0.0 ? h / sp : 0.0));
        a.weight += tokens * (8.0 + 2.0 * h / sp); // token ids and the gradient of the embedding output
    }
    if (st.loss) {
        const double vocab = static_cast<double>(m.vocab);
        a.activation += tokens * (4.0 * h / sp + 4.0 * vocab / tp);
        a.weight += tokens * (2.0 * h / sp + 2.0 * vocab / tp); // output layer input, logits' gradient
    }
    a.recompute_working_set = largest_group;
    return a;
}

} // namespace pipesched::plan
