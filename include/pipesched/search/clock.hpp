// pipesched: the search's clock. Every method that builds or scores an order (the evaluation,
// the heuristic, list scheduling, branch and bound) advances the same clock, which takes the
// rules of the pipeline from the library's timing model (analysis/timing_model.hpp: which
// stage's result an action needs, when it is usable on another rank, when an action starts):
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
// keeps one per node. basic_clock<false> is the same clock for one stage per rank (stage =
// rank, every neighbour on another rank), without the placement's look-ups: the evaluation
// of the search of that placement replays millions of actions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../analysis/timing_model.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

template <bool Chunked>
class basic_clock {
public:
    /// An end time not produced yet.
    static constexpr double missing = -1.0;

    explicit basic_clock(const problem& pr)
        : pr_{&pr}, m_{pr.m}, stages_{pr.stages()}, comm_{pr.comm}, n_(3 * std::size_t{pr.stages()}, 0U), fend_(std::size_t{pr.stages()} * pr.m, missing),
          iend_(std::size_t{pr.stages()} * pr.m, missing), free_(pr.p, 0.0), first_(pr.p, missing), memory_(pr.p, 0.0),
          peak_(pr.p, 0.0), same_f_(pr.stages(), 0), same_i_(pr.stages(), 0) {
        const std::uint32_t stages = pr.stages();
        for (std::uint32_t s = 0; s < stages; ++s) {
            if (s > 0 && pr.owner[s - 1] == pr.owner[s]) same_f_[s] = 1;
            if (s + 1 < stages && pr.owner[s + 1] == pr.owner[s]) same_i_[s] = 1;
        }
    }

    /// The rank that runs stage s.
    [[gnu::always_inline]] [[nodiscard]] std::uint32_t rank_of(std::uint32_t s) const noexcept {
        if constexpr (Chunked) {
            return pr_->owner[s];
        } else {
            return s;
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
    [[nodiscard]] std::uint32_t stages() const noexcept { return stages_; }

    /// How many of (s, k) ran: the microbatch of the next one.
    [[gnu::always_inline]] [[nodiscard]] std::uint32_t count(std::uint32_t s, kind k) const noexcept {
        return n_[3 * std::size_t{s} + static_cast<std::size_t>(k)];
    }
    /// Whether (s, k) may run next on its stage: fewer than m, an I after its F, a W after its I.
    [[gnu::always_inline]] [[nodiscard]] bool allowed(std::uint32_t s, kind k) const noexcept {
        const std::size_t b = 3 * std::size_t{s};
        if (k == kind::f) return n_[b] < m_;
        if (k == kind::i) return n_[b + 1] < n_[b];
        return n_[b + 2] < n_[b + 1];
    }

    /// When the input of (s, k) for microbatch i is on s's rank; missing if not produced yet.
    [[gnu::always_inline]] [[nodiscard]] double arrival(std::uint32_t s, kind k, std::uint32_t i) const noexcept {
        if (k == kind::f) return forward_input(s, i);
        if (k == kind::i) return backward_input(s, i);
        return 0.0; // W: its I ran earlier on the same rank
    }
    /// The input of the next (s, k).
    [[gnu::always_inline]] [[nodiscard]] double ready(std::uint32_t s, kind k) const noexcept { return arrival(s, k, count(s, k)); }

    /// Runs the next (s, k) on its rank from max(free, ready); returns its end.
    [[gnu::always_inline]] double run(std::uint32_t s, kind k, double ready_at) noexcept {
        const std::uint32_t r = rank_of(s);
        const double start = start_time(ready_at, free_[r]);
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

    enum class outcome : std::uint8_t { ran, blocked, failed };
    /// The next (s, k) if it may run (allowed) and its input is there (ready): what an order's
    /// replay does at every action, with the stage's counts read once.
    [[gnu::always_inline]] outcome try_run(std::uint32_t s, kind k) noexcept {
        const std::uint32_t* const n = &n_[3 * std::size_t{s}];
        double ready_at = 0.0;
        if (k == kind::f) {
            if (n[0] >= m_) return outcome::failed;
            ready_at = forward_input(s, n[0]);
            if (ready_at == missing) return outcome::blocked;
        } else if (k == kind::i) {
            if (n[1] >= n[0]) return outcome::failed;
            ready_at = backward_input(s, n[1]);
            if (ready_at == missing) return outcome::blocked;
        } else if (n[2] >= n[1]) {
            return outcome::failed;
        }
        run(s, k, ready_at);
        return outcome::ran;
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
    [[nodiscard]] std::size_t idx(std::uint32_t s, std::uint32_t i) const noexcept { return std::size_t{s} * m_ + i; }
    // An action's input, by the timing model's rules (analysis/timing_model.hpp): F(s, i) needs
    // the activation of F(upstream, i), I(s, i) the gradient of I(upstream, i), each usable
    // after p2p when the producer sits on another rank; the first stage has no activation to
    // wait for and the loss stage no gradient (its I follows its own F, which allowed() requires
    // to have run before it on the same rank).
    [[gnu::always_inline]] [[nodiscard]] double forward_input(std::uint32_t s, std::uint32_t i) const noexcept {
        if (!has_sender(tensor::activation, s, stages_)) return 0.0;
        const double t = fend_[idx(upstream_of(tensor::activation, s), i)];
        return t == missing ? missing : input_ready(t, same_rank_f(s), comm_);
    }
    [[gnu::always_inline]] [[nodiscard]] double backward_input(std::uint32_t s, std::uint32_t i) const noexcept {
        if (!has_sender(tensor::gradient, s, stages_)) return 0.0;
        const double t = iend_[idx(upstream_of(tensor::gradient, s), i)];
        return t == missing ? missing : input_ready(t, same_rank_i(s), comm_);
    }

    /// Whether F(s)'s producer, and I(s)'s, run on s's own rank (never, one stage per rank).
    [[nodiscard]] bool same_rank_f(std::uint32_t s) const noexcept {
        if constexpr (Chunked) {
            return same_f_[s] != 0;
        } else {
            return false;
        }
    }
    [[nodiscard]] bool same_rank_i(std::uint32_t s) const noexcept {
        if constexpr (Chunked) {
            return same_i_[s] != 0;
        } else {
            return false;
        }
    }

    const problem* pr_;
    std::uint32_t m_;
    std::uint32_t stages_;
    double comm_;
    std::vector<std::uint32_t> n_;   ///< per stage: F, I, W run
    std::vector<double> fend_, iend_; ///< per stage and microbatch
    std::vector<double> free_, first_, memory_, peak_; ///< per rank
    std::vector<std::uint8_t> same_f_, same_i_; ///< per stage: its F's, its I's producer on its rank
};

/// The clock of any placement.
using clock = basic_clock<true>;

} // namespace pipesched::detail::autosched
