// autoschedule() in the V placement against the Zero Bubble authors' own V search
// (tests/data/zb_v_auto/: what their v_auto_schedule.py returns over a grid, README.md there),
// and the building blocks its V search starts from (search/v_building_blocks.hpp).
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <pipesched/analysis/validate.hpp>
#include <pipesched/search/autoschedule.hpp>
#include <pipesched/search/v_building_blocks.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

// The helpers' names are their own (a unity build compiles this file with the other tests).
namespace {
namespace zb_v_grid {

namespace ps = pipesched;
namespace as = ps::detail::autosched;

using row = pipesched_test::zb_v_row;

std::vector<row> ok_rows() {
    std::vector<row> out = pipesched_test::zb_v_grid_ok_rows();
    REQUIRE(!out.empty());
    return out;
}

/// The README's mapping: the V placement, every chunk (global stage) T_F = f, T_I = b, T_W = w,
/// M_B = M_W = 1, p2p c, max_mem per rank.
ps::autoschedule_result ours(const row& x) {
    ps::pipeline_costs costs{};
    costs.per_stage.assign(2 * std::size_t{x.p}, ps::stage_times{x.f, x.b, x.w});
    costs.p2p = x.c;
    ps::pipeline_memory memory{};
    memory.per_stage.assign(2 * std::size_t{x.p}, ps::stage_memory{1.0, 1.0, x.max_mem});
    ps::autoschedule_options options{};
    options.placement = ps::search_placement::v;
    return ps::autoschedule({x.p, x.m, 1}, costs, memory, options);
}

struct tally {
    int rows = 0, shorter = 0, equal = 0, longer = 0;
};

/// Every row: a V schedule within the limit, valid, never longer than theirs.
tally compare(const std::vector<row>& rows) {
    tally t{};
    for (const row& x : rows) {
        INFO("p=" << x.p << " m=" << x.m << " costs " << x.cost_set << " max_mem " << x.max_mem << " theirs " << x.span);
        const ps::autoschedule_result r = ours(x);
        REQUIRE(r);
        CHECK(r.layout == ps::placement::v_shape);
        CHECK(static_cast<bool>(ps::validate(r.v_schedule)));
        for (const double peak : r.peak_memory) CHECK(peak <= x.max_mem + 1e-9);
        const double tolerance = 1e-9 * std::max(1.0, x.span);
        CHECK(r.span <= x.span + tolerance);
        ++t.rows;
        if (r.span < x.span - tolerance) ++t.shorter;
        else if (r.span <= x.span + tolerance) ++t.equal;
        else ++t.longer;
    }
    return t;
}

} // namespace zb_v_grid
} // namespace

TEST_CASE("V building blocks: rank slots, the first slot of each action and the peak") {
    namespace as = zb_v_grid::as;
    namespace vb = as::v_blocks;
    // Rank 0: F0 0, F1 1, I1 2, I0 3; its W's in the first free slots after their I's (4, 5).
    vb::rank_slots first{0, 1, 2, 3, 0, 0};
    vb::place_weights(first);
    CHECK(first == vb::rank_slots{0, 1, 2, 3, 4, 5});
    // Rank 1 with offset 1: F0 and I1 one slot later, F1 and I0 one earlier (1, 0, 3, 2); W1
    // after I1 at 4, W0 after I0: 3 and 4 are taken, so 5.
    const std::vector<vb::rank_slots> block = vb::make_block(first, 2, 1, 1, 1);
    REQUIRE(block.size() == 2);
    CHECK(block[1] == vb::rank_slots{1, 0, 3, 2, 4, 5});
    // Microbatch 0 along the chain, each strictly after its input, at the first slot of its kind:
    // F0 rank 0 at 0, rank 1 at 1; F1 rank 1 at 6 (slot 0 after 1), rank 0 at 7; I1 rank 0 at 8,
    // rank 1 at 9; I0 rank 1 at 14 (slot 2 after 9), rank 0 at 15; W1 at 10 on both ranks (slot
    // 4 after 8, after 9), W0 at 17 (slot 5 after 15, after 14).
    const auto at = vb::first_slots(block);
    CHECK(at[0] == std::array<std::uint64_t, 6>{0, 7, 8, 15, 10, 17});
    CHECK(at[1] == std::array<std::uint64_t, 6>{1, 6, 9, 14, 10, 17});
    // Rank 0 {F0 0, F1 2, I1 4, I0 1} with offset 2: rank 1's I1 lands on (4 + 2) % 6 = 0 and
    // its I0 on 1 - 1 = 0, the same slot: no block.
    CHECK(vb::make_block(vb::rank_slots{0, 2, 4, 1, 5, 3}, 2, 2, 2, 1).empty());
    // The peak counted without building the timeline equals the timeline's, over every block.
    for (const std::uint32_t p : {2U, 3U, 4U}) {
        const auto blocks = as::distinct_blocks(p);
        CHECK(!blocks.empty());
        for (const auto& b : blocks) {
            for (const std::uint32_t m : {1U, p, 2 * p + 1}) CHECK(vb::repeated_peak(b, m) == vb::peak(vb::repeated(b, m)));
        }
    }
}

TEST_CASE("V building blocks: every order offered is a valid V schedule within the limit") {
    namespace ps = zb_v_grid::ps;
    namespace as = zb_v_grid::as;
    for (const std::uint32_t p : {2U, 3U, 4U}) {
        for (const std::uint32_t m : {p - 1, p + 1, 2 * p + 1}) {
            if (m == 0) continue;
            for (const double limit : {3.0, static_cast<double>(p) + 1.0, 2.0 * p}) {
                INFO("p=" << p << " m=" << m << " limit " << limit);
                ps::pipeline_costs costs{};
                costs.uniform = {6.0, 8.0, 4.0};
                ps::pipeline_memory memory{};
                memory.uniform = {2.0, 2.0, limit}; // one activation per chunk
                const as::problem pr = as::make_problem({p, m, 1}, costs, memory, ps::placement::v_shape, 2);
                as::evaluator ev{pr};
                int offered = 0, fitting = 0;
                as::v_building_block_orders(pr, [&](as::order&& o) {
                    ++offered;
                    const as::evaluation e = ev.run(o);
                    CHECK(e.legal);
                    fitting += e.fits ? 1 : 0;
                    CHECK(static_cast<bool>(ps::validate(as::to_schedule<ps::placement::v_shape>(pr, o))));
                });
                // Below a block's own memory nothing is offered (the smallest steady state of
                // two ranks holds 3 or 4 chunk activations); at 2p, every block fits.
                if (limit == 2.0 * p) CHECK(offered > 0);
                CHECK(fitting == offered);
            }
        }
    }
}

TEST_CASE("autoschedule placement v: never longer than the Zero Bubble authors' V search (p = 3)") {
    // The unit run's share of the grid (the full grid is the next test case, run on its own in
    // optimised builds): every row with three ranks.
    std::vector<zb_v_grid::row> rows = zb_v_grid::ok_rows();
    CHECK(rows.size() == 756);
    std::erase_if(rows, [](const zb_v_grid::row& x) { return x.p != 3; });
    const zb_v_grid::tally t = zb_v_grid::compare(rows);
    CHECK(t.rows == 108);
    CHECK(t.longer == 0);
    CHECK(t.shorter >= 42);
}

TEST_CASE("autoschedule placement v: every row of the Zero Bubble authors' V grid" *
          doctest::test_suite("large grids") * doctest::skip()) {
    // Run by ctest as pipesched_tests.large_grids (optimised builds; about 6 s at -O2).
    const zb_v_grid::tally t = zb_v_grid::compare(zb_v_grid::ok_rows());
    MESSAGE("shorter " << t.shorter << ", equal " << t.equal << ", longer " << t.longer);
    CHECK(t.rows == 756);
    CHECK(t.longer == 0);
    CHECK(t.shorter >= 353);
}
