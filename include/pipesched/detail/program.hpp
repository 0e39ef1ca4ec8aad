// pipesched internals: the one generator engine. Every schedule policy is data for it.
//
// The model. A rank's events are a program: a few phases, each a pattern of slots repeated
// some number of times. A slot is an op and the stream its unit (chunk, microbatch) comes
// from; a stream is a walker that yields its units in order, O(1) each, and also knows the
// k-th one in closed form. So a policy gives, per rank, its program (rebuilt in O(1) from a
// few numbers) and its streams, and the engine provides size(), at(), the cursor and the
// per-phase loops of emit(). The cursor's state has a fixed size (the program, the walkers
// and three counters): no allocation, and every step O(1).
//
// The streams a policy uses:
//   - the loop-placed schedules (GPipe, 1F1B, interleaved 1F1B, looped BFS, ZB-H1, ZB-H2,
//     ZB1P): three, named by the pattern letters F (forward units), B or I (backward units:
//     a fused backward or its input half) and W (the same backward units walked again, so
//     W's run in the order of their I's, as PyTorch and the zero-bubble paper do). The
//     policy gives forward_walker(), backward_walker() and their closed forms forward_unit(k),
//     backward_unit(k) (interleaved and looped BFS walk their unit tables);
//   - the V-shape schedules (ZB-V, DualPipeV): one counter per (op kind, chunk), since their
//     reference implementations count microbatches that way, plus DualPipeV's queue of
//     deferred weight gradients; the policy gives streams(rank), a stream_set. A slot with
//     no stream (DualPipeV's overlap_f_b marker) has the unit (0, 0).
// A policy may also cut phantom microbatches (phantom_limit(), ZB-V): PyTorch pads ZB-V's m
// up to 2p-1 and turns the actions of the padding into idle slots, so the program is written
// for the padded count and the engine leaves out every slot whose microbatch would be the
// limit or more. It does so once per rank, on the program (without_phantoms: a phase splits
// where a stream runs past the limit), so size(), at(), the cursor and emit() run the same
// code for every policy and never meet a phantom.
#pragma once

#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
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

/// Always inlined: it is a few shifts, and a call per event costs more than the event (g++
/// stops inlining it once a translation unit holds many policies' phase loops).
[[nodiscard, gnu::always_inline]] constexpr event make_event(op kind, std::uint32_t rank, unit u) noexcept {
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

// ---- streams -------------------------------------------------------------------------------

/// A stream whose k-th unit is (Chunk, k): the single-chunk schedules' microbatch order, and
/// the per (op kind, chunk) counters of the V schedules.
template <std::uint32_t Chunk>
struct counter {
    std::uint32_t next_microbatch = 0;
    constexpr unit next() noexcept { return {Chunk, next_microbatch++}; }
    [[nodiscard]] static constexpr unit unit_at(std::uint32_t k) noexcept { return {Chunk, k}; }
};

/// The units of a single-chunk schedule: microbatch order (GPipe, 1F1B, ZB-H1, ZB-H2).
struct single_chunk_units {
    [[nodiscard]] static constexpr unit forward_unit(std::uint32_t k) noexcept { return {0, k}; }
    [[nodiscard]] static constexpr unit backward_unit(std::uint32_t k) noexcept { return {0, k}; }
    [[nodiscard]] static constexpr counter<0> forward_walker() noexcept { return {}; }
    [[nodiscard]] static constexpr counter<0> backward_walker() noexcept { return {}; }
};

/// The constraint of the single-chunk policies, after the common ones.
[[nodiscard]] constexpr shape_check check_single_chunk(const shape& s) noexcept {
    return check_chunks(s, 1, "this schedule runs one chunk per rank: chunks must be 1");
}

/// Streams are numbered 0..14 (a slot keeps its stream in four bits); 15 is no stream.
inline constexpr std::uint32_t max_streams = 15;
inline constexpr std::uint32_t no_stream = 15;

template <std::size_t Index, class Walker>
struct stream_holder {
    Walker walker;
};
template <class Indices, class... Walkers>
struct stream_set_base;
template <std::size_t... Indices, class... Walkers>
struct stream_set_base<std::index_sequence<Indices...>, Walkers...> : stream_holder<Indices, Walkers>... {
    constexpr stream_set_base() = default;
    constexpr explicit stream_set_base(Walkers... walkers) : stream_holder<Indices, Walkers>{walkers}... {}
};

template <std::size_t Index, class Walker>
[[nodiscard]] constexpr Walker& stream_at(stream_holder<Index, Walker>& holder) noexcept {
    return holder.walker;
}
template <std::size_t Index, class Walker>
[[nodiscard]] constexpr const Walker& stream_at(const stream_holder<Index, Walker>& holder) noexcept {
    return holder.walker;
}

/// The walkers of one rank, stream s being the s-th (a tuple, without <tuple>'s weight).
template <class... Walkers>
struct stream_set : stream_set_base<std::index_sequence_for<Walkers...>, Walkers...> {
    static_assert(sizeof...(Walkers) <= max_streams);
    static constexpr std::size_t count = sizeof...(Walkers);
    using stream_set_base<std::index_sequence_for<Walkers...>, Walkers...>::stream_set_base;

    /// The next unit of stream `s` (no stream: (0, 0)). Always inlined, as emit_one below: the
    /// cursors call it per event, and with the shortcut of validate(iteration) in the same
    /// translation unit g++ stopped inlining it (validate 253 -> 263, simulate 311 -> 321
    /// instructions per event).
    [[gnu::always_inline]] constexpr unit next(std::uint32_t s) noexcept {
        return next_of(s, std::index_sequence_for<Walkers...>{});
    }

    /// The k-th unit of stream `s`, closed form.
    [[nodiscard]] constexpr unit unit_at(std::uint32_t s, std::uint32_t k) const noexcept {
        return unit_at_of(s, k, std::index_sequence_for<Walkers...>{});
    }

private:
    template <std::size_t... Indices>
    [[gnu::always_inline]] constexpr unit next_of(std::uint32_t s, std::index_sequence<Indices...>) noexcept {
        unit u{};
        (void)((s == Indices && (u = stream_at<Indices>(*this).next(), true)) || ...);
        return u;
    }
    template <std::size_t... Indices>
    [[nodiscard]] constexpr unit unit_at_of(std::uint32_t s, std::uint32_t k,
                                            std::index_sequence<Indices...>) const noexcept {
        unit u{};
        (void)((s == Indices && (u = stream_at<Indices>(*this).unit_at(k), true)) || ...);
        return u;
    }
};

// ---- programs ------------------------------------------------------------------------------

/// A slot: an op and its stream in one byte (op in the low four bits, stream in the high
/// four). The named values are the loop schedules' letters: F forward units, B and I backward
/// units (one stream: a policy uses one or the other), W the backward units again.
enum class letter : std::uint8_t { F = 0x00, B = 0x11, I = 0x12, W = 0x23 };
static_assert(static_cast<unsigned>(op::overlap_f_b) < 16, "an op must fit in a slot's four bits");

[[nodiscard]] constexpr letter slot(op kind, std::uint32_t stream) noexcept {
    return static_cast<letter>(static_cast<unsigned>(kind) | (stream & 0xFu) << 4);
}
[[nodiscard]] constexpr op letter_op(letter l) noexcept {
    return static_cast<op>(static_cast<unsigned>(l) & 0xFu);
}
[[nodiscard]] constexpr std::uint32_t letter_stream(letter l) noexcept {
    return static_cast<unsigned>(l) >> 4;
}

template <std::size_t MaxSlots>
struct program_phase {
    std::uint32_t repeats = 0;
    std::uint8_t length = 0; ///< 1..MaxSlots slots
    std::array<letter, MaxSlots> letters{};
};

/// A rank's program: up to MaxPhases phases of up to MaxSlots slots. The capacities are the
/// policy's (its programs are fixed, so they are known): the cursor stores the program.
template <std::size_t MaxPhases, std::size_t MaxSlots>
class basic_program {
    static_assert(MaxPhases <= 255 && MaxSlots <= 7, "a cursor counts phases in a byte; a pattern code holds seven slots");

public:
    using phase_type = program_phase<MaxSlots>;

    /// Appends `repeats` copies of `pattern`, one to MaxSlots of the letters F, B, I, W.
    /// Phases that repeat zero times are left out.
    constexpr basic_program& then(std::uint32_t repeats, std::string_view pattern) noexcept {
        if (repeats == 0) return *this;
        phase_type& ph = append(repeats, pattern.size());
        for (std::size_t i = 0; i < pattern.size(); ++i) {
            const char c = pattern[i];
            ph.letters[i] = c == 'F' ? letter::F : c == 'I' ? letter::I : c == 'W' ? letter::W : letter::B;
        }
        return *this;
    }
    /// Appends `repeats` copies of a pattern of slots (see slot()).
    constexpr basic_program& then(std::uint32_t repeats, std::initializer_list<letter> pattern) noexcept {
        if (repeats == 0) return *this;
        phase_type& ph = append(repeats, pattern.size());
        std::size_t i = 0;
        for (const letter l : pattern) ph.letters[i++] = l;
        return *this;
    }

    /// Appends `repeats` copies of the pattern of `ph`.
    constexpr basic_program& then(std::uint32_t repeats, const phase_type& ph) noexcept {
        if (repeats == 0) return *this;
        append(repeats, ph.length).letters = ph.letters;
        return *this;
    }

    [[nodiscard]] constexpr std::size_t phase_count() const noexcept { return count_; }
    [[nodiscard]] constexpr const phase_type& phase(std::size_t k) const noexcept { return phases_[k]; }

    /// Number of events: the slots over all repeats.
    [[nodiscard]] constexpr std::size_t size() const noexcept {
        std::size_t n = 0;
        for (std::size_t k = 0; k < count_; ++k) n += std::size_t{phases_[k].repeats} * phases_[k].length;
        return n;
    }

private:
    constexpr phase_type& append(std::uint32_t repeats, std::size_t length) noexcept {
        phase_type& ph = phases_[count_++];
        ph.repeats = repeats;
        ph.length = static_cast<std::uint8_t>(length);
        return ph;
    }

    std::array<phase_type, MaxPhases> phases_{};
    std::uint8_t count_ = 0;
};

/// The programs of the loop-placed schedules: at most six phases of one to three letters.
using phase_program = basic_program<6, 3>;

/// The warm-up / steady / cool-down program: `warmup` forwards, then (F, backward) pairs, then
/// the remaining backwards; a backward is B, or I then W when split.
[[nodiscard]] constexpr phase_program phased_program(std::uint32_t units, std::uint32_t warmup,
                                                     backward_kind backward) noexcept {
    const bool split = backward == backward_kind::split;
    phase_program prog{};
    prog.then(warmup, "F").then(units - warmup, split ? "FIW" : "FB").then(warmup, split ? "IW" : "B");
    return prog;
}

/// A pattern known at compile time, and the list of those a policy's programs use: generate()
/// runs each as a loop with its slots fixed. The list is per policy because one switch over
/// every pattern of every policy is too large for g++ to inline the sink and the walkers into,
/// which made streaming 3-7x slower.
template <letter... Letters>
struct pattern {};
template <class... Patterns>
struct pattern_list {};

/// The patterns of phased_program.
template <backward_kind Backward>
using phased_patterns = std::conditional_t<
    Backward == backward_kind::split,
    pattern_list<pattern<letter::F>, pattern<letter::F, letter::I, letter::W>, pattern<letter::I, letter::W>>,
    pattern_list<pattern<letter::F>, pattern<letter::F, letter::B>, pattern<letter::B>>>;

/// The walkers of a policy for one rank: its streams(rank), or the F, B/I and W streams of a
/// loop-placed schedule. Always inlined: g++ would otherwise call it for interleaved 1F1B, and
/// the phase loops would lose the walkers' constant fields (10% more instructions per event).
template <class Policy>
[[nodiscard, gnu::always_inline]] constexpr auto streams_of(const Policy& pol, std::uint32_t rank) noexcept {
    if constexpr (requires { pol.streams(rank); }) {
        return pol.streams(rank);
    } else {
        using forward = decltype(pol.forward_walker());
        using backward = decltype(pol.backward_walker());
        return stream_set<forward, backward, backward>{pol.forward_walker(), pol.backward_walker(),
                                                       pol.backward_walker()};
    }
}
template <class Policy>
using streams_type = decltype(streams_of(std::declval<const Policy&>(), 0u));

/// The k-th unit of stream s, closed form.
template <class Policy, class Streams>
[[nodiscard]] constexpr unit stream_unit(const Policy& pol, const Streams& streams, std::uint32_t s,
                                         std::uint32_t k) noexcept {
    if constexpr (requires { pol.streams(0u); }) {
        return streams.unit_at(s, k);
    } else {
        // Streams 1 and 2 are the backward units (B or I, and W); a slot without a stream (a
        // pair's marker in the combined 1F1B schedules) has the unit (0, 0), as stream_set::next.
        return s == 0 ? pol.forward_unit(k) : s < 3 ? pol.backward_unit(k) : unit{};
    }
}

template <class Policy>
concept cuts_phantoms = requires(const Policy& pol) {
    { pol.phantom_limit() } -> std::same_as<std::uint32_t>;
};

/// The program without its phantom microbatches: every slot whose unit would have microbatch
/// `limit` or more is left out. The streams must be counters (the k-th unit of a stream has
/// microbatch k), each at most once in a pattern, as in ZB-V. A stream's kept units are then a
/// prefix of it, so the shorter program yields exactly the kept events from fresh walkers,
/// and the engine never meets a phantom at run time. A phase splits where one of its streams
/// reaches the limit; a stream does that once, so there are at most `Streams` more phases.
template <std::size_t Streams, std::size_t MaxPhases, std::size_t MaxSlots>
[[nodiscard]] constexpr basic_program<MaxPhases + Streams, MaxSlots>
without_phantoms(const basic_program<MaxPhases, MaxSlots>& prog, std::uint32_t limit) {
    basic_program<MaxPhases + Streams, MaxSlots> out{};
    std::array<std::uint32_t, Streams> before{}; // units each stream gave in earlier phases
    for (std::size_t k = 0; k < prog.phase_count(); ++k) {
        const program_phase<MaxSlots>& ph = prog.phase(k);
        std::array<std::uint32_t, MaxSlots> kept{}; // repeats in which slot j is below the limit
        bool whole = true;
        std::uint32_t seen = 0; // streams of the pattern so far, one bit each
        for (std::size_t j = 0; j < ph.length; ++j) {
            const std::uint32_t s = letter_stream(ph.letters[j]);
            if (s >= Streams) throw_contract_error("a phantom cut needs every slot on a counter stream");
            if ((seen >> s & 1u) != 0) throw_contract_error("a phantom cut needs each stream at most once in a pattern");
            seen |= 1u << s;
            kept[j] = before[s] >= limit ? 0 : limit - before[s] < ph.repeats ? limit - before[s] : ph.repeats;
            whole = whole && kept[j] == ph.repeats;
            before[s] += ph.repeats;
        }
        if (out.phase_count() == MaxPhases + Streams) throw_contract_error("a phantom cut made too many phases");
        if (whole) {
            out.then(ph.repeats, ph);
            continue;
        }
        // One sub-phase per run of repeats in which the same slots are kept.
        for (std::uint32_t done = 0;;) {
            std::uint32_t until = 0; // the next repeat where a kept slot drops out
            for (std::size_t j = 0; j < ph.length; ++j) {
                if (kept[j] > done && (until == 0 || kept[j] < until)) until = kept[j];
            }
            if (until == 0) break;
            if (out.phase_count() == MaxPhases + Streams) throw_contract_error("a phantom cut made too many phases");
            program_phase<MaxSlots> sub{};
            for (std::size_t j = 0; j < ph.length; ++j) {
                if (kept[j] > done) sub.letters[sub.length++] = ph.letters[j];
            }
            out.then(until - done, sub);
            done = until;
        }
    }
    return out;
}

/// The program the engine runs for a policy: its own, without its phantoms when it has some.
template <class Policy>
[[nodiscard]] constexpr auto engine_program(const Policy& pol, std::uint32_t rank) {
    if constexpr (cuts_phantoms<Policy>) {
        return without_phantoms<streams_type<Policy>::count>(pol.program(rank), pol.phantom_limit());
    } else {
        return pol.program(rank);
    }
}

/// What a V schedule's program is a function of: ranks p, real microbatches m, the cut (events
/// with microbatch >= limit are left out, when the program cuts) and the rank.
struct program_params {
    std::uint32_t ranks = 1;
    std::uint32_t microbatches = 1;
    std::uint32_t limit = 1;
    std::uint32_t rank = 0;
};

/// Number of events of a V program type (static program(params), streams_type, phantom_cut).
template <class Program>
[[nodiscard]] constexpr std::size_t program_size(const program_params& prm) {
    if constexpr (Program::phantom_cut) {
        return without_phantoms<Program::streams_type::count>(Program::program(prm), prm.limit).size();
    } else {
        return Program::program(prm).size();
    }
}

/// Per-stream unit counts for at(): one entry per stream of a set of `Streams` streams and a
/// last one for the slots without a stream.
template <std::size_t Streams>
using stream_counts = std::array<std::size_t, Streams + 1>;

template <std::size_t Streams>
[[nodiscard]] constexpr std::size_t count_index(letter l) noexcept {
    const std::size_t s = letter_stream(l);
    return s < Streams ? s : Streams;
}

// ---- the engine ----------------------------------------------------------------------------

/// CRTP base: the engine. Derived provides
///   patterns            the pattern_list of its programs' patterns (compile time)
///   program(rank)       the rank's basic_program
///   its streams         streams(rank), a stream_set whose walkers also give unit_at(k); or,
///                       for the F, B/I, W streams of a loop-placed schedule, forward_walker(),
///                       backward_walker() and their closed forms forward_unit(k), backward_unit(k)
///   phantom_limit()     optional: events whose microbatch is this or more are left out
/// Backward names the op of a loop-placed schedule's backward as `backward_op` (B, or I then
/// W when split); the zero-bubble and V policies use the default.
template <class Derived, backward_kind Backward = backward_kind::split>
class program_schedule {
public:
    static constexpr op backward_op = Backward == backward_kind::split ? op::backward_input : op::backward;

    [[nodiscard]] constexpr std::size_t size(std::uint32_t rank) const {
        require_usable(self(), rank);
        return engine_program(self(), rank).size();
    }

    /// Closed form: the i-th event of `rank`, without generating the ones before it.
    [[nodiscard]] constexpr event at(std::uint32_t rank, std::size_t i) const {
        require_usable(self(), rank);
        require_index(self(), rank, i);
        constexpr std::size_t N = streams_type<Derived>::count;
        const auto prog = engine_program(self(), rank);
        const auto streams = streams_of(self(), rank);
        stream_counts<N> before{}; // units each stream gave in earlier phases
        for (std::size_t k = 0; k < prog.phase_count(); ++k) {
            const auto& ph = prog.phase(k);
            stream_counts<N> per{}; // units each stream gives to one repeat
            for (std::size_t j = 0; j < ph.length; ++j) ++per[count_index<N>(ph.letters[j])];
            const std::size_t events = std::size_t{ph.repeats} * ph.length;
            if (i < events) {
                const std::size_t repeat = i / ph.length;
                const std::size_t position = i % ph.length;
                const letter l = ph.letters[position];
                const std::size_t s = count_index<N>(l);
                std::size_t index = before[s] + repeat * per[s];
                for (std::size_t j = 0; j < position; ++j) index += count_index<N>(ph.letters[j]) == s ? 1 : 0;
                return make_event(letter_op(l), rank,
                                  stream_unit(self(), streams, letter_stream(l), static_cast<std::uint32_t>(index)));
            }
            i -= events;
            for (std::size_t s = 0; s <= N; ++s) before[s] += ph.repeats * per[s];
        }
        return event{};
    }

    /// Calls f(event) for every event of the rank; one loop per phase, with the pattern's
    /// slots fixed at compile time for the patterns the policy uses, which is what makes
    /// streaming reach about one nanosecond per event.
    template <class F>
    constexpr void generate(std::uint32_t rank, F& f) const {
        require_usable(self(), rank);
        const auto prog = engine_program(self(), rank);
        auto streams = streams_of(self(), rank);
        for (std::size_t k = 0; k < prog.phase_count(); ++k) {
            const auto& ph = prog.phase(k);
            const std::uint32_t n = ph.repeats;
            if (!run_known(pattern_code(ph), n, rank, streams, f, typename Derived::patterns{})) {
                run_any(ph, rank, streams, f);
            }
        }
    }

    class cursor_type {
    public:
        constexpr cursor_type() = default;
        constexpr cursor_type(const Derived& source, std::uint32_t rank)
            : program_{engine_program(source, rank)}, streams_{streams_of(source, rank)}, rank_{rank} {
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
            const auto& ph = program_.phase(phase_);
            const letter l = ph.letters[position_];
            // Stored as one value: through an `event` member g++ streams the cursor 1.5x slower.
            current_ = std::bit_cast<std::uint64_t>(make_event(letter_op(l), rank_, streams_.next(letter_stream(l))));
            if (++position_ == ph.length) {
                position_ = 0;
                if (++repeat_ == ph.repeats) {
                    repeat_ = 0;
                    ++phase_;
                }
            }
        }

    private:
        decltype(engine_program(std::declval<const Derived&>(), 0u)) program_{};
        streams_type<Derived> streams_{};
        std::uint32_t rank_ = 0;
        std::uint32_t repeat_ = 0;
        std::uint8_t phase_ = 0;
        std::uint8_t position_ = 0;
        bool done_ = false;
        std::uint64_t current_{}; // an event kept as one value, for the reason of make_event
    };

    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const {
        require_usable(self(), rank);
        return cursor_type{self(), rank};
    }

private:
    [[nodiscard]] constexpr const Derived& self() const noexcept {
        return static_cast<const Derived&>(*this);
    }

    /// The slots in one byte each, then the length: distinct for every pattern.
    template <letter... Letters>
    static constexpr std::uint64_t code_of = [] {
        std::uint64_t code = 0;
        ((code = code << 8 | static_cast<std::uint8_t>(Letters)), ...);
        return code << 3 | sizeof...(Letters);
    }();
    template <class Phase>
    [[nodiscard]] static constexpr std::uint64_t pattern_code(const Phase& ph) noexcept {
        std::uint64_t code = 0;
        for (std::size_t j = 0; j < ph.length; ++j) code = code << 8 | static_cast<std::uint8_t>(ph.letters[j]);
        return code << 3 | ph.length;
    }
    // The walker is called directly, not through a stream_set member, and emit_one is always
    // inlined: in a translation unit with many policies g++ otherwise runs out of inlining
    // budget and the phase loops call emit_one, make_event and the walkers per event (4-7x
    // slower streaming of interleaved 1F1B and looped BFS in benchmarks/policies.cpp).
    template <letter L, class Streams, class F>
    [[gnu::always_inline]] static constexpr void emit_one(std::uint32_t rank, Streams& streams, F& f) {
        constexpr op kind = letter_op(L);
        constexpr std::size_t s = letter_stream(L);
        if constexpr (s < Streams::count) f(make_event(kind, rank, stream_at<s>(streams).next()));
        else f(make_event(kind, rank, unit{}));
    }
    /// A phase whose pattern is not in the policy's list (ZB-V's cut phases): slot by slot.
    /// Kept out of line so that it does not take the inlining budget of the known patterns.
    template <class Phase, class Streams, class F>
    [[gnu::noinline]] static constexpr void run_any(const Phase& ph, std::uint32_t rank, Streams& streams, F& f) {
        for (std::uint32_t r = 0; r < ph.repeats; ++r) {
            for (std::size_t j = 0; j < ph.length; ++j) {
                const letter l = ph.letters[j];
                f(make_event(letter_op(l), rank, streams.next(letter_stream(l))));
            }
        }
    }
    template <class Streams, class F, letter... Letters>
    static constexpr bool run_if(std::uint64_t code, std::uint32_t n, std::uint32_t rank, Streams& streams, F& f,
                                 pattern<Letters...>) {
        if (code != code_of<Letters...>) return false;
        for (std::uint32_t r = 0; r < n; ++r) (emit_one<Letters>(rank, streams, f), ...);
        return true;
    }
    template <class Streams, class F, class... Patterns>
    static constexpr bool run_known(std::uint64_t code, std::uint32_t n, std::uint32_t rank, Streams& streams,
                                    F& f, pattern_list<Patterns...>) {
        return (run_if(code, n, rank, streams, f, Patterns{}) || ...);
    }
};

} // namespace pipesched::detail
