// pipesched: any_schedule, a policy whose concrete type is chosen at run time.
//
// Everything in pipesched is a template over the policy, so code that picks the schedule from
// user input (`with_schedule`) instantiates its whole analysis once per catalogued policy: 15
// copies of a replay, a trace writer, an exporter. any_schedule<Layout> holds any policy of that
// placement behind one indirect call per event, so such code is compiled twice (loop and V
// placement) instead: the command-line tool builds in a fraction of the time. It is a policy
// like any other (emit, events, validate, simulate, iteration, the writers) and gives the same
// events, verdicts and numbers as the policy it holds; it is not usable in constant expressions,
// and a cursor must not outlive the any_schedule it came from.
//
//   ps::any_schedule<ps::placement::loop> pol{ps::one_f_one_b<>{{4, 8}}};  // any policy, no catalog
//   ps::with_any_schedule(id, options, [](const auto& pol) { ... });  // catalog.hpp, by name; 2 instantiations, not 15
//
// It is a policy on the policies' floor (CONTRIBUTING.md): it needs only the vocabulary and the
// concepts, never the catalog, which builds on it (with_any_schedule).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>

#include "../event.hpp"
#include "../policy.hpp"
#include "../shape.hpp"

namespace pipesched {

template <placement Layout>
class any_schedule {
public:
    static constexpr placement layout = Layout;
    static constexpr std::string_view name = "any";
    /// The largest cursor a held policy may have. The catalogued policies' hold their rank's
    /// program (detail/program.hpp): at most 232 bytes, ZB-V's (9 phases of up to 6 slots and
    /// room for the 6 splits of its padding cut).
    static constexpr std::size_t cursor_capacity = 256;

    pipesched::shape shape{};

    class cursor_type {
    public:
        cursor_type() = default;

        [[nodiscard]] bool done() const noexcept { return done_; }
        [[nodiscard]] event current() const noexcept { return current_; }
        void advance() { step_(storage_.data(), current_, done_); }

    private:
        friend class any_schedule;
        using step_fn = void (*)(std::byte*, event&, bool&);
        static void step_none(std::byte*, event&, bool& done) noexcept { done = true; }

        alignas(std::max_align_t) std::array<std::byte, cursor_capacity> storage_{};
        step_fn step_ = &step_none;
        event current_{};
        bool done_ = true;
    };

    any_schedule() = default;

    /// Holds a copy of `pol`. Its cursor must be trivially copyable and fit cursor_capacity.
    // The is_same test comes first: it keeps copying an any_schedule from asking whether
    // any_schedule is a policy while that is being decided.
    template <class P>
        requires(!std::is_same_v<std::remove_cvref_t<P>, any_schedule>) && schedule_policy<P> &&
                (P::layout == Layout)
    explicit any_schedule(const P& pol)
        : shape{pol.shape}, held_{std::make_shared<const P>(pol)}, ops_{&ops_for<P>}, name_{P::name} {
        using C = typename P::cursor_type;
        static_assert(std::is_trivially_copyable_v<C> && std::is_trivially_destructible_v<C>,
                      "any_schedule: the policy's cursor must be trivially copyable");
        static_assert(sizeof(C) <= cursor_capacity && alignof(C) <= alignof(std::max_align_t),
                      "any_schedule: the policy's cursor is larger than cursor_capacity");
    }

    /// The held policy's `name` ("1f1b", "zbv", ...).
    [[nodiscard]] std::string_view policy_name() const noexcept { return name_; }

    [[nodiscard]] shape_check check() const {
        if (!held_) return {false, "an empty any_schedule holds no policy"};
        return ops_->check(held_.get());
    }
    [[nodiscard]] std::size_t size(std::uint32_t rank) const {
        detail::require_usable(*this, rank);
        return ops_->size(held_.get(), rank);
    }
    [[nodiscard]] cursor_type cursor(std::uint32_t rank) const {
        detail::require_usable(*this, rank);
        cursor_type c{};
        ops_->start(held_.get(), rank, c);
        return c;
    }

private:
    struct operations {
        shape_check (*check)(const void*);
        std::size_t (*size)(const void*, std::uint32_t);
        void (*start)(const void*, std::uint32_t, cursor_type&);
    };

    template <class P>
    static void refresh(const typename P::cursor_type& c, event& current, bool& done) noexcept {
        done = c.done();
        if (!done) current = c.current();
    }
    template <class P>
    static void step(std::byte* storage, event& current, bool& done) {
        auto* c = std::launder(reinterpret_cast<typename P::cursor_type*>(storage));
        c->advance();
        refresh<P>(*c, current, done);
    }
    template <class P>
    static constexpr operations ops_for{
        [](const void* p) { return static_cast<const P*>(p)->check(); },
        [](const void* p, std::uint32_t rank) { return static_cast<const P*>(p)->size(rank); },
        [](const void* p, std::uint32_t rank, cursor_type& out) {
            using C = typename P::cursor_type;
            auto* c = ::new (static_cast<void*>(out.storage_.data())) C{static_cast<const P*>(p)->cursor(rank)};
            out.step_ = &step<P>;
            refresh<P>(*c, out.current_, out.done_);
        },
    };

    std::shared_ptr<const void> held_{};
    const operations* ops_ = nullptr;
    std::string_view name_ = name;
};

} // namespace pipesched
