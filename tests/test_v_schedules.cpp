// The V-shape schedules: zbv (PyTorch's ScheduleZBVZeroBubble) and dualpipe_v (PyTorch's
// ScheduleDualPipeV, DeepSeek's DualPipeV), and the overlapped pairs DualPipeV introduces
// (op::overlap_f_b in validate, simulate, iteration, CSV).
//
// Exact small orders are derived by hand from PyTorch's `_calculate_single_rank_operations`
// (derivations in the comments) and checked at compile time and at run time. A reference
// implementation below mirrors PyTorch's loops step by step (counters per stage, a FIFO of
// deferred weight gradients, phantom microbatches turned into idle slots) and is compared
// with the closed-form policies over a grid of shapes.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/action.hpp>
#include <pipesched/io/csv.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ps = pipesched;

namespace {

using ps::op;
using pipesched_test::act;
using pipesched_test::near;

// ---------------------------------------------------------------------------------------------
// Helpers: a rank's cells as PyTorch writes them, `0F0,(0F3;3B1)OVERLAP_F_B,...`.

template <ps::schedule_policy P>
constexpr bool cells_are(const P& pol, std::uint32_t rank, std::string_view csv) {
    ps::cell_folder cells{};
    std::size_t pos = 0;
    for (ps::event e : ps::events(pol, rank)) {
        if (!cells.push(ps::to_action(pol, e))) continue;
        if (pos > csv.size()) return false;
        const std::size_t comma = csv.find(',', pos);
        const std::size_t end = comma == std::string_view::npos ? csv.size() : comma;
        if (cells.text() != csv.substr(pos, end - pos)) return false;
        pos = end + 1;
    }
    return pos == csv.size() + 1;
}

template <ps::schedule_policy P>
std::vector<std::string> cells_of(const P& pol, std::uint32_t rank) {
    std::vector<std::string> out;
    ps::cell_folder cells{};
    for (ps::event e : ps::events(pol, rank)) {
        if (cells.push(ps::to_action(pol, e))) out.emplace_back(cells.text());
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Reference implementations: PyTorch's loops, step by step, with growing lists.

std::string action_text(std::uint32_t stage, char letter, std::uint32_t mb) {
    return std::to_string(stage) + letter + std::to_string(mb);
}

/// ScheduleZBVZeroBubble._calculate_single_rank_operations, then the idle slots dropped.
std::vector<std::string> reference_zbv(std::uint32_t p, std::uint32_t m, std::uint32_t rank) {
    struct item {
        std::uint32_t stage;
        char letter;
        std::uint32_t mb;
    };
    std::vector<item> ops;
    const std::uint32_t n_micro = std::max(2 * p - 1, m);
    const std::uint32_t s0 = rank;
    const std::uint32_t s1 = 2 * p - 1 - rank;
    std::uint32_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    for (std::uint32_t k = 0; k < 2 * (p - rank) - 1; ++k) ops.push_back({s0, 'F', f0++});
    for (std::uint32_t k = 0; k < rank; ++k) {
        ops.push_back({s1, 'F', f1++});
        ops.push_back({s0, 'F', f0++});
    }
    for (std::uint32_t k = 0; k < p - rank; ++k) {
        ops.push_back({s1, 'F', f1++});
        ops.push_back({s1, 'I', b1});
        ops.push_back({s1, 'W', b1++});
    }
    while (f1 < f0 || f0 < n_micro) {
        if (f0 < n_micro) ops.push_back({s0, 'F', f0++});
        ops.push_back({s0, 'I', b0});
        ops.push_back({s0, 'W', b0++});
        ops.push_back({s1, 'F', f1++});
        ops.push_back({s1, 'I', b1});
        ops.push_back({s1, 'W', b1++});
    }
    std::uint32_t w0 = b0, w1 = b1;
    for (std::uint32_t k = 0; k < rank; ++k) {
        ops.push_back({s0, 'I', b0++});
        ops.push_back({s1, 'I', b1++});
    }
    for (std::uint32_t k = 0; k < p - rank; ++k) {
        ops.push_back({s0, 'I', b0++});
        ops.push_back({s0, 'W', w0++});
    }
    while (w1 < b1) ops.push_back({s1, 'W', w1++});
    while (w0 < b0) ops.push_back({s0, 'W', w0++});
    std::vector<std::string> out;
    for (const item& it : ops) {
        if (it.mb < m) out.push_back(action_text(it.stage, it.letter, it.mb)); // phantoms: idle
    }
    return out;
}

/// ScheduleDualPipeV._calculate_single_rank_operations.
std::vector<std::string> reference_dualpipe_v(std::uint32_t p, std::uint32_t m, std::uint32_t rank) {
    std::vector<std::string> actions;
    std::map<std::pair<std::uint32_t, char>, std::uint32_t> counters; // (stage, type) -> mb
    std::deque<std::pair<std::uint32_t, std::uint32_t>> weight_queue;
    const std::uint32_t stage0 = rank;
    const std::uint32_t stage1 = 2 * p - 1 - rank;
    const auto increment_backward_counts = [&](std::uint32_t stage) {
        ++counters[{stage, 'I'}];
        ++counters[{stage, 'W'}];
    };
    const auto add_overlap_f_b = [&](std::uint32_t forward_stage, std::uint32_t backward_stage) {
        const std::uint32_t forward_mb = counters[{forward_stage, 'F'}];
        const std::uint32_t backward_mb = counters[{backward_stage, 'I'}];
        actions.push_back("(" + action_text(forward_stage, 'F', forward_mb) + ";" +
                          action_text(backward_stage, 'B', backward_mb) + ")OVERLAP_F_B");
        counters[{forward_stage, 'F'}] = forward_mb + 1;
        increment_backward_counts(backward_stage);
    };
    const auto add_action = [&](std::uint32_t stage, char type) {
        const std::pair<std::uint32_t, char> key{stage, type == 'B' ? 'I' : type};
        const std::uint32_t mb = counters[key];
        actions.push_back(action_text(stage, type, mb));
        if (type == 'B') {
            increment_backward_counts(stage);
        } else {
            if (type == 'I') weight_queue.emplace_back(stage, mb);
            counters[key] = mb + 1;
        }
    };
    const auto add_weight_action_if_pending = [&] {
        if (weight_queue.empty()) return;
        const auto [stage, mb] = weight_queue.front();
        weight_queue.pop_front();
        actions.push_back(action_text(stage, 'W', mb));
        ++counters[{stage, 'W'}];
    };
    for (std::uint32_t k = 0; k < (p - rank - 1) * 2; ++k) add_action(stage0, 'F'); // step 1
    for (std::uint32_t k = 0; k < rank + 1; ++k) {                                   // step 2
        add_action(stage0, 'F');
        add_action(stage1, 'F');
    }
    for (std::uint32_t k = 0; k < p - rank - 1; ++k) { // step 3
        add_action(stage1, 'I');
        add_weight_action_if_pending();
        add_action(stage1, 'F');
    }
    for (std::uint32_t i = 0; i < m - 2 * p + rank + 1; ++i) { // step 4
        if (i == 0 && rank == p - 1) {
            add_action(stage0, 'F');
            add_action(stage1, 'B');
        } else {
            add_overlap_f_b(stage0, stage1);
        }
        add_overlap_f_b(stage1, stage0);
    }
    for (std::uint32_t k = 0; k < p - rank - 1; ++k) { // step 5
        add_action(stage1, 'B');
        add_overlap_f_b(stage1, stage0);
    }
    const std::uint32_t step_6 = rank + 1; // step 6
    bool enable_zb = false;
    for (std::uint32_t i = 0; i < step_6; ++i) {
        if (i == step_6 / 2 && rank % 2 == 1) enable_zb = true;
        add_action(stage1, enable_zb ? 'I' : 'B');
        if (i == step_6 / 2 && rank % 2 == 0) enable_zb = true;
        add_action(stage0, enable_zb ? 'I' : 'B');
    }
    for (std::uint32_t k = 0; k < p - rank - 1; ++k) { // step 7
        add_weight_action_if_pending();
        add_action(stage0, enable_zb ? 'I' : 'B');
    }
    for (std::uint32_t k = 0; k < rank + 1; ++k) add_weight_action_if_pending(); // step 8
    return actions;
}

// ---------------------------------------------------------------------------------------------
// Exact orders, derived by hand from PyTorch's code.

// ZB-V, p = 2, m = 4, rank 0 (stages 0 and 3). n_micro = max(2p-1, m) = 4.
//   warmup_n1 = 2(p-r)-1 = 3:     0F0 0F1 0F2                       f0 = 3
//   warmup_n2 = r = 0
//   warmup_n3 = p-r = 2:          3F0 3I0 3W0, 3F1 3I1 3W1           f1 = 2, b1 = 2
//   stable, while f1 < f0 or f0 < 4:
//     f0 = 3 < 4:                 0F3 0I0 0W0 3F2 3I2 3W2            f0 = 4, f1 = 3
//     f1 = 3 < f0 = 4, no F0:     0I1 0W1 3F3 3I3 3W3                f1 = 4, b0 = 2
//   cooldown_n1 = r = 0; cooldown_n2 = p-r = 2: 0I2 0W2, 0I3 0W3; no W left over.
constexpr ps::zbv zbv_2x4{{.ranks = 2, .microbatches = 4, .chunks = 2}};
constexpr std::string_view zbv_2x4_rank0 =
    "0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0F3,0I0,0W0,3F2,3I2,3W2,0I1,0W1,3F3,3I3,3W3,"
    "0I2,0W2,0I3,0W3";
// Rank 1 (stages 1 and 2): warmup_n1 = 1: 1F0; warmup_n2 = 1: 2F0 1F1; warmup_n3 = 1:
// 2F1 2I0 2W0. Stable twice (f0 = 2, 3 < 4): 1F2 1I0 1W0 2F2 2I1 2W1, 1F3 1I1 1W1 2F3 2I2 2W2.
// Cooldown (w0 = 2, w1 = 3): n1 = 1: 1I2 2I3; n2 = 1: 1I3 1W2; then W1 drain 2W3, W0 drain 1W3.
constexpr std::string_view zbv_2x4_rank1 =
    "1F0,2F0,1F1,2F1,2I0,2W0,1F2,1I0,1W0,2F2,2I1,2W1,1F3,1I1,1W1,2F3,2I2,2W2,"
    "1I2,2I3,1I3,1W2,2W3,1W3";
PIPESCHED_VERIFY(cells_are(zbv_2x4, 0, zbv_2x4_rank0));
PIPESCHED_VERIFY(cells_are(zbv_2x4, 1, zbv_2x4_rank1));

// ZB-V, p = 2, m = 1: PyTorch pads to n_micro = 3 and idles the slots of microbatches 1, 2.
// Rank 0 before dropping: 0F0 0F1 0F2 | 3F0 3I0 3W0 3F1 3I1 3W1 | 0I0 0W0 3F2 3I2 3W2 |
// 0I1 0W1 0I2 0W2; kept: those of microbatch 0, in order.
constexpr ps::zbv zbv_2x1{{.ranks = 2, .microbatches = 1, .chunks = 2}};
PIPESCHED_VERIFY(cells_are(zbv_2x1, 0, "0F0,3F0,3I0,3W0,0I0,0W0"));
PIPESCHED_VERIFY(cells_are(zbv_2x1, 1, "1F0,2F0,2I0,2W0,1I0,1W0"));

// ZB-V, p = 1, m = 2: one rank holds stages 0 and 1; n_micro = 2. warmup_n1 = 1: 0F0;
// warmup_n3 = 1: 1F0 1I0 1W0; stable once (f0 = 1 < 2): 0F1 0I0 0W0 1F1 1I1 1W1;
// cooldown_n2 = 1: 0I1 0W1.
constexpr ps::zbv zbv_1x2{{.ranks = 1, .microbatches = 2, .chunks = 2}};
PIPESCHED_VERIFY(cells_are(zbv_1x2, 0, "0F0,1F0,1I0,1W0,0F1,0I0,0W0,1F1,1I1,1W1,0I1,0W1"));

// DualPipeV, p = 2, m = 4, rank 0 (stages 0 and 3). Counters per (stage, type); B counts on
// I's counter.
//   step 1, (p-r-1)*2 = 2:     0F0 0F1
//   step 2, r+1 = 1:           0F2 3F0
//   step 3, p-r-1 = 1:         3I0, W pops (3,0): 3W0, 3F1
//   step 4, m-2p+r+1 = 1:      (0F3;3B1) (3F2;0B0)
//   step 5, p-r-1 = 1:         3B2 (3F3;0B1)
//   step 6, r+1 = 1: i = 0 = step_6//2, r even: 3B3, then zero bubble on: 0I2 (queued)
//   step 7, p-r-1 = 1:         W pops (0,2): 0W2, 0I3 (queued)
//   step 8, r+1 = 1:           0W3
constexpr ps::dualpipe_v dpv_2x4{{.ranks = 2, .microbatches = 4, .chunks = 2}};
constexpr std::string_view dpv_2x4_rank0 =
    "0F0,0F1,0F2,3F0,3I0,3W0,3F1,(0F3;3B1)OVERLAP_F_B,(3F2;0B0)OVERLAP_F_B,3B2,"
    "(3F3;0B1)OVERLAP_F_B,3B3,0I2,0W2,0I3,0W3";
// Rank 1 = p-1 (stages 1 and 2): step 1: none; step 2, twice: 1F0 2F0, 1F1 2F1; step 3: none;
// step 4, m-2p+r+1 = 2: i = 0 on the last rank is not overlapped: 1F2 2B0 (2F2;1B0); i = 1:
// (1F3;2B1) (2F3;1B1); step 5: none; step 6, twice: i = 0: 2B2 1B2; i = 1 = step_6//2 and r odd,
// zero bubble on before both: 2I3 1I3; step 7: none; step 8, twice: 2W3 1W3 (FIFO).
constexpr std::string_view dpv_2x4_rank1 =
    "1F0,2F0,1F1,2F1,1F2,2B0,(2F2;1B0)OVERLAP_F_B,(1F3;2B1)OVERLAP_F_B,(2F3;1B1)OVERLAP_F_B,"
    "2B2,1B2,2I3,1I3,2W3,1W3";
PIPESCHED_VERIFY(cells_are(dpv_2x4, 0, dpv_2x4_rank0));
PIPESCHED_VERIFY(cells_are(dpv_2x4, 1, dpv_2x4_rank1));

// DualPipeV, p = 1, m = 2: rank 0 is first and last (stages 0 and 1). step 2: 0F0 1F0;
// step 4 once, not overlapped at i = 0: 0F1 1B0 (1F1;0B0); step 6 once, r even: 1B1 0I1;
// step 8: 0W1.
constexpr ps::dualpipe_v dpv_1x2{{.ranks = 1, .microbatches = 2, .chunks = 2}};
PIPESCHED_VERIFY(cells_are(dpv_1x2, 0, "0F0,1F0,0F1,1B0,(1F1;0B0)OVERLAP_F_B,1B1,0I1,0W1"));

// Events, not cells: a pair is a marker and then its two actions; the marker counts in size().
inline constexpr ps::dualpipe_v dpv_1x2_nttp{{.ranks = 1, .microbatches = 2, .chunks = 2}};
constexpr auto dpv_1x2_events = ps::to_array<dpv_1x2_nttp>();
PIPESCHED_VERIFY(dpv_1x2_events.size() == 6 * 2 - 1 - 1);
PIPESCHED_VERIFY(dpv_1x2_events[4].kind == op::overlap_f_b);
PIPESCHED_VERIFY(dpv_1x2_events[5] == ps::event{op::forward, 1, 0, 1, ps::no_peer});
PIPESCHED_VERIFY(dpv_1x2_events[6] == ps::event{op::backward, 0, 0, 0, ps::no_peer});

PIPESCHED_VERIFY(ps::validate(zbv_2x4));
PIPESCHED_VERIFY(ps::validate(dpv_2x4));
PIPESCHED_VERIFY(ps::require_valid<dpv_1x2_nttp>());

TEST_CASE("zbv and dualpipe_v: exact orders, run-time twins of the static_asserts") {
    CHECK(static_cast<bool>(ps::validate(zbv_2x4)));
    CHECK(static_cast<bool>(ps::validate(dpv_2x4)));
    // cells_are must be able to fail.
    CHECK_FALSE(cells_are(dpv_1x2, 0, "0F0,1F0,0F1,1B0,1F1,0B0,1B1,0I1,0W1"));
    CHECK_FALSE(cells_are(dpv_1x2, 0, "0F0,1F0,0F1,1B0,(1F1;0B0)OVERLAP_F_B,1B1,0I1"));
    // The reference implementations give the hand-derived orders too.
    const auto joined = [](const std::vector<std::string>& cells) {
        std::string s;
        for (const std::string& c : cells) s += (s.empty() ? "" : ",") + c;
        return s;
    };
    CHECK(joined(reference_zbv(2, 4, 0)) == zbv_2x4_rank0);
    CHECK(joined(reference_zbv(2, 4, 1)) == zbv_2x4_rank1);
    CHECK(joined(reference_dualpipe_v(2, 4, 0)) == dpv_2x4_rank0);
    CHECK(joined(reference_dualpipe_v(2, 4, 1)) == dpv_2x4_rank1);
}

// ---------------------------------------------------------------------------------------------
// Shapes.

PIPESCHED_VERIFY(ps::schedule_policy<ps::zbv>);
PIPESCHED_VERIFY(ps::schedule_policy<ps::dualpipe_v>);
PIPESCHED_VERIFY(ps::zbv::layout == ps::placement::v_shape);
PIPESCHED_VERIFY(ps::dualpipe_v::layout == ps::placement::v_shape);
PIPESCHED_VERIFY(!ps::zbv{{.ranks = 4, .microbatches = 8, .chunks = 1}}.check());
PIPESCHED_VERIFY(!ps::dualpipe_v{{.ranks = 4, .microbatches = 7, .chunks = 2}}.check());

TEST_CASE("zbv and dualpipe_v: accepted shapes, and messages naming the constraint") {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            for (std::uint32_t v = 1; v <= 4; ++v) {
                CHECK(static_cast<bool>(ps::zbv{{.ranks = p, .microbatches = m, .chunks = v}}.check()) == (v == 2));
                CHECK(static_cast<bool>(ps::dualpipe_v{{.ranks = p, .microbatches = m, .chunks = v}}.check()) == (v == 2 && m >= 2 * p));
            }
        }
    }
    CHECK(ps::zbv{{.ranks = 4, .microbatches = 8, .chunks = 3}}.check().message.find("chunks must be 2") != std::string_view::npos);
    CHECK(ps::dualpipe_v{{.ranks = 4, .microbatches = 8, .chunks = 1}}.check().message.find("chunks must be 2") != std::string_view::npos);
    CHECK(ps::dualpipe_v{{.ranks = 4, .microbatches = 7, .chunks = 2}}.check().message.find("microbatches must be at least 2 * ranks") !=
          std::string_view::npos);
    CHECK_FALSE(ps::zbv{{.ranks = 0, .microbatches = 8, .chunks = 2}}.check());
    CHECK(ps::validate(ps::dualpipe_v{{.ranks = 4, .microbatches = 7, .chunks = 2}}).code == ps::verdict_code::invalid_shape);
}

// ---------------------------------------------------------------------------------------------
// Grids: p in 1..8, m in 1..4p (ZB-V) and 2p..4p (DualPipeV).

template <class F>
void for_each_v_shape(F&& f) {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) f(p, m);
    }
}

TEST_CASE("zbv: equals PyTorch's ScheduleZBVZeroBubble (reference loop) with idle slots removed") {
    for_each_v_shape([](std::uint32_t p, std::uint32_t m) {
        const ps::zbv pol{{.ranks = p, .microbatches = m, .chunks = 2}};
        for (std::uint32_t r = 0; r < p; ++r) {
            INFO("p=" << p << " m=" << m << " rank=" << r);
            CHECK(cells_of(pol, r) == reference_zbv(p, m, r));
        }
    });
}

TEST_CASE("dualpipe_v: equals PyTorch's ScheduleDualPipeV (reference loop), pairs included") {
    for_each_v_shape([](std::uint32_t p, std::uint32_t m) {
        if (m < 2 * p) return;
        const ps::dualpipe_v pol{{.ranks = p, .microbatches = m, .chunks = 2}};
        for (std::uint32_t r = 0; r < p; ++r) {
            INFO("p=" << p << " m=" << m << " rank=" << r);
            CHECK(cells_of(pol, r) == reference_dualpipe_v(p, m, r));
        }
    });
}

template <ps::schedule_policy P>
void check_cursor_emit_size(const P& pol) {
    struct collect {
        std::vector<ps::event>* out;
        void push(const ps::event& e) { out->push_back(e); }
    };
    const ps::shape s = pol.shape;
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        std::vector<ps::event> pulled;
        for (ps::event e : ps::events(pol, r)) pulled.push_back(e);
        std::vector<ps::event> pushed;
        ps::emit(pol, r, collect{&pushed});
        INFO(P::name << " p=" << s.ranks << " m=" << s.microbatches << " rank=" << r);
        CHECK(pulled == pushed);
        CHECK(pulled.size() == pol.size(r));
        CHECK(pulled.size() == ps::detail::program_size<typename std::conditional_t<
                                   std::is_same_v<P, ps::zbv>, ps::detail::zbv_program,
                                   ps::detail::dualpipe_v_program>>(
                                   {s.ranks, s.microbatches, s.microbatches, r}));
        for (const ps::event& e : pulled) {
            CHECK(e.rank == r);
            CHECK(e.peer == ps::no_peer);
        }
    }
}

// The generator engine gives the V schedules closed-form at() too, phantom cut included: ZB-V
// p = 2, m = 1 keeps 6 of rank 0's 18 padded slots ("0F0,3F0,3I0,3W0,0I0,0W0" above), so
// event 3 is stage 3's (chunk 1's) W of microbatch 0, found without generating the others.
PIPESCHED_VERIFY(ps::indexable_policy<ps::zbv> && ps::indexable_policy<ps::dualpipe_v>);
PIPESCHED_VERIFY(zbv_2x1.size(0) == 6 && zbv_2x1.at(0, 3) == ps::event{op::backward_weight, 1, 0, 0, ps::no_peer});
PIPESCHED_VERIFY(dpv_1x2.at(0, 4) == ps::event{op::overlap_f_b, 0, 0, 0, ps::no_peer} &&
                 dpv_1x2.at(0, 6) == ps::event{op::backward, 0, 0, 0, ps::no_peer});

TEST_CASE("zbv and dualpipe_v: at() agrees with the cursor and emit() on every grid shape") {
    std::size_t shapes = 0;
    for_each_v_shape([&](std::uint32_t p, std::uint32_t m) {
        INFO("p=" << p << " m=" << m);
        const ps::zbv zbv{{.ranks = p, .microbatches = m, .chunks = 2}};
        CHECK(pipesched_test::streams_agree(zbv) == 6 * std::size_t{p} * m);
        if (m >= 2 * p) {
            const ps::dualpipe_v dpv{{.ranks = p, .microbatches = m, .chunks = 2}};
            CHECK(pipesched_test::streams_agree(dpv) == p * (6 * std::size_t{m} - p) - 1);
        }
        ++shapes;
    });
    CHECK(shapes == 144);
}

TEST_CASE("zbv and dualpipe_v: cursor, emit() and size() agree") {
    for_each_v_shape([](std::uint32_t p, std::uint32_t m) {
        check_cursor_emit_size(ps::zbv{{.ranks = p, .microbatches = m, .chunks = 2}});
        if (m >= 2 * p) check_cursor_emit_size(ps::dualpipe_v{{.ranks = p, .microbatches = m, .chunks = 2}});
    });
}

/// Every unit (stage, microbatch): exactly one F; ZB-V: exactly one I and one W; DualPipeV:
/// exactly one B, or one I and one W (PyTorch's DualPipeV runs full backwards, B, in its main
/// phase and in pairs, and splits only the zero-bubble ones). Pairs are a marker, an F and a
/// B of another unit; the unit's stage is on the rank the V placement says.
template <ps::schedule_policy P>
void check_units(const P& pol, bool all_split) {
    const ps::shape s = pol.shape;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::array<int, 4>> counts;
    bool pairs_ok = true;
    bool placement_ok = true;
    std::size_t pairs = 0;
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        std::vector<ps::event> seq;
        for (ps::event e : ps::events(pol, r)) seq.push_back(e);
        for (std::size_t i = 0; i < seq.size(); ++i) {
            const ps::event e = seq[i];
            if (e.kind == op::overlap_f_b) {
                ++pairs;
                pairs_ok = pairs_ok && i + 2 < seq.size() && seq[i + 1].kind == op::forward &&
                           seq[i + 2].kind == op::backward &&
                           !(seq[i + 1].chunk == seq[i + 2].chunk &&
                             seq[i + 1].microbatch == seq[i + 2].microbatch);
                continue;
            }
            const std::uint32_t st = ps::stage_of(pol, e);
            placement_ok = placement_ok && ps::locate_stage(ps::placement::v_shape, s.ranks, st) ==
                                               ps::rank_chunk{r, e.chunk};
            ++counts[{st, e.microbatch}][static_cast<std::size_t>(e.kind)];
        }
    }
    INFO(P::name << " p=" << s.ranks << " m=" << s.microbatches);
    CHECK(pairs_ok);
    CHECK(placement_ok);
    CHECK(counts.size() == std::size_t{s.stages()} * s.microbatches);
    for (const auto& [unit, c] : counts) {
        CHECK(c[0] == 1);
        if (all_split) {
            CHECK(c[1] == 0);
            CHECK(c[2] == 1);
            CHECK(c[3] == 1);
        } else {
            CHECK(((c[1] == 1 && c[2] == 0 && c[3] == 0) || (c[1] == 0 && c[2] == 1 && c[3] == 1)));
        }
    }
    if (all_split) CHECK(pairs == 0);
}

TEST_CASE("zbv and dualpipe_v: every unit runs exactly once, pairs are F then B of another unit") {
    for_each_v_shape([](std::uint32_t p, std::uint32_t m) {
        check_units(ps::zbv{{.ranks = p, .microbatches = m, .chunks = 2}}, true);
        if (m >= 2 * p) {
            const ps::dualpipe_v pol{{.ranks = p, .microbatches = m, .chunks = 2}};
            check_units(pol, false);
            // Pairs per rank: 2(m-2p+r+1) + (p-r-1), one fewer on the last rank.
            for (std::uint32_t r = 0; r < p; ++r) {
                std::size_t pairs = 0;
                for (ps::event e : ps::events(pol, r)) pairs += e.kind == op::overlap_f_b ? 1 : 0;
                CHECK(pairs == 2 * (m - 2 * p + r + 1) + (p - r - 1) - (r + 1 == p ? 1 : 0));
            }
        }
    });
}


TEST_CASE("zbv and dualpipe_v: valid and deadlock-free, pairs starting together") {
    for_each_v_shape([](std::uint32_t p, std::uint32_t m) {
        INFO("p=" << p << " m=" << m);
        const ps::zbv z{{.ranks = p, .microbatches = m, .chunks = 2}};
        const ps::verdict vz = ps::validate(z);
        INFO(ps::describe(vz));
        CHECK(static_cast<bool>(vz));
        CHECK(pipesched_test::naive_dependencies_met(z));
        if (m < 2 * p) return;
        const ps::dualpipe_v d{{.ranks = p, .microbatches = m, .chunks = 2}};
        const ps::verdict vd = ps::validate(d);
        INFO(ps::describe(vd));
        CHECK(static_cast<bool>(vd));
        CHECK(pipesched_test::naive_dependencies_met(d));
    });
}

// ---------------------------------------------------------------------------------------------
// Overlapped pairs in validate(): structure and deadlock.

TEST_CASE("dualpipe_v: overlapped pairs that are malformed are named") {
    // One rank, stages 0 and 1 (a V with p = 1), m = 2. The good order (flags, as from CSV):
    //   0F0 1F0 0F1 1B0 (1F1;0B0) 1B1 0B1
    const std::vector<std::vector<ps::action>> good{{act(0, op::forward, 0), act(1, op::forward, 0),
                                                     act(0, op::forward, 1), act(1, op::backward, 0),
                                                     act(1, op::forward, 1, true), act(0, op::backward, 0),
                                                     act(1, op::backward, 1), act(0, op::backward, 1)}};
    CHECK(static_cast<bool>(ps::validate(good)));
    // The same with a marker action instead of the flag.
    std::vector<std::vector<ps::action>> marked = good;
    marked[0][4].overlapped_with_next = false;
    marked[0].insert(marked[0].begin() + 4, act(0, op::overlap_f_b, 0));
    CHECK(static_cast<bool>(ps::validate(marked)));

    const auto code_of = [](std::vector<std::vector<ps::action>> lists) {
        return ps::validate(lists).code;
    };
    // B first, then F.
    auto swapped = good;
    swapped[0][4] = act(0, op::backward, 0, true);
    swapped[0][5] = act(1, op::forward, 1);
    CHECK(code_of(swapped) == ps::verdict_code::malformed_overlap);
    // F then W.
    auto with_w = std::vector<std::vector<ps::action>>{
        {act(0, op::forward, 0), act(1, op::forward, 0), act(1, op::backward_input, 0),
         act(0, op::backward_input, 0), act(0, op::forward, 1, true), act(1, op::backward_weight, 0),
         act(1, op::forward, 1), act(1, op::backward, 1), act(0, op::backward_weight, 0),
         act(0, op::backward, 1)}};
    CHECK(code_of(with_w) == ps::verdict_code::malformed_overlap);
    // F and B of the same unit.
    const std::vector<std::vector<ps::action>> same_unit{
        {act(0, op::forward, 0), act(1, op::forward, 0, true), act(1, op::backward, 0),
         act(0, op::backward, 0)}};
    const ps::verdict v_same = ps::validate(same_unit);
    CHECK(v_same.code == ps::verdict_code::malformed_overlap);
    CHECK(v_same.index == 2);
    CHECK(ps::describe(v_same).find("F and then a B or I of another unit") != std::string::npos);
    // A flag on the last action, a marker at the end, two markers in a row.
    auto flag_last = good;
    flag_last[0].back().overlapped_with_next = true;
    CHECK(code_of(flag_last) == ps::verdict_code::malformed_overlap);
    auto marker_last = good;
    marker_last[0].push_back(act(0, op::overlap_f_b, 0));
    CHECK(code_of(marker_last) == ps::verdict_code::malformed_overlap);
    auto two_markers = marked;
    two_markers[0].insert(two_markers[0].begin() + 4, act(0, op::overlap_f_b, 0));
    CHECK(code_of(two_markers) == ps::verdict_code::malformed_overlap);
    // A marker and a flag on the same pair.
    auto both = marked;
    both[0][5].overlapped_with_next = true;
    CHECK(code_of(both) == ps::verdict_code::malformed_overlap);
    CHECK(ps::to_string(ps::verdict_code::malformed_overlap) == "malformed_overlap");
}

TEST_CASE("dualpipe_v: a pair waits for both inputs, so a pair can deadlock where a sequence does not") {
    // Rank 0 runs stage 0, rank 1 stage 1, m = 2. Rank 0 overlaps 0F1 with 0B0; 0B0 needs 1B0,
    // which rank 1 runs only after 1F1, which needs 0F1: the pair waits for itself.
    const std::vector<std::vector<ps::action>> sequential{
        {act(0, op::forward, 0), act(0, op::forward, 1), act(0, op::backward, 0), act(0, op::backward, 1)},
        {act(1, op::forward, 0), act(1, op::forward, 1), act(1, op::backward, 0), act(1, op::backward, 1)}};
    CHECK(static_cast<bool>(ps::validate(sequential)));
    auto paired = sequential;
    paired[0][1].overlapped_with_next = true;
    const ps::verdict v = ps::validate(paired);
    CHECK(v.code == ps::verdict_code::deadlock);
    CHECK(v.cycle_length == 2);
    ps::discard_timeline none;
    CHECK(ps::simulate(paired, ps::cost_model{}, none).check.code == ps::verdict_code::deadlock);
    CHECK(static_cast<bool>(ps::simulate(sequential, ps::cost_model{}, none)));
}

// ---------------------------------------------------------------------------------------------
// Memory and bubble in the cost-model replay.

// ZB-V peak: min(2p, 2m, m+r+1) chunk activations (F allocates, W frees).
PIPESCHED_VERIFY(ps::peak_activations(zbv_2x4, 0) == 4);
PIPESCHED_VERIFY(ps::simulate(zbv_2x4).ranks[1].peak_activations == 4);
// DualPipeV peak: 2p+1 chunk activations on every rank.
PIPESCHED_VERIFY(ps::simulate(dpv_2x4).ranks[0].peak_activations == 5);
PIPESCHED_VERIFY(ps::peak_activations(dpv_2x4, 1) == 5);

TEST_CASE("zbv: peak activations min(2p, 2m, m+r+1): 2p chunk activations = p microbatches once m >= 2p-1") {
    for_each_v_shape([](std::uint32_t p, std::uint32_t m) {
        const ps::zbv pol{{.ranks = p, .microbatches = m, .chunks = 2}};
        const ps::simulation s = ps::simulate(pol);
        REQUIRE(s);
        for (std::uint32_t r = 0; r < p; ++r) {
            INFO("p=" << p << " m=" << m << " rank=" << r);
            const std::uint32_t expected = std::min({2 * p, 2 * m, m + r + 1});
            CHECK(s.ranks[r].peak_activations == expected);
            CHECK(ps::peak_activations(pol, r) == expected);
            CHECK(pipesched_test::peak_alive(pol, r) == expected);
            if (m >= 2 * p - 1) CHECK(expected == 2 * p);
        }
    });
}

TEST_CASE("zbv: with F = I = W = 1 and m >= 2p-1 every rank idles exactly p-1 (the fill), no more") {
    ps::cost_model unit{};
    unit.uniform = {1.0, 2.0, 1.0, 1.0};
    for_each_v_shape([&](std::uint32_t p, std::uint32_t m) {
        if (m < 2 * p - 1) return;
        const ps::simulation s = ps::simulate(ps::zbv{{.ranks = p, .microbatches = m, .chunks = 2}}, unit);
        REQUIRE(s);
        INFO("p=" << p << " m=" << m);
        CHECK(near(s.makespan, 6.0 * m + (p - 1)));
        for (const ps::rank_summary& r : s.ranks) {
            CHECK(near(r.busy, 6.0 * m));
            CHECK(near(r.idle, p - 1.0));
        }
        CHECK(near(s.bubble_fraction, (p - 1.0) / (6.0 * m + p - 1)));
    });
    // Below 2p-1 microbatches the warm-up cannot be filled: more idle than the fill.
    const ps::simulation few = ps::simulate(ps::zbv{{.ranks = 4, .microbatches = 4, .chunks = 2}}, unit);
    CHECK(few.ranks[0].idle > 3.0);
}

TEST_CASE("dualpipe_v: peak activations 2p+1 chunk activations (DeepSeek's PP+1 with PP = 2p stages)") {
    for_each_v_shape([](std::uint32_t p, std::uint32_t m) {
        if (m < 2 * p) return;
        const ps::dualpipe_v pol{{.ranks = p, .microbatches = m, .chunks = 2}};
        const ps::simulation s = ps::simulate(pol);
        REQUIRE(s);
        for (std::uint32_t r = 0; r < p; ++r) {
            INFO("p=" << p << " m=" << m << " rank=" << r);
            CHECK(s.ranks[r].peak_activations == 2 * p + 1);
            CHECK(ps::peak_activations(pol, r) == 2 * p + 1);
        }
    });
}

/// Largest idle time over the ranks and the idle time of the last rank.
struct idle_times {
    double max = 0.0;
    double last = 0.0;
};
idle_times dualpipe_idle(std::uint32_t p, std::uint32_t m, double f, double i, double w, double fb) {
    ps::cost_model c{};
    c.uniform = {f, i + w, i, w, fb};
    const ps::simulation s = ps::simulate(ps::dualpipe_v{{.ranks = p, .microbatches = m, .chunks = 2}}, c);
    REQUIRE(s);
    idle_times t{};
    for (const ps::rank_summary& r : s.ranks) t.max = std::max(t.max, r.idle);
    t.last = s.ranks.back().idle;
    return t;
}

TEST_CASE("dualpipe_v: bubble (PP/2-1)(F&B+B-3W) with PP = 2p, exactly when F = I and W <= F") {
    std::size_t cases = 0;
    for (const double f : {0.5, 1.0, 1.5, 2.0, 3.0}) {
        for (const double w : {0.25, 0.5, 1.0, 2.0, 3.0}) {
            const double i = f; // the formula's assumption: forward and input-gradient equal
            const double b = i + w;
            for (const double fb : {std::max(f, b), (std::max(f, b) + f + b) / 2, f + b}) {
                for (std::uint32_t p = 1; p <= 8; ++p) {
                    for (std::uint32_t m = 2 * p; m <= 4 * p; m += p) {
                        INFO("F=" << f << " I=" << i << " W=" << w << " F&B=" << fb << " p=" << p << " m=" << m);
                        const idle_times t = dualpipe_idle(p, m, f, i, w, fb);
                        ++cases;
                        if (w <= f) {
                            CHECK(near(t.max, (p - 1) * (fb + b - 3 * w)));
                        } else {
                            // A W cannot fill more than the gap it sits in.
                            CHECK(near(t.max, (p - 1) * (fb + b - 2 * w - f)));
                            if (p > 1) CHECK(t.max > (p - 1) * (fb + b - 3 * w));
                        }
                        CHECK(near(t.last, t.max));
                    }
                }
            }
        }
    }
    CHECK(cases > 1000);
    // With F != I the formula does not hold: F = 2, I = W = 1 idles (p-1)(F&B+B-3W+F-I).
    for (std::uint32_t p = 2; p <= 6; ++p) {
        const idle_times t = dualpipe_idle(p, 3 * p, 2.0, 1.0, 1.0, 3.0);
        CHECK(near(t.max, (p - 1) * (3.0 + 2.0 - 3.0 + 1.0)));
        CHECK_FALSE(near(t.max, (p - 1) * (3.0 + 2.0 - 3.0)));
    }
}

TEST_CASE("dualpipe_v: an overlapped pair takes F + B by default, overlapped_forward_backward when set") {
    const ps::dualpipe_v pol{{.ranks = 4, .microbatches = 12, .chunks = 2}};
    ps::cost_model serial{};
    serial.uniform = {1.0, 2.0, 1.0, 1.0}; // F&B unset: F + B = 3
    ps::cost_model fused = serial;
    fused.uniform.overlapped_forward_backward = 2.0;
    const ps::simulation a = ps::simulate(pol, serial);
    const ps::simulation b = ps::simulate(pol, fused);
    REQUIRE(a);
    REQUIRE(b);
    for (std::uint32_t r = 0; r < 4; ++r) {
        std::size_t pairs = 0;
        for (ps::event e : ps::events(pol, r)) pairs += e.kind == op::overlap_f_b ? 1 : 0;
        // Without overlap every rank works 2m(F + B) = 72 (B = I + W); each pair saves
        // F + B - F&B = 1.
        CHECK(near(a.ranks[r].busy, 72.0));
        CHECK(near(b.ranks[r].busy, 72.0 - static_cast<double>(pairs)));
    }
    CHECK(b.makespan < a.makespan);

    // The timeline: both actions of a pair share start and end; the F comes first, flagged.
    pipesched_test::recording_timeline rec;
    const ps::simulation c = ps::simulate(pol, fused, rec);
    REQUIRE(c);
    std::vector<std::vector<ps::event>> seq(4);
    for (std::uint32_t r = 0; r < 4; ++r) {
        for (ps::event e : ps::events(pol, r)) seq[r].push_back(e);
    }
    std::size_t flagged = 0;
    for (std::size_t k = 0; k + 1 < rec.records.size(); ++k) {
        const ps::timed_action& t = rec.records[k];
        if (!t.what.overlapped_with_next) continue;
        ++flagged;
        const ps::timed_action& u = rec.records[k + 1];
        CHECK(t.what.kind == op::forward);
        CHECK(u.what.kind == op::backward);
        CHECK(t.rank == u.rank);
        CHECK(u.index == t.index + 1);
        CHECK(near(t.start, u.start));
        CHECK(near(t.end, u.end));
        CHECK(near(t.end - t.start, 2.0));
        // Indices are positions in the rank's sequence: the marker sits just before the F.
        REQUIRE(t.index >= 1);
        CHECK(seq[t.rank][t.index - 1].kind == op::overlap_f_b);
    }
    std::size_t markers = 0;
    for (std::uint32_t r = 0; r < 4; ++r) {
        for (ps::event e : ps::events(pol, r)) markers += e.kind == op::overlap_f_b ? 1 : 0;
    }
    CHECK(flagged == markers);
    // Every F, B, I, W once; markers are not timeline entries.
    CHECK(rec.records.size() + markers == ps::event_count(pol));
}

// ---------------------------------------------------------------------------------------------
// Iterations: p2p around the pair, validation and simulation.

TEST_CASE("dualpipe_v: an iteration puts both receives before the marker and both sends after the pair") {
    const ps::iteration it{ps::dualpipe_v{{.ranks = 2, .microbatches = 4, .chunks = 2}}};
    // Rank 0's first pair (0F3;3B1) needs no receive: stage 0 is the first stage and stage 3
    // the last. Its second pair (3F2;0B0): 3F2 takes stage 2's activation from rank 1 and 0B0
    // stage 1's gradient from rank 1, both received before the marker; 3F2 is on the last
    // stage, so its loss follows the pair; neither sends (no stage 4, no stage -1).
    std::vector<ps::event> rank0;
    for (ps::event e : ps::events(it, 0)) rank0.push_back(e);
    const auto second_marker = [&] {
        std::size_t seen = 0;
        for (std::size_t k = 0; k < rank0.size(); ++k) {
            if (rank0[k].kind == op::overlap_f_b && ++seen == 2) return k;
        }
        return rank0.size();
    }();
    REQUIRE(second_marker >= 2);
    REQUIRE(second_marker + 3 < rank0.size());
    CHECK(rank0[second_marker - 2] == ps::event{op::recv_activation, 1, 0, 2, 1});
    CHECK(rank0[second_marker - 1] == ps::event{op::recv_gradient, 0, 0, 0, 1});
    CHECK(rank0[second_marker + 1] == ps::event{op::forward, 1, 0, 2, ps::no_peer});
    CHECK(rank0[second_marker + 2] == ps::event{op::backward, 0, 0, 0, ps::no_peer});
    CHECK(rank0[second_marker + 3] == ps::event{op::loss, 1, 0, 2, ps::no_peer});
    // Rank 1's pair (1F3;2B1): receives 1F3's input (stage 0, rank 0) and 2B1's gradient
    // (stage 3, rank 0) before, sends both (to stage 2: same rank, nothing; to stage 1: same
    // rank, nothing) after: the V keeps stages 1 and 2 together.
    std::vector<ps::event> rank1;
    for (ps::event e : ps::events(it, 1)) rank1.push_back(e);
    std::size_t found = 0;
    for (std::size_t k = 2; k + 3 < rank1.size(); ++k) {
        if (rank1[k].kind != op::overlap_f_b || rank1[k + 1] != ps::event{op::forward, 0, 1, 3, ps::no_peer}) continue;
        ++found;
        CHECK(rank1[k - 2] == ps::event{op::recv_activation, 0, 1, 3, 0});
        CHECK(rank1[k - 1] == ps::event{op::recv_gradient, 1, 1, 1, 0});
        CHECK(rank1[k + 2] == ps::event{op::backward, 1, 1, 1, ps::no_peer});
        CHECK(rank1[k + 3].kind != op::send_activation); // stage 2 is on the same rank
    }
    CHECK(found == 1);
    CHECK(rank0.size() == it.size(0));
    CHECK(rank1.size() == it.size(1));
}

TEST_CASE("dualpipe_v and zbv: whole iterations validate, with every option") {
    const std::array<ps::iteration_options, 3> options{{
        {},
        {ps::grad_sync_mode::overlapped, ps::param_gather_mode::after_step, true, true, true},
        {ps::grad_sync_mode::at_end, ps::param_gather_mode::next_iteration, false, false, true},
    }};
    for (std::uint32_t p = 1; p <= 6; ++p) {
        for (std::uint32_t m = 1; m <= 3 * p; ++m) {
            for (const ps::iteration_options& o : options) {
                INFO("p=" << p << " m=" << m);
                const ps::verdict vz = ps::validate(ps::iteration{ps::zbv{{.ranks = p, .microbatches = m, .chunks = 2}}, o});
                INFO(ps::describe(vz));
                CHECK(static_cast<bool>(vz));
                if (m < 2 * p) continue;
                const ps::iteration it{ps::dualpipe_v{{.ranks = p, .microbatches = m, .chunks = 2}}, o};
                const ps::verdict vd = ps::validate(it);
                INFO(ps::describe(vd));
                CHECK(static_cast<bool>(vd));
                std::size_t n = 0;
                for (ps::event e : ps::events(it, 0)) {
                    (void)e;
                    ++n;
                }
                CHECK(n == it.size(0));
            }
        }
    }
}

TEST_CASE("dualpipe_v: an event between the marker and its pair is malformed") {
    const ps::iteration it{ps::dualpipe_v{{.ranks = 2, .microbatches = 4, .chunks = 2}}};
    std::vector<std::vector<ps::event>> lists(2);
    for (std::uint32_t r = 0; r < 2; ++r) {
        for (ps::event e : ps::events(it, r)) lists[r].push_back(e);
    }
    CHECK(static_cast<bool>(ps::validate_events(lists, it.shape, ps::placement::v_shape)));
    // Move rank 0's second pair's gradient receive between the marker and the F.
    auto moved = lists;
    auto& r0 = moved[0];
    std::size_t seen = 0;
    for (std::size_t k = 0; k < r0.size(); ++k) {
        if (r0[k].kind == op::overlap_f_b && ++seen == 2) {
            std::swap(r0[k - 1], r0[k]); // recv_gradient now after the marker
            break;
        }
    }
    const ps::verdict v = ps::validate_events(moved, it.shape, ps::placement::v_shape);
    CHECK(v.code == ps::verdict_code::malformed_overlap);
}

TEST_CASE("dualpipe_v: simulate(iteration) with free communication equals simulate(policy)") {
    for (std::uint32_t p = 1; p <= 5; ++p) {
        for (std::uint32_t m = 2 * p; m <= 3 * p + 1; ++m) {
            for (const double fb : {-1.0, 2.5}) {
                const ps::dualpipe_v pol{{.ranks = p, .microbatches = m, .chunks = 2}};
                ps::cost_model compute{};
                compute.uniform.overlapped_forward_backward = fb;
                ps::iteration_cost_model costs{};
                costs.compute = compute;
                const ps::simulation plain = ps::simulate(pol, compute);
                const ps::iteration_simulation full = ps::simulate(ps::iteration{pol}, costs);
                INFO("p=" << p << " m=" << m << " F&B=" << fb);
                REQUIRE(full.replayed);
                CHECK(near(full.makespan, plain.makespan));
                for (std::uint32_t r = 0; r < p; ++r) {
                    CHECK(near(full.ranks[r].compute_busy, plain.ranks[r].busy));
                    CHECK(full.ranks[r].peak_activations == plain.ranks[r].peak_activations);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// CSV, catalog.

TEST_CASE("dualpipe_v: write_csv prints pairs as (F;B)OVERLAP_F_B and reads back as the same schedule") {
    const ps::dualpipe_v pol{{.ranks = 2, .microbatches = 4, .chunks = 2}};
    const std::string csv = ps::write_csv(pol);
    CHECK(csv == std::string{dpv_2x4_rank0} + "\n" + std::string{dpv_2x4_rank1} + "\n");
    const ps::csv_result back = ps::read_csv(csv);
    REQUIRE(back);
    CHECK(ps::write_csv(back.table) == csv);
    // The table carries the pairs as flags: it validates and simulates like the policy.
    const ps::verdict v = ps::validate(back.table.ranks, 4, 4);
    INFO(ps::describe(v));
    CHECK(static_cast<bool>(v));
    ps::cost_model c{};
    c.uniform.overlapped_forward_backward = 2.0;
    ps::discard_timeline none;
    const ps::simulation from_file = ps::simulate(back.table.ranks, c, none);
    const ps::simulation from_policy = ps::simulate(pol, c);
    REQUIRE(from_file);
    CHECK(near(from_file.makespan, from_policy.makespan));
    const ps::placement_guess g = ps::infer_placement(back.table);
    CHECK(g.layout == ps::inferred_placement::v_shape);
    // ZB-V has no pairs.
    CHECK(ps::write_csv(zbv_2x4) == std::string{zbv_2x4_rank0} + "\n" + std::string{zbv_2x4_rank1} + "\n");
}

TEST_CASE("zbv and dualpipe_v: catalog names") {
    using ps::schedule_id;
    CHECK(ps::find_schedule("ZBVZeroBubble") == schedule_id::zbv);
    CHECK(ps::find_schedule("zbvzerobubble") == schedule_id::zbv);
    CHECK(ps::find_schedule("zbv") == schedule_id::zbv);
    CHECK(ps::find_schedule("zb-v") == schedule_id::zbv);
    CHECK(ps::find_schedule("DualPipeV") == schedule_id::dualpipe_v);
    CHECK(ps::find_schedule("dualpipev") == schedule_id::dualpipe_v);
    CHECK(ps::find_schedule("dualpipe_v") == schedule_id::dualpipe_v);
    CHECK(ps::info(schedule_id::zbv).pytorch_name == "ZBVZeroBubble");
    CHECK(ps::info(schedule_id::dualpipe_v).pytorch_name == "DualPipeV");
    ps::schedule_options o{};
    o.shape = {2, 4, 2};
    CHECK(ps::with_schedule(schedule_id::zbv, o, [](const auto& pol) { return pol.name; }) == "zbv");
    CHECK(ps::with_schedule(schedule_id::dualpipe_v, o, [](const auto& pol) {
              return ps::write_csv(pol);
          }) == std::string{dpv_2x4_rank0} + "\n" + std::string{dpv_2x4_rank1} + "\n");
}

} // namespace
