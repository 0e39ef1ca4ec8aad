// pipesched: every catalogued schedule on the costs and memory model of autoschedule(), and
// the best one that fits the memory limit: what a user would pick by hand, to compare with
// the searched schedule.
//
// Single-chunk schedules run one stage per rank with the given per-stage costs (a full B costs
// T_I + T_W and frees M_B at once). Multi-chunk schedules run v chunks per rank (2 for the V
// ones), each charged 1/v of its rank's costs and memory (the convention of `pipesched
// compare`), or the costs of its global stage when the lists give one per global stage. Span, makespan
// and bubble are autoschedule's definitions; a schedule fits when every rank's peak memory is
// within its limit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../analysis/simulate.hpp"
#include "../catalog.hpp"
#include "problem.hpp"

namespace pipesched {

struct named_schedule_result {
    schedule_id id{};
    std::uint32_t chunks = 1;
    placement layout = placement::loop;
    bool accepted = false; ///< the schedule accepts the shape
    bool fits = false;     ///< and stays within every rank's memory limit
    double span = 0.0;
    double makespan = 0.0;
    double bubble_fraction = 0.0;
    std::vector<double> peak_memory{}; ///< per rank
};

namespace detail::autosched {

/// Per-stage costs (with M_B, M_W) of a problem for simulate(): the stages the search times, as
/// they are (a full B costs T_I + T_W).
inline const std::vector<stage_costs>& stage_costs_of(const problem& pr) noexcept { return pr.costs; }

/// The chunks a catalogued schedule runs with here: 1, or `chunks` for a multi-chunk schedule
/// (2 for the V-shaped ones).
[[nodiscard]] inline std::uint32_t named_chunks(const schedule_info& info, std::uint32_t chunks) noexcept {
    return !info.multi_chunk ? 1U : info.layout == placement::v_shape ? 2U : chunks;
}

/// Calls f(pol, problem) for a catalogued schedule that accepts the shape and whose costs the
/// lists describe (search/problem.hpp's stage_list_fits); false if it does not.
template <class F>
bool with_named_schedule(const schedule_info& info, const shape& s, const pipeline_costs& costs,
                         const pipeline_memory& memory, std::uint32_t chunks, F&& f) {
    const std::uint32_t v = named_chunks(info, chunks);
    if (!stage_list_fits(costs.per_stage.size(), s.ranks, v) || !stage_list_fits(memory.per_stage.size(), s.ranks, v)) {
        return false;
    }
    schedule_options options{};
    options.shape = {s.ranks, s.microbatches, v};
    bool ran = false;
    // Behind any_schedule: simulate is compiled for the two placements, not per schedule.
    with_any_schedule(info.id, options, [&](const auto& pol) {
        if (!pol.check()) return;
        using P = std::remove_cvref_t<decltype(pol)>;
        const problem pr = make_problem(s, costs, memory, P::layout, v);
        ran = true;
        f(pol, pr);
    });
    return ran;
}

/// r's numbers for a catalogued policy replayed by simulate() on the problem of its placement:
/// accepted when the replay succeeds, fits when every rank's peak is within its limit.
template <class P>
void replay_named(const P& pol, const problem& pr, named_schedule_result& r) {
    cost_model model{};
    model.per_stage = stage_costs_of(pr);
    model.p2p_latency = pr.comm;
    const simulation sim = simulate(pol, model);
    if (!sim) return;
    r.accepted = true;
    r.fits = true;
    r.makespan = sim.makespan;
    for (std::uint32_t rank = 0; rank < pr.p; ++rank) {
        const rank_summary& rs = sim.ranks[rank];
        r.span = std::max(r.span, rs.last_end - rs.first_start);
        r.peak_memory.push_back(rs.peak_memory);
        if (!within(rs.peak_memory, pr.limit(rank))) r.fits = false;
    }
    const double work = pr.max_rank_work();
    r.bubble_fraction = r.span > 0.0 ? (r.span - work) / r.span : 0.0;
}

} // namespace detail::autosched

/// Every catalogued schedule, in catalog order; multi-chunk schedules with a loop placement
/// run `chunks` chunks per rank (V-shaped ones 2), each chunk charged 1/v of its rank's costs
/// and memory unless the lists give every global stage.
inline std::vector<named_schedule_result> evaluate_named_schedules(const shape& s, const pipeline_costs& costs,
                                                                   const pipeline_memory& memory,
                                                                   std::uint32_t chunks = 2) {
    namespace as = detail::autosched;
    std::vector<named_schedule_result> out;
    if (!as::check_input(s, costs, memory).empty() || chunks < 2) return out;
    for (const schedule_info& info : schedules) {
        named_schedule_result r{};
        r.id = info.id;
        r.chunks = as::named_chunks(info, chunks);
        r.layout = info.layout;
        as::with_named_schedule(info, s, costs, memory, chunks,
                                [&](const auto& pol, const as::problem& pr) { as::replay_named(pol, pr, r); });
        out.push_back(std::move(r));
    }
    return out;
}

/// The catalogued schedule with the smallest span (then makespan, then catalog order) among
/// those that fit; nullopt if none does.
inline std::optional<named_schedule_result> best_named_schedule(const shape& s, const pipeline_costs& costs,
                                                                const pipeline_memory& memory,
                                                                std::uint32_t chunks = 2) {
    std::optional<named_schedule_result> best;
    for (named_schedule_result& r : evaluate_named_schedules(s, costs, memory, chunks)) {
        if (!r.fits) continue;
        if (!best || r.span < best->span || (r.span == best->span && r.makespan < best->makespan)) {
            best = std::move(r);
        }
    }
    return best;
}

} // namespace pipesched
