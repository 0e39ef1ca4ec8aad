// validate(): every error class on hand-made schedules, and the verdict's fields.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/analysis/simulate.hpp>

#include <vector>

namespace ps = pipesched;

namespace {

using ps::op;
using actions = std::vector<std::vector<ps::action>>;

constexpr ps::action F(std::uint32_t s, std::uint32_t mb) { return {s, op::forward, mb}; }
constexpr ps::action B(std::uint32_t s, std::uint32_t mb) { return {s, op::backward, mb}; }
constexpr ps::action I(std::uint32_t s, std::uint32_t mb) { return {s, op::backward_input, mb}; }
constexpr ps::action W(std::uint32_t s, std::uint32_t mb) { return {s, op::backward_weight, mb}; }

constexpr ps::verdict check(const actions& a, std::uint32_t m = 0) { return ps::validate(a, m); }

// Two ranks, one stage each, two microbatches: 1F1B.
constexpr bool good_two_rank_1f1b() {
    const actions a{{F(0, 0), F(0, 1), B(0, 0), B(0, 1)}, {F(1, 0), B(1, 0), F(1, 1), B(1, 1)}};
    return static_cast<bool>(check(a));
}
PIPESCHED_VERIFY(good_two_rank_1f1b());

// rank 0 waits for 1B0 before running 0F1; rank 1 runs 1F1 first, which needs 0F1.
constexpr ps::verdict two_rank_deadlock() {
    return check({{F(0, 0), B(0, 0), F(0, 1), B(0, 1)}, {F(1, 1), B(1, 1), F(1, 0), B(1, 0)}});
}
PIPESCHED_VERIFY(two_rank_deadlock().code == ps::verdict_code::deadlock);
PIPESCHED_VERIFY(two_rank_deadlock().cycle_length == 2);

inline constexpr ps::one_f_one_b<> small{{.ranks = 4, .microbatches = 8}};
PIPESCHED_VERIFY(ps::validate(small));
PIPESCHED_VERIFY(ps::require_valid<small>());
inline constexpr ps::interleaved_1f1b<ps::backward_kind::split> small_split{{.ranks = 4, .microbatches = 8, .chunks = 2}};
PIPESCHED_VERIFY(ps::require_valid<small_split>());

TEST_CASE("validate: valid schedules, run-time twins") {
    CHECK(ps::validate(small_split));
    CHECK(ps::describe(ps::validate(small)) == "valid");
    // Split backward with W deferred to the end is still valid.
    CHECK(check({{F(0, 0), I(0, 0), F(0, 1), I(0, 1), W(0, 0), W(0, 1)}}));
}

TEST_CASE("validate: deadlock names the cycle") {
    const ps::verdict v = two_rank_deadlock();
    REQUIRE(v.code == ps::verdict_code::deadlock);
    CHECK(v.cycle_length == 2);
    CHECK(v.cycle[0].rank != v.cycle[1].rank);
    // rank 0 is blocked at index 1 on 0B0 (waiting for 1B0); rank 1 at index 0 on 1F1.
    const ps::blocked_rank r0 = v.cycle[0].rank == 0 ? v.cycle[0] : v.cycle[1];
    const ps::blocked_rank r1 = v.cycle[0].rank == 1 ? v.cycle[0] : v.cycle[1];
    CHECK(r0.index == 1);
    CHECK(r0.waiting == B(0, 0));
    CHECK(r1.index == 0);
    CHECK(r1.waiting == F(1, 1));
    const std::string text = ps::describe(v);
    CHECK(text.find("deadlock") == 0);
    CHECK(text.find("0B0") != std::string::npos);
    CHECK(text.find("1F1") != std::string::npos);
}

TEST_CASE("validate: a long cycle is reported in full length, the first entries in detail") {
    // Loop placement, two chunks: rank r holds stages r and r+p. Rank 0 starts with F(p, 0),
    // which needs F(p-1, 0) from rank p-1; every other rank starts with F(r, 1), which needs
    // F(r-1, 1) from rank r-1. So rank 0 waits on p-1, which waits on p-2, ..., rank 1 waits on 0.
    const std::uint32_t p = 12;
    actions a(p);
    a[0] = {F(p, 0), F(0, 0), F(0, 1), F(p, 1), B(p, 0), B(p, 1), B(0, 0), B(0, 1)};
    for (std::uint32_t r = 1; r < p; ++r) {
        a[r] = {F(r, 1), F(r, 0), F(r + p, 0), F(r + p, 1),
                B(r + p, 0), B(r + p, 1), B(r, 0), B(r, 1)};
    }
    const ps::verdict v = check(a);
    REQUIRE(v.code == ps::verdict_code::deadlock);
    CHECK(v.cycle_length == p);
    for (std::size_t k = 0; k < ps::max_cycle_report; ++k) CHECK(v.cycle[k].index == 0);
    CHECK(ps::describe(v).find("...") != std::string::npos);
}

TEST_CASE("validate: each error class, with rank and index") {
    SUBCASE("missing forward") {
        const auto v = check({{F(0, 0), B(0, 0), B(0, 1)}}, 2);
        // B(0,1) without its F is found first as an order error on the rank.
        CHECK(v.code == ps::verdict_code::backward_before_forward);
        CHECK(v.index == 2);
    }
    SUBCASE("missing backward") {
        const auto v = check({{F(0, 0), F(0, 1), B(0, 0)}});
        CHECK(v.code == ps::verdict_code::missing);
        CHECK(v.subject == B(0, 1));
    }
    SUBCASE("missing microbatch when m is given") {
        const auto v = check({{F(0, 0), B(0, 0)}}, 2);
        CHECK(v.code == ps::verdict_code::missing);
        CHECK(v.subject == F(0, 1));
    }
    SUBCASE("missing W after I") {
        const auto v = check({{F(0, 0), I(0, 0)}});
        CHECK(v.code == ps::verdict_code::missing);
        CHECK(v.subject.kind == op::backward_weight);
    }
    SUBCASE("a stage that never appears") {
        const auto v = check({{F(0, 0), B(0, 0)}, {F(2, 0), B(2, 0)}});
        CHECK(v.code == ps::verdict_code::missing);
        CHECK(v.subject == F(1, 0));
    }
    SUBCASE("duplicate forward") {
        const auto v = check({{F(0, 0), F(0, 0), B(0, 0)}});
        CHECK(v.code == ps::verdict_code::duplicate);
        CHECK(v.rank == 0);
        CHECK(v.index == 1);
    }
    SUBCASE("B together with I") {
        const auto v = check({{F(0, 0), I(0, 0), B(0, 0)}});
        CHECK(v.code == ps::verdict_code::mixed_backward);
        CHECK(v.index == 2);
        CHECK(ps::describe(v) == "mixed_backward: 0B0 at rank 0 index 2 after 0I0: a unit's backward is "
                                 "either one B, or an I then a W, not both");
    }
    SUBCASE("B then W of one unit") {
        const auto v = check({{F(0, 0), B(0, 0), W(0, 0)}});
        CHECK(v.code == ps::verdict_code::mixed_backward);
        CHECK(v.index == 2);
        CHECK(ps::describe(v) == "mixed_backward: 0W0 at rank 0 index 2 after 0B0: a unit's backward is "
                                 "either one B, or an I then a W, not both");
    }
    SUBCASE("B then I of one unit") {
        const auto v = check({{F(0, 0), B(0, 0), I(0, 0)}});
        CHECK(v.code == ps::verdict_code::mixed_backward);
        CHECK(ps::describe(v).find("0I0 at rank 0 index 2 after 0B0") != std::string::npos);
    }
    SUBCASE("a W twice and a B twice are duplicates") {
        CHECK(check({{F(0, 0), I(0, 0), W(0, 0), W(0, 0)}}).code == ps::verdict_code::duplicate);
        CHECK(check({{F(0, 0), B(0, 0), B(0, 0)}}).code == ps::verdict_code::duplicate);
        CHECK(check({{F(0, 0), I(0, 0), I(0, 0)}}).code == ps::verdict_code::duplicate);
    }
    SUBCASE("out of range microbatch") {
        const auto v = check({{F(0, 0), F(0, 5), B(0, 0)}}, 2);
        CHECK(v.code == ps::verdict_code::out_of_range);
        CHECK(v.index == 1);
        CHECK(v.subject == F(0, 5));
    }
    SUBCASE("backward before forward") {
        const auto v = check({{B(0, 0), F(0, 0)}});
        CHECK(v.code == ps::verdict_code::backward_before_forward);
        CHECK(v.index == 0);
    }
    SUBCASE("weight before input") {
        const auto v = check({{F(0, 0), W(0, 0), I(0, 0)}});
        CHECK(v.code == ps::verdict_code::weight_before_input);
        CHECK(v.index == 1);
    }
    SUBCASE("stage on two ranks") {
        const auto v = check({{F(0, 0), B(0, 0)}, {F(1, 0), F(0, 1), B(1, 0), B(0, 1)}});
        CHECK(v.code == ps::verdict_code::stage_on_two_ranks);
        CHECK(v.rank == 1);
        CHECK(v.index == 1);
        CHECK(v.other_rank == 0);
        CHECK(ps::describe(v).find("already ran on rank 0") != std::string::npos);
    }
    SUBCASE("not a compute op") {
        const auto v = check({{F(0, 0), {0, op::grad_sync, 0}, B(0, 0)}});
        CHECK(v.code == ps::verdict_code::not_compute);
        CHECK(v.index == 1);
    }
    SUBCASE("same-rank forward order across stages deadlocks on itself") {
        // One rank holds stages 0 and 1 but runs stage 1 first: a cycle of length 1.
        const auto v = check({{F(1, 0), F(0, 0), B(1, 0), B(0, 0)}});
        CHECK(v.code == ps::verdict_code::deadlock);
        CHECK(v.cycle_length == 1);
    }
    SUBCASE("invalid shape of a policy") {
        const auto v = ps::validate(ps::one_f_one_b<>{{.ranks = 4, .microbatches = 8, .chunks = 2}});
        CHECK(v.code == ps::verdict_code::invalid_shape);
        CHECK(ps::describe(v).find("chunks must be 1") != std::string::npos);
    }
}

TEST_CASE("validate: sparse input is answered without a stages x microbatches table") {
    // One cell naming stage 4e9, microbatch 65535: a table would need 2.6e14 bytes.
    const auto huge = check({{F(4000000000u, 65535)}});
    CHECK(huge.code == ps::verdict_code::missing);
    CHECK(huge.subject == F(0, 0));
    // The first gap in (stage, microbatch) order, forwards before backwards.
    // Over a million units: stage 5e6 and microbatch 3 make 2e7. The first gap in
    // (stage, microbatch) order, forwards before backwards.
    const auto gap = check({{F(0, 0), F(0, 1), B(0, 0), B(0, 1), F(1, 0), B(1, 0), F(5000000, 3)}});
    CHECK(gap.code == ps::verdict_code::missing);
    CHECK(gap.subject == F(0, 2));
    const auto stage_gap = check({{F(0, 0), B(0, 0), F(0, 1), F(5000000, 0)}}, 2);
    CHECK(stage_gap.code == ps::verdict_code::missing);
    CHECK(stage_gap.subject == F(1, 0));
    // Range errors still come first, with their position.
    const auto range = check({{F(0, 0), F(0, 7), F(5000000, 0)}}, 2);
    CHECK(range.code == ps::verdict_code::out_of_range);
    CHECK(range.index == 1);
    // And simulate refuses it the same way, without allocating.
    ps::discard_timeline none;
    CHECK(ps::simulate(std::vector<std::vector<ps::action>>{{F(4000000000u, 65535)}}, ps::cost_model{}, none).check.code ==
          ps::verdict_code::missing);
}

TEST_CASE("validate: empty input is valid and harmless") {
    CHECK(check({}));
    CHECK(check({{}, {}}));
}

} // namespace
