// pipesched: reads a SimAI / AICB workload file (the format SimAI's
// `Workload::initialize_workload` in Workload.cc reads) into a simai::workload. Every error
// carries a parse_errc, the line, the 1-based field and the 1-based byte column.
//
//   line 1   <policy> key: value key: value ...
//            e.g. HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 2
//                 ga: 2 all_gpus: 4 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0
//   line 2   number of rows
//   line 3+  one row per line, 12 fields:
//            name  -1  fwd_ns fwd_comm fwd_bytes  ig_ns ig_comm ig_bytes  wg_ns wg_comm wg_bytes
//            update_ns
//
// SimAI splits line 1 into whitespace-separated tokens, takes the first as the policy
// (`Workload::decode_parallelsim`) and then looks for the tokens `model_parallel_NPU_group:`,
// `ep:`, `pp:`, `vpp:`, `ga:`, `all_gpus:`, `checkpoints:`, `checkpoint_initiates:`, and
// `pp_comm` with or without the colon, reading the token after each with std::stoi. It reads
// line 2 with std::getline + std::stoi and then every row field with `operator>>` (so any
// whitespace separates fields, and a row may even span lines). `checkpoints: N l1 .. lN` and
// `checkpoint_initiates: N l1 .. lN` list layer (row) indices.
//
// This parser accepts what the real AICB files contain and reports everything else with the
// line, the 1-based field and the 1-based column:
//
// - Fields are separated by runs of blanks (space, tab, CR, VT, FF), like SimAI's `>>`. The
//   AICB files use exactly one tab; the workload pasted in the SimAI issue that started this
//   project uses runs of spaces, so both must work. CRLF line ends and trailing blanks are
//   therefore harmless. Unlike SimAI, a row must be on one line (that is what makes line numbers
//   in errors meaningful); blank lines are allowed only after the last row.
// - Header keys may be written with or without the trailing colon (SimAI's own
//   example/workload_analytical.txt has `pp_comm 50331648`). Unknown keys are kept, in order, with
//   their single value. A key that appears twice is an error. `pp:` and `ga:` are required (the
//   analysis needs them) and must be at least 1.
// - Byte counts and nanosecond counts are unsigned 64-bit integers. They may be written as
//   decimal or floating-point text (`8388608`, `8388608.0`, `8.388608e6`) as long as the value
//   is a whole number; negative values, NaN, infinity, fractions and values beyond 2^64-1 are
//   errors. (SimAI reads these fields into `Tick`/`uint64_t` with `>>`, which would stop at the
//   '.' and misread the rest of the row.) `pp_comm` is a double (`pp_comm: 8388608.0`).
// - The second field (always -1 in AICB files) is read as an int; SimAI reads it into
//   `int depen` and only prints it.
// - Collective names are matched exactly: NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL,
//   ALLREDUCEALLTOALL, each optionally suffixed _EP or _DP_EP. Anything else is an error. (SimAI
//   silently turns an unknown name into "no collective". aliyun/SimAI 0253299 matches the base
//   name as a prefix, ALLREDUCE first, so `ALLREDUCEALLTOALL` becomes an all-reduce with no
//   group there; 1854d89 outside its ANALYTI build accepts only the plain names, so `_EP` and
//   `_DP_EP` collectives become "no collective" there.)
//   The group follows SimAI's rule: a plain name is the tensor-parallel group in the forward
//   and input-gradient columns and the data-parallel group in the weight-gradient column;
//   `_EP` is the expert-parallel group and `_DP_EP` the expert-data-parallel group. NONE with a
//   non-zero byte count is accepted (the GPT files have it); the bytes are kept but SimAI
//   issues nothing.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../detail/enum_table.hpp"
#include "../detail/text.hpp"
#include "workload.hpp"

namespace pipesched::simai {

/// What is wrong with a workload file; parse_error::message says it with the values involved.
enum class parse_errc : std::uint8_t {
    none,
    empty_file,         ///< nothing but blanks and line ends
    empty_header,       ///< line 1 is blank
    unsupported_policy, ///< not HYBRID_TRANSFORMER_FWD_IN_BCKWD or HYBRID_TRANSFORMER
    malformed_key,      ///< a header key that is empty or holds a ':' inside
    missing_value,      ///< a header key with no value after it
    duplicate_key,      ///< a header key given twice
    missing_key,        ///< pp: or ga: is absent
    zero_value,         ///< pp, ga or the row count is 0
    short_layer_list,   ///< `checkpoints: N` with fewer than N layers after it
    layer_out_of_range, ///< a checkpoint layer that names no row
    missing_row_count,  ///< line 2 is absent or blank
    extra_token,        ///< more than one token on the row-count line
    missing_field,      ///< a row with fewer than 12 fields
    extra_field,        ///< a row with more than 12 fields
    unknown_collective, ///< a collective name SimAI does not know
    not_a_number,       ///< a number field that is not a number (the layer id: not an integer)
    negative,           ///< a negative count
    nan,                ///< NaN
    infinity,           ///< inf / infinity
    fraction,           ///< a count that is not a whole number
    too_large,          ///< beyond 64 bits, 32 bits (header counts) or an int (layer id)
    out_of_range,       ///< beyond the range of a double (pp_comm)
    truncated,          ///< the file ends before the declared rows
    blank_line,         ///< a blank line where a row was expected
    extra_rows,         ///< more rows than the row-count line declares
};

inline constexpr auto parse_errc_names = pipesched::detail::enum_table<parse_errc::extra_rows>({
    {parse_errc::none, "no error"},
    {parse_errc::empty_file, "empty file"},
    {parse_errc::empty_header, "empty header line"},
    {parse_errc::unsupported_policy, "unsupported policy"},
    {parse_errc::malformed_key, "malformed header key"},
    {parse_errc::missing_value, "header key without a value"},
    {parse_errc::duplicate_key, "duplicate header key"},
    {parse_errc::missing_key, "missing required header key"},
    {parse_errc::zero_value, "value must be at least 1"},
    {parse_errc::short_layer_list, "fewer checkpoint layers than announced"},
    {parse_errc::layer_out_of_range, "checkpoint layer out of range"},
    {parse_errc::missing_row_count, "missing row-count line"},
    {parse_errc::extra_token, "more than one token on the row-count line"},
    {parse_errc::missing_field, "missing field"},
    {parse_errc::extra_field, "unexpected field"},
    {parse_errc::unknown_collective, "unknown collective"},
    {parse_errc::not_a_number, "not a number"},
    {parse_errc::negative, "negative value"},
    {parse_errc::nan, "NaN"},
    {parse_errc::infinity, "infinity"},
    {parse_errc::fraction, "not a whole number"},
    {parse_errc::too_large, "value too large for its field"},
    {parse_errc::out_of_range, "value out of range for a double"},
    {parse_errc::truncated, "truncated file"},
    {parse_errc::blank_line, "blank line among the rows"},
    {parse_errc::extra_rows, "more rows than declared"},
});

[[nodiscard]] constexpr std::string_view describe(parse_errc e) noexcept { return pipesched::detail::name_in(parse_errc_names, e); }

struct parse_error {
    std::size_t line = 0;   ///< 1-based; 0 when not tied to a line
    std::size_t field = 0;  ///< 1-based field (row) or token (header) index; 0 when not known
    std::size_t column = 0; ///< 1-based byte column in the line; 0 when not known
    std::string message;
    /// Last, so that parse_error{line, field, column, message} still compiles.
    parse_errc code = parse_errc::none;

    /// The same as describe(*this); kept for code written before describe().
    [[nodiscard]] std::string to_string() const;
};

/// "line 5, field 3, column 20: ..." (the library's messages are all `describe`).
[[nodiscard]] inline std::string describe(const parse_error& e) {
    std::string s;
    if (e.line != 0)
        s += "line " + std::to_string(e.line);
    if (e.field != 0)
        s += (s.empty() ? "" : ", ") + std::string("field ") + std::to_string(e.field);
    if (e.column != 0)
        s += (s.empty() ? "" : ", ") + std::string("column ") + std::to_string(e.column);
    if (!s.empty())
        s += ": ";
    return s + e.message;
}
inline std::string parse_error::to_string() const { return describe(*this); }

struct parse_result {
    workload value{};
    std::optional<parse_error> error;
    explicit operator bool() const noexcept { return !error.has_value(); }
};

/// The number of fields in a row.
inline constexpr std::size_t row_fields = 12;

namespace detail {

using pipesched::detail::for_each_token;
using pipesched::detail::iequals;
using pipesched::detail::is_blank;
using pipesched::detail::is_blank_line;
using pipesched::detail::is_digit;
using pipesched::detail::line_reader;
using pipesched::detail::token;

enum class number_errc : std::uint8_t {
    ok,
    not_a_number,
    negative,
    nan,
    infinity,
    fraction,
    overflow,
    out_of_range,
};

[[nodiscard]] inline std::string describe(number_errc e, std::string_view text) {
    // Appended, not "'" + std::string(...): GCC 12 at -O3 reports a false -Wrestrict inside
    // operator+(const char*, std::string&&) (GCC bug 105329).
    std::string quoted{"'"};
    quoted.append(text.substr(0, 40)).append(text.size() > 40 ? "...'" : "'");
    switch (e) {
    case number_errc::ok:
        return "ok";
    case number_errc::not_a_number:
        return "not a number: " + quoted;
    case number_errc::negative:
        return "negative value " + quoted + " (must be >= 0)";
    case number_errc::nan:
        return "NaN is not a valid value: " + quoted;
    case number_errc::infinity:
        return "infinity is not a valid value: " + quoted;
    case number_errc::fraction:
        return "not a whole number: " + quoted;
    case number_errc::overflow:
        return "value " + quoted + " does not fit in 64 bits";
    case number_errc::out_of_range:
        return "value " + quoted + " is out of range for a double";
    }
    return "?";
}

/// The parse error of each number error.
inline constexpr auto number_parse_errc = pipesched::detail::enum_table<number_errc::out_of_range, parse_errc>({
    {number_errc::ok, parse_errc::none},
    {number_errc::not_a_number, parse_errc::not_a_number},
    {number_errc::negative, parse_errc::negative},
    {number_errc::nan, parse_errc::nan},
    {number_errc::infinity, parse_errc::infinity},
    {number_errc::fraction, parse_errc::fraction},
    {number_errc::overflow, parse_errc::too_large},
    {number_errc::out_of_range, parse_errc::out_of_range},
});

[[nodiscard]] constexpr parse_errc to_parse_errc(number_errc e) noexcept {
    return pipesched::detail::lookup(number_parse_errc, e, parse_errc::not_a_number);
}

/// Recognises nan / inf / infinity (any case, optional "nan(...)" payload) after the sign.
[[nodiscard]] inline number_errc special_value(std::string_view s) noexcept {
    if (s.size() >= 3 && iequals(s.substr(0, 3), "nan"))
        return number_errc::nan;
    if (iequals(s, "inf") || iequals(s, "infinity"))
        return number_errc::infinity;
    return number_errc::ok;
}

/// Removes a leading '+' or '-' (noting the '-'), then recognises nan / inf after it.
[[nodiscard]] inline number_errc strip_sign(std::string_view& s, bool& negative) noexcept {
    negative = !s.empty() && s[0] == '-';
    if (!s.empty() && (s[0] == '+' || s[0] == '-'))
        s.remove_prefix(1);
    return special_value(s);
}

/// Parses a non-negative whole number written as decimal or floating-point text, exactly (no
/// rounding through double): digits [. digits] [e|E [+|-] digits], optional leading '+'.
[[nodiscard]] inline number_errc parse_whole(std::string_view s, std::uint64_t& out) noexcept {
    out = 0;
    bool negative = false;
    if (const number_errc special = strip_sign(s, negative); special != number_errc::ok)
        return special;
    std::size_t i = 0;
    const std::size_t int_begin = i;
    while (i < s.size() && is_digit(s[i]))
        ++i;
    const std::string_view int_part = s.substr(int_begin, i - int_begin);
    std::string_view frac_part{};
    if (i < s.size() && s[i] == '.') {
        ++i;
        const std::size_t frac_begin = i;
        while (i < s.size() && is_digit(s[i]))
            ++i;
        frac_part = s.substr(frac_begin, i - frac_begin);
    }
    if (int_part.empty() && frac_part.empty())
        return number_errc::not_a_number;
    std::int64_t exponent = 0;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        bool exp_negative = false;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
            exp_negative = s[i] == '-';
            ++i;
        }
        if (i == s.size() || !is_digit(s[i]))
            return number_errc::not_a_number;
        constexpr std::int64_t exponent_cap = 1'000'000'000'000; // saturate, the value is decided
        while (i < s.size() && is_digit(s[i])) {
            if (exponent < exponent_cap)
                exponent = exponent * 10 + (s[i] - '0');
            ++i;
        }
        if (exp_negative)
            exponent = -exponent;
    }
    if (i != s.size())
        return number_errc::not_a_number;

    // digits = int_part followed by frac_part; value = digits * 10^(exponent - |frac_part|)
    const std::size_t total = int_part.size() + frac_part.size();
    const auto digit = [&](std::size_t k) noexcept {
        return k < int_part.size() ? int_part[k] : frac_part[k - int_part.size()];
    };
    std::size_t first = 0;
    while (first < total && digit(first) == '0')
        ++first;
    if (first == total) { // zero, whatever the exponent
        return negative ? number_errc::negative : number_errc::ok;
    }
    if (negative)
        return number_errc::negative;
    const std::size_t significant = total - first;
    const std::int64_t scale = exponent - static_cast<std::int64_t>(frac_part.size());
    std::size_t keep = significant; // digits that are left of the decimal point
    if (scale < 0) {
        const std::uint64_t drop = static_cast<std::uint64_t>(-scale);
        if (drop >= significant)
            return number_errc::fraction; // first digit is non-zero
        keep = significant - static_cast<std::size_t>(drop);
        for (std::size_t k = first + keep; k < total; ++k) {
            if (digit(k) != '0')
                return number_errc::fraction;
        }
    } else if (static_cast<std::uint64_t>(scale) + significant > 20) {
        return number_errc::overflow;
    }
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t value = 0;
    for (std::size_t k = first; k < first + keep; ++k) {
        const auto d = static_cast<std::uint64_t>(digit(k) - '0');
        if (value > (max - d) / 10)
            return number_errc::overflow;
        value = value * 10 + d;
    }
    for (std::int64_t k = 0; k < scale; ++k) {
        if (value > max / 10)
            return number_errc::overflow;
        value *= 10;
    }
    out = value;
    return number_errc::ok;
}

/// A non-negative, finite double (pp_comm).
[[nodiscard]] inline number_errc parse_double(std::string_view s, double& out) noexcept {
    out = 0;
    bool negative = false;
    if (const number_errc special = strip_sign(s, negative); special != number_errc::ok)
        return special;
    if (s.empty() || !(is_digit(s[0]) || s[0] == '.'))
        return number_errc::not_a_number;
    double value = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec == std::errc::invalid_argument || ptr != s.data() + s.size()) {
        return number_errc::not_a_number;
    }
    // out of range: too large or too small (underflow) for a double
    if (ec != std::errc{} || !std::isfinite(value))
        return number_errc::out_of_range;
    if (negative)
        return number_errc::negative;
    out = value;
    return number_errc::ok;
}

/// Exact match of a collective name (to_string's, then an optional group suffix); the plain
/// name's group depends on the column. A name with its suffix never reads as another name with
/// a suffix (ALLREDUCEALLTOALL is ALLREDUCE plus ALLTOALL, no suffix), so the order in which
/// the names are tried does not matter.
[[nodiscard]] inline bool parse_collective(std::string_view s, phase column, collective& kind,
                                           comm_group& group) noexcept {
    if (s == "NONE") {
        kind = collective::none;
        group = comm_group::none;
        return true;
    }
    for (const auto& [base, name] : collective_names) {
        if (base == collective::none || s.substr(0, name.size()) != name)
            continue;
        const std::string_view suffix = s.substr(name.size());
        if (suffix.empty()) {
            group = column == phase::weight_grad ? comm_group::dp : comm_group::tp;
        } else if (suffix == "_EP") {
            group = comm_group::ep;
        } else if (suffix == "_DP_EP") {
            group = comm_group::dp_ep;
        } else {
            continue;
        }
        kind = base;
        return true;
    }
    return false;
}

inline constexpr std::array<std::string_view, row_fields> field_names{
    "name",
    "layer id",
    "forward compute ns",
    "forward collective",
    "forward bytes",
    "input-grad compute ns",
    "input-grad collective",
    "input-grad bytes",
    "weight-grad compute ns",
    "weight-grad collective",
    "weight-grad bytes",
    "update ns",
};

[[nodiscard]] inline parse_error make_error(parse_errc code, std::size_t line, std::size_t field,
                                            std::size_t column, std::string message) {
    return parse_error{line, field, column, std::move(message), code};
}

/// Parses header line 1 into `h`; returns an error or nothing.
[[nodiscard]] inline std::optional<parse_error> parse_header(std::string_view line, header& h) {
    std::vector<token> tokens;
    for_each_token(line, [&](token t) { tokens.push_back(t); });
    if (tokens.empty()) {
        return make_error(
            parse_errc::empty_header, 1, 0, 0,
            "empty header line (expected a policy name followed by key: value pairs)");
    }
    h.policy = std::string(tokens[0].text);
    if (h.policy != "HYBRID_TRANSFORMER_FWD_IN_BCKWD" && h.policy != "HYBRID_TRANSFORMER") {
        return make_error(parse_errc::unsupported_policy, 1, 1, tokens[0].column,
                          "unsupported policy '" + h.policy.substr(0, 60) +
                              "' (expected HYBRID_TRANSFORMER_FWD_IN_BCKWD or HYBRID_TRANSFORMER)");
    }
    bool seen_pp = false;
    bool seen_ga = false;
    // (key, token index) for duplicate detection after the loop
    std::vector<std::pair<std::string_view, std::size_t>> keys;
    std::size_t i = 1;
    while (i < tokens.size()) {
        const token key_token = tokens[i];
        std::string_view key = key_token.text;
        const bool colon = key.back() == ':';
        if (colon)
            key.remove_suffix(1);
        const std::size_t key_field = i + 1;
        if (key.empty() || key.find(':') != std::string_view::npos) {
            return make_error(parse_errc::malformed_key, 1, key_field, key_token.column,
                              "malformed header key '" + std::string(key_token.text.substr(0, 60)) +
                                  "'");
        }
        const std::string key_name(key.substr(0, 60));
        if (i + 1 >= tokens.size() || tokens[i + 1].text.back() == ':') {
            return make_error(parse_errc::missing_value, 1, key_field, key_token.column,
                              "header key '" + key_name + "' has no value");
        }
        const token value = tokens[i + 1];
        keys.emplace_back(key, i);
        const auto number_error = [&](number_errc e) {
            return make_error(to_parse_errc(e), 1, key_field + 1, value.column,
                              "header key '" + key_name + "': " + describe(e, value.text));
        };
        const auto read_u32 = [&](std::uint32_t& out) -> std::optional<parse_error> {
            std::uint64_t v = 0;
            if (const number_errc e = parse_whole(value.text, v); e != number_errc::ok) {
                return number_error(e);
            }
            if (v > std::numeric_limits<std::uint32_t>::max()) {
                return make_error(parse_errc::too_large, 1, key_field + 1, value.column,
                                  "header key '" + key_name + "': value " +
                                      std::string(value.text.substr(0, 40)) +
                                      " does not fit in 32 bits");
            }
            out = static_cast<std::uint32_t>(v);
            return std::nullopt;
        };
        const auto read_opt = [&](std::optional<std::uint32_t>& out) -> std::optional<parse_error> {
            std::uint32_t v = 0;
            if (auto e = read_u32(v))
                return e;
            out = v;
            return std::nullopt;
        };
        std::optional<parse_error> err;
        i += 2;
        if (key == "model_parallel_NPU_group") {
            err = read_opt(h.tp);
        } else if (key == "ep") {
            err = read_opt(h.ep);
        } else if (key == "pp") {
            err = read_u32(h.pp);
            seen_pp = true;
        } else if (key == "vpp") {
            err = read_opt(h.vpp);
        } else if (key == "ga") {
            err = read_u32(h.ga);
            seen_ga = true;
        } else if (key == "all_gpus") {
            err = read_opt(h.all_gpus);
        } else if (key == "checkpoints" || key == "checkpoint_initiates") {
            std::uint32_t count = 0;
            err = read_u32(count);
            if (!err) {
                const std::size_t available = tokens.size() - i;
                if (count > available) {
                    return make_error(parse_errc::short_layer_list, 1, key_field + 1, value.column,
                                      "header key '" + key_name + "' announces " +
                                          std::to_string(count) + " layers but only " +
                                          std::to_string(available) + " tokens follow");
                }
                std::vector<std::uint32_t> layers;
                layers.reserve(count);
                for (std::uint32_t k = 0; k < count; ++k, ++i) {
                    std::uint64_t layer = 0;
                    const number_errc e = parse_whole(tokens[i].text, layer);
                    if (e != number_errc::ok || layer > std::numeric_limits<std::uint32_t>::max()) {
                        return make_error(
                            e != number_errc::ok ? to_parse_errc(e) : parse_errc::too_large, 1,
                            i + 1, tokens[i].column,
                            "header key '" + key_name + "': layer " + std::to_string(k + 1) +
                                " of " + std::to_string(count) + ": " +
                                (e != number_errc::ok ? describe(e, tokens[i].text)
                                                      : std::string("does not fit in 32 bits")));
                    }
                    layers.push_back(static_cast<std::uint32_t>(layer));
                }
                (key == "checkpoints" ? h.checkpoints : h.checkpoint_initiates) = std::move(layers);
            }
        } else if (key == "pp_comm") {
            double v = 0;
            if (const number_errc e = parse_double(value.text, v); e != number_errc::ok) {
                return number_error(e);
            }
            h.pp_comm = v;
            h.pp_comm_colon = colon;
        } else {
            h.extra.push_back(header_entry{std::string(key), colon, std::string(value.text)});
        }
        if (err)
            return err;
    }
    // Duplicate keys: sort, O(k log k) even for adversarial headers; report the earliest
    // second occurrence in file order.
    std::sort(keys.begin(), keys.end());
    std::size_t dup_token = 0;
    for (std::size_t k = 1; k < keys.size(); ++k) {
        if (keys[k].first == keys[k - 1].first && (k < 2 || keys[k - 2].first != keys[k].first)) {
            if (dup_token == 0 || keys[k].second < dup_token)
                dup_token = keys[k].second;
        }
    }
    if (dup_token != 0) {
        std::string_view k = tokens[dup_token].text;
        if (k.back() == ':')
            k.remove_suffix(1);
        return make_error(parse_errc::duplicate_key, 1, dup_token + 1, tokens[dup_token].column,
                          "duplicate header key '" + std::string(k.substr(0, 60)) + "'");
    }
    if (!seen_pp)
        return make_error(parse_errc::missing_key, 1, 0, 0, "header is missing required key 'pp:'");
    if (!seen_ga)
        return make_error(parse_errc::missing_key, 1, 0, 0, "header is missing required key 'ga:'");
    if (h.pp == 0)
        return make_error(parse_errc::zero_value, 1, 0, 0, "header key 'pp' must be at least 1");
    if (h.ga == 0)
        return make_error(parse_errc::zero_value, 1, 0, 0, "header key 'ga' must be at least 1");
    return std::nullopt;
}

/// Parses one row line into `r`.
[[nodiscard]] inline std::optional<parse_error> parse_row(std::string_view line,
                                                          std::size_t line_no, row& r) {
    std::array<token, row_fields + 1> fields{}; // one more to locate an extra field
    const std::size_t count = for_each_token(line, [&, n = std::size_t{0}](token t) mutable {
        if (n < fields.size())
            fields[n] = t;
        ++n;
    });
    if (count != row_fields) {
        std::string message =
            "expected " + std::to_string(row_fields) + " fields, found " + std::to_string(count);
        if (count > row_fields) {
            return make_error(parse_errc::extra_field, line_no, row_fields + 1,
                              fields[row_fields].column,
                              message + " (unexpected field 13 and later)");
        }
        std::size_t end = line.size();
        while (end > 0 && is_blank(line[end - 1]))
            --end;
        return make_error(parse_errc::missing_field, line_no, count + 1, end + 1,
                          message + " (field " + std::to_string(count + 1) + ", " +
                              std::string(field_names[count]) + ", is missing)");
    }
    const auto fail = [&](parse_errc code, std::size_t field, std::string what) {
        return make_error(code, line_no, field + 1, fields[field].column,
                          std::string(field_names[field]) + ": " + what);
    };
    r.name = std::string(fields[0].text);
    {
        const std::string_view t = fields[1].text;
        int v = 0;
        const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (ec == std::errc::result_out_of_range)
            return fail(parse_errc::too_large, 1,
                        "value '" + std::string(t.substr(0, 40)) + "' does not fit in an int");
        if (ec != std::errc{} || ptr != t.data() + t.size()) {
            return fail(parse_errc::not_a_number, 1,
                        "not an integer: '" + std::string(t.substr(0, 40)) + "'");
        }
        r.layer_id = v;
    }
    const auto number = [&](std::size_t field, std::uint64_t& out) -> std::optional<parse_error> {
        if (const number_errc e = parse_whole(fields[field].text, out); e != number_errc::ok) {
            return fail(to_parse_errc(e), field, describe(e, fields[field].text));
        }
        return std::nullopt;
    };
    const auto column_group = [&](std::size_t first, phase ph,
                                  phase_cost& c) -> std::optional<parse_error> {
        if (auto e = number(first, c.compute_ns))
            return e;
        const std::string_view name = fields[first + 1].text;
        if (!parse_collective(name, ph, c.kind, c.group)) {
            return fail(parse_errc::unknown_collective, first + 1,
                        "unknown collective '" + std::string(name.substr(0, 40)) +
                            "' (expected NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL or "
                            "ALLREDUCEALLTOALL, optionally followed by _EP or _DP_EP)");
        }
        return number(first + 2, c.bytes);
    };
    if (auto e = column_group(2, phase::forward, r.forward))
        return e;
    if (auto e = column_group(5, phase::input_grad, r.input_grad))
        return e;
    if (auto e = column_group(8, phase::weight_grad, r.weight_grad))
        return e;
    return number(11, r.update_ns);
}

} // namespace detail

/// Parses a whole workload file. Never throws on bad input (only std::bad_alloc), never reads
/// past `text`, allocates O(text.size()).
[[nodiscard]] inline parse_result parse_workload(std::string_view text) {
    parse_result result;
    const auto fail = [&result](parse_error e) {
        result.error = std::move(e);
        result.value = workload{};
        return std::move(result);
    };
    if (std::all_of(text.begin(), text.end(),
                    [](char c) { return c == '\n' || detail::is_blank(c); })) {
        return fail(detail::make_error(parse_errc::empty_file, 0, 0, 0, "empty file"));
    }
    detail::line_reader lines(text);
    std::string_view line;
    lines.next(line);
    if (auto e = detail::parse_header(line, result.value.header))
        return fail(std::move(*e));

    if (!lines.next(line) || detail::is_blank_line(line)) {
        return fail(detail::make_error(parse_errc::missing_row_count, 2, 0, 0,
                                       "missing row-count line after the header (line 2 must hold "
                                       "the number of rows)"));
    }
    std::uint64_t declared = 0;
    {
        std::vector<detail::token> tokens;
        detail::for_each_token(line, [&](detail::token t) {
            if (tokens.size() < 2)
                tokens.push_back(t);
        });
        if (tokens.size() != 1) {
            return fail(detail::make_error(parse_errc::extra_token, 2, 2, tokens[1].column,
                                           "the row-count line must hold a single number"));
        }
        if (const auto e = detail::parse_whole(tokens[0].text, declared);
            e != detail::number_errc::ok) {
            return fail(detail::make_error(detail::to_parse_errc(e), 2, 1, tokens[0].column,
                                           "row count: " + detail::describe(e, tokens[0].text)));
        }
        if (declared == 0) {
            return fail(detail::make_error(parse_errc::zero_value, 2, 1, tokens[0].column,
                                           "row count must be at least 1 (SimAI needs one row)"));
        }
    }
    // Reserve no more than the text can hold (a row has at least 23 bytes), so a huge declared
    // count cannot allocate unboundedly.
    const std::uint64_t plausible = text.size() / 23 + 1;
    result.value.rows.reserve(static_cast<std::size_t>(std::min(declared, plausible)));
    std::uint64_t found = 0;
    while (found < declared) {
        if (!lines.next(line)) {
            return fail(detail::make_error(parse_errc::truncated, lines.number() + 1, 0, 0,
                                           "file ends after " + std::to_string(found) + " of " +
                                               std::to_string(declared) +
                                               " declared rows (truncated file?)"));
        }
        if (detail::is_blank_line(line)) {
            return fail(detail::make_error(parse_errc::blank_line, lines.number(), 0, 0,
                                           "blank line where row " + std::to_string(found + 1) +
                                               " of " + std::to_string(declared) +
                                               " was expected"));
        }
        row r;
        if (auto e = detail::parse_row(line, lines.number(), r))
            return fail(std::move(*e));
        result.value.rows.push_back(std::move(r));
        ++found;
    }
    // Anything but blank lines after the declared rows is a count mismatch.
    std::size_t first_extra = 0;
    std::uint64_t extra = 0;
    while (lines.next(line)) {
        if (detail::is_blank_line(line))
            continue;
        if (extra == 0)
            first_extra = lines.number();
        ++extra;
    }
    if (extra != 0) {
        return fail(detail::make_error(parse_errc::extra_rows, first_extra, 0, 0,
                                       "header declares " + std::to_string(declared) +
                                           " rows, found " + std::to_string(declared + extra)));
    }
    // Checkpoint layers must name rows.
    const header& h = result.value.header;
    for (const auto* list : {&h.checkpoints, &h.checkpoint_initiates}) {
        if (!list->has_value())
            continue;
        for (const std::uint32_t layer : **list) {
            if (layer >= declared) {
                return fail(detail::make_error(
                    parse_errc::layer_out_of_range, 1, 0, 0,
                    std::string(list == &h.checkpoints ? "checkpoints" : "checkpoint_initiates") +
                        ": layer " + std::to_string(layer) + " is out of range (the file has " +
                        std::to_string(declared) + " rows)"));
            }
        }
    }
    return result;
}

} // namespace pipesched::simai
