// autoschedule() over every placement: one stage per rank, the V with two chunks per rank and
// the interleaved loop with v chunks; never longer than a named schedule that fits; the bound
// and the proof say what they are relative to.
#include <doctest/doctest.h>

#include <pipesched/analysis/validate.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/pipesched.hpp>
#include <pipesched/search/autoschedule.hpp>
#include <pipesched/search/named_schedules.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

// The helpers' names are their own (a unity build compiles this file with the other tests).
namespace {
namespace placements {

namespace ps = pipesched;
namespace as = ps::detail::autosched;

constexpr double unbounded = std::numeric_limits<double>::infinity();

ps::pipeline_costs costs_of(double f, double i, double w, double p2p) {
    ps::pipeline_costs c{};
    c.uniform = {f, i, w};
    c.p2p = p2p;
    return c;
}

ps::pipeline_memory memory_of(double limit, double mb = 1.0, double mw = 1.0) {
    ps::pipeline_memory m{};
    m.uniform = {mb, mw, limit};
    return m;
}

ps::autoschedule_options placed(ps::search_placement pl, std::uint32_t chunks = 2) {
    ps::autoschedule_options o{};
    o.placement = pl;
    o.chunks = chunks;
    return o;
}

/// The result replayed by simulate() with the costs of its own placement.
struct replayed {
    bool valid = false;
    double span = 0.0;
    double makespan = 0.0;
    std::vector<double> peak{};
};

replayed replay(const ps::autoschedule_result& r, const ps::shape& s, const ps::pipeline_costs& c,
                const ps::pipeline_memory& m) {
    const std::vector<ps::stage_costs> per = ps::to_stage_costs(s, c, m, r.layout, r.chunks);
    ps::cost_model model{};
    model.per_stage = per;
    model.p2p_latency = c.p2p;
    replayed out{};
    const ps::simulation sim = r.visit([&](const auto& sched) { return ps::simulate(sched, model); });
    out.valid = static_cast<bool>(sim);
    if (!sim) return out;
    out.makespan = sim.makespan;
    for (const ps::rank_summary& rs : sim.ranks) {
        out.span = std::max(out.span, rs.last_end - rs.first_start);
        out.peak.push_back(rs.peak_memory);
    }
    return out;
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

TEST_CASE("autoschedule: the README example (p = 4, m = 4, limit 2) is at least as short as V-Min") {
    const ps::shape s{4, 4, 1};
    const auto costs = costs_of(1, 1, 1, 0);
    const auto mem = memory_of(2);
    const auto r = ps::autoschedule(s, costs, mem);
    REQUIRE(r);
    // V-Min's span under the same costs: each chunk half of a rank's work and memory.
    const auto named = ps::evaluate_named_schedules(s, costs, mem);
    const auto& vmin = named[static_cast<std::size_t>(ps::schedule_id::v_min)];
    REQUIRE(vmin.fits);
    CHECK(vmin.span == 17.5);
    CHECK(r.span <= 17.5);
    CHECK(r.layout == ps::placement::v_shape);
    CHECK(r.chunks == 2);
    CHECK(r.v_schedule.shape == ps::shape{4, 4, 2});
    REQUIRE(ps::validate(r.v_schedule));
    const replayed x = replay(r, s, costs, mem);
    REQUIRE(x.valid);
    CHECK(near(x.span, r.span));
    CHECK(x.peak == r.peak_memory);
    for (const double q : r.peak_memory) CHECK(q <= 2.0);
    // The bound covers the three placements searched: the smallest of their bounds, here the
    // V's, 16 (the loop placement alone cannot do better than 21, which branch and bound proves
    // there). In the V, with chunks of half a rank's times (0.5) and memory (0.5): rank 3
    // (stages 3 and 4) starts 1.5 after rank 0; before its last I it runs its 8 F's and 8 I's
    // (8), the W's its limit cannot defer (it holds 4 chunks, so 4 of its 8 W's, 2), and 2.5 of
    // idle (its first I comes 4 after its first F and it holds 4 F's, 2 of work; after its last
    // F the last I comes 3.5 later and the 3 held microbatches' I's and W's fill 3); that I then
    // returns through stages 2, 1, 0 (1.5) and rank 0 runs its W (0.5): 1.5 + 12.5 + 1.5 + 0.5.
    CHECK(r.lower_bound == 16.0);
    CHECK_FALSE(r.proven_optimal);
    CHECK(r.gap == doctest::Approx((r.span - 16.0) / r.span));
    CHECK(r.bound_scope.find("V placement") != std::string::npos);
    // One stage per rank alone: 21, proven optimal there and said so.
    const auto loop = ps::autoschedule(s, costs, mem, placed(ps::search_placement::loop));
    CHECK(loop.span == 21.0);
    CHECK(loop.proven_optimal);
    CHECK(loop.lower_bound == 21.0);
    CHECK(loop.bound_scope == "loop placement (1 stage per rank)");
    CHECK(loop.layout == ps::placement::loop);
    CHECK(loop.chunks == 1);
}

struct cost_case {
    const char* name;
    ps::pipeline_costs costs;
};

std::vector<cost_case> cost_cases(std::uint32_t p) {
    std::vector<cost_case> out{
        {"equal, zero p2p", costs_of(1, 1, 1, 0)},
        {"T_W > T_F", costs_of(1, 1, 2.5, 0.1)},
        {"tiny T_W", costs_of(1, 1.2, 0.01, 0.05)},
        {"the paper's T_F 3, T_B 4, T_W 2", costs_of(3, 4, 2, 0)},
    };
    // Embedding and loss make the first and the last stage heavier.
    ps::pipeline_costs heavy = costs_of(1, 1, 1, 0.2);
    heavy.per_stage.assign(p, ps::stage_times{1.0, 1.0, 1.0});
    heavy.per_stage.front().forward = 2.0;
    heavy.per_stage.back().backward_input = 2.5;
    out.push_back({"heavy first and last stage", heavy});
    return out;
}

// Every placement against every named schedule that fits, at p ranks: five cost cases, five
// limits, and m < p, m = p, m not a multiple of p, m = 2p.
void check_never_longer_than_named(std::uint32_t p) {
    ps::autoschedule_options fast{};
    fast.exact_actions = 24;
    fast.local_search_evaluations = 400;
    fast.template_evaluations = 200;
    for (const std::uint32_t m : {1u, 2u, 3u, 5u, 8u}) {
        for (const cost_case& cc : cost_cases(p)) {
            for (const double limit : {1.0, 2.0, static_cast<double>(p), 2.0 * p, unbounded}) {
                INFO("p=" << p << " m=" << m << " costs=" << cc.name << " limit=" << limit);
                const ps::shape s{p, m, 1};
                const auto mem = memory_of(limit);
                const auto r = ps::autoschedule(s, cc.costs, mem, fast);
                REQUIRE(r);
                for (const ps::named_schedule_result& n : ps::evaluate_named_schedules(s, cc.costs, mem)) {
                    if (!n.fits) continue;
                    INFO("named " << ps::display_name(ps::info(n.id)) << " span " << n.span);
                    CHECK(r.span <= n.span + 1e-9 * std::max(1.0, n.span));
                }
                REQUIRE(r.visit([](const auto& sched) { return static_cast<bool>(ps::validate(sched)); }));
                const replayed x = replay(r, s, cc.costs, mem);
                REQUIRE(x.valid);
                CHECK(near(x.span, r.span));
                CHECK(near(x.makespan, r.makespan));
                for (const double q : x.peak) CHECK(q <= limit + 1e-9);
                CHECK(r.lower_bound <= r.span + 1e-9);
                CHECK(r.gap >= 0.0);
                CHECK(r.gap < 1.0);
                // Searching more placements never lengthens the answer.
                const auto loop = ps::autoschedule(s, cc.costs, mem, [&] {
                    ps::autoschedule_options o = fast;
                    o.placement = ps::search_placement::loop;
                    return o;
                }());
                REQUIRE(loop);
                CHECK(r.span <= loop.span + 1e-9 * std::max(1.0, loop.span));
            }
        }
    }
}

TEST_CASE("autoschedule: never longer than a named schedule that fits (grid, p = 1 to 3)") {
    for (std::uint32_t p = 1; p <= 3; ++p) check_never_longer_than_named(p);
}

// Three quarters of the grid's time: run by ctest as pipesched_tests.large_grids in optimised
// builds (tests/CMakeLists.txt), not under the sanitizers' -O0.
TEST_CASE("autoschedule: never longer than a named schedule that fits (grid, p = 4 and 5)" *
          doctest::test_suite("large grids") * doctest::skip()) {
    for (std::uint32_t p = 4; p <= 5; ++p) check_never_longer_than_named(p);
}

TEST_CASE("autoschedule: each placement by name, with global stage numbers in the CSV") {
    const ps::shape s{3, 6, 1};
    const auto costs = costs_of(1, 1, 1, 0.1);
    const auto mem = memory_of(3);
    SUBCASE("V: rank r holds stages r and 2p-1-r") {
        const auto r = ps::autoschedule(s, costs, mem, placed(ps::search_placement::v));
        REQUIRE(r);
        CHECK(r.layout == ps::placement::v_shape);
        CHECK(r.chunks == 2);
        const std::string csv = ps::write_csv(r.v_schedule);
        const std::string rank0 = csv.substr(0, csv.find('\n'));
        CHECK(rank0.find("0F0") != std::string::npos);
        CHECK(rank0.find("5F0") != std::string::npos); // stage 2p-1 = 5 on rank 0
        CHECK(rank0.find("1F0") == std::string::npos);
        CHECK(ps::validate(r.v_schedule));
        const replayed x = replay(r, s, costs, mem);
        CHECK(near(x.span, r.span));
    }
    SUBCASE("interleaved with 3 chunks: rank r holds stages r, r+p, r+2p") {
        const auto r = ps::autoschedule(s, costs, mem, placed(ps::search_placement::interleaved, 3));
        REQUIRE(r);
        CHECK(r.layout == ps::placement::loop);
        CHECK(r.chunks == 3);
        CHECK(r.schedule.shape == ps::shape{3, 6, 3});
        const std::string csv = ps::write_csv(r.schedule);
        const std::string rank1 = csv.substr(csv.find('\n') + 1, csv.find('\n', csv.find('\n') + 1) - csv.find('\n') - 1);
        CHECK(rank1.find("1F0") != std::string::npos);
        CHECK(rank1.find("4F0") != std::string::npos);
        CHECK(rank1.find("7F0") != std::string::npos);
        CHECK(ps::validate(r.schedule));
        const replayed x = replay(r, s, costs, mem);
        CHECK(near(x.span, r.span));
        for (const double q : x.peak) CHECK(q <= 3.0 + 1e-9);
    }
    SUBCASE("the chunks of the options are checked") {
        CHECK(ps::autoschedule(s, costs, mem, placed(ps::search_placement::interleaved, 1)).message ==
              "invalid input: the interleaved placement's chunks must be 2 .. 64");
    }
}

TEST_CASE("autoschedule: costs per global stage describe the placements with that many stages") {
    // 2p entries: the V and the interleaved placement take them as they are; one stage per rank
    // merges stages 2r and 2r+1 onto rank r.
    const ps::shape s{2, 4, 1};
    ps::pipeline_costs costs = costs_of(1, 1, 1, 0);
    costs.per_stage = {{1.0, 1.0, 1.0}, {0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}, {2.0, 1.0, 1.0}};
    const auto mem = memory_of(unbounded);
    const as::problem v = as::make_problem(s, costs, mem, ps::placement::v_shape, 2);
    CHECK(v.costs[3].forward == 2.0); // stage 3 on rank 0
    CHECK(v.owner == std::vector<std::uint32_t>{0, 1, 1, 0});
    CHECK(v.rank_work(0) == 4 * (3.0 + 4.0));
    const as::problem loop = as::make_problem(s, costs, mem);
    CHECK(loop.costs[0].forward == 1.5);
    CHECK(loop.costs[1].forward == 2.5);
    // One entry per rank: a chunk is 1/v of it.
    ps::pipeline_costs per_rank = costs_of(1, 1, 1, 0);
    per_rank.per_stage = {{2.0, 2.0, 1.0}, {4.0, 2.0, 2.0}};
    const as::problem vr = as::make_problem(s, per_rank, memory_of(4), ps::placement::v_shape, 2);
    CHECK(vr.costs[1].forward == 2.0); // rank 1's first chunk
    CHECK(vr.costs[2].forward == 2.0); // rank 1's second chunk
    CHECK(vr.costs[1].activation_memory == 0.5);
    CHECK(vr.limit(1) == 4.0);
    const auto r = ps::autoschedule(s, costs, mem);
    REQUIRE(r);
    const replayed x = replay(r, s, costs, mem);
    CHECK(near(x.span, r.span));
    // 3 entries for 2 ranks describe no placement.
    ps::pipeline_costs odd = costs_of(1, 1, 1, 0);
    odd.per_stage.assign(3, ps::stage_times{});
    CHECK(ps::autoschedule(s, odd, mem).message ==
          "invalid input: per-stage costs: expected 2 stages (or a multiple: one per global stage), got 3");
}

/// The span of every V-placed order of p ranks and one microbatch (each rank interleaves its
/// two chunks' F < I < W chains), by simulate().
double brute_force_v(std::uint32_t p, const ps::pipeline_costs& costs, const ps::pipeline_memory& mem) {
    const ps::shape s{p, 1, 2};
    // The 20 interleavings of two chains of three.
    std::vector<std::vector<int>> seqs; // 0..2 chunk 0's F I W, 3..5 chunk 1's
    for (int mask = 0; mask < 64; ++mask) {
        if (__builtin_popcount(static_cast<unsigned>(mask)) != 3) continue;
        std::vector<int> seq;
        int a = 0, b = 3;
        for (int k = 0; k < 6; ++k) seq.push_back((mask >> k) & 1 ? a++ : b++);
        seqs.push_back(seq);
    }
    const std::vector<ps::stage_costs> per = ps::to_stage_costs({p, 1, 1}, costs, mem, ps::placement::v_shape, 2);
    ps::cost_model model{};
    model.per_stage = per;
    model.p2p_latency = costs.p2p;
    double best = unbounded;
    std::vector<std::size_t> pick(p, 0);
    while (true) {
        std::vector<std::vector<ps::action>> lists(p);
        for (std::uint32_t r = 0; r < p; ++r) {
            for (const int k : seqs[pick[r]]) {
                const std::uint32_t chunk = k < 3 ? 0 : 1;
                const std::uint32_t stage = ps::stage_of(ps::placement::v_shape, p, r, chunk);
                const ps::op kind = k % 3 == 0 ? ps::op::forward : k % 3 == 1 ? ps::op::backward_input : ps::op::backward_weight;
                lists[r].push_back(ps::action{stage, kind, 0});
            }
        }
        const auto built = ps::explicit_schedule<ps::placement::v_shape>::from_actions(lists, s);
        if (built) {
            const ps::simulation sim = ps::simulate(built.schedule, model);
            if (sim) {
                double span = 0.0;
                bool fits = true;
                for (const ps::rank_summary& rs : sim.ranks) {
                    span = std::max(span, rs.last_end - rs.first_start);
                    fits = fits && rs.peak_memory <= mem.uniform.limit + 1e-9;
                }
                if (fits) best = std::min(best, span);
            }
        }
        std::uint32_t r = 0;
        while (r < p && ++pick[r] == seqs.size()) pick[r++] = 0;
        if (r == p) break;
    }
    return best;
}

TEST_CASE("autoschedule: branch and bound proves the V placement optimal on tiny shapes (exhaustive check)") {
    for (const std::uint32_t p : {1u, 2u, 3u}) {
        for (const cost_case& cc : cost_cases(p)) {
            if (!cc.costs.per_stage.empty()) continue; // per-rank lists: covered by the grid
            for (const double limit : {1.0, 1.5, unbounded}) {
                INFO("p=" << p << " costs=" << cc.name << " limit=" << limit);
                const auto mem = memory_of(limit);
                const auto r = ps::autoschedule({p, 1, 1}, cc.costs, mem, placed(ps::search_placement::v));
                REQUIRE(r);
                CHECK(r.proven_optimal);
                CHECK(r.bound_scope == "V placement (2 chunks per rank)");
                CHECK(near(r.span, brute_force_v(p, cc.costs, mem)));
            }
        }
    }
}

TEST_CASE("autoschedule: the search's clock replays as simulate() does, in every placement") {
    // One order per placement, scored by the search's evaluation and by simulate().
    const ps::shape s{3, 5, 1};
    const auto costs = costs_of(1.0, 1.5, 0.5, 0.25);
    const auto mem = memory_of(unbounded, 1.0, 0.5);
    for (const auto& [layout, v] : {std::pair{ps::placement::loop, 1u}, std::pair{ps::placement::v_shape, 2u},
                                    std::pair{ps::placement::loop, 3u}}) {
        const as::problem pr = as::make_problem(s, costs, mem, layout, v);
        const std::vector<double> cap(3, unbounded);
        for (const bool forward_first : {false, true}) {
            const as::order o = as::list_schedule(pr, cap, forward_first, as::w_fill::gaps);
            REQUIRE_FALSE(o.empty());
            as::evaluator ev{pr};
            const as::evaluation e = ev.run(o);
            REQUIRE(e.legal);
            ps::autoschedule_result r{};
            r.layout = layout;
            r.chunks = v;
            if (layout == ps::placement::v_shape) r.v_schedule = as::to_schedule<ps::placement::v_shape>(pr, o);
            else r.schedule = as::to_schedule<ps::placement::loop>(pr, o);
            const replayed x = replay(r, s, costs, mem);
            REQUIRE(x.valid);
            CHECK(near(x.span, e.span));
            CHECK(near(x.makespan, e.makespan));
            for (std::uint32_t k = 0; k < 3; ++k) CHECK(near(x.peak[k], e.peak[k]));
        }
    }
}

} // namespace placements
} // namespace
