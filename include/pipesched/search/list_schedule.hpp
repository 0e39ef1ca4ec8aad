// pipesched: list scheduling in time order, under a memory cap per stage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "clock.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

/// List scheduling in time order: whenever a rank is free it runs what is ready, an I before an
/// F (or the reverse with forward_first), an F only when it fits in memory (W's first if they
/// make room), and a W when memory needs one, when the wait for the next input is at least
/// T_W long (fill = gaps) or whenever one is pending and nothing else is ready (fill = eager).
/// Ranks are committed in order of their next start, so every input that can arrive before a
/// decision is known when it is made. Adapts to any memory limit, including far below p.
/// With several chunks per rank, among the chunks whose F (or I) could start at the same time
/// the deeper stage goes first (deeper_first) or the shallower one; a W is taken from the chunk
/// with the most W's pending.
enum class w_fill : std::uint8_t { lazy, gaps, eager };

template <class Clock>
order list_schedule_on(const problem& pr, const std::vector<double>& cap, bool forward_first, w_fill fill,
                       bool deeper_first) {
    const std::uint32_t p = pr.p;
    const std::uint32_t v = Clock::chunked ? pr.v : 1U; // a constant for one stage per rank
    const std::uint32_t m = pr.m;
    constexpr double never = std::numeric_limits<double>::infinity();
    order out(p);
    for (auto& seq : out) seq.reserve(3 * std::size_t{v} * m);
    Clock ck{pr};
    struct proposal {
        double start = never;
        task what{};
    };
    const auto input = [&](std::uint32_t s, kind k) {
        const double t = ck.ready(s, k);
        return t == Clock::missing ? never : t;
    };
    const auto propose = [&](std::uint32_t r) {
        proposal best{};
        const double free = ck.free(r);
        double f_ready = never, i_ready = never;
        std::uint32_t f_stage = 0, i_stage = 0;
        bool forwards_left = false;
        std::uint32_t w_stage = 0, w_pending = 0;
        // Among equal inputs the first chunk examined wins: deeper_first examines the deepest.
        for (std::uint32_t j = 0; j < v; ++j) {
            const std::uint32_t c = deeper_first ? v - 1 - j : j;
            const std::uint32_t s = v == 1 ? r : pr.stage(r, c);
            if (ck.allowed(s, kind::f)) {
                forwards_left = true;
                if (ck.fits(r, s, kind::f, cap[r])) {
                    const double t = input(s, kind::f);
                    if (t < f_ready || (v > 1 && t == f_ready && deeper_first == (s > f_stage))) {
                        f_ready = t;
                        f_stage = s;
                    }
                }
            }
            if (ck.allowed(s, kind::i) && ck.fits(r, s, kind::i, cap[r])) {
                const double t = input(s, kind::i);
                if (t < i_ready || (v > 1 && t == i_ready && deeper_first == (s > i_stage))) {
                    i_ready = t;
                    i_stage = s;
                }
            }
            const std::uint32_t pending = ck.count(s, kind::i) - ck.count(s, kind::w);
            if (pending > w_pending) {
                w_pending = pending;
                w_stage = s;
            }
        }
        const double f_start = std::max(free, f_ready);
        const double i_start = std::max(free, i_ready);
        const auto chunk = [&](std::uint32_t s) { return static_cast<std::uint8_t>(v == 1 ? 0 : pr.chunk_of(s)); };
        if (i_start < f_start || (i_start == f_start && !forward_first && i_ready != never)) {
            best = {i_start, task{kind::i, chunk(i_stage)}};
        } else if (f_ready != never) {
            best = {f_start, task{kind::f, chunk(f_stage)}};
        }
        if (w_pending > 0) {
            const bool memory_bound = forwards_left && f_ready == never && i_ready == never;
            const bool nothing_else = best.start == never;
            const bool gap = best.start >= free + pr.cost(w_stage, kind::w);
            if (memory_bound || nothing_else || (fill == w_fill::gaps && gap) ||
                (fill == w_fill::eager && best.start > free)) {
                best = {free, task{kind::w, chunk(w_stage)}};
            }
        }
        return best;
    };
    std::vector<proposal> next(p);
    for (std::uint32_t r = 0; r < p; ++r) next[r] = propose(r);
    const std::uint32_t stages = pr.stages();
    for (std::size_t done = 0; done < 3 * std::size_t{stages} * m; ++done) {
        std::uint32_t pick = p;
        for (std::uint32_t r = 0; r < p; ++r) {
            if (next[r].start != never && (pick == p || next[r].start < next[pick].start)) pick = r;
        }
        if (pick == p) return {}; // stuck (cannot happen with cap >= the smallest limit)
        const proposal run = next[pick];
        const std::uint32_t s = v == 1 ? pick : pr.stage(pick, run.what.chunk);
        ck.run(s, run.what.k, run.start);
        out[pick].push_back(run.what);
        // Only the ranks of this stage and of its neighbours (the stages it feeds, by the
        // timing model) can see a change.
        next[pick] = propose(pick);
        std::uint32_t reader = 0;
        if (ck.template reader<kind::i>(s, reader)) next[ck.rank_of(reader)] = propose(ck.rank_of(reader));
        if (ck.template reader<kind::f>(s, reader)) next[ck.rank_of(reader)] = propose(ck.rank_of(reader));
    }
    return out;
}

inline order list_schedule(const problem& pr, const std::vector<double>& cap, bool forward_first, w_fill fill,
                           bool deeper_first = true) {
    if (pr.v == 1 && pr.layout == placement::loop) {
        return list_schedule_on<basic_clock<false>>(pr, cap, forward_first, fill, deeper_first);
    }
    return list_schedule_on<clock>(pr, cap, forward_first, fill, deeper_first);
}

} // namespace pipesched::detail::autosched
