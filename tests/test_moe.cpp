// Mixture-of-experts: expert-parallel all-to-all inside a chunk (stage_costs), the pair model
// that hides it (detail::overlapped_pair_time, docs/moe.md) and combined 1F1B, Megatron-LM's
// `--overlap-moe-expert-parallel-comm` (policies/combined_1f1b.hpp).
//
// Pair times are worked out by hand on the sub-phase timeline of docs/moe.md (compute: attention
// F, MLP B, MLP F, attention B; link: combine B, dispatch F, dispatch B, combine F). Orders are
// derived by hand from Megatron-LM's schedules.py at d98e8a6 (get_pp_rank_microbatches,
// get_schedule_table, the steady loop's forward_k = k + warm-up paired with backward_k) and
// combined_1f1b.py (the no-pipelining schedule's phases).
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/io/csv.hpp>

#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace ps = pipesched;

namespace {

using ps::op;
using pipesched_test::act;
using pipesched_test::near;
using pipesched_test::order_is;

// ---------------------------------------------------------------------------------------------
// Costs: a chunk alone is compute + all-to-all; a pair is the model's.

/// A DeepSeek-like stage, all-to-all of the order of compute: F computes 2, B 4, I 2, W 2;
/// each all-to-all takes 1.
constexpr ps::stage_costs moe_stage{.forward = 2.0, .backward = 4.0, .backward_input = 2.0, .backward_weight = 2.0,
                                    .forward_dispatch = 1.0, .forward_combine = 1.0, .backward_dispatch = 1.0,
                                    .backward_combine = 1.0};

PIPESCHED_VERIFY(moe_stage.duration(op::forward) == 4.0 && moe_stage.duration(op::backward) == 6.0 &&
                 moe_stage.duration(op::backward_input) == 4.0 && moe_stage.duration(op::backward_weight) == 2.0);
PIPESCHED_VERIFY(moe_stage.all_to_all(op::forward) == 2.0 && moe_stage.all_to_all(op::backward_weight) == 0.0);
// Without all-to-all the durations are the compute fields, as before.
PIPESCHED_VERIFY(ps::stage_costs{}.duration(op::forward) == 1.0 && ps::stage_costs{}.duration(op::backward) == 2.0 &&
                 !ps::stage_costs{}.has_all_to_all());

// (F;B): attention F [0,1] | combine B [0,1]; MLP B [1,3] | dispatch F [1,2]; MLP F [3,4] |
// dispatch B [3,4]; attention B [4,6] | combine F [4,5]. Ends at 6 = the compute: all hidden.
PIPESCHED_VERIFY(ps::detail::overlapped_pair_time(moe_stage, moe_stage, op::backward) == 6.0);
// (F;I), I computing 2: attention F [0,1] | combine B [0,1]; MLP I [1,2] | dispatch F [1,2];
// MLP F [2,3] | dispatch B [2,3]; attention I [3,4] | combine F [3,4]: 4, all hidden.
PIPESCHED_VERIFY(ps::detail::overlapped_pair_time(moe_stage, moe_stage, op::backward_input) == 4.0);

/// Communication-bound: compute 2 per chunk, each all-to-all 2.
constexpr ps::stage_costs comm_bound{.forward = 2.0, .backward_input = 2.0, .forward_dispatch = 2.0,
                                     .forward_combine = 2.0, .backward_dispatch = 2.0, .backward_combine = 2.0};
// combine B [0,2] | attention F [0,1]; MLP I [2,3] | dispatch F [2,4]; MLP F [4,5] | dispatch
// B [4,6]; attention I [6,7] | combine F [6,8]: 8, the link's four all-to-all back to back.
PIPESCHED_VERIFY(ps::detail::overlapped_pair_time(comm_bound, comm_bound, op::backward_input) == 8.0);

/// The moe stage with compute slowed by 1.5 while it shares the GPU with communication.
constexpr ps::stage_costs slowed = [] {
    ps::stage_costs c = moe_stage;
    c.overlap_slowdown = 1.5;
    return c;
}();
// attention F [0,1.5] | combine B [0,1]; MLP B [1.5,4.5] | dispatch F [1.5,2.5]; MLP F [4.5,6]
// | dispatch B [4.5,5.5]; attention B [6,9] | combine F [6,7]: 9.
PIPESCHED_VERIFY(ps::detail::overlapped_pair_time(slowed, slowed, op::backward) == 9.0);

/// All of the compute before the dispatch (attention_share 1): nothing can hide the F's
/// dispatch and combine, which must wait for the F's whole compute.
constexpr ps::stage_costs all_attention = [] {
    ps::stage_costs c = moe_stage;
    c.attention_share = 1.0;
    return c;
}();
// attention F [0,2] | combine B [0,1]; MLP B (0) [2,2] | dispatch F [2,3]; MLP F (0) [3,3] |
// dispatch B [3,4]; attention B [4,8] | combine F [4,5]: 8.
PIPESCHED_VERIFY(ps::detail::overlapped_pair_time(all_attention, all_attention, op::backward) == 8.0);

// The cost model: the pair model when a stage has all-to-all, the user's number over it, and
// F + B exactly without all-to-all.
constexpr ps::cost_model moe_model{moe_stage};
PIPESCHED_VERIFY(moe_model.overlapped(act(0, op::forward, 1), act(0, op::backward, 0)) == 6.0);
PIPESCHED_VERIFY(moe_model.exposed_all_to_all(act(0, op::forward, 1), act(0, op::backward, 0)) == 0.0);
PIPESCHED_VERIFY(moe_model.exposed_all_to_all(act(0, op::forward, 1)) == 2.0);
constexpr ps::cost_model overridden = [] {
    ps::cost_model m{moe_stage};
    m.uniform.overlapped_forward_backward = 7.0;
    return m;
}();
PIPESCHED_VERIFY(overridden.overlapped(act(0, op::forward, 1), act(0, op::backward, 0)) == 7.0 &&
                 overridden.exposed_all_to_all(act(0, op::forward, 1), act(0, op::backward, 0)) == 1.0);
PIPESCHED_VERIFY(ps::cost_model{}.overlapped(act(0, op::forward, 1), act(0, op::backward, 0)) == 3.0);

// Bad input: a negative or non-finite all-to-all, share or factor makes the duration NaN, which
// every replay refuses as invalid_cost naming the action.
constexpr bool moe_cost_refused(double ps::stage_costs::*field, double value, bool pair) {
    ps::stage_costs c = moe_stage;
    c.*field = value;
    const ps::cost_model m{c};
    const double t = pair ? m.overlapped(act(0, op::forward, 1), act(0, op::backward, 0)) : m.duration(act(0, op::backward, 0));
    return t != t;
}
PIPESCHED_VERIFY(moe_cost_refused(&ps::stage_costs::forward_dispatch, -1.0, true) &&
                 moe_cost_refused(&ps::stage_costs::backward_combine, -1.0, false) &&
                 moe_cost_refused(&ps::stage_costs::backward_dispatch, std::numeric_limits<double>::infinity(), false) &&
                 moe_cost_refused(&ps::stage_costs::attention_share, 1.5, true) &&
                 moe_cost_refused(&ps::stage_costs::overlap_slowdown, 0.5, true));

TEST_CASE("moe: a negative all-to-all is refused by simulate as invalid_cost, naming the action") {
    ps::stage_costs c = moe_stage;
    c.backward_combine = -1.0;
    const ps::simulation sim = ps::simulate(ps::one_f_one_b<>{{2, 4, 1}}, ps::cost_model{c});
    REQUIRE_FALSE(sim);
    CHECK(sim.check.code == ps::verdict_code::invalid_cost);
    CHECK(sim.check.subject.kind == op::backward);
}

// ---------------------------------------------------------------------------------------------
// Combined 1F1B: Megatron's orders, by hand.

// p = 1 is Megatron's combined_1f1b_schedule_for_no_pipelining: "Phases 0: 1st microbatch
// forward; Phases 1: 1st microbatch backward + 2nd microbatch forward; ...; 4th backward".
constexpr ps::combined_1f1b<> c1_1x4{{1, 4, 1}};
PIPESCHED_VERIFY(order_is(c1_1x4, 0, "0F0,(0F1;0B0)OVERLAP_F_B,(0F2;0B1)OVERLAP_F_B,(0F3;0B2)OVERLAP_F_B,0B3"));

// p = 2, m = 4: warm-up 2(p-r-1) + 1 (Megatron's, one chunk), then (F k+W; B k).
constexpr ps::combined_1f1b<> c1_2x4{{2, 4, 1}};
PIPESCHED_VERIFY(order_is(c1_2x4, 0, "0F0,0F1,0F2,(0F3;0B0)OVERLAP_F_B,0B1,0B2,0B3"));
PIPESCHED_VERIFY(order_is(c1_2x4, 1, "1F0,(1F1;1B0)OVERLAP_F_B,(1F2;1B1)OVERLAP_F_B,(1F3;1B2)OVERLAP_F_B,1B3"));

// --delay-wgrad-compute: I in the pair, its W right after it.
constexpr ps::combined_1f1b<ps::backward_kind::split> c1w_2x4{{2, 4, 1}};
PIPESCHED_VERIFY(order_is(c1w_2x4, 0, "0F0,0F1,0F2,(0F3;0I0)OVERLAP_F_B,0W0,0I1,0W1,0I2,0W2,0I3,0W3"));
PIPESCHED_VERIFY(order_is(c1w_2x4, 1,
                          "1F0,(1F1;1I0)OVERLAP_F_B,1W0,(1F2;1I1)OVERLAP_F_B,1W1,(1F3;1I2)OVERLAP_F_B,1W2,1I3,1W3"));

// Interleaved, p = 2, m = 4, v = 2, g = 2. Megatron's table (get_schedule_table):
// forward units (chunk, mb) (0,0) (0,1) (1,0) (1,1) (0,2) (0,3) (1,2) (1,3); backward units the
// same with the chunk mirrored. Warm-up 2(p-r-1) + (v-1)g + 1: 5 on rank 0, 3 on rank 1. Stage
// of chunk c on rank r: c*p + r.
constexpr ps::interleaved_combined_1f1b<> ic_2x4x2{{2, 4, 2}};
PIPESCHED_VERIFY(order_is(ic_2x4x2, 0,
                          "0F0,0F1,2F0,2F1,0F2,(0F3;2B0)OVERLAP_F_B,(2F2;2B1)OVERLAP_F_B,(2F3;0B0)OVERLAP_F_B,"
                          "0B1,2B2,2B3,0B2,0B3"));
PIPESCHED_VERIFY(order_is(ic_2x4x2, 1,
                          "1F0,1F1,3F0,(3F1;3B0)OVERLAP_F_B,(1F2;3B1)OVERLAP_F_B,(1F3;1B0)OVERLAP_F_B,"
                          "(3F2;1B1)OVERLAP_F_B,(3F3;3B2)OVERLAP_F_B,3B3,1B2,1B3"));

// Replayed: p = 1, m = 2 on the moe stage. F0 alone 4; (F1;B0) 6, all hidden; B1 alone 6:
// makespan 16, exposed 2 + 0 + 2. Plain 1F1B runs every chunk alone: 4 + 6 + 4 + 6 = 20, 8 exposed.
template <class P>
constexpr bool replays_to(const P& pol, const ps::cost_model& m, double makespan, double exposed, bool reported) {
    const ps::simulation sim = ps::simulate(pol, m);
    return sim && sim.makespan == makespan && sim.ranks[0].exposed_all_to_all == exposed && sim.all_to_all == reported;
}
PIPESCHED_VERIFY(replays_to(ps::combined_1f1b<>{{1, 2, 1}}, moe_model, 16.0, 4.0, true));
PIPESCHED_VERIFY(replays_to(ps::one_f_one_b<>{{1, 2, 1}}, moe_model, 20.0, 8.0, true));
// Without all-to-all nothing is reported and the pairs cost F + B.
PIPESCHED_VERIFY(replays_to(ps::combined_1f1b<>{{1, 2, 1}}, ps::cost_model{}, 6.0, 0.0, false));

TEST_CASE("moe: combined 1F1B is catalogued under its own names") {
    CHECK(ps::find_schedule("combined_1f1b") == ps::schedule_id::combined_1f1b);
    CHECK(ps::find_schedule("1F1BCombined") == ps::schedule_id::combined_1f1b);
    CHECK(ps::find_schedule("Interleaved1F1BCombined") == ps::schedule_id::interleaved_combined_1f1b);
    CHECK(ps::display_name(ps::info(ps::schedule_id::combined_1f1b)) == "combined_1f1b");
    CHECK(ps::find_schedule("1F1B") == ps::schedule_id::one_f_one_b);
}

TEST_CASE("moe: combined 1F1B orders are valid, replay, round-trip through CSV, peak W + 1, over a grid") {
    int shapes = 0;
    for (std::uint32_t p = 1; p <= 5; ++p) {
        for (std::uint32_t m = 1; m <= 3 * p + 2; ++m) {
            for (std::uint32_t v = 1; v <= 3; ++v) {
                const ps::schedule_options o{{p, m, v}, 0, ps::backward_kind::full};
                for (const ps::backward_kind bk : {ps::backward_kind::full, ps::backward_kind::split}) {
                    for (const ps::schedule_id id : {ps::schedule_id::combined_1f1b, ps::schedule_id::interleaved_combined_1f1b}) {
                        ps::schedule_options oo = o;
                        oo.backward = bk;
                        ps::with_schedule(id, oo, [&](const auto& pol) {
                            if constexpr (requires { pol.warmup(0u); }) {
                            if (!pol.check()) return;
                            ++shapes;
                            INFO("p=" << p << " m=" << m << " v=" << v << " " << pol.name);
                            REQUIRE(ps::validate(pol));
                            const ps::simulation sim = ps::simulate(pol, moe_model);
                            REQUIRE(sim);
                            for (std::uint32_t r = 0; r < p; ++r) {
                                const std::uint32_t units = m * v;
                                const std::uint32_t w = pol.warmup(r);
                                CHECK(sim.ranks[r].peak_activations == std::min(w + 1, units));
                                CHECK(sim.ranks[r].exposed_all_to_all >= 0.0);
                            }
                            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(pol)>, ps::combined_1f1b<>>) {
                                // The interleaved schedule with one chunk is the same order.
                                const ps::interleaved_combined_1f1b<> one{{p, m, 1}};
                                if (one.check()) CHECK(ps::write_csv(one) == ps::write_csv(pol));
                            }
                            const ps::csv_result back = ps::read_csv(ps::write_csv(pol));
                            REQUIRE(back);
                            CHECK(ps::validate(std::span<const std::vector<ps::action>>{back.table.ranks}, m, p * v));
                            }
                        });
                    }
                }
            }
        }
    }
    CHECK(shapes > 200);
}

} // namespace

// ---------------------------------------------------------------------------------------------
// docs/moe.md's table: a DeepSeek-V3-like stage, regenerated here and compared with the page.

namespace {

std::string moe_decimals(double x, int places) {
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, x, std::chars_format::fixed, places);
    return std::string{buffer, r.ptr};
}

/// One row per schedule: p = 4 ranks, m = 16 microbatches; per microbatch through one rank's
/// layers F computes 2, B 4 (I 2 + W 2), and each of the four all-to-all takes 1 (F's compute
/// to its all-to-all 1:1, as DeepSeek-V3 reports); split 1/v per chunk, activation memory too.
std::string moe_table() {
    struct row {
        std::string_view schedule;
        std::uint32_t chunks;
        ps::backward_kind backward;
        std::string_view label;
    };
    const row rows[] = {
        {"1F1B", 1, ps::backward_kind::full, "1F1B"},
        {"Interleaved1F1B", 2, ps::backward_kind::full, "Interleaved1F1B"},
        {"combined_1f1b", 1, ps::backward_kind::full, "combined_1f1b"},
        {"combined_1f1b", 1, ps::backward_kind::split, "combined_1f1b, delayed W"},
        {"interleaved_combined_1f1b", 2, ps::backward_kind::full, "interleaved_combined_1f1b"},
        {"ZBVZeroBubble", 2, ps::backward_kind::split, "ZBVZeroBubble"},
        {"DualPipeV", 2, ps::backward_kind::full, "DualPipeV"},
        {"DualPipe", 2, ps::backward_kind::full, "DualPipe"},
    };
    std::string out = "| schedule | v | iteration time | exposed all-to-all (most of a rank) | bubble | peak activations |\n"
                      "|---|---|---|---|---|---|\n";
    for (const row& w : rows) {
        const auto id = ps::find_schedule(w.schedule);
        if (!id) continue; // DualPipe: listed once the policy exists
        // A chunk's share of a rank's layers: DualPipe's two chunks each hold a whole copy's.
        const ps::placement layout = ps::schedules[static_cast<std::size_t>(*id)].layout;
        const double share = 1.0 / ps::chunks_per_copy(layout, w.chunks);
        ps::stage_costs c{.forward = 2.0 * share, .backward = 4.0 * share, .backward_input = 2.0 * share,
                          .backward_weight = 2.0 * share, .activation_memory = share, .weight_memory = share,
                          .forward_dispatch = share, .forward_combine = share, .backward_dispatch = share,
                          .backward_combine = share};
        const ps::cost_model model{c};
        ps::schedule_options o{{4, 16, w.chunks}, 0, w.backward};
        const ps::simulation sim = ps::with_schedule(*id, o, [&](const auto& pol) { return ps::simulate(pol, model); });
        REQUIRE(sim);
        double exposed = 0.0;
        for (const ps::rank_summary& r : sim.ranks) exposed = r.exposed_all_to_all > exposed ? r.exposed_all_to_all : exposed;
        out += "| " + std::string{w.label} + " | " + std::to_string(w.chunks) + " | " + moe_decimals(sim.makespan, 2) + " | " +
               moe_decimals(exposed, 2) + " | " + moe_decimals(sim.bubble_fraction, 3) + " | " +
               moe_decimals(sim.max_peak_memory(), 2) + " |\n";
    }
    return out;
}

} // namespace

TEST_CASE("moe: docs/moe.md's table is what the replay gives") {
    const std::string table = moe_table();
    std::ifstream in{std::string{PIPESCHED_PLAN_DATA_DIR} + "/../../../docs/moe.md"};
    REQUIRE(in);
    const std::string page{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    const std::string begin = "<!-- moe table: tests/test_moe.cpp -->\n";
    const std::size_t from = page.find(begin);
    REQUIRE(from != std::string::npos);
    const std::size_t start = from + begin.size();
    const std::size_t end = page.find("\n\n", start);
    INFO("regenerated table:\n" << table);
    CHECK(page.substr(start, end + 1 - start) == table);
}

TEST_CASE("moe: combined 1F1B inside a whole iteration (p2p, loss, grad sync) validates and replays") {
    const auto run = [](const auto& pol) {
        INFO(pol.name << " p=" << pol.shape.ranks << " m=" << pol.shape.microbatches << " v=" << pol.shape.chunks);
        const ps::iteration it{pol};
        CHECK(ps::validate(it));
        ps::iteration_cost_model costs{};
        costs.compute = moe_model;
        const ps::iteration_simulation sim = ps::simulate(it, costs);
        CHECK(sim.check);
        // The iteration adds communication around the same compute: never shorter.
        CHECK(sim.makespan >= ps::simulate(pol, moe_model).makespan);
    };
    run(ps::combined_1f1b<>{{4, 8, 1}});
    run(ps::combined_1f1b<ps::backward_kind::split>{{3, 7, 1}});
    run(ps::interleaved_combined_1f1b<>{{4, 8, 2}});
    run(ps::interleaved_combined_1f1b<ps::backward_kind::split>{{2, 6, 3}});
}
