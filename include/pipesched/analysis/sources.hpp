// pipesched: what the analyses read, one rank's sequence at a time. An action source gives
// per-rank actions with global stage numbers (validate(), simulate()); an event source gives
// per-rank events with the shape and placement (their iteration forms). Policies, iterations and
// lists held by the caller (a schedule read from CSV, a simulator's trace) are adapted here.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "../action.hpp"
#include "../detail/list_cursor.hpp"
#include "../timing_model.hpp"
#include "../event.hpp"
#include "../policy.hpp"
#include "../shape.hpp"
#include "../sink.hpp"

namespace pipesched {

/// Sequences of actions per rank, the form validate() works on. Policies and lists of actions
/// (for example a schedule read from CSV) are adapted to it below.
template <class S>
concept action_source = requires(const S& s, std::uint32_t rank) {
    { s.ranks() } -> std::same_as<std::uint32_t>;
    { s.stages() } -> std::same_as<std::uint32_t>;
    { s.microbatches() } -> std::same_as<std::uint32_t>;
    { s.cursor(rank).done() } -> std::same_as<bool>;
    { s.cursor(rank).current() } -> std::same_as<action>;
};

/// Per-rank event lists from outside (a simulator's trace, a hand-written stream).
class event_lists {
public:
    constexpr event_lists(std::span<const std::vector<event>> per_rank, pipesched::shape dims,
                          placement layout) noexcept
        : per_rank_{per_rank}, shape_{dims}, layout_{layout} {}
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept {
        return static_cast<std::uint32_t>(per_rank_.size());
    }
    [[nodiscard]] constexpr pipesched::shape shape() const noexcept { return shape_; }
    [[nodiscard]] constexpr placement layout() const noexcept { return layout_; }

    using cursor_type = detail::list_cursor<event>;
    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const noexcept {
        return cursor_type{per_rank_[rank]};
    }

private:
    std::span<const std::vector<event>> per_rank_;
    pipesched::shape shape_;
    placement layout_;
};

namespace detail {

/// A policy seen as per-rank actions with global stage numbers.
template <schedule_policy P>
class policy_actions {
public:
    constexpr explicit policy_actions(const P& pol) : pol_{pol} {}
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept { return shape().ranks; }
    [[nodiscard]] constexpr std::uint32_t stages() const noexcept { return shape().stages(); }
    [[nodiscard]] constexpr stage_line line() const noexcept { return stage_line::of(P::layout, stages()); }
    [[nodiscard]] constexpr std::uint32_t microbatches() const noexcept {
        return shape().microbatches;
    }

    class cursor_type {
    public:
        constexpr cursor_type() = default;
        constexpr cursor_type(const P& pol, std::uint32_t rank) : pol_{&pol}, inner_{pol.cursor(rank)} {}
        [[nodiscard]] constexpr bool done() const { return inner_.done(); }
        [[nodiscard, gnu::always_inline]] constexpr action current() const { return to_action(*pol_, inner_.current()); }
        [[gnu::always_inline]] constexpr void advance() { inner_.advance(); }

    private:
        const P* pol_ = nullptr;
        decltype(std::declval<const P&>().cursor(0u)) inner_{};
    };
    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const {
        return cursor_type{pol_, rank};
    }

    /// Calls f(action) for every action of the rank, through the policy's emit path.
    template <class F>
    constexpr void for_each(std::uint32_t rank, F& f) const {
        struct to_actions {
            const P* pol;
            F* f;
            constexpr void push(const event& e) const { (*f)(to_action(*pol, e)); }
        };
        emit(pol_, rank, to_actions{&pol_, &f});
    }

private:
    [[nodiscard]] constexpr pipesched::shape shape() const noexcept { return pol_.shape; }
    const P& pol_;
};

/// Lists of actions, one per rank (for example a schedule read from CSV).
class action_lists {
public:
    /// `stages`: a count (one pipeline) or the stage_line of two.
    constexpr action_lists(std::span<const std::vector<action>> per_rank, stage_line stages,
                           std::uint32_t microbatches) noexcept
        : per_rank_{per_rank}, stages_{stages}, microbatches_{microbatches} {}
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept {
        return static_cast<std::uint32_t>(per_rank_.size());
    }
    [[nodiscard]] constexpr std::uint32_t stages() const noexcept { return stages_.count; }
    [[nodiscard]] constexpr stage_line line() const noexcept { return stages_; }
    [[nodiscard]] constexpr std::uint32_t microbatches() const noexcept { return microbatches_; }

    using cursor_type = list_cursor<action>;
    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const noexcept {
        return cursor_type{per_rank_[rank]};
    }

private:
    std::span<const std::vector<action>> per_rank_;
    stage_line stages_;
    std::uint32_t microbatches_;
};

/// A schedule policy seen as an event source.
template <schedule_policy P>
class policy_events {
public:
    constexpr explicit policy_events(const P& pol) : pol_{pol} {}
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept { return shape().ranks; }
    [[nodiscard]] constexpr pipesched::shape shape() const noexcept { return pol_.shape; }
    [[nodiscard]] static constexpr placement layout() noexcept { return P::layout; }
    [[nodiscard]] constexpr auto cursor(std::uint32_t rank) const { return pol_.cursor(rank); }

private:
    const P& pol_;
};

/// The compute events of an event source, as actions, for the schedule-level validator.
template <class Source>
class compute_projection {
public:
    constexpr explicit compute_projection(const Source& src) : src_{src} {}
    [[nodiscard]] constexpr std::uint32_t ranks() const noexcept { return src_.ranks(); }
    [[nodiscard]] constexpr std::uint32_t stages() const noexcept { return src_.shape().stages(); }
    [[nodiscard]] constexpr stage_line line() const noexcept { return stage_line::of(src_.layout(), stages()); }
    [[nodiscard]] constexpr std::uint32_t microbatches() const noexcept {
        return src_.shape().microbatches;
    }

    class cursor_type {
    public:
        constexpr cursor_type() = default;
        constexpr cursor_type(const Source& src, std::uint32_t rank)
            : inner_{src.cursor(rank)}, layout_{src.layout()}, ranks_{src.ranks()} {
            skip();
        }
        [[nodiscard]] constexpr bool done() const { return inner_.done(); }
        [[nodiscard]] constexpr action current() const {
            const event e = inner_.current();
            return action{stage_of(layout_, ranks_, e.rank, e.chunk), e.kind, e.microbatch};
        }
        constexpr void advance() {
            inner_.advance();
            skip();
        }

    private:
        constexpr void skip() {
            while (!inner_.done() && !is_compute(inner_.current().kind) &&
                   inner_.current().kind != op::overlap_f_b) {
                inner_.advance();
            }
        }
        decltype(std::declval<const Source&>().cursor(0u)) inner_{};
        placement layout_ = placement::loop;
        std::uint32_t ranks_ = 1;
    };
    [[nodiscard]] constexpr cursor_type cursor(std::uint32_t rank) const {
        return cursor_type{src_, rank};
    }

private:
    const Source& src_;
};

/// The stages of an action source and which of them are joined (timing_model.hpp): its line()
/// if it has one, else one pipeline of its stages().
template <class Source>
[[nodiscard]] constexpr stage_line line_of(const Source& src) noexcept {
    if constexpr (requires { { src.line() } -> std::same_as<stage_line>; }) return src.line();
    else return stage_line{src.stages()};
}

} // namespace detail

} // namespace pipesched
