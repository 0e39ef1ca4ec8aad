// pipesched: the Zero Bubble paper's greedy heuristic, one variant under a memory cap per stage.
//
// The published heuristic's ideas, implemented here from the paper's description and the
// authors' `zb.py` (sail-sg/zero-bubble-pipeline-parallelism): microbatch by microbatch, F on
// every stage top-down then I bottom-up; the first round's warm-up forwards on each stage as
// many as fit in memory and in the time until the first I returns (strictly fewer than the
// stage before); W placed only to free memory for the next F or I, or into the gap while the
// rank waits for an input, or, when that gap is within the largest bubble seen so far,
// optionally not at all; 2 x 2 x 2 variants (warm-up may or may not cross the first I's return;
// a stage may or may not skip its F to let the next stage catch up; a gap within the bubble
// budget is or is not filled). These eight are the authors' search.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "clock.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

/// The published greedy (see the header comment), one variant, under a memory cap per stage.
/// Returns an empty order when the variant cannot keep memory within the cap.
inline order greedy(const problem& pr, const std::vector<double>& cap, bool warmup_may_wait,
                    bool let_next_catch_up, bool fill_small_gaps) {
    const std::uint32_t p = pr.p;
    const std::uint32_t m = pr.m;
    order out(p);
    for (auto& seq : out) seq.reserve(3 * std::size_t{m});
    basic_clock<false> ck{pr}; // one stage per rank
    std::vector<double> bubble(p, 0.0);
    double max_bubble = 0.0;
    const auto nf = [&ck](std::uint32_t s) { return ck.count(s, kind::f); };
    const auto ni = [&ck](std::uint32_t s) { return ck.count(s, kind::i); };
    const auto nw = [&ck](std::uint32_t s) { return ck.count(s, kind::w); };
    const auto free = [&ck](std::uint32_t s) { return ck.free(s); };
    const auto memory = [&ck](std::uint32_t s) { return ck.memory(s); };
    // When the input of (s, k) for microbatch i arrives. The greedy decides stage by stage in
    // rounds and may look at an input another stage has not produced yet: it takes that as
    // produced at time 0 (the order is scored by the evaluation, which waits for it).
    const auto arrive = [&](std::uint32_t s, kind k, std::uint32_t i) {
        const double t = ck.arrival(s, k, i);
        if (t != basic_clock<false>::missing) return t;
        const bool from_other_stage = k != kind::w && has_sender(tensor_of(op_of(k)), s, p);
        return from_other_stage ? pr.comm : 0.0;
    };
    const auto put = [&](std::uint32_t s, kind k) {
        const double unblocked = free(s) + pr.cost(s, k);
        const double end = ck.run(s, k, k == kind::w ? 0.0 : arrive(s, k, ck.count(s, k)));
        if (nf(s) > (k == kind::f ? 1U : 0U)) {
            bubble[s] += end - unblocked;
            max_bubble = std::max(max_bubble, bubble[s]);
        }
        out[s].push_back(k);
    };
    // W's before an action on stage s whose input arrives at `arrival`: while one fits into the
    // wait, and one more if the wait would be a bubble larger than the budget (or always with
    // fill_small_gaps).
    const auto fill_gap = [&](std::uint32_t s, double arrival) {
        while (nw(s) < ni(s) && free(s) + pr.cost(s, kind::w) <= arrival) put(s, kind::w);
        if (nw(s) < ni(s) && free(s) < arrival) {
            if (arrival - free(s) > max_bubble - bubble[s] || fill_small_gaps) put(s, kind::w);
        }
    };
    // W's until `change` more memory fits; false if no W is left to run.
    const auto make_room = [&](std::uint32_t s, double change) {
        while (!within(memory(s) + change, cap[s])) {
            if (nw(s) >= ni(s)) return false;
            put(s, kind::w);
        }
        return true;
    };

    for (std::uint32_t i = 0; i < m; ++i) {
        if (i == 0) {
            for (std::uint32_t s = 0; s < p; ++s) {
                if (!make_room(s, pr.memory_change(s, kind::f))) return {};
                put(s, kind::f);
            }
            // Warm-up forwards, bottom-up: as many as memory allows before the first I comes back.
            std::vector<std::uint32_t> extra(p, 0);
            double returns = ck.forward_end(p - 1, 0) + pr.cost(p - 1, kind::i);
            for (std::uint32_t s = p - 1; s-- > 0;) {
                double mem = memory(s);
                double busy_until = free(s);
                while (nf(s) + extra[s] < m && within(mem + pr.memory_change(s, kind::f), cap[s])) {
                    if (warmup_may_wait ? busy_until + pr.cost(s, kind::f) > returns + pr.comm
                                        : busy_until >= returns + pr.comm) {
                        break;
                    }
                    mem += pr.memory_change(s, kind::f);
                    busy_until += pr.cost(s, kind::f);
                    ++extra[s];
                }
                returns = std::max(busy_until, returns + pr.comm) + pr.cost(s, kind::i);
            }
            for (std::uint32_t s = 1; s < p; ++s) {
                while (extra[s] > 0 && extra[s] >= extra[s - 1] && nf(s) + extra[s] < m) --extra[s];
            }
            for (std::uint32_t s = 0; s < p; ++s) {
                for (std::uint32_t k = 0; k < extra[s]; ++k) put(s, kind::f);
            }
            for (std::uint32_t s = p; s-- > 0;) {
                if (!make_room(s, pr.memory_change(s, kind::i))) return {};
                put(s, kind::i);
            }
            continue;
        }
        std::vector<std::uint8_t> wants_f(p, 0);
        for (std::uint32_t s = 0; s < p; ++s) {
            if (nf(s) >= m) continue;
            wants_f[s] = 1;
            if (!let_next_catch_up || s + 1 >= p || nf(s) < nf(s + 1) + 2) continue;
            // This stage is two forwards ahead of the next: run F only if it does not make the
            // next stage's F I round trip wait.
            const double next_round = free(s + 1) + pr.cost(s + 1, kind::f) + pr.cost(s + 1, kind::i) + pr.comm;
            if (free(s) >= next_round) {
                wants_f[s] = 0;
                continue;
            }
            double w_cost = 0.0;
            double mem = memory(s) + pr.memory_change(s, kind::f);
            for (std::uint32_t w = nw(s); !within(mem, cap[s]) && w < ni(s); ++w) {
                w_cost += pr.cost(s, kind::w);
                mem += pr.memory_change(s, kind::w);
            }
            if (free(s) + pr.cost(s, kind::f) + w_cost <= next_round) continue;
            if (next_round - free(s) <= max_bubble - bubble[s]) wants_f[s] = 0;
        }
        for (std::uint32_t s = p - 1; s-- > 0;) wants_f[s] = std::min(wants_f[s], wants_f[s + 1]);
        for (std::uint32_t s = 0; s < p; ++s) {
            if (wants_f[s] == 0) continue;
            if (!make_room(s, pr.memory_change(s, kind::f))) return {};
            if (s > 0) fill_gap(s, arrive(s, kind::f, nf(s)));
            put(s, kind::f);
        }
        for (std::uint32_t s = p; s-- > 0;) {
            if (!make_room(s, pr.memory_change(s, kind::i))) return {};
            if (s + 1 < p) fill_gap(s, arrive(s, kind::i, i));
            if (s == 0 && nf(s) == m) {
                while (nw(s) < ni(s)) put(s, kind::w);
            }
            put(s, kind::i);
        }
    }
    for (std::uint32_t s = 0; s < p; ++s) {
        while (nw(s) < m) put(s, kind::w);
    }
    return out;
}

} // namespace pipesched::detail::autosched
