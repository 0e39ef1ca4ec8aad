// pipesched: SimAI's order and the corrected order under SimAI's own network model.
//
// Two views, both honest about what they are:
//
// 1. SimAI's analytical sum (analytical_report.hpp). It adds every row's compute and every
//    collective's (exposed) time, plus a bubble formula for pp > 1. It does not depend on the
//    order of the rows, so it is identical for SimAI's order and for any corrected order by
//    construction: analytical SimAI cannot show the difference between the two orders in time,
//    only what the order means for activation memory (peak microbatches in flight) and for
//    where the optimizer and the gradient synchronisation land.
// 2. A timeline replay with SimAI's per-collective times (each collective takes the "total
//    comm" time SimAI's analytical model gives that row and column; computes take the row's
//    compute times): SimAI's order as its pass runs it (computes and blocking collectives in
//    sequence, non-blocking weight-gradient collectives on a communication stream), and the
//    corrected order as `pipesched::iteration` of the chosen policy. This is what a timeline
//    backend (SimAI's ns-3 mode, say) would see: how much communication is exposed depends on
//    the order. For pp > 1 the corrected order runs the policy over pp ranks, each pipeline p2p
//    message taking SimAI's own per-message PP time (pp_comm / 2^30 s / pp_o, the term inside
//    its Expose_PP formula, i.e. 1 GiB/s), and its actual pipeline bubble on rank 0 is set next
//    to SimAI's bubble term (pp-1)/(ga*vpp) x (per-stage forward + backward time).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analytical_report.hpp"
#include "compare.hpp"
#include "compare_catalog.hpp"

namespace pipesched::simai {

struct analytical_comparison {
    analytical_report report{}; ///< SimAI's analytical numbers: the same for both orders
    comparison timeline{};      ///< both orders replayed with SimAI's per-collective times
    double p2p_message_ns = 0.0;
    /// pp > 1: SimAI's bubble term and the bubble the policy actually has on rank 0 in the
    /// timeline replay (its idle time minus the time it waits for data-parallel collectives).
    double simai_bubble_ns = 0.0;
    double policy_bubble_ns = 0.0;
    /// The same with free p2p messages: the bubble of the schedule's dependencies alone.
    double policy_bubble_without_p2p_ns = 0.0;
};

struct analytical_comparison_result {
    analytical_comparison value{};
    std::optional<analytical_error> error;
    explicit operator bool() const noexcept { return !error.has_value(); }
};

/// The network model of `compare` that charges each collective SimAI's analytical time.
[[nodiscard]] inline network_model simai_network_model(const workload& w, const analytical_report& r) {
    network_model net{};
    net.row_collective_ns.resize(r.rows.size());
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
        for (const phase p : {phase::forward, phase::input_grad, phase::weight_grad}) {
            net.row_collective_ns[i][static_cast<std::size_t>(p)] = static_cast<double>(r.rows[i].column(p).comm_ns);
        }
    }
    const double pp_comm = w.header.pp_comm.value_or(0.0);
    net.p2p_message_ns = w.header.pp > 1 && pp_comm > 0.0
                             ? static_cast<double>(static_cast<std::uint32_t>(pp_comm)) * 1.0 / 1073741824.0 /
                                   static_cast<double>(r.options.pp_overlap) * 1e9
                             : 0.0;
    return net;
}

/// SimAI's analytical report of `w` under `opt`, and both orders replayed on SimAI's model;
/// `policy` must have the workload's pp ranks and ga microbatches (see compare).
template <schedule_policy Policy>
[[nodiscard]] analytical_comparison_result compare_analytical(const workload& w, const Policy& policy,
                                                              const analytical_options& opt = {},
                                                              std::string_view name = Policy::name) {
    analytical_comparison_result out{};
    analytical_result r = report(w, opt);
    if (!r) {
        out.error = r.error;
        return out;
    }
    analytical_comparison& c = out.value;
    c.report = std::move(r.value);
    const network_model net = simai_network_model(w, c.report);
    c.p2p_message_ns = net.p2p_message_ns;
    c.timeline = compare(w, policy, net, name);
    c.simai_bubble_ns = c.report.totals.bubble_time_us * 1000.0;
    const auto pipeline_bubble = [](const comparison& t) {
        if (t.corrected_ranks.empty()) return 0.0;
        const iteration_rank_summary& r0 = t.corrected_ranks[0];
        double waiting_for_data_parallel = 0.0;
        for (const comm_kind k : {comm_kind::grad_sync, comm_kind::grad_norm, comm_kind::param_gather}) {
            waiting_for_data_parallel += r0.exposed[static_cast<std::size_t>(k)];
        }
        return r0.idle - waiting_for_data_parallel;
    };
    c.policy_bubble_ns = pipeline_bubble(c.timeline);
    c.policy_bubble_without_p2p_ns = c.policy_bubble_ns;
    if (c.p2p_message_ns > 0.0) {
        network_model free_p2p = net;
        free_p2p.p2p_message_ns = 0.0;
        c.policy_bubble_without_p2p_ns = pipeline_bubble(compare(w, policy, free_p2p, name));
    }
    return out;
}

/// The same for a catalogued schedule chosen at run time, over the workload's pp ranks and ga
/// microbatches with one chunk per rank (a template only so that the dispatch over every
/// schedule is compiled where it is called; see compare_catalog.hpp).
template <int Lazy = 0>
[[nodiscard]] analytical_comparison_result compare_analytical(const workload& w,
                                                              schedule_id policy = schedule_id::one_f_one_b,
                                                              const analytical_options& opt = {}) {
    return with_workload_schedule(w, policy, [&](const auto& pol, std::string_view name) {
        return compare_analytical(w, pol, opt, name);
    });
}

} // namespace pipesched::simai
