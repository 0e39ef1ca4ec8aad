// pipesched: is a schedule legal and deadlock-free?
//
// validate() checks one iteration's compute actions, per rank and in execution order:
//   - every action is F, B, I or W, with its stage and microbatch in range;
//   - every (stage, microbatch) runs exactly one F and either one B or one I and one W
//     (duplicates and out-of-range microbatches are errors, unlike PyTorch's set-based check);
//   - B or I comes after its F, W after its I (they run on the same rank);
//   - a stage runs on one rank only;
//   - the cross-rank dependencies can be met: F of stage s needs F of s-1, B/I of stage s
//     needs B/I of s+1 (same microbatch). A rank blocks at its next action until that input has
//     been produced; sends never block, as with the batched isend/irecv of PyTorch and Megatron.
//     If ranks remain blocked forever the verdict names the cycle of waiting ranks;
//   - overlapped pairs (DualPipe's F&B): an op::overlap_f_b marker action, or the
//     overlapped_with_next flag on an action (as read from CSV), makes the next two compute
//     actions one pair. The pair must be an F and then a B or I of another unit (otherwise
//     malformed_overlap); it starts only when the inputs of both are available, and both
//     results exist once it has run. A marker is not a compute action: it takes a position in
//     the rank's sequence (verdict indices count it) but is not counted as F, B, I or W.
// Linear in the number of actions: a first pass counts and checks order, a second replays the
// ranks with a work list, so each action is visited a constant number of times.
//
// Everything is constexpr: `static_assert(validate(pol))` works, and require_valid<pol>()
// prints the verdict's fields in the compiler's message when it fails.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../event.hpp"
#include "../action.hpp"
#include "../policy.hpp"
#include "../shape.hpp"
#include "../sink.hpp"
#include "replay.hpp"
#include "sources.hpp"
#include "verdict.hpp"

namespace pipesched {

namespace detail {

// Per-unit state bits for the first (count/order) pass and the second (replay) pass.
using unit_flags = std::uint8_t;
enum unit_bits : unit_flags {
    seen_f = 1,
    seen_b = 2,
    seen_i = 4,
    seen_w = 8,
    done_f = 16,
    done_b = 32, // B or I has run: the gradient for the previous stage exists
};

// The first-pass rules that a replay checking as it goes (simulate()'s first try, simulate.hpp)
// applies to each action when it meets it.

/// An F, B, I or W with its stage and microbatch in range (a unit the stages run:
/// timing_model.hpp's runs_unit), on the rank its stage runs on
/// (`owners`: the rank of each stage, no_rank until an action claims it). Meeting an action
/// twice (its rank blocked at it, and runs it later) changes nothing.
[[nodiscard]] constexpr bool claim_action(std::uint32_t r, const action& a, stage_line stages,
                                          std::uint32_t microbatches, std::uint32_t* owners) noexcept {
    if (!is_compute(a.kind) || a.stage >= stages.count || a.microbatch >= microbatches) return false;
    if (!runs_unit(stages, a.stage, a.microbatch, microbatches)) return false;
    const std::uint32_t owner = owners[a.stage];
    if (owner == r) return true;
    if (owner != no_rank) return false;
    owners[a.stage] = r;
    return true;
}

template <class Source>
class validator {
public:
    constexpr explicit validator(const Source& s)
        : src_{s}, stages_{line_of(s)}, microbatches_{s.microbatches()},
          bits_(std::size_t{s.stages()} * s.microbatches(), 0), owner_(s.stages(), no_rank) {}

    constexpr verdict run() {
        if (!structure_ok()) return result_;
        replay();
        return result_;
    }

    /// Everything but the deadlock replay: ranges, ownership, duplicates, order, missing
    /// actions. The simulator runs this and does the replay itself, with times.
    constexpr bool structure_ok() { return !count_and_order() && !find_missing(); }
    [[nodiscard]] constexpr const verdict& result() const noexcept { return result_; }

    /// After a replay that recorded the units as it went (record_unit, below): true if one
    /// lacks an action.
    constexpr bool units_missing() noexcept { return find_missing(); }
    /// For a replay that checks as it goes (simulate's first try, simulate.hpp): records one
    /// action's unit (duplicates, mixed backward, B/I before its F, W before its I); false
    /// on any of those, without saying which (the caller starts over on the full path), so
    /// the rules of record() fit in one mask per kind instead of its branches. `a` must be a
    /// compute action (claim_action() checked it).
    [[gnu::always_inline]] constexpr bool record_unit(const action& a) noexcept {
        const std::uint32_t rule = unit_rules[static_cast<std::size_t>(a.kind)];
        std::uint8_t& b = bits_[unit_index(a)];
        const std::uint32_t forbidden = rule & 0xFFu;
        const std::uint32_t required = (rule >> 8) & 0xFFu;
        if (((b & forbidden) | (~std::uint32_t{b} & required)) != 0) return false;
        b = static_cast<std::uint8_t>(b | rule >> 16);
        return true;
    }
    /// Rank of every stage (valid after structure_ok()).
    [[nodiscard]] constexpr std::vector<std::uint32_t> take_owners() noexcept { return std::move(owner_); }

private:
    [[nodiscard]] constexpr std::size_t unit_index(const action& a) const noexcept {
        return std::size_t{a.stage} * microbatches_ + a.microbatch;
    }
    constexpr bool fail(verdict_code code, std::uint32_t rank, std::uint32_t index,
                        const action& a) noexcept {
        result_.code = code;
        result_.rank = rank;
        result_.index = index;
        result_.subject = a;
        return true;
    }

    /// First pass: ranges, ownership, duplicates and same-rank order. True on the first error.
    constexpr bool count_and_order() {
        for (std::uint32_t r = 0; r < src_.ranks(); ++r) {
            std::uint32_t i = 0;
            bool failed = false;
            pair_state_ = pair_none;
            const auto check = [&](const action& a) {
                if (!failed) failed = check_one(r, i++, a);
            };
            if constexpr (requires { src_.for_each(r, check); }) {
                src_.for_each(r, check); // a policy's phase loops: cheaper than its cursor
            } else {
                for (auto c = src_.cursor(r); !c.done() && !failed; c.advance()) check(c.current());
            }
            if (failed) return true;
            // A pair still open at the end of the rank.
            if (pair_state_ != pair_none) {
                return fail(verdict_code::malformed_overlap, r, i - 1, pair_first_);
            }
        }
        return false;
    }

    /// The first-pass checks of the i-th action of rank r; true (with result_ set) on error.
    constexpr bool check_one(std::uint32_t r, std::uint32_t i, const action& a) {
        if (a.kind == op::overlap_f_b) { // a marker opens a pair; it cannot sit inside one
            if (pair_state_ != pair_none) return fail(verdict_code::malformed_overlap, r, i, a);
            pair_state_ = pair_after_marker;
            pair_first_ = a;
            return false;
        }
        if (!is_compute(a.kind)) return fail(verdict_code::not_compute, r, i, a);
        if (a.stage >= stages_.count || a.microbatch >= microbatches_ ||
            !runs_unit(stages_, a.stage, a.microbatch, microbatches_)) {
            return fail(verdict_code::out_of_range, r, i, a);
        }
        if (owner_[a.stage] == no_rank) owner_[a.stage] = r;
        if (owner_[a.stage] != r) {
            result_.other_rank = owner_[a.stage];
            return fail(verdict_code::stage_on_two_ranks, r, i, a);
        }
        if (record(a)) return fail(result_.code, r, i, a);
        return check_pair(r, i, a);
    }

    /// The overlapped-pair rules for a compute action; true (with result_ set) on error.
    constexpr bool check_pair(std::uint32_t r, std::uint32_t i, const action& a) {
        const bool after_marker = pair_state_ == pair_after_marker;
        if (after_marker || (pair_state_ == pair_none && a.overlapped_with_next)) {
            // The first of a pair (timing_model.hpp's opens_pair).
            if (!opens_pair(after_marker, a)) return fail(verdict_code::malformed_overlap, r, i, a);
            pair_state_ = pair_after_first;
            pair_first_ = a;
        } else if (pair_state_ == pair_after_first) { // the second (closes_pair)
            if (!closes_pair(pair_first_, a)) return fail(verdict_code::malformed_overlap, r, i, a);
            pair_state_ = pair_none;
        }
        return false;
    }

    /// record()'s rules for F, B, I and W: the bits that must be clear, the bits that must be
    /// set (shifted by 8), the bit the action sets (by 16).
    static constexpr std::uint32_t unit_rule(unit_flags forbidden, unit_flags required, unit_flags sets) noexcept {
        return std::uint32_t{forbidden} | std::uint32_t{required} << 8 | std::uint32_t{sets} << 16;
    }
    static constexpr std::array<std::uint32_t, 4> unit_rules{
        unit_rule(seen_f, 0, seen_f),                              // F: not twice
        unit_rule(seen_b | seen_i | seen_w, seen_f, seen_b),       // B: after its F, alone
        unit_rule(seen_b | seen_i | seen_w, seen_f, seen_i),       // I: after its F, no B
        unit_rule(seen_w | seen_b, seen_i, seen_w),                // W: after its I, no B
    };
    static_assert(static_cast<int>(op::forward) == 0 && static_cast<int>(op::backward) == 1 &&
                  static_cast<int>(op::backward_input) == 2 && static_cast<int>(op::backward_weight) == 3);

    /// Sets the seen bit of one action; on error stores the code in result_ and returns true.
    [[gnu::always_inline]] constexpr bool record(const action& a) noexcept {
        std::uint8_t& b = bits_[unit_index(a)];
        const auto error = [this](verdict_code code) {
            result_.code = code;
            return true;
        };
        switch (a.kind) {
        case op::forward:
            if (b & seen_f) return error(verdict_code::duplicate);
            b |= seen_f;
            return false;
        case op::backward:
        case op::backward_input: {
            if (b & (a.kind == op::backward ? seen_b : seen_i)) return error(verdict_code::duplicate);
            if (b & (seen_b | seen_i | seen_w)) return error(verdict_code::mixed_backward);
            if (!(b & seen_f)) return error(verdict_code::backward_before_forward);
            b |= a.kind == op::backward ? seen_b : seen_i;
            return false;
        }
        case op::backward_weight:
            if (b & seen_w) return error(verdict_code::duplicate);
            if (b & seen_b) return error(verdict_code::mixed_backward);
            if (!(b & seen_i)) return error(verdict_code::weight_before_input);
            b |= seen_w;
            return false;
        default: return error(verdict_code::not_compute);
        }
    }

    /// Every unit needs F and either B or I+W. Reports the first gap in (stage, mb) order.
    constexpr bool find_missing() noexcept {
        for (std::uint32_t s = 0; s < stages_.count; ++s) {
            for (std::uint32_t mb = 0; mb < microbatches_; ++mb) {
                if (!runs_unit(stages_, s, mb, microbatches_)) continue;
                const std::uint8_t b = bits_[std::size_t{s} * microbatches_ + mb];
                op absent = op::forward;
                if (!(b & seen_f)) absent = op::forward;
                else if (b & seen_b) continue;
                else if (!(b & seen_i)) absent = op::backward;
                else if (!(b & seen_w)) absent = op::backward_weight;
                else continue;
                const std::uint32_t r = owner_[s] == no_rank ? 0 : owner_[s];
                return fail(verdict_code::missing, r, 0, action{s, absent, mb});
            }
        }
        return false;
    }

    [[nodiscard]] constexpr bool produced(const action& dep) const noexcept {
        return bits_[unit_index(dep)] & (dep.kind == op::forward ? done_f : done_b);
    }

    /// The untimed replay (replay.hpp's engine): a result exists once its bit is set; a rank
    /// blocks at an action whose cross-stage input has not been produced.
    class replay_model {
    public:
        using cursor_t = decltype(std::declval<const Source&>().cursor(0u));
        constexpr explicit replay_model(validator& v) : v_{v} {
            const std::uint32_t p = v.src_.ranks();
            cursors_.reserve(p);
            for (std::uint32_t r = 0; r < p; ++r) cursors_.push_back(v.src_.cursor(r));
            position_.assign(p, 0);
            waiting_for_.assign(p, action{});
        }
        [[nodiscard]] constexpr std::uint32_t ranks() const noexcept {
            return static_cast<std::uint32_t>(cursors_.size());
        }
        [[nodiscard]] constexpr bool done(std::uint32_t r) const { return cursors_[r].done(); }
        [[nodiscard]] constexpr std::uint32_t waited_on(std::uint32_t r) const noexcept {
            return v_.owner_[waiting_for_[r].stage];
        }
        [[nodiscard]] constexpr blocked_rank blocked_at(std::uint32_t r) const {
            return blocked_rank{r, position_[r], cursors_[r].current()};
        }

        // Always inlined into the engine's loop: clang 14 otherwise calls it per action (at
        // -O3, validate 291 instead of 256 instructions per event, validate(iteration) 124
        // instead of 112).
        template <class Engine>
        [[gnu::always_inline]] constexpr step_result step(std::uint32_t r, Engine& engine) {
            cursor_t& c = cursors_[r];
            const action a = c.current();
            if (a.kind != op::overlap_f_b && !a.overlapped_with_next) {
                if (!ready(r, a)) return step_result::blocked;
                complete(r, a, engine);
                c.advance();
                ++position_[r];
                return c.done() ? step_result::finished : step_result::ran;
            }
            // An overlapped pair starts when the inputs of both its actions exist (the first
            // pass made sure that an F and a B or I follow).
            auto second = c;
            if (a.kind == op::overlap_f_b) second.advance();
            const action f = second.current();
            second.advance();
            const action b = second.current();
            if (!ready(r, f) || !ready(r, b)) return step_result::blocked;
            complete(r, f, engine);
            complete(r, b, engine);
            second.advance();
            position_[r] += a.kind == op::overlap_f_b ? 3 : 2;
            c = second;
            return c.done() ? step_result::finished : step_result::ran;
        }

    private:
        [[nodiscard]] constexpr bool ready(std::uint32_t r, const action& a) {
            action input{};
            if (!cross_stage_input(a, v_.stages_, input) || v_.produced(input)) return true;
            waiting_for_[r] = input;
            return false;
        }
        /// Marks the result of `a` as produced and wakes the rank that may be waiting for it.
        template <class Engine>
        constexpr void complete(std::uint32_t r, const action& a, Engine& engine) {
            if (a.kind == op::backward_weight) return;
            const bool forward = a.kind == op::forward;
            v_.bits_[v_.unit_index(a)] |= forward ? done_f : done_b;
            wake_consumer<owners_known::all>(a, r, v_.stages_, v_.owner_.data(), engine);
        }

        validator& v_;
        std::vector<cursor_t> cursors_{};
        std::vector<std::uint32_t> position_{};
        std::vector<action> waiting_for_{};
    };

    /// Second pass: the replay; a deadlock's verdict names the cycle of waiting ranks.
    constexpr void replay() {
        replay_model model{*this};
        replay_engine<replay_model> engine{model};
        if (!engine.run()) result_ = deadlock_verdict(model);
    }

    enum pair_step : std::uint8_t { pair_none, pair_after_marker, pair_after_first };

    const Source& src_;
    stage_line stages_;
    std::uint32_t microbatches_;
    std::vector<unit_flags> bits_;
    std::vector<std::uint32_t> owner_;
    verdict result_{};
    pair_step pair_state_ = pair_none; ///< first pass, current rank
    action pair_first_{};              ///< the marker or F that opened the pair
};

} // namespace detail

/// What validate()'s and simulate()'s structural checks hold per (stage, microbatch) unit, in
/// bytes: its flags. A caller that bounds its memory (the command-line tool) sizes with it.
inline constexpr std::size_t structure_check_bytes_per_unit = sizeof(detail::unit_flags);

/// Validates any action source.
template <action_source Source>
[[nodiscard]] constexpr verdict validate_actions(const Source& src) {
    return detail::validator<Source>{src}.run();
}

/// Validates a policy: its shape first, then every rank's events. An iteration<P> has its own
/// overload in validate_iteration.hpp (iteration rules); without that header it does not compile.
template <schedule_only_policy P>
[[nodiscard]] constexpr verdict validate(const P& pol) {
    if (const shape_check c = pol.check(); !c) {
        verdict v{};
        v.code = verdict_code::invalid_shape;
        v.shape_message = c.message;
        return v;
    }
    return validate_actions(detail::policy_actions<P>{pol});
}

namespace detail {
/// For lists too sparse to be valid (fewer than two actions per unit and over a million
/// units, for example one cell `4000000000F65535` in a file): finds the first error without the stages x microbatches
/// table, so untrusted input cannot ask for a huge allocation. Sorting keeps it n log n.
constexpr verdict sparse_verdict(std::span<const std::vector<action>> per_rank, stage_line stages,
                                 std::uint32_t microbatches) {
    // The first unit at or after `key` (stage << 32 | microbatch) that the stages run: with
    // two pipelines, each stage skips the other pipeline's half of the microbatches.
    const auto first_run = [&](std::uint64_t key) {
        const auto s = static_cast<std::uint32_t>(key >> 32);
        const auto mb = static_cast<std::uint32_t>(key & 0xFFFFFFFFu);
        if (!stages.two_pipelines() || s >= stages.count || runs_unit(stages, s, mb, microbatches)) return key;
        if (s < stages.split) return std::uint64_t{s + 1} << 32; // past the first half
        return (std::uint64_t{s} << 32) | (microbatches / 2);   // to the second half
    };
    verdict v{};
    std::vector<std::uint64_t> forwards;
    std::vector<std::uint64_t> backwards;
    for (std::uint32_t r = 0; r < per_rank.size(); ++r) {
        for (std::uint32_t i = 0; i < per_rank[r].size(); ++i) {
            const action& a = per_rank[r][i];
            if (!is_compute(a.kind) || a.stage >= stages.count || a.microbatch >= microbatches ||
                !runs_unit(stages, a.stage, a.microbatch, microbatches)) {
                v.code = is_compute(a.kind) ? verdict_code::out_of_range : verdict_code::not_compute;
                v.rank = r;
                v.index = i;
                v.subject = a;
                return v;
            }
            const std::uint64_t key = (std::uint64_t{a.stage} << 32) | a.microbatch;
            if (a.kind == op::forward) forwards.push_back(key);
            if (a.kind == op::backward || a.kind == op::backward_input) backwards.push_back(key);
        }
    }
    // The first (stage, microbatch) in order that lacks an F, else one that lacks a B/I.
    for (const bool forward : {true, false}) {
        std::vector<std::uint64_t>& keys = forward ? forwards : backwards;
        std::sort(keys.begin(), keys.end());
        std::uint64_t expected = first_run(0);
        for (const std::uint64_t k : keys) {
            if (k > expected) break;
            if (k == expected) {
                const std::uint32_t mb = static_cast<std::uint32_t>(expected & 0xFFFFFFFFu) + 1;
                expected = first_run(mb == microbatches ? ((expected >> 32) + 1) << 32
                                                        : (expected & ~0xFFFFFFFFull) | mb);
            }
        }
        if ((expected >> 32) < stages.count) {
            v.code = verdict_code::missing;
            v.subject = action{static_cast<std::uint32_t>(expected >> 32),
                               forward ? op::forward : op::backward,
                               static_cast<std::uint32_t>(expected & 0xFFFFFFFFu)};
            return v;
        }
    }
    return v; // not reached for sparse input: some unit lacks an action
}
} // namespace detail

/// Validates per-rank action lists. Stages and microbatches default to one past the largest
/// number that appears, so a schedule read from a file needs no shape; pass them to make
/// numbers beyond them errors. The lists say where each stage runs; `layout` matters only for
/// who feeds whom: placement::bidirectional makes the stages two pipelines (timing_model.hpp's
/// stage_line, DualPipe), any other one pipeline.
[[nodiscard]] constexpr verdict validate(std::span<const std::vector<action>> per_rank,
                                         std::uint32_t microbatches = 0, std::uint32_t stages = 0,
                                         placement layout = placement::loop) {
    std::uint32_t max_stage = 0;
    std::uint32_t max_mb = 0;
    std::uint64_t actions = 0;
    for (const auto& list : per_rank) {
        for (const action& a : list) {
            ++actions;
            max_stage = a.stage > max_stage ? a.stage : max_stage;
            max_mb = a.microbatch > max_mb ? a.microbatch : max_mb;
        }
    }
    const bool any = actions != 0;
    const std::uint32_t s = stages != 0 ? stages : (any ? max_stage + 1 : 0);
    const std::uint32_t m = microbatches != 0 ? microbatches : (any ? max_mb + 1 : 0);
    // A valid schedule has at least two actions (F and B, or F, I, W) per unit; a table much
    // larger than the input can only be mostly empty, so answer without building it.
    const std::uint64_t units = std::uint64_t{s} * m;
    const detail::stage_line line = detail::stage_line::of(layout, s);
    if (units > 2 * actions && units > (std::uint64_t{1} << 20)) {
        return detail::sparse_verdict(per_rank, line, m);
    }
    return validate_actions(detail::action_lists{per_rank, line, m});
}

/// The fields of a verdict that fit in a template argument (a string_view does not).
struct verdict_fields {
    verdict_code code;
    std::uint32_t rank;
    std::uint32_t index;
    action subject;
    std::uint32_t cycle_length;
    blocked_rank cycle_first;
    blocked_rank cycle_second;
};

namespace detail {
template <verdict_fields V>
consteval bool schedule_is_valid() {
    static_assert(V.code == verdict_code::valid,
                  "pipesched: the schedule is invalid; the verdict (code, rank, index, action, "
                  "cycle) is the template argument of schedule_is_valid above");
    return true;
}

/// The text of a violated shape constraint (verdict::shape_message) as a template argument: a
/// string_view cannot be one, a char array in a structural class can. Longer texts are cut.
struct constraint_text {
    static constexpr std::size_t capacity = 191;
    char text[capacity + 1]{};
    std::size_t size = 0;
    constexpr explicit constraint_text(std::string_view s) noexcept {
        for (; size < s.size() && size < capacity; ++size) text[size] = s[size];
    }
};

/// Spells the constraint out in the compiler's error: g++ prints constraint_text's array as a
/// string, clang 14 prints it as numbers but the characters of this pack as 'c'.
template <char... Text>
struct the_violated_constraint_is {
    static constexpr bool satisfied = sizeof...(Text) == 0;
};

template <constraint_text T, std::size_t... I>
consteval bool shape_is_accepted(std::index_sequence<I...>) {
    static_assert(the_violated_constraint_is<T.text[I]...>::satisfied,
                  "pipesched: the policy rejects its shape; the violated constraint is the text in "
                  "the template arguments above (constraint_text, the_violated_constraint_is)");
    return true;
}

template <auto Policy>
inline constexpr constraint_text shape_constraint_of{validate(Policy).shape_message};
} // namespace detail

/// `static_assert(require_valid<pol>())`: on failure the compiler prints the violated shape
/// constraint's own text (the string verdict::shape_message and describe() give at run time)
/// or, for an order that breaks a rule, the verdict's fields (code, rank, index, action, cycle).
/// A plain `static_assert(validate(pol))` can only say "static assertion failed".
template <auto Policy>
consteval bool require_valid() {
    constexpr verdict v = validate(Policy);
    if constexpr (v.code == verdict_code::invalid_shape) {
        return detail::shape_is_accepted<detail::shape_constraint_of<Policy>>(
            std::make_index_sequence<detail::shape_constraint_of<Policy>.size>{});
    } else {
        return detail::schedule_is_valid<verdict_fields{v.code, v.rank, v.index, v.subject,
                                                        v.cycle_length, v.cycle[0], v.cycle[1]}>();
    }
}

namespace detail {
/// A double for a message: shortest round-trip form, "nan", "inf", "-inf".
[[nodiscard]] inline std::string cost_text(double x) {
    if (x != x) return "nan";
    if (x > 1.7976931348623157e308) return "inf";
    if (x < -1.7976931348623157e308) return "-inf";
    std::array<char, 32> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), x);
    return r.ec == std::errc{} ? std::string(buf.data(), r.ptr) : std::string{"?"};
}
} // namespace detail

/// Human-readable description of a verdict, for diagnostics and the command line.
[[nodiscard]] inline std::string describe(const verdict& v) {
    // Compute actions in PyTorch's form (0F1); iteration ops by name, stage and microbatch.
    const auto text = [](const action& a) {
        if (is_compute(a.kind)) return std::string{format_action(a).view()};
        return std::string{to_string(a.kind)} + "(stage " + std::to_string(a.stage) +
               ", microbatch " + std::to_string(a.microbatch) + ")";
    };
    std::string out{to_string(v.code)};
    switch (v.code) {
    case verdict_code::valid: return out;
    case verdict_code::invalid_shape: return out + ": " + std::string{v.shape_message};
    case verdict_code::missing:
        return out + ": " + text(v.subject) + " never runs (stage " +
               std::to_string(v.subject.stage) + " is on rank " + std::to_string(v.rank) + ")";
    case verdict_code::stage_on_two_ranks:
        return out + ": " + text(v.subject) + " at rank " + std::to_string(v.rank) + " index " +
               std::to_string(v.index) + ", but stage " + std::to_string(v.subject.stage) +
               " already ran on rank " + std::to_string(v.other_rank);
    case verdict_code::not_compute:
        return out + ": rank " + std::to_string(v.rank) + " index " + std::to_string(v.index) +
               " is " + std::string{to_string(v.subject.kind)} + ", not F, B, I or W";
    case verdict_code::mixed_backward: {
        // record() reports the second of the two: after a B, an I or W; after an I, a B.
        action earlier = v.subject;
        earlier.kind = v.subject.kind == op::backward ? op::backward_input : op::backward;
        return out + ": " + text(v.subject) + " at rank " + std::to_string(v.rank) + " index " +
               std::to_string(v.index) + " after " + text(earlier) +
               ": a unit's backward is either one B, or an I then a W, not both";
    }
    case verdict_code::malformed_overlap:
        return out + ": an overlapped pair must be an F and then a B or I of another unit; rank " +
               std::to_string(v.rank) + " index " + std::to_string(v.index) + " is " +
               text(v.subject);
    case verdict_code::invalid_cost:
        if (v.index == 0xFFFFFFFFu) { // not an action's cost: the cost model's p2p latency
            return out + ": the p2p latency is " + detail::cost_text(v.cost) +
                   "; costs and latencies must be finite and >= 0";
        }
        return out + ": " + text(v.subject) + " at rank " + std::to_string(v.rank) + " index " +
               std::to_string(v.index) + " costs " + detail::cost_text(v.cost) +
               "; costs and latencies must be finite and >= 0";
    case verdict_code::time_overflow:
        // A start beyond a double comes from the input's arrival: its producer ended at a
        // finite time (checked when it ran), so the p2p time added on top overflowed.
        if (!(v.cost <= 1.7976931348623157e308))
            return out + ": " + text(v.subject) + " at rank " + std::to_string(v.rank) + " index " +
                   std::to_string(v.index) + " would start beyond the largest finite time (1.8e308): the p2p "
                   "time added to its input's producer overflows a double";
        return out + ": " + text(v.subject) + " at rank " + std::to_string(v.rank) + " index " +
               std::to_string(v.index) + " starts at " + detail::cost_text(v.cost) +
               " and would end beyond the largest finite time (1.8e308): the " +
               std::string{to_string(v.subject.kind)} + " costs add up to more than a double holds";
    case verdict_code::deadlock: {
        out += ": ranks wait on each other forever:";
        for (std::uint32_t k = 0; k < v.cycle_length && k < max_cycle_report; ++k) {
            const blocked_rank& b = v.cycle[k];
            out += " rank " + std::to_string(b.rank) + " (index " + std::to_string(b.index) +
                   ", " + text(b.waiting) + ") ->";
        }
        if (v.cycle_length > max_cycle_report) out += " ... ->";
        return out + " rank " + std::to_string(v.cycle[0].rank);
    }
    default: {
        out += ": " + text(v.subject) + " at rank " + std::to_string(v.rank) + " index " +
               std::to_string(v.index);
        if (is_p2p(v.subject.kind)) out += " (peer rank " + std::to_string(v.other_rank) + ")";
        return out;
    }
    }
}

} // namespace pipesched
