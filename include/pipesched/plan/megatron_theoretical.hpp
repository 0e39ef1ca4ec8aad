// pipesched plan: the figure Megatron-LM prints as "Theoretical memory footprints", for the same
// arguments, so a user can put pipesched's per-rank, per-schedule numbers beside their logs.
//
// Computed as megatron/training/theoretical_memory_usage.py does at commit 1bcb3b9e0b
// (2026-06-16, report_theoretical_memory with num_microbatches), operation for operation in
// doubles, so the results agree to the last bit: weights and optimizer on the most loaded
// shard (the first pipeline stage with the embedding, all MTP layers, routed experts divided by
// EP x expert TP); activations of the first stage by Korthikanti et al. Table 2 (34 sbh per
// layer generalised to 18 + 4 ffn/h with sequence parallelism and selective recompute; else
// 10 + 24/t and a 5% allowance), times Megatron's in-flight factor for 1F1B or interleaving.
// tests/data/plan/megatron_theoretical.csv holds Megatron's own results on a grid, made by
// tests/data/plan/megatron_theoretical.py from that file.
//
// It differs from plan()'s figures by design: it knows two schedules and one stage, assumes
// bf16 mixed precision, no dropout or attention choice, and counts no activation for the output
// layer unless PP = 1; docs/plan.md explains each difference.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model.hpp"
#include "training.hpp"

namespace pipesched::plan {

struct megatron_memory {
    double weight_and_optimizer_mb = 0.0;
    double activation_mb = 0.0;
    double total_mb = 0.0;
};

/// Megatron's padded vocabulary: `vocab` rounded up to a multiple of 128 x TP
/// (--make-vocab-size-divisible-by, default 128).
[[nodiscard]] inline std::uint64_t megatron_padded_vocab(std::uint64_t vocab, std::uint64_t tp,
                                                         std::uint64_t divisible_by = 128) {
    const std::uint64_t multiple = divisible_by * tp;
    return (vocab + multiple - 1) / multiple * multiple;
}

/// `padded_vocab`: the vocabulary Megatron would hold (0: model.vocab).
[[nodiscard]] inline megatron_memory megatron_theoretical(const model_config& m, const training_config& t,
                                                          std::uint64_t num_microbatches,
                                                          std::uint64_t padded_vocab = 0) {
    const double mb_bytes = 1024.0 * 1024.0;
    const double h = static_cast<double>(m.hidden);
    const double a = static_cast<double>(m.heads);
    const double L = static_cast<double>(m.layers);
    const double tp = static_cast<double>(t.tensor_parallel);
    const double pp = static_cast<double>(t.pipeline_parallel);
    const double vocab = static_cast<double>(padded_vocab != 0 ? padded_vocab : m.vocab);
    const double ffn = static_cast<double>(m.ffn_hidden);

    // --- compute_weight_and_optimizer_memory ---
    const double query_projection_size = static_cast<double>(m.kv_channels()) * a;
    const double ratio = query_projection_size / h;
    const double groups = static_cast<double>(m.query_groups());
    const double num_experts = m.experts == 0 ? 1.0 : static_cast<double>(m.experts);
    const double gated = m.gated_mlp ? 1.5 : 1.0;
    const double shared_ffn = static_cast<double>(m.shared_expert_ffn);
    double num_moe_layers = 0.0;
    double moe_ffn = 0.0;
    bool last_is_moe = false;
    if (m.experts > 0) {
        for (std::uint64_t l = 0; l < m.layers; ++l) num_moe_layers += m.is_moe(l) ? 1.0 : 0.0;
        moe_ffn = static_cast<double>(m.moe_ffn_hidden);
        last_is_moe = m.mtp_is_moe();
    }
    const double num_dense_layers = L - num_moe_layers;
    const double mtp = static_cast<double>(m.mtp_layers);
    const double mtp_moe = last_is_moe ? mtp : 0.0;
    const double mtp_dense = last_is_moe ? 0.0 : mtp;
    const double norm_size = m.norm == norm_kind::rms_norm ? 1.0 : 2.0;
    double self_attn = 0.0;
    if (m.mla()) {
        const double qk = static_cast<double>(m.qk_nope_head_dim);
        const double rope = static_cast<double>(m.qk_rope_head_dim);
        const double v = static_cast<double>(m.v_head_dim);
        const double q_term = m.q_lora_rank == 0
                                  ? h * a * (qk + rope)
                                  : static_cast<double>(m.q_lora_rank) * (h + a * (qk + rope) + norm_size);
        self_attn = q_term + static_cast<double>(m.kv_lora_rank) * (h + a * (qk + v) + norm_size) + h * rope +
                    (a * v) * h;
    } else {
        self_attn = 2.0 * h * h * ((1.0 + (groups / a)) * ratio);
    }
    const double embedding_size = h * vocab;
    const double final_layernorm = norm_size * h;
    const double attention = self_attn;
    const double dense_mlp = 2.0 * h * ffn * gated;
    const double shared_expert = 2.0 * h * shared_ffn * gated;
    const double routed_expert = 2.0 * h * moe_ffn * num_experts * gated;
    const double layernorm = 2.0 * h * norm_size;
    const double router = m.experts > 0 ? (h * num_experts) + (m.linear_bias ? num_experts : 0.0) : 0.0;
    const double shared_gate = shared_ffn > 0.0 && m.shared_expert_gate ? h : 0.0;

    const double etp = static_cast<double>(t.expert_tp());
    const double ep = static_cast<double>(t.expert_parallel);
    const std::uint64_t etmp = t.expert_tp() * t.expert_parallel * t.pipeline_parallel;
    const double expert_dp = static_cast<double>(t.world() / etmp);

    const double tp_block = (attention + dense_mlp) * num_dense_layers + (attention + shared_expert) * num_moe_layers;
    const double replicated_block = layernorm * num_dense_layers +
                                    (layernorm + router + shared_gate) * num_moe_layers + final_layernorm;
    const double expert_block = routed_expert * num_moe_layers;
    const double tp_mtp = (attention + dense_mlp) * mtp_dense + (attention + shared_expert) * mtp_moe;
    const double replicated_mtp = layernorm * mtp_dense + (layernorm + router + shared_gate) * mtp_moe;
    const double expert_mtp = routed_expert * mtp_moe;

    double tp_shard = ((tp_block / pp) + tp_mtp + embedding_size) / tp;
    const double replicated_shard = (replicated_block / pp) + replicated_mtp;
    const double expert_shard = ((expert_block / pp) + expert_mtp) / (etp * ep);
    if (!m.tied_embeddings && t.pipeline_parallel == 1) tp_shard += embedding_size / tp;
    const auto bytes_per_parameter = [&](double dp) {
        return !t.distributed_optimizer ? 18.0 : 6.0 + (12.0 / dp);
    };
    const double weight_and_optimizer =
        (tp_shard + replicated_shard) * bytes_per_parameter(static_cast<double>(t.data_parallel)) +
        expert_shard * bytes_per_parameter(expert_dp);

    // --- compute_activation_memory (SP and selective) or compute_activation_memory_without_sp ---
    const double s = static_cast<double>(t.seq_length);
    const double b = static_cast<double>(t.micro_batch);
    const double m_count = static_cast<double>(num_microbatches);
    const bool interleaved = t.virtual_stages != 0;
    const double vp = static_cast<double>(t.virtual_stages);
    double activation = 0.0;
    if (t.sequence_parallel && t.recompute == recompute_kind::selective) {
        activation = (s * b * h) * (18.0 + (4.0 * (ffn / h)));
        activation *= L;
        activation += 8.0 * s * b * pp;
        activation += s * b * h * pp;
        if (interleaved) activation *= 1.0 + ((pp - 1.0) / (pp * vp));
        if (!interleaved && t.pipeline_parallel > 1 && num_microbatches != 0)
            activation *= std::min(1.0, m_count / pp);
        if (t.pipeline_parallel == 1) activation += s * b * h * 4.0 * (1.0 + (vocab / h));
        activation = activation / tp;
    } else {
        const double per_layer = s * b * h * (10.0 + (24.0 / tp));
        activation = per_layer * L;
        activation += 8.0 * s * b * pp;
        activation += s * b * h * pp;
        if (interleaved) activation *= 1.0 + ((pp - 1.0) / (pp * vp));
        if (!interleaved && t.pipeline_parallel > 1 && num_microbatches != 0)
            activation *= std::min(1.0, m_count / pp);
        if (t.pipeline_parallel == 1) {
            double logits = s * b * vocab;
            logits /= tp;
            const double ln_out = s * b * h;
            activation += (logits + ln_out) * 2.0;
        }
        activation *= 1.05;
    }
    megatron_memory r;
    r.weight_and_optimizer_mb = weight_and_optimizer / mb_bytes;
    r.activation_mb = activation / mb_bytes;
    r.total_mb = r.weight_and_optimizer_mb + r.activation_mb;
    return r;
}

} // namespace pipesched::plan
