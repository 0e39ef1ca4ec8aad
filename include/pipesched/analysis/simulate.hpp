// pipesched: replay a schedule on a cost model. The rules it applies (an action's input, when it
// is there, the costs, the memory rule, overlapped pairs) are timing_model.hpp's; this header
// runs them over the ranks and says what they come to.
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
// The general form (Qi et al. 2024, section 3.1), in any unit, per stage: F adds M_B
// (stage_costs::activation_memory), I releases M_B - M_W (keeping the M_W that W needs,
// stage_costs::weight_memory), W releases M_W, a full B releases M_B. rank_summary::peak_memory
// is the peak of that sum on each rank; with the defaults M_B = M_W = 1 it equals
// peak_activations.
//
// Validation: the structural checks of validate() (validate.hpp), then the deadlock check,
// which is this replay itself. Without a timeline sink a first try runs the structural checks
// inside the replay, one walk over the schedule; on any error or unusable cost, and always with
// a timeline sink, they run first in their own pass, so the verdict is the same either way.
//
// Linear in the number of actions. Memory: the structural checks hold one byte per (stage,
// microbatch) (during the first try's replay, else freed before it); the replay holds O(p)
// state, a ring of 64 end times per (stage, forward or backward result), and the end times of
// results not yet consumed that do not fit there (detail::in_flight_results), which without a
// timeline sink are bounded by turn-taking to about what is in flight between stages,
// O(ranks x chunks) for the library's schedules. Durations must be finite and >= 0 (else
// invalid_cost) and times must stay below the largest double (else time_overflow). constexpr:
// a scalar read off the result works in static_assert.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "../event.hpp"
#include "../action.hpp"
#include "../policy.hpp"
#include "../stage_map.hpp"
#include "in_flight.hpp"
#include "../timing_model.hpp"
#include "validate.hpp"

namespace pipesched {

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
    double peak_memory = 0.0;      ///< in the units of stage_costs::activation_memory
    double first_start = 0.0;
    double last_end = 0.0;
};

struct simulation {
    verdict check{};               ///< the schedule must be valid to be simulated
    double makespan = 0.0;
    double bubble_fraction = 0.0;  ///< total idle / (ranks * makespan)
    std::vector<rank_summary> ranks{};
    /// What was replayed, for the code that shows it (set when the replay ran, check valid): the
    /// shape (per-rank lists: their ranks, microbatches, and as chunks the most stages one rank
    /// runs) and where each stage runs, its rank and its chunk there, so that no output works
    /// them back out of stage numbers.
    pipesched::shape shape{};
    stage_map stages{};

    constexpr explicit operator bool() const noexcept { return static_cast<bool>(check); }
    [[nodiscard]] constexpr std::uint32_t max_peak_activations() const noexcept {
        std::uint32_t peak = 0;
        for (const rank_summary& r : ranks) peak = r.peak_activations > peak ? r.peak_activations : peak;
        return peak;
    }
    [[nodiscard]] constexpr double max_peak_memory() const noexcept {
        double peak = 0.0;
        for (const rank_summary& r : ranks) peak = r.peak_memory > peak ? r.peak_memory : peak;
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
    if (finite_time(slots) && finite_time(idle)) {
        out.bubble_fraction = slots > 0.0 ? idle / slots : 0.0;
        return;
    }
    // Near the largest double, ranks x makespan overflows: the same fraction, summed per rank.
    double fraction = 0.0;
    for (const Rank& r : out.ranks) fraction += r.idle / out.makespan;
    out.bubble_fraction = fraction / static_cast<double>(out.ranks.size());
}

/// What the rank's summary reports of its clock (its idle time comes with the makespan).
[[nodiscard]] constexpr rank_summary summary_of(const rank_clock& clock) noexcept {
    rank_summary out{};
    out.busy = clock.busy;
    out.peak_activations = static_cast<std::uint32_t>(clock.activations.peak);
    out.peak_memory = clock.peak_memory;
    out.first_start = clock.first_start;
    out.last_end = clock.last_end();
    return out;
}

/// The cost-model replay. Memory: the structure check's table of one byte per (stage,
/// microbatch), and O(ranks) state plus the results in flight
/// between stages (in_flight_results), which for the library's schedules is O(ranks x chunks).
/// The ranks take turns of at most `turn` actions, round robin, so that no rank runs far
/// ahead of its consumers and piles up results: the times do not depend on this order (each
/// action starts at max(rank free, input ready)), only the memory does.
template <class Source, class Sink>
class simulator {
public:
    /// ring_bits: size of the in-flight rings (in_flight_results; only the speed depends on it).
    constexpr simulator(const Source& s, const cost_model& costs, Sink& sink,
                        std::uint32_t ring_bits = in_flight_results::default_ring_bits)
        : src_{s}, costs_{costs}, sink_{sink}, stages_{s.stages()}, microbatches_{s.microbatches()},
          ring_bits_{ring_bits} {}

    constexpr simulation run() {
        simulation out{};
        if constexpr (summary_only) {
            // The first try: validate()'s structural checks run inside the replay, one walk of
            // the schedule instead of two. Any error, deadlock or unusable cost sends it to the
            // path below, which finds the first error and names it exactly as before. Only
            // without a timeline, where a try that fails has pushed nothing anyone sees.
            if (checked_replay(out)) return out;
            out = simulation{};
        }
        // The structural checks come from validate(); the deadlock check is this replay itself,
        // so a valid schedule is replayed once, not twice.
        {
            validator<Source> structure{src_};
            if (!structure.structure_ok()) {
                out.check = structure.result();
                return out;
            }
            owner_ = structure.take_owners();
        }
        if (!usable_cost(costs_.p2p_latency)) {
            out.check = cost_error(verdict_code::invalid_cost, 0, no_index,
                                   action{0, op::send_activation, 0}, costs_.p2p_latency);
            return out;
        }
        const std::uint32_t p = src_.ranks();
        out.ranks.assign(p, rank_summary{});
        if (!replay(out)) {
            out.check = failure_.code != verdict_code::valid ? failure_ : deadlock_verdict(*this);
            out.ranks.clear();
            return out;
        }
        summarise_ranks(out, &rank_summary::last_end, &rank_summary::busy);
        return out;
    }

    /// Whether the last run() took the first try's one walk (for the tests of both paths).
    [[nodiscard]] constexpr bool took_checked_replay() const noexcept { return took_checked_; }

    /// Most results held at once by the replay (for the memory tests and benchmarks).
    [[nodiscard]] constexpr std::size_t peak_pending() const noexcept { return pending_.peak(); }

    static constexpr std::uint32_t no_index = 0xFFFFFFFFu;

private:
    using cursor_t = decltype(std::declval<const Source&>().cursor(0u));

    struct rank_state {
        cursor_t next{};          ///< the next action in order
        cursor_t weights{};       ///< scans ahead for the next W (fill_with_weight only)
        std::uint32_t position = 0;
        std::uint32_t weight_position = 0; ///< W's in [position, weight_position) ran early
        rank_clock clock{};
        std::uint32_t waiting_stage = 0; ///< blocked: the stage whose result it needs
    };

    static constexpr verdict cost_error(verdict_code code, std::uint32_t r, std::uint32_t index,
                                        const action& a, double value) noexcept {
        verdict v{};
        v.code = code;
        v.rank = r;
        v.index = index;
        v.subject = a;
        v.cost = value;
        return v;
    }
    constexpr bool fail(verdict_code code, std::uint32_t r, std::uint32_t index, const action& a,
                        double value) noexcept {
        if (failure_.code == verdict_code::valid) failure_ = cost_error(code, r, index, a, value);
        return false;
    }

    /// The first try's checks of `a` that do not depend on what ran before (validate.hpp).
    constexpr bool claim(std::uint32_t r, const action& a) noexcept {
        return claim_action(r, a, stages_, microbatches_, owner_.data());
    }

    /// The result `a` needs from another stage (timing_model.hpp's rule); false if none.
    [[nodiscard]] constexpr bool dependency(const action& a, action& input) const noexcept {
        return cross_stage_input(a, stages_, input);
    }
    /// Where the result of an F (the activation) or a B or I (the gradient) waits in flight.
    [[nodiscard]] static constexpr in_flight_results::kind result_kind(op kind) noexcept {
        return static_cast<in_flight_results::kind>(tensor_of(kind));
    }
    /// When a result produced at `produced` by `input`'s stage can be used on rank r.
    [[nodiscard, gnu::always_inline]] constexpr double arrival(double produced, const action& input,
                                                               std::uint32_t r) const noexcept {
        return detail::input_ready(produced, owner_[input.stage] == r, costs_.p2p_latency);
    }
    /// The result of `a` goes in flight when another stage reads it (consumer_stage).
    template <class Results>
    [[gnu::always_inline]] constexpr void publish(Results&& results, const action& a, double end) const {
        std::uint32_t consumer = 0;
        if (consumer_stage(a, stages_, consumer)) results.insert(a.stage, a.microbatch, result_kind(a.kind), end);
    }

    /// When the input of `a` is available on rank r; pending_times::missing if not produced yet.
    [[nodiscard]] constexpr double input_ready(const action& a, std::uint32_t r) noexcept {
        action input{};
        if (!dependency(a, input)) return 0.0;
        const double t = pending_.find(input.stage, input.microbatch, result_kind(input.kind));
        if (t == pending_times::missing) {
            state_[r].waiting_stage = input.stage;
            return t;
        }
        return arrival(t, input, r);
    }
    /// The input of `a` has been used: nobody else reads it.
    constexpr void consume_input(const action& a) noexcept {
        action input{};
        if (dependency(a, input)) pending_.erase(input.stage, input.microbatch, result_kind(input.kind));
    }

    /// Runs `a` from `start` for `duration`; `adds_busy` is false for the second action of a
    /// pair. False (with failure_ set) for an unusable duration or a time beyond a double.
    constexpr bool execute(std::uint32_t r, rank_state& st, std::uint32_t index, const action& a, double start,
                           double duration, bool adds_busy = true) {
        if (!usable_cost(duration)) return fail(verdict_code::invalid_cost, r, index, a, duration);
        const double end = start + duration;
        if (!finite_time(end)) return fail(verdict_code::time_overflow, r, index, a, start);
        st.clock.run(a.kind, start, end, costs_.memory_change(a), adds_busy);
        publish(pending_, a, end);
        if (a.kind == op::backward_input) {
            if (costs_.fill_with_weight) pending_.insert(a.stage, a.microbatch, pending_times::input_gradient_done, end);
        } else if (a.kind == op::backward_weight && costs_.fill_with_weight) {
            pending_.erase(a.stage, a.microbatch, pending_times::input_gradient_done);
        }
        sink_.push(timed_action{r, index, a, start, end});
        return true;
    }

    /// With fill_with_weight: run ready W's of this rank while it would otherwise idle until
    /// `ready`. The W's run in the rank's order; the first whose I has not run stops the fill.
    constexpr bool fill_idle(std::uint32_t r, rank_state& st, double ready) {
        while (st.weight_position < st.position && !st.weights.done()) { // catch up with the rank
            st.weights.advance();
            ++st.weight_position;
        }
        while (st.clock.free_at < ready) {
            while (!st.weights.done() && st.weights.current().kind != op::backward_weight) {
                st.weights.advance();
                ++st.weight_position;
            }
            if (st.weights.done()) return true;
            const action w = st.weights.current();
            if (pending_.find(w.stage, w.microbatch, pending_times::input_gradient_done) == pending_times::missing) {
                return true; // its I has not run yet
            }
            if (!execute(r, st, st.weight_position, w, st.clock.free_at, costs_.duration(w))) return false;
            st.weights.advance();
            ++st.weight_position;
        }
        return true;
    }

    /// Summaries (no timeline) take turns round robin, which bounds what is in flight; with a
    /// timeline sink a rank runs until it blocks and the last woken runs next, which keeps the
    /// order in which the sink receives actions as it has always been (replay.hpp).
    static constexpr bool summary_only = std::is_same_v<Sink, discard_timeline>;
    static constexpr std::uint32_t turn = summary_only ? 64 : run_until_blocked;

public:
    // The replay engine's model (replay.hpp).
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept {
        return static_cast<std::uint32_t>(state_.size());
    }
    [[nodiscard]] constexpr bool done(std::uint32_t r) const { return state_[r].next.done(); }
    [[nodiscard]] constexpr std::uint32_t waited_on(std::uint32_t r) const noexcept {
        return owner_[state_[r].waiting_stage];
    }
    [[nodiscard]] constexpr blocked_rank blocked_at(std::uint32_t r) const {
        return blocked_rank{r, state_[r].position, state_[r].next.current()};
    }
    template <class Engine>
    constexpr step_result step(std::uint32_t r, Engine& engine) {
        rank_state& st = state_[r];
        const action a = st.next.current();
        if (a.kind == op::overlap_f_b || a.overlapped_with_next) return run_pair(r, engine);
        if (a.kind == op::backward_weight && st.position < st.weight_position) { // ran early
            st.next.advance();
            ++st.position;
            return st.next.done() ? step_result::finished : step_result::ran;
        }
        const double ready = input_ready(a, r);
        if (ready == pending_times::missing) return step_result::blocked;
        if (costs_.fill_with_weight && !fill_idle(r, st, ready)) return step_result::failed;
        const double start = start_time(ready, st.clock.free_at);
        if (!execute(r, st, st.position, a, start, costs_.duration(a))) return step_result::failed;
        consume_input(a);
        wake_consumer<owners_known::partly>(a, r, stages_, owner_.data(), engine);
        st.next.advance();
        ++st.position;
        return st.next.done() ? step_result::finished : step_result::ran;
    }

    /// step() in a loop, with the rank's state and its summary in local variables (what the
    /// engine calls; replay.hpp). Every number is computed by the same operations in the same
    /// order as step() and execute(), so the results are the same to the bit. fill_with_weight
    /// (a W may run before the cursor reaches it) takes step() as it is.
    template <class Engine>
    constexpr step_result run_turn(std::uint32_t r, std::uint32_t budget, Engine& engine) {
        if (costs_.fill_with_weight) {
            step_result s = step_result::ran;
            do {
                if (budget-- == 0) return step_result::ran;
                s = step(r, engine);
            } while (s == step_result::ran);
            return s;
        }
        rank_state& st = state_[r];
        cursor_t& c = st.next; // in place: a copy costs more than it saves (advance() is a call)
        std::uint32_t position = st.position;
        rank_clock clock = st.clock; // a copy, in registers
        const in_flight_results::rings in_flight = pending_.view();
        const bool uniform = uniform_;
        const auto store = [&] {
            st.position = position;
            st.clock = clock;
        };
        for (;;) {
            if (budget-- == 0) {
                store();
                return step_result::ran;
            }
            const action a = c.current();
            if (a.kind == op::overlap_f_b || a.overlapped_with_next) {
                store();
                const step_result s = run_pair(r, engine);
                if (s != step_result::ran) return s;
                position = st.position;
                clock = st.clock;
                continue;
            }
            if (checker_ != nullptr && !claim(r, a)) {
                store();
                return step_result::failed;
            }
            // input_ready(), taking the input at once: a step that fails after this ends the replay.
            double ready = 0.0;
            action input{};
            if (dependency(a, input)) {
                const double t = in_flight.take(input.stage, input.microbatch, result_kind(input.kind));
                if (t == pending_times::missing) {
                    st.waiting_stage = input.stage;
                    store();
                    return step_result::blocked;
                }
                ready = arrival(t, input, r);
            }
            if (checker_ != nullptr && !checker_->record_unit(a)) {
                store();
                return step_result::failed;
            }
            const double start = start_time(ready, clock.free_at);
            // execute(), with the uniform costs from the tables replay() filled
            double duration = 0.0;
            if (uniform) {
                duration = uniform_duration_[static_cast<std::size_t>(a.kind)]; // usable: replay() checked
            } else {
                duration = costs_.duration(a);
                if (!usable_cost(duration)) {
                    store();
                    fail(verdict_code::invalid_cost, r, position, a, duration);
                    return step_result::failed;
                }
            }
            const double end = start + duration;
            if (!finite_time(end)) {
                store();
                fail(verdict_code::time_overflow, r, position, a, start);
                return step_result::failed;
            }
            clock.run(a.kind, start, end,
                      uniform ? uniform_memory_[static_cast<std::size_t>(a.kind)] : costs_.memory_change(a));
            publish(in_flight, a, end);
            sink_.push(timed_action{r, position, a, start, end});
            wake_consumer<owners_known::partly>(a, r, stages_, owner_.data(), engine);
            c.advance();
            ++position;
            if (c.done()) {
                store();
                return step_result::finished;
            }
        }
    }

private:
    /// False if some rank never finishes (a deadlock) or a cost is unusable (failure_).
    constexpr bool replay(simulation& out) {
        const std::uint32_t p = src_.ranks();
        state_.assign(p, rank_state{});
        pending_.reset(stages_, src_.microbatches(), ring_bits_);
        uniform_ = costs_.per_stage.empty();
        // cost_model::duration() and memory_change() of every compute op, for uniform costs. An
        // unusable duration is checked, and named, where an action first uses it.
        for (std::size_t k = 0; k < uniform_duration_.size(); ++k) {
            const action a{0, static_cast<op>(k), 0};
            uniform_duration_[k] = costs_.duration(a);
            uniform_memory_[k] = costs_.memory_change(a);
            uniform_ = uniform_ && usable_cost(uniform_duration_[k]);
        }
        for (std::uint32_t r = 0; r < p; ++r) {
            state_[r].next = src_.cursor(r);
            if (costs_.fill_with_weight) state_[r].weights = src_.cursor(r);
        }
        replay_engine<simulator, turn> engine{*this};
        if (!engine.run()) return false;
        for (std::uint32_t r = 0; r < p; ++r) out.ranks[r] = summary_of(state_[r].clock);
        return true;
    }

    /// The first try (run()): the replay with validate()'s structural checks per action. False
    /// on anything but a valid schedule whose costs all work; the caller then starts over.
    constexpr bool checked_replay(simulation& out) {
        if (costs_.fill_with_weight || !usable_cost(costs_.p2p_latency)) return false;
        validator<Source> structure{src_};
        owner_.assign(stages_, no_rank);
        out.ranks.assign(src_.ranks(), rank_summary{});
        checker_ = &structure;
        const bool ok = replay(out) && !structure.units_missing();
        checker_ = nullptr;
        if (!ok) {
            failure_ = verdict{};
            return false;
        }
        took_checked_ = true;
        summarise_ranks(out, &rank_summary::last_end, &rank_summary::busy);
        return true;
    }

    /// Runs the overlapped pair at the rank's cursor (a marker or a flagged F) and moves the
    /// cursor past it; blocked if an input of either action is missing.
    template <class Engine>
    constexpr step_result run_pair(std::uint32_t r, Engine& engine) {
        rank_state& st = state_[r];
        auto second = st.next;
        std::uint32_t index = st.position;
        const bool marker = second.current().kind == op::overlap_f_b;
        if (marker) {
            second.advance();
            ++index;
        }
        if (checker_ != nullptr && second.done()) return step_result::failed;
        action f = second.current();
        second.advance();
        if (checker_ != nullptr && second.done()) return step_result::failed;
        const action b = second.current();
        if (checker_ != nullptr && !(well_formed_pair(marker, f, b) && claim(r, f) && claim(r, b))) {
            return step_result::failed;
        }
        const double ready_f = input_ready(f, r);
        if (ready_f == pending_times::missing) return step_result::blocked;
        const double ready_b = input_ready(b, r);
        if (ready_b == pending_times::missing) return step_result::blocked;
        if (checker_ != nullptr && !(checker_->record_unit(f) && checker_->record_unit(b))) {
            return step_result::failed;
        }
        const double ready = ready_f > ready_b ? ready_f : ready_b;
        if (costs_.fill_with_weight && !fill_idle(r, st, ready)) return step_result::failed;
        const double start = start_time(ready, st.clock.free_at);
        const double duration = costs_.overlapped(f, b);
        f.overlapped_with_next = true;
        if (!execute(r, st, index, f, start, duration)) return step_result::failed;
        if (!execute(r, st, index + 1, b, start, duration, false)) return step_result::failed; // the same computation
        consume_input(f);
        consume_input(b);
        wake_consumer<owners_known::partly>(f, r, stages_, owner_.data(), engine);
        wake_consumer<owners_known::partly>(b, r, stages_, owner_.data(), engine);
        second.advance();
        st.next = second;
        st.position = index + 2;
        return st.next.done() ? step_result::finished : step_result::ran;
    }

    const Source& src_;
    const cost_model& costs_;
    Sink& sink_;
    std::uint32_t stages_;
    std::uint32_t microbatches_;
    std::uint32_t ring_bits_;
    std::vector<std::uint32_t> owner_;
    std::vector<rank_state> state_;
    in_flight_results pending_;
    verdict failure_{};
    validator<Source>* checker_ = nullptr; ///< the first try's structural checks, while it runs
    bool took_checked_ = false;
    bool uniform_ = true; ///< no per-stage costs, all durations usable: the two tables below hold them
    std::array<double, 4> uniform_duration_{};
    std::array<double, 4> uniform_memory_{};
};

} // namespace detail

/// Replays any action source on a cost model, pushing every executed action with its times.
template <action_source Source, timeline_sink Sink>
[[nodiscard]] constexpr simulation simulate_actions(const Source& src, const cost_model& costs, Sink& sink) {
    return detail::simulator<Source, Sink>{src, costs, sink}.run();
}

/// Replays a policy; an iteration<P> has its own overload in simulate_iteration.hpp (with
/// communication); without that header it does not compile.
template <schedule_only_policy P, timeline_sink Sink>
[[nodiscard]] constexpr simulation simulate(const P& pol, const cost_model& costs, Sink& sink) {
    if (const shape_check c = pol.check(); !c) {
        simulation out{};
        out.check.code = verdict_code::invalid_shape;
        out.check.shape_message = c.message;
        return out;
    }
    simulation out = simulate_actions(detail::policy_actions<P>{pol}, costs, sink);
    if (out) {
        out.shape = pol.shape;
        out.stages = stage_map{P::layout, pol.shape};
    }
    return out;
}

template <schedule_only_policy P>
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
    simulation out = simulate_actions(detail::action_lists{per_rank, stages, m}, costs, sink);
    if (out) {
        out.stages = stage_map::of_actions(per_rank, stages);
        out.shape = {static_cast<std::uint32_t>(per_rank.size()), m, out.stages.chunks()};
    }
    return out;
}

/// Peak in-flight chunk activations of one rank, from its order alone (no costs needed).
template <schedule_policy P>
[[nodiscard]] constexpr std::uint32_t peak_activations(const P& pol, std::uint32_t rank) {
    detail::activation_counter count{};
    for (auto c = pol.cursor(rank); !c.done(); c.advance()) count.add(c.current().kind);
    return static_cast<std::uint32_t>(count.peak);
}

} // namespace pipesched
