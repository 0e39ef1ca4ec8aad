// pipesched internals: PyTorch's zero-bubble order (ZB1P, `ScheduleInterleavedZeroBubble`) as a
// program of phases, shared by interleaved_zero_bubble (v chunks) and zb_h1 (its v = 1 case);
// interleaved_zero_bubble.hpp derives it from PyTorch's `_get_1f1b_rank_ops`.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../policy.hpp"
#include "../shape.hpp"
#include "program.hpp"

namespace pipesched::detail {


/// The ZB1P order of one rank as phases: `warmup` forwards, then forward/input pairs, each W
/// `delay` steps after its I, the last W's at the end.
[[nodiscard]] constexpr phase_program zb1p_program(std::uint32_t units, std::uint32_t warmup,
                                                   std::uint32_t delay) noexcept {
    const std::uint32_t steady = units - warmup;
    const std::uint32_t steady_without_w = std::min(delay, steady);
    const std::uint32_t cooldown_without_w = std::min(delay > steady ? delay - steady : 0u, warmup);
    phase_program prog{};
    prog.then(warmup, "F")
        .then(steady_without_w, "FI")
        .then(steady - steady_without_w, "FIW")
        .then(cooldown_without_w, "I")
        .then(warmup - cooldown_without_w, "IW")
        .then(std::min(delay, units), "W");
    return prog;
}

using zb1p_patterns =
    pattern_list<pattern<letter::F>, pattern<letter::F, letter::I>, pattern<letter::F, letter::I, letter::W>,
                 pattern<letter::I>, pattern<letter::I, letter::W>, pattern<letter::W>>;

/// PyTorch's `number_of_rounds`: max(1, m / p).
[[nodiscard]] constexpr std::uint32_t zb1p_rounds(const shape& s) noexcept {
    return std::max(1u, s.microbatches / s.ranks);
}

/// PyTorch's constraint on every ZB1P shape, after the common ones.
[[nodiscard]] constexpr shape_check check_zb1p_rounds(const shape& s) noexcept {
    if (const auto c = check_common(s); !c) return c;
    if (s.microbatches % zb1p_rounds(s) != 0) {
        return {false, "microbatches must be a multiple of max(1, microbatches / ranks), "
                       "PyTorch's number of rounds"};
    }
    return shape_ok;
}

/// Steps between a unit's I and its W on `rank`: PyTorch's num_1f1b_microbatches.
[[nodiscard]] constexpr std::uint32_t zb1p_weight_delay(std::uint32_t rank) noexcept { return rank; }

} // namespace pipesched::detail
