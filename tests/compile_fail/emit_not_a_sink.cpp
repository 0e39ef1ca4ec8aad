// emit() with a type that has no push(event): one readable static_assert, not an overload dump.
#include <pipesched/pipesched.hpp>

namespace ps = pipesched;

#ifdef PIPESCHED_POSITIVE
struct candidate { void push(const ps::event&) {} };
#else
struct candidate { void push_back(const ps::event&) {} };
#endif

int main() {
    candidate sink;
    ps::emit(ps::one_f_one_b<>{{.ranks = 2, .microbatches = 4}}, sink);
}
