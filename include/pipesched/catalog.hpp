// pipesched: choose a policy by name at run time (command lines, simulator config files):
// find_schedule, with_schedule (the concrete type) and with_any_schedule (any_schedule.hpp).
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
#include <type_traits>
#include <utility>

#include "policies/any_schedule.hpp"
#include "policies/combined_1f1b.hpp"
#include "policies/gpipe.hpp"
#include "policies/dualpipe.hpp"
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

/// One enumerator per entry of detail::catalog below, in the same order (checked there).
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
    combined_1f1b,
    interleaved_combined_1f1b,
    dualpipe,
};

struct schedule_info {
    schedule_id id;
    std::string_view name;         ///< the library's name (the policy class)
    std::string_view pytorch_name; ///< PyTorch's schedule class without the `Schedule` prefix,
                                   ///< empty if PyTorch has none
    std::array<std::string_view, 3> aliases; ///< further accepted spellings (normalised)
    bool multi_chunk;              ///< accepts chunks > 1
    bool fixed_backward = false;   ///< decides the backward itself (zero-bubble, V): B/I/W by design
    placement layout = placement::loop;
    chunk_rule chunks = chunk_rule::one; ///< default_chunks(chunks) when the caller gives none
};

namespace detail {

template <schedule_id Id, class Policy>
struct catalog_entry {
    static constexpr schedule_id id = Id;
    using policy = Policy;
};

template <class... Entries>
struct catalog_list {};

/// Every catalogued policy, in the order of schedule_id. Adding a schedule: one enumerator
/// (at the end) and one line here; everything else comes from the policy's `name`, `layout`
/// and `traits`, and the static_asserts below refuse a list out of step with the enum.
/// Templates over backward_kind are listed with the default argument; with_schedule rebinds it.
using catalog = catalog_list<
    catalog_entry<schedule_id::gpipe, gpipe<>>,
    catalog_entry<schedule_id::one_f_one_b, one_f_one_b<>>,
    catalog_entry<schedule_id::interleaved_1f1b, interleaved_1f1b<>>,
    catalog_entry<schedule_id::looped_bfs, looped_bfs<>>,
    catalog_entry<schedule_id::zb_h1, zb_h1>,
    catalog_entry<schedule_id::zb_h2, zb_h2>,
    catalog_entry<schedule_id::interleaved_zero_bubble, interleaved_zero_bubble>,
    catalog_entry<schedule_id::zbv, zbv>,
    catalog_entry<schedule_id::dualpipe_v, dualpipe_v>,
    catalog_entry<schedule_id::v_min, v_min>,
    catalog_entry<schedule_id::v_half, v_half>,
    catalog_entry<schedule_id::combined_1f1b, combined_1f1b<>>,
    catalog_entry<schedule_id::interleaved_combined_1f1b, interleaved_combined_1f1b<>>,
    catalog_entry<schedule_id::dualpipe, dualpipe>>;

/// P with its backward_kind argument replaced by B; P itself for a fixed-backward policy.
template <class P, backward_kind B>
struct rebind_backward {
    using type = P;
};
template <template <backward_kind> class T, backward_kind A, backward_kind B>
struct rebind_backward<T<A>, B> {
    using type = T<B>;
};

/// The space-separated words of `text`; `words[3]` is what did not fit (empty when all did).
[[nodiscard]] constexpr std::array<std::string_view, 4> split_aliases(std::string_view text) noexcept {
    std::array<std::string_view, 4> words{"", "", "", ""};
    for (std::size_t k = 0; k < 3 && !text.empty(); ++k) {
        const std::size_t space = text.find(' ');
        words[k] = text.substr(0, space);
        text = space == std::string_view::npos ? std::string_view{""} : text.substr(space + 1);
    }
    words[3] = text;
    return words;
}

template <class Entry>
[[nodiscard]] constexpr schedule_info make_info() noexcept {
    using P = typename Entry::policy;
    static_assert(schedule_policy<P>, "pipesched catalog: an entry is not a schedule policy");
    constexpr std::array<std::string_view, 4> words = split_aliases(P::traits.aliases);
    static_assert(words[3].empty(), "pipesched catalog: traits.aliases holds at most three words");
    return {Entry::id, P::name, P::traits.pytorch_name, {words[0], words[1], words[2]},
            P::traits.chunks != chunk_rule::one, P::traits.fixed_backward, P::layout, P::traits.chunks};
}

template <class... Entries>
[[nodiscard]] constexpr auto make_schedules(catalog_list<Entries...>) noexcept {
    return std::array<schedule_info, sizeof...(Entries)>{{make_info<Entries>()...}};
}

/// Whether each fixed_backward flag says what the type says: a template over backward_kind
/// takes --backward, anything else decides it.
template <class... Entries>
[[nodiscard]] constexpr bool backward_flags_match(catalog_list<Entries...>) noexcept {
    return ((Entries::policy::traits.fixed_backward ==
             std::is_same_v<typename rebind_backward<typename Entries::policy, backward_kind::split>::type,
                            typename Entries::policy>) && ...);
}

} // namespace detail

inline constexpr auto schedules = detail::make_schedules(detail::catalog{});

[[nodiscard]] constexpr const schedule_info& info(schedule_id id) noexcept {
    return schedules[static_cast<std::size_t>(id)];
}

/// PyTorch's name, or the library's for a schedule PyTorch does not have.
[[nodiscard]] constexpr std::string_view display_name(const schedule_info& s) noexcept {
    return s.pytorch_name.empty() ? s.name : s.pytorch_name;
}

/// Everything needed to build any catalogued policy.
struct schedule_options {
    pipesched::shape shape{};
    std::uint32_t group_size = 0; ///< the interleaved 1F1B schedules only; 0 = default
    backward_kind backward = backward_kind::full; ///< zero-bubble schedules: ignored, always split
};

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

/// Position k holds schedule_id k: info(id) indexes by it.
template <std::size_t N>
[[nodiscard]] constexpr bool ids_follow_positions(const std::array<schedule_info, N>& list) noexcept {
    for (std::size_t k = 0; k < N; ++k) {
        if (static_cast<std::size_t>(list[k].id) != k) return false;
    }
    return true;
}

/// No spelling (name, PyTorch name, alias) of one schedule matches a spelling of another, so
/// find_schedule never depends on the order of the list.
template <std::size_t N>
[[nodiscard]] constexpr bool names_unambiguous(const std::array<schedule_info, N>& list) noexcept {
    const auto spellings = [](const schedule_info& s) {
        return std::array<std::string_view, 5>{s.name, s.pytorch_name, s.aliases[0], s.aliases[1],
                                               s.aliases[2]};
    };
    for (std::size_t a = 0; a < N; ++a) {
        if (list[a].name.empty()) return false;
        for (std::size_t b = a + 1; b < N; ++b) {
            for (std::string_view x : spellings(list[a])) {
                for (std::string_view y : spellings(list[b])) {
                    if (!x.empty() && !y.empty() && equal_normalised(x, y)) return false;
                }
            }
        }
    }
    return true;
}

/// A V or bidirectional placement is two chunks per rank (shape.hpp) and only those fix v = 2.
template <std::size_t N>
[[nodiscard]] constexpr bool placements_match_chunks(const std::array<schedule_info, N>& list) noexcept {
    for (const schedule_info& s : list) {
        if ((s.layout != placement::loop) != (s.chunks == chunk_rule::two)) return false;
    }
    return true;
}

static_assert(ids_follow_positions(schedules),
              "pipesched catalog: detail::catalog must list the schedule_id enumerators in order");
static_assert(names_unambiguous(schedules),
              "pipesched catalog: two schedules share a name, PyTorch name or alias");
static_assert(placements_match_chunks(schedules),
              "pipesched catalog: a V-placed or bidirectional policy must have chunk_rule::two, and only it");
static_assert(backward_flags_match(catalog{}),
              "pipesched catalog: traits.fixed_backward must be false exactly for the policies "
              "that are templates over backward_kind");

template <class P>
[[nodiscard]] constexpr P make_policy(const schedule_options& o) {
    // The interleaved 1F1B schedules take a group size; the others take the shape only.
    if constexpr (std::is_constructible_v<P, shape, std::uint32_t>) return P{o.shape, o.group_size};
    else return P{o.shape};
}

template <backward_kind B, class F, class Entry, class... Rest>
constexpr decltype(auto) dispatch_schedule(schedule_id id, const schedule_options& o, F&& f) {
    if constexpr (sizeof...(Rest) > 0) {
        if (id != Entry::id) return dispatch_schedule<B, F, Rest...>(id, o, std::forward<F>(f));
    }
    using P = typename rebind_backward<typename Entry::policy, B>::type;
    return std::forward<F>(f)(make_policy<P>(o));
}

template <backward_kind B, class F, class... Entries>
constexpr decltype(auto) dispatch_schedule(schedule_id id, const schedule_options& o, F&& f,
                                           catalog_list<Entries...>) {
    return dispatch_schedule<B, F, Entries...>(id, o, std::forward<F>(f));
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

/// Builds the policy `id` names and calls f(policy) with its concrete type, so that all the
/// compile-time machinery stays available behind a run-time choice.
template <class F>
constexpr decltype(auto) with_schedule(schedule_id id, const schedule_options& o, F&& f) {
    // An id outside the enum gets the first schedule, as a switch with a default would.
    if (static_cast<std::size_t>(id) >= schedules.size()) id = schedules[0].id;
    if (o.backward == backward_kind::split) {
        return detail::dispatch_schedule<backward_kind::split>(id, o, std::forward<F>(f), detail::catalog{});
    }
    return detail::dispatch_schedule<backward_kind::full>(id, o, std::forward<F>(f), detail::catalog{});
}

/// with_schedule for code that only needs a policy, not its concrete type: calls
/// f(any_schedule<placement::loop>), f(any_schedule<placement::v_shape>) or
/// f(any_schedule<placement::bidirectional>), so f's body is compiled once per placement
/// instead of once per catalogued policy.
template <class F>
decltype(auto) with_any_schedule(schedule_id id, const schedule_options& o, F&& f) {
    return with_schedule(id, o, [&](const auto& pol) -> decltype(auto) {
        using P = std::remove_cvref_t<decltype(pol)>;
        return f(any_schedule<P::layout>{pol});
    });
}

} // namespace pipesched
