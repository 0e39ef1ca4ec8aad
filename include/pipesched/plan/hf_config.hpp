// pipesched plan: a Hugging Face `config.json` read into a model_config.
//
// The keys of the Llama, Mistral, Qwen2/Qwen3, Gemma/Gemma-2, Mixtral, Qwen-MoE and
// DeepSeek-V2/V3 configs (transformers' configuration_*.py and modeling_*.py: which weights
// each layer has). Any other `model_type`, or none, is refused with the keys this reader would
// not understand: its weights cannot be counted as a Llama's (gpt-oss, read as one, came out as
// a dense 3 B model). A key that changes the weights in some family this reader knows but not
// in the config's own (experts in a Llama config, say) is refused too. Strict: the document
// must be valid JSON (detail/json_reader.hpp), every key this reader uses must have the right
// type and a value in range, and each error names the key and its line and column.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../detail/json_reader.hpp"
#include "model.hpp"
#include "training.hpp"

namespace pipesched::plan {

/// The largest config.json the reader accepts.
inline constexpr std::size_t max_config_bytes = std::size_t{1} << 20;

struct hf_model {
    model_config model{};
    std::vector<std::string> notes{}; ///< assumptions the reader made, for the report
};

namespace detail {

class hf_reader {
  public:
    hf_reader(const json::value& root, std::string_view source) : root_{root}, source_{source} {}

    [[noreturn]] void fail_at(const json::value& v, std::string_view key, std::string_view what) const {
        throw input_error(std::string{source_} + ":" + std::to_string(v.line) + ":" + std::to_string(v.column) +
                          ": \"" + std::string{key} + "\" " + std::string{what});
    }
    [[noreturn]] void missing(std::string_view key) const {
        throw input_error(std::string{source_} + ": missing key \"" + std::string{key} + "\"");
    }

    [[nodiscard]] const json::value* find(std::string_view key) const {
        const json::value* v = root_.find(key);
        if (v == nullptr || v->kind == json::value_kind::null) return nullptr;
        if (v->underflow) {
            const std::string shown = v->text.size() > 40 ? v->text.substr(0, 37) + "..." : v->text;
            fail_at(*v, key, "underflows: " + shown + " is below the smallest double (about 4.9e-324)");
        }
        return v;
    }

    /// A whole number in [low, high]; `fallback` when absent (missing() when it is required).
    std::uint64_t whole(std::string_view key, std::uint64_t low, std::uint64_t high, bool required,
                        std::uint64_t fallback = 0) const {
        const json::value* v = find(key);
        if (v == nullptr) {
            if (required) missing(key);
            return fallback;
        }
        if (v->kind != json::value_kind::number) fail_at(*v, key, "must be a whole number");
        const auto n = v->whole();
        if (!n) {
            if (!v->text.empty() && v->text[0] == '-') fail_at(*v, key, "must not be negative, got " + v->text);
            if (v->text.find_first_of(".eE") != std::string::npos) fail_at(*v, key, "must be a whole number, got " + v->text);
            fail_at(*v, key, "is too large: " + v->text);
        }
        if (*n < low || *n > high)
            fail_at(*v, key, "must be in " + std::to_string(low) + ".." + std::to_string(high) + ", got " + v->text);
        return *n;
    }
    bool boolean(std::string_view key, bool fallback) const {
        const json::value* v = find(key);
        if (v == nullptr) return fallback;
        if (v->kind != json::value_kind::boolean) fail_at(*v, key, "must be true or false");
        return v->boolean;
    }
    double fraction(std::string_view key) const {
        const json::value* v = find(key);
        if (v == nullptr) return 0.0;
        if (v->kind != json::value_kind::number) fail_at(*v, key, "must be a number");
        if (!(v->number >= 0.0 && v->number < 1.0)) fail_at(*v, key, "must be in [0, 1), got " + v->text);
        return v->number;
    }
    std::string text(std::string_view key) const {
        const json::value* v = find(key);
        if (v == nullptr) return {};
        if (v->kind != json::value_kind::string) fail_at(*v, key, "must be a string");
        return v->text;
    }
    const json::value* at(std::string_view key) const { return find(key); }

  private:
    const json::value& root_;
    std::string_view source_;
};

} // namespace detail

namespace detail {

/// The model types read_hf_config understands, in the order its errors list them.
inline constexpr std::string_view hf_model_types[] = {"llama",     "mistral",     "qwen2",     "qwen3",
                                                      "gemma",     "gemma2",      "mixtral",   "qwen2_moe",
                                                      "qwen3_moe", "deepseek_v2", "deepseek_v3"};

/// Keys that change a model's weights in the families above (experts, latent attention, MTP):
/// refused in a config whose own family does not read them.
inline constexpr std::string_view hf_family_keys[] = {
    "num_local_experts", "num_experts",        "n_routed_experts",  "n_shared_experts", "num_experts_per_tok",
    "moe_intermediate_size", "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers",
    "first_k_dense_replace", "moe_layer_freq", "q_lora_rank",       "kv_lora_rank",     "qk_nope_head_dim",
    "qk_rope_head_dim",  "v_head_dim",         "num_nextn_predict_layers"};

/// Keys every family may carry that do not change the weights (positions, numerics, token ids,
/// initialisation, attention windows and caps, the router's training options, bookkeeping): an
/// unknown model type's keys outside these and the families' are the ones its error names.
inline constexpr std::string_view hf_harmless_keys[] = {
    "architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "use_cache", "bos_token_id",
    "eos_token_id", "pad_token_id", "initializer_range", "max_position_embeddings", "rope_theta", "rope_scaling",
    "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "pretraining_tp", "sliding_window", "use_sliding_window",
    "max_window_layers", "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
    "cache_implementation", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "norm_topk_prob",
    "aux_loss_alpha", "ep_size", "n_group", "topk_group", "topk_method", "routed_scaling_factor", "scoring_func",
    "seq_aux", "rope_interleave", "layer_types", "quantization_config", "auto_map", "name_or_path"};

/// Keys the families read in common.
inline constexpr std::string_view hf_common_keys[] = {
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
    "intermediate_size", "tie_word_embeddings", "attention_bias", "mlp_bias", "attention_dropout", "hidden_dropout",
    "hidden_act", "hidden_activation"};

inline bool listed(std::span<const std::string_view> list, std::string_view key) {
    return std::find(list.begin(), list.end(), key) != list.end();
}

/// The family-specific keys `type` reads (besides hf_common_keys).
inline std::vector<std::string_view> hf_own_keys(std::string_view type) {
    if (type == "mixtral") return {"num_local_experts", "num_experts_per_tok"};
    if (type == "qwen2_moe" || type == "qwen3_moe")
        return {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size",
                "decoder_sparse_step", "mlp_only_layers"};
    if (type == "deepseek_v2" || type == "deepseek_v3")
        return {"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                "qk_rope_head_dim", "v_head_dim", "num_nextn_predict_layers"};
    return {};
}

/// Refuses a config whose model_type is not one of hf_model_types (or is missing), naming the
/// keys no family here reads; and a supported one that carries another family's weight keys.
inline void check_hf_family(const json::value& root, const hf_reader& r, std::string_view type,
                            std::string_view source) {
    std::string supported;
    for (const std::string_view t : hf_model_types) supported += (supported.empty() ? "" : ", ") + std::string{t};
    if (!listed(hf_model_types, type)) {
        std::string unknown;
        std::size_t named = 0;
        for (const std::string& key : root.keys) {
            bool known = listed(hf_harmless_keys, key) || listed(hf_common_keys, key) || listed(hf_family_keys, key);
            if (known || ++named > 12) continue;
            unknown += (unknown.empty() ? "" : ", ") + key;
        }
        if (named > 12) unknown += ", and " + std::to_string(named - 12) + " more";
        const std::string why = "(plan counts the weights of " + supported + ")" +
                                (unknown.empty() ? std::string{} : "; keys plan does not understand: " + unknown);
        if (const json::value* v = r.at("model_type"))
            r.fail_at(*v, "model_type", "\"" + std::string{type} + "\" is not supported " + why);
        throw input_error(std::string{source} + ": missing key \"model_type\" " + why);
    }
    const std::vector<std::string_view> own = hf_own_keys(type);
    for (const std::string_view key : hf_family_keys) {
        const json::value* v = r.at(key);
        if (v == nullptr || listed(own, key)) continue;
        std::string families;
        for (const std::string_view t : hf_model_types)
            if (listed(hf_own_keys(t), key)) families += (families.empty() ? "" : ", ") + std::string{t};
        r.fail_at(*v, key, "changes the model's weights, and plan reads it only for " + families +
                               ", not for model_type \"" + std::string{type} + "\"");
    }
}

} // namespace detail

/// Reads a config.json's text; `source` names it in errors ("config.json").
[[nodiscard]] inline hf_model read_hf_config(std::string_view text, std::string_view source) {
    if (text.size() > max_config_bytes)
        throw input_error(std::string{source} + ": larger than " + std::to_string(max_config_bytes) + " bytes");
    json::parse_result parsed = json::parse(text);
    if (!parsed) throw input_error(std::string{source} + ": " + parsed.error);
    const json::value& root = *parsed.document;
    if (root.kind != json::value_kind::object) throw input_error(std::string{source} + ": expected a JSON object at the top");
    const detail::hf_reader r{root, source};
    hf_model out;
    model_config& m = out.model;
    const std::string type = r.text("model_type");
    detail::check_hf_family(root, r, type, source);
    m.name = type;
    const bool deepseek = type == "deepseek_v3" || type == "deepseek_v2";
    const bool qwen_moe = type == "qwen2_moe" || type == "qwen3_moe";
    const bool mixtral = type == "mixtral";
    const bool gemma = type == "gemma" || type == "gemma2";

    m.hidden = r.whole("hidden_size", 1, max_model_dimension, true);
    m.layers = r.whole("num_hidden_layers", 1, max_model_layers, true);
    m.heads = r.whole("num_attention_heads", 1, max_model_dimension, true);
    m.kv_heads = r.whole("num_key_value_heads", 1, m.heads, false, m.heads);
    // Gemma's configuration defaults head_dim to 256 rather than hidden / heads.
    m.head_dim = r.whole("head_dim", 1, max_model_dimension, false, gemma ? 256 : 0);
    m.vocab = r.whole("vocab_size", 1, max_model_vocab, true);
    m.tied_embeddings = r.boolean("tie_word_embeddings", gemma); // Gemma ties by default
    m.attention_dropout = r.fraction("attention_dropout");
    m.hidden_dropout = r.fraction("hidden_dropout");
    if (m.heads % m.kv_heads != 0)
        throw input_error(std::string{source} + ": \"num_key_value_heads\" " + std::to_string(m.kv_heads) +
                          " does not divide \"num_attention_heads\" " + std::to_string(m.heads));
    if (m.head_dim == 0 && m.hidden % m.heads != 0)
        throw input_error(std::string{source} + ": \"num_attention_heads\" " + std::to_string(m.heads) +
                          " does not divide \"hidden_size\" " + std::to_string(m.hidden) + " (and no \"head_dim\")");
    m.qkv_bias = r.boolean("attention_bias", type == "qwen2" || type == "qwen2_moe");
    m.linear_bias = r.boolean("mlp_bias", false);
    if (m.linear_bias) m.qkv_bias = true;
    // Every family here gates its MLP (SwiGLU; Gemma's GeGLU): the activation's name does not
    // change the weights.
    (void)r.text("hidden_act");
    (void)r.text("hidden_activation");
    m.norms_per_layer = type == "gemma2" ? 4 : 2;
    m.qk_norm = type == "qwen3" || type == "qwen3_moe";
    if (type == "gemma2")
        out.notes.push_back("gemma2: sliding-window layers and logit soft-capping are timed and sized as full "
                            "attention and plain logits");
    // MoE.
    if (mixtral) {
        m.experts = r.whole("num_local_experts", 1, max_model_experts, true);
        m.experts_per_token = r.whole("num_experts_per_tok", 1, m.experts, true);
        m.moe_ffn_hidden = r.whole("intermediate_size", 1, max_model_dimension, true);
        m.moe_layers.assign(m.layers, true);
    } else if (qwen_moe) {
        m.ffn_hidden = r.whole("intermediate_size", 1, max_model_dimension, true);
        m.experts = r.whole("num_experts", 1, max_model_experts, true);
        m.experts_per_token = r.whole("num_experts_per_tok", 1, m.experts, true);
        m.moe_ffn_hidden = r.whole("moe_intermediate_size", 1, max_model_dimension, true);
        m.shared_expert_ffn = r.whole("shared_expert_intermediate_size", 0, max_model_dimension, false, 0);
        m.shared_expert_gate = m.shared_expert_ffn > 0;
        const std::uint64_t step = r.whole("decoder_sparse_step", 1, max_model_layers, false, 1);
        m.moe_layers.assign(m.layers, false);
        for (std::uint64_t l = 0; l < m.layers; ++l) m.moe_layers[l] = (l + 1) % step == 0;
        if (const json::value* only = r.at("mlp_only_layers"); only != nullptr) {
            if (only->kind != json::value_kind::array) r.fail_at(*only, "mlp_only_layers", "must be an array of layer numbers");
            for (const json::value& x : only->items) {
                const auto n = x.whole();
                if (!n || *n >= m.layers) r.fail_at(x, "mlp_only_layers", "must hold layer numbers below num_hidden_layers");
                m.moe_layers[*n] = false;
            }
        }
    } else if (deepseek) {
        m.ffn_hidden = r.whole("intermediate_size", 1, max_model_dimension, true);
        m.experts = r.whole("n_routed_experts", 0, max_model_experts, false, 0);
        if (m.experts > 0) {
            m.experts_per_token = r.whole("num_experts_per_tok", 1, m.experts, true);
            m.moe_ffn_hidden = r.whole("moe_intermediate_size", 1, max_model_dimension, true);
            m.shared_expert_ffn = r.whole("n_shared_experts", 0, 1024, false, 0) * m.moe_ffn_hidden;
            const std::uint64_t first_dense = r.whole("first_k_dense_replace", 0, m.layers, false, 0);
            const std::uint64_t freq = r.whole("moe_layer_freq", 1, max_model_layers, false, 1);
            m.moe_layers.assign(m.layers, false);
            for (std::uint64_t l = first_dense; l < m.layers; ++l) m.moe_layers[l] = l % freq == 0;
        }
        m.q_lora_rank = r.whole("q_lora_rank", 1, max_model_dimension, false, 0);
        m.kv_lora_rank = r.whole("kv_lora_rank", 1, max_model_dimension, true);
        m.qk_nope_head_dim = r.whole("qk_nope_head_dim", 1, max_model_dimension, true);
        m.qk_rope_head_dim = r.whole("qk_rope_head_dim", 1, max_model_dimension, true);
        m.v_head_dim = r.whole("v_head_dim", 1, max_model_dimension, true);
        m.mtp_layers = r.whole("num_nextn_predict_layers", 0, 64, false, 0);
    } else {
        m.ffn_hidden = r.whole("intermediate_size", 1, max_model_dimension, true);
    }
    // Widths multiply: keep every weight matrix's size exact in a double.
    const double biggest = static_cast<double>(m.hidden) * static_cast<double>(std::max(m.vocab, m.ffn_hidden)) *
                           static_cast<double>(std::max<std::uint64_t>(1, m.experts)) *
                           static_cast<double>(m.layers);
    if (biggest > 9.0e15)
        throw input_error(std::string{source} + ": sizes too large (hidden x vocab or ffn x experts x layers above 9e15 parameters)");
    return out;
}

} // namespace pipesched::plan
