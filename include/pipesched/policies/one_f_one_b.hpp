// pipesched: 1F1B (PipeDream-Flush), one forward one backward.
//
// Follows Megatron-LM `forward_backward_pipelining_without_interleaving`
// (megatron/core/pipeline_parallel/schedules.py) and PyTorch's `Schedule1F1B`, which run the
// same compute order: rank r runs min(p-r-1, m) warm-up forwards, then alternates one forward
// and one backward, then drains the remaining backwards. With p = 1 there is no warm-up and the
// order is F0 B0 F1 B1 ..., Megatron's `forward_backward_no_pipelining` (plain gradient
// accumulation). Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
// Clusters Using Megatron-LM" (SC 2021), section 2.2.
// Peak activations on rank r: min(p-r, m). Bubble with costs F, B: (p-1)/(m+p-1).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "../detail/program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

template <backward_kind Backward = backward_kind::full>
class one_f_one_b : public detail::program_schedule<one_f_one_b<Backward>, Backward>,
                    public detail::single_chunk_units {
public:
    static constexpr std::string_view name = "one_f_one_b";
    static constexpr schedule_traits traits{.pytorch_name = "1F1B", .aliases = "onefoneb pipedreamflush"};
    static constexpr placement layout = placement::loop;

    using patterns = detail::phased_patterns<Backward>;

    pipesched::shape shape;

    constexpr explicit one_f_one_b(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept { return detail::check_single_chunk(shape); }

    [[nodiscard]] constexpr std::uint32_t warmup(std::uint32_t rank) const noexcept {
        return std::min(shape.ranks - rank - 1, shape.microbatches);
    }
    [[nodiscard]] constexpr detail::phase_program program(std::uint32_t rank) const noexcept {
        return detail::phased_program(shape.microbatches, warmup(rank), Backward);
    }
};

} // namespace pipesched
