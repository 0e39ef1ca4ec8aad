// pipesched: every catalogued schedule on the costs and memory model of autoschedule(), and
// the best one that fits the memory limit: what a user would pick by hand, to compare with
// the searched schedule.
//
// Single-chunk schedules run one stage per rank with the given per-stage costs (a full B costs
// T_I + T_W and frees M_B at once). Multi-chunk schedules run two chunks per rank, each charged
// half of its rank's costs and memory (the convention of `pipesched compare`). Span, makespan
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

#include "../catalog.hpp"
#include "autoschedule.hpp"
#include "simulate.hpp"

namespace pipesched {

struct named_schedule_result {
    schedule_id id{};
    std::uint32_t chunks = 1;
    bool accepted = false; ///< the schedule accepts the shape
    bool fits = false;     ///< and stays within every rank's memory limit
    double span = 0.0;
    double makespan = 0.0;
    double bubble_fraction = 0.0;
    std::vector<double> peak_memory{}; ///< per rank
};

/// Every catalogued schedule, in catalog order.
inline std::vector<named_schedule_result> evaluate_named_schedules(const shape& s, const pipeline_costs& costs,
                                                                   const pipeline_memory& memory) {
    std::vector<named_schedule_result> out;
    if (!detail::autosched::check_input(s, costs, memory).empty()) return out;
    const detail::autosched::problem pr = detail::autosched::make_problem(s, costs, memory);
    double work = 0.0;
    for (std::uint32_t k = 0; k < pr.p; ++k) work = std::max(work, pr.work(k));
    for (const schedule_info& info : schedules) {
        named_schedule_result r{};
        r.id = info.id;
        r.chunks = info.multi_chunk ? 2u : 1u;
        schedule_options options{};
        options.shape = {pr.p, pr.m, r.chunks};
        // Behind any_schedule: simulate is compiled for the two placements, not per schedule.
        with_any_schedule(info.id, options, [&](const auto& pol) {
            if (!pol.check()) return;
            using P = std::remove_cvref_t<decltype(pol)>;
            const double share = 1.0 / static_cast<double>(r.chunks);
            std::vector<stage_costs> per_stage(std::size_t{pr.p} * r.chunks);
            for (std::uint32_t rank = 0; rank < pr.p; ++rank) {
                for (std::uint32_t chunk = 0; chunk < r.chunks; ++chunk) {
                    stage_costs& c = per_stage[stage_of(P::layout, pr.p, rank, chunk)];
                    c.forward = pr.t[rank].forward * share;
                    c.backward_input = pr.t[rank].backward_input * share;
                    c.backward_weight = pr.t[rank].backward_weight * share;
                    c.backward = c.backward_input + c.backward_weight;
                    c.activation_memory = pr.mem[rank].activation * share;
                    c.weight_memory = pr.mem[rank].weight * share;
                }
            }
            cost_model model{};
            model.per_stage = per_stage;
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
                if (!detail::autosched::within(rs.peak_memory, pr.mem[rank].limit)) r.fits = false;
            }
            r.bubble_fraction = r.span > 0.0 ? (r.span - work) / r.span : 0.0;
        });
        out.push_back(std::move(r));
    }
    return out;
}

/// The catalogued schedule with the smallest span (then makespan, then catalog order) among
/// those that fit; nullopt if none does.
inline std::optional<named_schedule_result> best_named_schedule(const shape& s, const pipeline_costs& costs,
                                                                const pipeline_memory& memory) {
    std::optional<named_schedule_result> best;
    for (named_schedule_result& r : evaluate_named_schedules(s, costs, memory)) {
        if (!r.fits) continue;
        if (!best || r.span < best->span || (r.span == best->span && r.makespan < best->makespan)) {
            best = std::move(r);
        }
    }
    return best;
}

} // namespace pipesched
