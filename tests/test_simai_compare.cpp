// simai::compare: SimAI's order of a real AICB workload against the corrected order.
#include <doctest/doctest.h>

#include <pipesched/simai/compare_catalog.hpp>
#include <pipesched/simai/parse.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace ps = pipesched;
namespace simai = pipesched::simai;

namespace {

simai::workload load(const std::string& file) {
    std::ifstream in(std::string(PIPESCHED_SIMAI_DATA_DIR) + "/" + file, std::ios::binary);
    REQUIRE(in);
    const std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    simai::parse_result r = simai::parse_workload(text);
    REQUIRE(r);
    return r.value;
}

bool near(double a, double b, double relative) { return std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b)); }

TEST_CASE("simai compare: the user's workload, as in the question") {
    const simai::workload w = load("seed_tp2_ga2.txt");
    const simai::comparison c = simai::compare(w);
    // SimAI: F0 F1, loss, optimizer, B1 B0, then the gradient collectives (the user's reading):
    // the backward sweep meets rows 6 (expert reduce-scatter), 5 (expert all-gather), 4 and 3
    // (embedding and layernorm all-reduce), 2 (the parameter update compute), 1 (the dense
    // reduce-scatter) and 0 (the parameter all-gather) in that order.
    const std::vector<std::string> simai_events{"F0", "F1", "loss", "optimizer", "B1", "B0", "grad_sync",
                                                "param_gather", "grad_sync", "optimizer", "grad_sync",
                                                "param_gather"};
    CHECK(c.simai.events == simai_events);
    CHECK(c.simai.peak_microbatches_in_flight == 2);
    CHECK(c.simai.optimizer_before_backward);
    CHECK_FALSE(c.simai.optimizer_after_all_grad_sync);
    CHECK(c.simai.check.code == ps::verdict_code::stale_update);
    CHECK(c.simai.check.index == 4); // F0 F1 loss0 loss1 optimizer

    // Corrected (Megatron's no-pipelining gradient accumulation): the order the user expected.
    const std::vector<std::string> corrected{"F0", "loss", "B0", "F1", "loss", "B1",
                                             "grad_sync", "grad_norm", "optimizer", "param_gather"};
    CHECK(c.corrected.events == corrected);
    CHECK(c.corrected.peak_microbatches_in_flight == 1);
    CHECK_FALSE(c.corrected.optimizer_before_backward);
    CHECK(c.corrected.optimizer_after_all_grad_sync);
    CHECK(c.corrected.check);

    // Same work, so on one rank the same time: SimAI's order costs memory, not time.
    CHECK(near(c.simai.compute_ns, c.corrected.compute_ns, 1e-6));
    CHECK(near(c.simai.makespan_ns, c.corrected.makespan_ns, 1e-3));
    CHECK(near(c.simai.exposed_grad_sync_ns, c.corrected.exposed_grad_sync_ns, 1e-3)); // SimAI overlaps a 5-us zero-byte reduce-scatter

    // Per-microbatch costs from the blocks: rows 7-11 forward = 799000 + 1820000 + 2478000 +
    // 1820000 + 2478000 ns of compute plus five blocking TP all-reduces of 8388608 bytes
    // (5 us + 2 * 8388608 / 200 ns each, plus the rows' update time of 100 ns).
    const double allreduce = 5000.0 + 2.0 * 8388608.0 / 200.0 + 100.0;
    CHECK(near(c.forward_ns[0], 799000.0 + 2 * 1820000.0 + 2 * 2478000.0 + 5 * allreduce, 1e-12));

    // The problems name their rows: the optimizer rows 20-23 run in the forward sweep.
    bool optimizer_problem = false;
    for (const auto& p : c.problems) {
        if (p.what.find("optimizer rows run in the forward sweep") != std::string::npos) {
            optimizer_problem = true;
            CHECK(p.rows == std::vector<std::size_t>{20, 21, 22, 23});
        }
    }
    CHECK(optimizer_problem);
}

TEST_CASE("simai compare: GPipe is SimAI's memory without SimAI's stale optimizer") {
    const simai::comparison c = simai::compare(load("seed_tp2_ga2.txt"), ps::schedule_id::gpipe);
    CHECK(c.corrected.name == "GPipe");
    CHECK(c.corrected.peak_microbatches_in_flight == 2);
    CHECK(c.corrected.check);
    CHECK_FALSE(c.corrected.optimizer_before_backward);
}

TEST_CASE("simai compare: every real workload file") {
    for (const char* file : {"seed_tp2_ga2.txt", "aicb_gpt7b_tp8_pp1_ga8.txt", "aicb_gpt13b_tp8_pp2_ga16.txt",
                             "aicb_deepseek16b_tp2_pp2_ep4_ga8.txt", "aicb_moe_tp2_ep16_pp12_ga24.txt"}) {
        INFO(file);
        const simai::workload w = load(file);
        const simai::comparison c = simai::compare(w);
        REQUIRE(c.layout.ga_unrolled());
        // SimAI keeps every microbatch alive; 1F1B on rank 0 keeps min(pp, ga).
        CHECK(c.simai.peak_microbatches_in_flight == w.header.ga);
        CHECK(c.corrected.peak_microbatches_in_flight == std::min(w.header.pp, w.header.ga));
        CHECK(c.simai.optimizer_before_backward);
        CHECK_FALSE(c.simai.check);
        CHECK(c.corrected.check);
        CHECK(c.corrected.optimizer_after_all_grad_sync);
        // The same compute, whichever the order (one rank's share; ranks are symmetric).
        CHECK(near(c.simai.compute_ns, c.corrected.compute_ns, 1e-4));
        std::size_t forwards = 0;
        for (const auto& e : c.corrected.events) forwards += e[0] == 'F' ? 1 : 0;
        CHECK(forwards == w.header.ga);
        if (w.header.pp == 1) CHECK(near(c.simai.makespan_ns, c.corrected.makespan_ns, 1e-3));
    }
}

} // namespace

namespace {
/// A workload of `ga` identical one-row microbatch blocks (no iteration, loss or optimizer rows).
std::string one_row_blocks(std::uint32_t ga) {
    std::string text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: " +
                       std::to_string(ga) +
                       " all_gpus: 4 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0\n" + std::to_string(ga) + "\n";
    for (std::uint32_t k = 0; k < ga; ++k) text += "mlp\t-1\t100\tALLREDUCE\t1024\t100\tNONE\t0\t100\tNONE\t0\t100\n";
    return text;
}
} // namespace

TEST_CASE("simai compare: microbatch labels of many blocks, found by division") {
    // Row k is microbatch k's block: every step of the row is labelled with microbatch k, in
    // both sweeps. (The labels were found by a search over the blocks, quadratic in ga: 65,536
    // blocks took about two minutes; now the tool answers in 1.5 s.)
    for (const std::uint32_t ga : {1u, 2u, 3u, 64u, 1000u}) {
        INFO("ga = " << ga);
        const simai::parse_result r = simai::parse_workload(one_row_blocks(ga));
        REQUIRE(r);
        const simai::comparison c = simai::compare(r.value);
        REQUIRE(c.layout.ga_unrolled());
        CHECK(c.layout.period == 1);
        std::size_t forwards = 0;
        std::size_t backwards = 0;
        for (const simai::labelled_step& l : c.simai_steps) {
            if (l.role == simai::meaning::forward) ++forwards;
            if (l.role == simai::meaning::backward) ++backwards;
            if (l.role == simai::meaning::forward || l.role == simai::meaning::backward) {
                CHECK(l.microbatch == l.what.row);
            }
        }
        CHECK(forwards >= ga);
        CHECK(backwards >= ga);
        CHECK(c.simai.peak_microbatches_in_flight == ga);
        CHECK(c.corrected.peak_microbatches_in_flight == 1);
    }
}

namespace {
bool same_report(const simai::order_report& a, const simai::order_report& b) {
    return a.name == b.name && a.events == b.events && a.peak_microbatches_in_flight == b.peak_microbatches_in_flight &&
           a.optimizer_before_backward == b.optimizer_before_backward &&
           a.optimizer_after_all_grad_sync == b.optimizer_after_all_grad_sync && a.makespan_ns == b.makespan_ns &&
           a.compute_ns == b.compute_ns && a.exposed_grad_sync_ns == b.exposed_grad_sync_ns && a.check == b.check;
}
} // namespace

TEST_CASE("simai compare: a policy value gives what the catalogued schedule gives") {
    // compare(w, policy) (simai/compare.hpp, instantiates only that policy) and
    // compare(w, schedule_id) (simai/compare_catalog.hpp, dispatches at run time) are one code path.
    const simai::workload w = load("aicb_gpt13b_tp8_pp2_ga16.txt");
    const ps::shape dims{w.header.pp, w.header.ga, 1};
    for (const ps::schedule_info& s : ps::schedules) {
        INFO(s.name);
        const simai::comparison by_id = simai::compare(w, s.id);
        ps::schedule_options options{};
        options.shape = dims;
        const simai::comparison by_value = ps::with_schedule(s.id, options, [&](const auto& pol) {
            return simai::compare(w, pol, {}, ps::display_name(s));
        });
        CHECK(same_report(by_id.simai, by_value.simai));
        CHECK(same_report(by_id.corrected, by_value.corrected));
        CHECK(by_id.problems.size() == by_value.problems.size());
    }
    // The default name is the policy's own.
    const simai::comparison c = simai::compare(w, ps::one_f_one_b<>{dims});
    CHECK(c.corrected.name == "one_f_one_b");
    CHECK(c.corrected.check);
    CHECK(c.corrected.peak_microbatches_in_flight == 2);
}

TEST_CASE("simai compare: a policy of another shape than the workload's is refused, not replayed") {
    const simai::workload w = load("seed_tp2_ga2.txt"); // pp 1, ga 2
    for (const ps::shape dims : {ps::shape{1, 3, 1}, ps::shape{2, 2, 1}, ps::shape{1, 1, 1}}) {
        const simai::comparison c = simai::compare(w, ps::one_f_one_b<>{dims});
        CHECK(c.corrected.check.code == ps::verdict_code::invalid_shape);
        CHECK(c.corrected.check.shape_message == "the policy's ranks and microbatches must be the workload's pp and ga");
        CHECK(c.corrected.events.empty());
        CHECK(c.simai.events.size() == 12); // SimAI's side is there all the same
    }
    // A shape the policy itself rejects names the policy's constraint.
    const simai::comparison c = simai::compare(w, ps::zbv{{.ranks = 1, .microbatches = 2, .chunks = 1}});
    CHECK(c.corrected.check.code == ps::verdict_code::invalid_shape);
    CHECK(c.corrected.check.shape_message == ps::zbv{{.ranks = 1, .microbatches = 2, .chunks = 1}}.check().message);
}
