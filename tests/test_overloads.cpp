// validate() and simulate() of a schedule must not accept an iteration: without the iteration
// analysis headers, validate(iteration{pol}) used to compile, take the schedule overload and
// answer not_compute. This file deliberately includes only the schedule analysis headers.
#include <doctest/doctest.h>

#include <pipesched/analysis/simulate.hpp>
#include <pipesched/analysis/validate.hpp>
#include <pipesched/iteration.hpp>
#include <pipesched/policies/one_f_one_b.hpp>

namespace {

namespace ps = pipesched;

template <class P>
concept schedule_validatable = requires(const P& p) { ps::validate(p); };
template <class P>
concept schedule_simulatable = requires(const P& p) { ps::simulate(p, ps::cost_model{}); };
template <class P>
concept schedule_simulatable_default = requires(const P& p) { ps::simulate(p); };

using schedule = ps::one_f_one_b<>;
using whole_iteration = ps::iteration<ps::one_f_one_b<>>;

static_assert(schedule_validatable<schedule>);
static_assert(schedule_simulatable<schedule>);
static_assert(schedule_simulatable_default<schedule>);
static_assert(!schedule_validatable<whole_iteration>);
static_assert(!schedule_simulatable<whole_iteration>);
static_assert(!schedule_simulatable_default<whole_iteration>);
static_assert(ps::schedule_policy<whole_iteration>); // still a policy: emit, events, to_array

} // namespace

TEST_CASE("without the iteration headers, validate(iteration) and simulate(iteration) do not compile") {
    CHECK(schedule_validatable<schedule>);
    CHECK(schedule_simulatable<schedule>);
    CHECK_FALSE(schedule_validatable<whole_iteration>);
    CHECK_FALSE(schedule_simulatable<whole_iteration>);
    CHECK_FALSE(schedule_simulatable_default<whole_iteration>);
    CHECK(ps::validate(schedule{{.ranks = 2, .microbatches = 4, .chunks = 1}}));
}
