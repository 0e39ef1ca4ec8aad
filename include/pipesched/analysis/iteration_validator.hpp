// pipesched internals: iteration_validator, the rules of one whole iteration checked on an event
// source (validate_iteration.hpp lists them and says in which order they run), and its replay
// with blocking receives and the grad_norm collective.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../action.hpp"
#include "../event.hpp"
#include "../shape.hpp"
#include "replay.hpp"
#include "sources.hpp"
#include "../timing_model.hpp"
#include "validate.hpp"

namespace pipesched::detail {

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
        std::uint32_t pair_stage = 0;      ///< the unit of an overlapped pair's F (one pass)
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
            if (one_pass_ && !pair_member_ok(k, e, s)) return true;
            --k.pair_left;
        }
        if (e.kind == op::overlap_f_b) k.pair_left = 2;
        unit_state& u = unit(s, e.microbatch);
        switch (e.kind) {
        case op::forward:
            if (one_pass_ && !compute_checks_ok(u, e.kind)) return true;
            if (input_error(r, i, e, s, u, tensor::activation)) return true;
            u.flags |= seen_forward;
            break;
        case op::backward:
        case op::backward_input:
            if (one_pass_ && !compute_checks_ok(u, e.kind)) return true;
            if (input_error(r, i, e, s, u, tensor::gradient)) return true;
            // has_losses() last: it walks the ranks the first time it is asked.
            if (is_loss_stage(s, stages_) && !(u.flags & seen_loss) && has_losses()) {
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
            if (!is_loss_stage(s, stages_) || !(u.flags & seen_forward) || (u.flags & (seen_backward | seen_loss))) {
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
        case op::send_gradient:
        case op::recv_activation:
        case op::recv_gradient: {
            // The peer owns the stage on the other end (timing_model.hpp's p2p_peer_stage).
            std::uint32_t other = 0;
            if (!p2p_peer_stage(e.kind, s, stages_, other) || e.peer >= dims_.ranks || e.peer != owner(other) ||
                e.peer == r) {
                return fail(verdict_code::p2p_wrong_peer, r, i, e);
            }
            const bool act = tensor_moved(e.kind) == tensor::activation;
            const bool send = e.kind == op::send_activation || e.kind == op::send_gradient;
            if (send && !(u.flags & (act ? seen_forward : seen_backward))) {
                return fail(verdict_code::send_before_compute, r, i, e);
            }
            const auto flag = send ? (act ? sent_activation : sent_gradient) : (act ? got_activation : got_gradient);
            if (u.flags & flag) return fail(verdict_code::duplicate, r, i, e);
            u.flags |= flag;
            // The sender's record lives on the producing unit: a receive's sequence number goes
            // there too, for step 3 to compare with the send's.
            unit_state& producer = send ? u : unit(other, e.microbatch);
            std::uint32_t& gap = act ? producer.activation_sequence_gap : producer.gradient_sequence_gap;
            const std::uint32_t seq = next_seq(k, r, e.peer, e.kind);
            gap = send ? gap + seq : gap - seq;
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

    /// The cross-stage input rule (timing_model.hpp) for compute event e of stage s, whose
    /// tensor t comes from upstream_of(t, s): from another rank, it must have been received
    /// before (true, with result_ set, if not); from this rank (one pass), its producer must
    /// have run before, else the one-walk replay cannot stand in for the compute replay.
    [[gnu::always_inline]] constexpr bool input_error(std::uint32_t r, std::uint32_t i, const event& e,
                                                      std::uint32_t s, const unit_state& u, tensor t) {
        if (!has_sender(t, s, stages_)) return false;
        const std::uint32_t from = upstream_of(t, s);
        const bool activation = t == tensor::activation;
        if (owner(from) != r) {
            if (u.flags & (activation ? got_activation : got_gradient)) return false;
            return fail(verdict_code::input_not_received, r, i, e);
        }
        if (one_pass_ && !(unit(from, e.microbatch).flags & (activation ? seen_forward : seen_backward))) {
            same_rank_input_late_ = true;
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
    /// An overlapped pair's members (the two compute events after its marker, of stage s): an
    /// F, then a B or I of another unit (timing_model.hpp's opens_pair and closes_pair).
    [[nodiscard]] static constexpr bool pair_member_ok(rank_checks& k, const event& e, std::uint32_t s) noexcept {
        const action a{s, e.kind, e.microbatch};
        if (k.pair_left == 2) {
            k.pair_stage = s;
            k.pair_microbatch = e.microbatch;
            return opens_pair(true, a);
        }
        return closes_pair(action{k.pair_stage, op::forward, k.pair_microbatch}, a);
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
                return unit_p2p_error(s, downstream_of(tensor::activation, s), bad_activation, true);
            }
            if (bad_gradient < dims_.microbatches) {
                return unit_p2p_error(s, downstream_of(tensor::gradient, s), bad_gradient, false);
            }
        }
        return false;
    }

    /// The first microbatch whose activation (act) or gradient stage s sends to another rank
    /// breaks step 3's rule; the microbatch count if none does.
    [[nodiscard]] constexpr std::uint32_t first_unmatched(std::uint32_t s, bool act) const noexcept {
        const std::uint32_t m = dims_.microbatches;
        const tensor t = act ? tensor::activation : tensor::gradient;
        if (!has_receiver(t, s, stages_)) return m;
        const std::uint32_t consumer_stage = downstream_of(t, s);
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
                const unit_state& producer = v_.unit(upstream_of(tensor_moved(e.kind), s), e.microbatch);
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

} // namespace pipesched::detail
