// pipesched: the rules of one whole iteration (see iteration.hpp), on top of validate().
//
// validate(iteration<P>) and validate_events(lists, shape, placement) check, in order:
//   1. the compute actions alone, exactly as validate() does for a schedule (overlap_f_b
//      markers included, so that overlapped pairs are checked and replayed as pairs);
//   2. one pass per rank, in order:
//      - a send/recv names the rank of the neighbouring stage as its peer; a tensor is sent
//        after the compute that produces it and received before the compute that consumes it;
//      - loss runs on the last stage between F and B/I of its microbatch; recompute runs between
//        a unit's F and its B/I;
//      - a chunk's grad_sync follows all backward work (B, or W) of that chunk on the rank;
//      - the two events right after an overlap_f_b marker are the pair's compute events
//        (nothing in between: its receives come before the marker, its sends after the pair;
//        otherwise malformed_overlap);
//      - grad_norm and optimizer_step follow every grad_sync of the rank (otherwise the update
//        uses gradients that are not yet reduced: a stale update);
//   3. every send has exactly one receive and vice versa, and on each channel (sender, receiver,
//      activation or gradient) they pair up in the same order, as NCCL matches p2p messages;
//   4. a replay with blocking receives (a recv waits until its send has been posted; sends do
//      not block, like Megatron's batched isend/irecv) and grad_norm as a collective of all
//      pipeline ranks (Megatron reduces the norm over the model-parallel group) finishes;
//      otherwise the verdict is a deadlock naming the cycle.
// Linear in the number of events; per rank, sequence numbers for its two neighbours and a
// table for any other peer. When everything passes, which is the common case, steps 1, 2 and
// 4 share one walk over the events (each event is checked when the replay reaches it; step 1
// on the per-unit flags of step 2, without its own replay, which the iteration replay implies:
// run_one_replay() says why), then step 3 runs; on any error the steps run one after the other
// as listed, so the verdict is always the first error in this order.
//
// validate(iteration<P>) tries something cheaper first: the library placed every event but
// P's own, so when P's compute passes validate() and each channel pairs its sends and
// receives in the same order, all four steps pass (detail::valid_by_construction says why); it
// walks P's compute twice (validate(P)'s two passes, the first also counting each channel's
// sends and receives) instead of every event of the iteration. Anything else gets the checks
// above, which name the error.
// validate_events() has no such shortcut: events from outside can break any rule.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "../event.hpp"
#include "../action.hpp"
#include "../iteration.hpp"
#include "../policy.hpp"
#include "../shape.hpp"
#include "../sink.hpp"
#include "replay.hpp"
#include "validate.hpp"

namespace pipesched {

/// Per-rank event lists from outside (a simulator's trace, a hand-written stream).
class event_lists {
public:
    constexpr event_lists(std::span<const std::vector<event>> per_rank, pipesched::shape dims,
                          placement layout) noexcept
        : per_rank_{per_rank}, shape_{dims}, layout_{layout} {}
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept {
        return static_cast<std::uint32_t>(per_rank_.size());
    }
    [[nodiscard]] constexpr pipesched::shape shape() const noexcept { return shape_; }
    [[nodiscard]] constexpr placement layout() const noexcept { return layout_; }

    using cursor_type = detail::list_cursor<event>;
    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const noexcept {
        return cursor_type{per_rank_[rank]};
    }

private:
    std::span<const std::vector<event>> per_rank_;
    pipesched::shape shape_;
    placement layout_;
};

namespace detail {

/// A schedule policy seen as an event source.
template <schedule_policy P>
class policy_events {
public:
    constexpr explicit policy_events(const P& pol) : pol_{pol} {}
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept { return shape().ranks; }
    [[nodiscard]] constexpr pipesched::shape shape() const noexcept { return pol_.shape; }
    [[nodiscard]] static constexpr placement layout() noexcept { return P::layout; }
    [[nodiscard]] constexpr auto cursor(std::uint32_t rank) const { return pol_.cursor(rank); }

private:
    const P& pol_;
};

/// The compute events of an event source, as actions, for the schedule-level validator.
template <class Source>
class compute_projection {
public:
    constexpr explicit compute_projection(const Source& src) : src_{src} {}
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept { return src_.ranks(); }
    [[nodiscard]] constexpr std::uint32_t stages() const noexcept { return src_.shape().stages(); }
    [[nodiscard]] constexpr std::uint32_t microbatches() const noexcept {
        return src_.shape().microbatches;
    }

    class cursor_type {
    public:
        constexpr cursor_type() = default;
        constexpr cursor_type(const Source& src, std::uint32_t rank)
            : inner_{src.cursor(rank)}, layout_{src.layout()}, ranks_{src.ranks()} {
            skip();
        }
        [[nodiscard]] constexpr bool done() const { return inner_.done(); }
        [[nodiscard]] constexpr action current() const {
            const event e = inner_.current();
            return action{stage_of(layout_, ranks_, e.rank, e.chunk), e.kind, e.microbatch};
        }
        constexpr void advance() {
            inner_.advance();
            skip();
        }

    private:
        constexpr void skip() {
            while (!inner_.done() && !is_compute(inner_.current().kind) &&
                   inner_.current().kind != op::overlap_f_b) {
                inner_.advance();
            }
        }
        decltype(std::declval<const Source&>().cursor(0u)) inner_{};
        placement layout_ = placement::loop;
        std::uint32_t ranks_ = 1;
    };
    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const {
        return cursor_type{src_, rank};
    }

private:
    const Source& src_;
};

/// iteration_validator::run(without_replay): every rule but the deadlock replay, for a caller
/// whose own (timed) replay detects deadlocks.
enum replay_choice : bool { without_replay = false, with_replay = true };

/// What the iteration checks keep per (stage, microbatch) unit: iteration_validator's flags,
/// and, for the activation and the gradient the unit sends, the send's sequence number on its
/// channel minus the receive's (modulo 2^32): 0 once both ran when they pair up. The positions
/// of a send and a receive, needed only to name an error, are found again by walking the one
/// rank concerned (iteration_validator::position_of): kept here they tripled the table, and at
/// p = 64, m = 4096, v = 4 (1 M units) its cache misses cost a quarter of validate(iteration)'s time.
struct iteration_unit_state {
    std::uint16_t flags = 0;
    std::uint32_t activation_sequence_gap = 0;
    std::uint32_t gradient_sequence_gap = 0;
};

template <class Source>
class iteration_validator {
public:
    constexpr explicit iteration_validator(const Source& src)
        : src_{src}, dims_{src.shape()}, layout_{src.layout()}, stages_{src.shape().stages()},
          units_(std::size_t{src.shape().stages()} * src.shape().microbatches) {
        // owner() once per stage: locate_stage divides, and check_rank asks for every event.
        stage_owner_.reserve(stages_);
        for (std::uint32_t s = 0; s < stages_; ++s) stage_owner_.push_back(locate_stage(layout_, dims_.ranks, s).rank);
    }

    /// The first error; an order with a fatal error (anything but the rule violations the
    /// iteration replay can still time: stale_update, grad_sync_before_backward, loss_misplaced,
    /// recompute_misplaced) reports that one, so that a verdict those four codes can be
    /// replayed safely: every event of every rank has been checked (ranges, peers, matching
    /// sends and receives, no deadlock), not only those up to the first rule violation.
    constexpr verdict run(replay_choice deadlock_check = with_replay) {
        if (deadlock_check == with_replay) {
            if (run_one_replay()) return first_rule_violation_;
            // Something failed: start over step by step, which reports the first error in the
            // documented order (the compute replay's deadlock before the iteration rules).
            units_.assign(units_.size(), unit_state{});
            result_ = verdict{};
            first_rule_violation_ = verdict{};
            ranks_with_norm_ = 0;
            one_pass_ = false;
            same_rank_input_late_ = false;
        }
        return run_step_by_step(deadlock_check);
    }

    /// The steps one after the other, the compute projection replayed on its own (what run()
    /// falls back to; the tests compare the two). Call on a fresh validator.
    constexpr verdict run_step_by_step(replay_choice deadlock_check = with_replay) {
        result_ = validate_actions(compute_projection<Source>{src_});
        if (!result_) return result_;
        if (src_.ranks() != dims_.ranks) {
            fail(verdict_code::out_of_range, 0, 0, event{});
            return result_;
        }
        for (std::uint32_t r = 0; r < src_.ranks(); ++r) {
            if (check_rank(r)) return result_;
        }
        if (match_sends_and_receives()) return result_;
        if (deadlock_check == with_replay) replay();
        if (!result_) return result_;
        return first_rule_violation_;
    }

    /// The common case in one walk over the events: the compute projection's structure check
    /// (on this validator's own unit flags, compute_checks_ok), the per-rank rules and the
    /// iteration replay together (each event is checked when its rank first reaches it), then
    /// the send/receive matching; the compute projection's own replay is left out. That replay
    /// cannot fail when these pass and, in addition, every compute action whose input comes
    /// from a stage on the same rank follows that input in the rank's order (checked in
    /// check_event): a cross-rank input is received before its consumer (input_not_received),
    /// its send follows its producer (send_before_compute) and the receive waited for that
    /// send in the iteration replay, so the order in which the iteration replay ran the
    /// compute actions is one the compute replay accepts (an overlapped pair's F can wait for
    /// its B: nothing reads the F before the pair's sends). The per-rank rules only read what
    /// their own rank did before (and the sequence numbers they add up are compared after
    /// every rank), so checking the ranks interleaved finds the same errors as rank by rank;
    /// which one is found first may differ, hence the start over on any error. True with
    /// first_rule_violation_ as the answer; false if anything failed, and the caller starts
    /// over.
    constexpr bool run_one_replay() {
        if (src_.ranks() != dims_.ranks) return false;
        one_pass_ = true;
        std::vector<rank_checks> checks(src_.ranks(), start_rank());
        bool ok = false;
        {
            replay_model model{*this, &checks};
            replay_engine<replay_model> engine{model};
            ok = engine.run();
        }
        for (std::uint32_t r = 0; r < src_.ranks() && ok; ++r) ok = !end_rank(r, checks[r]);
        one_pass_ = false;
        return ok && !units_incomplete() && !same_rank_input_late_ && !match_sends_and_receives();
    }

    /// run_one_replay() without its replay: steps 1 to 3 in one pass, true if they all pass
    /// (first_rule_violation() is then the answer, unless a replay deadlocks). simulate(it)'s
    /// first try: its timed replay, with the same blocking semantics, takes the place of the
    /// untimed one. Call on a fresh validator.
    constexpr bool run_one_pass() {
        if (src_.ranks() != dims_.ranks) return false;
        one_pass_ = true;
        bool failed = false;
        for (std::uint32_t r = 0; r < src_.ranks() && !failed; ++r) failed = check_rank(r);
        one_pass_ = false;
        return !failed && !units_incomplete() && !same_rank_input_late_ && !match_sends_and_receives();
    }

    /// The first of the rules an iteration replay can still time (stale_update,
    /// grad_sync_before_backward, loss_misplaced, recompute_misplaced), or valid.
    [[nodiscard]] constexpr const verdict& first_rule_violation() const noexcept { return first_rule_violation_; }
    /// Ranks with a grad_norm, the collective's members, as the per-rank pass counted them
    /// (complete when the verdict is one a replay can time).
    [[nodiscard]] constexpr std::uint32_t ranks_with_norm() const noexcept { return ranks_with_norm_; }

private:
    // Per unit (stage, microbatch): what this pass has seen, and the p2p bookkeeping.
    enum bits : std::uint16_t {
        seen_forward = 1,
        seen_backward = 2, // B or I
        seen_loss = 4,
        seen_recompute = 8,
        got_activation = 16, // recv_activation of this unit's input, before its F
        got_gradient = 32,   // recv_gradient of this unit's output grad, before its B/I
        sent_activation = 64,
        sent_gradient = 128,
        posted_activation = 256, // replay: the send has run
        posted_gradient = 512,
        seen_full_backward = 1024, // a B (seen_backward alone: an I)
        seen_weight = 2048,
    };
    using unit_state = iteration_unit_state;
    struct channel {
        std::uint32_t peer;
        op kind;
        std::uint32_t count;
    };

    [[nodiscard]] constexpr std::uint32_t stage(const event& e) const noexcept {
        return stage_of(layout_, dims_.ranks, e.rank, e.chunk);
    }
    [[nodiscard]] constexpr std::uint32_t owner(std::uint32_t s) const noexcept { return stage_owner_[s]; }
    [[nodiscard]] constexpr unit_state& unit(std::uint32_t s, std::uint32_t mb) noexcept {
        return units_[std::size_t{s} * dims_.microbatches + mb];
    }
    constexpr bool fail(verdict_code code, std::uint32_t rank, std::uint32_t index, const event& e) {
        result_ = verdict{};
        result_.code = code;
        result_.rank = rank;
        result_.index = index;
        result_.subject = action{stage(e), e.kind, e.microbatch};
        result_.other_rank = e.peer;
        return true;
    }
    /// A rule violation that does not stop the checks (see run()); the first one in the order
    /// of the ranks is kept (the one-walk replay meets them in the order the ranks run).
    constexpr void soft_fail(verdict_code code, std::uint32_t rank, std::uint32_t index, const event& e) {
        const verdict& kept = first_rule_violation_;
        if (kept.code != verdict_code::valid && (kept.rank < rank || (kept.rank == rank && kept.index < index))) {
            return;
        }
        first_rule_violation_.code = code;
        first_rule_violation_.rank = rank;
        first_rule_violation_.index = index;
        first_rule_violation_.subject = action{stage(e), e.kind, e.microbatch};
        first_rule_violation_.other_rank = e.peer;
    }
    /// Next sequence number on the channel (rank -> peer for sends, peer -> rank for receives).
    [[gnu::noinline]] static constexpr std::uint32_t next_seq(std::vector<channel>& table, std::uint32_t peer, op kind) {
        for (channel& c : table) {
            if (c.peer == peer && c.kind == kind) return c.count++;
        }
        table.push_back(channel{peer, kind, 1});
        return 0;
    }

    /// What the per-rank rules (step 2) carry from one event of a rank to the next: check_rank()
    /// walks a rank with one, the one-walk replay keeps one per rank between its turns.
    struct rank_checks {
        std::vector<std::uint32_t> backward_left{}; ///< per chunk: B and W still to come
        std::vector<std::uint8_t> synced{};         ///< per chunk: its grad_sync ran
        /// Sequence numbers per p2p kind (send/recv x activation/gradient) and neighbour
        /// (the previous rank, the next), and for any other peer a table.
        std::array<std::uint32_t, 8> neighbour_sequence{};
        std::vector<channel> channels{};
        std::uint32_t syncs = 0;
        std::uint32_t backward_total_left = 0;
        std::uint32_t pair_left = 0;     ///< events of an overlapped pair still to come
        std::uint32_t index = 0;         ///< events of the rank checked so far
        bool joins_norm = false;
        std::uint32_t pair_chunk = 0;      ///< the unit of an overlapped pair's F (one pass)
        std::uint32_t pair_microbatch = 0;
    };
    [[nodiscard]] constexpr rank_checks start_rank() const {
        rank_checks k{};
        k.backward_left.assign(dims_.chunks, dims_.microbatches);
        k.synced.assign(dims_.chunks, 0);
        k.backward_total_left = dims_.chunks * dims_.microbatches;
        return k;
    }

    /// Next sequence number on the channel of a send or receive of rank r with `peer`. In the
    /// library's placements a rank's peers are its neighbours (r - 1 and r + 1 modulo the
    /// ranks), whose counters are at hand; any other peer's are looked up.
    [[nodiscard, gnu::always_inline]] constexpr std::uint32_t next_seq(rank_checks& k, std::uint32_t r, std::uint32_t peer,
                                                                      op kind) const {
        static_assert(static_cast<int>(op::recv_activation) == static_cast<int>(op::send_activation) + 1 &&
                      static_cast<int>(op::send_gradient) == static_cast<int>(op::send_activation) + 2 &&
                      static_cast<int>(op::recv_gradient) == static_cast<int>(op::send_activation) + 3);
        const std::uint32_t next = r + 1 == dims_.ranks ? 0 : r + 1;
        const std::uint32_t previous = r == 0 ? dims_.ranks - 1 : r - 1;
        if (peer != next && peer != previous) return next_seq(k.channels, peer, kind);
        const auto p2p_kind = static_cast<std::uint32_t>(kind) - static_cast<std::uint32_t>(op::send_activation);
        return k.neighbour_sequence[p2p_kind * 2 + (peer == next ? 1 : 0)]++;
    }

    constexpr bool check_rank(std::uint32_t r) {
        rank_checks k = start_rank();
        for (auto c = src_.cursor(r); !c.done(); c.advance()) {
            const event e = c.current();
            if (check_event(r, k, e, stage(e))) return true;
        }
        return end_rank(r, k);
    }

    /// The rank's last event has been checked: no pair may be left open.
    constexpr bool end_rank(std::uint32_t r, const rank_checks& k) {
        if (k.pair_left > 0) { // a marker too close to the end (also refused by step 1)
            const event marker{op::overlap_f_b, 0, static_cast<std::uint16_t>(r), 0, no_peer};
            return fail(verdict_code::malformed_overlap, r, k.index - 1, marker);
        }
        return false;
    }

    /// Step 2's rules (and, in one pass, step 1's structure check) for the next event of rank
    /// r, of stage s (stage(e), computed before e's range is checked); true on an error
    /// (result_ says which; in one pass, a broken compute rule leaves it valid: the caller
    /// starts over).
    [[gnu::always_inline]] constexpr bool check_event(std::uint32_t r, rank_checks& k, const event& e, std::uint32_t s) {
        const std::uint32_t v = dims_.chunks;
        const std::uint32_t m = dims_.microbatches;
        const std::uint32_t i = k.index++;
        if (e.rank != r || e.chunk >= v || e.microbatch >= m) {
            return fail(verdict_code::out_of_range, r, i, e);
        }
        if (k.pair_left > 0) {
            if (!is_compute(e.kind)) return fail(verdict_code::malformed_overlap, r, i, e);
            if (one_pass_ && !pair_member_ok(k, e)) return true;
            --k.pair_left;
        }
        if (e.kind == op::overlap_f_b) k.pair_left = 2;
        unit_state& u = unit(s, e.microbatch);
        switch (e.kind) {
        case op::forward:
            if (one_pass_ && !compute_checks_ok(u, e.kind)) return true;
            if (s > 0 && owner(s - 1) != r && !(u.flags & got_activation)) {
                return fail(verdict_code::input_not_received, r, i, e);
            }
            if (one_pass_ && s > 0 && owner(s - 1) == r &&
                !(unit(s - 1, e.microbatch).flags & seen_forward)) {
                same_rank_input_late_ = true;
            }
            u.flags |= seen_forward;
            break;
        case op::backward:
        case op::backward_input:
            if (one_pass_ && !compute_checks_ok(u, e.kind)) return true;
            if (s + 1 < stages_ && owner(s + 1) != r && !(u.flags & got_gradient)) {
                return fail(verdict_code::input_not_received, r, i, e);
            }
            if (one_pass_ && s + 1 < stages_ && owner(s + 1) == r &&
                !(unit(s + 1, e.microbatch).flags & seen_backward)) {
                same_rank_input_late_ = true;
            }
            // has_losses() last: it walks the ranks the first time it is asked.
            if (s + 1 == stages_ && !(u.flags & seen_loss) && has_losses()) {
                soft_fail(verdict_code::loss_misplaced, r, i, e);
            }
            u.flags |= seen_backward;
            if (e.kind == op::backward) {
                u.flags |= seen_full_backward;
                --k.backward_left[e.chunk];
                --k.backward_total_left;
            }
            break;
        case op::backward_weight:
            if (one_pass_ && !compute_checks_ok(u, e.kind)) return true;
            u.flags |= seen_weight;
            --k.backward_left[e.chunk];
            --k.backward_total_left;
            break;
        case op::loss:
            if (s + 1 != stages_ || !(u.flags & seen_forward) || (u.flags & (seen_backward | seen_loss))) {
                soft_fail(verdict_code::loss_misplaced, r, i, e);
                break;
            }
            u.flags |= seen_loss;
            break;
        case op::recompute:
            if (!(u.flags & seen_forward) || (u.flags & (seen_backward | seen_recompute))) {
                soft_fail(verdict_code::recompute_misplaced, r, i, e);
                break;
            }
            u.flags |= seen_recompute;
            break;
        case op::send_activation:
        case op::send_gradient: {
            const bool act = e.kind == op::send_activation;
            if (!(act ? s + 1 < stages_ : s > 0) || e.peer >= dims_.ranks ||
                e.peer != owner(act ? s + 1 : s - 1) || e.peer == r) {
                return fail(verdict_code::p2p_wrong_peer, r, i, e);
            }
            if (!(u.flags & (act ? seen_forward : seen_backward))) {
                return fail(verdict_code::send_before_compute, r, i, e);
            }
            const auto flag = act ? sent_activation : sent_gradient;
            if (u.flags & flag) return fail(verdict_code::duplicate, r, i, e);
            u.flags |= flag;
            (act ? u.activation_sequence_gap : u.gradient_sequence_gap) += next_seq(k, r, e.peer, e.kind);
            break;
        }
        case op::recv_activation:
        case op::recv_gradient: {
            const bool act = e.kind == op::recv_activation;
            if (!(act ? s > 0 : s + 1 < stages_) || e.peer >= dims_.ranks ||
                e.peer != owner(act ? s - 1 : s + 1) || e.peer == r) {
                return fail(verdict_code::p2p_wrong_peer, r, i, e);
            }
            const auto flag = act ? got_activation : got_gradient;
            if (u.flags & flag) return fail(verdict_code::duplicate, r, i, e);
            u.flags |= flag;
            // The sender's record lives on the producing unit: the receive's sequence
            // number goes there too, for step 3 to compare with the send's.
            unit_state& producer = unit(act ? s - 1 : s + 1, e.microbatch);
            (act ? producer.activation_sequence_gap : producer.gradient_sequence_gap) -=
                next_seq(k, r, e.peer, e.kind);
            break;
        }
        case op::grad_sync:
            if (k.synced[e.chunk]) return fail(verdict_code::duplicate, r, i, e);
            if (k.backward_left[e.chunk] != 0) {
                soft_fail(verdict_code::grad_sync_before_backward, r, i, e);
                break;
            }
            k.synced[e.chunk] = 1;
            ++k.syncs;
            break;
        case op::grad_norm:
        case op::optimizer_step:
            if (e.kind == op::grad_norm && !k.joins_norm) {
                k.joins_norm = true;
                ++ranks_with_norm_;
            }
            if (k.syncs != v || k.backward_total_left != 0) {
                soft_fail(verdict_code::stale_update, r, i, e);
            }
            break;
        default: break; // param_gather, reshard, overlap_f_b: no rule of their own here
        }
        return false;
    }

    /// The one pass's share of the compute projection's structure check (validate.hpp), on
    /// this validator's unit flags instead of the projection's table: F once; B or I once,
    /// after the F; W once, after an I. It only says whether something is wrong (the caller
    /// starts over, and the step-by-step checks name it). A stage on another rank cannot occur:
    /// an event's stage follows from its rank and chunk, and check_event checked the rank.
    [[nodiscard]] static constexpr bool compute_checks_ok(const unit_state& u, op kind) noexcept {
        const std::uint32_t f = u.flags;
        switch (kind) {
        case op::forward: return !(f & seen_forward);
        case op::backward:
        case op::backward_input: return (f & seen_forward) && !(f & (seen_backward | seen_weight));
        case op::backward_weight: return (f & seen_backward) && !(f & (seen_full_backward | seen_weight));
        default: return true;
        }
    }
    /// An overlapped pair's members (the two compute events after its marker): an F, then a B
    /// or I of another unit (validate.hpp's well_formed_pair).
    [[nodiscard]] static constexpr bool pair_member_ok(rank_checks& k, const event& e) noexcept {
        if (k.pair_left == 2) {
            k.pair_chunk = e.chunk;
            k.pair_microbatch = e.microbatch;
            return e.kind == op::forward;
        }
        const bool backward = e.kind == op::backward || e.kind == op::backward_input;
        return backward && !(e.chunk == k.pair_chunk && e.microbatch == k.pair_microbatch);
    }
    /// After the one pass: a unit without its F, or its backward (a B, or an I and a W).
    [[nodiscard]] constexpr bool units_incomplete() const noexcept {
        for (const unit_state& u : units_) {
            const std::uint32_t f = u.flags;
            if (!(f & seen_forward) || !(f & seen_backward) || !(f & (seen_full_backward | seen_weight))) return true;
        }
        return false;
    }

    [[nodiscard]] constexpr bool has_losses() noexcept {
        if (!losses_known_) {
            losses_known_ = true;
            for (std::uint32_t r = 0; r < src_.ranks() && !any_loss_; ++r) {
                for (auto c = src_.cursor(r); !c.done(); c.advance()) {
                    if (c.current().kind == op::loss) {
                        any_loss_ = true;
                        break;
                    }
                }
            }
        }
        return any_loss_;
    }

    /// Position of the send or receive `e` (its kind, chunk and microbatch) in its rank's
    /// sequence, for an error found after the pass over the events: step 1 refused a second
    /// one, so the first found is the one.
    [[nodiscard]] constexpr std::uint32_t position_of(const event& e) const {
        std::uint32_t i = 0;
        for (auto c = src_.cursor(e.rank); !c.done(); c.advance(), ++i) {
            const event x = c.current();
            if (x.kind == e.kind && x.chunk == e.chunk && x.microbatch == e.microbatch) return i;
        }
        return i;
    }

    /// Step 3: for every cross-rank edge, one send and one receive, same channel position.
    /// The first error in the order of (stage, microbatch, activation before gradient); the
    /// edges of a stage are looked at once per direction, and its units in one loop over the
    /// microbatches per direction.
    constexpr bool match_sends_and_receives() {
        for (std::uint32_t s = 0; s < stages_; ++s) {
            const std::uint32_t bad_activation = first_unmatched(s, true);
            const std::uint32_t bad_gradient = first_unmatched(s, false);
            if (bad_activation <= bad_gradient && bad_activation < dims_.microbatches) {
                return unit_p2p_error(s, s + 1, bad_activation, true);
            }
            if (bad_gradient < dims_.microbatches) return unit_p2p_error(s, s - 1, bad_gradient, false);
        }
        return false;
    }

    /// The first microbatch whose activation (act) or gradient stage s sends to another rank
    /// breaks step 3's rule; the microbatch count if none does.
    [[nodiscard]] constexpr std::uint32_t first_unmatched(std::uint32_t s, bool act) const noexcept {
        const std::uint32_t m = dims_.microbatches;
        if (!(act ? s + 1 < stages_ : s > 0)) return m;
        const std::uint32_t consumer_stage = act ? s + 1 : s - 1;
        if (owner(consumer_stage) == owner(s)) return m;
        const auto sent = act ? sent_activation : sent_gradient;
        const auto received = act ? got_activation : got_gradient;
        for (std::uint32_t mb = 0; mb < m; ++mb) {
            const unit_state& u = units_[std::size_t{s} * m + mb];
            const bool is_sent = (u.flags & sent) != 0;
            const bool is_received = (units_[std::size_t{consumer_stage} * m + mb].flags & received) != 0;
            const std::uint32_t gap = act ? u.activation_sequence_gap : u.gradient_sequence_gap;
            if (is_sent != is_received || (is_sent && gap != 0)) return mb;
        }
        return m;
    }

    /// The error of step 3 for the edge from stage s to consumer_stage of microbatch mb (a
    /// send without its receive, or the reverse, or a pair out of channel order).
    constexpr bool unit_p2p_error(std::uint32_t s, std::uint32_t consumer_stage, std::uint32_t mb, bool act) {
        const unit_state& u = unit(s, mb);
        const bool sent = u.flags & (act ? sent_activation : sent_gradient);
        const bool received = unit(consumer_stage, mb).flags & (act ? got_activation : got_gradient);
        const op send_op = act ? op::send_activation : op::send_gradient;
        const op recv_op = act ? op::recv_activation : op::recv_gradient;
        const event sender{send_op, static_cast<std::uint8_t>(locate_stage(layout_, dims_.ranks, s).chunk),
                           static_cast<std::uint16_t>(owner(s)), static_cast<std::uint16_t>(mb),
                           static_cast<std::uint16_t>(owner(consumer_stage))};
        if (sent && !received) return fail(verdict_code::unmatched_send, owner(s), position_of(sender), sender);
        if (!sent && received) {
            const event receiver{recv_op, static_cast<std::uint8_t>(locate_stage(layout_, dims_.ranks, consumer_stage).chunk),
                                 static_cast<std::uint16_t>(owner(consumer_stage)), static_cast<std::uint16_t>(mb),
                                 static_cast<std::uint16_t>(owner(s))};
            return fail(verdict_code::unmatched_recv, owner(consumer_stage), position_of(receiver), receiver);
        }
        return fail(verdict_code::p2p_order_mismatch, owner(s), position_of(sender), sender);
    }

    /// Step 4 on replay.hpp's engine: receives block until their send has run; grad_norm
    /// waits for every rank.
    class replay_model {
    public:
        using cursor_t = decltype(std::declval<const Source&>().cursor(0u));
        /// Runs after check_rank() has passed every rank, which counted the grad_norm ranks;
        /// or, with `checks`, checks each event as its rank reaches it (run_one_replay()), and
        /// then the collective needs every rank: whether all have a grad_norm is not known yet,
        /// and if one has none the replay deadlocks and the caller starts over.
        constexpr explicit replay_model(iteration_validator& v, std::vector<rank_checks>* checks = nullptr)
            : v_{v}, checks_{checks}, ranks_with_norm_{checks != nullptr ? v.src_.ranks() : v.ranks_with_norm_} {
            const std::uint32_t p = v.src_.ranks();
            cursors_.reserve(p);
            for (std::uint32_t r = 0; r < p; ++r) cursors_.push_back(v.src_.cursor(r));
            position_.assign(p, 0);
            at_barrier_.assign(p, 0);
        }
        [[nodiscard]] constexpr std::uint32_t ranks() const noexcept {
            return static_cast<std::uint32_t>(cursors_.size());
        }
        [[nodiscard]] constexpr bool done(std::uint32_t r) const { return cursors_[r].done(); }
        /// A rank blocked on a receive waits for the sender; one at the grad_norm collective
        /// waits for the first rank that has not reached it.
        [[nodiscard]] constexpr std::uint32_t waited_on(std::uint32_t r) const {
            if (at_barrier_[r]) {
                for (std::uint32_t q = 0; q < ranks(); ++q) {
                    if (!at_barrier_[q]) return q;
                }
            }
            return cursors_[r].current().peer;
        }
        [[nodiscard]] constexpr blocked_rank blocked_at(std::uint32_t q) const {
            const event e = cursors_[q].done() ? event{} : cursors_[q].current();
            return blocked_rank{q, position_[q], action{v_.stage(e), e.kind, e.microbatch}};
        }

        /// The rank's events until one blocks or the rank ends; with the per-rank checks, each
        /// event is checked when the rank first reaches it (a blocked receive is retried, not
        /// checked again).
        template <class Engine>
        constexpr step_result run_turn(std::uint32_t r, std::uint32_t, Engine& engine) {
            if (checks_ == nullptr) return run_rank<false>(r, nullptr, engine);
            return run_rank<true>(r, &(*checks_)[r], engine);
        }

    private:
        template <bool Checked, class Engine>
        [[gnu::always_inline]] constexpr step_result run_rank(std::uint32_t r, rank_checks* k, Engine& engine) {
            cursor_t& c = cursors_[r];
            std::uint32_t position = position_[r];
            step_result result = step_result::ran;
            for (;;) {
                const event e = c.current();
                const std::uint32_t s = v_.stage(e); // of any chunk: check_event checks its range
                if constexpr (Checked) {
                    if (k->index == position && v_.check_event(r, *k, e, s)) {
                        result = step_result::failed;
                        break;
                    }
                }
                if (!run_event(r, e, s, engine)) {
                    result = step_result::blocked;
                    break;
                }
                c.advance();
                ++position;
                if (c.done()) {
                    result = step_result::finished;
                    break;
                }
            }
            position_[r] = position;
            return result;
        }

        /// Runs event e (of stage s) of rank r; false if it blocks (a receive whose send has not
        /// run, the grad_norm collective before every rank reached it).
        template <class Engine>
        [[gnu::always_inline]] constexpr bool run_event(std::uint32_t r, const event& e, std::uint32_t s,
                                                        Engine& engine) {
            if (e.kind == op::recv_activation || e.kind == op::recv_gradient) {
                const bool act = e.kind == op::recv_activation;
                const unit_state& producer = v_.unit(act ? s - 1 : s + 1, e.microbatch);
                return (producer.flags & (act ? posted_activation : posted_gradient)) != 0;
            }
            if (e.kind == op::send_activation || e.kind == op::send_gradient) {
                const bool act = e.kind == op::send_activation;
                v_.unit(s, e.microbatch).flags |= act ? posted_activation : posted_gradient;
                engine.wake(e.peer);
            } else if (e.kind == op::grad_norm && !passed_barrier_) {
                if (!at_barrier_[r]) {
                    at_barrier_[r] = 1;
                    ++arrived_;
                }
                if (arrived_ != ranks_with_norm_ || ranks_with_norm_ != ranks()) return false;
                passed_barrier_ = true;
                for (std::uint32_t q = 0; q < ranks(); ++q) {
                    at_barrier_[q] = 0;
                    engine.wake(q);
                }
            }
            return true;
        }

        iteration_validator& v_;
        std::vector<rank_checks>* checks_;
        std::vector<cursor_t> cursors_{};
        std::vector<std::uint32_t> position_{};
        std::vector<std::uint8_t> at_barrier_{};
        std::uint32_t ranks_with_norm_ = 0;
        std::uint32_t arrived_ = 0;
        bool passed_barrier_ = false;
    };

    constexpr void replay() {
        replay_model model{*this};
        replay_engine<replay_model> engine{model};
        if (!engine.run()) result_ = deadlock_verdict(model);
    }

    const Source& src_;
    shape dims_;
    placement layout_;
    std::uint32_t stages_;
    std::vector<unit_state> units_;
    std::vector<std::uint32_t> stage_owner_{};
    verdict result_{};
    verdict first_rule_violation_{};
    bool losses_known_ = false;
    bool any_loss_ = false;
    std::uint32_t ranks_with_norm_ = 0;     ///< ranks with a grad_norm (check_rank counts them)
    /// run_one_pass() and run_one_replay(): the compute projection's structure check on the
    /// unit flags (compute_checks_ok and the pair rule), and the same-rank inputs' order
    bool one_pass_ = false;
    bool same_rank_input_late_ = false;     ///< one came after its consumer
};

/// validate(iteration<P>)'s shortcut for the iterations this library builds around a schedule.
/// iteration<P> places every event besides P's own (iteration.hpp): a receive right before the
/// compute that consumes a tensor from another rank (before the marker, for an overlapped
/// pair), the send right after the compute that produces it (after the pair), the loss after
/// the last stage's F, a recompute before each B or I, a chunk's grad_sync after its m-th B or
/// W (or all of them at the end), then grad_norm on every rank, the step and the gather. Once
/// P's compute passes validate(), every unit runs one F and one B or I on its stage's rank, so
/// each rule of steps 1, 2 and 4 holds by that construction: the receive of an input waits
/// for the send that follows its producer, which is what validate()'s replay waits for (an
/// overlapped pair for both inputs, there as here), and every rank reaches grad_norm once its
/// compute has run. Step 3 is what construction cannot promise: a channel's sends come in the
/// sender's order of its compute, its receives in the receiver's, and the two can differ
/// (rank 0 runs F0 then F1, rank 1 F1 then F0). This class checks that, on the same sequence
/// numbers as iteration_validator (send minus receive per unit and direction), on validate's
/// own walk of P's compute through its emit path, and that each event names its own rank (validate(P)
/// takes the stage from the event's rank and chunk, the iteration rules the list it is in). It
/// answers yes, or "look closer": validate(iteration) then runs the full checks, which name
/// the error. It reads P through its emit path, while validate(P)'s replay and iteration<P>
/// read P's cursor: like validate(P), it relies on the two giving the same events (a policy's
/// contract; test_support.hpp's streams_agree checks the library's).
template <schedule_policy P>
class iteration_channel_order {
public:
    constexpr explicit iteration_channel_order(const P& pol)
        // (n, value), not (n): clang 14 cannot evaluate libstdc++'s value-initialising
        // constructor at compile time.
        : pol_{pol}, dims_{pol.shape}, gaps_(2 * std::size_t{pol.shape.stages()} * pol.shape.microbatches, 0u),
          chunks_(pol.shape.chunks, chunk_transfers{}) {}

    /// Fed by a walk of P's events that serves validate(P) too (policy_actions_with_channels):
    /// begin_rank(r), push() every event of rank r, for each rank; then in_order() is true if
    /// every channel pairs its sends and receives in the same order.
    constexpr void begin_rank(std::uint32_t r) {
        ++ranks_seen_;
        plan_rank(r);
    }
    [[nodiscard]] constexpr bool in_order() const noexcept {
        if (!ok_ || ranks_seen_ != dims_.ranks) return false;
        for (const std::uint32_t gap : gaps_) {
            if (gap != 0) return false;
        }
        return true;
    }

    /// The sink of P's emit path: one event of rank rank_ (the step-2 range check applies to
    /// every event, markers included).
    [[gnu::always_inline]] constexpr void push(const event& e) noexcept {
        const event_transfers t = transfers_of(e);
        if (t.in == nullptr) return;
        if (t.in->counter != no_transfer) gaps_[t.in->unit + t.mb] -= sequence_[t.in->counter]++;
        if (t.out->counter != no_transfer) gaps_[t.out->unit + t.mb] += sequence_[t.out->counter]++;
    }

    /// After in_order(): whether every input a rank passes to a stage of its own (the turn of
    /// a V, every chunk when there is one rank) comes after its producer in the rank's order.
    /// The iteration's replay does not wait for those (no p2p), validate(P)'s replay does: what
    /// simulate(iteration) needs when its timed replay takes the place of validate(P)'s. A
    /// walk of those ranks only, on the gaps of their units (0 after in_order(), untouched by
    /// it: 1 from the producer until the consumer).
    constexpr bool same_rank_inputs_in_order() {
        for (std::uint32_t r = 0; r < dims_.ranks && ok_; ++r) {
            if (!plan_rank(r, same_rank_only)) continue;
            struct own_rank_sink {
                iteration_channel_order* self;
                constexpr void push(const event& e) const noexcept { self->push_own_rank(e); }
            };
            emit(pol_, r, own_rank_sink{this});
        }
        return ok_;
    }

private:
    enum transfers : bool { between_ranks = false, same_rank_only = true };
    static constexpr std::uint32_t no_transfer = 0xFFFFFFFFu;
    /// A send or receive of a chunk's F (direction 0) or B/I (1): the sequence counter of its
    /// channel (same_rank_only: any value but no_transfer), and where the producing unit's gap
    /// of microbatch 0 is.
    struct transfer {
        std::uint32_t counter = no_transfer;
        std::size_t unit = 0;
    };
    struct chunk_transfers {
        std::array<transfer, 2> receive{};
        std::array<transfer, 2> send{};
    };

    /// An F's or B/I's planned receive and send, and the offset of its microbatch in the gaps.
    struct event_transfers {
        const transfer* in = nullptr;
        const transfer* out = nullptr;
        std::size_t mb = 0;
    };
    /// in and out null for any other event, and for one outside the rank or the shape (then
    /// ok_ is false).
    [[gnu::always_inline]] constexpr event_transfers transfers_of(const event& e) noexcept {
        if (e.rank != rank_ || e.chunk >= dims_.chunks || e.microbatch >= dims_.microbatches) {
            ok_ = false;
            return {};
        }
        std::size_t direction = 0;
        if (e.kind == op::backward || e.kind == op::backward_input) {
            direction = 1;
        } else if (e.kind != op::forward) {
            return {};
        }
        const chunk_transfers& c = chunks_[e.chunk];
        return {&c.receive[direction], &c.send[direction], std::size_t{e.microbatch} * 2};
    }

    constexpr void push_own_rank(const event& e) noexcept {
        const event_transfers t = transfers_of(e);
        if (t.in == nullptr) return;
        if (t.in->counter != no_transfer) {
            std::uint32_t& gap = gaps_[t.in->unit + t.mb];
            if (gap != 1) ok_ = false; // not produced yet, or twice
            gap = 0;
        }
        if (t.out->counter != no_transfer) gaps_[t.out->unit + t.mb] = 1;
    }

    /// Rank r's transfers per chunk. The counters are iteration_validator::next_seq's: per p2p
    /// kind and neighbour (r - 1, r + 1, the same rank when there are two). The tensor received
    /// is the input of an F or the output gradient of a B or I; the tensor sent, the F's output
    /// or the B's or I's input gradient; each is the producing unit's.
    /// With same_rank_only, the transfers to and from the rank's own stages instead (no p2p);
    /// true if there is one.
    constexpr bool plan_rank(std::uint32_t r, transfers which = between_ranks) {
        rank_ = r;
        sequence_ = {};
        bool any = false;
        const std::uint32_t next = r + 1 == dims_.ranks ? 0 : r + 1;
        const std::uint32_t previous = r == 0 ? dims_.ranks - 1 : r - 1;
        const std::uint32_t stages = dims_.stages();
        const auto plan = [&](bool exists, std::uint32_t c, bool towards_next, op kind, std::uint32_t producer,
                              std::size_t direction) {
            transfer t{};
            if (!exists) return t;
            const std::uint32_t peer = neighbour_rank(P::layout, dims_.ranks, r, c, towards_next);
            if ((peer == r) != (which == same_rank_only)) return t;
            any = true;
            t.unit = std::size_t{producer} * dims_.microbatches * 2 + direction;
            if (peer != next && peer != previous && peer != r) ok_ = false; // not a library placement
            const auto p2p_kind = static_cast<std::uint32_t>(kind) - static_cast<std::uint32_t>(op::send_activation);
            t.counter = p2p_kind * 2 + (peer == next ? 1 : 0);
            return t;
        };
        for (std::uint32_t c = 0; c < dims_.chunks; ++c) {
            const std::uint32_t s = stage_of(P::layout, dims_.ranks, r, c);
            chunk_transfers& t = chunks_[c];
            t.receive[0] = plan(s > 0, c, false, op::recv_activation, s - 1, 0);
            t.send[0] = plan(s + 1 < stages, c, true, op::send_activation, s, 0);
            t.receive[1] = plan(s + 1 < stages, c, true, op::recv_gradient, s + 1, 1);
            t.send[1] = plan(s > 0, c, false, op::send_gradient, s, 1);
        }
        return any;
    }

    const P& pol_;
    pipesched::shape dims_;
    std::vector<std::uint32_t> gaps_; ///< per unit and direction: send's sequence minus receive's
    std::vector<chunk_transfers> chunks_;
    std::array<std::uint32_t, 8> sequence_{};
    std::uint32_t rank_ = 0;
    std::uint32_t ranks_seen_ = 0;
    bool ok_ = true;
};

/// P's actions for validate(), each event also shown to the channel check on the way: the
/// validator's first pass walks P through its emit path, and the channel check rides along
/// (one walk of P's compute for the two instead of two).
template <schedule_policy P>
class policy_actions_with_channels : public policy_actions<P> {
public:
    constexpr policy_actions_with_channels(const P& pol, iteration_channel_order<P>& channels)
        : policy_actions<P>{pol}, pol_{pol}, channels_{channels} {}

    template <class F>
    constexpr void for_each(std::uint32_t rank, F& f) const {
        struct both {
            const P* pol;
            F* f;
            iteration_channel_order<P>* channels;
            [[gnu::always_inline]] constexpr void push(const event& e) const {
                channels->push(e);
                (*f)(to_action(*pol, e));
            }
        };
        channels_.begin_rank(rank);
        emit(pol_, rank, both{&pol_, &f, &channels_});
    }

private:
    const P& pol_;
    iteration_channel_order<P>& channels_;
};

/// Whether iteration<P> is valid by its construction and P's compute (see
/// iteration_channel_order): true means valid; false means the full checks must say. Without
/// the replay (simulate(iteration)'s first try, whose timed replay is the deadlock check), P's
/// compute gets validate()'s structural checks only, and an input from a stage on the same
/// rank must come before its consumer (what iteration_validator::run_one_pass asks too).
template <schedule_policy P>
[[nodiscard]] constexpr bool valid_by_construction(const iteration<P>& it, replay_choice deadlock_check = with_replay) {
    if constexpr (is_iteration<P>) {
        return false;
    } else {
        // Without p2p events a compute input from another rank is never received.
        if (!it.options.p2p && it.shape.ranks > 1) return false;
        if (!it.policy.check()) return false;
        iteration_channel_order<P> channels{it.policy};
        const policy_actions_with_channels<P> compute{it.policy, channels};
        if (deadlock_check == with_replay) {
            return validate_actions(compute) && channels.in_order();
        }
        return validator<policy_actions_with_channels<P>>{compute}.structure_ok() && channels.in_order() &&
               channels.same_rank_inputs_in_order();
    }
}

} // namespace detail

/// What validate(iteration) holds per (stage, microbatch) unit at most, in bytes: the iteration
/// checks' state of the unit and, when the one walk found an error and the steps run one after
/// the other, the compute projection's structural checks (the one walk does those on the
/// iteration's own flags). The shortcut for an iteration<P> (valid_by_construction) holds
/// less, and is gone before the full checks start: two sequence gaps and the structural byte.
/// simulate(iteration) holds these during its checks and, once they are gone, its replay's
/// (iteration_replay_bytes_per_unit, simulate_iteration.hpp).
inline constexpr std::size_t iteration_check_bytes_per_unit =
    sizeof(detail::iteration_unit_state) + structure_check_bytes_per_unit;
static_assert(2 * sizeof(std::uint32_t) + structure_check_bytes_per_unit <= iteration_check_bytes_per_unit);

/// Validates one whole iteration: the schedule's compute, then the iteration rules above.
template <schedule_policy P>
[[nodiscard]] constexpr verdict validate(const iteration<P>& it) {
    if (const shape_check c = it.check(); !c) {
        verdict v{};
        v.code = verdict_code::invalid_shape;
        v.shape_message = c.message;
        return v;
    }
    if (detail::valid_by_construction(it)) return verdict{};
    const detail::policy_events<iteration<P>> src{it};
    return detail::iteration_validator<detail::policy_events<iteration<P>>>{src}.run();
}

/// Validates per-rank event lists (compute, p2p and iteration ops) against a shape and placement.
[[nodiscard]] constexpr verdict validate_events(std::span<const std::vector<event>> per_rank,
                                                shape dims, placement layout) {
    if (const shape_check c = check_common(dims); !c) {
        verdict v{};
        v.code = verdict_code::invalid_shape;
        v.shape_message = c.message;
        return v;
    }
    const event_lists src{per_rank, dims, layout};
    return detail::iteration_validator<event_lists>{src}.run();
}

} // namespace pipesched
