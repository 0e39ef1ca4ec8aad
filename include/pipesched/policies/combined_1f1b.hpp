// pipesched: combined 1F1B, Megatron-LM's 1F1B with expert-parallel all-to-all overlap
// (`--overlap-moe-expert-parallel-comm`, optionally `--delay-wgrad-compute`), on one chunk per
// rank (combined_1f1b) and on v chunks per rank (interleaved_combined_1f1b).
//
// Follows megatron/core/pipeline_parallel/schedules.py (`get_pp_rank_microbatches`,
// `forward_backward_pipelining_with_interleaving`) and combined_1f1b.py
// (`combined_1f1b_schedule_for_interleaved_pipelining`, `..._for_no_pipelining`), read at
// NVIDIA/Megatron-LM d98e8a6 (2026-08-22). Megatron runs the order of interleaved 1F1B with
// one more warm-up forward ("so that the forward and backward computations are independent in
// all 1f1b steps"), and each steady-state step k runs the forward of unit k + W and the
// backward of unit k as one combined step, whose layers interleave so that each chunk's
// dispatch and combine all-to-all run under the other's compute (the pair model of
// timing_model.hpp, overlapped_pair_time). So rank r of p runs
//     F x W,   (F;B) x (units - W),   B x W
// with W = min(2(p-r-1) + (v-1)g + 1, m*v) for v chunks and group size g (interleaved 1F1B's
// warm-up plus one) and units read off interleaved 1F1B's grouped table. A pair is three events:
// an op::overlap_f_b marker, the F, then the B (PyTorch's `(<F>;<B>)OVERLAP_F_B`).
//
// With `--delay-wgrad-compute` (backward_kind::split here) every backward is its input half I,
// and its weight gradient W runs after it, in the same step, once the input gradient is sent
// (TransformerModelChunkSchedulePlan.run: post_backward before the last backward_dw):
//     F x W,   (F;I) W x (units - W),   I W x W
// (Megatron also runs the experts' W inside the pair, under the backward dispatch; the library
// charges each W alone, after its pair.)
//
// Megatron's configuration requires a virtual pipeline when p > 1 (TransformerConfig: "If
// enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified") and
// combines one chunk per rank only without pipelining (p = 1: F0, (F1;B0), ..., B(m-1),
// `combined_1f1b_schedule_for_no_pipelining`). combined_1f1b is the interleaved code path with
// one model chunk, W = min(2(p-r-1) + 1, m): Megatron's formula at v = 1, and at p = 1 the
// no-pipelining schedule exactly. (With only one warm-up forward more than 1F1B, p - r, each
// pair waits on the neighbour's pair before it, and every rank idles about half of the steady
// state; Megatron's 2(p-r-1) + 1 leaves the slack.)
//
// Peak activations on rank r: W + 1 chunk activations, capped at the units (1F1B's p - r and
// interleaved 1F1B's W + 1 with its smaller W); the pair's F is counted before its B frees one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "../detail/grouped_table.hpp"
#include "../detail/program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

namespace detail {
/// The combined program: W forwards, then pairs, then the remaining backwards; a pair is the
/// marker, the F and the B, or, split, the marker, the F, the I and the W of that I.
inline constexpr letter pair_marker = slot(op::overlap_f_b, no_stream);

[[nodiscard]] constexpr basic_program<3, 4> combined_program(std::uint32_t units, std::uint32_t warmup,
                                                             backward_kind backward) noexcept {
    basic_program<3, 4> prog{};
    if (backward == backward_kind::split) {
        prog.then(warmup, {letter::F})
            .then(units - warmup, {pair_marker, letter::F, letter::I, letter::W})
            .then(warmup, {letter::I, letter::W});
    } else {
        prog.then(warmup, {letter::F}).then(units - warmup, {pair_marker, letter::F, letter::B}).then(warmup, {letter::B});
    }
    return prog;
}

template <backward_kind Backward>
using combined_patterns = std::conditional_t<
    Backward == backward_kind::split,
    pattern_list<pattern<letter::F>, pattern<pair_marker, letter::F, letter::I, letter::W>,
                 pattern<letter::I, letter::W>>,
    pattern_list<pattern<letter::F>, pattern<pair_marker, letter::F, letter::B>, pattern<letter::B>>>;
} // namespace detail

/// Combined 1F1B on one chunk per rank (see the header comment).
template <backward_kind Backward = backward_kind::full>
class combined_1f1b : public detail::program_schedule<combined_1f1b<Backward>, Backward>,
                      public detail::single_chunk_units {
public:
    static constexpr std::string_view name = "combined_1f1b";
    static constexpr schedule_traits traits{.aliases = "1F1BCombined 1F1BA2AOverlap"};
    static constexpr placement layout = placement::loop;

    using patterns = detail::combined_patterns<Backward>;

    pipesched::shape shape;

    constexpr explicit combined_1f1b(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept { return detail::check_single_chunk(shape); }

    /// Megatron's get_pp_rank_microbatches with overlap_moe_expert_parallel_comm, at v = 1.
    [[nodiscard]] constexpr std::uint32_t warmup(std::uint32_t rank) const noexcept {
        return std::min(2 * (shape.ranks - rank - 1) + 1, shape.microbatches);
    }
    [[nodiscard]] constexpr detail::basic_program<3, 4> program(std::uint32_t rank) const noexcept {
        return detail::combined_program(shape.microbatches, warmup(rank), Backward);
    }
};

/// Combined 1F1B on v chunks per rank: Megatron's interleaved schedule with
/// `--overlap-moe-expert-parallel-comm` (see the header comment). Group size as interleaved 1F1B.
template <backward_kind Backward = backward_kind::full>
class interleaved_combined_1f1b
    : public detail::program_schedule<interleaved_combined_1f1b<Backward>, Backward>,
      public detail::grouped_units<interleaved_combined_1f1b<Backward>> {
public:
    static constexpr std::string_view name = "interleaved_combined_1f1b";
    static constexpr schedule_traits traits{.aliases = "Interleaved1F1BCombined Interleaved1F1BA2AOverlap",
        .chunks = chunk_rule::any};
    static constexpr placement layout = placement::loop;

    using patterns = detail::combined_patterns<Backward>;

    pipesched::shape shape;
    std::uint32_t group_size = 0; ///< 0: PyTorch's default, m / max(1, m / p)

    constexpr explicit interleaved_combined_1f1b(pipesched::shape s, std::uint32_t g = 0) noexcept
        : shape{s}, group_size{g} {}

    [[nodiscard]] constexpr std::uint32_t group() const noexcept {
        return group_size != 0 ? group_size : detail::default_group_size(shape);
    }
    [[nodiscard]] constexpr shape_check check() const noexcept { return detail::check_grouped_shape(shape, group()); }

    [[nodiscard]] constexpr std::uint32_t units() const noexcept { return shape.microbatches * shape.chunks; }
    /// Megatron's get_pp_rank_microbatches with overlap_moe_expert_parallel_comm.
    [[nodiscard]] constexpr std::uint32_t warmup(std::uint32_t rank) const noexcept {
        return std::min(2 * (shape.ranks - rank - 1) + (shape.chunks - 1) * group() + 1, units());
    }
    [[nodiscard]] constexpr detail::basic_program<3, 4> program(std::uint32_t rank) const noexcept {
        return detail::combined_program(units(), warmup(rank), Backward);
    }
    [[nodiscard]] constexpr detail::grouped_table unit_table() const noexcept {
        return {shape.microbatches, shape.chunks, group()};
    }
};

} // namespace pipesched
