// SimAI / AICB workload files: parsing the five real files, SimAI's execution order, the
// structure analysis, the writer, and malformed inputs.
#include <doctest/doctest.h>

#include "simai_data.hpp"

#include <pipesched/simai/order.hpp>
#include <pipesched/simai/parse.hpp>
#include <pipesched/simai/structure.hpp>
#include <pipesched/simai/workload.hpp>
#include <pipesched/simai/write.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace sm = pipesched::simai;
using pipesched_test::load_simai_workload;
using pipesched_test::read_simai_data;

// The tables below spell phases, step kinds, collectives and groups with one- and two-letter
// names (F, IG, C, none, rs, ...). The file's own namespace keeps them out of the other test
// files' way when the build compiles several test files as one translation unit (unity build).
namespace simai_parse_tests {

namespace {

sm::phase_cost cost(std::uint64_t ns, sm::collective kind, sm::comm_group group,
                    std::uint64_t bytes) {
    return sm::phase_cost{ns, kind, group, bytes};
}
constexpr auto none = sm::collective::none;
constexpr auto ar = sm::collective::allreduce;
constexpr auto ag = sm::collective::allgather;
constexpr auto rs = sm::collective::reducescatter;
constexpr auto ng = sm::comm_group::none;
constexpr auto tp = sm::comm_group::tp;
constexpr auto dp = sm::comm_group::dp;
constexpr auto dp_ep = sm::comm_group::dp_ep;

sm::row make_row(std::string name, sm::phase_cost f, sm::phase_cost i, sm::phase_cost w,
                 std::uint64_t update = 100) {
    sm::row r;
    r.name = std::move(name);
    r.layer_id = -1;
    r.forward = f;
    r.input_grad = i;
    r.weight_grad = w;
    r.update_ns = update;
    return r;
}

/// A minimal valid row with the given name.
std::string simple_row(std::string_view name) {
    return std::string(name) + "\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t100\n";
}

constexpr std::string_view hdr = "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1\n";

struct malformed_case {
    const char* what;
    std::string text;
    sm::parse_errc code;
    std::size_t line;
    std::size_t field;
    std::size_t column;
    std::string_view message;
};

// --- steps, for comparing orders ------------------------------------------------------------

struct expect_step {
    std::size_t row;
    sm::phase ph;
    sm::step_kind what;
    sm::collective kind;
    sm::comm_group group;
    std::uint64_t bytes;
    std::uint64_t duration_ns;
    bool blocking;
};

constexpr auto F = sm::phase::forward;
constexpr auto IG = sm::phase::input_grad;
constexpr auto WG = sm::phase::weight_grad;
constexpr auto C = sm::step_kind::compute;
constexpr auto X = sm::step_kind::collective;

void check_step(const sm::step& got, const expect_step& e, std::size_t index) {
    INFO("step " << index << ": row " << got.row << " " << got.name << " "
                 << sm::to_string(got.ph));
    CHECK(got.row == e.row);
    CHECK(got.ph == e.ph);
    CHECK(got.what == e.what);
    CHECK(got.kind == e.kind);
    CHECK(got.group == e.group);
    CHECK(got.bytes == e.bytes);
    CHECK(got.duration_ns == e.duration_ns);
    CHECK(got.blocking == e.blocking);
    CHECK_FALSE(got.recompute);
}

} // namespace

// =============================================================================================
// The five real files
// =============================================================================================

TEST_CASE("simai: seed file (the workload from the SimAI GA question)") {
    const sm::workload w = load_simai_workload("seed_tp2_ga2.txt");
    const sm::header& h = w.header;
    CHECK(h.policy == "HYBRID_TRANSFORMER_FWD_IN_BCKWD");
    CHECK(h.tp == 2u);
    CHECK(h.ep == 1u);
    CHECK(h.pp == 1u);
    CHECK(h.vpp == 2u);
    CHECK(h.ga == 2u);
    CHECK(h.all_gpus == 4u);
    REQUIRE(h.checkpoints.has_value());
    CHECK(h.checkpoints->empty());
    REQUIRE(h.checkpoint_initiates.has_value());
    CHECK(h.checkpoint_initiates->empty());
    CHECK(h.pp_comm == 0.0);
    CHECK(h.pp_comm_colon);
    CHECK(h.extra.empty());
    REQUIRE(w.rows.size() == 24);

    CHECK(w.rows.front() == make_row("grad_gather", cost(1, none, ng, 0), cost(1, none, ng, 0),
                                     cost(1, ag, dp, 158859264)));
    CHECK(w.rows[7] == make_row("embedding_layer", cost(799000, ar, tp, 8388608),
                                cost(1, none, ng, 0), cost(17374000, none, ng, 0)));
    CHECK(w.rows[5].weight_grad == cost(1, sm::collective::allgather, dp_ep, 0));
    CHECK(w.rows.back() == make_row("optimizer4", cost(0, ar, tp, 16384), cost(0, none, ng, 0),
                                    cost(0, none, ng, 0)));
}

TEST_CASE("simai: AICB DeepSeek-16B file (TP2 EP4 PP2 GA8, float pp_comm)") {
    const sm::workload w = load_simai_workload("aicb_deepseek16b_tp2_pp2_ep4_ga8.txt");
    const sm::header& h = w.header;
    CHECK(h.tp == 2u);
    CHECK(h.ep == 4u);
    CHECK(h.pp == 2u);
    CHECK(h.vpp == 1u);
    CHECK(h.ga == 8u);
    CHECK(h.all_gpus == 32u);
    CHECK(h.pp_comm == 8388608.0);
    CHECK(h.pp_comm_colon);
    REQUIRE(w.rows.size() == 2581);
    CHECK(w.rows.front() == make_row("grad_gather", cost(1, none, ng, 0), cost(1, none, ng, 0),
                                     cost(1, ag, dp, 1730164736)));
    CHECK(w.rows.back() ==
          make_row("optimizer4", cost(0, ar, tp, 4), cost(0, none, ng, 0), cost(0, none, ng, 0)));
    // all-to-all in the expert-parallel group, both columns
    CHECK(w.rows[20] == make_row("mlp_moelayer",
                                 cost(1, sm::collective::alltoall, sm::comm_group::ep, 25952256),
                                 cost(1, sm::collective::alltoall, sm::comm_group::ep, 50331648),
                                 cost(1, none, ng, 0)));
    // a zero-byte reduce-scatter in the input-gradient column
    CHECK(w.rows[8].name == "attention_q_column");
    CHECK(w.rows[8].input_grad == cost(0, rs, tp, 0));
}

TEST_CASE("simai: AICB GPT-13B file (TP8 PP2 GA16)") {
    const sm::workload w = load_simai_workload("aicb_gpt13b_tp8_pp2_ga16.txt");
    const sm::header& h = w.header;
    CHECK(h.tp == 8u);
    CHECK(h.ep == 1u);
    CHECK(h.pp == 2u);
    CHECK(h.vpp == 20u);
    CHECK(h.ga == 16u);
    CHECK(h.all_gpus == 128u);
    CHECK(h.pp_comm == 2621440.0);
    REQUIRE(w.rows.size() == 1338);
    CHECK(w.rows.front() == make_row("grad_norm", cost(1, ag, tp, 1571307520), cost(1, none, ng, 0),
                                     cost(1, rs, dp, 3142615040)));
    // NONE with a byte count: kept, but SimAI issues nothing
    CHECK(w.rows[3] == make_row("embedding_layer", cost(1, none, ng, 20971520),
                                cost(1, none, ng, 20971520), cost(1, none, ng, 0)));
    CHECK(w.rows.back() ==
          make_row("optimizer4", cost(0, ar, tp, 4), cost(0, none, ng, 0), cost(0, none, ng, 0)));
}

TEST_CASE("simai: AICB GPT-7B file (TP8 PP1 GA8)") {
    const sm::workload w = load_simai_workload("aicb_gpt7b_tp8_pp1_ga8.txt");
    const sm::header& h = w.header;
    CHECK(h.tp == 8u);
    CHECK(h.pp == 1u);
    CHECK(h.vpp == 32u);
    CHECK(h.ga == 8u);
    CHECK(h.all_gpus == 64u);
    CHECK(h.pp_comm == 0.0);
    REQUIRE(w.rows.size() == 1058);
    CHECK(w.rows.front() == make_row("grad_norm", cost(1, ag, tp, 1529348096), cost(1, none, ng, 0),
                                     cost(1, rs, dp, 3058696192)));
    CHECK(w.rows[1050] == make_row("embedding_norm", cost(1, ar, tp, 411705344),
                                   cost(1, none, ng, 0), cost(1, none, ng, 0)));
    CHECK(w.rows.back() ==
          make_row("optimizer4", cost(0, ar, tp, 4), cost(0, none, ng, 0), cost(0, none, ng, 0)));
}

TEST_CASE("simai: AICB MoE file (TP2 EP16 PP12 GA24, `pp_comm` without colon)") {
    const sm::workload w = load_simai_workload("aicb_moe_tp2_ep16_pp12_ga24.txt");
    const sm::header& h = w.header;
    CHECK(h.tp == 2u);
    CHECK(h.ep == 16u);
    CHECK(h.pp == 12u);
    CHECK(h.vpp == 8u);
    CHECK(h.ga == 24u);
    CHECK(h.all_gpus == 9216u);
    CHECK(h.pp_comm == 50331648.0);
    CHECK_FALSE(h.pp_comm_colon);
    REQUIRE(w.rows.size() == 1789);
    CHECK(w.rows.front() == make_row("grad_gather", cost(1, none, ng, 0), cost(1, none, ng, 0),
                                     cost(1, ag, dp, 2807758848)));
    CHECK(w.rows[4].weight_grad == cost(1, ag, dp_ep, 19327352832));
    // plain ALLTOALL in the forward column is the tensor-parallel group
    CHECK(w.rows[10].forward == cost(1, sm::collective::alltoall, tp, 25165824));
    CHECK(w.rows.back() ==
          make_row("optimizer4", cost(0, ar, tp, 4), cost(0, none, ng, 0), cost(0, none, ng, 0)));
}

TEST_CASE("simai: every real file round-trips through write_workload") {
    for (const char* file : {"seed_tp2_ga2.txt", "aicb_deepseek16b_tp2_pp2_ep4_ga8.txt",
                             "aicb_gpt13b_tp8_pp2_ga16.txt", "aicb_gpt7b_tp8_pp1_ga8.txt",
                             "aicb_moe_tp2_ep16_pp12_ga24.txt"}) {
        CAPTURE(file);
        const sm::workload w = load_simai_workload(file);
        const std::string text = sm::write_workload(w);
        const sm::parse_result again = sm::parse_workload(text);
        REQUIRE(again);
        CHECK(again.value == w);
        CHECK(sm::write_workload(again.value) == text);
    }
    // The seed file is tab-separated with one tab; the writer reproduces it byte for byte.
    CHECK(sm::write_workload(load_simai_workload("seed_tp2_ga2.txt")) == read_simai_data("seed_tp2_ga2.txt"));
}

// =============================================================================================
// SimAI's order
// =============================================================================================

TEST_CASE("simai: SimAI's order for the seed file, by hand") {
    const sm::workload w = load_simai_workload("seed_tp2_ga2.txt");
    const std::vector<sm::step> steps = sm::simai_order(w);
    // Forward sweep: rows 0..6 only compute 1 ns (no collectives in their forward column),
    // then every layer row computes and all-reduces in the TP group, blocking.
    const std::vector<expect_step> first{
        {0, F, C, none, ng, 0, 1, false},
        {1, F, C, none, ng, 0, 1, false},
        {2, F, C, none, ng, 0, 1, false},
        {3, F, C, none, ng, 0, 1, false},
        {4, F, C, none, ng, 0, 1, false},
        {5, F, C, none, ng, 0, 1, false},
        {6, F, C, none, ng, 0, 1, false},
        {7, F, C, none, ng, 0, 799000, false}, // embedding_layer, microbatch 0
        {7, F, X, ar, tp, 8388608, 0, true},
        {8, F, C, none, ng, 0, 1820000, false}, // attention_layer
        {8, F, X, ar, tp, 8388608, 0, true},
        {9, F, C, none, ng, 0, 2478000, false}, // mlp_layer
    };
    // End of the backward sweep: the gradient reduce-scatter and all-gather of the distributed
    // optimizer, which AICB put first, come last and do not block.
    const std::vector<expect_step> last{
        {2, IG, C, none, ng, 0, 34021000, false}, // grad_param_compute
        {2, WG, C, none, ng, 0, 1, false},
        {1, IG, C, none, ng, 0, 1, false},
        {1, WG, C, none, ng, 0, 1, false},
        {1, WG, X, rs, dp, 317718528, 0, false}, // grad_param_comm
        {0, IG, C, none, ng, 0, 1, false},
        {0, WG, C, none, ng, 0, 1, false},
        {0, WG, X, ag, dp, 158859264, 0, false}, // grad_gather
    };
    REQUIRE(steps.size() == 74);
    for (std::size_t i = 0; i < first.size(); ++i)
        check_step(steps[i], first[i], i);
    for (std::size_t i = 0; i < last.size(); ++i) {
        const std::size_t at = steps.size() - last.size() + i;
        check_step(steps[at], last[i], at);
    }

    // The forward sweep is 34 steps; it ends with the loss and "optimizer" all-reduces (compute
    // 0 ns is skipped), before any backward step.
    for (std::size_t i = 0; i < 34; ++i)
        CHECK(steps[i].ph == F);
    for (std::size_t i = 34; i < steps.size(); ++i)
        CHECK(steps[i].ph != F);
    for (std::size_t i = 27; i < 34; ++i) {
        CHECK(steps[i].row == i - 10); // rows 17..23
        CHECK(steps[i].what == X);
        CHECK(steps[i].kind == ar);
        CHECK(steps[i].bytes == 16384);
        CHECK(steps[i].blocking);
        CHECK(steps[i].update_ns == 100);
    }
    CHECK(steps[30].name == "optimizer1");
    // Backward starts at the last microbatch's last layer: rows 23..17 have nothing to do.
    check_step(steps[34], {16, IG, C, none, ng, 0, 2478000, false}, 34);
    check_step(steps[35], {16, WG, C, none, ng, 0, 2478000, false}, 35);
    // Microbatch 1's backward (rows 16..12) runs before microbatch 0's (rows 11..7).
    std::vector<std::size_t> backward_rows;
    for (std::size_t i = 34; i < 54; i += 2)
        backward_rows.push_back(steps[i].row);
    CHECK(backward_rows == std::vector<std::size_t>{16, 15, 14, 13, 12, 11, 10, 9, 8, 7});
    // Zero-byte collectives of a real kind are issued: moe_grad_norm2, then moe_grad_norm1.
    check_step(steps[56], {6, WG, X, rs, dp_ep, 0, 0, false}, 56);
    check_step(steps[59], {5, WG, X, ag, dp_ep, 0, 0, false}, 59);
    // The input-gradient all-reduces of layernorm and embedding_grads block.
    check_step(steps[61], {4, IG, X, ar, tp, 8388608, 0, true}, 61);
    check_step(steps[64], {3, IG, X, ar, tp, 158859264, 0, true}, 64);
}

TEST_CASE("simai: order options") {
    const sm::workload seed = load_simai_workload("seed_tp2_ga2.txt");
    SUBCASE("without skipping no-ops every row has six steps") {
        sm::order_options opt;
        opt.skip_noops = false;
        const auto steps = sm::simai_order(seed, opt);
        REQUIRE(steps.size() == 6 * seed.rows.size());
        CHECK(steps[1].what == X);
        CHECK(steps[1].kind == none);
        CHECK(steps[1].update_ns == 0);
        CHECK(steps.back().row == 0);
        CHECK(steps.back().ph == WG);
    }
    SUBCASE("forward collectives below 4096 bytes are padded, others are not") {
        const sm::workload w = load_simai_workload("aicb_deepseek16b_tp2_pp2_ep4_ga8.txt");
        const auto padded = sm::simai_order(w);
        sm::order_options opt;
        opt.pad_small_forward = false;
        const auto exact = sm::simai_order(w, opt);
        REQUIRE(padded.size() == exact.size());
        std::size_t padded_count = 0;
        for (std::size_t i = 0; i < padded.size(); ++i) {
            CHECK(padded[i].file_bytes == exact[i].bytes);
            if (padded[i].bytes != exact[i].bytes) {
                ++padded_count;
                CHECK(padded[i].ph == F);
                CHECK(padded[i].bytes == 4096);
                CHECK(exact[i].bytes > 0);
                CHECK(exact[i].bytes < 4096);
            }
        }
        // 208 mlp_moelayer ALLGATHER 1024 rows (26 MoE layers x 8 microbatches) and the 4
        // optimizer ALLREDUCE 4 rows
        CHECK(padded_count == 212);
        // The zero-byte input-gradient reduce-scatter of attention_q_column is issued unpadded.
        bool found = false;
        for (const auto& s : padded) {
            if (s.row == 8 && s.ph == IG && s.what == X) {
                found = true;
                CHECK(s.kind == rs);
                CHECK(s.bytes == 0);
                CHECK(s.blocking);
            }
        }
        CHECK(found);
    }
    SUBCASE("NONE collectives with bytes are not issued") {
        const sm::workload w = load_simai_workload("aicb_gpt7b_tp8_pp1_ga8.txt");
        for (const auto& s : sm::simai_order(w)) {
            if (s.what == X)
                CHECK(s.kind != none);
        }
        // grad_norm's 1.5 GB forward all-gather is SimAI's second step, before any layer
        const auto steps = sm::simai_order(w);
        check_step(steps[1], {0, F, X, ag, tp, 1529348096, 0, true}, 1);
    }
    SUBCASE("streaming visitor sees the same steps") {
        std::vector<sm::step> seen;
        sm::for_each_step(seed, [&](const sm::step& s) { seen.push_back(s); });
        CHECK(seen == sm::simai_order(seed));
    }
}

TEST_CASE("simai: checkpoints rerun the forward from the checkpoint up to the initiating row") {
    const std::string text =
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 pp: 1 ga: 1 "
        "checkpoints: 1 1 checkpoint_initiates: 1 3\n4\n" +
        std::string("a\t-1\t10\tALLREDUCE\t100\t20\tNONE\t0\t30\tALLREDUCE\t5000\t7\n") +
        "b\t-1\t11\tALLREDUCE\t100\t21\tNONE\t0\t31\tNONE\t0\t7\n" +
        "c\t-1\t12\tALLREDUCE\t5000\t22\tNONE\t0\t32\tNONE\t0\t7\n" +
        "d\t-1\t13\tNONE\t0\t23\tALLGATHER\t64\t33\tNONE\t0\t7\n";
    const sm::parse_result r = sm::parse_workload(text);
    REQUIRE(r);
    CHECK(r.value.header.checkpoints == std::vector<std::uint32_t>{1});
    CHECK(r.value.header.checkpoint_initiates == std::vector<std::uint32_t>{3});
    const auto steps = sm::simai_order(r.value);
    // forward: a(2) b(2) c(2) d(1) = 7; backward d: recompute b, c (4 steps), ig, ig comm, wg
    REQUIRE(steps.size() == 7 + 4 + 3 + 2 + 2 + 3);
    CHECK(steps[7].row == 1);
    CHECK(steps[7].recompute);
    CHECK(steps[7].ph == F);
    CHECK(steps[8].row == 1);
    CHECK(steps[8].bytes == 4096); // padded in recompute as well
    CHECK(steps[8].file_bytes == 100);
    CHECK(steps[9].row == 2);
    CHECK(steps[10].row == 2);
    CHECK(steps[10].bytes == 5000);
    CHECK(steps[11].row == 3);
    CHECK(steps[11].ph == IG);
    CHECK_FALSE(steps[11].recompute);
    CHECK(steps[12].bytes == 64); // input-grad collectives are never padded
    CHECK(steps.back().kind == ar);
    CHECK(steps.back().group == dp);
    CHECK(steps.back().bytes == 5000);
    CHECK(steps.back().update_ns == 7);

    sm::order_options opt;
    opt.recompute = false;
    CHECK(sm::simai_order(r.value, opt).size() == steps.size() - 4);
}

// =============================================================================================
// Structure
// =============================================================================================

TEST_CASE("simai: structure of the seed file") {
    const sm::workload w = load_simai_workload("seed_tp2_ga2.txt");
    const sm::structure s = sm::analyse(w);
    CHECK(s.prefix_end == 7);
    CHECK(s.body_begin == 7);
    CHECK(s.body_end == 17);
    CHECK(s.loss_begin == 17);
    CHECK(s.loss_end == 20);
    CHECK(s.optimizer_begin == 20);
    CHECK(s.optimizer_end == 24);
    CHECK(s.ga == 2);
    CHECK(s.period == 5);
    CHECK(s.natural_period == 5);
    CHECK(s.ga_unrolled());
    REQUIRE(s.blocks.size() == 2);
    CHECK(s.blocks[0] == sm::block{7, 12, 0});
    CHECK(s.blocks[1] == sm::block{12, 17, 1});
    CHECK(s.errors.empty());
    CHECK(s.unknown_rows.empty());
    // Names match; one cost differs: the second embedding_layer's weight-grad compute.
    REQUIRE(s.warnings.size() == 1);
    CHECK(s.warnings_total == 1);
    CHECK(s.warnings[0].row == 12);
    CHECK(s.warnings[0].reference_row == 7);
    CHECK(s.warnings[0].message.find("weight_grad compute 2478000 ns") != std::string::npos);
    CHECK(s.warnings[0].message.find("17374000 ns") != std::string::npos);
    CHECK(s.warnings[0].message.find("line 15") != std::string::npos);
    CHECK(s.roles[0] == sm::row_role::iteration);
    CHECK(s.roles[6] == sm::row_role::iteration);
    CHECK(s.roles[7] == sm::row_role::microbatch);
    CHECK(s.roles[17] == sm::row_role::loss);
    CHECK(s.roles[23] == sm::row_role::optimizer);
}

TEST_CASE("simai: structure of the AICB files (all unroll ga)") {
    struct expected {
        const char* file;
        std::size_t prefix;
        std::size_t period;
        std::uint32_t ga;
        std::size_t warnings;
    };
    for (const expected& e : {expected{"aicb_deepseek16b_tp2_pp2_ep4_ga8.txt", 6, 321, 8, 7},
                              expected{"aicb_gpt13b_tp8_pp2_ga16.txt", 3, 83, 16, 0},
                              expected{"aicb_gpt7b_tp8_pp1_ga8.txt", 3, 131, 8, 0},
                              expected{"aicb_moe_tp2_ep16_pp12_ga24.txt", 6, 74, 24, 23}}) {
        CAPTURE(e.file);
        const sm::workload w = load_simai_workload(e.file);
        const sm::structure s = sm::analyse(w);
        const std::size_t n = w.rows.size();
        CHECK(s.prefix_end == e.prefix);
        CHECK(s.period == e.period);
        CHECK(s.natural_period == e.period);
        CHECK(s.ga == e.ga);
        CHECK(s.ga_unrolled());
        REQUIRE(s.blocks.size() == e.ga);
        CHECK(s.blocks.front().begin == e.prefix);
        CHECK(s.blocks.back().end == n - 7);
        CHECK(s.blocks.back().microbatch == e.ga - 1);
        CHECK(s.loss_begin == n - 7);
        CHECK(s.optimizer_begin == n - 4);
        CHECK(s.errors.empty());
        CHECK(s.unknown_rows.empty());
        CHECK(s.warnings_total == e.warnings);
        // Every cost difference is the same one: microbatch k > 0's embedding_layer weight-grad
        // compute equals the weight-grad compute of the row before it (the previous block's
        // last row), while microbatch 0's is larger.
        for (const sm::finding& f : s.warnings) {
            CHECK(w.rows[f.row].name == "embedding_layer");
            CHECK(f.reference_row == e.prefix);
            CHECK(w.rows[f.row].weight_grad.compute_ns == w.rows[f.row - 1].weight_grad.compute_ns);
            CHECK(w.rows[f.row].weight_grad.compute_ns <
                  w.rows[f.reference_row].weight_grad.compute_ns);
        }
    }
}

TEST_CASE("simai: structure problems are reported with rows") {
    const auto parse = [](const std::string& text) {
        const sm::parse_result r = sm::parse_workload(text);
        REQUIRE_MESSAGE(r, (r.error ? describe(*r.error) : std::string()));
        return r.value;
    };
    SUBCASE("ga not unrolled: one block of rows although the header says ga 2") {
        const std::string text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 2\n5\n" +
                                 simple_row("grad_norm") + simple_row("embedding_layer") +
                                 simple_row("attention_layer") + simple_row("mlp_layer") +
                                 simple_row("optimizer1");
        const sm::structure s = sm::analyse(parse(text));
        CHECK_FALSE(s.ga_unrolled());
        CHECK(s.blocks.empty());
        CHECK(s.natural_period == 3);
        REQUIRE(s.errors.size() == 1);
        CHECK(s.errors[0].message.find("do not split into ga = 2") != std::string::npos);
    }
    SUBCASE("blocks with different names") {
        const std::string text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 2\n4\n" +
                                 simple_row("attention_layer") + simple_row("mlp_layer") +
                                 simple_row("attention_layer") + simple_row("moe_layer");
        const sm::structure s = sm::analyse(parse(text));
        CHECK(s.blocks.empty());
        CHECK(s.period == 0);
        CHECK(s.natural_period == 4);
        REQUIRE(s.errors.size() == 1);
        CHECK(s.errors[0].row == 3);
        CHECK(s.errors[0].reference_row == 1);
        CHECK(s.errors[0].message.find("row 3 (line 6, moe_layer)") != std::string::npos);
    }
    SUBCASE("a loss row among the layer rows has an unknown role") {
        const std::string text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1\n4\n" +
                                 simple_row("layer") + simple_row("cross_entropy1") +
                                 simple_row("layer") + simple_row("optimizer1");
        const sm::structure s = sm::analyse(parse(text));
        CHECK(s.unknown_rows == std::vector<std::size_t>{1});
        CHECK(s.roles[1] == sm::row_role::unknown);
        REQUIRE(s.warnings.size() == 1);
        CHECK(s.warnings[0].message.find("a loss row") != std::string::npos);
        CHECK(s.loss_begin == 3);
        CHECK(s.loss_end == 3);
        CHECK(s.optimizer_begin == 3);
    }
    SUBCASE("no layer rows at all") {
        const std::string text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1\n2\n" +
                                 simple_row("grad_norm") + simple_row("optimizer1");
        const sm::structure s = sm::analyse(parse(text));
        REQUIRE(s.errors.size() == 1);
        CHECK(s.errors[0].message.find("no microbatch rows") != std::string::npos);
    }
}

// =============================================================================================
// Accepted variants
// =============================================================================================

TEST_CASE("simai: accepted spellings") {
    const std::string seed = read_simai_data("seed_tp2_ga2.txt");
    const sm::workload reference = sm::parse_workload(seed).value;

    SUBCASE("CRLF line ends") {
        std::string crlf;
        for (char c : seed) {
            if (c == '\n')
                crlf += '\r';
            crlf += c;
        }
        const auto r = sm::parse_workload(crlf);
        REQUIRE(r);
        CHECK(r.value == reference);
    }
    SUBCASE("runs of spaces instead of tabs (the issue's pasted text), trailing blanks") {
        std::string spaced;
        for (char c : seed) {
            if (c == '\t') {
                spaced += "    ";
            } else if (c == '\n') {
                spaced += " \t \n";
            } else {
                spaced += c;
            }
        }
        const auto r = sm::parse_workload(spaced);
        REQUIRE(r);
        CHECK(r.value == reference);
    }
    SUBCASE("trailing blank lines, and a missing final newline") {
        CHECK(sm::parse_workload(seed + "\n\n  \n").value == reference);
        CHECK(sm::parse_workload(seed.substr(0, seed.size() - 1)).value == reference);
    }
    SUBCASE("numbers as floating-point text") {
        const std::string text = std::string(hdr) + "1\n" +
                                 "x\t-1\t8388608.0\tALLREDUCE\t8.388608e6\t1.\tNONE\t0.0\t1e3\t"
                                 "ALLGATHER_EP\t+5\t1.50e1\n";
        const auto r = sm::parse_workload(text);
        REQUIRE(r);
        const sm::row& x = r.value.rows[0];
        CHECK(x.forward == cost(8388608, ar, tp, 8388608));
        CHECK(x.input_grad == cost(1, none, ng, 0));
        CHECK(x.weight_grad == cost(1000, ag, sm::comm_group::ep, 5));
        CHECK(x.update_ns == 15);
    }
    SUBCASE("header keys without colon, unknown keys, HYBRID_TRANSFORMER") {
        const std::string text =
            "HYBRID_TRANSFORMER ga 4 pp: 2 sequence_parallel: 1 pp_comm 1.5 foo bar\n1\n" +
            simple_row("x");
        const auto r = sm::parse_workload(text);
        REQUIRE(r);
        const sm::header& h = r.value.header;
        CHECK(h.policy == "HYBRID_TRANSFORMER");
        CHECK(h.ga == 4u);
        CHECK(h.pp == 2u);
        CHECK_FALSE(h.tp.has_value());
        CHECK(h.pp_comm == 1.5);
        CHECK_FALSE(h.pp_comm_colon);
        REQUIRE(h.extra.size() == 2);
        CHECK(h.extra[0] == sm::header_entry{"sequence_parallel", true, "1"});
        CHECK(h.extra[1] == sm::header_entry{"foo", false, "bar"});
        const auto again = sm::parse_workload(sm::write_workload(r.value));
        REQUIRE(again);
        CHECK(again.value == r.value);
    }
    SUBCASE("extreme but valid numbers") {
        const std::string text = std::string(hdr) + "1\n" +
                                 "x\t2147483647\t18446744073709551615\tNONE\t0e99999999999999999\t"
                                 "184467440737095516150e-1\tNONE\t00000000000000000000000001\t"
                                 "1e19\tNONE\t0\t0\n";
        const auto r = sm::parse_workload(text);
        REQUIRE(r);
        const sm::row& x = r.value.rows[0];
        CHECK(x.layer_id == 2147483647);
        CHECK(x.forward.compute_ns == 18446744073709551615ull);
        CHECK(x.forward.bytes == 0);
        CHECK(x.input_grad.compute_ns == 18446744073709551615ull);
        CHECK(x.input_grad.bytes == 1);
        CHECK(x.weight_grad.compute_ns == 10000000000000000000ull);
    }
}

// =============================================================================================
// Malformed inputs
// =============================================================================================

TEST_CASE("simai: malformed inputs name the line, the field and the problem") {
    const std::string good = simple_row("a");
    const std::string row12 = "a\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t100";
    const auto with_field = [&](std::size_t field, std::string_view value) {
        std::vector<std::string> f{"a",    "-1", "1", "NONE", "0", "1",
                                   "NONE", "0",  "1", "NONE", "0", "100"};
        f[field - 1] = std::string(value);
        std::string s = std::string(hdr) + "1\n";
        for (std::size_t i = 0; i < f.size(); ++i)
            s += (i ? "\t" : "") + f[i];
        return s + "\n";
    };
    using E = sm::parse_errc;
    // Columns by hand: the policy name is 31 bytes, so in `hdr` "pp:" starts at column 33, its
    // value at 37, "ga:" at 39, its value at 43, and a key appended after it at 45. In a row
    // built by with_field, field k starts after the fields before it and one tab each:
    // "a\t-1\t" puts field 3 at column 6.
    const std::vector<malformed_case> cases{
        {"empty file", "", E::empty_file, 0, 0, 0, "empty file"},
        {"only blanks", "  \n\t\r\n\n", E::empty_file, 0, 0, 0, "empty file"},
        {"header without row count", std::string(hdr), E::missing_row_count, 2, 0, 0,
         "missing row-count line"},
        {"header then blank line", std::string(hdr) + "\n" + good, E::missing_row_count, 2, 0, 0,
         "missing row-count line"},
        {"blank header line", "\n1\n" + good, E::empty_header, 1, 0, 0, "empty header line"},
        {"unknown policy", "DATA pp: 1 ga: 1\n1\n" + good, E::unsupported_policy, 1, 1, 1,
         "unsupported policy 'DATA'"},
        {"missing ga", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1\n1\n" + good, E::missing_key, 1, 0,
         0, "missing required key 'ga:'"},
        {"missing pp", "HYBRID_TRANSFORMER_FWD_IN_BCKWD ga: 2\n1\n" + good, E::missing_key, 1, 0,
         0, "missing required key 'pp:'"},
        {"ga zero", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 0\n1\n" + good, E::zero_value, 1,
         0, 0, "'ga' must be at least 1"},
        {"pp zero", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 0 ga: 1\n1\n" + good, E::zero_value, 1,
         0, 0, "'pp' must be at least 1"},
        {"key without value", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: ga: 1\n1\n" + good,
         E::missing_value, 1, 2, 33, "header key 'pp' has no value"},
        {"key at end without value", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga:\n1\n" + good,
         E::missing_value, 1, 4, 39, "header key 'ga' has no value"},
        {"key that is only a colon", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1 : 3\n1\n" + good,
         E::malformed_key, 1, 6, 45, "malformed header key ':'"},
        {"duplicate key", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1 pp: 2\n1\n" + good,
         E::duplicate_key, 1, 6, 45, "duplicate header key 'pp'"},
        {"non-numeric header value", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: two ga: 1\n1\n" + good,
         E::not_a_number, 1, 3, 37, "header key 'pp': not a number: 'two'"},
        {"header value beyond 32 bits",
         "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 4294967296 ga: 1\n1\n" + good, E::too_large, 1, 3,
         37, "header key 'pp': value 4294967296 does not fit in 32 bits"},
        {"negative pp_comm", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1 pp_comm: -8\n1\n" + good,
         E::negative, 1, 7, 54, "header key 'pp_comm': negative value"},
        {"NaN pp_comm", "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1 pp_comm: nan\n1\n" + good,
         E::nan, 1, 7, 54, "NaN"},
        {"pp_comm beyond a double",
         "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1 pp_comm: 1e999\n1\n" + good,
         E::out_of_range, 1, 7, 54, "header key 'pp_comm': value '1e999' is out of range"},
        {"checkpoint list too short",
         "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1 checkpoints: 3 0\n1\n" + good,
         E::short_layer_list, 1, 7, 58, "announces 3 layers but only 1 tokens follow"},
        {"checkpoint layer not a number",
         "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1 checkpoints: 1 x\n1\n" + good,
         E::not_a_number, 1, 8, 60, "header key 'checkpoints': layer 1 of 1: not a number: 'x'"},
        {"checkpoint out of range",
         "HYBRID_TRANSFORMER_FWD_IN_BCKWD pp: 1 ga: 1 checkpoints: 1 5\n1\n" + good,
         E::layer_out_of_range, 1, 0, 0, "checkpoints: layer 5 is out of range (the file has 1 rows)"},
        {"row count not a number", std::string(hdr) + "twelve\n" + good, E::not_a_number, 2, 1, 1,
         "row count: not a number: 'twelve'"},
        {"row count with two numbers", std::string(hdr) + "1 2\n" + good, E::extra_token, 2, 2, 3,
         "single number"},
        {"row count zero", std::string(hdr) + "0\n", E::zero_value, 2, 1, 1,
         "row count must be at least 1"},
        // 11 fields of 21 bytes and 10 tabs: the missing field would start at column 32.
        {"too few fields", std::string(hdr) + "1\na\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\n",
         E::missing_field, 3, 12, 32, "expected 12 fields, found 11"},
        // 12 fields of 24 bytes and 11 tabs, a tab, then the 13th field at column 37.
        {"too many fields", std::string(hdr) + "1\n" + row12 + "\t7\n", E::extra_field, 3, 13, 37,
         "expected 12 fields, found 13"},
        {"non-numeric compute", with_field(3, "12x"), E::not_a_number, 3, 3, 6,
         "forward compute ns: not a number: '12x'"},
        {"unknown collective", with_field(4, "ALLREDUCE_TP"), E::unknown_collective, 3, 4, 8,
         "forward collective: unknown collective 'ALLREDUCE_TP'"},
        {"lower-case collective", with_field(7, "allreduce"), E::unknown_collective, 3, 7, 17,
         "unknown collective 'allreduce'"},
        {"negative bytes", with_field(5, "-5"), E::negative, 3, 5, 13,
         "forward bytes: negative value '-5'"},
        {"NaN compute", with_field(6, "NaN"), E::nan, 3, 6, 15,
         "input-grad compute ns: NaN is not a valid value"},
        {"infinite compute", with_field(9, "inf"), E::infinity, 3, 9, 24,
         "weight-grad compute ns: infinity"},
        {"overflowing bytes", with_field(11, "18446744073709551616"), E::too_large, 3, 11, 31,
         "weight-grad bytes: value '18446744073709551616' does not fit in 64 bits"},
        {"overflowing exponent", with_field(8, "1e20"), E::too_large, 3, 8, 22,
         "does not fit in 64 bits"},
        {"fractional update", with_field(12, "1.5"), E::fraction, 3, 12, 33,
         "update ns: not a whole number: '1.5'"},
        {"fraction below one", with_field(3, "1e-3"), E::fraction, 3, 3, 6, "not a whole number"},
        {"bad exponent", with_field(3, "1e"), E::not_a_number, 3, 3, 6, "not a number: '1e'"},
        {"layer id not an integer", with_field(2, "x"), E::not_a_number, 3, 2, 3,
         "layer id: not an integer: 'x'"},
        {"layer id too large", with_field(2, "99999999999"), E::too_large, 3, 2, 3,
         "does not fit in an int"},
        {"truncated file", std::string(hdr) + "3\n" + good + good, E::truncated, 5, 0, 0,
         "file ends after 2 of 3 declared rows"},
        // "b\t-1\t1" is 6 bytes: the missing 4th field would start at column 7.
        {"truncated, last line missing its tail", std::string(hdr) + "2\n" + good + "b\t-1\t1",
         E::missing_field, 4, 4, 7, "expected 12 fields, found 3"},
        {"more rows than declared", std::string(hdr) + "1\n" + good + good + good, E::extra_rows, 4,
         0, 0, "header declares 1 rows, found 3"},
        {"blank line between rows", std::string(hdr) + "3\n" + good + "\n" + good + good,
         E::blank_line, 4, 0, 0, "blank line where row 2 of 3 was expected"},
    };
    CHECK(cases.size() >= 15);
    // Every code but none is produced by some case.
    for (auto code = static_cast<std::uint8_t>(E::empty_file);
         code <= static_cast<std::uint8_t>(E::extra_rows); ++code) {
        CAPTURE(static_cast<int>(code));
        CHECK(std::any_of(cases.begin(), cases.end(),
                          [&](const malformed_case& c) { return c.code == static_cast<E>(code); }));
    }
    for (const malformed_case& c : cases) {
        CAPTURE(c.what);
        const sm::parse_result r = sm::parse_workload(c.text);
        REQUIRE_FALSE(r);
        const sm::parse_error& e = *r.error;
        CAPTURE(describe(e));
        CHECK(e.code == c.code);
        CHECK(e.line == c.line);
        CHECK(e.field == c.field);
        CHECK(e.column == c.column);
        CHECK(e.message.find(c.message) != std::string::npos);
        CHECK(sm::describe(e.code) != sm::describe(sm::parse_errc::none));
        CHECK(r.value == sm::workload{}); // nothing half-parsed leaks out
    }
}

TEST_CASE("simai: error columns point at the field") {
    const std::string text =
        std::string(hdr) + "1\nname\t-1\t1\tNONE\t0\t1\tBOGUS\t0\t1\tNONE\t0\t100\n";
    const sm::parse_result r = sm::parse_workload(text);
    REQUIRE_FALSE(r);
    CHECK(r.error->line == 3);
    CHECK(r.error->field == 7);
    CHECK(r.error->column == std::string_view("name\t-1\t1\tNONE\t0\t1\t").size() + 1);
    CHECK(describe(*r.error).rfind("line 3, field 7, column 20: input-grad collective: unknown "
                                     "collective 'BOGUS'",
                                     0) == 0);
    const sm::parse_result h =
        sm::parse_workload("HYBRID_TRANSFORMER_FWD_IN_BCKWD  pp: x ga: 1\n1\n" + simple_row("a"));
    REQUIRE_FALSE(h);
    CHECK(h.error->column == 38);
}

TEST_CASE("simai: fuzz seed corpus (valid_* parse and round-trip, bad_* are rejected)") {
    const std::filesystem::path dir =
        std::filesystem::path(PIPESCHED_SIMAI_DATA_DIR) / ".." / ".." / "fuzz" / "corpus" / "simai";
    REQUIRE(std::filesystem::is_directory(dir));
    std::size_t seen = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        CAPTURE(name);
        std::ifstream in(entry.path(), std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        const sm::parse_result r = sm::parse_workload(ss.str());
        if (name.rfind("valid_", 0) == 0) {
            REQUIRE_MESSAGE(r, (r.error ? describe(*r.error) : std::string()));
            const sm::parse_result again = sm::parse_workload(sm::write_workload(r.value));
            REQUIRE(again);
            CHECK(again.value == r.value);
            ++seen;
        } else if (name.rfind("bad_", 0) == 0) {
            CHECK_FALSE(r);
            ++seen;
        }
    }
    CHECK(seen >= 6);
}

} // namespace simai_parse_tests
