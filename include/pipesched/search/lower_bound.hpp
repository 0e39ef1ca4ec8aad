// pipesched: a lower bound on the span of every schedule of a pipeline within per-rank memory
// limits, for one placement of its stages on the ranks (autoschedule() takes the smallest over
// the placements it searched).
//
// Model (the search's, search/problem.hpp, and the replay's, with split backward): S = p v
// global stages, stage s on rank rank(s) (shape.hpp's placement: loop, one stage per rank when
// v = 1, interleaved when v > 1; v_shape, rank r holding stages r and 2p-1-r). Microbatch i runs F(0, i) .. F(S-1, i), then
// I(S-1, i) .. I(0, i); W(s, i) after I(s, i). A dependency between two stages on different
// ranks adds c (p2p); on the same rank (the V's turn, every stage when p = 1) it adds nothing.
// Each rank runs its actions one at a time. Memory per rank: F(s) adds M_B(s), I(s) changes it
// by M_W(s) - M_B(s), W(s) releases M_W(s); after every action it is within the rank's limit L.
// A rank's span runs from its first action's start to its last action's end; the span is the
// largest. Within an op and a stage, microbatches may run in any order: the bound assumes no
// order.
//
// Notation for rank r: s0 its lowest stage; work_r = m sum over its stages of (T_F + T_I + T_W);
// P(s -> t) for s <= t the time from the start of F(s, i) to the start of F(t, i) (the T_F's of
// stages s .. t-1 and c per rank change); Q(s) the time from the end of F(S-1, i) to the start of
// I(s, i) (the T_I's of stages s+1 .. S-1 and c per rank change).
//
// Derivation, per rank r, with a = the start of its first action and b = the end of its last.
//  0. Feasibility. Right after F(s_max, i) (the rank's highest stage) every stage of the rank
//     holds microbatch i's activation: each I(s, i) needs F(S-1, i), which comes after. So a
//     schedule exists only if L_r >= sum of the rank's M_B; otherwise the bound is +infinity.
//  1. Work: b - a = work_r + idle_r, where idle_r is the time in [a, b] the rank runs nothing.
//  2. Head. The first action is an F of s0 (every action needs the F of s0 of its microbatch on
//     this rank before it). Any I(s, i) on the rank starts at least
//        D_r = min over its stages s of  P(s0 -> S-1) + T_F(S-1) + Q(s)
//     after a, since F(s0, i) started at or after a. So in [a, a + D_r) the rank runs only F's
//     (no W before an I), all of which it holds at once: their M_B's sum to at most L_r, at most
//     m per stage, and stage s's F's cannot start before a + P(s0 -> s), so they fill at most
//     D_r - P(s0 -> s) of the window. The largest F work U_r meeting these caps (integer when
//     the rank's stages have one M_B, else the fractional knapsack, an upper bound) leaves
//        head_r = max(0, D_r - U_r) idle.
//  3. Tail. Let F(s, i) be the rank's last F, ending at t_F. I(s0, i) cannot start before
//        t_F + D'_r,  D'_r = min over the rank's stages s of  P(s -> S-1) - T_F(s) + T_F(S-1) + Q(s0)
//     (the end of F(s, i) to the end of F(S-1, i), then back down to s0); in between the rank runs only I's and W's of pairs
//     (stage, microbatch) it holds at t_F, within L_r and with (s0, i) among them holding M_B(s0)
//     and giving no work there: a pair waiting for its I gives at most T_I + T_W and weighs M_B,
//     a pair waiting for its W gives T_W and weighs M_W, at most m pairs per stage (m - 1 on
//     s0). The largest work A_r of such a set (exact by enumeration when the rank's stages are
//     alike, else the linear relaxation through its Lagrangian dual: any multiplier gives an
//     upper bound) leaves  tail_r = max(0, D'_r - A_r) idle.
//  4. Both windows. If t_F >= a + D_r the windows [a, a + D_r) and [t_F, t_F + D'_r) are
//     disjoint: idle_r >= head_r + tail_r. That holds whenever the rank cannot hold all its F's
//     at once (m sum M_B > L_r: some I precedes the last F). Otherwise t_F < a + D_r is
//     possible only if all the F work Phi_r = m sum T_F fits before a + D_r, and then every F
//     comes before every I, t_F >= a + tau_r with tau_r = max over stages of P(s0 -> s) + T_F(s),
//     t_F >= a + Phi_r, and [a, t_F + D'_r) holds only Phi_r of F's and A_r of I's and W's:
//        idle_r >= max(D_r - Phi_r, max(tau_r, Phi_r) + D'_r - Phi_r - A_r, tail_r).
//     The bound takes the smaller of the two cases when the second one is possible.
//  5. Memory over time. Between the start of F(s, i) and the start of I(s, i) (at least the
//     round trip P(s -> S-1) + T_F(S-1) + Q(s)) the pair holds M_B(s);
//     until the start of W(s, i) (at least T_I(s) later) it holds M_W(s); all of it lies in
//     [a, b] and the rank holds at most L_r at every moment, so
//        L_r (b - a) >= m sum over stages of (M_B (T_F + round trip) + M_W T_I).
//  6. Across ranks. Every F of rank k precedes its last I (each F's own I comes after it), so
//     from a_k to the end e_k of its last I the rank runs all its F's and I's, the W's memory
//     forces before its last F (right after it every pair not through its W still weighs at
//     least min(M_B, M_W), so the T_W it may still owe is a knapsack within L_k), and the idle
//     of its windows (both lie before e_k). If all of k's stages come after s0 of rank r, the
//     microbatch of k's last I still needs I down to s0 on r, then W(s0) there, and a_k is at
//     least P(s0 -> lowest stage of k) after a_r:
//        span_r >= P(s0 -> s0(k)) + [k's F and I work + forced W + idle_k]
//                  + min over k's stages sigma of (the I's from sigma - 1 down to s0, with c)
//                  + T_W(s0).
//     This is what limits loop schedules at 2p activations with M_B = M_W: the last rank may
//     defer only 2p of its W's past its last F, and every other rank's last I waits for it.
//  Span >= max over ranks of max(work_r + idle_r, (5), (6)).
//
// For one stage per rank, steps 2-4 are the round trip each stage waits for at both ends (the
// head: R - n T_F with n = min(m, L / M_B) forwards; the tail: R - T_F less what the held
// microbatches' I's and W's fill; both when n < m, else the larger), made tighter by 5 and 6.
// What it does not see: a rank whose order makes the next one wait (the two compete for the same microbatch's F and I); the tests show where it is exact.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "../shape.hpp"
#include "problem.hpp"

namespace pipesched {

namespace detail::bound {

using autosched::problem;

inline constexpr double infinity = std::numeric_limits<double>::infinity();

[[nodiscard]] inline double whole(double x) noexcept { return std::floor(x + 1e-9); }
[[nodiscard]] inline bool above(double x, double limit) noexcept {
    return x > limit + 1e-9 * std::max(1.0, std::fabs(limit));
}

/// Prefix sums along the stage chain, so that every path length is a difference.
struct chain {
    std::vector<double> f, i, c; ///< sums over stages < s of T_F, T_I; c: p2p over rank changes s-1 -> s, s < index

    explicit chain(const problem& pr) : f(pr.stages() + 1, 0.0), i(pr.stages() + 1, 0.0), c(pr.stages() + 1, 0.0) {
        for (std::uint32_t s = 0; s < pr.stages(); ++s) {
            f[s + 1] = f[s] + pr.costs[s].forward;
            i[s + 1] = i[s] + pr.costs[s].backward_input;
            const bool change = s > 0 && pr.owner[s] != pr.owner[s - 1];
            c[s + 1] = c[s] + (change ? pr.comm : 0.0);
        }
    }
    /// Start of F(s, i) to start of F(t, i), s <= t.
    [[nodiscard]] double forward(std::uint32_t s, std::uint32_t t) const noexcept { return f[t] - f[s] + c[t + 1] - c[s + 1]; }
    /// End of F(S-1, i) to start of I(s, i).
    [[nodiscard]] double back(std::uint32_t s) const noexcept {
        const std::size_t n = f.size() - 1;
        return i[n] - i[s + 1] + c[n] - c[s + 1];
    }
    /// End of I(t, i) to the end of I(s, i), s <= t.
    [[nodiscard]] double backward(std::uint32_t t, std::uint32_t s) const noexcept { return i[t] - i[s] + c[t + 1] - c[s + 1]; }
    /// Start of F(s, i) to the start of I(t, i).
    [[nodiscard]] double trip(std::uint32_t s, std::uint32_t t) const noexcept {
        const auto last = static_cast<std::uint32_t>(f.size() - 2);
        return forward(s, last) + (f[last + 1] - f[last]) + back(t);
    }
};

/// Largest F work in the head window: items of value T_F and weight M_B, at most m per stage,
/// stage own[k]'s total capped at cap[k].
[[nodiscard]] inline double head_work(const problem& pr, std::span<const std::uint32_t> own, std::span<const double> cap,
                                      double m, double limit) {
    const double first = pr.costs[own[0]].activation_memory;
    bool alike = true;
    for (const std::uint32_t s : own) alike = alike && pr.costs[s].activation_memory == first;
    if (alike && first > 0.0) {
        // n whole F's: the n largest pieces (full F's, then one partial F per stage).
        double n = std::min(whole(limit / first), m * static_cast<double>(own.size()));
        struct piece { double value, count; };
        std::vector<piece> pieces;
        for (std::size_t k = 0; k < own.size(); ++k) {
            const double t = pr.costs[own[k]].forward;
            if (t <= 0.0 || cap[k] <= 0.0) continue;
            const double full = std::min(m, whole(cap[k] / t));
            pieces.push_back({t, full});
            if (full < m) pieces.push_back({cap[k] - full * t, 1.0});
        }
        std::sort(pieces.begin(), pieces.end(), [](const piece& x, const piece& y) { return x.value > y.value; });
        double work = 0.0;
        for (const piece& pc : pieces) {
            const double take = std::min(n, pc.count);
            work += take * pc.value;
            n -= take;
        }
        return work;
    }
    // Fractional knapsack on value: stage k's work costs M_B / T_F memory per unit.
    struct item { double density, amount; };
    std::vector<item> items;
    double free_work = 0.0;
    for (std::size_t k = 0; k < own.size(); ++k) {
        const double t = pr.costs[own[k]].forward, mb = pr.costs[own[k]].activation_memory;
        const double amount = std::min(m * t, std::max(0.0, cap[k]));
        if (amount <= 0.0) continue;
        if (mb <= 0.0) free_work += amount;
        else items.push_back({mb / t, amount});
    }
    std::sort(items.begin(), items.end(), [](const item& x, const item& y) { return x.density < y.density; });
    double room = limit;
    for (const item& it : items) {
        const double take = std::min(it.amount, room / it.density);
        free_work += take;
        room -= take * it.density;
        if (room <= 0.0) break;
    }
    return free_work;
}

/// Largest I and W work of the pairs a rank holds after its last F: per stage own[k], at most
/// n[k] pairs, each waiting for its I (T_I + T_W, weight M_B) or its W (T_W, weight M_W), total
/// weight within `room`.
[[nodiscard]] inline double tail_work(const problem& pr, std::span<const std::uint32_t> own, std::span<const double> n,
                                      double room) {
    const stage_costs& t0 = pr.costs[own[0]];
    const stage_costs& m0 = pr.costs[own[0]];
    bool alike = true;
    for (const std::uint32_t s : own) {
        alike = alike && pr.costs[s].backward_input == t0.backward_input && pr.costs[s].backward_weight == t0.backward_weight &&
                pr.costs[s].activation_memory == m0.activation_memory && pr.costs[s].weight_memory == m0.weight_memory;
    }
    if (alike) {
        // Exact: k pairs waiting for I, the rest of the room for pairs waiting for W.
        double total = 0.0;
        for (const double x : n) total += x;
        const double most_i = m0.activation_memory > 0.0 ? std::min(total, whole(room / m0.activation_memory)) : total;
        double best = 0.0;
        for (double k = 0.0; k <= most_i; k += 1.0) {
            const double left = room - k * m0.activation_memory;
            const double w = m0.weight_memory > 0.0 ? std::min(total - k, whole(left / m0.weight_memory)) : total - k;
            best = std::max(best, k * (t0.backward_input + t0.backward_weight) + std::max(0.0, w) * t0.backward_weight);
        }
        return best;
    }
    // Linear relaxation, bounded through its dual: for every multiplier y >= 0 of the memory
    // row, y room + sum_k n_k max(0, value - y weight over both kinds) is an upper bound; its
    // minimum lies at a breakpoint.
    std::vector<double> ys{0.0};
    for (const std::uint32_t s : own) {
        const double a = pr.costs[s].backward_input + pr.costs[s].backward_weight, b = pr.costs[s].backward_weight;
        const double mb = pr.costs[s].activation_memory, mw = pr.costs[s].weight_memory;
        if (mb > 0.0) ys.push_back(a / mb);
        if (mw > 0.0) ys.push_back(b / mw);
        if (mb != mw) {
            const double y = (a - b) / (mb - mw);
            if (y > 0.0 && std::isfinite(y)) ys.push_back(y);
        }
    }
    double best = infinity;
    for (const double y : ys) {
        double v = y * room;
        for (std::size_t k = 0; k < own.size(); ++k) {
            const stage_costs& t = pr.costs[own[k]];
            const stage_costs& mm = pr.costs[own[k]];
            const double a = t.backward_input + t.backward_weight - y * mm.activation_memory;
            const double b = t.backward_weight - y * mm.weight_memory;
            v += n[k] * std::max({0.0, a, b});
        }
        best = std::min(best, v);
    }
    return best;
}

/// Largest T_W work a rank can still owe right after its last F: pairs not yet through their W
/// weigh at least min(M_B, M_W) each, at most m per stage, within the limit.
[[nodiscard]] inline double unpaid_weight_work(const problem& pr, std::span<const std::uint32_t> own, double m,
                                               double limit) {
    struct item { double value, weight; };
    std::vector<item> items;
    double free_work = 0.0;
    bool alike = true;
    const double first = std::min(pr.costs[own[0]].activation_memory, pr.costs[own[0]].weight_memory);
    for (const std::uint32_t s : own) {
        const double weight = std::min(pr.costs[s].activation_memory, pr.costs[s].weight_memory);
        if (weight <= 0.0) free_work += m * pr.costs[s].backward_weight;
        else items.push_back({pr.costs[s].backward_weight, weight});
        alike = alike && weight == first;
    }
    if (items.empty()) return free_work;
    if (alike) {
        // n whole pairs: the n largest T_W's, m per stage.
        double n = whole(limit / items[0].weight);
        std::sort(items.begin(), items.end(), [](const item& x, const item& y) { return x.value > y.value; });
        for (const item& it : items) {
            const double take = std::min(n, m);
            free_work += take * it.value;
            n -= take;
        }
        return free_work;
    }
    std::sort(items.begin(), items.end(), [](const item& x, const item& y) { return x.value * y.weight > y.value * x.weight; });
    double room = limit;
    for (const item& it : items) {
        const double take = std::min(m, room / it.weight);
        free_work += take * it.value;
        room -= take * it.weight;
        if (room <= 0.0) break;
    }
    return free_work;
}

/// What one rank contributes (see the header comment, steps 0-6).
struct rank_facts {
    std::vector<std::uint32_t> stages{}; ///< ascending
    bool fits = true;                    ///< step 0
    double own = 0.0;                    ///< steps 1-5: the rank's own bound on its span
    /// Step 6: from the rank's first action to the end of its last I at least this.
    double until_last_i = 0.0;
};

[[nodiscard]] inline rank_facts summarise(const problem& pr, const chain& ch, std::uint32_t r) {
    const auto m = static_cast<double>(pr.m);
    const double limit = pr.limit(r);
    rank_facts out{};
    for (std::uint32_t k = 0; k < pr.v; ++k) out.stages.push_back(pr.stage(r, k));
    std::sort(out.stages.begin(), out.stages.end());
    const std::vector<std::uint32_t>& own = out.stages;
    const std::uint32_t s0 = own.front();
    const auto last = static_cast<std::uint32_t>(ch.f.size() - 2);

    double work = 0.0, forward_work = 0.0, weight_work = 0.0, holding = 0.0, lifetime = 0.0;
    for (const std::uint32_t s : own) {
        const stage_costs& t = pr.costs[s];
        work += pr.work(s);
        forward_work += m * t.forward;
        weight_work += m * t.backward_weight;
        holding += pr.costs[s].activation_memory;
        lifetime += m * (pr.costs[s].activation_memory * ch.trip(s, s) + pr.costs[s].weight_memory * t.backward_input);
    }
    if (above(holding, limit)) { // step 0
        out.fits = false;
        return out;
    }

    // Step 2: the head window.
    double d = infinity;
    for (const std::uint32_t s : own) d = std::min(d, ch.trip(s0, s));
    std::vector<double> cap(own.size());
    double tau = 0.0;
    for (std::size_t k = 0; k < own.size(); ++k) {
        cap[k] = d - ch.forward(s0, own[k]);
        tau = std::max(tau, ch.forward(s0, own[k]) + pr.costs[own[k]].forward);
    }
    const double head = std::max(0.0, d - std::min(d, head_work(pr, own, cap, m, limit)));

    // Step 3: the tail window.
    double d_tail = infinity;
    for (const std::uint32_t s : own) {
        // end of F(s, i) to the end of F(S-1, i), then back to I(s0, i)
        const double after = ch.forward(s, last) - (ch.f[s + 1] - ch.f[s]) + (ch.f[last + 1] - ch.f[last]);
        d_tail = std::min(d_tail, after + ch.back(s0));
    }
    std::vector<double> count(own.size(), m);
    count[0] = m - 1.0;
    const double available = tail_work(pr, own, count, limit - pr.costs[s0].activation_memory);
    const double tail = std::max(0.0, d_tail - available);

    // Step 4: both windows.
    double idle = head + tail;
    if (!above(m * holding, limit) && forward_work < d) {
        const double all_first = std::max({d - forward_work, std::max(tau, forward_work) + d_tail - forward_work - available, tail});
        idle = std::min(idle, all_first);
    }
    // Step 5: memory over time.
    const double by_memory = limit > 0.0 && std::isfinite(limit) ? lifetime / limit : 0.0;
    out.own = std::max(work + idle, by_memory);
    // Step 6: every F and I, the W's memory forces before the last F, and the windows' idle.
    const double forced_w = std::max(0.0, weight_work - unpaid_weight_work(pr, own, m, limit));
    out.until_last_i = work - weight_work + forced_w + idle;
    return out;
}

} // namespace detail::bound

namespace detail::autosched {

/// No order of `pr` (any placement, any microbatch order) within its limits has a shorter span;
/// +infinity when none fits (some rank's limit is below the activations of one microbatch in
/// all its chunks). O(p^2 v + p (v log v + v m)).
[[nodiscard]] inline double span_lower_bound(const problem& pr) {
    namespace bd = detail::bound;
    const bd::chain ch{pr};
    std::vector<bd::rank_facts> ranks;
    for (std::uint32_t r = 0; r < pr.p; ++r) {
        ranks.push_back(bd::summarise(pr, ch, r));
        if (!ranks.back().fits) return bd::infinity;
    }
    double bound = 0.0;
    for (std::uint32_t r = 0; r < pr.p; ++r) {
        const bd::rank_facts& here = ranks[r];
        bound = std::max(bound, here.own);
        // Step 6: a rank k whose stages all come after s0(r) delays r's last I and its W.
        const std::uint32_t s0 = here.stages.front();
        for (std::uint32_t k = 0; k < pr.p; ++k) {
            const bd::rank_facts& there = ranks[k];
            if (there.stages.front() <= s0) continue;
            double back = bd::infinity;
            for (const std::uint32_t sigma : there.stages) back = std::min(back, ch.backward(sigma, s0));
            bound = std::max(bound, ch.forward(s0, there.stages.front()) + there.until_last_i + back + pr.costs[s0].backward_weight);
        }
    }
    return bound;
}

/// "" if per-stage lists of these lengths describe p ranks with v chunks each, else why not.
[[nodiscard]] inline std::string stage_lists_error(const shape& s, const pipeline_costs& costs,
                                                   const pipeline_memory& memory, std::uint32_t v) {
    if (stage_list_fits(costs.per_stage.size(), s.ranks, v) && stage_list_fits(memory.per_stage.size(), s.ranks, v)) return {};
    return "per-stage lists of " + std::to_string(std::max(costs.per_stage.size(), memory.per_stage.size())) +
           " entries describe neither the " + std::to_string(s.ranks) + " ranks nor the " + std::to_string(s.ranks * v) +
           " stages of this placement";
}

} // namespace detail::autosched

/// "" if span_lower_bound() takes this input (autoschedule()'s: a shape with one chunk, costs
/// and memory per rank or per global stage of the placement), else what is wrong with it.
[[nodiscard]] inline std::string check_bound_input(const shape& s, const pipeline_costs& costs, const pipeline_memory& memory,
                                                   placement layout = placement::loop, std::uint32_t chunks = 1) {
    namespace as = detail::autosched;
    if (std::string e = as::check_input(s, costs, memory); !e.empty()) return e;
    if (chunks < 1 || chunks > 64) return "chunks per rank must be 1 .. 64";
    if (layout == placement::v_shape && chunks != 2) return "the V placement has 2 chunks per rank";
    return as::stage_lists_error(s, costs, memory, chunks);
}

/// No schedule of the model (autoschedule()'s input: `costs` and `memory` per rank, a chunk
/// taking 1/chunks of its rank's, or per global stage) in the placement `layout` with `chunks`
/// per rank within the limits has a shorter span. +infinity when none fits; NaN when
/// check_bound_input() refuses the input.
[[nodiscard]] inline double span_lower_bound(const shape& s, const pipeline_costs& costs, const pipeline_memory& memory,
                                             placement layout = placement::loop, std::uint32_t chunks = 1) {
    if (!check_bound_input(s, costs, memory, layout, chunks).empty()) return std::numeric_limits<double>::quiet_NaN();
    return detail::autosched::span_lower_bound(detail::autosched::make_problem(s, costs, memory, layout, chunks));
}

} // namespace pipesched
