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

#include "../detail/list_cursor.hpp"
#include "../event.hpp"
#include "../action.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

template <placement Layout>
struct explicit_build;

template <placement Layout = placement::loop>
class explicit_schedule {
public:
    static constexpr std::string_view name = "explicit";
    static constexpr placement layout = Layout;

    pipesched::shape shape{};

    /// A pull cursor over one rank's stored events.
    using cursor_type = detail::list_cursor<event>;

    constexpr explicit_schedule() = default;

    [[nodiscard]] constexpr shape_check check() const noexcept {
        if (const shape_check c = check_shape(); !c) return c;
        if (per_rank_.size() != shape.ranks) {
            return {false, "an explicit schedule needs one action list per rank"};
        }
        return shape_ok;
    }
    // The policy contract (policy.hpp): a rejected shape or a rank outside it throws
    // contract_error instead of answering with an empty rank.
    [[nodiscard]] constexpr std::size_t size(std::uint32_t rank) const {
        detail::require_usable(*this, rank);
        return rank < per_rank_.size() ? per_rank_[rank].size() : 0;
    }
    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const {
        detail::require_usable(*this, rank);
        if (rank >= per_rank_.size()) return cursor_type{};
        return cursor_type{std::span<const event>{per_rank_[rank]}};
    }
    /// The events of one rank, in order.
    [[nodiscard]] constexpr std::span<const event> order(std::uint32_t rank) const noexcept {
        if (rank >= per_rank_.size()) return {};
        return per_rank_[rank];
    }

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
        out.per_rank_.resize(dims.ranks);
        for (std::uint32_t r = 0; r < dims.ranks; ++r) {
            out.per_rank_[r].reserve(pol.size(r));
            for (auto c = pol.cursor(r); !c.done(); c.advance()) out.per_rank_[r].push_back(c.current());
        }
        return out;
    }

    /// Appends one event to its rank's list (building a schedule by hand; autoschedule uses
    /// it). An event of a rank beyond shape.ranks adds lists, which check() then refuses.
    constexpr void push(const event& e) {
        const std::size_t lists = std::max<std::size_t>(shape.ranks, std::size_t{e.rank} + 1);
        if (per_rank_.size() < lists) per_rank_.resize(lists);
        per_rank_[e.rank].push_back(e);
    }

protected:
    /// For generators that build every rank's events at once (V-Min, V-Half).
    void assign(std::vector<std::vector<event>>&& lists) { per_rank_ = std::move(lists); }

private:
    [[nodiscard]] constexpr shape_check check_shape() const noexcept {
        if (const shape_check c = check_common(shape); !c) return c;
        if (Layout == placement::v_shape && shape.chunks != 2) {
            return {false, "a V-shaped explicit schedule has chunks = 2"};
        }
        return shape_ok;
    }

    std::vector<std::vector<event>> per_rank_{};
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
    out.schedule.per_rank_.resize(s.ranks);
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
        std::vector<event>& events_of_rank = out.schedule.per_rank_[r];
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
