// pipesched: the search's evaluation of an order: replays it on the problem's costs and memory
// (search/problem.hpp) with the one replay engine, and ranks results (span, makespan, sum of ends).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../analysis/replay.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

struct evaluation {
    bool legal = false;  ///< every action ran (no deadlock, no I before its F)
    bool fits = false;   ///< and every stage's peak is within its limit
    double span = 0.0;
    double makespan = 0.0;
    double end_sum = 0.0;
    std::vector<double> peak{};

    /// Lexicographic (span, makespan, sum of ends) with a relative tolerance.
    [[nodiscard]] bool better_than(const evaluation& o) const noexcept {
        const auto less = [](double a, double b) { return a < b - 1e-9 * std::max(1.0, std::fabs(b)); };
        if (less(span, o.span)) return true;
        if (less(o.span, span)) return false;
        if (less(makespan, o.makespan)) return true;
        if (less(o.makespan, makespan)) return false;
        return less(end_sum, o.end_sum);
    }
};

/// The replay of the cost definitions on an order, as a model of the one replay engine
/// (replay.hpp): a stage runs its order until an input is missing and is woken by the stage
/// that produces it. Buffers are kept between calls: the search evaluates thousands of orders.
class evaluator {
public:
    explicit evaluator(const problem& pr)
        : pr_{pr}, fend_(std::size_t{pr.p} * pr.m), iend_(std::size_t{pr.p} * pr.m),
          pos_(pr.p), nf_(pr.p), ni_(pr.p), nw_(pr.p), free_(pr.p), first_(pr.p), memory_(pr.p) {}

    evaluation run(const order& o) {
        evaluation out{};
        const std::uint32_t p = pr_.p;
        const std::uint32_t m = pr_.m;
        std::fill(fend_.begin(), fend_.end(), unset);
        std::fill(iend_.begin(), iend_.end(), unset);
        std::fill(pos_.begin(), pos_.end(), 0U);
        std::fill(nf_.begin(), nf_.end(), 0U);
        std::fill(ni_.begin(), ni_.end(), 0U);
        std::fill(nw_.begin(), nw_.end(), 0U);
        std::fill(free_.begin(), free_.end(), 0.0);
        std::fill(first_.begin(), first_.end(), unset);
        std::fill(memory_.begin(), memory_.end(), 0.0);
        out.peak.assign(p, 0.0);
        order_ = &o;
        out_ = &out;
        replay_engine<evaluator> engine{*this};
        if (!engine.run()) return out; // an impossible order (broken) or a deadlock
        for (std::uint32_t s = 0; s < p; ++s) {
            if (nw_[s] != m || ni_[s] != m || nf_[s] != m) return out;
        }
        out.legal = true;
        out.fits = true;
        for (std::uint32_t s = 0; s < p; ++s) {
            out.span = std::max(out.span, free_[s] - first_[s]);
            out.makespan = std::max(out.makespan, free_[s]);
            out.end_sum += free_[s];
            if (!within(out.peak[s], pr_.mem[s].limit)) out.fits = false;
        }
        return out;
    }

    /// Start times of the last run, per stage in order (for the timeline of the result).
    [[nodiscard]] double forward_end(std::uint32_t s, std::uint32_t i) const { return fend_[idx(s, i)]; }

    // The replay engine's model.
    [[nodiscard]] std::uint32_t ranks() const noexcept { return pr_.p; }
    [[nodiscard]] bool done(std::uint32_t s) const noexcept { return pos_[s] == (*order_)[s].size(); }

    /// Runs the next action of stage s: failed for an order that cannot be a schedule (an I
    /// before its F, a W before its I, more than m of a kind), blocked if its input is missing.
    template <class Engine>
    step_result step(std::uint32_t s, Engine& engine) {
        const std::vector<kind>& seq = (*order_)[s];
        const kind k = seq[pos_[s]];
        double ready = 0.0;
        if (k == kind::f) {
            const std::uint32_t i = nf_[s];
            if (i >= pr_.m) return step_result::failed;
            if (s > 0) {
                const double t = fend_[idx(s - 1, i)];
                if (t == unset) return step_result::blocked;
                ready = t + pr_.comm;
            }
        } else if (k == kind::i) {
            const std::uint32_t i = ni_[s];
            if (i >= nf_[s]) return step_result::failed;
            if (s + 1 == pr_.p) {
                ready = fend_[idx(s, i)];
            } else {
                const double t = iend_[idx(s + 1, i)];
                if (t == unset) return step_result::blocked;
                ready = t + pr_.comm;
            }
        } else if (nw_[s] >= ni_[s]) {
            return step_result::failed;
        }
        const double start = std::max(ready, free_[s]);
        const double end = start + pr_.cost(s, k);
        if (first_[s] == unset) first_[s] = start;
        free_[s] = end;
        memory_[s] += pr_.memory_change(s, k);
        out_->peak[s] = std::max(out_->peak[s], memory_[s]);
        if (k == kind::f) {
            fend_[idx(s, nf_[s]++)] = end;
            if (s + 1 < pr_.p) engine.wake(s + 1);
        } else if (k == kind::i) {
            iend_[idx(s, ni_[s]++)] = end;
            if (s > 0) engine.wake(s - 1);
        } else {
            ++nw_[s];
        }
        ++pos_[s];
        return pos_[s] == seq.size() ? step_result::finished : step_result::ran;
    }

private:
    static constexpr double unset = -1.0;
    [[nodiscard]] std::size_t idx(std::uint32_t s, std::uint32_t i) const noexcept {
        return std::size_t{s} * pr_.m + i;
    }

    const problem& pr_;
    std::vector<double> fend_, iend_;
    std::vector<std::uint32_t> pos_, nf_, ni_, nw_;
    std::vector<double> free_, first_, memory_;
    const order* order_ = nullptr;
    evaluation* out_ = nullptr;
};

} // namespace pipesched::detail::autosched
