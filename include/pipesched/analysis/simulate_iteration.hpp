// pipesched: replay one whole iteration (see iteration.hpp) on a cost model with
// communication.
//
// Each rank has a compute stream that runs its events in order, and a data-parallel
// communication stream for grad_sync and param_gather (FIFO, one at a time):
//   - F, B, I, W, recompute, loss, optimizer_step take their duration on the compute stream;
//   - send_* posts at once and arrives after the p2p link time; recv_* blocks the compute
//     stream until the tensor has arrived (the part of that wait after the send was posted is
//     exposed p2p time, the part before it is pipeline bubble);
//   - grad_sync is launched on the communication stream and overlaps whatever compute follows;
//   - grad_norm first waits for every grad_sync of the rank (that wait is exposed grad_sync
//     time), then runs as a collective of all pipeline ranks: it starts when the last rank
//     reaches it; optimizer_step without a grad_norm waits for the grad_syncs the same way;
//   - param_gather waits for the communication stream and blocks until done (exposed in full);
//   - an overlapped pair (overlap_f_b marker, F, B/I; its receives come before the marker)
//     runs as one computation of costs.overlapped(F, stage, B, stage) when the cost object has
//     that member (iteration_cost_model: the compute cost_model's overlapped(), by default
//     F + B), else duration(F) + duration(B).
// Peak activations count (chunk, microbatch) units between F and the end of B, or of W for a
// split backward, as in simulate.hpp.
//
// The replay also runs on orders validate() calls stale (an optimizer before the backward, as
// SimAI's row sweep does), so that their timing can be compared; only orders that cannot be
// replayed (a deadlock, unmatched p2p, broken compute) are refused. The verdict is returned
// either way. It is validate(iteration)'s, with this replay as the deadlock check; without a
// timeline sink the rules are checked in one pass first (detail::checked_iteration_replay),
// and for an iteration<P> by validate(iteration)'s shortcut (detail::valid_by_construction,
// without its replay) before that.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "../detail/enum_table.hpp"
#include "../event.hpp"
#include "../iteration.hpp"
#include "../policy.hpp"
#include "../shape.hpp"
#include "../stage_map.hpp"
#include "simulate.hpp"
#include "validate_iteration.hpp"

namespace pipesched {

/// A link: latency plus bytes over bandwidth (bytes per time unit; 0 means infinitely fast).
struct link_costs {
    double latency = 0.0;
    double bandwidth = 0.0;
    /// A negative or NaN bandwidth gives NaN, which the replay refuses (invalid_cost).
    [[nodiscard]] constexpr double time(double bytes) const noexcept {
        if (bandwidth > 0.0) return latency + bytes / bandwidth;
        return bandwidth == 0.0 ? latency : std::numeric_limits<double>::quiet_NaN();
    }
};

/// Costs of every op of an iteration. A custom cost object only needs the two member functions
/// duration() and transfer() (see the iteration_costs concept).
struct iteration_cost_model {
    cost_model compute{};          ///< F, B, I, W per stage (its p2p_latency and fill are unused)
    double recompute = -1.0;       ///< < 0: the stage's forward time
    double loss = 0.0;
    double optimizer = 0.0;
    link_costs p2p{};
    double activation_bytes = 0.0; ///< one microbatch's activation (and its gradient)
    link_costs data_parallel{};
    double gradient_bytes = 0.0;   ///< one chunk's gradients, reduced by grad_sync
    double parameter_bytes = 0.0;  ///< one rank's parameters, gathered by param_gather
    double grad_norm = 0.0;        ///< the norm all-reduce (small: latency dominated)

    /// Time on the compute stream.
    [[nodiscard]] constexpr double duration(const event& e, std::uint32_t stage) const noexcept {
        const action a{stage, e.kind, e.microbatch};
        switch (e.kind) {
        case op::forward:
        case op::backward:
        case op::backward_input:
        case op::backward_weight: return compute.duration(a);
        case op::recompute: // < 0: the forward's time; a NaN is passed on for the replay to refuse
            return recompute >= 0.0 || recompute != recompute ? recompute
                                                               : compute.duration({stage, op::forward, 0});
        case op::loss: return loss;
        case op::optimizer_step: return optimizer;
        default: return 0.0;
        }
    }
    /// Time of an overlapped pair on the compute stream (cost_model::overlapped).
    [[nodiscard]] constexpr double overlapped(const event& f, std::uint32_t f_stage, const event& b,
                                              std::uint32_t b_stage) const noexcept {
        return compute.overlapped(action{f_stage, f.kind, f.microbatch},
                                  action{b_stage, b.kind, b.microbatch});
    }
    /// Time on a link or communication stream.
    [[nodiscard]] constexpr double transfer(const event& e, std::uint32_t) const noexcept {
        switch (e.kind) {
        case op::send_activation:
        case op::send_gradient: return p2p.time(activation_bytes);
        case op::grad_sync: return data_parallel.time(gradient_bytes);
        case op::param_gather: return data_parallel.time(parameter_bytes);
        case op::grad_norm: return grad_norm;
        default: return 0.0;
        }
    }
};

template <class C>
concept iteration_costs = requires(const C& c, const event& e, std::uint32_t stage) {
    { c.duration(e, stage) } -> std::convertible_to<double>;
    { c.transfer(e, stage) } -> std::convertible_to<double>;
};

/// Communication kinds whose waiting time is reported.
enum class comm_kind : std::uint8_t { p2p, grad_sync, grad_norm, param_gather };
inline constexpr std::size_t comm_kind_count = 4;

inline constexpr auto comm_kind_names = detail::enum_table<comm_kind::param_gather>(
    {{comm_kind::p2p, "p2p"}, {comm_kind::grad_sync, "grad_sync"},
     {comm_kind::grad_norm, "grad_norm"}, {comm_kind::param_gather, "param_gather"}});

[[nodiscard]] constexpr std::string_view to_string(comm_kind k) noexcept { return detail::name_in(comm_kind_names, k); }

/// One event with its times; `comm_stream` for grad_sync / param_gather transfers.
struct timed_event {
    event what{};
    std::uint32_t index = 0; ///< position in the rank's stream
    double start = 0.0;
    double end = 0.0;
    bool comm_stream = false;
};

struct iteration_rank_summary {
    double compute_busy = 0.0; ///< time the compute stream runs ops
    double idle = 0.0;         ///< makespan - compute_busy
    std::array<double, comm_kind_count> exposed{}; ///< compute-stream waiting per kind
    std::uint32_t peak_activations = 0;
    double end = 0.0;          ///< when the rank's last stream finishes
};

struct iteration_simulation {
    verdict check{};
    bool replayed = false;
    double makespan = 0.0;
    double bubble_fraction = 0.0; ///< total idle / (ranks * makespan)
    std::vector<iteration_rank_summary> ranks{};
    /// What was replayed (set when it was, `replayed`), as simulation's: the shape and where
    /// each stage runs.
    pipesched::shape shape{};
    stage_map stages{};

    [[nodiscard]] constexpr double exposed(comm_kind k) const noexcept {
        double total = 0.0;
        for (const auto& r : ranks) total += r.exposed[static_cast<std::size_t>(k)];
        return total;
    }
    [[nodiscard]] constexpr std::uint32_t max_peak_activations() const noexcept {
        std::uint32_t peak = 0;
        for (const auto& r : ranks) peak = r.peak_activations > peak ? r.peak_activations : peak;
        return peak;
    }
};

namespace detail {

[[nodiscard]] constexpr bool replayable(verdict_code c) noexcept {
    return c == verdict_code::valid || c == verdict_code::stale_update ||
           c == verdict_code::grad_sync_before_backward || c == verdict_code::loss_misplaced ||
           c == verdict_code::recompute_misplaced;
}

template <class Source, class Costs, class Sink>
class iteration_simulator {
public:
    constexpr iteration_simulator(const Source& src, const Costs& costs, Sink& sink)
        : src_{src}, costs_{costs}, sink_{sink}, dims_{src.shape()}, layout_{src.layout()},
          arrival_(2 * std::size_t{src.shape().stages()} * src.shape().microbatches, unset),
          posted_(2 * std::size_t{src.shape().stages()} * src.shape().microbatches, unset) {}

    /// Replays when `check` (the validation's verdict) allows it; `norm_ranks` is how many
    /// ranks have a grad_norm, which the validation counted (iteration_validator::ranks_with_norm).
    constexpr iteration_simulation run(verdict check, std::uint32_t norm_ranks) {
        iteration_simulation out{};
        out.check = check;
        if (!replayable(check.code)) return out;
        const std::uint32_t p = src_.ranks();
        out.ranks.assign(p, iteration_rank_summary{});
        state_.assign(p, rank_state{});
        for (std::uint32_t r = 0; r < p; ++r) state_[r].cursor = src_.cursor(r);
        norm_ranks_ = norm_ranks;
        out_ = &out;
        replay_engine<iteration_simulator> engine{*this};
        engine.run();
        if (failure_.code != verdict_code::valid) { // an unusable cost, or times beyond a double
            out.check = failure_;
            out.ranks.clear();
            return out;
        }
        for (std::uint32_t r = 0; r < p; ++r) {
            if (!state_[r].cursor.done()) { // ranks wait for each other: the order deadlocks
                out.check = deadlock_verdict(*this);
                out.ranks.clear();
                return out;
            }
        }
        out.replayed = true;
        summarise_ranks(out, &iteration_rank_summary::end, &iteration_rank_summary::compute_busy);
        return out;
    }

private:
    static constexpr double unset = -1.0;
    using cursor_t = decltype(std::declval<const Source&>().cursor(0u));
    struct rank_state {
        cursor_t cursor{};
        std::uint32_t index = 0;
        double free_at = 0.0;  ///< compute stream
        double comm_free = 0.0; ///< data-parallel stream
        activation_counter activations{};
        bool at_norm = false;
    };

    [[nodiscard]] constexpr std::uint32_t stage(const event& e) const noexcept {
        return stage_of(layout_, dims_.ranks, e.rank, e.chunk);
    }
    /// Slot of the tensor a send produces / a recv consumes: (producer stage, mb, direction).
    [[nodiscard]] constexpr std::size_t slot(std::uint32_t producer_stage, std::uint32_t mb,
                                             bool gradient) const noexcept {
        return (std::size_t{producer_stage} * dims_.microbatches + mb) * 2 + (gradient ? 1 : 0);
    }

    constexpr void record(iteration_simulation& out, std::uint32_t r, const event& e, double start,
                          double end, bool comm) {
        rank_state& st = state_[r];
        auto& sum = out.ranks[r];
        if (!comm) {
            sum.compute_busy += end - start;
            st.free_at = end;
        }
        sum.end = end > sum.end ? end : sum.end;
        sink_.push(timed_event{e, st.index, start, end, comm});
    }
    /// The compute stream waits (for a tensor, a collective) until `until`: not busy time.
    constexpr void wait_until(iteration_simulation& out, std::uint32_t r, const event& e, double until) {
        rank_state& st = state_[r];
        const double end = until > st.free_at ? until : st.free_at;
        sink_.push(timed_event{e, st.index, st.free_at, end, false});
        st.free_at = end;
        out.ranks[r].end = end > out.ranks[r].end ? end : out.ranks[r].end;
    }
    constexpr void expose(iteration_simulation& out, std::uint32_t r, comm_kind k, double from, double to) {
        if (to > from) out.ranks[r].exposed[static_cast<std::size_t>(k)] += to - from;
    }

    /// False, with failure_ set, unless `d` is finite and >= 0 and `start + d` is finite.
    constexpr bool usable(double start, double d, std::uint32_t r, const event& e) {
        verdict_code code = verdict_code::valid;
        if (!usable_cost(d)) code = verdict_code::invalid_cost;
        else if (!finite_time(start + d)) code = verdict_code::time_overflow;
        else return true;
        failure_.code = code;
        failure_.rank = r;
        failure_.index = state_[r].index;
        failure_.subject = action{stage(e), e.kind, e.microbatch};
        failure_.cost = code == verdict_code::invalid_cost ? d : start;
        return false;
    }

public:
    // The replay engine's model (replay.hpp); the schedule was validated, so no rank deadlocks.
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept {
        return static_cast<std::uint32_t>(state_.size());
    }
    [[nodiscard]] constexpr bool done(std::uint32_t r) const { return state_[r].cursor.done(); }
    /// As validation's replay: a blocked receive waits for its sender, a rank at the
    /// grad_norm collective for the first rank that has not reached it.
    [[nodiscard]] constexpr std::uint32_t waited_on(std::uint32_t r) const {
        if (state_[r].at_norm && !norm_released_) {
            for (std::uint32_t q = 0; q < ranks(); ++q) {
                if (!state_[q].at_norm) return q;
            }
        }
        return state_[r].cursor.current().peer;
    }
    [[nodiscard]] constexpr blocked_rank blocked_at(std::uint32_t q) const {
        const event e = state_[q].cursor.done() ? event{} : state_[q].cursor.current();
        return blocked_rank{q, state_[q].index, action{stage(e), e.kind, e.microbatch}};
    }

    template <class Engine>
    constexpr step_result step(std::uint32_t r, Engine& engine) {
        iteration_simulation& out = *out_;
        rank_state& st = state_[r];
        {
            const event e = st.cursor.current();
            const std::uint32_t s = stage(e);
            switch (e.kind) {
            case op::recv_activation:
            case op::recv_gradient: {
                const bool grad = e.kind == op::recv_gradient;
                const std::size_t k = slot(upstream_of(tensor_moved(e.kind), s), e.microbatch, grad);
                if (arrival_[k] == unset) return step_result::blocked;
                const double posted_at = posted_[k] > st.free_at ? posted_[k] : st.free_at;
                expose(out, r, comm_kind::p2p, posted_at, arrival_[k]);
                wait_until(out, r, e, arrival_[k]);
                break;
            }
            case op::send_activation:
            case op::send_gradient: {
                const bool grad = e.kind == op::send_gradient;
                const std::size_t k = slot(s, e.microbatch, grad);
                const double d = costs_.transfer(e, s);
                if (!usable(st.free_at, d, r, e)) return step_result::failed;
                posted_[k] = st.free_at;
                arrival_[k] = st.free_at + d;
                sink_.push(timed_event{e, st.index, st.free_at, arrival_[k], true});
                engine.wake(e.peer);
                break;
            }
            case op::grad_sync:
            case op::param_gather: { // on the communication stream, in launch order
                const double start = st.free_at > st.comm_free ? st.free_at : st.comm_free;
                const double d = costs_.transfer(e, s);
                if (!usable(start, d, r, e)) return step_result::failed;
                st.comm_free = start + d;
                const bool blocks = e.kind == op::param_gather; // grad_sync overlaps what follows
                if (blocks) expose(out, r, comm_kind::param_gather, st.free_at, st.comm_free);
                record(out, r, e, start, st.comm_free, true);
                if (blocks) st.free_at = st.comm_free;
                break;
            }
            case op::grad_norm: {
                if (!st.at_norm) { // first visit: wait for this rank's grad syncs
                    expose(out, r, comm_kind::grad_sync, st.free_at, st.comm_free);
                    st.free_at = st.free_at > st.comm_free ? st.free_at : st.comm_free;
                    st.at_norm = true;
                    ++norm_arrived_;
                    norm_start_ = st.free_at > norm_start_ ? st.free_at : norm_start_;
                }
                // A collective of every rank: it waits for the last one, and forever if a rank
                // has no grad_norm (validation's deadlock).
                if (norm_arrived_ < norm_ranks_ || norm_ranks_ < src_.ranks()) return step_result::blocked;
                release_norm(engine);
                const double d = costs_.transfer(e, s);
                if (!usable(norm_start_, d, r, e)) return step_result::failed;
                const double end = norm_start_ + d;
                expose(out, r, comm_kind::grad_norm, norm_start_, end);
                wait_until(out, r, e, end);
                break;
            }
            case op::overlap_f_b: {
                // The pair's F and B/I follow; anything else (refused by validation) makes the
                // marker a no-op.
                auto look = st.cursor;
                look.advance();
                if (look.done() || look.current().kind != op::forward) break;
                const event f = look.current();
                look.advance();
                if (look.done() || (look.current().kind != op::backward &&
                                    look.current().kind != op::backward_input)) {
                    break;
                }
                const event b = look.current();
                const double start = st.free_at;
                const double d = pair_duration(f, b);
                if (!usable(start, d, r, f)) return step_result::failed;
                const double end = start + d;
                st.cursor.advance();
                ++st.index;
                record(out, r, f, start, end, false);
                count_memory(out, r, f);
                st.cursor.advance();
                ++st.index;
                sink_.push(timed_event{b, st.index, start, end, false}); // the same computation
                count_memory(out, r, b);
                break;
            }
            default: {
                double start = st.free_at;
                if (e.kind == op::optimizer_step && !st.at_norm) {
                    expose(out, r, comm_kind::grad_sync, st.free_at, st.comm_free);
                    start = st.free_at > st.comm_free ? st.free_at : st.comm_free;
                }
                const double d = costs_.duration(e, s);
                if (!usable(start, d, r, e)) return step_result::failed;
                record(out, r, e, start, start + d, false);
                count_memory(out, r, e);
                break;
            }
            }
        }
        st.cursor.advance();
        ++st.index;
        return st.cursor.done() ? step_result::finished : step_result::ran;
    }

private:

    [[nodiscard]] constexpr double pair_duration(const event& f, const event& b) const noexcept {
        if constexpr (requires { costs_.overlapped(f, 0u, b, 0u); }) {
            return costs_.overlapped(f, stage(f), b, stage(b));
        } else {
            return costs_.duration(f, stage(f)) + costs_.duration(b, stage(b));
        }
    }

    /// Once every rank has reached grad_norm, wake those waiting at it.
    template <class Engine>
    constexpr void release_norm(Engine& engine) {
        if (norm_released_) return;
        norm_released_ = true;
        for (std::uint32_t q = 0; q < state_.size(); ++q) {
            if (state_[q].at_norm) engine.wake(q);
        }
    }

    constexpr void count_memory(iteration_simulation& out, std::uint32_t r, const event& e) {
        rank_state& st = state_[r];
        st.activations.add(e.kind);
        out.ranks[r].peak_activations = static_cast<std::uint32_t>(st.activations.peak);
    }

    const Source& src_;
    const Costs& costs_;
    Sink& sink_;
    shape dims_;
    placement layout_;
    std::vector<double> arrival_;
    std::vector<double> posted_;
    std::vector<rank_state> state_{};
    iteration_simulation* out_ = nullptr; ///< the result being filled, during run()
    std::uint32_t norm_ranks_ = 0;
    std::uint32_t norm_arrived_ = 0;
    double norm_start_ = 0.0;
    bool norm_released_ = false;
    verdict failure_{};
};

} // namespace detail

/// What simulate(iteration)'s timed replay holds per (stage, microbatch) unit, in bytes: when
/// the activation and the gradient the unit sends arrive and when their sends were posted
/// (iteration_simulator's arrival_ and posted_). The checks before it hold
/// iteration_check_bytes_per_unit, and are gone when it starts.
inline constexpr std::size_t iteration_replay_bytes_per_unit = 2 * 2 * sizeof(double);

/// A sink for timed_event records that keeps nothing.
struct discard_events {
    constexpr void push(const timed_event&) noexcept {}
};

/// Hands an iteration's timed events to any timeline sink made for schedules (a Chrome trace,
/// the terminal timeline), as actions with global stage numbers.
template <timeline_sink Sink>
struct as_timed_actions {
    Sink* sink;
    placement layout;
    std::uint32_t ranks;
    constexpr void push(const timed_event& t) const {
        const event& e = t.what;
        sink->push(timed_action{e.rank, t.index, action{stage_of(layout, ranks, e.rank, e.chunk), e.kind, e.microbatch},
                                t.start, t.end});
    }
};

namespace detail {
/// Every rule of validate(it) but its deadlock replay, then the timed replay, which is that
/// check. Without a timeline, where a try that fails has pushed nothing anyone sees, a first
/// try runs the rules in one pass (iteration_validator::run_one_pass: the compute projection's
/// checks on the iteration's unit flags, without their own replay); if anything
/// fails, or the replay does not finish, the full path below gives the verdict, as always.
/// first_try::skip goes to the full path at once (simulate(iteration<P>), whose own first try
/// failed in the replay that this one would repeat). The validator is gone before the
/// simulator is built, so the two tables per (stage, microbatch) are not held at once
/// (iteration_check_bytes_per_unit, then iteration_replay_bytes_per_unit).
enum class first_try : bool { skip = false, one_pass = true };
template <class Source, class Costs, class Sink>
constexpr iteration_simulation checked_iteration_replay(const Source& src, const Costs& costs, Sink& sink,
                                                        first_try attempt = first_try::one_pass) {
    verdict check{};
    std::uint32_t norm_ranks = 0;
    const auto validate = [&](bool one_pass) {
        iteration_validator<Source> rules{src};
        if (one_pass) {
            if (!rules.run_one_pass()) return false;
            check = rules.first_rule_violation();
        } else {
            check = rules.run(without_replay);
        }
        norm_ranks = rules.ranks_with_norm();
        return true;
    };
    if constexpr (std::is_same_v<Sink, discard_events>) {
        if (attempt == first_try::one_pass && validate(true)) {
            iteration_simulation first = iteration_simulator<Source, Costs, Sink>{src, costs, sink}.run(check, norm_ranks);
            if (first.replayed) return first;
        }
    }
    validate(false);
    return iteration_simulator<Source, Costs, Sink>{src, costs, sink}.run(check, norm_ranks);
}

/// The answer for a shape a check refused, without building the replay: its tables are sized
/// by that shape, which may be anything (ranks x chunks x microbatches beyond any memory).
[[nodiscard]] constexpr iteration_simulation shape_refused(const shape_check& c) {
    iteration_simulation out{};
    out.check.code = verdict_code::invalid_shape;
    out.check.shape_message = c.message;
    return out;
}

/// `out` with the shape and placement it replayed, once it has been replayed.
[[nodiscard]] constexpr iteration_simulation with_placement(iteration_simulation out, const shape& dims,
                                                            placement layout) {
    if (out.replayed) {
        out.shape = dims;
        out.stages = stage_map{layout, dims};
    }
    return out;
}
} // namespace detail

template <schedule_policy P, iteration_costs Costs, class Sink>
[[nodiscard]] constexpr iteration_simulation simulate(const iteration<P>& it, const Costs& costs, Sink& sink) {
    using source = detail::policy_events<iteration<P>>;
    const source src{it};
    if (const shape_check c = it.check(); !c) return detail::shape_refused(c);
    iteration_simulation out{};
    bool done = false;
    if constexpr (std::is_same_v<Sink, discard_events>) {
        // The first try of an iteration the library built: validate(it)'s shortcut without its
        // replay (the timed replay checks deadlocks), every rule then holds and every rank
        // joins grad_norm when there is one. Anything else: the paths below.
        if (detail::valid_by_construction(it, detail::without_replay)) {
            const std::uint32_t norm_ranks = it.options.grad_norm ? it.shape.ranks : 0;
            out = detail::iteration_simulator<source, Costs, Sink>{src, costs, sink}.run(verdict{}, norm_ranks);
            // If not replayed, the same replay would fail the same way after the one-pass
            // rules: the full path.
            if (!out.replayed) out = detail::checked_iteration_replay(src, costs, sink, detail::first_try::skip);
            done = true;
        }
    }
    if (!done) out = detail::checked_iteration_replay(src, costs, sink);
    return detail::with_placement(std::move(out), it.shape, P::layout);
}

template <schedule_policy P, iteration_costs Costs = iteration_cost_model>
[[nodiscard]] constexpr iteration_simulation simulate(const iteration<P>& it, const Costs& costs = {}) {
    discard_events none{};
    return simulate(it, costs, none);
}

/// Replays per-rank event lists (for example SimAI's order mapped to events).
template <iteration_costs Costs, class Sink>
[[nodiscard]] constexpr iteration_simulation simulate_events(std::span<const std::vector<event>> per_rank,
                                                             shape dims, placement layout,
                                                             const Costs& costs, Sink& sink) {
    const event_lists src{per_rank, dims, layout};
    if (const shape_check c = check_common(dims); !c) return detail::shape_refused(c);
    // As validate_events()'s verdict.
    return detail::with_placement(detail::checked_iteration_replay(src, costs, sink), dims, layout);
}

} // namespace pipesched
