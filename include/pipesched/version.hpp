// pipesched: the library's version. CMake checks at configure time that it is the version in
// project(), so the two cannot drift apart; the command-line tool prints it.
#pragma once

#include <string_view>

namespace pipesched {

inline constexpr int version_major = 0;
inline constexpr int version_minor = 1;
inline constexpr int version_patch = 0;
inline constexpr std::string_view version_string = "0.1.0";

} // namespace pipesched
