// pipesched: the event vocabulary. One event is one step on one pipeline rank.
#pragma once

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

/// Snake-case name of an op, as used in JSON output and diagnostics.
[[nodiscard]] constexpr std::string_view to_string(op o) noexcept {
    switch (o) {
    case op::forward: return "forward";
    case op::backward: return "backward";
    case op::backward_input: return "backward_input";
    case op::backward_weight: return "backward_weight";
    case op::recompute: return "recompute";
    case op::loss: return "loss";
    case op::send_activation: return "send_activation";
    case op::recv_activation: return "recv_activation";
    case op::send_gradient: return "send_gradient";
    case op::recv_gradient: return "recv_gradient";
    case op::grad_sync: return "grad_sync";
    case op::grad_norm: return "grad_norm";
    case op::optimizer_step: return "optimizer_step";
    case op::param_gather: return "param_gather";
    case op::reshard: return "reshard";
    case op::overlap_f_b: return "overlap_f_b";
    }
    return "?";
}

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
    switch (o) {
    case op::forward: return 'F';
    case op::backward: return 'B';
    case op::backward_input: return 'I';
    case op::backward_weight: return 'W';
    default: return '\0';
    }
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
