// pipesched: search a zero-bubble schedule for given per-stage costs under a memory limit.
//
// The problem, its costs and memory model: search/problem.hpp; the timing rules every method
// shares: search/clock.hpp. Each method has its own header in search/; placement_search.hpp
// runs them in one placement, and autoschedule() over the placements asked for (one stage per
// rank, the V with two chunks per rank, the interleaved loop with v chunks), keeping the best.
// A chunk of a rank charged from one entry per rank costs 1/v of it and holds 1/v of its
// memory; costs and memory may also be given per global stage.
//
// Then every catalogued schedule of the searched placements is replayed by simulate() under
// the same costs; the answer is never longer than the best one that fits (when the search's
// order is, the catalogued schedule itself is the answer).
//
// One stage per rank, // method, in this order; the answer is the best candidate (span, then makespan, then the
// candidate's rank in this list, so the result is deterministic):
//  1. The published heuristic's ideas, implemented here from the paper's description and the
//     authors' `zb.py` (sail-sg/zero-bubble-pipeline-parallelism): microbatch by microbatch, F
//     on every stage top-down then I bottom-up; the first round's warm-up forwards on each stage
//     as many as fit in memory and in the time until the first I returns (strictly fewer than
//     the stage before); W placed only to free memory for the next F or I, or into the gap
//     while the rank waits for an input, or, when that gap is within the largest bubble seen
//     so far, optionally not at all; 2 x 2 x 2 variants (warm-up may or may not cross the
//     first I's return; a stage may or may not skip its F to let the next stage catch up; a
//     gap within the bubble budget is or is not filled). These eight are the authors' search.
//  2. The same eight under tighter memory caps of k whole activations, k in 1 .. 2p+1 (at most
//     8 values): a smaller warm-up can shorten the span; the greedy is not monotone in the
//     limit.
//  3. List scheduling in time order (an I or F when its input is there and memory allows, W's
//     into gaps or when memory needs them; six variants). Far below p activations the greedy
//     loses the pipeline's rhythm (p = 32, m = 256, limit 20: span 390k against 61k here).
//  4. The handcrafted ZB-H1 and ZB-H2 orders and 1F1B with split backward when they fit, and
//     1F1B with its warm-up capped by memory (W at once, deferred by s, or at the end).
//  5. Per-stage templates (each stage its own warm-up count, number of deferred W's and W
//     position; the paper's ILP varies exactly such per-stage orders) tuned by coordinate
//     descent over one stage, a prefix or a suffix of stages at a time, within a budget that
//     counts evaluations. Beats the heuristic where later stages should hold W's back to hand
//     their I's upstream sooner (the paper's 6.2B model at 2p with the authors' memory model).
//  6. Local search from the best of those: swap adjacent actions of a stage when the order
//     stays legal and within memory, keep a swap that lowers (span, makespan, sum of the
//     stages' ends); a fixed budget of evaluations, so it terminates and is deterministic.
//  7. Branch and bound over every order (each of F, I, W in microbatch order on each stage)
//     on small shapes (3pm <= exact_actions), seeded with the best so far; when it completes
//     the result is optimal and says so (proven_optimal).
// Then a lower bound (search/lower_bound.hpp) also marks the result optimal when the span meets
// it: on all the paper's settings at limit p, and at 2p with M_B = M_W, it does for one stage
// per rank, so nothing shorter than the heuristic exists there.
// Within one op type, microbatches keep their order on a stage, as in the heuristic; the tests
// enumerate unrestricted orders on tiny shapes to show that nothing is lost there.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../analysis/simulate.hpp"
#include "../event.hpp"
#include "../policies/explicit_schedule.hpp"
#include "../shape.hpp"
#include "lower_bound.hpp"
#include "named_schedules.hpp"
#include "placement_search.hpp"
#include "problem.hpp"

namespace pipesched {

namespace detail::autosched {

/// The events of an order, with global stage numbers from the problem's placement.
template <placement Layout = placement::loop>
explicit_schedule<Layout> to_schedule(const problem& pr, const order& o) {
    explicit_schedule<Layout> out{};
    out.shape = shape{pr.p, pr.m, pr.v};
    std::vector<std::uint32_t> n(3 * std::size_t{pr.v});
    for (std::uint32_t r = 0; r < pr.p; ++r) {
        std::fill(n.begin(), n.end(), 0U);
        for (const task a : o[r]) {
            const auto mb = static_cast<std::uint16_t>(n[3 * std::size_t{a.chunk} + static_cast<std::size_t>(a.k)]++);
            out.push(event{op_of(a.k), a.chunk, static_cast<std::uint16_t>(r), mb, no_peer});
        }
    }
    return out;
}

/// One placement to search: its layout and chunks per rank.
struct placement_choice {
    placement layout = placement::loop;
    std::uint32_t chunks = 1;
};

/// The placements `options` asks for, in the order that breaks ties.
inline std::vector<placement_choice> placements_of(const autoschedule_options& options) {
    std::vector<placement_choice> out;
    const search_placement pl = options.placement;
    if (pl == search_placement::loop || pl == search_placement::any) out.push_back({placement::loop, 1});
    if (pl == search_placement::v || pl == search_placement::any) out.push_back({placement::v_shape, 2});
    if (pl == search_placement::interleaved || pl == search_placement::any) out.push_back({placement::loop, options.chunks});
    return out;
}

/// What the bound and the proof speak of: the placements searched.
inline std::string scope_of(const std::vector<placement_choice>& searched) {
    std::string out;
    for (std::size_t k = 0; k < searched.size(); ++k) {
        if (k > 0) out += k + 1 == searched.size() ? " and " : ", ";
        const placement_choice& c = searched[k];
        out += c.layout == placement::v_shape ? "V placement (2 chunks per rank)"
               : c.chunks == 1                ? "loop placement (1 stage per rank)"
                                              : "interleaved placement (" + std::to_string(c.chunks) + " chunks per rank)";
    }
    return out;
}

} // namespace detail::autosched

/// Input errors (shape, negative or non-finite numbers, per-stage lists of the wrong length)
/// come back as fits = false with the message starting "invalid input: ".
inline autoschedule_result autoschedule(const shape& s, const pipeline_costs& costs,
                                        const pipeline_memory& memory,
                                        const autoschedule_options& options = {}) {
    namespace as = detail::autosched;
    autoschedule_result out{};
    if (std::string e = as::check_input(s, costs, memory); !e.empty()) {
        out.message = "invalid input: " + e;
        return out;
    }
    if (options.chunks < 2 || options.chunks > 64) {
        out.message = "invalid input: the interleaved placement's chunks must be 2 .. 64";
        return out;
    }
    const std::vector<as::placement_choice> choices = as::placements_of(options);
    // One stage per rank needs max(M_B, M_W) on every rank (reported as before when it is
    // searched); the others need what one microbatch at a time holds.
    const as::problem single = as::make_problem(s, costs, memory);
    out.smallest_limit.resize(single.p);
    for (std::uint32_t k = 0; k < single.p; ++k) {
        out.smallest_limit[k] = single.smallest_limit(k);
    }

    struct searched {
        as::placement_choice choice;
        as::problem pr;
        as::placement_result res;
        double floor; ///< no order of this placement within the limits is shorter
    };
    std::vector<searched> done;
    std::string refusal{};
    for (const as::placement_choice& c : choices) {
        // p^2 v m bounds the list scheduler's time: a placement beyond it is searched only
        // when asked for by name (and then refused).
        if (std::uint64_t{s.ranks} * s.ranks * s.microbatches * c.chunks > as::max_work) {
            if (options.placement != search_placement::any) {
                out.message = "invalid input: ranks^2 * chunks * microbatches must be at most 67108864 (2^26) for "
                              "autoschedule: its search time grows with it";
                return out;
            }
            continue;
        }
        if (std::string e = as::stage_lists_error(s, costs, memory, c.chunks); !e.empty()) {
            if (options.placement != search_placement::any) {
                out.message = "invalid input: " + e;
                return out;
            }
            continue;
        }
        as::problem pr = as::make_problem(s, costs, memory, c.layout, c.chunks);
        bool feasible = true;
        for (std::uint32_t r = 0; r < pr.p && feasible; ++r) {
            const double need = c.chunks == 1 ? out.smallest_limit[r] : pr.smallest_limit(r);
            if (as::within(need, pr.limit(r))) continue;
            feasible = false;
            if (refusal.empty()) {
                const double smallest = c.chunks == 1 ? *std::max_element(out.smallest_limit.begin(), out.smallest_limit.end()) : need;
                refusal = "no schedule fits: stage " + std::to_string(r) + " has a memory limit of " +
                          as::number_text(pr.limit(r)) + " but one microbatch needs " + as::number_text(need) +
                          (c.chunks == 1 ? std::string{" (max(M_B, M_W)); the smallest limit that fits "} +
                                               (memory.per_stage.empty() ? "is " : "every stage is ") + as::number_text(smallest)
                                         : std::string{" in this placement"});
            }
        }
        if (!feasible) continue;
        as::placement_result res = c.chunks == 1 ? as::search_one_stage_per_rank(pr, options) : as::search_chunks(pr, options);
        if (!res.have) continue;
        // span_lower_bound covers every order of the placement; branch and bound's covers
        // those with each op's microbatches in order on a stage, which its tests show lose
        // nothing on the shapes it completes.
        double floor = as::span_lower_bound(pr);
        if (res.exact_finished) floor = std::max(floor, res.eval.span);
        done.push_back({c, std::move(pr), std::move(res), floor});
    }
    if (done.empty()) {
        out.message = refusal.empty() ? "no schedule fits the memory limit" : refusal;
        return out;
    }
    std::size_t pick = 0;
    for (std::size_t k = 1; k < done.size(); ++k) {
        if (done[k].res.eval.better_than(done[pick].res.eval)) pick = k;
    }
    const searched& best = done[pick];
    out.fits = true;
    out.layout = best.choice.layout;
    out.chunks = best.choice.chunks;
    if (out.layout == placement::v_shape) out.v_schedule = as::to_schedule<placement::v_shape>(best.pr, best.res.best);
    else out.schedule = as::to_schedule<placement::loop>(best.pr, best.res.best);
    out.span = best.res.eval.span;
    out.makespan = best.res.eval.makespan;
    out.peak_memory = best.res.eval.peak;
    out.method = best.res.method;
    double work = best.pr.max_rank_work();
    for (const searched& d : done) {
        if (d.choice.chunks == 1) out.heuristic_span = d.res.heuristic_span;
    }

    // Never longer than a catalogued schedule of the searched placements that fits, replayed
    // by simulate() under the same costs.
    std::vector<std::uint32_t> named_chunks{2};
    if (options.chunks != 2 && options.placement != search_placement::v && options.placement != search_placement::loop) {
        named_chunks.push_back(options.chunks);
    }
    for (const std::uint32_t v : named_chunks) {
        for (const schedule_info& info : schedules) {
            const std::uint32_t chunks = as::named_chunks(info, v);
            if (v != 2 && chunks != v) continue; // evaluated with 2 already
            bool searched_here = false;
            for (const as::placement_choice& c : choices) {
                searched_here = searched_here || (c.chunks == chunks && (chunks == 1 || c.layout == info.layout));
            }
            if (!searched_here && options.placement != search_placement::any) continue;
            as::with_named_schedule(info, s, costs, memory, v, [&](const auto& pol, const as::problem& pr) {
                using P = std::remove_cvref_t<decltype(pol)>;
                named_schedule_result n{};
                as::replay_named(pol, pr, n);
                if (!n.fits) return;
                as::evaluation e{};
                e.span = n.span;
                e.makespan = n.makespan;
                as::evaluation ours{};
                ours.span = out.span;
                ours.makespan = out.makespan;
                if (!e.better_than(ours)) return;
                out.layout = P::layout;
                out.chunks = chunks;
                if constexpr (P::layout == placement::v_shape) {
                    out.v_schedule = explicit_schedule<placement::v_shape>::from_policy(pol);
                } else if constexpr (P::layout == placement::bidirectional) {
                    return; // not reached: with_named_schedule offers no bidirectional schedule
                } else {
                    out.schedule = explicit_schedule<placement::loop>::from_policy(pol);
                }
                out.span = n.span;
                out.makespan = n.makespan;
                out.peak_memory = std::move(n.peak_memory);
                out.method = display_name(info);
                work = pr.max_rank_work();
            });
        }
    }
    out.bubble_fraction = out.span > 0.0 ? (out.span - work) / out.span : 0.0;

    // The bound over every searched placement: the smallest of theirs.
    out.lower_bound = done.front().floor;
    for (const searched& d : done) out.lower_bound = std::min(out.lower_bound, d.floor);
    out.lower_bound = std::min(out.lower_bound, out.span);
    out.proven_optimal = as::within(out.span, out.lower_bound);
    // Sums of the same times in another order differ in the last bits: a met bound is gap 0.
    out.gap = out.proven_optimal || out.span <= 0.0 ? 0.0 : (out.span - out.lower_bound) / out.span;
    std::vector<as::placement_choice> searched_choices;
    for (const searched& d : done) searched_choices.push_back(d.choice);
    out.bound_scope = as::scope_of(searched_choices);
    return out;
}

/// Per-stage costs (with M_B, M_W) under which simulate() replays an autoschedule result with
/// the same numbers; use with cost_model{.per_stage = ..., .p2p_latency = costs.p2p}. A full B
/// costs T_I + T_W, so the named schedules with a fused backward compare on the same work.
/// `layout` and `chunks` are the result's.
inline std::vector<stage_costs> to_stage_costs(const shape& s, const pipeline_costs& costs, const pipeline_memory& memory,
                                               placement layout = placement::loop, std::uint32_t chunks = 1) {
    return detail::autosched::stage_costs_of(detail::autosched::make_problem(s, costs, memory, layout, chunks));
}

} // namespace pipesched
