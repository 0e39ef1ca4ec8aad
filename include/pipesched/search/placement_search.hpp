// pipesched: the search in one placement: every method, in order, on one problem
// (search/problem.hpp), keeping the best order (search/autoschedule.hpp's header says why each
// method is there). One stage per rank runs them all; several chunks per rank (the V and the
// interleaved placement) start from the catalogued schedules of that placement, list
// scheduling and, in the V, orders built from repeated building blocks (v_building_blocks.hpp),
// then local search and, on small shapes, branch and bound.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "../catalog.hpp"
#include "../policies/one_f_one_b.hpp"
#include "../policies/zb_h1.hpp"
#include "../policies/zb_h2.hpp"
#include "evaluation.hpp"
#include "exact_search.hpp"
#include "greedy.hpp"
#include "list_schedule.hpp"
#include "local_search.hpp"
#include "problem.hpp"
#include "templates.hpp"
#include "v_building_blocks.hpp"

namespace pipesched::detail::autosched {

struct placement_result {
    order best{};
    evaluation eval{};
    std::string_view method{};
    bool have = false;
    double heuristic_span = 0.0; ///< one stage per rank: the published heuristic's best
    bool exact_finished = false; ///< branch and bound completed: best is optimal here
};

/// Offers consider(order, name) the order of every catalogued schedule of the problem's
/// placement and chunks that accepts its shape (one stage per rank: those not offered before).
template <class Consider>
void consider_named(const problem& pr, Consider&& consider) {
    for (const schedule_info& info : schedules) {
        const std::uint32_t v = !info.multi_chunk ? 1U : info.layout == placement::v_shape ? 2U : pr.v;
        if (v != pr.v || (pr.v > 1 && info.layout != pr.layout) || (pr.v == 1 && info.multi_chunk)) continue;
        if (pr.v == 1 && (info.id == schedule_id::zb_h1 || info.id == schedule_id::zb_h2)) continue; // offered first
        schedule_options options{};
        options.shape = {pr.p, pr.m, v};
        with_any_schedule(info.id, options, [&](const auto& pol) {
            if (pol.check()) consider(letters_of(pol), display_name(info));
        });
    }
}

/// One microbatch at a time: on every rank its chunks' F in stage order, then their I and W in
/// reverse. Always within the problem's smallest limit.
inline order one_at_a_time(const problem& pr) {
    order out(pr.p);
    for (std::uint32_t r = 0; r < pr.p; ++r) {
        for (std::uint32_t i = 0; i < pr.m; ++i) {
            for (std::uint32_t c = 0; c < pr.v; ++c) out[r].push_back(task{kind::f, static_cast<std::uint8_t>(c)});
            for (std::uint32_t c = pr.v; c-- > 0;) {
                out[r].push_back(task{kind::i, static_cast<std::uint8_t>(c)});
                out[r].push_back(task{kind::w, static_cast<std::uint8_t>(c)});
            }
        }
    }
    return out;
}

/// Local search then, on small shapes, branch and bound from the best order so far. The local
/// search gets 1/share of the options' budgets (the placements with chunks share theirs, so that
/// searching every placement costs about what one stage per rank does).
template <class Evaluator>
void refine(const problem& pr, const autoschedule_options& options, Evaluator& ev, placement_result& res,
            std::uint32_t share = 1) {
    order& best = res.best;
    evaluation& best_eval = res.eval;
    // Local search.
    // Each evaluation replays all 3pvm actions: cap the total work so that big shapes stay fast.
    const std::uint64_t per_eval = 3ULL * pr.stages() * pr.m;
    const auto affordable = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(options.local_search_evaluations, options.local_search_work / per_eval) / share);
    if (affordable > 0) {
        const evaluation before = best_eval;
        improve(pr, ev, best, best_eval, affordable);
        if (best_eval.better_than(before)) res.method = "local search";
    }

    // Exact search on small shapes.
    if (options.exact_actions > 0 && 3ULL * pr.stages() * pr.m <= options.exact_actions) {
        exact_search bb{pr, options.exact_nodes};
        order found = best;
        double bound = best_eval.span;
        const bool finished = bb.run(found, bound);
        const evaluation e = ev.run(found);
        if (e.legal && e.fits && e.better_than(best_eval)) {
            best = std::move(found);
            best_eval = e;
            res.method = "branch and bound";
        }
        res.exact_finished = finished;
    }
}

/// One stage per rank: the heuristic, tighter caps, list scheduling, handcrafted and
/// catalogued orders, per-stage templates, then refine().
inline placement_result search_one_stage_per_rank(const problem& pr, const autoschedule_options& options) {
    placement_result res{};
    basic_evaluator<false> ev{pr};
    order& best = res.best;
    evaluation& best_eval = res.eval;
    bool& have = res.have;
    const auto consider = [&](order&& o, std::string_view method) {
        if (o.empty()) return false;
        const evaluation e = ev.run(o);
        if (!e.legal || !e.fits) return false;
        if (!have || e.better_than(best_eval)) {
            best = std::move(o);
            best_eval = e;
            res.method = method;
            have = true;
            return true;
        }
        return false;
    };

    // 1. The heuristic's eight variants under the given limit.
    std::vector<double> cap(pr.p);
    for (std::uint32_t k = 0; k < pr.p; ++k) cap[k] = pr.limit(k);
    const auto run_variants = [&](const std::vector<double>& caps, std::string_view method) {
        for (const bool may_wait : {true, false}) {
            for (const bool catch_up : {true, false}) {
                for (const bool fill : {true, false}) {
                    consider(greedy(pr, caps, may_wait, catch_up, fill), method);
                }
            }
        }
    };
    run_variants(cap, "heuristic");
    if (have) res.heuristic_span = best_eval.span;

    // 2. Tighter caps: k whole activations for k = 1 .. 2p+1, at most 8 of them evenly spread
    //    (each costs eight greedy runs).
    {
        const std::uint32_t top = std::min(2 * pr.p + 1, pr.m + 1);
        const std::uint32_t step = (top + 7) / 8;
        for (std::uint32_t k = 1; k <= top; k += step) {
            std::vector<double> tighter(pr.p);
            bool differs = false;
            for (std::uint32_t q = 0; q < pr.p; ++q) {
                const double c = static_cast<double>(k) * pr.costs[q].activation_memory;
                tighter[q] = std::min(cap[q], std::max(c, pr.smallest_limit(q)));
                differs = differs || tighter[q] < cap[q];
            }
            if (differs) run_variants(tighter, "heuristic under a tighter memory cap");
        }
    }

    // 3. List scheduling under the limit.
    for (const bool forward_first : {false, true}) {
        for (const w_fill fill : {w_fill::lazy, w_fill::gaps, w_fill::eager}) {
            consider(list_schedule(pr, cap, forward_first, fill), "list scheduling under the memory limit");
        }
    }
    // 4. Handcrafted orders, and 1F1B under the cap (W at once, or deferred as in ZB-H1).
    for (const std::uint32_t shift : {0U, 1U, pr.p}) {
        consider(capped_one_f_one_b(pr, cap, [&](std::uint32_t stage) { return shift == 1 ? stage : shift == 0 ? 0U : pr.m; }),
                 "1F1B under the memory cap");
    }
    {
        const zb_h1 h1{shape{pr.p, pr.m, 1}};
        if (h1.check()) consider(letters_of(h1), "ZB-H1");
        const zb_h2 h2{shape{pr.p, pr.m, 1}};
        if (h2.check()) consider(letters_of(h2), "ZB-H2");
        const one_f_one_b<backward_kind::split> plain{shape{pr.p, pr.m, 1}};
        if (plain.check()) consider(letters_of(plain), "1F1B with split backward");
    }
    // Every other catalogued schedule of one stage per rank, so that none is better.
    consider_named(pr, consider);
    if (!have) {
        // Always fits (limit >= max(M_B, M_W) was checked): F I W of one microbatch at a time.
        consider(one_at_a_time(pr), "one microbatch at a time");
    }

    // 5. Per-stage templates tuned by coordinate descent, from two starts.
    if (options.template_evaluations > 0) {
        const std::uint64_t per_eval = 6ULL * pr.p * pr.m; // build the order, replay it
        const auto budget = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(options.template_evaluations, options.template_work / per_eval) / 2);
        for (const bool defer : {false, true}) {
            std::vector<stage_template> tp = round_trip_template(pr, cap, defer);
            order o = templated(pr, cap, tp);
            evaluation e{};
            if (!o.empty()) e = ev.run(o);
            if (o.empty() || !e.legal || !e.fits) {
                // Tuning needs a legal start: the memory-capped 1F1B is one (warm-up p - s).
                for (std::uint32_t k = 0; k < pr.p; ++k) tp[k] = {std::max(1U, std::min(tp[k].warmup, pr.p - k)), 0, false};
                o = templated(pr, cap, tp);
                if (o.empty()) continue;
                e = ev.run(o);
                if (!e.legal || !e.fits) continue;
            }
            tune_templates(pr, ev, cap, tp, o, e, budget);
            consider(std::move(o), "per-stage templates (coordinate descent)");
        }
    }

    refine(pr, options, ev, res);
    return res;
}

/// Several chunks per rank: the catalogued schedules of the placement, list scheduling under
/// the limit and under tighter caps (k chunk activations), in the V the building blocks' orders
/// (at every memory level between the named V schedules'), then refine().
inline placement_result search_chunks(const problem& pr, const autoschedule_options& options) {
    placement_result res{};
    evaluator ev{pr};
    const auto consider = [&](order&& o, std::string_view method) {
        if (o.empty()) return false;
        const evaluation e = ev.run(o);
        if (!e.legal || !e.fits) return false;
        if (!res.have || e.better_than(res.eval)) {
            res.best = std::move(o);
            res.eval = e;
            res.method = method;
            res.have = true;
            return true;
        }
        return false;
    };
    consider_named(pr, consider);
    std::vector<double> cap(pr.p);
    for (std::uint32_t r = 0; r < pr.p; ++r) cap[r] = pr.limit(r);
    const auto lists = [&](const std::vector<double>& caps, std::string_view method) {
        for (const bool deeper_first : {true, false}) {
            for (const bool forward_first : {false, true}) {
                for (const w_fill fill : {w_fill::lazy, w_fill::gaps, w_fill::eager}) {
                    consider(list_schedule(pr, caps, forward_first, fill, deeper_first), method);
                }
            }
        }
    };
    lists(cap, "list scheduling under the memory limit");
    {
        // k chunk activations (of the rank's largest chunk), k spread over 1 .. 2pv.
        const std::uint32_t top = std::min(2 * pr.stages() + 1, pr.v * pr.m + 1);
        const std::uint32_t step = std::max(1U, (top + 3) / 4);
        for (std::uint32_t k = 1; k <= top; k += step) {
            std::vector<double> tighter(pr.p);
            bool differs = false;
            for (std::uint32_t r = 0; r < pr.p; ++r) {
                double chunk = 0.0;
                for (std::uint32_t c = 0; c < pr.v; ++c) chunk = std::max(chunk, pr.costs[pr.stage(r, c)].activation_memory);
                tighter[r] = std::min(cap[r], std::max(static_cast<double>(k) * chunk, pr.smallest_limit(r)));
                differs = differs || tighter[r] < cap[r];
            }
            if (differs) lists(tighter, "list scheduling under a tighter memory cap");
        }
    }
    if (pr.layout == placement::v_shape) {
        v_building_block_orders(pr, [&](order&& o) { consider(std::move(o), "V building blocks"); });
    }
    if (!res.have) consider(one_at_a_time(pr), "one microbatch at a time");
    refine(pr, options, ev, res, 4);
    return res;
}

} // namespace pipesched::detail::autosched
