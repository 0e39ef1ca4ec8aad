// The scheduler SimAI can call (simai/scheduler.hpp), driven the way SimAI's Workload would
// drive it, and SimAI's order against the corrected one under SimAI's own network model
// (simai/analytical_compare.hpp).
#include <doctest/doctest.h>

#include <pipesched/catalog.hpp>
#include <pipesched/simai/analytical_compare.hpp>
#include <pipesched/simai/scheduler.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#ifndef PIPESCHED_SIMAI_DATA_DIR
#error "tests/CMakeLists.txt must define PIPESCHED_SIMAI_DATA_DIR"
#endif

namespace sm = pipesched::simai;
namespace ps = pipesched;

namespace {

sm::workload load_file(const std::string& file) {
    const std::string path = std::string(PIPESCHED_SIMAI_DATA_DIR) + "/" + file;
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    std::ostringstream ss;
    ss << in.rdbuf();
    const sm::parse_result r = sm::parse_workload(ss.str());
    REQUIRE_MESSAGE(r, file);
    return r.value;
}

/// A driver in the style of SimAI's Workload::call: one state machine per pipeline rank pulls
/// its next step, charges compute time, runs blocking collectives in line and non-blocking ones
/// on a communication stream, posts sends and blocks a receive until its message has arrived.
/// Collective times are SimAI's analytical ones (the report's "total comm" of the row and
/// column); a p2p message takes p2p_ns.
struct driver_result {
    bool deadlock = false;
    std::uint64_t makespan_ns = 0;
    std::vector<std::vector<sm::scheduled_step>> steps; ///< per rank, in execution order
    std::size_t unmatched_messages = 0;
};

template <class Scheduler>
driver_result drive(const Scheduler& sched, const sm::analytical_report& report, std::uint32_t ranks,
                    std::uint64_t p2p_ns) {
    driver_result out{};
    out.steps.resize(ranks);
    std::vector<typename Scheduler::cursor_type> cursors;
    for (std::uint32_t r = 0; r < ranks; ++r) cursors.push_back(sched.cursor(r));
    std::vector<std::uint64_t> now(ranks, 0), comm_free(ranks, 0);
    // (from, to, activation?, microbatch) -> arrival times, in send order
    std::map<std::tuple<std::uint32_t, std::uint32_t, bool, std::uint32_t>, std::deque<std::uint64_t>> mail;
    const auto comm_ns = [&](const sm::scheduled_step& s) { return report.rows[s.row].column(s.column).comm_ns; };
    bool progress = true;
    while (progress) {
        progress = false;
        for (std::uint32_t r = 0; r < ranks; ++r) {
            auto& c = cursors[r];
            while (!c.done()) {
                const sm::scheduled_step& s = c.current();
                if (s.drain_before) now[r] = std::max(now[r], comm_free[r]);
                if (s.what == sm::scheduled_kind::recv) {
                    const bool activation = s.source.kind == ps::op::recv_activation;
                    auto& box = mail[{s.peer, r, activation, s.microbatch}];
                    if (box.empty()) break; // blocked until the peer sends
                    now[r] = std::max(now[r], box.front());
                    box.pop_front();
                } else if (s.what == sm::scheduled_kind::send) {
                    const bool activation = s.source.kind == ps::op::send_activation;
                    mail[{r, s.peer, activation, s.microbatch}].push_back(now[r] + p2p_ns);
                } else if (s.what == sm::scheduled_kind::compute) {
                    now[r] += s.compute_ns;
                } else if (s.blocking) {
                    now[r] += comm_ns(s);
                } else {
                    comm_free[r] = std::max(now[r], comm_free[r]) + comm_ns(s);
                }
                out.steps[r].push_back(s);
                c.advance();
                progress = true;
            }
        }
    }
    for (std::uint32_t r = 0; r < ranks; ++r) {
        if (!cursors[r].done()) out.deadlock = true;
        out.makespan_ns = std::max({out.makespan_ns, now[r], comm_free[r]});
    }
    for (const auto& [key, box] : mail) out.unmatched_messages += box.size();
    return out;
}

/// (row, column, collective?) of every step SimAI's own pass runs.
std::vector<std::tuple<std::size_t, sm::phase, bool>> simai_work(const sm::workload& w, bool with_loss_rows) {
    const sm::structure st = sm::analyse(w);
    std::vector<std::tuple<std::size_t, sm::phase, bool>> v;
    sm::for_each_step(w, [&](const sm::step& s) {
        if (!with_loss_rows && s.row >= st.loss_begin && s.row < st.loss_end) return;
        v.emplace_back(s.row, s.ph, s.what == sm::step_kind::collective);
    });
    std::sort(v.begin(), v.end());
    return v;
}

std::vector<std::tuple<std::size_t, sm::phase, bool>> work_of(const std::vector<sm::scheduled_step>& steps) {
    std::vector<std::tuple<std::size_t, sm::phase, bool>> v;
    for (const sm::scheduled_step& s : steps) {
        if (s.what == sm::scheduled_kind::compute || s.what == sm::scheduled_kind::collective) {
            v.emplace_back(s.row, s.column, s.what == sm::scheduled_kind::collective);
        }
    }
    std::sort(v.begin(), v.end());
    return v;
}

} // namespace

TEST_CASE("simai scheduler: the seed workload in Megatron's order, driven like SimAI") {
    const sm::workload w = load_file("seed_tp2_ga2.txt");
    const sm::simai_command cmd = sm::parse_simai_arguments("-g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25");
    const sm::analytical_result report = sm::report(w, cmd.options);
    REQUIRE(report);
    const ps::one_f_one_b<> pol{{.ranks = 1, .microbatches = 2, .chunks = 1}};
    const sm::step_scheduler sched{w, pol};
    REQUIRE(!sched.error());
    const driver_result d = drive(sched, report.value, 1, 0);
    REQUIRE(!d.deadlock);
    const std::vector<sm::scheduled_step>& s = d.steps[0];

    // The order, as (source op, microbatch, first row .. last row) runs of steps.
    std::string order;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i > 0 && s[i].source == s[i - 1].source) continue;
        std::size_t j = i;
        while (j + 1 < s.size() && s[j + 1].source == s[i].source) ++j;
        order += std::string(ps::to_string(s[i].source.kind)) + (s[i].source.kind == ps::op::forward || s[i].source.kind == ps::op::backward ? std::to_string(s[i].microbatch) : "") +
                 "[" + std::to_string(s[i].row) + ".." + std::to_string(s[j].row) + "] ";
    }
    // F0 B0 F1, the loss rows once, B1, then grad sync (reduce-scatter row 1, layernorm 3,
    // embedding 4, expert reduce-scatter 6), the optimizer (after draining: grad_param_compute
    // and the 1-ns placeholders of rows 0-6, then the optimizer* all-reduces) and the
    // parameter all-gathers (rows 0 and 5).
    CHECK(order == "forward0[7..11] backward0[11..7] forward1[12..16] loss[17..19] backward1[16..12] "
                   "grad_sync[1..6] optimizer_step[0..23] param_gather[0..5] ");
    const auto optimizer = std::find_if(s.begin(), s.end(), [](const sm::scheduled_step& x) {
        return x.source.kind == ps::op::optimizer_step;
    });
    REQUIRE(optimizer != s.end());
    CHECK(optimizer->drain_before);
    // Every row's work exactly once, as in SimAI's pass.
    CHECK(work_of(s) == simai_work(w, true));
    // One rank, nothing to overlap in this order: the timeline equals SimAI's analytical sum,
    // 117.163 ms, the number SimAI prints for this command.
    CHECK(d.makespan_ns == 117163402); // SimAI: 117163 us (107047.022 compute + 10116.380 comm)
    CHECK(static_cast<double>(d.makespan_ns) == doctest::Approx(report.value.totals.total_time_us * 1000.0));
}

namespace {

// Every catalogued policy, one and two chunks, on each workload file: no deadlock, every message
// matched, and SimAI's work on every rank.
void check_every_policy(std::initializer_list<const char*> files) {
    for (const char* file : files) {
        const sm::workload w = load_file(file);
        const sm::analytical_result report = sm::report(w);
        REQUIRE(report);
        const auto all = simai_work(w, true);
        const auto without_loss = simai_work(w, false);
        for (const ps::schedule_info& info : ps::schedules) {
            for (const std::uint32_t chunks : {1u, 2u}) {
                ps::schedule_options o{};
                o.shape = ps::shape{w.header.pp, w.header.ga, chunks};
                // Through any_schedule (the catalogued policy's events): the scheduler is
                // compiled per placement, not per policy type.
                ps::with_any_schedule(info.id, o, [&](const auto& pol) {
                    if (!pol.check() || !ps::iteration{pol}.check()) return; // the iteration of one pipeline (DualPipe: test_dualpipe.cpp)
                    CAPTURE(file);
                    CAPTURE(info.name);
                    CAPTURE(chunks);
                    const sm::step_scheduler sched{w, pol};
                    REQUIRE(!sched.error());
                    const driver_result d = drive(sched, report.value, w.header.pp, 1000);
                    CHECK(!d.deadlock);
                    CHECK(d.unmatched_messages == 0);
                    for (std::uint32_t r = 0; r < w.header.pp; ++r) {
                        const bool last_stage = sched.schedule().stage(r, 0) + 1 == o.shape.stages() ||
                                                (chunks > 1 && sched.schedule().stage(r, chunks - 1) + 1 == o.shape.stages());
                        CHECK(work_of(d.steps[r]) == (last_stage ? all : without_loss));
                    }
                });
            }
        }
    }
}

} // namespace

TEST_CASE("simai scheduler: every policy on the four smaller files, no deadlock, SimAI's work on every rank") {
    check_every_policy({"seed_tp2_ga2.txt", "aicb_gpt7b_tp8_pp1_ga8.txt", "aicb_gpt13b_tp8_pp2_ga16.txt",
                        "aicb_deepseek16b_tp2_pp2_ep4_ga8.txt"});
}

// The largest file (12 ranks, 24 microbatches), most of the time: run by ctest as
// pipesched_tests.large_grids in optimised builds (tests/CMakeLists.txt), not under the
// sanitizers' -O0.
TEST_CASE("simai scheduler: every policy on the largest file (pp 12, ga 24)" *
          doctest::test_suite("large grids") * doctest::skip()) {
    check_every_policy({"aicb_moe_tp2_ep16_pp12_ga24.txt"});
}

TEST_CASE("simai scheduler: refuses what it cannot map") {
    const sm::workload w = load_file("seed_tp2_ga2.txt");
    const sm::step_scheduler wrong_ga{w, ps::one_f_one_b<>{{.ranks = 1, .microbatches = 4, .chunks = 1}}};
    REQUIRE(wrong_ga.error());
    CHECK(wrong_ga.error()->find("ga 2") != std::string::npos);
    sm::workload odd = w;
    odd.rows.erase(odd.rows.begin() + 9); // one attention_layer less in microbatch 0
    const sm::step_scheduler broken{odd, ps::one_f_one_b<>{{.ranks = 1, .microbatches = 2, .chunks = 1}}};
    REQUIRE(broken.error());
    CHECK(broken.error()->find("do not split") != std::string::npos);
}

TEST_CASE("simai analytical comparison: one model, two views") {
    SUBCASE("pp = 1: the analytical sum cannot tell the orders apart") {
        const sm::workload w = load_file("seed_tp2_ga2.txt");
        const sm::simai_command cmd = sm::parse_simai_arguments("-g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25");
        const sm::analytical_comparison_result r = sm::compare_analytical(w, ps::schedule_id::one_f_one_b, cmd.options);
        REQUIRE(r);
        const sm::analytical_comparison& c = r.value;
        CHECK(std::lround(c.report.totals.total_time_us) == 117163);
        // Both timelines, on one rank with every collective blocking or at the end, equal
        // SimAI's analytical sum; what differs is memory and placement.
        CHECK(c.timeline.simai.makespan_ns == doctest::Approx(117163402.0).epsilon(1e-6));
        CHECK(c.timeline.corrected.makespan_ns == doctest::Approx(c.timeline.simai.makespan_ns).epsilon(1e-6));
        CHECK(c.timeline.simai.peak_microbatches_in_flight == 2);
        CHECK(c.timeline.corrected.peak_microbatches_in_flight == 1);
        CHECK(c.timeline.simai.optimizer_before_backward);
        CHECK(!c.timeline.corrected.optimizer_before_backward);
        CHECK(c.simai_bubble_ns == 0.0);
    }
    SUBCASE("pp > 1: SimAI's bubble term against the policy's actual bubble") {
        const sm::workload w = load_file("aicb_moe_tp2_ep16_pp12_ga24.txt");
        const sm::simai_command cmd = sm::parse_simai_arguments("-g 9216 -g_p_s 8 -n_p_s 8 -nv 360 -nic 48.5");
        const sm::analytical_comparison_result r = sm::compare_analytical(w, ps::schedule_id::one_f_one_b, cmd.options);
        REQUIRE(r);
        const sm::analytical_comparison& c = r.value;
        // SimAI: "..., 345984 (4.59%), 4542795 (60.20%), 2656839 (35.21%), 7545619"
        CHECK(std::lround(c.report.totals.bubble_time_us) == 345984);
        // SimAI divides by ga * vpp, and AICB's vpp (8 here) is the layers per stage, not
        // virtual stages; 1F1B's bubble is (pp-1) (F+B) of one microbatch, about vpp times more.
        CHECK(c.policy_bubble_without_p2p_ns > 5 * c.simai_bubble_ns);
        CHECK(c.policy_bubble_ns >= c.policy_bubble_without_p2p_ns);
        // SimAI's per-message PP time: 50331648 / 2^30 s = 46.875 ms at pp_o = 1.
        CHECK(c.p2p_message_ns == doctest::Approx(46875000.0));
        // The analytical sum is the same for any order of the rows.
        sm::workload reversed = w;
        std::reverse(reversed.rows.begin(), reversed.rows.end());
        const sm::analytical_result rr = sm::report(reversed, cmd.options);
        REQUIRE(rr);
        CHECK(rr.value.totals.total_time_us == doctest::Approx(c.report.totals.total_time_us).epsilon(1e-12));
    }
}
