// require_valid<pol>() on a schedule that validate() rejects: the compiler error carries the
// verdict's fields (code, rank, index, action). The policy is a hand-written one-rank,
// one-microbatch schedule; the negative twin runs the backward before its forward.
#include <pipesched/pipesched.hpp>

namespace ps = pipesched;

struct two_step_policy {
    ps::shape shape{.ranks = 1, .microbatches = 1, .chunks = 1};
    static constexpr ps::placement layout = ps::placement::loop;
    static constexpr std::string_view name = "two_step";

    struct step_cursor {
        std::uint32_t step = 0;
        [[nodiscard]] constexpr bool done() const { return step == 2; }
        [[nodiscard]] constexpr ps::event current() const {
#ifdef PIPESCHED_POSITIVE
            const ps::op first = ps::op::forward, second = ps::op::backward;
#else
            const ps::op first = ps::op::backward, second = ps::op::forward;
#endif
            return ps::event{step == 0 ? first : second, 0, 0, 0, ps::no_peer};
        }
        constexpr void advance() { ++step; }
    };

    [[nodiscard]] constexpr ps::shape_check check() const { return ps::shape_ok; }
    [[nodiscard]] constexpr std::size_t size(std::uint32_t) const { return 2; }
    [[nodiscard]] constexpr step_cursor cursor(std::uint32_t) const { return {}; }
};

inline constexpr two_step_policy pol{};
static_assert(ps::require_valid<pol>());

int main() {}
