// pipesched: the verdict of a validation or replay: what is wrong with an order, and where.
// Shared by validate(), simulate(), their iteration forms and the replay engine (replay.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../action.hpp"
#include "../detail/enum_table.hpp"

namespace pipesched {

enum class verdict_code : std::uint8_t {
    valid,
    invalid_shape,           ///< the policy rejects its shape (see check().message)
    not_compute,             ///< an op other than F, B, I, W in a compute schedule
    out_of_range,            ///< stage or microbatch outside the shape
    duplicate,               ///< the same action twice
    missing,                 ///< an F, B, I or W that never runs
    backward_before_forward, ///< B or I of a unit before its F
    weight_before_input,     ///< W of a unit before its I
    stage_on_two_ranks,      ///< one stage executed by two ranks
    deadlock,                ///< ranks wait on each other forever
    // Iteration rules (validate of an iteration<P> or of per-rank event lists):
    p2p_wrong_peer,            ///< a send/recv whose peer is not the neighbouring stage's rank
    unmatched_send,            ///< a send that no rank receives
    unmatched_recv,            ///< a receive that no rank sends
    p2p_order_mismatch,        ///< a channel's sends and receives pair up in different orders
    input_not_received,        ///< compute consumes a cross-rank tensor before receiving it
    send_before_compute,       ///< a tensor sent before the compute that produces it
    loss_misplaced,            ///< loss not between the last stage's F and B of its microbatch
    recompute_misplaced,       ///< recompute not between the F and the backward of its unit
    grad_sync_before_backward, ///< a chunk's gradients synced before all its backward work
    stale_update,              ///< grad_norm/optimizer_step before every grad_sync of the rank
    // Overlapped pairs (DualPipeV):
    malformed_overlap, ///< an overlap marker or flag not followed by F, then B or I of another unit
    // Cost-model replays (simulate):
    invalid_cost,  ///< a duration or latency is negative, NaN or infinite (verdict::cost)
    time_overflow, ///< finite costs add up beyond the largest double: the action that overflowed
    // Added after the others so that existing codes keep their values:
    mixed_backward, ///< one unit's backward run both as B and as I/W (B then I or W, I then B)
};

inline constexpr auto verdict_code_names = detail::enum_table<verdict_code::mixed_backward>(
    {{verdict_code::valid, "valid"}, {verdict_code::invalid_shape, "invalid_shape"},
     {verdict_code::not_compute, "not_compute"}, {verdict_code::out_of_range, "out_of_range"},
     {verdict_code::duplicate, "duplicate"}, {verdict_code::missing, "missing"},
     {verdict_code::backward_before_forward, "backward_before_forward"},
     {verdict_code::weight_before_input, "weight_before_input"},
     {verdict_code::stage_on_two_ranks, "stage_on_two_ranks"}, {verdict_code::deadlock, "deadlock"},
     {verdict_code::p2p_wrong_peer, "p2p_wrong_peer"},
     {verdict_code::unmatched_send, "unmatched_send"},
     {verdict_code::unmatched_recv, "unmatched_recv"},
     {verdict_code::p2p_order_mismatch, "p2p_order_mismatch"},
     {verdict_code::input_not_received, "input_not_received"},
     {verdict_code::send_before_compute, "send_before_compute"},
     {verdict_code::loss_misplaced, "loss_misplaced"},
     {verdict_code::recompute_misplaced, "recompute_misplaced"},
     {verdict_code::grad_sync_before_backward, "grad_sync_before_backward"},
     {verdict_code::stale_update, "stale_update"},
     {verdict_code::malformed_overlap, "malformed_overlap"},
     {verdict_code::invalid_cost, "invalid_cost"}, {verdict_code::time_overflow, "time_overflow"},
     {verdict_code::mixed_backward, "mixed_backward"}});

[[nodiscard]] constexpr std::string_view to_string(verdict_code c) noexcept { return detail::name_in(verdict_code_names, c); }

/// A rank blocked at `index`, waiting to run `waiting`.
struct blocked_rank {
    std::uint32_t rank = 0;
    std::uint32_t index = 0;
    action waiting{};
    friend constexpr bool operator==(const blocked_rank&, const blocked_rank&) = default;
};

inline constexpr std::size_t max_cycle_report = 8;

/// Result of validate(): converts to true when the schedule is valid.
struct verdict {
    verdict_code code = verdict_code::valid;
    std::uint32_t rank = 0;   ///< rank of the offending action
    std::uint32_t index = 0;  ///< its position in the rank's sequence
    action subject{};         ///< the offending (or missing) action
    std::uint32_t other_rank = 0; ///< stage_on_two_ranks: the rank that ran the stage first
    std::uint32_t cycle_length = 0; ///< deadlock: ranks in the waiting cycle
    std::array<blocked_rank, max_cycle_report> cycle{}; ///< deadlock: the first of them
    std::string_view shape_message{}; ///< invalid_shape: the violated constraint
    double cost = 0.0; ///< invalid_cost: the offending value; time_overflow: the action's start

    constexpr explicit operator bool() const noexcept { return code == verdict_code::valid; }
    friend constexpr bool operator==(const verdict&, const verdict&) = default;
};

} // namespace pipesched
