// PyTorch schedule CSV: action text of communication actions and overlapped pairs, read_csv /
// write_csv round trips, error positions, compute_only + validate, infer_placement, and the
// fuzzers' seed corpus as regression inputs.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/action.hpp>
#include <pipesched/io/csv.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ps = pipesched;

namespace {

using ps::action_errc;
using ps::csv_errc;
using ps::op;
using pipesched_test::act;
using pipesched_test::lines_of;

// --- action text: communication actions -------------------------------------------------------

struct text_case {
    std::string_view text;
    ps::action value;
};

constexpr std::array<text_case, 11> comm_texts{{
    {"1SEND_F0", act(1, op::send_activation, 0)},
    {"2RECV_F3", act(2, op::recv_activation, 3)},
    {"3SEND_B12", act(3, op::send_gradient, 12)},
    {"0RECV_B65535", act(0, op::recv_gradient, 65535)},
    {"3UNSHARD", act(3, op::param_gather)},
    {"0RESHARD", act(0, op::reshard)},
    {"7REDUCE_GRAD", act(7, op::grad_sync)},
    {"4294967295REDUCE_GRAD", act(4294967295u, op::grad_sync)},
    {"4294967295SEND_F65535", act(4294967295u, op::send_activation, 65535)},
    {"10F0", act(10, op::forward, 0)},
    {"0W10", act(0, op::backward_weight, 10)},
}};

struct error_case {
    std::string_view text;
    action_errc error;
    std::size_t position;
};

constexpr std::array<error_case, 17> comm_errors{{
    {"1SEND_F", action_errc::expected_microbatch, 7},
    {"1RECV_B-1", action_errc::negative_number, 7},
    {"1SEND_B65536", action_errc::microbatch_overflow, 7},
    {"1SEND_F00", action_errc::leading_zero, 7},
    {"3UNSHARD1", action_errc::unexpected_microbatch, 8},
    {"3REDUCE_GRAD0", action_errc::unexpected_microbatch, 12},
    {"3UNSHARD ", action_errc::trailing_characters, 8},
    {"3RESHARD_", action_errc::trailing_characters, 8},
    {"1SEND_X2", action_errc::unknown_letter, 6},
    {"1SEN", action_errc::unknown_letter, 4},
    {"1RE", action_errc::unknown_letter, 3},
    {"1REDUCE", action_errc::unknown_letter, 7},
    {"1send_f2", action_errc::unknown_letter, 1},
    {"1OVERLAP_F_B", action_errc::unknown_letter, 1},
    {"01F1", action_errc::leading_zero, 0},
    {"1F01", action_errc::leading_zero, 2},
    {"00UNSHARD", action_errc::leading_zero, 0},
}};

constexpr bool text_ok(const text_case& c) {
    const auto r = ps::parse_action(c.text);
    return static_cast<bool>(r) && r.value == c.value && ps::format_action(c.value).view() == c.text;
}
constexpr bool error_ok(const error_case& c) {
    const auto r = ps::parse_action(c.text);
    return !r && r.error == c.error && r.position == c.position;
}
constexpr bool all_comm_texts_ok() {
    for (const auto& c : comm_texts) {
        if (!text_ok(c)) return false;
    }
    return true;
}
constexpr bool all_comm_errors_ok() {
    for (const auto& c : comm_errors) {
        if (!error_ok(c)) return false;
    }
    return true;
}
PIPESCHED_VERIFY(all_comm_texts_ok());
PIPESCHED_VERIFY(all_comm_errors_ok());
PIPESCHED_VERIFY(ps::action_name(op::reshard) == "RESHARD");
PIPESCHED_VERIFY(ps::action_name(op::loss).empty());
PIPESCHED_VERIFY(ps::has_microbatch(op::send_gradient) && !ps::has_microbatch(op::param_gather));
PIPESCHED_VERIFY(ps::to_string(op::reshard) == "reshard" && ps::op_count == 16);

TEST_CASE("action text: communication actions, run-time twins") {
    for (const auto& c : comm_texts) {
        INFO(c.text);
        CHECK(text_ok(c));
    }
    for (const auto& c : comm_errors) {
        INFO(c.text);
        const auto r = ps::parse_action(c.text);
        CHECK(r.error == c.error);
        CHECK(r.position == c.position);
        CHECK(error_ok(c));
    }
    CHECK(ps::to_string(op::reshard) == "reshard");
    // The microbatch of a stage-only op is not written.
    CHECK(ps::format_action(act(3, op::param_gather, 9)).view() == "3UNSHARD");
    // Every op with a name round-trips through its text.
    for (std::size_t i = 0; i < ps::op_count; ++i) {
        const auto o = static_cast<op>(i);
        if (ps::action_name(o).empty()) continue;
        const ps::action a = act(5, o, ps::has_microbatch(o) ? 4u : 0u);
        CHECK(ps::parse_action(ps::format_action(a).view()).value == a);
    }
    for (auto e : {action_errc::leading_zero, action_errc::unexpected_microbatch,
                   action_errc::unclosed_paren, action_errc::expected_semicolon,
                   action_errc::too_many_actions, action_errc::nested_paren,
                   action_errc::expected_overlap, action_errc::overlap_not_compute}) {
        CHECK_FALSE(ps::describe(e).empty());
        CHECK(ps::describe(e) != "?");
    }
}

// --- action text: cells and overlapped pairs ---------------------------------------------------

constexpr bool cell_is_pair(std::string_view text, ps::action a, ps::action b) {
    const auto r = ps::parse_cell(text);
    ps::action flagged = a;
    flagged.overlapped_with_next = true;
    return static_cast<bool>(r) && r.count == 2 && r.actions[0] == flagged && r.actions[1] == b &&
           ps::format_overlap(a, b).view() == text;
}
constexpr bool cell_fails(std::string_view text, action_errc e, std::size_t at) {
    const auto r = ps::parse_cell(text);
    return !r && r.error == e && r.position == at && r.count == 0;
}

constexpr std::array<error_case, 19> cell_errors{{
    {"(0F7;7B3", action_errc::unclosed_paren, 0},
    {"(0F7", action_errc::unclosed_paren, 0},
    {"(", action_errc::unclosed_paren, 0},
    {"(0F", action_errc::unclosed_paren, 0},
    {"(0F7)OVERLAP_F_B", action_errc::expected_semicolon, 4},
    {"(0F7;7B3)OVERLAP_B_F", action_errc::expected_overlap, 17},
    {"(0F7;7B3)OVERLAP_F", action_errc::expected_overlap, 18},
    {"(0F7;7B3)", action_errc::expected_overlap, 9},
    {"(0F7;7B3)OVERLAP_F_B1", action_errc::trailing_characters, 20},
    {"(0F7;7B3;1F0)OVERLAP_F_B", action_errc::too_many_actions, 8},
    {"((0F7;7B3)OVERLAP_F_B;1F0)OVERLAP_F_B", action_errc::nested_paren, 1},
    {"(0F7;(7B3)OVERLAP_F_B", action_errc::nested_paren, 5},
    {"(0X7;7B3)OVERLAP_F_B", action_errc::unknown_letter, 2},
    {"(;7B3)OVERLAP_F_B", action_errc::empty, 1},
    {"(0F7;)OVERLAP_F_B", action_errc::empty, 5},
    {"(0F7 ;7B3)OVERLAP_F_B", action_errc::trailing_characters, 4},
    {"(0SEND_F1;7B3)OVERLAP_F_B", action_errc::overlap_not_compute, 1},
    {"(0F7;3UNSHARD)OVERLAP_F_B", action_errc::overlap_not_compute, 5},
    {"0F7;1F0", action_errc::trailing_characters, 3},
}};

constexpr bool all_cell_errors_ok() {
    for (const auto& c : cell_errors) {
        if (!cell_fails(c.text, c.error, c.position)) return false;
    }
    return true;
}

PIPESCHED_VERIFY(cell_is_pair("(0F7;7B3)OVERLAP_F_B", act(0, op::forward, 7), act(7, op::backward, 3)));
PIPESCHED_VERIFY(cell_is_pair("(12I0;3W65535)OVERLAP_F_B", act(12, op::backward_input, 0),
                           act(3, op::backward_weight, 65535)));
PIPESCHED_VERIFY(ps::parse_cell("").count == 0 && ps::parse_cell(""));
PIPESCHED_VERIFY(ps::parse_cell("2SEND_B1").count == 1 &&
              ps::parse_cell("2SEND_B1").actions[0] == act(2, op::send_gradient, 1));
PIPESCHED_VERIFY(all_cell_errors_ok());

TEST_CASE("action text: overlapped pairs, run-time twins") {
    CHECK(ps::parse_cell("").count == 0);
    CHECK(ps::parse_cell(""));
    CHECK(ps::parse_cell("2SEND_B1").actions[0] == act(2, op::send_gradient, 1));
    for (const auto& c : cell_errors) {
        INFO(c.text);
        const auto r = ps::parse_cell(c.text);
        CHECK(r.error == c.error);
        CHECK(r.position == c.position);
    }
    // The longest texts fit their fixed buffers.
    const ps::action big = act(4294967295u, op::send_activation, 4294967295u);
    CHECK(ps::format_action(big).view() == "4294967295SEND_F4294967295");
    const ps::action big_f = act(4294967295u, op::forward, 4294967295u);
    CHECK(ps::format_overlap(big_f, big_f).view().size() == 1 + 21 + 1 + 21 + 1 + 11);
}

// --- round trips from policies ------------------------------------------------------------------

/// The policy's actions, rank by rank, as write_csv should produce them.
template <ps::schedule_policy P>
std::vector<std::vector<ps::action>> actions_of(const P& pol) {
    const ps::shape s = pol.shape;
    std::vector<std::vector<ps::action>> out(s.ranks);
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        bool overlap = false; // an overlap_f_b marker is the flag on the pair's first action
        for (ps::event e : ps::events(pol, r)) {
            if (e.kind == ps::op::overlap_f_b) {
                overlap = true;
                continue;
            }
            ps::action a = ps::to_action(pol, e);
            a.overlapped_with_next = overlap;
            overlap = false;
            out[r].push_back(a);
        }
    }
    return out;
}

/// Re-spells a CSV: CRLF line ends, spaces around cells, a leading and trailing idle cell.
std::string decorated(std::string_view csv) {
    std::string out;
    for (std::string_view line : lines_of(csv)) {
        out += " ,";
        for (char c : line) {
            if (c == ',') {
                out += " , ";
            } else {
                out += c;
            }
        }
        out += ",, \r\n";
    }
    return out + "\r\n\n";
}

TEST_CASE("csv: every policy over a grid of shapes round-trips exactly") {
    std::size_t checked = 0;
    for (const ps::schedule_info& info : ps::schedules) {
        for (ps::backward_kind bk : {ps::backward_kind::full, ps::backward_kind::split}) {
            for (std::uint32_t p = 1; p <= 5; ++p) {
                for (std::uint32_t m : {1u, 2u, 3u, 4u, 5u, 8u, 10u}) {
                    for (std::uint32_t v = 1; v <= (info.multi_chunk ? 3u : 1u); ++v) {
                        ps::schedule_options o{};
                        o.shape = {p, m, v};
                        o.backward = bk;
                        // Through any_schedule (the catalogued policy's events): the writer and
                        // reader are compiled per placement, not per policy type.
                        ps::with_any_schedule(info.id, o, [&](const auto& pol) {
                            if (!pol.check()) return;
                            INFO(info.name, " p=", p, " m=", m, " v=", v,
                                 " split=", bk == ps::backward_kind::split);
                            ++checked;
                            const std::string text = ps::write_csv(pol);
                            const auto lines = lines_of(text);
                            REQUIRE(lines.size() == p);
                            CHECK(text.back() == '\n');
                            CHECK(text.find(",,") == std::string::npos);
                            for (std::uint32_t r = 0; r < p; ++r) {
                                CHECK(pipesched_test::order_is(pol, r, lines[r]));
                            }
                            const ps::csv_result read = ps::read_csv(text);
                            REQUIRE(read);
                            CHECK(read.table.ranks == actions_of(pol));
                            CHECK(ps::write_csv(read.table) == text);
                            // Who feeds whom is the placement's (DualPipe: two pipelines).
                            const ps::verdict verdict = ps::validate(ps::compute_only(read.table), m, 0, pol.layout);
                            CHECK(ps::describe(verdict) == "valid");
                            const ps::placement_guess g = ps::infer_placement(read.table);
                            // V placement is told apart from loop once p > 1; DualPipe's two
                            // pipelines by the microbatches each half of the stages runs.
                            const bool v_shape = pol.layout == ps::placement::v_shape && p > 1;
                            CHECK(g.layout == (pol.layout == ps::placement::bidirectional ? ps::inferred_placement::bidirectional
                                               : v_shape ? ps::inferred_placement::v_shape
                                                         : ps::inferred_placement::loop));
                            CHECK(ps::placement_of(g.layout) == (p > 1 ? pol.layout : ps::placement::loop));
                            CHECK(g.ranks == p);
                            CHECK(g.stages == std::uint64_t{p} * v);
                            CHECK(g.microbatches == m);
                            CHECK(g.chunks == v);
                            // The same schedule spelled with CRLF, spaces and idle cells.
                            const ps::csv_result decorated_read = ps::read_csv(decorated(text));
                            REQUIRE(decorated_read);
                            CHECK(decorated_read.table == read.table);
                        });
                    }
                }
            }
        }
    }
    CHECK(checked > 150);
}

TEST_CASE("csv: write_csv of a policy rejects an invalid shape") {
    CHECK_THROWS_AS((void)ps::write_csv(ps::one_f_one_b<>{{.ranks = 4, .microbatches = 8, .chunks = 2}}), std::invalid_argument);
}

// --- tables with communication and overlapped pairs ---------------------------------------------

TEST_CASE("csv: communication actions, overlapped pairs and empty ranks round-trip") {
    ps::schedule_table t;
    t.ranks = {
        {act(0, op::param_gather), act(0, op::forward, 0), act(0, op::send_activation, 0),
         act(3, op::forward, 0, true), act(0, op::backward, 1), act(0, op::recv_gradient, 65535),
         act(0, op::grad_sync), act(0, op::reshard)},
        {},
        {act(2, op::recv_activation, 1), act(2, op::backward_input, 4, true),
         act(1, op::backward_weight, 2), act(2, op::send_gradient, 3)},
        {},
    };
    const std::string text = ps::write_csv(t);
    CHECK(text == "0UNSHARD,0F0,0SEND_F0,(3F0;0B1)OVERLAP_F_B,0RECV_B65535,0REDUCE_GRAD,0RESHARD\n"
                  ",\n"
                  "2RECV_F1,(2I4;1W2)OVERLAP_F_B,2SEND_B3\n"
                  ",\n");
    const ps::csv_result back = ps::read_csv(text);
    REQUIRE(back);
    CHECK(back.table == t);
    CHECK(ps::write_csv(back.table) == text);

    // compute_only keeps the pairs, flag included, for validate to check.
    const auto compute = ps::compute_only(back.table);
    REQUIRE(compute.size() == 4);
    CHECK(compute[0] == std::vector<ps::action>{act(0, op::forward, 0), act(3, op::forward, 0, true),
                                                act(0, op::backward, 1)});
    CHECK(compute[1].empty());
    CHECK(compute[2] == std::vector<ps::action>{act(2, op::backward_input, 4, true),
                                                act(1, op::backward_weight, 2)});
    CHECK(!ps::validate(compute));
}

TEST_CASE("csv: write_csv of a table rejects what the format cannot express") {
    const auto throws = [](std::vector<std::vector<ps::action>> ranks) {
        ps::schedule_table t{std::move(ranks)};
        CHECK_THROWS_AS((void)ps::write_csv(t), std::invalid_argument);
    };
    throws({});
    throws({{act(0, op::loss, 0)}});
    throws({{act(0, op::forward, 65536)}});
    throws({{act(0, op::param_gather, 1)}});
    throws({{act(0, op::forward, 0, true)}});
    throws({{act(0, op::forward, 0, true), act(0, op::send_activation, 0)}});
    throws({{act(0, op::send_activation, 0, true), act(0, op::forward, 0)}});
    throws({{act(0, op::forward, 0, true), act(0, op::forward, 1, true), act(0, op::forward, 2)}});
    ps::schedule_table one_idle_rank;
    one_idle_rank.ranks.resize(1);
    CHECK(ps::write_csv(one_idle_rank) == ",\n");
}

// A file as PyTorch's _dump_csv writes it (csv.writer: CRLF, idle slots as empty cells), for
// 1F1B on two ranks with two microbatches, FSDP-style unshard/reshard and gradient reduction.
constexpr std::string_view pytorch_1f1b =
    "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\r\n"
    "1UNSHARD,,1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD,,\r\n";

TEST_CASE("csv: a PyTorch-style file with idle cells and communication") {
    const ps::csv_result r = ps::read_csv(pytorch_1f1b);
    REQUIRE(r);
    REQUIRE(r.table.ranks.size() == 2);
    const std::vector<ps::action> rank0{
        act(0, op::param_gather),       act(0, op::forward, 0),   act(0, op::send_activation, 0),
        act(0, op::forward, 1),         act(0, op::send_activation, 1), act(0, op::recv_gradient, 0),
        act(0, op::backward, 0),        act(0, op::recv_gradient, 1), act(0, op::backward, 1),
        act(0, op::grad_sync),          act(0, op::reshard)};
    const std::vector<ps::action> rank1{
        act(1, op::param_gather),       act(1, op::recv_activation, 0), act(1, op::forward, 0),
        act(1, op::backward, 0),        act(1, op::send_gradient, 0), act(1, op::recv_activation, 1),
        act(1, op::forward, 1),         act(1, op::backward, 1),  act(1, op::send_gradient, 1),
        act(1, op::grad_sync),          act(1, op::reshard)};
    CHECK(r.table.ranks[0] == rank0);
    CHECK(r.table.ranks[1] == rank1);
    CHECK(ps::validate(ps::compute_only(r.table), 2));
    const ps::placement_guess g = ps::infer_placement(r.table);
    CHECK(g.layout == ps::inferred_placement::loop);
    CHECK(g.ranks == 2);
    CHECK(g.stages == 2);
    CHECK(g.microbatches == 2);
    CHECK(g.chunks == 1);
}

// DualPipeV-like: two ranks, four stages in a V (rank 0 holds 0 and 3, rank 1 holds 1 and 2),
// with the forward of one microbatch overlapped with the backward of another.
constexpr std::string_view v_shape_overlap =
    "0F0,0F1,0SEND_F0,3F0,(3F1;3B0)OVERLAP_F_B,3B1,0B0,0B1\n"
    "1F0,1F1,2F0,2F1,2B0,2B1,1B0,1B1";

TEST_CASE("csv: V-shape placement with an overlapped pair") {
    const ps::csv_result r = ps::read_csv(v_shape_overlap);
    REQUIRE(r);
    REQUIRE(r.table.ranks[0].size() == 9);
    CHECK(r.table.ranks[0][4] == act(3, op::forward, 1, true));
    CHECK(r.table.ranks[0][5] == act(3, op::backward, 0));
    const auto compute = ps::compute_only(r.table);
    CHECK(compute[0].size() == 8);
    CHECK(ps::describe(ps::validate(compute, 2)) == "valid");
    const ps::placement_guess g = ps::infer_placement(r.table);
    CHECK(ps::to_string(g.layout) == "v_shape");
    CHECK(g.stages == 4);
    CHECK(g.chunks == 2);
    CHECK(g.owners == std::vector<std::size_t>{0, 1, 1, 0});
    // Written back: the pair stays one cell, the missing final newline is added.
    CHECK(ps::write_csv(r.table) == std::string{v_shape_overlap} + "\n");
}

// Pairs read from a file are checked as pairs (issue 8): compute_only keeps their flags.
TEST_CASE("csv: overlapped pairs from a file are validated as pairs") {
    const auto code = [](std::string_view text) {
        const ps::csv_result r = ps::read_csv(text);
        REQUIRE(r);
        return ps::validate(ps::compute_only(r.table)).code;
    };
    using ps::verdict_code;
    // The valid V-shape file above stays valid; the same pair with its halves swapped does not.
    CHECK(code(v_shape_overlap) == verdict_code::valid);
    CHECK(code("0F0,0F1,3F0,(3B0;3F1)OVERLAP_F_B,3B1,0B0,0B1\n1F0,1F1,2F0,2F1,2B0,2B1,1B0,1B1") !=
          verdict_code::valid);
    // A B first, an F with its own B, a W first, two F's.
    CHECK(code("0F0,(1B0;0F1)OVERLAP_F_B,0B0,0B1\n1F0,1F1,1B1\n") != verdict_code::valid);
    CHECK(code("(0F0;0B0)OVERLAP_F_B\n") == verdict_code::malformed_overlap);
    CHECK(code("0F0,0I0,(0W0;0F1)OVERLAP_F_B,0B1\n") != verdict_code::valid);
    CHECK(code("(0F0;1F0)OVERLAP_F_B,1B0,0B0\n") != verdict_code::valid);
    // Each pair waits for the other rank's pair to produce one of its inputs (0B0 needs 1B0,
    // 1F2 needs 0F2): a deadlock that the same actions, run one by one, do not have.
    CHECK(code("0F0,0F1,(0F2;0B0)OVERLAP_F_B,0B1,0B2\n1F0,1F1,(1F2;1B0)OVERLAP_F_B,1B1,1B2\n") ==
          verdict_code::deadlock);
    CHECK(code("0F0,0F1,0F2,0B0,0B1,0B2\n1F0,1F1,1F2,1B0,1B1,1B2\n") == verdict_code::valid);
    // A communication action inside a pair (read_csv accepts none, a table built in code may
    // hold one) is kept and refused, not skipped so that the F pairs with the next action.
    ps::schedule_table t;
    t.ranks = {{act(0, op::forward, 0, true), act(0, op::send_activation, 0), act(0, op::backward, 1),
                act(0, op::forward, 1), act(0, op::backward, 0)}};
    const auto compute = ps::compute_only(t);
    REQUIRE(compute[0].size() == 5);
    CHECK(ps::validate(compute).code == verdict_code::not_compute);
    // The in-place form (a table given up) keeps the same actions: the pair's send, and the
    // communication actions outside pairs dropped.
    ps::schedule_table u = t;
    u.ranks.push_back({act(1, op::recv_activation, 0), act(1, op::forward, 0), act(1, op::send_activation, 0),
                       act(1, op::forward, 1, true), act(1, op::backward, 0), act(1, op::recv_gradient, 1)});
    const auto copied = ps::compute_only(u);
    REQUIRE(copied.size() == 2);
    CHECK(copied[1] == std::vector<ps::action>{act(1, op::forward, 0), act(1, op::forward, 1, true),
                                               act(1, op::backward, 0)});
    CHECK(ps::compute_only(std::move(u)) == copied);
}

TEST_CASE("csv: infer_placement reports custom placements") {
    const auto guess = [](std::string_view text) {
        const ps::csv_result r = ps::read_csv(text);
        REQUIRE(r);
        return ps::infer_placement(r.table);
    };
    // Stage 0 on rank 0 and rank 1.
    auto g = guess("0F0,0B0\n0F1,0B1\n");
    CHECK(g.layout == ps::inferred_placement::custom);
    CHECK(g.owners == std::vector<std::size_t>{ps::placement_guess::two_owners});
    CHECK(g.chunks == 0);
    // A send naming microbatch 10, which no compute action has: the count is the compute
    // actions' 2, what validate(compute_only(...)) checks (issue 31: it was 11).
    g = guess("0F0,0SEND_F0,0SEND_F10,0F1,0SEND_F1,0B0,0B1\n1RECV_F0,1F0,1B0,1F1,1B1\n");
    CHECK(g.microbatches == 2);
    CHECK(g.layout == ps::inferred_placement::loop);
    // Stage 1 never runs.
    g = guess("0F0,0B0,2F0,2B0\n3F0,3B0\n");
    CHECK(g.layout == ps::inferred_placement::custom);
    REQUIRE(g.owners.size() == 4);
    CHECK(g.owners[1] == ps::placement_guess::no_owner);
    // More stages than compute actions: some stage surely never runs, no owner table.
    g = guess("0F0,2F0\n3F0\n");
    CHECK(g.layout == ps::inferred_placement::custom);
    CHECK(g.stages == 4);
    CHECK(g.owners.empty());
    // Three stages on two ranks.
    CHECK(guess("0F0,2F0\n1F0\n").layout == ps::inferred_placement::custom);
    // Stages on the "wrong" ranks: rank 0 holds 1, rank 1 holds 0.
    CHECK(guess("1F0\n0F0\n").layout == ps::inferred_placement::custom);
    // A huge stage number: no owner table is allocated.
    g = guess("4294967295F0\n");
    CHECK(g.layout == ps::inferred_placement::custom);
    CHECK(g.stages == 4294967296u);
    CHECK(g.owners.empty());
    // Only communication: nothing to infer, and no microbatch is computed (the count is the
    // compute actions', what validation checks; it was 4 here before issue 31).
    g = guess("0SEND_F3,0UNSHARD\n");
    CHECK(g.layout == ps::inferred_placement::custom);
    CHECK(g.stages == 0);
    CHECK(g.microbatches == 0);
    // One rank: loop (v_shape fits too).
    g = guess("0F0,1F0,1B0,0B0");
    CHECK(g.layout == ps::inferred_placement::loop);
    CHECK(g.chunks == 2);
}

// --- what read_csv accepts ----------------------------------------------------------------------

TEST_CASE("csv: accepted spellings") {
    const std::vector<std::vector<ps::action>> two{{act(0, op::forward, 0)}, {act(1, op::forward, 0)}};
    for (std::string_view text : {"0F0\n1F0\n", "0F0\n1F0", "0F0\r\n1F0\r\n", "0F0\r\n1F0",
                                  "0F0,,\n1F0,\n", "0F0\n1F0\n\n\r\n\n", " 0F0 \n,, 1F0,  ,\n",
                                  ",0F0\n1F0\r\n\r\n"}) {
        INFO(text);
        const ps::csv_result r = ps::read_csv(text);
        REQUIRE(r);
        CHECK(r.table.ranks == two);
    }
    // Blank lines between ranks are ranks without actions, as in PyTorch.
    auto r = ps::read_csv("0F0\n\n\r\n1F0\n\n");
    REQUIRE(r);
    CHECK(r.table.ranks.size() == 4);
    CHECK(r.table.ranks[1].empty());
    CHECK(r.table.ranks[3] == std::vector<ps::action>{act(1, op::forward, 0)});
    // A line of idle cells is a rank without actions, even at the end.
    r = ps::read_csv("0F0\n , ,\n");
    REQUIRE(r);
    CHECK(r.table.ranks.size() == 2);
    CHECK(r.table.ranks[1].empty());
    // Only a line of spaces: one rank, idle.
    r = ps::read_csv("   ");
    REQUIRE(r);
    CHECK(r.table.ranks.size() == 1);
}

TEST_CASE("csv: large inputs stay linear") {
    // A million idle cells on one line, then 100 000 blank lines between two ranks.
    std::string text(1'000'000, ',');
    text += "0F0\n";
    text += std::string(100'000, '\n');
    text += "1F0";
    const ps::csv_result r = ps::read_csv(text);
    REQUIRE(r);
    CHECK(r.table.ranks.size() == 100'002);
    CHECK(r.table.ranks.front() == std::vector<ps::action>{act(0, op::forward, 0)});
    // An error at the end of a long line still has an exact column.
    const ps::csv_result bad = ps::read_csv(std::string(200'000, ',') + "0Q0");
    REQUIRE_FALSE(bad);
    CHECK(bad.error.line == 1);
    CHECK(bad.error.column == 200'002);
    CHECK(bad.error.cell == 200'001);
}

// --- what read_csv rejects ----------------------------------------------------------------------

struct csv_bad_case {
    std::string_view name;
    std::string_view text;
    std::size_t line;
    std::size_t column;
    csv_errc code;
    action_errc action_error;
    std::string_view message_part;
};

using namespace std::string_view_literals;

// clang-format off
const std::vector<csv_bad_case> csv_bad_cases{
    {"bad letter", "0F0,1X2\n", 1, 6, csv_errc::bad_action, action_errc::unknown_letter, "unknown action name"},
    {"lower-case letter", "0F0\n1f2\n", 2, 2, csv_errc::bad_action, action_errc::unknown_letter, "unknown action name"},
    {"negative stage", "-1F0", 1, 1, csv_errc::bad_action, action_errc::negative_number, "negative"},
    {"negative microbatch", "0F0\n1F-1\n", 2, 3, csv_errc::bad_action, action_errc::negative_number, "negative"},
    {"stage overflow", "0F0, 4294967296F0", 1, 6, csv_errc::bad_action, action_errc::stage_overflow, "stage number too large"},
    {"microbatch overflow", "0F0,0B65536", 1, 7, csv_errc::bad_action, action_errc::microbatch_overflow, "65535"},
    {"leading zero", "0F0,0F01", 1, 7, csv_errc::bad_action, action_errc::leading_zero, "leading zeros"},
    {"missing microbatch on SEND_F", "0F0,0SEND_F\n", 1, 12, csv_errc::bad_action, action_errc::expected_microbatch, "expected a microbatch"},
    {"missing microbatch before the next cell", "0F,0B0", 1, 3, csv_errc::bad_action, action_errc::expected_microbatch, "expected a microbatch"},
    {"microbatch on UNSHARD", "0UNSHARD1,0F0", 1, 9, csv_errc::bad_action, action_errc::unexpected_microbatch, "take no microbatch"},
    {"unknown communication", "0F0,0SEND_G0", 1, 11, csv_errc::bad_action, action_errc::unknown_letter, "unknown action name"},
    {"stage missing", "0F0\r\n1F0\r\nF2\r\n", 3, 1, csv_errc::bad_action, action_errc::expected_stage, "expected a stage"},
    {"nothing after the stage", "12,0F0", 1, 3, csv_errc::bad_action, action_errc::expected_letter, "after the stage"},
    {"unterminated (", "0F0,(0F1;1B0\n", 1, 5, csv_errc::bad_action, action_errc::unclosed_paren, "'('"},
    {"missing ;", "(0F1)OVERLAP_F_B", 1, 5, csv_errc::bad_action, action_errc::expected_semicolon, "';'"},
    {"wrong suffix after )", "0F0\n(0F1;1B0)OVERLAP_B_F", 2, 18, csv_errc::bad_action, action_errc::expected_overlap, "OVERLAP_F_B"},
    {"no suffix after )", "(0F1;1B0),0F0", 1, 10, csv_errc::bad_action, action_errc::expected_overlap, "OVERLAP_F_B"},
    {"three sub-actions", "(0F1;1B0;2F0)OVERLAP_F_B", 1, 9, csv_errc::bad_action, action_errc::too_many_actions, "exactly two"},
    {"nested parentheses", "((0F1;1B0)OVERLAP_F_B;2F0)OVERLAP_F_B", 1, 2, csv_errc::bad_action, action_errc::nested_paren, "nest"},
    {"communication in a pair", "(0SEND_F0;1B0)OVERLAP_F_B", 1, 2, csv_errc::bad_action, action_errc::overlap_not_compute, "overlapped"},
    {"stray ) ", "0F0)", 1, 4, csv_errc::bad_action, action_errc::trailing_characters, "unexpected characters"},
    {"quote", "0F0,\"1F0\"", 1, 5, csv_errc::quote, action_errc::none, "quotes"},
    {"quote inside", "0F\"0\"", 1, 3, csv_errc::quote, action_errc::none, "quotes"},
    {"embedded NUL", "0F0,1F\0" "0"sv, 1, 7, csv_errc::nul, action_errc::none, "NUL"},
    {"tab before a cell", "0F0,\t1F0", 1, 5, csv_errc::tab, action_errc::none, "tab"},
    {"tab after a cell", "0F0\t,1F0", 1, 4, csv_errc::tab, action_errc::none, "tab"},
    {"CR alone between lines", "0F0\r1F0\n", 1, 4, csv_errc::lone_cr, action_errc::none, "carriage return"},
    {"CR alone at the end", "0F0\n1F0\r", 2, 4, csv_errc::lone_cr, action_errc::none, "carriage return"},
    {"CR CR LF", "0F0\r\r\n", 1, 4, csv_errc::lone_cr, action_errc::none, "carriage return"},
    {"space inside a cell", "0F0,0 F1", 1, 6, csv_errc::space_inside, action_errc::none, "space inside"},
    {"space inside a pair", "(0F1; 1B0)OVERLAP_F_B", 1, 6, csv_errc::space_inside, action_errc::none, "space inside"},
    {"control character", "0F0,\x01", 1, 5, csv_errc::control_character, action_errc::none, "control"},
    {"DEL", "0F0\x7f", 1, 4, csv_errc::control_character, action_errc::none, "control"},
    {"non-ASCII", "0F0,0F1\xc3\xa9", 1, 8, csv_errc::non_ascii, action_errc::none, "non-ASCII"},
    {"error before a later bad byte", "0Q0\t", 1, 2, csv_errc::bad_action, action_errc::unknown_letter, "unknown"},
    {"empty file", "", 1, 1, csv_errc::no_ranks, action_errc::none, "no ranks"},
    {"only blank lines", "\n\r\n\n", 1, 1, csv_errc::no_ranks, action_errc::none, "no ranks"},
};
// clang-format on

TEST_CASE("csv: malformed inputs give their line, column and a message") {
    CHECK(csv_bad_cases.size() >= 15);
    for (const csv_bad_case& c : csv_bad_cases) {
        INFO(c.name);
        const ps::csv_result r = ps::read_csv(c.text);
        REQUIRE_FALSE(r);
        CHECK(r.table.ranks.empty());
        CHECK(r.error.code == c.code);
        CHECK(r.error.action_error == c.action_error);
        CHECK(r.error.line == c.line);
        CHECK(r.error.column == c.column);
        CHECK(r.error.message.find(c.message_part) != std::string::npos);
        const std::string text = ps::describe(r.error);
        CHECK(text.find("line " + std::to_string(c.line) + ", column " + std::to_string(c.column)) == 0);
    }
    const ps::csv_result r = ps::read_csv("0F0,0F1\n1F0,1X1\n");
    CHECK(r.error.cell == 2);
    CHECK(ps::describe(r.error) ==
          "line 2, column 6 (cell 2): " + std::string{ps::describe(action_errc::unknown_letter)});
}

// --- the fuzzers' seed corpus as regression inputs ---------------------------------------------

std::filesystem::path corpus_dir(std::string_view name) {
    return std::filesystem::path{__FILE__}.parent_path() / "fuzz" / "corpus" / name;
}

std::string slurp(const std::filesystem::path& file) {
    std::ifstream in{file, std::ios::binary};
    return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// Seeds named valid_* must be accepted, bad_* rejected; every accepted one must round-trip.
TEST_CASE("csv: fuzz seed corpus") {
    const auto csv_dir = corpus_dir("csv");
    const auto action_dir = corpus_dir("action");
    if (!std::filesystem::is_directory(csv_dir) || !std::filesystem::is_directory(action_dir)) {
        MESSAGE("corpus not found next to the test source; skipped");
        return;
    }
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator{csv_dir}) {
        const std::string name = entry.path().filename().string();
        INFO(name);
        const std::string text = slurp(entry.path());
        const ps::csv_result r = ps::read_csv(text);
        if (name.rfind("valid_", 0) == 0) CHECK(r);
        if (name.rfind("bad_", 0) == 0) CHECK_FALSE(r);
        if (r) {
            const ps::csv_result again = ps::read_csv(ps::write_csv(r.table));
            REQUIRE(again);
            CHECK(again.table == r.table);
        }
        ++files;
    }
    for (const auto& entry : std::filesystem::directory_iterator{action_dir}) {
        const std::string name = entry.path().filename().string();
        INFO(name);
        const std::string text = slurp(entry.path());
        const ps::cell_parse_result r = ps::parse_cell(text);
        if (name.rfind("valid_", 0) == 0) CHECK(r);
        if (name.rfind("bad_", 0) == 0) CHECK_FALSE(r);
        if (r && r.count == 1) CHECK(ps::format_action(r.actions[0]).view() == text);
        if (r && r.count == 2) CHECK(ps::format_overlap(r.actions[0], r.actions[1]).view() == text);
        ++files;
    }
    CHECK(files >= 10);
}

} // namespace
