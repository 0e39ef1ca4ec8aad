// pipesched: the one replay engine behind validate(), simulate() and their iteration forms.
//
// Every analysis of an order asks the same question: if each rank runs its sequence in order,
// and an event may have to wait for something another rank produces, how far does each rank
// get, and when? This header answers the "how far" once:
//
//   - replay_engine runs ranks from a work list. A rank runs until its next event is blocked
//     (or, with a turn limit, until its turn is over) and is run again when a rank it may be
//     waiting for produces something (wake()). Ranks that are still blocked when the list runs
//     dry are deadlocked; report_deadlock() follows who waits for whom and names the cycle.
//   - The model (one per kind of input) decides what the event at a rank's cursor needs and
//     does: the schedule replay (compute dependencies between neighbouring stages, validate.hpp
//     untimed, simulate.hpp timed) and the iteration replay (blocking receives and the grad_norm
//     collective, validate_iteration.hpp untimed, simulate_iteration.hpp timed).
//   - The rules the models apply (an action's input, who reads its result, when an input is
//     there, memory) are timing_model.hpp's, so that every replay counts them the same way.
//
// The order in which ranks run does not change any result: a rank's progress only depends on
// what its inputs are, not on when they were produced (a Kahn network), so the final state,
// and therefore a deadlock's cycle, is the same in any order. It changes two things the caller
// sees: the order in which a timeline sink receives events (run_until_blocked: the last rank
// woken runs next, the order these replays have always had), and how many produced-but-unread
// results exist at once (with a turn limit the ranks advance together, which bounds them).
#pragma once

#include <cstdint>
#include <vector>

#include "../action.hpp"
#include "../event.hpp"
#include "../timing_model.hpp"
#include "verdict.hpp"

namespace pipesched::detail {

/// What a model's step did with the event at a rank's cursor.
enum class step_result : std::uint8_t {
    ran,      ///< it ran; the cursor moved past it (and past a pair's second action)
    finished, ///< it ran and was the rank's last
    blocked,  ///< it waits for another rank; the cursor stays
    failed,  ///< the model found an error (an unusable cost); the replay stops
};

/// No rank (yet): a stage's owner before any action of it was met.
inline constexpr std::uint32_t no_rank = 0xFFFFFFFFu;

/// No turn limit: a rank runs until it blocks.
inline constexpr std::uint32_t run_until_blocked = 0xFFFFFFFFu;

/// The work-list replay. A Model provides
///   std::uint32_t ranks() const;
///   bool done(std::uint32_t rank) const;
///   step_result step(std::uint32_t rank, replay_engine& engine); // calls engine.wake(q);
///                                                                 // finished after the last
/// or, instead of step(), a loop over steps that keeps the rank's state in local variables:
///   step_result run_turn(std::uint32_t rank, std::uint32_t turn, replay_engine& engine);
///   // at most `turn` steps (run_until_blocked: no limit); ran if the turn ended first
/// and, for deadlock_verdict(), waited_on(rank) and blocked_at(rank).
template <class Model, std::uint32_t Turn = run_until_blocked>
class replay_engine {
public:
    constexpr explicit replay_engine(Model& model) : model_{model} {}

    /// True when every rank finished; false on a failed step or when ranks stay blocked.
    constexpr bool run() {
        const std::uint32_t p = model_.ranks();
        queue_.assign(p, 0);
        queued_.assign(p, 0);
        // Rank 0 runs first in either order.
        for (std::uint32_t r = 0; r < p; ++r) wake(round_robin ? r : p - 1 - r);
        while (size_ > 0) {
            const std::uint32_t r = dequeue();
            queued_[r] = 0;
            running_ = r;
            // A queued rank has something left to run: wake() never queues a finished one.
            step_result s = step_result::ran;
            if constexpr (requires { model_.run_turn(r, Turn, *this); }) {
                s = model_.run_turn(r, Turn, *this); // the model's own loop: state in registers
            } else {
                std::uint32_t budget = Turn;
                do {
                    if constexpr (round_robin) {
                        if (budget-- == 0) break;
                    }
                    s = model_.step(r, *this);
                } while (s == step_result::ran);
            }
            running_ = none;
            if (s == step_result::failed) return false;
            if (s == step_result::ran) wake(r); // its turn is over (round robin)
        }
        for (std::uint32_t r = 0; r < p; ++r) {
            if (!model_.done(r)) return false;
        }
        return true;
    }

    /// Rank q may be able to go on: queue it unless it is running, queued or finished. A rank
    /// woken without cause finds its event still blocked and stops again at no other cost.
    [[gnu::always_inline]] constexpr void wake(std::uint32_t q) {
        if (q == running_ || queued_[q] || model_.done(q)) return;
        queued_[q] = 1;
        if constexpr (round_robin) {
            queue_[(head_ + size_) % queue_.size()] = q;
        } else {
            queue_[size_] = q;
        }
        ++size_;
    }

private:
    static constexpr bool round_robin = Turn != run_until_blocked;
    static constexpr std::uint32_t none = 0xFFFFFFFFu;

    [[nodiscard]] constexpr std::uint32_t dequeue() noexcept {
        --size_;
        if constexpr (round_robin) {
            const std::uint32_t r = queue_[head_];
            head_ = (head_ + 1) % static_cast<std::uint32_t>(queue_.size());
            return r;
        } else {
            return queue_[size_];
        }
    }

    Model& model_;
    std::vector<std::uint32_t> queue_{};  ///< a stack, or a ring with a turn limit
    std::vector<std::uint8_t> queued_{};  ///< not vector<bool>: clang 14 cannot run it in constexpr
    std::uint32_t head_ = 0;
    std::uint32_t size_ = 0;
    std::uint32_t running_ = none;
};

/// The deadlock verdict after a replay that left ranks blocked. Every blocked rank waits for
/// exactly one other (model.waited_on), so following the waits from the first blocked rank
/// closes a cycle; the verdict names the rank where it closes and up to max_cycle_report of its
/// ranks with the action each is blocked at (model.blocked_at). A rank can also wait for one
/// that has finished (a collective it never joined): the cycle is then that single rank.
template <class Model>
constexpr verdict deadlock_verdict(const Model& model) {
    const std::uint32_t p = model.ranks();
    verdict v{};
    v.code = verdict_code::deadlock;
    std::uint32_t start = 0;
    while (start < p && model.done(start)) ++start;
    if (start == p) return v; // not a deadlock: nothing is blocked
    std::vector<std::uint8_t> seen(p, 0);
    std::uint32_t r = start;
    while (!seen[r] && !model.done(r)) {
        seen[r] = 1;
        r = model.waited_on(r);
    }
    const blocked_rank at_r = model.blocked_at(r);
    v.rank = r;
    v.index = at_r.index;
    v.subject = at_r.waiting;
    if (model.done(r)) {
        v.cycle[0] = model.blocked_at(start);
        v.cycle_length = 1;
        return v;
    }
    std::uint32_t length = 0;
    std::uint32_t q = r;
    do {
        if (length < max_cycle_report) v.cycle[length] = model.blocked_at(q);
        ++length;
        q = model.waited_on(q);
    } while (q != r && length <= p);
    v.cycle_length = length;
    return v;
}

/// Whether every stage's owner is known when a replay wakes consumers: after validate()'s
/// structure pass, yes; in a replay that checks as it goes (simulate()'s first try), a stage
/// not met yet has no_rank.
enum class owners_known : bool { all = true, partly = false };

/// The one rank that can be blocked on the result of `a` owns the stage that reads it
/// (timing_model.hpp's consumer_stage); wakes it unless it is rank r itself or not known yet.
template <owners_known Owners, class Engine>
[[gnu::always_inline]] constexpr void wake_consumer(const action& a, std::uint32_t r, std::uint32_t stages,
                                                    const std::uint32_t* owners, Engine& engine) {
    std::uint32_t consumer = 0;
    if (!consumer_stage(a, stages, consumer)) return;
    const std::uint32_t w = owners[consumer];
    if (w != r && (Owners == owners_known::all || w != no_rank)) engine.wake(w);
}

} // namespace pipesched::detail
