// pipesched: an SimAI / AICB workload file as data: the header, the 12-field rows, the
// collectives and the groups they run in (the file format is described in parse.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../detail/enum_table.hpp"

namespace pipesched::simai {

/// Collective operation of one column of a row.
enum class collective : std::uint8_t {
    none,
    allreduce,
    allgather,
    reducescatter,
    alltoall,
    allreduce_alltoall, ///< SimAI's ComType::All_Reduce_All_to_All (no AICB file uses it)
};

/// Which process group a collective runs in.
enum class comm_group : std::uint8_t {
    none,  ///< no collective
    tp,    ///< tensor parallel: plain name in the forward or input-gradient column
    dp,    ///< data parallel: plain name in the weight-gradient column
    ep,    ///< expert parallel: `_EP`
    dp_ep, ///< expert data parallel: `_DP_EP`
};

/// The three column groups of a row, which are also SimAI's three loop states.
enum class phase : std::uint8_t { forward, input_grad, weight_grad };

inline constexpr auto collective_names = pipesched::detail::enum_table<collective::allreduce_alltoall>(
    {{collective::none, "NONE"}, {collective::allreduce, "ALLREDUCE"},
     {collective::allgather, "ALLGATHER"}, {collective::reducescatter, "REDUCESCATTER"},
     {collective::alltoall, "ALLTOALL"}, {collective::allreduce_alltoall, "ALLREDUCEALLTOALL"}});

[[nodiscard]] constexpr std::string_view to_string(collective c) noexcept { return pipesched::detail::name_in(collective_names, c); }

inline constexpr auto comm_group_names = pipesched::detail::enum_table<comm_group::dp_ep>(
    {{comm_group::none, "none"}, {comm_group::tp, "tp"}, {comm_group::dp, "dp"},
     {comm_group::ep, "ep"}, {comm_group::dp_ep, "dp_ep"}});

[[nodiscard]] constexpr std::string_view to_string(comm_group g) noexcept { return pipesched::detail::name_in(comm_group_names, g); }

inline constexpr auto phase_names = pipesched::detail::enum_table<phase::weight_grad>(
    {{phase::forward, "forward"}, {phase::input_grad, "input_grad"},
     {phase::weight_grad, "weight_grad"}});

[[nodiscard]] constexpr std::string_view to_string(phase p) noexcept { return pipesched::detail::name_in(phase_names, p); }

/// One column group of a row: compute time, then a collective.
struct phase_cost {
    std::uint64_t compute_ns = 0;
    collective kind = collective::none;
    comm_group group = comm_group::none;
    std::uint64_t bytes = 0;

    friend bool operator==(const phase_cost&, const phase_cost&) = default;
};

/// One row ("layer" in SimAI).
struct row {
    std::string name;
    int layer_id = -1; ///< the second field; AICB always writes -1, SimAI reads it as `depen`
    phase_cost forward{};
    phase_cost input_grad{};
    phase_cost weight_grad{};
    std::uint64_t update_ns = 0; ///< delay SimAI adds to the completion of each collective

    [[nodiscard]] const phase_cost& cost(phase p) const noexcept {
        return p == phase::forward ? forward : p == phase::input_grad ? input_grad : weight_grad;
    }
    friend bool operator==(const row&, const row&) = default;
};

/// A header key this library does not interpret, kept as written.
struct header_entry {
    std::string key;   ///< without the trailing colon
    bool colon = true; ///< whether the key was written with a colon
    std::string value;
    friend bool operator==(const header_entry&, const header_entry&) = default;
};

struct header {
    std::string policy = "HYBRID_TRANSFORMER_FWD_IN_BCKWD";
    std::optional<std::uint32_t> tp;       ///< model_parallel_NPU_group
    std::optional<std::uint32_t> ep;       ///< expert-parallel size
    std::uint32_t pp = 1;                  ///< pipeline-parallel size (required)
    std::optional<std::uint32_t> vpp;      ///< AICB writes the layers per stage here, not v
    std::uint32_t ga = 1;                  ///< gradient-accumulation steps (required)
    std::optional<std::uint32_t> all_gpus; ///< world size
    std::optional<std::vector<std::uint32_t>> checkpoints;          ///< row indices
    std::optional<std::vector<std::uint32_t>> checkpoint_initiates; ///< row indices
    std::optional<double> pp_comm;   ///< pipeline p2p message size in bytes
    bool pp_comm_colon = true;       ///< `pp_comm:` (true) or `pp_comm` (false)
    std::vector<header_entry> extra; ///< unknown keys, in file order

    friend bool operator==(const header&, const header&) = default;
};

struct workload {
    simai::header header{};
    std::vector<row> rows;
    friend bool operator==(const workload&, const workload&) = default;
};

/// File line of row i (rows start on line 3 and may not be interrupted by blank lines).
[[nodiscard]] constexpr std::size_t line_of_row(std::size_t i) noexcept { return i + 3; }

/// The name of a collective as written in the file (ALLREDUCE, ALLTOALL_EP ...). tp and dp are
/// both written as the plain name; which one it means depends on the column.
[[nodiscard]] inline std::string collective_name(collective kind, comm_group group) {
    std::string s(to_string(kind));
    if (kind == collective::none)
        return s;
    if (group == comm_group::ep)
        s += "_EP";
    if (group == comm_group::dp_ep)
        s += "_DP_EP";
    return s;
}

} // namespace pipesched::simai
