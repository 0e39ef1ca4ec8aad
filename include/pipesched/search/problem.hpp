// pipesched: the auto-scheduler's problem: per-stage times and memory, the options and the
// result of autoschedule() (search/autoschedule.hpp), and the internal problem every search
// method works on.
//
// Problem (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 3): p stages, one
// per rank, m microbatches; each stage s runs F, I (input gradient) and W (weight gradient) of
// every microbatch, taking T_F(s), T_I(s), T_W(s). Every rank runs its order serially, each
// action as early as its dependencies allow: F(s, i) after F(s-1, i) + p2p, I(s, i) after
// I(s+1, i) + p2p (the last stage's I after its own F), W(s, i) after I(s, i). Memory per
// stage: F adds M_B, I releases M_B - M_W, W releases M_W (analysis/simulate.hpp's model);
// its peak must stay within the stage's limit. A rank's span runs from its first action's start
// to its last action's end; span is the largest; bubble = (span - m(T_F + T_I + T_W)) / span
// with the busiest stage's T's. The search minimises span, then makespan.
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

struct autoschedule_options {
    /// Local search: at most this many schedule evaluations.
    std::uint32_t local_search_evaluations = 4000;
    /// ...and at most this many replayed actions in all (about 3-5 ns each).
    std::uint64_t local_search_work = 6'000'000;
    /// Per-stage template search: at most this many schedule evaluations...
    std::uint32_t template_evaluations = 2000;
    /// ...and at most this many generated plus replayed actions in all.
    std::uint64_t template_work = 4'000'000;
    /// Branch and bound when 3pm is at most this; 0 turns it off.
    std::uint32_t exact_actions = 48;
    /// Branch and bound gives up (and does not claim optimality) after this many nodes.
    std::uint64_t exact_nodes = 2'000'000;
};

struct autoschedule_result {
    bool fits = false;
    /// Why nothing fits (empty when fits), naming the stage and the smallest limit that fits.
    std::string message{};
    /// Per stage, the smallest limit under which some schedule exists: max(M_B, M_W).
    std::vector<double> smallest_limit{};
    explicit_schedule<placement::loop> schedule{};
    double span = 0.0;
    double makespan = 0.0;
    double bubble_fraction = 0.0;
    std::vector<double> peak_memory{}; ///< per rank
    double heuristic_span = 0.0;       ///< best of the published heuristic's eight variants
    /// No schedule within the limits has a shorter span (see detail::autosched::lower_bound).
    double lower_bound = 0.0;
    bool proven_optimal = false;       ///< branch and bound finished, or span == lower_bound
    std::string_view method{};         ///< which step found the answer

    explicit operator bool() const noexcept { return fits; }
};


namespace detail::autosched {

enum class kind : std::uint8_t { f, i, w };

/// Per stage, the op letters in order; within a letter, microbatches run in order.
using order = std::vector<std::vector<kind>>;

struct problem {
    std::uint32_t p = 1;
    std::uint32_t m = 1;
    std::vector<stage_times> t{};
    std::vector<stage_memory> mem{};
    double comm = 0.0;

    [[nodiscard]] double cost(std::uint32_t s, kind k) const noexcept {
        return k == kind::f ? t[s].forward : k == kind::i ? t[s].backward_input : t[s].backward_weight;
    }
    [[nodiscard]] double memory_change(std::uint32_t s, kind k) const noexcept {
        return k == kind::f ? mem[s].activation
               : k == kind::i ? mem[s].weight - mem[s].activation
                              : -mem[s].weight;
    }
    [[nodiscard]] double work(std::uint32_t s) const noexcept {
        return static_cast<double>(m) * (t[s].forward + t[s].backward_input + t[s].backward_weight);
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

inline problem make_problem(const shape& s, const pipeline_costs& costs, const pipeline_memory& memory) {
    problem pr{};
    pr.p = s.ranks;
    pr.m = s.microbatches;
    pr.comm = costs.p2p;
    pr.t.assign(pr.p, costs.uniform);
    pr.mem.assign(pr.p, memory.uniform);
    for (std::size_t k = 0; k < pr.p && k < costs.per_stage.size(); ++k) pr.t[k] = costs.per_stage[k];
    for (std::size_t k = 0; k < pr.p && k < memory.per_stage.size(); ++k) pr.mem[k] = memory.per_stage[k];
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
    if (s.chunks != 1) return "autoschedule places one stage per rank: chunks must be 1";
    // The search keeps O(pm) arrays and runs the greedy O(pm) times p at most: bound both.
    if (std::uint64_t{s.ranks} * s.microbatches > max_units) {
        return "ranks * microbatches must be at most 1048576 (2^20) for autoschedule";
    }
    if (std::uint64_t{s.ranks} * s.ranks * s.microbatches > max_work) {
        return "ranks^2 * microbatches must be at most 67108864 (2^26) for autoschedule: its search "
               "time grows with it";
    }
    if (!costs.per_stage.empty() && costs.per_stage.size() != s.ranks) {
        return "per-stage costs: expected " + std::to_string(s.ranks) + " stages, got " +
               std::to_string(costs.per_stage.size());
    }
    if (!memory.per_stage.empty() && memory.per_stage.size() != s.ranks) {
        return "per-stage memory: expected " + std::to_string(s.ranks) + " stages, got " +
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
