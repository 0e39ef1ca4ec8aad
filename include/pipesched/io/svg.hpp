// pipesched: a simulated schedule as an SVG picture, the pipeline diagram of the papers (GPipe,
// PipeDream, Zero Bubble, DualPipe) and of PyTorch's and Megatron's documentation: one row per
// rank, time from left to right, one colored box per action with its microbatch number.
//
//   pipesched::chrome_trace_sink records;                  // any sink that keeps the records
//   const pipesched::simulation sim = pipesched::simulate(policy, costs, records);
//   std::string svg = pipesched::to_svg(records.records(), sim, {.title = "1F1B p=4 m=8"});
//   std::string same = pipesched::to_svg(policy, costs);  // simulates and draws in one call
//
// What the picture holds, top to bottom:
//   - the title and a line with the makespan and the bubble fraction (the simulation's);
//   - per rank a row: a light grey band (idle time) with the rank's boxes on it. Every box is
//     a <rect class="ps-X" ...> with its fill, and a <title> (the action, its rank and times)
//     that a browser shows on hover; the microbatch number is written in a box wide enough
//     for it. The ops and their classes: ps-F forward, ps-B backward, ps-I input gradient,
//     ps-W weight gradient, ps-FB an overlapped F&B pair (the F in the row's upper half, the B
//     or I in its lower half: one box per action), ps-R recompute, ps-L loss, ps-O optimizer
//     step, ps-N grad_norm; a stage's odd chunk (chunk 1 of a V) is drawn lighter
//     (fill-opacity 0.6). An iteration's communication (p2p sends in flight and receives
//     waited on, ps-P2P; grad_sync, ps-G; param_gather, ps-PG; reshard, ps-X) runs beside the
//     compute stream and gets a thinner lane under each rank's row;
//   - a time axis with ticks at 1, 2 or 5 times a power of ten, in the cost model's unit
//     (svg_options::unit: with "s", the axis is in ms or us when the makespan is below 1 s
//     or 1 ms);
//   - a legend of the ops that take time and the idle band, and a line saying what the numbers
//     mean (and, when boxes were merged, how many).
// Background and legend rectangles have the classes ps-idle, ps-lane and ps-key, so that
// exactly one <rect> of any other class stands for each timed action.
//
// Scale: the time scale gives the shortest compute action about 22 pixels (enough for a
// two-digit microbatch), and is reduced so that the picture is at most max_width pixels wide;
// rows are 22 pixels high for up to 27 ranks and thinner beyond (at least 2). When some
// action would be narrower than one pixel, or there are more than max_boxes actions, the
// picture is drawn thinned, as the terminal timeline scales (io/terminal_timeline.hpp): each
// rank's lane is cut into cells of at least one pixel (wider when needed to keep the boxes
// under max_boxes); a cell shows each op's share of its time as a share of the lane's height
// (stacked in the legend's order, rounded to eighths), and the same share of the same op in
// consecutive cells is one box, whose title counts the actions it stands for. So the output
// is bounded: at most max_boxes boxes plus one per op and lane, and no microbatch labels,
// whatever the number of actions.
//
// Deterministic: the same records give the same bytes (coordinates with at most two decimals,
// times with at most four significant digits, written with std::to_chars). Text (the title,
// the unit) is XML-escaped, and bytes that are not UTF-8 or not XML characters become '?',
// so any title gives a well-formed document.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../analysis/simulate.hpp"
#include "../analysis/simulate_iteration.hpp"
#include "../action.hpp"
#include "../event.hpp"
#include "../policy.hpp"
#include "chrome_trace.hpp"
#include "detail/timeline_layout.hpp"
#include "terminal_timeline.hpp"

namespace pipesched {

struct svg_options {
    std::string title{};             ///< first line; empty: "pipeline schedule"
    std::string unit{};              ///< the cost model's time unit ("s"); empty: cost units
    double pixels_per_unit = 0.0;    ///< 0 (or not positive and finite): automatic
    std::uint32_t max_width = 2400;  ///< widest picture in pixels (at least 400 is used)
    double row_height = 0.0;         ///< 0 (or not positive and finite): automatic
    std::size_t max_boxes = 50000;   ///< more actions than this are drawn thinned
    bool legend = true;
};

namespace detail {

/// What a box is drawn as: its class, its color and the legend's name.
enum class svg_kind : std::uint8_t {
    forward, backward, input, weight, pair, recompute, loss, optimizer, grad_norm,
    p2p, grad_sync, param_gather, other,
};
inline constexpr std::size_t svg_kind_count = 13;

struct svg_style {
    svg_kind kind;
    std::string_view cls;
    std::string_view fill;
    std::string_view name;
};

// Colors after Tableau 10 (distinct for the common color-vision deficiencies in the pairs that
// meet: F/B, I/W, F&B), light ones for the communication that runs beside compute.
inline constexpr std::array<svg_style, svg_kind_count> svg_styles{{
    {svg_kind::forward, "ps-F", "#4e79a7", "forward (F)"},
    {svg_kind::backward, "ps-B", "#59a14f", "backward (B)"},
    {svg_kind::input, "ps-I", "#76b7b2", "input grad (I)"},
    {svg_kind::weight, "ps-W", "#b07aa1", "weight grad (W)"},
    {svg_kind::pair, "ps-FB", "#f28e2b", "overlapped F&B"},
    {svg_kind::recompute, "ps-R", "#9c755f", "recompute"},
    {svg_kind::loss, "ps-L", "#ff9da7", "loss"},
    {svg_kind::optimizer, "ps-O", "#e15759", "optimizer step"},
    {svg_kind::grad_norm, "ps-N", "#edc948", "grad norm"},
    {svg_kind::p2p, "ps-P2P", "#bab0ac", "p2p send/recv"},
    {svg_kind::grad_sync, "ps-G", "#8cd17d", "grad sync"},
    {svg_kind::param_gather, "ps-PG", "#a0cbe8", "param gather"},
    {svg_kind::other, "ps-X", "#79706e", "other"},
}};
inline constexpr std::string_view svg_idle_fill = "#ececec";
inline constexpr std::string_view svg_lane_fill = "#f6f6f6";

[[nodiscard]] constexpr const svg_style& style_of(svg_kind k) noexcept {
    return svg_styles[static_cast<std::size_t>(k)];
}

/// Ops that run beside the compute stream (an iteration's communication stream and p2p).
[[nodiscard]] constexpr bool in_communication_lane(op o) noexcept {
    return is_p2p(o) || o == op::grad_sync || o == op::param_gather || o == op::reshard;
}

[[nodiscard]] constexpr svg_kind svg_kind_of(op o, bool paired) noexcept {
    if (paired) return svg_kind::pair;
    switch (o) {
    case op::forward: return svg_kind::forward;
    case op::backward: return svg_kind::backward;
    case op::backward_input: return svg_kind::input;
    case op::backward_weight: return svg_kind::weight;
    case op::recompute: return svg_kind::recompute;
    case op::loss: return svg_kind::loss;
    case op::optimizer_step: return svg_kind::optimizer;
    case op::grad_norm: return svg_kind::grad_norm;
    case op::grad_sync: return svg_kind::grad_sync;
    case op::param_gather: return svg_kind::param_gather;
    default: return is_p2p(o) ? svg_kind::p2p : svg_kind::other;
    }
}

/// A coordinate: fixed, at most two decimals, no trailing zeros ("12", "3.5", "0.25").
inline void append_coordinate(std::string& out, double x) {
    if (!std::isfinite(x)) x = 0.0;
    std::array<char, 64> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::fixed, 2);
    std::string_view text{buf.data(), r.ec == std::errc{} ? static_cast<std::size_t>(r.ptr - buf.data()) : 0};
    while (text.size() > 1 && text.back() == '0') text.remove_suffix(1);
    if (!text.empty() && text.back() == '.') text.remove_suffix(1);
    if (text == "-0") text = "0";
    out += text;
}

/// A time: at most four significant digits ("33", "0.5234", "1.25e+04").
[[nodiscard]] inline std::string time_text(double x) {
    std::array<char, 64> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::general, 4);
    if (r.ec != std::errc{}) return "?";
    return std::string(buf.data(), r.ptr);
}

/// Length of the valid UTF-8 sequence of an XML character at s[i], 0 if there is none
/// (RFC 3629's table: no overlong forms, surrogates or code points above U+10FFFF; XML 1.0
/// also excludes U+FFFE and U+FFFF and the control characters but tab, newline, return).
[[nodiscard]] constexpr std::size_t xml_char_length(std::string_view s, std::size_t i) noexcept {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    if (c < 0x80) return c >= 0x20 || c == '\t' || c == '\n' || c == '\r' ? 1 : 0;
    const auto in = [&](std::size_t k, unsigned lo, unsigned hi) {
        return k < s.size() && byte(k) >= lo && byte(k) <= hi;
    };
    if (c >= 0xC2 && c <= 0xDF) return in(i + 1, 0x80, 0xBF) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        const unsigned lo = c == 0xE0 ? 0xA0 : 0x80;
        const unsigned hi = c == 0xED ? 0x9F : 0xBF;
        if (!in(i + 1, lo, hi) || !in(i + 2, 0x80, 0xBF)) return 0;
        const bool nonchar = c == 0xEF && byte(i + 1) == 0xBF && byte(i + 2) >= 0xBE; // U+FFFE, U+FFFF
        return nonchar ? 0 : 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        const unsigned lo = c == 0xF0 ? 0x90 : 0x80;
        const unsigned hi = c == 0xF4 ? 0x8F : 0xBF;
        return in(i + 1, lo, hi) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF) ? 4 : 0;
    }
    return 0;
}

/// Text as XML character data or attribute value: &, <, >, " and ' escaped; a byte that does
/// not start a valid UTF-8 XML character becomes '?'.
inline void append_xml_text(std::string& out, std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = xml_char_length(s, i);
        if (n == 0) {
            out += '?';
            ++i;
            continue;
        }
        switch (s[i]) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default: out.append(s.substr(i, n));
        }
        i += n;
    }
}

/// The smallest of 1, 2 and 5 times a power of ten that is at least `at_least` (> 0).
[[nodiscard]] inline double tick_step(double at_least) noexcept {
    double decade = std::pow(10.0, std::floor(std::log10(at_least)));
    for (int guard = 0; guard < 4; ++guard, decade *= 10.0) {
        for (const double f : {1.0, 2.0, 5.0}) {
            if (f * decade >= at_least * (1.0 - 1e-12)) return f * decade;
        }
    }
    return at_least;
}

/// A tick label: the tick as a decimal with as many places as the step needs.
[[nodiscard]] inline std::string tick_text(double t, double step) {
    const int places = step >= 1.0 ? 0 : std::min(12, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    std::array<char, 64> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), t, std::chars_format::fixed, places);
    if (r.ec != std::errc{}) return "?";
    return std::string(buf.data(), r.ptr);
}

/// A fraction with three decimals, as the tool's text output writes it ("0.273").
[[nodiscard]] inline std::string fixed_text(double x) {
    std::array<char, 64> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), x, std::chars_format::fixed, 3);
    if (r.ec != std::errc{}) return "?";
    return std::string(buf.data(), r.ptr);
}

/// One drawn box: a record, or (thinned) several of one op merged.
struct svg_box {
    double x0 = 0.0;
    double x1 = 0.0;
    svg_kind kind = svg_kind::other;
    double top = 0.0;        ///< where it starts, as a fraction of its lane's height
    double height = 1.0;     ///< its height, as a fraction of its lane's height
    bool odd_chunk = false;
    std::size_t record = 0;  ///< the first record it stands for
    std::size_t count = 1;   ///< records it stands for
};

class svg_renderer {
public:
    svg_renderer(std::span<const timed_action> records, timeline_layout layout, std::size_t ranks, double makespan,
                 double bubble, const svg_options& o)
        : records_{records}, layout_{std::move(layout)}, options_{o}, bubble_{bubble} {
        ranks_ = std::max<std::size_t>(ranks, layout_.ranks);
        makespan_ = std::max(makespan, layout_.makespan);
        set_unit();
    }

    [[nodiscard]] std::string run() {
        if (!std::isfinite(makespan_) || !std::isfinite(bubble_)) {
            return message_only("(diagram not drawn: a time is not finite)");
        }
        if (records_.empty() || ranks_ == 0) return message_only("(no actions to draw)");
        geometry();
        build_boxes();
        std::string out;
        out.reserve(4096 + boxes_total_ * (thinned_ ? 120 : 200));
        header(out);
        rows(out);
        axis(out);
        if (options_.legend) legend(out);
        out += "</svg>\n";
        return out;
    }

    /// A picture holding the title and `text` only.
    [[nodiscard]] std::string run_message(std::string_view text) const { return message_only(text); }

private:
    static constexpr double pad = 10.0;
    static constexpr double char_width = 0.6; ///< of the font size, for a digit of sans-serif

    void set_unit() {
        unit_ = options_.unit;
        if (unit_ == "s" && makespan_ > 0.0 && makespan_ < 1e-3) {
            unit_ = "\xC2\xB5s"; // µs
            scale_ = 1e6;
        } else if (unit_ == "s" && makespan_ > 0.0 && makespan_ < 1.0) {
            unit_ = "ms";
            scale_ = 1e3;
        }
    }
    [[nodiscard]] std::string unit_suffix() const { return unit_.empty() ? std::string{} : " " + unit_; }

    [[nodiscard]] std::string message_only(std::string_view text) const {
        std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"60\" viewBox=\"0 0 400 60\" "
                          "font-family=\"sans-serif\"><text x=\"10\" y=\"24\" font-size=\"13\">";
        append_xml_text(out, title());
        out += "</text><text x=\"10\" y=\"46\" font-size=\"11\">";
        append_xml_text(out, text);
        out += "</text></svg>\n";
        return out;
    }

    [[nodiscard]] std::string title() const {
        return options_.title.empty() ? std::string{"pipeline schedule"} : options_.title;
    }

    /// Sizes: the label column, row heights, the time scale (see the top of this file).
    void geometry() {
        label_width_ = 6.6 * static_cast<double>(("rank " + std::to_string(ranks_ - 1)).size()) + 8.0;
        row_ = std::isfinite(options_.row_height) && options_.row_height > 0.0
                   ? std::min(options_.row_height, 200.0)
                   : std::clamp(std::floor(600.0 / static_cast<double>(ranks_)), 2.0, 22.0);
        for (const timed_action& t : records_) lanes_ = lanes_ || in_communication_lane(t.what.kind);
        lane_ = lanes_ ? std::max(1.0, std::round(row_ * 0.4)) : 0.0;
        gap_ = row_ >= 8.0 ? 3.0 : 0.0;
        pitch_ = row_ + lane_ + gap_;
        const double widest = std::max(400.0, static_cast<double>(options_.max_width)) - label_width_ - 2 * pad - 20.0;
        double shortest = 0.0;
        for (const timed_action& t : records_) {
            const double d = t.end - t.start;
            if (is_compute(t.what.kind) && d > 0.0 && (shortest == 0.0 || d < shortest)) shortest = d;
        }
        if (std::isfinite(options_.pixels_per_unit) && options_.pixels_per_unit > 0.0) {
            px_ = options_.pixels_per_unit;
        } else {
            px_ = shortest > 0.0 ? 22.0 / shortest : 0.0;
            if (makespan_ > 0.0 && makespan_ * px_ < 240.0) px_ = 240.0 / makespan_;
        }
        if (makespan_ > 0.0 && makespan_ * px_ > widest) px_ = widest / makespan_;
        if (!(px_ > 0.0) || !std::isfinite(px_)) px_ = 1.0;
        plot_width_ = makespan_ > 0.0 ? makespan_ * px_ : 240.0;
        plot_x_ = pad + label_width_;
        plot_y_ = pad + 44.0;
    }

    [[nodiscard]] double x_of(double t) const {
        return plot_x_ + std::clamp(t, 0.0, makespan_) * px_;
    }

    /// The boxes of every rank's lanes, in rank-time order; thinned when needed.
    void build_boxes();
    void thin(std::span<const svg_box> lane, std::vector<svg_box>& out, double cell);

    void header(std::string& out) const;
    void rows(std::string& out) const;
    void box(std::string& out, const svg_box& b, double y, double h) const;
    void axis(std::string& out) const;
    void legend(std::string& out) const;

    [[nodiscard]] double height() const {
        double h = plot_y_ + static_cast<double>(ranks_) * pitch_ + 40.0;
        if (options_.legend) h += 22.0 * static_cast<double>(legend_lines()) + 20.0;
        return h + pad;
    }
    [[nodiscard]] double width() const { return plot_x_ + plot_width_ + pad + 20.0; }
    /// The legend's entries: the ops drawn, then the idle band.
    [[nodiscard]] std::vector<svg_kind> legend_kinds() const {
        std::vector<svg_kind> kinds;
        for (std::size_t k = 0; k < svg_kind_count; ++k) {
            if (present_[k]) kinds.push_back(static_cast<svg_kind>(k));
        }
        return kinds;
    }
    [[nodiscard]] static double legend_entry_width(std::string_view name) {
        return 18.0 + 6.2 * static_cast<double>(name.size()) + 14.0;
    }
    [[nodiscard]] std::size_t legend_lines() const {
        std::size_t lines = 1;
        double x = 0.0;
        const double room = width() - 2 * pad;
        for (const svg_kind k : legend_kinds()) {
            const double w = legend_entry_width(style_of(k).name);
            if (x > 0.0 && x + w > room) {
                ++lines;
                x = 0.0;
            }
            x += w;
        }
        if (x > 0.0 && x + legend_entry_width("idle") > room) ++lines;
        return lines;
    }

    std::span<const timed_action> records_;
    timeline_layout layout_;
    const svg_options& options_;
    double bubble_ = 0.0;
    std::size_t ranks_ = 0;
    double makespan_ = 0.0;
    std::string unit_{};
    double scale_ = 1.0; ///< display unit per cost unit
    double label_width_ = 0.0;
    double row_ = 22.0;
    double lane_ = 0.0;
    double gap_ = 0.0;
    double pitch_ = 0.0;
    bool lanes_ = false;
    double px_ = 1.0;
    double plot_width_ = 0.0;
    double plot_x_ = 0.0;
    double plot_y_ = 0.0;
    bool thinned_ = false;
    std::size_t boxes_total_ = 0;
    std::array<bool, svg_kind_count> present_{};
    std::vector<std::vector<svg_box>> main_{};  ///< per rank
    std::vector<std::vector<svg_box>> comm_{};  ///< per rank
};

inline void svg_renderer::thin(std::span<const svg_box> lane, std::vector<svg_box>& out, double cell) {
    // Thinned (see the top of the file): each cell of the lane shows how its time is shared,
    // every op's busy time there as a share of the lane's height, stacked in the legend's order
    // and rounded to eighths; the same share of the same op in consecutive cells is one box.
    const auto cells = static_cast<std::size_t>(std::ceil(plot_width_ / cell));
    std::vector<std::array<double, svg_kind_count>> busy(cells, std::array<double, svg_kind_count>{});
    std::vector<std::array<std::size_t, svg_kind_count>> count(cells, std::array<std::size_t, svg_kind_count>{});
    std::vector<std::array<std::size_t, svg_kind_count>> first(cells, std::array<std::size_t, svg_kind_count>{});
    for (const svg_box& b : lane) {
        if (b.top > 0.0) continue; // the second half of an overlapped pair: the first one stands for both
        const auto k = static_cast<std::size_t>(b.kind);
        const double x0 = b.x0 - plot_x_;
        const double x1 = b.x1 - plot_x_;
        const std::size_t c0 = std::min(cells - 1, static_cast<std::size_t>(std::max(0.0, x0) / cell));
        if (count[c0][k]++ == 0) first[c0][k] = b.record;
        for (std::size_t c = c0; c < cells && static_cast<double>(c) * cell < x1; ++c) {
            const double lo = std::max(x0, static_cast<double>(c) * cell);
            const double hi = std::min(x1, static_cast<double>(c + 1) * cell);
            if (hi > lo) busy[c][k] += hi - lo;
        }
    }
    std::array<std::size_t, svg_kind_count> open{};
    open.fill(static_cast<std::size_t>(-1));
    for (std::size_t c = 0; c < cells; ++c) {
        const double x0 = plot_x_ + static_cast<double>(c) * cell;
        const double x1 = plot_x_ + std::min(plot_width_, static_cast<double>(c + 1) * cell);
        double total = 0.0;
        for (const double b : busy[c]) total += b;
        const double norm = std::max(total, x1 - x0); // overlapping sends can fill more than a cell
        double done = 0.0;
        double top = 0.0;
        for (std::size_t k = 0; k < svg_kind_count; ++k) {
            done += busy[c][k];
            const double bottom = std::round(done / norm * 8.0) / 8.0;
            const double height = bottom - top;
            if (height <= 0.0) {
                if (busy[c][k] <= 0.0) open[k] = static_cast<std::size_t>(-1);
                continue;
            }
            std::size_t& o = open[k];
            if (o != static_cast<std::size_t>(-1) && out[o].top == top && out[o].height == height && out[o].x1 == x0) {
                out[o].x1 = x1;
                out[o].count += count[c][k];
            } else {
                svg_box b{x0, x1, static_cast<svg_kind>(k), top, height, false, first[c][k], count[c][k]};
                if (count[c][k] == 0) b.record = out.empty() ? lane.front().record : out.back().record;
                o = out.size();
                out.push_back(b);
            }
            top = bottom;
        }
    }
}

inline void svg_renderer::build_boxes() {
    main_.assign(ranks_, {});
    comm_.assign(ranks_, {});
    const std::vector<std::size_t> order = rank_time_order(records_);
    // Thinned when an action of positive length would be narrower than a pixel, or too many.
    thinned_ = records_.size() > options_.max_boxes;
    for (const timed_action& t : records_) {
        if (t.end > t.start && (t.end - t.start) * px_ < 1.0) thinned_ = true;
    }
    for (std::size_t k = 0; k < order.size(); ++k) {
        const std::size_t i = order[k];
        const timed_action& t = records_[i];
        // An overlapped pair: the F flagged overlapped_with_next (simulate()), or an F and a B
        // or I of the rank with the same times (the iteration's replay, whose records carry
        // no flag). The F is drawn in the upper half of the row, the B or I in the lower.
        const auto pairs_with = [&](std::size_t a, std::size_t b) {
            const timed_action& f = records_[a];
            const timed_action& g = records_[b];
            return f.rank == g.rank && f.what.kind == op::forward &&
                   (g.what.kind == op::backward || g.what.kind == op::backward_input) && f.start == g.start &&
                   f.end == g.end && (f.what.overlapped_with_next || f.end > f.start);
        };
        const bool upper = k + 1 < order.size() && pairs_with(i, order[k + 1]);
        const bool lower = !upper && k > 0 && pairs_with(order[k - 1], i);
        svg_box b{};
        b.x0 = x_of(t.start);
        b.x1 = std::max(b.x0, x_of(t.end));
        b.kind = svg_kind_of(t.what.kind, upper || lower);
        b.top = lower ? 0.5 : 0.0;
        b.height = upper || lower ? 0.5 : 1.0;
        b.odd_chunk = is_compute(t.what.kind) && layout_.chunk_of(t.what.stage) % 2 == 1;
        b.record = i;
        // The legend names what can be seen: an op whose every action takes no time is not drawn.
        if (t.end > t.start) present_[static_cast<std::size_t>(b.kind)] = true;
        if (t.rank >= ranks_) continue;
        (in_communication_lane(t.what.kind) ? comm_[t.rank] : main_[t.rank]).push_back(b);
    }
    if (thinned_) {
        // Cells wide enough that every lane's boxes together stay within max_boxes.
        std::size_t kinds = 0;
        for (const bool p : present_) kinds += p ? 1 : 0;
        const double lanes = static_cast<double>(ranks_) * (lanes_ ? 2.0 : 1.0);
        const double cell = std::max(1.0, lanes * plot_width_ * static_cast<double>(std::max<std::size_t>(kinds, 1)) /
                                              static_cast<double>(std::max<std::size_t>(options_.max_boxes, 1)));
        std::vector<svg_box> thinned;
        for (auto* lanes_of : {&main_, &comm_}) {
            for (std::vector<svg_box>& lane : *lanes_of) {
                if (lane.empty()) continue;
                thinned.clear();
                thin(lane, thinned, cell);
                lane.swap(thinned);
            }
        }
    }
    for (std::size_t r = 0; r < ranks_; ++r) boxes_total_ += main_[r].size() + comm_[r].size();
}

inline void svg_renderer::header(std::string& out) const {
    const std::string w = [&] { std::string s; append_coordinate(s, width()); return s; }();
    const std::string h = [&] { std::string s; append_coordinate(s, height()); return s; }();
    out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h + "\" viewBox=\"0 0 " + w +
           " " + h + "\" font-family=\"sans-serif\">\n<title>";
    append_xml_text(out, title());
    out += "</title>\n<rect class=\"ps-page\" x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h +
           "\" fill=\"#ffffff\"/>\n";
    out += "<text x=\"10\" y=\"24\" font-size=\"15\" font-weight=\"bold\">";
    append_xml_text(out, title());
    out += "</text>\n<text x=\"10\" y=\"42\" font-size=\"12\">";
    std::string line = "bubble fraction " + fixed_text(bubble_) + ", makespan " + time_text(makespan_ * scale_) +
                       (unit_.empty() ? std::string{" (cost units)"} : unit_suffix()) + ", " +
                       std::to_string(ranks_) + (ranks_ == 1 ? " rank, " : " ranks, ") +
                       std::to_string(records_.size()) + (records_.size() == 1 ? " action" : " actions");
    append_xml_text(out, line);
    out += "</text>\n";
}

inline void svg_renderer::rows(std::string& out) const {
    // Labels of thin rows every few ranks, so that they do not overlap.
    const double label_font = std::min(11.0, std::max(row_ * 0.75, 7.0));
    const std::size_t every = row_ + gap_ >= 9.0 ? 1 : static_cast<std::size_t>(std::ceil(9.0 / (row_ + gap_)));
    out += "<g font-size=\"";
    append_coordinate(out, label_font);
    out += "\" fill=\"#333333\">\n";
    for (std::size_t r = 0; r < ranks_; r += every) {
        out += "<text x=\"10\" y=\"";
        append_coordinate(out, plot_y_ + static_cast<double>(r) * pitch_ + row_ * 0.5 + label_font * 0.35);
        out += "\">rank " + std::to_string(r) + "</text>\n";
    }
    out += "</g>\n";
    const auto band = [&](std::string_view cls, std::string_view fill, double y, double h) {
        out += "<rect class=\"";
        out += cls;
        out += "\" x=\"";
        append_coordinate(out, plot_x_);
        out += "\" y=\"";
        append_coordinate(out, y);
        out += "\" width=\"";
        append_coordinate(out, plot_width_);
        out += "\" height=\"";
        append_coordinate(out, h);
        out += "\" fill=\"";
        out += fill;
        out += "\"/>\n";
    };
    for (std::size_t r = 0; r < ranks_; ++r) {
        const double y = plot_y_ + static_cast<double>(r) * pitch_;
        band("ps-idle", svg_idle_fill, y, row_);
        if (lanes_) band("ps-lane", svg_lane_fill, y + row_, lane_);
    }
    // Boxes, with a thin white outline between neighbours unless thinned (it would hide them).
    out += thinned_ ? "<g>\n" : "<g stroke=\"#ffffff\" stroke-width=\"0.6\">\n";
    for (std::size_t r = 0; r < ranks_; ++r) {
        const double y = plot_y_ + static_cast<double>(r) * pitch_;
        for (const svg_box& b : main_[r]) box(out, b, y + b.top * row_, b.height * row_);
        for (const svg_box& b : comm_[r]) box(out, b, y + row_ + b.top * lane_, b.height * lane_);
    }
    out += "</g>\n";
    // Microbatch numbers, in boxes that show one action and are wide enough for them.
    std::string labels;
    for (std::size_t r = 0; r < ranks_; ++r) {
        const double y = plot_y_ + static_cast<double>(r) * pitch_;
        for (const svg_box& b : main_[r]) {
            const timed_action& t = records_[b.record];
            if (thinned_ || !timeline_has_microbatch(t.what.kind)) continue;
            const double h = b.height * row_;
            const double font = std::min(11.0, h * 0.72);
            const std::string text = std::to_string(t.what.microbatch);
            if (font < 6.0 || b.x1 - b.x0 < static_cast<double>(text.size()) * char_width * font + 2.0) continue;
            labels += "<text x=\"";
            append_coordinate(labels, (b.x0 + b.x1) / 2.0);
            labels += "\" y=\"";
            append_coordinate(labels, y + b.top * row_ + h / 2.0 + font * 0.36);
            labels += "\" font-size=\"";
            append_coordinate(labels, font);
            labels += "\">" + text + "</text>\n";
        }
    }
    if (!labels.empty()) out += "<g text-anchor=\"middle\" fill=\"#111111\">\n" + labels + "</g>\n";
}

inline void svg_renderer::box(std::string& out, const svg_box& b, double y, double h) const {
    const svg_style& s = style_of(b.kind);
    out += "<rect class=\"";
    out += s.cls;
    out += "\" x=\"";
    append_coordinate(out, b.x0);
    out += "\" y=\"";
    append_coordinate(out, y);
    out += "\" width=\"";
    append_coordinate(out, b.x1 - b.x0);
    out += "\" height=\"";
    append_coordinate(out, h);
    out += "\" fill=\"";
    out += s.fill;
    out += b.odd_chunk ? "\" fill-opacity=\"0.6\"><title>" : "\"><title>";
    const timed_action& t = records_[b.record];
    std::string text = "rank " + std::to_string(t.rank) + ": ";
    if (!thinned_) {
        text += trace_event_name(t.what);
        text += ", " + time_text(t.start * scale_) + " to " + time_text(t.end * scale_);
    } else {
        // A thinned box: its op's share of the time between its ends.
        const double t0 = (b.x0 - plot_x_) / px_ * scale_;
        const double t1 = (b.x1 - plot_x_) / px_ * scale_;
        text += std::string{s.name} + ", " + std::to_string(b.count) + (b.count == 1 ? " action" : " actions") +
                " starting in " + time_text(t0) + " to " + time_text(t1);
    }
    append_xml_text(out, text + unit_suffix());
    out += "</title></rect>\n";
}

inline void svg_renderer::axis(std::string& out) const {
    const double bottom = plot_y_ + static_cast<double>(ranks_) * pitch_;
    const double shown = makespan_ * scale_;            // in the display unit
    const double step = tick_step(std::max(70.0 / px_ * scale_, 1e-300));
    out += "<g font-size=\"10\" fill=\"#333333\" text-anchor=\"middle\">\n";
    for (std::size_t k = 0;; ++k) {
        const double t = static_cast<double>(k) * step;
        if (t > shown * (1.0 + 1e-9) || k > 10000) break;
        const double x = plot_x_ + t / scale_ * px_;
        out += "<line x1=\"";
        append_coordinate(out, x);
        out += "\" x2=\"";
        append_coordinate(out, x);
        out += "\" y1=\"";
        append_coordinate(out, plot_y_ - 2.0);
        out += "\" y2=\"";
        append_coordinate(out, bottom + 3.0);
        out += "\" stroke=\"#999999\" stroke-width=\"0.5\" stroke-dasharray=\"2,3\"/>\n<text x=\"";
        append_coordinate(out, x);
        out += "\" y=\"";
        append_coordinate(out, bottom + 15.0);
        out += "\">" + tick_text(t, step) + "</text>\n";
    }
    out += "</g>\n<text x=\"";
    append_coordinate(out, plot_x_);
    out += "\" y=\"";
    append_coordinate(out, bottom + 31.0);
    out += "\" font-size=\"11\" fill=\"#333333\">";
    append_xml_text(out, unit_.empty() ? std::string{"time (cost units)"} : "time (" + unit_ + ")");
    out += "</text>\n";
}

inline void svg_renderer::legend(std::string& out) const {
    double x = pad;
    double y = plot_y_ + static_cast<double>(ranks_) * pitch_ + 44.0;
    const double room = width() - 2 * pad;
    out += "<g font-size=\"11\" fill=\"#333333\">\n";
    const auto entry = [&](std::string_view cls, std::string_view fill, std::string_view name) {
        const double w = legend_entry_width(name);
        if (x > pad && x - pad + w > room) {
            x = pad;
            y += 22.0;
        }
        out += "<rect class=\"";
        out += cls;
        out += "\" x=\"";
        append_coordinate(out, x);
        out += "\" y=\"";
        append_coordinate(out, y);
        out += "\" width=\"12\" height=\"12\" fill=\"";
        out += fill;
        out += "\" stroke=\"#888888\" stroke-width=\"0.5\"/>\n<text x=\"";
        append_coordinate(out, x + 17.0);
        out += "\" y=\"";
        append_coordinate(out, y + 10.0);
        out += "\">";
        append_xml_text(out, name);
        out += "</text>\n";
        x += w;
    };
    for (const svg_kind k : legend_kinds()) entry("ps-key", style_of(k).fill, style_of(k).name);
    entry("ps-key", svg_idle_fill, "idle");
    std::string note = "number in a box: its microbatch";
    if (layout_.chunks > 1) note += "; lighter: odd chunk";
    if (lanes_) note += "; thin lane under a rank: its communication";
    if (thinned_) {
        note += "; thinned to fit: " + std::to_string(records_.size()) + " actions in " +
                std::to_string(boxes_total_) + " boxes";
    }
    out += "<text x=\"10\" y=\"";
    append_coordinate(out, y + 30.0);
    out += "\">";
    append_xml_text(out, note);
    out += "</text>\n</g>\n";
}

/// The picture of a replay; `ranks` rows at least, `makespan` at least the records' end.
[[nodiscard]] inline std::string render_svg(std::span<const timed_action> records, const stage_map& stages,
                                            std::size_t ranks, double makespan, double bubble,
                                            const svg_options& options) {
    timeline_layout layout = stages.stages() != 0 ? layout_of(records, stages) : layout_of(records);
    return svg_renderer{records, std::move(layout), ranks, makespan, bubble, options}.run();
}

/// A picture that only says why there is none (a replay the library refused).
[[nodiscard]] inline std::string svg_refused(const verdict& check, const svg_options& options) {
    const std::string reason = "(not simulated: " + describe(check) + ")";
    const timed_action none{};
    return svg_renderer{std::span<const timed_action>{&none, 0}, timeline_layout{}, 0, 0.0, 0.0, options}
        .run_message(reason);
}

} // namespace detail

/// The diagram of a schedule's replay: `records` as a timeline sink received them from
/// simulate() (for example chrome_trace_sink::records()), `sim` its result (see the top of
/// this file). A refused replay gives a small picture saying why.
[[nodiscard]] inline std::string to_svg(std::span<const timed_action> records, const simulation& sim,
                                        const svg_options& options = {}) {
    if (!sim) return detail::svg_refused(sim.check, options);
    return detail::render_svg(records, sim.stages, sim.ranks.size(), sim.makespan, sim.bubble_fraction, options);
}

/// The same for a whole iteration's replay, its records handed over by as_timed_actions: the
/// communication gets a lane of its own under each rank.
[[nodiscard]] inline std::string to_svg(std::span<const timed_action> records, const iteration_simulation& sim,
                                        const svg_options& options = {}) {
    if (!sim.replayed) return detail::svg_refused(sim.check, options);
    return detail::render_svg(records, sim.stages, sim.ranks.size(), sim.makespan, sim.bubble_fraction, options);
}

/// Simulates a policy with `costs` (by default F = 1, B = 2, I = W = 1) and draws it; an
/// empty title becomes the policy's name and shape.
template <schedule_policy P>
[[nodiscard]] std::string to_svg(const P& policy, const cost_model& costs = {}, svg_options options = {}) {
    if (options.title.empty()) {
        std::string name;
        if constexpr (requires { policy.policy_name(); }) name = std::string{policy.policy_name()};
        else name = std::string{P::name};
        const shape s = policy.shape;
        options.title = name + " p=" + std::to_string(s.ranks) + " m=" + std::to_string(s.microbatches) +
                        " v=" + std::to_string(s.chunks);
    }
    chrome_trace_sink records;
    const simulation sim = simulate(policy, costs, records);
    return to_svg(records.records(), sim, options);
}

} // namespace pipesched
