// pipesched: what a schedule policy is, how to pull its events, and how to materialise a
// small schedule at compile time.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "action.hpp"
#include "event.hpp"
#include "shape.hpp"

namespace pipesched {

/// The contract of every policy (README, "Limitations"): a policy whose check() rejects its
/// shape, or a rank outside the shape, must not be used. The entry points that generate events
/// (size, cursor, at, generate, and through them events, emit, to_array, iteration) check it
/// and throw contract_error naming the violated constraint; in a constant expression that is
/// a compile error. validate() and simulate() do not throw: they return the verdict
/// invalid_shape. Built without exceptions, a violation calls std::abort().
class contract_error : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

namespace detail {

[[noreturn]] inline void throw_contract_error(std::string_view what) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    throw contract_error{"pipesched: " + std::string{what}};
#else
    (void)what;
    std::abort();
#endif
}

/// Throws contract_error unless the policy accepts its shape and `rank` is one of its ranks.
/// One check() per call: the entry points call it once per rank, not once per event.
template <class P>
constexpr void require_usable(const P& pol, std::uint32_t rank) {
    if (const auto c = pol.check(); !c.ok) throw_contract_error(c.message);
    if (rank >= pol.shape.ranks) throw_contract_error("rank out of range (rank >= ranks)");
}

/// For the entry points that cover every rank (emit, event_count): with ranks = 0 the loop
/// over ranks would silently do nothing.
template <class P>
constexpr void require_usable(const P& pol) {
    if (const auto c = pol.check(); !c.ok) throw_contract_error(c.message);
}

/// at(rank, i) also needs i < size(rank).
template <class P>
constexpr void require_index(const P& pol, std::uint32_t rank, std::size_t i) {
    if (i >= pol.size(rank)) throw_contract_error("event index out of range (index >= size(rank))");
}

} // namespace detail

/// Whether a backward runs as one op (B) or split into input grad then weight grad (I, W).
enum class backward_kind : std::uint8_t { full, split };

/// How many model chunks per rank a schedule runs.
enum class chunk_rule : std::uint8_t {
    one, ///< chunks must be 1
    any, ///< chunks >= 1 (virtual pipeline); 2 when the caller does not say
    two, ///< chunks must be 2 (V placement: the way down and back)
};

/// What a run-time caller (catalog.hpp, the command-line tool) needs to know about a policy
/// without building one. Each catalogued policy carries `static constexpr schedule_traits
/// traits`; the library name and the placement stay the policy's own `name` and `layout`, so
/// that no fact is written twice.
struct schedule_traits {
    std::string_view pytorch_name = ""; ///< PyTorch's class without `Schedule`; empty if none
    /// Up to three further accepted spellings, normalised, separated by spaces. One string
    /// rather than an array: g++ 12 cannot read the value-initialised elements of a partly
    /// initialised std::array<std::string_view, 3> in a static constexpr member.
    std::string_view aliases = "";
    chunk_rule chunks = chunk_rule::one;
    bool fixed_backward = false; ///< decides B/I/W itself; not a template over backward_kind
};

/// The chunks per rank a schedule runs when the caller does not say: 2 for every schedule that
/// runs several. Their names (interleaved, looped, V) promise several chunks per rank, and with
/// one chunk an interleaved schedule is a plain one that holds more activations (Interleaved1F1B
/// at v = 1 peaks at 2p - 1 on rank 0 where 1F1B holds p).
[[nodiscard]] constexpr std::uint32_t default_chunks(chunk_rule rule) noexcept {
    return rule == chunk_rule::one ? 1 : 2;
}

/// A pull cursor over the events of one rank, in execution order: O(1) state, no allocation.
template <class C>
concept rank_cursor = std::copyable<C> && requires(C c, const C cc) {
    { cc.done() } -> std::same_as<bool>;
    { cc.current() } -> std::same_as<event>; // precondition: !done()
    c.advance();
};

/// A schedule policy: a value (its shape plus options) that generates every rank's events.
template <class P>
concept schedule_policy = std::copyable<P> && requires(const P& p, std::uint32_t rank) {
    { p.shape } -> std::convertible_to<shape>;
    { P::layout } -> std::convertible_to<placement>;
    { P::name } -> std::convertible_to<std::string_view>;
    { p.check() } -> std::same_as<shape_check>;
    { p.size(rank) } -> std::same_as<std::size_t>;
    { p.cursor(rank) } -> rank_cursor;
};

/// A policy with closed-form random access: at(rank, i) is the i-th event of the rank.
template <class P>
concept indexable_policy =
    schedule_policy<P> && requires(const P& p, std::uint32_t rank, std::size_t i) {
        { p.at(rank, i) } -> std::same_as<event>;
    };

template <schedule_policy P>
class iteration; // iteration.hpp

namespace detail {
/// Whether T is an iteration<P>. The schedule overloads of validate() and simulate() exclude
/// iterations, so that validate(iteration{pol}) without analysis/validate_iteration.hpp does
/// not compile instead of silently checking the iteration as a bare schedule.
template <class T>
inline constexpr bool is_iteration = false;
template <schedule_policy P>
inline constexpr bool is_iteration<iteration<P>> = true;
} // namespace detail

/// A schedule policy that is not an iteration: what the schedule-level analysis accepts.
template <class P>
concept schedule_only_policy = schedule_policy<P> && !detail::is_iteration<P>;

/// Number of events on one rank.
template <schedule_policy P>
[[nodiscard]] constexpr std::size_t event_count(const P& pol, std::uint32_t rank) {
    return pol.size(rank);
}

/// Number of events over all ranks.
template <schedule_policy P>
[[nodiscard]] constexpr std::size_t event_count(const P& pol) {
    detail::require_usable(pol);
    std::size_t total = 0;
    const shape s = pol.shape;
    for (std::uint32_t r = 0; r < s.ranks; ++r) total += pol.size(r);
    return total;
}

/// Global stage of an event under the policy's placement.
template <schedule_policy P>
[[nodiscard]] constexpr std::uint32_t stage_of(const P& pol, const event& e) noexcept {
    const shape s = pol.shape;
    return stage_of(P::layout, s.ranks, e.rank, e.chunk);
}

/// The action an event runs, with the stage numbered by the policy's placement.
template <schedule_policy P>
[[nodiscard]] constexpr action to_action(const P& pol, const event& e) noexcept {
    return action{stage_of(pol, e), e.kind, e.microbatch};
}

struct cursor_end {};

/// The events of one rank as a range: `for (event e : events(pol, r))`.
template <schedule_policy P>
class rank_events {
public:
    using cursor_type = decltype(std::declval<const P&>().cursor(0u));

    class iterator {
    public:
        using value_type = event;
        using difference_type = std::ptrdiff_t;

        constexpr iterator() = default;
        constexpr explicit iterator(cursor_type c) : cursor_{c} {}
        constexpr event operator*() const { return cursor_.current(); }
        constexpr iterator& operator++() {
            cursor_.advance();
            return *this;
        }
        constexpr iterator operator++(int) {
            iterator old = *this;
            cursor_.advance();
            return old;
        }
        friend constexpr bool operator==(const iterator& it, cursor_end) { return it.cursor_.done(); }

    private:
        cursor_type cursor_{};
    };

    constexpr rank_events(const P& source, std::uint32_t rank) : pol_{source}, rank_{rank} {}
    [[nodiscard]] constexpr iterator begin() const { return iterator{pol_.cursor(rank_)}; }
    [[nodiscard]] constexpr cursor_end end() const noexcept { return {}; }
    [[nodiscard]] constexpr std::size_t size() const { return pol_.size(rank_); }

private:
    P pol_;
    std::uint32_t rank_;
};

template <schedule_policy P>
[[nodiscard]] constexpr rank_events<P> events(const P& pol, std::uint32_t rank) {
    detail::require_usable(pol, rank);
    return rank_events<P>{pol, rank};
}

namespace detail {
/// What to_array() asks of its policy before it builds anything.
template <auto Policy>
consteval void require_array_policy() {
    using P = std::remove_cvref_t<decltype(Policy)>;
    static_assert(schedule_policy<P>, "pipesched::to_array: the argument is not a schedule policy");
    static_assert(Policy.check().ok,
                  "pipesched::to_array: the policy rejects its shape; call .check().message "
                  "for the violated constraint");
}
} // namespace detail

/// All events of a small schedule, rank by rank, as a std::array built at compile time.
template <auto Policy>
[[nodiscard]] consteval auto to_array() {
    detail::require_array_policy<Policy>();
    std::array<event, event_count(Policy)> out{};
    std::size_t i = 0;
    const shape s = Policy.shape;
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        for (auto c = Policy.cursor(r); !c.done(); c.advance()) out[i++] = c.current();
    }
    return out;
}

/// The events of one rank of a small schedule as a std::array built at compile time.
template <auto Policy, std::uint32_t Rank>
[[nodiscard]] consteval auto to_array() {
    detail::require_array_policy<Policy>();
    static_assert(Rank < Policy.shape.ranks, "pipesched::to_array: rank out of range");
    std::array<event, Policy.size(Rank)> out{};
    std::size_t i = 0;
    for (auto c = Policy.cursor(Rank); !c.done(); c.advance()) out[i++] = c.current();
    return out;
}

} // namespace pipesched
