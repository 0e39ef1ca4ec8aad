// pipesched: the search's one timing model. Every method that builds or scores an order (the
// evaluation, the heuristic, list scheduling, branch and bound) advances the same clock, so
// a rule of the pipeline is written here once:
//
//   - F(s, i) needs F(s-1, i), I(s, i) needs I(s+1, i) (the last stage's I its own F(s, i), the
//     loss turning around), each plus p2p when the two stages sit on different ranks (as
//     simulate() charges it); W(s, i) needs I(s, i), which ran before it on the same rank.
//   - A rank runs one action at a time: it starts at max(rank free, input ready).
//   - Memory per rank: F adds M_B of its stage, I releases M_B - M_W, W releases M_W.
//   - Within one (stage, kind), microbatches run in order.
//
// The state is per global stage (how many F, I, W ran; when each F and I ended) and per rank
// (when it is free, when it started, memory held and its peak). Copyable: branch and bound
// keeps one per node.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "problem.hpp"

namespace pipesched::detail::autosched {

class clock {
public:
    /// An end time not produced yet.
    static constexpr double missing = -1.0;

    explicit clock(const problem& pr)
        : pr_{&pr}, n_(3 * std::size_t{pr.stages()}, 0U), fend_(std::size_t{pr.stages()} * pr.m, missing),
          iend_(std::size_t{pr.stages()} * pr.m, missing), free_(pr.p, 0.0), first_(pr.p, missing), memory_(pr.p, 0.0),
          peak_(pr.p, 0.0), hop_f_(pr.stages(), 0.0), hop_i_(pr.stages(), 0.0) {
        const std::uint32_t stages = pr.stages();
        for (std::uint32_t s = 0; s < stages; ++s) {
            if (s > 0 && pr.owner[s - 1] != pr.owner[s]) hop_f_[s] = pr.comm;
            if (s + 1 < stages && pr.owner[s + 1] != pr.owner[s]) hop_i_[s] = pr.comm;
        }
    }

    /// Back to time 0 with nothing run.
    void reset() {
        std::fill(n_.begin(), n_.end(), 0U);
        std::fill(fend_.begin(), fend_.end(), missing);
        std::fill(iend_.begin(), iend_.end(), missing);
        std::fill(free_.begin(), free_.end(), 0.0);
        std::fill(first_.begin(), first_.end(), missing);
        std::fill(memory_.begin(), memory_.end(), 0.0);
        std::fill(peak_.begin(), peak_.end(), 0.0);
    }

    [[nodiscard]] const problem& pr() const noexcept { return *pr_; }

    /// How many of (s, k) ran: the microbatch of the next one.
    [[nodiscard]] std::uint32_t count(std::uint32_t s, kind k) const noexcept {
        return n_[3 * std::size_t{s} + static_cast<std::size_t>(k)];
    }
    /// Whether (s, k) may run next on its stage: fewer than m, an I after its F, a W after its I.
    [[nodiscard]] bool allowed(std::uint32_t s, kind k) const noexcept {
        const std::size_t b = 3 * std::size_t{s};
        if (k == kind::f) return n_[b] < pr_->m;
        if (k == kind::i) return n_[b + 1] < n_[b];
        return n_[b + 2] < n_[b + 1];
    }

    /// When the input of (s, k) for microbatch i is on s's rank; missing if not produced yet.
    [[nodiscard]] double arrival(std::uint32_t s, kind k, std::uint32_t i) const noexcept {
        if (k == kind::f) {
            if (s == 0) return 0.0;
            const double t = fend_[idx(s - 1, i)];
            return t == missing ? missing : t + hop_f_[s];
        }
        if (k == kind::i) {
            if (s + 1 == pr_->stages()) return fend_[idx(s, i)]; // the loss turns around
            const double t = iend_[idx(s + 1, i)];
            return t == missing ? missing : t + hop_i_[s];
        }
        return 0.0; // W: its I ran earlier on the same rank
    }
    /// The input of the next (s, k).
    [[nodiscard]] double ready(std::uint32_t s, kind k) const noexcept { return arrival(s, k, count(s, k)); }

    /// Runs the next (s, k) on its rank from max(free, ready); returns its end.
    double run(std::uint32_t s, kind k, double ready_at) noexcept {
        const std::uint32_t r = pr_->owner[s];
        const double start = std::max(ready_at, free_[r]);
        const double end = start + pr_->cost(s, k);
        if (first_[r] == missing) first_[r] = start;
        free_[r] = end;
        memory_[r] += pr_->memory_change(s, k);
        peak_[r] = std::max(peak_[r], memory_[r]);
        std::uint32_t& n = n_[3 * std::size_t{s} + static_cast<std::size_t>(k)];
        if (k == kind::f) fend_[idx(s, n)] = end;
        else if (k == kind::i) iend_[idx(s, n)] = end;
        ++n;
        return end;
    }

    [[nodiscard]] double free(std::uint32_t r) const noexcept { return free_[r]; }
    [[nodiscard]] double first(std::uint32_t r) const noexcept { return first_[r]; }
    [[nodiscard]] double memory(std::uint32_t r) const noexcept { return memory_[r]; }
    [[nodiscard]] const std::vector<double>& peaks() const noexcept { return peak_; }
    [[nodiscard]] double forward_end(std::uint32_t s, std::uint32_t i) const noexcept { return fend_[idx(s, i)]; }
    [[nodiscard]] double backward_end(std::uint32_t s, std::uint32_t i) const noexcept { return iend_[idx(s, i)]; }
    /// Whether rank r's memory stays within `cap` after (s, k) runs.
    [[nodiscard]] bool fits(std::uint32_t r, std::uint32_t s, kind k, double cap) const noexcept {
        return within(memory_[r] + pr_->memory_change(s, k), cap);
    }

private:
    [[nodiscard]] std::size_t idx(std::uint32_t s, std::uint32_t i) const noexcept { return std::size_t{s} * pr_->m + i; }

    const problem* pr_;
    std::vector<std::uint32_t> n_;   ///< per stage: F, I, W run
    std::vector<double> fend_, iend_; ///< per stage and microbatch
    std::vector<double> free_, first_, memory_, peak_; ///< per rank
    std::vector<double> hop_f_, hop_i_; ///< per stage: p2p into its F, into its I
};

} // namespace pipesched::detail::autosched
