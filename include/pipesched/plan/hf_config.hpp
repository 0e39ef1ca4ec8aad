// pipesched plan: a Hugging Face `config.json` read into a model_config.
//
// The keys of the Llama, Mistral, Qwen2/Qwen3, Mixtral, Qwen-MoE and DeepSeek-V2/V3 configs
// (transformers' configuration_*.py); other model types are read with the Llama keys and say
// so in `notes`. Strict: the document must be valid JSON (detail/json_reader.hpp), every key
// this reader uses must have the right type and a value in range, and each error names the key
// and its line and column.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
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
        return v == nullptr || v->kind == json::value_kind::null ? nullptr : v;
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
    m.name = type.empty() ? std::string{"model"} : type;
    const bool deepseek = type == "deepseek_v3" || type == "deepseek_v2";
    const bool qwen_moe = type == "qwen2_moe" || type == "qwen3_moe";
    const bool mixtral = type == "mixtral";
    const bool known = deepseek || qwen_moe || mixtral || type == "llama" || type == "mistral" || type == "qwen2" ||
                       type == "qwen3";
    if (!known)
        out.notes.push_back("model_type \"" + type + "\" read with the Llama keys (hidden_size, num_hidden_layers, ...)");

    m.hidden = r.whole("hidden_size", 1, max_model_dimension, true);
    m.layers = r.whole("num_hidden_layers", 1, max_model_layers, true);
    m.heads = r.whole("num_attention_heads", 1, max_model_dimension, true);
    m.kv_heads = r.whole("num_key_value_heads", 1, m.heads, false, m.heads);
    m.head_dim = r.whole("head_dim", 1, max_model_dimension, false, 0);
    m.vocab = r.whole("vocab_size", 1, max_model_vocab, true);
    m.tied_embeddings = r.boolean("tie_word_embeddings", false);
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
    if (const json::value* act = r.at("hidden_act"); act != nullptr && !known) {
        if (act->kind != json::value_kind::string) r.fail_at(*act, "hidden_act", "must be a string");
        m.gated_mlp = act->text == "silu" || act->text == "swiglu";
    }

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
    if (r.at("layer_norm_epsilon") != nullptr && r.at("rms_norm_eps") == nullptr && !known)
        m.norm = norm_kind::layer_norm;
    // Widths multiply: keep every weight matrix's size exact in a double.
    const double biggest = static_cast<double>(m.hidden) * static_cast<double>(std::max(m.vocab, m.ffn_hidden)) *
                           static_cast<double>(std::max<std::uint64_t>(1, m.experts)) *
                           static_cast<double>(m.layers);
    if (biggest > 9.0e15)
        throw input_error(std::string{source} + ": sizes too large (hidden x vocab or ffn x experts x layers above 9e15 parameters)");
    return out;
}

} // namespace pipesched::plan
