// pipesched: choose a policy by name at run time (command lines, simulator config files).
//
// Names are matched case-insensitively with '-', '_' and spaces ignored, so PyTorch's class
// names (GPipe, 1F1B, Interleaved1F1B, LoopedBFS) and the library's own (gpipe, one_f_one_b,
// interleaved_1f1b, looped_bfs) all work. Schedules PyTorch does not ship (zb_h1, zb_h2) have
// an empty PyTorch name; display_name() gives the library's name for them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "policies/gpipe.hpp"
#include "policies/dualpipe_v.hpp"
#include "policies/interleaved_1f1b.hpp"
#include "policies/interleaved_zero_bubble.hpp"
#include "policies/looped_bfs.hpp"
#include "policies/one_f_one_b.hpp"
#include "policies/v_half.hpp"
#include "policies/v_min.hpp"
#include "policies/zb_h1.hpp"
#include "policies/zb_h2.hpp"
#include "policies/zbv.hpp"
#include "policy.hpp"
#include "shape.hpp"

namespace pipesched {

enum class schedule_id : std::uint8_t {
    gpipe,
    one_f_one_b,
    interleaved_1f1b,
    looped_bfs,
    zb_h1,
    zb_h2,
    interleaved_zero_bubble,
    zbv,
    dualpipe_v,
    v_min,
    v_half,
};

struct schedule_info {
    schedule_id id;
    std::string_view name;         ///< the library's name (the policy class)
    std::string_view pytorch_name; ///< PyTorch's schedule class without the `Schedule` prefix,
                                   ///< empty if PyTorch has none
    std::array<std::string_view, 3> aliases; ///< further accepted spellings (normalised)
    bool multi_chunk;              ///< accepts chunks > 1
    bool fixed_backward = false;   ///< decides the backward itself (zero-bubble, V): B/I/W by design
};

inline constexpr std::array<schedule_info, 11> schedules{{
    {schedule_id::gpipe, "gpipe", "GPipe", {"allforwardallbackward", "afab", ""}, false},
    {schedule_id::one_f_one_b, "one_f_one_b", "1F1B", {"onefoneb", "pipedreamflush", ""}, false},
    {schedule_id::interleaved_1f1b, "interleaved_1f1b", "Interleaved1F1B",
     {"interleaved", "virtualpipeline", ""}, true},
    {schedule_id::looped_bfs, "looped_bfs", "LoopedBFS", {"bfs", "breadthfirst", ""}, true},
    {schedule_id::zb_h1, "zb_h1", "", {"zerobubbleh1", "", ""}, false, true},
    {schedule_id::zb_h2, "zb_h2", "", {"zerobubbleh2", "", ""}, false, true},
    {schedule_id::interleaved_zero_bubble, "interleaved_zero_bubble", "InterleavedZeroBubble",
     {"zb1p", "", ""}, true, true},
    // V placement, chunks = 2; "zb-v" and "dualpipev" match the names once normalised.
    {schedule_id::zbv, "zbv", "ZBVZeroBubble", {"zerobubblev", "", ""}, true, true},
    {schedule_id::dualpipe_v, "dualpipe_v", "DualPipeV", {"", "", ""}, true, true},
    // Not in PyTorch; accepted in PyTorch's style too (ZBVMin like ZBVZeroBubble).
    {schedule_id::v_min, "v_min", "", {"zbvmin", "vminzerobubble", ""}, true, true},
    {schedule_id::v_half, "v_half", "", {"zbvhalf", "vhalfzerobubble", ""}, true, true},
}};

[[nodiscard]] constexpr const schedule_info& info(schedule_id id) noexcept {
    return schedules[static_cast<std::size_t>(id)];
}

/// PyTorch's name, or the library's for a schedule PyTorch does not have.
[[nodiscard]] constexpr std::string_view display_name(const schedule_info& s) noexcept {
    return s.pytorch_name.empty() ? s.name : s.pytorch_name;
}

namespace detail {
/// Lower-case, without '-', '_' and ' '; false if it does not fit or is not ASCII.
[[nodiscard]] constexpr bool equal_normalised(std::string_view a, std::string_view b) noexcept {
    const auto skip = [](char c) { return c == '-' || c == '_' || c == ' '; };
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    std::size_t i = 0;
    std::size_t j = 0;
    while (true) {
        while (i < a.size() && skip(a[i])) ++i;
        while (j < b.size() && skip(b[j])) ++j;
        if (i == a.size() || j == b.size()) return i == a.size() && j == b.size();
        if (lower(a[i]) != lower(b[j])) return false;
        ++i;
        ++j;
    }
}
} // namespace detail

/// The schedule a user means by `name`, if any.
[[nodiscard]] constexpr std::optional<schedule_id> find_schedule(std::string_view name) noexcept {
    if (name.empty()) return std::nullopt;
    for (const schedule_info& s : schedules) {
        if (detail::equal_normalised(name, s.name) ||
            (!s.pytorch_name.empty() && detail::equal_normalised(name, s.pytorch_name))) {
            return s.id;
        }
        for (std::string_view alias : s.aliases) {
            if (!alias.empty() && detail::equal_normalised(name, alias)) return s.id;
        }
    }
    return std::nullopt;
}

/// Everything needed to build any catalogued policy.
struct schedule_options {
    shape dims{};
    std::uint32_t group_size = 0; ///< interleaved_1f1b only; 0 = default
    backward_kind backward = backward_kind::full; ///< zero-bubble schedules: ignored, always split
};

/// Builds the policy `id` names and calls f(policy) with its concrete type, so that all the
/// compile-time machinery stays available behind a run-time choice.
template <class F>
constexpr decltype(auto) with_schedule(schedule_id id, const schedule_options& o, F&& f) {
    const auto dispatch = [&]<backward_kind B>() -> decltype(auto) {
        switch (id) {
        case schedule_id::one_f_one_b: return std::forward<F>(f)(one_f_one_b<B>{o.dims});
        case schedule_id::interleaved_1f1b:
            return std::forward<F>(f)(interleaved_1f1b<B>{o.dims, o.group_size});
        case schedule_id::looped_bfs: return std::forward<F>(f)(looped_bfs<B>{o.dims});
        // Always split: these ignore o.backward.
        case schedule_id::zb_h1: return std::forward<F>(f)(zb_h1{o.dims});
        case schedule_id::zb_h2: return std::forward<F>(f)(zb_h2{o.dims});
        case schedule_id::interleaved_zero_bubble:
            return std::forward<F>(f)(interleaved_zero_bubble{o.dims});
        case schedule_id::zbv: return std::forward<F>(f)(zbv{o.dims});
        case schedule_id::dualpipe_v: return std::forward<F>(f)(dualpipe_v{o.dims}); // B, I, W
        case schedule_id::v_min: return std::forward<F>(f)(v_min{o.dims});
        case schedule_id::v_half: return std::forward<F>(f)(v_half{o.dims});
        case schedule_id::gpipe: break;
        }
        return std::forward<F>(f)(gpipe<B>{o.dims});
    };
    if (o.backward == backward_kind::split) return dispatch.template operator()<backward_kind::split>();
    return dispatch.template operator()<backward_kind::full>();
}

} // namespace pipesched
