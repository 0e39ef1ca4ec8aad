// pipesched: interleaved 1F1B (virtual pipeline), v model chunks per rank, loop placement.
//
// Follows Megatron-LM `forward_backward_pipelining_with_interleaving` and its
// `get_schedule_table` (megatron/core/pipeline_parallel/schedules.py), and PyTorch's
// `ScheduleInterleaved1F1B`; Narayanan et al. (SC 2021), section 2.2.2.
//
// Microbatches are taken in groups of g (Megatron's `microbatch_group_size_per_vp_stage`); a
// group starting at microbatch s is the last one when s + g >= m and then holds m - s
// microbatches. The k-th forward unit is read off the table
//     for each group: for chunk c in 0..v-1: for mb in group: (c, mb)
// and the k-th backward unit off the same table with c replaced by v-1-c. Rank r runs
// W = min(2(p-r-1) + (v-1)g, m*v) warm-up forwards, then alternates forward and backward,
// then drains the backwards; a capped rank is all-forward-then-all-backward.
//
// Group size: 0 selects PyTorch's g = m / max(1, m / p), which equals Megatron's default
// g = p whenever p divides m. Accepted (m, g): everything Megatron accepts
// (p <= g <= m, and m % g == 0 or m % g >= p) plus what PyTorch accepts beyond it
// (m < p with g = m). The rest is rejected by check() with the violated constraint.
//
// Bubble with costs F, B: (p-1)/(v*m+p-1). Peak on rank r: min(W + 1, m*v) chunk activations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "../detail/grouped_table.hpp"
#include "../detail/program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

template <backward_kind Backward = backward_kind::full>
class interleaved_1f1b : public detail::program_schedule<interleaved_1f1b<Backward>, Backward>,
                         public detail::grouped_units<interleaved_1f1b<Backward>> {
public:
    static constexpr std::string_view name = "interleaved_1f1b";
    static constexpr schedule_traits traits{.pytorch_name = "Interleaved1F1B",
        .aliases = "interleaved virtualpipeline",
        .chunks = chunk_rule::any};
    static constexpr placement layout = placement::loop;

    using patterns = detail::phased_patterns<Backward>;

    pipesched::shape shape;
    std::uint32_t group_size = 0; ///< 0: PyTorch's default, m / max(1, m / p)

    constexpr explicit interleaved_1f1b(pipesched::shape s, std::uint32_t g = 0) noexcept
        : shape{s}, group_size{g} {}

    /// PyTorch's `microbatches_per_round`; equals p when p divides m.
    [[nodiscard]] static constexpr std::uint32_t default_group_size(const pipesched::shape& s) noexcept {
        return detail::default_group_size(s);
    }
    [[nodiscard]] constexpr std::uint32_t group() const noexcept {
        return group_size != 0 ? group_size : default_group_size(shape);
    }

    [[nodiscard]] constexpr shape_check check() const noexcept { return detail::check_grouped_shape(shape, group()); }

    [[nodiscard]] constexpr std::uint32_t units() const noexcept {
        return shape.microbatches * shape.chunks;
    }
    [[nodiscard]] constexpr std::uint32_t warmup(std::uint32_t rank) const noexcept {
        return std::min(2 * (shape.ranks - rank - 1) + (shape.chunks - 1) * group(), units());
    }
    [[nodiscard]] constexpr detail::phase_program program(std::uint32_t rank) const noexcept {
        return detail::phased_program(units(), warmup(rank), Backward);
    }
    /// The grouped unit table with group size g (detail/grouped_table.hpp): forward_unit(k),
    /// backward_unit(k) and the walkers come from it through detail::grouped_units.
    [[nodiscard]] constexpr detail::grouped_table unit_table() const noexcept {
        return {shape.microbatches, shape.chunks, group()};
    }
};

} // namespace pipesched
