// pipesched internals: what an enum's values stand for (a name, a message, a value of another
// enum), written once as a table with one row per enumerator in the enum's order, which both
// directions read: value to text (`to_string`, `describe`) and text back to value (the readers).
// `enum_table` checks at compile time that the rows follow the enum from 0 to its last
// enumerator, which is what lets a lookup index the table by the value.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace pipesched::detail {

template <class E, class T = std::string_view>
struct enum_row {
    E key;
    T value;
};

/// Whether row i holds enumerator i, for every enumerator from 0 to `last`.
template <class E, class T, std::size_t N>
[[nodiscard]] constexpr bool lists_enum(const std::array<enum_row<E, T>, N>& rows, E last) noexcept {
    for (std::size_t i = 0; i < N; ++i) {
        if (static_cast<std::size_t>(rows[i].key) != i) return false;
    }
    return N == static_cast<std::size_t>(last) + 1;
}

/// `rows` as a table, refused at compile time unless row i holds enumerator i for every
/// enumerator from 0 to `Last`: what lets a lookup index the table by the value, and what a
/// switch's -Wswitch would have checked.
template <auto Last, class T = std::string_view, std::size_t N>
[[nodiscard]] consteval std::array<enum_row<decltype(Last), T>, N>
enum_table(const enum_row<decltype(Last), T> (&rows)[N]) {
    std::array<enum_row<decltype(Last), T>, N> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = rows[i];
    if (!lists_enum(out, Last)) throw "enum_table: the rows do not list the enum in order from 0 to Last";
    return out;
}

/// The row of `key` (a table that lists_enum); `fallback` for a value outside the enum.
template <class E, class T, std::size_t N>
[[nodiscard]] constexpr T lookup(const std::array<enum_row<E, T>, N>& rows, E key, T fallback) noexcept {
    const auto i = static_cast<std::size_t>(key);
    return i < N ? rows[i].value : fallback;
}

/// The text of `key`; "?" for a value outside the enum.
template <class E, std::size_t N>
[[nodiscard]] constexpr std::string_view name_in(const std::array<enum_row<E>, N>& rows, E key) noexcept {
    return lookup(rows, key, std::string_view{"?"});
}

/// The first enumerator whose row is `value`; false when none is.
template <class E, class T, std::size_t N, class V>
[[nodiscard]] constexpr bool find_key(const std::array<enum_row<E, T>, N>& rows, const V& value, E& out) noexcept {
    for (const enum_row<E, T>& r : rows) {
        if (r.value == value) {
            out = r.key;
            return true;
        }
    }
    return false;
}

} // namespace pipesched::detail
