// Direct tests of the shared generator internals (detail/): each is also exercised through the
// policies, but these pin down their own contracts.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/detail/enum_table.hpp>
#include <pipesched/detail/program.hpp>
#include <pipesched/io/detail/timeline_layout.hpp>

#include <vector>

namespace ps = pipesched;

namespace {

// enum_table: one row per enumerator in order; lookups index it, "?" outside the enum.
enum class colour : std::uint8_t { red, green, blue };
inline constexpr auto colour_names =
    ps::detail::enum_table<colour::blue>({{colour::red, "red"}, {colour::green, "green"}, {colour::blue, "blue"}});
PIPESCHED_VERIFY(ps::detail::name_in(colour_names, colour::green) == "green");
PIPESCHED_VERIFY(ps::detail::name_in(colour_names, static_cast<colour>(3)) == "?");
PIPESCHED_VERIFY(ps::detail::lists_enum(colour_names, colour::blue));
PIPESCHED_VERIFY(!ps::detail::lists_enum(colour_names, colour::green)); // a row too many
PIPESCHED_VERIFY(!ps::detail::lists_enum(std::array<ps::detail::enum_row<colour>, 2>{{{colour::green, "green"}, {colour::red, "red"}}}, colour::green));
constexpr bool finds_blue() {
    colour c = colour::red;
    return ps::detail::find_key(colour_names, std::string_view{"blue"}, c) && c == colour::blue &&
           !ps::detail::find_key(colour_names, std::string_view{"Blue"}, c) && c == colour::blue;
}
PIPESCHED_VERIFY(finds_blue());
PIPESCHED_VERIFY(ps::detail::lookup(ps::detail::enum_table<colour::green, int>({{colour::red, 7}, {colour::green, 8}}), colour::green, -1) == 8);

// make_event packs the fields into one 64-bit value; it must equal the aggregate.
constexpr bool make_event_matches_aggregate() {
    for (const std::uint32_t rank : {0u, 1u, 255u, 65534u}) {
        for (const std::uint32_t chunk : {0u, 3u, 255u}) {
            for (const std::uint32_t mb : {0u, 7u, 65535u}) {
                for (const ps::op o : {ps::op::forward, ps::op::backward_weight, ps::op::param_gather}) {
                    const ps::event packed = ps::detail::make_event(o, rank, {chunk, mb});
                    const ps::event plain{o, static_cast<std::uint8_t>(chunk), static_cast<std::uint16_t>(rank),
                                          static_cast<std::uint16_t>(mb), ps::no_peer};
                    if (!(packed == plain)) return false;
                }
            }
        }
    }
    return true;
}
PIPESCHED_VERIFY(make_event_matches_aggregate());

// A phase program leaves out phases that repeat zero times and keeps the letters in order.
constexpr bool phase_program_builds() {
    ps::detail::phase_program prog{};
    prog.then(2, "F").then(0, "FI").then(3, "FIW");
    return prog.phase_count() == 2 && prog.size() == 2 + 9 && prog.phase(0).repeats == 2 && prog.phase(1).length == 3 &&
           ps::detail::letter_op(prog.phase(1).letters[2]) == ps::op::backward_weight;
}
PIPESCHED_VERIFY(phase_program_builds());

// The warm-up / steady / cool-down program: a fused backward is one B, a split one I then W
// (I and W walk the same unit sequence, B and I share one stream).
constexpr bool phased_program_builds() {
    const ps::detail::phase_program fused = ps::detail::phased_program(5, 2, ps::backward_kind::full);
    const ps::detail::phase_program split = ps::detail::phased_program(5, 2, ps::backward_kind::split);
    const ps::detail::phase_program all_forward = ps::detail::phased_program(4, 4, ps::backward_kind::full);
    return fused.size() == 10 && fused.phase_count() == 3 && fused.phase(1).length == 2 &&
           ps::detail::letter_op(fused.phase(2).letters[0]) == ps::op::backward && split.size() == 15 &&
           split.phase(1).length == 3 && ps::detail::letter_op(split.phase(2).letters[0]) == ps::op::backward_input &&
           all_forward.phase_count() == 2 && all_forward.size() == 8 &&
           ps::detail::letter_stream(ps::detail::letter::B) == ps::detail::letter_stream(ps::detail::letter::I) &&
           ps::detail::letter_stream(ps::detail::letter::W) != ps::detail::letter_stream(ps::detail::letter::I);
}
PIPESCHED_VERIFY(phased_program_builds());


// A slot is an op and a stream in one byte; the loop schedules' letters are slots too.
PIPESCHED_VERIFY(ps::detail::slot(ps::op::backward_input, 1) == ps::detail::letter::I &&
                 ps::detail::letter_op(ps::detail::slot(ps::op::overlap_f_b, 14)) == ps::op::overlap_f_b &&
                 ps::detail::letter_stream(ps::detail::slot(ps::op::overlap_f_b, 14)) == 14);

// The phantom cut on counter streams (stream s's k-th unit has microbatch k), limit 2:
// 5 x F0 keeps F0 0, 1; 3 x (F1 F0) keeps F1 0, 1 and no F0 (its counter is at 5), so it
// becomes 2 x F1; 4 x F1 (microbatches 3..6) goes. A phase splits where a stream reaches the
// limit inside it: after 1 x F0, 3 x (F1 F0) at limit 3 keeps both for two repeats, then F1.
constexpr bool phantom_cut_programs() {
    using namespace ps::detail;
    constexpr letter f0 = slot(ps::op::forward, 0);
    constexpr letter f1 = slot(ps::op::forward, 1);
    basic_program<4, 2> prog{};
    prog.then(5, {f0}).then(3, {f1, f0}).then(4, {f1});
    const basic_program<6, 2> cut = without_phantoms<2>(prog, 2);
    const bool first = prog.size() == 15 && cut.size() == 4 && cut.phase_count() == 2 && cut.phase(0).repeats == 2 &&
                       cut.phase(1).repeats == 2 && cut.phase(1).length == 1 && cut.phase(1).letters[0] == f1;
    basic_program<4, 2> staggered{};
    staggered.then(1, {f0}).then(3, {f1, f0});
    const basic_program<6, 2> split = without_phantoms<2>(staggered, 3);
    const bool second = split.size() == 1 + 2 * 2 + 1 && split.phase_count() == 3 && split.phase(1).repeats == 2 &&
                        split.phase(1).length == 2 && split.phase(2).repeats == 1 && split.phase(2).letters[0] == f1;
    return first && second && without_phantoms<2>(prog, 100).size() == 15;
}
PIPESCHED_VERIFY(phantom_cut_programs());


TEST_CASE("detail: the phantom cut refuses a pattern it cannot cut by counting") {
    using namespace ps::detail;
    const auto refused = [](auto&& f) {
        try {
            f();
        } catch (const ps::contract_error&) {
            return true;
        }
        return false;
    };
    constexpr letter f0 = slot(ps::op::forward, 0);
    basic_program<2, 2> twice{};
    twice.then(3, {f0, f0}); // one stream twice in a pattern: its kept units are no run of repeats
    CHECK(refused([&] { (void)without_phantoms<1>(twice, 2); }));
    basic_program<2, 2> marker{};
    marker.then(3, {slot(ps::op::overlap_f_b, no_stream)}); // not a counter
    CHECK(refused([&] { (void)without_phantoms<1>(marker, 2); }));
    basic_program<2, 2> fine{};
    fine.then(3, {f0});
    CHECK(without_phantoms<1>(fine, 2).size() == 2);
}

TEST_CASE("detail: timeline_layout reads stage owners and chunks off the records") {
    // Interleaved p = 2, v = 2: rank 0 runs stages 0 and 2, rank 1 stages 1 and 3.
    std::vector<ps::timed_action> records;
    const ps::interleaved_1f1b<> pol{{.ranks = 2, .microbatches = 2, .chunks = 2}};
    struct collect {
        std::vector<ps::timed_action>* out;
        void push(const ps::timed_action& t) { out->push_back(t); }
    } sink{&records};
    REQUIRE(ps::simulate(pol, ps::cost_model{}, sink));
    const ps::detail::timeline_layout layout = ps::detail::layout_of(records);
    CHECK(layout.ranks == 2);
    CHECK(layout.stages == 4);
    CHECK(layout.microbatches == 2);
    CHECK(layout.chunks == 2);
    const std::vector<std::uint32_t> owners(layout.placement.owners().begin(), layout.placement.owners().end());
    CHECK(owners == std::vector<std::uint32_t>{0, 1, 0, 1});
    CHECK(layout.chunk_of(2) == 1);
    CHECK(layout.chunk_of(1) == 0);
    // Per rank, in the order the rank ran them.
    const std::vector<std::size_t> order = ps::detail::rank_time_order(records);
    REQUIRE(order.size() == records.size());
    for (std::size_t k = 1; k < order.size(); ++k) {
        const auto& a = records[order[k - 1]];
        const auto& b = records[order[k]];
        CHECK((a.rank < b.rank || (a.rank == b.rank && a.start <= b.start)));
    }
}

} // namespace
