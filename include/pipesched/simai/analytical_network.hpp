// pipesched: SimAI's analytical network model (SimAI_analytical, aliyun/SimAI v1.6 = f5efb5a9;
// master gives the same numbers): its command-line parameters with their defaults, its bus
// bandwidth and the time it charges one collective.
//
// Facts, from reading astra-sim/system/AstraParamParse.hh, astra-sim/system/calbusbw.cc and
// astra-sim/workload/Layer.cc (`compute_time`, `cal_ratio`) and from running the binary:
//
// - Time of a collective of B bytes in a group of n ranks (ns):
//       B / 2^30 / (ratio * busbw) * 1e9 * f * (n - 1) / n,  f = 2 for all-reduce, else 1,
//   i.e. bus bandwidth in GiB/s with the (n-1)/n ring factor and no latency term, truncated to
//   whole nanoseconds. Messages with 1 < B < 1 MiB take a fixed time instead (ratio_tables.hpp:
//   10 us at 2 ranks ... 320 us at 128, 0 at other sizes). NONE takes 0.
// - busbw comes from SimAI's calbusbw: the per-group "node count", "GPUs per node" and "NICs
//   per node" below (integer arithmetic, as SimAI does it), then an all-gather bus bandwidth of
//   NVLink inside one node, or min(NVLink, NICs x NIC) across nodes (NVLink x g/(g-1) when the
//   NICs are faster), or NICs x NIC with one GPU per node; all-to-all across nodes is
//   NICs x NIC / g x (n-1) / ((nodes-1) x g). NVLink and NIC bandwidths come from -nv / -nic, or
//   when those are not given from the GPU type (A100 240, A800 160, H100/H20 370.8, H800 164.8
//   GB/s) and the NIC type (CX6 23.5, CX7 and BF3 48.5).
// - ratio scales tensor-parallel all-gathers / reduce-scatters (NIC or NVLink table, by the
//   bottleneck) and all-to-alls (ata table), linearly interpolated by size; everything else 1.
// - Groups: tensor parallel = tp (the header's model_parallel_NPU_group), expert = ep,
//   data parallel = -g / (tp x pp), expert data parallel = that / ep.
// - SimAI computes in float where it stores floats (bandwidths, ratios) and in double
//   elsewhere; this code does the same operations in the same order, so the times agree to
//   the nanosecond.
//
// Where SimAI's arithmetic leaves the meaningful range this model refuses instead of
// reproducing garbage: a bandwidth of -1 (e.g. -n_p_s 1 with tp 2: 1/2 NICs per rank is 0 in
// integer arithmetic) or 0 (a "group" of one GPU) for a collective that moves bytes makes
// SimAI's time negative, infinite or NaN, which it then converts to an unsigned integer
// (undefined behaviour; it prints times like 18446744073635576 us); sizes beyond the ratio
// tables' 16 GiB make SimAI abort. Each case is an `analytical_error` naming the row, the
// phase and the cause.
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "../detail/enum_table.hpp"
#include "../detail/text.hpp"
#include "parse.hpp" // for its users, who parse workloads (it came with this header before the split)
#include "workload.hpp"
#include "ratio_tables.hpp"

namespace pipesched::simai {

/// SimAI's GPUType, in its order (the uninitialised default reads as the first, A100).
enum class gpu_type : std::uint8_t { a100, a800, h100, h800, none, h20 };
/// SimAI's NIC types (calbusbw.cc `getNicBw`).
enum class nic_type : std::uint8_t { cx6, cx7, bf3, none };

inline constexpr auto gpu_type_names = pipesched::detail::enum_table<gpu_type::h20>(
    {{gpu_type::a100, "A100"}, {gpu_type::a800, "A800"}, {gpu_type::h100, "H100"},
     {gpu_type::h800, "H800"}, {gpu_type::none, "none"}, {gpu_type::h20, "H20"}});

[[nodiscard]] constexpr std::string_view to_string(gpu_type g) noexcept { return pipesched::detail::name_in(gpu_type_names, g); }
inline constexpr auto nic_type_names = pipesched::detail::enum_table<nic_type::none>(
    {{nic_type::cx6, "cx6"}, {nic_type::cx7, "cx7"}, {nic_type::bf3, "bf3"},
     {nic_type::none, "none"}});

[[nodiscard]] constexpr std::string_view to_string(nic_type n) noexcept { return pipesched::detail::name_in(nic_type_names, n); }

/// SimAI_analytical's -g_type parsing: A100/a100, A800, H100, H800, H20 (either case), anything
/// else is "none" (then SimAI has no NVLink bandwidth unless -nv is given).
[[nodiscard]] constexpr gpu_type parse_gpu_type(std::string_view s) noexcept {
    if (s == "A100" || s == "a100") return gpu_type::a100;
    if (s == "A800" || s == "a800") return gpu_type::a800;
    if (s == "H100" || s == "h100") return gpu_type::h100;
    if (s == "H800" || s == "h800") return gpu_type::h800;
    if (s == "H20" || s == "h20") return gpu_type::h20;
    return gpu_type::none;
}
/// calbusbw.cc's NIC names: CX6/cx6, CX7/cx7, BF3/bf3; anything else has no bandwidth.
[[nodiscard]] constexpr nic_type parse_nic_type(std::string_view s) noexcept {
    if (s == "CX6" || s == "cx6") return nic_type::cx6;
    if (s == "CX7" || s == "cx7") return nic_type::cx7;
    if (s == "BF3" || s == "bf3") return nic_type::bf3;
    return nic_type::none;
}

/// SimAI_analytical's command-line parameters that change its report. Bandwidths and ratios are
/// float, as SimAI stores them (parse them with strtof / from_chars<float> to match its stof).
struct analytical_options {
    std::uint32_t gpus = 0;            ///< -g; 0 = the workload's all_gpus (SimAI requires -g)
    std::uint32_t gpus_per_server = 8; ///< -g_p_s (SimAI requires it: 0 divides by zero)
    std::uint32_t nics_per_server = 8; ///< -n_p_s (SimAI requires it: unset reads as 0)
    float nvlink_gbps = -1.0f;         ///< -nv; <= 0: from gpu
    float nic_gbps = -1.0f;            ///< -nic; <= 0: from nic
    gpu_type gpu = gpu_type::a100;     ///< -g_type
    nic_type nic = nic_type::cx7;      ///< -nic_t (SimAI's default "cx7")
    float dp_overlap = 0.0f;           ///< -dp_o: share of data-parallel comm hidden
    float tp_overlap = 0.0f;           ///< -tp_o
    float ep_overlap = 0.0f;           ///< -ep_o
    float pp_overlap = 1.0f;           ///< -pp_o (SimAI divides by it)
};

/// A SimAI_analytical command line: the options plus -w and -r.
struct simai_command {
    analytical_options options{};
    std::string workload;    ///< -w
    std::string result_name; ///< -r (SimAI's report names itself after it)
    std::optional<std::string> error;
    explicit operator bool() const noexcept { return !error.has_value(); }
};

namespace detail {
template <class T> [[nodiscard]] bool parse_whole(std::string_view s, T& out) {
    const char* end = s.data() + s.size();
    const auto [ptr, ec] = std::from_chars(s.data(), end, out);
    return ec == std::errc{} && ptr == end;
}
} // namespace detail

namespace detail {
/// A SimAI_analytical flag that sets a number of analytical_options: a count (`count`) or a
/// float (`real`), and what its value must be.
struct numeric_flag {
    std::string_view name, long_name;
    std::uint32_t analytical_options::*count;
    float analytical_options::*real;
    std::string_view expected;
};
inline constexpr std::array<numeric_flag, 9> numeric_flags{{
    {"-g", "--gpus", &analytical_options::gpus, nullptr, "expected a GPU count"},
    {"-g_p_s", "--gpus-per-server", &analytical_options::gpus_per_server, nullptr, "expected a GPU count"},
    {"-n_p_s", "--nic_per_server", &analytical_options::nics_per_server, nullptr, "expected a NIC count"},
    {"-nv", "--nvlink", nullptr, &analytical_options::nvlink_gbps, "expected GB/s"},
    {"-nic", "--nic_busbw", nullptr, &analytical_options::nic_gbps, "expected GB/s"},
    {"-dp_o", "--dp_overlap", nullptr, &analytical_options::dp_overlap, "expected a ratio"},
    {"-tp_o", "--tp_overlap", nullptr, &analytical_options::tp_overlap, "expected a ratio"},
    {"-ep_o", "--ep_overlap", nullptr, &analytical_options::ep_overlap, "expected a ratio"},
    {"-pp_o", "--pp_overlap", nullptr, &analytical_options::pp_overlap, "expected a ratio"},
}};
} // namespace detail

/// Reads SimAI_analytical's own flags (the spellings of AstraParamParse.hh: -w, -r, -g,
/// -g_p_s, -n_p_s, -nv, -nic, -g_type, -nic_t, -dp_o, -tp_o, -ep_o, -pp_o and their long
/// forms) from a whitespace-separated string, so that a command that was run against SimAI can
/// be replayed verbatim. Flags that do not change the report (-v, -l, -r_f) are accepted and
/// ignored; anything else is an error naming the token.
[[nodiscard]] inline simai_command parse_simai_arguments(std::string_view args) {
    simai_command cmd{};
    std::vector<std::string_view> tokens;
    pipesched::detail::for_each_token(
        args, [&tokens](pipesched::detail::token t) { tokens.push_back(t.text); },
        [](char c) { return c == ' ' || c == '\t' || c == '\n'; });
    analytical_options& o = cmd.options;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const std::string_view flag = tokens[i];
        if (i + 1 >= tokens.size()) {
            cmd.error = "argument " + std::to_string(i + 1) + ": " + std::string(flag) + " needs a value";
            return cmd;
        }
        const std::string_view value = tokens[++i];
        const auto is = [flag](std::string_view name, std::string_view long_name) {
            return flag == name || flag == long_name;
        };
        const detail::numeric_flag* numeric = nullptr;
        for (const detail::numeric_flag& f : detail::numeric_flags) {
            if (is(f.name, f.long_name)) numeric = &f;
        }
        if (numeric != nullptr) {
            std::uint32_t n = 0;
            const bool read = numeric->count != nullptr
                                  ? detail::parse_whole(value, n) && n <= 2147483647u
                                  : detail::parse_whole(value, o.*(numeric->real));
            if (!read) {
                cmd.error = "argument " + std::to_string(i + 1) + ": " + std::string(flag) + " " +
                            std::string(value) + ": " + std::string(numeric->expected);
                return cmd;
            }
            if (numeric->count != nullptr) o.*(numeric->count) = n;
        } else if (is("-w", "--workload")) {
            cmd.workload = std::string(value);
        } else if (is("-r", "--result")) {
            cmd.result_name = std::string(value);
        } else if (is("-g_type", "--gpu_type")) {
            o.gpu = parse_gpu_type(value);
        } else if (is("-nic_t", "--nic_type")) {
            o.nic = parse_nic_type(value);
        } else if (!is("-v", "--visual") && !is("-l", "--lang") && !is("-r_f", "--result_folder")) {
            cmd.error = "argument " + std::to_string(i) + ": unknown SimAI_analytical flag " + std::string(flag);
            return cmd;
        }
    }
    return cmd;
}

/// Why SimAI's numbers for a workload and options would be meaningless, and where.
struct analytical_error {
    std::size_t row = 0;         ///< index into workload::rows
    std::optional<phase> column; ///< the collective's column; empty: not tied to a row
    std::string message;

    /// The same as describe(*this, w); kept for code written before describe().
    [[nodiscard]] std::string to_string(const workload* w = nullptr) const;
};

/// "row 5 (line 8, grad_gather), weight_grad: ..." or just the message; the row's name when the
/// workload is given.
[[nodiscard]] inline std::string describe(const analytical_error& e, const workload* w = nullptr) {
    if (!e.column) return e.message;
    std::string s = "row " + std::to_string(e.row) + " (line " + std::to_string(line_of_row(e.row));
    if (w != nullptr && e.row < w->rows.size()) s += ", " + w->rows[e.row].name;
    return s + "), " + std::string(simai::to_string(*e.column)) + ": " + e.message;
}
inline std::string analytical_error::to_string(const workload* w) const { return describe(*this, w); }

/// The group sizes SimAI derives from the header and -g.
struct group_sizes {
    std::int64_t tp = 1;
    std::int64_t pp = 1;
    std::int64_t ep = 1;
    std::int64_t dp = 0;    ///< gpus / (tp * pp), integer division
    std::int64_t dp_ep = 0; ///< dp / ep
};

namespace detail {

/// calbusbw.cc `getNvlinkBw` / `getNicBw` (double constants stored as float).
[[nodiscard]] constexpr float nvlink_of(gpu_type g) noexcept {
    switch (g) {
    case gpu_type::h100:
    case gpu_type::h20: return static_cast<float>(20.6 * 18);
    case gpu_type::h800: return static_cast<float>(20.6 * 8);
    case gpu_type::a100: return static_cast<float>(20.0 * 12);
    case gpu_type::a800: return static_cast<float>(20.0 * 8);
    case gpu_type::none: break;
    }
    return -1.0f;
}
[[nodiscard]] constexpr float nic_of(nic_type n) noexcept {
    switch (n) {
    case nic_type::cx6: return 23.5f;
    case nic_type::cx7:
    case nic_type::bf3: return 48.5f;
    case nic_type::none: break;
    }
    return -1.0f;
}

/// SimAI's collective names for calbusbw.
enum class coll : std::uint8_t { allreduce, allgather, reducescatter, alltoall };

struct busbw_result {
    float busbw = 0.0f;
    bool nvlink_bound = false;
    std::string_view problem; ///< why busbw <= 0
};

/// calbusbw.cc `cal_busbw` + `calculateBusBw` for nccl_algo "ring" (the only one SimAI's
/// analytical backend asks for).
[[nodiscard]] constexpr busbw_result bus_bandwidth(const analytical_options& o, float nics_pernode,
                                                   std::int64_t node_count, coll c,
                                                   std::int64_t gpus_pernode) noexcept {
    busbw_result r{};
    if (node_count < 1) {
        r.problem = "SimAI's node count is below 1 (its bandwidth is then 0)";
        return r;
    }
    if (gpus_pernode * node_count == 1) {
        r.problem = "the group is a single GPU (SimAI's bandwidth is then 0)";
        return r;
    }
    const float nvlink = o.nvlink_gbps > 0.0f ? o.nvlink_gbps : nvlink_of(o.gpu);
    const float nic = o.nic_gbps > 0.0f ? o.nic_gbps : nic_of(o.nic);
    const auto gpn = static_cast<int>(gpus_pernode);
    const int nics_per_node = static_cast<int>(nics_pernode);
    const float real_nics = nics_pernode;
    const auto nodes = static_cast<int>(node_count);
    const int nranks = nodes * gpn;
    r.busbw = -1.0f;
    if (nvlink <= 0.0f) {
        r.problem = "no NVLink bandwidth (no -nv and an unknown GPU type)";
        return r;
    }
    if (nic <= 0.0f) {
        r.problem = "no NIC bandwidth (no -nic and an unknown NIC type)";
        return r;
    }
    if (gpn < 1) {
        r.problem = "SimAI's GPUs per node is 0 (an integer division of the GPUs per server)";
        return r;
    }
    if (nics_per_node < 1) {
        r.problem = "SimAI's NICs per node is 0 (an integer division of the NICs per server)";
        return r;
    }
    const float nic_total = real_nics * nic;
    const bool cross_nic = nic_total > nvlink;
    float all_gather = 0.0f;
    if (nodes == 1) {
        all_gather = nvlink;
    } else if (gpn == 1) {
        all_gather = nic_total;
    } else {
        if (nvlink < nic_total) {
            r.nvlink_bound = true;
            all_gather = nvlink;
        } else {
            all_gather = nic_total;
        }
        if (cross_nic) {
            r.nvlink_bound = false;
            const float nvlink_ring = nvlink * static_cast<float>(gpn) / static_cast<float>(gpn - 1);
            if (nvlink_ring < nic_total) {
                r.nvlink_bound = true;
                all_gather = nvlink_ring;
            } else {
                all_gather = nic_total;
            }
        }
    }
    if (c == coll::alltoall) {
        if (nodes == 1) {
            r.nvlink_bound = true;
            r.busbw = nvlink;
            return r;
        }
        r.busbw = nic_total / static_cast<float>(gpn) * static_cast<float>(nranks - 1) /
                  static_cast<float>((nodes - 1) * gpn);
        return r;
    }
    r.busbw = all_gather;
    return r;
}

/// calbusbw.cc `getValue`: the ratio for `bytes` in column `nnode` (false: beyond the table,
/// where SimAI throws "Data size out of range").
[[nodiscard]] constexpr bool ratio_value(double bytes, std::int64_t nnode, const ratio_table& t,
                                         float& out) noexcept {
    std::size_t col = 5;
    switch (nnode) {
    case 1: col = 1; break;
    case 2: col = 2; break;
    case 4: col = 3; break;
    case 8: col = 4; break;
    case 16: col = 5; break;
    case 32: col = 6; break;
    case 64: col = 7; break;
    case 128: col = 8; break;
    case 9: col = 9; break;
    default: break;
    }
    const double last = t.back()[col - 1];
    if (bytes == 0.0) {
        out = 1.0f;
        return true;
    }
    if (bytes < ratio_sizes.front()) {
        out = static_cast<float>(t.front()[col - 1] / last);
        return true;
    }
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
        const double size1 = ratio_sizes[i];
        const double size2 = ratio_sizes[i + 1];
        if (bytes >= size1 && bytes <= size2) {
            const double value1 = t[i][col - 1];
            const double value2 = t[i + 1][col - 1];
            const double v = value1 + (value2 - value1) * (bytes - size1) / (size2 - size1);
            out = static_cast<float>(v / last);
            return true;
        }
    }
    return false;
}

} // namespace detail

/// How SimAI classifies a column's collective: its ComType and MockNccl group. SimAI v1.6
/// matches names by prefix, ALLREDUCE first, so ALLREDUCEALLTOALL[_EP|_DP_EP] is an all-reduce
/// with no group there (charged only by the small-message rule).
struct simai_collective {
    collective kind = collective::none; ///< none, allreduce, allgather, reducescatter, alltoall
    comm_group group = comm_group::none;
};
[[nodiscard]] constexpr simai_collective classify(const phase_cost& c) noexcept {
    if (c.kind == collective::allreduce_alltoall) return {collective::allreduce, comm_group::none};
    return {c.kind, c.kind == collective::none ? comm_group::none : c.group};
}

/// One collective's time under SimAI's analytical model, in ns (SimAI's `Tick`).
struct collective_time {
    std::uint64_t ns = 0;
    std::optional<std::string> error; ///< set when SimAI's number would be meaningless
};

/// `Layer::compute_time`: the time SimAI charges a collective of `bytes` (after its 4096-byte
/// forward padding) of kind/group `c` with `nranks` ranks.
[[nodiscard]] inline collective_time analytical_collective_ns(const analytical_options& o,
                                                              const group_sizes& g,
                                                              simai_collective c, std::int64_t nranks,
                                                              std::uint64_t bytes) {
    collective_time out{};
    if (c.kind == collective::none) return out;
    if (1 < bytes && bytes < 1048576) {
        for (const small_message_time& s : small_message_times) {
            if (s.ranks == nranks) out.ns = s.ns;
        }
        return out;
    }
    const detail::coll kind = c.kind == collective::allreduce       ? detail::coll::allreduce
                              : c.kind == collective::allgather     ? detail::coll::allgather
                              : c.kind == collective::reducescatter ? detail::coll::reducescatter
                                                                    : detail::coll::alltoall;
    const std::int64_t gps = o.gpus_per_server;
    const std::int64_t nics = o.nics_per_server;
    const std::int64_t tp = g.tp;
    detail::busbw_result bw{};
    if (c.group == comm_group::tp) {
        if (tp <= gps) {
            bw = detail::bus_bandwidth(o, static_cast<float>(nics), 1, kind, tp);
        } else {
            bw = detail::bus_bandwidth(o, static_cast<float>(nics), tp / gps, kind, gps);
        }
    } else if (c.group == comm_group::ep && nranks > 1) {
        if (tp * nranks <= gps) {
            bw = detail::bus_bandwidth(o, static_cast<float>(nics), 1, kind, gps / tp);
        } else {
            const std::int64_t nodes = tp * nranks / gps;
            const std::int64_t per_server = gps / tp > 1 ? gps / tp : 1;
            const std::int64_t nics_per = tp > gps ? nics / gps : nics / tp;
            bw = detail::bus_bandwidth(o, static_cast<float>(nics_per), nodes, kind, per_server);
        }
    } else if (c.group == comm_group::dp && nranks > 1) {
        if (tp <= gps) {
            bw = detail::bus_bandwidth(o, static_cast<float>(nics / tp), nranks, kind, gps / tp);
        } else {
            bw = detail::bus_bandwidth(o, static_cast<float>(nics / gps), nranks, kind, 1);
        }
    } else if (c.group == comm_group::dp_ep && nranks > 1) {
        if (tp * g.ep <= gps) {
            bw = detail::bus_bandwidth(o, static_cast<float>(nics / (tp * g.ep)), nranks, kind, gps / (tp * g.ep));
        } else {
            bw = detail::bus_bandwidth(o, static_cast<float>(nics / gps), nranks, kind, 1);
        }
    } else {
        return out; // SimAI charges nothing: no group, or a group of <= 1 rank
    }

    // Layer::cal_ratio
    float ratio = 1.0f;
    bool in_table = true;
    const double b = static_cast<double>(bytes);
    if ((kind == detail::coll::allgather || kind == detail::coll::reducescatter) && c.group == comm_group::tp) {
        in_table = detail::ratio_value(b, tp < gps ? 1 : tp / gps, bw.nvlink_bound ? nvlink_ratio : nic_ratio, ratio);
    } else if (kind == detail::coll::alltoall && c.group == comm_group::ep) {
        const std::int64_t nnode = tp * nranks <= gps ? 1 : tp >= gps ? 9 : tp * nranks / gps;
        in_table = detail::ratio_value(b, nnode, alltoall_ratio, ratio);
    } else if (kind == detail::coll::alltoall && c.group == comm_group::tp) {
        in_table = detail::ratio_value(b, tp <= gps ? 1 : tp / gps, alltoall_ratio, ratio);
    }
    if (!in_table) {
        out.error = std::to_string(bytes) +
                    " bytes is beyond SimAI's bandwidth-ratio tables (16 GiB); SimAI aborts with "
                    "\"Data size out of range\"";
        return out;
    }
    const float denominator = ratio * bw.busbw;
    if (denominator == 0.0f || (denominator < 0.0f && bytes > 0)) {
        out.error = "SimAI's bus bandwidth for this " + std::string(to_string(c.kind)) + " in a group of " +
                    std::to_string(nranks) + " is " + (bw.busbw < 0.0f ? "-1" : "0") + " because " +
                    std::string(bw.problem) + "; SimAI would print a meaningless time";
        return out;
    }
    // data_size * GBps / (bw_ratio * busbw) * 1e9 [* 2] * (nranks - 1) / (nranks / 1.0), with
    // SimAI's unparenthesised `#define GBps 1.0 / (1024 * 1024 * 1024)`.
    double t = b * 1.0 / 1073741824.0 / static_cast<double>(denominator) * 1e9;
    if (kind == detail::coll::allreduce) t = t * 2;
    t = t * static_cast<double>(nranks - 1) / (static_cast<double>(nranks) / 1.0);
    if (!(t > -1.0) || !(t < 18446744073709551616.0)) {
        out.error = "SimAI's time for this collective is not a number of nanoseconds (" + std::to_string(t) + ")";
        return out;
    }
    out.ns = t > 0.0 ? static_cast<std::uint64_t>(t) : 0;
    return out;
}

} // namespace pipesched::simai
