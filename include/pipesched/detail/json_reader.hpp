// pipesched: a strict JSON reader (RFC 8259) for the small documents users hand the library,
// such as a Hugging Face `config.json`.
//
// Strict because a silently misread model is worse than a refusal: no comments, no trailing
// commas, no NaN or Infinity, no duplicate keys in one object, no bytes after the document.
// Bounded because the text is untrusted: nesting depth at most max_depth, strings and the
// document at most the caller's byte limit, numbers parsed without allocation. Every error
// names its line and column (1-based, counted in bytes).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "json_escape.hpp"

namespace pipesched::json {

enum class value_kind : std::uint8_t { null, boolean, number, string, array, object };

/// One parsed value with the place it starts; an object keeps its members in file order.
struct value {
    value_kind kind = value_kind::null;
    bool boolean = false;
    double number = 0.0;
    std::string text{};            ///< a string's contents (unescaped), or a number as written
    std::vector<value> items{};       ///< an array's elements, or an object's member values
    std::vector<std::string> keys{};  ///< an object's member names, in file order (items[k] is keys[k]'s)
    std::uint32_t line = 1;
    std::uint32_t column = 1;
    bool underflow = false;           ///< a nonzero number below the smallest double, read as 0

    /// The member named `key` of an object, or nullptr (also for anything but an object).
    [[nodiscard]] const value* find(std::string_view key) const noexcept;
    /// A number written without fraction or exponent, in 0..2^64-1.
    [[nodiscard]] std::optional<std::uint64_t> whole() const noexcept {
        if (kind != value_kind::number || text.empty() || text[0] == '-') return std::nullopt;
        if (text.find_first_of(".eE") != std::string::npos) return std::nullopt;
        std::uint64_t n = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
        return n;
    }
};

inline const value* value::find(std::string_view key) const noexcept {
    if (kind != value_kind::object) return nullptr;
    for (std::size_t k = 0; k < keys.size(); ++k)
        if (keys[k] == key) return &items[k];
    return nullptr;
}

struct parse_result {
    std::optional<value> document{};
    std::string error{}; ///< "line L, column C: what" when document is empty
    [[nodiscard]] explicit operator bool() const noexcept { return document.has_value(); }
};

inline constexpr std::uint32_t max_depth = 64;

namespace detail {

/// Whether a JSON number that a double cannot hold is too small (underflow) rather than too
/// large: its first nonzero digit's decimal place, shifted by the exponent, is negative. The
/// exponent is read saturated, so any length of digits is fine.
inline bool underflows(std::string_view number) noexcept {
    const std::size_t e = number.find_first_of("eE");
    const std::string_view mantissa = number.substr(0, e);
    long long exponent = 0;
    if (e != std::string_view::npos) {
        std::size_t i = e + 1;
        const bool negative = i < number.size() && number[i] == '-';
        if (i < number.size() && (number[i] == '-' || number[i] == '+')) ++i;
        for (; i < number.size(); ++i)
            exponent = std::min<long long>(exponent * 10 + (number[i] - '0'), 1'000'000'000);
        if (negative) exponent = -exponent;
    }
    // The place of the first nonzero digit: >= 0 in the integer part, < 0 after the point.
    const std::size_t point = mantissa.find('.');
    const std::size_t int_end = point == std::string_view::npos ? mantissa.size() : point;
    const std::size_t first = mantissa.find_first_of("123456789");
    if (first == std::string_view::npos) return true; // all zeros: cannot be out of range anyway
    const long long place = first < int_end ? static_cast<long long>(int_end - first) - 1
                                            : -static_cast<long long>(first - int_end);
    return place + exponent < 0;
}

class reader {
  public:
    explicit reader(std::string_view text) : text_{text} {}

    parse_result run() {
        parse_result r;
        skip_space();
        value v;
        if (!parse_value(v, 0)) {
            r.error = std::move(error_);
            return r;
        }
        skip_space();
        if (pos_ != text_.size()) {
            fail("unexpected text after the JSON document");
            r.error = std::move(error_);
            return r;
        }
        r.document = std::move(v);
        return r;
    }

  private:
    std::string_view text_;
    std::size_t pos_ = 0;
    std::uint32_t line_ = 1;
    std::size_t line_start_ = 0;
    std::string error_{};

    [[nodiscard]] std::uint32_t column() const noexcept {
        return static_cast<std::uint32_t>(pos_ - line_start_ + 1);
    }
    bool fail(std::string_view what) {
        if (error_.empty())
            error_ = "line " + std::to_string(line_) + ", column " + std::to_string(column()) + ": " +
                     std::string{what};
        return false;
    }
    [[nodiscard]] bool at_end() const noexcept { return pos_ >= text_.size(); }
    [[nodiscard]] char peek() const noexcept { return at_end() ? '\0' : text_[pos_]; }

    void skip_space() {
        while (!at_end()) {
            const char c = text_[pos_];
            if (c == '\n') {
                ++pos_;
                ++line_;
                line_start_ = pos_;
            } else if (c == ' ' || c == '\t' || c == '\r') {
                ++pos_;
            } else {
                break;
            }
        }
    }

    bool literal(std::string_view word) {
        if (text_.substr(pos_, word.size()) != word) return fail("invalid literal (expected true, false or null)");
        pos_ += word.size();
        return true;
    }

    bool parse_value(value& v, std::uint32_t depth) {
        v.line = line_;
        v.column = column();
        if (at_end()) return fail("unexpected end of input (expected a value)");
        switch (peek()) {
        case '{': return parse_object(v, depth);
        case '[': return parse_array(v, depth);
        case '"': v.kind = value_kind::string; return parse_string(v.text);
        case 't': v.kind = value_kind::boolean; v.boolean = true; return literal("true");
        case 'f': v.kind = value_kind::boolean; v.boolean = false; return literal("false");
        case 'n': v.kind = value_kind::null; return literal("null");
        default:
            if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number(v);
            return fail("unexpected character (expected a value)");
        }
    }

    bool parse_object(value& v, std::uint32_t depth) {
        if (depth >= max_depth) return fail("nesting deeper than 64 levels");
        v.kind = value_kind::object;
        return parse_list('}', "expected ',' or '}' in an object", [&] {
            if (peek() != '"') return fail("expected a member name in double quotes");
            const std::uint32_t key_line = line_;
            const std::uint32_t key_column = column();
            std::string key;
            if (!parse_string(key)) return false;
            for (const std::string& existing : v.keys) {
                if (existing == key) {
                    line_ = key_line;
                    pos_ = line_start_ + key_column - 1;
                    return fail("duplicate key \"" + printable(key) + "\"");
                }
            }
            skip_space();
            if (peek() != ':') return fail("expected ':' after a member name");
            ++pos_;
            skip_space();
            value item;
            if (!parse_value(item, depth + 1)) return false;
            v.keys.push_back(std::move(key));
            v.items.push_back(std::move(item));
            return true;
        });
    }

    bool parse_array(value& v, std::uint32_t depth) {
        if (depth >= max_depth) return fail("nesting deeper than 64 levels");
        v.kind = value_kind::array;
        return parse_list(']', "expected ',' or ']' in an array", [&] {
            value item;
            if (!parse_value(item, depth + 1)) return false;
            v.items.push_back(std::move(item));
            return true;
        });
    }

    /// An object's members or an array's elements, from the opening bracket on: none, or
    /// `item` (which reads one) repeated with ',' between, then `close`.
    template <class Item>
    bool parse_list(char close, std::string_view expected_separator, Item item) {
        ++pos_;
        skip_space();
        if (peek() == close) {
            ++pos_;
            return true;
        }
        while (true) {
            skip_space();
            if (!item()) return false;
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() == close) {
                ++pos_;
                return true;
            }
            return fail(expected_separator);
        }
    }

    static int hex_digit(char c) noexcept {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    bool read_hex4(std::uint32_t& out) {
        out = 0;
        for (int k = 0; k < 4; ++k) {
            const int d = at_end() ? -1 : hex_digit(text_[pos_]);
            if (d < 0) return fail("invalid \\u escape (expected four hex digits)");
            out = out * 16 + static_cast<std::uint32_t>(d);
            ++pos_;
        }
        return true;
    }

    static void append_utf8(std::string& s, std::uint32_t cp) {
        if (cp < 0x80) {
            s += static_cast<char>(cp);
        } else if (cp < 0x800) {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            s += static_cast<char>(0xE0 | (cp >> 12));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            s += static_cast<char>(0xF0 | (cp >> 18));
            s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            s += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    bool parse_string(std::string& out) {
        ++pos_; // the opening quote
        while (true) {
            if (at_end()) return fail("unterminated string");
            const char c = text_[pos_];
            if (c == '"') {
                ++pos_;
                return true;
            }
            if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string (escape it)");
            if (c != '\\') {
                out += c;
                ++pos_;
                continue;
            }
            ++pos_;
            if (at_end()) return fail("unterminated string");
            const char e = text_[pos_++];
            if (const char byte = escaped_byte(e); byte != '\0') {
                out += byte;
                continue;
            }
            switch (e) {
            case 'u': {
                std::uint32_t cp = 0;
                if (!read_hex4(cp)) return false;
                if (cp >= 0xD800 && cp < 0xDC00) { // a high surrogate needs its low half
                    std::uint32_t low = 0;
                    if (text_.substr(pos_, 2) != "\\u") return fail("unpaired surrogate in \\u escape");
                    pos_ += 2;
                    if (!read_hex4(low)) return false;
                    if (low < 0xDC00 || low >= 0xE000) return fail("unpaired surrogate in \\u escape");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                } else if (cp >= 0xDC00 && cp < 0xE000) {
                    return fail("unpaired surrogate in \\u escape");
                }
                append_utf8(out, cp);
                break;
            }
            default: --pos_; return fail("invalid escape in a string");
            }
        }
    }

    bool parse_number(value& v) {
        const std::size_t start = pos_;
        if (peek() == '-') ++pos_;
        if (peek() == '0') {
            ++pos_;
        } else if (peek() >= '1' && peek() <= '9') {
            while (peek() >= '0' && peek() <= '9') ++pos_;
        } else {
            return fail("invalid number (expected a digit)");
        }
        if (peek() == '.') {
            ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) return fail("invalid number (expected a digit after '.')");
            while (peek() >= '0' && peek() <= '9') ++pos_;
        }
        if (peek() == 'e' || peek() == 'E') {
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) return fail("invalid number (expected a digit in the exponent)");
            while (peek() >= '0' && peek() <= '9') ++pos_;
        }
        if (peek() >= '0' && peek() <= '9') return fail("invalid number (leading zero)");
        v.kind = value_kind::number;
        v.text = std::string{text_.substr(start, pos_ - start)};
        double d = 0.0;
        const auto [end, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), d);
        if (ec == std::errc::result_out_of_range) {
            // from_chars reports both overflow and underflow; only overflow is an error here. A
            // tiny value (1e-400, or 0.000...1 without an exponent) reads as 0 and is marked, so
            // that a reader which uses the key can say it underflowed and name the key.
            if (underflows(v.text)) {
                v.number = 0.0;
                v.underflow = true;
                return true;
            }
            pos_ = start;
            return fail("number " + v.text + " is too large for a double");
        }
        if (ec != std::errc{} || end != v.text.data() + v.text.size()) {
            pos_ = start;
            return fail("invalid number");
        }
        v.number = d;
        return true;
    }

    static std::string printable(std::string_view s) {
        std::string out;
        for (const char c : s.substr(0, 64)) {
            const auto u = static_cast<unsigned char>(c);
            if (u < 0x20 || u == 0x7F || c == '"' || c == '\\') {
                static constexpr char hex[] = "0123456789abcdef";
                out += "\\x";
                out += hex[u >> 4];
                out += hex[u & 15];
            } else {
                out += c;
            }
        }
        if (s.size() > 64) out += "...";
        return out;
    }
};

} // namespace detail

/// Parses `text` as one JSON document.
[[nodiscard]] inline parse_result parse(std::string_view text) { return detail::reader{text}.run(); }

} // namespace pipesched::json
