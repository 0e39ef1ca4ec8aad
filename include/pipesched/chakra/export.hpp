// pipesched: a schedule, or a whole iteration, as Chakra execution traces for ASTRA-sim 2.0
// (one trace per rank, see trace.hpp for the file format and astra.hpp for what ASTRA-sim
// does with them).
//
// What each event becomes, on rank g = replica * p + pipeline rank:
//   F, B, I, W, recompute, loss, optimizer_step   a COMP node, duration_micros from the cost model
//   an overlapped pair (marker, F, B/I)            one COMP node of cost_model::overlapped(F, B)
//   send_activation / send_gradient                a COMM_SEND node
//   recv_activation / recv_gradient                a COMM_RECV node
//   grad_sync                                      a COMM_COLL node over the data-parallel group:
//                                                  REDUCE_SCATTER or ALL_REDUCE (options)
//   grad_norm                                      a COMM_COLL ALL_REDUCE over the pipeline group
//   param_gather                                   a COMM_COLL ALL_GATHER over the data-parallel group
// A collective over a group of one rank (grad_sync and param_gather without data parallelism,
// grad_norm with p = 1) has nothing to exchange and is left out.
//
// Dependencies. Node ids are 0, 1, 2, ... in each rank's program order. COMP nodes, receives,
// grad_norm and param_gather run in program order: each has a ctrl_dep on the previous one of
// them (the rank's "program chain"). A send does not block the rank (PyTorch's isend, Megatron's
// batched p2p): it has a data_dep on the compute that produced its tensor and nothing waits for
// it. A compute that consumes received tensors has data_deps on those receives. grad_sync is
// launched after the compute before it (the chunk's last backward work when overlapped, all
// backward work otherwise) and overlaps what follows; grad_norm, or optimizer_step when there is
// no grad_norm, has data_deps on every grad_sync of the rank.
//
// Messages. A p2p message is (comm_src, comm_dst, comm_tag, comm_size) with ranks numbered
// globally and tag = 2 * (producer stage * m + microbatch) + (1 for a gradient); tags stay below
// ASTRA-sim's 500 000 000 (its NATIVE tag range, taken modulo). Every receive is checked to have
// exactly one matching send before anything is returned (astra.hpp, check_messages).
//
// Costs. Durations come from iteration_cost_model (iteration.hpp's cost model; its values are
// read as microseconds) and must be whole microseconds, as Chakra stores them: a fraction is
// refused unless export_options::round_durations is set (then it is rounded to the nearest
// microsecond). ASTRA-sim charges duration_micros * 1000 ns, and 1 ns for a duration of 0.
//
// Ranks. With data_parallel = D the traces hold p * D ranks; replica d runs the same schedule on
// ranks d*p .. d*p+p-1. Group ids for ASTRA-sim's --comm-group-configuration (group 0 means all
// ranks there, so ids start at 1): the data-parallel group of pipeline rank r is r + 1 and holds
// {r, p + r, 2p + r, ...}; the pipeline group of replica d is p + 1 + d. With D = 1 the pipeline
// group is every rank and is written as pg_name "" (no group file needed).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../action.hpp"
#include "../analysis/simulate_iteration.hpp"
#include "../analysis/validate.hpp"
#include "../analysis/validate_iteration.hpp"
#include "../event.hpp"
#include "../iteration.hpp"
#include "../policy.hpp"
#include "../timing_model.hpp"
#include "trace.hpp"
#include "astra.hpp"

namespace pipesched::chakra {

struct export_options {
    /// false: the schedule's compute and p2p only (F, B, I, W and their sends and receives);
    /// true: the whole iteration (loss, recompute, grad_sync, grad_norm, optimizer_step,
    /// param_gather) as `iteration` options say.
    bool whole_iteration = false;
    iteration_options iteration{};
    std::uint32_t data_parallel = 1;
    std::uint64_t activation_bytes = std::uint64_t{1} << 20; ///< one microbatch's activation or its gradient
    std::uint64_t gradient_bytes = std::uint64_t{1} << 26;   ///< one chunk's gradients (grad_sync)
    std::uint64_t parameter_bytes = std::uint64_t{1} << 26;  ///< one rank's parameters (param_gather)
    std::uint64_t grad_norm_bytes = 4;                       ///< the norm (one float)
    collective grad_sync = collective::all_reduce;           ///< or reduce_scatter (distributed optimizer)
    bool round_durations = false;                            ///< round fractional microseconds
    std::uint32_t network_dims = 1;                          ///< length of involved_dim on collectives
    std::string version = "0.0.4";
};

/// A comm group for --comm-group-configuration.
struct comm_group {
    std::uint32_t id = 0;
    std::vector<std::uint32_t> ranks;
};

struct export_result {
    std::vector<trace> ranks;           ///< index = global rank
    std::vector<comm_group> groups;     ///< empty when data_parallel == 1
    std::string error;                  ///< empty on success
    [[nodiscard]] explicit operator bool() const noexcept { return error.empty(); }
};

/// The group file ASTRA-sim reads: {"1": [0, 4], "2": [1, 5]}.
[[nodiscard]] inline std::string comm_groups_json(const std::vector<comm_group>& groups) {
    std::string out = "{";
    for (std::size_t i = 0; i < groups.size(); ++i) {
        if (i != 0) out += ", ";
        out += '"' + std::to_string(groups[i].id) + "\": [";
        for (std::size_t k = 0; k < groups[i].ranks.size(); ++k) {
            if (k != 0) out += ", ";
            out += std::to_string(groups[i].ranks[k]);
        }
        out += ']';
    }
    out += "}\n";
    return out;
}

namespace detail {

/// Microseconds for duration_micros; false (with `error` set) for a negative, non-finite or,
/// unless rounding is allowed, fractional value.
[[nodiscard]] inline bool whole_micros(double value, bool round, std::string_view what, std::uint64_t& out,
                                       std::string& error) {
    if (!std::isfinite(value) || value < 0.0 || value > 1e15) {
        error = std::string{what} + " costs " + std::to_string(value) +
                " microseconds: a duration must be finite, non-negative and below 1e15";
        return false;
    }
    const double nearest = std::nearbyint(value);
    if (!round && std::fabs(value - nearest) > 1e-9 * (nearest > 1.0 ? nearest : 1.0)) {
        error = std::string{what} + " costs " + std::to_string(value) +
                " microseconds, but Chakra stores whole microseconds; give whole numbers or allow "
                "rounding (round_durations, --round)";
        return false;
    }
    out = static_cast<std::uint64_t>(nearest);
    return true;
}

/// The node name of an action: PyTorch's text ("0F1", "2SEND_B3").
[[nodiscard]] inline std::string node_name(std::uint32_t stage, op kind, std::uint32_t mb) {
    return std::string{format_action(action{.stage = stage, .kind = kind, .microbatch = mb}).view()};
}
/// Recompute and loss have no PyTorch name: "0RECOMPUTE1", "7LOSS3" in the same form.
[[nodiscard]] inline std::string node_name(std::uint32_t stage, std::string_view kind, std::uint32_t mb) {
    return std::to_string(stage) + std::string{kind} + std::to_string(mb);
}

template <class P>
class trace_builder {
public:
    trace_builder(const iteration<P>& it, const iteration_cost_model& costs, const export_options& o)
        : it_{it}, costs_{costs}, o_{o}, p_{it.shape.ranks}, m_{it.shape.microbatches} {}

    [[nodiscard]] bool build(std::uint32_t replica, std::uint32_t r, trace& out, std::string& error) {
        out = trace{};
        out.version = o_.version;
        events_.clear();
        for (event e : events(it_, r)) events_.push_back(e);
        global_ = replica * p_ + r;
        replica_ = replica;
        chain_ = none;
        producer_ = none;
        last_compute_ = none;
        pending_recvs_.clear();
        grad_syncs_.clear();
        for (std::size_t i = 0; i < events_.size(); ++i) {
            const event e = events_[i];
            if (!wanted(e.kind)) continue;
            if (e.kind == op::overlap_f_b && i + 2 < events_.size()) {
                if (!pair(out, events_[i + 1], events_[i + 2], error)) return false;
                i += 2;
                continue;
            }
            if (!add(out, e, error)) return false;
        }
        return true;
    }

private:
    static constexpr std::uint64_t none = ~std::uint64_t{0};

    [[nodiscard]] bool wanted(op k) const noexcept {
        if (o_.whole_iteration) return true;
        return is_compute(k) || is_p2p(k) || k == op::overlap_f_b;
    }
    [[nodiscard]] std::uint32_t stage(const event& e) const noexcept { return it_.stage(e.rank, e.chunk); }

    node& start(trace& t, std::string name, node_type type) {
        node n;
        n.id = t.nodes.size();
        n.name = std::move(name);
        n.type = type;
        t.nodes.push_back(std::move(n));
        return t.nodes.back();
    }
    void chain(node& n) {
        if (chain_ != none) n.ctrl_deps.push_back(chain_);
        chain_ = n.id;
    }
    void comm_attrs(node& n, std::uint32_t src, std::uint32_t dst, std::uint64_t tag) const {
        n.attrs.push_back(attribute::of_uint64("comm_src", src));
        n.attrs.push_back(attribute::of_uint64("comm_dst", dst));
        n.attrs.push_back(attribute::of_uint64("comm_tag", tag));
        n.attrs.push_back(attribute::of_uint64("comm_size", o_.activation_bytes));
        n.attrs.push_back(attribute::of_bool("is_cpu_op", false));
    }
    [[nodiscard]] std::uint64_t tag(std::uint32_t producer_stage, std::uint32_t mb, bool gradient) const noexcept {
        return 2 * (std::uint64_t{producer_stage} * m_ + mb) + (gradient ? 1 : 0);
    }

    /// A COMP node; `consumes`: it is the F, B, I or pair that uses the tensors received since
    /// the last such node (a recompute or loss in between does not).
    [[nodiscard]] bool compute(trace& t, std::string name, double cost_us, std::string& error,
                               bool consumes = true) {
        std::uint64_t micros = 0;
        if (!whole_micros(cost_us, o_.round_durations, name, micros, error)) return false;
        node& n = start(t, std::move(name), node_type::comp);
        n.duration_micros = micros;
        n.attrs.push_back(attribute::of_bool("is_cpu_op", false));
        chain(n);
        if (consumes) {
            n.data_deps = std::move(pending_recvs_);
            pending_recvs_.clear();
        }
        last_compute_ = n.id;
        return true;
    }

    [[nodiscard]] bool pair(trace& t, const event& f, const event& b, std::string& error) {
        const std::uint32_t sf = stage(f);
        const std::uint32_t sb = stage(b);
        const std::string name{format_overlap(action{.stage = sf, .kind = op::forward, .microbatch = f.microbatch},
                                              action{.stage = sb, .kind = b.kind, .microbatch = b.microbatch})
                                   .view()};
        if (!compute(t, name, costs_.overlapped(f, sf, b, sb), error)) return false;
        producer_ = last_compute_;
        return true;
    }

    void collective_node(trace& t, std::string name, collective kind, std::uint64_t bytes, std::string pg) {
        node& n = start(t, std::move(name), node_type::comm_coll);
        n.attrs.push_back(attribute::of_uint64("comm_type", static_cast<std::uint32_t>(kind)));
        n.attrs.push_back(attribute::of_uint64("comm_size", bytes));
        n.attrs.push_back(attribute::of_string("pg_name", std::move(pg)));
        n.attrs.push_back(attribute::of_bool_list("involved_dim", std::vector<bool>(o_.network_dims, true)));
        n.attrs.push_back(attribute::of_bool("is_cpu_op", false));
    }
    [[nodiscard]] std::string data_parallel_group() const {
        return std::to_string(global_ % p_ + 1);
    }
    [[nodiscard]] std::string pipeline_group() const {
        return o_.data_parallel == 1 ? std::string{} : std::to_string(p_ + 1 + replica_);
    }

    [[nodiscard]] bool add(trace& t, const event& e, std::string& error) {
        const std::uint32_t s = stage(e);
        const bool dp = o_.data_parallel > 1;
        switch (e.kind) {
        case op::forward:
        case op::backward:
        case op::backward_input:
        case op::backward_weight: {
            if (!compute(t, node_name(s, e.kind, e.microbatch), costs_.duration(e, s), error)) return false;
            if (e.kind != op::backward_weight) producer_ = last_compute_;
            return true;
        }
        case op::recompute:
            return compute(t, node_name(s, "RECOMPUTE", e.microbatch), costs_.duration(e, s), error, false);
        case op::loss:
            return compute(t, node_name(s, "LOSS", e.microbatch), costs_.duration(e, s), error, false);
        case op::optimizer_step: {
            const bool norm_waits = o_.iteration.grad_norm && p_ > 1;
            if (!compute(t, "optimizer_step", costs_.duration(e, s), error, false)) return false;
            if (!norm_waits) {
                node& n = t.nodes.back();
                n.data_deps.insert(n.data_deps.end(), grad_syncs_.begin(), grad_syncs_.end());
            }
            return true;
        }
        case op::send_activation:
        case op::send_gradient: {
            const bool grad = e.kind == op::send_gradient;
            node& n = start(t, node_name(s, e.kind, e.microbatch), node_type::comm_send);
            if (producer_ != none) n.data_deps.push_back(producer_);
            comm_attrs(n, global_, replica_ * p_ + e.peer, tag(s, e.microbatch, grad));
            return true;
        }
        case op::recv_activation:
        case op::recv_gradient: {
            const bool grad = e.kind == op::recv_gradient;
            node& n = start(t, node_name(s, e.kind, e.microbatch), node_type::comm_recv);
            chain(n);
            comm_attrs(n, replica_ * p_ + e.peer, global_, tag(pipesched::detail::upstream_of(pipesched::detail::tensor_moved(e.kind), s), e.microbatch, grad));
            pending_recvs_.push_back(n.id);
            return true;
        }
        case op::grad_sync: {
            if (!dp) return true;
            collective_node(t, "grad_sync chunk " + std::to_string(e.chunk) + " (stage " + std::to_string(s) + ")",
                            o_.grad_sync, o_.gradient_bytes, data_parallel_group());
            node& n = t.nodes.back();
            if (last_compute_ != none) n.data_deps.push_back(last_compute_);
            grad_syncs_.push_back(n.id);
            return true;
        }
        case op::grad_norm: {
            if (p_ == 1) return true;
            collective_node(t, "grad_norm", collective::all_reduce, o_.grad_norm_bytes, pipeline_group());
            node& n = t.nodes.back();
            chain(n);
            n.data_deps = grad_syncs_;
            return true;
        }
        case op::param_gather: {
            if (!dp) return true;
            collective_node(t, "param_gather", collective::all_gather, o_.parameter_bytes, data_parallel_group());
            chain(t.nodes.back());
            return true;
        }
        case op::reshard:
        case op::overlap_f_b: return true; // a marker not followed by a pair: validation refused it
        }
        return true;
    }

    const iteration<P>& it_;
    const iteration_cost_model& costs_;
    const export_options& o_;
    std::uint32_t p_;
    std::uint32_t m_;
    std::vector<event> events_;
    std::uint32_t global_ = 0;
    std::uint32_t replica_ = 0;
    std::uint64_t chain_ = none;
    std::uint64_t producer_ = none;     ///< last F, B, I or pair: what a send carries
    std::uint64_t last_compute_ = none; ///< last COMP node of any kind
    std::vector<std::uint64_t> pending_recvs_;
    std::vector<std::uint64_t> grad_syncs_;
};

} // namespace detail

/// Chakra traces of a schedule (compute + p2p) or of a whole iteration around it.
template <schedule_policy P>
[[nodiscard]] export_result export_traces(const P& policy, const iteration_cost_model& costs,
                                          const export_options& o = {}) {
    export_result out;
    iteration_options io = o.iteration;
    io.p2p = true;
    if (!o.whole_iteration) io.activation_checkpointing = false;
    const iteration<P> it{policy, io};
    const shape dims = policy.shape;
    if (o.data_parallel == 0) {
        out.error = "data_parallel must be at least 1";
        return out;
    }
    if (std::uint64_t{dims.ranks} * o.data_parallel > 0x10000) {
        out.error = "ranks x data_parallel must be at most 65536";
        return out;
    }
    if (o.activation_bytes == 0 || (o.whole_iteration && (o.gradient_bytes == 0 || o.parameter_bytes == 0 ||
                                                          o.grad_norm_bytes == 0))) {
        out.error = "message sizes must be at least 1 byte (ASTRA-sim needs comm_size > 0)";
        return out;
    }
    if (o.network_dims == 0 || o.network_dims > 8) {
        out.error = "network_dims must be 1..8";
        return out;
    }
    if (o.grad_sync != collective::all_reduce && o.grad_sync != collective::reduce_scatter) {
        out.error = "grad_sync must be ALL_REDUCE or REDUCE_SCATTER";
        return out;
    }
    if (2 * (std::uint64_t{dims.stages()} * dims.microbatches) > 500'000'000u) {
        out.error = "stages x microbatches must be at most 250000000 (ASTRA-sim's tag range)";
        return out;
    }
    if (const verdict v = validate(it); !v) {
        out.error = "the schedule is not valid: " + describe(v);
        return out;
    }
    detail::trace_builder<P> builder{it, costs, o};
    out.ranks.resize(std::size_t{dims.ranks} * o.data_parallel);
    for (std::uint32_t d = 0; d < o.data_parallel; ++d) {
        for (std::uint32_t r = 0; r < dims.ranks; ++r) {
            if (!builder.build(d, r, out.ranks[std::size_t{d} * dims.ranks + r], out.error)) {
                out.error = "rank " + std::to_string(d * dims.ranks + r) + ": " + out.error;
                out.ranks.clear();
                return out;
            }
        }
    }
    if (o.data_parallel > 1) {
        for (std::uint32_t r = 0; r < dims.ranks; ++r) {
            comm_group g{r + 1, {}};
            for (std::uint32_t d = 0; d < o.data_parallel; ++d) g.ranks.push_back(d * dims.ranks + r);
            out.groups.push_back(std::move(g));
        }
        for (std::uint32_t d = 0; d < o.data_parallel; ++d) {
            comm_group g{dims.ranks + 1 + d, {}};
            for (std::uint32_t r = 0; r < dims.ranks; ++r) g.ranks.push_back(d * dims.ranks + r);
            out.groups.push_back(std::move(g));
        }
    }
    if (const trace_check c = check_traces(out.ranks); !c) {
        out.error = "internal error, the traces would not run in ASTRA-sim: " + c.message;
        out.ranks.clear();
        out.groups.clear();
    }
    return out;
}

} // namespace pipesched::chakra

namespace pipesched::chakra {

/// What ASTRA-sim's analytical congestion-unaware backend reports for a schedule: export_traces()
/// then predict_astra() on a FullyConnected network. `error` is set when the schedule cannot be
/// exported; the prediction's `approximate` when it holds collectives.
struct astra_simulation {
    prediction result;
    std::string error;
    [[nodiscard]] explicit operator bool() const noexcept { return error.empty(); }
};

template <schedule_policy P>
[[nodiscard]] astra_simulation simulate_astra(const P& policy, const iteration_cost_model& costs,
                                              const export_options& o = {}, const astra_network& net = {}) {
    astra_simulation out;
    const export_result traces = export_traces(policy, costs, o);
    if (!traces) {
        out.error = traces.error;
        return out;
    }
    std::map<std::string, std::vector<std::uint32_t>> groups;
    for (const comm_group& g : traces.groups) groups[std::to_string(g.id)] = g.ranks;
    out.result = predict_astra(traces.ranks, net, groups);
    if (!out.result.check) out.error = out.result.check.message;
    return out;
}

} // namespace pipesched::chakra
