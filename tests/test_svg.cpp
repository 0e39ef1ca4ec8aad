// to_svg(): the diagram is well-formed XML (checked by a small parser below), holds exactly one
// action box per timed action with its op's class and color, escapes its text, and stays
// bounded when it has to thin out.
#include "test_support.hpp"

#include <pipesched/io/svg.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ps = pipesched;

namespace {

using ps::op;
using ps::detail::svg_kind;

PIPESCHED_VERIFY(ps::detail::svg_kind_of(op::backward_input, false) == svg_kind::input);
PIPESCHED_VERIFY(ps::detail::svg_kind_of(op::backward, true) == svg_kind::pair);
PIPESCHED_VERIFY(ps::detail::style_of(svg_kind::forward).cls == "ps-F");
PIPESCHED_VERIFY(ps::detail::in_communication_lane(op::send_activation) && ps::detail::in_communication_lane(op::grad_sync) &&
                 !ps::detail::in_communication_lane(op::grad_norm));
PIPESCHED_VERIFY(ps::detail::xml_char_length("\xC3\xA9", 0) == 2);     // e acute
PIPESCHED_VERIFY(ps::detail::xml_char_length("\xC0\xAF", 0) == 0);     // overlong '/'
PIPESCHED_VERIFY(ps::detail::xml_char_length("\xED\xA0\x80", 0) == 0); // a surrogate
PIPESCHED_VERIFY(ps::detail::xml_char_length("\xEF\xBF\xBF", 0) == 0); // U+FFFF
PIPESCHED_VERIFY(ps::detail::xml_char_length("\x01", 0) == 0);         // a control character

namespace svg_test {

/// One element of a parsed document: its name, attributes and the text directly inside it.
struct element {
    std::string name;
    std::map<std::string, std::string> attributes;
    std::string text;
};

/// A well-formedness check of the XML subset an SVG writer needs (elements, attributes in
/// double or single quotes, character data, the five predefined entities and numeric
/// character references): returns every element in document order, or fails the test with
/// where the text stops being well-formed.
std::vector<element> parse_xml(std::string_view s) {
    std::vector<element> out;
    std::vector<std::size_t> open;
    std::size_t i = 0;
    bool root_seen = false;
    const auto fail = [&](std::string_view why) {
        FAIL_CHECK("not well-formed at byte " << i << ": " << std::string{why});
        return std::vector<element>{};
    };
    const auto is_name = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
               c == ':' || c == '.';
    };
    // Character data or an attribute value up to `end`: only known entities after '&', no '<'.
    const auto check_text = [&](std::string_view t, std::string& decoded) {
        for (std::size_t k = 0; k < t.size(); ++k) {
            if (t[k] == '<') return false;
            const std::size_t n = ps::detail::xml_char_length(t, k);
            if (n == 0) return false;
            if (t[k] != '&') {
                decoded += t.substr(k, n);
                k += n - 1;
                continue;
            }
            const std::size_t semi = t.find(';', k);
            if (semi == std::string_view::npos) return false;
            const std::string_view name = t.substr(k + 1, semi - k - 1);
            static const std::map<std::string_view, char> known{{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
            if (const auto it = known.find(name); it != known.end()) decoded += it->second;
            else if (name.size() < 2 || name[0] != '#') return false;
            k = semi;
        }
        return true;
    };
    while (i < s.size()) {
        if (s[i] != '<') {
            const std::size_t next = std::min(s.find('<', i), s.size());
            std::string decoded;
            if (!check_text(s.substr(i, next - i), decoded)) return fail("bad character data");
            if (open.empty() && decoded.find_first_not_of(" \n\t\r") != std::string::npos)
                return fail("text outside the root element");
            if (!open.empty()) out[open.back()].text += decoded;
            i = next;
            continue;
        }
        if (s.substr(i, 2) == "</") {
            std::size_t k = i + 2;
            while (k < s.size() && is_name(s[k])) ++k;
            const std::string name{s.substr(i + 2, k - i - 2)};
            if (k >= s.size() || s[k] != '>') return fail("bad end tag");
            if (open.empty() || out[open.back()].name != name) return fail("end tag " + name + " does not match");
            open.pop_back();
            i = k + 1;
            continue;
        }
        std::size_t k = i + 1;
        while (k < s.size() && is_name(s[k])) ++k;
        element e{std::string{s.substr(i + 1, k - i - 1)}, {}, {}};
        if (e.name.empty()) return fail("expected an element name");
        if (open.empty() && root_seen) return fail("a second root element");
        root_seen = true;
        bool closed = false;
        while (true) {
            while (k < s.size() && (s[k] == ' ' || s[k] == '\n')) ++k;
            if (k >= s.size()) return fail("unterminated tag");
            if (s[k] == '>') {
                ++k;
                break;
            }
            if (s.substr(k, 2) == "/>") {
                k += 2;
                closed = true;
                break;
            }
            const std::size_t name_begin = k;
            while (k < s.size() && is_name(s[k])) ++k;
            const std::string attribute{s.substr(name_begin, k - name_begin)};
            if (attribute.empty() || k + 1 >= s.size() || s[k] != '=' || (s[k + 1] != '"' && s[k + 1] != '\''))
                return fail("bad attribute");
            const char quote = s[k + 1];
            const std::size_t end = s.find(quote, k + 2);
            if (end == std::string_view::npos) return fail("unterminated attribute");
            std::string value;
            if (!check_text(s.substr(k + 2, end - k - 2), value)) return fail("bad attribute value");
            if (!e.attributes.emplace(attribute, value).second) return fail("attribute repeated: " + attribute);
            k = end + 1;
        }
        out.push_back(std::move(e));
        if (!closed) open.push_back(out.size() - 1);
        i = k;
    }
    if (!open.empty() || !root_seen) return fail("the document ends inside an element");
    return out;
}

/// The rects of each class, and the known background and legend ones apart.
struct census {
    std::map<std::string, std::size_t> by_class;
    std::size_t actions = 0; ///< rects of an op's class (not background or legend)
    std::map<std::string, std::string> fill_of_class;
    bool one_fill_per_class = true;
};

census count_rects(const std::vector<element>& doc) {
    census c;
    for (const element& e : doc) {
        if (e.name != "rect") continue;
        const std::string cls = e.attributes.count("class") != 0 ? e.attributes.at("class") : "";
        ++c.by_class[cls];
        if (cls == "ps-page" || cls == "ps-idle" || cls == "ps-lane" || cls == "ps-key") continue;
        ++c.actions;
        const std::string fill = e.attributes.at("fill");
        const auto [it, fresh] = c.fill_of_class.emplace(cls, fill);
        if (!fresh && it->second != fill) c.one_fill_per_class = false;
    }
    return c;
}

template <class P>
std::string svg_of(const P& pol, std::vector<ps::timed_action>& records, const ps::svg_options& o = {},
                   const ps::cost_model& costs = {}) {
    pipesched_test::recording_timeline rec;
    const ps::simulation sim = ps::simulate(pol, costs, rec);
    REQUIRE(sim);
    records = rec.records;
    return ps::to_svg(records, sim, o);
}

std::size_t occurrences(std::string_view s, std::string_view what) {
    std::size_t n = 0;
    for (std::size_t at = s.find(what); at != std::string_view::npos; at = s.find(what, at + 1)) ++n;
    return n;
}

} // namespace svg_test

TEST_CASE("to_svg: 1F1B p=4 m=8 has one box per action, colored per op, with the title's bubble") {
    std::vector<ps::timed_action> records;
    const std::string svg = svg_test::svg_of(ps::one_f_one_b<>{{4, 8, 1}}, records, {.title = "1F1B p=4 m=8"});
    const auto doc = svg_test::parse_xml(svg);
    REQUIRE(!doc.empty());
    CHECK(doc.front().name == "svg");
    svg_test::census c = svg_test::count_rects(doc);
    REQUIRE(records.size() == 64);
    CHECK(c.actions == records.size());
    CHECK(c.by_class["ps-F"] == 32);
    CHECK(c.by_class["ps-B"] == 32);
    CHECK(c.by_class["ps-page"] == 1);
    CHECK(c.by_class["ps-idle"] == 4); // one idle band per rank
    CHECK(c.by_class["ps-lane"] == 0); // no communication
    CHECK(c.by_class["ps-key"] == 3);  // forward, backward, idle
    CHECK(c.one_fill_per_class);
    CHECK(c.fill_of_class["ps-F"] == "#4e79a7");
    CHECK(c.fill_of_class["ps-B"] == "#59a14f");
    // The title and the summary line; the bubble by hand: 3 of 11 slots of F + B.
    CHECK(doc[1].name == "title");
    CHECK(doc[1].text == "1F1B p=4 m=8");
    CHECK(svg.find("bubble fraction 0.273, makespan 33 (cost units), 4 ranks, 64 actions") != std::string::npos);
    // Rank 0's fourth action is 0F3 from 3 to 4; rank 3 starts at 3 (three hops of F = 1).
    CHECK(svg.find("<title>rank 0: 0F3, 3 to 4</title>") != std::string::npos);
    CHECK(svg.find("<title>rank 3: 3F0, 3 to 4</title>") != std::string::npos);
    CHECK(svg.find("<title>rank 0: 0B7, 31 to 33</title>") != std::string::npos);
    // Every action's box is 22 pixels per unit wide (the shortest action, F = 1, gets 22).
    std::size_t f_boxes = 0;
    for (const auto& e : doc) {
        if (e.name == "rect" && e.attributes.at("class") == "ps-F") f_boxes += e.attributes.at("width") == "22" ? 1 : 0;
        if (e.name == "rect" && e.attributes.at("class") == "ps-B") CHECK(e.attributes.at("width") == "44");
    }
    CHECK(f_boxes == 32);
    // Each box shows its microbatch: 64 labels, eight of each number; axis ticks every 5 units.
    std::map<std::string, std::size_t> labels;
    for (const auto& e : doc) {
        if (e.name == "text" && e.attributes.count("font-size") != 0 && e.text.size() == 1 && e.attributes.count("x") != 0)
            ++labels[e.text];
    }
    for (char mb = '0'; mb <= '7'; ++mb) CHECK(labels[std::string(1, mb)] >= 8);
    CHECK(svg.find(">30</text>") != std::string::npos);
    CHECK(svg.find(">35</text>") == std::string::npos); // beyond the makespan
    CHECK(svg.find("time (cost units)") != std::string::npos);
    // Deterministic.
    std::vector<ps::timed_action> again;
    CHECK(svg_test::svg_of(ps::one_f_one_b<>{{4, 8, 1}}, again, {.title = "1F1B p=4 m=8"}) == svg);
}

TEST_CASE("to_svg: split backward, two chunks, overlapped pairs") {
    std::vector<ps::timed_action> records;
    SUBCASE("ZB-V: F, I, W boxes; chunk 1 lighter") {
        const std::string svg = svg_test::svg_of(ps::zbv{{4, 8, 2}}, records);
        svg_test::census c = svg_test::count_rects(svg_test::parse_xml(svg));
        CHECK(c.actions == records.size());
        CHECK(c.by_class["ps-F"] == 64);
        CHECK(c.by_class["ps-I"] == 64);
        CHECK(c.by_class["ps-W"] == 64);
        CHECK(c.one_fill_per_class);
        CHECK(c.by_class["ps-key"] == 4);
        CHECK(svg_test::occurrences(svg, "fill-opacity=\"0.6\"") == 96); // every action of chunk 1
        CHECK(svg.find("lighter: odd chunk") != std::string::npos);
    }
    SUBCASE("DualPipeV: each overlapped pair is two half-height boxes over the same time") {
        const std::string svg = svg_test::svg_of(ps::dualpipe_v{{4, 10, 2}}, records);
        const auto doc = svg_test::parse_xml(svg);
        svg_test::census c = svg_test::count_rects(doc);
        CHECK(c.actions == records.size());
        std::size_t flagged = 0;
        for (const auto& t : records) flagged += t.what.overlapped_with_next ? 1 : 0;
        REQUIRE(flagged > 0);
        CHECK(c.by_class["ps-FB"] == 2 * flagged);
        std::vector<std::size_t> pairs; // positions in the document; each is followed by its <title>
        for (std::size_t k = 0; k < doc.size(); ++k) {
            if (doc[k].name == "rect" && doc[k].attributes.at("class") == "ps-FB") pairs.push_back(k);
        }
        // In rank-time order the F (upper half) comes right before its B or I (lower half).
        for (std::size_t k = 0; k + 1 < pairs.size(); k += 2) {
            const svg_test::element& f = doc[pairs[k]];
            const svg_test::element& b = doc[pairs[k + 1]];
            CHECK(f.attributes.at("x") == b.attributes.at("x"));
            CHECK(f.attributes.at("width") == b.attributes.at("width"));
            CHECK(f.attributes.at("height") == "11");
            CHECK(std::stod(b.attributes.at("y")) == std::stod(f.attributes.at("y")) + 11.0);
            CHECK(doc[pairs[k] + 1].text.find("F") != std::string::npos);
            const bool backward = doc[pairs[k + 1] + 1].text.find("B") != std::string::npos ||
                                  doc[pairs[k + 1] + 1].text.find("I") != std::string::npos;
            CHECK(backward);
        }
    }
}

TEST_CASE("to_svg: an iteration draws communication on a lane of its own and the optimizer in its color") {
    const ps::one_f_one_b<> pol{{4, 8, 1}};
    pipesched_test::recording_timeline rec;
    ps::iteration_cost_model costs{};
    costs.p2p.latency = 0.25;
    costs.optimizer = 2.0;
    costs.grad_norm = 0.5;
    costs.data_parallel.latency = 1.5;
    ps::as_timed_actions<pipesched_test::recording_timeline> adapter{&rec, ps::placement::loop, 4};
    const ps::iteration_simulation sim = ps::simulate(ps::iteration{pol}, costs, adapter);
    REQUIRE(sim.replayed);
    const std::string svg = ps::to_svg(rec.records, sim, {.title = "1F1B iteration"});
    const auto doc = svg_test::parse_xml(svg);
    svg_test::census c = svg_test::count_rects(doc);
    CHECK(c.actions == rec.records.size());
    CHECK(c.by_class["ps-lane"] == 4);
    CHECK(c.by_class["ps-O"] == 4);
    CHECK(c.by_class["ps-G"] == 4);
    CHECK(c.by_class["ps-N"] == 4);
    CHECK(c.by_class["ps-L"] == 8);
    CHECK(c.by_class["ps-P2P"] > 0);
    CHECK(c.fill_of_class["ps-O"] == "#e15759");
    CHECK(c.one_fill_per_class);
    CHECK(svg.find("thin lane under a rank: its communication") != std::string::npos);
}

TEST_CASE("to_svg: text is escaped, and bytes that are not UTF-8 become '?'") {
    std::vector<ps::timed_action> records;
    ps::svg_options o;
    o.title = "a<b & \"c\" 'd' \x01 \xFF \xC3\xA9]]>";
    o.unit = "<u>";
    const std::string svg = svg_test::svg_of(ps::gpipe<>{{2, 2, 1}}, records, o);
    const auto doc = svg_test::parse_xml(svg);
    REQUIRE(doc.size() > 2);
    CHECK(doc[1].text == "a<b & \"c\" 'd' ? ? \xC3\xA9]]>");
    CHECK(svg.find("a&lt;b &amp; &quot;c&quot; &apos;d&apos; ? ? \xC3\xA9]]&gt;") != std::string::npos);
    CHECK(svg.find("time (&lt;u&gt;)") != std::string::npos);
}

TEST_CASE("to_svg: seconds are shown in ms below one second") {
    std::vector<ps::timed_action> records;
    ps::cost_model costs{};
    costs.uniform.forward = 0.01;
    costs.uniform.backward = 0.02;
    const std::string svg = svg_test::svg_of(ps::one_f_one_b<>{{4, 8, 1}}, records, {.unit = "s"}, costs);
    CHECK(svg.find("makespan 330 ms,") != std::string::npos);
    CHECK(svg.find("time (ms)") != std::string::npos);
    CHECK(svg.find("<title>rank 0: 0F3, 30 to 40 ms</title>") != std::string::npos);
    CHECK(!svg_test::parse_xml(svg).empty());
}

TEST_CASE("to_svg: a refused replay and no records give a small picture that says so") {
    const ps::simulation refused = ps::simulate(ps::one_f_one_b<>{{4, 0, 1}});
    REQUIRE(!refused);
    const std::string svg = ps::to_svg({}, refused);
    CHECK(!svg_test::parse_xml(svg).empty());
    CHECK(svg.find("(not simulated: ") != std::string::npos);
    CHECK(svg_test::occurrences(svg, "<rect") == 0);
    ps::simulation empty{};
    CHECK(ps::to_svg({}, empty).find("(no actions to draw)") != std::string::npos);
}

TEST_CASE("to_svg: thinned beyond a pixel per action or max_boxes, bounded, still well-formed") {
    std::vector<ps::timed_action> records;
    SUBCASE("a small max_boxes") {
        ps::svg_options o;
        o.max_boxes = 10;
        const std::string svg = svg_test::svg_of(ps::one_f_one_b<>{{4, 8, 1}}, records, o);
        svg_test::census c = svg_test::count_rects(svg_test::parse_xml(svg));
        CHECK(c.actions > 0);
        CHECK(c.actions <= o.max_boxes + 4 * 2); // max_boxes + one per op and lane
        CHECK(svg.find("thinned to fit: 64 actions in " + std::to_string(c.actions) + " boxes") != std::string::npos);
        CHECK(svg.find("text-anchor=\"middle\" fill=\"#111111\"") == std::string::npos); // no microbatch labels
    }
    SUBCASE("narrower than a pixel") {
        ps::svg_options o;
        o.pixels_per_unit = 0.5;
        const std::string svg = svg_test::svg_of(ps::one_f_one_b<>{{4, 64, 1}}, records, o);
        svg_test::census c = svg_test::count_rects(svg_test::parse_xml(svg));
        CHECK(c.actions < records.size());
        CHECK(svg.find("thinned to fit: 512 actions in ") != std::string::npos);
    }
    SUBCASE("p = 16, m = 512: 16384 actions within max_boxes = 2000") {
        ps::svg_options o;
        o.max_boxes = 2000;
        const std::string svg = svg_test::svg_of(ps::one_f_one_b<>{{16, 512, 1}}, records, o);
        REQUIRE(records.size() == 16384);
        svg_test::census c = svg_test::count_rects(svg_test::parse_xml(svg));
        CHECK(c.actions <= o.max_boxes + 16 * 2); // max_boxes + one per op and lane
        CHECK(c.by_class["ps-F"] > 0);
        CHECK(c.by_class["ps-B"] > 0);
    }
}

// The larger part: the tool's largest text-sized replays stay a few megabytes.
TEST_CASE("to_svg: p = 32, m = 2048: 131072 actions in a bounded picture" * doctest::test_suite("large grids") *
          doctest::skip()) {
    std::vector<ps::timed_action> records;
    const std::string svg = svg_test::svg_of(ps::one_f_one_b<>{{32, 2048, 1}}, records);
    REQUIRE(records.size() == 131072);
    svg_test::census c = svg_test::count_rects(svg_test::parse_xml(svg));
    CHECK(c.actions <= ps::svg_options{}.max_boxes + 32 * 2);
    CHECK(svg.size() < 200 * (ps::svg_options{}.max_boxes + 1000));
    CHECK(c.by_class["ps-F"] > 0);
    CHECK(c.by_class["ps-B"] > 0);
    CHECK(svg.find("width=\"2400\"") != std::string::npos); // max_width
}

} // namespace
