// pipesched internals of io/: facts that the timeline renderings (io/chrome_trace.hpp,
// io/terminal_timeline.hpp) read off a list of simulated actions, with no policy at hand.
//
// Where each stage runs is the simulation's (simulation::stages) when the caller has it; else it
// is read off the records themselves (only compute records, F, B, I, W). The chunk of a stage
// on its rank is stage_map's (stage_map.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "../../analysis/simulate.hpp"
#include "../../event.hpp"
#include "../../stage_map.hpp"

namespace pipesched::detail {

inline constexpr std::uint32_t no_owner = stage_map::no_rank;

struct timeline_layout {
    std::uint32_t ranks = 0;        ///< one past the largest rank in the records
    std::uint32_t stages = 0;       ///< one past the largest stage of a compute record
    std::uint32_t microbatches = 0; ///< one past the largest microbatch of a compute record
    std::uint32_t chunks = 0;       ///< the most stages any one rank runs
    double makespan = 0.0;          ///< latest end (the timeline starts at 0)
    stage_map placement{};          ///< per stage: the rank that runs it and its chunk there

    [[nodiscard]] std::uint32_t chunk_of(std::uint32_t stage) const noexcept { return placement.chunk_of(stage); }
    /// Who feeds whom: the placement's two pipelines if it has them, else one of `stages`.
    [[nodiscard]] stage_line line() const noexcept {
        return placement.line().two_pipelines() ? placement.line() : stage_line{stages};
    }
};

/// The records' extent, with `placement` saying where each stage runs.
[[nodiscard]] inline timeline_layout layout_of(std::span<const timed_action> records, stage_map placement) {
    timeline_layout out{};
    for (const timed_action& t : records) {
        out.ranks = std::max(out.ranks, t.rank + 1);
        out.makespan = std::max(out.makespan, t.end);
        if (!is_compute(t.what.kind)) continue;
        out.stages = std::max(out.stages, t.what.stage + 1);
        out.microbatches = std::max(out.microbatches, t.what.microbatch + 1);
    }
    out.placement = std::move(placement);
    out.chunks = out.placement.chunks();
    return out;
}

/// The same with the placement read off the compute records: for records without the
/// simulation that made them.
[[nodiscard]] inline timeline_layout layout_of(std::span<const timed_action> records) {
    std::uint32_t ranks = 0;
    std::uint32_t stages = 0;
    for (const timed_action& t : records) {
        ranks = std::max(ranks, t.rank + 1);
        if (is_compute(t.what.kind)) stages = std::max(stages, t.what.stage + 1);
    }
    std::vector<std::uint32_t> owner(stages, no_owner);
    for (const timed_action& t : records) {
        if (is_compute(t.what.kind)) owner[t.what.stage] = t.rank;
    }
    return layout_of(records, stage_map{std::move(owner), ranks});
}

/// Positions of the records ordered by (rank, start, index, end, arrival): the order in which
/// a rank ran them, whatever order the simulator pushed them in.
[[nodiscard]] inline std::vector<std::size_t>
rank_time_order(std::span<const timed_action> records) {
    std::vector<std::size_t> order(records.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [records](std::size_t a, std::size_t b) {
        const timed_action& x = records[a];
        const timed_action& y = records[b];
        if (x.rank != y.rank) return x.rank < y.rank;
        if (x.start != y.start) return x.start < y.start;
        if (x.index != y.index) return x.index < y.index;
        if (x.end != y.end) return x.end < y.end;
        return a < b;
    });
    return order;
}

} // namespace pipesched::detail
