// pipesched: where each stage runs, its rank and its chunk on that rank, for code that meets
// actions by global stage number (timelines, traces, the command-line tool) and has to show them
// by rank and chunk. Built from a placement and shape (a policy's), from the owner of each stage,
// or read off per-rank lists of actions (a schedule from CSV). Every place that needs the rank or
// the chunk of a stage asks one of these instead of working it out again.
//
// A rank's chunks are its stages in ascending order: both placements put chunk c of every rank
// in the block of stages [c*p, (c+1)*p) (shape.hpp), so ascending stage order is chunk order,
// and the rule holds for owners read off a file as well. The map also keeps which stages are
// joined (the timing model's stage_line: one pipeline, or DualPipe's two), for the code that
// draws who feeds whom.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "action.hpp"
#include "timing_model.hpp"
#include "shape.hpp"

namespace pipesched {

class stage_map {
public:
    /// The owner of a stage that no rank runs.
    static constexpr std::uint32_t no_rank = 0xFFFFFFFFu;

    constexpr stage_map() = default;

    /// The stages of a policy of shape `dims` placed by `layout`.
    constexpr stage_map(placement layout, shape dims)
        : owner_(std::size_t{dims.ranks} * dims.chunks, no_rank), line_{detail::stage_line::of(layout, dims.stages())} {
        for (std::uint32_t s = 0; s < owner_.size(); ++s) owner_[s] = locate_stage(layout, dims.ranks, s).rank;
        number_chunks(dims.ranks);
    }

    /// Stage s runs on rank owner[s] (no_rank: on none); `ranks` ranks in all (an owner at or
    /// beyond it runs no chunk).
    constexpr stage_map(std::vector<std::uint32_t> owner, std::uint32_t ranks,
                        placement layout = placement::loop)
        : owner_{std::move(owner)}, line_{detail::stage_line::of(layout, static_cast<std::uint32_t>(owner_.size()))} {
        number_chunks(ranks);
    }

    /// Read off per-rank lists of actions: stage s runs on the rank whose list has a compute
    /// action of it (the last such list, if several do); `stages` stages in all, joined as
    /// `layout` joins them (placement::bidirectional: two pipelines; any other: one).
    [[nodiscard]] static constexpr stage_map of_actions(std::span<const std::vector<action>> per_rank,
                                                        std::uint32_t stages, placement layout = placement::loop) {
        std::vector<std::uint32_t> owner(stages, no_rank);
        for (std::size_t r = 0; r < per_rank.size(); ++r) {
            for (const action& a : per_rank[r]) {
                if (is_compute(a.kind) && a.stage < stages) owner[a.stage] = static_cast<std::uint32_t>(r);
            }
        }
        return stage_map{std::move(owner), static_cast<std::uint32_t>(per_rank.size()), layout};
    }

    [[nodiscard]] constexpr std::uint32_t stages() const noexcept { return static_cast<std::uint32_t>(owner_.size()); }
    /// The most stages any one rank runs.
    [[nodiscard]] constexpr std::uint32_t chunks() const noexcept { return chunks_; }
    /// The rank of stage s; no_rank for a stage nobody runs or beyond the map.
    [[nodiscard]] constexpr std::uint32_t rank_of(std::uint64_t s) const noexcept {
        return s < owner_.size() ? owner_[s] : no_rank;
    }
    /// The chunk stage s is on its rank; 0 for a stage nobody runs or beyond the map.
    [[nodiscard]] constexpr std::uint32_t chunk_of(std::uint64_t s) const noexcept {
        return s < chunk_.size() ? chunk_[s] : 0;
    }
    /// Whether stage s runs on a rank, and not on `rank`.
    [[nodiscard]] constexpr bool on_other_rank(std::uint64_t s, std::uint32_t rank) const noexcept {
        const std::uint32_t owner = rank_of(s);
        return owner != no_rank && owner != rank;
    }
    /// The stages and which of them are joined (timing_model.hpp).
    [[nodiscard]] constexpr detail::stage_line line() const noexcept { return line_; }
    /// The owner of every stage, in stage order.
    [[nodiscard]] constexpr std::span<const std::uint32_t> owners() const noexcept { return owner_; }

private:
    constexpr void number_chunks(std::uint32_t ranks) {
        chunk_.assign(owner_.size(), 0);
        std::vector<std::uint32_t> count(ranks, 0);
        for (std::size_t s = 0; s < owner_.size(); ++s) {
            if (owner_[s] >= ranks) continue;
            chunk_[s] = count[owner_[s]]++;
            if (count[owner_[s]] > chunks_) chunks_ = count[owner_[s]];
        }
    }

    std::vector<std::uint32_t> owner_{};
    std::vector<std::uint32_t> chunk_{};
    detail::stage_line line_{};
    std::uint32_t chunks_ = 0;
};

} // namespace pipesched
