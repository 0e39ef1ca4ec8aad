// any_schedule: a policy chosen at run time gives what the policy it holds gives.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/analysis/simulate_iteration.hpp>
#include <pipesched/analysis/validate_iteration.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/iteration.hpp>
#include <pipesched/catalog.hpp>
#include <pipesched/policies/any_schedule.hpp>
#include <pipesched/pipesched.hpp>

#include <string>
#include <type_traits>
#include <vector>

namespace ps = pipesched;

namespace {

static_assert(ps::schedule_policy<ps::any_schedule<ps::placement::loop>>);
static_assert(ps::schedule_policy<ps::any_schedule<ps::placement::v_shape>>);
// A V policy does not convert to a loop-placed any_schedule (stage numbers would be wrong).
static_assert(std::is_constructible_v<ps::any_schedule<ps::placement::v_shape>, ps::zbv>);
static_assert(!std::is_constructible_v<ps::any_schedule<ps::placement::loop>, ps::zbv>);
static_assert(!std::is_constructible_v<ps::any_schedule<ps::placement::loop>, int>);

template <ps::schedule_policy P>
std::vector<std::vector<ps::event>> all_events(const P& pol) {
    std::vector<std::vector<ps::event>> out(pol.shape.ranks);
    for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
        for (auto c = pol.cursor(r); !c.done(); c.advance()) out[r].push_back(c.current());
    }
    return out;
}

/// The analysis of an any_schedule against the same events held as an explicit_schedule (the
/// concrete policy's analysis equals its materialised form's: test_autoschedule.cpp). Not a
/// template over the policy, so the analysis is compiled per placement only.
template <ps::placement L>
void check_same_analysis(const ps::any_schedule<L>& any, const ps::explicit_schedule<L>& list) {
    CHECK(ps::validate(any) == ps::validate(list));
    CHECK(ps::write_csv(any) == ps::write_csv(list));
    const ps::cost_model costs{};
    CHECK(pipesched_test::identical(ps::simulate(any, costs), ps::simulate(list, costs)));
    const ps::iteration it_any{any};
    const ps::iteration it_list{list};
    CHECK(it_any.check().message == it_list.check().message);
    if (!it_any.check()) return; // DualPipe's two pipelines: refused (test_dualpipe.cpp)
    CHECK(all_events(it_any) == all_events(it_list));
    CHECK(ps::validate(it_any) == ps::validate(it_list));
    const auto sim_any = ps::simulate(it_any, ps::iteration_cost_model{});
    const auto sim_list = ps::simulate(it_list, ps::iteration_cost_model{});
    CHECK(sim_any.makespan == sim_list.makespan);
    CHECK(sim_any.check == sim_list.check);
}

} // namespace

TEST_CASE("any_schedule: every catalogued schedule, a grid of shapes: the same events, verdicts and numbers") {
    std::size_t compared = 0;
    for (const ps::schedule_info& info : ps::schedules) {
        for (const ps::backward_kind backward : {ps::backward_kind::full, ps::backward_kind::split}) {
            for (std::uint32_t p : {1u, 2u, 3u, 4u}) {
                for (std::uint32_t m : {1u, 2u, 5u, 8u}) {
                    ps::schedule_options opts{};
                    opts.shape = {.ranks = p, .microbatches = m, .chunks = info.multi_chunk ? 2u : 1u};
                    opts.backward = backward;
                    CAPTURE(info.name);
                    CAPTURE(p);
                    CAPTURE(m);
                    ps::with_schedule(info.id, opts, [&](const auto& pol) {
                        using P = std::remove_cvref_t<decltype(pol)>;
                        const ps::any_schedule<P::layout> any{pol};
                        CHECK(any.policy_name() == P::name);
                        CHECK(any.shape == pol.shape);
                        CHECK(any.check().ok == pol.check().ok);
                        CHECK(any.check().message == pol.check().message);
                        if (!pol.check()) {
                            CHECK(ps::validate(any).code == ps::verdict_code::invalid_shape);
                            CHECK_THROWS_AS((void)any.cursor(0), ps::contract_error);
                            return;
                        }
                        ++compared;
                        CHECK(all_events(any) == all_events(pol));
                        for (std::uint32_t r = 0; r < p; ++r) CHECK(any.size(r) == pol.size(r));
                        CHECK_THROWS_AS((void)any.cursor(p), ps::contract_error); // rank out of range
                        check_same_analysis(any, ps::explicit_schedule<P::layout>::from_policy(pol));
                    });
                }
            }
        }
    }
    CHECK(compared > 100);
}

TEST_CASE("any_schedule: copies share the policy; an empty one refuses to run") {
    const ps::any_schedule<ps::placement::loop> a{ps::one_f_one_b<>{{.ranks = 4, .microbatches = 8}}};
    const ps::any_schedule<ps::placement::loop> b = a; // NOLINT: the copy is the test
    CHECK(all_events(a) == all_events(b));
    CHECK(all_events(a) == all_events(ps::one_f_one_b<>{{.ranks = 4, .microbatches = 8}}));
    // A cursor keeps its place when copied.
    auto c = a.cursor(1);
    c.advance();
    auto d = c;
    d.advance();
    c.advance();
    CHECK(c.current() == d.current());

    const ps::any_schedule<ps::placement::loop> empty{};
    CHECK_FALSE(empty.check());
    CHECK(empty.check().message == std::string_view{"an empty any_schedule holds no policy"});
    CHECK(ps::validate(empty).code == ps::verdict_code::invalid_shape);
    CHECK_THROWS_AS((void)empty.cursor(0), ps::contract_error);
}

TEST_CASE("any_schedule: with_any_schedule calls the function with the schedule's placement") {
    ps::schedule_options opts{};
    opts.shape = {.ranks = 4, .microbatches = 8, .chunks = 2};
    const auto layout_of = [&](ps::schedule_id id) {
        return ps::with_any_schedule(id, opts, [](const auto& pol) {
            using A = std::remove_cvref_t<decltype(pol)>;
            return A::layout;
        });
    };
    CHECK(layout_of(ps::schedule_id::zbv) == ps::placement::v_shape);
    CHECK(layout_of(ps::schedule_id::dualpipe_v) == ps::placement::v_shape);
    CHECK(layout_of(ps::schedule_id::interleaved_1f1b) == ps::placement::loop);
    const std::string name = ps::with_any_schedule(ps::schedule_id::zb_h2, {{.ranks = 4, .microbatches = 8}},
                                                   [](const auto& pol) { return std::string{pol.policy_name()}; });
    CHECK(name == ps::zb_h2::name);
}
