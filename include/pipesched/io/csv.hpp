// pipesched: PyTorch's schedule CSV, as torch.distributed.pipelining writes it with `_dump_csv`
// and reads it with `_load_csv`.
//
// One line per rank, one cell per time slot, in execution order. A cell is empty (an idle
// slot), one action (`0F1`, `2SEND_B3`, `3UNSHARD`; see ../action.hpp) or an overlapped pair
// `(0F7;7B3)OVERLAP_F_B`. read_csv accepts LF and CRLF line ends, a missing final line end,
// trailing empty cells and trailing blank lines. Spaces around a cell are ignored (PyTorch
// strips them too); everything else that is not part of an action is an error reported with
// its line and 1-based byte column: spaces inside a cell, quotes, tabs, NUL and other control
// bytes, a CR not followed by LF, non-ASCII bytes, and a file with no rank at all.
//
// A blank line between ranks is a rank without actions, as in PyTorch; blank lines after the
// last rank are ignored. Memory and time are linear in the size of the input (16 bytes per
// action, each row reserved once); there is no other limit on the number of lines or cells.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../event.hpp"
#include "../policy.hpp"
#include "../shape.hpp"
#include "../sink.hpp"
#include "../action.hpp"
#include "../timing_model.hpp"
#include "../detail/enum_table.hpp"
#include "../detail/text.hpp"

namespace pipesched {

/// A schedule as a CSV holds it: every rank's actions in execution order, idle slots dropped.
/// An overlapped pair is two consecutive actions, the first with overlapped_with_next set.
struct schedule_table {
    std::vector<std::vector<action>> ranks;
    friend bool operator==(const schedule_table&, const schedule_table&) = default;
};

enum class csv_errc : std::uint8_t {
    none,
    no_ranks,          ///< the file is empty or holds only blank lines
    bad_action,        ///< a cell is not an action; see csv_error::action_error
    quote,             ///< '"': actions never need quoting
    nul,               ///< a NUL byte
    tab,               ///< a tab: cells are separated by ',' only
    lone_cr,           ///< a CR not followed by LF
    control_character, ///< another byte below 0x20, or 0x7F
    non_ascii,         ///< a byte of 0x80 or above
    space_inside,      ///< a space inside a cell (spaces around it are allowed)
};

inline constexpr auto csv_errc_names = detail::enum_table<csv_errc::space_inside>({
    {csv_errc::none, "no error"},
    {csv_errc::no_ranks, "no ranks: the file is empty or has only blank lines"},
    {csv_errc::bad_action, "malformed action"},
    {csv_errc::quote, "quotes are not supported (actions never need quoting)"},
    {csv_errc::nul, "NUL byte"},
    {csv_errc::tab, "tab character (cells are separated by ',' only)"},
    {csv_errc::lone_cr, "carriage return not followed by a line feed"},
    {csv_errc::control_character, "control character"},
    {csv_errc::non_ascii, "non-ASCII byte"},
    {csv_errc::space_inside, "space inside a cell (spaces are allowed only around it)"},
});

[[nodiscard]] constexpr std::string_view describe(csv_errc e) noexcept { return detail::name_in(csv_errc_names, e); }

/// Where and why read_csv stopped. `column` is the 1-based byte offset in the line of the first
/// offending character; for something missing at the end of a cell (`1F`) it is the column of
/// the ',' or line end that follows the cell.
struct csv_error {
    csv_errc code = csv_errc::none;
    action_errc action_error = action_errc::none; ///< bad_action only
    std::size_t line = 0;                         ///< 1-based
    std::size_t column = 0;                       ///< 1-based
    std::size_t cell = 0;                         ///< 1-based cell of the line; 0 for no_ranks
    std::string message; ///< describe(action_error) for bad_action, else describe(code)
};

/// `line 3, column 7 (cell 2): unknown action name (...)`.
[[nodiscard]] inline std::string describe(const csv_error& e) {
    std::string s = "line " + std::to_string(e.line) + ", column " + std::to_string(e.column);
    if (e.cell != 0) s += " (cell " + std::to_string(e.cell) + ")";
    return s + ": " + e.message;
}

/// The table, or an error (then the table is empty).
struct csv_result {
    schedule_table table;
    csv_error error;
    explicit operator bool() const noexcept { return error.code == csv_errc::none; }
};

namespace detail {

[[nodiscard]] constexpr csv_errc forbidden_in_cell(char c) noexcept {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"') return csv_errc::quote;
    if (byte == 0) return csv_errc::nul;
    if (c == '\t') return csv_errc::tab;
    if (c == '\r') return csv_errc::lone_cr;
    if (c == ' ') return csv_errc::space_inside;
    if (byte < 0x20 || byte == 0x7F) return csv_errc::control_character;
    if (byte >= 0x80) return csv_errc::non_ascii;
    return csv_errc::none;
}

/// Parses the cells of one line (line end removed) into `out`; false with `err` set on error.
inline bool read_csv_row(std::string_view line, std::size_t line_number, std::vector<action>& out,
                         csv_error& err) {
    std::size_t start = 0;
    for (std::size_t cell = 1;; ++cell) {
        const std::size_t comma = line.find(',', start);
        std::size_t first = start;
        std::size_t last = comma == std::string_view::npos ? line.size() : comma;
        while (first < last && line[first] == ' ') ++first;
        while (last > first && line[last - 1] == ' ') --last;

        std::size_t bad_at = last;
        csv_errc bad = csv_errc::none;
        for (std::size_t i = first; i < last; ++i) {
            bad = forbidden_in_cell(line[i]);
            if (bad != csv_errc::none) {
                bad_at = i;
                break;
            }
        }
        const cell_parse_result parsed = parse_cell(line.substr(first, last - first));
        if (!parsed || bad != csv_errc::none) {
            err.line = line_number;
            err.cell = cell;
            // Report whichever problem comes first; at the same character the byte itself is
            // the more useful explanation.
            if (bad != csv_errc::none && (parsed || first + parsed.position >= bad_at)) {
                err.code = bad;
                err.column = bad_at + 1;
                err.message = std::string{describe(bad)};
            } else {
                err.code = csv_errc::bad_action;
                err.action_error = parsed.error;
                err.column = first + parsed.position + 1;
                err.message = std::string{describe(parsed.error)};
            }
            return false;
        }
        for (std::size_t k = 0; k < parsed.count; ++k) out.push_back(parsed.actions[k]);
        if (comma == std::string_view::npos) return true;
        start = comma + 1;
    }
}

} // namespace detail

/// Reads PyTorch's schedule CSV. Never throws except std::bad_alloc.
[[nodiscard]] inline csv_result read_csv(std::string_view text) {
    csv_result result;
    auto& rows = result.table.ranks;
    std::size_t blank_lines = 0; // not yet known to be followed by a rank
    detail::line_reader lines(text);
    std::string_view line;
    while (lines.next(line)) {
        const std::size_t line_number = lines.number();
        if (lines.ended_with_newline() && !line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        if (line.empty()) {
            ++blank_lines;
            continue;
        }
        rows.resize(rows.size() + blank_lines); // ranks without actions
        blank_lines = 0;
        rows.emplace_back();
        // Room for every action the line can hold, one per cell and two per pair, so that a
        // row of millions of actions is not grown by doubling (up to three times its size
        // while it is copied).
        rows.back().reserve(1 + static_cast<std::size_t>(std::count_if(
                                    line.begin(), line.end(), [](char c) { return c == ',' || c == ';'; })));
        if (!detail::read_csv_row(line, line_number, rows.back(), result.error)) {
            rows.clear();
            rows.shrink_to_fit();
            return result;
        }
    }
    if (rows.empty()) {
        result.error.code = csv_errc::no_ranks;
        result.error.line = 1;
        result.error.column = 1;
        result.error.message = std::string{describe(csv_errc::no_ranks)};
    }
    return result;
}

/// The CSV of a policy's compute actions, stages numbered globally by its placement: one line
/// per rank ending in '\n', actions separated by ',', no idle cells, an overlapped pair
/// (op::overlap_f_b and the two actions after it) as one `(a;b)OVERLAP_F_B` cell. This is
/// exactly what `pipesched order` prints. Throws std::invalid_argument if the policy rejects its
/// shape.
template <schedule_policy P>
[[nodiscard]] std::string write_csv(const P& pol) {
    if (const shape_check c = pol.check(); !c) {
        throw std::invalid_argument("pipesched::write_csv: " + std::string{c.message});
    }
    struct line_sink {
        const P* pol;
        std::string* out;
        bool first = true;
        cell_folder cells{}; // overlapped pairs (DualPipeV) become one cell
        void push(const event& e) {
            if (!cells.push(to_action(*pol, e))) return;
            if (!first) *out += ',';
            first = false;
            *out += cells.text();
        }
    };
    std::string out;
    out.reserve(event_count(pol) * 4);
    const shape s = pol.shape;
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        line_sink sink{&pol, &out};
        emit(pol, r, sink);
        out += '\n';
    }
    return out;
}

namespace detail {
[[noreturn]] inline void unwritable(std::size_t rank, std::size_t index, std::string_view why) {
    throw std::invalid_argument("pipesched::write_csv: rank " + std::to_string(rank) + ", action " +
                                std::to_string(index) + ": " + std::string{why});
}

inline void check_writable(const action& a, std::size_t rank, std::size_t index) {
    if (action_name(a.kind).empty()) {
        unwritable(rank, index, std::string{to_string(a.kind)} + " has no PyTorch action name");
    }
    if (has_microbatch(a.kind) && a.microbatch >= max_microbatches) {
        unwritable(rank, index, "microbatch above 65535");
    }
    if (!has_microbatch(a.kind) && a.microbatch != 0) {
        unwritable(rank, index, std::string{action_name(a.kind)} + " takes no microbatch");
    }
}
} // namespace detail

/// The CSV of a table: one line per rank ending in '\n', overlapped pairs as
/// `(a;b)OVERLAP_F_B`, a rank without actions as "," (so that a trailing one is not taken for a
/// blank line). read_csv gives the same table back. Throws std::invalid_argument when the table
/// holds what the format cannot express: no rank at all, an op without a PyTorch name, a
/// microbatch above 65535 or on a stage-only op, or an overlap flag that does not start a pair
/// of two compute actions.
[[nodiscard]] inline std::string write_csv(const schedule_table& table) {
    if (table.ranks.empty()) {
        throw std::invalid_argument("pipesched::write_csv: a schedule needs at least one rank");
    }
    std::string out;
    for (std::size_t r = 0; r < table.ranks.size(); ++r) {
        const std::vector<action>& row = table.ranks[r];
        if (row.empty()) out += ',';
        for (std::size_t i = 0; i < row.size(); ++i) {
            if (i != 0) out += ',';
            const action& a = row[i];
            detail::check_writable(a, r, i);
            if (!a.overlapped_with_next) {
                out += format_action(a).view();
                continue;
            }
            if (i + 1 == row.size()) detail::unwritable(r, i, "overlap flag on the last action");
            const action& b = row[i + 1];
            detail::check_writable(b, r, i + 1);
            if (!is_compute(a.kind) || !is_compute(b.kind)) {
                detail::unwritable(r, i, "only F, B, I and W actions can be overlapped");
            }
            if (b.overlapped_with_next) {
                detail::unwritable(r, i + 1, "overlap flag on the second action of a pair");
            }
            out += format_overlap(a, b).view();
            ++i;
        }
        out += '\n';
    }
    return out;
}

/// The compute actions (F, B, I, W) of every rank with their overlapped pairs: the input
/// pipesched::validate(per_rank, microbatches) and simulate expect, which check each pair (an F,
/// then a B or I of another unit). Communication actions are dropped, except inside a pair:
/// there they are kept, flag included, so that validate refuses the pair instead of the F
/// silently pairing with a later action.
[[nodiscard]] inline std::vector<std::vector<action>> compute_only(const schedule_table& table) {
    std::vector<std::vector<action>> out(table.ranks.size());
    for (std::size_t r = 0; r < table.ranks.size(); ++r) {
        const std::vector<action>& row = table.ranks[r];
        for (std::size_t i = 0; i < row.size(); ++i) {
            const bool in_pair = row[i].overlapped_with_next || (i > 0 && row[i - 1].overlapped_with_next);
            if (is_compute(row[i].kind) || in_pair) out[r].push_back(row[i]);
        }
    }
    return out;
}

/// compute_only without a copy: the table's rows filtered in place (for a file of millions of
/// actions the copy doubled what reading it holds).
[[nodiscard]] inline std::vector<std::vector<action>> compute_only(schedule_table&& table) {
    for (std::vector<action>& row : table.ranks) {
        std::size_t kept = 0;
        bool previous_opens_pair = false;
        for (std::size_t i = 0; i < row.size(); ++i) {
            const action a = row[i];
            if (is_compute(a.kind) || a.overlapped_with_next || previous_opens_pair) row[kept++] = a;
            previous_opens_pair = a.overlapped_with_next;
        }
        row.resize(kept);
    }
    return std::move(table.ranks);
}

/// Stage placement as infer_placement sees it in a file.
enum class inferred_placement : std::uint8_t {
    loop,    ///< stage s runs on rank s % ranks (placement::loop)
    v_shape, ///< stage s runs on locate_stage(placement::v_shape, ranks, s).rank
    custom,  ///< neither, or a stage runs on no rank or on two
    /// ranks as v_shape, and the stages are two pipelines (DualPipe, placement::bidirectional):
    /// the first p stages run only microbatches below m/2 and the last p only the others
    /// (m even, one past the largest microbatch)
    bidirectional,
};

inline constexpr auto inferred_placement_names = detail::enum_table<inferred_placement::bidirectional>(
    {{inferred_placement::loop, "loop"}, {inferred_placement::v_shape, "v_shape"},
     {inferred_placement::custom, "custom"}, {inferred_placement::bidirectional, "bidirectional"}});

[[nodiscard]] constexpr std::string_view to_string(inferred_placement p) noexcept { return detail::name_in(inferred_placement_names, p); }

struct placement_guess {
    inferred_placement layout = inferred_placement::custom;
    std::size_t ranks = 0;          ///< lines of the file (ranks without actions included)
    std::uint64_t stages = 0;       ///< one past the largest stage of a compute action
    /// One past the largest microbatch of a compute action (saturating at 2^32-1): the count
    /// validate(compute_only(table)) checks, so that communication naming a microbatch no
    /// compute action has does not add microbatches nothing computes.
    std::uint32_t microbatches = 0;
    std::uint32_t chunks = 0;       ///< stages / ranks, unless custom (then 0)
    static constexpr std::size_t no_owner = static_cast<std::size_t>(-1);
    static constexpr std::size_t two_owners = static_cast<std::size_t>(-2);
    /// The rank whose compute actions run each stage (no_owner, two_owners). Empty when there
    /// are more stages than compute actions, which means some stage has none.
    std::vector<std::size_t> owners;
};

namespace detail {
/// Whether the compute actions of a file placed as a V of 2p stages split into DualPipe's two
/// pipelines: every unit one that timing_model.hpp's runs_unit() gives to placement::
/// bidirectional's stages with m microbatches.
[[nodiscard]] inline bool two_pipelines(const schedule_table& table, std::uint32_t ranks, std::uint64_t stages,
                                        std::uint32_t m) {
    if (stages != 2 * std::uint64_t{ranks} || m % 2 != 0) return false;
    const stage_line line = stage_line::of(placement::bidirectional, static_cast<std::uint32_t>(stages));
    for (const auto& row : table.ranks) {
        for (const action& a : row) {
            if (is_compute(a.kind) && !runs_unit(line, a.stage, a.microbatch, m)) return false;
        }
    }
    return true;
}
} // namespace detail

/// The placement a file was inferred to have, as the analyses take it.
[[nodiscard]] constexpr placement placement_of(inferred_placement p) noexcept {
    return p == inferred_placement::bidirectional ? placement::bidirectional
           : p == inferred_placement::v_shape     ? placement::v_shape
                                                  : placement::loop;
}

/// Infers stage placement the way PyTorch does when it loads a CSV: a stage belongs to the
/// rank whose line runs its compute actions. Reports loop when both loop and v_shape fit
/// (one rank, or one chunk per rank).
[[nodiscard]] inline placement_guess infer_placement(const schedule_table& table) {
    placement_guess g{};
    g.ranks = table.ranks.size();
    std::size_t compute_actions = 0;
    for (const auto& row : table.ranks) {
        for (const action& a : row) {
            if (!is_compute(a.kind)) continue;
            if (a.microbatch >= g.microbatches) g.microbatches = a.microbatch == 0xFFFFFFFFu ? a.microbatch : a.microbatch + 1;
            ++compute_actions;
            if (std::uint64_t{a.stage} + 1 > g.stages) g.stages = std::uint64_t{a.stage} + 1;
        }
    }
    if (compute_actions == 0 || g.stages > compute_actions) return g;
    g.owners.assign(static_cast<std::size_t>(g.stages), placement_guess::no_owner);
    for (std::size_t r = 0; r < table.ranks.size(); ++r) {
        for (const action& a : table.ranks[r]) {
            if (!is_compute(a.kind)) continue;
            std::size_t& owner = g.owners[a.stage];
            if (owner == placement_guess::no_owner) owner = r;
            if (owner != r) owner = placement_guess::two_owners;
        }
    }
    if (g.ranks > max_ranks || g.stages % g.ranks != 0) return g;
    const auto p = static_cast<std::uint32_t>(g.ranks);
    const auto fits = [&](placement pl) {
        for (std::uint32_t s = 0; s < g.stages; ++s) {
            if (g.owners[s] != locate_stage(pl, p, s).rank) return false;
        }
        return true;
    };
    if (fits(placement::loop)) {
        g.layout = inferred_placement::loop;
    } else if (fits(placement::v_shape)) {
        g.layout = detail::two_pipelines(table, p, g.stages, g.microbatches) ? inferred_placement::bidirectional
                                                                      : inferred_placement::v_shape;
    } else {
        return g;
    }
    g.chunks = static_cast<std::uint32_t>(g.stages / g.ranks);
    return g;
}

} // namespace pipesched
