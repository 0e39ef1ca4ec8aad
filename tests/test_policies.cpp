// Exact orders checked by hand against Megatron-LM and PyTorch, and properties over a grid of
// shapes, for gpipe, one_f_one_b, interleaved_1f1b and looped_bfs.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <vector>

namespace ps = pipesched;
using pipesched_test::for_each_accepted_shape;
using pipesched_test::inter_4x8x2;
using pipesched_test::ofob_4x8;
using pipesched_test::order_is;
using pipesched_test::peak_alive;

namespace {

using ps::backward_kind;

// ---------------------------------------------------------------------------------------------
// Exact orders. Each constant is checked at compile time and again at run time.

// The user's question: p = 1, m = 2. GPipe is SimAI's row sweep, 1F1B is Megatron's
// forward_backward_no_pipelining.
constexpr ps::gpipe<> gpipe_1x2{{.ranks = 1, .microbatches = 2}};
constexpr ps::one_f_one_b<> ofob_1x2{{.ranks = 1, .microbatches = 2}};
PIPESCHED_VERIFY(order_is(gpipe_1x2, 0, "0F0,0F1,0B0,0B1"));
PIPESCHED_VERIFY(order_is(ofob_1x2, 0, "0F0,0B0,0F1,0B1"));

// 1F1B, p = 4, m = 8: rank r runs p-r-1 warm-up forwards.
constexpr std::string_view ofob_4x8_rank0 = "0F0,0F1,0F2,0F3,0B0,0F4,0B1,0F5,0B2,0F6,0B3,0F7,0B4,0B5,0B6,0B7";
constexpr std::string_view ofob_4x8_rank1 = "1F0,1F1,1F2,1B0,1F3,1B1,1F4,1B2,1F5,1B3,1F6,1B4,1F7,1B5,1B6,1B7";
constexpr std::string_view ofob_4x8_rank3 = "3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3,3F4,3B4,3F5,3B5,3F6,3B6,3F7,3B7";
PIPESCHED_VERIFY(order_is(ofob_4x8, 0, ofob_4x8_rank0));
PIPESCHED_VERIFY(order_is(ofob_4x8, 1, ofob_4x8_rank1));
PIPESCHED_VERIFY(order_is(ofob_4x8, 3, ofob_4x8_rank3));

// 1F1B with fewer microbatches than ranks: warm-up is capped at m.
constexpr ps::one_f_one_b<> ofob_4x2{{.ranks = 4, .microbatches = 2}};
PIPESCHED_VERIFY(order_is(ofob_4x2, 0, "0F0,0F1,0B0,0B1"));
PIPESCHED_VERIFY(order_is(ofob_4x2, 2, "2F0,2F1,2B0,2B1"));
PIPESCHED_VERIFY(order_is(ofob_4x2, 3, "3F0,3B0,3F1,3B1"));

// 1F1B, p = 3, m = 3, middle rank.
constexpr ps::one_f_one_b<> ofob_3x3{{.ranks = 3, .microbatches = 3}};
PIPESCHED_VERIFY(order_is(ofob_3x3, 1, "1F0,1F1,1B0,1F2,1B1,1B2"));

// 1F1B with split backward: each B becomes I then W.
constexpr ps::one_f_one_b<backward_kind::split> ofob_split_2x2{{.ranks = 2, .microbatches = 2}};
PIPESCHED_VERIFY(order_is(ofob_split_2x2, 0, "0F0,0F1,0I0,0W0,0I1,0W1"));
PIPESCHED_VERIFY(order_is(ofob_split_2x2, 1, "1F0,1I0,1W0,1F1,1I1,1W1"));

// GPipe: PyTorch's ScheduleGPipe runs the backwards in microbatch order.
constexpr ps::gpipe<> gpipe_2x3{{.ranks = 2, .microbatches = 3}};
PIPESCHED_VERIFY(order_is(gpipe_2x3, 1, "1F0,1F1,1F2,1B0,1B1,1B2"));
constexpr ps::gpipe<> gpipe_3x1{{.ranks = 3, .microbatches = 1}};
PIPESCHED_VERIFY(order_is(gpipe_3x1, 2, "2F0,2B0"));

// Interleaved, p = 2, m = 4, v = 2, default g = 2. Checked against PyTorch's
// forward_stage_index / backward_stage_index and Megatron's schedule table.
constexpr ps::interleaved_1f1b<> inter_2x4x2{{.ranks = 2, .microbatches = 4, .chunks = 2}};
PIPESCHED_VERIFY(order_is(inter_2x4x2, 0, "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3"));
PIPESCHED_VERIFY(order_is(inter_2x4x2, 1, "1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,1B2,1B3"));

// Interleaved, p = 4, m = 8, v = 2: rank 0 has 2(p-1) + (v-1)g = 10 warm-up forwards.
PIPESCHED_VERIFY(order_is(inter_4x8x2, 0,
                       "0F0,0F1,0F2,0F3,4F0,4F1,4F2,4F3,0F4,0F5,0F6,4B0,0F7,4B1,4F4,4B2,4F5,4B3,"
                       "4F6,0B0,4F7,0B1,0B2,0B3,4B4,4B5,4B6,4B7,0B4,0B5,0B6,0B7"));
PIPESCHED_VERIFY(order_is(inter_4x8x2, 3,
                       "3F0,3F1,3F2,3F3,7F0,7B0,7F1,7B1,7F2,7B2,7F3,7B3,3F4,3B0,3F5,3B1,3F6,3B2,"
                       "3F7,3B3,7F4,7B4,7F5,7B5,7F6,7B6,7F7,7B7,3B4,3B5,3B6,3B7"));

// Megatron's docstring example "PP2 N3M5 with VP2": g = 3, m = 5, the last group holds
// microbatches 3 and 4. Forward table (mb, chunk): 0 1 2 0 1 2 3 4 3 4 / 0 0 0 1 1 1 0 0 1 1.
constexpr ps::interleaved_1f1b<> inter_2x5x2_g3{{.ranks = 2, .microbatches = 5, .chunks = 2}, 3};
PIPESCHED_VERIFY(order_is(inter_2x5x2_g3, 0, "0F0,0F1,0F2,2F0,2F1,2F2,2B0,0F3,2B1,0F4,2B2,2F3,0B0,2F4,0B1,0B2,2B3,2B4,0B3,0B4"));

// Interleaved with m < p (PyTorch accepts it with g = m): rank 0 is capped at m*v warm-up.
constexpr ps::interleaved_1f1b<> inter_4x2x2{{.ranks = 4, .microbatches = 2, .chunks = 2}};
PIPESCHED_VERIFY(order_is(inter_4x2x2, 0, "0F0,0F1,4F0,4F1,4B0,4B1,0B0,0B1"));
PIPESCHED_VERIFY(order_is(inter_4x2x2, 3, "3F0,3F1,7F0,7B0,7F1,7B1,3B0,3B1"));

// Looped BFS: forwards chunk by chunk, backwards chunk by chunk in reverse, microbatches reversed.
constexpr ps::looped_bfs<> bfs_2x2x2{{.ranks = 2, .microbatches = 2, .chunks = 2}};
PIPESCHED_VERIFY(order_is(bfs_2x2x2, 0, "0F0,0F1,2F0,2F1,2B1,2B0,0B1,0B0"));
PIPESCHED_VERIFY(order_is(bfs_2x2x2, 1, "1F0,1F1,3F0,3F1,3B1,3B0,1B1,1B0"));

// Structural facts on the materialised array.
inline constexpr ps::interleaved_1f1b<> inter_nttp{{.ranks = 4, .microbatches = 8, .chunks = 2}};
constexpr auto inter_array = ps::to_array<inter_nttp>();
PIPESCHED_VERIFY(inter_array.size() == 4 * 8 * 2 * 2);
PIPESCHED_VERIFY(inter_array[0] == ps::event{ps::op::forward, 0, 0, 0, ps::no_peer});
constexpr auto inter_rank3 = ps::to_array<inter_nttp, 3>();
PIPESCHED_VERIFY(inter_rank3.size() == 32);
PIPESCHED_VERIFY(inter_rank3[4].kind == ps::op::forward && inter_rank3[4].chunk == 1);
PIPESCHED_VERIFY(inter_rank3[5].kind == ps::op::backward && inter_rank3[5].chunk == 1);

TEST_CASE("exact orders, run-time twins of the static_asserts") {

    // order_is itself must be able to fail: wrong action, missing and extra actions.
    CHECK_FALSE(order_is(ofob_1x2, 0, "0F0,0F1,0B0,0B1"));
    CHECK_FALSE(order_is(ofob_1x2, 0, "0F0,0B0,0F1"));
    CHECK_FALSE(order_is(ofob_1x2, 0, "0F0,0B0,0F1,0B1,0F2"));

    std::vector<ps::event> all;
    for (std::uint32_t r = 0; r < 4; ++r) {
        for (ps::event e : ps::events(inter_nttp, r)) all.push_back(e);
    }
    REQUIRE(all.size() == inter_array.size());
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i] == inter_array[i]);
}

// ---------------------------------------------------------------------------------------------
// Interleaved group sizes: what Megatron and PyTorch accept.

PIPESCHED_VERIFY(ps::interleaved_1f1b<>::default_group_size({4, 8, 2}) == 4);
PIPESCHED_VERIFY(ps::interleaved_1f1b<>::default_group_size({4, 12, 2}) == 4);
PIPESCHED_VERIFY(ps::interleaved_1f1b<>::default_group_size({4, 10, 2}) == 5); // PyTorch: 10 / (10/4)
PIPESCHED_VERIFY(ps::interleaved_1f1b<>::default_group_size({4, 2, 2}) == 2);  // m < p: g = m

TEST_CASE("interleaved_1f1b accepts what Megatron or PyTorch accept, and nothing else") {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            for (std::uint32_t g = 1; g <= m + 1; ++g) {
                const bool megatron = p <= g && g <= m && (m % g == 0 || m % g >= p);
                const bool pytorch = g == m / std::max(1u, m / p) && m % std::max(1u, m / p) == 0;
                const ps::interleaved_1f1b<> pol{{p, m, 2}, g};
                INFO("p=" << p << " m=" << m << " g=" << g);
                CHECK(static_cast<bool>(pol.check()) == (megatron || pytorch));
                if (!pol.check()) CHECK_FALSE(pol.check().message.empty());
            }
            // The default group size is PyTorch's; it is rejected exactly when PyTorch rejects m.
            const ps::interleaved_1f1b<> by_default{{.ranks = p, .microbatches = m, .chunks = 2}};
            CHECK(static_cast<bool>(by_default.check()) == (m % std::max(1u, m / p) == 0));
        }
    }
    CHECK(ps::interleaved_1f1b<>{{4, 8, 2}, 3}.check().message.find("at least ranks") !=
          std::string_view::npos);
    CHECK(ps::interleaved_1f1b<>{{4, 8, 2}, 9}.check().message.find("at most microbatches") !=
          std::string_view::npos);
    CHECK(ps::interleaved_1f1b<>{{4, 9, 2}, 4}.check().message.find("last group") !=
          std::string_view::npos);
}

TEST_CASE("single-chunk policies reject chunks != 1 and all policies reject empty shapes") {
    CHECK_FALSE(ps::one_f_one_b<>{{.ranks = 4, .microbatches = 8, .chunks = 2}}.check());
    CHECK_FALSE(ps::gpipe<>{{.ranks = 4, .microbatches = 8, .chunks = 2}}.check());
    CHECK(ps::looped_bfs<>{{.ranks = 4, .microbatches = 8, .chunks = 2}}.check());
    CHECK_FALSE(ps::one_f_one_b<>{{.ranks = 0, .microbatches = 8, .chunks = 1}}.check());
    CHECK_FALSE(ps::gpipe<>{{.ranks = 4, .microbatches = 0, .chunks = 1}}.check());
    CHECK_FALSE(ps::looped_bfs<>{{.ranks = 4, .microbatches = 4, .chunks = 0}}.check());
    CHECK_FALSE(ps::one_f_one_b<>{{.ranks = 70000, .microbatches = 8, .chunks = 1}}.check());
    CHECK(ps::one_f_one_b<>{{.ranks = 1024, .microbatches = 65536, .chunks = 1}}.check());
    CHECK_FALSE(ps::one_f_one_b<>{{.ranks = 1024, .microbatches = 65537, .chunks = 1}}.check());
}

// ---------------------------------------------------------------------------------------------
// Properties over a grid of shapes: p in 1..8, m in 1..4p, v in 1..4 (where accepted).

#define PIPESCHED_ALL_POLICIES                                                                     \
    ps::gpipe<>, ps::one_f_one_b<>, ps::interleaved_1f1b<>, ps::looped_bfs<>,                      \
        ps::gpipe<backward_kind::split>, ps::one_f_one_b<backward_kind::split>,                    \
        ps::interleaved_1f1b<backward_kind::split>, ps::looped_bfs<backward_kind::split>

TEST_CASE_TEMPLATE("every unit runs exactly one F and one backward, F first, on one rank", P,
                   PIPESCHED_ALL_POLICIES) {
    std::size_t shapes = 0;
    for_each_accepted_shape<P>([&](const P& pol) {
        ++shapes;
        const ps::shape s = pol.shape;
        const pipesched_test::unit_census units = pipesched_test::census(pol);
        INFO(P::name << " p=" << s.ranks << " m=" << s.microbatches << " v=" << s.chunks);
        CHECK(units.order_ok);
        CHECK(units.fields_ok);
        CHECK(units.counts.size() == std::size_t{s.stages()} * s.microbatches);
        const bool split = P::backward_op == ps::op::backward_input;
        for (const auto& [unit, c] : units.counts) {
            CHECK(c[0] == 1);
            CHECK(c[1] == (split ? 0 : 1));
            CHECK(c[2] == (split ? 1 : 0));
            CHECK(c[3] == (split ? 1 : 0));
        }
    });
    CHECK(shapes > 0);
}

TEST_CASE_TEMPLATE("cross-rank dependencies can be met under blocking p2p", P,
                   PIPESCHED_ALL_POLICIES) {
    for_each_accepted_shape<P>([](const P& pol) {
        const ps::shape s = pol.shape;
        INFO(P::name << " p=" << s.ranks << " m=" << s.microbatches << " v=" << s.chunks);
        CHECK(pipesched_test::naive_dependencies_met(pol));
        const ps::verdict v = ps::validate(pol);
        INFO(ps::describe(v));
        CHECK(static_cast<bool>(v));
    });
}

TEST_CASE_TEMPLATE("cursor, at() and emit() produce the same sequence", P, PIPESCHED_ALL_POLICIES) {
    for_each_accepted_shape<P>([](const P& pol) {
        const ps::shape s = pol.shape;
        INFO(P::name << " p=" << s.ranks << " m=" << s.microbatches << " v=" << s.chunks);
        CHECK(pipesched_test::streams_agree(pol) != 0);
        CHECK(ps::events(pol, 0).size() == pol.size(0));
    });
}

TEST_CASE("peak in-flight activations match the published formulas") {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            const ps::one_f_one_b<> ofob{{.ranks = p, .microbatches = m, .chunks = 1}};
            const ps::gpipe<> gp{{.ranks = p, .microbatches = m, .chunks = 1}};
            for (std::uint32_t r = 0; r < p; ++r) {
                CHECK(peak_alive(ofob, r) == std::min(p - r, m));
                CHECK(peak_alive(gp, r) == m);
            }
            for (std::uint32_t v = 1; v <= 4; ++v) {
                const ps::interleaved_1f1b<> inter{{.ranks = p, .microbatches = m, .chunks = v}};
                if (!inter.check()) continue;
                const std::uint32_t g = inter.group();
                INFO("p=" << p << " m=" << m << " v=" << v << " g=" << g);
                CHECK(peak_alive(inter, 0) == std::min(2 * (p - 1) + (v - 1) * g + 1, m * v));
                CHECK(peak_alive(ps::looped_bfs<>{{.ranks = p, .microbatches = m, .chunks = v}}, 0) == m * v);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Concepts: what is and is not a policy, a cursor, a sink.

struct not_a_sink {};
struct wrong_push {
    void push(int*) {}
};
struct a_sink {
    void push(const ps::event&) {}
};
PIPESCHED_VERIFY(ps::event_sink<a_sink>);
PIPESCHED_VERIFY(!ps::event_sink<not_a_sink>);
PIPESCHED_VERIFY(!ps::event_sink<wrong_push>);
PIPESCHED_VERIFY(!ps::event_sink<int>);
PIPESCHED_VERIFY(ps::schedule_policy<ps::gpipe<>>);
PIPESCHED_VERIFY(ps::indexable_policy<ps::interleaved_1f1b<backward_kind::split>>);
PIPESCHED_VERIFY(!ps::schedule_policy<ps::shape>);
PIPESCHED_VERIFY(!ps::schedule_policy<int>);
PIPESCHED_VERIFY(ps::rank_cursor<decltype(ps::one_f_one_b<>{{.ranks = 2, .microbatches = 2, .chunks = 1}}.cursor(0))>);
PIPESCHED_VERIFY(!ps::rank_cursor<ps::event>);

TEST_CASE("concept checks, run-time twin") {
    CHECK_FALSE(ps::event_sink<not_a_sink>);
    CHECK_FALSE(ps::event_sink<wrong_push>);
    CHECK(ps::schedule_policy<ps::looped_bfs<>>);
    CHECK_FALSE(ps::schedule_policy<ps::shape>);
}

} // namespace
