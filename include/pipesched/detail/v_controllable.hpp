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
// Peak activation memory at unit costs, measured by tests over grids: (p+4)//3 microbatches
// of a rank's activations for V-Min and (p+2)//2 for V-Half (twice that in chunk activations)
// once m is large enough to reach the steady state, never more.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <queue>
#include <tuple>
#include <vector>

#include "../event.hpp"
#include "../shape.hpp"

namespace pipesched::detail::v_controllable {

enum class memory_setup : std::uint8_t { min, half };

/// Slot lists of one rank: list k holds the slot of each microbatch's action of kind k
/// (0: F chunk 0, 1: F chunk 1, 2: I chunk 1, 3: I chunk 0, 4/5: W).
using rank_slots = std::vector<std::vector<std::int64_t>>;

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

[[nodiscard]] inline std::int64_t last_slot(const rank_slots& lists) {
    std::int64_t last = 0;
    for (const auto& l : lists) {
        for (const std::int64_t t : l) last = std::max(last, t);
    }
    return last;
}

/// Adds W lists to the four action lists of a rank: one list, or one per chunk (split).
inline void place_weights(rank_slots& lists, bool split) {
    lists.resize(4);
    const std::int64_t bound = last_slot(lists);
    lists.resize(split ? 6 : 5);
    std::array<std::uint32_t, 2> pending{0, 0};
    std::array<std::size_t, 4> head{0, 0, 0, 0};
    for (std::int64_t slot = 0; slot <= bound; ++slot) {
        std::size_t best = 4;
        for (std::size_t k = 0; k < 4; ++k) {
            if (head[k] == lists[k].size()) continue;
            if (best == 4 || lists[k][head[k]] < lists[best][head[best]]) best = k;
        }
        if (best < 4 && lists[best][head[best]] == slot) {
            ++head[best];
            if (best >= 2) ++pending[split ? best - 2 : 0];
            continue;
        }
        for (std::size_t w = 0; w < 2; ++w) {
            if (pending[w] == 0) continue;
            lists[4 + w].push_back(slot);
            --pending[w];
            break;
        }
    }
    std::int64_t slot = bound;
    for (std::size_t w = 0; w < 2; ++w) {
        for (; pending[w] > 0; --pending[w]) lists[4 + w].push_back(++slot);
    }
}

/// A rank's chunk activations and its W's whose I has run, after a slot.
struct memory_state {
    std::int64_t held = 0;
    std::int64_t pending = 0;
};
inline constexpr std::size_t empty_slot = ~std::size_t{0};

/// The memory rule of one slot holding an action of list k (F 0-1 +1, I 2-3, an explicit W
/// 4-5 -1) or empty_slot, where one pending W runs unless the W's are explicit (has_w).
[[nodiscard]] inline memory_state next_memory(memory_state s, std::size_t k, bool has_w) noexcept {
    if (k == empty_slot) {
        if (!has_w && s.pending > 0) --s.held, --s.pending;
    } else if (k < 2) {
        ++s.held;
    } else if (k < 4) {
        ++s.pending;
    } else {
        --s.held;
    }
    return s;
}

/// Chunk activations of a rank after each of its slots, 0 to its last (next_memory); calls
/// f(slot, activations).
template <class F>
void walk_memory(const rank_slots& lists, F f) {
    const bool has_w = lists.size() > 4;
    const std::int64_t bound = last_slot(lists);
    merge_walk walk{lists};
    memory_state s{};
    for (std::int64_t slot = 0; slot <= bound; ++slot) {
        std::size_t k = walk.next();
        if (k < lists.size() && lists[k][walk.head[k]] == slot) ++walk.head[k];
        else k = empty_slot;
        s = next_memory(s, k, has_w);
        f(slot, s.held);
    }
}

/// Peak chunk activations of a rank's slot lists (walk_memory).
[[nodiscard]] inline std::int64_t peak_memory(const rank_slots& lists) {
    std::int64_t peak = 0;
    walk_memory(lists, [&peak](std::int64_t, std::int64_t current) { peak = std::max(peak, current); });
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

using head_key = std::tuple<std::int64_t, std::uint32_t, std::uint32_t, std::uint32_t>; // slot, rank, list, mb
using head_queue = std::priority_queue<head_key, std::vector<head_key>, std::greater<>>;

inline head_queue heads_of(const std::vector<rank_slots>& all) {
    head_queue q;
    for (std::uint32_t r = 0; r < all.size(); ++r) {
        for (std::uint32_t k = 0; k < all[r].size(); ++k) {
            if (!all[r][k].empty()) q.emplace(all[r][k][0], r, k, 0U);
        }
    }
    return q;
}

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
    head_queue q = heads_of(all);
    while (!q.empty()) {
        const auto [slot, r, k, i] = q.top();
        q.pop();
        (void)slot;
        std::int64_t ready = rank_free[r];
        if ((k == 0 || k == 2) && r > 0) ready = std::max(ready, end[r - 1][k][i]);
        if ((k == 1 || k == 3) && r + 1 < p) ready = std::max(ready, end[r + 1][k][i]);
        if (k > 0 && k < 4) ready = std::max(ready, end[r][k - 1][i]);
        if (i > 0) ready = std::max(ready, end[r][k][i - 1]);
        end[r][k][i] = ready + 1;
        rank_free[r] = ready + 1;
        if (i + 1 < all[r][k].size()) q.emplace(all[r][k][i + 1], r, k, i + 1);
    }
    for (auto& lists : end) {
        for (auto& l : lists) {
            for (std::int64_t& t : l) --t;
        }
    }
    return end;
}

/// A rank's activations and pending W's after each slot when the W's run implicitly, one in
/// each empty slot (walk_memory without W lists), for step 4's squeeze: a move changes them from
/// the new slot on, until they meet the old ones again past the old slot, so try_move() walks
/// only that stretch instead of the whole rank.
class implicit_w_memory {
public:
    explicit implicit_w_memory(const rank_slots& lists)
        : kind_(static_cast<std::size_t>(last_slot(lists) + 1), empty), after_(kind_.size()) {
        for (std::size_t k = 0; k < lists.size(); ++k) {
            for (const std::int64_t t : lists[k]) kind_[static_cast<std::size_t>(t)] = static_cast<std::int8_t>(k);
        }
        memory_state s{};
        for (std::size_t u = 0; u < kind_.size(); ++u) after_[u] = s = next(s, kind_[u]);
    }

    /// Moves the action of list k from slot `from` to the empty slot `to` < from if the rank's
    /// activations stay within `cap` (they are within it before); false, and nothing changed,
    /// if not.
    bool try_move(std::size_t k, std::int64_t from, std::int64_t to, std::int64_t cap) {
        const auto f = static_cast<std::size_t>(from);
        const auto t = static_cast<std::size_t>(to);
        memory_state s = t > 0 ? after_[t - 1] : memory_state{};
        changed_.clear();
        for (std::size_t u = t; u < kind_.size(); ++u) {
            s = next(s, u == t ? static_cast<std::int8_t>(k) : u == f ? empty : kind_[u]);
            if (s.held > cap) return false;
            changed_.push_back(s);
            if (u >= f && s.held == after_[u].held && s.pending == after_[u].pending) break; // as before from here
        }
        std::copy(changed_.begin(), changed_.end(), after_.begin() + static_cast<std::ptrdiff_t>(t));
        kind_[t] = static_cast<std::int8_t>(k);
        kind_[f] = empty;
        return true;
    }

private:
    static constexpr std::int8_t empty = -1;
    [[nodiscard]] static memory_state next(memory_state s, std::int8_t k) noexcept {
        return next_memory(s, k == empty ? empty_slot : static_cast<std::size_t>(k), false);
    }

    std::vector<std::int8_t> kind_;     ///< the list whose action holds each slot, or empty
    std::vector<memory_state> after_;   ///< the state after each slot
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
    // With explicit W's a move changes a rank's activations only between the two slots (an F
    // moved earlier adds one there, a W takes one away, an I changes nothing), so each rank's
    // activations per slot, kept up to date, answer whether a slot fits without walking the
    // whole rank again: that walk per candidate made V-Half take O(p^2 m) (p = 128, m = 256:
    // 3.6 s). Every rank stays within memory_cap, so only the changed slots need a look.
    std::vector<std::vector<std::int64_t>> activations(with_weights ? p : 0);
    for (std::uint32_t r = 0; r < activations.size(); ++r) {
        activations[r].assign(static_cast<std::size_t>(last_slot(all[r]) + 1), 0);
        walk_memory(all[r], [&](std::int64_t t, std::int64_t current) { activations[r][static_cast<std::size_t>(t)] = current; });
    }
    std::vector<implicit_w_memory> implicit;
    if (!with_weights) {
        implicit.reserve(p);
        for (const auto& lists : all) implicit.emplace_back(lists);
    }
    std::vector<std::vector<std::uint8_t>> occupied(p);
    for (std::uint32_t r = 0; r < p; ++r) occupied[r].assign(static_cast<std::size_t>(last_slot(all[r]) + 1), 0);
    const auto last_mb = static_cast<std::uint32_t>(all[0][0].size() - 1);
    int phase = 0; // 0 warm-up, 1 steady (kept), 2 cool-down
    head_queue q = heads_of(all);
    while (!q.empty()) {
        const auto [slot, r, k, i] = q.top();
        q.pop();
        if (i + 1 < all[r][k].size()) q.emplace(all[r][k][i + 1], r, k, i + 1);
        if (k == 3 && r == 0 && phase == 0) phase = 1;
        const bool keep = phase == 1 || (phase == 0 && !with_weights);
        if (phase == 1 && k == 0 && i == last_mb) phase = 2;
        std::int64_t& at = all[r][k][i];
        if (!keep) {
            std::int64_t after = -1;
            if ((k == 0 || k == 2) && r > 0) after = std::max(after, all[r - 1][k][i]);
            if ((k == 1 || k == 3) && r + 1 < p) after = std::max(after, all[r + 1][k][i]);
            if (k > 0 && k < 4) after = std::max(after, all[r][k - 1][i]);
            if (k == 4) after = std::max(after, kth_of_two(all[r][2], all[r][3], i)); // the i-th I of either chunk
            if (i > 0) after = std::max(after, all[r][k][i - 1]);
            bool moved = false;
            if (with_weights) {
                std::vector<std::int64_t>& held = activations[r];
                const std::int64_t change = k < 2 ? 1 : k >= 4 ? -1 : 0;
                // An I or a W fits anywhere; an F only past the last slot before it that
                // already holds memory_cap.
                std::int64_t first = after + 1;
                for (std::int64_t u = slot - 1; change > 0 && u > after; --u) {
                    if (held[static_cast<std::size_t>(u)] + change > memory_cap) {
                        first = u + 1;
                        break;
                    }
                }
                for (std::int64_t t = first; t < slot; ++t) {
                    if (occupied[r][static_cast<std::size_t>(t)] != 0) continue;
                    at = t;
                    for (std::int64_t u = t; u < slot; ++u) held[static_cast<std::size_t>(u)] += change;
                    moved = true;
                    break;
                }
            } else {
                // A free slot before `slot` holds no action: the ones not yet placed come later.
                for (std::int64_t t = after + 1; t < slot && !moved; ++t) {
                    if (occupied[r][static_cast<std::size_t>(t)] != 0) continue;
                    moved = implicit[r].try_move(k, slot, t, memory_cap);
                    if (moved) at = t;
                }
            }
            if (!moved) at = slot;
        }
        occupied[r][static_cast<std::size_t>(at)] = 1;
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
            // Lists: F0, F1, I1, I0, W1, W0.
            static constexpr std::array<op, 6> kinds{op::forward, op::forward, op::backward_input,
                                                     op::backward_input, op::backward_weight, op::backward_weight};
            static constexpr std::array<std::uint8_t, 6> chunks{0, 1, 1, 0, 1, 0};
            out[r].push_back(event{kinds[k], chunks[k], static_cast<std::uint16_t>(r), i, no_peer});
        }
    }
    return out;
}

} // namespace pipesched::detail::v_controllable
