// pipesched: a simulated schedule as text, one row per rank, for small schedules in a terminal.
//
//   rank 0 |F0-F1-......B0----...B1----|
//   rank 1 |...F0-B0----F1-B1----......|
//   time    0     2     4     6     8
//   F forward, B backward, . idle; F3-- = microbatch 3; 3 columns per unit
//
// (1F1B, p = 2, m = 2, costs F = 1, B = 2.) Time runs left to right from 0, columns_per_unit
// columns per cost unit; a column is idle ('.') unless an action covers it. An action covers
// the columns from round(start * c) to round(end * c) and is drawn as its letter and microbatch
// followed by the fill character ('-') to its last column, so that its length is visible and
// the next action starts at the next letter. Letters: F forward, B backward, I input gradient,
// W weight gradient; R recompute, L loss (with a microbatch); G grad_sync, N grad_norm,
// O optimizer_step, P param_gather (without), * any other op. Point-to-point ops are not
// drawn: they overlap compute. A label that does not fit its action loses the chunk marker,
// then the microbatch; an action narrower than one column is not visible. Should two actions
// of a rank overlap in time, the later-starting one is drawn over the other.
//
// Chunks (multi-chunk schedules): with chunk_marking::letter_case the odd chunks use lower-case
// letters (`f0`, `b0`: chunk 1 of a two-chunk schedule); with chunk_marking::suffix every label
// ends in `c<chunk>` (`F0c2`; give it 5 or more columns per unit). automatic picks none for one
// chunk, letter_case for two, suffix for more. Chunks are read off the records: the k-th
// lowest stage a rank runs is its chunk k (see io/detail/timeline_layout.hpp).
//
// Width: with max_width != 0, a timeline that would make lines longer than max_width is scaled
// down to fit, never wrapped, and a first line says so. The scaled timeline has a whole number
// of columns per unit (or one column per a whole number of units), so that equal durations
// keep equal widths. The optional axis labels times in cost units; the optional legend names
// the letters that occur. No records give an empty string.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "../analysis/simulate.hpp"
#include "detail/timeline_layout.hpp"
#include "../event.hpp"

namespace pipesched {

enum class chunk_marking : std::uint8_t {
    automatic,   ///< none for 1 chunk, letter_case for 2, suffix for more
    none,        ///< chunks are not shown
    letter_case, ///< odd chunks in lower case: F0 is chunk 0, f0 chunk 1
    suffix,      ///< `F0c1`: every label names its chunk
};

struct terminal_options {
    double columns_per_unit = 3.0; ///< columns per cost unit; not positive or finite: 3
    std::size_t max_width = 120;   ///< longest line (0: no limit); wider timelines are scaled down
    bool axis = true;              ///< a line of time labels under the rows
    bool legend = true;            ///< a last line naming the letters
    chunk_marking chunks = chunk_marking::automatic;
    char idle = '.';
    char fill = '-';
};

/// The letter of an op in the terminal timeline; '\0' for p2p ops, which are not drawn, and
/// '*' for any op without a letter of its own.
[[nodiscard]] constexpr char timeline_letter(op o) noexcept {
    if (is_p2p(o)) return '\0';
    const char letter = detail::text_of(o).letter;
    return letter != '\0' ? letter : '*'; // '*': an op without a letter of its own
}

namespace detail {

/// Whether the op's label carries its microbatch (per-microbatch ops) or only its letter.
[[nodiscard]] constexpr bool timeline_has_microbatch(op o) noexcept {
    return is_compute(o) || o == op::recompute || o == op::loss;
}

[[nodiscard]] constexpr std::string_view timeline_meaning(char letter) noexcept {
    switch (letter) {
    case 'F': return "forward";
    case 'B': return "backward";
    case 'I': return "input grad";
    case 'W': return "weight grad";
    case 'R': return "recompute";
    case 'L': return "loss";
    case 'G': return "grad sync";
    case 'N': return "grad norm";
    case 'O': return "optimizer step";
    case 'P': return "param gather";
    case '*': return "other";
    default: return "";
    }
}

/// Three significant digits: 3, 1.17, 0.0833.
[[nodiscard]] inline std::string short_number(double x) {
    std::array<char, 64> buf{};
    const auto r =
        std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::general, 3);
    if (r.ec != std::errc{}) return "?";
    return std::string(buf.data(), r.ptr);
}

/// "3 columns per unit", "1 column per unit", "1 column per 4 units", "2.5 columns per unit".
[[nodiscard]] inline std::string scale_text(double columns_per_unit) {
    if (columns_per_unit < 1.0) {
        const double units = 1.0 / columns_per_unit;
        if (units == std::floor(units) && units < 1e15) {
            return "1 column per " + std::to_string(static_cast<std::uint64_t>(units)) + " units";
        }
    }
    return short_number(columns_per_unit) + (columns_per_unit == 1.0 ? " column" : " columns") +
           " per unit";
}

/// Widest timeline when max_width is 0 ("no limit"): wider ones are scaled down to it.
inline constexpr std::size_t max_timeline_columns = std::size_t{1} << 20;

/// The column of time t; 0 for negative or NaN times, and at most 2^50 (a float-to-integer
/// conversion out of range would be undefined); callers clamp to their width.
[[nodiscard]] inline std::size_t timeline_column(double t, double columns_per_unit) noexcept {
    const double c = std::round(t * columns_per_unit);
    if (!(c > 0.0)) return 0;
    constexpr double largest = static_cast<double>(std::uint64_t{1} << 50);
    return static_cast<std::size_t>(c < largest ? c : largest);
}

class terminal_renderer {
public:
    terminal_renderer(std::span<const timed_action> records, timeline_layout layout, const terminal_options& o)
        : records_{records}, options_{o}, layout_{std::move(layout)} {
        scale_ = std::isfinite(o.columns_per_unit) && o.columns_per_unit > 0.0
                     ? o.columns_per_unit
                     : terminal_options{}.columns_per_unit;
        marking_ = o.chunks;
        if (marking_ == chunk_marking::automatic) {
            marking_ = layout_.chunks <= 1   ? chunk_marking::none
                       : layout_.chunks == 2 ? chunk_marking::letter_case
                                             : chunk_marking::suffix;
        }
        label_width_ = std::max<std::size_t>(rank_label(layout_.ranks - 1).size(), 4);
    }

    [[nodiscard]] std::string run() {
        std::string out;
        if (!std::isfinite(layout_.makespan)) return "(timeline not drawn: a time is not finite)\n";
        const std::size_t frame = label_width_ + 3; // " |" before the cells, "|" after
        columns_ = timeline_column(layout_.makespan, scale_);
        const std::size_t width = options_.max_width != 0 ? options_.max_width : frame + max_timeline_columns;
        if (frame + columns_ > width) {
            const std::size_t available = width > frame ? width - frame : std::size_t{1};
            // A whole number of columns per unit, or of units per column, so that equal
            // durations keep equal widths.
            const double fitted = static_cast<double>(available) / layout_.makespan;
            const double scaled =
                fitted >= 1.0 ? std::floor(fitted) : 1.0 / std::ceil(1.0 / fitted);
            out += "(scaled to fit " + std::to_string(width) + " columns: " +
                   scale_text(scaled) + " instead of " + scale_text(scale_) + ")\n";
            scale_ = scaled;
            columns_ = std::min(timeline_column(layout_.makespan, scale_), available);
        }
        std::vector<std::string> rows(layout_.ranks, std::string(columns_, options_.idle));
        std::array<bool, 128> present{};
        for (const std::size_t i : rank_time_order(records_)) {
            const timed_action& t = records_[i];
            const char letter = timeline_letter(t.what.kind);
            if (letter == '\0') continue;
            present[static_cast<unsigned char>(letter)] = true;
            draw(rows[t.rank], t, letter);
        }
        for (std::uint32_t r = 0; r < layout_.ranks; ++r) {
            std::string label = rank_label(r);
            label.resize(label_width_, ' ');
            out += label + " |" + rows[r] + "|\n";
        }
        if (options_.axis) out += axis();
        if (options_.legend) out += legend(present);
        return out;
    }

private:
    [[nodiscard]] static std::string rank_label(std::uint32_t r) {
        return "rank " + std::to_string(r);
    }

    void draw(std::string& row, const timed_action& t, char letter) const {
        const std::size_t c0 = std::min(timeline_column(t.start, scale_), columns_);
        const std::size_t c1 = std::min(timeline_column(t.end, scale_), columns_);
        if (c1 <= c0) return;
        const std::uint32_t chunk = layout_.chunk_of(t.what.stage);
        if (marking_ == chunk_marking::letter_case && chunk % 2 == 1 && letter >= 'A' &&
            letter <= 'Z') {
            letter = static_cast<char>(letter - 'A' + 'a');
        }
        const std::string base = std::string(1, letter);
        const std::string with_mb = timeline_has_microbatch(t.what.kind)
                                        ? base + std::to_string(t.what.microbatch)
                                        : base;
        const std::string full =
            marking_ == chunk_marking::suffix ? with_mb + "c" + std::to_string(chunk) : with_mb;
        const std::size_t width = c1 - c0;
        const std::string& label = full.size() <= width      ? full
                                   : with_mb.size() <= width ? with_mb
                                                             : base;
        for (std::size_t c = c0; c < c1; ++c) {
            row[c] = c - c0 < label.size() ? label[c - c0] : options_.fill;
        }
    }

    [[nodiscard]] std::string axis() const {
        std::string line = "time";
        line.resize(label_width_ + 2, ' ');
        const double last = std::min(layout_.makespan, 1e18);
        const auto widest = std::to_string(static_cast<std::uint64_t>(last));
        const double spacing = static_cast<double>(std::max<std::size_t>(widest.size() + 2, 6));
        // Ticks at 1, 2, 5, 10, 20, 50, ... units: the first far enough apart for the labels.
        std::uint64_t tick = 0; // none fits (a tiny scale): only the 0 is labelled
        for (std::uint64_t decade = 1; decade < (std::uint64_t{1} << 60); decade *= 10) {
            const std::array<std::uint64_t, 3> steps{decade, 2 * decade, 5 * decade};
            const auto fits = [&](std::uint64_t s) {
                return static_cast<double>(s) * scale_ >= spacing;
            };
            const auto found = std::find_if(steps.begin(), steps.end(), fits);
            if (found != steps.end()) {
                tick = *found;
                break;
            }
        }
        std::string cells(columns_, ' ');
        for (std::uint64_t t = 0; static_cast<double>(t) <= layout_.makespan; t += tick) {
            const std::string text = std::to_string(t);
            const std::size_t c = timeline_column(static_cast<double>(t), scale_);
            if (c + text.size() > columns_) break;
            cells.replace(c, text.size(), text);
            if (tick == 0 || t > ~std::uint64_t{0} - tick) break;
        }
        line += cells;
        line.erase(line.find_last_not_of(' ') + 1);
        return line + "\n";
    }

    [[nodiscard]] std::string legend(const std::array<bool, 128>& present) const {
        constexpr auto npos = std::string_view::npos;
        std::string line;
        char example = '\0';
        for (const char letter : std::string_view{"FBIWRLGNOP*"}) {
            if (!present[static_cast<unsigned char>(letter)]) continue;
            const bool per_microbatch = std::string_view{"FBIWRL"}.find(letter) != npos;
            if (example == '\0' && per_microbatch) example = letter;
            line += std::string(1, letter) + " " + std::string{timeline_meaning(letter)} + ", ";
        }
        line += std::string(1, options_.idle) + " idle";
        if (example != '\0') {
            line += "; " + std::string(1, example) + "3" + std::string(2, options_.fill) +
                    " = microbatch 3";
        }
        if (marking_ == chunk_marking::letter_case) {
            line += layout_.chunks > 2 ? "; lower case = odd chunk" : "; lower case = chunk 1";
        }
        if (marking_ == chunk_marking::suffix) line += "; c2 = chunk 2";
        line += "; " + scale_text(scale_) + "\n";
        return line;
    }

    std::span<const timed_action> records_;
    const terminal_options& options_;
    timeline_layout layout_;
    double scale_ = 3.0;
    chunk_marking marking_ = chunk_marking::none;
    std::size_t label_width_ = 0;
    std::size_t columns_ = 0;
};

} // namespace detail

/// The records of a simulation as text (see the top of this file); "" when there are none.
[[nodiscard]] inline std::string render_terminal_timeline(std::span<const timed_action> records,
                                                          const terminal_options& options = {}) {
    if (records.empty()) return {};
    return detail::terminal_renderer{records, detail::layout_of(records), options}.run();
}

/// The same with where each stage runs given: a simulation's `stages` (simulation::stages).
[[nodiscard]] inline std::string render_terminal_timeline(std::span<const timed_action> records,
                                                          const terminal_options& options,
                                                          const stage_map& stages) {
    if (records.empty()) return {};
    return detail::terminal_renderer{records, detail::layout_of(records, stages), options}.run();
}

inline void write_terminal_timeline(std::ostream& os, std::span<const timed_action> records,
                                    const terminal_options& options = {}) {
    os << render_terminal_timeline(records, options);
}

} // namespace pipesched
