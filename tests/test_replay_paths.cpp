// The fast paths of the replays and what they fall back to give the same answers:
//   - simulate(): results in flight sit in per-(stage, kind) rings, and in a hash table when
//     a ring slot is taken (an order that runs ahead of its consumer, or any explicit order);
//   - simulate() without a timeline: a first try with validate()'s structural checks inside
//     the replay, else the full path (the structural pass, then the replay);
//   - validate(iteration): one replay (the iteration replay) when everything passes, else the
//     step-by-step checks with the compute projection's own replay; for an iteration<P> the
//     library built, first a shortcut: P's compute valid and every channel in order;
//   - simulate(iteration) without a timeline: the rules in one pass and the timed replay as
//     the deadlock check, else the full path (the same as with a timeline).
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/pipesched.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace ps = pipesched;
using pipesched_test::for_each_accepted_schedule;
using pipesched_test::identical;
using pipesched_test::recording_events;
using pipesched_test::recording_timeline;

bool same_records(const std::vector<ps::timed_action>& a, const std::vector<ps::timed_action>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].rank != b[i].rank || a[i].index != b[i].index || a[i].what != b[i].what ||
            a[i].start != b[i].start || a[i].end != b[i].end) {
            return false;
        }
    }
    return true;
}

/// A simulation with rings of 2^ring_bits slots, its peak of results held, and its timeline.
struct ring_run {
    ps::simulation out;
    std::size_t peak = 0;
    std::vector<ps::timed_action> timeline;
};
template <class Source>
ring_run summary_with_rings(const Source& src, const ps::cost_model& costs, std::uint32_t ring_bits) {
    ps::discard_timeline none;
    ps::detail::simulator<Source, ps::discard_timeline> sim{src, costs, none, ring_bits};
    ring_run run;
    run.out = sim.run();
    run.peak = sim.peak_pending();
    return run;
}
template <class Source>
ring_run timeline_with_rings(const Source& src, const ps::cost_model& costs, std::uint32_t ring_bits) {
    recording_timeline sink;
    ps::detail::simulator<Source, recording_timeline> sim{src, costs, sink, ring_bits};
    ring_run run;
    run.out = sim.run();
    run.peak = sim.peak_pending();
    run.timeline = std::move(sink.records);
    return run;
}

std::vector<ps::cost_model> cost_models() {
    std::vector<ps::cost_model> models(3);
    models[1].uniform = {1.5, 2.5, 1.25, 0.75, -1.0, 3.0, 1.0};
    models[1].p2p_latency = 0.25;
    models[2].uniform = {1.0, 2.0, 1.0, 2.0, 2.5};
    models[2].fill_with_weight = true;
    return models;
}

} // namespace

TEST_CASE("in-flight results: rings and the overflow table give the same numbers, for every policy") {
    const std::vector<ps::cost_model> models = cost_models();
    std::size_t compared = 0;
    // m = 70: more microbatches than ring slots.
    for_each_accepted_schedule({2u, 3u, 4u}, {3u, 8u, 70u}, [&](const auto& pol) {
        using source = ps::detail::policy_actions<std::remove_cvref_t<decltype(pol)>>;
        const source src{pol};
        for (const ps::cost_model& costs : models) {
            // ring_bits 0: one slot per (stage, kind), nearly everything overflows.
            const auto all_overflow = summary_with_rings(src, costs, 0);
            const auto rings = summary_with_rings(src, costs, ps::detail::in_flight_results::default_ring_bits);
            REQUIRE(rings.out);
            CHECK(identical(all_overflow.out, rings.out));
            CHECK(all_overflow.peak == rings.peak);
            CHECK(identical(rings.out, ps::simulate(pol, costs)));
            const auto t0 = timeline_with_rings(src, costs, 0);
            const auto t6 = timeline_with_rings(src, costs, ps::detail::in_flight_results::default_ring_bits);
            CHECK(identical(t0.out, rings.out));
            CHECK(identical(t6.out, rings.out));
            CHECK(same_records(t0.timeline, t6.timeline));
            ++compared;
        }
    });
    CHECK(compared > 300);
}

TEST_CASE("in-flight results: an explicit order that reads its inputs in reverse, by hand") {
    // Two ranks, two stages, m = 100. Rank 0 runs F0..F99 then B0..B99; rank 1 runs its F's
    // and B's from microbatch 99 down to 0, so rank 1 waits for F99 while rank 0 has produced
    // far more than a ring holds: most of stage 0's results go to the overflow table.
    const std::uint32_t m = 100;
    std::vector<std::vector<ps::action>> lists(2);
    for (std::uint32_t mb = 0; mb < m; ++mb) lists[0].push_back({0, ps::op::forward, mb});
    for (std::uint32_t mb = 0; mb < m; ++mb) lists[0].push_back({0, ps::op::backward, mb});
    for (std::uint32_t mb = m; mb-- > 0;) lists[1].push_back({1, ps::op::forward, mb});
    for (std::uint32_t mb = m; mb-- > 0;) lists[1].push_back({1, ps::op::backward, mb});
    const ps::cost_model costs{}; // F = 1, B = 2
    recording_timeline timeline;
    const ps::simulation with_timeline = ps::simulate(std::span<const std::vector<ps::action>>{lists}, costs, timeline);
    REQUIRE(with_timeline);
    // Rank 0's F's end at 1..100; rank 1 starts F99 at 100 and runs its 100 F's to 200, then
    // B99..B0 (2 each) to 400. Rank 0's B0 needs rank 1's B0 (ends 400): 400..402, and B1..B99
    // follow back to back (their inputs ended earlier): 400 + 200 = 600.
    CHECK(with_timeline.makespan == 600.0);
    CHECK(with_timeline.ranks[0].busy == 300.0);
    CHECK(with_timeline.ranks[1].first_start == 100.0);
    CHECK(with_timeline.ranks[1].last_end == 400.0);
    CHECK(with_timeline.ranks[0].peak_activations == 100);

    const ps::detail::action_lists src{lists, 2, m};
    for (const ps::cost_model& model : cost_models()) {
        const auto rings = summary_with_rings(src, model, ps::detail::in_flight_results::default_ring_bits);
        const auto all_overflow = summary_with_rings(src, model, 0);
        const auto t6 = timeline_with_rings(src, model, ps::detail::in_flight_results::default_ring_bits);
        const auto t0 = timeline_with_rings(src, model, 0);
        REQUIRE(rings.out);
        CHECK(identical(rings.out, all_overflow.out));
        CHECK(identical(rings.out, t6.out));
        CHECK(identical(rings.out, t0.out));
        CHECK(rings.peak == all_overflow.peak);
        CHECK(same_records(t0.timeline, t6.timeline));
        CHECK(rings.peak >= 64); // rank 0 ran a whole turn ahead
    }
}

namespace {

template <class P>
std::vector<std::vector<ps::event>> iteration_lists(const ps::iteration<P>& it) {
    std::vector<std::vector<ps::event>> lists(it.shape.ranks);
    for (std::uint32_t r = 0; r < it.shape.ranks; ++r) {
        for (auto c = it.cursor(r); !c.done(); c.advance()) lists[r].push_back(c.current());
    }
    return lists;
}

enum class duplicates : bool { no, yes };

/// Calls f() after each neighbour swap and each deletion of one element of every list (and,
/// with duplicates::yes, each duplication of one), undoing each before the next.
template <class T, class F>
void for_each_mutation(std::vector<std::vector<T>>& lists, duplicates with, F&& f) {
    for (auto& list : lists) {
        for (std::size_t i = 0; i < list.size(); ++i) {
            const T here = list[i];
            const auto at = [&] { return list.begin() + static_cast<std::ptrdiff_t>(i); };
            if (i + 1 < list.size()) {
                std::swap(list[i], list[i + 1]);
                f();
                std::swap(list[i], list[i + 1]);
            }
            list.erase(at());
            f();
            list.insert(at(), here);
            if (with == duplicates::yes) {
                list.insert(at(), here);
                f();
                list.erase(at());
            }
        }
    }
}

/// validate_events() (one replay when it can) against the step-by-step reference.
bool same_verdict(const std::vector<std::vector<ps::event>>& lists, ps::shape dims, ps::placement layout,
                  std::string& what) {
    const ps::verdict fast = ps::validate_events(lists, dims, layout);
    const ps::event_lists src{lists, dims, layout};
    const ps::verdict reference = ps::detail::iteration_validator<ps::event_lists>{src}.run_step_by_step();
    what = ps::describe(fast) + " | " + ps::describe(reference);
    return ps::describe(fast) == ps::describe(reference) && fast.code == reference.code &&
           fast.rank == reference.rank && fast.index == reference.index && fast.subject == reference.subject &&
           fast.other_rank == reference.other_rank && fast.cycle_length == reference.cycle_length;
}

/// simulate_events() without a timeline (its first try when the rules pass) against the full
/// path, which a timeline sink takes.
bool same_iteration_simulation(const std::vector<std::vector<ps::event>>& lists, ps::shape dims,
                               ps::placement layout, const ps::iteration_cost_model& costs, bool& replayed) {
    ps::discard_events none;
    recording_events sink;
    const ps::iteration_simulation first = ps::simulate_events(lists, dims, layout, costs, none);
    const ps::iteration_simulation full = ps::simulate_events(lists, dims, layout, costs, sink);
    replayed = first.replayed;
    return identical(first, full);
}

struct fast_path_counts {
    std::size_t valid = 0;
    std::size_t mutated = 0;
    std::size_t invalid = 0;
    std::size_t replayed = 0;
};

// Every accepted schedule at 2 and 3 ranks and the microbatch counts given, and every neighbour
// swap and deletion of its iteration's events: the fast paths' answers against the full paths'.
fast_path_counts check_fast_paths(std::initializer_list<std::uint32_t> microbatches) {
    // validate(iteration): one replay, or the step-by-step checks. simulate(iteration) without
    // a timeline: the rules in one pass and the timed replay as the deadlock check, or the
    // full path (which a timeline sink takes).
    std::vector<ps::iteration_cost_model> models(3);
    models[1].compute.uniform = {1.5, 2.5, 1.25, 0.75};
    models[1].p2p = {0.25, 4.0};
    models[1].activation_bytes = 2.0;
    models[1].data_parallel = {1.0, 2.0};
    models[1].gradient_bytes = 8.0;
    models[1].grad_norm = 0.5;
    models[2].loss = -1.0; // an unusable cost: the replay fails, and so does the first try
    std::size_t valid = 0;
    std::size_t mutated = 0;
    std::size_t invalid = 0;
    std::size_t replayed = 0;
    for_each_accepted_schedule({2u, 3u}, microbatches, [&](const auto& pol) {
        using P = std::remove_cvref_t<decltype(pol)>;
        const ps::iteration<P> it{pol};
        // The library's iterations take the fast paths (else they would be as slow as
        // before) and are valid.
        using source = ps::detail::policy_events<ps::iteration<P>>;
        const source events{it};
        CHECK(ps::detail::iteration_validator<source>{events}.run_one_replay());
        CHECK(ps::detail::iteration_validator<source>{events}.run_one_pass());
        CHECK(ps::validate(it));
        auto lists = iteration_lists(it);
        std::string what;
        const auto compare = [&] {
            CHECK_MESSAGE(same_verdict(lists, pol.shape, P::layout, what), what);
            for (const ps::iteration_cost_model& costs : models) {
                bool ran = false;
                CHECK(same_iteration_simulation(lists, pol.shape, P::layout, costs, ran));
                replayed += ran;
            }
        };
        compare();
        ++valid;
        // Every neighbour swap and deletion: deadlocks, stale updates, misplaced sends...
        for_each_mutation(lists, duplicates::no, [&] {
            compare();
            invalid += !ps::validate_events(lists, pol.shape, P::layout);
            ++mutated;
        });
    });
    return {valid, mutated, invalid, replayed};
}

} // namespace

TEST_CASE("validate(iteration) and simulate(iteration): the fast paths and the full paths, the same answers (m = 2)") {
    const fast_path_counts n = check_fast_paths({2u});
    CHECK(n.valid > 30);
    CHECK(n.mutated > 2000);
    CHECK(n.invalid > 1000); // the mutations reach the failure paths, not only valid orders
    CHECK(n.replayed > 1000); // replays ran, valid or with a rule violation they can time
}

// Most of the time (the longer lists of m = 5): run by ctest as pipesched_tests.large_grids in
// optimised builds (tests/CMakeLists.txt), not under the sanitizers' -O0.
TEST_CASE("validate(iteration) and simulate(iteration): the fast paths and the full paths, the same answers (m = 5)" *
          doctest::test_suite("large grids") * doctest::skip()) {
    const fast_path_counts n = check_fast_paths({5u});
    CHECK(n.valid > 30);
    CHECK(n.mutated > 4000);
    CHECK(n.invalid > 1000);
    CHECK(n.replayed > 1000);
}

TEST_CASE("validate(iteration) in one walk: the compute rules on the unit flags, against the step-by-step checks") {
    // The one walk checks the compute actions on its own unit flags (F once; B or I once after
    // the F; W once after an I; an overlapped pair's F, then a B or I of another unit) instead
    // of the compute projection's table. Each compute event duplicated, retyped as each other
    // compute kind, or with an overlap marker put before it: the same verdict as step by step.
    std::size_t mutated = 0;
    std::size_t invalid = 0;
    const ps::op kinds[] = {ps::op::forward, ps::op::backward, ps::op::backward_input, ps::op::backward_weight};
    for_each_accepted_schedule({2u, 3u}, {2u, 3u}, [&](const auto& pol) {
        using P = std::remove_cvref_t<decltype(pol)>;
        auto lists = iteration_lists(ps::iteration<P>{pol});
        std::string what;
        const auto compare = [&] {
            CHECK_MESSAGE(same_verdict(lists, pol.shape, P::layout, what), what);
            invalid += !ps::validate_events(lists, pol.shape, P::layout);
            ++mutated;
        };
        for (auto& list : lists) {
            for (std::size_t i = 0; i < list.size(); ++i) {
                const ps::event here = list[i];
                if (!ps::is_compute(here.kind)) continue;
                const auto at = list.begin() + static_cast<std::ptrdiff_t>(i);
                list.insert(at, here);
                compare();
                list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
                for (const ps::op kind : kinds) {
                    if (kind == here.kind) continue;
                    list[i].kind = kind;
                    compare();
                }
                list[i] = here;
                list.insert(list.begin() + static_cast<std::ptrdiff_t>(i),
                            ps::event{ps::op::overlap_f_b, 0, here.rank, 0, ps::no_peer});
                compare();
                list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
            }
        }
    });
    CHECK(mutated > 2000);
    CHECK(invalid * 10 > mutated * 9); // nearly all of them break a rule
}

TEST_CASE("validate(iteration) in one walk: of rule violations on several ranks, the first in rank order") {
    // The one walk checks each event when the replay reaches it, and the replay runs the last
    // rank's first events long before the first rank's last: a violation at the start of the
    // last rank is met first, the documented answer is the one on rank 0.
    std::size_t cases = 0;
    for_each_accepted_schedule({2u, 3u}, {2u, 5u}, [&](const auto& pol) {
        using P = std::remove_cvref_t<decltype(pol)>;
        auto lists = iteration_lists(ps::iteration<P>{pol});
        const auto first_of = [](const std::vector<ps::event>& list, ps::op kind) {
            std::size_t i = 0;
            while (i < list.size() && list[i].kind != kind) ++i;
            return i;
        };
        auto& first = lists.front();
        auto& last = lists.back();
        const std::size_t sync = first_of(first, ps::op::grad_sync);
        const std::size_t step = first_of(last, ps::op::optimizer_step);
        REQUIRE(sync < first.size());
        REQUIRE(step < last.size());
        // Rank 0: a grad_sync after its optimizer step (a stale update near its end); the last
        // rank: its optimizer step first (one at index 0).
        const ps::event moved = first[sync];
        first.erase(first.begin() + static_cast<std::ptrdiff_t>(sync));
        first.push_back(moved);
        const ps::event update = last[step];
        last.erase(last.begin() + static_cast<std::ptrdiff_t>(step));
        last.insert(last.begin(), update);

        const ps::event_lists src{lists, pol.shape, P::layout};
        CHECK(ps::detail::iteration_validator<ps::event_lists>{src}.run_one_replay()); // the one walk answers
        const ps::verdict v = ps::validate_events(lists, pol.shape, P::layout);
        CHECK(v.code == ps::verdict_code::stale_update);
        CHECK(v.rank == 0);
        std::string what;
        CHECK_MESSAGE(same_verdict(lists, pol.shape, P::layout, what), what);
        ++cases;
    });
    CHECK(cases > 40);
}


namespace {

struct action_schedule {
    std::vector<std::vector<ps::action>> lists;
    std::uint32_t stages = 0;
    std::uint32_t microbatches = 0;
};

/// simulate()'s first try (no timeline) against its full path (a timeline sink takes it).
bool same_simulation(const action_schedule& s, const ps::cost_model& costs, bool& took_first_try) {
    const ps::detail::action_lists src{s.lists, s.stages, s.microbatches};
    ps::discard_timeline none;
    ps::detail::simulator<ps::detail::action_lists, ps::discard_timeline> summary{src, costs, none};
    const ps::simulation first = summary.run();
    took_first_try = summary.took_checked_replay();
    recording_timeline sink;
    const ps::simulation full = ps::detail::simulator<ps::detail::action_lists, recording_timeline>{src, costs, sink}.run();
    return identical(first, full);
}

} // namespace

TEST_CASE("simulate(): the first try (checks inside the replay) and the full path, the same answers") {
    std::vector<action_schedule> schedules;
    for_each_accepted_schedule({2u, 3u}, {2u, 5u}, [&](const auto& pol) {
        const ps::detail::policy_actions<std::remove_cvref_t<decltype(pol)>> src{pol};
        action_schedule s{{}, src.stages(), src.microbatches()};
        for (std::uint32_t r = 0; r < src.ranks(); ++r) {
            s.lists.emplace_back();
            for (auto c = src.cursor(r); !c.done(); c.advance()) s.lists.back().push_back(c.current());
        }
        schedules.push_back(std::move(s));
    });
    std::vector<ps::cost_model> models = cost_models(); // the third fills with W: no first try
    models.push_back({});
    models.back().uniform.backward = -1.0; // an unusable cost found during the replay
    models.back().uniform.backward_input = -1.0;
    std::size_t first_tries = 0;
    std::size_t invalid = 0;
    std::size_t compared = 0;
    const auto compare = [&](const action_schedule& s) {
        const ps::detail::action_lists src{s.lists, s.stages, s.microbatches};
        const bool valid = static_cast<bool>(ps::validate_actions(src));
        invalid += !valid;
        for (std::size_t k = 0; k < models.size(); ++k) {
            bool took = false;
            CHECK(same_simulation(s, models[k], took));
            // The first try succeeds exactly for a valid schedule whose costs all work.
            CHECK(took == (valid && k < 2));
            first_tries += took;
            ++compared;
        }
    };
    for (action_schedule& s : schedules) {
        compare(s);
        // Deadlocks, missing and duplicate actions, backwards before their forwards, broken
        // overlapped pairs.
        for_each_mutation(s.lists, duplicates::yes, [&] { compare(s); });
        // Mixed backwards, which no swap, deletion or duplicate makes: one B, I or W retyped as
        // another of the three (F I W -> F B W, F I B, F I I, ...; F B -> F I, F W), or a
        // retyped copy right after it (F B -> F B I, F B W; F I W -> F I B W, ...).
        const auto is_backward = [](ps::op k) {
            return k == ps::op::backward || k == ps::op::backward_input || k == ps::op::backward_weight;
        };
        for (std::vector<ps::action>& list : s.lists) {
            for (std::size_t j = 0; j < list.size(); ++j) {
                const ps::action a = list[j];
                if (!is_backward(a.kind)) continue;
                for (const ps::op other : {ps::op::backward, ps::op::backward_input, ps::op::backward_weight}) {
                    if (other == a.kind) continue;
                    list[j].kind = other;
                    compare(s);
                    list[j].kind = a.kind;
                    ps::action copy = a;
                    copy.kind = other;
                    list.insert(list.begin() + static_cast<std::ptrdiff_t>(j) + 1, copy);
                    compare(s);
                    list.erase(list.begin() + static_cast<std::ptrdiff_t>(j) + 1);
                }
            }
        }
    }
    CHECK(schedules.size() > 40);
    CHECK(invalid > 5000);
    CHECK(first_tries > 1000);
    CHECK(compared > 20000);
}

namespace {

/// A user's policy: per-rank compute events held by the caller, so that a test can change
/// them between calls. iteration<> wraps it like any policy; validate(iteration) then takes
/// its shortcut (valid_by_construction) or the full checks.
template <ps::placement Layout>
struct held_events_policy {
    static constexpr std::string_view name = "held";
    static constexpr ps::placement layout = Layout;
    ps::shape shape{};
    const std::vector<std::vector<ps::event>>* lists = nullptr;

    [[nodiscard]] constexpr ps::shape_check check() const noexcept { return ps::check_common(shape); }
    [[nodiscard]] constexpr std::size_t size(std::uint32_t rank) const { return (*lists)[rank].size(); }
    [[nodiscard]] constexpr ps::detail::list_cursor<ps::event> cursor(std::uint32_t rank) const {
        return ps::detail::list_cursor<ps::event>{(*lists)[rank]};
    }
};

bool same_fields(const ps::verdict& a, const ps::verdict& b) {
    return a.code == b.code && a.rank == b.rank && a.index == b.index && a.subject == b.subject &&
           a.other_rank == b.other_rank && a.cycle_length == b.cycle_length && a.cycle == b.cycle;
}

/// validate(iteration) against the step-by-step checks of the events the iteration produces.
template <class P>
bool shortcut_agrees(const ps::iteration<P>& it, std::string& what) {
    const auto lists = iteration_lists(it);
    const ps::event_lists src{lists, it.shape, P::layout};
    const ps::verdict reference = ps::detail::iteration_validator<ps::event_lists>{src}.run_step_by_step();
    const ps::verdict v = ps::validate(it);
    what = ps::describe(v) + " | " + ps::describe(reference);
    // The shortcut only ever says valid when the full checks do.
    return same_fields(v, reference) && (!ps::detail::valid_by_construction(it) || reference);
}

std::vector<ps::iteration_options> shortcut_options() {
    std::vector<ps::iteration_options> all(4);
    all[1].grad_sync = ps::grad_sync_mode::overlapped;
    all[1].activation_checkpointing = true;
    all[1].param_gather = ps::param_gather_mode::next_iteration;
    all[2].grad_norm = false;
    all[2].param_gather = ps::param_gather_mode::after_step;
    all[3].p2p = false;
    return all;
}

struct shortcut_counts {
    std::size_t shortcuts = 0;
    std::size_t mutated = 0;
    std::size_t accepted = 0;
    std::size_t order_only = 0;
    std::size_t replayed = 0;
};

shortcut_counts check_shortcut(std::initializer_list<std::uint32_t> microbatches) {
    // iteration<P> places every event but P's own, so once P's compute is valid the only rule
    // left to check is that each channel pairs its sends and receives in the same order
    // (detail::valid_by_construction); simulate(iteration) without a timeline checks the
    // structure only and lets its timed replay find deadlocks, so an input from a stage on
    // the same rank must also come after its producer. The library's schedules take the
    // shortcut with every option (but p2p off, which leaves inputs unreceived); a user's
    // policy, changed by every neighbour swap, deletion and duplication of its compute, gets
    // the full paths' answers: validate's verdict, simulate's whole result (as with a sink).
    const auto options = shortcut_options();
    std::vector<ps::iteration_cost_model> models(3);
    models[1].compute.uniform = {1.5, 2.5, 1.25, 0.75};
    models[1].p2p = {0.25, 4.0};
    models[1].data_parallel = {1.0, 2.0};
    models[2].loss = -1.0; // unusable: the shortcut's replay fails, the full path says why
    std::size_t shortcuts = 0;
    std::size_t mutated = 0;
    std::size_t accepted = 0;
    std::size_t order_only = 0;
    std::size_t replayed = 0;
    for_each_accepted_schedule({1u, 2u, 3u}, microbatches, [&](const auto& pol) {
        using P = std::remove_cvref_t<decltype(pol)>;
        std::string what;
        for (const ps::iteration_options& o : options) {
            const ps::iteration<P> it{pol, o};
            const bool expected = o.p2p || pol.shape.ranks == 1;
            CHECK(ps::detail::valid_by_construction(it) == expected);
            CHECK(ps::detail::valid_by_construction(it, ps::detail::without_replay) == expected);
            CHECK_MESSAGE(shortcut_agrees(it, what), what);
            shortcuts += expected;
        }
        std::vector<std::vector<ps::event>> lists(pol.shape.ranks);
        for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
            for (const ps::event e : ps::events(pol, r)) lists[r].push_back(e);
        }
        const held_events_policy<P::layout> held{pol.shape, &lists};
        for_each_mutation(lists, duplicates::yes, [&] {
            for (const ps::iteration_options& o : {options[0], options[1]}) {
                const ps::iteration<held_events_policy<P::layout>> it{held, o};
                CHECK_MESSAGE(shortcut_agrees(it, what), what);
                const bool shortcut = ps::detail::valid_by_construction(it);
                accepted += shortcut;
                order_only += !shortcut && ps::validate(held);
                ++mutated;
                for (const ps::iteration_cost_model& costs : models) {
                    recording_events sink;
                    const ps::iteration_simulation first = ps::simulate(it, costs);
                    CHECK(identical(first, ps::simulate(it, costs, sink)));
                    replayed += first.replayed;
                }
            }
        });
    });
    return {shortcuts, mutated, accepted, order_only, replayed};
}

} // namespace

TEST_CASE("validate(iteration) and simulate(iteration): the shortcut for the library's iterations, against the full paths (m = 2)") {
    const shortcut_counts n = check_shortcut({2u});
    CHECK(n.shortcuts > 150);
    CHECK(n.mutated > 4000);
    CHECK(n.accepted > 500);   // swaps of independent actions keep the order valid
    CHECK(n.order_only > 250); // valid compute whose channels pair up in another order
    CHECK(n.replayed > 1000);
}

// Most of the time (the longer lists of m = 5): run by ctest as pipesched_tests.large_grids in
// optimised builds (tests/CMakeLists.txt), not under the sanitizers' -O0.
TEST_CASE("validate(iteration) and simulate(iteration): the shortcut for the library's iterations, against the full paths (m = 5)" *
          doctest::test_suite("large grids") * doctest::skip()) {
    const shortcut_counts n = check_shortcut({5u});
    CHECK(n.shortcuts > 150);
    CHECK(n.mutated > 10000);
    CHECK(n.accepted > 1000);
    CHECK(n.order_only > 500);
    CHECK(n.replayed > 2000);
}

TEST_CASE("validate(iteration): valid compute, channels in two orders (by hand)") {
    // Two ranks, one chunk, two microbatches. Rank 0 runs F0 F1 B0 B1, rank 1 F1 F0 B1 B0:
    // valid compute (rank 1's F1 waits for rank 0's F1, which follows F0), but rank 0 sends
    // the activations of microbatches 0, 1 and rank 1 receives 1, 0: NCCL would pair rank 0's
    // first send (microbatch 0) with rank 1's first receive (microbatch 1).
    using ps::op;
    const auto e = [](op kind, std::uint16_t rank, std::uint16_t mb) { return ps::event{kind, 0, rank, mb, ps::no_peer}; };
    const std::vector<std::vector<ps::event>> lists{
        {e(op::forward, 0, 0), e(op::forward, 0, 1), e(op::backward, 0, 0), e(op::backward, 0, 1)},
        {e(op::forward, 1, 1), e(op::forward, 1, 0), e(op::backward, 1, 1), e(op::backward, 1, 0)}};
    const held_events_policy<ps::placement::loop> held{{.ranks = 2, .microbatches = 2, .chunks = 1}, &lists};
    CHECK(ps::validate(held));
    const ps::iteration it{held};
    {   // the channel check itself says no, on validate's walk of the compute
        using P = held_events_policy<ps::placement::loop>;
        ps::detail::iteration_channel_order<P> channels{held};
        CHECK(ps::validate_actions(ps::detail::policy_actions_with_channels<P>{held, channels}));
        CHECK_FALSE(channels.in_order());
    }
    CHECK_FALSE(ps::detail::valid_by_construction(it));
    const ps::verdict v = ps::validate(it);
    CHECK(v.code == ps::verdict_code::p2p_order_mismatch);
    // Step 3 names the first unit by stage, then microbatch: stage 0's microbatch 0, whose
    // activation rank 0 sends first (index 1, after its F) and rank 1 receives second.
    CHECK(v.subject.stage == 0);
    CHECK(v.subject.microbatch == 0);
    std::string what;
    CHECK_MESSAGE(shortcut_agrees(it, what), what);

    // The same compute with rank 1 in rank 0's order: the shortcut says valid.
    const std::vector<std::vector<ps::event>> same_order{
        lists[0], {e(op::forward, 1, 0), e(op::forward, 1, 1), e(op::backward, 1, 0), e(op::backward, 1, 1)}};
    const held_events_policy<ps::placement::loop> aligned{held.shape, &same_order};
    CHECK(ps::detail::valid_by_construction(ps::iteration{aligned}));
    CHECK(ps::validate(ps::iteration{aligned}));

    // Events naming another rank than the list they are in (the two lists swapped): valid
    // compute, since validate(P) takes each stage from its event, but not an iteration (the
    // full checks say out_of_range).
    const std::vector<std::vector<ps::event>> swapped{same_order[1], same_order[0]};
    const held_events_policy<ps::placement::loop> wrong{held.shape, &swapped};
    CHECK(ps::validate(wrong));
    CHECK_FALSE(ps::detail::valid_by_construction(ps::iteration{wrong}));
    CHECK(ps::validate(ps::iteration{wrong}).code == ps::verdict_code::out_of_range);
    CHECK_MESSAGE(shortcut_agrees(ps::iteration{wrong}, what), what);

    // Rank 1 runs F1 and B0 as an overlapped pair, its marker naming microbatch 9: valid
    // compute (a marker has no unit), but every iteration event must be in range.
    std::vector<std::vector<ps::event>> paired = same_order;
    paired[1].insert(paired[1].begin() + 1, ps::event{op::overlap_f_b, 0, 1, 9, ps::no_peer});
    // F0, marker, F1, B0, B1
    const held_events_policy<ps::placement::loop> pair{held.shape, &paired};
    CHECK(ps::validate(pair));
    CHECK_FALSE(ps::detail::valid_by_construction(ps::iteration{pair}));
    CHECK(ps::validate(ps::iteration{pair}).code == ps::verdict_code::out_of_range);
    CHECK_MESSAGE(shortcut_agrees(ps::iteration{pair}, what), what);
    paired[1][1].microbatch = 0;
    CHECK(ps::detail::valid_by_construction(ps::iteration{pair}));
    CHECK_MESSAGE(shortcut_agrees(ps::iteration{wrong}, what), what);
}
