// Zero-bubble schedules: zb_h1, zb_h2 and interleaved_zero_bubble (PyTorch's ZB1P).
// Exact orders derived by hand from PyTorch's ScheduleInterleavedZeroBubble and the paper's
// Figure 3, a naive restatement of PyTorch's step loop compared over a grid, properties over
// p in 1..8, m in 1..4p, v in 1..4, and the cost model against the paper's formulas.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/catalog.hpp>
#include <pipesched/policies/interleaved_zero_bubble.hpp>
#include <pipesched/policies/zb_h1.hpp>
#include <pipesched/policies/zb_h2.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <string_view>
#include <vector>

namespace ps = pipesched;
using pipesched_test::for_each_accepted_shape;
using pipesched_test::near;
using pipesched_test::order_is;
using pipesched_test::peak_alive;

namespace {

using ps::op;

// ---------------------------------------------------------------------------------------------
// Exact orders. Each constant is checked at compile time and again at run time.
//
// PyTorch's ScheduleInterleavedZeroBubble, read off `_calculate_single_rank_operations` and
// `_get_1f1b_rank_ops(..., enable_zero_bubble=True)`:
//   rounds = max(1, m // p), g = microbatches_per_round = m // rounds (m % rounds must be 0)
//   warmup_ops = min((v-1)*g + (p-1-rank), m*v), fwd_bwd_ops = m*v - warmup_ops,
//   cooldown_ops = warmup_ops, num_1f1b_microbatches = rank
//   op < warmup_ops:                F of forward_stage_index(op)
//   warmup_ops <= op < m*v:         F of forward_stage_index(op), then I of
//                                   backward_stage_index(op)
//   op >= m*v:                      I of backward_stage_index(op)
//   after each I, once op - warmup_ops >= num_1f1b_microbatches: the W of the oldest I
//   without one; after the loop: the remaining W's.
// forward_stage_index(op) = ((op // g) % v) * p + rank and
// backward_stage_index(op) = (v-1 - ((op - warmup_ops) // g) % v) * p + rank; the microbatch
// of each action is a per-stage counter. `_add_bubbles_to_actions` inserts only None slots.

// zb_h1, p = 4, m = 8 (v = 1): rounds = 2, g = 4, 8 % 2 == 0, so PyTorch accepts it.
// Rank 0: warmup_ops = 0*4 + 3 = 3, num_1f1b_microbatches = 0.
//   ops 0..2:  F0 F1 F2
//   ops 3..7:  F3 I0 W0 | F4 I1 W1 | F5 I2 W2 | F6 I3 W3 | F7 I4 W4   (op-3 >= 0: W at once)
//   ops 8..10: I5 W5 | I6 W6 | I7 W7; no W left for the final loop.
// Rank 3: warmup_ops = 0, num_1f1b_microbatches = 3.
//   ops 0..2:  F0 I0 | F1 I1 | F2 I2                                  (op < 3: no W)
//   ops 3..7:  F3 I3 W0 | F4 I4 W1 | F5 I5 W2 | F6 I6 W3 | F7 I7 W4
//   final loop: W5 W6 W7.
// Rank 1: warmup_ops = 2, delay 1: F0 F1 | F2 I0 | F3 I1 W0 | ... | F7 I5 W4 | I6 W5 | I7 W6 | W7.
// This is also Figure 3 (top) of the paper: device 4 runs F1 B1 F2 B2 F3 B3 F4 B4 W1 F5 B5 W2...
constexpr ps::zb_h1 h1_4x8{{.ranks = 4, .microbatches = 8}};
constexpr std::string_view h1_4x8_rank0 =
    "0F0,0F1,0F2,0F3,0I0,0W0,0F4,0I1,0W1,0F5,0I2,0W2,0F6,0I3,0W3,0F7,0I4,0W4,"
    "0I5,0W5,0I6,0W6,0I7,0W7";
constexpr std::string_view h1_4x8_rank1 =
    "1F0,1F1,1F2,1I0,1F3,1I1,1W0,1F4,1I2,1W1,1F5,1I3,1W2,1F6,1I4,1W3,1F7,1I5,1W4,"
    "1I6,1W5,1I7,1W6,1W7";
constexpr std::string_view h1_4x8_rank3 =
    "3F0,3I0,3F1,3I1,3F2,3I2,3F3,3I3,3W0,3F4,3I4,3W1,3F5,3I5,3W2,3F6,3I6,3W3,3F7,3I7,3W4,"
    "3W5,3W6,3W7";
PIPESCHED_VERIFY(order_is(h1_4x8, 0, h1_4x8_rank0));
PIPESCHED_VERIFY(order_is(h1_4x8, 1, h1_4x8_rank1));
PIPESCHED_VERIFY(order_is(h1_4x8, 3, h1_4x8_rank3));

// interleaved_zero_bubble, p = 2, m = 4, v = 2: rounds = 2, g = 2, n = m*v = 8.
// forward_stage_index: ops 0,1 -> chunk 0; 2,3 -> chunk 1; 4,5 -> chunk 0; 6,7 -> chunk 1, so
// the forward units are (c0,0) (c0,1) (c1,0) (c1,1) (c0,2) (c0,3) (c1,2) (c1,3).
// backward_stage_index with j = op - warmup_ops: j 0,1 -> chunk 1; 2,3 -> chunk 0; 4,5 -> 1;
// 6,7 -> 0, so the backward units are (c1,0) (c1,1) (c0,0) (c0,1) (c1,2) (c1,3) (c0,2) (c0,3).
// Rank 0 holds stages 0 (c0) and 2 (c1); warmup_ops = 1*2 + 1 = 3, delay 0:
//   warm-up:       0F0 0F1 2F0
//   j = 0..4:      2F1 2I0 2W0 | 0F2 2I1 2W1 | 0F3 0I0 0W0 | 2F2 0I1 0W1 | 2F3 2I2 2W2
//   j = 5..7:      2I3 2W3 | 0I2 0W2 | 0I3 0W3
// Rank 1 holds stages 1 and 3; warmup_ops = 2 + 0 = 2, delay 1 (W_{j-1} after I_j):
//   warm-up:       1F0 1F1
//   j = 0..5:      3F0 3I0 | 3F1 3I1 3W0 | 1F2 1I0 3W1 | 1F3 1I1 1W0 | 3F2 3I2 1W1 |
//                  3F3 3I3 3W2
//   j = 6, 7:      1I2 3W3 | 1I3 1W2
//   final loop:    1W3
constexpr ps::interleaved_zero_bubble zb1p_2x4x2{{.ranks = 2, .microbatches = 4, .chunks = 2}};
constexpr std::string_view zb1p_2x4x2_rank0 =
    "0F0,0F1,2F0,2F1,2I0,2W0,0F2,2I1,2W1,0F3,0I0,0W0,2F2,0I1,0W1,2F3,2I2,2W2,2I3,2W3,0I2,0W2,"
    "0I3,0W3";
constexpr std::string_view zb1p_2x4x2_rank1 =
    "1F0,1F1,3F0,3I0,3F1,3I1,3W0,1F2,1I0,3W1,1F3,1I1,1W0,3F2,3I2,1W1,3F3,3I3,3W2,1I2,3W3,1I3,"
    "1W2,1W3";
PIPESCHED_VERIFY(order_is(zb1p_2x4x2, 0, zb1p_2x4x2_rank0));
PIPESCHED_VERIFY(order_is(zb1p_2x4x2, 1, zb1p_2x4x2_rank1));

// interleaved_zero_bubble with m < p, p = 4, m = 2, v = 2: rounds = 1, g = m = 2, n = 4.
// Rank 0: warmup_ops = min(2 + 3, 4) = 4 (capped: all forwards first), delay 0:
//   0F0 0F1 4F0 4F1 | 4I0 4W0 | 4I1 4W1 | 0I0 0W0 | 0I1 0W1
// Rank 3: warmup_ops = 2 + 0 = 2, delay 3: 3F0 3F1 | j=0: 7F0 7I0 | j=1: 7F1 7I1 |
//   j=2 (cool-down, 2 < 3): 3I0 | j=3: 3I1 7W0 | final loop: 7W1 3W0 3W1
constexpr ps::interleaved_zero_bubble zb1p_4x2x2{{.ranks = 4, .microbatches = 2, .chunks = 2}};
PIPESCHED_VERIFY(order_is(zb1p_4x2x2, 0, "0F0,0F1,4F0,4F1,4I0,4W0,4I1,4W1,0I0,0W0,0I1,0W1"));
PIPESCHED_VERIFY(order_is(zb1p_4x2x2, 3, "3F0,3F1,7F0,7I0,7F1,7I1,3I0,3I1,7W0,7W1,3W0,3W1"));

// zb_h2, p = 4, m = 8: the paper's Figure 3 (bottom), microbatches counted from 0.
// Rank r: w = 2(p-1-r)+1 warm-up F, a = min(2r, m-w) (I,F), b = m-w-a (I,W,F), w (I,W),
// a trailing W.
// Rank 0: w = 7, a = 0, b = 1: F0..F6 | I0 W0 F7 | I1 W1 ... I7 W7
//                                                   (figure: F1-F7, B1 W1 F8, B2 W2 ...)
// Rank 1: w = 5, a = 2, b = 1: F0..F4 | I0 F5 | I1 F6 | I2 W0 F7 | I3 W1 .. I7 W5 | W6 W7
// Rank 2: w = 3, a = 4, b = 1: F0..F2 | I0 F3 .. I3 F6 | I4 W0 F7 | I5 W1 I6 W2 I7 W3 | W4..W7
// Rank 3: w = 1, a = 6, b = 1: F0 | I0 F1 .. I5 F6 | I6 W0 F7 | I7 W1 | W2..W7
//                                                   (figure: F1 B1 ... F7 B7 W1 F8 B8 W2-W8)
constexpr ps::zb_h2 h2_4x8{{.ranks = 4, .microbatches = 8}};
constexpr std::array<std::string_view, 4> h2_4x8_order{
    "0F0,0F1,0F2,0F3,0F4,0F5,0F6,0I0,0W0,0F7,0I1,0W1,0I2,0W2,0I3,0W3,0I4,0W4,0I5,0W5,0I6,0W6,"
    "0I7,0W7",
    "1F0,1F1,1F2,1F3,1F4,1I0,1F5,1I1,1F6,1I2,1W0,1F7,1I3,1W1,1I4,1W2,1I5,1W3,1I6,1W4,1I7,1W5,"
    "1W6,1W7",
    "2F0,2F1,2F2,2I0,2F3,2I1,2F4,2I2,2F5,2I3,2F6,2I4,2W0,2F7,2I5,2W1,2I6,2W2,2I7,2W3,2W4,2W5,"
    "2W6,2W7",
    "3F0,3I0,3F1,3I1,3F2,3I2,3F3,3I3,3F4,3I4,3F5,3I5,3F6,3I6,3W0,3F7,3I7,3W1,3W2,3W3,3W4,3W5,"
    "3W6,3W7"};
PIPESCHED_VERIFY(order_is(h2_4x8, 0, h2_4x8_order[0]));
PIPESCHED_VERIFY(order_is(h2_4x8, 1, h2_4x8_order[1]));
PIPESCHED_VERIFY(order_is(h2_4x8, 2, h2_4x8_order[2]));
PIPESCHED_VERIFY(order_is(h2_4x8, 3, h2_4x8_order[3]));

// p = 1: nothing to overlap; every schedule is F I W per microbatch.
PIPESCHED_VERIFY(order_is(ps::zb_h1{{.ranks = 1, .microbatches = 2, .chunks = 1}}, 0, "0F0,0I0,0W0,0F1,0I1,0W1"));
PIPESCHED_VERIFY(order_is(ps::zb_h2{{.ranks = 1, .microbatches = 2, .chunks = 1}}, 0, "0F0,0I0,0W0,0F1,0I1,0W1"));

// Materialised arrays and closed-form access.
inline constexpr ps::zb_h2 h2_nttp{{.ranks = 4, .microbatches = 8, .chunks = 1}};
constexpr auto h2_array = ps::to_array<h2_nttp>();
PIPESCHED_VERIFY(h2_array.size() == 4 * 8 * 3);
PIPESCHED_VERIFY(h2_array[7] == ps::event{op::backward_input, 0, 0, 0, ps::no_peer});
constexpr ps::event h1_w0_rank3{op::backward_weight, 0, 3, 0, ps::no_peer};
PIPESCHED_VERIFY(ps::zb_h1{{.ranks = 4, .microbatches = 8, .chunks = 1}}.at(3, 8) == h1_w0_rank3);

// In flight: p for ZB-H1 (every rank), 2p-1 for ZB-H2, (v-1)g + p for ZB1P.
PIPESCHED_VERIFY(ps::peak_activations(h1_4x8, 0) == 4 && ps::peak_activations(h1_4x8, 3) == 4);
PIPESCHED_VERIFY(ps::peak_activations(h2_4x8, 0) == 7 && ps::peak_activations(h2_4x8, 3) == 7);
PIPESCHED_VERIFY(ps::peak_activations(zb1p_2x4x2, 0) == 4);

// Unit costs F = I = W = 1 (B = 2 is unused): ZB-H1 takes 3m + (p-1), one third of 1F1B's
// bubble, and ZB-H2 is a parallelogram: rank r busy from r to r + 3m.
constexpr ps::cost_model unit_costs{{1.0, 2.0, 1.0, 1.0}};
PIPESCHED_VERIFY(ps::simulate(h1_4x8, unit_costs).makespan == 27.0);
PIPESCHED_VERIFY(ps::simulate(h2_4x8, unit_costs).makespan == 27.0);
PIPESCHED_VERIFY(ps::simulate(h2_4x8, unit_costs).ranks[2].first_start == 2.0);
PIPESCHED_VERIFY(ps::simulate(h2_4x8, unit_costs).ranks[2].last_end == 26.0);

TEST_CASE("zb: exact orders, run-time twins of the static_asserts") {
    for (std::uint32_t r = 0; r < 4; ++r) CHECK(order_is(h2_4x8, r, h2_4x8_order[r]));

    std::vector<ps::event> all;
    for (std::uint32_t r = 0; r < 4; ++r) {
        for (ps::event e : ps::events(h2_nttp, r)) all.push_back(e);
    }
    REQUIRE(all.size() == h2_array.size());
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i] == h2_array[i]);

    CHECK(ps::peak_activations(h1_4x8, 0) == 4);
    CHECK(ps::peak_activations(h1_4x8, 3) == 4);
    CHECK(ps::peak_activations(h2_4x8, 0) == 7);
    CHECK(ps::peak_activations(h2_4x8, 3) == 7);
}

// ---------------------------------------------------------------------------------------------
// PyTorch's step loop, restated naively (per-stage counters, a list of the steps that ran an
// I), compared with the policies on every accepted shape of the grid.

std::vector<ps::action> pytorch_zb1p_rank(std::uint32_t p, std::uint32_t m, std::uint32_t v,
                                          std::uint32_t rank) {
    const std::uint32_t rounds = std::max(1u, m / p);
    const std::uint32_t per_round = m / rounds;
    const std::uint32_t n = m * v;
    const std::uint32_t warmup = std::min((v - 1) * per_round + (p - 1 - rank), n);
    const auto forward_stage = [&](std::uint32_t step) {
        return ((step / per_round) % v) * p + rank;
    };
    const auto backward_stage = [&](std::uint32_t step) {
        return (v - 1 - ((step - warmup) / per_round) % v) * p + rank;
    };
    std::map<std::uint32_t, std::uint32_t> next_f;
    std::map<std::uint32_t, std::uint32_t> next_i;
    std::map<std::uint32_t, std::uint32_t> next_w;
    std::vector<std::uint32_t> input_steps;
    std::size_t weights_done = 0;
    std::vector<ps::action> out;
    const auto weight = [&] {
        const std::uint32_t stage = backward_stage(input_steps[weights_done++]);
        out.push_back({stage, op::backward_weight, next_w[stage]++});
    };
    for (std::uint32_t step = 0; step < n + warmup; ++step) {
        if (step < n) {
            const std::uint32_t stage = forward_stage(step);
            out.push_back({stage, op::forward, next_f[stage]++});
        }
        if (step >= warmup) {
            const std::uint32_t stage = backward_stage(step);
            out.push_back({stage, op::backward_input, next_i[stage]++});
            input_steps.push_back(step);
            if (step - warmup >= rank) weight();
        }
    }
    while (weights_done < input_steps.size()) weight();
    return out;
}

template <class P>
std::vector<ps::action> actions_of(const P& pol, std::uint32_t rank) {
    std::vector<ps::action> out;
    for (ps::event e : ps::events(pol, rank)) out.push_back(ps::to_action(pol, e));
    return out;
}

TEST_CASE("zb: interleaved_zero_bubble and zb_h1 are PyTorch's order on every accepted shape") {
    std::size_t shapes = 0;
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            for (std::uint32_t v = 1; v <= 4; ++v) {
                const ps::interleaved_zero_bubble pol{{.ranks = p, .microbatches = m, .chunks = v}};
                if (!pol.check()) continue;
                ++shapes;
                INFO("p=" << p << " m=" << m << " v=" << v);
                for (std::uint32_t r = 0; r < p; ++r) {
                    const auto expected = pytorch_zb1p_rank(p, m, v, r);
                    CHECK(actions_of(pol, r) == expected);
                    if (v == 1) CHECK(actions_of(ps::zb_h1{{.ranks = p, .microbatches = m, .chunks = 1}}, r) == expected);
                }
            }
        }
    }
    CHECK(shapes > 400);
}

// ---------------------------------------------------------------------------------------------
// Accepted shapes.

TEST_CASE("zb: accepted shapes are PyTorch's for ZB1P and ZB-H1, any m for ZB-H2") {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            const bool pytorch = m % std::max(1u, m / p) == 0;
            INFO("p=" << p << " m=" << m);
            for (std::uint32_t v = 1; v <= 4; ++v) {
                CHECK(static_cast<bool>(ps::interleaved_zero_bubble{{.ranks = p, .microbatches = m, .chunks = v}}.check()) == pytorch);
                CHECK(static_cast<bool>(ps::zb_h1{{.ranks = p, .microbatches = m, .chunks = v}}.check()) == (pytorch && v == 1));
                CHECK(static_cast<bool>(ps::zb_h2{{.ranks = p, .microbatches = m, .chunks = v}}.check()) == (v == 1));
            }
            if (m % p == 0 || m < p) CHECK(pytorch);
        }
    }
    const std::string_view rounds_message = ps::interleaved_zero_bubble{{.ranks = 4, .microbatches = 9, .chunks = 2}}.check().message;
    CHECK(rounds_message.find("multiple of max(1, microbatches / ranks)") !=
          std::string_view::npos);
    CHECK(ps::zb_h1{{.ranks = 4, .microbatches = 9, .chunks = 1}}.check().message == rounds_message);
    CHECK(ps::zb_h1{{.ranks = 4, .microbatches = 8, .chunks = 2}}.check().message.find("chunks must be 1") != std::string_view::npos);
    CHECK(ps::zb_h2{{.ranks = 4, .microbatches = 8, .chunks = 2}}.check().message.find("chunks must be 1") != std::string_view::npos);
    CHECK_FALSE(ps::zb_h1{{.ranks = 0, .microbatches = 8, .chunks = 1}}.check());
    CHECK_FALSE(ps::zb_h2{{.ranks = 4, .microbatches = 0, .chunks = 1}}.check());
    CHECK_FALSE(ps::interleaved_zero_bubble{{.ranks = 4, .microbatches = 8, .chunks = 0}}.check());
    CHECK(ps::interleaved_zero_bubble{{.ranks = 4, .microbatches = 8, .chunks = 0}}.check().message == "chunks must be at least 1");
    CHECK(ps::interleaved_zero_bubble{{.ranks = 4, .microbatches = 10, .chunks = 2}}.microbatches_per_round() == 5); // 10 / (10/4)
    CHECK(ps::interleaved_zero_bubble{{.ranks = 4, .microbatches = 3, .chunks = 2}}.microbatches_per_round() == 3);  // m < p: g = m
}

// ---------------------------------------------------------------------------------------------
// Properties over the grid p in 1..8, m in 1..4p, v in 1..4 (where accepted).

/// Peak in-flight chunk activations on every rank (W frees, I does not).
std::uint32_t expected_peak(const ps::zb_h1& pol, std::uint32_t) {
    return std::min(pol.shape.ranks, pol.shape.microbatches);
}
std::uint32_t expected_peak(const ps::zb_h2& pol, std::uint32_t) {
    return std::min(2 * pol.shape.ranks - 1, pol.shape.microbatches);
}
std::uint32_t expected_peak(const ps::interleaved_zero_bubble& pol, std::uint32_t) {
    const ps::shape s = pol.shape;
    return std::min((s.chunks - 1) * pol.microbatches_per_round() + s.ranks,
                    s.chunks * s.microbatches);
}

#define PIPESCHED_ZB_POLICIES ps::zb_h1, ps::zb_h2, ps::interleaved_zero_bubble

PIPESCHED_VERIFY(ps::indexable_policy<ps::zb_h1>);
PIPESCHED_VERIFY(ps::indexable_policy<ps::zb_h2>);
PIPESCHED_VERIFY(ps::indexable_policy<ps::interleaved_zero_bubble>);
PIPESCHED_VERIFY(ps::rank_cursor<decltype(ps::zb_h2{{.ranks = 2, .microbatches = 2, .chunks = 1}}.cursor(0))>);

TEST_CASE_TEMPLATE("zb: every unit runs exactly one F, one I and one W, in that order, on one rank",
                   P, PIPESCHED_ZB_POLICIES) {
    std::size_t shapes = 0;
    for_each_accepted_shape<P>([&](const P& pol) {
        ++shapes;
        const ps::shape s = pol.shape;
        INFO(P::name << " p=" << s.ranks << " m=" << s.microbatches << " v=" << s.chunks);
        const pipesched_test::unit_census units = pipesched_test::census(pol);
        CHECK(units.order_ok);
        CHECK(units.fields_ok);
        CHECK(units.counts.size() == std::size_t{s.stages()} * s.microbatches);
        bool once = true;
        for (const auto& [unit, c] : units.counts) once = once && c == std::array<int, 4>{1, 0, 1, 1};
        CHECK(once);
    });
    CHECK(shapes > 0);
}

TEST_CASE_TEMPLATE("zb: valid and deadlock-free under blocking p2p", P, PIPESCHED_ZB_POLICIES) {
    for_each_accepted_shape<P>([](const P& pol) {
        const ps::shape s = pol.shape;
        INFO(P::name << " p=" << s.ranks << " m=" << s.microbatches << " v=" << s.chunks);
        CHECK(pipesched_test::naive_dependencies_met(pol));
        const ps::verdict v = ps::validate(pol);
        INFO(ps::describe(v));
        CHECK(static_cast<bool>(v));
    });
}

TEST_CASE_TEMPLATE("zb: cursor, at() and emit() produce the same sequence", P,
                   PIPESCHED_ZB_POLICIES) {
    for_each_accepted_shape<P>([](const P& pol) {
        const ps::shape s = pol.shape;
        INFO(P::name << " p=" << s.ranks << " m=" << s.microbatches << " v=" << s.chunks);
        // F, I and W for every (chunk, microbatch) on every rank.
        CHECK(pipesched_test::streams_agree(pol) == 3 * std::size_t{s.ranks} * s.microbatches * s.chunks);
    });
}

TEST_CASE_TEMPLATE("zb: peak in-flight activations on every rank", P, PIPESCHED_ZB_POLICIES) {
    for_each_accepted_shape<P>([](const P& pol) {
        const ps::shape s = pol.shape;
        INFO(P::name << " p=" << s.ranks << " m=" << s.microbatches << " v=" << s.chunks);
        const ps::simulation sim = ps::simulate(pol, unit_costs);
        REQUIRE(sim);
        for (std::uint32_t r = 0; r < s.ranks; ++r) {
            INFO("rank " << r);
            CHECK(peak_alive(pol, r) == expected_peak(pol, r));
            CHECK(ps::peak_activations(pol, r) == expected_peak(pol, r));
            CHECK(sim.ranks[r].peak_activations == expected_peak(pol, r));
        }
    });
}

// ---------------------------------------------------------------------------------------------
// The cost model against the paper's formulas. Per-stage costs T_F, T_I, T_W, no latency.

struct costs {
    double f;
    double i;
    double w;
    [[nodiscard]] ps::cost_model model() const { return ps::cost_model{{f, f + i, i, w}}; }
    [[nodiscard]] double unit() const { return f + i + w; }
    [[nodiscard]] double smallest() const { return std::min({f, i, w}); }
};

// W no longer than F and I: the paper's setting (it assumes T_F = T_B = T_W).
constexpr std::array<costs, 6> w_fits{
    {{1, 1, 1}, {2, 2, 1}, {1, 2, 1}, {2, 1, 1}, {1, 1, 0.5}, {3, 2, 2}}};
// W longer than F or I.
constexpr std::array<costs, 5> w_long{{{1, 1, 2}, {1, 2, 1.5}, {2, 1, 3}, {2, 3, 4}, {1, 1, 3}}};

TEST_CASE("zb: ZB-H1 bubble is (p-1)(T_F+T_I-T_W) for m >= p when W fits, "
          "(p-1)max(T_F,T_I) if not") {
    std::size_t shapes = 0;
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            const ps::zb_h1 pol{{.ranks = p, .microbatches = m, .chunks = 1}};
            if (!pol.check()) continue;
            ++shapes;
            for (const costs& c : w_fits) {
                INFO("p=" << p << " m=" << m << " F=" << c.f << " I=" << c.i << " W=" << c.w);
                const ps::simulation s = ps::simulate(pol, c.model());
                REQUIRE(s);
                if (m >= p) {
                    // The paper's formula, exactly.
                    CHECK(near(s.makespan, m * c.unit() + (p - 1) * (c.f + c.i - c.w)));
                } else {
                    // m < p: rank 0's warm-up is capped at m, so it runs every forward before
                    // the first backward: 1F1B's (m+p-1)(F+B) with B = I, plus the last W.
                    CHECK(near(s.makespan, (m + p - 1) * (c.f + c.i) + c.w));
                }
                for (std::uint32_t r = 0; r < p; ++r) CHECK(near(s.ranks[r].busy, m * c.unit()));
            }
            if (m < p) continue;
            for (const costs& c : w_long) {
                INFO("p=" << p << " m=" << m << " F=" << c.f << " I=" << c.i << " W=" << c.w);
                const ps::simulation s = ps::simulate(pol, c.model());
                REQUIRE(s);
                // A W longer than the F or I it should hide behind delays them: the bubble is
                // (p-1)(T_F+T_I-min(T_F,T_I,T_W)) = (p-1)max(T_F,T_I), more than the paper's.
                CHECK(near(s.makespan, m * c.unit() + (p - 1) * std::max(c.f, c.i)));
                CHECK(near(s.makespan, m * c.unit() + (p - 1) * (c.f + c.i - c.smallest())));
                if (p > 1) CHECK(s.makespan > m * c.unit() + (p - 1) * (c.f + c.i - c.w) + 0.25);
            }
        }
    }
    CHECK(shapes > 100);
}

TEST_CASE("zb: ZB1P bubble is (p-1)(T_F+T_I-min(T_F,T_I,T_W)) for m >= p, any v") {
    std::size_t shapes = 0;
    for (std::uint32_t p = 1; p <= 6; ++p) {
        for (std::uint32_t m = p; m <= 3 * p; ++m) {
            for (std::uint32_t v = 2; v <= 4; ++v) {
                const ps::interleaved_zero_bubble pol{{.ranks = p, .microbatches = m, .chunks = v}};
                if (!pol.check()) continue;
                ++shapes;
                for (const auto& group :
                     {std::span<const costs>{w_fits}, std::span<const costs>{w_long}}) {
                    for (const costs& c : group) {
                        INFO("p=" << p << " m=" << m << " v=" << v << " F=" << c.f << " I=" << c.i
                                  << " W=" << c.w);
                        const ps::simulation s = ps::simulate(pol, c.model());
                        REQUIRE(s);
                        CHECK(near(s.makespan,
                                   v * m * c.unit() + (p - 1) * (c.f + c.i - c.smallest())));
                    }
                }
            }
        }
    }
    CHECK(shapes > 100);
}

TEST_CASE("zb: ZB-H2 is a parallelogram with unit costs when m >= 2p-1") {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            INFO("p=" << p << " m=" << m);
            const ps::simulation s = ps::simulate(ps::zb_h2{{.ranks = p, .microbatches = m, .chunks = 1}}, unit_costs);
            REQUIRE(s);
            double largest_gap = 0.0; // idle time between a rank's first and last action
            for (std::uint32_t r = 0; r < p; ++r) {
                const ps::rank_summary& rs = s.ranks[r];
                CHECK(near(rs.busy, 3.0 * m));
                largest_gap = std::max(largest_gap, rs.last_end - rs.first_start - rs.busy);
            }
            // m >= 2p-1 is exactly the range without gaps.
            CHECK(near(largest_gap, m >= 2 * p - 1 ? 0.0 : double(2 * p - 1 - m)));
            if (m < 2 * p - 1) continue;
            // Rank r starts at r (its first input) and never waits: it ends at r + 3m. Its idle
            // time is the parallelogram's two edges, p-1 in all.
            CHECK(near(s.makespan, 3.0 * m + (p - 1)));
            CHECK(near(s.bubble_fraction, double(p - 1) / (3.0 * m + (p - 1))));
            for (std::uint32_t r = 0; r < p; ++r) {
                INFO("rank " << r);
                CHECK(near(s.ranks[r].first_start, r));
                CHECK(near(s.ranks[r].last_end, r + 3.0 * m));
                CHECK(near(s.ranks[r].idle, p - 1));
            }
        }
    }
}

TEST_CASE("zb: ZB-H2 against ZB-H1") {
    std::size_t compared = 0;
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 2 * p - 1; m <= 4 * p; ++m) {
            INFO("p=" << p << " m=" << m);
            const ps::zb_h2 h2{{.ranks = p, .microbatches = m, .chunks = 1}};
            // F = I = 2, W = 1: the last rank cannot start before (p-1)T_F and ZB-H2 never lets
            // it wait after that, so it reaches the lower bound m(T_F+T_I+T_W) + (p-1)T_F.
            const costs c{2, 2, 1};
            const ps::simulation s2 = ps::simulate(h2, c.model());
            CHECK(near(s2.makespan, m * c.unit() + (p - 1) * c.f));
            const ps::zb_h1 h1{{.ranks = p, .microbatches = m, .chunks = 1}};
            if (!h1.check()) continue;
            ++compared;
            // ZB-H1 needs (p-1)(T_F+T_I-T_W): ZB-H2 saves (p-1)(T_I-T_W).
            const ps::simulation s1 = ps::simulate(h1, c.model());
            CHECK(near(s1.makespan - s2.makespan, (p - 1) * (c.i - c.w)));
            // With T_F = T_I = T_W both take 3m + p - 1 for one isolated iteration: ZB-H2's
            // idle time is all at the parallelogram's edges, which only the next iteration can
            // fill (once the optimizer step no longer synchronises the ranks), while ZB-H1's
            // sits inside the iteration.
            CHECK(near(ps::simulate(h1, unit_costs).makespan,
                       ps::simulate(h2, unit_costs).makespan));
        }
    }
    CHECK(compared > 50);
}

// ---------------------------------------------------------------------------------------------
// A whole iteration (p2p, loss, recompute, grad sync, optimizer) around each schedule.

TEST_CASE_TEMPLATE("zb: the iteration around the schedule validates", P, PIPESCHED_ZB_POLICIES) {
    for (std::uint32_t p = 1; p <= 5; ++p) {
        for (std::uint32_t m = 1; m <= 2 * p + 1; ++m) {
            for (std::uint32_t v = 1; v <= 3; ++v) {
                const P pol{{.ranks = p, .microbatches = m, .chunks = v}};
                if (!pol.check()) continue;
                for (int mode = 0; mode < 16; ++mode) {
                    ps::iteration_options o{};
                    o.grad_sync = (mode & 1) ? ps::grad_sync_mode::overlapped
                                             : ps::grad_sync_mode::at_end;
                    o.activation_checkpointing = (mode & 2) != 0;
                    o.param_gather = (mode & 4) ? ps::param_gather_mode::after_step
                                                : ps::param_gather_mode::none;
                    o.grad_norm = (mode & 8) != 0;
                    const ps::iteration it{pol, o};
                    const ps::verdict verdict = ps::validate(it);
                    INFO(P::name << " p=" << p << " m=" << m << " v=" << v << " mode=" << mode);
                    INFO(ps::describe(verdict));
                    CHECK(static_cast<bool>(verdict));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Catalog.

PIPESCHED_VERIFY(ps::find_schedule("zb_h1") == ps::schedule_id::zb_h1);
PIPESCHED_VERIFY(ps::find_schedule("zb-h1") == ps::schedule_id::zb_h1);
PIPESCHED_VERIFY(ps::find_schedule("ZBH1") == ps::schedule_id::zb_h1);
PIPESCHED_VERIFY(ps::find_schedule("zb-h2") == ps::schedule_id::zb_h2);
constexpr auto zb1p_id = ps::schedule_id::interleaved_zero_bubble;
PIPESCHED_VERIFY(ps::find_schedule("InterleavedZeroBubble") == zb1p_id);
PIPESCHED_VERIFY(ps::find_schedule("interleaved_zero_bubble") == zb1p_id);
PIPESCHED_VERIFY(ps::find_schedule("ZB1P") == ps::schedule_id::interleaved_zero_bubble);
PIPESCHED_VERIFY(!ps::find_schedule("zb"));
PIPESCHED_VERIFY(!ps::find_schedule("---")); // an empty PyTorch name must not match an empty name
PIPESCHED_VERIFY(ps::display_name(ps::info(ps::schedule_id::zb_h2)) == "zb_h2");
PIPESCHED_VERIFY(ps::display_name(ps::info(ps::schedule_id::interleaved_zero_bubble)) ==
              "InterleavedZeroBubble");

TEST_CASE("zb: catalog dispatch builds the zero-bubble policies, always split") {
    CHECK(ps::find_schedule("zbh1") == ps::schedule_id::zb_h1);
    CHECK(ps::find_schedule("Zero-Bubble-H2") == ps::schedule_id::zb_h2);
    for (const auto id : {ps::schedule_id::zb_h1, ps::schedule_id::zb_h2,
                          ps::schedule_id::interleaved_zero_bubble}) {
        for (const auto backward : {ps::backward_kind::full, ps::backward_kind::split}) {
            const ps::schedule_options opts{{4, 8, 1}, 0, backward};
            const auto name = ps::with_schedule(id, opts, [](const auto& pol) { return pol.name; });
            CHECK(name == ps::info(id).name);
            const auto inputs = ps::with_schedule(id, opts, [](const auto& pol) {
                std::size_t n = 0;
                for (ps::event e : ps::events(pol, 0)) n += e.kind == op::backward_input ? 1 : 0;
                return n;
            });
            CHECK(inputs == 8);
        }
    }
    CHECK(ps::info(ps::schedule_id::interleaved_zero_bubble).multi_chunk);
    CHECK_FALSE(ps::info(ps::schedule_id::zb_h1).multi_chunk);
    CHECK(ps::info(ps::schedule_id::zb_h1).pytorch_name.empty());
}

} // namespace
