// pipesched: the character, token and line helpers the text readers share (action text, the
// SimAI workload parser, SimAI's command line). ASCII only and locale-free on purpose: <cctype>
// depends on the C locale and is not constexpr.
#pragma once

#include <cstddef>
#include <string_view>

namespace pipesched::detail {

[[nodiscard]] constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// Blanks inside a line: space, tab, CR, VT, FF (what `operator>>` skips, minus the line feed).
[[nodiscard]] constexpr bool is_blank(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

[[nodiscard]] constexpr char ascii_lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Equal ignoring ASCII case.
[[nodiscard]] constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (ascii_lower(a[i]) != ascii_lower(b[i]))
            return false;
    }
    return true;
}

[[nodiscard]] constexpr bool is_blank_line(std::string_view line) noexcept {
    for (const char c : line) {
        if (!is_blank(c))
            return false;
    }
    return true;
}

/// A token and where it starts in its line.
struct token {
    std::string_view text;
    std::size_t column = 0; ///< 1-based byte column
};

/// Calls f(token) for every run of characters that are not separators; returns the count.
template <class F, class IsSeparator>
constexpr std::size_t for_each_token(std::string_view line, F&& f, IsSeparator is_separator) {
    std::size_t count = 0;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && is_separator(line[i]))
            ++i;
        if (i == line.size())
            break;
        const std::size_t begin = i;
        while (i < line.size() && !is_separator(line[i]))
            ++i;
        f(token{line.substr(begin, i - begin), begin + 1});
        ++count;
    }
    return count;
}

/// The same with blanks (is_blank) as separators.
template <class F> constexpr std::size_t for_each_token(std::string_view line, F&& f) {
    return for_each_token(line, static_cast<F&&>(f), [](char c) { return is_blank(c); });
}

/// Splits text into lines at '\n' (the '\n' not included); the last line need not end with one,
/// and "a\n" is one line, not a line and an empty one.
class line_reader {
  public:
    constexpr explicit line_reader(std::string_view text) noexcept : text_(text) {}
    constexpr bool next(std::string_view& line) noexcept {
        if (pos_ > text_.size() || (pos_ == text_.size() && (text_.empty() || ended_))) {
            return false;
        }
        const std::size_t nl = text_.find('\n', pos_);
        if (nl == std::string_view::npos) {
            line = text_.substr(pos_);
            pos_ = text_.size();
            ended_ = true;
            newline_ = false;
        } else {
            line = text_.substr(pos_, nl - pos_);
            pos_ = nl + 1;
            ended_ = pos_ == text_.size();
            newline_ = true;
        }
        ++number_;
        return true;
    }
    /// 1-based number of the line `next` returned last.
    [[nodiscard]] constexpr std::size_t number() const noexcept { return number_; }
    /// Whether that line ended with '\n' (false for a last line without one).
    [[nodiscard]] constexpr bool ended_with_newline() const noexcept { return newline_; }

  private:
    std::string_view text_;
    std::size_t pos_ = 0;
    std::size_t number_ = 0;
    bool ended_ = false;
    bool newline_ = false;
};

} // namespace pipesched::detail
