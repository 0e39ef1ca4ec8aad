// pipesched: ZB-H2, the handcrafted zero-bubble schedule of Qi et al., one chunk per rank.
//
// Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024), section 2.2 and Figure 3
// (bottom): with up to 2p-1 microbatches in flight, extra forwards in the warm-up fill the
// bubble before the first I, and the W's left at the tail turn the pipeline's trapezoid into a
// parallelogram. Every backward is split into I and W; there is no fused variant.
//
// Construction (ranks r = 0..p-1, microbatches m, every count capped by what is left):
//   w = min(2(p-1-r) + 1, m)   warm-up forwards: 2p-1 on rank 0, 1 on the last rank
//   a = min(2r, m - w)          (I, F) pairs, W's held back: in flight grows from w to 2p-1
//   b = m - w - a               (I, W, F) triples, the steady state: in flight stays 2p-1
//   w                           (I, W) pairs: the drain, one I and the oldest W
//   a                           W's: the ones held back, oldest first
// I's and W's both run in microbatch order. For p = 4, m = 8 this is the paper's figure:
// rank 0 runs F0..F6 I0 W0 F7 I1 W1 I2 W2 ... I7 W7, rank 3 runs
// F0 I0 F1 I1 ... F6 I6 W0 F7 I7 W1 W2 ... W7. The warm-up counts 2(p-1-r)+1 (7 5 3 1 for
// p = 4) are also those of the authors' heuristic scheduler (`manual_order` in
// sail-sg/zero-bubble-pipeline-parallelism, zerobubble/scheduler/zb.py) when memory allows.
//
// Why it has no bubble (T_F = T_I = T_W = 1, no latency, m >= 2p-1): rank r runs F_k at time
// r + k during the warm-up, and I_k at
//   2p-1-r + 2k   in the pairs (k < 2r),
//   2p-1-3r + 3k  in the triples,
//   2p-1-r + b + 2k in the drain;
// in each case rank r+1 has finished I_k at least one unit earlier and rank r-1 has finished
// the next forward in time, so no rank ever waits after its start: rank r is busy from r to
// r + 3m. The makespan of one iteration is 3m + p - 1 and each rank's idle time is exactly the
// parallelogram's two edges, r before its first action and p-1-r after its last. When the
// optimizer step does not synchronise the ranks (the paper's post-validation), consecutive
// iterations tile and the bubble is zero.
//
// Measured (tests/test_zero_bubble.cpp): peak activations min(2p-1, m) on every rank (W frees,
// I does not); with unit costs the largest gap between a rank's first and last action is
// max(0, 2p-1-m), so m >= 2p-1 is exactly the gap-free range; with T_F = T_I = 2, T_W = 1 and
// m >= 2p-1 the makespan is m(T_F+T_I+T_W) + (p-1)T_F, the lower bound set by the last rank's
// first input (ZB-H1 needs (p-1)(T_F+T_I-T_W) instead).
//
// Accepted shapes: chunks = 1, any m >= 1 (for m < 2p-1 the warm-up is capped and the rank
// has gaps).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "../detail/program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

class zb_h2 : public detail::program_schedule<zb_h2>, public detail::single_chunk_units {
public:
    static constexpr std::string_view name = "zb_h2";
    static constexpr schedule_traits traits{.aliases = "zerobubbleh2", .fixed_backward = true};
    static constexpr placement layout = placement::loop;

    using patterns = detail::pattern_list<
        detail::pattern<detail::letter::F>, detail::pattern<detail::letter::I, detail::letter::F>,
        detail::pattern<detail::letter::I, detail::letter::W, detail::letter::F>,
        detail::pattern<detail::letter::I, detail::letter::W>, detail::pattern<detail::letter::W>>;

    pipesched::shape shape;

    constexpr explicit zb_h2(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept { return detail::check_single_chunk(shape); }

    /// Warm-up forwards on `rank`: min(2(p-1-rank) + 1, m).
    [[nodiscard]] constexpr std::uint32_t warmup(std::uint32_t rank) const noexcept {
        return std::min(2 * (shape.ranks - 1 - rank) + 1, shape.microbatches);
    }

    [[nodiscard]] constexpr detail::phase_program program(std::uint32_t rank) const noexcept {
        const std::uint32_t m = shape.microbatches;
        const std::uint32_t w = warmup(rank);
        const std::uint32_t a = std::min(2 * rank, m - w);
        const std::uint32_t b = m - w - a;
        detail::phase_program prog{};
        prog.then(w, "F").then(a, "IF").then(b, "IWF").then(w, "IW").then(a, "W");
        return prog;
    }
};

} // namespace pipesched
