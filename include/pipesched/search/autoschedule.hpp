// pipesched: search a zero-bubble schedule for given per-stage costs under a memory limit.
//
// The problem, its costs and memory model: search/problem.hpp. Each method has its own header
// in search/; autoschedule() runs them in order and returns the best.
//
// Method, in this order; the answer is the best candidate (span, then makespan, then the
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
// Then a lower bound (search/round_trip_bound.hpp) also marks the result optimal when the span meets it:
// on all the paper's settings at limit p it does, so nothing shorter than the heuristic exists
// there.
// Within one op type, microbatches keep their order on a stage, as in the heuristic; the tests
// enumerate unrestricted orders on tiny shapes to show that nothing is lost there.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../analysis/simulate.hpp"
#include "../event.hpp"
#include "../policies/explicit_schedule.hpp"
#include "../policies/one_f_one_b.hpp"
#include "../policies/zb_h1.hpp"
#include "../policies/zb_h2.hpp"
#include "../shape.hpp"
#include "evaluation.hpp"
#include "exact_search.hpp"
#include "greedy.hpp"
#include "list_schedule.hpp"
#include "local_search.hpp"
#include "problem.hpp"
#include "round_trip_bound.hpp"
#include "templates.hpp"

namespace pipesched {

namespace detail::autosched {

inline explicit_schedule<placement::loop> to_schedule(const problem& pr, const order& o) {
    explicit_schedule<placement::loop> out{};
    out.shape = shape{pr.p, pr.m, 1};
    for (std::uint32_t s = 0; s < pr.p; ++s) {
        std::uint32_t n[3] = {0, 0, 0};
        for (const kind k : o[s]) {
            const op kind_op = k == kind::f ? op::forward : k == kind::i ? op::backward_input : op::backward_weight;
            const auto mb = static_cast<std::uint16_t>(n[static_cast<std::size_t>(k)]++);
            out.push(event{kind_op, 0, static_cast<std::uint16_t>(s), mb, no_peer});
        }
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
    const as::problem pr = as::make_problem(s, costs, memory);
    out.smallest_limit.resize(pr.p);
    for (std::uint32_t k = 0; k < pr.p; ++k) {
        out.smallest_limit[k] = std::max(pr.mem[k].activation, pr.mem[k].weight);
    }
    for (std::uint32_t k = 0; k < pr.p; ++k) {
        if (!as::within(out.smallest_limit[k], pr.mem[k].limit)) {
            const double smallest = *std::max_element(out.smallest_limit.begin(), out.smallest_limit.end());
            out.message = "no schedule fits: stage " + std::to_string(k) + " has a memory limit of " +
                          as::number_text(pr.mem[k].limit) + " but one microbatch needs " +
                          as::number_text(out.smallest_limit[k]) + " (max(M_B, M_W)); the smallest limit that fits " +
                          (memory.per_stage.empty() ? "is " : "every stage is ") + as::number_text(smallest);
            return out;
        }
    }

    as::evaluator ev{pr};
    as::order best{};
    as::evaluation best_eval{};
    bool have = false;
    const auto consider = [&](as::order&& o, std::string_view method) {
        if (o.empty()) return false;
        const as::evaluation e = ev.run(o);
        if (!e.legal || !e.fits) return false;
        if (!have || e.better_than(best_eval)) {
            best = std::move(o);
            best_eval = e;
            out.method = method;
            have = true;
            return true;
        }
        return false;
    };

    // 1. The heuristic's eight variants under the given limit.
    std::vector<double> cap(pr.p);
    for (std::uint32_t k = 0; k < pr.p; ++k) cap[k] = pr.mem[k].limit;
    const auto run_variants = [&](const std::vector<double>& caps, std::string_view method) {
        for (const bool may_wait : {true, false}) {
            for (const bool catch_up : {true, false}) {
                for (const bool fill : {true, false}) {
                    consider(as::greedy(pr, caps, may_wait, catch_up, fill), method);
                }
            }
        }
    };
    run_variants(cap, "heuristic");
    if (have) out.heuristic_span = best_eval.span;

    // 2. Tighter caps: k whole activations for k = 1 .. 2p+1, at most 8 of them evenly spread
    //    (each costs eight greedy runs).
    {
        const std::uint32_t top = std::min(2 * pr.p + 1, pr.m + 1);
        const std::uint32_t step = (top + 7) / 8;
        for (std::uint32_t k = 1; k <= top; k += step) {
            std::vector<double> tighter(pr.p);
            bool differs = false;
            for (std::uint32_t q = 0; q < pr.p; ++q) {
                const double c = static_cast<double>(k) * pr.mem[q].activation;
                tighter[q] = std::min(cap[q], std::max(c, out.smallest_limit[q]));
                differs = differs || tighter[q] < cap[q];
            }
            if (differs) run_variants(tighter, "heuristic under a tighter memory cap");
        }
    }

    // 3. List scheduling under the limit.
    for (const bool forward_first : {false, true}) {
        for (const as::w_fill fill : {as::w_fill::lazy, as::w_fill::gaps, as::w_fill::eager}) {
            consider(as::list_schedule(pr, cap, forward_first, fill), "list scheduling under the memory limit");
        }
    }
    // 4. Handcrafted orders, and 1F1B under the cap (W at once, or deferred as in ZB-H1).
    for (const std::uint32_t shift : {0U, 1U, pr.p}) {
        consider(as::capped_one_f_one_b(pr, cap, [&](std::uint32_t stage) { return shift == 1 ? stage : shift == 0 ? 0U : pr.m; }),
                 "1F1B under the memory cap");
    }
    {
        const zb_h1 h1{shape{pr.p, pr.m, 1}};
        if (h1.check()) consider(as::letters_of(h1), "ZB-H1");
        const zb_h2 h2{shape{pr.p, pr.m, 1}};
        if (h2.check()) consider(as::letters_of(h2), "ZB-H2");
        const one_f_one_b<backward_kind::split> plain{shape{pr.p, pr.m, 1}};
        if (plain.check()) consider(as::letters_of(plain), "1F1B with split backward");
    }
    if (!have) {
        // Always fits (limit >= max(M_B, M_W) was checked): F I W of one microbatch at a time.
        as::order sequential(pr.p);
        for (auto& seq : sequential) {
            for (std::uint32_t i = 0; i < pr.m; ++i) {
                seq.push_back(as::kind::f);
                seq.push_back(as::kind::i);
                seq.push_back(as::kind::w);
            }
        }
        consider(std::move(sequential), "one microbatch at a time");
    }

    // 5. Per-stage templates tuned by coordinate descent, from two starts.
    if (options.template_evaluations > 0) {
        const std::uint64_t per_eval = 6ULL * pr.p * pr.m; // build the order, replay it
        const auto budget = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(options.template_evaluations, options.template_work / per_eval) / 2);
        for (const bool defer : {false, true}) {
            std::vector<as::stage_template> tp = as::round_trip_template(pr, cap, defer);
            as::order o = as::templated(pr, cap, tp);
            as::evaluation e{};
            if (!o.empty()) e = ev.run(o);
            if (o.empty() || !e.legal || !e.fits) {
                // Tuning needs a legal start: the memory-capped 1F1B is one (warm-up p - s).
                for (std::uint32_t k = 0; k < pr.p; ++k) tp[k] = {std::max(1U, std::min(tp[k].warmup, pr.p - k)), 0, false};
                o = as::templated(pr, cap, tp);
                if (o.empty()) continue;
                e = ev.run(o);
                if (!e.legal || !e.fits) continue;
            }
            as::tune_templates(pr, ev, cap, tp, o, e, budget);
            consider(std::move(o), "per-stage templates (coordinate descent)");
        }
    }

    // 6. Local search.
    // Each evaluation replays all 3pm actions: cap the total work so that big shapes stay fast.
    const std::uint64_t per_eval = 3ULL * pr.p * pr.m;
    const auto affordable = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(options.local_search_evaluations, options.local_search_work / per_eval));
    if (affordable > 0) {
        const as::evaluation before = best_eval;
        as::improve(pr, ev, best, best_eval, affordable);
        if (best_eval.better_than(before)) out.method = "local search";
    }

    // 7. Exact search on small shapes.
    if (options.exact_actions > 0 && 3ULL * pr.p * pr.m <= options.exact_actions) {
        as::exact_search bb{pr, options.exact_nodes};
        as::order found = best;
        double bound = best_eval.span;
        const bool finished = bb.run(found, bound);
        const as::evaluation e = ev.run(found);
        if (e.legal && e.fits && e.better_than(best_eval)) {
            best = std::move(found);
            best_eval = e;
            out.method = "branch and bound";
        }
        out.proven_optimal = finished;
    }

    out.fits = true;
    out.schedule = as::to_schedule(pr, best);
    out.span = best_eval.span;
    out.makespan = best_eval.makespan;
    double work = 0.0;
    for (std::uint32_t k = 0; k < pr.p; ++k) work = std::max(work, pr.work(k));
    out.bubble_fraction = out.span > 0.0 ? (out.span - work) / out.span : 0.0;
    out.peak_memory = best_eval.peak;
    out.lower_bound = as::lower_bound(pr);
    if (as::within(out.span, out.lower_bound)) out.proven_optimal = true;
    return out;
}

/// Per-stage costs (with M_B, M_W) under which simulate() replays an autoschedule result with
/// the same numbers; use with cost_model{.per_stage = ..., .p2p_latency = costs.p2p}. A full B
/// costs T_I + T_W, so the named schedules with a fused backward compare on the same work.
inline std::vector<stage_costs> to_stage_costs(const shape& s, const pipeline_costs& costs,
                                               const pipeline_memory& memory) {
    const detail::autosched::problem pr = detail::autosched::make_problem(s, costs, memory);
    std::vector<stage_costs> out(pr.p);
    for (std::uint32_t k = 0; k < pr.p; ++k) {
        stage_costs& c = out[k];
        c.forward = pr.t[k].forward;
        c.backward_input = pr.t[k].backward_input;
        c.backward_weight = pr.t[k].backward_weight;
        c.backward = pr.t[k].backward_input + pr.t[k].backward_weight;
        c.activation_memory = pr.mem[k].activation;
        c.weight_memory = pr.mem[k].weight;
    }
    return out;
}


} // namespace pipesched
