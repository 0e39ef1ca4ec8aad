// pipesched internals: the generator engine of the loop-placed schedules. A policy is data for
// it: per rank, a short program of phases, each a pattern of ops repeated some number of times.
//
// Every loop-placed schedule has this form. GPipe, 1F1B, interleaved 1F1B and looped BFS are
// warm-up F's, steady (F, B) pairs and cool-down B's; the zero-bubble schedules (ZB-H1, ZB-H2,
// PyTorch's ZB1P) add phases in which W's lag their I's. A pattern is one to three letters:
//   F  forward                        the next forward unit
//   B  backward (fused)               the next backward unit
//   I  backward_input                 the next backward unit
//   W  backward_weight                the next unit of its own backward stream
// B and I share one stream of backward units (a policy uses one or the other); W walks the same
// sequence separately, so W's always run in the order of their I's (as PyTorch and the
// zero-bubble paper do). The policy supplies the unit sequences twice: closed form for at(),
// and as walkers (O(1) per step, no division) for streaming. The phase lengths depend on the
// rank through a few numbers, so a program is rebuilt in O(1), at(rank, i) is closed-form and
// the cursor's state has a fixed size (the program plus three walkers): no allocation.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
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

/// Units of a single-chunk schedule: microbatch order (GPipe, 1F1B, ZB-H1, ZB-H2).
struct sequential_walker {
    std::uint32_t next_microbatch = 0;
    constexpr unit next() noexcept { return {0, next_microbatch++}; }
};

struct single_chunk_units {
    [[nodiscard]] static constexpr unit forward_unit(std::uint32_t k) noexcept { return {0, k}; }
    [[nodiscard]] static constexpr unit backward_unit(std::uint32_t k) noexcept { return {0, k}; }
    [[nodiscard]] static constexpr sequential_walker forward_walker() noexcept { return {}; }
    [[nodiscard]] static constexpr sequential_walker backward_walker() noexcept { return {}; }
};

/// The constraint of the single-chunk policies, after the common ones.
[[nodiscard]] constexpr shape_check check_single_chunk(const shape& s) noexcept {
    if (const auto c = check_common(s); !c) return c;
    if (s.chunks != 1) return {false, "this schedule runs one chunk per rank: chunks must be 1"};
    return shape_ok;
}

inline constexpr std::size_t max_phases = 6;

/// A pattern letter; the values index the unit streams: F 0, B and I 1 (one stream), W 2.
enum class letter : std::uint8_t { F, I, W, B };

[[nodiscard]] constexpr op letter_op(letter l) noexcept {
    switch (l) {
    case letter::F: return op::forward;
    case letter::I: return op::backward_input;
    case letter::W: return op::backward_weight;
    case letter::B: break;
    }
    return op::backward;
}
[[nodiscard]] constexpr std::size_t letter_stream(letter l) noexcept {
    return l == letter::F ? 0 : l == letter::W ? 2 : 1;
}

/// A pattern known at compile time, and the list of those a policy's programs use: generate()
/// runs each as a loop with its letters fixed. The list is per policy because one switch over
/// every pattern of every policy is too large for g++ to inline the sink and the walkers into,
/// which made streaming 3-7x slower.
template <letter... Letters>
struct pattern {};
template <class... Patterns>
struct pattern_list {};

/// The patterns of phased_program and of the zero-bubble programs.
template <backward_kind Backward>
using phased_patterns = std::conditional_t<
    Backward == backward_kind::split,
    pattern_list<pattern<letter::F>, pattern<letter::F, letter::I, letter::W>, pattern<letter::I, letter::W>>,
    pattern_list<pattern<letter::F>, pattern<letter::F, letter::B>, pattern<letter::B>>>;

struct program_phase {
    std::uint32_t repeats = 0;
    std::uint8_t length = 0;         ///< 1..3 letters
    std::array<letter, 3> letters{};
};

class phase_program {
public:
    /// Appends `repeats` copies of `pattern`, one to three of the letters F, B, I, W.
    /// Phases that repeat zero times are left out.
    constexpr phase_program& then(std::uint32_t repeats, std::string_view pattern) noexcept {
        if (repeats == 0) return *this;
        program_phase& ph = phases_[count_++];
        ph.repeats = repeats;
        ph.length = static_cast<std::uint8_t>(pattern.size());
        for (std::size_t i = 0; i < pattern.size(); ++i) {
            const char c = pattern[i];
            ph.letters[i] = c == 'F' ? letter::F : c == 'I' ? letter::I : c == 'W' ? letter::W : letter::B;
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

/// The warm-up / steady / cool-down program: `warmup` forwards, then (F, backward) pairs, then
/// the remaining backwards; a backward is B, or I then W when split.
[[nodiscard]] constexpr phase_program phased_program(std::uint32_t units, std::uint32_t warmup,
                                                     backward_kind backward) noexcept {
    const bool split = backward == backward_kind::split;
    phase_program prog{};
    prog.then(warmup, "F").then(units - warmup, split ? "FIW" : "FB").then(warmup, split ? "IW" : "B");
    return prog;
}

/// CRTP base: the engine. Derived provides
///   program(rank)        the rank's phase_program
///   forward_unit(k)      closed form of the k-th forward unit
///   backward_unit(k)     closed form of the k-th backward unit (of its B or I, and of its W)
///   forward_walker()     object whose next() yields forward units in order, O(1) each
///   backward_walker()    the same for backward units
/// Backward selects the op of the unit's backward in phased_program (B, or I then W) and names
/// it as `backward_op`; the zero-bubble policies are always split.
template <class Derived, backward_kind Backward = backward_kind::split>
class program_schedule {
public:
    static constexpr op backward_op = Backward == backward_kind::split ? op::backward_input : op::backward;

    [[nodiscard]] constexpr std::size_t size(std::uint32_t rank) const {
        require_usable(self(), rank);
        return self().program(rank).size();
    }

    /// Closed form: the i-th event of `rank`, without generating the ones before it.
    [[nodiscard]] constexpr event at(std::uint32_t rank, std::size_t i) const {
        require_usable(self(), rank);
        require_index(self(), rank, i);
        const phase_program prog = self().program(rank);
        std::array<std::size_t, 3> before{}; // units taken from each stream in earlier phases
        for (std::size_t k = 0; k < prog.phase_count(); ++k) {
            const program_phase& ph = prog.phase(k);
            std::array<std::size_t, 3> per_repeat{};
            for (std::size_t j = 0; j < ph.length; ++j) ++per_repeat[letter_stream(ph.letters[j])];
            const std::size_t events = std::size_t{ph.repeats} * ph.length;
            if (i < events) {
                const std::size_t repeat = i / ph.length;
                const std::size_t position = i % ph.length;
                const letter l = ph.letters[position];
                const std::size_t stream = letter_stream(l);
                std::size_t index = before[stream] + repeat * per_repeat[stream];
                for (std::size_t j = 0; j < position; ++j) index += letter_stream(ph.letters[j]) == stream ? 1 : 0;
                const auto k32 = static_cast<std::uint32_t>(index);
                const unit u = stream == 0 ? self().forward_unit(k32) : self().backward_unit(k32);
                return make_event(letter_op(l), rank, u);
            }
            i -= events;
            for (std::size_t s = 0; s < 3; ++s) before[s] += std::size_t{ph.repeats} * per_repeat[s];
        }
        return event{};
    }

    /// Calls f(event) for every event of the rank; one loop per phase, with the pattern's
    /// letters fixed at compile time for the patterns the policies use, which is what makes
    /// streaming reach about one nanosecond per event.
    template <class F>
    constexpr void generate(std::uint32_t rank, F& f) const {
        require_usable(self(), rank);
        const phase_program prog = self().program(rank);
        walkers w{self().forward_walker(), self().backward_walker(), self().backward_walker()};
        for (std::size_t k = 0; k < prog.phase_count(); ++k) {
            const program_phase& ph = prog.phase(k);
            const std::uint32_t n = ph.repeats;
            if (!run_known(pattern_code(ph), n, rank, w, f, typename Derived::patterns{})) {
                for (std::uint32_t r = 0; r < n; ++r) {
                    for (std::size_t j = 0; j < ph.length; ++j) emit_letter(ph.letters[j], rank, w, f);
                }
            }
        }
    }

    class cursor_type {
    public:
        constexpr cursor_type() = default;
        constexpr cursor_type(const Derived& source, std::uint32_t rank)
            : program_{source.program(rank)}, fw_{source.forward_walker()},
              bw_{source.backward_walker()}, ww_{source.backward_walker()}, rank_{rank} {
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
            // Each branch stores its event as one value: through an `event` temporary g++
            // streams the cursor 1.5x slower.
            switch (ph.letters[position_]) {
            case letter::F: current_ = bits(make_event(op::forward, rank_, fw_.next())); break;
            case letter::B: current_ = bits(make_event(op::backward, rank_, bw_.next())); break;
            case letter::I: current_ = bits(make_event(op::backward_input, rank_, bw_.next())); break;
            case letter::W: current_ = bits(make_event(op::backward_weight, rank_, ww_.next())); break;
            }
            if (++position_ == ph.length) {
                position_ = 0;
                if (++repeat_ == ph.repeats) {
                    repeat_ = 0;
                    ++phase_;
                }
            }
        }

    private:
        [[nodiscard]] static constexpr std::uint64_t bits(event e) noexcept {
            return std::bit_cast<std::uint64_t>(e);
        }
        using walker_f = decltype(std::declval<const Derived&>().forward_walker());
        using walker_b = decltype(std::declval<const Derived&>().backward_walker());
        phase_program program_{};
        walker_f fw_{};
        walker_b bw_{};
        walker_b ww_{};
        std::uint32_t rank_ = 0;
        std::uint32_t repeat_ = 0;
        std::uint8_t phase_ = 0;
        std::uint8_t position_ = 0;
        std::uint64_t current_{}; // an event kept as one value, for the reason of make_event
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
        decltype(std::declval<const Derived&>().backward_walker()) b; // B and I
        decltype(std::declval<const Derived&>().backward_walker()) w;
    };
    /// 1 + letter per position, base 5: distinct for every pattern of one to three letters.
    template <letter... Letters>
    static constexpr unsigned code_of = [] {
        unsigned code = 0;
        ((code = code * 5 + static_cast<unsigned>(Letters) + 1u), ...);
        return code;
    }();
    [[nodiscard]] static constexpr unsigned pattern_code(const program_phase& ph) noexcept {
        unsigned code = 0;
        for (std::size_t j = 0; j < ph.length; ++j) code = code * 5 + static_cast<unsigned>(ph.letters[j]) + 1u;
        return code;
    }
    template <class F>
    static constexpr void emit_letter(letter l, std::uint32_t rank, walkers& w, F& f) {
        switch (l) {
        case letter::F: f(make_event(op::forward, rank, w.f.next())); break;
        case letter::B: f(make_event(op::backward, rank, w.b.next())); break;
        case letter::I: f(make_event(op::backward_input, rank, w.b.next())); break;
        case letter::W: f(make_event(op::backward_weight, rank, w.w.next())); break;
        }
    }
    template <letter L, class F>
    static constexpr void emit_one(std::uint32_t rank, walkers& w, F& f) {
        if constexpr (L == letter::F) f(make_event(op::forward, rank, w.f.next()));
        else if constexpr (L == letter::B) f(make_event(op::backward, rank, w.b.next()));
        else if constexpr (L == letter::I) f(make_event(op::backward_input, rank, w.b.next()));
        else f(make_event(op::backward_weight, rank, w.w.next()));
    }
    template <class F, letter... Letters>
    static constexpr bool run_if(unsigned code, std::uint32_t n, std::uint32_t rank, walkers& w, F& f,
                                 pattern<Letters...>) {
        if (code != code_of<Letters...>) return false;
        for (std::uint32_t r = 0; r < n; ++r) (emit_one<Letters>(rank, w, f), ...);
        return true;
    }
    template <class F, class... Patterns>
    static constexpr bool run_known(unsigned code, std::uint32_t n, std::uint32_t rank, walkers& w, F& f,
                                    pattern_list<Patterns...>) {
        return (run_if(code, n, rank, w, f, Patterns{}) || ...);
    }
};

} // namespace pipesched::detail
