// pipesched: ZB-V, the V-shape zero-bubble schedule (Qi et al., "Zero Bubble Pipeline
// Parallelism", ICLR 2024, section 6), in the compute order of PyTorch's
// `ScheduleZBVZeroBubble` (torch/distributed/pipelining/schedules.py) with its idle slots
// removed.
//
// Two chunks per rank in a V (placement::v_shape): chunk 0 of rank r is stage r, chunk 1 is
// stage 2p-1-r, so microbatches go down the ranks on chunk 0 and back up on chunk 1, and rank
// 0 holds both the first and the last stage. Every backward is split into I and W.
//
// PyTorch builds each rank's list by counting per chunk and op kind (F0, F1, I0, I1, W0, W1);
// its loops run for a fixed number of steps, so the list is a fixed sequence of phases. With
// n = max(2p-1, m) (PyTorch's padding), rank r runs, where "xK j" repeats j times and each
// microbatch is the next one of that chunk and op:
//   A  F0                              x 2(p-r)-1     warm-up down the V
//   B  F1 F0                           x r
//   C  F1 I1 W1                        x p-r          the turn of the V
//   D  F0 I0 W0 F1 I1 W1               x n-2p+r+1     steady state
//   E  I0 W0 F1 I1 W1                  x p-r-1        (F0 exhausted)
//   F  I0 I1                           x r            cool-down: W's deferred
//   G  I0 W0                           x p-r
//   H  W1                              x r            the deferred W's, chunk 1 first
//   I  W0                              x r
// (So the phase lengths are PyTorch's loop counts: warmup_n1, warmup_n2, warmup_n3, the
// stable loop, whose F0-less tail is E, cooldown_n1, cooldown_n2 and the two W drains.)
// For m < 2p-1 PyTorch pads to n = 2p-1 microbatches and replaces the actions of the phantom
// microbatches m..n-1 by idle slots; here they are simply absent and the remaining actions
// keep their order. Each rank runs 6m events: F, I and W of each of its 2m units.
//
// Measured by tests/test_v_schedules.cpp against a step-by-step mirror of PyTorch's code:
//   - memory (simulate's unit: chunk activations, an F allocates, the W frees): peak on rank r
//     is min(2p, 2m, m+r+1); for m >= 2p-1 it is 2p chunk activations on every rank, i.e.
//     p microbatches of a whole rank's layers (a chunk holds half of them): the paper's "p".
//   - with T_F = T_I = T_W = 1 and no latency, for m >= 2p-1 the makespan is 6m + (p-1) and
//     every rank idles exactly p-1: the unavoidable fill (rank p-1 cannot start before the
//     first microbatch has crossed p-1 ranks); nothing else. Bubble fraction (p-1)/(6m+p-1).
//
// Accepted shapes: chunks = 2 (PyTorch: "ZBV requires exactly 2 stages per rank"), any m >= 1.
#pragma once

#include <cstdint>
#include <string_view>

#include "../detail/program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

namespace detail {
/// ZB-V as data for the generator engine (program.hpp): the table above, one phase a row, on
/// six counter streams, one per op kind and chunk as PyTorch counts them.
struct zbv_program {
    enum stream : std::uint32_t { f0, f1, i0, i1, w0, w1 };
    static constexpr letter F0 = slot(op::forward, f0);
    static constexpr letter F1 = slot(op::forward, f1);
    static constexpr letter I0 = slot(op::backward_input, i0);
    static constexpr letter I1 = slot(op::backward_input, i1);
    static constexpr letter W0 = slot(op::backward_weight, w0);
    static constexpr letter W1 = slot(op::backward_weight, w1);

    using patterns = pattern_list<pattern<F0>, pattern<F1, F0>, pattern<F1, I1, W1>,
                                  pattern<F0, I0, W0, F1, I1, W1>, pattern<I0, W0, F1, I1, W1>,
                                  pattern<I0, I1>, pattern<I0, W0>, pattern<W1>, pattern<W0>>;
    using streams_type = stream_set<counter<0>, counter<1>, counter<0>, counter<1>, counter<0>, counter<1>>;
    /// The padded microbatches: events of microbatch m or more are cut (phantom_cut).
    static constexpr bool phantom_cut = true;

    [[nodiscard]] static constexpr basic_program<9, 6> program(const program_params& prm) noexcept {
        const std::uint32_t p = prm.ranks;
        const std::uint32_t r = prm.rank;
        const std::uint32_t m = prm.microbatches;
        const std::uint32_t n = m > 2 * p - 1 ? m : 2 * p - 1;
        basic_program<9, 6> prog{};
        prog.then(2 * (p - r) - 1, {F0})               // A
            .then(r, {F1, F0})                         // B
            .then(p - r, {F1, I1, W1})                 // C
            .then(n - 2 * p + r + 1, {F0, I0, W0, F1, I1, W1}) // D
            .then(p - r - 1, {I0, W0, F1, I1, W1})     // E
            .then(r, {I0, I1})                         // F
            .then(p - r, {I0, W0})                     // G
            .then(r, {W1})                             // H
            .then(r, {W0});                            // I
        return prog;
    }
};
} // namespace detail

class zbv : public detail::program_schedule<zbv> {
public:
    static constexpr std::string_view name = "zbv";
    // "zb-v" needs no alias: it matches `name` once normalised.
    static constexpr schedule_traits traits{.pytorch_name = "ZBVZeroBubble", .aliases = "zerobubblev",
        .chunks = chunk_rule::two, .fixed_backward = true};
    static constexpr placement layout = placement::v_shape;

    using patterns = detail::zbv_program::patterns;

    pipesched::shape shape;

    constexpr explicit zbv(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept {
        return check_chunks(shape, 2, "this schedule runs two chunks per rank in a V (PyTorch: exactly 2 "
                                              "stages per rank): chunks must be 2");
    }

    [[nodiscard]] constexpr detail::basic_program<9, 6> program(std::uint32_t rank) const noexcept {
        return detail::zbv_program::program({shape.ranks, shape.microbatches, shape.microbatches, rank});
    }
    [[nodiscard]] static constexpr detail::zbv_program::streams_type streams(std::uint32_t) noexcept { return {}; }
    /// PyTorch's padding microbatches m..2p-2 are left out.
    [[nodiscard]] constexpr std::uint32_t phantom_limit() const noexcept { return shape.microbatches; }
};

} // namespace pipesched
