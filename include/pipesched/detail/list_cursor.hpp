// pipesched internals: a cursor over one rank's list of actions or events held elsewhere (an
// explicit schedule's stored events, a schedule read from CSV, a simulator's trace).
#pragma once

#include <cstddef>
#include <span>

namespace pipesched::detail {

/// A cursor over one rank's list of actions or events held by the caller.
template <class T>
class list_cursor {
public:
    constexpr list_cursor() = default;
    constexpr explicit list_cursor(std::span<const T> items) noexcept : items_{items} {}
    [[nodiscard]] constexpr bool done() const noexcept { return next_ == items_.size(); }
    [[nodiscard]] constexpr T current() const noexcept { return items_[next_]; }
    constexpr void advance() noexcept { ++next_; }

private:
    std::span<const T> items_{};
    std::size_t next_ = 0;
};

} // namespace pipesched::detail
