// pipesched plan: how a model is trained (parallel sizes, batch, recompute, optimizer), and
// which layers each pipeline stage holds.
//
// Stage contents follow Megatron-LM's rules (megatron/core/transformer/transformer_block.py
// get_num_layers_to_build, pipeline_parallel_layer_layout.py): an even split of the layers
// over p x v stages; or given counts on the first and last rank with the rest even; or the
// embedding and the loss counted as one layer each; or a layout string such as
// "Et*3|(tt|)*29,m|L". Stages are numbered in model order (global stage s = chunk x p + rank for
// the loop placement, as Megatron's layout lists them), so a V placement of the same list puts
// the first and the last stage on rank 0.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../shape.hpp"
#include "model.hpp"

namespace pipesched::plan {

/// Bad input to plan: the message names the key, flag or value at fault. The readers of
/// config.json and of Megatron's launch line speak of their own keys and flags; plan() speaks
/// of the model, training and option fields (`field`, such as "plan_options.measured"), which a
/// front end maps to its own words (the tool to its flags) with `detail`.
struct input_error : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
    input_error(const std::string& field_name, const std::string& what_is_wrong)
        : std::invalid_argument(field_name + ": " + what_is_wrong), field{field_name}, detail{what_is_wrong} {}
    std::string field{};  ///< the struct field at fault, or empty when the message names a key or flag
    std::string detail{}; ///< the message without the field's name
};

enum class recompute_kind : std::uint8_t { none, selective, full };
enum class recompute_method : std::uint8_t { uniform, block };
/// bf16 and fp16: half-precision weights with fp32 main gradients, master weights and Adam
/// states (Megatron's mixed precision, 18 bytes per parameter); fp32: 16 bytes per parameter.
enum class precision : std::uint8_t { bf16, fp16, fp32 };
/// flash: no attention scores are kept (FlashAttention, Transformer Engine's fused kernels);
/// eager: the softmax output and dropout mask, 5 a s^2 b bytes per layer (Korthikanti Table 2).
enum class attention_kind : std::uint8_t { flash, eager };
/// --fp8-format: the GEMMs run on the GPU's FP8 tensor cores (Transformer Engine's recipes;
/// hybrid = E4M3 forward, E5M2 gradients). Memory is counted as Megatron-LM's theoretical
/// memory counts it, which has no FP8 term (the BF16 weights and FP32 states stay).
enum class fp8_kind : std::uint8_t { none, hybrid, e4m3 };
/// --optimizer: Adam keeps two FP32 moments (12 bytes with the master weight), SGD with momentum
/// one (8 bytes).
enum class optimizer_kind : std::uint8_t { adam, sgd };

struct training_config {
    std::uint64_t tensor_parallel = 1;
    std::uint64_t pipeline_parallel = 1;
    std::uint64_t context_parallel = 1;
    std::uint64_t expert_parallel = 1;
    std::uint64_t expert_tensor_parallel = 0; ///< 0: the same as tensor_parallel
    std::uint64_t data_parallel = 1;
    std::uint64_t virtual_stages = 0;         ///< chunks per rank from the arguments; 0: not given
    std::uint64_t seq_length = 0;
    std::uint64_t micro_batch = 1;
    std::uint64_t global_batch = 0;           ///< 0: micro_batch x data_parallel x microbatches
    std::uint64_t microbatches = 0;           ///< 0: global_batch / (micro_batch x data_parallel)
    bool sequence_parallel = false;
    recompute_kind recompute = recompute_kind::none;
    recompute_method method = recompute_method::uniform;
    std::uint64_t recompute_layers = 1;       ///< --recompute-num-layers
    bool distributed_optimizer = false;
    precision dtype = precision::bf16;
    attention_kind attention = attention_kind::flash;
    bool overlap_grad_reduce = false;
    bool overlap_param_gather = false;
    bool tp_comm_overlap = false;             ///< --tp-comm-overlap: TP collectives hidden behind GEMMs
    fp8_kind fp8 = fp8_kind::none;
    optimizer_kind optimizer = optimizer_kind::adam;
    bool grad_reduce_bf16 = false;            ///< --grad-reduce-in-bf16: 2-byte gradients on the wire
    /// Megatron-LM 2021's scatter/gather of pipeline tensors (Narayanan et al. 2021, section
    /// 4.1): each TP rank sends 1/TP of the activation and the receivers all-gather it over
    /// NVLink. Megatron-Core does the same only with sequence parallelism.
    bool scatter_gather_p2p = false;
    // Uneven stages (at most one way).
    std::uint64_t first_stage_layers = 0;     ///< 0: not given
    std::uint64_t last_stage_layers = 0;
    bool account_for_embedding = false;
    bool account_for_loss = false;
    std::string layout{};                     ///< --pipeline-model-parallel-layout

    [[nodiscard]] std::uint64_t expert_tp() const noexcept {
        return expert_tensor_parallel == 0 ? tensor_parallel : expert_tensor_parallel;
    }
    [[nodiscard]] std::uint64_t world() const noexcept {
        return tensor_parallel * pipeline_parallel * context_parallel * data_parallel;
    }
};

/// What one pipeline stage (one chunk of one rank) holds.
struct stage_content {
    std::uint64_t layers = 0; ///< transformer layers
    std::uint64_t first_layer = 0;
    bool embedding = false;   ///< the input embedding (first stage)
    bool loss = false;        ///< final norm, output layer and loss (last stage)
    std::uint64_t mtp = 0;    ///< MTP layers
};

namespace detail {

/// Megatron's layout string with its `(...)*n` and `x*n` repetitions unrolled; commas are
/// cosmetic. Stages are separated by '|'.
inline std::string unroll_layout(std::string_view text) {
    std::string s;
    for (const char c : text)
        if (c != ',' && c != ' ') s += c;
    constexpr std::size_t max_unrolled = std::size_t{1} << 20; // a few characters make millions
    const auto read_count = [&](std::size_t& i) -> std::uint64_t {
        std::uint64_t n = 0;
        const std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            n = n * 10 + static_cast<std::uint64_t>(s[i] - '0');
            if (n > max_unrolled) throw input_error("--pipeline-model-parallel-layout: repeat count too large");
            ++i;
        }
        if (i == start) throw input_error("--pipeline-model-parallel-layout: '*' must be followed by a count");
        return n;
    };
    // Innermost parentheses first, then single characters, as Megatron's two substitutions do.
    while (true) {
        const std::size_t close = s.find(')');
        if (close == std::string::npos) break;
        const std::size_t open = s.rfind('(', close);
        if (open == std::string::npos) throw input_error("--pipeline-model-parallel-layout: unbalanced ')'");
        if (close + 1 >= s.size() || s[close + 1] != '*')
            throw input_error("--pipeline-model-parallel-layout: '(...)' must be followed by '*N'");
        std::size_t i = close + 2;
        const std::uint64_t n = read_count(i);
        const std::string body = s.substr(open + 1, close - open - 1);
        if (body.size() * n > max_unrolled) throw input_error("--pipeline-model-parallel-layout: too long once unrolled");
        std::string rep;
        for (std::uint64_t k = 0; k < n; ++k) rep += body;
        s = s.substr(0, open) + rep + s.substr(i);
        if (s.size() > max_unrolled) throw input_error("--pipeline-model-parallel-layout: too long once unrolled");
    }
    if (s.find('(') != std::string::npos) throw input_error("--pipeline-model-parallel-layout: unbalanced '('");
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        if (s[i] == '*') throw input_error("--pipeline-model-parallel-layout: '*' without a layer before it");
        if (i + 1 < s.size() && s[i + 1] == '*') {
            const char c = s[i];
            std::size_t j = i + 2;
            const std::uint64_t n = read_count(j);
            if (out.size() + n > max_unrolled) throw input_error("--pipeline-model-parallel-layout: too long once unrolled");
            out.append(n, c);
            i = j;
        } else {
            out += s[i++];
        }
    }
    return out;
}

} // namespace detail

/// The stages of a model in model order: p x v of them, each with its layers. A split given per
/// rank (even, or the first and last ranks' counts) goes to the stages `layout` puts on each
/// rank, so that every placement gives a rank the same layers; a layout string lists the stages
/// themselves.
[[nodiscard]] inline std::vector<stage_content> stage_contents(const model_config& m, const training_config& t,
                                                             std::uint64_t v, placement layout = placement::loop) {
    const std::uint64_t p = t.pipeline_parallel;
    const std::uint64_t stages = p * v;
    std::vector<stage_content> out(stages, stage_content{});
    if (!t.layout.empty()) {
        const std::string s = detail::unroll_layout(t.layout);
        std::vector<stage_content> parsed(1, stage_content{});
        std::uint64_t embeddings = 0;
        std::uint64_t losses = 0;
        for (const char c : s) {
            stage_content& st = parsed.back();
            switch (c) {
            case '|': parsed.push_back({}); break;
            case 'E': st.embedding = true; ++embeddings; break;
            case 'L': st.loss = true; ++losses; break;
            case 't': ++st.layers; break;
            case 'm': ++st.mtp; break;
            default:
                throw input_error(std::string{"--pipeline-model-parallel-layout: unknown layer character '"} + c +
                                  "' (known: E embedding, t transformer layer, m MTP layer, L loss, | next stage)");
            }
        }
        if (parsed.size() % p != 0)
            throw input_error("--pipeline-model-parallel-layout: " + std::to_string(parsed.size()) +
                              " stages is not a multiple of --pipeline-model-parallel-size " + std::to_string(p));
        if (parsed.size() != stages)
            throw input_error("--pipeline-model-parallel-layout: " + std::to_string(parsed.size()) + " stages, not " +
                              std::to_string(stages) + " (" + std::to_string(p) + " ranks x " + std::to_string(v) +
                              " chunks)");
        if (embeddings != 1 || !parsed.front().embedding)
            throw input_error("--pipeline-model-parallel-layout: the embedding 'E' must appear once, in the first stage");
        if (losses != 1 || !parsed.back().loss)
            throw input_error("--pipeline-model-parallel-layout: the loss 'L' must appear once, in the last stage");
        std::uint64_t layers = 0;
        std::uint64_t mtp = 0;
        for (stage_content& st : parsed) {
            st.first_layer = layers;
            layers += st.layers;
            mtp += st.mtp;
        }
        if (layers != m.layers)
            throw input_error("--pipeline-model-parallel-layout: " + std::to_string(layers) +
                              " transformer layers 't', but the model has " + std::to_string(m.layers));
        if (mtp != m.mtp_layers)
            throw input_error("--pipeline-model-parallel-layout: " + std::to_string(mtp) + " MTP layers 'm', but " +
                              std::to_string(m.mtp_layers) + " are configured");
        return parsed;
    }
    std::vector<std::uint64_t> per_rank(p, 0);
    if (t.first_stage_layers != 0 || t.last_stage_layers != 0) {
        if (t.account_for_embedding || t.account_for_loss)
            throw input_error("--decoder-first/last-pipeline-num-layers cannot be combined with "
                              "--account-for-embedding/loss-in-pipeline-split");
        std::uint64_t rest = m.layers;
        std::uint64_t ranks_left = p;
        for (const auto& [given, flag] : {std::pair{t.first_stage_layers, "--decoder-first-pipeline-num-layers"},
                                         std::pair{t.last_stage_layers, "--decoder-last-pipeline-num-layers"}}) {
            if (given == 0) continue;
            if (given > rest || ranks_left == 0)
                throw input_error(std::string{flag} + " " + std::to_string(given) + " leaves too few layers for the other ranks");
            rest -= given;
            --ranks_left;
        }
        if (p == 1 && t.first_stage_layers != 0 && t.last_stage_layers != 0)
            throw input_error("--decoder-first/last-pipeline-num-layers: both given with one pipeline rank");
        const std::uint64_t middle = ranks_left == 0 ? 0 : rest / ranks_left;
        if (ranks_left > 0 && rest % ranks_left != 0)
            throw input_error("--num-layers " + std::to_string(m.layers) + ": the " + std::to_string(rest) +
                              " layers left after the first/last stage do not divide over " +
                              std::to_string(ranks_left) + " ranks");
        if (ranks_left == 0 && rest != 0)
            throw input_error("--decoder-first/last-pipeline-num-layers do not add up to --num-layers " +
                              std::to_string(m.layers));
        for (std::uint64_t r = 0; r < p; ++r) per_rank[r] = middle;
        if (t.first_stage_layers != 0) per_rank[0] = t.first_stage_layers;
        if (t.last_stage_layers != 0) per_rank[p - 1] = t.last_stage_layers;
    } else {
        const std::uint64_t counted = m.layers + (t.account_for_embedding ? 1 : 0) + (t.account_for_loss ? 1 : 0);
        if (counted % p != 0)
            throw input_error("--num-layers " + std::to_string(m.layers) +
                              (counted != m.layers ? " (plus the embedding/loss counted as layers)" : std::string{}) +
                              " is not divisible by --pipeline-model-parallel-size " + std::to_string(p));
        for (std::uint64_t r = 0; r < p; ++r) per_rank[r] = counted / p;
    }
    for (std::uint64_t r = 0; r < p; ++r) {
        if (per_rank[r] % v != 0)
            throw input_error("rank " + std::to_string(r) + "'s " + std::to_string(per_rank[r]) +
                              " layers do not divide into " + std::to_string(v) + " chunks");
    }
    for (std::uint64_t s = 0; s < stages; ++s)
        out[s].layers = per_rank[locate_stage(layout, static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(s)).rank] / v;
    out.front().embedding = true;
    out.back().loss = true;
    if (t.account_for_embedding) {
        if (out.front().layers == 0) throw input_error("--account-for-embedding-in-pipeline-split: the first stage has no layer to give up");
        --out.front().layers;
    }
    if (t.account_for_loss) {
        if (out.back().layers == 0) throw input_error("--account-for-loss-in-pipeline-split: the last stage has no layer to give up");
        --out.back().layers;
    }
    out.back().mtp = m.mtp_layers;
    std::uint64_t layer = 0;
    for (stage_content& st : out) {
        st.first_layer = layer;
        layer += st.layers;
    }
    return out;
}

} // namespace pipesched::plan
