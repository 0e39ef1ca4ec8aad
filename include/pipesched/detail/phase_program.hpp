// pipesched internals: a rank's sequence written as a short program of repeated patterns.
//
// The zero-bubble schedules (ZB-H1, ZB-H2, PyTorch's ZB1P) do not fit the warm-up / steady /
// cool-down form of phased.hpp: W's lag their I's by a rank-dependent number of steps and the
// steady pattern changes part-way. They do fit this form:
//
//   a rank runs at most `max_phases` phases; phase k repeats a pattern of one to three split
//   compute ops (letters F, I, W) `repeats` times.
//
// The n-th F of a rank is the policy's forward unit n; the n-th I and the n-th W are both its
// backward unit n, so W's always run in the order of their I's (which is what PyTorch and the
// zero-bubble paper do). The phase lengths depend on the rank through a few numbers, so the
// program is rebuilt in O(1), at(rank, i) is closed-form, and the cursor's state has a fixed
// size (the program plus three unit walkers): no allocation.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "../event.hpp"
#include "../policy.hpp"
#include "../shape.hpp"
#include "phased.hpp"

namespace pipesched::detail {

inline constexpr std::size_t max_phases = 6;

/// Letter index: 0 = F (forward), 1 = I (backward_input), 2 = W (backward_weight).
[[nodiscard]] constexpr op split_op(std::uint8_t letter) noexcept {
    return letter == 0 ? op::forward : letter == 1 ? op::backward_input : op::backward_weight;
}

struct program_phase {
    std::uint32_t repeats = 0;
    std::uint8_t length = 0;               ///< 1..3 letters
    std::array<std::uint8_t, 3> letters{}; ///< split_op() indices
};

class phase_program {
public:
    /// Appends `repeats` copies of `pattern`, one to three of the letters F, I, W.
    /// Phases that repeat zero times are left out.
    constexpr phase_program& then(std::uint32_t repeats, std::string_view pattern) noexcept {
        if (repeats == 0) return *this;
        program_phase& ph = phases_[count_++];
        ph.repeats = repeats;
        ph.length = static_cast<std::uint8_t>(pattern.size());
        for (std::size_t i = 0; i < pattern.size(); ++i) {
            ph.letters[i] = pattern[i] == 'F' ? 0 : pattern[i] == 'I' ? 1 : 2;
        }
        return *this;
    }

    [[nodiscard]] constexpr std::size_t phase_count() const noexcept { return count_; }
    [[nodiscard]] constexpr const program_phase& phase(std::size_t k) const noexcept {
        return phases_[k];
    }

    /// Number of events.
    [[nodiscard]] constexpr std::size_t size() const noexcept {
        std::size_t n = 0;
        for (std::size_t k = 0; k < count_; ++k) {
            n += std::size_t{phases_[k].repeats} * phases_[k].length;
        }
        return n;
    }

private:
    std::array<program_phase, max_phases> phases_{};
    std::uint8_t count_ = 0;
};

/// Units of a single-chunk schedule in microbatch order, for policies on program_schedule.
struct single_chunk_units {
    [[nodiscard]] static constexpr unit forward_unit(std::uint32_t k) noexcept { return {0, k}; }
    [[nodiscard]] static constexpr unit backward_unit(std::uint32_t k) noexcept { return {0, k}; }
    [[nodiscard]] static constexpr sequential_walker forward_walker() noexcept { return {}; }
    [[nodiscard]] static constexpr sequential_walker backward_walker() noexcept { return {}; }
};

/// CRTP base. Derived provides:
///   program(rank)        the rank's phase_program
///   forward_unit(k)      closed form of the k-th forward unit
///   backward_unit(k)     closed form of the k-th backward unit (of both its I and its W)
///   forward_walker()     object whose next() yields forward units in order, O(1) each
///   backward_walker()    the same for backward units
/// Every backward is split: the policies built on this base have no fused variant.
template <class Derived>
class program_schedule {
public:
    static constexpr op backward_op = op::backward_input;

    [[nodiscard]] constexpr std::size_t size(std::uint32_t rank) const {
        require_usable(self(), rank);
        return self().program(rank).size();
    }

    /// Closed form: the i-th event of `rank` (precondition: i < size(rank)).
    [[nodiscard]] constexpr event at(std::uint32_t rank, std::size_t i) const {
        require_usable(self(), rank);
        require_index(self(), rank, i);
        const phase_program prog = self().program(rank);
        std::array<std::size_t, 3> before{}; // F, I, W in earlier phases
        for (std::size_t k = 0; k < prog.phase_count(); ++k) {
            const program_phase& ph = prog.phase(k);
            std::array<std::size_t, 3> per_repeat{};
            for (std::size_t j = 0; j < ph.length; ++j) ++per_repeat[ph.letters[j]];
            const std::size_t events = std::size_t{ph.repeats} * ph.length;
            if (i < events) {
                const std::size_t repeat = i / ph.length;
                const std::size_t position = i % ph.length;
                const std::uint8_t letter = ph.letters[position];
                std::size_t index = before[letter] + repeat * per_repeat[letter];
                for (std::size_t j = 0; j < position; ++j) index += ph.letters[j] == letter ? 1 : 0;
                const auto k32 = static_cast<std::uint32_t>(index);
                const unit u = letter == 0 ? self().forward_unit(k32) : self().backward_unit(k32);
                return make_event(split_op(letter), rank, u);
            }
            i -= events;
            for (std::size_t l = 0; l < 3; ++l) {
                before[l] += std::size_t{ph.repeats} * per_repeat[l];
            }
        }
        return event{};
    }

    /// Calls f(event) for every event of the rank; one loop per phase, with the pattern's
    /// letters fixed at compile time for the patterns the zero-bubble policies use.
    template <class F>
    constexpr void generate(std::uint32_t rank, F& f) const {
        require_usable(self(), rank);
        const phase_program prog = self().program(rank);
        walkers w{self().forward_walker(), self().backward_walker(), self().backward_walker()};
        for (std::size_t k = 0; k < prog.phase_count(); ++k) {
            const program_phase& ph = prog.phase(k);
            const std::uint32_t n = ph.repeats;
            switch (pattern_code(ph)) {
            case pattern_code("F"): repeat<0>(n, rank, w, f); break;
            case pattern_code("I"): repeat<1>(n, rank, w, f); break;
            case pattern_code("W"): repeat<2>(n, rank, w, f); break;
            case pattern_code("FI"): repeat<0, 1>(n, rank, w, f); break;
            case pattern_code("IF"): repeat<1, 0>(n, rank, w, f); break;
            case pattern_code("IW"): repeat<1, 2>(n, rank, w, f); break;
            case pattern_code("FIW"): repeat<0, 1, 2>(n, rank, w, f); break;
            case pattern_code("IWF"): repeat<1, 2, 0>(n, rank, w, f); break;
            default:
                for (std::uint32_t r = 0; r < n; ++r) {
                    for (std::size_t j = 0; j < ph.length; ++j) emit_letter(ph.letters[j], rank, w, f);
                }
                break;
            }
        }
    }

    class cursor_type {
    public:
        constexpr cursor_type() = default;
        constexpr cursor_type(const Derived& source, std::uint32_t rank)
            : program_{source.program(rank)}, fw_{source.forward_walker()},
              iw_{source.backward_walker()}, ww_{source.backward_walker()}, rank_{rank} {
            advance();
        }

        [[nodiscard]] constexpr bool done() const noexcept { return done_; }
        [[nodiscard]] constexpr event current() const noexcept {
            return std::bit_cast<event>(current_);
        }

        constexpr void advance() noexcept {
            if (phase_ == program_.phase_count()) {
                done_ = true;
                return;
            }
            const program_phase& ph = program_.phase(phase_);
            event e{};
            switch (ph.letters[position_]) {
            case 0: e = make_event(op::forward, rank_, fw_.next()); break;
            case 1: e = make_event(op::backward_input, rank_, iw_.next()); break;
            default: e = make_event(op::backward_weight, rank_, ww_.next()); break;
            }
            current_ = std::bit_cast<std::uint64_t>(e);
            if (++position_ == ph.length) {
                position_ = 0;
                if (++repeat_ == ph.repeats) {
                    repeat_ = 0;
                    ++phase_;
                }
            }
        }

    private:
        using walker_f = decltype(std::declval<const Derived&>().forward_walker());
        using walker_b = decltype(std::declval<const Derived&>().backward_walker());
        phase_program program_{};
        walker_f fw_{};
        walker_b iw_{};
        walker_b ww_{};
        std::uint32_t rank_ = 0;
        std::uint32_t repeat_ = 0;
        std::uint8_t phase_ = 0;
        std::uint8_t position_ = 0;
        std::uint64_t current_{}; // an event as one value, as in phased.hpp
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

    struct walkers {
        decltype(std::declval<const Derived&>().forward_walker()) f;
        decltype(std::declval<const Derived&>().backward_walker()) i;
        decltype(std::declval<const Derived&>().backward_walker()) w;
    };
    /// 1 + letter per position, base 4: distinct for every pattern of one to three letters.
    [[nodiscard]] static constexpr unsigned pattern_code(std::string_view pattern) noexcept {
        unsigned code = 0;
        for (char c : pattern) code = code * 4 + (c == 'F' ? 1u : c == 'I' ? 2u : 3u);
        return code;
    }
    [[nodiscard]] static constexpr unsigned pattern_code(const program_phase& ph) noexcept {
        unsigned code = 0;
        for (std::size_t j = 0; j < ph.length; ++j) code = code * 4 + ph.letters[j] + 1u;
        return code;
    }
    template <class F>
    static constexpr void emit_letter(std::uint8_t letter, std::uint32_t rank, walkers& w, F& f) {
        switch (letter) {
        case 0: f(make_event(op::forward, rank, w.f.next())); break;
        case 1: f(make_event(op::backward_input, rank, w.i.next())); break;
        default: f(make_event(op::backward_weight, rank, w.w.next())); break;
        }
    }
    template <std::uint8_t Letter, class F>
    static constexpr void emit_one(std::uint32_t rank, walkers& w, F& f) {
        if constexpr (Letter == 0) f(make_event(op::forward, rank, w.f.next()));
        else if constexpr (Letter == 1) f(make_event(op::backward_input, rank, w.i.next()));
        else f(make_event(op::backward_weight, rank, w.w.next()));
    }
    template <std::uint8_t... Letters, class F>
    static constexpr void repeat(std::uint32_t n, std::uint32_t rank, walkers& w, F& f) {
        for (std::uint32_t r = 0; r < n; ++r) (emit_one<Letters>(rank, w, f), ...);
    }
};

} // namespace pipesched::detail
