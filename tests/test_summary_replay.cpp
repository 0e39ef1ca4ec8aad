// The summary replay (simulate without a timeline, issue 13): the same numbers as the replay
// that feeds a timeline, in memory that follows the tensors in flight, not the schedule.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/pipesched.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

namespace ps = pipesched;
using pipesched_test::for_each_accepted_schedule;
using pipesched_test::identical;
using pipesched_test::recording_timeline;

/// Results held at once by the summary replay of `pol`.
template <ps::schedule_policy P>
std::size_t summary_peak_pending(const P& pol, const ps::cost_model& costs) {
    const ps::detail::policy_actions<P> src{pol};
    ps::discard_timeline none;
    ps::detail::simulator<ps::detail::policy_actions<P>, ps::discard_timeline> sim{src, costs, none};
    const ps::simulation out = sim.run();
    REQUIRE(out);
    return sim.peak_pending();
}

} // namespace

TEST_CASE("summary replay: the same numbers as the timeline replay, for every policy, costs and fill") {
    std::vector<ps::cost_model> models(3);
    models[1].uniform = {1.5, 2.5, 1.25, 0.75, -1.0};
    models[1].p2p_latency = 0.25;
    models[2].uniform = {1.0, 2.0, 1.0, 2.0, 2.5};
    models[2].fill_with_weight = true;
    std::size_t compared = 0;
    for_each_accepted_schedule({1u, 2u, 3u, 4u, 8u}, {1u, 2u, 5u, 8u, 16u, 33u}, [&](const auto& pol) {
        for (const ps::cost_model& costs : models) {
            recording_timeline timeline;
            const ps::simulation with_timeline = ps::simulate(pol, costs, timeline);
            const ps::simulation summary = ps::simulate(pol, costs);
            CHECK(with_timeline);
            CHECK(identical(summary, with_timeline));
            CHECK(timeline.records.size() == ps::event_count(pol) - [&] {
                std::size_t markers = 0;
                for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
                    for (const ps::event e : ps::events(pol, r)) markers += e.kind == ps::op::overlap_f_b;
                }
                return markers;
            }());
            ++compared;
        }
    });
    CHECK(compared > 500);
}

TEST_CASE("summary replay: what it holds follows the tensors in flight, not the number of events") {
    // GPipe runs every forward of a rank before its first backward; the replay that feeds a
    // timeline lets rank 0 run all of them first (m results held), the summary replay takes
    // turns and holds about one turn's worth per stage boundary.
    const ps::cost_model costs{};
    for (const std::uint32_t m : {256u, 4096u}) {
        const std::size_t gpipe = summary_peak_pending(ps::gpipe<>{{.ranks = 8, .microbatches = m, .chunks = 1}}, costs);
        const std::size_t one_f_one_b = summary_peak_pending(ps::one_f_one_b<>{{.ranks = 8, .microbatches = m, .chunks = 1}}, costs);
        const std::size_t interleaved = summary_peak_pending(ps::interleaved_1f1b<>{{.ranks = 8, .microbatches = m, .chunks = 4}}, costs);
        const std::size_t zbv = summary_peak_pending(ps::zbv{{.ranks = 8, .microbatches = m, .chunks = 2}}, costs);
        const std::size_t dual = summary_peak_pending(ps::dualpipe_v{{.ranks = 8, .microbatches = m, .chunks = 2}}, costs);
        // Bounded independently of m: at most two turns (64 actions each) per stage boundary.
        CHECK(gpipe <= 2 * 64 * 8);
        CHECK(one_f_one_b <= 2 * 64 * 8);
        CHECK(interleaved <= 2 * 64 * 32);
        CHECK(zbv <= 2 * 64 * 16);
        CHECK(dual <= 2 * 64 * 16);
    }
    // The same bound with fill_with_weight (which also tracks units between their I and W).
    ps::cost_model fill{};
    fill.fill_with_weight = true;
    CHECK(summary_peak_pending(ps::zb_h1{{.ranks = 8, .microbatches = 4096, .chunks = 1}}, fill) <= 3 * 64 * 8);
    CHECK(summary_peak_pending(ps::interleaved_zero_bubble{{.ranks = 8, .microbatches = 4096, .chunks = 2}}, fill) <= 3 * 64 * 16);
}
