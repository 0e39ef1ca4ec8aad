// pipesched plan: a decoder-only transformer's shape, and what its layers hold.
//
// One struct covers the families users train with Megatron-LM or load from Hugging Face:
// Llama / Mistral / Qwen2 / Qwen3 (GQA attention, SwiGLU MLP, RMSNorm; Qwen3's per-head norms on
// Q and K), Gemma and Gemma-2 (gated GeLU MLP, head_dim apart from hidden / heads, Gemma-2's
// norms after attention and after the MLP: four a layer), Mixtral and Qwen-MoE (routed experts,
// shared experts), DeepSeek-V3 (multi-latent attention, dense first layers, MTP), and GPT-style
// models (LayerNorm, GeLU MLP, biases). Parameter counts follow the weights those
// models actually have; they are checked against published totals in tests/test_plan.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipesched::plan {

/// Upper bounds on a config's sizes: far above any published model, low enough that no product
/// of them (hidden x vocab x experts, ...) loses precision in a double.
inline constexpr std::uint64_t max_model_dimension = std::uint64_t{1} << 20; // hidden, widths, vocab / 16
inline constexpr std::uint64_t max_model_layers = 4096;
inline constexpr std::uint64_t max_model_vocab = std::uint64_t{1} << 24;
inline constexpr std::uint64_t max_model_experts = 65536;

enum class norm_kind : std::uint8_t { rms_norm, layer_norm };

struct model_config {
    std::string name{};                ///< for reports: model_type or the file name
    std::uint64_t hidden = 0;          ///< h
    std::uint64_t layers = 0;          ///< transformer layers (without MTP layers)
    std::uint64_t heads = 0;           ///< attention heads a
    std::uint64_t kv_heads = 0;        ///< key/value heads (query groups); 0 means heads (MHA)
    std::uint64_t head_dim = 0;        ///< kv_channels; 0 means hidden / heads
    std::uint64_t ffn_hidden = 0;      ///< dense MLP width
    std::uint64_t vocab = 0;           ///< vocabulary, as the embedding holds it (padded)
    bool tied_embeddings = false;      ///< the output layer shares the input embedding
    bool gated_mlp = true;             ///< SwiGLU or gated GeLU (3 matrices) rather than GeLU (2)
    norm_kind norm = norm_kind::rms_norm;
    /// Norms of width h per layer: 2 (before attention, before the MLP), or 4 with Gemma-2's
    /// norms after attention and after the MLP as well.
    std::uint64_t norms_per_layer = 2;
    bool qk_norm = false;              ///< a norm of width head_dim on each head's Q and K (Qwen3)
    bool qkv_bias = false;             ///< biases on Q, K, V (Qwen2; Megatron's default)
    bool linear_bias = false;          ///< biases on the output projection and the MLP
    double hidden_dropout = 0.0;       ///< > 0: dropout masks are kept (1 byte per element)
    double attention_dropout = 0.0;

    // Mixture of experts (experts == 0: every layer dense).
    std::uint64_t experts = 0;
    std::uint64_t experts_per_token = 0;   ///< top-k
    std::uint64_t moe_ffn_hidden = 0;      ///< one routed expert's width
    std::uint64_t shared_expert_ffn = 0;   ///< all shared experts together
    bool shared_expert_gate = false;       ///< a sigmoid gate (h parameters) on the shared expert
    /// Per layer, whether its MLP is routed experts; empty with experts == 0.
    std::vector<bool> moe_layers{};

    // Multi-latent attention (DeepSeek-V2/V3): used when kv_lora_rank > 0.
    std::uint64_t q_lora_rank = 0;      ///< 0: Q projected directly
    std::uint64_t kv_lora_rank = 0;
    std::uint64_t qk_nope_head_dim = 0;
    std::uint64_t qk_rope_head_dim = 0;
    std::uint64_t v_head_dim = 0;

    /// Multi-token prediction layers (DeepSeek-V3), placed after the last layer.
    std::uint64_t mtp_layers = 0;

    [[nodiscard]] bool mla() const noexcept { return kv_lora_rank > 0; }
    [[nodiscard]] std::uint64_t query_groups() const noexcept { return kv_heads == 0 ? heads : kv_heads; }
    [[nodiscard]] std::uint64_t kv_channels() const noexcept {
        return head_dim != 0 ? head_dim : (heads == 0 ? 0 : hidden / heads);
    }
    /// Width of the attention's Q (and of its output before the projection).
    [[nodiscard]] std::uint64_t query_width() const noexcept {
        return mla() ? heads * (qk_nope_head_dim + qk_rope_head_dim) : heads * kv_channels();
    }
    [[nodiscard]] std::uint64_t key_width() const noexcept {
        return mla() ? heads * (qk_nope_head_dim + qk_rope_head_dim) : query_groups() * kv_channels();
    }
    [[nodiscard]] std::uint64_t value_width() const noexcept {
        return mla() ? heads * v_head_dim : query_groups() * kv_channels();
    }
    [[nodiscard]] bool is_moe(std::uint64_t layer) const noexcept {
        return experts > 0 && layer < moe_layers.size() && moe_layers[layer];
    }
    /// The MTP layers copy the last layer's kind (as Megatron-LM builds them).
    [[nodiscard]] bool mtp_is_moe() const noexcept { return layers > 0 && is_moe(layers - 1); }
};

/// Parameters of one transformer layer, by how tensor and expert parallelism divide them.
struct layer_parameters {
    double tensor_parallel = 0.0; ///< attention, dense MLP, shared experts: divided by TP
    double replicated = 0.0;      ///< norms, router, gates: on every TP rank
    double expert = 0.0;          ///< routed experts: divided by EP x expert TP
    double active_expert = 0.0;   ///< the top-k experts one token uses (for FLOPs)

    [[nodiscard]] double total() const noexcept { return tensor_parallel + replicated + expert; }
};

/// The weights of one layer, as the model defines them (Megatron's fused layouts hold the same
/// numbers). With `moe` false the MLP is dense.
[[nodiscard]] inline layer_parameters parameters_of_layer(const model_config& m, bool moe) {
    const double h = static_cast<double>(m.hidden);
    const double norm = m.norm == norm_kind::rms_norm ? 1.0 : 2.0; // LayerNorm has a bias
    layer_parameters p;
    if (m.mla()) {
        const double a = static_cast<double>(m.heads);
        const double qk = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
        const double q = m.q_lora_rank == 0
                             ? h * a * qk
                             : static_cast<double>(m.q_lora_rank) * (h + a * qk);
        const double kv_rank = static_cast<double>(m.kv_lora_rank);
        const double kv = kv_rank * (h + a * static_cast<double>(m.qk_nope_head_dim + m.v_head_dim)) +
                          h * static_cast<double>(m.qk_rope_head_dim);
        const double out = a * static_cast<double>(m.v_head_dim) * h;
        p.tensor_parallel += q + kv + out;
        p.replicated += norm * (kv_rank + static_cast<double>(m.q_lora_rank)); // the latent norms
    } else {
        const double q = static_cast<double>(m.query_width());
        const double kv = 2.0 * static_cast<double>(m.key_width());
        p.tensor_parallel += h * (q + kv) + q * h;
        if (m.qkv_bias) p.tensor_parallel += q + kv;
        if (m.linear_bias) p.replicated += h;
    }
    p.replicated += static_cast<double>(m.norms_per_layer) * norm * h; // before (and after) attention and the MLP
    if (m.qk_norm) p.replicated += 2.0 * norm * static_cast<double>(m.kv_channels());
    const double matrices = m.gated_mlp ? 3.0 : 2.0;
    const auto mlp = [&](double width) {
        double w = matrices * h * width;
        if (m.linear_bias) w += (m.gated_mlp ? 2.0 : 1.0) * width + h;
        return w;
    };
    if (moe) {
        const double e = static_cast<double>(m.experts);
        p.replicated += h * e; // router
        p.expert += e * mlp(static_cast<double>(m.moe_ffn_hidden));
        p.active_expert = static_cast<double>(m.experts_per_token) * mlp(static_cast<double>(m.moe_ffn_hidden));
        if (m.shared_expert_ffn > 0) {
            p.tensor_parallel += mlp(static_cast<double>(m.shared_expert_ffn));
            if (m.shared_expert_gate) p.replicated += h;
        }
    } else {
        p.tensor_parallel += mlp(static_cast<double>(m.ffn_hidden));
    }
    return p;
}

/// What a whole model holds.
struct parameter_count {
    double transformer = 0.0; ///< every layer, without MTP
    double embedding = 0.0;   ///< input embedding (vocab x h)
    double output = 0.0;      ///< output layer; 0 when tied
    double final_norm = 0.0;
    double mtp = 0.0;         ///< MTP layers with their projections and norms
    double active = 0.0;      ///< used by one token (top-k experts), without MTP

    /// The model as published totals count it: everything but the MTP layers.
    [[nodiscard]] double total() const noexcept { return transformer + embedding + output + final_norm; }
};

/// One MTP layer (DeepSeek-V3): two input norms, the 2h -> h projection, a transformer layer
/// of the last layer's kind, and its output norm (the embedding and output are shared).
[[nodiscard]] inline double mtp_layer_parameters(const model_config& m) {
    const double h = static_cast<double>(m.hidden);
    const double norm = m.norm == norm_kind::rms_norm ? 1.0 : 2.0;
    return parameters_of_layer(m, m.mtp_is_moe()).total() + 3.0 * norm * h + 2.0 * h * h;
}

[[nodiscard]] inline parameter_count count_parameters(const model_config& m) {
    parameter_count c;
    const double h = static_cast<double>(m.hidden);
    const layer_parameters dense = parameters_of_layer(m, false);
    const layer_parameters moe = m.experts > 0 ? parameters_of_layer(m, true) : dense;
    double active = 0.0;
    for (std::uint64_t l = 0; l < m.layers; ++l) {
        const layer_parameters& p = m.is_moe(l) ? moe : dense;
        c.transformer += p.total();
        active += m.is_moe(l) ? p.tensor_parallel + p.replicated + p.active_expert : p.total();
    }
    c.embedding = static_cast<double>(m.vocab) * h;
    c.output = m.tied_embeddings ? 0.0 : c.embedding;
    c.final_norm = (m.norm == norm_kind::rms_norm ? 1.0 : 2.0) * h;
    c.mtp = static_cast<double>(m.mtp_layers) * mtp_layer_parameters(m);
    c.active = active + c.embedding + c.output + c.final_norm;
    return c;
}

} // namespace pipesched::plan
