// pipesched: replay a schedule on a cost model.
//
// Every rank runs its actions in order. An action starts when the rank is free and its input
// exists: F of stage s needs F of stage s-1, B/I of stage s needs B/I of stage s+1 (same
// microbatch), plus `p2p_latency` when producer and consumer sit on different ranks. W needs
// only its own I, which ran earlier on the same rank.
//
// With `fill_with_weight`, a rank that would sit idle waiting for an input runs, instead, the
// next W of its own sequence whose I has completed (what zero-bubble runtimes do); the W is
// then skipped when the rank reaches it in order. The W may delay the waiting action if its
// input arrives while the W is running, as a non-preemptive device would.
//
// An overlapped pair (an op::overlap_f_b marker, or the overlapped_with_next flag, then F and
// B/I; see validate.hpp) runs as one computation: it starts when the rank is free and the
// inputs of both actions exist, takes cost_model::overlapped(F, B) (by default F + B: no
// speed-up, as PyTorch's runtime, which runs the two one after the other unless the user
// registers a fused function), and both results exist when it ends. DualPipe's bubble formula
// writes this duration "F&B"; set stage_costs::overlapped_forward_backward to model a fused
// implementation. The timeline sink receives both actions with the pair's start and end, the
// F first with overlapped_with_next set. The F's activation is counted before the B frees one.
//
// Memory model, in chunk activations: a unit's activation is allocated by its F and freed by
// the end of its B, or, for a split backward, by its W. I frees nothing: the weight gradient
// still needs the stored inputs. This is the accounting of Qi et al. (ZB-H1 peak p).
//
// Linear in the number of actions; the only allocations are O(p + stages * m) arrays made
// once before the replay, none per event. constexpr: a scalar read off the result works in
// static_assert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "../event.hpp"
#include "../action.hpp"
#include "../policy.hpp"
#include "validate.hpp"

namespace pipesched {

/// Duration of each compute op on one stage (one chunk of one microbatch).
struct stage_costs {
    double forward = 1.0;
    double backward = 2.0;       ///< a full backward (B)
    double backward_input = 1.0; ///< I of a split backward
    double backward_weight = 1.0; ///< W of a split backward
    /// An overlapped pair whose F runs on this stage ("F&B" in DualPipe's bubble formula);
    /// negative (the default): F + B of the two actions, no speed-up.
    double overlapped_forward_backward = -1.0;
};

struct cost_model {
    stage_costs uniform{};                ///< costs of every stage...
    std::span<const stage_costs> per_stage{}; ///< ...unless overridden here (index = stage)
    double p2p_latency = 0.0;             ///< added to every cross-rank dependency
    bool fill_with_weight = false;        ///< run a ready W instead of idling

    [[nodiscard]] constexpr double duration(const action& a) const noexcept {
        const stage_costs& c = a.stage < per_stage.size() ? per_stage[a.stage] : uniform;
        switch (a.kind) {
        case op::forward: return c.forward;
        case op::backward: return c.backward;
        case op::backward_input: return c.backward_input;
        case op::backward_weight: return c.backward_weight;
        default: return 0.0;
        }
    }

    /// Duration of an overlapped pair: the F's stage's overlapped_forward_backward if it is
    /// set, else duration(f) + duration(b).
    [[nodiscard]] constexpr double overlapped(const action& f, const action& b) const noexcept {
        const stage_costs& c = f.stage < per_stage.size() ? per_stage[f.stage] : uniform;
        return c.overlapped_forward_backward >= 0.0 ? c.overlapped_forward_backward
                                                    : duration(f) + duration(b);
    }
};

/// One executed action with its times, as handed to a timeline sink.
struct timed_action {
    std::uint32_t rank = 0;
    std::uint32_t index = 0; ///< position in the rank's sequence (not execution order, for W moved by fill_with_weight)
    action what{};
    double start = 0.0;
    double end = 0.0;
};

template <class S>
concept timeline_sink = requires(S& s, const timed_action& t) { s.push(t); };

/// A timeline sink that keeps nothing.
struct discard_timeline {
    constexpr void push(const timed_action&) noexcept {}
};

struct rank_summary {
    double busy = 0.0;
    double idle = 0.0;             ///< makespan - busy
    std::uint32_t peak_activations = 0;
    double first_start = 0.0;
    double last_end = 0.0;
};

struct simulation {
    verdict check{};               ///< the schedule must be valid to be simulated
    double makespan = 0.0;
    double bubble_fraction = 0.0;  ///< total idle / (ranks * makespan)
    std::vector<rank_summary> ranks{};

    constexpr explicit operator bool() const noexcept { return static_cast<bool>(check); }
    [[nodiscard]] constexpr std::uint32_t max_peak_activations() const noexcept {
        std::uint32_t peak = 0;
        for (const rank_summary& r : ranks) peak = r.peak_activations > peak ? r.peak_activations : peak;
        return peak;
    }
};

namespace detail {

/// Makespan, per-rank idle time and bubble fraction from each rank's end and busy time; shared
/// by the schedule replay and the iteration replay.
template <class Result, class Rank>
constexpr void summarise_ranks(Result& out, double Rank::*end, double Rank::*busy) {
    for (const Rank& r : out.ranks) out.makespan = r.*end > out.makespan ? r.*end : out.makespan;
    double idle = 0.0;
    for (Rank& r : out.ranks) {
        r.idle = out.makespan - r.*busy;
        idle += r.idle;
    }
    const double slots = static_cast<double>(out.ranks.size()) * out.makespan;
    out.bubble_fraction = slots > 0.0 ? idle / slots : 0.0;
}

template <class Source, class Sink>
class simulator {
public:
    constexpr simulator(const Source& s, const cost_model& costs, Sink& sink)
        : src_{s}, costs_{costs}, sink_{sink}, stages_{s.stages()}, microbatches_{s.microbatches()},
          forward_end_(std::size_t{s.stages()} * s.microbatches(), unset),
          backward_end_(std::size_t{s.stages()} * s.microbatches(), unset),
          weight_done_(std::size_t{s.stages()} * s.microbatches(), 0) {}

    constexpr simulation run() {
        simulation out{};
        // The structural checks come from validate(); the deadlock check is this replay itself
        // (the same work list), so a valid schedule is replayed once, not twice.
        validator<Source> structure{src_};
        if (!structure.structure_ok()) {
            out.check = structure.result();
            return out;
        }
        owner_ = structure.take_owners();
        const std::uint32_t p = src_.ranks();
        out.ranks.assign(p, rank_summary{});
        if (!replay(out)) {
            out.check = validate_actions(src_); // names the cycle
            out.ranks.clear();
            return out;
        }
        summarise_ranks(out, &rank_summary::last_end, &rank_summary::busy);
        return out;
    }

private:
    static constexpr double unset = -1.0;
    using cursor_t = decltype(std::declval<const Source&>().cursor(0u));

    struct rank_state {
        cursor_t next{};          ///< the next action in order
        cursor_t weights{};       ///< scans ahead for the next W (fill_with_weight only)
        std::uint32_t position = 0;
        std::uint32_t weight_position = 0;
        double free_at = 0.0;
        std::int64_t alive = 0;
        bool blocked = false;
        bool started = false;
    };

    [[nodiscard]] constexpr std::size_t unit(const action& a) const noexcept {
        return std::size_t{a.stage} * microbatches_ + a.microbatch;
    }

    /// When the input of `a` is available on rank r; unset if not produced yet.
    [[nodiscard]] constexpr double input_ready(const action& a, std::uint32_t r) const noexcept {
        if (a.kind == op::forward) {
            if (a.stage == 0) return 0.0;
            const action dep{a.stage - 1, op::forward, a.microbatch};
            const double t = forward_end_[unit(dep)];
            if (t == unset) return unset;
            return owner_[dep.stage] == r ? t : t + costs_.p2p_latency;
        }
        if (a.kind == op::backward_weight) return 0.0;
        // B or I: needs its own F (local, always earlier) and the gradient from stage s+1.
        if (a.stage + 1 == stages_) return forward_end_[unit(a)];
        const action dep{a.stage + 1, op::backward, a.microbatch};
        const double t = backward_end_[unit(dep)];
        if (t == unset) return unset;
        return owner_[dep.stage] == r ? t : t + costs_.p2p_latency;
    }

    /// Runs `a` from start to end; `adds_busy` is false for the second action of a pair.
    constexpr void execute(simulation& out, std::uint32_t r, rank_state& st, std::uint32_t index,
                           const action& a, double start, double end, bool adds_busy = true) {
        st.free_at = end;
        rank_summary& sum = out.ranks[r];
        if (adds_busy) sum.busy += end - start;
        if (!st.started) {
            sum.first_start = start;
            st.started = true;
        }
        sum.last_end = end;
        if (a.kind == op::forward) {
            forward_end_[unit(a)] = end;
            ++st.alive;
            if (st.alive > sum.peak_activations) sum.peak_activations = static_cast<std::uint32_t>(st.alive);
        } else if (a.kind == op::backward || a.kind == op::backward_input) {
            backward_end_[unit(a)] = end;
            if (a.kind == op::backward) --st.alive;
        } else {
            weight_done_[unit(a)] = 1;
            --st.alive;
        }
        sink_.push(timed_action{r, index, a, start, end});
    }

    /// With fill_with_weight: run ready W's of this rank while it would otherwise idle until `ready`.
    constexpr void fill_idle(simulation& out, std::uint32_t r, rank_state& st, double ready) {
        while (st.free_at < ready) {
            while (!st.weights.done() && (st.weights.current().kind != op::backward_weight ||
                                          weight_done_[unit(st.weights.current())] != 0)) {
                st.weights.advance();
                ++st.weight_position;
            }
            if (st.weights.done()) return;
            const action w = st.weights.current();
            if (backward_end_[unit(w)] == unset) return; // its I has not run yet
            execute(out, r, st, st.weight_position, w, st.free_at, st.free_at + costs_.duration(w));
        }
    }

    /// False if some rank never finishes (a deadlock).
    constexpr bool replay(simulation& out) {
        const std::uint32_t p = src_.ranks();
        std::vector<rank_state> state(p);
        std::vector<std::uint32_t> work;
        work.reserve(p);
        for (std::uint32_t r = 0; r < p; ++r) {
            state[r].next = src_.cursor(r);
            state[r].weights = src_.cursor(r);
            work.push_back(p - 1 - r);
        }
        while (!work.empty()) {
            const std::uint32_t r = work.back();
            work.pop_back();
            rank_state& st = state[r];
            st.blocked = false;
            for (; !st.next.done(); st.next.advance(), ++st.position) {
                const action a = st.next.current();
                if (a.kind == op::overlap_f_b || a.overlapped_with_next) {
                    if (!run_pair(out, state, work, r)) break;
                    continue;
                }
                if (a.kind == op::backward_weight && weight_done_[unit(a)] != 0) continue; // ran early
                const double ready = input_ready(a, r);
                if (ready == unset) {
                    st.blocked = true;
                    break;
                }
                if (costs_.fill_with_weight) fill_idle(out, r, st, ready);
                const double start = ready > st.free_at ? ready : st.free_at;
                execute(out, r, st, st.position, a, start, start + costs_.duration(a));
                wake_consumer(state, work, a, r);
            }
        }
        for (const rank_state& st : state) {
            if (!st.next.done()) return false;
        }
        return true;
    }

    /// Runs the overlapped pair at the rank's cursor (a marker or a flagged F) and leaves the
    /// cursor on its second action; false, with the rank blocked, if an input is missing.
    constexpr bool run_pair(simulation& out, std::vector<rank_state>& state,
                            std::vector<std::uint32_t>& work, std::uint32_t r) {
        rank_state& st = state[r];
        auto second = st.next;
        std::uint32_t index = st.position;
        if (second.current().kind == op::overlap_f_b) {
            second.advance();
            ++index;
        }
        action f = second.current();
        second.advance();
        const action b = second.current();
        const double ready_f = input_ready(f, r);
        const double ready_b = input_ready(b, r);
        if (ready_f == unset || ready_b == unset) {
            st.blocked = true;
            return false;
        }
        const double ready = ready_f > ready_b ? ready_f : ready_b;
        if (costs_.fill_with_weight) fill_idle(out, r, st, ready);
        const double start = ready > st.free_at ? ready : st.free_at;
        const double end = start + costs_.overlapped(f, b);
        f.overlapped_with_next = true;
        execute(out, r, st, index, f, start, end);
        execute(out, r, st, index + 1, b, start, end, false); // the same computation
        wake_consumer(state, work, f, r);
        wake_consumer(state, work, b, r);
        st.next = second;
        st.position = index + 1;
        return true;
    }

    /// The one rank that can be blocked on the result of `a` is the owner of the next stage
    /// (for F) or the previous stage (for B/I).
    constexpr void wake_consumer(std::vector<rank_state>& state, std::vector<std::uint32_t>& work,
                                 const action& a, std::uint32_t r) const {
        std::uint32_t consumer_stage = 0;
        if (a.kind == op::forward && a.stage + 1 < stages_) consumer_stage = a.stage + 1;
        else if ((a.kind == op::backward || a.kind == op::backward_input) && a.stage > 0) consumer_stage = a.stage - 1;
        else return;
        const std::uint32_t w = owner_[consumer_stage];
        if (w != r && state[w].blocked) {
            state[w].blocked = false;
            work.push_back(w);
        }
    }

    const Source& src_;
    const cost_model& costs_;
    Sink& sink_;
    std::uint32_t stages_;
    std::uint32_t microbatches_;
    std::vector<double> forward_end_;
    std::vector<double> backward_end_;
    std::vector<std::uint8_t> weight_done_;
    std::vector<std::uint32_t> owner_;
};

} // namespace detail

/// Replays any action source on a cost model, pushing every executed action with its times.
template <action_source Source, timeline_sink Sink>
[[nodiscard]] constexpr simulation simulate_actions(const Source& src, const cost_model& costs, Sink& sink) {
    return detail::simulator<Source, Sink>{src, costs, sink}.run();
}

template <schedule_policy P, timeline_sink Sink>
[[nodiscard]] constexpr simulation simulate(const P& pol, const cost_model& costs, Sink& sink) {
    if (const shape_check c = pol.check(); !c) {
        simulation out{};
        out.check.code = verdict_code::invalid_shape;
        out.check.shape_message = c.message;
        return out;
    }
    return simulate_actions(detail::policy_actions<P>{pol}, costs, sink);
}

template <schedule_policy P>
[[nodiscard]] constexpr simulation simulate(const P& pol, const cost_model& costs = {}) {
    discard_timeline none{};
    return simulate(pol, costs, none);
}

/// Simulates per-rank action lists (for example read from CSV); numbers as in validate().
template <timeline_sink Sink>
[[nodiscard]] constexpr simulation simulate(std::span<const std::vector<action>> per_rank,
                                            const cost_model& costs, Sink& sink,
                                            std::uint32_t microbatches = 0) {
    std::uint32_t max_stage = 0;
    std::uint32_t max_mb = 0;
    bool any = false;
    for (const auto& actions : per_rank) {
        for (const action& a : actions) {
            any = true;
            max_stage = a.stage > max_stage ? a.stage : max_stage;
            max_mb = a.microbatch > max_mb ? a.microbatch : max_mb;
        }
    }
    const std::uint32_t stages = any ? max_stage + 1 : 0;
    const std::uint32_t m = microbatches != 0 ? microbatches : (any ? max_mb + 1 : 0);
    // Validate first: it refuses sparse input before anything sized stages x microbatches exists.
    if (const verdict v = validate(per_rank, m, stages); !v) {
        simulation out{};
        out.check = v;
        return out;
    }
    return simulate_actions(detail::action_lists{per_rank, stages, m}, costs, sink);
}

/// Peak in-flight chunk activations of one rank, from its order alone (no costs needed).
template <schedule_policy P>
[[nodiscard]] constexpr std::uint32_t peak_activations(const P& pol, std::uint32_t rank) {
    std::int64_t alive = 0;
    std::int64_t peak = 0;
    for (auto c = pol.cursor(rank); !c.done(); c.advance()) {
        const op k = c.current().kind;
        if (k == op::forward) peak = ++alive > peak ? alive : peak;
        else if (k == op::backward || k == op::backward_weight) --alive;
    }
    return static_cast<std::uint32_t>(peak);
}

} // namespace pipesched
