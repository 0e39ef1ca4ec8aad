// pipesched internals: the grouped unit table of the interleaved schedules (interleaved 1F1B
// and PyTorch's interleaved zero bubble, which is the same table with all groups full).
//
// Microbatches are taken in groups of g (Megatron's `microbatch_group_size_per_vp_stage`); a
// group starting at microbatch s is the last one when s + g >= m and then holds m - s
// microbatches. The k-th forward unit is row k of
//     for each group: for chunk c in 0..v-1: for mb in group: (c, mb)
// and the k-th backward unit is the same row with c replaced by v-1-c. The table gives both
// in closed form (forward_unit, backward_unit) and as walkers, O(1) per unit, for the engine's
// streams (program.hpp).
#pragma once

#include <cstdint>

#include "program.hpp"

namespace pipesched::detail {

struct grouped_table {
    std::uint32_t microbatches = 1;
    std::uint32_t chunks = 1;
    std::uint32_t group = 1;

    /// Walks the table; `reversed` mirrors the chunk for the backward sweep.
    struct walker {
        std::uint32_t microbatches = 1;
        std::uint32_t chunks = 1;
        std::uint32_t group = 1;
        bool reversed = false;
        std::uint32_t group_start = 0;
        std::uint32_t group_length = 1;
        std::uint32_t chunk = 0;
        std::uint32_t offset = 0;

        // Always inlined, like the engine's emit_one (program.hpp): a call per event would
        // cost more than the step.
        [[gnu::always_inline]] constexpr unit next() noexcept {
            const unit u{reversed ? chunks - 1 - chunk : chunk, group_start + offset};
            if (++offset == group_length) {
                offset = 0;
                if (++chunk == chunks) {
                    chunk = 0;
                    group_start += group_length;
                    group_length = length_of_group_at(group_start, microbatches, group);
                }
            }
            return u;
        }
    };

    [[nodiscard]] static constexpr std::uint32_t length_of_group_at(std::uint32_t start, std::uint32_t m,
                                                                    std::uint32_t g) noexcept {
        return start + g >= m ? m - start : g;
    }

    [[nodiscard]] constexpr walker forward_walker() const noexcept { return make_walker(false); }
    [[nodiscard]] constexpr walker backward_walker() const noexcept { return make_walker(true); }

    /// Closed form of the forward table.
    [[nodiscard]] constexpr unit forward_unit(std::uint32_t k) const noexcept {
        const std::uint32_t m = microbatches;
        const std::uint32_t v = chunks;
        const std::uint32_t g = group;
        const std::uint32_t last_start = g * ((m - 1) / g);
        const std::uint32_t full_units = last_start * v;
        if (k < full_units) {
            const std::uint32_t within = k % (g * v);
            return {within / g, (k / (g * v)) * g + within % g};
        }
        const std::uint32_t last_length = m - last_start;
        const std::uint32_t rest = k - full_units;
        return {rest / last_length, last_start + rest % last_length};
    }
    [[nodiscard]] constexpr unit backward_unit(std::uint32_t k) const noexcept {
        const unit u = forward_unit(k);
        return {chunks - 1 - u.chunk, u.microbatch};
    }

private:
    [[nodiscard]] constexpr walker make_walker(bool reversed) const noexcept {
        return {microbatches, chunks, group, reversed, 0, length_of_group_at(0, microbatches, group), 0, 0};
    }
};

/// PyTorch's `microbatches_per_round`, the group size when the caller gives none; equals
/// Megatron's default p when p divides m.
[[nodiscard]] constexpr std::uint32_t default_group_size(const shape& s) noexcept {
    if (s.ranks == 0) return 0; // check() refuses the shape; it asks for the group first
    return s.microbatches / (s.microbatches / s.ranks > 1 ? s.microbatches / s.ranks : 1);
}

/// The shapes and group sizes g the interleaved 1F1B schedules accept: everything Megatron
/// accepts (p <= g <= m, and m % g == 0 or m % g >= p) plus what PyTorch accepts beyond it
/// (m < p with g = m); the message names the violated constraint.
[[nodiscard]] constexpr shape_check check_grouped_shape(const shape& s, std::uint32_t g) noexcept {
    if (const auto c = check_common(s); !c) return c;
    const std::uint32_t p = s.ranks;
    const std::uint32_t m = s.microbatches;
    if (g > m) return {false, "group size must be at most microbatches (Megatron: p <= g <= m)"};
    if (g < p && !(m < p && g == m)) {
        return {false, "group size must be at least ranks (Megatron), or equal microbatches "
                       "when microbatches < ranks (PyTorch)"};
    }
    if (m % g != 0 && m % g < p) {
        return {false, "microbatches % group size must be 0 or at least ranks: the last group "
                       "would be shorter than the pipeline (Megatron)"};
    }
    return shape_ok;
}

/// The unit streams of a policy that reads its units off a grouped table: the policy gives
/// unit_table() (CRTP, like single_chunk_units for the one-chunk schedules).
template <class Policy>
struct grouped_units {
    [[nodiscard]] constexpr unit forward_unit(std::uint32_t k) const noexcept { return table().forward_unit(k); }
    [[nodiscard]] constexpr unit backward_unit(std::uint32_t k) const noexcept { return table().backward_unit(k); }
    [[nodiscard]] constexpr grouped_table::walker forward_walker() const noexcept { return table().forward_walker(); }
    [[nodiscard]] constexpr grouped_table::walker backward_walker() const noexcept {
        return table().backward_walker();
    }

private:
    [[nodiscard]] constexpr grouped_table table() const noexcept {
        return static_cast<const Policy&>(*this).unit_table();
    }
};

} // namespace pipesched::detail
