// pipesched: what a schedule policy is, how to pull its events, and how to materialise a
// small schedule at compile time.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "event.hpp"
#include "shape.hpp"

namespace pipesched {

/// Whether a backward runs as one op (B) or split into input grad then weight grad (I, W).
enum class backward_kind : std::uint8_t { full, split };

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

/// Number of events on one rank.
template <schedule_policy P>
[[nodiscard]] constexpr std::size_t event_count(const P& pol, std::uint32_t rank) noexcept {
    return pol.size(rank);
}

/// Number of events over all ranks.
template <schedule_policy P>
[[nodiscard]] constexpr std::size_t event_count(const P& pol) noexcept {
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
    [[nodiscard]] constexpr std::size_t size() const noexcept { return pol_.size(rank_); }

private:
    P pol_;
    std::uint32_t rank_;
};

template <schedule_policy P>
[[nodiscard]] constexpr rank_events<P> events(const P& pol, std::uint32_t rank) {
    return rank_events<P>{pol, rank};
}

/// All events of a small schedule, rank by rank, as a std::array built at compile time.
template <auto Policy>
[[nodiscard]] consteval auto to_array() {
    using P = std::remove_cvref_t<decltype(Policy)>;
    static_assert(schedule_policy<P>, "pipesched::to_array: the argument is not a schedule policy");
    static_assert(Policy.check().ok,
                  "pipesched::to_array: the policy rejects its shape; call .check().message "
                  "for the violated constraint");
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
    using P = std::remove_cvref_t<decltype(Policy)>;
    static_assert(schedule_policy<P>, "pipesched::to_array: the argument is not a schedule policy");
    static_assert(Policy.check().ok,
                  "pipesched::to_array: the policy rejects its shape; call .check().message "
                  "for the violated constraint");
    static_assert(Rank < Policy.shape.ranks, "pipesched::to_array: rank out of range");
    std::array<event, Policy.size(Rank)> out{};
    std::size_t i = 0;
    for (auto c = Policy.cursor(Rank); !c.done(); c.advance()) out[i++] = c.current();
    return out;
}

} // namespace pipesched
