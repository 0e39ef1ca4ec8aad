// pipesched plan: from a model, a training setup and a GPU to every schedule ranked in seconds
// and bytes, and the fastest one that fits.
//
//   ps::plan::plan_result r = ps::plan::plan(model, training, *ps::plan::find_gpu("h100"));
//   if (r.recommended) { const auto& best = r.schedules[*r.recommended]; ... }
//
// Every catalogued schedule is replayed by the library's own simulate() with per-stage costs
// in seconds (timing.hpp) and per-stage activation bytes M_B and M_W (memory.hpp); a rank's
// peak is its weights, gradients and optimizer states plus the replay's peak of activations,
// so no schedule has a memory formula of its own. Multi-chunk schedules are evaluated at every
// chunk count the layers divide into; the auto-scheduler searches under each rank's memory left
// after its states. The iteration time is the replay's makespan plus the slowest rank's exposed
// data-parallel collectives and optimizer step.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../search/autoschedule.hpp"
#include "../analysis/simulate.hpp"
#include "../catalog.hpp"
#include "gpu.hpp"
#include "megatron_theoretical.hpp"
#include "memory.hpp"
#include "model.hpp"
#include "operations.hpp"
#include "timing.hpp"
#include "training.hpp"

namespace pipesched::plan {

struct plan_options {
    /// Fraction of the GPU's peak the GEMMs reach at their best shape, instead of the GPU
    /// table's gemm_efficiency (0: the table's); smaller shapes lose from there as before.
    double efficiency = 0.0;
    double memory_reserve_bytes = 8 * gib; ///< not available to the model (context, NCCL, fragmentation)
    /// Measured times per stage in model order, replacing the FLOPs model: p entries (one per
    /// rank, split evenly over a multi-chunk schedule's chunks) or p x v for schedules with v chunks.
    std::vector<stage_seconds> measured{};
    bool autoschedule = true;
};

/// One pipeline rank at the base chunk count (1, or the layout's), on one GPU of that rank.
struct rank_report {
    std::uint64_t layers = 0;
    double parameters = 0.0;
    double state_bytes = 0.0;        ///< weights, gradients, optimizer states
    double activation_bytes = 0.0;   ///< one microbatch after its forward through the rank's stages
    double forward_seconds = 0.0;    ///< one microbatch through the rank's stages
};

struct schedule_report {
    std::string name{};
    schedule_id id{};
    bool searched = false;            ///< the auto-scheduler's result, not a catalogued schedule
    std::size_t search_index = 0;     ///< which of plan_result::searched, when searched
    std::uint32_t chunks = 1;
    placement layout = placement::loop;
    bool evaluated = false;           ///< false: the schedule rejects this shape (see note)
    std::string note{};
    bool fits = false;
    double iteration_seconds = 0.0;
    double pipeline_seconds = 0.0;    ///< the replay's makespan
    double bubble_fraction = 0.0;
    std::vector<double> peak_bytes{}; ///< per rank
    std::uint32_t worst_rank = 0;
    [[nodiscard]] double worst_bytes() const { return peak_bytes.empty() ? 0.0 : peak_bytes[worst_rank]; }
};

struct plan_result {
    parameter_count parameters{};
    std::uint64_t microbatches = 0;
    double usable_bytes = 0.0;        ///< GPU memory minus the reserve
    std::vector<rank_report> ranks{};
    std::vector<schedule_report> schedules{}; ///< ranked: fitting ones first, fastest first
    std::optional<std::size_t> recommended{};
    megatron_memory megatron{};
    /// The auto-scheduler's answers, one per placement searched (schedule_report::search_index).
    std::vector<autoschedule_result> searched{};
    /// When nothing fits: by how much the closest schedule misses, where, and what would help.
    std::string advice{};
};

namespace detail {

/// Per-stage cost model for p x v stages in model order, and each rank's static bytes.
struct stage_model {
    std::vector<stage_costs> costs{};
    std::vector<double> state_bytes{}; ///< per rank
    std::vector<std::uint32_t> rank{};  ///< per stage: the rank that runs it
    std::vector<stage_parameters> held{}; ///< per rank: the parameters of its stages
    double p2p = 0.0;
    std::vector<stage_seconds> seconds{};
    std::vector<stage_content> stages{}; ///< in model order
    bool usable = true;
    std::string note{};
};

inline stage_model build_stage_model(const model_config& m, const training_config& t, const gpu_spec& g,
                                     const plan_options& o, std::uint64_t v, placement layout) {
    const std::uint64_t p = t.pipeline_parallel;
    stage_model sm;
    sm.stages = stage_contents(m, t, v, layout);
    const std::vector<stage_content>& stages = sm.stages;
    sm.costs.resize(stages.size());
    sm.seconds.resize(stages.size());
    sm.state_bytes.assign(p, 0.0);
    const auto ranks = static_cast<std::uint32_t>(p);
    for (std::size_t s = 0; s < stages.size(); ++s)
        sm.rank.push_back(locate_stage(layout, ranks, static_cast<std::uint32_t>(s)).rank);
    sm.held.assign(p, stage_parameters{});
    const bool output_copy_needed = sm.rank.front() != sm.rank.back();
    std::vector<double> working_set(p, 0.0);
    if (!o.measured.empty() && o.measured.size() != p && o.measured.size() != p * v) {
        sm.usable = false;
        sm.note = "measured times for " + std::to_string(o.measured.size()) + " stages, not " + std::to_string(p) +
                  " or " + std::to_string(p * v);
    }
    time_options to;
    to.gemm_scale = o.efficiency > 0.0 ? o.efficiency / g.gemm_efficiency : 1.0;
    to.fp8 = t.fp8 != fp8_kind::none;
    const double transfer = p > 1 ? p2p_transfer_seconds(m, t, g) : 0.0;
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const std::uint32_t r = sm.rank[s];
        const stage_parameters params = parameters_of_stage(m, t, stages[s], output_copy_needed);
        sm.state_bytes[r] += state_bytes(t, params);
        sm.held[r].dense += params.dense;
        sm.held[r].expert += params.expert;
        const stage_activation act = activation_of_stage(m, t, stages[s]);
        working_set[r] = std::max(working_set[r], act.recompute_working_set);
        stage_seconds sec = seconds_of_stage(m, t, stages[s], g, to);
        if (sm.usable && !o.measured.empty()) {
            if (o.measured.size() == p * v) {
                sec = o.measured[s];
            } else {
                const double per = static_cast<double>(v);
                const stage_seconds& x = o.measured[r];
                sec = {x.forward / per, x.backward / per, x.backward_input / per, x.backward_weight / per};
            }
        }
        sm.seconds[s] = sec;
        // Megatron waits for a pass's sends before the next compute: a stage whose neighbour is
        // on another rank spends the transfer after its F (and after its B or I).
        const bool sends_forward = s + 1 < stages.size() && sm.rank[s + 1] != r;
        const bool sends_backward = s > 0 && sm.rank[s - 1] != r;
        const double forward_send = sends_forward ? transfer : 0.0;
        const double backward_send = sends_backward ? transfer : 0.0;
        sm.costs[s] = {sec.forward + forward_send, sec.backward + backward_send, sec.backward_input + backward_send,
                       sec.backward_weight, -1.0, act.activation, act.weight};
    }
    for (std::uint64_t r = 0; r < p; ++r) sm.state_bytes[r] += working_set[r];
    sm.p2p = p > 1 ? g.p2p_latency : 0.0;
    return sm;
}

/// Seconds of one data-parallel gradient reduction or parameter gather of `params` parameters
/// of `bytes` each over a group of `n` ranks `stride` apart, in Megatron's buckets (40 M
/// parameters, megatron/core/distributed/distributed_data_parallel_config.py): each bucket a
/// ring collective over the slowest link of the group (NCCL's trees reach the same bus
/// bandwidth for large messages), with its latency. `kind`: reduce-scatter, all-reduce or
/// all-gather.
inline double bucketed_seconds(collective_kind kind, double params, double bytes, double n, std::uint64_t stride,
                               const gpu_spec& g) {
    if (n <= 1.0 || params <= 0.0) return 0.0;
    constexpr double bucket = 40e6;
    const double buckets = std::ceil(params / bucket);
    const link_kind link = link_of(stride, static_cast<std::uint64_t>(n), g);
    return buckets * collective_seconds(kind, params / buckets * bytes, n, link, g);
}

/// Seconds of data-parallel collectives and the optimizer step a rank adds after the pipeline
/// drains: the gradient reduce-scatter (distributed optimizer) or all-reduce of FP32 gradients
/// (BF16/FP16 with --grad-reduce-in-bf16 or --fp16), the BF16 parameter all-gather, and the
/// optimizer step, which reads and writes about 30 bytes per (sharded) parameter with Adam (FP32
/// weight, gradient, two moments, the BF16 copy) and 22 with SGD's one moment, at HBM
/// bandwidth. With --overlap-grad-reduce the buckets reduce while the rank's last backward runs
/// (the last bucket stays exposed); with --overlap-param-gather the gather hides behind the
/// next iteration's first forward.
inline double exposed_tail_seconds(const training_config& t, const gpu_spec& g, const stage_parameters& p,
                                   double last_backward, double first_forward) {
    const double dp = static_cast<double>(t.data_parallel);
    const double edp = expert_data_parallel(t);
    const std::uint64_t stride = t.tensor_parallel * t.context_parallel;
    const std::uint64_t expert_stride = t.expert_tp() * t.expert_parallel;
    const double grad_bytes = t.dtype == precision::fp16 || t.grad_reduce_bf16 ? 2.0 : 4.0;
    const collective_kind reduce = t.distributed_optimizer ? collective_kind::reduce_scatter : collective_kind::all_reduce;
    double grads = bucketed_seconds(reduce, p.dense, grad_bytes, dp, stride, g) +
                   bucketed_seconds(reduce, p.expert, grad_bytes, edp, expert_stride, g);
    double gather = t.distributed_optimizer ? bucketed_seconds(collective_kind::all_gather, p.dense, 2.0, dp, stride, g) +
                                                  bucketed_seconds(collective_kind::all_gather, p.expert, 2.0, edp,
                                                                   expert_stride, g)
                                            : 0.0;
    if (t.overlap_grad_reduce) {
        const double buckets = std::max(1.0, std::ceil(p.total() / 40e6));
        grads = std::max(grads / buckets, grads - last_backward);
    }
    if (t.overlap_param_gather) gather = std::max(0.0, gather - first_forward);
    const double sharded = t.distributed_optimizer ? p.dense / dp + p.expert / edp : p.total();
    const double step_bytes = t.optimizer == optimizer_kind::sgd ? 22.0 : 30.0;
    return grads + gather + step_bytes * sharded / (g.memory_bandwidth * g.memory_efficiency);
}

/// The slowest rank's exposed tail (exposed_tail_seconds) for the stage model `sm`.
inline double tail_seconds(const training_config& t, const gpu_spec& g, const stage_model& sm) {
    const std::size_t p = sm.held.size();
    std::vector<double> last_backward(p, 0.0);
    std::vector<double> first_forward(p, 0.0);
    for (std::size_t s = 0; s < sm.seconds.size(); ++s) {
        last_backward[sm.rank[s]] += sm.seconds[s].backward;
        first_forward[sm.rank[s]] += sm.seconds[s].forward;
    }
    double tail = 0.0;
    for (std::size_t k = 0; k < p; ++k)
        tail = std::max(tail, exposed_tail_seconds(t, g, sm.held[k], last_backward[k], first_forward[k]));
    return tail;
}

/// Refuses costs whose replay could overflow a double: m microbatches through every stage, each
/// action and each hop at most once on the critical path, must add up to a finite time. The
/// message names the cost and the field it came from.
inline void require_finite_work(const stage_model& sm, std::uint64_t microbatches, const plan_options& o) {
    const bool measured = !o.measured.empty();
    const std::string field = measured ? "plan_options.measured" : "gpu_spec.peak_flops";
    const std::string source = measured ? "the measured " : "the stage times from the GPU's peak x efficiency: ";
    double total = 0.0;
    const double mb = static_cast<double>(microbatches);
    for (std::size_t s = 0; s < sm.seconds.size(); ++s) {
        const stage_seconds& x = sm.seconds[s];
        const std::pair<const char*, double> parts[] = {
            {"F", x.forward}, {"B", x.backward}, {"I", x.backward_input}, {"W", x.backward_weight}};
        for (const auto& [name, value] : parts) {
            if (!(value >= 0.0) || !std::isfinite(value))
                throw input_error(field, source + name + " of stage " + std::to_string(s) + " is not a finite number");
            total += mb * value;
            if (!std::isfinite(total))
                throw input_error(field, source + name + " times overflow: " + std::to_string(microbatches) +
                                             " microbatches through stages 0.." + std::to_string(s) +
                                             " add up beyond the largest double (about 1.8e308)");
        }
        total += 2.0 * mb * sm.p2p;
        if (!std::isfinite(total))
            throw input_error("gpu_spec", "the p2p transfer time (" + std::to_string(sm.p2p) + " s a hop) overflows over " +
                                              std::to_string(microbatches) + " microbatches");
    }
}

/// Whether a placement's stages give every rank the layers the per-rank table shows.
inline bool same_layers_per_rank(const std::vector<stage_content>& stages, placement layout,
                                 const std::vector<rank_report>& ranks) {
    std::vector<std::uint64_t> layers(ranks.size(), 0);
    const auto p = static_cast<std::uint32_t>(ranks.size());
    for (std::size_t s = 0; s < stages.size(); ++s)
        layers[locate_stage(layout, p, static_cast<std::uint32_t>(s)).rank] += stages[s].layers;
    for (std::size_t k = 0; k < ranks.size(); ++k)
        if (layers[k] != ranks[k].layers) return false;
    return true;
}

inline std::string gib_text(double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", bytes / gib);
    return buf;
}

} // namespace detail

/// The per-stage costs (seconds, and bytes as M_B and M_W) plan() replays a schedule with v
/// chunks in `layout` under, and the p2p time: for writing the chosen schedule with its costs.
struct stage_model_costs {
    std::vector<stage_costs> per_stage{};
    double p2p = 0.0;
};

[[nodiscard]] inline stage_model_costs stage_costs_for(const model_config& m, const training_config& t,
                                                       const gpu_spec& g, const plan_options& o, std::uint64_t v,
                                                       placement layout) {
    detail::stage_model sm = detail::build_stage_model(m, t, g, o, v, layout);
    return {std::move(sm.costs), sm.p2p};
}

/// Seconds of one iteration of schedule `id` with `v` chunks on `m_count` microbatches: the
/// replay's makespan under plan()'s per-stage costs plus the slowest rank's exposed tail,
/// exactly as plan() ranks it (nullopt when the schedule rejects the shape or the replay fails).
[[nodiscard]] inline std::optional<double> iteration_seconds(const model_config& m, const training_config& t,
                                                             const gpu_spec& g, const plan_options& o, schedule_id id,
                                                             std::uint32_t v, std::uint32_t m_count) {
    std::optional<double> out;
    schedule_options opt{};
    opt.shape = {static_cast<std::uint32_t>(t.pipeline_parallel), m_count, v};
    with_any_schedule(id, opt, [&](const auto& pol) {
        if (!pol.check()) return;
        const detail::stage_model sm = detail::build_stage_model(m, t, g, o, v, pol.layout);
        if (!sm.usable) return;
        const cost_model cm{{}, sm.costs, sm.p2p, false};
        const simulation sim = simulate(pol, cm);
        if (sim) out = sim.makespan + detail::tail_seconds(t, g, sm);
    });
    return out;
}

/// The chunk counts a multi-chunk schedule can use: those the layers divide into (Megatron's
/// rule), or the one a layout string fixes.
[[nodiscard]] inline std::vector<std::uint32_t> legal_chunk_counts(const model_config& m, const training_config& t,
                                                                  std::uint32_t max_v = 16) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t v = 2; v <= max_v; ++v) {
        try {
            (void)stage_contents(m, t, v);
            out.push_back(v);
        } catch (const input_error&) {
        }
    }
    return out;
}

/// Refuses a GPU or options plan() cannot answer for: what would come out as "nothing fits" or
/// as times that are not numbers is wrong input, not a layout that is too big.
inline void check_options(const gpu_spec& g, const plan_options& o) {
    // 0 is the GPU table's own GEMM efficiency; an override is a normal number in (0, 1].
    if (o.efficiency != 0.0 && !(std::isnormal(o.efficiency) && o.efficiency > 0.0 && o.efficiency <= 1.0))
        throw input_error("plan_options.efficiency",
                          "must be 0 (the GPU's) or a normal number in (0, 1], got " + std::to_string(o.efficiency));
    if (!(std::isnormal(g.peak_flops) && g.peak_flops > 0.0))
        throw input_error("gpu_spec.peak_flops", "must be a positive normal number");
    if (!(std::isfinite(o.memory_reserve_bytes) && o.memory_reserve_bytes >= 0.0))
        throw input_error("plan_options.memory_reserve_bytes", "must be a finite number of bytes, at least 0");
    if (!(std::isfinite(g.memory_bytes) && g.memory_bytes > o.memory_reserve_bytes))
        throw input_error("gpu_spec.memory_bytes",
                          detail::gib_text(g.memory_bytes) + " GiB is not above the memory reserve of " +
                              detail::gib_text(o.memory_reserve_bytes) +
                              " GiB (plan_options.memory_reserve_bytes): nothing is left for the model");
}

/// `megatron_padded_vocab`: the vocabulary Megatron-LM's embedding would hold, for
/// plan_result::megatron (0: model.vocab padded to a multiple of 128 x TP, Megatron's default).
[[nodiscard]] inline plan_result plan(const model_config& m, const training_config& t, const gpu_spec& g,
                                      const plan_options& o = {}, std::uint64_t megatron_padded_vocab = 0) {
    plan_result r;
    r.parameters = count_parameters(m);
    const std::uint64_t p = t.pipeline_parallel;
    if (t.microbatches != 0) {
        r.microbatches = t.microbatches;
    } else {
        const std::uint64_t per_step = t.micro_batch * t.data_parallel;
        if (t.global_batch == 0 || t.global_batch % per_step != 0)
            throw input_error("training_config.global_batch",
                              std::to_string(t.global_batch) + " is not a multiple of micro_batch x data_parallel = " +
                                  std::to_string(per_step) + " (or set training_config.microbatches)");
        r.microbatches = t.global_batch / per_step;
    }
    if (r.microbatches > max_microbatches)
        throw input_error("training_config.microbatches",
                          std::to_string(r.microbatches) + " microbatches: at most " + std::to_string(max_microbatches));
    check_options(g, o);
    // Megatron splits the key/value heads (query groups) over TP as it splits the heads
    // (attention.py divides num_query_groups by the TP size); MLA's latent K and V are not.
    if (!m.mla() && m.query_groups() % t.tensor_parallel != 0)
        throw input_error("training_config.tensor_parallel",
                          std::to_string(t.tensor_parallel) + " does not divide model_config.kv_heads " +
                              std::to_string(m.query_groups()) + " (the key/value heads, which tensor parallelism splits)");
    r.usable_bytes = g.memory_bytes - o.memory_reserve_bytes;
    const std::uint32_t m_count = static_cast<std::uint32_t>(r.microbatches);

    // The base chunk count: 1, or what a layout string fixes.
    std::uint64_t base_v = 1;
    if (!t.layout.empty()) {
        const std::string unrolled = detail::unroll_layout(t.layout);
        base_v = (static_cast<std::uint64_t>(std::count(unrolled.begin(), unrolled.end(), '|')) + 1) / p;
        if (base_v == 0) base_v = 1;
    }
    // Megatron runs more than one chunk per rank only with pipelining (its virtual stages need
    // a pipeline-parallel size above 1): with one rank, only one-chunk schedules are evaluated.
    if (p == 1 && base_v > 1)
        throw input_error("training_config.layout", "lists " + std::to_string(base_v) +
                                                        " stages for one pipeline rank: more than one chunk per rank "
                                                        "needs pipeline_parallel > 1");
    const std::vector<std::uint32_t> legal_v = p > 1 ? legal_chunk_counts(m, t) : std::vector<std::uint32_t>{};
    if (!o.measured.empty()) {
        // One time per rank, or one per stage of a chunk count some schedule is evaluated at.
        bool usable = o.measured.size() == p || o.measured.size() == p * base_v;
        for (const std::uint32_t v : legal_v) usable = usable || (t.layout.empty() && o.measured.size() == p * v);
        if (!usable) {
            std::string counts;
            if (!t.layout.empty()) counts = std::to_string(p * base_v);
            else
                for (const std::uint32_t v : legal_v) counts += (counts.empty() ? "" : ", ") + std::to_string(p * v);
            throw input_error("plan_options.measured",
                              "times for " + std::to_string(o.measured.size()) + " stages; give one per pipeline rank (" +
                                  std::to_string(p) + ")" +
                                  (counts.empty() ? std::string{}
                                                  : " or one per stage of a chunk count the layers allow (" + counts + ")"));
        }
    }
    {
        const std::vector<stage_content> stages = stage_contents(m, t, base_v); // throws for a bad layout
        const detail::stage_model base = detail::build_stage_model(m, t, g, o, base_v, placement::loop);
        detail::require_finite_work(base, r.microbatches, o);
        r.ranks.assign(p, rank_report{});
        for (std::size_t s = 0; s < stages.size(); ++s) {
            rank_report& rr = r.ranks[s % p];
            rr.layers += stages[s].layers;
            const bool copy = p > 1;
            rr.parameters += parameters_of_stage(m, t, stages[s], copy).total();
            rr.activation_bytes += base.costs[s].activation_memory;
            rr.forward_seconds += base.seconds[s].forward;
        }
        for (std::uint64_t k = 0; k < p; ++k) r.ranks[k].state_bytes = base.state_bytes[k];
    }
    r.megatron = megatron_theoretical(m, t, r.microbatches,
                                     megatron_padded_vocab != 0 ? megatron_padded_vocab
                                                                : plan::megatron_padded_vocab(m.vocab, t.tensor_parallel));

    const auto finish_row = [&](schedule_report& row, const simulation& sim, const detail::stage_model& sm) {
        row.evaluated = true;
        row.pipeline_seconds = sim.makespan;
        row.bubble_fraction = sim.bubble_fraction;
        row.peak_bytes.assign(p, 0.0);
        for (std::uint64_t k = 0; k < p; ++k) {
            row.peak_bytes[k] = sm.state_bytes[k] + sim.ranks[k].peak_memory;
            if (row.peak_bytes[k] > row.peak_bytes[row.worst_rank]) row.worst_rank = static_cast<std::uint32_t>(k);
        }
        row.iteration_seconds = sim.makespan + detail::tail_seconds(t, g, sm);
        row.fits = row.worst_bytes() <= r.usable_bytes;
    };

    const std::string other_layers = "this placement would give the ranks other layers than the per-rank split "
                                     "(a V puts the first and the last stage on rank 0): give an even split";
    for (const schedule_info& info : schedules) {
        // The stage model below splits one copy of the layers over p*v stages; DualPipe's two
        // copies (placement::bidirectional) are not modelled by it yet, so plan leaves it out.
        if (info.layout == placement::bidirectional) continue;
        std::vector<std::uint32_t> counts;
        if (!info.multi_chunk) counts = {1};
        else if (info.chunks == chunk_rule::two) counts = {2};
        else counts = legal_v;
        if (info.multi_chunk && p == 1) {
            schedule_report row;
            row.name = std::string{display_name(info)};
            row.id = info.id;
            row.chunks = 2;
            row.layout = info.layout;
            row.note = "more than one chunk per rank needs pipeline_parallel > 1 (as Megatron's virtual stages do)";
            r.schedules.push_back(std::move(row));
            continue;
        }
        if (!t.layout.empty()) {
            std::vector<std::uint32_t> keep;
            for (const std::uint32_t v : counts)
                if (v == base_v) keep.push_back(v);
            counts = keep;
        }
        for (const std::uint32_t v : counts) {
            schedule_report row;
            row.name = std::string{display_name(info)};
            row.id = info.id;
            row.chunks = v;
            row.layout = info.layout;
            detail::stage_model sm;
            try {
                sm = detail::build_stage_model(m, t, g, o, v, info.layout);
            } catch (const input_error& e) { // the layers do not split into v chunks as asked
                row.note = e.what();
                r.schedules.push_back(std::move(row));
                continue;
            }
            if (sm.usable && !detail::same_layers_per_rank(sm.stages, info.layout, r.ranks)) {
                sm.usable = false;
                sm.note = other_layers;
            }
            if (!sm.usable) {
                row.note = sm.note;
                r.schedules.push_back(std::move(row));
                continue;
            }
            detail::require_finite_work(sm, r.microbatches, o);
            schedule_options opt{};
            opt.shape = {static_cast<std::uint32_t>(p), m_count, v};
            with_any_schedule(info.id, opt, [&](const auto& pol) {
                if (const shape_check c = pol.check(); !c) {
                    row.note = std::string{"rejects this shape: "} + std::string{c.message};
                    return;
                }
                const cost_model cm{{}, sm.costs, sm.p2p, false};
                const simulation sim = simulate(pol, cm);
                if (!sim) {
                    row.note = "the replay failed: " + std::string{describe(sim.check)};
                    return;
                }
                finish_row(row, sim, sm);
            });
            r.schedules.push_back(std::move(row));
        }
    }

    // The auto-scheduler in each placement the layers allow: one stage per rank, the V (two
    // chunks), and the interleaved loop with two chunks, each under every rank's memory left
    // after its states in that placement. Its answer is never longer than a catalogued
    // schedule of the placement that fits (search/autoschedule.hpp).
    struct search_choice {
        search_placement which;
        std::uint32_t v;
        placement layout;
        const char* label;
    };
    const search_choice choices[] = {{search_placement::loop, 1, placement::loop, "autoschedule"},
                                     {search_placement::v, 2, placement::v_shape, "autoschedule V"},
                                     {search_placement::interleaved, 2, placement::loop, "autoschedule interleaved"}};
    for (const search_choice& c : o.autoschedule ? std::span<const search_choice>{choices} : std::span<const search_choice>{}) {
        if (c.v != base_v && !(base_v == 1 && c.v == 2 && t.layout.empty())) continue;
        if (c.v == 2 && (p == 1 || legal_chunk_counts(m, t, 2).empty())) continue;
        schedule_report row;
        row.name = c.label;
        row.searched = true;
        row.chunks = c.v;
        row.layout = c.layout;
        detail::stage_model sm = detail::build_stage_model(m, t, g, o, c.v, c.layout);
        if (sm.usable && !detail::same_layers_per_rank(sm.stages, c.layout, r.ranks)) {
            sm.usable = false;
            sm.note = other_layers;
        }
        if (sm.usable) detail::require_finite_work(sm, r.microbatches, o);
        if (!sm.usable) {
            row.note = sm.note;
            r.schedules.push_back(std::move(row));
            continue;
        }
        pipeline_costs pc;
        pipeline_memory pm;
        pc.p2p = sm.p2p;
        for (std::size_t s = 0; s < sm.costs.size(); ++s) {
            const std::uint32_t rank = sm.rank[s];
            pc.per_stage.push_back({sm.costs[s].forward, sm.costs[s].backward_input, sm.costs[s].backward_weight});
            pm.per_stage.push_back({sm.costs[s].activation_memory, sm.costs[s].weight_memory,
                                    std::max(r.usable_bytes - sm.state_bytes[rank], 0.0)});
        }
        autoschedule_options ao;
        ao.placement = c.which;
        ao.chunks = 2;
        autoschedule_result a = autoschedule({static_cast<std::uint32_t>(p), m_count, 1}, pc, pm, ao);
        if (!a.fits) {
            row.note = "no order fits: " + a.message;
        } else {
            const cost_model cm{{}, sm.costs, sm.p2p, false};
            const simulation sim = a.visit([&](const auto& sched) { return simulate(sched, cm); });
            if (!sim) {
                row.note = "the replay failed: " + std::string{describe(sim.check)};
            } else {
                finish_row(row, sim, sm);
                row.search_index = r.searched.size();
                r.searched.push_back(std::move(a));
            }
        }
        r.schedules.push_back(std::move(row));
    }

    // Ranked: fitting first, then by iteration time; unevaluated last. Times equal up to the
    // rounding of their sums (a relative 1e-9: GPipe and 1F1B, say) rank by the worst rank's
    // memory, so that the least memory is recommended among equally fast schedules; true ties
    // keep catalog order.
    std::stable_sort(r.schedules.begin(), r.schedules.end(), [](const schedule_report& a, const schedule_report& b) {
        if (a.evaluated != b.evaluated) return a.evaluated;
        if (a.fits != b.fits) return a.fits;
        return a.iteration_seconds < b.iteration_seconds;
    });
    for (std::size_t first = 0; first < r.schedules.size();) {
        const schedule_report& lead = r.schedules[first];
        std::size_t end = first + 1;
        while (end < r.schedules.size() && lead.evaluated && r.schedules[end].evaluated &&
               r.schedules[end].fits == lead.fits &&
               r.schedules[end].iteration_seconds - lead.iteration_seconds <= 1e-9 * lead.iteration_seconds)
            ++end;
        std::stable_sort(r.schedules.begin() + static_cast<std::ptrdiff_t>(first),
                         r.schedules.begin() + static_cast<std::ptrdiff_t>(end),
                         [](const schedule_report& a, const schedule_report& b) { return a.worst_bytes() < b.worst_bytes(); });
        first = end;
    }
    if (!r.schedules.empty() && r.schedules.front().fits) r.recommended = 0;
    if (!r.recommended) {
        const schedule_report* closest = nullptr;
        for (const schedule_report& s : r.schedules)
            if (s.evaluated && (closest == nullptr || s.worst_bytes() < closest->worst_bytes())) closest = &s;
        if (closest != nullptr) {
            r.advice = "nothing fits in " + detail::gib_text(r.usable_bytes) + " GiB per GPU; closest: " + closest->name +
                       (closest->chunks > 1 ? " v=" + std::to_string(closest->chunks) : std::string{}) + " needs " +
                       detail::gib_text(closest->worst_bytes()) + " GiB on rank " + std::to_string(closest->worst_rank) +
                       " (" + detail::gib_text(closest->worst_bytes() - r.usable_bytes) + " GiB over). ";
            const rank_report& worst = r.ranks[closest->worst_rank];
            if (worst.state_bytes > r.usable_bytes)
                r.advice += "Weights, gradients and optimizer states alone exceed the GPU: use more tensor or pipeline "
                            "parallelism" + std::string{t.distributed_optimizer ? "" : ", or --use-distributed-optimizer"} + ".";
            else
                r.advice += std::string{"Activations dominate: "} +
                            (t.recompute != recompute_kind::full ? "turn on --recompute-granularity full, " : "") +
                            "use a smaller --micro-batch-size, or more tensor or pipeline parallelism" +
                            (t.sequence_parallel || t.tensor_parallel == 1 ? "" : " (or --sequence-parallel)") + ".";
        } else {
            r.advice = "no schedule accepts this shape";
        }
    }
    return r;
}

} // namespace pipesched::plan
