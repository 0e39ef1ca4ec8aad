// pipesched internals: validate(iteration<P>)'s shortcut for the iterations this library builds
// around a schedule (valid_by_construction): P's compute checked by validate(), plus the order of
// the sends and receives on each channel, on the same walk of P's events.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../event.hpp"
#include "../iteration.hpp"
#include "../policy.hpp"
#include "../shape.hpp"
#include "../sink.hpp"
#include "iteration_validator.hpp"
#include "sources.hpp"
#include "../timing_model.hpp"
#include "validate.hpp"

namespace pipesched::detail {

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
            constexpr tensor act = tensor::activation;
            constexpr tensor grad = tensor::gradient;
            t.receive[0] = plan(has_sender(act, s, stages), c, false, op::recv_activation, upstream_of(act, s), 0);
            t.send[0] = plan(has_receiver(act, s, stages), c, true, op::send_activation, s, 0);
            t.receive[1] = plan(has_sender(grad, s, stages), c, true, op::recv_gradient, upstream_of(grad, s), 1);
            t.send[1] = plan(has_receiver(grad, s, stages), c, false, op::send_gradient, s, 1);
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

} // namespace pipesched::detail
