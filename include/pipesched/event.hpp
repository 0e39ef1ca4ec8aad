// pipesched: the event vocabulary. One event is one step on one pipeline rank.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pipesched {

/// Every kind of step a rank can take in one training iteration.
/// The first four are the compute actions of PyTorch's `torch.distributed.pipelining`
/// (letters F, B, I, W); the rest are added by the iteration composer.
enum class op : std::uint8_t {
    forward,          ///< F: forward of one microbatch through one chunk
    backward,         ///< B: full backward (input grad + weight grad)
    backward_input,   ///< I: input-gradient half of a split backward (on the critical path)
    backward_weight,  ///< W: weight-gradient half of a split backward (deferrable)
    recompute,        ///< activation checkpointing: forward again just before the backward
    loss,             ///< loss on the last stage, right after that microbatch's forward
    send_activation,  ///< p2p: forward output to the next stage (peer = receiving rank)
    recv_activation,  ///< p2p: forward input from the previous stage (peer = sending rank)
    send_gradient,    ///< p2p: input gradient to the previous stage
    recv_gradient,    ///< p2p: output gradient from the next stage
    grad_sync,        ///< data-parallel reduce-scatter / all-reduce of one chunk's gradients
    grad_norm,        ///< the all-reduce behind gradient clipping and found-inf
    optimizer_step,   ///< parameter update
    param_gather,     ///< distributed-optimizer / ZeRO all-gather of updated parameters
    reshard,          ///< free gathered parameters again (PyTorch's RESHARD, FSDP-style)
    overlap_f_b,      ///< marker: the next two events of the rank, an F and then a B or I of
                      ///< another unit, run concurrently as one overlapped pair (DualPipe's
                      ///< "F&B", PyTorch's OVERLAP_F_B); chunk and microbatch are 0
};

inline constexpr std::size_t op_count = 16;

namespace detail {
/// Every text form of an op, in one row per op so that a new op is named in one place:
/// its snake-case name (JSON, diagnostics), PyTorch's action name (CSV, action text; empty for
/// the ops PyTorch does not write) and its one-letter form (PyTorch's letter for F, B, I, W;
/// the terminal timeline's letter for the others; '\0' for ops without one).
struct op_text {
    op kind;
    std::string_view name;
    std::string_view pytorch;
    char letter;
};
inline constexpr std::array<op_text, op_count> op_texts{{
    {op::forward, "forward", "F", 'F'},
    {op::backward, "backward", "B", 'B'},
    {op::backward_input, "backward_input", "I", 'I'},
    {op::backward_weight, "backward_weight", "W", 'W'},
    {op::recompute, "recompute", "", 'R'},
    {op::loss, "loss", "", 'L'},
    {op::send_activation, "send_activation", "SEND_F", '\0'},
    {op::recv_activation, "recv_activation", "RECV_F", '\0'},
    {op::send_gradient, "send_gradient", "SEND_B", '\0'},
    {op::recv_gradient, "recv_gradient", "RECV_B", '\0'},
    {op::grad_sync, "grad_sync", "REDUCE_GRAD", 'G'},
    {op::grad_norm, "grad_norm", "", 'N'},
    {op::optimizer_step, "optimizer_step", "", 'O'},
    {op::param_gather, "param_gather", "UNSHARD", 'P'},
    {op::reshard, "reshard", "RESHARD", '\0'},
    {op::overlap_f_b, "overlap_f_b", "", '\0'},
}};
static_assert([] {
    for (std::size_t i = 0; i < op_count; ++i) {
        if (static_cast<std::size_t>(op_texts[i].kind) != i) return false;
    }
    return true;
}(), "op_texts has one row per op, in the enum's order");

/// The row of a value outside the enum: named "?", with no PyTorch name and no letter.
inline constexpr op_text unknown_op_text{op::forward, "?", "", '\0'};

[[nodiscard]] constexpr const op_text& text_of(op o) noexcept {
    const auto i = static_cast<std::size_t>(o);
    return i < op_count ? op_texts[i] : unknown_op_text;
}
} // namespace detail

/// Snake-case name of an op, as used in JSON output and diagnostics ("?" for a value outside
/// the enum).
[[nodiscard]] constexpr std::string_view to_string(op o) noexcept { return detail::text_of(o).name; }

/// Inverse of to_string(op); false when the name is unknown.
[[nodiscard]] constexpr bool op_from_string(std::string_view name, op& out) noexcept {
    for (std::size_t i = 0; i < op_count; ++i) {
        const auto candidate = static_cast<op>(i);
        if (to_string(candidate) == name) {
            out = candidate;
            return true;
        }
    }
    return false;
}

/// F, B, I and W: the ops a pipeline schedule orders (PyTorch's computation types).
[[nodiscard]] constexpr bool is_compute(op o) noexcept {
    return o == op::forward || o == op::backward || o == op::backward_input ||
           o == op::backward_weight;
}

/// Ops that hold or release activation memory for a (chunk, microbatch).
[[nodiscard]] constexpr bool is_backward(op o) noexcept {
    return o == op::backward || o == op::backward_input || o == op::backward_weight;
}

[[nodiscard]] constexpr bool is_p2p(op o) noexcept {
    return o == op::send_activation || o == op::recv_activation || o == op::send_gradient ||
           o == op::recv_gradient;
}

/// PyTorch's letter for a compute op ('F', 'B', 'I', 'W'); '\0' for any other op.
[[nodiscard]] constexpr char compute_letter(op o) noexcept {
    return is_compute(o) ? detail::text_of(o).letter : '\0';
}

/// Rank value of `event::peer` for events that do not talk to another rank.
inline constexpr std::uint16_t no_peer = 0xFFFF;

/// One step on one rank, 8 bytes so that a whole schedule streams through caches.
/// The field widths bound the shapes a policy accepts (see shape.hpp: max_ranks,
/// max_microbatches, max_chunks).
struct event {
    op kind{};
    std::uint8_t chunk{};        ///< local model chunk on `rank`, 0..v-1
    std::uint16_t rank{};        ///< pipeline rank executing the step
    std::uint16_t microbatch{};  ///< 0..m-1 (0 for iteration-level ops)
    std::uint16_t peer{no_peer}; ///< other rank of a p2p op, otherwise no_peer

    friend constexpr bool operator==(const event&, const event&) = default;
};

static_assert(sizeof(event) == 8, "an event must stay 8 bytes");

} // namespace pipesched
