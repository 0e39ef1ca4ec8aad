// pipesched: the generator behind V-Min and V-Half (policies/v_min.hpp, policies/v_half.hpp).
//
// Qi et al., "Pipeline Parallelism with Controllable Memory" (NeurIPS 2024), section 4, and the
// order the authors' repository builds (sail-sg/zero-bubble-pipeline-parallelism, the V
// schedules with `--zero-bubble-v-schedule-mem-setup min|half`); this is an independent
// implementation of the steps the paper describes:
//
//  1. A building block: on rank r, microbatch i runs F of chunk 0, F of chunk 1, B (I) of
//     chunk 1 and B (I) of chunk 0 at time slots offset_k(r) + 6i (one slot per action; six
//     slots per microbatch leave room for its two W's). The offsets make the lifespan of a
//     microbatch on every rank about 4p/3 slots (V-Min) or 2p (V-Half) instead of 1F1B's 6p,
//     which is what bounds the memory.
//       V-Min:  r, 2p-1-r, 2p+d+r, 4p+d-1-r with d = 2 if 3 divides p, else 0
//       V-Half: 2r, 3p-2-r, 3p+d+2r-1, 6p+d-2-r with d = 3 if 2 divides p, else 0
//  2. W's fill the empty slots: a W becomes pending with each I and takes the next free slot
//     (left-overs at the end).
//  3. "Squeeze": in the warm-up (before rank 0's first chunk-0 I) and the cool-down (after the
//     last chunk-0 F on rank 0), every action moves to the earliest free slot after its
//     dependencies (the previous stage's action, the same rank's previous action of the unit,
//     the previous microbatch of the same kind, and for a W the I it belongs to) that does not
//     raise the rank's peak memory (F: +1, W: -1, in chunk activations); then every rank is
//     replayed with unit costs so that the slots close up.
//  4. Step 3 again without the W's (they fill the empty slots of the memory count implicitly)
//     and without moving the warm-up, then the W's are placed again, one list per chunk (the
//     chunk-1 W first when both are pending).
// The order of a rank is its actions sorted by slot (ties: F0, F1, I1, I0, W1, W0).
//
// What is the pipeline's rule and what is this construction's: the slots of step 1 (offset +
// 6i), the W's in free slots (step 2) and the memory cap of the squeeze are the paper's pattern,
// a way of building the order, not a timing of it; no replay states them, so they are written
// here. What an action waits for (the previous stage's result, the loss stage's own F) and what
// it does to the rank's activations are the timing model's rules (timing_model.hpp:
// cross_stage_input, start_time's rule, activation_change): the squeeze and close_up ask it
// (needed_input, next_memory) instead of writing the V's neighbours again, so close_up is a
// replay at unit costs without latency by the same rules as simulate().
//
// Peak activation memory at unit costs, measured by tests over grids: (p+4)//3 microbatches
// of a rank's activations for V-Min and (p+2)//2 for V-Half (twice that in chunk activations)
// once m is large enough to reach the steady state, never more.
//
// Cost of building: memory linear in p * m (build_bytes_per_unit) and time about linear in it
// plus the squeeze's walks: every structure is sized by a rank's actions, never by its slots
// (a rank spans about 4p + 6m slots, so tables per slot were quadratic in p when m is small:
// V-Min at p = 8192, m = 1 held 4 GB and took 128 s; it now holds 11 MB and takes 0.5 s).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <vector>

#include "../action.hpp"
#include "../timing_model.hpp"
#include "../event.hpp"
#include "../shape.hpp"

namespace pipesched::detail::v_controllable {

enum class memory_setup : std::uint8_t { min, half };

/// Most bytes generate() holds at once per (rank, microbatch), the order it returns included:
/// the slot lists (six of 8 bytes), close_up's copy of them, the squeeze's record of each
/// rank's actions (8 or 16 bytes each, six or four per microbatch) and the 48 bytes of events
/// returned, with room for vector growth; and per rank, for its lists' allocations and the
/// slot buckets. Measured peak resident memory of a program that only builds (g++ 12 -O2,
/// 2026-12-06): 118 MB at p = m = 1024 (113 bytes per unit), 155 MB at p = 65535, m = 16,
/// 66 MB at p = 65535, m = 1 (1 KB per rank).
inline constexpr std::uint64_t build_bytes_per_unit = 192;
inline constexpr std::uint64_t build_bytes_per_rank = 1536;

/// Slot lists of one rank: list k holds the slot of each microbatch's action of kind k
/// (0: F chunk 0, 1: F chunk 1, 2: I chunk 1, 3: I chunk 0, 4/5: W).
using rank_slots = std::vector<std::vector<std::int64_t>>;

/// The op and chunk of list k (lists 4 and 5: the W's of chunk 1 and 0 once split).
inline constexpr std::array<op, 6> list_ops{op::forward, op::forward, op::backward_input,
                                            op::backward_input, op::backward_weight, op::backward_weight};
inline constexpr std::array<std::uint8_t, 6> list_chunks{0, 1, 1, 0, 1, 0};

/// A rank's list and its owner: where the timing model's answers about an action are kept.
struct list_ref {
    std::uint32_t rank;
    std::uint32_t list;
};

/// The F or I (list k < 4 of rank r) whose result the one of list k on rank r needs before it
/// can run, by the timing model's rules for the V placement of p ranks (timing_model.hpp): the
/// cross-stage input (F of the previous stage, I of the next one), or, on the loss stage, the
/// unit's own F. False for the first stage's F. The other orderings of a unit on one rank (F1
/// after F0, I0 after I1 away from the turn) follow from these through the other ranks.
[[nodiscard]] constexpr bool needed_input(std::uint32_t p, std::uint32_t r, std::uint32_t k, list_ref& from) noexcept {
    const std::uint32_t stages = 2 * p;
    const action a{stage_of(placement::v_shape, p, r, list_chunks[k]), list_ops[k], 0};
    action input{};
    if (!cross_stage_input(a, stages, input)) {
        if (a.kind != op::backward_input) return false;
        input = action{a.stage, op::forward, 0}; // the loss stage turns around on its own F
    }
    const rank_chunk at = locate_stage(placement::v_shape, p, input.stage);
    from = {at.rank, input.kind == op::forward ? at.chunk : 3 - at.chunk};
    return true;
}

inline std::vector<std::array<std::int64_t, 4>> building_block(memory_setup setup, std::int64_t p) {
    std::vector<std::array<std::int64_t, 4>> out(static_cast<std::size_t>(p));
    for (std::int64_t r = 0; r < p; ++r) {
        if (setup == memory_setup::min) {
            const std::int64_t d = p % 3 == 0 ? 2 : 0;
            out[static_cast<std::size_t>(r)] = {r, 2 * p - 1 - r, 2 * p + d + r, 4 * p + d - 1 - r};
        } else {
            const std::int64_t d = p % 2 == 0 ? 3 : 0;
            out[static_cast<std::size_t>(r)] = {2 * r, 3 * p - 2 - r, 3 * p + d + 2 * r - 1, 6 * p + d - 2 - r};
        }
    }
    return out;
}

/// Walks the lists of one rank in slot order (ties by list index), as heads of sorted queues.
struct merge_walk {
    const rank_slots& lists;
    std::vector<std::size_t> head;
    explicit merge_walk(const rank_slots& l) : lists{l}, head(l.size(), 0) {}
    /// The list whose head comes next, or lists.size() when all are consumed.
    [[nodiscard]] std::size_t next() const {
        std::size_t best = lists.size();
        for (std::size_t k = 0; k < lists.size(); ++k) {
            if (head[k] == lists[k].size()) continue;
            if (best == lists.size() || lists[k][head[k]] < lists[best][head[best]]) best = k;
        }
        return best;
    }
};

/// Calls f(slot, k) for every action of a rank's lists in slot order (merge_walk).
template <class F>
void for_each_action(const rank_slots& lists, F f) {
    merge_walk walk{lists};
    for (std::size_t k = walk.next(); k < lists.size(); k = walk.next()) f(lists[k][walk.head[k]++], k);
}

[[nodiscard]] inline std::int64_t last_slot(const rank_slots& lists) {
    std::int64_t last = 0;
    for (const auto& l : lists) {
        for (const std::int64_t t : l) last = std::max(last, t);
    }
    return last;
}

// Every structure below is sized by a rank's actions, never by its slots: a rank of a shape
// with many ranks and few microbatches spans about 4p slots (V-Min) of which only 6m hold an
// action, and tables per slot made V-Min at p = 8192, m = 1 hold 4 GB. Slots a rank leaves
// empty are runs between two of its actions; each rule below says what a run of them does.

/// Adds W lists to the four action lists of a rank: one list, or one per chunk (split). Each
/// empty slot up to the rank's last action runs the first pending W (chunk 1's first when
/// split); the W's left over follow the last action.
inline void place_weights(rank_slots& lists, bool split) {
    lists.resize(4);
    const std::int64_t bound = last_slot(lists);
    lists.resize(split ? 6 : 5);
    std::array<std::uint32_t, 2> pending{0, 0};
    std::array<std::size_t, 4> head{0, 0, 0, 0};
    std::int64_t slot = 0; // the first slot not yet handed out
    for (;;) {
        std::size_t best = 4;
        for (std::size_t k = 0; k < 4; ++k) {
            if (head[k] == lists[k].size()) continue;
            if (best == 4 || lists[k][head[k]] < lists[best][head[best]]) best = k;
        }
        const std::int64_t next_action = best < 4 ? lists[best][head[best]] : bound + 1;
        for (; slot < next_action && pending[0] + pending[1] > 0; ++slot) {
            const std::size_t w = pending[0] > 0 ? 0 : 1;
            lists[4 + w].push_back(slot);
            --pending[w];
        }
        if (best == 4) break;
        slot = next_action + 1;
        ++head[best];
        if (best >= 2) ++pending[split ? best - 2 : 0];
    }
    std::int64_t after = bound;
    for (std::size_t w = 0; w < 2; ++w) {
        for (; pending[w] > 0; --pending[w]) lists[4 + w].push_back(++after);
    }
}

/// A rank's chunk activations and its W's whose I has run, after a slot. 32 bits each: a rank
/// holds at most 2m activations and 2m W's.
struct memory_state {
    std::int32_t held = 0;
    std::int32_t pending = 0;
    friend constexpr bool operator==(const memory_state&, const memory_state&) = default;
};
inline constexpr std::size_t empty_slot = ~std::size_t{0};

/// The memory rule (timing_model.hpp's activation_change) for one slot holding an action of
/// list k or empty_slot, where one pending W runs unless the W's are explicit (has_w); an I
/// leaves its W pending.
[[nodiscard]] inline memory_state next_memory(memory_state s, std::size_t k, bool has_w) noexcept {
    if (k == empty_slot) {
        if (!has_w && s.pending > 0) {
            s.held += activation_change(op::backward_weight);
            --s.pending;
        }
        return s;
    }
    s.held += activation_change(list_ops[k]);
    if (list_ops[k] == op::backward_input) ++s.pending;
    return s;
}

/// next_memory over `count` empty slots in a row: each runs a pending W while there is one.
[[nodiscard]] inline memory_state after_empty_slots(memory_state s, std::int64_t count, bool has_w) noexcept {
    if (has_w || count <= 0) return s;
    const auto ran = static_cast<std::int32_t>(std::min<std::int64_t>(count, s.pending));
    s.held -= ran;
    s.pending -= ran;
    return s;
}

/// Peak chunk activations of a rank's slot lists (next_memory from slot 0 to the last action;
/// empty slots only lower them, so the peak is after an action).
[[nodiscard]] inline std::int64_t peak_memory(const rank_slots& lists) {
    const bool has_w = lists.size() > 4;
    memory_state s{};
    std::int64_t previous = -1;
    std::int64_t peak = 0;
    for_each_action(lists, [&](std::int64_t slot, std::size_t k) {
        s = next_memory(after_empty_slots(s, slot - previous - 1, has_w), k, has_w);
        peak = std::max<std::int64_t>(peak, s.held);
        previous = slot;
    });
    return peak;
}

/// The k-th smallest (from 0) of two sorted lists taken together; k < a.size() + b.size().
[[nodiscard]] inline std::int64_t kth_of_two(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b,
                                             std::size_t k) {
    // The k + 1 smallest are the first x of a and the first k + 1 - x of b for the least x
    // whose next element of a is not below the last one taken from b.
    std::size_t lo = k + 1 > b.size() ? k + 1 - b.size() : 0;
    std::size_t hi = std::min(k + 1, a.size());
    while (lo < hi) {
        const std::size_t x = lo + (hi - lo) / 2;
        if (a[x] < b[k - x]) lo = x + 1;
        else hi = x;
    }
    const std::size_t y = k + 1 - lo;
    if (lo == 0) return b[y - 1];
    if (y == 0) return a[lo - 1];
    return std::max(a[lo - 1], b[y - 1]);
}

/// One action in the order the squeeze and close_up take them: by slot, then rank, list and
/// microbatch.
struct head {
    std::int64_t slot;
    std::uint32_t rank;
    std::uint32_t list;
    std::uint32_t mb;
};

/// The heads of every rank's lists in that order. A list's next action comes after its head
/// (lists are sorted by slot), so a bucket per slot serves instead of a heap: each action is
/// taken in constant time plus its share of sorting one slot's bucket, which holds at most one
/// action per rank. Memory: one bucket per slot up to the last (about 4p + 6m), and the heads.
class slot_order {
public:
    explicit slot_order(const std::vector<rank_slots>& all) : all_{all} {
        std::int64_t last = 0;
        for (const auto& lists : all) last = std::max(last, last_slot(lists));
        buckets_.resize(static_cast<std::size_t>(last) + 1);
        for (std::uint32_t r = 0; r < all.size(); ++r) {
            for (std::uint32_t k = 0; k < all[r].size(); ++k) {
                if (!all[r][k].empty()) add(head{all[r][k][0], r, k, 0});
            }
        }
    }

    /// The next head, or false when every action was taken. Taking one makes the next
    /// action of its list a head (at its slot in `all` as it was when given).
    bool next(head& h) {
        while (slot_ < buckets_.size()) {
            std::vector<head>& bucket = buckets_[slot_];
            if (taken_ == 0) {
                std::sort(bucket.begin(), bucket.end(), [](const head& a, const head& b) {
                    return std::tie(a.rank, a.list, a.mb) < std::tie(b.rank, b.list, b.mb);
                });
            }
            if (taken_ < bucket.size()) {
                h = bucket[taken_++];
                if (h.mb + 1 < all_[h.rank][h.list].size()) {
                    add(head{all_[h.rank][h.list][h.mb + 1], h.rank, h.list, h.mb + 1});
                }
                return true;
            }
            std::vector<head>{}.swap(bucket);
            ++slot_;
            taken_ = 0;
        }
        return false;
    }

private:
    void add(const head& h) { buckets_[static_cast<std::size_t>(h.slot)].push_back(h); }

    const std::vector<rank_slots>& all_;
    std::vector<std::vector<head>> buckets_;
    std::size_t slot_ = 0;  ///< the bucket being taken
    std::size_t taken_ = 0; ///< heads taken from it
};

/// Replays every rank in slot order with unit costs and no latency, each action as early as its
/// inputs allow; returns the start slots.
inline std::vector<rank_slots> close_up(const std::vector<rank_slots>& all) {
    const auto p = static_cast<std::uint32_t>(all.size());
    std::vector<rank_slots> end(p);
    for (std::uint32_t r = 0; r < p; ++r) {
        end[r].resize(all[r].size());
        for (std::size_t k = 0; k < all[r].size(); ++k) end[r][k].assign(all[r][k].size(), -1);
    }
    std::vector<std::int64_t> rank_free(p, 0);
    slot_order order{all};
    for (head h{}; order.next(h);) {
        const std::uint32_t r = h.rank;
        const std::uint32_t k = h.list;
        const std::uint32_t i = h.mb;
        std::int64_t ready = 0;
        if (list_ref from{}; k < 4 && needed_input(p, r, k, from)) ready = end[from.rank][from.list][i];
        if (i > 0) ready = std::max(ready, end[r][k][i - 1]);
        ready = std::max(ready, rank_free[r]); // start_time() in whole slots: no p2p latency
        end[r][k][i] = ready + 1;
        rank_free[r] = ready + 1;
    }
    for (auto& lists : end) {
        for (auto& l : lists) {
            for (std::int64_t& t : l) --t;
        }
    }
    return end;
}

/// Step 3's view of one rank (W's explicit): the actions placed so far in slot order, each with
/// what it does to the rank's activations (F +1, I 0, W -1; an empty slot changes nothing). The
/// squeeze places actions in slot order and moves them only earlier, so every action placed
/// lies before the one being placed, and the activations after a slot u before it are the sum
/// of the changes up to u: constant from one placed action to the next.
class placed_actions {
public:
    /// Where an action at `slot` whose inputs exist after slot `after` goes: the first empty
    /// slot in (after, slot) from which the rank's activations stay within `cap` up to `slot`
    /// once `change` is added to them (they are within it before), else `slot`.
    [[nodiscard]] std::int64_t earliest_fit(std::int64_t after, std::int64_t slot, std::int32_t change,
                                            std::int64_t cap) const {
        std::int64_t first = after + 1;
        if (change > 0) {
            // Back from `slot` over runs of equal activations: `held` from placed_[j - 1] to `end`.
            std::int64_t held = total_;
            std::int64_t end = slot - 1;
            for (std::size_t j = placed_.size(); end > after; --j) {
                if (held + change > cap) {
                    first = end + 1;
                    break;
                }
                if (j == 0) break;
                held -= placed_[j - 1].change;
                end = placed_[j - 1].slot - 1;
            }
        }
        auto it = std::lower_bound(placed_.begin(), placed_.end(), first, by_slot);
        std::int64_t t = first;
        for (; it != placed_.end() && it->slot == t; ++it) ++t;
        return t < slot ? t : slot;
    }

    void reserve(std::size_t actions) { placed_.reserve(actions); }

    /// Records an action at the empty slot `at` that changes activations by `change`.
    void place(std::int64_t at, std::int32_t change) {
        const auto it = std::lower_bound(placed_.begin(), placed_.end(), at, by_slot);
        placed_.insert(it, action_at{static_cast<std::int32_t>(at), change});
        total_ += change;
    }

private:
    struct action_at {
        std::int32_t slot; ///< slots stay below 2^31: a rank's are at most 6pm <= 6 * 2^20
        std::int32_t change;
    };
    static bool by_slot(const action_at& a, std::int64_t t) noexcept { return a.slot < t; }

    std::vector<action_at> placed_;
    std::int64_t total_ = 0; ///< the activations after the last placed action
};

/// A rank's activations and pending W's after each of its actions when the W's run implicitly,
/// one in each empty slot (next_memory without W lists), for step 4's squeeze: a move changes
/// them from the new slot on, until they meet the old ones again past the old slot, so
/// try_move() walks only that stretch instead of the whole rank.
class implicit_w_memory {
public:
    explicit implicit_w_memory(const rank_slots& lists) {
        std::size_t actions = 0;
        for (const auto& l : lists) actions += l.size();
        actions_.reserve(actions);
        memory_state s{};
        std::int64_t previous = -1;
        for_each_action(lists, [&](std::int64_t slot, std::size_t k) {
            s = next(after_empty_slots(s, slot - previous - 1, false), k);
            actions_.push_back(action_at{static_cast<std::int32_t>(slot), static_cast<std::int8_t>(k), s});
            previous = slot;
        });
    }

    /// The first slot from `from` on that holds no action.
    [[nodiscard]] std::int64_t first_empty(std::int64_t from) const {
        auto it = std::lower_bound(actions_.begin(), actions_.end(), from, by_slot);
        for (; it != actions_.end() && it->slot == from; ++it) ++from;
        return from;
    }

    /// Moves the action of list k from slot `from` to the empty slot `to` < from if the rank's
    /// activations stay within `cap` (they are within it before); false, and nothing changed,
    /// if not.
    bool try_move(std::size_t k, std::int64_t from, std::int64_t to, std::int64_t cap) {
        const auto first_after = static_cast<std::size_t>(
            std::lower_bound(actions_.begin(), actions_.end(), to, by_slot) - actions_.begin());
        const auto moved = static_cast<std::size_t>(
            std::lower_bound(actions_.begin(), actions_.end(), from, by_slot) - actions_.begin());
        std::int64_t previous = first_after > 0 ? actions_[first_after - 1].slot : -1;
        memory_state s = first_after > 0 ? actions_[first_after - 1].after : memory_state{};
        s = next(after_empty_slots(s, to - previous - 1, false), k);
        if (s.held > cap) return false;
        const memory_state at_to = s;
        previous = to;
        // The states after the actions from first_after on, with `from` empty, up to the first
        // one at or past `from` where they equal the old ones (equal from there on). Empty slots
        // between actions only lower the activations, so the actions are where to check.
        changed_.clear();
        for (std::size_t j = first_after; j < actions_.size(); ++j) {
            const action_at& a = actions_[j];
            s = after_empty_slots(s, a.slot - previous - 1, false);
            s = j == moved ? next_memory(s, empty_slot, false) : next(s, static_cast<std::size_t>(a.kind));
            if (s.held > cap) return false;
            changed_.push_back(s);
            previous = a.slot;
            if (a.slot >= from && s == a.after) break;
        }
        for (std::size_t x = 0; x < changed_.size(); ++x) actions_[first_after + x].after = changed_[x];
        const auto base = actions_.begin();
        std::rotate(base + static_cast<std::ptrdiff_t>(first_after), base + static_cast<std::ptrdiff_t>(moved),
                    base + static_cast<std::ptrdiff_t>(moved) + 1);
        actions_[first_after] = action_at{static_cast<std::int32_t>(to), static_cast<std::int8_t>(k), at_to};
        return true;
    }

private:
    struct action_at {
        std::int32_t slot; ///< below 2^31, as for placed_actions
        std::int8_t kind;  ///< its list
        memory_state after;
    };
    static bool by_slot(const action_at& a, std::int64_t t) noexcept { return a.slot < t; }
    [[nodiscard]] static memory_state next(memory_state s, std::size_t k) noexcept { return next_memory(s, k, false); }

    std::vector<action_at> actions_;    ///< in slot order
    std::vector<memory_state> changed_; ///< try_move()'s walk
};

/// Step 3 (with_weights) or step 4's squeeze; see the header comment.
inline std::vector<rank_slots> squeeze(std::vector<rank_slots> all, bool with_weights) {
    const auto p = static_cast<std::uint32_t>(all.size());
    if (with_weights) {
        for (auto& lists : all) place_weights(lists, false);
    }
    std::int64_t memory_cap = 0;
    for (const auto& lists : all) memory_cap = std::max(memory_cap, peak_memory(lists));
    {
        // With explicit W's a move changes a rank's activations only between the two slots (an
        // F moved earlier adds one there, a W takes one away, an I changes nothing), so the
        // placed actions answer whether a slot fits without walking the whole rank again: that
        // walk per candidate made V-Half take O(p^2 m) (p = 128, m = 256: 3.6 s). Every rank
        // stays within memory_cap, so only the stretch before the action needs a look.
        std::vector<placed_actions> placed(with_weights ? p : 0);
        for (std::uint32_t r = 0; r < placed.size(); ++r) {
            std::size_t actions = 0;
            for (const auto& l : all[r]) actions += l.size();
            placed[r].reserve(actions);
        }
        std::vector<implicit_w_memory> implicit;
        if (!with_weights) {
            implicit.reserve(p);
            for (const auto& lists : all) implicit.emplace_back(lists);
        }
        const auto last_mb = static_cast<std::uint32_t>(all[0][0].size() - 1);
        int phase = 0; // 0 warm-up, 1 steady (kept), 2 cool-down
        slot_order order{all};
        for (head h{}; order.next(h);) {
            const std::int64_t slot = h.slot;
            const std::uint32_t r = h.rank;
            const std::uint32_t k = h.list;
            const std::uint32_t i = h.mb;
            if (k == 3 && r == 0 && phase == 0) phase = 1;
            const bool keep = phase == 1 || (phase == 0 && !with_weights);
            if (phase == 1 && k == 0 && i == last_mb) phase = 2;
            std::int64_t& at = all[r][k][i];
            if (!keep) {
                std::int64_t after = -1;
                if (list_ref from{}; k < 4 && needed_input(p, r, k, from)) after = all[from.rank][from.list][i];
                if (k == 4) after = std::max(after, kth_of_two(all[r][2], all[r][3], i)); // the i-th I of either chunk
                if (i > 0) after = std::max(after, all[r][k][i - 1]);
                if (with_weights) {
                    // An I or a W fits anywhere; an F only past the last slot before it that
                    // already holds memory_cap.
                    at = placed[r].earliest_fit(after, slot, activation_change(list_ops[k]), memory_cap);
                } else {
                    // A free slot before `slot` holds no action: the ones not yet placed come later.
                    for (std::int64_t t = implicit[r].first_empty(after + 1); t < slot;
                         t = implicit[r].first_empty(t + 1)) {
                        if (implicit[r].try_move(k, slot, t, memory_cap)) {
                            at = t;
                            break;
                        }
                    }
                }
            }
            if (with_weights) placed[r].place(at, activation_change(list_ops[k]));
        }
    }
    if (!with_weights) {
        for (auto& lists : all) place_weights(lists, false);
    }
    return close_up(all);
}

/// Every rank's events for p ranks and m microbatches (V placement, chunks 0 and 1).
inline std::vector<std::vector<event>> generate(memory_setup setup, std::uint32_t p, std::uint32_t m) {
    const auto block = building_block(setup, static_cast<std::int64_t>(p));
    std::vector<rank_slots> all(p, rank_slots(4));
    for (std::uint32_t r = 0; r < p; ++r) {
        for (std::size_t k = 0; k < 4; ++k) {
            for (std::uint32_t i = 0; i < m; ++i) all[r][k].push_back(block[r][k] + 6 * std::int64_t{i});
        }
    }
    all = squeeze(std::move(all), true);
    for (auto& lists : all) lists.resize(4);
    all = squeeze(std::move(all), false);
    std::vector<std::vector<event>> out(p);
    for (std::uint32_t r = 0; r < p; ++r) {
        rank_slots& lists = all[r];
        lists.resize(4);
        place_weights(lists, true);
        merge_walk walk{lists};
        out[r].reserve(6 * std::size_t{m});
        for (std::size_t k = walk.next(); k < lists.size(); k = walk.next()) {
            const auto i = static_cast<std::uint16_t>(walk.head[k]++);
            out[r].push_back(event{list_ops[k], list_chunks[k], static_cast<std::uint16_t>(r), i, no_peer});
        }
    }
    return out;
}

} // namespace pipesched::detail::v_controllable
