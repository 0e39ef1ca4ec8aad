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
#include "timing.hpp"
#include "training.hpp"

namespace pipesched::plan {

struct plan_options {
    double efficiency = 0.5;              ///< fraction of the GPU's peak the layers reach
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
    bool usable = true;
    std::string note{};
};

inline stage_model build_stage_model(const model_config& m, const training_config& t, const gpu_spec& g,
                                     const plan_options& o, std::uint64_t v, placement layout) {
    const std::uint64_t p = t.pipeline_parallel;
    const std::vector<stage_content> stages = stage_contents(m, t, v);
    stage_model sm;
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
        sm.note = "--stage-times has " + std::to_string(o.measured.size()) + " stages, not " + std::to_string(p) +
                  " or " + std::to_string(p * v);
    }
    const double rate = g.peak_flops * o.efficiency;
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const std::uint32_t r = sm.rank[s];
        const stage_parameters params = parameters_of_stage(m, t, stages[s], output_copy_needed);
        sm.state_bytes[r] += state_bytes(t, params);
        sm.held[r].dense += params.dense;
        sm.held[r].expert += params.expert;
        const stage_activation act = activation_of_stage(m, t, stages[s]);
        working_set[r] = std::max(working_set[r], act.recompute_working_set);
        stage_seconds sec = seconds_of(flops_of_stage(m, t, stages[s]), rate);
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
        sm.costs[s] = {sec.forward, sec.backward, sec.backward_input, sec.backward_weight, -1.0, act.activation,
                       act.weight};
    }
    for (std::uint64_t r = 0; r < p; ++r) sm.state_bytes[r] += working_set[r];
    sm.p2p = p > 1 ? p2p_seconds(m, t, g) : 0.0;
    return sm;
}

/// Seconds of data-parallel collectives and the optimizer step a rank adds after the pipeline
/// drains: the gradient reduce-scatter (distributed optimizer) or all-reduce, the parameter
/// all-gather, and the Adam step, which reads and writes about 30 bytes per (sharded) parameter
/// at HBM bandwidth. With --overlap-grad-reduce only what outlasts the rank's last backward is
/// exposed; with --overlap-param-gather the gather hides behind the next iteration's forwards.
inline double exposed_tail_seconds(const training_config& t, const gpu_spec& g, const stage_parameters& p,
                                   double last_backward, double first_forward) {
    const double dp = static_cast<double>(t.data_parallel);
    const double edp = expert_data_parallel(t);
    const double grad_bytes = t.dtype == precision::fp16 ? 2.0 : 4.0;
    const double bw = t.tensor_parallel * t.context_parallel * t.data_parallel <= g.gpus_per_node ? g.nvlink_bandwidth
                                                                                                : g.network_bandwidth;
    const double reduce_factor = t.distributed_optimizer ? 1.0 : 2.0;
    double grads = reduce_factor * (ring_seconds(grad_bytes * p.dense, dp, bw) + ring_seconds(grad_bytes * p.expert, edp, bw));
    double gather = t.distributed_optimizer
                        ? ring_seconds(2.0 * p.dense, dp, bw) + ring_seconds(2.0 * p.expert, edp, bw)
                        : 0.0;
    if (t.overlap_grad_reduce) grads = std::max(0.0, grads - last_backward);
    if (t.overlap_param_gather) gather = std::max(0.0, gather - first_forward);
    const double sharded = t.distributed_optimizer ? p.dense / dp + p.expert / edp : p.total();
    return grads + gather + 30.0 * sharded / g.memory_bandwidth;
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
            throw input_error("--global-batch-size " + std::to_string(t.global_batch) +
                              " is not a multiple of --micro-batch-size x data-parallel size = " +
                              std::to_string(per_step) + " (or give --microbatches)");
        r.microbatches = t.global_batch / per_step;
    }
    if (r.microbatches > max_microbatches)
        throw input_error(std::to_string(r.microbatches) + " microbatches: at most " + std::to_string(max_microbatches));
    r.usable_bytes = g.memory_bytes - o.memory_reserve_bytes;
    const std::uint32_t m_count = static_cast<std::uint32_t>(r.microbatches);

    // The base chunk count: 1, or what a layout string fixes.
    std::uint64_t base_v = 1;
    if (!t.layout.empty()) {
        const std::string unrolled = detail::unroll_layout(t.layout);
        base_v = (static_cast<std::uint64_t>(std::count(unrolled.begin(), unrolled.end(), '|')) + 1) / p;
        if (base_v == 0) base_v = 1;
    }
    {
        const std::vector<stage_content> stages = stage_contents(m, t, base_v); // throws for a bad layout
        const detail::stage_model base = detail::build_stage_model(m, t, g, o, base_v, placement::loop);
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
        double tail = 0.0;
        std::vector<double> last_backward(p, 0.0);
        std::vector<double> first_forward(p, 0.0);
        for (std::size_t s = 0; s < sm.seconds.size(); ++s) {
            last_backward[sm.rank[s]] += sm.seconds[s].backward;
            first_forward[sm.rank[s]] += sm.seconds[s].forward;
        }
        for (std::uint64_t k = 0; k < p; ++k) {
            row.peak_bytes[k] = sm.state_bytes[k] + sim.ranks[k].peak_memory;
            tail = std::max(tail, detail::exposed_tail_seconds(t, g, sm.held[k], last_backward[k], first_forward[k]));
            if (row.peak_bytes[k] > row.peak_bytes[row.worst_rank]) row.worst_rank = static_cast<std::uint32_t>(k);
        }
        row.iteration_seconds = sim.makespan + tail;
        row.fits = row.worst_bytes() <= r.usable_bytes;
    };

    for (const schedule_info& info : schedules) {
        // The stage model below splits one copy of the layers over p*v stages; DualPipe's two
        // copies (placement::bidirectional) are not modelled by it yet, so plan leaves it out.
        if (info.layout == placement::bidirectional) continue;
        std::vector<std::uint32_t> counts;
        if (!info.multi_chunk) counts = {1};
        else if (info.chunks == chunk_rule::two) counts = {2};
        else counts = legal_chunk_counts(m, t);
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
            if (!sm.usable) {
                row.note = sm.note;
                r.schedules.push_back(std::move(row));
                continue;
            }
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
        if (c.v == 2 && legal_chunk_counts(m, t, 2).empty()) continue;
        schedule_report row;
        row.name = c.label;
        row.searched = true;
        row.chunks = c.v;
        row.layout = c.layout;
        const detail::stage_model sm = detail::build_stage_model(m, t, g, o, c.v, c.layout);
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

    // Ranked: fitting first, then by iteration time; unevaluated last; ties keep catalog order.
    std::stable_sort(r.schedules.begin(), r.schedules.end(), [](const schedule_report& a, const schedule_report& b) {
        if (a.evaluated != b.evaluated) return a.evaluated;
        if (a.fits != b.fits) return a.fits;
        return a.iteration_seconds < b.iteration_seconds;
    });
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
