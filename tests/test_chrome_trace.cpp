// write_chrome_trace(): exact JSON for tiny schedules worked out by hand, and properties
// (one X event per action, one flow per cross-rank dependency, categories, tracks) over shapes.
// tests/tools/check_trace.py parses a larger trace with a real JSON parser.
#include "test_support.hpp"

#include <pipesched/io/chrome_trace.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ps = pipesched;

namespace {

using ps::backward_kind;
using ps::op;
using pipesched_test::lines_of;

PIPESCHED_VERIFY(ps::timeline_sink<ps::chrome_trace_sink>);
PIPESCHED_VERIFY(ps::trace_category(op::forward) == "forward");
PIPESCHED_VERIFY(ps::trace_category(op::backward) == "backward");
PIPESCHED_VERIFY(ps::trace_category(op::backward_input) == "backward_input");
PIPESCHED_VERIFY(ps::trace_category(op::backward_weight) == "backward_weight");
PIPESCHED_VERIFY(ps::trace_category(op::send_activation) == "communication");
PIPESCHED_VERIFY(ps::trace_category(op::recv_gradient) == "communication");
PIPESCHED_VERIFY(ps::trace_category(op::grad_sync) == "iteration");
PIPESCHED_VERIFY(ps::trace_category(op::grad_norm) == "iteration");
PIPESCHED_VERIFY(ps::trace_category(op::optimizer_step) == "iteration");
PIPESCHED_VERIFY(ps::trace_category(op::param_gather) == "iteration");
PIPESCHED_VERIFY(ps::trace_category(op::loss) == "iteration");
PIPESCHED_VERIFY(ps::trace_category(op::recompute) == "iteration");
PIPESCHED_VERIFY(ps::trace_category(static_cast<op>(200)) == "iteration"); // an op added later
PIPESCHED_VERIFY(ps::trace_tid(ps::trace_track::compute, 2, 4) == 2);
PIPESCHED_VERIFY(ps::trace_tid(ps::trace_track::communication, 2, 4) == 6);
PIPESCHED_VERIFY(ps::trace_tid(ps::trace_track::iteration, 2, 4) == 10);

template <class P>
ps::chrome_trace_sink trace_of(const P& pol, const ps::cost_model& costs = {}) {
    ps::chrome_trace_sink sink;
    const ps::simulation s = ps::simulate(pol, costs, sink);
    REQUIRE(s);
    return sink;
}

/// The text of the first `"key":value` in a one-line event (quotes kept for strings).
std::string field(const std::string& line, std::string_view key) {
    const std::string needle = "\"" + std::string{key} + "\":";
    const std::size_t at = line.find(needle);
    if (at == std::string::npos) return {};
    const std::size_t from = at + needle.size();
    std::size_t to = from;
    if (line[from] == '"') {
        to = line.find('"', from + 1) + 1;
    } else {
        while (to < line.size() && line[to] != ',' && line[to] != '}') ++to;
    }
    return line.substr(from, to - from);
}

std::vector<std::string> events_with(const std::vector<std::string>& lines, std::string_view ph) {
    std::vector<std::string> out;
    const std::string want = "\"" + std::string{ph} + "\"";
    for (const std::string& line : lines) {
        if (field(line, "ph") == want) out.push_back(line);
    }
    return out;
}

TEST_CASE("chrome trace: GPipe p=1 m=2, by hand") {
    // F = 1 unit = 1000 us, B = 2000 us, back to back; one rank, so no flows.
    const auto sink = trace_of(ps::gpipe<>{{.ranks = 1, .microbatches = 2, .chunks = 1}});
    CHECK(sink.str() ==
          "{\"traceEvents\":[\n"
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"pipesched\"}},\n"
          "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"rank 0\"}},\n"
          "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"sort_index\":0}},\n"
          "{\"name\":\"0F0\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":0,\"dur\":1000,\"pid\":1,\"tid\":0,"
          "\"args\":{\"stage\":0,\"chunk\":0,\"microbatch\":0,\"rank\":0}},\n"
          "{\"name\":\"0F1\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":1000,\"dur\":1000,\"pid\":1,\"tid\":0,"
          "\"args\":{\"stage\":0,\"chunk\":0,\"microbatch\":1,\"rank\":0}},\n"
          "{\"name\":\"0B0\",\"cat\":\"backward\",\"ph\":\"X\",\"ts\":2000,\"dur\":2000,\"pid\":1,\"tid\":0,"
          "\"args\":{\"stage\":0,\"chunk\":0,\"microbatch\":0,\"rank\":0}},\n"
          "{\"name\":\"0B1\",\"cat\":\"backward\",\"ph\":\"X\",\"ts\":4000,\"dur\":2000,\"pid\":1,\"tid\":0,"
          "\"args\":{\"stage\":0,\"chunk\":0,\"microbatch\":1,\"rank\":0}}\n"
          "],\n"
          "\"displayTimeUnit\":\"ms\",\n"
          "\"otherData\":{\"generator\":\"pipesched\",\"microseconds_per_unit\":1000}}\n");
}

TEST_CASE("chrome trace: 1F1B p=2 m=2, by hand") {
    // Rank 0: F0 [0,1] F1 [1,2] B0 [4,6] B1 [7,9]; rank 1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7].
    // Four cross-rank dependencies: 0F0 -> 1F0, 0F1 -> 1F1, 1B0 -> 0B0, 1B1 -> 0B1, each
    // drawn from 1 us before the producer's end to 1 us after the consumer's start. Flows are
    // numbered in the order of their consumers (rank 0's first).
    const auto sink = trace_of(ps::one_f_one_b<>{{.ranks = 2, .microbatches = 2, .chunks = 1}});
    CHECK(sink.str() ==
          "{\"traceEvents\":[\n"
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"pipesched\"}},\n"
          "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"rank 0\"}},\n"
          "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"sort_index\":0}},\n"
          "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"rank 1\"}},\n"
          "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"sort_index\":3}},\n"
          "{\"name\":\"0F0\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":0,\"dur\":1000,\"pid\":1,\"tid\":0,"
          "\"args\":{\"stage\":0,\"chunk\":0,\"microbatch\":0,\"rank\":0}},\n"
          "{\"name\":\"0F1\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":1000,\"dur\":1000,\"pid\":1,\"tid\":0,"
          "\"args\":{\"stage\":0,\"chunk\":0,\"microbatch\":1,\"rank\":0}},\n"
          "{\"name\":\"0B0\",\"cat\":\"backward\",\"ph\":\"X\",\"ts\":4000,\"dur\":2000,\"pid\":1,\"tid\":0,"
          "\"args\":{\"stage\":0,\"chunk\":0,\"microbatch\":0,\"rank\":0}},\n"
          "{\"name\":\"0B1\",\"cat\":\"backward\",\"ph\":\"X\",\"ts\":7000,\"dur\":2000,\"pid\":1,\"tid\":0,"
          "\"args\":{\"stage\":0,\"chunk\":0,\"microbatch\":1,\"rank\":0}},\n"
          "{\"name\":\"1F0\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":1000,\"dur\":1000,\"pid\":1,\"tid\":1,"
          "\"args\":{\"stage\":1,\"chunk\":0,\"microbatch\":0,\"rank\":1}},\n"
          "{\"name\":\"1B0\",\"cat\":\"backward\",\"ph\":\"X\",\"ts\":2000,\"dur\":2000,\"pid\":1,\"tid\":1,"
          "\"args\":{\"stage\":1,\"chunk\":0,\"microbatch\":0,\"rank\":1}},\n"
          "{\"name\":\"1F1\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":4000,\"dur\":1000,\"pid\":1,\"tid\":1,"
          "\"args\":{\"stage\":1,\"chunk\":0,\"microbatch\":1,\"rank\":1}},\n"
          "{\"name\":\"1B1\",\"cat\":\"backward\",\"ph\":\"X\",\"ts\":5000,\"dur\":2000,\"pid\":1,\"tid\":1,"
          "\"args\":{\"stage\":1,\"chunk\":0,\"microbatch\":1,\"rank\":1}},\n"
          "{\"name\":\"gradient\",\"cat\":\"dependency\",\"ph\":\"s\",\"id\":1,\"ts\":3999,\"pid\":1,\"tid\":1},\n"
          "{\"name\":\"gradient\",\"cat\":\"dependency\",\"ph\":\"f\",\"bp\":\"e\",\"id\":1,\"ts\":4001,\"pid\":1,\"tid\":0},\n"
          "{\"name\":\"gradient\",\"cat\":\"dependency\",\"ph\":\"s\",\"id\":2,\"ts\":6999,\"pid\":1,\"tid\":1},\n"
          "{\"name\":\"gradient\",\"cat\":\"dependency\",\"ph\":\"f\",\"bp\":\"e\",\"id\":2,\"ts\":7001,\"pid\":1,\"tid\":0},\n"
          "{\"name\":\"activation\",\"cat\":\"dependency\",\"ph\":\"s\",\"id\":3,\"ts\":999,\"pid\":1,\"tid\":0},\n"
          "{\"name\":\"activation\",\"cat\":\"dependency\",\"ph\":\"f\",\"bp\":\"e\",\"id\":3,\"ts\":1001,\"pid\":1,\"tid\":1},\n"
          "{\"name\":\"activation\",\"cat\":\"dependency\",\"ph\":\"s\",\"id\":4,\"ts\":1999,\"pid\":1,\"tid\":0},\n"
          "{\"name\":\"activation\",\"cat\":\"dependency\",\"ph\":\"f\",\"bp\":\"e\",\"id\":4,\"ts\":4001,\"pid\":1,\"tid\":1}\n"
          "],\n"
          "\"displayTimeUnit\":\"ms\",\n"
          "\"otherData\":{\"generator\":\"pipesched\",\"microseconds_per_unit\":1000}}\n");
}

/// Cross-rank dependencies from the policy's placement alone: for every pair of adjacent
/// stages on different ranks, each microbatch sends one activation and one gradient.
template <class P>
std::size_t expected_flows(const P& pol) {
    const ps::shape dims = pol.shape;
    std::size_t count = 0;
    for (std::uint32_t s = 0; s + 1 < dims.stages(); ++s) {
        if (ps::locate_stage(P::layout, dims.ranks, s).rank !=
            ps::locate_stage(P::layout, dims.ranks, s + 1).rank) {
            count += 2 * std::size_t{dims.microbatches};
        }
    }
    return count;
}

template <class P>
void check_trace_properties(const P& pol) {
    const ps::shape dims = pol.shape;
    INFO(P::name << " p=" << dims.ranks << " m=" << dims.microbatches << " v=" << dims.chunks);
    ps::cost_model costs{};
    costs.p2p_latency = 0.25;
    const auto sink = trace_of(pol, costs);
    const auto lines = lines_of(sink.str());
    const auto slices = events_with(lines, "X");
    const auto starts = events_with(lines, "s");
    const auto finishes = events_with(lines, "f");
    CHECK(slices.size() == ps::event_count(pol));
    CHECK(slices.size() == sink.size());
    CHECK(starts.size() == expected_flows(pol));
    CHECK(finishes.size() == expected_flows(pol));
    // Flow ids 1..n, each once as s and once as f, in the same order; the arrow goes forward in
    // time (by at least the latency) and from one rank to another.
    for (std::size_t k = 0; k < starts.size() && k < finishes.size(); ++k) {
        CHECK(field(starts[k], "id") == std::to_string(k + 1));
        CHECK(field(finishes[k], "id") == std::to_string(k + 1));
        CHECK(field(finishes[k], "bp") == "\"e\"");
        CHECK(field(starts[k], "name") == field(finishes[k], "name"));
        CHECK(field(starts[k], "tid") != field(finishes[k], "tid"));
        CHECK(std::stod(field(finishes[k], "ts")) >= std::stod(field(starts[k], "ts")) + 250.0);
    }
    // One compute track per rank: tid = rank, named "rank r".
    for (std::uint32_t r = 0; r < dims.ranks; ++r) {
        const std::string name = "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" +
                                 std::to_string(r) + ",\"args\":{\"name\":\"rank " +
                                 std::to_string(r) + "\"}}";
        CHECK(std::count(lines.begin(), lines.end(), name + ",") == 1);
    }
    // Chunk and stage in the args agree with the policy's placement.
    for (const std::string& line : slices) {
        const auto stage = static_cast<std::uint32_t>(std::stoul(field(line, "stage")));
        const ps::rank_chunk where = ps::locate_stage(P::layout, dims.ranks, stage);
        CHECK(field(line, "chunk") == std::to_string(where.chunk));
        CHECK(field(line, "rank") == std::to_string(where.rank));
        CHECK(field(line, "tid") == std::to_string(where.rank));
    }
}

TEST_CASE("chrome trace: events and flows over policies and shapes") {
    for (std::uint32_t p = 1; p <= 4; ++p) {
        for (std::uint32_t m = 1; m <= 9; m += 4) {
            check_trace_properties(ps::gpipe<>{{.ranks = p, .microbatches = m, .chunks = 1}});
            check_trace_properties(ps::one_f_one_b<backward_kind::split>{{.ranks = p, .microbatches = m, .chunks = 1}});
            for (std::uint32_t v = 2; v <= 3; ++v) {
                check_trace_properties(ps::looped_bfs<>{{.ranks = p, .microbatches = m, .chunks = v}});
                const ps::interleaved_1f1b<backward_kind::split> inter{{.ranks = p, .microbatches = m, .chunks = v}};
                if (inter.check()) check_trace_properties(inter);
            }
        }
    }
}

TEST_CASE("chrome trace: a split backward is backward_input and backward_weight, not communication") {
    const ps::interleaved_1f1b<backward_kind::split> pol{{.ranks = 4, .microbatches = 8, .chunks = 2}};
    const auto sink = trace_of(pol);
    const auto slices = events_with(lines_of(sink.str()), "X");
    std::map<std::string, std::size_t> by_category;
    for (const std::string& line : slices) {
        const std::string name = field(line, "name");
        const std::string cat = field(line, "cat");
        ++by_category[cat];
        const char letter = name[name.find_first_not_of("0123456789", 1)];
        switch (letter) {
        case 'F': CHECK(cat == "\"forward\""); break;
        case 'I': CHECK(cat == "\"backward_input\""); break;
        case 'W': CHECK(cat == "\"backward_weight\""); break;
        default: FAIL("unexpected action " << name);
        }
    }
    CHECK(by_category.size() == 3);
    CHECK(by_category["\"forward\""] == 64);
    CHECK(by_category["\"backward_input\""] == 64);
    CHECK(by_category["\"backward_weight\""] == 64);
    CHECK(sink.str().find("communication") == std::string::npos);
    // W needs nothing from another rank: the gradient flows start and end at I's.
    CHECK(expected_flows(pol) == 2 * 8 * 7);
}

TEST_CASE("chrome trace: p2p and iteration ops get tracks of their own") {
    // Hand-made records: two ranks; rank 1 has a send, a loss, a grad_sync and an optimizer step.
    const std::vector<ps::timed_action> records{
        {0, 0, {0, op::forward, 0}, 0.0, 1.0},
        {1, 0, {1, op::forward, 0}, 1.0, 2.0},
        {1, 1, {1, op::loss, 0}, 2.0, 2.5},
        {1, 2, {1, op::backward, 0}, 2.5, 4.5},
        {1, 3, {1, op::send_gradient, 0}, 4.5, 4.75},
        {0, 1, {0, op::backward, 0}, 4.75, 6.75},
        {1, 4, {1, op::grad_sync, 0}, 4.75, 5.75},
        {1, 5, {1, op::optimizer_step, 0}, 6.75, 7.0},
    };
    const auto lines = lines_of(ps::chrome_trace(records));
    const auto slices = events_with(lines, "X");
    REQUIRE(slices.size() == records.size());
    std::map<std::string, std::pair<std::string, std::string>> cat_and_tid;
    for (const std::string& line : slices) {
        cat_and_tid[field(line, "name")] = {field(line, "cat"), field(line, "tid")};
    }
    using pair = std::pair<std::string, std::string>;
    CHECK(cat_and_tid["\"1F0\""] == pair{"\"forward\"", "1"});
    CHECK(cat_and_tid["\"loss s1 mb0\""] == pair{"\"iteration\"", "5"});
    CHECK(cat_and_tid["\"send_gradient s1 mb0\""] == pair{"\"communication\"", "3"});
    CHECK(cat_and_tid["\"grad_sync s1 mb0\""] == pair{"\"iteration\"", "5"});
    CHECK(cat_and_tid["\"optimizer_step s1 mb0\""] == pair{"\"iteration\"", "5"});
    const std::string text = ps::chrome_trace(records);
    CHECK(text.find("\"tid\":3,\"args\":{\"name\":\"rank 1 communication\"}") != std::string::npos);
    CHECK(text.find("\"tid\":3,\"args\":{\"sort_index\":4}") != std::string::npos);
    CHECK(text.find("\"tid\":5,\"args\":{\"name\":\"rank 1 iteration\"}") != std::string::npos);
    CHECK(text.find("\"tid\":5,\"args\":{\"sort_index\":5}") != std::string::npos);
    // Rank 0 has no such ops and gets no such tracks.
    CHECK(text.find("rank 0 communication") == std::string::npos);
    CHECK(text.find("rank 0 iteration") == std::string::npos);
    // Only compute ops make flows: 0F0 -> 1F0 and 1B0 -> 0B0.
    CHECK(events_with(lines, "s").size() == 2);
    // Fractional times keep their digits.
    CHECK(text.find("\"name\":\"send_gradient s1 mb0\",\"cat\":\"communication\",\"ph\":\"X\","
                    "\"ts\":4500,\"dur\":250,") != std::string::npos);
}

TEST_CASE("chrome trace: options, escaping and determinism") {
    const auto sink = trace_of(ps::one_f_one_b<>{{.ranks = 3, .microbatches = 4, .chunks = 1}});
    ps::trace_options o{};
    o.process_name = "1F1B \"p=3\" \\ m=4\n\t\x01";
    o.microseconds_per_unit = 0.5;
    o.pid = 7;
    o.flows = false;
    const std::string text = sink.str(o);
    CHECK(text.find("\"args\":{\"name\":\"1F1B \\\"p=3\\\" \\\\ m=4\\n\\t\\u0001\"}") != std::string::npos);
    CHECK(text.find("\"ph\":\"s\"") == std::string::npos);
    CHECK(text.find("\"pid\":1,") == std::string::npos);
    CHECK(text.find("\"name\":\"2B0\",\"cat\":\"backward\",\"ph\":\"X\",\"ts\":1.5,\"dur\":1,\"pid\":7,\"tid\":2")
          != std::string::npos);
    CHECK(text.find("\"microseconds_per_unit\":0.5}") != std::string::npos);
    o.microseconds_per_unit = -1.0; // falls back to the default
    CHECK(sink.str(o).find("\"name\":\"2B0\",\"cat\":\"backward\",\"ph\":\"X\",\"ts\":3000,\"dur\":2000,")
          != std::string::npos);

    // The order the simulator pushed the records in does not matter.
    std::vector<ps::timed_action> shuffled(sink.records().begin(), sink.records().end());
    std::reverse(shuffled.begin(), shuffled.end());
    std::rotate(shuffled.begin(), shuffled.begin() + 5, shuffled.end());
    CHECK(ps::chrome_trace(shuffled) == sink.str());
    std::ostringstream os;
    ps::write_chrome_trace(os, sink.records());
    CHECK(os.str() == sink.str());
    std::ostringstream os2;
    sink.write(os2);
    CHECK(os2.str() == sink.str());
    // With the simulation's stage map instead of the one read off the records: the same text
    // (a V schedule, whose chunks are not stage / p).
    ps::chrome_trace_sink v_sink;
    const ps::simulation v_sim = ps::simulate(ps::zbv{{.ranks = 3, .microbatches = 6, .chunks = 2}}, ps::cost_model{}, v_sink);
    REQUIRE(v_sim);
    std::ostringstream os3;
    ps::write_chrome_trace(os3, v_sink.records(), {}, v_sim.stages);
    CHECK(os3.str() == v_sink.str());

    ps::chrome_trace_sink empty;
    CHECK(empty.str() == "{\"traceEvents\":[\n"
                         "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"pipesched\"}}\n"
                         "],\n"
                         "\"displayTimeUnit\":\"ms\",\n"
                         "\"otherData\":{\"generator\":\"pipesched\",\"microseconds_per_unit\":1000}}\n");
    ps::chrome_trace_sink copy = sink;
    copy.clear();
    CHECK(copy.size() == 0);
}

} // namespace

// --- chrome_trace_stream: the same trace, written as records arrive ------------------------------

namespace {

/// The lines of `text` for one ph, sorted, with any trailing ',' removed.
std::vector<std::string> sorted_events(const std::string& text, std::string_view ph) {
    std::vector<std::string> out;
    for (std::string line : events_with(lines_of(text), ph)) {
        if (!line.empty() && line.back() == ',') line.pop_back();
        out.push_back(std::move(line));
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// Takes the policy as an any_schedule: the stream and the batch writer are compared on the
/// policy's events, and are compiled per placement rather than per policy type.
template <ps::placement L>
void check_stream_matches_batch(const ps::any_schedule<L>& pol) {
    using P = ps::any_schedule<L>;
    const ps::shape dims = pol.shape;
    INFO(pol.policy_name() << " p=" << dims.ranks << " m=" << dims.microbatches << " v=" << dims.chunks);
    ps::cost_model costs{};
    costs.p2p_latency = 0.25;
    const std::string batch = trace_of(pol, costs).str({.process_name = "x"});
    std::string streamed;
    std::size_t writes = 0;
    const auto write = [&](std::string_view piece) {
        streamed += piece;
        ++writes;
    };
    ps::chrome_trace_stream<decltype(write)> stream{write, P::layout, dims, {.process_name = "x"}};
    REQUIRE(ps::simulate(pol, costs, stream));
    stream.finish();
    stream.finish(); // only the first call writes
    CHECK(writes >= 1);
    // Same slices and metadata, byte for byte, in another order; same start and end of file.
    CHECK(sorted_events(streamed, "X") == sorted_events(batch, "X"));
    CHECK(sorted_events(streamed, "M") == sorted_events(batch, "M"));
    CHECK(streamed.substr(0, 16) == batch.substr(0, 16));
    CHECK(streamed.substr(streamed.size() - 80) == batch.substr(batch.size() - 80));
    // The same number of flows; each id once as s and once as f, s no later than f, on two ranks.
    const auto starts = sorted_events(streamed, "s");
    const auto finishes = sorted_events(streamed, "f");
    CHECK(starts.size() == expected_flows(pol));
    CHECK(finishes.size() == starts.size());
    std::map<std::string, std::string> start_of;
    for (const std::string& s : starts) start_of[field(s, "id")] = s;
    CHECK(start_of.size() == starts.size());
    for (const std::string& f : finishes) {
        const auto it = start_of.find(field(f, "id"));
        REQUIRE(it != start_of.end());
        CHECK(field(it->second, "name") == field(f, "name"));
        CHECK(field(it->second, "tid") != field(f, "tid"));
        CHECK(std::stod(field(f, "ts")) >= std::stod(field(it->second, "ts")) + 250.0);
    }
}

} // namespace

TEST_CASE("chrome trace stream: the batch writer's slices and metadata, flows matched by id") {
    for (std::uint32_t p = 1; p <= 4; ++p) {
        for (std::uint32_t m = 1; m <= 9; m += 4) {
            using loop = ps::any_schedule<ps::placement::loop>;
            using v_shape = ps::any_schedule<ps::placement::v_shape>;
            check_stream_matches_batch(loop{ps::gpipe<>{{.ranks = p, .microbatches = m, .chunks = 1}}});
            check_stream_matches_batch(loop{ps::one_f_one_b<backward_kind::split>{{.ranks = p, .microbatches = m, .chunks = 1}}});
            check_stream_matches_batch(loop{ps::looped_bfs<>{{.ranks = p, .microbatches = m, .chunks = 2}}});
            if (m >= 2 * p) check_stream_matches_batch(v_shape{ps::dualpipe_v{{.ranks = p, .microbatches = m, .chunks = 2}}});
        }
    }
}

TEST_CASE("chrome trace stream: memory does not grow with the trace") {
    // 1F1B p = 8, m = 4096: 65536 slices, about 12 MB of JSON, handed out in pieces of at most
    // a little over 64 KiB; the stream keeps nothing else that grows with the records.
    const ps::one_f_one_b<> pol{{.ranks = 8, .microbatches = 4096, .chunks = 1}};
    std::size_t total = 0;
    std::size_t largest = 0;
    std::size_t slices = 0;
    const auto write = [&](std::string_view piece) {
        total += piece.size();
        largest = std::max(largest, piece.size());
        for (std::size_t at = piece.find("\"ph\":\"X\""); at != std::string_view::npos;
             at = piece.find("\"ph\":\"X\"", at + 1)) {
            ++slices;
        }
    };
    ps::chrome_trace_stream<decltype(write)> stream{write, ps::placement::loop, pol.shape};
    REQUIRE(ps::simulate(pol, {}, stream));
    stream.finish();
    CHECK(slices == ps::event_count(pol));
    CHECK(total > 10'000'000);
    CHECK(largest < (std::size_t{1} << 16) + 1024);
}
