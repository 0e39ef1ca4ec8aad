// pipesched: orders written from per-stage rules: 1F1B under a memory cap, the letters of a
// catalogued single-chunk policy, and per-stage templates (each stage its own warm-up count,
// number of deferred W's and W position; the paper's ILP varies exactly such per-stage orders)
// tuned by coordinate descent within a budget that counts evaluations.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../event.hpp"
#include "evaluation.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

/// One stage's order as a builder writes it: the letters so far, how many of each, and the
/// memory they hold (F adds M_B, I releases M_B - M_W, W releases M_W).
struct stage_order_builder {
    stage_order_builder(const problem& problem_, std::uint32_t stage_, double cap_, std::vector<task>& seq_)
        : pr{problem_}, s{stage_}, cap{cap_}, seq{seq_} {
        seq.reserve(3 * std::size_t{pr.m});
    }
    void run(kind k) {
        memory += pr.memory_change(s, k);
        seq.push_back(k);
        nf += k == kind::f;
        ni += k == kind::i;
        nw += k == kind::w;
    }
    /// Whether `k` can run next within the stage's memory limit.
    [[nodiscard]] bool fits(kind k) const noexcept { return within(memory + pr.memory_change(s, k), cap); }

    const problem& pr;
    std::uint32_t s;
    double cap;
    std::vector<task>& seq;
    std::uint32_t nf = 0, ni = 0, nw = 0;
    double memory = 0.0;
};

/// 1F1B under a memory cap: stage s keeps at most w_s + 1 forwards ahead of its I's, with
/// w_s = min(p-1-s, cap_s / M_B - 1), and runs a W as soon as more than `deferred(s)` are
/// pending or memory needs one. Below p activations the published greedy loses its rhythm;
/// this one only slows the pipeline to what the cap allows.
template <class Deferred>
order capped_one_f_one_b(const problem& pr, const std::vector<double>& cap, Deferred deferred) {
    order out(pr.p);
    for (std::uint32_t s = 0; s < pr.p; ++s) {
        const double per_f = pr.costs[s].activation_memory;
        const double fits = per_f > 0.0 ? std::floor(cap[s] / per_f + 1e-9) : static_cast<double>(pr.m);
        const auto in_flight = static_cast<std::uint32_t>(std::clamp(fits, 1.0, static_cast<double>(pr.p - s)));
        const std::uint32_t pending_w = deferred(s);
        stage_order_builder o{pr, s, cap[s], out[s]};
        std::uint32_t &nf = o.nf, &ni = o.ni, &nw = o.nw;
        const auto run = [&o](kind k) { o.run(k); };
        while (nw < pr.m) {
            if (nf < pr.m && nf - ni < in_flight) {
                while (!o.fits(kind::f) && nw < ni) run(kind::w);
                if (o.fits(kind::f)) {
                    run(kind::f);
                    continue;
                }
            }
            if (ni < nf) {
                while (!o.fits(kind::i) && nw < ni) run(kind::w);
                if (!o.fits(kind::i)) return {};
                run(kind::i);
                while (ni - nw > pending_w) run(kind::w);
                continue;
            }
            if (nw < ni) {
                run(kind::w);
                continue;
            }
            return {}; // cannot happen with cap >= max(M_B, M_W); refuse rather than loop
        }
    }
    return out;
}

/// The order of a catalogued policy on its own placement (the problem's): a full B becomes I
/// then W (the stage before gets its input gradient no later and the work is the same), an
/// overlapped pair's marker goes (its two actions run one after the other). Empty if the
/// policy has any other op. Microbatches are taken as they come: an order that runs them out
/// of order is scored as the search's order of the same letters.
template <class P>
order letters_of(const P& pol) {
    order out(pol.shape.ranks);
    for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
        for (auto c = pol.cursor(r); !c.done(); c.advance()) {
            const event e = c.current();
            const task f{kind::f, e.chunk}, i{kind::i, e.chunk}, w{kind::w, e.chunk};
            switch (e.kind) {
            case op::forward: out[r].push_back(f); break;
            case op::backward_input: out[r].push_back(i); break;
            case op::backward_weight: out[r].push_back(w); break;
            case op::backward:
                out[r].push_back(i);
                out[r].push_back(w);
                break;
            case op::overlap_f_b: break;
            default: return {};
            }
        }
    }
    return out;
}

/// Per-stage parameters of a templated order: `warmup` forwards before the first I, then
/// periods of I, F (or I, W, F) in which a W runs only when more than `deferred` are pending or
/// memory needs one; after the last F the remaining I's and W's with the same deferral, and the
/// deferred W's at the end. A later stage that defers its W's hands its I's back sooner, which
/// shortens the drain of every stage before it (the paper's ILP finds that shape; the greedy
/// cannot, since it decides W's from one global rule).
struct stage_template {
    std::uint32_t warmup = 1;
    std::uint32_t deferred = 0;
    bool w_before_f = false;
};

/// The order of a template; empty if memory cannot hold it.
inline order templated(const problem& pr, const std::vector<double>& cap, const std::vector<stage_template>& tp) {
    order out(pr.p);
    for (std::uint32_t s = 0; s < pr.p; ++s) {
        const stage_template& t = tp[s];
        stage_order_builder o{pr, s, cap[s], out[s]};
        std::uint32_t &nf = o.nf, &ni = o.ni, &nw = o.nw;
        const auto run = [&o](kind k) { o.run(k); };
        // W's until `k` fits; false if it cannot.
        const auto room = [&](kind k) {
            while (!o.fits(k)) {
                if (nw >= ni) return false;
                run(kind::w);
            }
            return true;
        };
        const auto deferred_ws = [&] {
            while (ni - nw > t.deferred) run(kind::w);
        };
        // Before the first I no W can free memory: the warm-up stops where memory is full.
        while (nf < pr.m && nf < t.warmup && o.fits(kind::f)) run(kind::f);
        while (ni < pr.m) {
            if (ni >= nf) { // warm-up cut short by memory: one F before its I
                if (!room(kind::f)) return {};
                run(kind::f);
            }
            if (!room(kind::i)) return {};
            run(kind::i);
            if (t.w_before_f) deferred_ws();
            if (nf < pr.m) {
                if (!room(kind::f)) return {};
                run(kind::f);
            }
            if (!t.w_before_f) deferred_ws();
        }
        while (nw < pr.m) run(kind::w);
    }
    return out;
}

/// Coordinate descent over the per-stage templates: for each stage in turn (last to first, where
/// the drain is decided), try a few warm-up and deferral changes and the W position, keep what
/// lowers (span, makespan, sum of ends), until a pass changes nothing or `budget` evaluations
/// are spent. Deterministic: the budget counts evaluations, not time.
template <class Evaluator>
void tune_templates(const problem& pr, Evaluator& ev, const std::vector<double>& cap,
                           std::vector<stage_template>& tp, order& best, evaluation& best_eval,
                           std::uint32_t budget) {
    std::uint32_t used = 0;
    const auto try_template = [&](std::vector<stage_template>& cand) {
        ++used;
        order o = templated(pr, cap, cand);
        if (o.empty()) return false;
        const evaluation e = ev.run(o);
        if (!e.legal || !e.fits || !e.better_than(best_eval)) return false;
        best = std::move(o);
        best_eval = e;
        tp = cand;
        return true;
    };
    const std::int64_t steps[] = {1, -1, 2, -2, 4, -4, 8, -8};
    bool improved = true;
    while (improved && used < budget) {
        improved = false;
        for (std::uint32_t s = pr.p; s-- > 0 && used < budget;) {
            for (int field = 0; field < 3 && used < budget; ++field) {
                if (field == 2) {
                    std::vector<stage_template> cand = tp;
                    cand[s].w_before_f = !cand[s].w_before_f;
                    improved = try_template(cand) || improved;
                    continue;
                }
                // The stage alone, or with every stage before it (warm-ups must not grow down
                // the pipeline, or the order deadlocks), or with every stage after it.
                bool done = false;
                for (int group = 0; group < 3 && !done && used < budget; ++group) {
                    if (group == 1 && s == 0) continue;
                    if (group == 2 && s + 1 == pr.p) continue;
                    for (const std::int64_t step : steps) {
                        if (used >= budget) break;
                        std::vector<stage_template> cand = tp;
                        const std::uint32_t lo = group == 1 ? 0 : s;
                        const std::uint32_t hi = group == 2 ? pr.p : s + 1;
                        bool ok = true;
                        for (std::uint32_t q = lo; q < hi && ok; ++q) {
                            std::uint32_t& value = field == 0 ? cand[q].warmup : cand[q].deferred;
                            const std::int64_t next = static_cast<std::int64_t>(value) + step;
                            ok = next >= (field == 0 ? 1 : 0) && next <= static_cast<std::int64_t>(pr.m);
                            if (ok) value = static_cast<std::uint32_t>(next);
                        }
                        if (ok && try_template(cand)) {
                            improved = true;
                            done = true;
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// Starting templates: the warm-up that covers the round trip to the first I (capped by memory),
/// with no W deferred, or with the later stages deferring what their memory allows.
inline std::vector<stage_template> round_trip_template(const problem& pr, const std::vector<double>& cap,
                                                       bool defer_late_stages) {
    std::vector<stage_template> tp(pr.p);
    std::vector<double> trip(pr.p, 0.0);
    for (std::uint32_t s = pr.p - 1; s-- > 0;) {
        trip[s] = trip[s + 1] + pr.costs[s + 1].forward + pr.costs[s + 1].backward_input + 2 * pr.comm;
    }
    for (std::uint32_t s = 0; s < pr.p; ++s) {
        const double wait = pr.costs[s].forward + trip[s]; // start of F(s, 0) to the earliest start of I(s, 0)
        const double f = std::max(pr.costs[s].forward, 1e-9);
        const double by_time = std::ceil(wait / f - 1e-9);
        const double mb = pr.costs[s].activation_memory;
        const double by_memory = mb > 0.0 ? std::floor(cap[s] / mb + 1e-9) : static_cast<double>(pr.m);
        const double w = std::clamp(std::min(by_time, by_memory), 1.0, static_cast<double>(pr.m));
        tp[s].warmup = static_cast<std::uint32_t>(w);
        if (defer_late_stages) {
            const double left = std::max(0.0, by_memory - w);
            tp[s].deferred = static_cast<std::uint32_t>(std::min(left, static_cast<double>(pr.m)));
        }
    }
    return tp;
}

} // namespace pipesched::detail::autosched
