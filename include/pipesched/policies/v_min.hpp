// pipesched: V-Min, the V-shaped zero-bubble schedule with about 1/3 of 1F1B's activation memory.
//
// Qi et al., "Pipeline Parallelism with Controllable Memory" (NeurIPS 2024), section 4, and the
// authors' repository sail-sg/zero-bubble-pipeline-parallelism (`--zero-bubble-v-schedule-mem-setup
// min`). The order is built by detail/v_controllable.hpp and stored (detail/v_controllable_schedule.hpp,
// which V-Half shares: accepted shapes, memory bound, peak activations).
#pragma once

#include <string_view>

#include "../detail/v_controllable_schedule.hpp"
#include "../policy.hpp"

namespace pipesched {

/// V-Min: about 1/3 of 1F1B's activation memory.
class v_min : public detail::v_controllable_schedule<detail::v_controllable::memory_setup::min> {
public:
    static constexpr std::string_view name = "v_min";
    // Not in PyTorch; accepted in PyTorch's style too (ZBVMin like ZBVZeroBubble).
    static constexpr schedule_traits traits{.aliases = "zbvmin vminzerobubble",
        .chunks = chunk_rule::two, .fixed_backward = true};
    using v_controllable_schedule::v_controllable_schedule;
};

} // namespace pipesched
