// pipesched: ZB-H1, the memory-efficient handcrafted zero-bubble schedule, one chunk per rank.
//
// Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024), section 2.1 and Figure 3 (top):
// the 1F1B skeleton with every backward split into I (input gradient) and W (weight gradient);
// rank r starts its W's r steps late, so every rank holds p microbatches at its peak and the
// W's fill the tail of the pipeline. Always split: there is no fused variant.
//
// The compute order is PyTorch's `ScheduleInterleavedZeroBubble` with one stage per rank, with
// its idle slots removed; the code is interleaved_zero_bubble's with v = 1 (see
// interleaved_zero_bubble.hpp for the derivation from PyTorch's `_get_1f1b_rank_ops`):
//   rank r: F_0 .. F_{w-1} with w = min(p-1-r, m) warm-up forwards, then for each remaining
//   forward F_{w+j}, I_j, and W_{j-r} once j >= r; then the remaining I_j (each followed by
//   W_{j-r} once j >= r); then the last min(r, m) W's.
// For p = 4, m = 8: rank 0 runs F0 F1 F2 F3 I0 W0 F4 I1 W1 ..., rank 3 runs
// F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 I4 W1 ... F7 I7 W4 W5 W6 W7, as in the paper's figure.
//
// Accepted shapes: chunks = 1 and what PyTorch accepts, m % max(1, m / p) == 0. PyTorch checks
// this for every v although with v = 1 the order does not depend on the number of rounds; the
// policy keeps PyTorch's check so that both accept the same shapes.
//
// Cost model (tests/test_zero_bubble.cpp; costs T_F, T_I, T_W per stage, no p2p latency):
//   m >= p:  makespan = m(T_F+T_I+T_W) + (p-1)(T_F+T_I - min(T_F, T_I, T_W)).
//            The paper's bubble (p-1)(T_F+T_B-T_W) (T_B is the I pass) holds exactly when
//            T_W <= min(T_F, T_I), which includes the paper's T_F = T_B = T_W (bubble (p-1)T_F,
//            a third of 1F1B's). A W longer than the F or I gap it was put in delays the pass
//            after it; the bubble is then (p-1)max(T_F, T_I).
//   m < p:   with T_W <= min(T_F, T_I): makespan = (m+p-1)(T_F+T_I) + T_W, the 1F1B bubble with
//            B = I plus one trailing W: rank 0's warm-up is capped at m, so it runs all its
//            forwards first and nothing is left to overlap with the first backward's round trip.
// Peak activations (W frees, I does not): min(p, m) on every rank.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "../detail/program.hpp"
#include "../detail/zb1p.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

class zb_h1 : public detail::program_schedule<zb_h1>, public detail::single_chunk_units {
public:
    static constexpr std::string_view name = "zb_h1";
    static constexpr schedule_traits traits{.aliases = "zerobubbleh1", .fixed_backward = true};
    static constexpr placement layout = placement::loop;

    using patterns = detail::zb1p_patterns;

    pipesched::shape shape;

    constexpr explicit zb_h1(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept {
        const auto c = check_chunks(shape, 1, "this schedule runs one chunk per rank: chunks must be 1 "
                                                      "(interleaved_zero_bubble runs v chunks)");
        return c ? detail::check_zb1p_rounds(shape) : c;
    }

    /// ZB1P with v = 1: the unit table is microbatch order and the warm-up min(p-1-rank, m).
    [[nodiscard]] constexpr detail::phase_program program(std::uint32_t rank) const noexcept {
        const std::uint32_t m = shape.microbatches;
        return detail::zb1p_program(m, std::min(shape.ranks - 1 - rank, m), detail::zb1p_weight_delay(rank));
    }
};

} // namespace pipesched
