// pipesched: branch and bound over every order of a small problem.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "problem.hpp"

namespace pipesched::detail::autosched {

/// Branch and bound over all orders (each letter in microbatch order per stage). Each stage in
/// turn (the lowest one without a pending choice) chooses its next letter; a choice whose input
/// is not there yet stays pending until it is, so every order is built along exactly one path.
class exact_search {
public:
    exact_search(const problem& pr, std::uint64_t node_limit) : pr_{pr}, limit_{node_limit} {
        const std::uint32_t p = pr.p;
        start_.stages.resize(p);
        start_.fend.assign(std::size_t{p} * pr.m, unset);
        start_.iend.assign(std::size_t{p} * pr.m, unset);
        first_.resize(p);
        double arrival = 0.0;
        for (std::uint32_t s = 0; s < p; ++s) {
            start_.stages[s].remaining = pr.work(s);
            first_[s] = arrival;
            arrival += pr.t[s].forward + pr.comm;
        }
    }

    /// Improves `best` (an incumbent with span `bound`); true if the search finished.
    bool run(order& best, double& bound) {
        best_ = &best;
        bound_ = bound;
        current_.assign(pr_.p, {});
        state s = start_;
        dfs(s);
        bound = bound_;
        return nodes_ <= limit_;
    }

private:
    static constexpr double unset = -1.0;
    static constexpr std::uint8_t none = 3;
    struct stage_state {
        std::uint32_t nf = 0, ni = 0, nw = 0;
        double free = 0.0;
        double first = unset;
        double memory = 0.0;
        double remaining = 0.0; ///< work not yet run (pending included)
        std::uint8_t pending = none;
    };
    struct state {
        std::vector<stage_state> stages;
        std::vector<double> fend, iend;
    };

    [[nodiscard]] double input_ready(const state& st, std::uint32_t s, kind k) const {
        const stage_state& ss = st.stages[s];
        const std::uint32_t m = pr_.m;
        if (k == kind::f) {
            if (s == 0) return 0.0;
            const double t = st.fend[std::size_t{s - 1} * m + ss.nf];
            return t == unset ? unset : t + pr_.comm;
        }
        if (k == kind::i) {
            if (s + 1 == pr_.p) return st.fend[std::size_t{s} * m + ss.ni];
            const double t = st.iend[std::size_t{s + 1} * m + ss.ni];
            return t == unset ? unset : t + pr_.comm;
        }
        return 0.0;
    }

    /// Runs every pending choice whose input exists, until none does.
    void settle(state& st) {
        bool moved = true;
        while (moved) {
            moved = false;
            for (std::uint32_t s = 0; s < pr_.p; ++s) {
                stage_state& ss = st.stages[s];
                if (ss.pending == none) continue;
                const kind k = static_cast<kind>(ss.pending);
                const double ready = input_ready(st, s, k);
                if (ready == unset) continue;
                const double start = std::max(ready, ss.free);
                const double cost = pr_.cost(s, k);
                if (ss.first == unset) ss.first = start;
                ss.free = start + cost;
                ss.remaining -= cost;
                if (k == kind::f) st.fend[std::size_t{s} * pr_.m + ss.nf++] = ss.free;
                else if (k == kind::i) st.iend[std::size_t{s} * pr_.m + ss.ni++] = ss.free;
                else ++ss.nw;
                ss.pending = none;
                moved = true;
            }
        }
    }

    /// Every stage's first action is F(s, 0), started as soon as it arrives, so the start of a
    /// stage's span is the same in every order; its end is at least (a) when the stage is free
    /// plus the work it has left, and (b) when its last I can end, one T_W later: that I needs
    /// the stage's remaining F and I work and the I of the stage below plus p2p.
    [[nodiscard]] double lower_bound(const state& st) const {
        double lb = 0.0;
        double last_i_below = 0.0;
        for (std::uint32_t s = pr_.p; s-- > 0;) {
            const stage_state& ss = st.stages[s];
            const double own_fi = static_cast<double>(pr_.m - ss.nf) * pr_.t[s].forward +
                                  static_cast<double>(pr_.m - ss.ni) * pr_.t[s].backward_input;
            double last_i = ss.free + own_fi;
            if (ss.ni < pr_.m && s + 1 < pr_.p) {
                last_i = std::max(last_i, last_i_below + pr_.comm + pr_.t[s].backward_input);
            }
            last_i_below = last_i;
            const double end = std::max(ss.free + ss.remaining,
                                        ss.ni < pr_.m ? last_i + pr_.t[s].backward_weight : 0.0);
            lb = std::max(lb, end - first_[s]);
        }
        return lb;
    }

    void dfs(state& st) {
        if (++nodes_ > limit_) return;
        if (lower_bound(st) >= bound_ - 1e-9 * std::max(1.0, bound_)) return;
        std::uint32_t s = 0;
        while (s < pr_.p && (st.stages[s].pending != none || st.stages[s].nw == pr_.m)) ++s;
        if (s == pr_.p) {
            for (const stage_state& ss : st.stages) {
                if (ss.pending != none) return; // every unfinished stage waits: deadlock
            }
            bound_ = lower_bound(st); // complete: the bound is the span
            *best_ = current_;
            return;
        }
        const stage_state& ss = st.stages[s];
        const stage_memory& mem = pr_.mem[s];
        for (const kind k : {kind::i, kind::f, kind::w}) {
            if (k == kind::f && ss.nf == pr_.m) continue;
            if (k == kind::i && ss.ni >= ss.nf) continue;
            if (k == kind::w && ss.nw >= ss.ni) continue;
            if (!within(ss.memory + pr_.memory_change(s, k), mem.limit)) continue;
            state next = st;
            next.stages[s].pending = static_cast<std::uint8_t>(k);
            next.stages[s].memory += pr_.memory_change(s, k);
            current_[s].push_back(k);
            settle(next);
            dfs(next);
            current_[s].pop_back();
            if (nodes_ > limit_) return;
        }
    }

    const problem& pr_;
    std::uint64_t limit_;
    std::uint64_t nodes_ = 0;
    state start_{};
    std::vector<double> first_{}; ///< start of every stage's span (the same in every order)
    order* best_ = nullptr;
    order current_{};
    double bound_ = 0.0;
};

} // namespace pipesched::detail::autosched
