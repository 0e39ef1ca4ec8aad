// pipesched: the search's evaluation of an order: replays it on the problem's costs and memory
// (search/problem.hpp) with the one replay engine, and ranks results (span, makespan, sum of ends).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../analysis/replay.hpp"
#include "clock.hpp"
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

/// An order replayed on the search's clock (clock.hpp) by the one replay engine (replay.hpp): a
/// rank runs its order until an input is missing and is woken by the rank that produces it.
/// Buffers are kept between calls: the search evaluates thousands of orders. Chunked = false:
/// one stage per rank only (basic_clock<false>).
template <bool Chunked = true>
class basic_evaluator {
public:
    explicit basic_evaluator(const problem& pr) : pr_{pr}, clock_{pr}, pos_(pr.p, 0U) {}

    evaluation run(const order& o) {
        evaluation out{};
        const std::uint32_t p = pr_.p;
        clock_.reset();
        std::fill(pos_.begin(), pos_.end(), 0U);
        order_ = &o;
        replay_engine<basic_evaluator> engine{*this};
        if (!engine.run()) return out; // an impossible order (broken) or a deadlock
        const std::uint32_t stages = pr_.stages();
        for (std::uint32_t s = 0; s < stages; ++s) {
            if (clock_.count(s, kind::w) != pr_.m || clock_.count(s, kind::i) != pr_.m || clock_.count(s, kind::f) != pr_.m) {
                return out;
            }
        }
        out.legal = true;
        out.fits = true;
        out.peak = clock_.peaks();
        for (std::uint32_t r = 0; r < p; ++r) {
            out.span = std::max(out.span, clock_.free(r) - clock_.first(r));
            out.makespan = std::max(out.makespan, clock_.free(r));
            out.end_sum += clock_.free(r);
            if (!within(out.peak[r], pr_.limit(r))) out.fits = false;
        }
        return out;
    }

    /// The clock after the last run.
    [[nodiscard]] const basic_clock<Chunked>& timing() const noexcept { return clock_; }

    // The replay engine's model.
    [[nodiscard]] std::uint32_t ranks() const noexcept { return pr_.p; }
    [[nodiscard]] bool done(std::uint32_t r) const noexcept { return pos_[r] == (*order_)[r].size(); }

    /// Runs the actions of rank r until one is blocked (its input is missing) or the rank is
    /// done; failed for an order that cannot be a schedule (an I before its F, a W before its I,
    /// more than m of a kind). One loop per turn keeps the rank's position in a register.
    template <class Engine>
    step_result run_turn(std::uint32_t r, std::uint32_t /*turn: always until blocked*/, Engine& engine) {
        const std::vector<task>& seq = (*order_)[r];
        const std::size_t n = seq.size();
        const std::uint32_t stages = clock_.stages();
        std::size_t pos = pos_[r];
        step_result out = step_result::ran;
        while (true) {
            const task a = seq[pos];
            std::uint32_t s = r;
            if constexpr (Chunked) s = pr_.stage(r, a.chunk);
            const auto done_here = clock_.try_run(s, a.k);
            if (done_here != basic_clock<Chunked>::outcome::ran) {
                out = done_here == basic_clock<Chunked>::outcome::failed ? step_result::failed : step_result::blocked;
                break;
            }
            // Wake the rank of the stage that reads the result (the timing model's receiver;
            // one branch per tensor, so that the rule folds to its one compare with `stages`
            // in a register).
            std::uint32_t reader = 0;
            if (a.k == kind::f) {
                if (receiver_stage(tensor::activation, s, stages, reader)) engine.wake(clock_.rank_of(reader));
            } else if (a.k == kind::i) {
                if (receiver_stage(tensor::gradient, s, stages, reader)) engine.wake(clock_.rank_of(reader));
            }
            if (++pos == n) {
                out = step_result::finished;
                break;
            }
        }
        pos_[r] = pos;
        return out;
    }

private:
    const problem& pr_;
    basic_clock<Chunked> clock_;
    std::vector<std::size_t> pos_;
    const order* order_ = nullptr;
};

/// The evaluation of any placement.
using evaluator = basic_evaluator<true>;

} // namespace pipesched::detail::autosched
