// pipesched internals: the warm-up / steady / cool-down form shared by GPipe, 1F1B,
// interleaved 1F1B and looped BFS.
//
// Each rank runs n forward units and n backward units (a unit is one (chunk, microbatch)):
//   warm-up:   W forwards
//   steady:    n-W pairs (forward, backward)
//   cool-down: the W remaining backwards
// The policies differ only in W per rank and in the order of units. A backward unit is one
// event (B) or two (I then W) when the policy splits the backward.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "../event.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched::detail {

struct unit {
    std::uint32_t chunk;
    std::uint32_t microbatch;
};

[[nodiscard]] constexpr event make_event(op kind, std::uint32_t rank, unit u) noexcept {
    if constexpr (std::endian::native == std::endian::little) {
        // One 64-bit value instead of five narrow stores: g++ otherwise chains partial-register
        // writes from one event to the next and streams 2-3x slower (benchmarks/README.md).
        const std::uint64_t bits = std::uint64_t{static_cast<std::uint8_t>(kind)} |
                                   (std::uint64_t{u.chunk & 0xFFu} << 8) |
                                   (std::uint64_t{rank & 0xFFFFu} << 16) |
                                   (std::uint64_t{u.microbatch & 0xFFFFu} << 32) |
                                   (std::uint64_t{no_peer} << 48);
        return std::bit_cast<event>(bits);
    } else {
        return event{kind, static_cast<std::uint8_t>(u.chunk), static_cast<std::uint16_t>(rank),
                     static_cast<std::uint16_t>(u.microbatch), no_peer};
    }
}

/// CRTP base. Derived provides:
///   units()              n, the forward (and backward) units per rank
///   warmup(rank)         W <= n
///   forward_unit(k)      closed form of the k-th forward unit
///   backward_unit(k)     closed form of the k-th backward unit
///   forward_walker()     object whose next() yields forward units in order, O(1) each
///   backward_walker()    the same for backward units
template <class Derived, backward_kind Backward>
class phased_schedule {
public:
    static constexpr std::uint32_t events_per_backward = Backward == backward_kind::split ? 2 : 1;
    static constexpr op backward_op =
        Backward == backward_kind::split ? op::backward_input : op::backward;

    [[nodiscard]] constexpr std::size_t size(std::uint32_t rank) const {
        require_usable(self(), rank);
        return std::size_t{self().units()} * (1 + events_per_backward);
    }

    /// Closed form: the i-th event of `rank`, without generating the ones before it.
    [[nodiscard]] constexpr event at(std::uint32_t rank, std::size_t i) const {
        require_usable(self(), rank);
        require_index(self(), rank, i);
        const std::size_t warm = self().warmup(rank);
        const std::size_t steady = std::size_t{self().units()} - warm;
        constexpr std::size_t block = 1 + events_per_backward;
        if (i < warm) return forward_event(rank, i);
        std::size_t j = i - warm;
        if (j < steady * block) {
            const std::size_t pair = j / block;
            const std::size_t within = j % block;
            if (within == 0) return forward_event(rank, warm + pair);
            return backward_event(rank, pair, within - 1);
        }
        j -= steady * block;
        return backward_event(rank, steady + j / events_per_backward, j % events_per_backward);
    }

    /// Calls f(event) for every event of the rank; one tight loop per phase.
    template <class F>
    constexpr void generate(std::uint32_t rank, F& f) const {
        require_usable(self(), rank);
        const std::uint32_t warm = self().warmup(rank);
        const std::uint32_t steady = self().units() - warm;
        auto fw = self().forward_walker();
        auto bw = self().backward_walker();
        for (std::uint32_t k = 0; k < warm; ++k) f(make_event(op::forward, rank, fw.next()));
        for (std::uint32_t k = 0; k < steady; ++k) {
            f(make_event(op::forward, rank, fw.next()));
            emit_backward(rank, bw.next(), f);
        }
        for (std::uint32_t k = 0; k < warm; ++k) emit_backward(rank, bw.next(), f);
    }

    class cursor_type {
    public:
        constexpr cursor_type() = default;
        constexpr cursor_type(const Derived& source, std::uint32_t rank)
            : fw_{source.forward_walker()}, bw_{source.backward_walker()}, rank_{rank},
              warm_left_{source.warmup(rank)}, steady_left_{source.units() - source.warmup(rank)},
              cool_left_{source.warmup(rank)} {
            advance();
        }

        [[nodiscard]] constexpr bool done() const noexcept { return done_; }
        [[nodiscard]] constexpr event current() const noexcept {
            return std::bit_cast<event>(current_);
        }

        constexpr void advance() noexcept {
            if (weight_pending_) { // second half of a split backward
                weight_pending_ = false;
                current_ = std::bit_cast<std::uint64_t>(make_event(op::backward_weight, rank_, last_backward_));
                return;
            }
            if (warm_left_ > 0) {
                --warm_left_;
                current_ = std::bit_cast<std::uint64_t>(make_event(op::forward, rank_, fw_.next()));
            } else if (steady_left_ > 0) {
                if (!steady_forward_done_) {
                    steady_forward_done_ = true;
                    current_ = std::bit_cast<std::uint64_t>(make_event(op::forward, rank_, fw_.next()));
                } else {
                    steady_forward_done_ = false;
                    --steady_left_;
                    start_backward();
                }
            } else if (cool_left_ > 0) {
                --cool_left_;
                start_backward();
            } else {
                done_ = true;
            }
        }

    private:
        constexpr void start_backward() noexcept {
            last_backward_ = bw_.next();
            current_ = std::bit_cast<std::uint64_t>(make_event(backward_op, rank_, last_backward_));
            weight_pending_ = Backward == backward_kind::split;
        }

        decltype(std::declval<const Derived&>().forward_walker()) fw_{};
        decltype(std::declval<const Derived&>().backward_walker()) bw_{};
        std::uint32_t rank_ = 0;
        std::uint32_t warm_left_ = 0;
        std::uint32_t steady_left_ = 0;
        std::uint32_t cool_left_ = 0;
        unit last_backward_{};
        std::uint64_t current_{}; // an event, kept as one value for the same reason as make_event
        bool steady_forward_done_ = false;
        bool weight_pending_ = false;
        bool done_ = false;
    };

    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const {
        require_usable(self(), rank);
        return cursor_type{self(), rank};
    }

private:
    [[nodiscard]] constexpr const Derived& self() const noexcept {
        return static_cast<const Derived&>(*this);
    }
    [[nodiscard]] constexpr event forward_event(std::uint32_t rank, std::size_t k) const noexcept {
        return make_event(op::forward, rank, self().forward_unit(static_cast<std::uint32_t>(k)));
    }
    [[nodiscard]] constexpr event backward_event(std::uint32_t rank, std::size_t k,
                                                 std::size_t half) const noexcept {
        const op kind = half == 0 ? backward_op : op::backward_weight;
        return make_event(kind, rank, self().backward_unit(static_cast<std::uint32_t>(k)));
    }
    template <class F>
    static constexpr void emit_backward(std::uint32_t rank, unit u, F& f) {
        f(make_event(backward_op, rank, u));
        if constexpr (Backward == backward_kind::split) f(make_event(op::backward_weight, rank, u));
    }
};

/// Units of a single-chunk schedule in microbatch order (GPipe, 1F1B).
struct sequential_walker {
    std::uint32_t next_microbatch = 0;
    constexpr unit next() noexcept { return {0, next_microbatch++}; }
};

} // namespace pipesched::detail

namespace pipesched::detail {

/// Phased schedules with one chunk per rank and units in microbatch order (GPipe, 1F1B);
/// Derived supplies only `shape`, `name`, `layout` and `warmup(rank)`.
template <class Derived, backward_kind Backward>
class single_chunk_schedule : public phased_schedule<Derived, Backward> {
public:
    [[nodiscard]] constexpr shape_check check() const noexcept {
        const shape& s = static_cast<const Derived&>(*this).shape;
        if (const auto c = check_common(s); !c) return c;
        if (s.chunks != 1) return {false, "this schedule runs one chunk per rank: chunks must be 1"};
        return shape_ok;
    }
    [[nodiscard]] constexpr std::uint32_t units() const noexcept {
        return static_cast<const Derived&>(*this).shape.microbatches;
    }
    [[nodiscard]] static constexpr unit forward_unit(std::uint32_t k) noexcept { return {0, k}; }
    [[nodiscard]] static constexpr unit backward_unit(std::uint32_t k) noexcept { return {0, k}; }
    [[nodiscard]] static constexpr sequential_walker forward_walker() noexcept { return {}; }
    [[nodiscard]] static constexpr sequential_walker backward_walker() noexcept { return {}; }
};

} // namespace pipesched::detail
