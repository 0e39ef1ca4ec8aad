// require_valid<pol>() on a policy that rejects its shape: the compiler error spells out the
// violated constraint's own text, the string validate(pol).shape_message gives at run time
// (g++ prints it as a string, clang as a list of characters; the regex takes either). The
// positive twin is the same policy with a shape it accepts.
#include <pipesched/pipesched.hpp>

namespace ps = pipesched;

#ifdef PIPESCHED_POSITIVE
inline constexpr ps::zb_h1 pol{{4, 8}};
#else
inline constexpr ps::zb_h1 pol{{4, 9}};
#endif
static_assert(ps::require_valid<pol>());

int main() {}
