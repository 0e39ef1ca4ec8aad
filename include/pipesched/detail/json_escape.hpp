// pipesched internals: JSON's two-character escapes (RFC 8259, section 7), the one table that
// the reader (detail/json_reader.hpp) turns back into bytes and the writer (io/json.hpp) writes.
#pragma once

#include <array>

namespace pipesched::json::detail {

struct short_escape {
    char letter; ///< after the backslash
    char byte;   ///< what it stands for
};

inline constexpr std::array<short_escape, 8> short_escapes{{
    {'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', '\b'}, {'f', '\f'}, {'n', '\n'}, {'r', '\r'}, {'t', '\t'},
}};

/// The byte `\letter` stands for; '\0' when `letter` is not a two-character escape (\u is not).
[[nodiscard]] constexpr char escaped_byte(char letter) noexcept {
    for (const short_escape& e : short_escapes) {
        if (e.letter == letter) return e.byte;
    }
    return '\0';
}

/// The letter that writes `byte` as a two-character escape; '\0' when it has none. '/' is read
/// but never written escaped: it needs no escape.
[[nodiscard]] constexpr char escape_letter(char byte) noexcept {
    for (const short_escape& e : short_escapes) {
        if (e.byte == byte && byte != '/') return e.letter;
    }
    return '\0';
}

} // namespace pipesched::json::detail
