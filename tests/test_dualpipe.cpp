// DualPipe, DeepSeek's bidirectional pipeline (policies/dualpipe.hpp), and the placement its two
// pipelines need (placement::bidirectional; timing_model.hpp's stage_line).
//
// Orders: one small case derived by hand from dualpipe.py's step() below (compile time and run
// time), and the whole grid in tests/data/dualpipe/ that dualpipe.py itself produced (README
// there). Then property checks over a grid of shapes, and DeepSeek's README rows (bubble,
// activations, parameters) from the replay.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/catalog.hpp>
#include <pipesched/io/chrome_trace.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/iteration.hpp>
#include <pipesched/policies/dualpipe.hpp>
#include <pipesched/stage_map.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace ps = pipesched;
using ps::op;
using pipesched_test::near;

// ---------------------------------------------------------------------------------------------
// The placement and who feeds whom.

// Ranks hold their stages as in the V: chunk 0 of rank r is stage r, chunk 1 is stage 2p-1-r.
PIPESCHED_VERIFY(ps::stage_of(ps::placement::bidirectional, 4, 1, 0) == 1 &&
                 ps::stage_of(ps::placement::bidirectional, 4, 1, 1) == 6 &&
                 ps::locate_stage(ps::placement::bidirectional, 4, 6) == ps::rank_chunk{1, 1});
// Two pipelines of p stages: 0..3 fed at rank 0, 4..7 fed at rank 3 (stage 4 is chunk 1 of
// rank 3). Stage 3 is a loss stage and does not feed stage 4; stage 4 has no sender.
constexpr ps::detail::stage_line bidirectional_line = ps::detail::stage_line::of(ps::placement::bidirectional, 8);
PIPESCHED_VERIFY(bidirectional_line.split == 4 && bidirectional_line.two_pipelines() && !ps::detail::stage_line{8}.two_pipelines());
PIPESCHED_VERIFY(ps::detail::is_loss_stage(3, bidirectional_line) && ps::detail::is_loss_stage(7, bidirectional_line) &&
                 !ps::detail::is_loss_stage(4, bidirectional_line) && ps::detail::is_loss_stage(7, 8) &&
                 !ps::detail::is_loss_stage(3, 8));
PIPESCHED_VERIFY(!ps::detail::has_sender(ps::detail::tensor::activation, 4, bidirectional_line) &&
                 !ps::detail::has_receiver(ps::detail::tensor::activation, 3, bidirectional_line) &&
                 !ps::detail::has_sender(ps::detail::tensor::gradient, 3, bidirectional_line) &&
                 !ps::detail::has_receiver(ps::detail::tensor::gradient, 4, bidirectional_line) &&
                 ps::detail::has_sender(ps::detail::tensor::activation, 5, bidirectional_line) &&
                 ps::detail::has_sender(ps::detail::tensor::activation, 4, 8));
/// The input of stage 5's F of microbatch 6 (F of stage 4); of stage 4's F, none.
constexpr bool inputs_follow_the_pipelines() {
    ps::action in{};
    const bool f5 = ps::detail::cross_stage_input(ps::action{5, op::forward, 6}, bidirectional_line, in) && in.stage == 4;
    const bool f4 = !ps::detail::cross_stage_input(ps::action{4, op::forward, 6}, bidirectional_line, in);
    const bool b3 = !ps::detail::cross_stage_input(ps::action{3, op::backward, 1}, bidirectional_line, in);
    const bool b2 = ps::detail::cross_stage_input(ps::action{2, op::backward, 1}, bidirectional_line, in) && in.stage == 3;
    return f5 && f4 && b3 && b2;
}
PIPESCHED_VERIFY(inputs_follow_the_pipelines());
// The first m/2 microbatches run on stages 0..p-1, the others on p..2p-1.
PIPESCHED_VERIFY(ps::detail::runs_unit(bidirectional_line, 3, 3, 8) && !ps::detail::runs_unit(bidirectional_line, 3, 4, 8) &&
                 ps::detail::runs_unit(bidirectional_line, 4, 4, 8) && !ps::detail::runs_unit(bidirectional_line, 4, 3, 8) &&
                 ps::detail::runs_unit(8, 4, 3, 8));
// A cost per microbatch of a rank's layers: one chunk's worth per DualPipe chunk (bidirectional_line copies).
PIPESCHED_VERIFY(ps::chunks_per_copy(ps::placement::bidirectional, 2) == 1 &&
                 ps::chunks_per_copy(ps::placement::v_shape, 2) == 2);

// ---------------------------------------------------------------------------------------------
// A small exact order, by hand from dualpipe.py's step() (p = 2, m = 4: half_num_chunks = 2,
// num_half_ranks = 1; both ranks are middle ranks with half_rank 0). Rank 0 (first half: phase
// 0 is the first pipeline, stage 0, microbatches 0, 1; phase 1 the second, stage 3,
// microbatches 2, 3):
//   step 1: (1-0-1)*2 = 0;  step 2, once: F0 F1 -> 0F0 3F2;  step 3: none
//   step 4, 2-2+0+1 = 1 repeat, middle rank: F0 B1 not overlapped -> 0F1 3B2, then
//           _forward_backward_chunk(1, 0) -> (3F3;0B0)
//   step 5: none;  step 6, once: i = 0 = step_6 // 2, half_rank even: B1 full (3B3), then
//           zero bubble on: I0 -> 0I1;  step 7: none;  step 8: W pops 0I1's -> 0W1
// Rank 1 (second half: phase 0 is the second pipeline, stage 2 = 2p-1-1; phase 1 the first,
// stage 1): the same steps -> 2F2 1F0 | 2F3 1B0 (1F1;2B2) | 1B1 2I3 | 2W3.
inline constexpr ps::dualpipe dp_2x4{{.ranks = 2, .microbatches = 4, .chunks = 2}};
PIPESCHED_VERIFY(pipesched_test::order_is(dp_2x4, 0, "0F0,3F2,0F1,3B2,(3F3;0B0)OVERLAP_F_B,3B3,0I1,0W1"));
PIPESCHED_VERIFY(pipesched_test::order_is(dp_2x4, 1, "2F2,1F0,2F3,1B0,(1F1;2B2)OVERLAP_F_B,1B1,2I3,2W3"));
PIPESCHED_VERIFY(ps::validate(dp_2x4));
PIPESCHED_VERIFY(ps::simulate(dp_2x4).ranks[0].peak_activations == 3 && ps::peak_activations(dp_2x4, 1) == 3);

TEST_CASE("dualpipe: shape checks name the constraint") {
    const auto message = [](ps::shape s) { return std::string{ps::dualpipe{s}.check().message}; };
    CHECK(message({4, 8, 1}).find("chunks must be 2") != std::string::npos);
    CHECK(message({3, 8, 2}).find("ranks must be even") != std::string::npos);
    CHECK(message({4, 9, 2}).find("microbatches must be even") != std::string::npos);
    CHECK(message({4, 6, 2}).find("at least 2 * ranks") != std::string::npos);
    CHECK(ps::dualpipe{{4, 8, 2}}.check());
    CHECK(ps::validate(ps::dualpipe{{4, 6, 2}}).code == ps::verdict_code::invalid_shape);
    // The catalog knows it by name, with two chunks and its own placement.
    const auto id = ps::find_schedule("DualPipe");
    REQUIRE(id);
    CHECK(*id == ps::schedule_id::dualpipe);
    CHECK(ps::info(*id).layout == ps::placement::bidirectional);
    CHECK(ps::find_schedule("dualpipev") == ps::schedule_id::dualpipe_v);
}

// ---------------------------------------------------------------------------------------------
// dualpipe.py's own orders (tests/data/dualpipe/README.md).

std::string data_file(std::uint32_t p, std::uint32_t m) {
    std::string path = __FILE__;
    path = path.substr(0, path.find_last_of("/\\") + 1) + "data/dualpipe/p" + std::to_string(p) + "_m" +
           std::to_string(m) + ".csv";
    std::ifstream in{path};
    if (!in) return {};
    std::stringstream text;
    text << in.rdbuf();
    return std::move(text).str();
}

TEST_CASE("dualpipe: every order equals dualpipe.py's on the grid p in {2, 4, 6, 8}, m in {2p, 2p+2, 3p, 4p}") {
    std::size_t files = 0;
    for (const std::uint32_t p : {2u, 4u, 6u, 8u}) {
        std::vector<std::uint32_t> grid{2 * p, 2 * p + 2, 3 * p, 4 * p};
        grid.erase(std::unique(grid.begin(), grid.end()), grid.end()); // p = 2: 2p+2 = 3p
        for (const std::uint32_t m : grid) {
            if (m % 2 != 0) continue;
            const std::string reference = data_file(p, m);
            INFO("p=" << p << " m=" << m);
            REQUIRE_FALSE(reference.empty());
            ++files;
            const ps::dualpipe pol{{.ranks = p, .microbatches = m, .chunks = 2}};
            CHECK(ps::write_csv(pol) == reference);
            // Read back, the file is a valid schedule of two pipelines, and the library infers
            // that placement from it alone.
            const ps::csv_result parsed = ps::read_csv(reference);
            REQUIRE(parsed);
            const ps::placement_guess guess = ps::infer_placement(parsed.table);
            CHECK(guess.layout == ps::inferred_placement::bidirectional);
            const std::vector<std::vector<ps::action>> compute = ps::compute_only(parsed.table);
            CHECK(ps::validate(compute, m, 0, ps::placement::bidirectional));
            // As one pipeline, the same file misses units (stage 0 never runs microbatch m/2).
            CHECK(ps::validate(compute, m).code == ps::verdict_code::missing);
        }
    }
    CHECK(files == 15);
}

// ---------------------------------------------------------------------------------------------
// Properties over a grid.

template <class F>
void for_each_dualpipe(std::uint32_t max_ranks, F&& f) {
    for (std::uint32_t p = 2; p <= max_ranks; p += 2) {
        for (std::uint32_t m = 2 * p; m <= 4 * p + 2; m += 2) f(ps::dualpipe{{.ranks = p, .microbatches = m, .chunks = 2}});
    }
}

TEST_CASE("dualpipe: valid, deadlock-free, every unit of its pipeline once, streams agree (p <= 12)") {
    std::size_t shapes = 0;
    for_each_dualpipe(12, [&](const ps::dualpipe& pol) {
        const ps::shape s = pol.shape;
        INFO("p=" << s.ranks << " m=" << s.microbatches);
        ++shapes;
        CHECK(ps::validate(pol));
        CHECK(pipesched_test::streams_agree(pol) > 0);
        // F, B, I, W of each (stage, microbatch), the pairs' markers left out.
        std::map<std::pair<std::uint32_t, std::uint32_t>, std::array<int, 4>> counts;
        for (std::uint32_t r = 0; r < s.ranks; ++r) {
            for (ps::event e : ps::events(pol, r)) {
                if (!ps::is_compute(e.kind)) continue;
                CHECK(e.rank == r);
                counts[{ps::stage_of(pol, e), e.microbatch}][static_cast<std::size_t>(e.kind)]++;
            }
        }
        // p stages x m/2 microbatches per pipeline, and nothing across: 2p * m/2 units.
        CHECK(counts.size() == std::size_t{s.ranks} * s.microbatches);
        const ps::detail::stage_line line = ps::detail::stage_line::of(ps::placement::bidirectional, s.stages());
        for (const auto& [unit, count] : counts) {
            CHECK(ps::detail::runs_unit(line, unit.first, unit.second, s.microbatches));
            CHECK(count[0] == 1);
            CHECK(count[1] + count[2] == 1);
            CHECK(count[3] == count[2]);
        }
        // Events per rank: 2 * (m/2) F's, as many backwards, a W per I, and the pairs' markers.
        for (std::uint32_t r = 0; r < s.ranks; ++r) {
            std::size_t pairs = 0;
            for (ps::event e : ps::events(pol, r)) pairs += e.kind == op::overlap_f_b ? 1 : 0;
            const std::uint32_t h = std::min(r, s.ranks - 1 - r);
            const std::uint32_t half = s.ranks / 2;
            const std::size_t middle = h + 1 == half ? 1 : 0;
            CHECK(pairs == 2 * (s.microbatches / 2 - s.ranks + h + 1) + (half - h - 1) - middle);
        }
    });
    CHECK(shapes == 54); // p = 2, 4, ..., 12: p + 2 shapes each
}

TEST_CASE("dualpipe: peak activations PP+1 chunk activations on every rank (DeepSeek's table, PP = p)") {
    for_each_dualpipe(12, [](const ps::dualpipe& pol) {
        const ps::simulation s = ps::simulate(pol);
        REQUIRE(s);
        for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
            INFO("p=" << pol.shape.ranks << " m=" << pol.shape.microbatches << " rank=" << r);
            CHECK(s.ranks[r].peak_activations == pol.shape.ranks + 1);
            CHECK(ps::peak_activations(pol, r) == pol.shape.ranks + 1);
        }
    });
}

TEST_CASE("dualpipe: parameters 2x: each rank runs one stage of each of two copies of the model") {
    for (const std::uint32_t p : {2u, 4u, 8u}) {
        const ps::stage_map map{ps::placement::bidirectional, {p, 2 * p, 2}};
        CHECK(map.line().split == p);
        for (std::uint32_t r = 0; r < p; ++r) {
            // Stage r of the first copy and stage p-1-r of the second: as many layers as a
            // one-chunk schedule's stage r, twice over.
            CHECK(map.rank_of(r) == r);
            CHECK(map.rank_of(p + (p - 1 - r)) == r);
            CHECK(map.chunk_of(r) == 0);
            CHECK(map.chunk_of(p + (p - 1 - r)) == 1);
        }
    }
}

/// Largest idle time over the ranks with per-chunk costs F, I, W, F&B (B = I + W).
double bidirectional_idle(std::uint32_t p, std::uint32_t m, double f, double i, double w, double fb) {
    ps::cost_model c{};
    c.uniform = {f, i + w, i, w, fb};
    const ps::simulation s = ps::simulate(ps::dualpipe{{.ranks = p, .microbatches = m, .chunks = 2}}, c);
    REQUIRE(s);
    double most = 0.0;
    for (const ps::rank_summary& r : s.ranks) most = std::max(most, r.idle);
    return most;
}

TEST_CASE("dualpipe: bubble (PP/2-1)(F&B+B-3W) with PP = p, exactly when F = I and W <= F, as DualPipeV's") {
    std::size_t cases = 0;
    for (const double f : {0.5, 1.0, 2.0, 3.0}) {
        for (const double w : {0.25, 0.5, 1.0, 2.0, 3.0}) {
            const double i = f; // the formula's assumption
            const double b = i + w;
            for (const double fb : {std::max(f, b), (std::max(f, b) + f + b) / 2, f + b}) {
                for (std::uint32_t p = 2; p <= 8; p += 2) {
                    for (const std::uint32_t m : {2 * p, 2 * p + 2, 4 * p}) {
                        INFO("F=" << f << " W=" << w << " F&B=" << fb << " p=" << p << " m=" << m);
                        const double idle = bidirectional_idle(p, m, f, i, w, fb);
                        const double half = p / 2.0 - 1.0;
                        ++cases;
                        if (w <= f) {
                            CHECK(near(idle, half * (fb + b - 3 * w)));
                        } else { // a W cannot fill more than the gap it sits in
                            CHECK(near(idle, half * (fb + b - 2 * w - f)));
                        }
                    }
                }
            }
        }
    }
    CHECK(cases == 4 * 5 * 3 * 4 * 3);
    // F != I: F = 2, I = W = 1, F&B = 3 idles more than the formula says.
    CHECK(bidirectional_idle(8, 24, 2.0, 1.0, 1.0, 3.0) > 3.0 * (3.0 + 2.0 - 3.0) + 1e-9);
}

// ---------------------------------------------------------------------------------------------
// The analyses on two pipelines: errors, lists, the trace's flows, the iteration's refusal.

TEST_CASE("dualpipe: lists of two pipelines: a unit of the other pipeline is out of range, a gap is missing") {
    const ps::dualpipe pol{{.ranks = 2, .microbatches = 4, .chunks = 2}};
    std::vector<std::vector<ps::action>> lists(2);
    for (std::uint32_t r = 0; r < 2; ++r) {
        for (ps::event e : ps::events(pol, r)) {
            if (e.kind != op::overlap_f_b) lists[r].push_back(ps::to_action(pol, e));
        }
    }
    CHECK(ps::validate(lists, 4, 4, ps::placement::bidirectional));
    // Microbatch 2 belongs to the second pipeline: on stage 0 it is out of range.
    auto wrong = lists;
    wrong[0][0].microbatch = 2;
    const ps::verdict v = ps::validate(wrong, 4, 4, ps::placement::bidirectional);
    CHECK(v.code == ps::verdict_code::out_of_range);
    CHECK(v.rank == 0);
    CHECK(v.index == 0);
    // Without 3B3 (rank 0, index 6: 0F0 3F2 0F1 3B2 3F3 0B0 3B3) the unit (3, 3) misses its
    // backward.
    auto gap = lists;
    REQUIRE(gap[0][6] == ps::action{3, op::backward, 3});
    gap[0].erase(gap[0].begin() + 6);
    const ps::verdict g = ps::validate(gap, 4, 4, ps::placement::bidirectional);
    CHECK(g.code == ps::verdict_code::missing);
    CHECK(g.subject == ps::action{3, op::backward, 3});
    // The simulation of the lists is the policy's.
    ps::discard_timeline none{};
    const ps::simulation a = ps::simulate(lists, ps::cost_model{}, none, 4, ps::placement::bidirectional);
    const ps::simulation b = ps::simulate(pol);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(near(a.makespan, b.makespan));
    CHECK(a.stages.line() == b.stages.line());
    // A sparse list (over a million units, few actions) finds the first gap of its pipeline
    // without the table: stage 0 runs microbatches 0..m/2-1 only.
    const std::vector<std::vector<ps::action>> sparse{{ps::action{0, op::forward, 0}, ps::action{0, op::backward, 0}},
                                                      {ps::action{2047, op::forward, 1500}}};
    const ps::verdict s = ps::validate(sparse, 2000, 2048, ps::placement::bidirectional);
    CHECK(s.code == ps::verdict_code::missing);
    CHECK(s.subject == ps::action{0, op::forward, 1});
}

TEST_CASE("dualpipe: the trace draws a flow per cross-rank dependency of each pipeline, none between them") {
    for (const std::uint32_t p : {2u, 4u}) {
        const ps::dualpipe pol{{.ranks = p, .microbatches = 2 * p + 2, .chunks = 2}};
        pipesched_test::recording_timeline rec;
        const ps::simulation sim = ps::simulate(pol, ps::cost_model{}, rec);
        REQUIRE(sim);
        ps::trace_options options{};
        options.flows = true;
        std::ostringstream batch_text;
        ps::write_chrome_trace(batch_text, rec.records, options, sim.stages);
        const std::string batch = batch_text.str();
        std::ostringstream streamed_text;
        {
            struct to_stream {
                std::ostringstream* os;
                void operator()(std::string_view s) const { *os << s; }
            };
            ps::chrome_trace_stream<to_stream> stream{to_stream{&streamed_text}, ps::placement::bidirectional,
                                                      pol.shape, options};
            const ps::simulation again = ps::simulate(pol, ps::cost_model{}, stream);
            REQUIRE(again);
            stream.finish();
        }
        // Each microbatch crosses p-1 rank boundaries forward and p-1 backward in its pipeline.
        const auto starts = [](const std::string& text) {
            std::size_t n = 0;
            for (std::size_t at = text.find("\"ph\":\"s\""); at != std::string::npos; at = text.find("\"ph\":\"s\"", at + 1)) ++n;
            return n;
        };
        const std::size_t expected = 2 * std::size_t{p - 1} * pol.shape.microbatches;
        INFO("p=" << p);
        CHECK(starts(batch) == expected);
        CHECK(starts(streamed_text.str()) == expected);
    }
}

TEST_CASE("dualpipe: the iteration refuses two pipelines by name instead of wrapping them as one") {
    const ps::iteration it{ps::dualpipe{{.ranks = 4, .microbatches = 8, .chunks = 2}}};
    const ps::shape_check c = it.check();
    CHECK_FALSE(c);
    CHECK(std::string{c.message}.find("one pipeline") != std::string::npos);
    CHECK(ps::iteration{ps::dualpipe_v{{.ranks = 4, .microbatches = 8, .chunks = 2}}}.check());
}

} // namespace
