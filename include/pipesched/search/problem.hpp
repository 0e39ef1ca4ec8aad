// pipesched: the auto-scheduler's problem: per-stage times and memory, the options and the
// result of autoschedule() (search/autoschedule.hpp), and the internal problem every search
// method works on.
//
// Problem (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 3): p stages, one
// per rank, m microbatches; each stage s runs F, I (input gradient) and W (weight gradient) of
// every microbatch, taking T_F(s), T_I(s), T_W(s). Every rank runs its order serially, each
// action as early as its dependencies allow: F(s, i) after F(s-1, i) + p2p, I(s, i) after
// I(s+1, i) + p2p (the last stage's I after its own F), W(s, i) after I(s, i). Memory per
// stage: F adds M_B, I releases M_B - M_W, W releases M_W; its peak must stay within the
// stage's limit. Durations and the memory rule are the timing model's
// (timing_model.hpp): the problem keeps each stage as a stage_costs and asks it. A
// rank's span runs from its first action's start to its last action's end; span is the
// largest; bubble = (span - m(T_F + T_I + T_W)) / span with the busiest stage's T's. The search
// minimises span, then makespan.
//
// A stage can always run F I W of one microbatch after another, which needs max(M_B, M_W); a
// limit below that on some stage has no schedule, and the result says so with that number.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "../timing_model.hpp"
#include "../policies/explicit_schedule.hpp"
#include "../shape.hpp"

namespace pipesched {

/// Durations of one microbatch through one stage.
struct stage_times {
    double forward = 1.0;         ///< T_F
    double backward_input = 1.0;  ///< T_I
    double backward_weight = 1.0; ///< T_W
};

struct pipeline_costs {
    stage_times uniform{};                ///< every stage...
    std::vector<stage_times> per_stage{}; ///< ...unless given here (index = stage = rank)
    double p2p = 0.0;                     ///< added to every dependency between two stages
};

/// Memory of one stage, in any unit (bytes, GiB, or activations of one microbatch).
struct stage_memory {
    double activation = 1.0; ///< M_B: allocated by F
    double weight = 1.0;     ///< M_W: what W still needs after I (I releases M_B - M_W)
    double limit = std::numeric_limits<double>::infinity();
};

struct pipeline_memory {
    stage_memory uniform{};
    std::vector<stage_memory> per_stage{};
};

/// Which stage placements autoschedule() searches.
enum class search_placement : std::uint8_t {
    loop,        ///< one stage per rank (stage = rank)
    v,           ///< two chunks per rank in a V: rank r holds stages r and 2p-1-r (ZB-V, DualPipeV)
    interleaved, ///< autoschedule_options::chunks chunks per rank, stage = chunk*p + rank
    any,         ///< all three; the answer is the best
};

[[nodiscard]] constexpr std::string_view to_string(search_placement pl) noexcept {
    return pl == search_placement::loop ? "loop" : pl == search_placement::v ? "v" : pl == search_placement::interleaved ? "interleaved" : "any";
}

struct autoschedule_options {
    search_placement placement = search_placement::any;
    /// Chunks per rank of the interleaved placement (2 or more).
    std::uint32_t chunks = 2;
    /// Local search: at most this many schedule evaluations.
    std::uint32_t local_search_evaluations = 4000;
    /// ...and at most this many replayed actions in all (about 3-5 ns each).
    std::uint64_t local_search_work = 6'000'000;
    /// Per-stage template search: at most this many schedule evaluations...
    std::uint32_t template_evaluations = 2000;
    /// ...and at most this many generated plus replayed actions in all.
    std::uint64_t template_work = 4'000'000;
    /// Branch and bound when 3pvm (actions of a placement) is at most this; 0 turns it off.
    std::uint32_t exact_actions = 48;
    /// Branch and bound gives up (and does not claim optimality) after this many nodes.
    std::uint64_t exact_nodes = 2'000'000;
};

struct autoschedule_result {
    bool fits = false;
    /// Why nothing fits (empty when fits), naming the stage and the smallest limit that fits.
    std::string message{};
    /// Per rank, the smallest limit under which some schedule of one stage per rank exists:
    /// max(M_B, M_W).
    std::vector<double> smallest_limit{};
    placement layout = placement::loop; ///< of the answer: `schedule` (loop) or `v_schedule`
    std::uint32_t chunks = 1;           ///< chunks per rank of the answer
    explicit_schedule<placement::loop> schedule{};      ///< the answer when layout is loop
    explicit_schedule<placement::v_shape> v_schedule{}; ///< the answer when layout is v_shape
    double span = 0.0;
    double makespan = 0.0;
    double bubble_fraction = 0.0;
    std::vector<double> peak_memory{}; ///< per rank
    double heuristic_span = 0.0;       ///< best of the published heuristic's eight variants
    /// No schedule of the placements in bound_scope within the limits has a shorter span.
    double lower_bound = 0.0;
    double gap = 0.0;            ///< (span - lower_bound) / span
    bool proven_optimal = false; ///< among the placements of bound_scope
    /// The placements lower_bound and proven_optimal speak of ("loop placement", ...).
    std::string bound_scope{};
    std::string_view method{}; ///< which step found the answer

    explicit operator bool() const noexcept { return fits; }

    /// f(schedule) or f(v_schedule), whichever holds the answer.
    template <class F>
    decltype(auto) visit(F&& f) const {
        return layout == placement::v_shape ? f(v_schedule) : f(schedule);
    }
};

namespace detail::autosched {

enum class kind : std::uint8_t { f, i, w };

/// The op a kind is: F, I (backward_input) or W (backward_weight).
[[nodiscard]] constexpr op op_of(kind k) noexcept {
    return k == kind::f ? op::forward : k == kind::i ? op::backward_input : op::backward_weight;
}

/// One action of a rank's order: its kind and the rank's chunk it runs on.
struct task {
    kind k = kind::f;
    std::uint8_t chunk = 0;
    constexpr task() = default;
    constexpr task(kind k_, std::uint8_t chunk_ = 0) noexcept : k{k_}, chunk{chunk_} {} // NOLINT: a kind is chunk 0's
    friend constexpr bool operator==(const task&, const task&) = default;
};

/// Per rank, the actions in order; within one (chunk, kind), microbatches run in order.
using order = std::vector<std::vector<task>>;

/// The problem every search method works on: p ranks with v chunks each, placed as `layout`,
/// and the times and memory of every global stage (stage = rank when v = 1).
struct problem {
    std::uint32_t p = 1;
    std::uint32_t m = 1;
    std::uint32_t v = 1;
    placement layout = placement::loop;
    /// Per global stage, its times and memory as the timing model's one cost type (a full B
    /// costs T_I + T_W): what cost() and memory_change() ask, what every method reads, and what
    /// simulate() replays a result with. The only copy: nothing converts it again.
    std::vector<stage_costs> costs{};
    std::vector<double> limits{};       ///< per rank, its memory limit
    std::vector<std::uint32_t> owner{}; ///< per global stage, its rank
    std::vector<std::uint32_t> at{};    ///< per rank and chunk (r * v + c), the global stage
    double comm = 0.0;

    [[nodiscard]] std::uint32_t stages() const noexcept { return p * v; }
    [[nodiscard]] std::uint32_t stage(std::uint32_t r, std::uint32_t c) const noexcept { return at[std::size_t{r} * v + c]; }
    [[nodiscard]] std::uint32_t chunk_of(std::uint32_t s) const noexcept { return locate_stage(layout, p, s).chunk; }
    [[nodiscard]] double limit(std::uint32_t r) const noexcept { return limits[r]; }
    [[nodiscard]] double cost(std::uint32_t s, kind k) const noexcept { return costs[s].duration(op_of(k)); }
    [[nodiscard]] double memory_change(std::uint32_t s, kind k) const noexcept { return costs[s].memory_change(op_of(k)); }
    /// Work of one stage.
    [[nodiscard]] double work(std::uint32_t s) const noexcept {
        return static_cast<double>(m) * (costs[s].forward + costs[s].backward_input + costs[s].backward_weight);
    }
    /// Work of one rank (all its chunks).
    [[nodiscard]] double rank_work(std::uint32_t r) const noexcept {
        double w = 0.0;
        for (std::uint32_t c = 0; c < v; ++c) w += work(stage(r, c));
        return w;
    }
    /// The busiest rank's work: no order is shorter.
    [[nodiscard]] double max_rank_work() const noexcept {
        double w = 0.0;
        for (std::uint32_t r = 0; r < p; ++r) w = std::max(w, rank_work(r));
        return w;
    }
    /// Smallest memory limit of rank r under which one microbatch at a time fits: its chunks'
    /// forwards in stage order hold their M_B while the later ones run, then each chunk's I and
    /// W (I leaves M_W) in reverse.
    [[nodiscard]] double smallest_limit(std::uint32_t r) const noexcept {
        double held = 0.0;
        double most = 0.0;
        for (std::uint32_t c = 0; c < v; ++c) {
            const stage_costs& mm = costs[stage(r, c)];
            most = std::max(most, held + std::max(mm.activation_memory, mm.weight_memory));
            held += mm.activation_memory;
        }
        return most;
    }
};

/// The shortest text that reads back as x ("0.5", "4", "1e+30").
inline std::string number_text(double x) {
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, x);
    return std::string{buffer, r.ptr};
}

/// Tolerance for comparing sums of user-given doubles against a limit.
[[nodiscard]] inline bool within(double value, double limit) noexcept {
    return value <= limit + 1e-9 * std::max(1.0, std::fabs(limit));
}

/// Whether a list of `given` per-stage entries describes p ranks with v chunks each: none
/// (uniform), one per rank (each chunk takes 1/v of its rank's), one per global stage, or, for
/// one stage per rank, a multiple of p consecutive stages merged onto each rank.
[[nodiscard]] inline bool stage_list_fits(std::size_t given, std::uint32_t p, std::uint32_t v) noexcept {
    return given == 0 || given == p || given == std::size_t{p} * v || (v == 1 && given % p == 0);
}

/// The entry of global stage `stage` (chunk c of rank r) from a list that stage_list_fits:
/// scaled by `share` from the rank's entry, taken as it is, or merged by `add`.
template <class T, class Scale, class Add>
T stage_entry(const T& uniform, const std::vector<T>& list, std::uint32_t p, std::uint32_t v, std::uint32_t stage,
              std::uint32_t r, Scale scale, Add add) {
    const double share = 1.0 / static_cast<double>(v);
    if (list.empty()) return scale(uniform, share);
    if (list.size() == p) return scale(list[r], share);
    if (list.size() == std::size_t{p} * v) return list[stage];
    const std::size_t w = list.size() / p; // v == 1: stages r*w .. r*w+w-1 on rank r
    T out = list[std::size_t{r} * w];
    for (std::size_t k = 1; k < w; ++k) out = add(out, list[std::size_t{r} * w + k]);
    return out;
}

/// The problem of p ranks with v chunks each placed as `layout` (v = 2 for v_shape). The costs
/// and memory lists must fit (stage_list_fits); limits are per rank: a rank's stages share the
/// smallest limit given on any of them.
inline problem make_problem(const shape& s, const pipeline_costs& costs, const pipeline_memory& memory,
                            placement layout = placement::loop, std::uint32_t v = 1) {
    problem pr{};
    pr.p = s.ranks;
    pr.m = s.microbatches;
    pr.v = v;
    pr.layout = layout;
    pr.comm = costs.p2p;
    const std::uint32_t stages = pr.stages();
    pr.costs.resize(stages);
    pr.limits.assign(pr.p, std::numeric_limits<double>::infinity());
    pr.owner.resize(stages);
    pr.at.resize(stages);
    const auto scale_times = [](const stage_times& x, double k) {
        return stage_times{x.forward * k, x.backward_input * k, x.backward_weight * k};
    };
    const auto add_times = [](const stage_times& a, const stage_times& b) {
        return stage_times{a.forward + b.forward, a.backward_input + b.backward_input, a.backward_weight + b.backward_weight};
    };
    const auto scale_memory = [](const stage_memory& x, double k) { return stage_memory{x.activation * k, x.weight * k, x.limit}; };
    const auto add_memory = [](const stage_memory& a, const stage_memory& b) {
        return stage_memory{a.activation + b.activation, a.weight + b.weight, std::min(a.limit, b.limit)};
    };
    for (std::uint32_t r = 0; r < pr.p; ++r) {
        for (std::uint32_t c = 0; c < v; ++c) {
            const std::uint32_t st = stage_of(layout, pr.p, r, c);
            pr.at[std::size_t{r} * v + c] = st;
            pr.owner[st] = r;
            // The input's entry for this stage, in the input's terms, then once into the
            // timing model's stage_costs: the problem's only copy.
            const stage_times t = v == 1 && costs.per_stage.size() == pr.p
                                      ? costs.per_stage[r]
                                      : stage_entry(costs.uniform, costs.per_stage, pr.p, v, st, r, scale_times, add_times);
            const stage_memory mm = v == 1 && memory.per_stage.size() == pr.p
                                        ? memory.per_stage[r]
                                        : stage_entry(memory.uniform, memory.per_stage, pr.p, v, st, r, scale_memory, add_memory);
            stage_costs& out = pr.costs[st];
            out.forward = t.forward;
            out.backward_input = t.backward_input;
            out.backward_weight = t.backward_weight;
            out.backward = t.backward_input + t.backward_weight;
            out.activation_memory = mm.activation;
            out.weight_memory = mm.weight;
            pr.limits[r] = std::min(pr.limits[r], mm.limit); // one limit per rank: its stages' smallest
        }
    }
    return pr;
}

inline constexpr std::uint64_t max_units = std::uint64_t{1} << 20;
/// The list scheduler scans the stages at every action, so the search's time grows with p^2 m
/// (measured, g++ -O2 on the machine of benchmarks/README.md: 0.3 s at p = 32, m = 1024; 1.3 s
/// at p = 128, m = 1024; 1.0 s at p = 256, m = 256; 3.5 s at this bound). The bound was set
/// when the tool's comparison with V-Min and V-Half, then O(p^2 m) to build, took 90 s here.
inline constexpr std::uint64_t max_work = std::uint64_t{1} << 26;

/// "" if the input is usable, else what is wrong with it.
inline std::string check_input(const shape& s, const pipeline_costs& costs, const pipeline_memory& memory) {
    if (const shape_check c = check_common(s); !c) return std::string{c.message};
    if (s.chunks != 1) return "the shape's chunks must be 1 (autoschedule_options chooses the placement and its chunks)";
    // The search keeps O(pm) arrays and runs the greedy O(pm) times p at most: bound both.
    if (std::uint64_t{s.ranks} * s.microbatches > max_units) {
        return "ranks * microbatches must be at most 1048576 (2^20) for autoschedule";
    }
    if (std::uint64_t{s.ranks} * s.ranks * s.microbatches > max_work) {
        return "ranks^2 * microbatches must be at most 67108864 (2^26) for autoschedule: its search "
               "time grows with it";
    }
    // One entry per rank, or per global stage of some placement (a multiple of the ranks).
    if (!costs.per_stage.empty() && costs.per_stage.size() % s.ranks != 0) {
        return "per-stage costs: expected " + std::to_string(s.ranks) + " stages (or a multiple: one per global stage), got " +
               std::to_string(costs.per_stage.size());
    }
    if (!memory.per_stage.empty() && memory.per_stage.size() % s.ranks != 0) {
        return "per-stage memory: expected " + std::to_string(s.ranks) + " stages (or a multiple: one per global stage), got " +
               std::to_string(memory.per_stage.size());
    }
    const auto finite_nonnegative = [](double x) { return std::isfinite(x) && x >= 0.0; };
    if (!finite_nonnegative(costs.p2p)) return "p2p time must be a finite number >= 0";
    const auto check_times = [&](const stage_times& t, const std::string& where) -> std::string {
        if (!finite_nonnegative(t.forward)) return where + "T_F must be a finite number >= 0";
        if (!finite_nonnegative(t.backward_input)) return where + "T_I must be a finite number >= 0";
        if (!finite_nonnegative(t.backward_weight)) return where + "T_W must be a finite number >= 0";
        return {};
    };
    const auto check_memory = [&](const stage_memory& mm, const std::string& where) -> std::string {
        if (!finite_nonnegative(mm.activation)) return where + "M_B must be a finite number >= 0";
        if (!finite_nonnegative(mm.weight)) return where + "M_W must be a finite number >= 0";
        if (std::isnan(mm.limit) || mm.limit < 0.0) return where + "the memory limit must be >= 0";
        return {};
    };
    if (costs.per_stage.empty()) {
        if (auto e = check_times(costs.uniform, ""); !e.empty()) return e;
    }
    for (std::size_t k = 0; k < costs.per_stage.size(); ++k) {
        if (auto e = check_times(costs.per_stage[k], "stage " + std::to_string(k) + ": "); !e.empty()) return e;
    }
    if (memory.per_stage.empty()) {
        if (auto e = check_memory(memory.uniform, ""); !e.empty()) return e;
    }
    for (std::size_t k = 0; k < memory.per_stage.size(); ++k) {
        if (auto e = check_memory(memory.per_stage[k], "stage " + std::to_string(k) + ": "); !e.empty()) return e;
    }
    return {};
}


} // namespace detail::autosched

} // namespace pipesched
