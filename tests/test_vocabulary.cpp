// The vocabulary: events, ops, shapes, placements, action text.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/action.hpp>
#include <pipesched/io/terminal_timeline.hpp>

#include <string>

namespace ps = pipesched;

namespace {

// --- ops and events -------------------------------------------------------------------------

constexpr bool every_op_round_trips() {
    for (std::size_t i = 0; i < ps::op_count; ++i) {
        const auto o = static_cast<ps::op>(i);
        ps::op back{};
        if (!ps::op_from_string(ps::to_string(o), back) || back != o) return false;
    }
    ps::op ignored{};
    return !ps::op_from_string("forwards", ignored) && !ps::op_from_string("", ignored);
}
PIPESCHED_VERIFY(every_op_round_trips());

// Every op's text comes from one table: the PyTorch names parse back to their op, and the
// letters the parser and the terminal timeline read are unique.
constexpr bool op_texts_are_consistent() {
    for (std::size_t i = 0; i < ps::op_count; ++i) {
        const auto o = static_cast<ps::op>(i);
        if (!ps::action_name(o).empty()) {
            ps::fixed_text<32> t{};
            t.append("2");
            t.append(ps::action_name(o));
            if (ps::has_microbatch(o)) t.append("5");
            const auto r = ps::parse_action(t.view());
            if (!r || r.value.kind != o || r.value.stage != 2) return false;
        }
        for (std::size_t j = i + 1; j < ps::op_count; ++j) {
            const auto other = static_cast<ps::op>(j);
            const char a = ps::timeline_letter(o);
            if (a != '\0' && a != '*' && a == ps::timeline_letter(other)) return false;
            if (ps::to_string(o) == ps::to_string(other)) return false;
        }
    }
    return ps::to_string(static_cast<ps::op>(200)) == "?" && ps::action_name(static_cast<ps::op>(200)).empty();
}
PIPESCHED_VERIFY(op_texts_are_consistent());
PIPESCHED_VERIFY(ps::timeline_letter(ps::op::reshard) == '*');
PIPESCHED_VERIFY(sizeof(ps::event) == 8);
PIPESCHED_VERIFY(ps::compute_letter(ps::op::backward_input) == 'I');
PIPESCHED_VERIFY(ps::compute_letter(ps::op::grad_sync) == '\0');
PIPESCHED_VERIFY(ps::is_compute(ps::op::backward_weight) && !ps::is_compute(ps::op::loss));
PIPESCHED_VERIFY(ps::is_p2p(ps::op::recv_gradient) && !ps::is_p2p(ps::op::grad_sync));

TEST_CASE("ops: names round-trip, classification") {
    CHECK(ps::to_string(ps::op::optimizer_step) == "optimizer_step");
    CHECK(ps::to_string(ps::op::param_gather) == "param_gather");
    CHECK(ps::compute_letter(ps::op::forward) == 'F');
    CHECK(ps::compute_letter(ps::op::backward) == 'B');
    CHECK(ps::compute_letter(ps::op::backward_weight) == 'W');
    CHECK(ps::event{} == ps::event{ps::op::forward, 0, 0, 0, ps::no_peer});
}

// --- placement --------------------------------------------------------------------------------

constexpr bool placement_round_trips(ps::placement pl, std::uint32_t p, std::uint32_t v) {
    for (std::uint32_t r = 0; r < p; ++r) {
        for (std::uint32_t c = 0; c < v; ++c) {
            const std::uint32_t s = ps::stage_of(pl, p, r, c);
            if (s >= p * v) return false;
            if (ps::locate_stage(pl, p, s) != ps::rank_chunk{r, c}) return false;
        }
    }
    return true;
}
/// neighbour_rank() against locate_stage() of the stage before and after, wherever they exist.
constexpr bool neighbours_located(ps::placement pl, std::uint32_t p, std::uint32_t v) {
    for (std::uint32_t r = 0; r < p; ++r) {
        for (std::uint32_t c = 0; c < v; ++c) {
            const std::uint32_t s = ps::stage_of(pl, p, r, c);
            if (s + 1 < p * v && ps::neighbour_rank(pl, p, r, c, true) != ps::locate_stage(pl, p, s + 1).rank) return false;
            if (s > 0 && ps::neighbour_rank(pl, p, r, c, false) != ps::locate_stage(pl, p, s - 1).rank) return false;
        }
    }
    return true;
}
PIPESCHED_VERIFY(ps::stage_of(ps::placement::loop, 4, 1, 1) == 5);
PIPESCHED_VERIFY(ps::stage_of(ps::placement::v_shape, 4, 1, 1) == 6); // 2p-1-rank
PIPESCHED_VERIFY(ps::stage_of(ps::placement::v_shape, 4, 3, 1) == 4); // the V turns on the last rank
PIPESCHED_VERIFY(placement_round_trips(ps::placement::loop, 4, 3));
PIPESCHED_VERIFY(placement_round_trips(ps::placement::v_shape, 4, 2));
PIPESCHED_VERIFY(neighbours_located(ps::placement::loop, 4, 3));
PIPESCHED_VERIFY(neighbours_located(ps::placement::v_shape, 4, 4));
PIPESCHED_VERIFY(ps::neighbour_rank(ps::placement::v_shape, 4, 3, 0, true) == 3); // the V's turn
PIPESCHED_VERIFY(ps::neighbour_rank(ps::placement::v_shape, 4, 0, 1, true) == 0); // and its next one
PIPESCHED_VERIFY(ps::neighbour_rank(ps::placement::loop, 4, 0, 1, false) == 3);   // a loop's wrap

TEST_CASE("placement: stage_of and locate_stage are inverse") {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t v = 1; v <= 4; ++v) CHECK(placement_round_trips(ps::placement::loop, p, v));
        CHECK(placement_round_trips(ps::placement::v_shape, p, 2));
        for (std::uint32_t v = 1; v <= 6; ++v) {
            CHECK(neighbours_located(ps::placement::loop, p, v));
            CHECK(neighbours_located(ps::placement::v_shape, p, v)); // beyond 2: a zigzag
        }
    }
    CHECK(ps::stage_of(ps::placement::v_shape, 4, 0, 1) == 7);
    CHECK(ps::to_string(ps::placement::v_shape) == "v_shape");
}

// --- action text ------------------------------------------------------------------------------

constexpr bool parses_to(std::string_view text, ps::action expected) {
    const auto r = ps::parse_action(text);
    return static_cast<bool>(r) && r.value == expected && ps::format_action(r.value).view() == text;
}
constexpr bool fails_with(std::string_view text, ps::action_errc e, std::size_t at) {
    const auto r = ps::parse_action(text);
    return !r && r.error == e && r.position == at;
}

PIPESCHED_VERIFY(parses_to("0F1", {0, ps::op::forward, 1}));
PIPESCHED_VERIFY(parses_to("3I2", {3, ps::op::backward_input, 2}));
PIPESCHED_VERIFY(parses_to("5W0", {5, ps::op::backward_weight, 0}));
PIPESCHED_VERIFY(parses_to("2B7", {2, ps::op::backward, 7}));
PIPESCHED_VERIFY(parses_to("4294967295F65535", {4294967295u, ps::op::forward, 65535}));
PIPESCHED_VERIFY(fails_with("", ps::action_errc::empty, 0));
PIPESCHED_VERIFY(fails_with("F1", ps::action_errc::expected_stage, 0));
PIPESCHED_VERIFY(fails_with("-1F1", ps::action_errc::negative_number, 0));
PIPESCHED_VERIFY(fails_with("1F-1", ps::action_errc::negative_number, 2));
PIPESCHED_VERIFY(fails_with("12", ps::action_errc::expected_letter, 2));
PIPESCHED_VERIFY(fails_with("1X2", ps::action_errc::unknown_letter, 1));
PIPESCHED_VERIFY(fails_with("1f2", ps::action_errc::unknown_letter, 1));
PIPESCHED_VERIFY(fails_with("1F", ps::action_errc::expected_microbatch, 2));
PIPESCHED_VERIFY(fails_with("1F+2", ps::action_errc::expected_microbatch, 2));
PIPESCHED_VERIFY(fails_with("1F2x", ps::action_errc::trailing_characters, 3));
PIPESCHED_VERIFY(fails_with("1F2 ", ps::action_errc::trailing_characters, 3));
PIPESCHED_VERIFY(fails_with(" 1F2", ps::action_errc::expected_stage, 0));
PIPESCHED_VERIFY(fails_with("4294967296F0", ps::action_errc::stage_overflow, 0));
PIPESCHED_VERIFY(fails_with("99999999999999999999999F0", ps::action_errc::stage_overflow, 0));
PIPESCHED_VERIFY(fails_with("0F65536", ps::action_errc::microbatch_overflow, 2));
PIPESCHED_VERIFY(fails_with("0B1F2", ps::action_errc::trailing_characters, 3));

TEST_CASE("action text: parse and format, run-time twins") {
    for (auto e : {ps::action_errc::empty, ps::action_errc::unknown_letter,
                   ps::action_errc::trailing_characters, ps::action_errc::microbatch_overflow}) {
        CHECK_FALSE(ps::describe(e).empty());
    }
}

TEST_CASE("action text: every action of a schedule round-trips through text and placement") {
    const ps::interleaved_1f1b<ps::backward_kind::split> pol{{4, 8, 3}, 4};
    REQUIRE(pol.check());
    for (std::uint32_t r = 0; r < 4; ++r) {
        for (ps::event e : ps::events(pol, r)) {
            const ps::action a = ps::to_action(pol, e);
            const auto text = ps::format_action(a);
            const auto parsed = ps::parse_action(text.view());
            REQUIRE(parsed);
            CHECK(parsed.value == a);
            CHECK(ps::to_event(parsed.value, ps::placement::loop, 4) == e);
        }
    }
}

TEST_CASE("action text: exhaustive small numbers and every truncation of a valid action") {
    for (std::uint32_t s = 0; s < 120; s += 7) {
        for (std::uint32_t mb = 0; mb < 1000; mb += 13) {
            for (ps::op o : {ps::op::forward, ps::op::backward, ps::op::backward_input,
                             ps::op::backward_weight}) {
                const ps::action a{s, o, mb};
                CHECK(ps::parse_action(ps::format_action(a).view()).value == a);
            }
        }
    }
    // Every prefix that stops before the microbatch digits is an error.
    const std::string full = "123W456";
    for (std::size_t n = 0; n <= full.find('W'); ++n) {
        INFO(full.substr(0, n));
        CHECK_FALSE(ps::parse_action(std::string_view{full}.substr(0, n)));
    }
}

} // namespace
