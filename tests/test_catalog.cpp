// catalog: run-time choice of a policy by name.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/catalog.hpp>

#include <cstdint>
#include <type_traits>

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

// The catalog's consistency checks (static_asserts in catalog.hpp), again at run time.
PIPESCHED_VERIFY(ps::detail::ids_follow_positions(ps::schedules));
PIPESCHED_VERIFY(ps::detail::names_unambiguous(ps::schedules));
PIPESCHED_VERIFY(ps::detail::placements_match_chunks(ps::schedules));
PIPESCHED_VERIFY(ps::detail::backward_flags_match(ps::detail::catalog{}));
PIPESCHED_VERIFY(ps::info(ps::schedule_id::zbv).layout == ps::placement::v_shape);
PIPESCHED_VERIFY(ps::info(ps::schedule_id::interleaved_1f1b).chunks == ps::chunk_rule::any);
// A name that means several chunks runs 2 when the caller does not say, as the V schedules do;
// the single-chunk ones run 1.
PIPESCHED_VERIFY(ps::default_chunks(ps::info(ps::schedule_id::interleaved_1f1b).chunks) == 2);
PIPESCHED_VERIFY(ps::default_chunks(ps::info(ps::schedule_id::interleaved_zero_bubble).chunks) == 2);
PIPESCHED_VERIFY(ps::default_chunks(ps::info(ps::schedule_id::looped_bfs).chunks) == 2);
PIPESCHED_VERIFY(ps::default_chunks(ps::info(ps::schedule_id::zbv).chunks) == 2);
PIPESCHED_VERIFY(ps::default_chunks(ps::info(ps::schedule_id::one_f_one_b).chunks) == 1);
PIPESCHED_VERIFY(ps::default_chunks(ps::info(ps::schedule_id::zb_h2).chunks) == 1);
PIPESCHED_VERIFY(ps::find_schedule("zb-v") == ps::schedule_id::zbv);
PIPESCHED_VERIFY(ps::find_schedule("DualPipeV") == ps::schedule_id::dualpipe_v);
PIPESCHED_VERIFY(ps::find_schedule("ZBVMin") == ps::schedule_id::v_min);

PIPESCHED_VERIFY(ps::detail::split_aliases("bfs breadthfirst")[1] == "breadthfirst");
PIPESCHED_VERIFY(ps::detail::split_aliases("bfs")[1].empty());
PIPESCHED_VERIFY(ps::detail::split_aliases("a b c d e")[3] == "d e"); // refused by make_info

// ... and they fail on lists out of step: swapped positions, a spelling two schedules share,
// a V placement with any chunk count, a fixed policy that claims to take --backward.
constexpr ps::schedule_info gpipe_info = ps::info(ps::schedule_id::gpipe);
constexpr ps::schedule_info one_f_one_b_info = ps::info(ps::schedule_id::one_f_one_b);
constexpr ps::schedule_info zbv_info = ps::info(ps::schedule_id::zbv);
PIPESCHED_VERIFY(!ps::detail::ids_follow_positions(std::array{one_f_one_b_info, gpipe_info}));
PIPESCHED_VERIFY(ps::detail::ids_follow_positions(std::array{gpipe_info, one_f_one_b_info}));
constexpr ps::schedule_info clashing{ps::schedule_id::one_f_one_b, "my_schedule", "", {"Pipe-Dream_Flush", "", ""},
                                     false};
PIPESCHED_VERIFY(!ps::detail::names_unambiguous(std::array{gpipe_info, one_f_one_b_info, clashing}));
constexpr ps::schedule_info loose_v{ps::schedule_id::zbv, "loose_v", "", {"", "", ""}, true, true,
                                    ps::placement::v_shape, ps::chunk_rule::any};
PIPESCHED_VERIFY(!ps::detail::placements_match_chunks(std::array{zbv_info, loose_v}));
PIPESCHED_VERIFY(ps::detail::placements_match_chunks(std::array{gpipe_info, zbv_info}));
struct fixed_gpipe : ps::gpipe<> { // not a template, yet claims to take --backward
    using ps::gpipe<>::gpipe;
};
PIPESCHED_VERIFY(!ps::detail::backward_flags_match(
    ps::detail::catalog_list<ps::detail::catalog_entry<ps::schedule_id::gpipe, fixed_gpipe>>{}));

TEST_CASE("catalog: traits agree with the policies they describe") {
    for (const ps::schedule_info& s : ps::schedules) {
        INFO(s.name);
        const std::uint32_t v = ps::default_chunks(s.chunks);
        CHECK(v == (s.multi_chunk ? 2u : 1u)); // every multi-chunk schedule defaults to 2
        const ps::schedule_options opts{{4, 8, v}, 0, ps::backward_kind::full};
        ps::with_schedule(s.id, opts, [&](const auto& pol) {
            using P = std::remove_cvref_t<decltype(pol)>;
            CHECK(P::name == s.name);
            CHECK(P::layout == s.layout);
            CHECK(pol.check().ok);
        });
        // The chunk rule is what check() enforces.
        for (const std::uint32_t other : {1u, 2u, 3u}) {
            const bool accepted = ps::with_schedule(s.id, {{4, 8, other}, 0, ps::backward_kind::full},
                                                    [](const auto& pol) { return pol.check().ok; });
            const bool expected = s.chunks == ps::chunk_rule::any ||
                                  other == ps::default_chunks(s.chunks);
            CHECK(accepted == expected);
        }
    }
    // An id outside the enum builds the first schedule instead of reading past the list.
    const auto name = ps::with_schedule(static_cast<ps::schedule_id>(200), {},
                                        [](const auto& pol) { return pol.name; });
    CHECK(name == "gpipe");
}

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
