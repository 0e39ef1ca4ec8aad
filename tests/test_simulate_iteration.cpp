// simulate(iteration<P>): communication, overlap and exposure on top of the compute replay.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/analysis/simulate_iteration.hpp>

#include <vector>

namespace ps = pipesched;

namespace {

using ps::op;
using pipesched_test::near;

inline constexpr ps::iteration small_iteration{ps::one_f_one_b<>{{.ranks = 4, .microbatches = 8, .chunks = 1}}};
PIPESCHED_VERIFY(ps::simulate(small_iteration).makespan == 33.0); // free communication: compute only
PIPESCHED_VERIFY(ps::simulate(small_iteration).replayed);
// The result carries the shape and placement it replayed (1F1B: stage s on rank s, chunk 0).
PIPESCHED_VERIFY(ps::simulate(small_iteration).shape == small_iteration.shape);
PIPESCHED_VERIFY(ps::simulate(small_iteration).stages.rank_of(3) == 3 && ps::simulate(small_iteration).stages.chunks() == 1);

TEST_CASE("simulate iteration: free communication reproduces the compute replay") {
    for (std::uint32_t p = 1; p <= 5; ++p) {
        for (std::uint32_t m = 1; m <= 2 * p + 2; ++m) {
            for (std::uint32_t v = 1; v <= 3; ++v) {
                const auto same = [&](const auto& pol) {
                    if (!pol.check()) return;
                    for (const double latency : {0.0, 0.5}) {
                        ps::cost_model compute{};
                        compute.p2p_latency = latency;
                        ps::iteration_cost_model costs{};
                        costs.p2p = {latency, 0.0};
                        const ps::simulation plain = ps::simulate(pol, compute);
                        const ps::iteration_simulation full = ps::simulate(ps::iteration{pol}, costs);
                        INFO(pol.name << " p=" << p << " m=" << m << " v=" << v << " latency=" << latency);
                        REQUIRE(full.replayed);
                        CHECK(full.shape == plain.shape);
                        CHECK(full.stages.owners().size() == plain.stages.owners().size());
                        for (std::uint32_t s = 0; s < plain.stages.stages(); ++s) {
                            CHECK(full.stages.rank_of(s) == plain.stages.rank_of(s));
                            CHECK(full.stages.chunk_of(s) == plain.stages.chunk_of(s));
                        }
                        CHECK(near(full.makespan, plain.makespan));
                        CHECK(near(full.bubble_fraction, plain.bubble_fraction));
                        for (std::uint32_t r = 0; r < p; ++r) {
                            CHECK(full.ranks[r].peak_activations == plain.ranks[r].peak_activations);
                            CHECK(near(full.ranks[r].compute_busy, plain.ranks[r].busy));
                        }
                        // Every cross-rank hop pays the latency; none is hidden by design.
                        if (latency == 0.0) CHECK(full.exposed(ps::comm_kind::p2p) == 0.0);
                    }
                };
                same(ps::one_f_one_b<>{{.ranks = p, .microbatches = m, .chunks = v}});
                same(ps::gpipe<ps::backward_kind::split>{{.ranks = p, .microbatches = m, .chunks = v}});
                same(ps::interleaved_1f1b<>{{.ranks = p, .microbatches = m, .chunks = v}});
                same(ps::looped_bfs<>{{.ranks = p, .microbatches = m, .chunks = v}});
            }
        }
    }
}

TEST_CASE("simulate iteration: overlapped grad sync hides all but the last chunk's") {
    // One rank, looped BFS with v chunks: the backward of chunk v-1 runs first, so its sync
    // overlaps the backwards of the other chunks (2m time units each, more than the sync).
    for (std::uint32_t v = 1; v <= 4; ++v) {
        for (std::uint32_t m = 2; m <= 6; ++m) {
            ps::iteration_cost_model costs{};
            costs.data_parallel = {1.5, 0.0};
            ps::iteration_options at_end{};
            ps::iteration_options overlapped{};
            overlapped.grad_sync = ps::grad_sync_mode::overlapped;
            const ps::looped_bfs<> pol{{.ranks = 1, .microbatches = m, .chunks = v}};
            const auto late = ps::simulate(ps::iteration{pol, at_end}, costs);
            const auto early = ps::simulate(ps::iteration{pol, overlapped}, costs);
            INFO("v=" << v << " m=" << m);
            CHECK(near(late.exposed(ps::comm_kind::grad_sync), 1.5 * v));
            CHECK(near(early.exposed(ps::comm_kind::grad_sync), 1.5));
            CHECK(near(late.makespan, 3.0 * m * v + 1.5 * v));
            CHECK(near(early.makespan, 3.0 * m * v + 1.5));
        }
    }
}

TEST_CASE("simulate iteration: bandwidth, grad norm collective, optimizer, param gather") {
    ps::iteration_cost_model costs{};
    costs.p2p = {0.0, 100.0};     // 100 bytes per time unit
    costs.activation_bytes = 50.0; // half a unit per hop
    costs.data_parallel = {0.0, 10.0};
    costs.gradient_bytes = 20.0;   // 2 units per chunk
    costs.parameter_bytes = 30.0;  // 3 units
    costs.grad_norm = 0.25;
    costs.optimizer = 1.0;
    ps::iteration_options o{};
    o.param_gather = ps::param_gather_mode::after_step;
    const ps::iteration it{ps::one_f_one_b<>{{.ranks = 2, .microbatches = 2, .chunks = 1}}, o};
    pipesched_test::recording_events timeline;
    const auto s = ps::simulate(it, costs, timeline);
    REQUIRE(s.replayed);
    // By hand: rank 0 F0 [0,1] F1 [1,2]; rank 1 gets mb0 at 1.5: F0 [1.5,2.5] B0 [2.5,4.5];
    // mb1 arrived at 2.5: F1 [4.5,5.5] B1 [5.5,7.5]. Gradients reach rank 0 at 5.0 and 8.0:
    // B0 [5,7], B1 [8,10]. Syncs: rank 1 [7.5,9.5], rank 0 [10,12]. grad_norm starts when both
    // are there (12) and ends at 12.25; optimizer [12.25,13.25]; param_gather [13.25,16.25].
    CHECK(near(s.makespan, 16.25));
    CHECK(near(s.ranks[0].exposed[static_cast<std::size_t>(ps::comm_kind::grad_sync)], 2.0));
    CHECK(near(s.ranks[1].exposed[static_cast<std::size_t>(ps::comm_kind::grad_sync)], 2.0));
    CHECK(near(s.exposed(ps::comm_kind::grad_norm), 0.5));
    CHECK(near(s.exposed(ps::comm_kind::param_gather), 6.0));
    // Rank 0 waits 0.5 after each gradient send (5.0 - 4.5 and 8.0 - 7.5); rank 1 waits 0.5
    // for mb 0 only (mb 1 arrived before it was needed).
    CHECK(near(s.ranks[0].exposed[static_cast<std::size_t>(ps::comm_kind::p2p)], 1.0));
    CHECK(near(s.ranks[1].exposed[static_cast<std::size_t>(ps::comm_kind::p2p)], 0.5));
    std::size_t comm_events = 0;
    for (const auto& t : timeline.records) {
        CHECK(t.end >= t.start);
        if (t.comm_stream) ++comm_events;
    }
    CHECK(comm_events == 2 + 2 + 2 + 2); // 4 sends, 2 syncs, 2 gathers
    CHECK(timeline.records.size() == ps::event_count(it));
}

TEST_CASE("simulate iteration: a stale order still replays, and says it is stale") {
    const ps::shape dims{1, 2, 1};
    const std::vector<std::vector<ps::event>> simai = pipesched_test::simai_user_order();
    ps::iteration_cost_model costs{};
    costs.optimizer = 1.0;
    costs.data_parallel = {2.0, 0.0};
    ps::discard_events none;
    const auto s = ps::simulate_events(simai, dims, ps::placement::loop, costs, none);
    CHECK(s.check.code == ps::verdict_code::stale_update);
    REQUIRE(s.replayed);
    CHECK(s.ranks[0].peak_activations == 2); // both microbatches alive, as the user noticed
    CHECK(near(s.makespan, 2 + 1 + 4 + 2)); // forwards, optimizer, backwards, the trailing sync
    const auto fixed = ps::simulate(ps::iteration{ps::one_f_one_b<>{{.ranks = 1, .microbatches = 2, .chunks = 1}}}, costs);
    CHECK(fixed.check);
    CHECK(fixed.ranks[0].peak_activations == 1);
    CHECK(near(fixed.makespan, 6 + 2 + 1)); // compute, sync, then the optimizer
}

TEST_CASE("simulate iteration: orders that cannot be replayed are refused") {
    const std::vector<std::vector<ps::event>> deadlock{
        {{op::recv_gradient, 0, 0, 0, 1}, {op::forward, 0, 0, 0, ps::no_peer}, {op::send_activation, 0, 0, 0, 1},
         {op::backward, 0, 0, 0, ps::no_peer}},
        {{op::recv_activation, 0, 1, 0, 0}, {op::forward, 0, 1, 0, ps::no_peer}, {op::backward, 0, 1, 0, ps::no_peer},
         {op::send_gradient, 0, 1, 0, 0}}};
    ps::discard_events none;
    const auto s = ps::simulate_events(deadlock, {2, 1, 1}, ps::placement::loop, ps::iteration_cost_model{}, none);
    CHECK(s.check.code == ps::verdict_code::deadlock);
    CHECK_FALSE(s.replayed);
    CHECK(s.stages.stages() == 0); // nothing replayed: no placement to show
}

TEST_CASE("simulate iteration: bytes per (stage, microbatch) of the checks and of the replay") {
    // README.md (Memory of the analyses) and `pipesched simulate --help` give these numbers;
    // the tool's memory budget is computed from them. The checks keep the unit's flags and
    // two sequence gaps (not the positions of its sends and receives, found again on an error).
    CHECK(ps::iteration_check_bytes_per_unit == 13);
    CHECK(ps::iteration_replay_bytes_per_unit == 32);
}

} // namespace
