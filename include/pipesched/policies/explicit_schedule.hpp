// pipesched: a schedule given as explicit per-rank action lists.
//
// The policy for orders nobody wrote a generator for: the result of autoschedule(), a CSV
// file (PyTorch's `_dump_csv` format), a hand-written order, or any policy materialised once.
// It satisfies schedule_policy, so emit, events, validate, simulate, iteration, write_csv and
// the Chrome trace work on it unchanged. The placement is a template argument because every
// policy's placement is a compile-time constant (`P::layout`).
//
// Construction from untrusted lists (from_actions) checks each action on its own: a compute
// action (F, B, I, W) of a stage the rank owns under the placement, a microbatch below m, an
// overlapped pair whose first action is an F, and at most 4·v·m actions per rank (three per
// unit plus a pair marker; anything longer repeats a unit). The storage is then one 8-byte
// event per accepted action, so a file cannot make it allocate more than it is long. Whether
// the order is legal (every unit complete, no deadlock) is validate()'s question, as for every
// policy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../detail/stored_order.hpp"
#include "../event.hpp"
#include "../action.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

template <placement Layout>
struct explicit_build;

template <placement Layout = placement::loop>
class explicit_schedule : public detail::stored_order<Layout> {
public:
    static constexpr std::string_view name = "explicit";

    constexpr explicit_schedule() = default;

    /// Most actions a rank of this shape can hold: F, I and W of each of its v·m units plus one
    /// pair marker each.
    [[nodiscard]] static constexpr std::uint64_t max_actions_per_rank(const pipesched::shape& s) noexcept {
        return 4ULL * s.chunks * s.microbatches;
    }

    /// Per-rank action lists with global stage numbers (PyTorch's text: `3I2` is stage 3). The
    /// result says, for the first action it refuses, its rank, its index and why.
    [[nodiscard]] static explicit_build<Layout> from_actions(std::span<const std::vector<action>> per_rank,
                                                             const pipesched::shape& s);

    /// Any policy with the same placement, materialised.
    template <schedule_policy P>
        requires(P::layout == Layout)
    [[nodiscard]] static constexpr explicit_schedule from_policy(const P& pol) {
        explicit_schedule out{};
        out.shape = pol.shape;
        const pipesched::shape dims = pol.shape;
        for (std::uint32_t r = 0; r < dims.ranks; ++r) {
            std::vector<event>& list = out.list(r);
            list.reserve(pol.size(r));
            for (auto c = pol.cursor(r); !c.done(); c.advance()) list.push_back(c.current());
        }
        return out;
    }
};

template <placement Layout>
struct explicit_build {
    explicit_schedule<Layout> schedule{};
    std::string error{}; ///< empty when every action was accepted

    explicit operator bool() const noexcept { return error.empty(); }
};

template <placement Layout>
explicit_build<Layout> explicit_schedule<Layout>::from_actions(std::span<const std::vector<action>> per_rank,
                                                                const pipesched::shape& s) {
    explicit_build<Layout> out{};
    out.schedule.shape = s;
    if (const shape_check c = out.schedule.check_shape(); !c) {
        out.error = std::string{c.message};
        return out;
    }
    if (per_rank.size() != s.ranks) {
        out.error = "expected " + std::to_string(s.ranks) + " action lists (one per rank), got " +
                    std::to_string(per_rank.size());
        return out;
    }
    const std::uint64_t limit = max_actions_per_rank(s);
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        const std::vector<action>& list = per_rank[r];
        const auto where = [&](std::size_t i) {
            return "rank " + std::to_string(r) + ", action " + std::to_string(i) + " (" +
                   std::string{format_action(list[i]).view()} + "): ";
        };
        if (list.size() > limit) {
            out.error = "rank " + std::to_string(r) + " has " + std::to_string(list.size()) +
                        " actions; a rank of this shape holds at most " + std::to_string(limit);
            return out;
        }
        std::vector<event>& events_of_rank = out.schedule.list(r);
        events_of_rank.reserve(list.size());
        for (std::size_t i = 0; i < list.size(); ++i) {
            const action& a = list[i];
            if (!is_compute(a.kind)) {
                out.error = where(i) + "only compute actions (F, B, I, W) belong in a schedule";
                return out;
            }
            if (a.stage >= s.stages()) {
                out.error = where(i) + "stage " + std::to_string(a.stage) + " is beyond the last stage " +
                            std::to_string(s.stages() - 1);
                return out;
            }
            if (a.microbatch >= s.microbatches) {
                out.error = where(i) + "microbatch " + std::to_string(a.microbatch) +
                            " is beyond the last microbatch " + std::to_string(s.microbatches - 1);
                return out;
            }
            const rank_chunk owner = locate_stage(Layout, s.ranks, a.stage);
            if (owner.rank != r) {
                out.error = where(i) + "stage " + std::to_string(a.stage) + " runs on rank " +
                            std::to_string(owner.rank) + " under " + std::string{to_string(Layout)} +
                            " placement";
                return out;
            }
            if (a.overlapped_with_next) {
                if (a.kind != op::forward || i + 1 >= list.size()) {
                    out.error = where(i) + "an overlapped pair is an F followed by another action";
                    return out;
                }
                events_of_rank.push_back(event{op::overlap_f_b, 0, static_cast<std::uint16_t>(r), 0, no_peer});
            }
            events_of_rank.push_back(event{a.kind, static_cast<std::uint8_t>(owner.chunk),
                                           static_cast<std::uint16_t>(r),
                                           static_cast<std::uint16_t>(a.microbatch), no_peer});
        }
    }
    return out;
}

} // namespace pipesched
