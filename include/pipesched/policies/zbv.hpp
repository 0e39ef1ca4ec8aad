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

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../detail/v_program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

namespace detail {
struct zbv_program {
    static constexpr std::size_t phases = 9;

    [[nodiscard]] static constexpr v_phase phase(const v_params& prm, std::size_t k) noexcept {
        const std::uint32_t p = prm.ranks;
        const std::uint32_t r = prm.rank;
        const std::uint32_t m = prm.microbatches;
        const std::uint32_t n = m > 2 * p - 1 ? m : 2 * p - 1;
        const op F = op::forward;
        const op I = op::backward_input;
        const op W = op::backward_weight;
        v_phase ph{};
        switch (k) {
        case 0: ph.count = 2 * (p - r) - 1; ph.add(F, 0, 0); break;
        case 1: ph.count = r; ph.add(F, 1, 0).add(F, 0, 2 * (p - r) - 1); break;
        case 2: ph.count = p - r; ph.add(F, 1, r).add(I, 1, 0).add(W, 1, 0); break;
        case 3:
            ph.count = n - 2 * p + r + 1;
            ph.add(F, 0, 2 * p - r - 1).add(I, 0, 0).add(W, 0, 0);
            ph.add(F, 1, p).add(I, 1, p - r).add(W, 1, p - r);
            break;
        case 4:
            ph.count = p - r - 1;
            ph.add(I, 0, n - 2 * p + r + 1).add(W, 0, n - 2 * p + r + 1);
            ph.add(F, 1, n - p + r + 1).add(I, 1, n - p + 1).add(W, 1, n - p + 1);
            break;
        case 5: ph.count = r; ph.add(I, 0, n - p).add(I, 1, n - r); break;
        case 6: ph.count = p - r; ph.add(I, 0, n - p + r).add(W, 0, n - p); break;
        case 7: ph.count = r; ph.add(W, 1, n - r); break;
        default: ph.count = r; ph.add(W, 0, n - r); break;
        }
        return ph;
    }
    [[nodiscard]] static constexpr unit queued(const v_params&, std::uint32_t) noexcept { return {}; }
};
} // namespace detail

class zbv {
public:
    static constexpr std::string_view name = "zbv";
    // "zb-v" needs no alias: it matches `name` once normalised.
    static constexpr schedule_traits traits{.pytorch_name = "ZBVZeroBubble", .aliases = "zerobubblev",
        .chunks = chunk_rule::two, .fixed_backward = true};
    static constexpr placement layout = placement::v_shape;
    static constexpr op backward_op = op::backward_input;

    pipesched::shape shape;

    constexpr explicit zbv(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept {
        if (const auto c = check_common(shape); !c) return c;
        if (shape.chunks != 2) {
            return {false, "this schedule runs two chunks per rank in a V (PyTorch: exactly 2 "
                           "stages per rank): chunks must be 2"};
        }
        return shape_ok;
    }

    /// F, I and W of each of the rank's 2m units.
    [[nodiscard]] constexpr std::size_t size(std::uint32_t rank) const {
        detail::require_usable(*this, rank);
        return 6 * std::size_t{shape.microbatches};
    }

    using cursor_type = detail::v_program_cursor<detail::zbv_program>;
    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const {
        detail::require_usable(*this, rank);
        return cursor_type{params(rank)};
    }

    /// Calls f(event) for every event of the rank; one loop per phase.
    template <class F>
    constexpr void generate(std::uint32_t rank, F& f) const {
        detail::require_usable(*this, rank);
        detail::run_program<detail::zbv_program>(params(rank), f);
    }

private:
    [[nodiscard]] constexpr detail::v_params params(std::uint32_t rank) const noexcept {
        return {shape.ranks, shape.microbatches, shape.microbatches, rank};
    }
};

} // namespace pipesched
