// timing_model.hpp, the one header where the pipeline's rules are written, checked rule
// by rule by hand: each rule is a constexpr function of values, so every check below runs both
// in a static_assert and at run time (where the sanitizers and coverage see it).
#include <doctest/doctest.h>

#include <pipesched/timing_model.hpp>

#include <array>
#include <cstdint>
#include <limits>

namespace timing_model_tests {
namespace {

namespace ps = pipesched;
namespace pd = pipesched::detail;
using ps::action;
using ps::op;

constexpr std::uint32_t none = 99; // a stage number no rule returns for 4 stages

/// The input of `a` in a pipeline of 4 stages, or {none, ...} when it needs none.
constexpr action input_of(action a) {
    action in{none, op::forward, none};
    return pd::cross_stage_input(a, 4, in) ? in : action{none, op::forward, none};
}

constexpr bool inputs_hold() {
    return input_of({0, op::forward, 3}).stage == none                      // the first stage reads the data
           && input_of({2, op::forward, 5}) == action{1, op::forward, 5}    // F of s needs F of s-1
           && input_of({3, op::backward_input, 1}).stage == none            // the loss stage turns around
           && input_of({3, op::backward, 1}).stage == none
           && input_of({1, op::backward_input, 2}) == action{2, op::backward, 2} // I of s needs B/I of s+1
           && input_of({0, op::backward, 0}) == action{1, op::backward, 0}
           && input_of({1, op::backward_weight, 2}).stage == none           // W needs only its own I
           && pd::is_loss_stage(3, 4) && !pd::is_loss_stage(2, 4) && pd::is_loss_stage(0, 1);
}

/// The stage that reads `a`'s result in 4 stages, or none.
constexpr std::uint32_t reader_of(action a) {
    std::uint32_t s = none;
    return pd::consumer_stage(a, 4, s) ? s : none;
}

constexpr bool readers_hold() {
    return reader_of({1, op::forward, 0}) == 2 && reader_of({3, op::forward, 0}) == none &&
           reader_of({2, op::backward_input, 0}) == 1 && reader_of({1, op::backward, 0}) == 0 &&
           reader_of({0, op::backward, 0}) == none && reader_of({2, op::backward_weight, 0}) == none;
}

/// The other end of a send or receive by stage s of 4, or none.
constexpr std::uint32_t peer_of(op kind, std::uint32_t s) {
    std::uint32_t other = none;
    return pd::p2p_peer_stage(kind, s, 4, other) ? other : none;
}

constexpr bool p2p_holds() {
    return peer_of(op::send_activation, 1) == 2 && peer_of(op::recv_activation, 1) == 0 &&
           peer_of(op::send_gradient, 1) == 0 && peer_of(op::recv_gradient, 1) == 2 &&
           peer_of(op::send_activation, 3) == none && peer_of(op::recv_activation, 0) == none &&
           peer_of(op::send_gradient, 0) == none && peer_of(op::recv_gradient, 3) == none &&
           peer_of(op::forward, 1) == none;
}

constexpr bool times_hold() {
    return pd::input_ready(5.0, true, 0.5) == 5.0 && pd::input_ready(5.0, false, 0.5) == 5.5 &&
           pd::start_time(3.0, 4.0) == 4.0 && pd::start_time(4.5, 4.0) == 4.5;
}

/// Stage 1 of two has its own costs and memory; stage 0 the uniform ones.
constexpr std::array<ps::stage_costs, 2> two_stages{
    ps::stage_costs{}, ps::stage_costs{3.0, 5.0, 2.0, 1.5, -1.0, 8.0, 2.0}};

constexpr bool costs_hold() {
    ps::cost_model m{};
    m.uniform = ps::stage_costs{4.0, 2.0, 1.0, 1.0, 2.5, 1.0, 1.0};
    m.per_stage = two_stages;
    const action f1{1, op::forward, 0}, b1{1, op::backward, 0}, i1{1, op::backward_input, 0}, w1{1, op::backward_weight, 0};
    const action f0{0, op::forward, 1}, b0{0, op::backward, 0};
    return m.duration(f1) == 3.0 && m.duration(b1) == 5.0 && m.duration(i1) == 2.0 && m.duration(w1) == 1.5 &&
           m.duration(action{1, op::send_activation, 0}) == 0.0
           // per_stage's entry 0 overrides the uniform costs for stage 0; a stage past it has them
           && m.duration(f0) == 1.0 && m.of_stage(7).forward == 4.0 && m.of_stage(7).overlapped_forward_backward == 2.5
           // memory: F adds M_B, I releases M_B - M_W, W releases M_W, a full B releases M_B
           && m.memory_change(f1) == 8.0 && m.memory_change(i1) == -6.0 && m.memory_change(w1) == -2.0 &&
           m.memory_change(b1) == -8.0 && m.memory_change(action{1, op::loss, 0}) == 0.0
           // an overlapped pair: its F stage's fused time if set, else the sum of the two
           && m.overlapped(f1, b0) == 3.0 + 2.0 && m.overlapped(action{7, op::forward, 0}, b0) == 2.5;
}

constexpr bool pairs_hold() {
    const action f{2, op::forward, 1, true}, f_plain{2, op::forward, 1};
    return pd::well_formed_pair(false, f, {3, op::backward, 0}) && pd::well_formed_pair(false, f, {1, op::backward_input, 1}) &&
           !pd::well_formed_pair(false, f, {2, op::backward, 1})               // the same unit
           && !pd::well_formed_pair(false, f, {3, op::backward_weight, 0})     // W cannot close a pair
           && !pd::well_formed_pair(false, f, {3, op::backward, 0, true})      // the second is not flagged
           && pd::well_formed_pair(true, f_plain, {3, op::backward, 0})        // a marker opened it
           && !pd::well_formed_pair(true, f, {3, op::backward, 0})             // ...and F is not flagged again
           && !pd::well_formed_pair(false, {2, op::backward, 1, true}, {3, op::backward, 0});
}

constexpr bool activations_hold() {
    pd::activation_counter c{};
    for (const op k : {op::forward, op::forward, op::backward_input, op::backward_weight, op::forward,
                       op::backward, op::backward_weight, op::backward})
        c.add(k);
    return c.alive == -1 && c.peak == 2 && pd::activation_change(op::backward_input) == 0 &&
           pd::activation_change(op::send_activation) == 0;
}

constexpr bool numbers_hold() {
    constexpr double inf = std::numeric_limits<double>::infinity();
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    return pd::usable_cost(0.0) && pd::usable_cost(1e308) && !pd::usable_cost(-0.5) && !pd::usable_cost(inf) &&
           !pd::usable_cost(nan) && pd::finite_time(-3.0) && !pd::finite_time(-inf) && !pd::finite_time(nan);
}

static_assert(inputs_hold());
static_assert(readers_hold());
static_assert(p2p_holds());
static_assert(times_hold());
static_assert(costs_hold());
static_assert(pairs_hold());
static_assert(activations_hold());
static_assert(numbers_hold());

} // namespace

TEST_CASE("timing model: an action's input, its reader and the p2p peers, by hand") {
    CHECK(inputs_hold());
    CHECK(readers_hold());
    CHECK(p2p_holds());
    CHECK(times_hold());
}

TEST_CASE("timing model: durations, the memory rule and overlapped pairs, by hand") {
    CHECK(costs_hold());
    CHECK(pairs_hold());
    CHECK(activations_hold());
    CHECK(numbers_hold());
}

} // namespace timing_model_tests
