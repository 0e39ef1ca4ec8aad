// The README quick start's checks as unit tests; tests/CMakeLists.txt also builds and runs
// the README block itself.
#include <doctest/doctest.h>

#include <pipesched/pipesched.hpp>

#include <cstddef>

namespace {

namespace ps = pipesched;

inline constexpr ps::interleaved_1f1b readme_pol{{.ranks = 4, .microbatches = 8, .chunks = 2}};
static_assert(ps::validate(readme_pol));                       // legal and deadlock-free
static_assert(ps::peak_activations(readme_pol, 0) == 11);      // 2(p-1) + (v-1)g + 1 chunk activations
static_assert(ps::to_array<readme_pol, 0>()[0] == ps::event{ps::op::forward, 0, 0, 0, ps::no_peer});
static_assert(ps::validate(ps::iteration{readme_pol}));        // optimizer after every gradient sync

struct my_simulator {
    std::size_t seen = 0;
    void push(const ps::event&) { ++seen; }
};

TEST_CASE("README quick start, run-time twin") {
    CHECK(ps::validate(readme_pol));
    CHECK(ps::peak_activations(readme_pol, 0) == 11);
    CHECK(ps::validate(ps::iteration{readme_pol}));
    my_simulator sim;
    ps::emit(ps::iteration{readme_pol}, sim);
    CHECK(sim.seen == ps::event_count(ps::iteration{readme_pol}));
    std::size_t pulled = 0;
    for (ps::event e : ps::events(readme_pol, 1)) pulled += e.rank == 1 ? 1 : 0;
    CHECK(pulled == readme_pol.size(1));
}

} // namespace
