// pipesched plan: Megatron-LM launch arguments, as pasted from a training script, read into a
// model_config and a training_config.
//
// A whole command line works: words before the first flag (torchrun, pretrain_gpt.py), line
// continuations and flags that change nothing here are collected in `ignored`; the flags plan
// uses are read with Megatron's meaning and defaults (megatron/training/arguments.py: kv-channels
// = hidden / heads, ffn-hidden-size = 4 x hidden (SwiGLU: 8/3 x hidden rounded down to a multiple
// of 64), vocabulary padded to a multiple of 128 x TP, dropout 0.1, linear biases on). A value
// that is not a number, out of range, or an impossible combination throws input_error naming
// the flag.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model.hpp"
#include "training.hpp"

namespace pipesched::plan {

struct megatron_arguments {
    model_config model{};
    training_config training{};
    std::vector<std::string> ignored{};  ///< flags and words that change nothing here, once each
    std::uint64_t padded_vocab_for_megatron = 0; ///< what Megatron's embedding holds
};

namespace detail {

inline std::uint64_t whole_flag(std::string_view flag, std::string_view value, std::uint64_t low, std::uint64_t high) {
    std::uint64_t n = 0;
    bool digits = !value.empty();
    for (const char c : value) {
        if (c < '0' || c > '9') {
            digits = false;
            break;
        }
        if (n > (high + 9) / 10) {
            throw input_error(std::string{flag} + ": " + std::string{value} + " is too large (at most " +
                              std::to_string(high) + ")");
        }
        n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (!digits) throw input_error(std::string{flag} + ": expected a whole number, got '" + std::string{value} + "'");
    if (n < low || n > high)
        throw input_error(std::string{flag} + ": must be in " + std::to_string(low) + ".." + std::to_string(high) +
                          ", got " + std::string{value});
    return n;
}

inline double fraction_flag(std::string_view flag, std::string_view value) {
    const std::string text{value};
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(d >= 0.0 && d < 1.0))
        throw input_error(std::string{flag} + ": expected a number in [0, 1), got '" + text + "'");
    return d;
}

/// --moe-layer-freq: an integer k (every k-th layer, from layer 0) or a Python list expression
/// such as "([0]*3+[1]*58)" or "[1,0,1,0]".
inline std::vector<bool> moe_pattern(std::string_view value, std::uint64_t layers) {
    if (!value.empty() && value.front() >= '0' && value.front() <= '9') {
        const std::uint64_t k = whole_flag("--moe-layer-freq", value, 1, max_model_layers);
        std::vector<bool> out(layers, false);
        for (std::uint64_t l = 0; l < layers; ++l) out[l] = l % k == 0;
        return out;
    }
    std::string s;
    for (const char c : value)
        if (c != ' ' && c != '(' && c != ')') s += c;
    std::vector<bool> out;
    std::size_t i = 0;
    const auto bad = [&] {
        throw input_error("--moe-layer-freq: expected an integer or a list such as ([0]*3+[1]*58), got '" +
                          std::string{value} + "'");
    };
    while (i < s.size()) {
        if (s[i] != '[') bad();
        const std::size_t close = s.find(']', i);
        if (close == std::string::npos) bad();
        std::vector<bool> items;
        for (std::size_t j = i + 1; j < close; ++j) {
            if (s[j] == '0' || s[j] == '1') items.push_back(s[j] == '1');
            else if (s[j] != ',') bad();
        }
        i = close + 1;
        std::uint64_t repeat = 1;
        if (i < s.size() && s[i] == '*') {
            std::size_t j = ++i;
            while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
            repeat = whole_flag("--moe-layer-freq", std::string_view{s}.substr(i, j - i), 0, max_model_layers);
            i = j;
        }
        for (std::uint64_t k = 0; k < repeat; ++k) {
            out.insert(out.end(), items.begin(), items.end());
            if (out.size() > max_model_layers) bad();
        }
        if (i < s.size()) {
            if (s[i] != '+') bad();
            ++i;
        }
    }
    if (out.size() != layers)
        throw input_error("--moe-layer-freq: the list has " + std::to_string(out.size()) + " entries, not --num-layers " +
                          std::to_string(layers));
    return out;
}

} // namespace detail

/// Reads `args` (a launch line split into words, without plan's own options) over `base` (the
/// model from a config.json; default: nothing known). The flags given override the config.
[[nodiscard]] inline megatron_arguments read_megatron_arguments(std::span<const std::string_view> args,
                                                                const std::optional<model_config>& base = std::nullopt) {
    using detail::fraction_flag;
    using detail::whole_flag;
    megatron_arguments out;
    model_config& m = out.model;
    training_config& t = out.training;
    if (base) {
        m = *base;
    } else {
        // Megatron's own defaults for a model described by flags alone.
        m.name = "megatron";
        m.gated_mlp = false;
        m.tied_embeddings = true;
        m.norm = norm_kind::layer_norm;
        m.qkv_bias = true;
        m.linear_bias = true;
        m.hidden_dropout = 0.1;
        m.attention_dropout = 0.1;
    }
    const std::uint64_t dim = max_model_dimension;
    bool gqa = false;
    std::optional<std::uint64_t> query_groups, ffn, vocab, padded_vocab, layers_per_virtual;
    std::uint64_t divisible_by = 128;
    std::string moe_freq;
    std::optional<bool> qkv_bias;
    std::vector<std::string_view> seen;
    const auto note_ignored = [&](std::string_view word) {
        for (const std::string& s : out.ignored)
            if (s == word) return;
        out.ignored.emplace_back(word);
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string_view word = args[i];
        if (word.size() < 3 || word.substr(0, 2) != "--") {
            if (word != "\\") note_ignored(word);
            continue;
        }
        std::string_view flag = word;
        std::optional<std::string_view> inline_value;
        if (const std::size_t eq = word.find('='); eq != std::string_view::npos) {
            flag = word.substr(0, eq);
            inline_value = word.substr(eq + 1);
        }
        const auto value = [&]() -> std::string_view {
            if (inline_value) return *inline_value;
            if (i + 1 >= args.size() || args[i + 1].substr(0, 2) == "--")
                throw input_error(std::string{flag} + ": needs a value");
            return args[++i];
        };
        const auto switch_flag = [&]() {
            if (inline_value) throw input_error(std::string{flag} + ": takes no value");
            return true;
        };
        for (const std::string_view s : seen)
            if (s == flag) throw input_error(std::string{flag} + ": given twice");
        const auto w = [&](std::uint64_t low, std::uint64_t high) { return whole_flag(flag, value(), low, high); };
        // A flag whose value is one of two words.
        const auto choice = [&]<class E>(std::string_view first, E first_value, std::string_view second,
                                         E second_value) {
            const std::string_view v = value();
            if (v == first) return first_value;
            if (v == second) return second_value;
            throw input_error(std::string{flag} + ": expected " + std::string{first} + " or " + std::string{second} +
                              ", got '" + std::string{v} + "'");
        };
        bool known = true;
        if (flag == "--num-layers") m.layers = w(1, max_model_layers);
        else if (flag == "--hidden-size") m.hidden = w(1, dim);
        else if (flag == "--ffn-hidden-size") ffn = w(1, dim);
        else if (flag == "--num-attention-heads") m.heads = w(1, dim);
        else if (flag == "--group-query-attention") gqa = switch_flag();
        else if (flag == "--num-query-groups") query_groups = w(1, dim);
        else if (flag == "--kv-channels") m.head_dim = w(1, dim);
        else if (flag == "--seq-length") t.seq_length = w(1, std::uint64_t{1} << 24);
        else if (flag == "--micro-batch-size") t.micro_batch = w(1, std::uint64_t{1} << 16);
        else if (flag == "--global-batch-size") t.global_batch = w(1, std::uint64_t{1} << 32);
        else if (flag == "--tensor-model-parallel-size") t.tensor_parallel = w(1, 1024);
        else if (flag == "--pipeline-model-parallel-size") t.pipeline_parallel = w(1, 1024);
        else if (flag == "--num-layers-per-virtual-pipeline-stage") layers_per_virtual = w(1, max_model_layers);
        else if (flag == "--num-virtual-stages-per-pipeline-rank") t.virtual_stages = w(1, 256);
        else if (flag == "--context-parallel-size") t.context_parallel = w(1, 1024);
        else if (flag == "--expert-model-parallel-size") t.expert_parallel = w(1, 65536);
        else if (flag == "--expert-tensor-parallel-size") t.expert_tensor_parallel = w(1, 1024);
        else if (flag == "--sequence-parallel") t.sequence_parallel = switch_flag();
        else if (flag == "--recompute-granularity")
            t.recompute = choice("full", recompute_kind::full, "selective", recompute_kind::selective);
        else if (flag == "--recompute-method")
            t.method = choice("uniform", recompute_method::uniform, "block", recompute_method::block);
        else if (flag == "--recompute-num-layers") t.recompute_layers = w(1, max_model_layers);
        else if (flag == "--use-distributed-optimizer") t.distributed_optimizer = switch_flag();
        else if (flag == "--swiglu") m.gated_mlp = switch_flag();
        else if (flag == "--normalization")
            m.norm = choice("LayerNorm", norm_kind::layer_norm, "RMSNorm", norm_kind::rms_norm);
        else if (flag == "--untie-embeddings-and-output-weights") m.tied_embeddings = !switch_flag();
        else if (flag == "--padded-vocab-size") padded_vocab = w(1, max_model_vocab);
        else if (flag == "--vocab-size") vocab = w(1, max_model_vocab);
        else if (flag == "--make-vocab-size-divisible-by") divisible_by = w(1, 1 << 20);
        else if (flag == "--num-experts") m.experts = w(1, 65536);
        else if (flag == "--moe-ffn-hidden-size") m.moe_ffn_hidden = w(1, dim);
        else if (flag == "--moe-router-topk") m.experts_per_token = w(1, 65536);
        else if (flag == "--moe-layer-freq") moe_freq = std::string{value()};
        else if (flag == "--moe-shared-expert-intermediate-size") m.shared_expert_ffn = w(0, dim);
        else if (flag == "--moe-shared-expert-gate") m.shared_expert_gate = switch_flag();
        else if (flag == "--mtp-num-layers") m.mtp_layers = w(0, 64);
        else if (flag == "--decoder-first-pipeline-num-layers") t.first_stage_layers = w(1, max_model_layers);
        else if (flag == "--decoder-last-pipeline-num-layers") t.last_stage_layers = w(1, max_model_layers);
        else if (flag == "--account-for-embedding-in-pipeline-split") t.account_for_embedding = switch_flag();
        else if (flag == "--account-for-loss-in-pipeline-split") t.account_for_loss = switch_flag();
        else if (flag == "--pipeline-model-parallel-layout") t.layout = std::string{value()};
        else if (flag == "--bf16") t.dtype = switch_flag() ? precision::bf16 : t.dtype;
        else if (flag == "--fp16") t.dtype = switch_flag() ? precision::fp16 : t.dtype;
        else if (flag == "--disable-bias-linear") m.linear_bias = !switch_flag();
        else if (flag == "--add-qkv-bias") qkv_bias = switch_flag();
        else if (flag == "--hidden-dropout") m.hidden_dropout = fraction_flag(flag, value());
        else if (flag == "--attention-dropout") m.attention_dropout = fraction_flag(flag, value());
        else if (flag == "--overlap-grad-reduce") t.overlap_grad_reduce = switch_flag();
        else if (flag == "--overlap-param-gather") t.overlap_param_gather = switch_flag();
        else if (flag == "--tp-comm-overlap") t.tp_comm_overlap = switch_flag();
        else if (flag == "--grad-reduce-in-bf16") t.grad_reduce_bf16 = switch_flag();
        else if (flag == "--fp8-format") t.fp8 = choice("hybrid", fp8_kind::hybrid, "e4m3", fp8_kind::e4m3);
        else if (flag == "--optimizer") t.optimizer = choice("adam", optimizer_kind::adam, "sgd", optimizer_kind::sgd);
        else if (flag == "--multi-latent-attention") (void)switch_flag();
        else if (flag == "--q-lora-rank") m.q_lora_rank = w(1, dim);
        else if (flag == "--kv-lora-rank") m.kv_lora_rank = w(1, dim);
        else if (flag == "--qk-head-dim") m.qk_nope_head_dim = w(1, dim);
        else if (flag == "--qk-pos-emb-head-dim") m.qk_rope_head_dim = w(1, dim);
        else if (flag == "--v-head-dim") m.v_head_dim = w(1, dim);
        else if (flag == "--attention-backend") {
            const std::string_view v = value();
            if (v == "unfused" || v == "local") t.attention = attention_kind::eager;
            else if (v == "flash" || v == "fused" || v == "auto") t.attention = attention_kind::flash;
            else throw input_error("--attention-backend: expected flash, fused, unfused, local or auto, got '" + std::string{v} + "'");
        } else {
            known = false;
        }
        if (known) {
            seen.push_back(flag);
            continue;
        }
        // A flag plan does not use: skip its value, if it has one.
        note_ignored(flag);
        if (!inline_value && i + 1 < args.size() && args[i + 1].substr(0, 2) != "--" && args[i + 1] != "\\") ++i;
    }

    // Derived values and defaults, as Megatron's argument validation makes them.
    const auto require = [](bool ok, const std::string& what) {
        if (!ok) throw input_error(what);
    };
    require(m.layers > 0, "missing --num-layers (or a config.json)");
    require(m.hidden > 0, "missing --hidden-size (or a config.json)");
    require(m.heads > 0, "missing --num-attention-heads (or a config.json)");
    if (query_groups) {
        require(gqa || base.has_value(), "--num-query-groups needs --group-query-attention");
        m.kv_heads = *query_groups;
    } else if (gqa && !base) {
        m.kv_heads = 1;
    }
    require(m.query_groups() <= m.heads && m.heads % m.query_groups() == 0,
            "--num-query-groups " + std::to_string(m.query_groups()) + " does not divide --num-attention-heads " +
                std::to_string(m.heads));
    require(m.head_dim != 0 || m.hidden % m.heads == 0,
            "--num-attention-heads " + std::to_string(m.heads) + " does not divide --hidden-size " +
                std::to_string(m.hidden) + " (give --kv-channels)");
    if (ffn) m.ffn_hidden = *ffn;
    else if (m.ffn_hidden == 0) m.ffn_hidden = m.gated_mlp ? (4 * m.hidden * 2 / 3) / 64 * 64 : 4 * m.hidden;
    if (qkv_bias) m.qkv_bias = *qkv_bias;
    else if (!base) m.qkv_bias = m.linear_bias;
    if (padded_vocab) {
        m.vocab = *padded_vocab;
        out.padded_vocab_for_megatron = *padded_vocab;
    } else if (vocab) {
        const std::uint64_t multiple = divisible_by * t.tensor_parallel;
        m.vocab = (*vocab + multiple - 1) / multiple * multiple;
        out.padded_vocab_for_megatron = m.vocab;
    }
    require(m.vocab > 0, "missing --vocab-size or --padded-vocab-size (or a config.json)");
    if (m.experts > 0) {
        require(m.experts_per_token > 0, "--num-experts needs --moe-router-topk");
        require(m.experts_per_token <= m.experts, "--moe-router-topk " + std::to_string(m.experts_per_token) +
                                                      " exceeds --num-experts " + std::to_string(m.experts));
        if (m.moe_ffn_hidden == 0) m.moe_ffn_hidden = m.ffn_hidden;
        if (!moe_freq.empty()) m.moe_layers = detail::moe_pattern(moe_freq, m.layers);
        else if (m.moe_layers.size() != m.layers) m.moe_layers.assign(m.layers, true);
        require(m.experts % t.expert_parallel == 0, "--expert-model-parallel-size " + std::to_string(t.expert_parallel) +
                                                        " does not divide --num-experts " + std::to_string(m.experts));
    } else {
        require(moe_freq.empty(), "--moe-layer-freq needs --num-experts");
        require(t.expert_parallel == 1, "--expert-model-parallel-size needs --num-experts");
        m.moe_layers.clear();
    }
    if (m.kv_lora_rank > 0)
        require(m.qk_nope_head_dim > 0 && m.qk_rope_head_dim > 0 && m.v_head_dim > 0,
                "multi-latent attention needs --qk-head-dim, --qk-pos-emb-head-dim and --v-head-dim");
    require(t.seq_length > 0, "missing --seq-length");
    require(m.heads % t.tensor_parallel == 0, "--tensor-model-parallel-size " + std::to_string(t.tensor_parallel) +
                                                  " does not divide --num-attention-heads " + std::to_string(m.heads));
    require(t.seq_length % t.context_parallel == 0, "--context-parallel-size " + std::to_string(t.context_parallel) +
                                                        " does not divide --seq-length " + std::to_string(t.seq_length));
    if (t.sequence_parallel && t.tensor_parallel == 1) t.sequence_parallel = false; // Megatron turns it off too
    if (layers_per_virtual) {
        require(t.virtual_stages == 0, "--num-layers-per-virtual-pipeline-stage and "
                                       "--num-virtual-stages-per-pipeline-rank are exclusive");
        require(m.layers % t.pipeline_parallel == 0 && (m.layers / t.pipeline_parallel) % *layers_per_virtual == 0,
                "--num-layers-per-virtual-pipeline-stage " + std::to_string(*layers_per_virtual) +
                    " does not divide the layers per rank");
        t.virtual_stages = m.layers / t.pipeline_parallel / *layers_per_virtual;
    }
    if (t.virtual_stages == 1) t.virtual_stages = 0;
    require(t.pipeline_parallel > 1 || t.virtual_stages == 0, "virtual pipeline stages need --pipeline-model-parallel-size > 1");
    const int layout_ways = (t.first_stage_layers || t.last_stage_layers ? 1 : 0) +
                            (t.account_for_embedding || t.account_for_loss ? 1 : 0) + (t.layout.empty() ? 0 : 1);
    require(layout_ways <= 1, "--pipeline-model-parallel-layout, --decoder-first/last-pipeline-num-layers and "
                              "--account-for-embedding/loss-in-pipeline-split are exclusive");
    if (t.recompute == recompute_kind::selective) t.recompute_layers = 1;
    if (t.virtual_stages > 1) {
        // Megatron requires each rank's layers to divide into its virtual stages. A layout that
        // fails even with one chunk is left for plan() to report under its own flag.
        bool base_layout_ok = true;
        try {
            (void)stage_contents(m, t, 1);
        } catch (const input_error&) {
            base_layout_ok = false;
        }
        if (base_layout_ok) {
            try {
                (void)stage_contents(m, t, t.virtual_stages);
            } catch (const input_error& e) {
                throw input_error((layers_per_virtual ? "--num-layers-per-virtual-pipeline-stage "
                                                      : "--num-virtual-stages-per-pipeline-rank ") +
                                  std::to_string(layers_per_virtual ? *layers_per_virtual : t.virtual_stages) + ": " +
                                  e.what());
            }
        }
    }
    return out;
}

} // namespace pipesched::plan
