// pipesched: looped BFS (breadth-first pipeline).
//
// Follows PyTorch's `ScheduleLoopedBFS` (torch.distributed.pipelining.schedules) and Lamy-Poirier,
// "Breadth-First Pipeline Parallelism" (MLSys 2023): every rank runs all forwards of its chunk 0
// (microbatches 0..m-1), then of chunk 1, ..., then the backwards chunk by chunk in reverse
// (v-1 down to 0) with microbatches in reverse (m-1 down to 0). Loop placement.
// Peak activations: m*v chunk activations per rank.
#pragma once

#include <cstdint>
#include <string_view>

#include "../detail/program.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

template <backward_kind Backward = backward_kind::full>
class looped_bfs : public detail::program_schedule<looped_bfs<Backward>, Backward> {
public:
    static constexpr std::string_view name = "looped_bfs";
    static constexpr schedule_traits traits{.pytorch_name = "LoopedBFS", .aliases = "bfs breadthfirst",
        .chunks = chunk_rule::any};
    static constexpr placement layout = placement::loop;

    using patterns = detail::phased_patterns<Backward>;

    pipesched::shape shape;

    constexpr explicit looped_bfs(pipesched::shape s) noexcept : shape{s} {}

    [[nodiscard]] constexpr shape_check check() const noexcept { return check_common(shape); }

    [[nodiscard]] constexpr std::uint32_t units() const noexcept {
        return shape.microbatches * shape.chunks;
    }
    /// Every forward is warm-up: all forwards, then all backwards.
    [[nodiscard]] constexpr detail::phase_program program(std::uint32_t) const noexcept {
        return detail::phased_program(units(), units(), Backward);
    }
    [[nodiscard]] constexpr detail::unit forward_unit(std::uint32_t k) const noexcept {
        return {k / shape.microbatches, k % shape.microbatches};
    }
    [[nodiscard]] constexpr detail::unit backward_unit(std::uint32_t k) const noexcept {
        return {shape.chunks - 1 - k / shape.microbatches,
                shape.microbatches - 1 - k % shape.microbatches};
    }

    /// Walks chunk-major; `reversed` walks chunks and microbatches from the end.
    struct walker {
        std::uint32_t microbatches = 1;
        std::uint32_t chunks = 1;
        bool reversed = false;
        std::uint32_t chunk = 0;
        std::uint32_t microbatch = 0;
        [[gnu::always_inline]] constexpr detail::unit next() noexcept { // see interleaved_1f1b.hpp
            const detail::unit u = reversed ? detail::unit{chunks - 1 - chunk, microbatches - 1 - microbatch}
                                            : detail::unit{chunk, microbatch};
            if (++microbatch == microbatches) {
                microbatch = 0;
                ++chunk;
            }
            return u;
        }
    };
    [[nodiscard]] constexpr walker forward_walker() const noexcept {
        return {shape.microbatches, shape.chunks, false};
    }
    [[nodiscard]] constexpr walker backward_walker() const noexcept {
        return {shape.microbatches, shape.chunks, true};
    }
};

} // namespace pipesched
