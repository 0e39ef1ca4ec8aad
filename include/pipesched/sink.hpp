// pipesched: the push interface. Any type with push(event) receives a whole schedule.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "event.hpp"
#include "policy.hpp"

namespace pipesched {

/// A receiver of events, in the spirit of a stdexec receiver: one member, push(event).
template <class S>
concept event_sink = requires(S& s, const event& e) { s.push(e); };

namespace detail {
template <class>
inline constexpr bool dependent_false = false;

template <class P, class F>
concept has_generate = requires(const P& p, std::uint32_t rank, F& f) { p.generate(rank, f); };
} // namespace detail

/// Push every event of one rank, in execution order.
template <schedule_policy P, event_sink S>
constexpr void emit(const P& pol, std::uint32_t rank, S&& sink) {
    detail::require_usable(pol, rank);
    auto forward = [&sink](const event& e) { sink.push(e); };
    if constexpr (detail::has_generate<P, decltype(forward)>) {
        // Policies with a phase structure expose a loop per phase, which is what makes
        // streaming reach about one nanosecond per event.
        pol.generate(rank, forward);
    } else {
        for (auto c = pol.cursor(rank); !c.done(); c.advance()) sink.push(c.current());
    }
}

/// Push every event of every rank: all of rank 0, then all of rank 1, ...
template <schedule_policy P, event_sink S>
constexpr void emit(const P& pol, S&& sink) {
    detail::require_usable(pol);
    const shape s = pol.shape;
    for (std::uint32_t r = 0; r < s.ranks; ++r) emit(pol, r, sink);
}

/// Readable diagnostic instead of an overload-resolution dump for a type that is not a sink.
template <schedule_policy P, class S>
    requires(!event_sink<std::remove_reference_t<S>>)
constexpr void emit(const P&, S&&) {
    static_assert(detail::dependent_false<S>,
                  "pipesched::emit: the sink type needs a member function push(pipesched::event)");
}

} // namespace pipesched
