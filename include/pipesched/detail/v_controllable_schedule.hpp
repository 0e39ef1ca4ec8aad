// pipesched internals: what V-Min and V-Half (policies/v_min.hpp, policies/v_half.hpp) share, the
// V-shaped zero-bubble schedules whose activation memory is set by construction: about 1/3
// (V-Min) and 1/2 (V-Half) of 1F1B's. The two policies differ only in the memory setup they hand
// to the generator (detail/v_controllable.hpp); each policy header includes this one, never the
// other policy.
//
// Qi et al., "Pipeline Parallelism with Controllable Memory" (NeurIPS 2024), section 4
// (V-ZB is `zbv`, V-Half and V-Min trade a little bubble for memory), and the authors'
// repository sail-sg/zero-bubble-pipeline-parallelism (`--zero-bubble-v-schedule-mem-setup
// min|half`). V placement (chunk 0 on stage r, chunk 1 on stage 2p-1-r), chunks = 2, split
// backward: every unit runs F, I and W. The order is built by detail/v_controllable.hpp (the
// paper's building block, repeated, with W's in the free slots and the warm-up and cool-down
// squeezed), which is not closed-form, so the policy stores it: one 8-byte event per action,
// 6m per rank, built when the policy is constructed (run time only; not a constexpr value).
//
// Peak activations at unit costs, once m reaches the steady state and never more
// (tests/test_v_memory.cpp): V-Min (p+4)//3, V-Half (p+2)//2 microbatches of a rank's
// activations (twice that in chunk activations; 1F1B holds p).
// Accepted shapes: chunks = 2, ranks * microbatches <= 2^20 (the stored order and its
// construction grow with it: at most build_bytes() while the order is built, about 113 bytes per
// (rank, microbatch) and 1 KB per rank measured; 48 bytes per unit, the stored order, stay).
#pragma once

#include <cstdint>
#include <string_view>

#include "../policy.hpp"
#include "../shape.hpp"
#include "stored_order.hpp"
#include "v_controllable.hpp"

namespace pipesched {

namespace detail {

/// The two policies differ only in the memory setup they hand to the generator.
template <v_controllable::memory_setup Setup>
class v_controllable_schedule : public stored_order<placement::v_shape> {
public:
    explicit v_controllable_schedule(pipesched::shape s) {
        shape = s;
        if (check_shape(s)) assign(v_controllable::generate(Setup, s.ranks, s.microbatches));
    }

    [[nodiscard]] shape_check check() const noexcept {
        if (const shape_check c = check_shape(shape); !c) return c;
        return stored_order<placement::v_shape>::check();
    }

    /// Most bytes the constructor holds at once for shape s (linear in ranks x microbatches),
    /// for a caller that bounds its memory before constructing (the command-line tool).
    [[nodiscard]] static constexpr std::uint64_t build_bytes(const pipesched::shape& s) noexcept {
        return v_controllable::build_bytes_per_unit * s.ranks * s.microbatches +
               v_controllable::build_bytes_per_rank * s.ranks;
    }

    [[nodiscard]] static constexpr shape_check check_shape(const pipesched::shape& s) noexcept {
        constexpr bool min = Setup == v_controllable::memory_setup::min;
        const shape_check c = check_chunks(s, 2, min ? "V-Min runs two chunks per rank in a V: chunks must be 2"
                                                     : "V-Half runs two chunks per rank in a V: chunks must be 2");
        if (!c) return c;
        if (std::uint64_t{s.ranks} * s.microbatches > (std::uint64_t{1} << 20)) {
            return {false, min ? "V-Min stores its order: ranks * microbatches must be at most 2^20"
                               : "V-Half stores its order: ranks * microbatches must be at most 2^20"};
        }
        return shape_ok;
    }
};
} // namespace detail

} // namespace pipesched
