// pipesched internals: the per-rank programs of the V-shape schedules (ZB-V, DualPipeV).
//
// A rank's sequence is at most `v_max_phases` phases; phase k repeats a pattern of up to
// `v_max_slots` slots `count` times. A slot is one event:
//   - an op on one of the two chunks whose microbatch is `base + j` in repeat j (every op of
//     a V schedule counts microbatches per chunk and per op kind, so this covers them all);
//   - a W whose (chunk, microbatch) is entry `base + j` of the policy's weight queue (DualPipeV
//     runs W's in the order of its deferred I's, which alternate chunks);
//   - an overlap_f_b marker (chunk 0, microbatch 0).
// Events whose microbatch is `limit` or more are left out (ZB-V pads m up to 2p-1 with
// phantom microbatches that PyTorch turns into idle slots); a repeat whose every slot is left
// out ends its phase. The program of a rank is a pure function of (p, m, rank), rebuilt in
// O(1): the cursor keeps the current phase, the repeat and the slot, and allocates nothing.
//
// A Program type provides
//   static constexpr std::size_t phases;                       // phases per rank
//   static constexpr v_phase phase(const v_params&, std::size_t k);
//   static constexpr unit queued(const v_params&, std::uint32_t index);  // weight queue entry
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "../event.hpp"
#include "../shape.hpp"
#include "program.hpp"

namespace pipesched::detail {

inline constexpr std::size_t v_max_slots = 6;

struct v_params {
    std::uint32_t ranks = 1;
    std::uint32_t microbatches = 1; ///< m, the real microbatches
    std::uint32_t limit = 1;        ///< events with microbatch >= limit are left out
    std::uint32_t rank = 0;
};

struct v_slot {
    op kind = op::forward;
    std::uint8_t chunk = 0;
    bool queued = false;   ///< a W taken from the weight queue at index base + j
    std::uint32_t base = 0;
};

struct v_phase {
    std::uint32_t count = 0;
    std::uint32_t length = 0;
    std::array<v_slot, v_max_slots> slots{};

    constexpr v_phase& add(op kind, std::uint32_t chunk, std::uint32_t base) noexcept {
        slots[length++] = v_slot{kind, static_cast<std::uint8_t>(chunk), false, base};
        return *this;
    }
    constexpr v_phase& add_queued_weight(std::uint32_t index) noexcept {
        slots[length++] = v_slot{op::backward_weight, 0, true, index};
        return *this;
    }
    constexpr v_phase& add_marker() noexcept {
        slots[length++] = v_slot{op::overlap_f_b, 0, false, 0};
        return *this;
    }
};

/// A phase with its repeat count cut where every later repeat would be left out.
[[nodiscard]] constexpr std::uint32_t effective_count(const v_phase& ph, std::uint32_t limit) noexcept {
    bool bounded = false;
    std::uint32_t lowest = 0;
    for (std::uint32_t s = 0; s < ph.length; ++s) {
        const v_slot& sl = ph.slots[s];
        if (sl.kind == op::overlap_f_b) continue;
        if (sl.queued) return ph.count; // queue entries are always real microbatches
        lowest = !bounded || sl.base < lowest ? sl.base : lowest;
        bounded = true;
    }
    if (!bounded) return ph.count;
    const std::uint32_t room = limit > lowest ? limit - lowest : 0;
    return room < ph.count ? room : ph.count;
}

/// The event of slot `sl` in repeat j; false when it is left out.
template <class Program>
[[nodiscard]] constexpr bool slot_event(const v_params& prm, const v_slot& sl, std::uint32_t j,
                                        event& out) noexcept {
    if (sl.kind == op::overlap_f_b) {
        out = make_event(op::overlap_f_b, prm.rank, unit{0, 0});
        return true;
    }
    const unit u = sl.queued ? Program::queued(prm, sl.base + j) : unit{sl.chunk, sl.base + j};
    if (u.microbatch >= prm.limit) return false;
    out = make_event(sl.kind, prm.rank, u);
    return true;
}

/// Calls f(event) for every event of the program, one loop per phase.
template <class Program, class F>
constexpr void run_program(const v_params& prm, F& f) {
    for (std::size_t k = 0; k < Program::phases; ++k) {
        const v_phase ph = Program::phase(prm, k);
        const std::uint32_t count = effective_count(ph, prm.limit);
        for (std::uint32_t j = 0; j < count; ++j) {
            for (std::uint32_t s = 0; s < ph.length; ++s) {
                event e{};
                if (slot_event<Program>(prm, ph.slots[s], j, e)) f(e);
            }
        }
    }
}

/// Pull cursor over a program: O(1) state (the current phase, repeat and slot).
template <class Program>
class v_program_cursor {
public:
    constexpr v_program_cursor() = default;
    constexpr explicit v_program_cursor(const v_params& prm) : prm_{prm} {
        load(0);
        advance();
    }

    [[nodiscard]] constexpr bool done() const noexcept { return done_; }
    [[nodiscard]] constexpr event current() const noexcept { return std::bit_cast<event>(current_); }

    constexpr void advance() noexcept {
        while (true) {
            if (repeat_ < count_) {
                if (slot_ < phase_.length) {
                    event e{};
                    if (slot_event<Program>(prm_, phase_.slots[slot_++], repeat_, e)) {
                        current_ = std::bit_cast<std::uint64_t>(e);
                        return;
                    }
                    continue;
                }
                slot_ = 0;
                if (++repeat_ < count_) continue;
            }
            if (index_ + 1 >= Program::phases) {
                done_ = true;
                return;
            }
            load(index_ + 1);
        }
    }

private:
    constexpr void load(std::size_t k) noexcept {
        index_ = k;
        phase_ = Program::phase(prm_, k);
        count_ = effective_count(phase_, prm_.limit);
        repeat_ = 0;
        slot_ = 0;
    }

    v_params prm_{};
    v_phase phase_{};
    std::size_t index_ = 0;
    std::uint32_t count_ = 0;
    std::uint32_t repeat_ = 0;
    std::uint32_t slot_ = 0;
    std::uint64_t current_{}; // an event as one value, for the reason of make_event
    bool done_ = false;
};

/// Number of events of a program (closed form per phase; O(phases)).
template <class Program>
[[nodiscard]] constexpr std::size_t program_size(const v_params& prm) noexcept {
    std::size_t n = 0;
    for (std::size_t k = 0; k < Program::phases; ++k) {
        const v_phase ph = Program::phase(prm, k);
        const std::uint32_t count = effective_count(ph, prm.limit);
        for (std::uint32_t s = 0; s < ph.length; ++s) {
            const v_slot& sl = ph.slots[s];
            if (sl.kind == op::overlap_f_b || sl.queued) {
                n += count;
            } else if (sl.base < prm.limit) {
                const std::uint32_t kept = prm.limit - sl.base;
                n += kept < count ? kept : count;
            }
        }
    }
    return n;
}

} // namespace pipesched::detail
