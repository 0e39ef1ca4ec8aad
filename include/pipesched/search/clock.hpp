// pipesched: the search's clock. Every method that builds or scores an order (the evaluation,
// the heuristic, list scheduling, branch and bound) advances the same clock, which takes the
// rules of the pipeline from the library's timing model (timing_model.hpp: which
// stage's result an action needs, when it is usable on another rank, when an action starts):
//
//   - F(s, i) needs F(s-1, i), I(s, i) needs I(s+1, i) (the last stage's I its own F(s, i), the
//     loss turning around), each plus p2p when the two stages sit on different ranks (as
//     simulate() charges it); W(s, i) needs I(s, i), which ran before it on the same rank.
//   - A rank runs one action at a time: it starts at max(rank free, input ready).
//   - Memory per rank: the timing model's memory rule (stage_costs::memory_change(): F adds
//     M_B of its stage, I releases M_B - M_W, W releases M_W).
//   - Within one (stage, kind), microbatches run in order.
//
// The state is per global stage (how many F, I, W ran; when each F and I ended) and per rank
// (the timing model's rank clock, the one simulate() runs: when it is free, when it started,
// memory held and its peak). Copyable: branch and bound
// keeps one per node. basic_clock<false> is the same clock for one stage per rank (stage =
// rank, every neighbour on another rank), without the placement's look-ups: the evaluation
// of the search of that placement replays millions of actions. For the same reason each
// stage's durations and memory changes are asked of the problem (the timing model's
// stage_costs) once, when the clock is made, and kept by kind beside the stage's counts, and
// the state of a rank sits in one record: an action reads a few records, not a dozen arrays.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../timing_model.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

template <bool Chunked>
class basic_clock {
public:
    /// An end time not produced yet.
    static constexpr double missing = -1.0;
    /// Whether stages are placed by the problem (false: stage = rank).
    static constexpr bool chunked = Chunked;

    explicit basic_clock(const problem& pr)
        : pr_{&pr}, m_{pr.m}, stages_{pr.stages()}, comm_{pr.comm}, stage_(pr.stages()),
          end_(2 * std::size_t{pr.stages()} * pr.m, missing), rank_(pr.p) {
        for (std::uint32_t s = 0; s < stages_; ++s) {
            stage_state& st = stage_[s];
            for (const kind k : {kind::f, kind::i, kind::w}) {
                st.cost[index(k)] = pr.cost(s, k);
                st.change[index(k)] = pr.memory_change(s, k);
            }
            std::uint32_t from = 0;
            st.same_rank_f = sender_stage(tensor::activation, s, stages_, from) && pr.owner[from] == pr.owner[s];
            st.same_rank_i = sender_stage(tensor::gradient, s, stages_, from) && pr.owner[from] == pr.owner[s];
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
        for (stage_state& st : stage_) st.n[0] = st.n[1] = st.n[2] = 0;
        std::fill(end_.begin(), end_.end(), missing);
        std::fill(rank_.begin(), rank_.end(), rank_state{});
    }

    [[nodiscard]] const problem& pr() const noexcept { return *pr_; }
    [[nodiscard]] std::uint32_t stages() const noexcept { return stages_; }

    /// How many of (s, k) ran: the microbatch of the next one.
    [[gnu::always_inline]] [[nodiscard]] std::uint32_t count(std::uint32_t s, kind k) const noexcept {
        return stage_[s].n[index(k)];
    }
    /// Whether (s, k) may run next on its stage: fewer than m, an I after its F, a W after its I.
    [[gnu::always_inline]] [[nodiscard]] bool allowed(std::uint32_t s, kind k) const noexcept {
        const std::uint32_t* const n = stage_[s].n;
        if (k == kind::f) return n[0] < m_;
        if (k == kind::i) return n[1] < n[0];
        return n[2] < n[1];
    }

    /// When the input of (s, k) for microbatch i is on s's rank; missing if not produced yet.
    [[gnu::always_inline]] [[nodiscard]] double arrival(std::uint32_t s, kind k, std::uint32_t i) const noexcept {
        double at = 0.0; // W: its I ran earlier on the same rank
        if (k == kind::f) return input<kind::f>(s, i, at) ? at : missing;
        if (k == kind::i) return input<kind::i>(s, i, at) ? at : missing;
        return at;
    }
    /// The stage that reads the result of (s, K), F or I (the timing model's receiver of its
    /// tensor: the next stage for F, the previous one for I); false if none does.
    template <kind K>
    [[gnu::always_inline]] [[nodiscard]] bool reader(std::uint32_t s, std::uint32_t& to) const noexcept {
        return receiver_stage(tensor_of(op_of(K)), s, stages_, to);
    }
    /// The input of the next (s, k).
    [[gnu::always_inline]] [[nodiscard]] double ready(std::uint32_t s, kind k) const noexcept { return arrival(s, k, count(s, k)); }

    /// Runs the next (s, k) on its rank from max(free, ready); returns its end.
    [[gnu::always_inline]] double run(std::uint32_t s, kind k, double ready_at) noexcept {
        stage_state& st = stage_[s];
        rank_state& rs = rank_[rank_of(s)];
        const double start = start_time(ready_at, rs.free_at);
        const double end = start + st.cost[index(k)];
        rs.run(op_of(k), start, end, st.change[index(k)]);
        std::uint32_t& n = st.n[index(k)];
        if (k == kind::f) {
            end_[at(s, n, kind::f)] = end;
        } else if (k == kind::i) {
            end_[at(s, n, kind::i)] = end;
        }
        ++n;
        return end;
    }

    enum class outcome : std::uint8_t { ran, blocked, failed };
    /// The next (s, k) if it may run (allowed) and its input is there (ready): what an order's
    /// replay does at every action, with the stage's counts read once.
    [[gnu::always_inline]] outcome try_run(std::uint32_t s, kind k) noexcept {
        const std::uint32_t* const n = stage_[s].n;
        double ready_at = 0.0;
        if (k == kind::f) {
            if (n[0] >= m_) return outcome::failed;
            if (!input<kind::f>(s, n[0], ready_at)) return outcome::blocked;
        } else if (k == kind::i) {
            if (n[1] >= n[0]) return outcome::failed;
            if (!input<kind::i>(s, n[1], ready_at)) return outcome::blocked;
        } else if (n[2] >= n[1]) {
            return outcome::failed;
        }
        run(s, k, ready_at);
        return outcome::ran;
    }

    [[nodiscard]] double free(std::uint32_t r) const noexcept { return rank_[r].free_at; }
    /// When rank r started its first action; missing if it ran none.
    [[nodiscard]] double first(std::uint32_t r) const noexcept { return rank_[r].started ? rank_[r].first_start : missing; }
    [[nodiscard]] double memory(std::uint32_t r) const noexcept { return rank_[r].memory; }
    /// Every rank's peak memory.
    [[nodiscard]] std::vector<double> peaks() const {
        std::vector<double> out(rank_.size(), 0.0);
        for (std::size_t r = 0; r < rank_.size(); ++r) out[r] = rank_[r].peak_memory;
        return out;
    }
    [[nodiscard]] double forward_end(std::uint32_t s, std::uint32_t i) const noexcept { return end_[at(s, i, kind::f)]; }
    [[nodiscard]] double backward_end(std::uint32_t s, std::uint32_t i) const noexcept { return end_[at(s, i, kind::i)]; }
    /// Whether rank r's memory stays within `cap` after (s, k) runs.
    [[nodiscard]] bool fits(std::uint32_t r, std::uint32_t s, kind k, double cap) const noexcept {
        return within(rank_[r].memory + stage_[s].change[index(k)], cap);
    }

private:
    /// A stage's counts, with its durations and memory changes by kind (from the problem, once).
    struct stage_state {
        std::uint32_t n[3] = {0, 0, 0}; ///< F, I, W run
        double cost[3] = {0.0, 0.0, 0.0};
        double change[3] = {0.0, 0.0, 0.0};
        bool same_rank_f = false; ///< its F's producer runs on its rank
        bool same_rank_i = false; ///< its I's producer runs on its rank
    };
    /// A rank: the timing model's rank clock, without the replay's summary.
    using rank_state = basic_rank_clock<false>;

    [[gnu::always_inline]] static constexpr std::size_t index(kind k) noexcept { return static_cast<std::size_t>(k); }
    /// Where the end of (s, F or I) of microbatch i is kept: F and I of one unit side by side.
    [[gnu::always_inline]] [[nodiscard]] std::size_t at(std::uint32_t s, std::uint32_t i, kind k) const noexcept {
        return 2 * (std::size_t{s} * m_ + i) + (k == kind::i ? 1 : 0);
    }
    // An action's input, by the timing model's rules (timing_model.hpp): F(s, i) needs
    // the activation of F(upstream, i), I(s, i) the gradient of I(upstream, i), each usable
    // after p2p when the producer sits on another rank; the first stage has no activation to
    // wait for and the loss stage no gradient (its I follows its own F, which allowed() requires
    // to have run before it on the same rank). False while the producer has not run
    // (`at_time` is then unchanged); the test is on its end, before any latency is added, so
    // that the replay asks it once.
    template <kind K> // F or I
    [[gnu::always_inline]] bool input(std::uint32_t s, std::uint32_t i, double& at_time) const noexcept {
        constexpr tensor needed = tensor_of(op_of(K));
        if (!has_sender(needed, s, stages_)) return true;
        const double t = end_[at(upstream_of(needed, s), i, K)];
        if (t == missing) return false;
        at_time = input_ready(t, same_rank<K>(s), comm_);
        return true;
    }

    /// Whether the producer of (s, K)'s input runs on s's own rank (never, one stage per rank).
    template <kind K>
    [[nodiscard]] bool same_rank(std::uint32_t s) const noexcept {
        if constexpr (Chunked) {
            return K == kind::f ? stage_[s].same_rank_f : stage_[s].same_rank_i;
        } else {
            return false;
        }
    }

    const problem* pr_;
    std::uint32_t m_;
    std::uint32_t stages_;
    double comm_;
    std::vector<stage_state> stage_;
    std::vector<double> end_; ///< per stage, microbatch and F or I (at())
    std::vector<rank_state> rank_;
};

/// The clock of any placement.
using clock = basic_clock<true>;

} // namespace pipesched::detail::autosched
