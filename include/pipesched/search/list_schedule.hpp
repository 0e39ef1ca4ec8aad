// pipesched: list scheduling in time order, under a memory cap per stage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "problem.hpp"

namespace pipesched::detail::autosched {

/// List scheduling in time order: whenever a rank is free it runs what is ready, an I before an
/// F (or the reverse with forward_first), an F only when it fits in memory (W's first if they
/// make room), and a W when memory needs one, when the wait for the next input is at least
/// T_W long (fill = gaps) or whenever one is pending and nothing else is ready (fill = eager).
/// Ranks are committed in order of their next start, so every input that can arrive before a
/// decision is known when it is made. Adapts to any memory limit, including far below p.
enum class w_fill : std::uint8_t { lazy, gaps, eager };

inline order list_schedule(const problem& pr, const std::vector<double>& cap, bool forward_first, w_fill fill) {
    const std::uint32_t p = pr.p;
    const std::uint32_t m = pr.m;
    constexpr double never = std::numeric_limits<double>::infinity();
    order out(p);
    std::vector<std::uint32_t> nf(p, 0), ni(p, 0), nw(p, 0);
    std::vector<double> free(p, 0.0), memory(p, 0.0);
    std::vector<double> fend(std::size_t{p} * m, never), iend(std::size_t{p} * m, never);
    const auto at = [m](std::uint32_t s, std::uint32_t i) { return std::size_t{s} * m + i; };
    struct proposal {
        double start = never;
        kind what = kind::f;
    };
    const auto propose = [&](std::uint32_t s) {
        proposal best{};
        if (nw[s] == m) return best;
        double f_ready = never;
        if (nf[s] < m && within(memory[s] + pr.memory_change(s, kind::f), cap[s])) {
            f_ready = s == 0 ? 0.0 : fend[at(s - 1, nf[s])] + pr.comm;
        }
        double i_ready = never;
        if (ni[s] < nf[s]) {
            i_ready = s + 1 == p ? fend[at(s, ni[s])] : iend[at(s + 1, ni[s])] + pr.comm;
            if (!within(memory[s] + pr.memory_change(s, kind::i), cap[s])) i_ready = never;
        }
        const double f_start = std::max(free[s], f_ready);
        const double i_start = std::max(free[s], i_ready);
        if (i_start < f_start || (i_start == f_start && !forward_first && i_ready != never)) best = {i_start, kind::i};
        else if (f_ready != never) best = {f_start, kind::f};
        if (nw[s] < ni[s]) {
            const bool memory_bound = nf[s] < m && f_ready == never && i_ready == never;
            const bool nothing_else = best.start == never;
            const bool gap = best.start >= free[s] + pr.cost(s, kind::w);
            if (memory_bound || nothing_else || (fill == w_fill::gaps && gap) ||
                (fill == w_fill::eager && best.start > free[s])) {
                best = {free[s], kind::w};
            }
        }
        return best;
    };
    std::vector<proposal> next(p);
    for (std::uint32_t s = 0; s < p; ++s) next[s] = propose(s);
    for (std::size_t done = 0; done < 3 * std::size_t{p} * m; ++done) {
        std::uint32_t pick = p;
        for (std::uint32_t s = 0; s < p; ++s) {
            if (next[s].start != never && (pick == p || next[s].start < next[pick].start)) pick = s;
        }
        if (pick == p) return {}; // stuck (cannot happen with cap >= max(M_B, M_W))
        const proposal run = next[pick];
        const double end = run.start + pr.cost(pick, run.what);
        free[pick] = end;
        memory[pick] += pr.memory_change(pick, run.what);
        out[pick].push_back(run.what);
        if (run.what == kind::f) fend[at(pick, nf[pick]++)] = end;
        else if (run.what == kind::i) iend[at(pick, ni[pick]++)] = end;
        else ++nw[pick];
        next[pick] = propose(pick);
        if (pick > 0) next[pick - 1] = propose(pick - 1);
        if (pick + 1 < p) next[pick + 1] = propose(pick + 1);
    }
    return out;
}

} // namespace pipesched::detail::autosched
