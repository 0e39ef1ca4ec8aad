// pipesched: SimAI's execution order of an AICB workload against the order a training
// framework runs, with the numbers that show the difference.
//
// Every step of SimAI's pass (order.hpp: for_each_step) is given its meaning in one training
// iteration, from the row's role in the AICB file (simai::analyse) and the column and group of
// the step:
//   microbatch block k, forward column              -> F of microbatch k
//   microbatch block k, input/weight-grad columns   -> B of microbatch k, except data-parallel
//                                                      weight-grad collectives -> grad_sync
//   cross_entropy* rows                             -> loss
//   optimizer* rows                                 -> optimizer_step
//   iteration-level rows: all-gathers               -> param_gather (distributed optimizer)
//                         other collectives         -> grad_sync (reduce-scatter / all-reduce of
//                                                      gradients: dense, expert (AICB's
//                                                      moe_grad_norm* rows carry the expert
//                                                      reduce-scatter and all-gather, whatever
//                                                      their name), layernorm and embedding)
//                         computes                  -> optimizer_step (AICB's grad_param_compute)
// AICB writes no row for the gradient-norm all-reduce itself; the corrected order keeps
// Megatron's grad_norm step at zero cost.
// AICB's 1-ns placeholder computes are kept in the timing but have no meaning of their own.
//
// Both orders are replayed on one pipeline rank with the same network model (collective time =
// latency + factor * bytes / bandwidth of the collective's group, factor 2 for all-reduce):
// SimAI's order as SimAI runs it (computes and blocking collectives in sequence, non-blocking
// ones on a communication stream that the end of the pass waits for), and the corrected order
// as pipesched::iteration<policy> with the same per-microbatch costs. For pp > 1 the file
// describes one stage and has no send/recv rows; SimAI's pass is replayed for that stage alone,
// while the corrected order runs the policy over pp ranks with pp_comm bytes per p2p message.
//
// compare(w, policy) is a template on the policy, so including this header instantiates no
// schedule: only the policy a caller passes is compiled. compare(w, schedule_id), the run-time
// choice over every catalogued schedule, is in compare_catalog.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../analysis/simulate_iteration.hpp"
#include "../analysis/validate_iteration.hpp"
#include "../detail/enum_table.hpp"
#include "../iteration.hpp"
#include "../policy.hpp"
#include "order.hpp"
#include "structure.hpp"
#include "workload.hpp"

namespace pipesched::simai {

/// Bandwidths in bytes per nanosecond (= GB/s) and a per-collective latency.
struct network_model {
    double tp_bandwidth = 200.0; ///< tensor parallel, inside a node (NVLink class)
    double dp_bandwidth = 25.0;  ///< data parallel, across nodes (200 Gb/s NIC)
    double ep_bandwidth = 25.0;  ///< expert parallel and expert data parallel
    double pp_bandwidth = 25.0;  ///< pipeline p2p
    double latency_ns = 5000.0;  ///< per collective or p2p message

    [[nodiscard]] double collective_ns(collective kind, comm_group group, std::uint64_t bytes) const {
        if (kind == collective::none) return 0.0;
        const double bandwidth = group == comm_group::tp ? tp_bandwidth
                                 : group == comm_group::dp ? dp_bandwidth
                                                           : ep_bandwidth;
        const double factor = kind == collective::allreduce || kind == collective::allreduce_alltoall ? 2.0 : 1.0;
        return latency_ns + (bandwidth > 0.0 ? factor * static_cast<double>(bytes) / bandwidth : 0.0);
    }

    /// When not empty, row r's collective in column p takes row_collective_ns[r][p] ns instead
    /// of the formula above (update_ns included): SimAI's own analytical per-collective times
    /// (simai/analytical_compare.hpp fills it).
    std::vector<std::array<double, 3>> row_collective_ns{};
    /// When >= 0, one pipeline p2p message takes this long instead of latency + pp_comm / pp_bandwidth.
    double p2p_message_ns = -1.0;

    [[nodiscard]] double step_ns(const step& s) const {
        if (s.row < row_collective_ns.size()) return row_collective_ns[s.row][static_cast<std::size_t>(s.ph)];
        return collective_ns(s.kind, s.group, s.bytes) + static_cast<double>(s.update_ns);
    }
};

/// What a SimAI step means in a training iteration.
enum class meaning : std::uint8_t {
    placeholder, ///< AICB's 1-ns computes: time only
    forward,
    backward,
    loss,
    optimizer,
    grad_sync,
    grad_norm,
    param_gather,
};

inline constexpr auto meaning_names = pipesched::detail::enum_table<meaning::param_gather>(
    {{meaning::placeholder, "placeholder"}, {meaning::forward, "forward"},
     {meaning::backward, "backward"}, {meaning::loss, "loss"}, {meaning::optimizer, "optimizer"},
     {meaning::grad_sync, "grad_sync"}, {meaning::grad_norm, "grad_norm"},
     {meaning::param_gather, "param_gather"}});

[[nodiscard]] constexpr std::string_view to_string(meaning m) noexcept { return pipesched::detail::name_in(meaning_names, m); }

/// One SimAI step with its meaning and its times in SimAI's pass.
struct labelled_step {
    step what{};
    meaning role = meaning::placeholder;
    std::uint32_t microbatch = 0; ///< forward / backward only
    double duration_ns = 0.0;     ///< compute time, or the collective's network time
    double start_ns = 0.0;
    double end_ns = 0.0;
};

/// One order's facts, as `pipesched simai` reports them.
struct order_report {
    std::string name;
    std::vector<std::string> events; ///< compact: F0 F1 loss optimizer B1 B0 grad_sync ...
    std::uint32_t peak_microbatches_in_flight = 0;
    bool optimizer_before_backward = false;     ///< an optimizer step before the last backward
    bool optimizer_after_all_grad_sync = false; ///< every optimizer step after every grad sync
    double makespan_ns = 0.0;
    double compute_ns = 0.0;           ///< forward + backward + loss + optimizer compute
    double exposed_grad_sync_ns = 0.0; ///< time the rank waits for gradient synchronisation
    verdict check{};                   ///< pipesched's iteration rules on this order
};

/// A problem of SimAI's order, with the rows involved.
struct ordering_problem {
    std::string what;
    std::vector<std::size_t> rows;
};

struct comparison {
    structure layout{};
    std::vector<labelled_step> simai_steps;
    order_report simai;
    order_report corrected;
    std::vector<ordering_problem> problems;
    std::uint32_t ga = 1;
    std::uint32_t pp = 1;
    std::vector<double> forward_ns;  ///< per microbatch, from its block
    std::vector<double> backward_ns; ///< per microbatch
    double loss_ns = 0.0;            ///< all loss rows, once per iteration
    double optimizer_ns = 0.0;
    double grad_sync_ns = 0.0;
    double grad_norm_ns = 0.0;
    double param_gather_ns = 0.0;
    std::vector<iteration_rank_summary> corrected_ranks; ///< the corrected replay, per rank
};

namespace detail {

[[nodiscard]] inline meaning meaning_of(const structure& st, const step& s,
                                        std::uint32_t& microbatch) {
    const row_role role = st.roles[s.row];
    const bool collective_step = s.what == step_kind::collective;
    // Outside the microbatch blocks a 1-ns compute is AICB's placeholder; inside them it is
    // the (tiny) compute of that microbatch, which keeps F and B visible in files that only
    // model communication (the GPT files).
    if (!collective_step && s.duration_ns <= 1 && role != row_role::microbatch) return meaning::placeholder;
    switch (role) {
    case row_role::loss: return meaning::loss;
    case row_role::optimizer: return meaning::optimizer;
    case row_role::microbatch:
        // The blocks are ga runs of `period` rows from the first block on: a division, not a
        // search, so that labelling stays linear in the rows however large ga is.
        if (st.period != 0 && !st.blocks.empty() && s.row >= st.blocks.front().begin &&
            s.row < st.blocks.back().end) {
            microbatch = st.blocks[(s.row - st.blocks.front().begin) / st.period].microbatch;
        }
        if (s.ph == phase::forward) return meaning::forward;
        if (collective_step && s.ph == phase::weight_grad && s.group == comm_group::dp) return meaning::grad_sync;
        return meaning::backward;
    case row_role::iteration:
        if (!collective_step) return meaning::optimizer;
        return s.kind == collective::allgather ? meaning::param_gather : meaning::grad_sync;
    case row_role::unknown: break;
    }
    return meaning::placeholder;
}

[[nodiscard]] inline std::string short_name(meaning m, std::uint32_t microbatch) {
    if (m == meaning::forward) return "F" + std::to_string(microbatch);
    if (m == meaning::backward) return "B" + std::to_string(microbatch);
    return std::string{to_string(m)};
}

/// Per-event costs of the corrected order, from the workload's rows.
struct workload_costs {
    const comparison* c;
    [[nodiscard]] double duration(const event& e, std::uint32_t) const {
        switch (e.kind) {
        case op::forward: return c->forward_ns[e.microbatch];
        case op::backward: return c->backward_ns[e.microbatch];
        case op::loss: return c->loss_ns / c->ga; // AICB writes the loss rows once for all microbatches
        case op::optimizer_step: return c->optimizer_ns;
        default: return 0.0;
        }
    }
    [[nodiscard]] double transfer(const event& e, std::uint32_t) const {
        switch (e.kind) {
        case op::grad_sync: return c->grad_sync_ns;
        case op::grad_norm: return c->grad_norm_ns;
        case op::param_gather: return c->param_gather_ns;
        case op::send_activation:
        case op::send_gradient: return p2p_ns;
        default: return 0.0;
        }
    }
    double p2p_ns = 0.0;
};

/// The order-independent facts of a sequence of (meaning, microbatch) events.
inline void summarise(order_report& r, const std::vector<std::pair<meaning, std::uint32_t>>& seq) {
    std::int64_t alive = 0;
    std::int64_t peak = 0;
    std::size_t last_backward = 0;
    std::size_t last_sync = 0;
    std::size_t first_optimizer = seq.size();
    bool any_backward = false;
    bool any_sync = false;
    for (std::size_t i = 0; i < seq.size(); ++i) {
        const meaning m = seq[i].first;
        if (m == meaning::forward) peak = std::max(peak, ++alive);
        if (m == meaning::backward) {
            --alive;
            last_backward = i;
            any_backward = true;
        }
        if (m == meaning::grad_sync) {
            last_sync = i;
            any_sync = true;
        }
        if (m == meaning::optimizer && first_optimizer == seq.size()) first_optimizer = i;
        r.events.push_back(short_name(m, seq[i].second));
    }
    r.peak_microbatches_in_flight = static_cast<std::uint32_t>(peak);
    const bool has_optimizer = first_optimizer < seq.size();
    r.optimizer_before_backward = has_optimizer && any_backward && first_optimizer < last_backward;
    r.optimizer_after_all_grad_sync = has_optimizer && (!any_sync || first_optimizer > last_sync);
}

} // namespace detail

/// Labels SimAI's pass and replays it as SimAI does.
[[nodiscard]] inline std::vector<labelled_step> label_simai_order(const workload& w, const structure& st,
                                                                  const network_model& net,
                                                                  order_options opt = {}) {
    std::vector<labelled_step> out;
    double now = 0.0;
    double comm_free = 0.0;
    for_each_step(
        w,
        [&](const step& s) {
            labelled_step l{};
            l.what = s;
            l.role = detail::meaning_of(st, s, l.microbatch);
            if (s.what == step_kind::compute) {
                l.duration_ns = static_cast<double>(s.duration_ns);
                l.start_ns = now;
                now += l.duration_ns;
                l.end_ns = now;
            } else {
                l.duration_ns = net.step_ns(s);
                if (s.blocking) {
                    l.start_ns = now;
                    now += l.duration_ns;
                    l.end_ns = now;
                } else {
                    l.start_ns = std::max(now, comm_free);
                    comm_free = l.start_ns + l.duration_ns;
                    l.end_ns = comm_free;
                }
            }
            out.push_back(l);
        },
        opt);
    return out;
}

namespace detail {

/// Everything of a comparison but the corrected order: SimAI's pass labelled and replayed, the
/// costs per meaning, SimAI's order's facts and problems.
[[nodiscard]] inline comparison compare_simai_order(const workload& w, const network_model& net) {
    comparison c{};
    c.layout = analyse(w);
    c.ga = std::max<std::uint32_t>(1, w.header.ga);
    c.pp = std::max<std::uint32_t>(1, w.header.pp);
    c.forward_ns.assign(c.ga, 0.0);
    c.backward_ns.assign(c.ga, 0.0);
    c.simai_steps = label_simai_order(w, c.layout, net);

    // Costs per meaning, and SimAI's order as a sequence of meanings (consecutive steps of the
    // same meaning and microbatch are one event).
    std::vector<std::pair<meaning, std::uint32_t>> seq;
    std::vector<std::vector<std::size_t>> seq_rows;
    double simai_end_of_compute = 0.0;
    for (const labelled_step& l : c.simai_steps) {
        const double d = l.duration_ns;
        switch (l.role) {
        case meaning::forward: c.forward_ns[l.microbatch] += d; break;
        case meaning::backward: c.backward_ns[l.microbatch] += d; break;
        case meaning::loss: c.loss_ns += d; break;
        case meaning::optimizer: c.optimizer_ns += d; break;
        case meaning::grad_sync: c.grad_sync_ns += d; break;
        case meaning::grad_norm: c.grad_norm_ns += d; break;
        case meaning::param_gather: c.param_gather_ns += d; break;
        case meaning::placeholder: break;
        }
        if (l.role != meaning::grad_sync && l.role != meaning::param_gather) simai_end_of_compute = std::max(simai_end_of_compute, l.end_ns);
        if (l.role == meaning::placeholder) continue;
        if (seq.empty() || seq.back() != std::pair{l.role, l.microbatch}) {
            seq.emplace_back(l.role, l.microbatch);
            seq_rows.emplace_back();
        }
        if (seq_rows.back().empty() || seq_rows.back().back() != l.what.row) seq_rows.back().push_back(l.what.row);
    }

    // SimAI's order.
    c.simai.name = "SimAI";
    detail::summarise(c.simai, seq);
    for (const labelled_step& l : c.simai_steps) {
        c.simai.makespan_ns = std::max(c.simai.makespan_ns, l.end_ns);
        if (l.what.what == step_kind::compute || l.what.blocking) {
            if (l.role != meaning::grad_sync && l.role != meaning::param_gather && l.role != meaning::grad_norm) {
                c.simai.compute_ns += l.duration_ns;
            }
        }
    }
    // Gradient-sync time the rank cannot hide: blocking steps in full, non-blocking ones for the
    // part that runs after the last compute (the pass ends by waiting for them).
    for (const labelled_step& l : c.simai_steps) {
        if (l.role != meaning::grad_sync) continue;
        c.simai.exposed_grad_sync_ns += l.what.blocking ? l.duration_ns
                                                        : std::max(0.0, l.end_ns - std::max(l.start_ns, simai_end_of_compute));
    }
    {
        // The same order as pipesched events on one rank, for the iteration rules.
        std::vector<std::vector<event>> events(1);
        std::uint32_t synced = 0;
        for (const auto& [m, mb] : seq) {
            const auto add = [&](op kind, std::uint32_t micro) {
                events[0].push_back(event{kind, 0, 0, static_cast<std::uint16_t>(micro), no_peer});
            };
            switch (m) {
            case meaning::forward: add(op::forward, mb); break;
            case meaning::backward: add(op::backward, mb); break;
            case meaning::loss:
                for (std::uint32_t k = 0; k < c.ga; ++k) add(op::loss, k);
                break;
            case meaning::optimizer: add(op::optimizer_step, 0); break;
            case meaning::grad_sync:
                if (synced++ == 0) add(op::grad_sync, 0);
                break;
            case meaning::grad_norm: add(op::grad_norm, 0); break;
            case meaning::param_gather: add(op::param_gather, 0); break;
            case meaning::placeholder: break;
            }
        }
        c.simai.check = validate_events(events, shape{1, c.ga, 1}, placement::loop);
    }

    // Problems of SimAI's order, naming the rows.
    const auto rows_of = [&](meaning m) {
        std::vector<std::size_t> rows;
        for (std::size_t i = 0; i < seq.size(); ++i) {
            if (seq[i].first == m) rows.insert(rows.end(), seq_rows[i].begin(), seq_rows[i].end());
        }
        return rows;
    };
    if (c.simai.peak_microbatches_in_flight > 1 && c.ga > 1) {
        c.problems.push_back({"all " + std::to_string(c.ga) +
                                  " forwards run before any backward (the row sweep): " +
                                  std::to_string(c.simai.peak_microbatches_in_flight) +
                                  " microbatches of activations are alive at once",
                              rows_of(meaning::forward)});
    }
    if (c.simai.optimizer_before_backward) {
        std::vector<std::size_t> rows; // the optimizer rows SimAI reaches in its forward sweep
        for (const labelled_step& l : c.simai_steps) {
            if (l.role == meaning::optimizer && l.what.ph == phase::forward &&
                (rows.empty() || rows.back() != l.what.row)) {
                rows.push_back(l.what.row);
            }
        }
        c.problems.push_back({"optimizer rows run in the forward sweep, before the backward pass and "
                              "before the gradient synchronisation they depend on",
                              rows});
    }
    if (!rows_of(meaning::loss).empty() && c.ga > 1) {
        c.problems.push_back({"the loss rows run once, after the last microbatch's forward, not after each "
                              "microbatch's forward",
                              rows_of(meaning::loss)});
    }
    if (!c.simai.optimizer_after_all_grad_sync) {
        c.problems.push_back({"these gradient-synchronisation rows finish after an optimizer step has run",
                              rows_of(meaning::grad_sync)});
    }

    return c;
}

/// The policy runs the workload's pipeline: pp ranks, ga microbatches.
inline constexpr std::string_view policy_shape_mismatch =
    "the policy's ranks and microbatches must be the workload's pp and ga";

} // namespace detail

/// SimAI's order against `policy`, which must have the workload's pp ranks and ga microbatches
/// (with pp = 1, one_f_one_b gives Megatron's F0 B0 F1 B1 ...). `name` names the corrected order
/// in the report; compare_catalog.hpp passes PyTorch's name.
template <schedule_policy Policy>
[[nodiscard]] comparison compare(const workload& w, const Policy& policy, const network_model& net = {},
                                 std::string_view name = Policy::name) {
    comparison c = detail::compare_simai_order(w, net);
    // The corrected order: the policy's iteration with the same costs.
    iteration_options it_opts{};
    it_opts.param_gather = c.param_gather_ns > 0.0 ? param_gather_mode::after_step : param_gather_mode::none;
    detail::workload_costs costs{&c};
    costs.p2p_ns = net.p2p_message_ns >= 0.0 ? net.p2p_message_ns
                   : w.header.pp_comm && *w.header.pp_comm > 0.0 && net.pp_bandwidth > 0.0
                       ? net.latency_ns + *w.header.pp_comm / net.pp_bandwidth
                       : 0.0;
    c.corrected.name = std::string{name};
    if (!policy.check()) {
        c.corrected.check.code = verdict_code::invalid_shape;
        c.corrected.check.shape_message = policy.check().message;
        return c;
    }
    if (shape{policy.shape}.ranks != c.pp || shape{policy.shape}.microbatches != c.ga) {
        c.corrected.check.code = verdict_code::invalid_shape;
        c.corrected.check.shape_message = detail::policy_shape_mismatch;
        return c;
    }
    const iteration it{policy, it_opts};
    const iteration_simulation sim = simulate(it, costs);
    c.corrected.check = sim.check;
    c.corrected.makespan_ns = sim.makespan;
    // Rank 0's view, like SimAI's one-stage pass (ranks are symmetric in an AICB file).
    c.corrected_ranks = sim.ranks;
    if (!sim.ranks.empty()) {
        c.corrected.exposed_grad_sync_ns = sim.ranks[0].exposed[static_cast<std::size_t>(comm_kind::grad_sync)];
        c.corrected.compute_ns = sim.ranks[0].compute_busy;
    }
    std::vector<std::pair<meaning, std::uint32_t>> corrected;
    for (const event e : events(it, 0)) {
        switch (e.kind) {
        case op::forward: corrected.emplace_back(meaning::forward, e.microbatch); break;
        case op::backward:
        case op::backward_weight: corrected.emplace_back(meaning::backward, e.microbatch); break;
        case op::loss: corrected.emplace_back(meaning::loss, e.microbatch); break;
        case op::optimizer_step: corrected.emplace_back(meaning::optimizer, 0); break;
        case op::grad_sync: corrected.emplace_back(meaning::grad_sync, 0); break;
        case op::grad_norm: corrected.emplace_back(meaning::grad_norm, 0); break;
        case op::param_gather: corrected.emplace_back(meaning::param_gather, 0); break;
        default: break;
        }
    }
    detail::summarise(c.corrected, corrected);
    return c;
}

} // namespace pipesched::simai
