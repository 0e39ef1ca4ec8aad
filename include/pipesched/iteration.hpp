// pipesched: one whole training iteration around a pipeline schedule.
//
// iteration<P> wraps any schedule policy into the per-rank event stream a simulator must see
// (Megatron-LM's order for one data-parallel replica, megatron/core/pipeline_parallel/
// schedules.py and megatron/core/distributed/finalize_model_grads.py):
//
//   [param_gather]                       next_iteration mode: the previous step's all-gather
//   the policy's compute, where each
//     F    is preceded by recv_activation (when the previous stage is on another rank) and
//          followed by loss (on the last stage) or send_activation;
//     B/I  is preceded by recv_gradient (when the next stage is on another rank) and, with
//          activation checkpointing, by recompute, and followed by send_gradient;
//     the last backward work (B, or W when split) of a chunk is followed by that chunk's
//          grad_sync when grad sync is overlapped;
//     an overlapped pair (op::overlap_f_b marker, F, B/I: DualPipeV) keeps its three events
//          together: the receives of both (and the B's recompute) come before the marker, the
//          F's loss and the sends of both after the pair, as in DeepSeek's
//          _forward_backward_chunk and PyTorch's _add_send_recv;
//   grad_sync of every chunk             when not overlapped (Megatron's default)
//   grad_norm                            gradient clipping / found-inf all-reduce
//   optimizer_step
//   [param_gather]                       after_step mode (distributed optimizer)
//
// p2p events carry the peer rank; the chunk of a p2p event is the local chunk that produces
// (send) or consumes (recv) the tensor. iteration<P> is itself a schedule_policy, so emit(),
// events(), to_array<>() and validate() work on it unchanged, at compile time as at run time.
// The cursor keeps O(v) state and no reference to the iteration: the inner policy cursor, the
// shape and options, a queue of at most eleven pending events (an overlapped pair with its p2p,
// recompute, loss and grad_sync) and, for the overlapped grad_sync only, a backward counter per
// chunk.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "event.hpp"
#include "policy.hpp"
#include "shape.hpp"
#include "timing_model.hpp"

namespace pipesched {

enum class grad_sync_mode : std::uint8_t {
    at_end,     ///< after all backward work (Megatron default: --overlap-grad-reduce off)
    overlapped, ///< right after the chunk's last backward work on the rank
};

enum class param_gather_mode : std::uint8_t {
    none,           ///< plain data parallel (Megatron default: no distributed optimizer)
    after_step,     ///< distributed optimizer: all-gather right after the step
    next_iteration, ///< distributed optimizer with --overlap-param-gather: at the start
};

/// Options are plain values; the defaults are Megatron-LM's command-line defaults.
struct iteration_options {
    grad_sync_mode grad_sync = grad_sync_mode::at_end;
    param_gather_mode param_gather = param_gather_mode::none;
    bool activation_checkpointing = false; ///< full recompute before every backward
    bool grad_norm = true;                 ///< --clip-grad defaults to 1.0
    bool p2p = true;                       ///< emit send/recv events
    friend constexpr bool operator==(const iteration_options&, const iteration_options&) = default;
};

template <schedule_policy P>
class iteration {
public:
    static constexpr std::string_view name = P::name;
    static constexpr placement layout = P::layout;

    P policy;
    iteration_options options;
    pipesched::shape shape;

    constexpr explicit iteration(const P& pol, iteration_options o = {}) noexcept
        : policy{pol}, options{o}, shape{pol.shape} {}

    [[nodiscard]] constexpr shape_check check() const noexcept { return policy.check(); }

    [[nodiscard]] constexpr std::uint32_t stage(std::uint32_t rank, std::uint32_t chunk) const noexcept {
        return stage_of(layout, shape.ranks, rank, chunk);
    }
    [[nodiscard]] constexpr std::uint32_t owner(std::uint32_t stage_index) const noexcept {
        return locate_stage(layout, shape.ranks, stage_index).rank;
    }
    /// Whether the tensor between `stage_index` and its neighbour crosses ranks: the stage that
    /// receives its activation (next) or sends it its activation (previous), by the timing model.
    [[nodiscard]] constexpr bool crosses_to_next(std::uint32_t stage_index) const noexcept {
        std::uint32_t next = 0;
        return options.p2p && detail::receiver_stage(detail::tensor::activation, stage_index, shape.stages(), next) &&
               owner(next) != owner(stage_index);
    }
    [[nodiscard]] constexpr bool crosses_to_previous(std::uint32_t stage_index) const noexcept {
        std::uint32_t previous = 0;
        return options.p2p && detail::sender_stage(detail::tensor::activation, stage_index, shape.stages(), previous) &&
               owner(previous) != owner(stage_index);
    }

    /// Events on one rank: closed form, O(v).
    [[nodiscard]] constexpr std::size_t size(std::uint32_t rank) const {
        detail::require_usable(*this, rank);
        std::size_t n = policy.size(rank);
        const std::size_t m = shape.microbatches;
        for (std::uint32_t c = 0; c < shape.chunks; ++c) {
            const std::uint32_t s = stage(rank, c);
            if (crosses_to_previous(s)) n += 2 * m; // recv_activation, send_gradient
            if (crosses_to_next(s)) n += 2 * m;     // send_activation, recv_gradient
            if (detail::is_loss_stage(s, shape.stages())) n += m; // loss
            if (options.activation_checkpointing) n += m;
            n += 1; // grad_sync
        }
        n += 1; // optimizer_step
        if (options.grad_norm) n += 1;
        if (options.param_gather != param_gather_mode::none) n += 1;
        return n;
    }

    /// Self-contained (it copies the shape and options, so it outlives the iteration it came
    /// from) and small: the policy's cursor, a queue of at most eleven pending events, and,
    /// only when grad sync is overlapped, a 16-bit backward counter per chunk (inline for up
    /// to 16 chunks, on the heap beyond).
    class cursor_type {
    public:
        constexpr cursor_type() = default;
        constexpr cursor_type(const iteration& it, std::uint32_t rank)
            : inner_{it.policy.cursor(rank)}, dims_{it.shape}, options_{it.options},
              rank_{static_cast<std::uint16_t>(rank)} {
            if (options_.grad_sync == grad_sync_mode::overlapped && dims_.chunks > inline_chunks) {
                more_done_.assign(dims_.chunks - inline_chunks, 0);
            }
            if (options_.param_gather == param_gather_mode::next_iteration) {
                push(iteration_event(op::param_gather, 0));
            }
            refill();
        }

        [[nodiscard]] constexpr bool done() const noexcept { return head_ == tail_; }
        [[nodiscard]] constexpr event current() const noexcept { return queue_[head_ % queue_size]; }
        constexpr void advance() noexcept {
            ++head_;
            if (head_ == tail_) refill();
        }

    private:
        static constexpr std::uint32_t queue_size = 16; // a pair with its p2p, recompute, loss, grad_sync: 10
        static constexpr std::uint32_t inline_chunks = 16;

        [[nodiscard]] constexpr std::uint32_t stage(std::uint32_t rank, std::uint32_t chunk) const noexcept {
            return stage_of(layout, dims_.ranks, rank, chunk);
        }
        /// The rank of the stage after (next) or before that of compute event e.
        [[nodiscard]] constexpr std::uint32_t neighbour(const event& e, bool next) const noexcept {
            return neighbour_rank(layout, dims_.ranks, e.rank, e.chunk, next);
        }
        /// e (of stage s) sends to, or receives from, the next stage on another rank: the
        /// stage the timing model sends its activation to (and takes its gradient from).
        [[nodiscard]] constexpr bool crosses_to_next(std::uint32_t s, const event& e) const noexcept {
            return options_.p2p && detail::has_receiver(detail::tensor::activation, s, dims_.stages()) &&
                   neighbour(e, true) != e.rank;
        }
        /// ... the previous stage: the one that sends it its activation.
        [[nodiscard]] constexpr bool crosses_to_previous(std::uint32_t s, const event& e) const noexcept {
            return options_.p2p && detail::has_sender(detail::tensor::activation, s, dims_.stages()) &&
                   neighbour(e, false) != e.rank;
        }
        [[nodiscard]] constexpr bool last_stage(std::uint32_t s) const noexcept {
            return detail::is_loss_stage(s, dims_.stages());
        }

        constexpr void push(const event& e) noexcept { queue_[tail_++ % queue_size] = e; }
        [[nodiscard]] constexpr event iteration_event(op kind, std::uint32_t chunk) const noexcept {
            return event{kind, static_cast<std::uint8_t>(chunk), rank_, 0, no_peer};
        }
        /// The send or receive of e's tensor with the next stage's rank (next) or the previous'.
        [[nodiscard]] constexpr event p2p(op kind, const event& e, bool next) const noexcept {
            return event{kind, e.chunk, e.rank, e.microbatch, static_cast<std::uint16_t>(neighbour(e, next))};
        }

        /// Queues the events around the next compute event, or the epilogue.
        constexpr void refill() noexcept {
            if (!inner_.done()) {
                expand(inner_.current());
                inner_.advance();
                return;
            }
            const std::uint32_t v = dims_.chunks;
            // Epilogue, one event per call so the queue stays small.
            while (epilogue_ <= v + 2) {
                const std::uint32_t step = epilogue_++;
                if (step < v) {
                    if (options_.grad_sync == grad_sync_mode::at_end) {
                        return push(iteration_event(op::grad_sync, step));
                    }
                } else if (step == v) {
                    if (options_.grad_norm) return push(iteration_event(op::grad_norm, 0));
                } else if (step == v + 1) {
                    return push(iteration_event(op::optimizer_step, 0));
                } else if (options_.param_gather == param_gather_mode::after_step) {
                    return push(iteration_event(op::param_gather, 0));
                }
            }
        }

        constexpr void expand(const event& e) noexcept {
            const std::uint32_t s = stage(e.rank, e.chunk);
            switch (e.kind) {
            case op::forward:
                if (crosses_to_previous(s, e)) push(p2p(op::recv_activation, e, false));
                push(e);
                if (last_stage(s)) push(event{op::loss, e.chunk, e.rank, e.microbatch, no_peer});
                if (crosses_to_next(s, e)) push(p2p(op::send_activation, e, true));
                return;
            case op::backward:
            case op::backward_input:
                if (crosses_to_next(s, e)) push(p2p(op::recv_gradient, e, true));
                if (options_.activation_checkpointing) {
                    push(event{op::recompute, e.chunk, e.rank, e.microbatch, no_peer});
                }
                push(e);
                if (crosses_to_previous(s, e)) push(p2p(op::send_gradient, e, false));
                if (e.kind == op::backward) finish_backward(e.chunk);
                return;
            case op::backward_weight:
                push(e);
                finish_backward(e.chunk);
                return;
            case op::overlap_f_b: expand_pair(e); return;
            default: push(e); return;
            }
        }

        /// A marker and the F and B/I after it. A marker not followed by that is passed on as
        /// it is, for validation to report.
        constexpr void expand_pair(const event& marker) noexcept {
            auto look = inner_;
            look.advance();
            if (look.done()) return push(marker);
            const event f = look.current();
            look.advance();
            if (look.done() || f.kind != op::forward) return push(marker);
            const event b = look.current();
            if (b.kind != op::backward && b.kind != op::backward_input) return push(marker);
            inner_ = look; // refill() steps past the B
            const std::uint32_t sf = stage(f.rank, f.chunk);
            const std::uint32_t sb = stage(b.rank, b.chunk);
            if (crosses_to_previous(sf, f)) push(p2p(op::recv_activation, f, false));
            if (crosses_to_next(sb, b)) push(p2p(op::recv_gradient, b, true));
            if (options_.activation_checkpointing) {
                push(event{op::recompute, b.chunk, b.rank, b.microbatch, no_peer});
            }
            push(marker);
            push(f);
            push(b);
            if (last_stage(sf)) push(event{op::loss, f.chunk, f.rank, f.microbatch, no_peer});
            if (crosses_to_next(sf, f)) push(p2p(op::send_activation, f, true));
            if (crosses_to_previous(sb, b)) push(p2p(op::send_gradient, b, false));
            if (b.kind == op::backward) finish_backward(b.chunk);
        }

        /// Counts the chunk's backward work (B, or W); after its m-th, the chunk's gradients
        /// are complete and an overlapped grad_sync follows. The 16-bit count wraps exactly at
        /// m = 65536, the largest m, where (uint16)m is 0.
        constexpr void finish_backward(std::uint32_t chunk) noexcept {
            if (options_.grad_sync != grad_sync_mode::overlapped || chunk >= dims_.chunks) return;
            std::uint16_t& done = chunk < inline_chunks ? done_[chunk] : more_done_[chunk - inline_chunks];
            ++done;
            if (done == static_cast<std::uint16_t>(dims_.microbatches)) {
                push(iteration_event(op::grad_sync, chunk));
            }
        }

        decltype(std::declval<const P&>().cursor(0u)) inner_{};
        pipesched::shape dims_{};
        iteration_options options_{};
        std::uint16_t rank_ = 0;
        std::uint16_t epilogue_ = 0;
        std::uint8_t head_ = 0; // wraps with tail_: only their difference and the index mod 16 matter
        std::uint8_t tail_ = 0;
        std::array<event, queue_size> queue_{};
        std::array<std::uint16_t, inline_chunks> done_{};
        std::vector<std::uint16_t> more_done_{};
    };

    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const {
        detail::require_usable(*this, rank);
        return cursor_type{*this, rank};
    }
};

} // namespace pipesched
