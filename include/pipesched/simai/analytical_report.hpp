// pipesched: SimAI's analytical report, reproduced. From a workload file and SimAI_analytical's
// command-line parameters, compute what SimAI (aliyun/SimAI v1.6 = f5efb5a9) writes to its
// `<name>-EndToEnd.csv`: the totals line and one line per workload row, to the nanosecond
// before SimAI's own rounding to microseconds, and the CSV byte for byte.
//
// How SimAI's analytical backend arrives at its numbers (astra-sim/workload/Layer.cc
// `Layer::report`, Workload.cc, the analytical front end; checked by running the binary):
//
// - The pass (Workload::iterate_hybrid_parallel_Transformer_fwd_in_bckwd) runs every row's
//   forward, input-grad and weight-grad compute once; collectives take no simulated time in
//   analytical mode. Compute times pass through `Tick * float compute_scale` (= 1), i.e. they
//   are rounded to float precision (24 bits: values above 16.7 ms move by a few ns).
// - Afterwards, row by row in file order, each column's collective gets its time from the
//   analytical network (analytical_network.hpp); forward sizes 1..4095 are first padded to 4096
//   as the pass does. Exposed = total x (1 - overlap ratio), computed as Tick * float, so again
//   in float precision. The weight-grad column goes to "DP_EP" when its group is expert-data-
//   parallel, else to "DP"; the forward and input-grad columns go to "EP" when the *forward*
//   group is expert-parallel, else to "TP".
// - Nothing depends on the order of the rows (apart from floating-point summation order, which
//   this code keeps): SimAI's analytical total is the same for any order of the same rows.
//   Non-blocking data-parallel communication counts as fully exposed unless -dp_o says
//   otherwise.
// - pp > 1 adds a bubble: (pp-1)/(ga*vpp) x the sum over rows not named `embedding_layer` of
//   forward compute + forward comm + input-grad compute + input-grad comm + weight-grad compute
//   (communication before the overlap ratios). And an exposed PP term:
//   2 * vpp * ga * (pp_comm / 2^30 / pp_o * 1e9 ns) / 1000, truncated to whole microseconds,
//   times (1 - pp_o); with SimAI's default pp_o = 1 it is 0.
// - Total time = total comp + total exposed comm + bubble + exposed PP.
//
// This model reproduces the numbers whenever SimAI's are meaningful, including degenerate but
// well-defined cases (a data-parallel size of 0 or 1 when -g is smaller than the workload needs:
// SimAI then charges no data-parallel communication, and the report says so in `notes`). It
// refuses, with an `analytical_error` naming the row, column and cause, where SimAI's
// arithmetic breaks (see analytical_network.hpp), and for checkpointed workloads (SimAI v1.6
// misreads the checkpoint lists), empty workloads and overlap ratios outside [0, 1]
// (pp_o in (0, 1]).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workload.hpp"
#include "analytical_network.hpp"

namespace pipesched::simai {

/// One column (forward, input-grad or weight-grad) of one row of the report.
struct report_column {
    std::uint64_t compute_ns = 0; ///< after SimAI's float compute_scale
    std::uint64_t bytes = 0;      ///< the size SimAI charges (forward: after 4096 padding)
    std::int64_t group_size = 0;  ///< SimAI's group size for this column's collective
    simai_collective kind{};      ///< SimAI's ComType and group
    std::uint64_t comm_ns = 0;    ///< "total comm"
    std::uint64_t exposed_ns = 0; ///< "exposed comm": comm_ns x (1 - overlap ratio), in float
    float algbw = 0.0f;           ///< GiB/s, as SimAI prints it (NaN/inf when comm_ns is 0)
    float busbw = 0.0f;
};

struct report_row {
    std::string name;
    report_column forward{};
    report_column input_grad{};
    report_column weight_grad{};

    [[nodiscard]] const report_column& column(phase p) const noexcept {
        return p == phase::forward ? forward : p == phase::input_grad ? input_grad : weight_grad;
    }
};

/// SimAI's totals line, in microseconds (SimAI prints them rounded with "%.0f").
struct analytical_totals {
    double expose_dp_comm_us = 0.0;
    double expose_dp_ep_comm_us = 0.0;
    double expose_tp_comm_us = 0.0;
    double expose_ep_comm_us = 0.0;
    double expose_pp_comm_us = 0.0; ///< whole microseconds (a Tick in SimAI)
    double bubble_time_us = 0.0;
    double total_comp_us = 0.0;
    double total_exposed_comm_us = 0.0;
    double total_time_us = 0.0;
};

struct analytical_report {
    analytical_options options{}; ///< with gpus filled in
    group_sizes groups{};
    std::vector<report_row> rows;
    analytical_totals totals{};
    /// Well-defined but probably unintended configurations (data-parallel size 0, ...).
    std::vector<std::string> notes;
};

struct analytical_result {
    analytical_report value{};
    std::optional<analytical_error> error;
    explicit operator bool() const noexcept { return !error.has_value(); }
};

namespace detail {

/// `Tick * float` converted back to Tick (compute_scale, overlap ratios).
[[nodiscard]] inline std::uint64_t tick_times_float(std::uint64_t t, float f) noexcept {
    const float v = static_cast<float>(t) * f;
    return v >= 18446744073709551616.0f ? std::numeric_limits<std::uint64_t>::max()
                                        : static_cast<std::uint64_t>(v);
}

[[nodiscard]] constexpr double us(std::uint64_t ns) noexcept { return static_cast<double>(ns) / 1000.0; }

/// a / b with IEEE semantics for b == 0 (SimAI divides by zero times there), written out so
/// that no floating-point division by zero is executed.
[[nodiscard]] inline double ieee_div(double a, double b) noexcept {
    if (b != 0.0) return a / b;
    if (a == 0.0 || std::isnan(a)) return std::numeric_limits<double>::quiet_NaN();
    return (a > 0.0) == !std::signbit(b) ? std::numeric_limits<double>::infinity()
                                         : -std::numeric_limits<double>::infinity();
}

/// `Layer::compute_busbw`: algorithm and bus bandwidth from bytes and time (GiB/s).
inline void bandwidths(report_column& c) noexcept {
    const double seconds_ish = static_cast<double>(c.comm_ns) / 1000.0;
    const auto algbw = static_cast<float>(ieee_div(static_cast<double>(c.bytes), seconds_ish) * 1000000 * 1.0 / 1073741824.0);
    const double n = static_cast<double>(c.group_size);
    const auto n_minus_1 = static_cast<float>(c.group_size - 1);
    float busbw = 0.0f;
    if (c.kind.kind == collective::allreduce) {
        busbw = static_cast<float>(ieee_div(static_cast<double>(algbw * 2.0f * n_minus_1), n / 1.0));
    } else if (c.kind.kind == collective::allgather || c.kind.kind == collective::reducescatter ||
               c.kind.kind == collective::alltoall) {
        busbw = static_cast<float>(ieee_div(static_cast<double>(algbw * n_minus_1), n / 1.0));
    }
    c.algbw = algbw;
    c.busbw = busbw;
}

/// SimAI's `std::fixed << std::setprecision(0)` for finite values, "NaN or Inf" otherwise.
[[nodiscard]] inline std::string format_us(double v) {
    if (!std::isfinite(v)) return "NaN or Inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
}
/// "%.2f" as glibc prints SimAI's values on x86-64, where every NaN SimAI produces (0/0,
/// inf*0) is the negative default NaN.
[[nodiscard]] inline std::string format_2(double v) {
    if (std::isnan(v)) return "-nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

} // namespace detail

/// SimAI's analytical report of `w` under `opt`.
[[nodiscard]] inline analytical_result report(const workload& w, const analytical_options& opt = {}) {
    analytical_result res{};
    analytical_report& r = res.value;
    r.options = opt;
    const auto fail = [&res](std::string message) {
        res.error = analytical_error{0, std::nullopt, std::move(message)};
        return res;
    };
    const header& h = w.header;
    if (!h.tp || *h.tp == 0) return fail("the header has no model_parallel_NPU_group (tp) >= 1");
    if (!h.ep || *h.ep == 0) return fail("the header has no ep >= 1 (SimAI divides by it)");
    if (!h.vpp || *h.vpp == 0) return fail("the header has no vpp >= 1 (SimAI divides by ga * vpp)");
    if (h.pp == 0 || h.ga == 0) return fail("the header needs pp >= 1 and ga >= 1");
    const auto has_entries = [](const std::optional<std::vector<std::uint32_t>>& v) { return v && !v->empty(); };
    if (has_entries(h.checkpoints) || has_entries(h.checkpoint_initiates)) {
        return fail("the workload lists checkpoints; SimAI v1.6 misreads checkpoint lists (it reads the first "
                    "listed layer for every entry), so its report is not reproduced for them");
    }
    if (w.rows.empty()) return fail("the workload has no rows (SimAI asserts on an empty workload)");
    if (opt.gpus_per_server == 0) return fail("--gpus-per-server must be at least 1 (SimAI divides by it)");
    const auto ratio_ok = [](float v) { return v >= 0.0f && v <= 1.0f; };
    if (!ratio_ok(opt.dp_overlap) || !ratio_ok(opt.tp_overlap) || !ratio_ok(opt.ep_overlap)) {
        return fail("overlap ratios must be between 0 and 1");
    }
    if (!(opt.pp_overlap > 0.0f && opt.pp_overlap <= 1.0f)) {
        return fail("the pp overlap ratio must be in (0, 1] (SimAI divides by it)");
    }
    const std::int64_t int_max = std::numeric_limits<int>::max();
    const std::int64_t tp = *h.tp;
    const std::int64_t pp = h.pp;
    const std::int64_t ep = *h.ep;
    const std::int64_t ga = h.ga;
    const std::int64_t vpp = *h.vpp;
    if (tp > int_max || pp > int_max || ep > int_max || ga > int_max || vpp > int_max || tp * pp > int_max ||
        2 * vpp * ga > int_max) {
        return fail("tp, pp, ep, ga or vpp is too large for SimAI's int arithmetic");
    }
    r.options.gpus = opt.gpus != 0 ? opt.gpus : h.all_gpus.value_or(0);
    if (r.options.gpus == 0) return fail("no GPU count: give --gpus (SimAI's -g) or all_gpus in the header");
    if (r.options.gpus > int_max) return fail("--gpus is too large for SimAI's int");
    std::uint32_t pp_comm = 0;
    if (h.pp_comm) {
        if (!(*h.pp_comm >= 0.0 && *h.pp_comm < 2147483648.0)) return fail("pp_comm is outside SimAI's int range");
        pp_comm = static_cast<std::uint32_t>(*h.pp_comm); // SimAI: std::stoi of the token
    }

    group_sizes& g = r.groups;
    g.tp = tp;
    g.pp = pp;
    g.ep = ep;
    g.dp = static_cast<std::int64_t>(r.options.gpus) / (tp * pp);
    g.dp_ep = g.dp / ep;
    if (g.dp == 0) {
        r.notes.push_back("--gpus " + std::to_string(r.options.gpus) + " is less than tp x pp = " +
                          std::to_string(tp * pp) +
                          ": SimAI's data-parallel group size is 0 and it charges no data-parallel communication");
    } else if (static_cast<std::int64_t>(r.options.gpus) % (tp * pp) != 0) {
        r.notes.push_back("--gpus " + std::to_string(r.options.gpus) + " is not a multiple of tp x pp = " +
                          std::to_string(tp * pp) + "; SimAI rounds the data-parallel size down to " +
                          std::to_string(g.dp));
    }
    if (h.all_gpus && *h.all_gpus != r.options.gpus) {
        r.notes.push_back("--gpus " + std::to_string(r.options.gpus) + " differs from the workload's all_gpus " +
                          std::to_string(*h.all_gpus) + " (SimAI uses -g)");
    }

    const float compute_scale = 1.0f; // the analytical front end constructs Sys with 1
    double bubble_sum_us = 0.0;
    analytical_totals& t = r.totals;
    r.rows.reserve(w.rows.size());
    for (std::size_t i = 0; i < w.rows.size(); ++i) {
        const row& in = w.rows[i];
        report_row out{};
        out.name = in.name;
        const auto fill = [&](report_column& c, const phase_cost& cost, phase ph) -> bool {
            const float scaled = static_cast<float>(cost.compute_ns) * compute_scale;
            if (scaled >= 18446744073709551616.0f) {
                res.error = analytical_error{i, ph, "the compute time does not fit SimAI's Tick after its float scale"};
                return false;
            }
            c.compute_ns = static_cast<std::uint64_t>(scaled);
            c.kind = classify(cost);
            c.bytes = cost.bytes;
            if (ph == phase::forward && c.bytes > 0 && c.bytes < 4096) c.bytes = 4096;
            if (ph == phase::weight_grad) {
                c.group_size = c.kind.group == comm_group::dp_ep ? g.dp_ep : g.dp;
            } else {
                c.group_size = c.kind.group == comm_group::ep ? g.ep : g.tp;
            }
            const collective_time ct = analytical_collective_ns(r.options, g, c.kind, c.group_size, c.bytes);
            if (ct.error) {
                res.error = analytical_error{i, ph, *ct.error};
                return false;
            }
            c.comm_ns = ct.ns;
            c.exposed_ns = ct.ns;
            detail::bandwidths(c);
            return true;
        };
        if (!fill(out.forward, in.forward, phase::forward) || !fill(out.weight_grad, in.weight_grad, phase::weight_grad) ||
            !fill(out.input_grad, in.input_grad, phase::input_grad)) {
            return res;
        }
        report_column& f = out.forward;
        report_column& ig = out.input_grad;
        report_column& wg = out.weight_grad;
        if (in.name != "embedding_layer") {
            bubble_sum_us += detail::us(f.exposed_ns + f.compute_ns + wg.compute_ns + ig.compute_ns + ig.exposed_ns);
        }
        wg.exposed_ns = detail::tick_times_float(wg.exposed_ns, 1.0f - opt.dp_overlap);
        if (wg.kind.group == comm_group::dp_ep) {
            t.expose_dp_ep_comm_us += detail::us(wg.exposed_ns);
        } else {
            t.expose_dp_comm_us += detail::us(wg.exposed_ns);
        }
        const bool expert = f.kind.group == comm_group::ep;
        const float keep = 1.0f - (expert ? opt.ep_overlap : opt.tp_overlap);
        f.exposed_ns = detail::tick_times_float(f.exposed_ns, keep);
        ig.exposed_ns = detail::tick_times_float(ig.exposed_ns, keep);
        (expert ? t.expose_ep_comm_us : t.expose_tp_comm_us) += detail::us(f.exposed_ns + ig.exposed_ns);
        t.total_comp_us += detail::us(f.compute_ns);
        t.total_comp_us += detail::us(wg.compute_ns);
        t.total_comp_us += detail::us(ig.compute_ns);
        t.total_exposed_comm_us += detail::us(f.exposed_ns);
        t.total_exposed_comm_us += detail::us(wg.exposed_ns);
        t.total_exposed_comm_us += detail::us(ig.exposed_ns);
        r.rows.push_back(std::move(out));
    }
    // Tick Expose_PP_time = 2 * vpp * GA * (pp_commsize * GBps / pp_o * 1e9) / FREQ; then
    // Expose_PP_time *= (1 - pp_o).
    const double per_message_ns = static_cast<double>(pp_comm) * 1.0 / 1073741824.0 / static_cast<double>(opt.pp_overlap) * 1e9;
    const double pp_us = static_cast<double>(2 * vpp * ga) * per_message_ns / 1000.0;
    if (!(pp_us < 18446744073709551616.0)) return fail("SimAI's exposed PP time does not fit its Tick");
    const std::uint64_t pp_tick = detail::tick_times_float(static_cast<std::uint64_t>(pp_us), 1.0f - opt.pp_overlap);
    t.expose_pp_comm_us = static_cast<double>(pp_tick);
    t.bubble_time_us = bubble_sum_us * (static_cast<double>(pp - 1) / static_cast<double>(ga * vpp));
    t.total_time_us = t.total_comp_us + t.total_exposed_comm_us + t.bubble_time_us + t.expose_pp_comm_us;
    return res;
}

/// The `<file_name>-EndToEnd.csv` SimAI writes (its first field is -r's value after the last
/// '/'; `pipesched simai` passes the workload's file name followed by '-').
[[nodiscard]] inline std::string end_to_end_csv(const analytical_report& r, std::string_view file_name) {
    const analytical_totals& t = r.totals;
    const auto cell = [&](double v) {
        return detail::format_us(v) + " (" + detail::format_2(detail::ieee_div(v, t.total_time_us) * 100) + "%)";
    };
    std::string s =
        "File name, Expose DP comm, Expose DP_EP comm, Expose TP comm, Expose_EP_comm, Expose_PP_comm, bubble "
        "time, total comp, total exposed comm, Total time\n";
    s += std::string(file_name) + ", " + cell(t.expose_dp_comm_us) + ", " + cell(t.expose_dp_ep_comm_us) + ", " +
         cell(t.expose_tp_comm_us) + ", " + cell(t.expose_ep_comm_us) + ", " + cell(t.expose_pp_comm_us) + ", " +
         cell(t.bubble_time_us) + ", " + cell(t.total_comp_us) + ", " + cell(t.total_exposed_comm_us) + ", " +
         detail::format_us(t.total_time_us) + "\n";
    s += "layer_name,Analytical_test,fwd compute,wg compute,ig compute,fwd exposed comm,wg exposed comm,ig exposed "
         "comm,fwd total comm,algbw,busbw,wg total comm,algbw,busbw,ig total comm,algbw,busbw\n";
    // Appended piece by piece: "," + std::string temporaries trip GCC 12's false -Wrestrict at
    // -O3 (GCC bug 105329).
    const auto v = [&s](std::uint64_t ns) { s.append(",").append(detail::format_us(detail::us(ns))); };
    for (const report_row& row : r.rows) {
        s.append(row.name).append(",Analytical_test");
        v(row.forward.compute_ns);
        v(row.weight_grad.compute_ns);
        v(row.input_grad.compute_ns);
        v(row.forward.exposed_ns);
        v(row.weight_grad.exposed_ns);
        v(row.input_grad.exposed_ns);
        for (const report_column* c : {&row.forward, &row.weight_grad, &row.input_grad}) {
            v(c->comm_ns);
            s.append(",").append(detail::format_2(static_cast<double>(c->algbw)));
            s.append(",").append(detail::format_2(static_cast<double>(c->busbw)));
        }
        s += "\n";
    }
    return s;
}

} // namespace pipesched::simai
