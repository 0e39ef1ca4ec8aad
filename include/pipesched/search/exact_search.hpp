// pipesched: branch and bound over every order of a small problem, in any placement.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "clock.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

/// Branch and bound over all orders (each (chunk, kind) in microbatch order on its stage). Each
/// rank in turn (the lowest one without a pending choice) chooses its next action; a choice
/// whose input is not there yet stays pending until it is, so every order is built along
/// exactly one path. Times come from the search's clock.
class exact_search {
public:
    exact_search(const problem& pr, std::uint64_t node_limit)
        : pr_{pr}, limit_{node_limit}, start_{clock{pr}, std::vector<rank_state>(pr.p)}, first_(pr.p, 0.0) {
        // Every rank's first action is F of its first chunk's stage, microbatch 0 (everything
        // else on the rank depends on it), started as soon as it arrives: the start of a rank's
        // span is the same in every order.
        double arrival = 0.0;
        for (std::uint32_t r = 0; r < pr.p; ++r) {
            start_.ranks[r].remaining = pr.rank_work(r);
            first_[r] = arrival;
            arrival += pr.costs[pr.stage(r, 0)].forward + pr.comm;
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
    struct rank_state {
        double remaining = 0.0; ///< work not yet run (pending included)
        bool has_pending = false;
        task pending{};
    };
    struct state {
        clock ck;
        std::vector<rank_state> ranks;
    };

    [[nodiscard]] std::uint32_t stage_of_task(std::uint32_t r, task a) const noexcept {
        return pr_.v == 1 ? r : pr_.stage(r, a.chunk);
    }

    /// Runs every pending choice whose input exists, until none does.
    void settle(state& st) {
        bool moved = true;
        while (moved) {
            moved = false;
            for (std::uint32_t r = 0; r < pr_.p; ++r) {
                rank_state& rs = st.ranks[r];
                if (!rs.has_pending) continue;
                const std::uint32_t s = stage_of_task(r, rs.pending);
                const double ready = st.ck.ready(s, rs.pending.k);
                if (ready == clock::missing) continue;
                st.ck.run(s, rs.pending.k, ready);
                rs.remaining -= pr_.cost(s, rs.pending.k);
                rs.has_pending = false;
                moved = true;
            }
        }
    }

    /// A rank's end is at least (a) when it is free plus the work it has left, and (b) for each
    /// of its stages with I's left, when that stage's last I can end, one T_W later: that I needs
    /// the stage's remaining F and I work and the last I of the stage after it plus p2p.
    [[nodiscard]] double lower_bound(const state& st) const {
        const clock& ck = st.ck;
        ends_.resize(pr_.p);
        for (std::uint32_t r = 0; r < pr_.p; ++r) ends_[r] = ck.free(r) + st.ranks[r].remaining;
        double last_i_below = 0.0;
        const std::uint32_t stages = pr_.stages();
        for (std::uint32_t s = stages; s-- > 0;) {
            const std::uint32_t r = pr_.owner[s];
            const std::uint32_t ni = ck.count(s, kind::i);
            double last_i = 0.0;
            if (ni == pr_.m) {
                last_i = ck.backward_end(s, pr_.m - 1);
            } else {
                const std::uint32_t nf = ck.count(s, kind::f);
                last_i = ck.free(r) + static_cast<double>(pr_.m - nf) * pr_.costs[s].forward +
                         static_cast<double>(pr_.m - ni) * pr_.costs[s].backward_input;
                std::uint32_t below = 0; // the stage that sends s its gradient
                if (sender_stage(tensor::gradient, s, stages, below)) {
                    const double hop = pr_.owner[below] == r ? 0.0 : pr_.comm;
                    last_i = std::max(last_i, last_i_below + hop + pr_.costs[s].backward_input);
                }
                ends_[r] = std::max(ends_[r], last_i + pr_.costs[s].backward_weight);
            }
            last_i_below = last_i;
        }
        double lb = 0.0;
        for (std::uint32_t r = 0; r < pr_.p; ++r) lb = std::max(lb, ends_[r] - first_[r]);
        return lb;
    }

    [[nodiscard]] bool finished(const state& st, std::uint32_t r) const noexcept {
        for (std::uint32_t c = 0; c < pr_.v; ++c) {
            if (st.ck.count(pr_.stage(r, c), kind::w) != pr_.m) return false;
        }
        return true;
    }

    void dfs(state& st) {
        if (++nodes_ > limit_) return;
        if (lower_bound(st) >= bound_ - 1e-9 * std::max(1.0, bound_)) return;
        std::uint32_t r = 0;
        while (r < pr_.p && (st.ranks[r].has_pending || finished(st, r))) ++r;
        if (r == pr_.p) {
            for (const rank_state& rs : st.ranks) {
                if (rs.has_pending) return; // every unfinished rank waits: deadlock
            }
            bound_ = lower_bound(st); // complete: the bound is the span
            *best_ = current_;
            return;
        }
        const double limit = pr_.limit(r);
        for (const kind k : {kind::i, kind::f, kind::w}) {
            for (std::uint32_t c = 0; c < pr_.v; ++c) {
                const std::uint32_t s = pr_.stage(r, c);
                if (!st.ck.allowed(s, k) || !st.ck.fits(r, s, k, limit)) continue;
                const task a{k, static_cast<std::uint8_t>(c)};
                state next = st;
                next.ranks[r].has_pending = true;
                next.ranks[r].pending = a;
                current_[r].push_back(a);
                settle(next);
                dfs(next);
                current_[r].pop_back();
                if (nodes_ > limit_) return;
            }
        }
    }

    const problem& pr_;
    std::uint64_t limit_;
    std::uint64_t nodes_ = 0;
    state start_;
    std::vector<double> first_{}; ///< start of every rank's span (the same in every order)
    mutable std::vector<double> ends_{};
    order* best_ = nullptr;
    order current_{};
    double bound_ = 0.0;
};

} // namespace pipesched::detail::autosched
