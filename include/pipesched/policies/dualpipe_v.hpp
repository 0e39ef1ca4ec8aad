// pipesched: DualPipeV, DeepSeek's V-shape variant of DualPipe (DeepSeek-V3 Technical Report,
// arXiv 2412.19437; github.com/deepseek-ai/DualPipe, dualpipev.py), in the compute order of
// PyTorch's `ScheduleDualPipeV` (torch/distributed/pipelining/schedules.py), which follows
// DeepSeek's eight steps action for action.
//
// Two chunks per rank in a V (placement::v_shape): chunk 0 of rank r is stage r, chunk 1 is
// stage 2p-1-r. The main phase runs pairs of a forward of one chunk and a full backward of the
// other as one overlapped computation. A pair is three events: an op::overlap_f_b marker, then
// the F, then the B (PyTorch's cell `(<F>;<B>)OVERLAP_F_B`). Validation requires both inputs
// of a pair before it starts; simulate() runs it as one computation of duration
// stage_costs::overlapped_forward_backward (default F + B, no speed-up).
//
// The backward is full (B) except where DualPipe uses its zero-bubble split, I now and W later
// from a FIFO queue of deferred weight gradients. With F0/F1 the forward of chunk 0/1, B, I, W
// likewise, (F;B) an overlapped pair, and microbatches counted per chunk and per op (B and I
// share one counter), rank r of p runs (m microbatches):
//   1  F0                              x 2(p-r-1)
//   2  F0 F1                           x r+1
//   3  I1 W1 F1                        x p-r-1        zero bubble: each W right after its I
//   4  (F0;B1) (F1;B0)                 x m-2p+r+1     the main phase; on the last rank the
//                                                     first repeat runs F0 B1 (F1;B0), not
//                                                     overlapped (DeepSeek: less bubble)
//   5  B1 (F1;B0)                      x p-r-1
//   6  B1 B0 | B1 I0 | I1 I0           x r+1          from repeat (r+1)/2 on, I replaces B:
//                                                     first for chunk 0 when r is even, for
//                                                     both when r is odd
//   7  W I0                            x p-r-1        W: the oldest deferred weight gradient
//   8  W                               x r+1
// That is 2m F's, 2m backwards (B or I), 2p-r-1 W's (one per I) and 2(m-2p+r+1)+(p-r-1)
// pairs, minus one on the last rank: 6m - p events on every rank but the last, 6m - p - 1 on
// it, counting the markers.
//
// Measured by tests/test_v_schedules.cpp against a step-by-step mirror of PyTorch's code:
//   - memory (simulate's unit: chunk activations, an F allocates, a B or W frees): peak 2p+1
//     on every rank, for every m >= 2p. DeepSeek's table gives "PP+1" activations per device
//     with PP the number of stages (2p for DualPipeV on p devices) counted in the activation of
//     one stage for one microbatch, which is the library's chunk activation: 2p+1, the same.
//   - bubble: DeepSeek's (PP/2-1)(F&B+B-3W) with PP = 2p stages, i.e. (p-1)(F&B+B-3W) idle
//     per rank, holds exactly in the simulator (idle of the most idle rank, which is rank p-1;
//     no latency, B = I + W, any F&B between max(F, B) and F + B, every m >= 2p) if and only if
//     the forward and the input-gradient half take equally long (F = I) and W <= F. With F = I
//     and W > F the idle time is (p-1)(F&B+B-2W-F): a W cannot fill more than the gap it is
//     placed in. With F != I the formula does not hold in general (for example F = 2,
//     I = W = 1 gives (p-1)(F&B+B-3W+F-I)): the derivation assumes F = I.
//
// Accepted shapes: chunks = 2 and m >= 2p, as PyTorch ("DualPipeV requires at least as many
// microbatches as stages") and DeepSeek (num_chunks >= num_ranks * 2) require.
#pragma once

#include <cstdint>
#include <string_view>

#include "../detail/dualpipe_steps.hpp"
#include "../detail/program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

namespace detail {
/// DualPipeV as data for the generator engine (program.hpp): DeepSeek's eight steps
/// (dualpipe_steps.hpp), the V's chunks on counter streams per op kind and chunk.
struct dualpipe_v_program : dualpipe_steps {
    using streams_type = stream_set<counter<0>, counter<1>, counter<0>, counter<1>, counter<1>, weight_queue>;
    static constexpr bool phantom_cut = false;

    [[nodiscard]] static constexpr basic_program<11, 6> program(const program_params& prm) noexcept {
        return steps(prm);
    }
    [[nodiscard]] static constexpr streams_type streams(const program_params& prm) noexcept {
        return streams_type{{}, {}, {}, {}, {}, weight_queue{prm.ranks, prm.microbatches, prm.rank, 0}};
    }
};
} // namespace detail

class dualpipe_v : public detail::program_schedule<dualpipe_v> {
public:
    static constexpr std::string_view name = "dualpipe_v";
    static constexpr schedule_traits traits{.pytorch_name = "DualPipeV", .chunks = chunk_rule::two,
        .fixed_backward = true};
    static constexpr placement layout = placement::v_shape;

    using patterns = detail::dualpipe_v_program::patterns;

    pipesched::shape shape;

    constexpr explicit dualpipe_v(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept {
        const auto c = check_chunks(shape, 2, "this schedule runs two chunks per rank in a V: chunks must be 2");
        if (!c) return c;
        if (shape.microbatches < 2 * shape.ranks) {
            return {false, "this schedule needs at least one microbatch per stage (PyTorch, "
                           "DeepSeek): microbatches must be at least 2 * ranks"};
        }
        return shape_ok;
    }

    [[nodiscard]] constexpr detail::basic_program<11, 6> program(std::uint32_t rank) const noexcept {
        return detail::dualpipe_v_program::program(params(rank));
    }
    [[nodiscard]] constexpr detail::dualpipe_v_program::streams_type streams(std::uint32_t rank) const noexcept {
        return detail::dualpipe_v_program::streams(params(rank));
    }

private:
    [[nodiscard]] constexpr detail::program_params params(std::uint32_t rank) const noexcept {
        return {shape.ranks, shape.microbatches, shape.microbatches, rank};
    }
};

} // namespace pipesched
