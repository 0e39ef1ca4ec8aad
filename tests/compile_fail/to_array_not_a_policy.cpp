// to_array() of a value that is not a schedule policy.
#include <pipesched/pipesched.hpp>

namespace ps = pipesched;

#ifdef PIPESCHED_POSITIVE
inline constexpr ps::gpipe<> value{{.ranks = 2, .microbatches = 2}};
#else
inline constexpr int value = 42;
#endif

int main() { return static_cast<int>(ps::to_array<value>().size() == 0); }
