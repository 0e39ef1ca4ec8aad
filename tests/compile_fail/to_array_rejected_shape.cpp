// to_array() of a policy whose shape it rejects says so instead of building a wrong array.
#include <pipesched/pipesched.hpp>

namespace ps = pipesched;

#ifdef PIPESCHED_POSITIVE
inline constexpr ps::dualpipe_v pol{{.ranks = 2, .microbatches = 4, .chunks = 2}};
#else
inline constexpr ps::dualpipe_v pol{{.ranks = 2, .microbatches = 3, .chunks = 2}}; // needs m >= 2p
#endif

int main() { return static_cast<int>(ps::to_array<pol>().size() == 0); }
