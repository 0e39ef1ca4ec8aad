// pipesched: PyTorch's text form of one action, as written by torch.distributed.pipelining's
// `_Action.__repr__` and read by its `_Action.from_str`. Both directions are constexpr and
// allocation-free.
//
//   compute         <stage><F|B|I|W><microbatch>          0F1  3I2  5W0  2B7
//   point-to-point  <stage><SEND_F|RECV_F|SEND_B|RECV_B><microbatch>   1SEND_F0  2RECV_B3
//   stage-only      <stage><UNSHARD|RESHARD|REDUCE_GRAD>   3UNSHARD  0REDUCE_GRAD
//   overlapped pair (<action>;<action>)OVERLAP_F_B        (0F7;7B3)OVERLAP_F_B   (parse_cell)
//
// Parsing is stricter than PyTorch's regex: no sign, no spaces, no leading zeros, no trailing
// characters, and numbers must fit (stage < 2^32, microbatch < max_microbatches), so that every
// accepted text is exactly what format_action / format_overlap print for its value. Errors carry
// the 0-based position of the first offending character.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "detail/enum_table.hpp"
#include "detail/text.hpp"
#include "event.hpp"
#include "shape.hpp"

namespace pipesched {

/// One action with a global stage number, as PyTorch names it. `microbatch` is 0 for the
/// stage-only ops (UNSHARD, RESHARD, REDUCE_GRAD), which have none.
struct action {
    std::uint32_t stage = 0;
    op kind = op::forward;
    std::uint32_t microbatch = 0;
    /// True on the first action of an OVERLAP_F_B pair: it runs together with the next
    /// action of the same rank. Only cells (parse_cell, CSV) carry it; parse_action never sets
    /// it and format_action ignores it.
    bool overlapped_with_next = false;
    friend constexpr bool operator==(const action&, const action&) = default;
};

/// PyTorch's name of an op in action text ("F", "SEND_F", "UNSHARD", ...); empty for the ops
/// PyTorch does not write (recompute, loss, grad_norm, optimizer_step).
[[nodiscard]] constexpr std::string_view action_name(op o) noexcept {
    return detail::text_of(o).pytorch;
}

/// Whether the text of an op ends with a microbatch number: compute and point-to-point ops.
[[nodiscard]] constexpr bool has_microbatch(op o) noexcept { return is_compute(o) || is_p2p(o); }

/// The suffix of an overlapped pair, `(a;b)OVERLAP_F_B`.
inline constexpr std::string_view overlap_suffix = "OVERLAP_F_B";

enum class action_errc : std::uint8_t {
    none,
    empty,                ///< nothing to parse
    expected_stage,       ///< the text does not start with a digit
    negative_number,      ///< a '-' where a number belongs
    stage_overflow,       ///< stage does not fit in 32 bits
    expected_letter,      ///< nothing after the stage
    unknown_letter,       ///< not F, B, I, W or a communication name; position: first mismatch
    expected_microbatch,  ///< nothing or a non-digit where the microbatch belongs
    microbatch_overflow,  ///< microbatch >= max_microbatches
    trailing_characters,  ///< anything after the action
    // Added with communication actions and overlapped pairs:
    leading_zero,          ///< a number with a leading zero (PyTorch never writes one)
    unexpected_microbatch, ///< a number after UNSHARD, RESHARD or REDUCE_GRAD
    unclosed_paren,        ///< '(' without ')'; position: the '('
    expected_semicolon,    ///< ')' where the ';' between the two actions belongs
    too_many_actions,      ///< a second ';': a pair holds exactly two actions
    nested_paren,          ///< '(' inside a pair
    expected_overlap,      ///< ')' not followed by OVERLAP_F_B; position: first mismatch
    overlap_not_compute,   ///< a pair holds an action other than F, B, I, W; position: its start
};

inline constexpr auto action_errc_names = detail::enum_table<action_errc::overlap_not_compute>({
    {action_errc::none, "no error"},
    {action_errc::empty, "empty action"},
    {action_errc::expected_stage, "expected a stage number"},
    {action_errc::negative_number, "negative numbers are not allowed"},
    {action_errc::stage_overflow, "stage number too large"},
    {action_errc::expected_letter, "expected an action name (F, B, I, W, SEND_F, ...) after the stage"},
    {action_errc::unknown_letter,
     "unknown action name (expected F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B, "
     "UNSHARD, RESHARD or REDUCE_GRAD)"},
    {action_errc::expected_microbatch, "expected a microbatch number after the action name"},
    {action_errc::microbatch_overflow, "microbatch number too large (limit 65535)"},
    {action_errc::trailing_characters, "unexpected characters after the action"},
    {action_errc::leading_zero, "numbers must not have leading zeros"},
    {action_errc::unexpected_microbatch, "UNSHARD, RESHARD and REDUCE_GRAD take no microbatch number"},
    {action_errc::unclosed_paren, "'(' without a matching ')'"},
    {action_errc::expected_semicolon, "expected ';' between the two actions of a pair"},
    {action_errc::too_many_actions, "an overlapped pair holds exactly two actions"},
    {action_errc::nested_paren, "parentheses cannot nest"},
    {action_errc::expected_overlap, "expected OVERLAP_F_B after ')'"},
    {action_errc::overlap_not_compute, "only F, B, I and W actions can be overlapped"},
});

[[nodiscard]] constexpr std::string_view describe(action_errc e) noexcept { return detail::name_in(action_errc_names, e); }

struct action_parse_result {
    action value{};
    action_errc error = action_errc::none;
    std::size_t position = 0; ///< where the error was found, 0-based

    constexpr explicit operator bool() const noexcept { return error == action_errc::none; }
};

namespace detail {

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

/// A '0' followed by another digit at `pos`.
[[nodiscard]] constexpr bool leading_zero_at(std::string_view text, std::size_t pos) noexcept {
    return pos + 1 < text.size() && text[pos] == '0' && is_digit(text[pos + 1]);
}

[[nodiscard]] constexpr op op_from_letter(char c, bool& ok) noexcept {
    for (const op o : {op::forward, op::backward, op::backward_input, op::backward_weight}) {
        if (compute_letter(o) == c) {
            ok = true;
            return o;
        }
    }
    ok = false;
    return op::forward;
}

/// Matches a communication name at `pos` (no name is a prefix of another). On success advances
/// `pos` past it; otherwise `pos` is left at the first character no name can continue with.
[[nodiscard]] constexpr bool match_comm_name(std::string_view text, std::size_t& pos,
                                             op& out) noexcept {
    std::size_t longest = 0;
    for (const op_text& row : op_texts) {
        const std::string_view name = row.pytorch;
        if (name.size() < 2) continue; // F, B, I, W are letters; op_from_letter reads those
        const op o = row.kind;
        std::size_t n = 0;
        while (n < name.size() && pos + n < text.size() && text[pos + n] == name[n]) ++n;
        if (n == name.size()) {
            out = o;
            pos += n;
            return true;
        }
        longest = n > longest ? n : longest;
    }
    pos += longest;
    return false;
}
} // namespace detail

/// Parses one action: compute, point-to-point or stage-only (not an overlapped pair; see
/// parse_cell).
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
    if (detail::leading_zero_at(text, 0)) return fail(action_errc::leading_zero, 0);
    std::uint64_t stage = 0;
    if (!detail::read_number(text, pos, 0xFFFFFFFFu, stage)) {
        return fail(action_errc::stage_overflow, 0);
    }
    if (pos == text.size()) return fail(action_errc::expected_letter, pos);
    bool letter_ok = false;
    op kind = detail::op_from_letter(text[pos], letter_ok);
    if (letter_ok) {
        ++pos;
    } else if (!detail::match_comm_name(text, pos, kind)) {
        return fail(action_errc::unknown_letter, pos);
    }
    std::uint64_t microbatch = 0;
    if (has_microbatch(kind)) {
        if (pos == text.size()) return fail(action_errc::expected_microbatch, pos);
        if (text[pos] == '-') return fail(action_errc::negative_number, pos);
        if (!detail::is_digit(text[pos])) return fail(action_errc::expected_microbatch, pos);
        if (detail::leading_zero_at(text, pos)) return fail(action_errc::leading_zero, pos);
        const std::size_t mb_at = pos;
        if (!detail::read_number(text, pos, max_microbatches - 1, microbatch)) {
            return fail(action_errc::microbatch_overflow, mb_at);
        }
    } else if (pos < text.size() && detail::is_digit(text[pos])) {
        return fail(action_errc::unexpected_microbatch, pos);
    }
    if (pos != text.size()) return fail(action_errc::trailing_characters, pos);
    r.value = action{static_cast<std::uint32_t>(stage), kind, static_cast<std::uint32_t>(microbatch)};
    return r;
}

/// Fixed-capacity text, so formatting needs no allocation and works in constant expressions.
template <std::size_t Capacity>
struct fixed_text {
    std::array<char, Capacity> chars{};
    std::size_t length = 0;
    [[nodiscard]] constexpr std::string_view view() const noexcept { return {chars.data(), length}; }
    constexpr void append(std::string_view s) noexcept {
        for (const char c : s) chars[length++] = c;
    }
};

/// The text of one action: at most 10 digits + "SEND_F" + 10 digits (26 characters).
using action_text = fixed_text<32>;
/// The text of one CSV cell: an action or `(a;b)OVERLAP_F_B` (at most 66 characters).
using cell_text = fixed_text<72>;

namespace detail {
template <std::size_t N>
constexpr void append_number(fixed_text<N>& t, std::uint32_t n) noexcept {
    std::array<char, 10> digits{};
    std::size_t count = 0;
    do {
        digits[count++] = static_cast<char>('0' + n % 10);
        n /= 10;
    } while (n != 0);
    while (count > 0) t.chars[t.length++] = digits[--count];
}

template <std::size_t N>
constexpr void append_action(fixed_text<N>& t, const action& a) noexcept {
    append_number(t, a.stage);
    const std::string_view name = action_name(a.kind);
    if (name.empty()) {
        t.append("?"); // no PyTorch name (precondition violated); parse_action rejects it
    } else {
        t.append(name);
    }
    if (has_microbatch(a.kind) || name.empty()) append_number(t, a.microbatch);
}
} // namespace detail

/// `0F1` for {stage 0, forward, microbatch 1}, `3UNSHARD` for {stage 3, param_gather}.
/// Precondition: action_name(a.kind) is not empty. `overlapped_with_next` is ignored, and so
/// is the microbatch of a stage-only op.
[[nodiscard]] constexpr action_text format_action(const action& a) noexcept {
    action_text t{};
    detail::append_action(t, a);
    return t;
}

/// `(0F7;7B3)OVERLAP_F_B`: the cell of an overlapped pair (flags are not written).
[[nodiscard]] constexpr cell_text format_overlap(const action& first,
                                                 const action& second) noexcept {
    cell_text t{};
    t.append("(");
    detail::append_action(t, first);
    t.append(";");
    detail::append_action(t, second);
    t.append(")");
    t.append(overlap_suffix);
    return t;
}

/// Folds one rank's actions, in order, into the cells PyTorch writes: an F, B, I or W is one
/// cell; an op::overlap_f_b marker (a policy's overlapped pair) or the overlapped_with_next
/// flag (a table's) joins it with the next compute action into `(a;b)OVERLAP_F_B`; other ops
/// make no cell. push() returns true when a cell is complete; text() is then that cell.
class cell_folder {
public:
    constexpr bool push(const action& a) noexcept {
        if (a.kind == op::overlap_f_b) {
            pair_ = true;
            return false;
        }
        if (!is_compute(a.kind)) return false;
        if ((pair_ || a.overlapped_with_next) && !have_first_) {
            first_ = a;
            have_first_ = true;
            return false;
        }
        if (have_first_) {
            text_ = format_overlap(first_, a);
        } else {
            text_ = cell_text{};
            detail::append_action(text_, a);
        }
        pair_ = false;
        have_first_ = false;
        return true;
    }
    [[nodiscard]] constexpr std::string_view text() const noexcept { return text_.view(); }

private:
    cell_text text_{};
    action first_{};
    bool pair_ = false;
    bool have_first_ = false;
};

/// What one CSV cell holds: nothing (an idle slot), one action, or an overlapped pair.
struct cell_parse_result {
    std::array<action, 2> actions{}; ///< the first `count`; actions[0] of a pair is flagged
    std::size_t count = 0;
    action_errc error = action_errc::none;
    std::size_t position = 0; ///< where the error was found, 0-based

    constexpr explicit operator bool() const noexcept { return error == action_errc::none; }
};

/// Parses one cell as PyTorch writes it: empty (idle), one action, or `(a;b)OVERLAP_F_B` where
/// a and b are compute actions. Exactly as strict as parse_action: no spaces anywhere.
[[nodiscard]] constexpr cell_parse_result parse_cell(std::string_view text) noexcept {
    cell_parse_result r{};
    const auto fail = [&r](action_errc e, std::size_t at) {
        r.actions = {};
        r.count = 0;
        r.error = e;
        r.position = at;
        return r;
    };
    if (text.empty()) return r;
    if (text[0] != '(') {
        const action_parse_result one = parse_action(text);
        if (!one) return fail(one.error, one.position);
        r.actions[0] = one.value;
        r.count = 1;
        return r;
    }
    // An overlapped pair, read left to right so the first offending character is reported.
    std::size_t pos = 1;
    for (std::size_t k = 0; k < 2; ++k) {
        const std::size_t start = pos;
        while (pos < text.size() && text[pos] != ';' && text[pos] != ')' && text[pos] != '(') {
            ++pos;
        }
        const action_parse_result sub = parse_action(text.substr(start, pos - start));
        // An error inside the action comes first; one found only where the action ends
        // (`(1F`, `(;`) yields to a missing ')' or a nested '('.
        if (!sub && start + sub.position < pos) return fail(sub.error, start + sub.position);
        if (pos == text.size()) return fail(action_errc::unclosed_paren, 0);
        if (text[pos] == '(') return fail(action_errc::nested_paren, pos);
        if (!sub) return fail(sub.error, start + sub.position);
        if (!is_compute(sub.value.kind)) return fail(action_errc::overlap_not_compute, start);
        r.actions[k] = sub.value;
        if (k == 0 && text[pos] == ')') return fail(action_errc::expected_semicolon, pos);
        if (k == 1 && text[pos] == ';') return fail(action_errc::too_many_actions, pos);
        ++pos;
    }
    // text[pos - 1] is ')'.
    for (std::size_t n = 0; n < overlap_suffix.size(); ++n, ++pos) {
        if (pos == text.size() || text[pos] != overlap_suffix[n]) {
            return fail(action_errc::expected_overlap, pos);
        }
    }
    if (pos != text.size()) return fail(action_errc::trailing_characters, pos);
    r.actions[0].overlapped_with_next = true;
    r.count = 2;
    return r;
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
