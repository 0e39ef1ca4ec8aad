// pipesched plan --search: which layout and which schedule for a model on N GPUs.
//
//   ps::plan::search_space space;  space.gpus = 256;
//   const ps::plan::layout_search_result r = ps::plan::search_layouts(model, training, gpu, {}, space);
//   for (const ps::plan::layout_candidate& c : r.candidates) ... // best first
//
// Every layout (TP, PP, CP, EP, DP as the rest, micro-batch size, recompute, distributed
// optimizer) that Megatron-LM accepts for the model is evaluated by plan() itself, which
// replays every schedule at every chunk count (and the auto-scheduler) under the same time
// and memory model as a plain `plan`: the search adds no model of its own. What makes it fast
// is an exact pruning rule: before a layout is replayed, two lower bounds are computed from
// its per-stage costs alone (no replay), and the layout is skipped only when neither the top K
// nor the Pareto front it reports could contain any of its rows (see `prune`).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "plan.hpp"

namespace pipesched::plan {

/// Which runtimes run a schedule: Megatron-LM (its own schedules), PyTorch (torch.distributed.
/// pipelining and torchtitan: its named schedules, and any order through its schedule CSV),
/// and the Zero Bubble fork of Megatron-LM (sail-sg/zero-bubble-pipeline-parallelism).
enum class runtime_filter : std::uint8_t { any, megatron, pytorch };

struct runtime_support {
    bool megatron = false;
    bool pytorch = false;
    bool zero_bubble_fork = false;
};

/// Which runtimes ship `row`'s schedule. Searched orders run wherever an order can be loaded
/// as a list of actions: PyTorch's `_PipelineScheduleRuntime` reads the schedule CSV.
[[nodiscard]] inline runtime_support runtimes_of(const schedule_report& row) noexcept {
    if (row.searched) return {false, true, false};
    switch (row.id) {
    case schedule_id::gpipe: return {false, true, false};
    case schedule_id::one_f_one_b: return {true, true, true};
    case schedule_id::interleaved_1f1b: return {true, true, true};
    case schedule_id::looped_bfs: return {false, true, false};
    case schedule_id::zb_h1: return {false, true, true};
    case schedule_id::zb_h2: return {false, true, true};
    case schedule_id::interleaved_zero_bubble: return {false, true, false};
    case schedule_id::zbv: return {false, true, true};
    case schedule_id::dualpipe_v: return {false, true, false};
    case schedule_id::v_min: return {false, true, true};
    case schedule_id::v_half: return {false, true, true};
    }
    return {};
}

[[nodiscard]] inline std::vector<std::string> runtime_names(const runtime_support& r) {
    std::vector<std::string> out;
    if (r.megatron) out.emplace_back("megatron");
    if (r.pytorch) out.emplace_back("pytorch");
    if (r.zero_bubble_fork) out.emplace_back("zero-bubble");
    return out;
}

/// "megatron, pytorch": the runtimes in a sentence.
[[nodiscard]] inline std::string runtime_names_text(const runtime_support& r) {
    std::string out;
    for (const std::string& n : runtime_names(r)) out += (out.empty() ? "" : ", ") + n;
    return out;
}

/// What the search may choose. Zero (or nullopt) means free; a value means fixed.
struct search_space {
    std::uint64_t gpus = 0;               ///< world size; required
    std::uint64_t tensor_parallel = 0;
    std::uint64_t pipeline_parallel = 0;
    std::uint64_t context_parallel = 0;
    std::uint64_t expert_parallel = 0;
    std::uint64_t micro_batch = 0;
    std::optional<recompute_kind> recompute{};
    std::optional<bool> distributed_optimizer{};
    bool allow_cross_node_tp = false;     ///< TP groups may span nodes
    std::size_t top = 10;                 ///< candidates reported
    /// The Pareto front is reported among rows at most this factor slower than the fastest.
    double pareto_window = 1.10;
    runtime_filter runtime = runtime_filter::any;
    unsigned jobs = 0;                    ///< threads; 0: hardware concurrency
    std::size_t max_layouts = 200000;     ///< refuse a space larger than this (memory bound)
    /// The auto-scheduler runs on layouts with at most this many (rank, microbatch) units: its
    /// time grows much faster than the catalogued schedules' replays, and with this many
    /// microbatches per rank their bubbles are small. Layouts above it are reported.
    std::uint64_t autoschedule_units = 4096;
    /// Called with (layouts done, layouts in all) from the searching threads, serialised.
    std::function<void(std::size_t, std::size_t)> progress{};
};

/// One layout and one schedule on it.
struct layout_candidate {
    training_config training{};
    schedule_report schedule{};
    double tokens_per_second_per_gpu = 0.0;
    double mfu = 0.0;                     ///< model FLOPs (no recompute) over the GPUs' peak
    double faster_than_next = 0.0;        ///< fraction faster than the next candidate (0: last)
    runtime_support runtimes{};
    std::vector<std::string> megatron_args{};
};

struct layout_search_result {
    /// The top K layouts, fastest first (ties: less memory), each with its fastest schedule.
    std::vector<layout_candidate> candidates{};
    std::vector<layout_candidate> pareto{};     ///< time against worst-rank bytes, fastest first
    std::size_t layouts = 0;                    ///< legal layouts in the space
    std::size_t evaluated = 0;                  ///< replayed by plan() with the catalogued schedules
    std::size_t autoscheduled = 0;              ///< of those, also searched by the auto-scheduler
    std::size_t autoschedule_skipped = 0;       ///< left to the catalogued schedules (autoschedule_units)
    std::size_t pruned = 0;                     ///< skipped by the exact bounds before any replay
    std::size_t refused = 0;                    ///< plan() refused (the reason is in no row)
    std::optional<layout_candidate> closest{};  ///< when nothing fits: the row that misses least
    std::string advice{};                       ///< when nothing fits, or a cheaper near-tie
};

namespace detail {

inline std::vector<std::uint64_t> divisors(std::uint64_t n, std::uint64_t most) {
    std::vector<std::uint64_t> out;
    for (std::uint64_t d = 1; d <= std::min(n, most); ++d)
        if (n % d == 0) out.push_back(d);
    return out;
}

inline std::vector<std::uint64_t> fixed_or(std::uint64_t fixed, std::vector<std::uint64_t> choices) {
    if (fixed == 0) return choices;
    return std::find(choices.begin(), choices.end(), fixed) != choices.end() ? std::vector<std::uint64_t>{fixed}
                                                                             : std::vector<std::uint64_t>{};
}

/// Megatron's split of the layers over `pp` ranks: even, or with the embedding and the loss
/// each counted as a layer (--account-for-*-in-pipeline-split) when only that divides.
inline std::optional<training_config> pipeline_split(const model_config& m, training_config t, std::uint64_t pp) {
    t.pipeline_parallel = pp;
    t.account_for_embedding = false;
    t.account_for_loss = false;
    if (m.layers % pp == 0) return t;
    if ((m.layers + 1) % pp == 0) {
        t.account_for_loss = true;
        return t;
    }
    if ((m.layers + 2) % pp == 0) {
        t.account_for_embedding = true;
        t.account_for_loss = true;
        return t;
    }
    return std::nullopt;
}

/// Every layout of `space` that Megatron-LM would accept for `m`, with `base`'s other fields.
inline std::vector<training_config> enumerate_layouts(const model_config& m, const training_config& base,
                                                      const gpu_spec& g, const search_space& space) {
    std::vector<training_config> out;
    const std::uint64_t n = space.gpus;
    const std::uint64_t node = std::max<std::uint64_t>(1, g.gpus_per_node);
    std::vector<std::uint64_t> tps;
    for (const std::uint64_t tp : divisors(n, space.allow_cross_node_tp ? n : node))
        if (m.heads % tp == 0 && m.query_groups() % tp == 0) tps.push_back(tp);
    tps = space.tensor_parallel == 0 ? tps : fixed_or(space.tensor_parallel, tps);
    const std::vector<std::uint64_t> pps = fixed_or(space.pipeline_parallel, divisors(n, m.layers + 2));
    std::vector<std::uint64_t> cps;
    for (std::uint64_t cp = 1; cp <= n; cp *= 2)
        if (base.seq_length % (cp == 1 ? 1 : 2 * cp) == 0) cps.push_back(cp);
    cps = fixed_or(space.context_parallel, cps);
    std::vector<std::uint64_t> eps{1};
    if (m.experts > 0) eps = fixed_or(space.expert_parallel, divisors(m.experts, m.experts));
    const std::vector<std::uint64_t> mbs = space.micro_batch != 0 ? std::vector<std::uint64_t>{space.micro_batch}
                                                                  : std::vector<std::uint64_t>{1, 2, 4, 8};
    std::vector<recompute_kind> recomputes{recompute_kind::none, recompute_kind::selective, recompute_kind::full};
    if (space.recompute) recomputes = {*space.recompute};
    for (const std::uint64_t tp : tps)
        for (const std::uint64_t pp : pps)
            for (const std::uint64_t cp : cps) {
                if (n % (tp * pp * cp) != 0) continue;
                const std::uint64_t dp = n / (tp * pp * cp);
                std::optional<training_config> split = pipeline_split(m, base, pp);
                if (!split) continue;
                std::vector<bool> optimizers{false, true};
                if (space.distributed_optimizer) optimizers = {*space.distributed_optimizer};
                else if (dp == 1) optimizers = {base.distributed_optimizer};
                for (const std::uint64_t ep : eps) {
                    if ((dp * cp * tp) % (ep * split->expert_tp()) != 0) continue;
                    for (const std::uint64_t mb : mbs) {
                        if (base.global_batch == 0 || base.global_batch % (mb * dp) != 0) continue;
                        if (base.global_batch / (mb * dp) > max_microbatches) continue;
                        for (const recompute_kind rc : recomputes)
                            for (const bool dist : optimizers) {
                                if (out.size() >= space.max_layouts)
                                    throw input_error("the search space has more than " +
                                                      std::to_string(space.max_layouts) +
                                                      " layouts: fix some of tensor, pipeline, context or expert "
                                                      "parallelism, or the micro-batch size");
                                training_config t = *split;
                                t.tensor_parallel = tp;
                                t.context_parallel = cp;
                                t.data_parallel = dp;
                                t.expert_parallel = ep;
                                t.micro_batch = mb;
                                t.microbatches = 0;
                                t.virtual_stages = 0;
                                t.first_stage_layers = 0;
                                t.last_stage_layers = 0;
                                t.layout.clear();
                                t.sequence_parallel = tp > 1;
                                t.recompute = rc;
                                t.method = recompute_method::uniform;
                                t.recompute_layers = 1;
                                t.distributed_optimizer = dist;
                                out.push_back(std::move(t));
                            }
                    }
                }
            }
    return out;
}

/// Lower bounds on any row plan() can report for a layout, from its per-stage costs alone.
///
/// Time, for one chunk count and placement: a rank cannot start before microbatch 0 has gone
/// through the F of every stage below its lowest one, and then runs every microbatch's F and
/// backward of its stages (the cheaper of B and I+W, or an overlapped pair's cost when that is
/// cheaper); and no microbatch finishes before its F through every stage and then its input
/// gradient back through every stage (the cheaper of B and I). The span is at least the
/// largest of these (p2p hops only add to them), and the iteration adds plan()'s exposed
/// data-parallel tail, which depends on the layout, not on the order.
///
/// Memory: a rank's weights, gradients and optimizer states (plan()'s state bytes), plus one
/// microbatch's activations on every stage of the rank: in the loop and V placements a
/// microbatch passes every stage of a rank, and its F on the rank's last stage comes after its
/// F on the others and before any of their backwards (a stage's backward waits for the next
/// stage's), so whatever the order, that many bytes are held at once.
///
/// Both are the minimum over every chunk count and placement plan() evaluates, so they hold for
/// every row; tests/test_layout_search.cpp checks them against every row of a grid.
struct layout_bounds {
    double seconds = std::numeric_limits<double>::infinity();
    double bytes = std::numeric_limits<double>::infinity();
};

inline layout_bounds bounds_of(const model_config& m, const training_config& t, const gpu_spec& g,
                               const plan_options& o, std::uint64_t microbatches) {
    layout_bounds b;
    std::vector<std::uint32_t> counts{1};
    for (const std::uint32_t v : legal_chunk_counts(m, t)) counts.push_back(v);
    const std::size_t p = t.pipeline_parallel;
    const double mb = static_cast<double>(microbatches);
    for (const std::uint32_t v : counts)
        for (const placement layout : {placement::loop, placement::v_shape}) {
            if (layout == placement::v_shape && v != 2) continue;
            stage_model sm;
            try {
                sm = build_stage_model(m, t, g, o, v, layout);
            } catch (const input_error&) {
                continue;
            }
            if (!sm.usable) continue;
            std::vector<double> work(p, 0.0);
            std::vector<double> held = sm.state_bytes;
            std::vector<double> head(p, std::numeric_limits<double>::infinity());
            std::vector<double> last_backward(p, 0.0);
            std::vector<double> first_forward(p, 0.0);
            double below = 0.0;   // the F of every stage before this one
            double through = 0.0; // one microbatch's F through every stage and input gradient back
            for (std::size_t s = 0; s < sm.costs.size(); ++s) {
                const stage_costs& c = sm.costs[s];
                const std::uint32_t r = sm.rank[s];
                double unit = c.forward + std::min(c.backward, c.backward_input + c.backward_weight);
                if (c.overlapped_forward_backward >= 0.0) unit = std::min(unit, c.overlapped_forward_backward);
                work[r] += unit;
                held[r] += c.activation_memory;
                // Inside an overlapped pair an F or a backward may end sooner than alone.
                const double pair = c.overlapped_forward_backward >= 0.0 ? c.overlapped_forward_backward
                                                                         : std::numeric_limits<double>::infinity();
                head[r] = std::min(head[r], below);
                below += std::min(c.forward, pair);
                through += std::min(c.forward, pair) + std::min({c.backward, c.backward_input, pair});
                last_backward[r] += sm.seconds[s].backward;
                first_forward[r] += sm.seconds[s].forward;
            }
            double span = through;
            double tail = 0.0;
            for (std::size_t r = 0; r < p; ++r) {
                span = std::max(span, head[r] + mb * work[r]);
                tail = std::max(tail, exposed_tail_seconds(t, g, sm.held[r], last_backward[r], first_forward[r]));
            }
            b.seconds = std::min(b.seconds, span + tail);
            b.bytes = std::min(b.bytes, *std::max_element(held.begin(), held.end()));
        }
    // The replay adds the same terms in another order, so a row that meets its bound exactly
    // can come out a rounding error below it: the bounds give up a billionth.
    constexpr double rounding = 1.0 - 1e-9;
    b.seconds *= rounding;
    b.bytes *= rounding;
    return b;
}

/// Full order of candidates: time, then memory, then the layout and the schedule, so that the
/// answer does not depend on the threads' timing.
inline auto rank_key(const layout_candidate& c) {
    const training_config& t = c.training;
    return std::make_tuple(c.schedule.iteration_seconds, c.schedule.worst_bytes(), t.tensor_parallel,
                           t.pipeline_parallel, t.context_parallel, t.expert_parallel, t.micro_batch,
                           static_cast<int>(t.recompute), t.distributed_optimizer, c.schedule.name, c.schedule.chunks);
}

inline bool better(const layout_candidate& a, const layout_candidate& b) { return rank_key(a) < rank_key(b); }

inline bool same_layout(const training_config& a, const training_config& b) {
    return a.tensor_parallel == b.tensor_parallel && a.pipeline_parallel == b.pipeline_parallel &&
           a.context_parallel == b.context_parallel && a.expert_parallel == b.expert_parallel &&
           a.micro_batch == b.micro_batch && a.recompute == b.recompute &&
           a.distributed_optimizer == b.distributed_optimizer;
}

inline bool allowed(const runtime_support& r, runtime_filter f) {
    switch (f) {
    case runtime_filter::any: return true;
    case runtime_filter::megatron: return r.megatron;
    case runtime_filter::pytorch: return r.pytorch;
    }
    return true;
}

/// Model FLOPs of one iteration on one GPU: 3 x the forward's matrices and core attention (no
/// recompute), per stage, summed over the pipeline and spread over its ranks.
inline double model_flops_per_gpu(const model_config& m, const training_config& t, std::uint64_t microbatches) {
    double f = 0.0;
    for (const stage_content& st : stage_contents(m, t, 1)) {
        const stage_flops x = flops_of_stage(m, t, st);
        f += 3.0 * (x.matrices + x.attention_core);
    }
    return f * static_cast<double>(microbatches) / static_cast<double>(t.pipeline_parallel);
}

inline const char* recompute_word(recompute_kind k) {
    switch (k) {
    case recompute_kind::none: return "none";
    case recompute_kind::selective: return "selective";
    case recompute_kind::full: return "full";
    }
    return "none";
}

} // namespace detail

/// The Megatron-LM launch flags that set up `t` with a schedule of `chunks` chunks per rank
/// (the model's own flags are not repeated: they come from the config or the launch line).
[[nodiscard]] inline std::vector<std::string> megatron_layout_args(const training_config& t, std::uint32_t chunks) {
    std::vector<std::string> a;
    const auto add = [&](const char* flag, std::uint64_t value) {
        a.emplace_back(flag);
        a.push_back(std::to_string(value));
    };
    add("--tensor-model-parallel-size", t.tensor_parallel);
    add("--pipeline-model-parallel-size", t.pipeline_parallel);
    if (chunks > 1) add("--num-virtual-stages-per-pipeline-rank", chunks);
    add("--context-parallel-size", t.context_parallel);
    if (t.expert_parallel > 1) add("--expert-model-parallel-size", t.expert_parallel);
    add("--micro-batch-size", t.micro_batch);
    add("--global-batch-size", t.global_batch);
    add("--seq-length", t.seq_length);
    if (t.sequence_parallel) a.emplace_back("--sequence-parallel");
    if (t.recompute != recompute_kind::none) {
        a.emplace_back("--recompute-granularity");
        a.emplace_back(detail::recompute_word(t.recompute));
        if (t.recompute == recompute_kind::full) {
            a.emplace_back("--recompute-method");
            a.emplace_back("uniform");
            add("--recompute-num-layers", t.recompute_layers);
        }
    }
    if (t.distributed_optimizer) a.emplace_back("--use-distributed-optimizer");
    if (t.account_for_embedding) a.emplace_back("--account-for-embedding-in-pipeline-split");
    if (t.account_for_loss) a.emplace_back("--account-for-loss-in-pipeline-split");
    return a;
}

namespace detail {

/// The search's shared state: every fitting row found so far, the fastest per layout, and the
/// closest miss. Guarded by the caller's mutex.
struct search_state {
    std::vector<layout_candidate> rows{};     ///< every fitting row of every layout replayed
    std::vector<double> layout_best{};        ///< per layout (index of enumerate_layouts): fastest row, or inf
    std::optional<layout_candidate> closest{};
    std::size_t layouts_found = 0;            ///< layouts with a fitting row

    /// The time of the K-th fastest layout found, or infinity while fewer than K are.
    [[nodiscard]] double kth_layout(std::size_t k) const {
        if (layouts_found < k) return std::numeric_limits<double>::infinity();
        std::vector<double> t;
        for (const double x : layout_best)
            if (x < std::numeric_limits<double>::infinity()) t.push_back(x);
        std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k - 1), t.end());
        return t[k - 1];
    }

    /// Whether no row of a layout with bounds `b` can be among the top K layouts or on the
    /// Pareto front within `window` of the fastest row: K layouts are already no slower than its
    /// time bound, and its time bound is outside the window or a row found is no slower and no
    /// larger than both its bounds. Or its states alone exceed the GPU, so no row of it fits
    /// (kept while nothing fits, as a candidate for the closest miss).
    [[nodiscard]] bool prune(const layout_bounds& b, double usable, std::size_t k, double window) const {
        if (b.bytes > usable && (!rows.empty() || (closest && b.bytes >= closest->schedule.worst_bytes()))) return true;
        if (b.seconds <= kth_layout(k)) return false;
        double fastest = std::numeric_limits<double>::infinity();
        for (const layout_candidate& c : rows) fastest = std::min(fastest, c.schedule.iteration_seconds);
        if (b.seconds > fastest * window) return true;
        return std::any_of(rows.begin(), rows.end(), [&](const layout_candidate& c) {
            return c.schedule.iteration_seconds <= b.seconds && c.schedule.worst_bytes() <= b.bytes;
        });
    }
};

struct pending_layout {
    std::size_t index;
    layout_bounds bounds;
    std::uint64_t microbatches;
};

/// The rows plan() gives one layout, as candidates: fitting ones, and the one that misses least.
/// `searched_only`: the auto-scheduler's rows alone (the second pass).
inline void candidates_of(const model_config& m, const training_config& t, const gpu_spec& g, const plan_options& o,
                          const search_space& space, std::uint64_t microbatches, bool searched_only,
                          std::vector<layout_candidate>& fitting, std::optional<layout_candidate>& miss) {
    const plan_result pr = plan(m, t, g, o);
    const double tokens = static_cast<double>(t.global_batch * t.seq_length);
    const double flops = model_flops_per_gpu(m, t, microbatches);
    for (const schedule_report& s : pr.schedules) {
        // Megatron-LM refuses virtual stages without pipeline parallelism.
        if (!s.evaluated || (s.chunks > 1 && t.pipeline_parallel == 1) || (searched_only && !s.searched)) continue;
        layout_candidate c;
        c.training = t;
        c.schedule = s;
        c.runtimes = runtimes_of(s);
        if (!allowed(c.runtimes, space.runtime)) continue;
        c.tokens_per_second_per_gpu = tokens / s.iteration_seconds / static_cast<double>(space.gpus);
        c.mfu = flops / (s.iteration_seconds * g.peak_flops);
        c.megatron_args = megatron_layout_args(t, s.chunks);
        if (s.fits) fitting.push_back(std::move(c));
        else if (!miss || c.schedule.worst_bytes() < miss->schedule.worst_bytes()) miss = std::move(c);
    }
}

} // namespace detail

/// Searches `space` for the fastest layouts and schedules of `m` on `g`. `base` gives what the
/// search does not choose (sequence length, global batch, precision, overlap flags, expert TP).
///
/// Two passes, both exact: the first replays the catalogued schedules of every layout the
/// bounds cannot rule out, fastest bound first; the second adds the auto-scheduler's orders
/// (most of plan()'s time) on the layouts the bounds still cannot rule out against everything
/// the first pass found, up to `search_space::autoschedule_units`. The top K are layouts, each with its fastest fitting schedule; the
/// Pareto front is over every fitting (layout, schedule) row.
[[nodiscard]] inline layout_search_result search_layouts(const model_config& m, const training_config& base,
                                                         const gpu_spec& g, const plan_options& o,
                                                         const search_space& space) {
    if (space.gpus == 0) throw input_error("the search needs the number of GPUs");
    if (space.top == 0) throw input_error("top: at least 1 candidate");
    if (base.seq_length == 0) throw input_error("the search needs the sequence length");
    if (base.global_batch == 0) throw input_error("the search needs the global batch size");
    if (!(space.pareto_window >= 1.0)) throw input_error("pareto window: at least 1");
    layout_search_result r;
    const std::vector<training_config> layouts = detail::enumerate_layouts(m, base, g, space);
    if (layouts.empty())
        throw input_error("no legal layout of the model on " + std::to_string(space.gpus) +
                          " GPUs: no product of tensor (dividing the heads and KV heads" +
                          (space.allow_cross_node_tp ? "" : ", inside a node") +
                          "), pipeline (dividing the layers), context and data parallelism (dividing the "
                          "global batch with a micro-batch size) makes it, with the values fixed");
    r.layouts = layouts.size();

    std::vector<detail::pending_layout> order;
    order.reserve(layouts.size());
    for (std::size_t i = 0; i < layouts.size(); ++i) {
        const std::uint64_t mb = base.global_batch / (layouts[i].micro_batch * layouts[i].data_parallel);
        order.push_back({i, detail::bounds_of(m, layouts[i], g, o, mb), mb});
    }
    std::stable_sort(order.begin(), order.end(), [](const detail::pending_layout& a, const detail::pending_layout& b) {
        return a.bounds.seconds < b.bounds.seconds;
    });
    const double usable = g.memory_bytes - o.memory_reserve_bytes;
    const unsigned jobs = std::max(1u, space.jobs != 0 ? space.jobs : std::thread::hardware_concurrency());
    const std::size_t steps = o.autoschedule ? 2 * order.size() : order.size();

    std::mutex lock;
    detail::search_state state;
    state.layout_best.assign(layouts.size(), std::numeric_limits<double>::infinity());
    std::size_t done = 0;
    const auto pass = [&](const std::vector<detail::pending_layout>& todo, bool searched_only,
                          std::vector<detail::pending_layout>* kept) {
        plan_options po = o;
        po.autoschedule = searched_only;
        std::atomic<std::size_t> next{0};
        const auto work = [&] {
            for (;;) {
                const std::size_t k = next.fetch_add(1);
                if (k >= todo.size()) return;
                const detail::pending_layout& job = todo[k];
                {
                    std::lock_guard guard{lock};
                    ++done;
                    if (state.prune(job.bounds, usable, space.top, space.pareto_window)) {
                        ++r.pruned;
                        if (space.progress) space.progress(done, steps);
                        continue;
                    }
                }
                std::vector<layout_candidate> rows;
                std::optional<layout_candidate> miss;
                bool refused = false;
                try {
                    detail::candidates_of(m, layouts[job.index], g, po, space, job.microbatches, searched_only, rows, miss);
                } catch (const input_error&) {
                    refused = true;
                }
                std::lock_guard guard{lock};
                if (refused) ++r.refused;
                else if (!searched_only) ++r.evaluated;
                if (!refused && kept != nullptr) kept->push_back(job);
                for (layout_candidate& c : rows) {
                    double& best = state.layout_best[job.index];
                    if (best == std::numeric_limits<double>::infinity()) ++state.layouts_found;
                    best = std::min(best, c.schedule.iteration_seconds);
                    state.rows.push_back(std::move(c));
                }
                if (miss && (!state.closest || miss->schedule.worst_bytes() < state.closest->schedule.worst_bytes()))
                    state.closest = std::move(miss);
                if (space.progress) space.progress(done, steps);
            }
        };
        std::vector<std::thread> threads;
        for (unsigned i = 1; i < jobs; ++i) threads.emplace_back(work);
        work();
        for (std::thread& th : threads) th.join();
    };
    std::vector<detail::pending_layout> replayed;
    pass(order, false, &replayed);
    if (o.autoschedule) {
        const std::size_t pruned_first = r.pruned;
        std::stable_sort(replayed.begin(), replayed.end(),
                         [](const detail::pending_layout& a, const detail::pending_layout& b) {
                             return a.bounds.seconds < b.bounds.seconds;
                         });
        std::vector<detail::pending_layout> small;
        for (const detail::pending_layout& job : replayed) {
            if (layouts[job.index].pipeline_parallel * job.microbatches <= space.autoschedule_units) small.push_back(job);
            else ++r.autoschedule_skipped;
        }
        replayed = std::move(small);
        done = order.size() + (order.size() - replayed.size());
        pass(replayed, true, nullptr);
        r.autoscheduled = replayed.size() - (r.pruned - pruned_first);
        r.pruned = pruned_first;
    }

    std::vector<layout_candidate>& found = state.rows;
    std::sort(found.begin(), found.end(), detail::better);
    // The Pareto front within the window: each row strictly smaller than every faster one.
    if (!found.empty()) {
        const double limit = found.front().schedule.iteration_seconds * space.pareto_window;
        double smallest = std::numeric_limits<double>::infinity();
        for (const layout_candidate& c : found) {
            if (c.schedule.iteration_seconds > limit) break;
            if (c.schedule.worst_bytes() < smallest) {
                smallest = c.schedule.worst_bytes();
                r.pareto.push_back(c);
            }
        }
    }
    // The top K layouts: the first (fastest) row of each, in order.
    for (const layout_candidate& c : found) {
        if (r.candidates.size() == space.top) break;
        const auto same_layout = [&](const layout_candidate& x) { return detail::same_layout(x.training, c.training); };
        if (std::none_of(r.candidates.begin(), r.candidates.end(), same_layout)) r.candidates.push_back(c);
    }
    for (std::size_t i = 0; i + 1 < r.candidates.size(); ++i)
        r.candidates[i].faster_than_next =
            1.0 - r.candidates[i].schedule.iteration_seconds / r.candidates[i + 1].schedule.iteration_seconds;
    if (r.candidates.empty()) {
        r.closest = state.closest;
        const std::optional<layout_candidate>& closest = state.closest;
        r.advice = closest ? "no layout fits in " + detail::gib_text(usable) + " GiB per GPU; closest: " +
                                 closest->schedule.name + " at TP " + std::to_string(closest->training.tensor_parallel) +
                                 " PP " + std::to_string(closest->training.pipeline_parallel) + " needs " +
                                 detail::gib_text(closest->schedule.worst_bytes()) + " GiB (" +
                                 detail::gib_text(closest->schedule.worst_bytes() - usable) + " GiB over)"
                           : "no layout could be replayed";
        return r;
    }
    // A near-tie that needs much less memory, or runs in more runtimes, is worth saying.
    const layout_candidate& best = r.candidates.front();
    for (const layout_candidate& c : found) {
        if (c.schedule.iteration_seconds > best.schedule.iteration_seconds * 1.01) break;
        const bool smaller = c.schedule.worst_bytes() < 0.8 * best.schedule.worst_bytes();
        const bool wider = runtime_names(c.runtimes).size() > runtime_names(best.runtimes).size();
        if (!smaller && !wider) continue;
        r.advice = "within 1% of the fastest, " + c.schedule.name +
                   (c.schedule.chunks > 1 ? " v=" + std::to_string(c.schedule.chunks) : std::string{}) + " at TP " +
                   std::to_string(c.training.tensor_parallel) + " PP " + std::to_string(c.training.pipeline_parallel) +
                   " CP " + std::to_string(c.training.context_parallel) + " micro-batch " +
                   std::to_string(c.training.micro_batch) +
                   (smaller ? " needs " + detail::gib_text(c.schedule.worst_bytes()) + " GiB instead of " +
                                  detail::gib_text(best.schedule.worst_bytes())
                            : " runs in more runtimes (" + runtime_names_text(c.runtimes) + ")");
        break;
    }
    return r;
}

} // namespace pipesched::plan
