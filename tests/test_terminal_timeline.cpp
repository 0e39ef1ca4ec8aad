// render_terminal_timeline(): exact text for tiny schedules worked out by hand, and properties
// (rows, labels at their columns, idle columns = idle time) over policies and shapes.
#include "test_support.hpp"

#include <pipesched/io/terminal_timeline.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace ps = pipesched;

namespace {

using ps::backward_kind;
using ps::op;
using pipesched_test::lines_of;
using pipesched_test::recording_timeline;

PIPESCHED_VERIFY(ps::timeline_letter(op::backward_input) == 'I');
PIPESCHED_VERIFY(ps::timeline_letter(op::send_activation) == '\0'); // p2p is not drawn
PIPESCHED_VERIFY(ps::timeline_letter(static_cast<op>(200)) == '*');  // an op added later

template <class P>
std::vector<ps::timed_action> timeline_of(const P& pol, const ps::cost_model& costs = {}) {
    recording_timeline rec;
    const ps::simulation s = ps::simulate(pol, costs, rec);
    REQUIRE(s);
    return rec.records;
}

/// The cells of a row: what lies between the two '|'.
std::string cells_of(const std::string& row) {
    const std::size_t open = row.find('|');
    const std::size_t close = row.rfind('|');
    REQUIRE(open != std::string::npos);
    REQUIRE(close > open);
    return row.substr(open + 1, close - open - 1);
}

TEST_CASE("terminal timeline: 1F1B p=2 m=2, by hand") {
    // F = 1, B = 2. Rank 0: F0 [0,1] F1 [1,2], waits for 1B0, B0 [4,6], waits for 1B1, B1 [7,9].
    // Rank 1: F0 [1,2] B0 [2,4] F1 [4,5] (0F1 ended at 2, rank busy until 4) B1 [5,7].
    const auto records = timeline_of(ps::one_f_one_b<>{{.ranks = 2, .microbatches = 2, .chunks = 1}});
    CHECK(ps::render_terminal_timeline(records) ==
          "rank 0 |F0-F1-......B0----...B1----|\n"
          "rank 1 |...F0-B0----F1-B1----......|\n"
          "time    0     2     4     6     8\n"
          "F forward, B backward, . idle; F3-- = microbatch 3; 3 columns per unit\n");
}

TEST_CASE("terminal timeline: GPipe p=1 m=2, by hand, and the option switches") {
    const auto records = timeline_of(ps::gpipe<>{{.ranks = 1, .microbatches = 2, .chunks = 1}});
    CHECK(ps::render_terminal_timeline(records) ==
          "rank 0 |F0-F1-B0----B1----|\n"
          "time    0     2     4\n"
          "F forward, B backward, . idle; F3-- = microbatch 3; 3 columns per unit\n");
    ps::terminal_options o{};
    o.axis = false;
    o.legend = false;
    o.columns_per_unit = 4;
    o.fill = '=';
    CHECK(ps::render_terminal_timeline(records, o) == "rank 0 |F0==F1==B0======B1======|\n");
    o.columns_per_unit = 1;
    CHECK(ps::render_terminal_timeline(records, o) == "rank 0 |FFB0B1|\n");
    std::ostringstream os;
    ps::write_terminal_timeline(os, records, o);
    CHECK(os.str() == "rank 0 |FFB0B1|\n");
    CHECK(ps::render_terminal_timeline({}, o).empty());
}

TEST_CASE("terminal timeline: split backward, by hand") {
    // 1F1B p=2 m=1 split, F = I = W = 1: rank 0 F0 [0,1] I0 [3,4] W0 [4,5];
    // rank 1 F0 [1,2] I0 [2,3] W0 [3,4].
    const auto records = timeline_of(ps::one_f_one_b<backward_kind::split>{{.ranks = 2, .microbatches = 1, .chunks = 1}});
    CHECK(ps::render_terminal_timeline(records) ==
          "rank 0 |F0-......I0-W0-|\n"
          "rank 1 |...F0-I0-W0-...|\n"
          "time    0     2     4\n"
          "F forward, I input grad, W weight grad, . idle; F3-- = microbatch 3; 3 columns per unit\n");
}

TEST_CASE("terminal timeline: chunks as letter case or suffix") {
    // Interleaved p=2 m=2 v=2: stages 0,1 are chunk 0, stages 2,3 chunk 1.
    const auto records = timeline_of(ps::interleaved_1f1b<>{{.ranks = 2, .microbatches = 2, .chunks = 2}});
    ps::terminal_options o{};
    o.max_width = 0;
    const std::string automatic = ps::render_terminal_timeline(records, o);
    CHECK(automatic.find("f0-") != std::string::npos);
    CHECK(automatic.find("b1----") != std::string::npos);
    CHECK(automatic.find("lower case = chunk 1") != std::string::npos);
    o.chunks = ps::chunk_marking::none;
    const std::string none = ps::render_terminal_timeline(records, o);
    CHECK(none.find('f') == none.find("forward")); // the legend is the only lower-case f
    o.chunks = ps::chunk_marking::suffix;
    o.columns_per_unit = 4;
    const std::string suffix = ps::render_terminal_timeline(records, o);
    CHECK(suffix.find("F0c0") != std::string::npos);
    CHECK(suffix.find("F1c1") != std::string::npos);
    CHECK(suffix.find("B0c1----") != std::string::npos);
    CHECK(suffix.find("c2 = chunk 2") != std::string::npos);
    // Three chunks pick the suffix automatically; labels that do not fit drop the chunk first.
    o.chunks = ps::chunk_marking::automatic;
    o.columns_per_unit = 3;
    const std::string three = ps::render_terminal_timeline(timeline_of(ps::interleaved_1f1b<>{{.ranks = 2, .microbatches = 2, .chunks = 3}}), o);
    CHECK(three.find("B0c2--") != std::string::npos);
    CHECK(three.find("F0-") != std::string::npos);
}

TEST_CASE("terminal timeline: a wide schedule is scaled down, not wrapped") {
    const auto records = timeline_of(ps::one_f_one_b<>{{.ranks = 4, .microbatches = 32, .chunks = 1}}); // makespan 105: 315 columns at 3/unit
    ps::terminal_options o{};
    o.max_width = 80;
    const auto lines = lines_of(ps::render_terminal_timeline(records, o));
    REQUIRE(lines.size() == 1 + 4 + 2);
    CHECK(lines[0] == "(scaled to fit 80 columns: 1 column per 2 units instead of 3 columns per unit)");
    for (const std::string& line : lines) CHECK(line.size() <= 80);
    CHECK(cells_of(lines[1]).size() == 53); // round(105 / 2)
    CHECK(lines.back().find("1 column per 2 units") != std::string::npos);
    // Fits as it is: no header.
    o.max_width = 8 + 315 + 1;
    CHECK(ps::render_terminal_timeline(records, o).rfind("rank 0 |", 0) == 0);
    o.max_width = 8 + 315;
    CHECK(ps::render_terminal_timeline(records, o).rfind("(scaled to fit 323 columns: 2 columns", 0) == 0);
}

/// Every action's label at its columns, idle columns exactly where the simulation left the rank
/// idle, one row per rank. Costs are whole numbers, so with 3 columns per unit every time falls
/// on a column boundary.
template <class P>
void check_timeline_properties(const P& pol) {
    const ps::shape dims = pol.shape;
    INFO(P::name << " p=" << dims.ranks << " m=" << dims.microbatches << " v=" << dims.chunks);
    recording_timeline rec;
    const ps::simulation sim = ps::simulate(pol, ps::cost_model{}, rec);
    REQUIRE(sim);
    ps::terminal_options o{};
    o.max_width = 0;
    o.axis = false;
    o.legend = false;
    o.chunks = ps::chunk_marking::none;
    const auto lines = lines_of(ps::render_terminal_timeline(rec.records, o));
    REQUIRE(lines.size() == dims.ranks);
    std::vector<std::string> rows;
    for (std::uint32_t r = 0; r < dims.ranks; ++r) {
        CHECK(lines[r].rfind("rank " + std::to_string(r), 0) == 0);
        rows.push_back(cells_of(lines[r]));
        CHECK(rows[r].size() == static_cast<std::size_t>(std::lround(sim.makespan * 3)));
        const auto dots = static_cast<std::size_t>(std::count(rows[r].begin(), rows[r].end(), '.'));
        CHECK(dots == static_cast<std::size_t>(std::lround(sim.ranks[r].idle * 3)));
    }
    for (const ps::timed_action& t : rec.records) {
        const std::string label =
            std::string(1, ps::compute_letter(t.what.kind)) + std::to_string(t.what.microbatch);
        const auto from = static_cast<std::size_t>(std::lround(t.start * 3));
        const auto to = static_cast<std::size_t>(std::lround(t.end * 3));
        const std::string drawn = rows[t.rank].substr(from, to - from);
        if (label.size() <= to - from) {
            CHECK(drawn == label + std::string(to - from - label.size(), '-'));
        } else {
            CHECK(drawn == std::string(1, label[0]) + std::string(to - from - 1, '-'));
        }
    }
}

TEST_CASE("terminal timeline: properties over policies and shapes") {
    for (std::uint32_t p = 1; p <= 4; ++p) {
        for (std::uint32_t m = 1; m <= 12; m += 3) {
            check_timeline_properties(ps::gpipe<>{{.ranks = p, .microbatches = m, .chunks = 1}});
            check_timeline_properties(ps::one_f_one_b<>{{.ranks = p, .microbatches = m, .chunks = 1}});
            check_timeline_properties(ps::one_f_one_b<backward_kind::split>{{.ranks = p, .microbatches = m, .chunks = 1}});
            for (std::uint32_t v = 1; v <= 3; ++v) {
                const ps::looped_bfs<> bfs{{.ranks = p, .microbatches = m, .chunks = v}};
                if (bfs.check()) check_timeline_properties(bfs);
                const ps::interleaved_1f1b<backward_kind::split> inter{{.ranks = p, .microbatches = m, .chunks = v}};
                if (inter.check()) check_timeline_properties(inter);
            }
        }
    }
}

TEST_CASE("terminal timeline: drawn with the simulation's stage map, the same text as from the records") {
    const auto same = [](const auto& pol) {
        recording_timeline rec;
        const ps::simulation sim = ps::simulate(pol, ps::cost_model{}, rec);
        REQUIRE(sim);
        INFO(pol.name << " p=" << pol.shape.ranks << " m=" << pol.shape.microbatches << " v=" << pol.shape.chunks);
        ps::terminal_options o{};
        o.max_width = 0;
        CHECK(ps::render_terminal_timeline(rec.records, o, sim.stages) == ps::render_terminal_timeline(rec.records, o));
    };
    for (std::uint32_t p = 1; p <= 4; ++p) {
        same(ps::one_f_one_b<>{{.ranks = p, .microbatches = 2 * p, .chunks = 1}});
        same(ps::interleaved_1f1b<>{{.ranks = p, .microbatches = 2 * p, .chunks = 3}});
        same(ps::zbv{{.ranks = p, .microbatches = 2 * p, .chunks = 2}});
        same(ps::dualpipe_v{{.ranks = p, .microbatches = 2 * p, .chunks = 2}});
    }
    // The map decides the chunk: a map that puts every stage on chunk 0 draws no lower case.
    const auto records = timeline_of(ps::interleaved_1f1b<>{{.ranks = 2, .microbatches = 2, .chunks = 2}});
    const ps::stage_map flat{std::vector<std::uint32_t>{0, 1, 2, 3}, 4};
    ps::terminal_options o{};
    o.max_width = 0;
    const std::string text = ps::render_terminal_timeline(records, o, flat);
    CHECK(text.find('f') == text.find("forward"));
}

TEST_CASE("terminal timeline: the legend names only the letters that occur") {
    const auto split = timeline_of(ps::interleaved_1f1b<backward_kind::split>{{.ranks = 2, .microbatches = 2, .chunks = 2}});
    const auto lines = lines_of(ps::render_terminal_timeline(split));
    CHECK(lines.back() == "F forward, I input grad, W weight grad, . idle; F3-- = microbatch 3; "
                          "lower case = chunk 1; 3 columns per unit");
    // Iteration-level ops get letters of their own; p2p ops are not drawn.
    const std::vector<ps::timed_action> mixed{
        {0, 0, {0, op::forward, 0}, 0.0, 1.0},
        {0, 1, {0, op::send_activation, 0}, 1.0, 2.0},
        {0, 2, {0, op::backward, 0}, 2.0, 4.0},
        {0, 3, {0, op::grad_sync, 0}, 4.0, 5.0},
        {0, 4, {0, op::optimizer_step, 0}, 5.0, 6.0},
    };
    CHECK(ps::render_terminal_timeline(mixed) ==
          "rank 0 |F0-...B0----G--O--|\n"
          "time    0     2     4\n"
          "F forward, B backward, G grad sync, O optimizer step, . idle; F3-- = microbatch 3; "
          "3 columns per unit\n");
}

} // namespace
