// catalog: run-time choice of a policy by name.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/catalog.hpp>

namespace ps = pipesched;

namespace {

PIPESCHED_VERIFY(ps::find_schedule("GPipe") == ps::schedule_id::gpipe);
PIPESCHED_VERIFY(ps::find_schedule("gpipe") == ps::schedule_id::gpipe);
PIPESCHED_VERIFY(ps::find_schedule("1F1B") == ps::schedule_id::one_f_one_b);
PIPESCHED_VERIFY(ps::find_schedule("one_f_one_b") == ps::schedule_id::one_f_one_b);
PIPESCHED_VERIFY(ps::find_schedule("Interleaved1F1B") == ps::schedule_id::interleaved_1f1b);
PIPESCHED_VERIFY(ps::find_schedule("interleaved-1f1b") == ps::schedule_id::interleaved_1f1b);
PIPESCHED_VERIFY(ps::find_schedule("LOOPEDBFS") == ps::schedule_id::looped_bfs);
PIPESCHED_VERIFY(!ps::find_schedule(""));
PIPESCHED_VERIFY(!ps::find_schedule("1F1"));
PIPESCHED_VERIFY(!ps::find_schedule("1F1BB"));
PIPESCHED_VERIFY(!ps::find_schedule("---"));

TEST_CASE("catalog: names, aliases and dispatch") {
    for (const ps::schedule_info& s : ps::schedules) {
        CHECK(ps::find_schedule(s.name) == s.id);
        if (!s.pytorch_name.empty()) CHECK(ps::find_schedule(s.pytorch_name) == s.id);
        CHECK(&ps::info(s.id) == &s);
    }
    CHECK(ps::find_schedule("Looped_BFS") == ps::schedule_id::looped_bfs);
    // Policies that place I and W themselves say so; the others take a backward_kind.
    for (const ps::schedule_info& s : ps::schedules) {
        const bool templated = ps::with_schedule(s.id, {{4, 8, s.multi_chunk ? 2u : 1u}, 0, ps::backward_kind::full},
                                                 [](const auto& pol) {
                                                     for (ps::event e : ps::events(pol, 0)) {
                                                         if (e.kind == ps::op::backward_input) return false;
                                                     }
                                                     return true;
                                                 });
        INFO(s.name);
        CHECK(templated != s.fixed_backward);
    }
    CHECK_FALSE(ps::find_schedule("ZBVV"));
    CHECK_FALSE(ps::find_schedule("gpipe2"));

    const ps::schedule_options opts{{4, 8, 2}, 4, ps::backward_kind::split};
    const auto name = ps::with_schedule(ps::schedule_id::interleaved_1f1b, opts,
                                        [](const auto& pol) { return pol.name; });
    CHECK(name == "interleaved_1f1b");
    const auto count = ps::with_schedule(ps::schedule_id::interleaved_1f1b, opts,
                                         [](const auto& pol) { return ps::event_count(pol); });
    CHECK(count == 4u * 8 * 2 * 3); // split: F, I, W per unit
    const auto group = ps::with_schedule(ps::schedule_id::interleaved_1f1b, opts,
                                         [](const auto& pol) {
                                             if constexpr (requires { pol.group(); }) return pol.group();
                                             else return 0u;
                                         });
    CHECK(group == 4u);
    const bool rejects = ps::with_schedule(ps::schedule_id::one_f_one_b, opts, [](const auto& pol) {
        return !pol.check();
    });
    CHECK(rejects);
}

} // namespace
