// The span lower bound of a placement (search/lower_bound.hpp): by hand, against an exhaustive
// search of every order on tiny shapes of each placement, and on the Zero Bubble paper's
// settings.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <pipesched/analysis/simulate.hpp>
#include <pipesched/policies/dualpipe_v.hpp>
#include <pipesched/policies/gpipe.hpp>
#include <pipesched/policies/interleaved_1f1b.hpp>
#include <pipesched/policies/interleaved_zero_bubble.hpp>
#include <pipesched/policies/looped_bfs.hpp>
#include <pipesched/policies/one_f_one_b.hpp>
#include <pipesched/policies/v_half.hpp>
#include <pipesched/policies/v_min.hpp>
#include <pipesched/policies/zb_h1.hpp>
#include <pipesched/policies/zb_h2.hpp>
#include <pipesched/policies/zbv.hpp>
#include <pipesched/search/autoschedule.hpp>
#include <pipesched/search/named_schedules.hpp>
#include <pipesched/search/lower_bound.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

// Its own namespace: the unity build compiles this file with the other test files in one
// translation unit, and their helpers share names (cost_case, placements).
namespace lower_bound_tests {

namespace {

namespace ps = pipesched;
namespace as = ps::detail::autosched;

constexpr double no_limit = std::numeric_limits<double>::infinity();

/// Times and memory of one microbatch through one chunk (a global stage).
struct chunk_cost {
    double forward = 1.0, backward_input = 1.0, backward_weight = 1.0, activation = 1.0, weight = 1.0;
};

/// Costs and memory given per global stage (p v entries, taken as they are), limit per rank.
struct stage_lists {
    ps::pipeline_costs costs{};
    ps::pipeline_memory memory{};
};
stage_lists per_stage(std::uint32_t stages, const chunk_cost& c, double p2p, double limit) {
    stage_lists out{};
    out.costs.p2p = p2p;
    out.costs.per_stage.assign(stages, ps::stage_times{c.forward, c.backward_input, c.backward_weight});
    out.memory.per_stage.assign(stages, ps::stage_memory{c.activation, c.weight, limit});
    return out;
}

/// The search's problem of p ranks with v chunks (s.chunks) placed as `layout`, every chunk
/// costing `c`.
as::problem uniform_problem(ps::shape s, ps::placement layout, chunk_cost c, double p2p, double limit) {
    const stage_lists l = per_stage(s.ranks * s.chunks, c, p2p, limit);
    return as::make_problem({s.ranks, s.microbatches, 1}, l.costs, l.memory, layout, s.chunks);
}

/// The shortest span of any schedule within the limits, by trying every combination of per-rank
/// orders (branch and bound on the work each rank has left). Written apart from the bound: one
/// action at a time per rank, each rank's next action chosen when its previous one has run, an
/// action run as soon as its input exists. Microbatches may run in any order, except that the
/// first stage's F's go in microbatch order (renaming microbatches by that order loses nothing).
class exhaustive {
public:
    explicit exhaustive(const as::problem& pr, std::uint64_t node_limit = 20'000'000)
        : pr_{pr}, p_{pr.p}, m_{pr.m}, v_{pr.v}, n_{p_ * v_}, limit_{node_limit} {
        for (std::uint32_t s = 0; s < n_; ++s) rank_.push_back(ps::locate_stage(pr.layout, p_, s).rank);
        start_.ranks.assign(p_, rank_state{});
        start_.end.assign(std::size_t{3} * n_ * m_, unset);
        for (std::uint32_t s = 0; s < n_; ++s) {
            const ps::stage_costs& c = pr_.costs[s];
            start_.ranks[rank_[s]].remaining += m_ * (c.forward + c.backward_input + c.backward_weight);
        }
    }

    /// The optimum, or NaN if the node limit stopped the search first.
    double run() {
        best_ = no_limit;
        state st = start_;
        dfs(st);
        return nodes_ > limit_ ? std::numeric_limits<double>::quiet_NaN() : best_;
    }

private:
    static constexpr double unset = -1.0;
    enum : std::uint32_t { f = 0, i = 1, w = 2 };
    struct pending_action {
        std::uint32_t stage = 0, kind = 0, mb = 0;
        bool set = false;
    };
    struct rank_state {
        double free = 0.0, first = unset, memory = 0.0, remaining = 0.0;
        std::uint32_t done = 0;
        pending_action pending{};
    };
    struct state {
        std::vector<rank_state> ranks;
        std::vector<double> end; ///< per (kind, stage, microbatch): end time, or unset
    };

    [[nodiscard]] double limit(std::uint32_t r) const { return pr_.limit(r); }
    [[nodiscard]] std::size_t at(std::uint32_t kind, std::uint32_t s, std::uint32_t mb) const {
        return (std::size_t{kind} * n_ + s) * m_ + mb;
    }
    [[nodiscard]] double duration(std::uint32_t kind, std::uint32_t s) const {
        const ps::stage_costs& c = pr_.costs[s];
        return kind == f ? c.forward : kind == i ? c.backward_input : c.backward_weight;
    }
    [[nodiscard]] double memory_change(std::uint32_t kind, std::uint32_t s) const {
        const ps::stage_costs& c = pr_.costs[s];
        return kind == f ? c.activation_memory : kind == i ? c.weight_memory - c.activation_memory : -c.weight_memory;
    }
    /// When the input of the action exists (p2p included), or unset.
    [[nodiscard]] double ready(const state& st, const pending_action& a) const {
        const auto from = [&](std::uint32_t kind, std::uint32_t s) {
            const double t = st.end[at(kind, s, a.mb)];
            if (t == unset) return unset;
            return rank_[s] == rank_[a.stage] ? t : t + pr_.comm;
        };
        if (a.kind == f) return a.stage == 0 ? 0.0 : from(f, a.stage - 1);
        if (a.kind == i) return a.stage + 1 == n_ ? from(f, a.stage) : from(i, a.stage + 1);
        return from(i, a.stage);
    }
    void settle(state& st) const {
        for (bool moved = true; moved;) {
            moved = false;
            for (rank_state& rs : st.ranks) {
                if (!rs.pending.set) continue;
                const double t = ready(st, rs.pending);
                if (t == unset) continue;
                const double begin = std::max(t, rs.free);
                const double d = duration(rs.pending.kind, rs.pending.stage);
                if (rs.first == unset) rs.first = begin;
                rs.free = begin + d;
                rs.remaining -= d;
                st.end[at(rs.pending.kind, rs.pending.stage, rs.pending.mb)] = rs.free;
                ++rs.done;
                rs.pending.set = false;
                moved = true;
            }
        }
    }
    /// Each rank still needs its remaining work after it is next free.
    [[nodiscard]] double bound(const state& st) const {
        double b = 0.0;
        for (const rank_state& rs : st.ranks) {
            b = std::max(b, rs.first == unset ? rs.remaining : rs.free + rs.remaining - rs.first);
        }
        return b;
    }
    void dfs(state& st) {
        if (++nodes_ > limit_) return;
        if (bound(st) >= best_ - 1e-9) return;
        const std::uint32_t total = 3 * v_ * m_;
        std::uint32_t r = 0;
        while (r < p_ && (st.ranks[r].pending.set || st.ranks[r].done == total)) ++r;
        if (r == p_) {
            for (const rank_state& rs : st.ranks) {
                if (rs.pending.set) return; // deadlock
            }
            best_ = bound(st);
            return;
        }
        for (std::uint32_t s = 0; s < n_; ++s) {
            if (rank_[s] != r) continue;
            bool first_stage_f_taken = false;
            for (std::uint32_t kind = f; kind <= w; ++kind) {
                for (std::uint32_t mb = 0; mb < m_; ++mb) {
                    if (st.end[at(kind, s, mb)] != unset) continue;
                    if (kind == i && st.end[at(f, s, mb)] == unset) continue;
                    if (kind == w && st.end[at(i, s, mb)] == unset) continue;
                    if (kind == f && s == 0) {
                        if (first_stage_f_taken) continue;
                        first_stage_f_taken = true;
                    }
                    const double mem = st.ranks[r].memory + memory_change(kind, s);
                    if (mem > limit(r) + 1e-9) continue;
                    state next = st;
                    next.ranks[r].memory = mem;
                    next.ranks[r].pending = pending_action{s, kind, mb, true};
                    settle(next);
                    dfs(next);
                    if (nodes_ > limit_) return;
                }
            }
        }
    }

    const as::problem& pr_;
    std::uint32_t p_, m_, v_, n_;
    std::uint64_t limit_;
    std::uint64_t nodes_ = 0;
    std::vector<std::uint32_t> rank_;
    state start_{};
    double best_ = 0.0;
};

struct placement_case {
    const char* name;
    ps::placement layout;
    std::uint32_t chunks;
};
constexpr placement_case placements[] = {
    {"loop", ps::placement::loop, 1},
    {"interleaved v=2", ps::placement::loop, 2},
    {"V", ps::placement::v_shape, 2},
};

} // namespace

TEST_CASE("span_lower_bound: by hand") {
    SUBCASE("loop, p = 2, m = 2, unit times, no limit: one idle unit at the head") {
        // Rank 0: from its first F, the first I can start after F, F on rank 1, I on rank 1: 3;
        // two F's fill 2 of it. Work 6. The optimum is 7 (F0 F1 . I0 W0 I1 W1).
        const auto pr = uniform_problem({2, 2, 1}, ps::placement::loop, {}, 0.0, no_limit);
        CHECK(as::span_lower_bound(pr) == 7.0);
        CHECK(exhaustive{pr}.run() == 7.0);
    }
    SUBCASE("V, p = 2, m = 1, unit times, no limit: head and tail windows touch") {
        // Rank 0 holds stages 0 and 3. Its first I (of stage 3) starts 4 after its first F: F0 and
        // F3 fill 2 of that. After F3 ends, I of stage 0 waits for I on stages 3, 2, 1: 3, of
        // which I3 W3 fill 2. All F's come first (m = 1), so the two windows meet: 2 + 1 idle on
        // top of 6 of work. The optimum is 9.
        const auto pr = uniform_problem({2, 1, 2}, ps::placement::v_shape, {}, 0.0, no_limit);
        CHECK(as::span_lower_bound(pr) == 9.0);
        CHECK(exhaustive{pr}.run() == 9.0);
    }
    SUBCASE("one rank: F I W of each microbatch, no idle") {
        const auto pr = uniform_problem({1, 5, 1}, ps::placement::loop, {2, 1, 1, 1, 1}, 0.0, 1.0);
        CHECK(as::span_lower_bound(pr) == 20.0);
    }
    SUBCASE("the Zero Bubble paper's 1.5B model, p = 8, m = 24, limit 8 activations") {
        // Rank 0's round trip to its first I is 8 T_F + 7 T_I + 14 p2p = 283.192, 8 F's fill
        // 148.176: idle 135.016. After its last F the last I waits 7 (T_F + T_I) + 14 p2p =
        // 264.670; 7 held microbatches give 7 (T_I + T_W) = 191.961: idle 72.709. The limit
        // forces an I before the last F, so both count. Work 24 x 45.945 = 1102.680.
        const auto pr = uniform_problem({8, 24, 1}, ps::placement::loop, {18.522, 18.086, 9.337, 1.0, 1.0}, 0.601, 8.0);
        CHECK(as::span_lower_bound(pr) == doctest::Approx(1102.680 + 135.016 + 72.709).epsilon(1e-12));
    }
    SUBCASE("memory over time: one activation of room on two stages") {
        // Loop p = 2, m = 6, limit 1: rank 0 holds each microbatch's activation from the start
        // of its F to the start of its W: F, F and I on rank 1, then its own I: 4, so 24 for six
        // microbatches held one at a time. Work 18 plus both windows' idle (2 + 2) is only 22.
        // The optimum runs the microbatches one after another: 6 x 5 = 30.
        const auto pr = uniform_problem({2, 6, 1}, ps::placement::loop, {}, 0.0, 1.0);
        CHECK(as::span_lower_bound(pr) == 24.0);
        CHECK(exhaustive{pr}.run() == 30.0);
    }
    SUBCASE("no schedule fits: +infinity") {
        // The V's rank holds an activation of both its chunks after the second F.
        CHECK(as::span_lower_bound(uniform_problem({2, 2, 2}, ps::placement::v_shape, {}, 0.0, 1.5)) ==
              std::numeric_limits<double>::infinity());
        CHECK(std::isfinite(as::span_lower_bound(uniform_problem({2, 2, 2}, ps::placement::v_shape, {}, 0.0, 2.0))));
        CHECK(as::span_lower_bound(uniform_problem({2, 2, 1}, ps::placement::loop, {}, 0.0, 0.5)) ==
              std::numeric_limits<double>::infinity());
    }
}

TEST_CASE("span_lower_bound: input errors") {
    // The public entry takes autoschedule()'s input; what it refuses gives NaN, and
    // check_bound_input names the problem.
    const ps::shape s{2, 2, 1};
    stage_lists l = per_stage(4, {}, 0.0, 4.0);
    const auto refused = [&](ps::placement layout, std::uint32_t chunks) {
        INFO(ps::check_bound_input(s, l.costs, l.memory, layout, chunks));
        CHECK(std::isnan(ps::span_lower_bound(s, l.costs, l.memory, layout, chunks)));
        return ps::check_bound_input(s, l.costs, l.memory, layout, chunks);
    };
    CHECK(ps::check_bound_input(s, l.costs, l.memory, ps::placement::v_shape, 2).empty());
    CHECK(ps::span_lower_bound(s, l.costs, l.memory, ps::placement::v_shape, 2) ==
          as::span_lower_bound(uniform_problem({2, 2, 2}, ps::placement::v_shape, {}, 0.0, 4.0)));
    CHECK(refused(ps::placement::v_shape, 3) == "the V placement has 2 chunks per rank");
    CHECK(refused(ps::placement::loop, 0) == "chunks per rank must be 1 .. 64");
    CHECK(refused(ps::placement::loop, 3) == "per-stage lists of 4 entries describe neither the 2 ranks nor the 6 stages of this placement");
    l.costs.per_stage.assign(3, ps::stage_times{});
    CHECK(refused(ps::placement::v_shape, 2) == "per-stage costs: expected 2 stages (or a multiple: one per global stage), got 3");
    l.costs.per_stage.assign(4, ps::stage_times{});
    l.costs.per_stage[2].backward_weight = -1.0;
    CHECK(refused(ps::placement::v_shape, 2) == "stage 2: T_W must be a finite number >= 0");
    l.costs.per_stage[2].backward_weight = 1.0;
    l.memory.per_stage[1].weight = std::numeric_limits<double>::quiet_NaN();
    CHECK(refused(ps::placement::v_shape, 2) == "stage 1: M_W must be a finite number >= 0");
    l.memory.per_stage[1].weight = 1.0;
    l.memory.per_stage[3].limit = -2.0;
    CHECK(refused(ps::placement::v_shape, 2) == "stage 3: the memory limit must be >= 0");
    l.memory.per_stage[3].limit = 4.0;
    l.costs.p2p = std::numeric_limits<double>::infinity();
    CHECK(refused(ps::placement::v_shape, 2) == "p2p time must be a finite number >= 0");
    l.costs.p2p = 0.0;
    CHECK(ps::check_bound_input({2, 0, 1}, l.costs, l.memory, ps::placement::v_shape, 2) == "microbatches must be at least 1");
    CHECK(std::isnan(ps::span_lower_bound({2, 0, 1}, l.costs, l.memory, ps::placement::v_shape, 2)));
}

namespace {

struct cost_case {
    const char* name;
    chunk_cost c;
    double p2p;
    bool uneven; ///< the first and last stages heavier (embedding, loss)
};
constexpr cost_case cost_cases[] = {
    {"unit", {1, 1, 1, 1, 1}, 0.0, false},
    {"T_F 3, T_B 4, T_W 2", {3, 4, 2, 1, 1}, 0.0, false},
    {"T_W > T_F, p2p", {1, 1, 2.5, 1, 1}, 0.25, false},
    {"tiny T_W", {1, 1.2, 0.01, 1, 1}, 0.0, false},
    {"M_W half of M_B", {1, 1, 1, 1, 0.5}, 0.5, false},
    {"uneven stages", {1, 1, 0.5, 1, 1}, 0.2, true},
};

as::problem make_case(const placement_case& pc, std::uint32_t p, std::uint32_t m, const cost_case& cc, double limit) {
    stage_lists l = per_stage(p * pc.chunks, cc.c, cc.p2p, limit);
    if (cc.uneven) {
        l.costs.per_stage.front().forward = 1.7;
        l.costs.per_stage.back().backward_input = 2.2;
        l.memory.per_stage.back().activation = 1.5;
    }
    return as::make_problem({p, m, 1}, l.costs, l.memory, pc.layout, pc.chunks);
}

/// autoschedule() over one placement of make_case's model (its per-stage lists as they are).
ps::autoschedule_result search_alone(const placement_case& pc, std::uint32_t p, std::uint32_t m, const cost_case& cc,
                                     double limit) {
    const as::problem pr = make_case(pc, p, m, cc, limit);
    ps::pipeline_costs costs{};
    costs.p2p = pr.comm;
    ps::pipeline_memory memory{};
    for (std::uint32_t s = 0; s < pr.stages(); ++s) { // the problem's stages back as autoschedule()'s input
        const ps::stage_costs& c = pr.costs[s];
        costs.per_stage.push_back({c.forward, c.backward_input, c.backward_weight});
        memory.per_stage.push_back({c.activation_memory, c.weight_memory, pr.limit(pr.owner[s])});
    }
    ps::autoschedule_options options{};
    options.placement = pc.chunks == 1 ? ps::search_placement::loop
                        : pc.layout == ps::placement::v_shape ? ps::search_placement::v
                                                              : ps::search_placement::interleaved;
    options.chunks = std::max(2U, pc.chunks);
    return ps::autoschedule({p, m, 1}, costs, memory, options);
}

} // namespace

TEST_CASE("span_lower_bound and autoschedule: never above the optimum, proven optimal, every placement (exhaustive search)") {
    struct tiny { std::uint32_t p, m; };
    int cases = 0, tight = 0;
    // 3 p m v actions: at most 18 with one chunk, 24 with two, so that the search finishes.
    for (const placement_case& pc : placements) {
        for (const tiny t : {tiny{1, 2}, tiny{1, 3}, tiny{2, 1}, tiny{2, 2}, tiny{2, 3}, tiny{3, 1}, tiny{3, 2}}) {
            if (pc.chunks * t.p * t.m * 3 > (pc.chunks == 1 ? 18u : 24u)) continue;
            for (const cost_case& cc : cost_cases) {
                const double smallest = pc.chunks * (cc.uneven ? 1.5 : 1.0);
                for (const double limit : {smallest, smallest + 1.0, 2.0 * smallest, no_limit}) {
                    INFO(pc.name << " p=" << t.p << " m=" << t.m << " costs=" << cc.name << " limit=" << limit);
                    const as::problem pr = make_case(pc, t.p, t.m, cc, limit);
                    const double bound = as::span_lower_bound(pr);
                    const double best = exhaustive{pr}.run();
                    REQUIRE(!std::isnan(best));
                    CHECK(bound <= best + 1e-9);
                    ++cases;
                    if (bound >= best - 1e-9) ++tight;
                    // Exact with unit times, no p2p and no limit: the head's fill is the only idle.
                    if (std::string(cc.name) == "unit" && limit == no_limit) CHECK(bound == best);
                    // autoschedule() in this placement alone: branch and bound (each op's
                    // microbatches in order on a stage) finishes and finds the optimum over all
                    // orders; its reported bound is this one or that optimum, never above it.
                    const ps::autoschedule_result r = search_alone(pc, t.p, t.m, cc, limit);
                    REQUIRE(r);
                    CHECK(r.proven_optimal);
                    CHECK(r.span == doctest::Approx(best).epsilon(1e-12));
                    CHECK(r.lower_bound >= bound - 1e-9);
                    CHECK(r.lower_bound <= best + 1e-9);
                    CHECK(r.gap == 0.0);
                    CHECK(r.layout == pc.layout);
                    CHECK(r.chunks == pc.chunks);
                }
            }
        }
    }
    CHECK(cases == 408);
    CHECK(tight == 375); // the others: ranks that make each other wait, which the bound does not see
}

namespace {

/// Replays a named schedule on the chunk costs of `pr` and checks that its span is at least the
/// bound of its placement at the memory it reached: every named schedule is one of the
/// schedules the bound speaks for. Returns the schedule's span over the bound (0 if it does not
/// accept the shape).
template <class P>
double named_over_bound(const cost_case& cc, std::uint32_t p, std::uint32_t m, std::uint32_t v) {
    const P pol{ps::shape{p, m, v}};
    if (!pol.check()) return 0.0;
    as::problem pr = make_case({"", P::layout, v}, p, m, cc, no_limit);
    const std::vector<ps::stage_costs> per_stage = as::stage_costs_of(pr);
    ps::cost_model model{};
    model.per_stage = per_stage;
    model.p2p_latency = pr.comm;
    const ps::simulation sim = ps::simulate(pol, model);
    REQUIRE(sim);
    double span = 0.0;
    for (std::uint32_t r = 0; r < p; ++r) {
        const ps::rank_summary& rs = sim.ranks[r];
        span = std::max(span, rs.last_end - rs.first_start);
        pr.limits[r] = rs.peak_memory;
    }
    const double bound = as::span_lower_bound(pr);
    CHECK(bound <= span * (1 + 1e-12));
    return span / bound;
}

} // namespace

TEST_CASE("span_lower_bound: every named schedule is at least the bound of its placement") {
    // Larger shapes than the exhaustive search reaches: the catalogue's schedules, replayed by
    // simulate() at the memory they reach, never beat the bound.
    struct shape_case { std::uint32_t p, m; };
    double closest = 1e300;
    int schedules = 0, meeting = 0;
    for (const shape_case sc : {shape_case{2, 4}, shape_case{3, 5}, shape_case{4, 8}, shape_case{4, 6},
                                shape_case{5, 10}, shape_case{8, 16}, shape_case{8, 24}}) {
        for (const cost_case& cc : cost_cases) {
            INFO("p=" << sc.p << " m=" << sc.m << " costs=" << std::string(cc.name));
            const std::uint32_t p = sc.p, m = sc.m;
            for (const double ratio : {named_over_bound<ps::gpipe<>>(cc, p, m, 1), named_over_bound<ps::one_f_one_b<>>(cc, p, m, 1),
                                       named_over_bound<ps::zb_h1>(cc, p, m, 1), named_over_bound<ps::zb_h2>(cc, p, m, 1),
                                       named_over_bound<ps::interleaved_1f1b<>>(cc, p, m, 2),
                                       named_over_bound<ps::looped_bfs<>>(cc, p, m, 2),
                                       named_over_bound<ps::interleaved_zero_bubble>(cc, p, m, 2),
                                       named_over_bound<ps::zbv>(cc, p, m, 2), named_over_bound<ps::dualpipe_v>(cc, p, m, 2),
                                       named_over_bound<ps::v_half>(cc, p, m, 2), named_over_bound<ps::v_min>(cc, p, m, 2)}) {
                if (ratio <= 0.0) continue;
                closest = std::min(closest, ratio);
                ++schedules;
                if (ratio <= 1.0 + 1e-12) ++meeting;
            }
        }
    }
    CHECK(closest >= 1.0 - 1e-12);
    CHECK(schedules == 450);
    CHECK(meeting == 101); // these are optimal at the memory they use
}

TEST_CASE("span_lower_bound: the Zero Bubble authors' V search never beats the V bound") {
    // tests/data/zb_v_auto/grid.csv: what their v_auto_schedule.py returns (README.md there):
    // per chunk T_F = f, T_I = b, T_W = w, p2p c, M_B = M_W = 1, max_mem per rank.
    int rows = 0, meeting = 0;
    double widest = 0.0;
    const std::vector<pipesched_test::zb_v_row> grid = pipesched_test::zb_v_grid_ok_rows();
    REQUIRE(!grid.empty());
    for (const pipesched_test::zb_v_row& x : grid) {
        INFO("p=" << x.p << " m=" << x.m << " costs " << x.cost_set << " max_mem " << x.max_mem);
        const chunk_cost c{x.f, x.b, x.w, 1.0, 1.0};
        const as::problem pr = uniform_problem({x.p, x.m, 2}, ps::placement::v_shape, c, x.c, x.max_mem);
        const double span = x.span;
        const double bound = as::span_lower_bound(pr);
        CHECK(bound <= span + 1e-9);
        ++rows;
        if (bound >= span - 1e-9) ++meeting;
        widest = std::max(widest, (span - bound) / span);
    }
    CHECK(rows == 756);
    CHECK(meeting == 62); // their V order is optimal there
    CHECK(widest < 0.4);
}

TEST_CASE("span_lower_bound: the Zero Bubble paper's 12 settings") {
    // Qi et al. (ICLR 2024): the four models' profiled T_F, T_B (= T_I), T_W, T_comm per rank,
    // p and the three m of each (the values benchmarks/autoschedule.cpp uses), M_B = M_W.
    struct model { double f, i, w, c; std::uint32_t p, ms[3]; };
    const model models[] = {{18.522, 18.086, 9.337, 0.601, 8, {24, 32, 64}},
                            {29.718, 29.444, 19.927, 0.527, 8, {24, 32, 64}},
                            {45.619, 45.374, 33.844, 0.789, 16, {48, 64, 128}},
                            {57.502, 57.071, 42.939, 1.049, 32, {96, 128, 256}}};
    for (const model& md : models) {
        for (const std::uint32_t m : md.ms) {
            INFO("T_F=" << md.f << " m=" << m);
            ps::pipeline_costs costs{}; // per rank: a chunk takes 1/v of it
            costs.uniform = {md.f, md.i, md.w};
            costs.p2p = md.c;
            const auto bound = [&](double limit, ps::placement layout, std::uint32_t chunks) {
                ps::pipeline_memory memory{};
                memory.uniform = {1.0, 1.0, limit};
                return ps::span_lower_bound({md.p, m, 1}, costs, memory, layout, chunks);
            };
            const double p = md.p, work = m * (md.f + md.i + md.w);
            // Limit p: the round trip at both ends of the first rank (steps 2-4): (p-1) T_I +
            // 2 (p-1) c before its first I beyond p F's, and (p-1)(T_F + T_I) + 2 (p-1) c after
            // its last F beyond the p-1 held microbatches' I and W.
            CHECK(bound(p, ps::placement::loop, 1) ==
                  doctest::Approx(work + (p - 1) * (md.i + 2 * md.c) + (p - 1) * (md.f - md.w + 2 * md.c)).epsilon(1e-12));
            // Limit 2p (step 6): the last rank runs every F and I and all but 2p of its W's before
            // its last I, which starts (p-1)(T_F + c) after the first rank's first F; that
            // microbatch's I then returns through p-1 ranks to the first, and its W follows.
            const double last_rank = (p - 1) * (md.f + md.c) + m * (md.f + md.i) + (m - 2 * p) * md.w;
            CHECK(bound(2 * p, ps::placement::loop, 1) == doctest::Approx(last_rank + (p - 1) * (md.i + md.c) + md.w).epsilon(1e-12));
            // Over placements (what autoschedule() reports for placement any): every bound is at
            // least the work, and the V's is the smallest.
            for (const double limit : {p, 2 * p}) {
                const double loop = bound(limit, ps::placement::loop, 1), v = bound(limit, ps::placement::v_shape, 2),
                             interleaved = bound(limit, ps::placement::loop, 2);
                CHECK(v >= work - 1e-9);
                CHECK(v <= loop);
                CHECK(v <= interleaved);
            }
        }
    }
}

} // namespace lower_bound_tests
