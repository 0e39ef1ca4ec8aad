// pipesched: SimAI's order against a schedule chosen at run time (compare.hpp does the work).
//
// The schedule is held as an any_schedule, so the iteration replay is compiled for the two
// placements rather than once per catalogued schedule; this overload is still a template so that
// even that happens where it is called, not in every file that includes this header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "../catalog.hpp"
#include "compare.hpp"

namespace pipesched::simai {

/// Calls f(policy, name) with the catalogued schedule `id` built for the workload's pp ranks and
/// ga microbatches, one chunk per rank, and its display name (PyTorch's where it has one).
template <class F> decltype(auto) with_workload_schedule(const workload& w, schedule_id id, F&& f) {
    schedule_options opts{};
    opts.shape = shape{std::max<std::uint32_t>(1, w.header.pp), std::max<std::uint32_t>(1, w.header.ga), 1};
    return with_any_schedule(id, opts, [&](const auto& pol) { return f(pol, display_name(info(id))); });
}

/// SimAI's order against the catalogued `policy` (1F1B by default; with pp = 1 that is
/// F0 B0 F1 B1 ...), as with_workload_schedule builds it.
template <int Lazy = 0>
[[nodiscard]] comparison compare(const workload& w, schedule_id policy = schedule_id::one_f_one_b,
                                 const network_model& net = {}) {
    return with_workload_schedule(w, policy, [&](const auto& pol, std::string_view name) {
        return compare(w, pol, net, name);
    });
}

} // namespace pipesched::simai
