// pipesched: GPipe, all forwards then all backwards.
//
// Follows Huang et al., "GPipe" (NeurIPS 2019) and PyTorch's `ScheduleGPipe`
// (torch.distributed.pipelining): every rank runs F for microbatches 0..m-1, then B for
// microbatches 0..m-1. It is also the order SimAI's workload row sweep produces for ga > 1
// (SimAI runs the backwards in reverse, which changes nothing about memory or bubble).
// Peak activations: m per rank. Bubble with costs F, B: (p-1)/(m+p-1).
#pragma once

#include <cstdint>
#include <string_view>

#include "../detail/program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

template <backward_kind Backward = backward_kind::full>
class gpipe : public detail::program_schedule<gpipe<Backward>, Backward>, public detail::single_chunk_units {
public:
    static constexpr std::string_view name = "gpipe";
    static constexpr schedule_traits traits{.pytorch_name = "GPipe", .aliases = "allforwardallbackward afab"};
    static constexpr placement layout = placement::loop;

    using patterns = detail::phased_patterns<Backward>;

    pipesched::shape shape;

    constexpr explicit gpipe(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept { return detail::check_single_chunk(shape); }

    /// Every forward is warm-up: no steady phase.
    [[nodiscard]] constexpr detail::phase_program program(std::uint32_t) const noexcept {
        return detail::phased_program(shape.microbatches, shape.microbatches, Backward);
    }
};

} // namespace pipesched
