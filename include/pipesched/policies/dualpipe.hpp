// pipesched: DualPipe, DeepSeek's bidirectional pipeline (DeepSeek-V3 Technical Report, arXiv
// 2412.19437, section 3.2.1; github.com/deepseek-ai/DualPipe, dualpipe.py), in the compute
// order of its DualPipe.step().
//
// Two copies of the model run from opposite ends of the p ranks (p even), each rank holding
// one stage of each, so twice the parameters per rank (placement::bidirectional): chunk 0 of
// rank r is stage r of the first pipeline (stages 0..p-1, fed at rank 0), chunk 1 is stage
// 2p-1-r, i.e. stage p-1-r of the second (stages p..2p-1, fed at rank p-1). Of the m
// microbatches (m even, m >= 2p, as dualpipe.py's num_chunks) the first m/2 run through the
// first pipeline and the rest through the second: microbatch m/2+k is the k-th that
// dualpipe.py feeds at its last rank. No tensor crosses from one pipeline to the other
// (timing_model.hpp's stage_line), and each ends in its own loss stage (p-1 on rank
// p-1, 2p-1 on rank 0).
//
// Rank r runs DeepSeek's eight steps (detail/dualpipe_steps.hpp; the steps and their repeat
// counts are listed in dualpipe_v.hpp) as DualPipeV's rank h = min(r, p-1-r) of p/2 ranks with
// m/2 microbatches, phase 0 being the pipeline its half of the ranks is fed from: chunk 0 on
// ranks 0..p/2-1, chunk 1 on ranks p/2..p-1. The middle ranks p/2-1 and p/2 run their first
// main-step repeat without a pair (F0 B1, then the pair), as dualpipe.py does. Overlapped
// pairs are op::overlap_f_b markers, as in DualPipeV (PyTorch's cell `(<F>;<B>)OVERLAP_F_B`).
//
// Measured by tests/test_dualpipe.cpp (the orders against dualpipe.py itself over a grid, see
// tests/data/dualpipe/README.md; bubble and memory from the replay):
//   - memory: peak p+1 chunk activations on every rank for every m >= 2p, DeepSeek's "PP+1"
//     (PP = p here: DualPipe's devices are its stages per pipeline), with 2x parameters.
//   - bubble: DeepSeek's (PP/2-1)(F&B+B-3W) idle on the most idle rank under the conditions
//     DualPipeV's holds under (F = I, W <= F, B = I + W, no latency).
#pragma once

#include <cstdint>
#include <string_view>

#include "../detail/dualpipe_steps.hpp"
#include "../detail/program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

namespace detail {
/// DualPipe as data for the generator engine: the eight steps of half a DualPipe (a V of p/2
/// ranks, m/2 microbatches per phase), on streams that turn a phase's k-th unit into the
/// rank's chunk of that pipeline and the pipeline's k-th microbatch.
struct dualpipe_program : dualpipe_steps {
    /// The k-th unit of one phase: (chunk, first + k).
    struct phase_counter {
        unit first{};
        std::uint32_t taken = 0;
        constexpr unit next() noexcept { return unit_at(taken++); }
        [[nodiscard]] constexpr unit unit_at(std::uint32_t k) const noexcept {
            return {first.chunk, first.microbatch + k};
        }
    };
    /// The deferred W's of the half's rank, mapped from phases to chunks and microbatches.
    struct phase_queue {
        weight_queue half{};
        std::uint32_t flip = 0;      ///< 1 on the second half of the ranks (phase 0 is chunk 1)
        std::uint32_t pipeline = 1;  ///< m/2: microbatches per pipeline
        constexpr unit next() noexcept { return unit_at(half.taken++); }
        [[nodiscard]] constexpr unit unit_at(std::uint32_t k) const noexcept {
            const unit u = half.unit_at(k);
            const std::uint32_t chunk = u.chunk ^ flip;
            return {chunk, u.microbatch + chunk * pipeline};
        }
    };

    using streams_type = stream_set<phase_counter, phase_counter, phase_counter, phase_counter, phase_counter,
                                    phase_queue>;
    static constexpr bool phantom_cut = false;

    /// The V's parameters of DualPipe's rank: p/2 ranks, m/2 microbatches, rank min(r, p-1-r).
    [[nodiscard]] static constexpr program_params half_of(const program_params& prm) noexcept {
        const std::uint32_t r = prm.rank;
        const std::uint32_t mirror = prm.ranks - 1 - r;
        const std::uint32_t h = r < mirror ? r : mirror;
        return {prm.ranks / 2, prm.microbatches / 2, prm.microbatches / 2, h};
    }
    [[nodiscard]] static constexpr basic_program<11, 6> program(const program_params& prm) noexcept {
        return steps(half_of(prm));
    }
    [[nodiscard]] static constexpr streams_type streams(const program_params& prm) noexcept {
        const std::uint32_t flip = 2 * prm.rank >= prm.ranks ? 1 : 0;
        const std::uint32_t mh = prm.microbatches / 2;
        const unit phase0{flip, flip * mh};
        const unit phase1{1 - flip, (1 - flip) * mh};
        const program_params h = half_of(prm);
        return streams_type{{phase0, 0}, {phase1, 0}, {phase0, 0}, {phase1, 0}, {phase1, 0},
                            phase_queue{weight_queue{h.ranks, h.microbatches, h.rank, 0}, flip, mh}};
    }
};
} // namespace detail

class dualpipe : public detail::program_schedule<dualpipe> {
public:
    static constexpr std::string_view name = "dualpipe";
    /// PyTorch ships DualPipeV only; the name `DualPipe` is the library's (and DeepSeek's).
    static constexpr schedule_traits traits{.pytorch_name = "", .chunks = chunk_rule::two, .fixed_backward = true};
    static constexpr placement layout = placement::bidirectional;

    using patterns = detail::dualpipe_program::patterns;

    pipesched::shape shape;

    constexpr explicit dualpipe(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept {
        const auto c = check_chunks(shape, 2,
                                    "this schedule runs one stage of each of its two pipelines per rank: chunks must be 2");
        if (!c) return c;
        if (shape.ranks % 2 != 0) return {false, "DualPipe needs an even number of ranks (dualpipe.py): ranks must be even"};
        if (shape.microbatches % 2 != 0) {
            return {false, "DualPipe feeds half the microbatches from each end (dualpipe.py): microbatches must be even"};
        }
        if (shape.microbatches < 2 * shape.ranks) {
            return {false, "DualPipe needs at least one microbatch per stage in each direction (dualpipe.py): "
                           "microbatches must be at least 2 * ranks"};
        }
        return shape_ok;
    }

    [[nodiscard]] constexpr detail::basic_program<11, 6> program(std::uint32_t rank) const noexcept {
        return detail::dualpipe_program::program(params(rank));
    }
    [[nodiscard]] constexpr detail::dualpipe_program::streams_type streams(std::uint32_t rank) const noexcept {
        return detail::dualpipe_program::streams(params(rank));
    }

private:
    [[nodiscard]] constexpr detail::program_params params(std::uint32_t rank) const noexcept {
        return {shape.ranks, shape.microbatches, shape.microbatches, rank};
    }
};

} // namespace pipesched
