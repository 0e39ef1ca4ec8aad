// Hardening (issue 8, library side): the policy contract, self-contained iteration cursors,
// replays of crafted event lists, unusable and overflowing costs, float-to-integer ranges.
#include <doctest/doctest.h>

#include <pipesched/io/chrome_trace.hpp>
#include <pipesched/io/terminal_timeline.hpp>
#include <pipesched/pipesched.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace {

namespace ps = pipesched;

template <class F>
bool throws_contract_error(F&& f) {
    try {
        f();
    } catch (const ps::contract_error&) {
        return true;
    }
    return false;
}

struct counting_sink {
    std::size_t count = 0;
    void push(const ps::event&) { ++count; }
};

template <ps::schedule_policy P>
std::vector<ps::event> all_events(const P& pol, std::uint32_t rank) {
    std::vector<ps::event> out;
    for (auto c = pol.cursor(rank); !c.done(); c.advance()) out.push_back(c.current());
    return out;
}

} // namespace

TEST_CASE("a policy whose check() rejects its shape cannot be used: every entry point throws") {
    // dualpipe_v needs m >= 2p: size(0) would be 6m - p = 2^64 - 52.
    const ps::dualpipe_v dual{{.ranks = 64, .microbatches = 2, .chunks = 2}};
    REQUIRE_FALSE(dual.check());
    CHECK(throws_contract_error([&] { (void)dual.size(0); }));
    CHECK(throws_contract_error([&] { (void)dual.cursor(0); }));
    CHECK(throws_contract_error([&] { (void)ps::events(dual, 0); }));
    CHECK(throws_contract_error([&] { ps::emit(dual, counting_sink{}); }));
    CHECK(throws_contract_error([&] { (void)ps::event_count(dual); }));
    CHECK(throws_contract_error([&] { (void)ps::iteration{dual}.cursor(0); }));
    CHECK(throws_contract_error([&] { (void)ps::iteration{dual}.size(0); }));
    CHECK(throws_contract_error([&] { (void)ps::peak_activations(dual, 0); }));

    // ranks above 65535 used to alias to rank 0 (16-bit event field).
    const ps::one_f_one_b<> wide{{.ranks = 70000, .microbatches = 4, .chunks = 1}};
    CHECK(throws_contract_error([&] { (void)wide.size(69999); }));
    CHECK(throws_contract_error([&] { (void)wide.at(69999, 0); }));
    // chunks = 257 overflowed the iteration cursor's per-chunk array.
    const ps::looped_bfs<> deep{{.ranks = 2, .microbatches = 2, .chunks = 257}};
    CHECK(throws_contract_error([&] { (void)ps::iteration{deep}.cursor(0); }));
    CHECK(throws_contract_error([&] { (void)deep.cursor(1); }));
    // ranks = 0 divided by zero in the group size.
    const ps::interleaved_1f1b<> none{{.ranks = 0, .microbatches = 4, .chunks = 2}};
    CHECK(throws_contract_error([&] { (void)none.size(0); }));
    CHECK(throws_contract_error([&] { ps::emit(none, counting_sink{}); }));
    const ps::zb_h2 empty_mb{{.ranks = 4, .microbatches = 0, .chunks = 1}};
    CHECK(throws_contract_error([&] { (void)empty_mb.cursor(0); }));
    CHECK(throws_contract_error([&] { (void)ps::zbv{{.ranks = 4, .microbatches = 8, .chunks = 3}}.cursor(0); }));
    CHECK(throws_contract_error([&] { (void)ps::interleaved_zero_bubble{{.ranks = 4, .microbatches = 9, .chunks = 2}}.at(0, 0); }));

    // The message names the violated constraint.
    try {
        (void)dual.size(0);
    } catch (const ps::contract_error& e) {
        CHECK(std::string{e.what()}.find("microbatches must be at least 2 * ranks") != std::string::npos);
    }

    // validate and simulate report the shape instead of throwing.
    CHECK(ps::validate(dual).code == ps::verdict_code::invalid_shape);
    CHECK(ps::simulate(dual).check.code == ps::verdict_code::invalid_shape);
    CHECK(ps::validate(ps::iteration{dual}).code == ps::verdict_code::invalid_shape);
    CHECK(ps::simulate(ps::iteration{dual}).check.code == ps::verdict_code::invalid_shape);

    // ...also when the shape is far beyond any memory: nothing is sized by a refused shape (the
    // iteration replay's tables once were, 32 bytes per stage and microbatch: std::bad_alloc).
    const ps::shape huge{.ranks = 100000, .microbatches = 65536, .chunks = 200};
    const ps::simulation huge_summary = ps::simulate(ps::one_f_one_b<>{huge});
    CHECK(huge_summary.check.code == ps::verdict_code::invalid_shape);
    const ps::iteration_simulation huge_iteration = ps::simulate(ps::iteration{ps::one_f_one_b<>{huge}});
    CHECK(huge_iteration.check.code == ps::verdict_code::invalid_shape);
    CHECK(huge_iteration.check.shape_message == "ranks must be at most 65535");
    const std::vector<std::vector<ps::event>> no_events(1);
    ps::discard_events none_events;
    const ps::iteration_simulation huge_lists =
        ps::simulate_events(no_events, huge, ps::placement::loop, ps::iteration_cost_model{}, none_events);
    CHECK(huge_lists.check.code == ps::verdict_code::invalid_shape);
    CHECK_FALSE(huge_lists.replayed);
    CHECK(huge_lists.ranks.empty());
}

TEST_CASE("a valid policy: ranks and indices outside it are contract violations, inside it nothing changes") {
    const ps::one_f_one_b<> pol{{.ranks = 4, .microbatches = 8, .chunks = 1}};
    CHECK(throws_contract_error([&] { (void)pol.cursor(4); }));
    CHECK(throws_contract_error([&] { (void)pol.size(4); }));
    CHECK(throws_contract_error([&] { (void)pol.at(0, 16); }));
    CHECK(throws_contract_error([&] { (void)ps::zb_h2{{.ranks = 4, .microbatches = 8, .chunks = 1}}.at(3, 24); }));
    CHECK(throws_contract_error([&] { (void)ps::events(pol, 7); }));
    CHECK(throws_contract_error([&] { ps::emit(pol, 4, counting_sink{}); }));
    CHECK(pol.size(3) == 16);
    CHECK(pol.at(0, 15) == ps::event{ps::op::backward, 0, 0, 7, ps::no_peer});
    counting_sink sink;
    ps::emit(pol, sink);
    CHECK(sink.count == 64);
}

TEST_CASE("iteration cursors are self-contained and small") {
    using it_type = ps::iteration<ps::interleaved_1f1b<>>;
    // The inner program cursor (the rank's phases and three unit walkers), shape, options, a
    // 16-event queue and 16 inline counters; the iteration itself is not referenced (it used
    // to be, and the cursor was 1.2 KB). The one generator engine's cursor holds the program
    // and a W walker, 64 bytes more than the warm-up/steady/cool-down cursor it replaced.
    static_assert(sizeof(it_type::cursor_type) <= 384);
    static_assert(sizeof(ps::iteration<ps::dualpipe_v>::cursor_type) <= 448);
    CHECK(sizeof(it_type::cursor_type) <= 384);

    const ps::interleaved_1f1b<> pol{{.ranks = 4, .microbatches = 8, .chunks = 2}};
    const ps::iteration_options overlapped{ps::grad_sync_mode::overlapped, ps::param_gather_mode::after_step,
                                           true, true, true};
    const it_type named{pol, overlapped};
    for (std::uint32_t r = 0; r < 4; ++r) {
        const std::vector<ps::event> expected = all_events(named, r);
        // A cursor of a temporary iteration, used after the temporary is gone.
        auto c = it_type{pol, overlapped}.cursor(r);
        std::vector<ps::event> got;
        for (; !c.done(); c.advance()) got.push_back(c.current());
        CHECK(got == expected);
        // The same through events(): the range is a temporary, its iterator outlives it.
        auto it = ps::events(it_type{pol, overlapped}, r).begin();
        std::vector<ps::event> via_range;
        for (; !(it == ps::cursor_end{}); ++it) via_range.push_back(*it);
        CHECK(via_range == expected);
        CHECK(expected.size() == named.size(r));
    }
}

TEST_CASE("overlapped grad_sync with more chunks than the cursor keeps inline") {
    // 20 chunks: the counters beyond the 16 inline ones live on the heap.
    const ps::looped_bfs<> pol{{.ranks = 2, .microbatches = 3, .chunks = 20}};
    const ps::iteration it{pol, ps::iteration_options{ps::grad_sync_mode::overlapped}};
    CHECK(ps::validate(it));
    for (std::uint32_t r = 0; r < 2; ++r) {
        const std::vector<ps::event> ev = all_events(it, r);
        std::vector<std::uint32_t> last_backward(20, 0);
        std::vector<std::uint32_t> sync_at(20, 0);
        std::uint32_t syncs = 0;
        for (std::uint32_t i = 0; i < ev.size(); ++i) {
            if (ev[i].kind == ps::op::backward) last_backward[ev[i].chunk] = i;
            if (ev[i].kind == ps::op::grad_sync) {
                sync_at[ev[i].chunk] = i;
                ++syncs;
            }
        }
        CHECK(syncs == 20);
        for (std::uint32_t c = 0; c < 20; ++c) {
            // Right after the chunk's last backward and its send_gradient (if any).
            CHECK(sync_at[c] > last_backward[c]);
            CHECK(sync_at[c] <= last_backward[c] + 2);
        }
    }
}

TEST_CASE("simulate_events checks every rank before replaying: a rule violation on one rank does not let a bad peer through") {
    const ps::one_f_one_b<> pol{{.ranks = 2, .microbatches = 2, .chunks = 1}};
    const ps::iteration it{pol};
    std::vector<std::vector<ps::event>> lists{all_events(it, 0), all_events(it, 1)};
    // Rank 0: the optimizer step first (stale_update, which the replay can time).
    const ps::event step = lists[0].back();
    REQUIRE(step.kind == ps::op::optimizer_step);
    lists[0].pop_back();
    lists[0].insert(lists[0].begin(), step);
    {
        ps::discard_events none;
        const auto sim = ps::simulate_events(lists, pol.shape, ps::placement::loop, ps::iteration_cost_model{}, none);
        CHECK(sim.check.code == ps::verdict_code::stale_update);
        CHECK(sim.replayed);
    }
    // Rank 1: a send_gradient to rank 9 of 2 (the replay used to index state_[9]).
    bool corrupted = false;
    for (ps::event& e : lists[1]) {
        if (e.kind == ps::op::send_gradient && !corrupted) {
            e.peer = 9;
            corrupted = true;
        }
    }
    REQUIRE(corrupted);
    ps::discard_events none;
    const auto sim = ps::simulate_events(lists, pol.shape, ps::placement::loop, ps::iteration_cost_model{}, none);
    CHECK(sim.check.code == ps::verdict_code::p2p_wrong_peer);
    CHECK(sim.check.rank == 1);
    CHECK_FALSE(sim.replayed);

    // A receive whose producer stage does not exist, after the same stale update.
    std::vector<std::vector<ps::event>> lists2{lists[0], all_events(it, 1)};
    lists2[1].insert(lists2[1].begin() + 1, ps::event{ps::op::recv_gradient, 0, 1, 0, 0});
    const auto sim2 = ps::simulate_events(lists2, pol.shape, ps::placement::loop, ps::iteration_cost_model{}, none);
    CHECK(sim2.check.code == ps::verdict_code::p2p_wrong_peer);
    CHECK_FALSE(sim2.replayed);
}

TEST_CASE("costs must be finite and >= 0: a clear error, not the unset sentinel or a makespan of 0") {
    const ps::one_f_one_b<> pol{{.ranks = 4, .microbatches = 8, .chunks = 1}};
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    for (const double bad : {-1.0, -1e-300, nan, inf, -inf}) {
        ps::cost_model costs{};
        costs.uniform.forward = bad;
        const ps::simulation sim = ps::simulate(pol, costs);
        CHECK(sim.check.code == ps::verdict_code::invalid_cost);
        CHECK(sim.check.subject == ps::action{0, ps::op::forward, 0});
        CHECK(sim.check.rank == 0);
        CHECK(sim.ranks.empty());
        CHECK_FALSE(sim);
        CHECK(ps::describe(sim.check).find("0F0 at rank 0 index 0 costs") != std::string::npos);
    }
    ps::cost_model latency{};
    latency.p2p_latency = -2.0;
    const ps::simulation sim = ps::simulate(pol, latency);
    CHECK(sim.check.code == ps::verdict_code::invalid_cost);
    CHECK(ps::describe(sim.check) == "invalid_cost: the p2p latency is -2; costs and latencies must be finite and >= 0");

    // A backward cost on one stage only, through per_stage.
    std::vector<ps::stage_costs> stages(4);
    stages[2].backward = nan;
    ps::cost_model per{};
    per.per_stage = stages;
    const ps::simulation s2 = ps::simulate(pol, per);
    CHECK(s2.check.code == ps::verdict_code::invalid_cost);
    CHECK(s2.check.subject == ps::action{2, ps::op::backward, 0});
    CHECK(s2.check.rank == 2);
    CHECK(ps::describe(s2.check) == "invalid_cost: 2B0 at rank 2 index 2 costs nan; costs and latencies must be finite and >= 0");

    // A NaN overlapped pair cost is refused, a negative one still means F + B.
    const ps::dualpipe_v dual{{.ranks = 2, .microbatches = 4, .chunks = 2}};
    ps::cost_model fused{};
    fused.uniform.overlapped_forward_backward = nan;
    CHECK(ps::simulate(dual, fused).check.code == ps::verdict_code::invalid_cost);
    fused.uniform.overlapped_forward_backward = -1.0;
    CHECK(ps::simulate(dual, fused));

    // The iteration replay: every duration and transfer.
    ps::iteration_cost_model it_costs{};
    it_costs.loss = -1.0;
    const auto it_sim = ps::simulate(ps::iteration{pol}, it_costs);
    CHECK(it_sim.check.code == ps::verdict_code::invalid_cost);
    CHECK(it_sim.check.subject.kind == ps::op::loss);
    CHECK(it_sim.check.rank == 3);
    CHECK_FALSE(it_sim.replayed);
    ps::iteration_cost_model bandwidth{};
    bandwidth.p2p.bandwidth = -5.0;
    bandwidth.activation_bytes = 1.0;
    CHECK(ps::simulate(ps::iteration{pol}, bandwidth).check.code == ps::verdict_code::invalid_cost);
    ps::iteration_cost_model recompute{};
    recompute.recompute = nan;
    CHECK(ps::simulate(ps::iteration{pol, {ps::grad_sync_mode::at_end, ps::param_gather_mode::none, true}}, recompute)
              .check.code == ps::verdict_code::invalid_cost);
}

TEST_CASE("finite costs whose sums overflow are an error naming the action, never 0, inf or nan") {
    const ps::one_f_one_b<> pol{{.ranks = 4, .microbatches = 8, .chunks = 1}};
    ps::cost_model huge{};
    huge.uniform.forward = 1e308;
    const ps::simulation sim = ps::simulate(pol, huge);
    CHECK(sim.check.code == ps::verdict_code::time_overflow);
    // Rank 0's second forward would end at 2e308.
    CHECK(sim.check.rank == 0);
    CHECK(sim.check.subject == ps::action{0, ps::op::forward, 1});
    CHECK(sim.check.cost == 1e308);
    CHECK(ps::describe(sim.check).find("the forward costs add up") != std::string::npos);

    ps::cost_model both{};
    both.uniform.forward = 5e307;
    both.uniform.backward = 5e307;
    const ps::simulation s2 = ps::simulate(pol, both);
    CHECK(s2.check.code == ps::verdict_code::time_overflow);
    CHECK(s2.ranks.empty());

    // Just below the limit the result is finite and exact.
    ps::cost_model large{};
    large.uniform.forward = 1e306;
    large.uniform.backward = 2e306;
    const ps::simulation s3 = ps::simulate(pol, large);
    REQUIRE(s3);
    CHECK(s3.makespan == doctest::Approx(33e306).epsilon(1e-12));
    CHECK(std::isfinite(s3.bubble_fraction));
    CHECK(s3.bubble_fraction == doctest::Approx(3.0 / 11.0));
    // ranks x makespan overflows here, the bubble fraction must not.
    ps::cost_model near{};
    near.uniform.forward = 1e305;
    near.uniform.backward = 2e305;
    const ps::simulation s4 = ps::simulate(ps::one_f_one_b<>{{.ranks = 64, .microbatches = 2, .chunks = 1}}, near);
    REQUIRE(s4);
    CHECK(std::isfinite(s4.makespan));
    CHECK(s4.bubble_fraction == doctest::Approx(63.0 / 65.0));

    ps::iteration_cost_model it_costs{};
    it_costs.compute = huge;
    const auto it_sim = ps::simulate(ps::iteration{pol}, it_costs);
    CHECK(it_sim.check.code == ps::verdict_code::time_overflow);
    CHECK_FALSE(it_sim.replayed);
}

TEST_CASE("JSON numbers: non-finite values are null, never 0") {
    std::string s;
    ps::detail::append_json_number(s, std::numeric_limits<double>::quiet_NaN());
    s += ',';
    ps::detail::append_json_number(s, std::numeric_limits<double>::infinity());
    s += ',';
    ps::detail::append_json_number(s, 2.5);
    CHECK(s == "null,null,2.5");
}

TEST_CASE("terminal timeline: huge times neither overflow a conversion nor the width") {
    CHECK(ps::detail::timeline_column(1e300, 3.0) == (std::size_t{1} << 50));
    CHECK(ps::detail::timeline_column(std::numeric_limits<double>::quiet_NaN(), 3.0) == 0);
    CHECK(ps::detail::timeline_column(-5.0, 3.0) == 0);
    CHECK(ps::detail::timeline_column(2.0, 3.0) == 6);

    const std::vector<ps::timed_action> records{
        {0, 0, ps::action{0, ps::op::forward, 0}, 0.0, 1e300},
        {1, 0, ps::action{1, ps::op::forward, 0}, 1e300, 1.5e300},
    };
    ps::terminal_options unlimited{};
    unlimited.max_width = 0;
    const std::string text = ps::render_terminal_timeline(records, unlimited);
    CHECK(text.rfind("(scaled to fit ", 0) == 0);
    std::size_t longest = 0;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = text.find('\n', start);
        longest = std::max(longest, end - start);
        start = end + 1;
    }
    CHECK(longest <= ps::detail::max_timeline_columns + 10);
    const std::string narrow = ps::render_terminal_timeline(records, {});
    CHECK(narrow.find("rank 1 |") != std::string::npos);

    const std::vector<ps::timed_action> broken{{0, 0, ps::action{0, ps::op::forward, 0}, 0.0,
                                                std::numeric_limits<double>::infinity()}};
    CHECK(ps::render_terminal_timeline(broken, {}) == "(timeline not drawn: a time is not finite)\n");
}

TEST_CASE("the version header matches its parts") {
    const std::string parts = std::to_string(ps::version_major) + "." + std::to_string(ps::version_minor) + "." +
                              std::to_string(ps::version_patch);
    CHECK(parts == ps::version_string);
}
