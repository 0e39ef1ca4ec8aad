// A project that uses pipesched the way a simulator would: through find_package,
// add_subdirectory or FetchContent, with nothing but the installed headers.
#include <pipesched/pipesched.hpp>

#include <cstddef>

namespace ps = pipesched;

inline constexpr ps::one_f_one_b<> pol{{.ranks = 4, .microbatches = 8}};
static_assert(ps::validate(pol));
static_assert(ps::validate(ps::iteration{pol}));

struct counting_sink {
    std::size_t events = 0;
    void push(const ps::event&) { ++events; }
};

int main() {
    counting_sink sink;
    ps::emit(ps::iteration{pol}, sink);
    const bool ok = sink.events == ps::event_count(ps::iteration{pol}) && ps::validate(pol) &&
                    ps::simulate(pol).makespan == 33.0;
    return ok ? 0 : 1;
}
