// pipesched: PyTorch's interleaved zero-bubble schedule (ZB1P), v model chunks per rank, loop
// placement.
//
// Follows PyTorch's `ScheduleInterleavedZeroBubble` (torch/distributed/pipelining/schedules.py,
// `_calculate_single_rank_operations` and `_get_1f1b_rank_ops(..., enable_zero_bubble=True)`),
// PyTorch's implementation of the ZB1P schedule of Qi et al., "Zero Bubble Pipeline
// Parallelism" (ICLR 2024), extended to v chunks per rank. With v = 1 it is the paper's
// handcrafted ZB-H1 (see zb_h1.hpp, which shares this code).
//
// Every backward is split into I (input gradient, on the critical path) and W (weight
// gradient, deferrable): the schedule is defined by where the W's go, so there is no fused
// variant and the policy is a plain class, not a template over backward_kind.
//
// Units. PyTorch plays rounds = max(1, m / p) rounds of g = m / rounds microbatches
// (`microbatches_per_round`). Forward unit k is row k of the interleaved_1f1b table with group
// size g (for each group: for chunk c in 0..v-1: for mb in group: (c, mb)); backward unit k is
// the same row with c replaced by v-1-c. (PyTorch derives the chunk from the step as
// (k / g) % v and the microbatch from a per-chunk counter, which is the same table because
// every group is full.)
//
// Order on rank r, with n = v*m units:
//   w = min((v-1)*g + (p-1-r), n)   warm-up forwards (`_get_warmup_ops`, multiply_factor 1)
//   d = r                           W delay (`num_1f1b_microbatches = rank`)
//   F_0 .. F_{w-1}
//   for j in 0 .. n-w-1:  F_{w+j}, I_j, and W_{j-d} if j >= d
//   for j in n-w .. n-1:  I_j, and W_{j-d} if j >= d
//   the last min(d, n) W's, oldest first
// Each W runs d steps after its I, and W's run in the order of their I's. PyTorch pads the
// order with idle slots (leading `None`s and `_add_bubbles_to_actions`), which never reorders
// actions, so with the idle slots removed this is PyTorch's compute order exactly. As phases
// (detail/program.hpp): F x w, FI x min(d, n-w), FIW x (the rest of the steady
// steps), I x (cool-down steps still before the delay), IW x (the other cool-down steps),
// W x min(d, n).
//
// Accepted shapes: what PyTorch accepts, m % max(1, m / p) == 0 ("Zero bubble requires the
// number of microbatches to be a multiple of the number of rounds"), for any v >= 1.
// Everything with m % p == 0 or m < p passes; e.g. p = 4 rejects m = 9, 11, 13, 14.
//
// Cost model (tests/test_zero_bubble.cpp, equal per-chunk costs T_F, T_I, T_W on every stage,
// no p2p latency), for m >= p:
//   makespan = v*m*(T_F+T_I+T_W) + (p-1)*(T_F+T_I - min(T_F, T_I, T_W))
// which is the paper's ZB-H1 bubble (p-1)(T_F+T_B-T_W) exactly when T_W <= min(T_F, T_I).
// Peak activations (a unit is freed by its W, not by its I), on every rank:
//   min((v-1)*g + p, v*m)
// i.e. p for v = 1, the same as 1F1B's first rank.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "../detail/grouped_table.hpp"
#include "../detail/program.hpp"
#include "../detail/zb1p.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

class interleaved_zero_bubble : public detail::program_schedule<interleaved_zero_bubble>,
                                public detail::grouped_units<interleaved_zero_bubble> {
public:
    static constexpr std::string_view name = "interleaved_zero_bubble";
    static constexpr schedule_traits traits{.pytorch_name = "InterleavedZeroBubble", .aliases = "zb1p",
        .chunks = chunk_rule::any, .fixed_backward = true};
    static constexpr placement layout = placement::loop;

    using patterns = detail::zb1p_patterns;

    pipesched::shape shape;

    constexpr explicit interleaved_zero_bubble(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept { return detail::check_zb1p_rounds(shape); }

    [[nodiscard]] constexpr std::uint32_t rounds() const noexcept { return detail::zb1p_rounds(shape); }
    /// PyTorch's `microbatches_per_round`, the group size g of the unit table.
    [[nodiscard]] constexpr std::uint32_t microbatches_per_round() const noexcept {
        return shape.microbatches / rounds();
    }
    [[nodiscard]] constexpr std::uint32_t units() const noexcept {
        return shape.microbatches * shape.chunks;
    }
    /// Warm-up forwards on `rank`: min((v-1)g + p-1-rank, v*m).
    [[nodiscard]] constexpr std::uint32_t warmup(std::uint32_t rank) const noexcept {
        return std::min((shape.chunks - 1) * microbatches_per_round() + (shape.ranks - 1 - rank), units());
    }
    [[nodiscard]] constexpr detail::phase_program program(std::uint32_t rank) const noexcept {
        return detail::zb1p_program(units(), warmup(rank), detail::zb1p_weight_delay(rank));
    }

    /// The interleaved 1F1B unit table (detail/grouped_table.hpp) with g = microbatches_per_round
    /// (all groups full); the unit streams come from it through detail::grouped_units.
    [[nodiscard]] constexpr detail::grouped_table unit_table() const noexcept {
        return {shape.microbatches, shape.chunks, microbatches_per_round()};
    }
};

} // namespace pipesched
