// pipesched: PyTorch's text form of a compute action, `<stage><letter><microbatch>`
// (`0F1`, `3I2`, `5W0`, `2B7`), as written by torch.distributed.pipelining's `_Action.__repr__`
// and read by its `_Action.from_str`. Both directions are constexpr.
//
// Parsing is stricter than PyTorch's regex: no sign, no spaces, no trailing characters, and
// numbers must fit (stage < 2^32, microbatch < max_microbatches). Errors carry the 0-based
// position of the first offending character.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../event.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

/// A compute action with a global stage number, as PyTorch names it.
struct action {
    std::uint32_t stage = 0;
    op kind = op::forward;
    std::uint32_t microbatch = 0;
    friend constexpr bool operator==(const action&, const action&) = default;
};

enum class action_errc : std::uint8_t {
    none,
    empty,                ///< nothing to parse
    expected_stage,       ///< the text does not start with a digit
    negative_number,      ///< a '-' where a number belongs
    stage_overflow,       ///< stage does not fit in 32 bits
    expected_letter,      ///< no F, B, I or W after the stage
    unknown_letter,       ///< a letter other than F, B, I, W
    expected_microbatch,  ///< nothing or a non-digit after the letter
    microbatch_overflow,  ///< microbatch >= max_microbatches
    trailing_characters,  ///< anything after the microbatch number
};

[[nodiscard]] constexpr std::string_view describe(action_errc e) noexcept {
    switch (e) {
    case action_errc::none: return "no error";
    case action_errc::empty: return "empty action";
    case action_errc::expected_stage: return "expected a stage number";
    case action_errc::negative_number: return "negative numbers are not allowed";
    case action_errc::stage_overflow: return "stage number too large";
    case action_errc::expected_letter: return "expected F, B, I or W after the stage";
    case action_errc::unknown_letter: return "unknown action letter (expected F, B, I or W)";
    case action_errc::expected_microbatch: return "expected a microbatch number after the letter";
    case action_errc::microbatch_overflow: return "microbatch number too large (limit 65535)";
    case action_errc::trailing_characters: return "unexpected characters after the action";
    }
    return "?";
}

struct action_parse_result {
    action value{};
    action_errc error = action_errc::none;
    std::size_t position = 0; ///< where the error was found, 0-based

    constexpr explicit operator bool() const noexcept { return error == action_errc::none; }
};

namespace detail {
[[nodiscard]] constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// Reads a run of decimal digits at `pos`; false on overflow past `limit`.
[[nodiscard]] constexpr bool read_number(std::string_view text, std::size_t& pos,
                                         std::uint64_t limit, std::uint64_t& out) noexcept {
    out = 0;
    while (pos < text.size() && is_digit(text[pos])) {
        out = out * 10 + static_cast<std::uint64_t>(text[pos] - '0');
        if (out > limit) return false;
        ++pos;
    }
    return true;
}

[[nodiscard]] constexpr op op_from_letter(char c, bool& ok) noexcept {
    ok = true;
    switch (c) {
    case 'F': return op::forward;
    case 'B': return op::backward;
    case 'I': return op::backward_input;
    case 'W': return op::backward_weight;
    default: ok = false; return op::forward;
    }
}
} // namespace detail

[[nodiscard]] constexpr action_parse_result parse_action(std::string_view text) noexcept {
    action_parse_result r{};
    const auto fail = [&r](action_errc e, std::size_t at) {
        r.error = e;
        r.position = at;
        return r;
    };
    if (text.empty()) return fail(action_errc::empty, 0);
    std::size_t pos = 0;
    if (text[0] == '-') return fail(action_errc::negative_number, 0);
    if (!detail::is_digit(text[0])) return fail(action_errc::expected_stage, 0);
    std::uint64_t stage = 0;
    if (!detail::read_number(text, pos, 0xFFFFFFFFu, stage)) {
        return fail(action_errc::stage_overflow, 0);
    }
    if (pos == text.size()) return fail(action_errc::expected_letter, pos);
    bool letter_ok = false;
    const op kind = detail::op_from_letter(text[pos], letter_ok);
    if (!letter_ok) return fail(action_errc::unknown_letter, pos);
    ++pos;
    if (pos == text.size()) return fail(action_errc::expected_microbatch, pos);
    if (text[pos] == '-') return fail(action_errc::negative_number, pos);
    if (!detail::is_digit(text[pos])) return fail(action_errc::expected_microbatch, pos);
    const std::size_t mb_at = pos;
    std::uint64_t microbatch = 0;
    if (!detail::read_number(text, pos, max_microbatches - 1, microbatch)) {
        return fail(action_errc::microbatch_overflow, mb_at);
    }
    if (pos != text.size()) return fail(action_errc::trailing_characters, pos);
    r.value = action{static_cast<std::uint32_t>(stage), kind, static_cast<std::uint32_t>(microbatch)};
    return r;
}

/// Fixed-capacity text, so formatting needs no allocation and works in constant expressions.
struct action_text {
    std::array<char, 24> chars{};
    std::size_t length = 0;
    [[nodiscard]] constexpr std::string_view view() const noexcept { return {chars.data(), length}; }
};

namespace detail {
constexpr void append_number(action_text& t, std::uint32_t n) noexcept {
    std::array<char, 10> digits{};
    std::size_t count = 0;
    do {
        digits[count++] = static_cast<char>('0' + n % 10);
        n /= 10;
    } while (n != 0);
    while (count > 0) t.chars[t.length++] = digits[--count];
}
} // namespace detail

/// `0F1` for {stage 0, forward, microbatch 1}. Precondition: kind is a compute op.
[[nodiscard]] constexpr action_text format_action(const action& a) noexcept {
    action_text t{};
    detail::append_number(t, a.stage);
    t.chars[t.length++] = compute_letter(a.kind);
    detail::append_number(t, a.microbatch);
    return t;
}

/// The action an event runs, with the stage numbered by the policy's placement.
template <schedule_policy P>
[[nodiscard]] constexpr action to_action(const P& pol, const event& e) noexcept {
    return action{stage_of(pol, e), e.kind, e.microbatch};
}

/// The event that runs an action, given where stages live.
[[nodiscard]] constexpr event to_event(const action& a, placement layout,
                                       std::uint32_t ranks) noexcept {
    const rank_chunk where = locate_stage(layout, ranks, a.stage);
    return event{a.kind, static_cast<std::uint8_t>(where.chunk),
                 static_cast<std::uint16_t>(where.rank), static_cast<std::uint16_t>(a.microbatch),
                 no_peer};
}

} // namespace pipesched
