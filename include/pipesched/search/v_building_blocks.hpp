// pipesched: V orders built from a repeated building block (the idea of Qi et al.,
// "Pipeline Parallelism with Controllable Memory", NeurIPS 2024, section 3 and appendix A):
// every rank repeats one period of six unit slots holding one F, I and W of each of its two
// chunks; the slots of rank r+1 follow from rank r's by fixed offsets (its chunk-0 F and
// chunk-1 I come k slots later, its chunk-1 F and chunk-0 I one slot earlier, the directions
// their inputs travel), so that every microbatch's dependencies are met and the steady state has
// no bubble at equal costs. How far apart a rank's F and its W lie in that period is how many
// microbatches it holds: the block sets the memory, and the search enumerates blocks (rank 0's
// slots, two offsets and the rank where the second takes over) to find orders at every memory
// level between the named V schedules'.
//
// Each block becomes an order on a unit-slot timeline (every action one slot, as the blocks are
// designed): microbatch 0 of each action at the first slot of its kind after its input's (the
// forward chain down the ranks in chunk 0 and back up in chunk 1, then the backward chain),
// microbatch j j periods later, for at least 2p microbatches so that the steady state appears;
// then every rank's warm-up is filled with the activations the steady state holds, the extra
// microbatches are dropped, the cool-down becomes a stair of I's two slots apart with the W's
// after them, and later actions move into idle slots where their inputs are there and memory
// does not rise. Squeezing a timeline (every action as early as its input allows, in the same
// order) replays it on the search's clock (clock.hpp) at unit costs; the caller scores the
// orders at the real costs (evaluation.hpp) and keeps the best that fits.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "evaluation.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

namespace v_blocks {

/// The six actions of a V rank's period: forwards, input gradients and weight gradients of
/// chunk 0 (stage r, downwards) and chunk 1 (stage 2p-1-r, upwards).
enum slot_action : std::uint8_t { f0, f1, i1, i0, w1, w0 };
inline constexpr std::uint32_t period = 6;

inline constexpr task task_of(std::uint8_t a) noexcept {
    constexpr task tasks[period] = {{kind::f, 0}, {kind::f, 1}, {kind::i, 1}, {kind::i, 0}, {kind::w, 1}, {kind::w, 0}};
    return tasks[a];
}

/// One rank's slots (0..5) for each action.
using rank_slots = std::array<std::uint32_t, period>;

/// Places each W in the first free slot after its I (cyclically): a W runs as soon as the rank
/// has room after its input gradient.
inline void place_weights(rank_slots& s) {
    std::array<bool, period> used{};
    used.fill(false);
    for (const std::uint8_t a : {f0, f1, i1, i0}) used[s[a]] = true;
    for (const auto [i, w] : {std::array<std::uint8_t, 2>{i1, w1}, std::array<std::uint8_t, 2>{i0, w0}}) {
        for (std::uint32_t d = 1; d <= period; ++d) {
            const std::uint32_t at = (s[i] + d) % period;
            if (!used[at]) {
                s[w] = at;
                used[at] = true;
                break;
            }
        }
    }
}

/// The block of every rank from rank 0's slots: rank r+1's chunk-0 F and chunk-1 I are `k`
/// slots after rank r's, its chunk-1 F and chunk-0 I one slot before, with k = k_first for the
/// first `switch_rank` steps and k_then after. Empty when two actions of a rank collide.
inline std::vector<rank_slots> make_block(const rank_slots& first, std::uint32_t p, std::uint32_t k_first,
                                          std::uint32_t k_then, std::uint32_t switch_rank) {
    std::vector<rank_slots> out(p, rank_slots{});
    out[0] = first;
    for (std::uint32_t r = 1; r < p; ++r) {
        const std::uint32_t k = r - 1 < switch_rank ? k_first : k_then;
        const rank_slots& prev = out[r - 1];
        rank_slots& s = out[r];
        s[f0] = (prev[f0] + k) % period;
        s[i1] = (prev[i1] + k) % period;
        s[f1] = (prev[f1] + period - 1) % period;
        s[i0] = (prev[i0] + period - 1) % period;
        std::array<bool, period> used{};
        used.fill(false);
        for (const std::uint8_t a : {f0, f1, i1, i0}) {
            if (used[s[a]]) return {};
            used[s[a]] = true;
        }
        place_weights(s);
    }
    return out;
}

/// Per rank and action, the slot of microbatch 0 on the repeated timeline: each after its
/// input (strictly later), the first slot of its kind from there. Microbatch j runs j periods
/// later.
inline std::vector<std::array<std::uint64_t, period>> first_slots(const std::vector<rank_slots>& block) {
    const auto p = static_cast<std::uint32_t>(block.size());
    std::vector<std::array<std::uint64_t, period>> at(p);
    std::uint64_t next = 0;
    const auto place = [&](std::uint32_t r, std::uint8_t a) {
        const std::uint64_t base = next;
        const std::uint64_t t = base + (block[r][a] + period - base % period) % period;
        at[r][a] = t;
        next = t + 1;
    };
    for (std::uint32_t r = 0; r < p; ++r) place(r, f0);
    for (std::uint32_t r = p; r-- > 0;) place(r, f1);
    for (std::uint32_t r = 0; r < p; ++r) place(r, i1);
    for (std::uint32_t r = p; r-- > 0;) place(r, i0);
    for (std::uint32_t r = 0; r < p; ++r) {
        for (const auto [i, w] : {std::array<std::uint8_t, 2>{i1, w1}, std::array<std::uint8_t, 2>{i0, w0}}) {
            const std::uint64_t base = at[r][i] + 1;
            at[r][w] = base + (block[r][w] + period - base % period) % period;
        }
    }
    return at;
}

/// A unit-slot timeline: per rank, per slot, the action there (a slot_action) or `idle`. Every
/// action takes one slot: the building blocks are designed at equal costs, and the orders they
/// yield are replayed at the real costs afterwards.
using timeline = std::vector<std::vector<std::int8_t>>;
inline constexpr std::int8_t idle = -1;

/// The block repeated for m microbatches.
inline timeline repeated(const std::vector<rank_slots>& block, std::uint32_t m) {
    const auto at = first_slots(block);
    std::uint64_t length = 0;
    for (const auto& r : at) {
        for (const std::uint64_t t : r) length = std::max(length, t + std::uint64_t{period} * (m - 1) + 1);
    }
    timeline out(block.size(), std::vector<std::int8_t>(length, idle));
    for (std::size_t r = 0; r < block.size(); ++r) {
        for (std::uint8_t a = 0; a < period; ++a) {
            for (std::uint32_t j = 0; j < m; ++j) out[r][at[r][a] + std::uint64_t{period} * j] = static_cast<std::int8_t>(a);
        }
    }
    return out;
}

/// The peak activations of any rank of the block repeated for m microbatches (peak(repeated(
/// block, m)) without building the timeline): a rank holds the forwards started minus the W's
/// started, highest just after a forward.
inline std::int64_t repeated_peak(const std::vector<rank_slots>& block, std::uint32_t m) {
    const auto at = first_slots(block);
    std::int64_t out = 0;
    for (const auto& r : at) {
        const auto started = [&](std::uint8_t a, std::uint64_t t) -> std::int64_t {
            return t < r[a] ? 0 : std::min<std::int64_t>(static_cast<std::int64_t>((t - r[a]) / period) + 1, m);
        };
        for (const std::uint8_t f : {f0, f1}) {
            for (std::uint32_t j = 0; j < m; ++j) {
                const std::uint64_t t = r[f] + std::uint64_t{period} * j;
                out = std::max(out, started(f0, t) + started(f1, t) - started(w0, t) - started(w1, t));
            }
        }
    }
    return out;
}

/// Each rank's actions in slot order.
inline order order_of(const timeline& g) {
    order out(g.size());
    for (std::size_t r = 0; r < g.size(); ++r) {
        out[r].reserve(g[r].size());
        for (const std::int8_t a : g[r]) {
            if (a != idle) out[r].push_back(task_of(static_cast<std::uint8_t>(a)));
        }
    }
    return out;
}

/// Change of a rank's chunk activations when slot action `a` runs (0 for an idle slot): the
/// timing model's rule, activation_change(), at the building blocks' unit memory.
inline int held_change(std::int8_t a) noexcept {
    return a == idle ? 0 : activation_change(op_of(task_of(static_cast<std::uint8_t>(a)).k));
}

inline std::int8_t action_of(task t) noexcept {
    if (t.k == kind::f) return t.chunk == 0 ? f0 : f1;
    if (t.k == kind::i) return t.chunk == 0 ? i0 : i1;
    return t.chunk == 0 ? w0 : w1;
}

/// Per rank, the most activations held at once (F adds one, W releases one).
inline std::vector<std::int64_t> peaks(const timeline& g) {
    std::vector<std::int64_t> out(g.size(), 0);
    for (std::size_t r = 0; r < g.size(); ++r) {
        std::int64_t held = 0;
        for (const std::int8_t a : g[r]) {
            held += held_change(a);
            out[r] = std::max(out[r], held);
        }
    }
    return out;
}
inline std::int64_t peak(const timeline& g) {
    const std::vector<std::int64_t> each = peaks(g);
    return *std::max_element(each.begin(), each.end());
}

/// Unit-cost copies of the problem for the timelines: every action one slot, no p2p time.
struct unit_timing {
    problem pr;
    evaluator ev;
    clock ck;
    unit_timing(std::uint32_t p, std::uint32_t m)
        : pr{make_problem(shape{p, m, 1}, pipeline_costs{.uniform = {2.0, 2.0, 2.0}, .per_stage = {}, .p2p = 0.0}, pipeline_memory{},
                          placement::v_shape, 2)},
          ev{pr}, ck{pr} {}
    unit_timing(const unit_timing&) = delete;
    unit_timing& operator=(const unit_timing&) = delete;
};

/// Every action as early as its input and its rank allow, in the same order on each rank: the
/// order replayed on the search's clock at unit costs. The slots are run column by column (a
/// timeline built from a block has every input in an earlier column); when one is not ready
/// there, the order is replayed by the evaluation instead. False when it is not a schedule.
inline bool squeeze(timeline& g, unit_timing& unit) {
    const auto p = static_cast<std::uint32_t>(g.size());
    const std::size_t length = g.empty() ? 0 : g[0].size();
    // Run in column order, no action ends later than it stood: the rows keep their length.
    timeline rows(p, std::vector<std::int8_t>(length, idle));
    std::size_t longest = 0;
    clock& ck = unit.ck;
    ck.reset();
    bool swept = true;
    for (std::size_t j = 0; j < length && swept; ++j) {
        for (std::uint32_t r = 0; r < p; ++r) {
            const std::int8_t a = g[r][j];
            if (a == idle) continue;
            const task t = task_of(static_cast<std::uint8_t>(a));
            if (ck.try_run(unit.pr.stage(r, t.chunk), t.k) != clock::outcome::ran) {
                swept = false;
                break;
            }
            const auto slot = static_cast<std::size_t>(ck.free(r) - 0.5);
            rows[r][slot] = a;
            longest = std::max(longest, slot + 1);
        }
    }
    if (!swept) {
        const order o = order_of(g);
        if (!unit.ev.run(o).legal) return false;
        const auto& done = unit.ev.timing();
        for (std::uint32_t r = 0; r < p; ++r) {
            rows[r].clear();
            std::array<std::uint32_t, period> n{};
            n.fill(0);
            double free = 0.0;
            for (const task a : o[r]) {
                const std::int8_t act = action_of(a);
                const std::uint32_t s = unit.pr.stage(r, a.chunk);
                const std::uint32_t i = n[static_cast<std::size_t>(act)]++;
                free = a.k == kind::f ? done.forward_end(s, i) : a.k == kind::i ? done.backward_end(s, i) : free + 1.0;
                const auto slot = static_cast<std::size_t>(free - 0.5);
                if (rows[r].size() <= slot) rows[r].resize(slot + 1, idle);
                rows[r][slot] = act;
                longest = std::max(longest, slot + 1);
            }
        }
    } else {
        for (std::uint32_t s = 0; s < unit.pr.stages(); ++s) {
            for (const kind k : {kind::f, kind::i, kind::w}) {
                if (ck.count(s, k) != unit.pr.m) return false;
            }
        }
    }
    for (auto& row : rows) row.resize(longest, idle);
    g = std::move(rows);
    return true;
}

/// Writes `a` at slot j of row, which must exist.
inline bool put(std::vector<std::int8_t>& row, std::size_t j, std::int8_t a) {
    if (j >= row.size()) return false;
    row[j] = a;
    return true;
}

/// Rewrites every rank's warm-up (its actions before its first chunk-0 I) so that it fills the
/// activations the steady state holds at once instead of taking one forward per period: rank r
/// first runs chunk-0 forwards for the 2(p-1-r) slots before chunk 1's forwards can reach it,
/// then chunk-0 and chunk-1 forwards alternately, holding min(r + 1, peak / 2) of chunk 1 and
/// the rest of the peak in chunk 0, then chunk-1 I, W and a forward (chunk 1 first) in turn
/// until the warm-up's actions are used up. False when the rewrite does not fit the timeline.
inline bool fill_warmup(timeline& g, std::uint32_t m) {
    const auto p = static_cast<std::uint32_t>(g.size());
    const auto top = static_cast<std::uint32_t>(std::min<std::int64_t>(peak(g), 2 * std::int64_t{p}));
    for (std::uint32_t r = 0; r < p; ++r) {
        std::vector<std::int8_t>& row = g[r];
        const std::uint32_t hold_f1 = std::min({r + 1, top / 2, m});
        const std::uint32_t hold_f0 = std::min(top - hold_f1, m);
        std::array<std::uint32_t, period> have{};
        have.fill(0);
        for (std::int8_t& a : row) {
            if (a == i0) break;
            if (a != idle) ++have[static_cast<std::size_t>(a)];
            a = idle;
        }
        std::array<std::uint32_t, period> used{};
        used.fill(0);
        std::size_t j = r;
        const auto take = [&](std::int8_t a, bool wanted) {
            const bool ok = !wanted || put(row, j, a);
            if (wanted) ++used[static_cast<std::size_t>(a)];
            ++j;
            return ok;
        };
        const auto left = [&](std::int8_t a) { return used[static_cast<std::size_t>(a)] < have[static_cast<std::size_t>(a)]; };
        bool ok = true;
        for (std::uint32_t k = 0; k < 2 * (p - 1 - r); ++k) ok = ok && take(f0, used[f0] < hold_f0 && left(f0));
        for (std::uint32_t k = 0; k <= r; ++k) {
            ok = ok && take(f0, used[f0] < hold_f0 && left(f0));
            ok = ok && take(f1, used[f1] < hold_f1 && left(f1));
        }
        while (ok && (left(f0) || left(f1) || left(i1) || left(w1))) {
            ok = take(i1, left(i1)) && take(w1, left(w1));
            if (left(f1) && used[f1] >= used[f0]) return false; // a chunk-1 forward before its chunk-0 one
            ok = ok && (left(f1) ? take(f1, true) : take(f0, left(f0)));
        }
        if (!ok) return false;
    }
    return true;
}

/// Keeps the first m of every action on each rank: the warm-up is shaped with at least 2p
/// microbatches (what the steady state needs to appear), then the extra ones are dropped.
inline void keep_first(timeline& g, std::uint32_t m) {
    for (std::vector<std::int8_t>& row : g) {
        std::array<std::uint32_t, period> n{};
        n.fill(0);
        for (std::int8_t& a : row) {
            if (a != idle && ++n[static_cast<std::size_t>(a)] > m) a = idle;
        }
    }
}

/// With few microbatches a rank holds less than the others: its first W's move to its end,
/// until it holds `top`, so that its warm-up does not wait for memory it has.
inline void defer_early_weights(timeline& g, std::int64_t top) {
    const std::vector<std::int64_t> each = peaks(g);
    const std::int64_t lowest = *std::min_element(each.begin(), each.end());
    const auto extra = static_cast<std::size_t>(std::max<std::int64_t>(0, top - lowest));
    for (std::size_t r = 0; r < g.size(); ++r) {
        std::vector<std::int8_t>& row = g[r];
        std::vector<std::int8_t> moved(extra, idle);
        std::size_t n = 0;
        for (std::int8_t& a : row) {
            if (each[r] + static_cast<std::int64_t>(n) >= top) break;
            if (a == w0 || a == w1) {
                moved[n++] = a;
                a = idle;
            }
        }
        row.insert(row.end(), moved.begin(), moved.end());
    }
}

/// Rewrites the cool-down: after its last forward a rank's last I's run two slots apart in a
/// fixed stair (rank r's last (peak+1)/2 chunk-0 I's and min(r + 1, the rest) chunk-1 I's,
/// placed from rank 0's last chunk-1 forward), its W's fill the slots left after them, and the
/// whole is squeezed again. False when the stair does not fit the timeline.
inline bool stair_cooldown(timeline& g, std::uint32_t m, unit_timing& unit) {
    const auto p = static_cast<std::int64_t>(g.size());
    const std::int64_t top = peak(g);
    const std::int64_t max_i0 = std::min<std::int64_t>((top + 1) / 2, m);
    const std::int64_t max_i1 = std::min<std::int64_t>(top - max_i0, m);
    std::int64_t start = -1;
    for (std::int64_t r = 0; r < p; ++r) {
        std::vector<std::int8_t>& row = g[static_cast<std::size_t>(r)];
        const auto length = static_cast<std::int64_t>(row.size());
        std::int64_t n_i1 = 0, n_i0 = 0, n_w1 = 0, n_w0 = 0, last_f1 = -1;
        for (std::int64_t j = length; j-- > 0;) {
            std::int8_t& a = row[static_cast<std::size_t>(j)];
            if (a == f1 && last_f1 < 0) last_f1 = j;
            if (a == i1 && n_i1 < r + 1 && n_i1 < max_i1) a = idle, ++n_i1;
            if (a == i0 && n_i0 < max_i0) a = idle, ++n_i0;
        }
        for (std::int64_t j = length; j-- > 0;) {
            if (n_w1 >= n_i1 && n_w0 >= n_i0 && n_w1 + n_w0 >= top) break;
            std::int8_t& a = row[static_cast<std::size_t>(j)];
            if (a == w1) a = idle, ++n_w1;
            if (a == w0) a = idle, ++n_w0;
        }
        if (r == 0) start = last_f1;
        for (std::int64_t k = 0; k < n_i0; ++k) {
            const std::int64_t at = start - r + 2 * p - 2 * k;
            if (at < 0 || at >= length || row[static_cast<std::size_t>(at)] != idle) return false;
            row[static_cast<std::size_t>(at)] = i0;
        }
        for (std::int64_t k = 0; k < n_i1; ++k) {
            const std::int64_t at = start + 1 + r - 2 * k;
            if (at < 0 || at >= length) return false;
            row[static_cast<std::size_t>(at)] = i1;
        }
    }
    // The W's back, each into an idle slot after the rank's last remaining W, oldest chunk-1 first.
    std::size_t length = 0;
    for (std::vector<std::int8_t>& row : g) {
        std::int64_t last_w = -1;
        for (std::size_t j = 0; j < row.size(); ++j) {
            if (row[j] == w0 || row[j] == w1) last_w = static_cast<std::int64_t>(j);
        }
        std::int64_t due_w1 = 0, due_w0 = 0;
        for (std::size_t j = 0; j < row.size(); ++j) {
            const std::int8_t a = row[j];
            due_w1 += a == i1 ? 1 : a == w1 ? -1 : 0;
            due_w0 += a == i0 ? 1 : a == w0 ? -1 : 0;
            if (a == idle && static_cast<std::int64_t>(j) > last_w) {
                if (due_w1 > 0) row[j] = w1, --due_w1;
                else if (due_w0 > 0) row[j] = w0, --due_w0;
            }
        }
        row.insert(row.end(), static_cast<std::size_t>(std::max<std::int64_t>(due_w1, 0)), w1);
        row.insert(row.end(), static_cast<std::size_t>(std::max<std::int64_t>(due_w0, 0)), w0);
        length = std::max(length, row.size());
    }
    for (std::vector<std::int8_t>& row : g) row.resize(length, idle);
    return squeeze(g, unit);
}

/// Fills idle slots from the left: into each idle slot of a rank the first later action of a
/// kind (the first of each kind only) whose input is already there at that slot and which does
/// not raise the timeline's peak memory moves forward; nothing else moves.
inline void pull_forward(timeline& g, std::uint32_t m) {
    const auto p = static_cast<std::uint32_t>(g.size());
    if (p == 0) return;
    const std::int64_t top = peak(g);
    const std::size_t length = g[0].size();
    std::vector<std::array<std::int64_t, period>> last(p);
    for (std::uint32_t r = 0; r < p; ++r) {
        last[r].fill(-1);
        for (std::size_t j = 0; j < length; ++j) {
            if (g[r][j] != idle) last[r][static_cast<std::size_t>(g[r][j])] = static_cast<std::int64_t>(j);
        }
    }
    // Slot of microbatch c of action a on rank r, once reached (-1 before).
    std::vector<std::int64_t> slot_of(std::size_t{m} * p * period, -1);
    const auto index = [&](std::uint32_t c, std::uint32_t r, std::int8_t a) {
        return (std::size_t{c} * p + r) * period + static_cast<std::size_t>(a);
    };
    std::vector<std::array<std::uint32_t, period>> count(p);
    for (auto& c : count) c.fill(0);
    std::vector<std::int64_t> held(p, 0);
    const auto record = [&](std::uint32_t r, std::int8_t a, std::size_t j) {
        std::uint32_t& c = count[r][static_cast<std::size_t>(a)];
        if (c < m) slot_of[index(c, r, a)] = static_cast<std::int64_t>(j);
        ++c;
        held[r] += held_change(a);
    };
    for (std::size_t j = 0; j < length; ++j) {
        for (std::uint32_t r = 0; r < p; ++r) {
            std::vector<std::int8_t>& row = g[r];
            if (row[j] != idle) {
                record(r, row[j], j);
                continue;
            }
            unsigned available = 0;
            for (std::uint8_t a = 0; a < period; ++a) {
                if (last[r][a] > static_cast<std::int64_t>(j)) available |= 1U << a;
            }
            std::int64_t change = 0, highest = 0;
            for (std::size_t k = j + 1; k < length && available != 0; ++k) {
                const std::int8_t a = row[k];
                change += held_change(a);
                const std::int64_t before = highest;
                highest = std::max(highest, change);
                if (a == idle || (available & (1U << a)) == 0) continue;
                available &= ~(1U << a);
                if (held_change(a) > 0 && held[r] + before >= top) continue; // would raise the peak
                const std::uint32_t c = count[r][static_cast<std::size_t>(a)];
                if (c >= m) continue;
                // Its input: the neighbour's same action of the same microbatch in an earlier
                // slot, or, at the turns of the V and for W, its predecessor on this rank.
                bool ready = true;
                const auto earlier = [&](std::uint32_t q) {
                    const std::int64_t t = slot_of[index(c, q, a)];
                    return t >= 0 && t < static_cast<std::int64_t>(j);
                };
                if (a == f0 || a == i1) {
                    if (r > 0) ready = earlier(r - 1);
                    else if (a == i1) ready = count[r][f1] > c;
                } else if (a == f1 || a == i0) {
                    if (r + 1 < p) ready = earlier(r + 1);
                    else ready = count[r][a == f1 ? f0 : i1] > c;
                } else {
                    ready = count[r][a == w1 ? i1 : i0] > c;
                }
                if (!ready) continue;
                row[j] = a;
                row[k] = idle;
                record(r, a, j);
                break;
            }
        }
    }
}

/// Every W runs the oldest pending weight gradient of either chunk.
inline void oldest_weights_first(order& o) {
    std::vector<std::uint8_t> pending;
    for (std::vector<task>& seq : o) {
        pending.clear();
        std::size_t head = 0;
        for (task& a : seq) {
            if (a.k == kind::i) pending.push_back(a.chunk);
            else if (a.k == kind::w && head < pending.size()) a.chunk = pending[head++];
        }
    }
}

} // namespace v_blocks

/// The timeline a building block yields with m microbatches and at most `cap` chunk
/// activations per rank: the block repeated (for at least 2p microbatches, so that the steady
/// state appears), its warm-up filled and squeezed, the extra microbatches dropped (a rank that
/// then holds less defers its first W's), its cool-down rewritten as a stair, and idle slots
/// filled from later actions. False when a step does not apply.
inline bool building_block_timeline(const std::vector<v_blocks::rank_slots>& block, std::uint32_t m, std::int64_t cap,
                                    v_blocks::unit_timing& steady, v_blocks::unit_timing& exact, v_blocks::timeline& g) {
    using namespace v_blocks;
    const auto p = static_cast<std::uint32_t>(block.size());
    const std::uint32_t steady_m = steady.pr.m;
    const std::int64_t first_peak = repeated_peak(block, steady_m);
    if ((m == steady_m && first_peak > cap) || first_peak > 2 * std::int64_t{p}) return false;
    g = repeated(block, steady_m);
    if (!fill_warmup(g, steady_m) || !squeeze(g, steady)) return false;
    const std::int64_t warm_peak = peak(g);
    if (warm_peak > first_peak) return false;
    if (m < steady_m) {
        keep_first(g, m);
        if (m <= p && 2 * std::int64_t{m} <= cap) defer_early_weights(g, std::min<std::int64_t>(2 * std::int64_t{p}, warm_peak));
        if (!squeeze(g, exact) || peak(g) > cap) return false;
    }
    if (!stair_cooldown(g, m, exact)) return false;
    pull_forward(g, m);
    return true;
}

/// The order of a timeline, W's relabelled to run the oldest pending weight gradient.
inline order building_block_order(const v_blocks::timeline& g) {
    order o = v_blocks::order_of(g);
    v_blocks::oldest_weights_first(o);
    return o;
}

/// Every distinct block of p ranks, enumerated as Qi et al. describe (rank 0's slots, two
/// offsets and the rank where the second takes over); blocks whose ranks interleave their
/// actions alike give one order and are kept once, in enumeration order.
inline std::vector<std::vector<v_blocks::rank_slots>> distinct_blocks(std::uint32_t p) {
    using namespace v_blocks;
    std::vector<std::vector<rank_slots>> blocks;
    std::vector<std::pair<std::vector<std::uint64_t>, std::size_t>> keys;
    for (std::uint32_t a = 1; a < period; ++a) {
        for (std::uint32_t b = 1; b < period; ++b) {
            for (std::uint32_t c = 1; c < period; ++c) {
                if (a == b || a == c || b == c) continue;
                rank_slots first{0, a, b, c, 0, 0};
                place_weights(first);
                for (std::uint32_t k0 = 1; k0 < period; ++k0) {
                    for (std::uint32_t k1 = 1; k1 <= k0; ++k1) {
                        for (std::uint32_t sw = 1; sw < p; ++sw) {
                            if (k1 == k0 && sw > 1) break; // the same block for every switch rank
                            std::vector<rank_slots> block = make_block(first, p, k0, k1, sw);
                            if (block.empty()) continue;
                            const auto at = first_slots(block);
                            std::vector<std::uint64_t> key;
                            key.reserve(period * std::size_t{p});
                            for (const auto& r : at) {
                                for (const std::uint64_t t : r) key.push_back(t - r[f0]);
                            }
                            keys.emplace_back(std::move(key), blocks.size());
                            blocks.push_back(std::move(block));
                        }
                    }
                }
            }
        }
    }
    std::stable_sort(keys.begin(), keys.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<std::size_t> keep;
    for (std::size_t k = 0; k < keys.size(); ++k) {
        if (k == 0 || keys[k].first != keys[k - 1].first) keep.push_back(keys[k].second);
    }
    std::sort(keep.begin(), keep.end());
    std::vector<std::vector<rank_slots>> out;
    out.reserve(keep.size());
    for (const std::size_t k : keep) out.push_back(std::move(blocks[k]));
    return out;
}

/// Building blocks replayed at the real costs, at most this many timeline actions in all.
inline constexpr std::uint64_t building_block_work = 2'000'000;
/// With more than 2p microbatches the blocks are first ranked at 2p by their unit-slot span,
/// and only this many of the best are built with every microbatch.
inline constexpr std::size_t building_block_finalists = 4;
/// ...among the blocks whose steady state holds within this many activations of the most that fit.
inline constexpr std::int64_t building_block_levels = 2;

/// Offers consider(order) the orders of the distinct building blocks whose repeated steady
/// state fits the problem's limit in chunk activations (v_blocks: enumerated as Qi et al.
/// describe: rank 0's slots, two offsets and the rank where the second takes over).
template <class Consider>
void v_building_block_orders(const problem& pr, Consider&& consider) {
    using namespace v_blocks;
    if (pr.layout != placement::v_shape || pr.v != 2 || pr.p < 2) return;
    // The limit in chunk activations: the fewest of any rank, counted with its larger chunk.
    std::int64_t cap = 2 * std::int64_t{pr.p};
    for (std::uint32_t r = 0; r < pr.p; ++r) {
        const double chunk = std::max(pr.costs[pr.stage(r, 0)].activation_memory, pr.costs[pr.stage(r, 1)].activation_memory);
        if (chunk <= 0.0) continue;
        // Compared as a double first: an unbounded limit (infinity) fits every block.
        if (const double fit = std::floor(pr.limit(r) / chunk + 1e-9); fit < static_cast<double>(cap))
            cap = static_cast<std::int64_t>(fit);
    }
    if (cap < 2) return;
    const std::vector<std::vector<rank_slots>> blocks = distinct_blocks(pr.p);
    const std::uint32_t steady_m = std::max(pr.m, 2 * pr.p);
    const std::uint32_t trial_m = std::min(pr.m, 2 * pr.p);
    // Each block costs about four replays of 6p x (its microbatches) unit actions.
    const auto cost = [&](std::uint32_t m) { return 4 * 6 * std::uint64_t{pr.p} * std::max(m, 2 * pr.p); };
    std::uint64_t used = 0;
    timeline g;
    if (trial_m == pr.m) {
        unit_timing steady{pr.p, steady_m};
        unit_timing exact{pr.p, pr.m};
        for (const auto& block : blocks) {
            if ((used += cost(pr.m)) > building_block_work) return;
            if (building_block_timeline(block, pr.m, cap, steady, exact, g)) consider(building_block_order(g));
        }
        return;
    }
    // More than 2p microbatches: only the blocks that hold the most memory the limit allows
    // (their steady state's peak among the building_block_levels highest that fit: the fewer
    // activations a block holds, the longer its bubble), ranked by their span at the real costs
    // with 2p microbatches; the best are built with all of them.
    std::vector<std::int64_t> held(blocks.size());
    std::int64_t top = 0;
    const std::uint32_t lag = std::min(steady_m, 4 * pr.p + 2); // microbatch 0's W is within 4p + 2 periods
    for (std::size_t k = 0; k < blocks.size(); ++k) {
        held[k] = repeated_peak(blocks[k], lag);
        if (held[k] <= cap) top = std::max(top, held[k]);
    }
    problem trial_pr = pr;
    trial_pr.m = trial_m;
    evaluator trial_ev{trial_pr};
    std::vector<std::pair<evaluation, std::size_t>> ranked;
    {
        unit_timing trial{pr.p, trial_m};
        for (std::size_t k = 0; k < blocks.size(); ++k) {
            if (held[k] > top || held[k] + building_block_levels <= top) continue;
            if ((used += cost(trial_m)) > building_block_work / 2) break;
            if (!building_block_timeline(blocks[k], trial_m, cap, trial, trial, g)) continue;
            const evaluation e = trial_ev.run(building_block_order(g));
            if (e.legal && e.fits) ranked.emplace_back(e, k);
        }
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first.better_than(y.first); });
    unit_timing steady{pr.p, steady_m};
    for (std::size_t k = 0; k < ranked.size() && k < building_block_finalists; ++k) {
        if ((used += cost(pr.m)) > building_block_work) return;
        if (building_block_timeline(blocks[ranked[k].second], pr.m, cap, steady, steady, g)) consider(building_block_order(g));
    }
}

} // namespace pipesched::detail::autosched
