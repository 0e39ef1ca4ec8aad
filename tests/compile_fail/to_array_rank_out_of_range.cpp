// to_array<pol, rank>() with a rank the shape does not have.
#include <pipesched/pipesched.hpp>

namespace ps = pipesched;

inline constexpr ps::one_f_one_b<> pol{{.ranks = 2, .microbatches = 4}};
#ifdef PIPESCHED_POSITIVE
constexpr std::uint32_t rank = 1;
#else
constexpr std::uint32_t rank = 2;
#endif

int main() { return static_cast<int>(ps::to_array<pol, rank>().size() == 0); }
