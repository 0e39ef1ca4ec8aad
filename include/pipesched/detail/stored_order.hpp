// pipesched internals: a schedule held as stored per-rank event lists, the engine of every policy
// whose order is not closed-form (explicit_schedule: lists read from a file, autoschedule()'s
// answer, a materialised policy; V-Min and V-Half: orders built once by a generator). The
// closed-form policies are data for detail/program.hpp; these keep one 8-byte event per action.
//
// It is the storage and the policy contract's run-time half (check, size, cursor), not a policy:
// a policy derives from it and adds its `name`, `layout` and how its lists are made, so that no
// policy header includes another.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "../event.hpp"
#include "../policy.hpp"
#include "../shape.hpp"
#include "list_cursor.hpp"

namespace pipesched::detail {

template <placement Layout>
class stored_order {
public:
    static constexpr placement layout = Layout;

    pipesched::shape shape{};

    /// A pull cursor over one rank's stored events.
    using cursor_type = list_cursor<event>;

    constexpr stored_order() = default;

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
        require_usable(*this, rank);
        return rank < per_rank_.size() ? per_rank_[rank].size() : 0;
    }
    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const {
        require_usable(*this, rank);
        if (rank >= per_rank_.size()) return cursor_type{};
        return cursor_type{std::span<const event>{per_rank_[rank]}};
    }
    /// The events of one rank, in order.
    [[nodiscard]] constexpr std::span<const event> order(std::uint32_t rank) const noexcept {
        if (rank >= per_rank_.size()) return {};
        return per_rank_[rank];
    }

    /// Appends one event to its rank's list (building a schedule by hand; autoschedule uses
    /// it). An event of a rank beyond shape.ranks adds lists, which check() then refuses.
    constexpr void push(const event& e) {
        const std::size_t lists = std::max<std::size_t>(shape.ranks, std::size_t{e.rank} + 1);
        if (per_rank_.size() < lists) per_rank_.resize(lists);
        per_rank_[e.rank].push_back(e);
    }

protected:
    /// For generators that build every rank's events at once (V-Min, V-Half, from_policy).
    constexpr void assign(std::vector<std::vector<event>>&& lists) { per_rank_ = std::move(lists); }
    /// Rank r's list, for a builder that fills it in place.
    constexpr std::vector<event>& list(std::uint32_t r) {
        if (per_rank_.size() <= r) per_rank_.resize(std::size_t{r} + 1);
        return per_rank_[r];
    }

    [[nodiscard]] constexpr shape_check check_shape() const noexcept {
        if (const shape_check c = check_common(shape); !c) return c;
        if (Layout == placement::v_shape && shape.chunks != 2) {
            return {false, "a V-shaped explicit schedule has chunks = 2"};
        }
        return shape_ok;
    }

private:
    std::vector<std::vector<event>> per_rank_{};
};

} // namespace pipesched::detail
