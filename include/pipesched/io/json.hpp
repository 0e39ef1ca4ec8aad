// pipesched: the JSON text the library's writers (Chrome traces) and the pipesched tool print:
// strings escaped per RFC 8259, whole numbers in decimal, and doubles as the shortest decimal
// text in fixed notation that reads back to the same value.
//
//   std::string s = "{\"makespan\":";
//   pipesched::json::append_number(s, 28.5);   // 28.5
//   s += ",\"name\":";
//   pipesched::json::append_string(s, "1F1B"); // "1F1B"
//   s += ",\"peaks\":";
//   pipesched::json::append_array(s, std::vector<double>{2, 3.5}); // [2,3.5]
//
// JSON has no infinity or NaN. append_number writes null for them, never a number they are not;
// the replays report overflow as an error instead, so a correct caller never prints one.
#pragma once

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "../detail/json_escape.hpp"

namespace pipesched::json {

/// `s` in double quotes: '"' and '\' escaped, control bytes as \b \f \n \r \t or \u00XX; other
/// bytes are copied, so the text must be UTF-8 for the result to be valid JSON.
inline void append_string(std::string& out, std::string_view s) {
    static constexpr std::string_view hex = "0123456789abcdef";
    out += '"';
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && c != '"' && c != '\\') {
            out += c;
        } else if (const char letter = detail::escape_letter(c); letter != '\0') {
            out += '\\';
            out += letter;
        } else {
            out += "\\u00";
            out += hex[u >> 4];
            out += hex[u & 0xF];
        }
    }
    out += '"';
}

inline void append_number(std::string& out, std::uint64_t n) {
    std::array<char, 24> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), n);
    out.append(buf.data(), r.ptr);
}

/// Shortest round-trip text in fixed notation; null for infinity and NaN (see above).
inline void append_number(std::string& out, double x) {
    if (!std::isfinite(x)) {
        out += "null";
        return;
    }
    std::array<char, 400> buf{}; // enough for any double in fixed notation
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::fixed);
    if (r.ec != std::errc{}) {
        out += "null";
        return;
    }
    out.append(buf.data(), r.ptr);
}

/// `[x0,x1,...]`: strings by append_string, numbers by append_number.
template <class Range>
void append_array(std::string& out, const Range& items) {
    out += '[';
    bool first = true;
    for (const auto& x : items) {
        if (!first)
            out += ',';
        first = false;
        if constexpr (std::is_convertible_v<decltype(x), std::string_view>)
            append_string(out, x);
        else
            append_number(out, x);
    }
    out += ']';
}

} // namespace pipesched::json
