// simulate(): the cost-model replay against closed-form bubble and memory formulas, over grids.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ps = pipesched;

namespace {

using ps::backward_kind;
using ps::op;
using pipesched_test::inter_4x8x2;
using pipesched_test::near;
using pipesched_test::ofob_4x8;

// F = 1, B = 2, no latency (the defaults): 1F1B and GPipe take (m + p - 1)(F + B).
PIPESCHED_VERIFY(ps::simulate(ofob_4x8).makespan == 33.0);
PIPESCHED_VERIFY(near(ps::simulate(ofob_4x8).bubble_fraction, 3.0 / 11.0));
PIPESCHED_VERIFY(ps::simulate(ofob_4x8).ranks[0].peak_activations == 4);
PIPESCHED_VERIFY(ps::peak_activations(ofob_4x8, 3) == 1);
PIPESCHED_VERIFY(near(ps::simulate(inter_4x8x2).bubble_fraction, 3.0 / 19.0));
PIPESCHED_VERIFY(ps::peak_activations(inter_4x8x2, 0) == 11); // 2(p-1) + (v-1)g + 1


TEST_CASE("simulate: GPipe and 1F1B bubble is (p-1)/(m+p-1), peaks m and min(p-r, m)") {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            INFO("p=" << p << " m=" << m);
            const double expected = double(p - 1) / double(m + p - 1);
            const ps::simulation one = ps::simulate(ps::one_f_one_b<>{{.ranks = p, .microbatches = m, .chunks = 1}});
            const ps::simulation all = ps::simulate(ps::gpipe<>{{.ranks = p, .microbatches = m, .chunks = 1}});
            REQUIRE(one);
            REQUIRE(all);
            CHECK(near(one.bubble_fraction, expected));
            CHECK(near(all.bubble_fraction, expected));
            CHECK(near(one.makespan, 3.0 * (m + p - 1)));
            for (std::uint32_t r = 0; r < p; ++r) {
                CHECK(one.ranks[r].peak_activations == std::min(p - r, m));
                CHECK(all.ranks[r].peak_activations == m);
                CHECK(near(one.ranks[r].busy, 3.0 * m));
                CHECK(near(one.ranks[r].busy + one.ranks[r].idle, one.makespan));
            }
        }
    }
}

TEST_CASE("simulate: interleaved bubble is (p-1)/(v*m+p-1) for every legal g when m >= p") {
    std::size_t shapes = 0;
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = p; m <= 4 * p; ++m) {
            for (std::uint32_t v = 1; v <= 4; ++v) {
                for (std::uint32_t g = 1; g <= m; ++g) {
                    const ps::interleaved_1f1b<> pol{{p, m, v}, g};
                    if (!pol.check()) continue;
                    ++shapes;
                    INFO("p=" << p << " m=" << m << " v=" << v << " g=" << g);
                    const ps::simulation s = ps::simulate(pol);
                    CHECK(near(s.bubble_fraction, double(p - 1) / double(v * m + p - 1)));
                    CHECK(s.ranks[0].peak_activations ==
                          std::min(2 * (p - 1) + (v - 1) * g + 1, m * v));
                }
            }
        }
    }
    CHECK(shapes > 1000);
}

TEST_CASE("simulate: looped BFS bubble is (p-1)/(v*m+p-1) when m >= p, peak m*v") {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            for (std::uint32_t v = 1; v <= 4; ++v) {
                const ps::simulation s = ps::simulate(ps::looped_bfs<>{{.ranks = p, .microbatches = m, .chunks = v}});
                INFO("p=" << p << " m=" << m << " v=" << v);
                REQUIRE(s);
                const double formula = double(p - 1) / double(v * m + p - 1);
                if (m >= p) CHECK(near(s.bubble_fraction, formula));
                else CHECK(s.bubble_fraction >= formula - 1e-12); // chunk c+1 waits for the wrap-around
                CHECK(s.max_peak_activations() == m * v);
            }
        }
    }
}

TEST_CASE("simulate: interleaved with m < p (PyTorch only) has a larger bubble than the formula") {
    // Chunk 1 of microbatch 0 cannot start on rank 0 before microbatch 0 has crossed all p ranks,
    // and with m < p rank 0 has nothing else to do meanwhile.
    for (std::uint32_t p = 2; p <= 8; ++p) {
        for (std::uint32_t m = 1; m < p; ++m) {
            for (std::uint32_t v = 2; v <= 4; ++v) {
                const ps::simulation s = ps::simulate(ps::interleaved_1f1b<>{{.ranks = p, .microbatches = m, .chunks = v}});
                REQUIRE(s);
                CHECK(s.bubble_fraction > double(p - 1) / double(v * m + p - 1));
            }
        }
    }
}

TEST_CASE("simulate: p2p latency adds 2(p-1) hops to the 1F1B critical path") {
    ps::cost_model costs{};
    costs.p2p_latency = 0.5;
    for (std::uint32_t p = 1; p <= 6; ++p) {
        for (std::uint32_t m = 1; m <= 3 * p; ++m) {
            const ps::simulation s = ps::simulate(ps::gpipe<>{{.ranks = p, .microbatches = m, .chunks = 1}}, costs);
            INFO("p=" << p << " m=" << m);
            // GPipe: the first forward crosses p-1 links, the last backward p-1 links.
            CHECK(near(s.makespan, 3.0 * (m + p - 1) + 2 * 0.5 * (p - 1)));
        }
    }
}

TEST_CASE("simulate: per-stage costs make the slowest stage the bottleneck") {
    std::vector<ps::stage_costs> stages(4);
    stages[2] = {2.0, 4.0, 2.0, 2.0}; // twice as slow
    ps::cost_model costs{};
    costs.per_stage = stages;
    const std::uint32_t m = 16;
    const ps::simulation s = ps::simulate(ps::one_f_one_b<>{{.ranks = 4, .microbatches = m, .chunks = 1}}, costs);
    REQUIRE(s);
    CHECK(near(s.ranks[2].busy, 6.0 * m));
    CHECK(s.makespan >= 6.0 * m);
    CHECK(s.makespan < 6.0 * m + 3.0 * 4 + 6.0); // the others' fill and drain, no more
}

TEST_CASE("simulate: split backward, W fills bubbles when allowed") {
    // 1F1B with every W moved to the end of its rank: in order, the W's run after the last I;
    // with fill_with_weight they run while the rank waits for gradients.
    const ps::one_f_one_b<backward_kind::split> pol{{.ranks = 4, .microbatches = 8, .chunks = 1}};
    std::vector<std::vector<ps::action>> deferred(4);
    for (std::uint32_t r = 0; r < 4; ++r) {
        std::vector<ps::action> weights;
        for (ps::event e : ps::events(pol, r)) {
            const ps::action a = ps::to_action(pol, e);
            (a.kind == op::backward_weight ? weights : deferred[r]).push_back(a);
        }
        deferred[r].insert(deferred[r].end(), weights.begin(), weights.end());
    }
    ps::discard_timeline none;
    ps::cost_model costs{};
    const ps::simulation plain = ps::simulate(deferred, costs, none);
    costs.fill_with_weight = true;
    const ps::simulation filled = ps::simulate(deferred, costs, none);
    REQUIRE(plain);
    REQUIRE(filled);
    for (std::uint32_t r = 0; r < 4; ++r) {
        CHECK(near(plain.ranks[r].busy, 24.0)); // F + I + W = 3 per unit, either way
        CHECK(near(filled.ranks[r].busy, 24.0));
    }
    CHECK(filled.makespan < plain.makespan);
    // W frees the unit: with every W at the end, each rank holds all m units at once.
    CHECK(plain.max_peak_activations() == 8);

    // In the policy's own order (W right after I) the memory is 1F1B's min(p-r, m).
    const ps::simulation in_order = ps::simulate(pol);
    for (std::uint32_t r = 0; r < 4; ++r) CHECK(in_order.ranks[r].peak_activations == 4 - r);
}

TEST_CASE("simulate: the timeline sink sees every action once, in dependency order") {
    struct recorder {
        std::vector<ps::timed_action> seen;
        void push(const ps::timed_action& t) { seen.push_back(t); }
    };
    const ps::interleaved_1f1b<> pol{{.ranks = 3, .microbatches = 6, .chunks = 2}};
    recorder rec;
    ps::cost_model costs{};
    costs.p2p_latency = 0.25;
    const ps::simulation s = ps::simulate(pol, costs, rec);
    REQUIRE(s);
    CHECK(rec.seen.size() == ps::event_count(pol));
    // Per rank: starts never go backwards and never overlap the previous action.
    std::vector<double> last_end(3, 0.0);
    std::vector<std::uint32_t> count(3, 0);
    std::vector<ps::timed_action> by_rank_order = rec.seen;
    std::stable_sort(by_rank_order.begin(), by_rank_order.end(),
                     [](const auto& a, const auto& b) { return a.rank < b.rank || (a.rank == b.rank && a.index < b.index); });
    for (const auto& t : by_rank_order) {
        CHECK(t.start >= last_end[t.rank] - 1e-12);
        CHECK(t.end > t.start);
        last_end[t.rank] = t.end;
        CHECK(t.index == count[t.rank]++);
        CHECK(t.what == ps::to_action(pol, pol.at(t.rank, t.index)));
    }
    // Cross-rank: a forward starts no earlier than its producer's end plus the latency.
    for (const auto& t : rec.seen) {
        if (t.what.kind != op::forward || t.what.stage == 0) continue;
        const auto producer = std::find_if(rec.seen.begin(), rec.seen.end(), [&](const auto& u) {
            return u.what == ps::action{t.what.stage - 1, op::forward, t.what.microbatch};
        });
        REQUIRE(producer != rec.seen.end());
        CHECK(t.start >= producer->end + 0.25 - 1e-12);
    }
}

TEST_CASE("simulate: invalid schedules are not simulated") {
    const ps::simulation bad_shape = ps::simulate(ps::gpipe<>{{.ranks = 4, .microbatches = 8, .chunks = 3}});
    CHECK_FALSE(bad_shape);
    CHECK(bad_shape.check.code == ps::verdict_code::invalid_shape);
    const std::vector<std::vector<ps::action>> deadlocked{
        {{0, op::forward, 0}, {0, op::backward, 0}, {0, op::forward, 1}, {0, op::backward, 1}},
        {{1, op::forward, 1}, {1, op::backward, 1}, {1, op::forward, 0}, {1, op::backward, 0}}};
    ps::discard_timeline none;
    const ps::simulation s = ps::simulate(deadlocked, ps::cost_model{}, none);
    CHECK_FALSE(s);
    CHECK(s.check.code == ps::verdict_code::deadlock);
    CHECK(s.ranks.empty());
}

TEST_CASE("simulate: action lists from outside give the same result as the policy") {
    const ps::one_f_one_b<> pol{{.ranks = 4, .microbatches = 6, .chunks = 1}};
    std::vector<std::vector<ps::action>> lists(4);
    for (std::uint32_t r = 0; r < 4; ++r) {
        for (ps::event e : ps::events(pol, r)) lists[r].push_back(ps::to_action(pol, e));
    }
    ps::discard_timeline none;
    const ps::simulation a = ps::simulate(lists, ps::cost_model{}, none);
    const ps::simulation b = ps::simulate(pol);
    REQUIRE(a);
    CHECK(a.makespan == b.makespan);
    CHECK(a.bubble_fraction == b.bubble_fraction);
    for (std::uint32_t r = 0; r < 4; ++r) CHECK(a.ranks[r].peak_activations == b.ranks[r].peak_activations);
}

// The result carries what it replayed: the shape, and where each stage runs. Interleaved, p = 4,
// v = 2: stage 5 is chunk 1 of rank 1. ZB-V, p = 4: stage 4 (the first of chunk 1) runs on
// rank 3, stage 7 on rank 0.
PIPESCHED_VERIFY(ps::simulate(inter_4x8x2).shape == inter_4x8x2.shape);
PIPESCHED_VERIFY(ps::simulate(inter_4x8x2).stages.stages() == 8);
PIPESCHED_VERIFY(ps::simulate(inter_4x8x2).stages.rank_of(5) == 1 && ps::simulate(inter_4x8x2).stages.chunk_of(5) == 1);
PIPESCHED_VERIFY(ps::simulate(ps::zbv{{.ranks = 4, .microbatches = 8, .chunks = 2}}).stages.rank_of(4) == 3);
PIPESCHED_VERIFY(ps::simulate(ps::zbv{{.ranks = 4, .microbatches = 8, .chunks = 2}}).stages.rank_of(7) == 0);
PIPESCHED_VERIFY(ps::simulate(ps::zbv{{.ranks = 4, .microbatches = 8, .chunks = 2}}).stages.chunk_of(7) == 1);

TEST_CASE("simulate: the result's stage map is the placement's, for every policy it replays") {
    for (std::uint32_t p = 1; p <= 5; ++p) {
        const ps::interleaved_1f1b<> loop{{.ranks = p, .microbatches = 2 * p, .chunks = 3}};
        const ps::zbv v{{.ranks = p, .microbatches = 2 * p, .chunks = 2}};
        const ps::simulation a = ps::simulate(loop);
        const ps::simulation b = ps::simulate(v);
        REQUIRE(a);
        REQUIRE(b);
        CHECK(a.shape == loop.shape);
        CHECK(b.shape == v.shape);
        REQUIRE(a.stages.stages() == 3 * p);
        REQUIRE(b.stages.stages() == 2 * p);
        for (std::uint32_t s = 0; s < 3 * p; ++s) {
            CHECK(a.stages.rank_of(s) == ps::locate_stage(ps::placement::loop, p, s).rank);
            CHECK(a.stages.chunk_of(s) == ps::locate_stage(ps::placement::loop, p, s).chunk);
        }
        for (std::uint32_t s = 0; s < 2 * p; ++s) {
            CHECK(b.stages.rank_of(s) == ps::locate_stage(ps::placement::v_shape, p, s).rank);
            CHECK(b.stages.chunk_of(s) == ps::locate_stage(ps::placement::v_shape, p, s).chunk);
        }
    }
}

TEST_CASE("simulate: action lists carry the owners they were read with; a refused schedule carries none") {
    // Two ranks, three stages: rank 0 runs stages 0 and 2, rank 1 stage 1 (no placement rule).
    using A = ps::action;
    const std::vector<std::vector<A>> lists{
        {A{0, op::forward, 0}, A{2, op::forward, 0}, A{2, op::backward, 0}, A{0, op::backward, 0}},
        {A{1, op::forward, 0}, A{1, op::backward, 0}}};
    ps::discard_timeline none;
    // Valid: rank 0's second F waits for stage 1, its last B for stage 1's B.
    const ps::simulation sim = ps::simulate(lists, ps::cost_model{}, none);
    REQUIRE(sim);
    CHECK(sim.shape == ps::shape{2, 1, 2});
    CHECK(sim.stages.rank_of(0) == 0);
    CHECK(sim.stages.rank_of(1) == 1);
    CHECK(sim.stages.rank_of(2) == 0);
    CHECK(sim.stages.chunk_of(2) == 1);

    const ps::simulation refused = ps::simulate(ps::one_f_one_b<>{{.ranks = 0, .microbatches = 1, .chunks = 1}});
    CHECK_FALSE(refused);
    CHECK(refused.stages.stages() == 0);
    CHECK(refused.shape == ps::shape{});
}

} // namespace
