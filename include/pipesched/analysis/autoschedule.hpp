// pipesched: search a zero-bubble schedule for given per-stage costs under a memory limit.
//
// Problem (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 3): p stages, one
// per rank, m microbatches; each stage s runs F, I (input gradient) and W (weight gradient) of
// every microbatch, taking T_F(s), T_I(s), T_W(s). Every rank runs its order serially, each
// action as early as its dependencies allow: F(s, i) after F(s-1, i) + p2p, I(s, i) after
// I(s+1, i) + p2p (the last stage's I after its own F), W(s, i) after I(s, i). Memory per
// stage: F adds M_B, I releases M_B - M_W, W releases M_W (analysis/simulate.hpp's model);
// its peak must stay within the stage's limit. A rank's span runs from its first action's start
// to its last action's end; span is the largest; bubble = (span - m(T_F + T_I + T_W)) / span
// with the busiest stage's T's. The search minimises span, then makespan.
//
// Method, in this order; the answer is the best candidate (span, then makespan, then the
// candidate's rank in this list, so the result is deterministic):
//  1. The published heuristic's ideas, implemented here from the paper's description and the
//     authors' `zb.py` (sail-sg/zero-bubble-pipeline-parallelism): microbatch by microbatch, F
//     on every stage top-down then I bottom-up; the first round's warm-up forwards on each stage
//     as many as fit in memory and in the time until the first I returns (strictly fewer than
//     the stage before); W placed only to free memory for the next F or I, or into the gap
//     while the rank waits for an input, or, when that gap is within the largest bubble seen
//     so far, optionally not at all; 2 x 2 x 2 variants (warm-up may or may not cross the
//     first I's return; a stage may or may not skip its F to let the next stage catch up; a
//     gap within the bubble budget is or is not filled). These eight are the authors' search.
//  2. The same eight under tighter memory caps of k whole activations, k in 1 .. 2p+1 (at most
//     8 values): a smaller warm-up can shorten the span; the greedy is not monotone in the
//     limit.
//  3. List scheduling in time order (an I or F when its input is there and memory allows, W's
//     into gaps or when memory needs them; six variants). Far below p activations the greedy
//     loses the pipeline's rhythm (p = 32, m = 256, limit 20: span 390k against 61k here).
//  4. The handcrafted ZB-H1 and ZB-H2 orders and 1F1B with split backward when they fit, and
//     1F1B with its warm-up capped by memory (W at once, deferred by s, or at the end).
//  5. Per-stage templates (each stage its own warm-up count, number of deferred W's and W
//     position; the paper's ILP varies exactly such per-stage orders) tuned by coordinate
//     descent over one stage, a prefix or a suffix of stages at a time, within a budget that
//     counts evaluations. Beats the heuristic where later stages should hold W's back to hand
//     their I's upstream sooner (the paper's 6.2B model at 2p with the authors' memory model).
//  6. Local search from the best of those: swap adjacent actions of a stage when the order
//     stays legal and within memory, keep a swap that lowers (span, makespan, sum of the
//     stages' ends); a fixed budget of evaluations, so it terminates and is deterministic.
//  7. Branch and bound over every order (each of F, I, W in microbatch order on each stage)
//     on small shapes (3pm <= exact_actions), seeded with the best so far; when it completes
//     the result is optimal and says so (proven_optimal).
// Then a lower bound (lower_bound below) also marks the result optimal when the span meets it:
// on all the paper's settings at limit p it does, so nothing shorter than the heuristic exists
// there.
// Within one op type, microbatches keep their order on a stage, as in the heuristic; the tests
// enumerate unrestricted orders on tiny shapes to show that nothing is lost there.
//
// A stage can always run F I W of one microbatch after another, which needs max(M_B, M_W); a
// limit below that on some stage has no schedule, and the result says so with that number.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../event.hpp"
#include "../policies/explicit_schedule.hpp"
#include "../policies/one_f_one_b.hpp"
#include "../policies/zb_h1.hpp"
#include "../policies/zb_h2.hpp"
#include "../shape.hpp"
#include "replay.hpp"
#include "simulate.hpp"

namespace pipesched {

/// Durations of one microbatch through one stage.
struct stage_times {
    double forward = 1.0;         ///< T_F
    double backward_input = 1.0;  ///< T_I
    double backward_weight = 1.0; ///< T_W
};

struct pipeline_costs {
    stage_times uniform{};                ///< every stage...
    std::vector<stage_times> per_stage{}; ///< ...unless given here (index = stage = rank)
    double p2p = 0.0;                     ///< added to every dependency between two stages
};

/// Memory of one stage, in any unit (bytes, GiB, or activations of one microbatch).
struct stage_memory {
    double activation = 1.0; ///< M_B: allocated by F
    double weight = 1.0;     ///< M_W: what W still needs after I (I releases M_B - M_W)
    double limit = std::numeric_limits<double>::infinity();
};

struct pipeline_memory {
    stage_memory uniform{};
    std::vector<stage_memory> per_stage{};
};

struct autoschedule_options {
    /// Local search: at most this many schedule evaluations.
    std::uint32_t local_search_evaluations = 4000;
    /// ...and at most this many replayed actions in all (about 3-5 ns each).
    std::uint64_t local_search_work = 6'000'000;
    /// Per-stage template search: at most this many schedule evaluations...
    std::uint32_t template_evaluations = 2000;
    /// ...and at most this many generated plus replayed actions in all.
    std::uint64_t template_work = 4'000'000;
    /// Branch and bound when 3pm is at most this; 0 turns it off.
    std::uint32_t exact_actions = 48;
    /// Branch and bound gives up (and does not claim optimality) after this many nodes.
    std::uint64_t exact_nodes = 2'000'000;
};

struct autoschedule_result {
    bool fits = false;
    /// Why nothing fits (empty when fits), naming the stage and the smallest limit that fits.
    std::string message{};
    /// Per stage, the smallest limit under which some schedule exists: max(M_B, M_W).
    std::vector<double> smallest_limit{};
    explicit_schedule<placement::loop> schedule{};
    double span = 0.0;
    double makespan = 0.0;
    double bubble_fraction = 0.0;
    std::vector<double> peak_memory{}; ///< per rank
    double heuristic_span = 0.0;       ///< best of the published heuristic's eight variants
    /// No schedule within the limits has a shorter span (see detail::autosched::lower_bound).
    double lower_bound = 0.0;
    bool proven_optimal = false;       ///< branch and bound finished, or span == lower_bound
    std::string_view method{};         ///< which step found the answer

    explicit operator bool() const noexcept { return fits; }
};

namespace detail::autosched {

enum class kind : std::uint8_t { f, i, w };

/// Per stage, the op letters in order; within a letter, microbatches run in order.
using order = std::vector<std::vector<kind>>;

struct problem {
    std::uint32_t p = 1;
    std::uint32_t m = 1;
    std::vector<stage_times> t{};
    std::vector<stage_memory> mem{};
    double comm = 0.0;

    [[nodiscard]] double cost(std::uint32_t s, kind k) const noexcept {
        return k == kind::f ? t[s].forward : k == kind::i ? t[s].backward_input : t[s].backward_weight;
    }
    [[nodiscard]] double memory_change(std::uint32_t s, kind k) const noexcept {
        return k == kind::f ? mem[s].activation
               : k == kind::i ? mem[s].weight - mem[s].activation
                              : -mem[s].weight;
    }
    [[nodiscard]] double work(std::uint32_t s) const noexcept {
        return static_cast<double>(m) * (t[s].forward + t[s].backward_input + t[s].backward_weight);
    }
};

/// The shortest text that reads back as x ("0.5", "4", "1e+30").
inline std::string number_text(double x) {
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, x);
    return std::string{buffer, r.ptr};
}

/// Tolerance for comparing sums of user-given doubles against a limit.
[[nodiscard]] inline bool within(double value, double limit) noexcept {
    return value <= limit + 1e-9 * std::max(1.0, std::fabs(limit));
}

struct evaluation {
    bool legal = false;  ///< every action ran (no deadlock, no I before its F)
    bool fits = false;   ///< and every stage's peak is within its limit
    double span = 0.0;
    double makespan = 0.0;
    double end_sum = 0.0;
    std::vector<double> peak{};

    /// Lexicographic (span, makespan, sum of ends) with a relative tolerance.
    [[nodiscard]] bool better_than(const evaluation& o) const noexcept {
        const auto less = [](double a, double b) { return a < b - 1e-9 * std::max(1.0, std::fabs(b)); };
        if (less(span, o.span)) return true;
        if (less(o.span, span)) return false;
        if (less(makespan, o.makespan)) return true;
        if (less(o.makespan, makespan)) return false;
        return less(end_sum, o.end_sum);
    }
};

/// The replay of the cost definitions on an order, as a model of the one replay engine
/// (replay.hpp): a stage runs its order until an input is missing and is woken by the stage
/// that produces it. Buffers are kept between calls: the search evaluates thousands of orders.
class evaluator {
public:
    explicit evaluator(const problem& pr)
        : pr_{pr}, fend_(std::size_t{pr.p} * pr.m), iend_(std::size_t{pr.p} * pr.m),
          pos_(pr.p), nf_(pr.p), ni_(pr.p), nw_(pr.p), free_(pr.p), first_(pr.p), memory_(pr.p) {}

    evaluation run(const order& o) {
        evaluation out{};
        const std::uint32_t p = pr_.p;
        const std::uint32_t m = pr_.m;
        std::fill(fend_.begin(), fend_.end(), unset);
        std::fill(iend_.begin(), iend_.end(), unset);
        std::fill(pos_.begin(), pos_.end(), 0U);
        std::fill(nf_.begin(), nf_.end(), 0U);
        std::fill(ni_.begin(), ni_.end(), 0U);
        std::fill(nw_.begin(), nw_.end(), 0U);
        std::fill(free_.begin(), free_.end(), 0.0);
        std::fill(first_.begin(), first_.end(), unset);
        std::fill(memory_.begin(), memory_.end(), 0.0);
        out.peak.assign(p, 0.0);
        order_ = &o;
        out_ = &out;
        replay_engine<evaluator> engine{*this};
        if (!engine.run()) return out; // an impossible order (broken) or a deadlock
        for (std::uint32_t s = 0; s < p; ++s) {
            if (nw_[s] != m || ni_[s] != m || nf_[s] != m) return out;
        }
        out.legal = true;
        out.fits = true;
        for (std::uint32_t s = 0; s < p; ++s) {
            out.span = std::max(out.span, free_[s] - first_[s]);
            out.makespan = std::max(out.makespan, free_[s]);
            out.end_sum += free_[s];
            if (!within(out.peak[s], pr_.mem[s].limit)) out.fits = false;
        }
        return out;
    }

    /// Start times of the last run, per stage in order (for the timeline of the result).
    [[nodiscard]] double forward_end(std::uint32_t s, std::uint32_t i) const { return fend_[idx(s, i)]; }

    // The replay engine's model.
    [[nodiscard]] std::uint32_t ranks() const noexcept { return pr_.p; }
    [[nodiscard]] bool done(std::uint32_t s) const noexcept { return pos_[s] == (*order_)[s].size(); }

    /// Runs the next action of stage s: failed for an order that cannot be a schedule (an I
    /// before its F, a W before its I, more than m of a kind), blocked if its input is missing.
    template <class Engine>
    step_result step(std::uint32_t s, Engine& engine) {
        const std::vector<kind>& seq = (*order_)[s];
        const kind k = seq[pos_[s]];
        double ready = 0.0;
        if (k == kind::f) {
            const std::uint32_t i = nf_[s];
            if (i >= pr_.m) return step_result::failed;
            if (s > 0) {
                const double t = fend_[idx(s - 1, i)];
                if (t == unset) return step_result::blocked;
                ready = t + pr_.comm;
            }
        } else if (k == kind::i) {
            const std::uint32_t i = ni_[s];
            if (i >= nf_[s]) return step_result::failed;
            if (s + 1 == pr_.p) {
                ready = fend_[idx(s, i)];
            } else {
                const double t = iend_[idx(s + 1, i)];
                if (t == unset) return step_result::blocked;
                ready = t + pr_.comm;
            }
        } else if (nw_[s] >= ni_[s]) {
            return step_result::failed;
        }
        const double start = std::max(ready, free_[s]);
        const double end = start + pr_.cost(s, k);
        if (first_[s] == unset) first_[s] = start;
        free_[s] = end;
        memory_[s] += pr_.memory_change(s, k);
        out_->peak[s] = std::max(out_->peak[s], memory_[s]);
        if (k == kind::f) {
            fend_[idx(s, nf_[s]++)] = end;
            if (s + 1 < pr_.p) engine.wake(s + 1);
        } else if (k == kind::i) {
            iend_[idx(s, ni_[s]++)] = end;
            if (s > 0) engine.wake(s - 1);
        } else {
            ++nw_[s];
        }
        ++pos_[s];
        return pos_[s] == seq.size() ? step_result::finished : step_result::ran;
    }

private:
    static constexpr double unset = -1.0;
    [[nodiscard]] std::size_t idx(std::uint32_t s, std::uint32_t i) const noexcept {
        return std::size_t{s} * pr_.m + i;
    }

    const problem& pr_;
    std::vector<double> fend_, iend_;
    std::vector<std::uint32_t> pos_, nf_, ni_, nw_;
    std::vector<double> free_, first_, memory_;
    const order* order_ = nullptr;
    evaluation* out_ = nullptr;
};

/// The published greedy (see the header comment), one variant, under a memory cap per stage.
/// Returns an empty order when the variant cannot keep memory within the cap.
inline order greedy(const problem& pr, const std::vector<double>& cap, bool warmup_may_wait,
                    bool let_next_catch_up, bool fill_small_gaps) {
    const std::uint32_t p = pr.p;
    const std::uint32_t m = pr.m;
    order out(p);
    for (auto& seq : out) seq.reserve(3 * std::size_t{m});
    std::vector<std::uint32_t> nf(p, 0), ni(p, 0), nw(p, 0);
    std::vector<double> free(p, 0.0), memory(p, 0.0), bubble(p, 0.0);
    std::vector<double> fend(std::size_t{p} * m, 0.0), iend(std::size_t{p} * m, 0.0);
    const auto at = [m](std::uint32_t s, std::uint32_t i) { return std::size_t{s} * m + i; };
    double max_bubble = 0.0;
    const auto put = [&](std::uint32_t s, kind k) {
        const double cost = pr.cost(s, k);
        const double unblocked = free[s] + cost;
        double end = unblocked;
        if (k == kind::f && s > 0) end = std::max(end, fend[at(s - 1, nf[s])] + pr.comm + cost);
        if (k == kind::i && s + 1 < p) end = std::max(end, iend[at(s + 1, ni[s])] + pr.comm + cost);
        if (nf[s] > 0) {
            bubble[s] += end - unblocked;
            max_bubble = std::max(max_bubble, bubble[s]);
        }
        free[s] = end;
        memory[s] += pr.memory_change(s, k);
        if (k == kind::f) fend[at(s, nf[s]++)] = end;
        else if (k == kind::i) iend[at(s, ni[s]++)] = end;
        else ++nw[s];
        out[s].push_back(k);
    };
    // W's before an action on stage s whose input arrives at `arrival`: while one fits into the
    // wait, and one more if the wait would be a bubble larger than the budget (or always with
    // fill_small_gaps).
    const auto fill_gap = [&](std::uint32_t s, double arrival) {
        while (nw[s] < ni[s] && free[s] + pr.cost(s, kind::w) <= arrival) put(s, kind::w);
        if (nw[s] < ni[s] && free[s] < arrival) {
            if (arrival - free[s] > max_bubble - bubble[s] || fill_small_gaps) put(s, kind::w);
        }
    };
    // W's until `change` more memory fits; false if no W is left to run.
    const auto make_room = [&](std::uint32_t s, double change) {
        while (!within(memory[s] + change, cap[s])) {
            if (nw[s] >= ni[s]) return false;
            put(s, kind::w);
        }
        return true;
    };

    for (std::uint32_t i = 0; i < m; ++i) {
        if (i == 0) {
            for (std::uint32_t s = 0; s < p; ++s) {
                if (!make_room(s, pr.memory_change(s, kind::f))) return {};
                put(s, kind::f);
            }
            // Warm-up forwards, bottom-up: as many as memory allows before the first I comes back.
            std::vector<std::uint32_t> extra(p, 0);
            double returns = fend[at(p - 1, 0)] + pr.cost(p - 1, kind::i);
            for (std::uint32_t s = p - 1; s-- > 0;) {
                double mem = memory[s];
                double busy_until = free[s];
                while (nf[s] + extra[s] < m && within(mem + pr.memory_change(s, kind::f), cap[s])) {
                    if (warmup_may_wait ? busy_until + pr.cost(s, kind::f) > returns + pr.comm
                                        : busy_until >= returns + pr.comm) {
                        break;
                    }
                    mem += pr.memory_change(s, kind::f);
                    busy_until += pr.cost(s, kind::f);
                    ++extra[s];
                }
                returns = std::max(busy_until, returns + pr.comm) + pr.cost(s, kind::i);
            }
            for (std::uint32_t s = 1; s < p; ++s) {
                while (extra[s] > 0 && extra[s] >= extra[s - 1] && nf[s] + extra[s] < m) --extra[s];
            }
            for (std::uint32_t s = 0; s < p; ++s) {
                for (std::uint32_t k = 0; k < extra[s]; ++k) put(s, kind::f);
            }
            for (std::uint32_t s = p; s-- > 0;) {
                if (!make_room(s, pr.memory_change(s, kind::i))) return {};
                put(s, kind::i);
            }
            continue;
        }
        std::vector<std::uint8_t> wants_f(p, 0);
        for (std::uint32_t s = 0; s < p; ++s) {
            if (nf[s] >= m) continue;
            wants_f[s] = 1;
            if (!let_next_catch_up || s + 1 >= p || nf[s] < nf[s + 1] + 2) continue;
            // This stage is two forwards ahead of the next: run F only if it does not make the
            // next stage's F I round trip wait.
            const double next_round = free[s + 1] + pr.cost(s + 1, kind::f) + pr.cost(s + 1, kind::i) + pr.comm;
            if (free[s] >= next_round) {
                wants_f[s] = 0;
                continue;
            }
            double w_cost = 0.0;
            double mem = memory[s] + pr.memory_change(s, kind::f);
            for (std::uint32_t w = nw[s]; !within(mem, cap[s]) && w < ni[s]; ++w) {
                w_cost += pr.cost(s, kind::w);
                mem += pr.memory_change(s, kind::w);
            }
            if (free[s] + pr.cost(s, kind::f) + w_cost <= next_round) continue;
            if (next_round - free[s] <= max_bubble - bubble[s]) wants_f[s] = 0;
        }
        for (std::uint32_t s = p - 1; s-- > 0;) wants_f[s] = std::min(wants_f[s], wants_f[s + 1]);
        for (std::uint32_t s = 0; s < p; ++s) {
            if (wants_f[s] == 0) continue;
            if (!make_room(s, pr.memory_change(s, kind::f))) return {};
            if (s > 0) fill_gap(s, fend[at(s - 1, nf[s])] + pr.comm);
            put(s, kind::f);
        }
        for (std::uint32_t s = p; s-- > 0;) {
            if (!make_room(s, pr.memory_change(s, kind::i))) return {};
            if (s + 1 < p) fill_gap(s, iend[at(s + 1, i)] + pr.comm);
            if (s == 0 && nf[s] == m) {
                while (nw[s] < ni[s]) put(s, kind::w);
            }
            put(s, kind::i);
        }
    }
    for (std::uint32_t s = 0; s < p; ++s) {
        while (nw[s] < m) put(s, kind::w);
    }
    return out;
}

/// One stage's order as a builder writes it: the letters so far, how many of each, and the
/// memory they hold (F adds M_B, I releases M_B - M_W, W releases M_W).
struct stage_order_builder {
    stage_order_builder(const problem& problem_, std::uint32_t stage_, double cap_, std::vector<kind>& seq_)
        : pr{problem_}, s{stage_}, cap{cap_}, seq{seq_} {
        seq.reserve(3 * std::size_t{pr.m});
    }
    void run(kind k) {
        memory += pr.memory_change(s, k);
        seq.push_back(k);
        nf += k == kind::f;
        ni += k == kind::i;
        nw += k == kind::w;
    }
    /// Whether `k` can run next within the stage's memory limit.
    [[nodiscard]] bool fits(kind k) const noexcept { return within(memory + pr.memory_change(s, k), cap); }

    const problem& pr;
    std::uint32_t s;
    double cap;
    std::vector<kind>& seq;
    std::uint32_t nf = 0, ni = 0, nw = 0;
    double memory = 0.0;
};

/// 1F1B under a memory cap: stage s keeps at most w_s + 1 forwards ahead of its I's, with
/// w_s = min(p-1-s, cap_s / M_B - 1), and runs a W as soon as more than `deferred(s)` are
/// pending or memory needs one. Below p activations the published greedy loses its rhythm;
/// this one only slows the pipeline to what the cap allows.
template <class Deferred>
order capped_one_f_one_b(const problem& pr, const std::vector<double>& cap, Deferred deferred) {
    order out(pr.p);
    for (std::uint32_t s = 0; s < pr.p; ++s) {
        const double per_f = pr.mem[s].activation;
        const double fits = per_f > 0.0 ? std::floor(cap[s] / per_f + 1e-9) : static_cast<double>(pr.m);
        const auto in_flight = static_cast<std::uint32_t>(std::clamp(fits, 1.0, static_cast<double>(pr.p - s)));
        const std::uint32_t pending_w = deferred(s);
        stage_order_builder o{pr, s, cap[s], out[s]};
        std::uint32_t &nf = o.nf, &ni = o.ni, &nw = o.nw;
        const auto run = [&o](kind k) { o.run(k); };
        while (nw < pr.m) {
            if (nf < pr.m && nf - ni < in_flight) {
                while (!o.fits(kind::f) && nw < ni) run(kind::w);
                if (o.fits(kind::f)) {
                    run(kind::f);
                    continue;
                }
            }
            if (ni < nf) {
                while (!o.fits(kind::i) && nw < ni) run(kind::w);
                if (!o.fits(kind::i)) return {};
                run(kind::i);
                while (ni - nw > pending_w) run(kind::w);
                continue;
            }
            if (nw < ni) {
                run(kind::w);
                continue;
            }
            return {}; // cannot happen with cap >= max(M_B, M_W); refuse rather than loop
        }
    }
    return out;
}

/// List scheduling in time order: whenever a rank is free it runs what is ready, an I before an
/// F (or the reverse with forward_first), an F only when it fits in memory (W's first if they
/// make room), and a W when memory needs one, when the wait for the next input is at least
/// T_W long (fill = gaps) or whenever one is pending and nothing else is ready (fill = eager).
/// Ranks are committed in order of their next start, so every input that can arrive before a
/// decision is known when it is made. Adapts to any memory limit, including far below p.
enum class w_fill : std::uint8_t { lazy, gaps, eager };

inline order list_schedule(const problem& pr, const std::vector<double>& cap, bool forward_first, w_fill fill) {
    const std::uint32_t p = pr.p;
    const std::uint32_t m = pr.m;
    constexpr double never = std::numeric_limits<double>::infinity();
    order out(p);
    std::vector<std::uint32_t> nf(p, 0), ni(p, 0), nw(p, 0);
    std::vector<double> free(p, 0.0), memory(p, 0.0);
    std::vector<double> fend(std::size_t{p} * m, never), iend(std::size_t{p} * m, never);
    const auto at = [m](std::uint32_t s, std::uint32_t i) { return std::size_t{s} * m + i; };
    struct proposal {
        double start = never;
        kind what = kind::f;
    };
    const auto propose = [&](std::uint32_t s) {
        proposal best{};
        if (nw[s] == m) return best;
        double f_ready = never;
        if (nf[s] < m && within(memory[s] + pr.memory_change(s, kind::f), cap[s])) {
            f_ready = s == 0 ? 0.0 : fend[at(s - 1, nf[s])] + pr.comm;
        }
        double i_ready = never;
        if (ni[s] < nf[s]) {
            i_ready = s + 1 == p ? fend[at(s, ni[s])] : iend[at(s + 1, ni[s])] + pr.comm;
            if (!within(memory[s] + pr.memory_change(s, kind::i), cap[s])) i_ready = never;
        }
        const double f_start = std::max(free[s], f_ready);
        const double i_start = std::max(free[s], i_ready);
        if (i_start < f_start || (i_start == f_start && !forward_first && i_ready != never)) best = {i_start, kind::i};
        else if (f_ready != never) best = {f_start, kind::f};
        if (nw[s] < ni[s]) {
            const bool memory_bound = nf[s] < m && f_ready == never && i_ready == never;
            const bool nothing_else = best.start == never;
            const bool gap = best.start >= free[s] + pr.cost(s, kind::w);
            if (memory_bound || nothing_else || (fill == w_fill::gaps && gap) ||
                (fill == w_fill::eager && best.start > free[s])) {
                best = {free[s], kind::w};
            }
        }
        return best;
    };
    std::vector<proposal> next(p);
    for (std::uint32_t s = 0; s < p; ++s) next[s] = propose(s);
    for (std::size_t done = 0; done < 3 * std::size_t{p} * m; ++done) {
        std::uint32_t pick = p;
        for (std::uint32_t s = 0; s < p; ++s) {
            if (next[s].start != never && (pick == p || next[s].start < next[pick].start)) pick = s;
        }
        if (pick == p) return {}; // stuck (cannot happen with cap >= max(M_B, M_W))
        const proposal run = next[pick];
        const double end = run.start + pr.cost(pick, run.what);
        free[pick] = end;
        memory[pick] += pr.memory_change(pick, run.what);
        out[pick].push_back(run.what);
        if (run.what == kind::f) fend[at(pick, nf[pick]++)] = end;
        else if (run.what == kind::i) iend[at(pick, ni[pick]++)] = end;
        else ++nw[pick];
        next[pick] = propose(pick);
        if (pick > 0) next[pick - 1] = propose(pick - 1);
        if (pick + 1 < p) next[pick + 1] = propose(pick + 1);
    }
    return out;
}

/// The letters of a catalogued single-chunk split policy.
template <class P>
order letters_of(const P& pol) {
    order out(pol.shape.ranks);
    for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
        for (auto c = pol.cursor(r); !c.done(); c.advance()) {
            const op k = c.current().kind;
            out[r].push_back(k == op::forward ? kind::f : k == op::backward_input ? kind::i : kind::w);
        }
    }
    return out;
}

/// Per-stage parameters of a templated order: `warmup` forwards before the first I, then
/// periods of I, F (or I, W, F) in which a W runs only when more than `deferred` are pending or
/// memory needs one; after the last F the remaining I's and W's with the same deferral, and the
/// deferred W's at the end. A later stage that defers its W's hands its I's back sooner, which
/// shortens the drain of every stage before it (the paper's ILP finds that shape; the greedy
/// cannot, since it decides W's from one global rule).
struct stage_template {
    std::uint32_t warmup = 1;
    std::uint32_t deferred = 0;
    bool w_before_f = false;
};

/// The order of a template; empty if memory cannot hold it.
inline order templated(const problem& pr, const std::vector<double>& cap, const std::vector<stage_template>& tp) {
    order out(pr.p);
    for (std::uint32_t s = 0; s < pr.p; ++s) {
        const stage_template& t = tp[s];
        stage_order_builder o{pr, s, cap[s], out[s]};
        std::uint32_t &nf = o.nf, &ni = o.ni, &nw = o.nw;
        const auto run = [&o](kind k) { o.run(k); };
        // W's until `k` fits; false if it cannot.
        const auto room = [&](kind k) {
            while (!o.fits(k)) {
                if (nw >= ni) return false;
                run(kind::w);
            }
            return true;
        };
        const auto deferred_ws = [&] {
            while (ni - nw > t.deferred) run(kind::w);
        };
        // Before the first I no W can free memory: the warm-up stops where memory is full.
        while (nf < pr.m && nf < t.warmup && o.fits(kind::f)) run(kind::f);
        while (ni < pr.m) {
            if (ni >= nf) { // warm-up cut short by memory: one F before its I
                if (!room(kind::f)) return {};
                run(kind::f);
            }
            if (!room(kind::i)) return {};
            run(kind::i);
            if (t.w_before_f) deferred_ws();
            if (nf < pr.m) {
                if (!room(kind::f)) return {};
                run(kind::f);
            }
            if (!t.w_before_f) deferred_ws();
        }
        while (nw < pr.m) run(kind::w);
    }
    return out;
}

/// Coordinate descent over the per-stage templates: for each stage in turn (last to first, where
/// the drain is decided), try a few warm-up and deferral changes and the W position, keep what
/// lowers (span, makespan, sum of ends), until a pass changes nothing or `budget` evaluations
/// are spent. Deterministic: the budget counts evaluations, not time.
inline void tune_templates(const problem& pr, evaluator& ev, const std::vector<double>& cap,
                           std::vector<stage_template>& tp, order& best, evaluation& best_eval,
                           std::uint32_t budget) {
    std::uint32_t used = 0;
    const auto try_template = [&](std::vector<stage_template>& cand) {
        ++used;
        order o = templated(pr, cap, cand);
        if (o.empty()) return false;
        const evaluation e = ev.run(o);
        if (!e.legal || !e.fits || !e.better_than(best_eval)) return false;
        best = std::move(o);
        best_eval = e;
        tp = cand;
        return true;
    };
    const std::int64_t steps[] = {1, -1, 2, -2, 4, -4, 8, -8};
    bool improved = true;
    while (improved && used < budget) {
        improved = false;
        for (std::uint32_t s = pr.p; s-- > 0 && used < budget;) {
            for (int field = 0; field < 3 && used < budget; ++field) {
                if (field == 2) {
                    std::vector<stage_template> cand = tp;
                    cand[s].w_before_f = !cand[s].w_before_f;
                    improved = try_template(cand) || improved;
                    continue;
                }
                // The stage alone, or with every stage before it (warm-ups must not grow down
                // the pipeline, or the order deadlocks), or with every stage after it.
                bool done = false;
                for (int group = 0; group < 3 && !done && used < budget; ++group) {
                    if (group == 1 && s == 0) continue;
                    if (group == 2 && s + 1 == pr.p) continue;
                    for (const std::int64_t step : steps) {
                        if (used >= budget) break;
                        std::vector<stage_template> cand = tp;
                        const std::uint32_t lo = group == 1 ? 0 : s;
                        const std::uint32_t hi = group == 2 ? pr.p : s + 1;
                        bool ok = true;
                        for (std::uint32_t q = lo; q < hi && ok; ++q) {
                            std::uint32_t& value = field == 0 ? cand[q].warmup : cand[q].deferred;
                            const std::int64_t next = static_cast<std::int64_t>(value) + step;
                            ok = next >= (field == 0 ? 1 : 0) && next <= static_cast<std::int64_t>(pr.m);
                            if (ok) value = static_cast<std::uint32_t>(next);
                        }
                        if (ok && try_template(cand)) {
                            improved = true;
                            done = true;
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// Starting templates: the warm-up that covers the round trip to the first I (capped by memory),
/// with no W deferred, or with the later stages deferring what their memory allows.
inline std::vector<stage_template> round_trip_template(const problem& pr, const std::vector<double>& cap,
                                                       bool defer_late_stages) {
    std::vector<stage_template> tp(pr.p);
    std::vector<double> trip(pr.p, 0.0);
    for (std::uint32_t s = pr.p - 1; s-- > 0;) {
        trip[s] = trip[s + 1] + pr.t[s + 1].forward + pr.t[s + 1].backward_input + 2 * pr.comm;
    }
    for (std::uint32_t s = 0; s < pr.p; ++s) {
        const double wait = pr.t[s].forward + trip[s]; // start of F(s, 0) to the earliest start of I(s, 0)
        const double f = std::max(pr.t[s].forward, 1e-9);
        const double by_time = std::ceil(wait / f - 1e-9);
        const double mb = pr.mem[s].activation;
        const double by_memory = mb > 0.0 ? std::floor(cap[s] / mb + 1e-9) : static_cast<double>(pr.m);
        const double w = std::clamp(std::min(by_time, by_memory), 1.0, static_cast<double>(pr.m));
        tp[s].warmup = static_cast<std::uint32_t>(w);
        if (defer_late_stages) {
            const double left = std::max(0.0, by_memory - w);
            tp[s].deferred = static_cast<std::uint32_t>(std::min(left, static_cast<double>(pr.m)));
        }
    }
    return tp;
}

/// Local search: first-improvement over swaps of adjacent actions of a stage that keep the
/// order legal (I after its F, W after its I; memory is checked by the evaluation), within a
/// budget of evaluations.
inline void improve(const problem& pr, evaluator& ev, order& best, evaluation& best_eval,
                    std::uint32_t budget) {
    std::uint32_t used = 0;
    bool improved = true;
    while (improved && used < budget) {
        improved = false;
        for (std::uint32_t s = 0; s < pr.p && used < budget; ++s) {
            std::vector<kind>& seq = best[s];
            std::uint32_t nf = 0, ni = 0, nw = 0; // letters before position j
            for (std::size_t j = 0; j + 1 < seq.size() && used < budget; ++j) {
                const kind b = seq[j + 1];
                // After the swap b runs first: it needs its predecessor among the first j actions.
                const bool legal = seq[j] != b && (b != kind::i || ni < nf) && (b != kind::w || nw < ni);
                if (legal) {
                    std::swap(seq[j], seq[j + 1]);
                    ++used;
                    const evaluation e = ev.run(best);
                    if (e.legal && e.fits && e.better_than(best_eval)) {
                        best_eval = e;
                        improved = true;
                    } else {
                        std::swap(seq[j], seq[j + 1]);
                    }
                }
                nf += seq[j] == kind::f;
                ni += seq[j] == kind::i;
                nw += seq[j] == kind::w;
            }
        }
    }
}

/// Branch and bound over all orders (each letter in microbatch order per stage). Each stage in
/// turn (the lowest one without a pending choice) chooses its next letter; a choice whose input
/// is not there yet stays pending until it is, so every order is built along exactly one path.
class exact_search {
public:
    exact_search(const problem& pr, std::uint64_t node_limit) : pr_{pr}, limit_{node_limit} {
        const std::uint32_t p = pr.p;
        start_.stages.resize(p);
        start_.fend.assign(std::size_t{p} * pr.m, unset);
        start_.iend.assign(std::size_t{p} * pr.m, unset);
        first_.resize(p);
        double arrival = 0.0;
        for (std::uint32_t s = 0; s < p; ++s) {
            start_.stages[s].remaining = pr.work(s);
            first_[s] = arrival;
            arrival += pr.t[s].forward + pr.comm;
        }
    }

    /// Improves `best` (an incumbent with span `bound`); true if the search finished.
    bool run(order& best, double& bound) {
        best_ = &best;
        bound_ = bound;
        current_.assign(pr_.p, {});
        state s = start_;
        dfs(s);
        bound = bound_;
        return nodes_ <= limit_;
    }

private:
    static constexpr double unset = -1.0;
    static constexpr std::uint8_t none = 3;
    struct stage_state {
        std::uint32_t nf = 0, ni = 0, nw = 0;
        double free = 0.0;
        double first = unset;
        double memory = 0.0;
        double remaining = 0.0; ///< work not yet run (pending included)
        std::uint8_t pending = none;
    };
    struct state {
        std::vector<stage_state> stages;
        std::vector<double> fend, iend;
    };

    [[nodiscard]] double input_ready(const state& st, std::uint32_t s, kind k) const {
        const stage_state& ss = st.stages[s];
        const std::uint32_t m = pr_.m;
        if (k == kind::f) {
            if (s == 0) return 0.0;
            const double t = st.fend[std::size_t{s - 1} * m + ss.nf];
            return t == unset ? unset : t + pr_.comm;
        }
        if (k == kind::i) {
            if (s + 1 == pr_.p) return st.fend[std::size_t{s} * m + ss.ni];
            const double t = st.iend[std::size_t{s + 1} * m + ss.ni];
            return t == unset ? unset : t + pr_.comm;
        }
        return 0.0;
    }

    /// Runs every pending choice whose input exists, until none does.
    void settle(state& st) {
        bool moved = true;
        while (moved) {
            moved = false;
            for (std::uint32_t s = 0; s < pr_.p; ++s) {
                stage_state& ss = st.stages[s];
                if (ss.pending == none) continue;
                const kind k = static_cast<kind>(ss.pending);
                const double ready = input_ready(st, s, k);
                if (ready == unset) continue;
                const double start = std::max(ready, ss.free);
                const double cost = pr_.cost(s, k);
                if (ss.first == unset) ss.first = start;
                ss.free = start + cost;
                ss.remaining -= cost;
                if (k == kind::f) st.fend[std::size_t{s} * pr_.m + ss.nf++] = ss.free;
                else if (k == kind::i) st.iend[std::size_t{s} * pr_.m + ss.ni++] = ss.free;
                else ++ss.nw;
                ss.pending = none;
                moved = true;
            }
        }
    }

    /// Every stage's first action is F(s, 0), started as soon as it arrives, so the start of a
    /// stage's span is the same in every order; its end is at least (a) when the stage is free
    /// plus the work it has left, and (b) when its last I can end, one T_W later: that I needs
    /// the stage's remaining F and I work and the I of the stage below plus p2p.
    [[nodiscard]] double lower_bound(const state& st) const {
        double lb = 0.0;
        double last_i_below = 0.0;
        for (std::uint32_t s = pr_.p; s-- > 0;) {
            const stage_state& ss = st.stages[s];
            const double own_fi = static_cast<double>(pr_.m - ss.nf) * pr_.t[s].forward +
                                  static_cast<double>(pr_.m - ss.ni) * pr_.t[s].backward_input;
            double last_i = ss.free + own_fi;
            if (ss.ni < pr_.m && s + 1 < pr_.p) {
                last_i = std::max(last_i, last_i_below + pr_.comm + pr_.t[s].backward_input);
            }
            last_i_below = last_i;
            const double end = std::max(ss.free + ss.remaining,
                                        ss.ni < pr_.m ? last_i + pr_.t[s].backward_weight : 0.0);
            lb = std::max(lb, end - first_[s]);
        }
        return lb;
    }

    void dfs(state& st) {
        if (++nodes_ > limit_) return;
        if (lower_bound(st) >= bound_ - 1e-9 * std::max(1.0, bound_)) return;
        std::uint32_t s = 0;
        while (s < pr_.p && (st.stages[s].pending != none || st.stages[s].nw == pr_.m)) ++s;
        if (s == pr_.p) {
            for (const stage_state& ss : st.stages) {
                if (ss.pending != none) return; // every unfinished stage waits: deadlock
            }
            bound_ = lower_bound(st); // complete: the bound is the span
            *best_ = current_;
            return;
        }
        const stage_state& ss = st.stages[s];
        const stage_memory& mem = pr_.mem[s];
        for (const kind k : {kind::i, kind::f, kind::w}) {
            if (k == kind::f && ss.nf == pr_.m) continue;
            if (k == kind::i && ss.ni >= ss.nf) continue;
            if (k == kind::w && ss.nw >= ss.ni) continue;
            if (!within(ss.memory + pr_.memory_change(s, k), mem.limit)) continue;
            state next = st;
            next.stages[s].pending = static_cast<std::uint8_t>(k);
            next.stages[s].memory += pr_.memory_change(s, k);
            current_[s].push_back(k);
            settle(next);
            dfs(next);
            current_[s].pop_back();
            if (nodes_ > limit_) return;
        }
    }

    const problem& pr_;
    std::uint64_t limit_;
    std::uint64_t nodes_ = 0;
    state start_{};
    std::vector<double> first_{}; ///< start of every stage's span (the same in every order)
    order* best_ = nullptr;
    order current_{};
    double bound_ = 0.0;
};

/// A lower bound on the span that any order within the memory limits reaches, per stage s:
/// its work, plus the idle time it cannot avoid at both ends.
///  - Head: from the start of F(s, 0) to the earliest start of I(s, 0) lies the round trip
///    R = T_F(s) + sum over later stages q of (T_F(q) + T_I(q)) + 2 (p-1-s) p2p. Until then the
///    stage can only run forwards (no W before an I), at most n = min(m, limit / M_B) of them:
///    idle >= R - n T_F(s).
///  - Tail: after the stage's last F ends, its last I cannot start for
///    D = R - T_F(s) (the same round trip). In between it can only run the I's and W's of the
///    microbatches it still holds, which memory bounds: k_I holding M_B (I not run; the last
///    microbatch is one of them and its I is the one waited for) and k_W holding M_W (only W
///    left), k_I M_B + k_W M_W <= limit: idle >= D - max((k_I - 1)(T_I + T_W) + k_W T_W).
/// The two windows are disjoint when n < m (the last F comes after the first I); otherwise
/// only the larger counts. Exact for the paper's 1.5B model with m = 24 at limit p, where the
/// heuristic reaches it (tests).
inline double lower_bound(const problem& pr) {
    double bound = 0.0;
    double trip = 0.0; // of stage s, summed from the last stage down
    for (std::uint32_t s = pr.p; s-- > 0;) {
        if (s + 1 < pr.p) trip += pr.t[s + 1].forward + pr.t[s + 1].backward_input + 2 * pr.comm;
        const stage_times& t = pr.t[s];
        const stage_memory& mm = pr.mem[s];
        const double m = static_cast<double>(pr.m);
        const auto fit = [](double room, double each, double most) {
            return each > 0.0 ? std::min(most, std::floor(room / each + 1e-9)) : most;
        };
        const double n = std::max(1.0, fit(mm.limit, mm.activation, m));
        const double head = std::max(0.0, t.forward + trip - n * t.forward);
        double available = 0.0;
        for (double k_i = 1.0; k_i <= n; k_i += 1.0) {
            const double k_w = std::max(0.0, fit(mm.limit - k_i * mm.activation, mm.weight, m - k_i));
            available = std::max(available, (k_i - 1.0) * (t.backward_input + t.backward_weight) + k_w * t.backward_weight);
        }
        const double tail = std::max(0.0, trip - available);
        const double idle = n < m ? head + tail : std::max(head, tail);
        bound = std::max(bound, pr.work(s) + idle);
    }
    return bound;
}

inline explicit_schedule<placement::loop> to_schedule(const problem& pr, const order& o) {
    explicit_schedule<placement::loop> out{};
    out.shape = shape{pr.p, pr.m, 1};
    for (std::uint32_t s = 0; s < pr.p; ++s) {
        std::uint32_t n[3] = {0, 0, 0};
        for (const kind k : o[s]) {
            const op kind_op = k == kind::f ? op::forward : k == kind::i ? op::backward_input : op::backward_weight;
            const auto mb = static_cast<std::uint16_t>(n[static_cast<std::size_t>(k)]++);
            out.push(event{kind_op, 0, static_cast<std::uint16_t>(s), mb, no_peer});
        }
    }
    return out;
}

inline problem make_problem(const shape& s, const pipeline_costs& costs, const pipeline_memory& memory) {
    problem pr{};
    pr.p = s.ranks;
    pr.m = s.microbatches;
    pr.comm = costs.p2p;
    pr.t.assign(pr.p, costs.uniform);
    pr.mem.assign(pr.p, memory.uniform);
    for (std::size_t k = 0; k < pr.p && k < costs.per_stage.size(); ++k) pr.t[k] = costs.per_stage[k];
    for (std::size_t k = 0; k < pr.p && k < memory.per_stage.size(); ++k) pr.mem[k] = memory.per_stage[k];
    return pr;
}

inline constexpr std::uint64_t max_units = std::uint64_t{1} << 20;
/// The list scheduler scans the stages at every action, so the search's time grows with p^2 m
/// (measured, g++ -O2 on the machine of benchmarks/README.md: 0.3 s at p = 32, m = 1024; 1.3 s
/// at p = 128, m = 1024; 1.0 s at p = 256, m = 256; 3.5 s at this bound). The bound was set
/// when the tool's comparison with V-Min and V-Half, then O(p^2 m) to build, took 90 s here.
inline constexpr std::uint64_t max_work = std::uint64_t{1} << 26;

/// "" if the input is usable, else what is wrong with it.
inline std::string check_input(const shape& s, const pipeline_costs& costs, const pipeline_memory& memory) {
    if (const shape_check c = check_common(s); !c) return std::string{c.message};
    if (s.chunks != 1) return "autoschedule places one stage per rank: chunks must be 1";
    // The search keeps O(pm) arrays and runs the greedy O(pm) times p at most: bound both.
    if (std::uint64_t{s.ranks} * s.microbatches > max_units) {
        return "ranks * microbatches must be at most 1048576 (2^20) for autoschedule";
    }
    if (std::uint64_t{s.ranks} * s.ranks * s.microbatches > max_work) {
        return "ranks^2 * microbatches must be at most 67108864 (2^26) for autoschedule: its search "
               "time grows with it";
    }
    if (!costs.per_stage.empty() && costs.per_stage.size() != s.ranks) {
        return "per-stage costs: expected " + std::to_string(s.ranks) + " stages, got " +
               std::to_string(costs.per_stage.size());
    }
    if (!memory.per_stage.empty() && memory.per_stage.size() != s.ranks) {
        return "per-stage memory: expected " + std::to_string(s.ranks) + " stages, got " +
               std::to_string(memory.per_stage.size());
    }
    const auto finite_nonnegative = [](double x) { return std::isfinite(x) && x >= 0.0; };
    if (!finite_nonnegative(costs.p2p)) return "p2p time must be a finite number >= 0";
    const auto check_times = [&](const stage_times& t, const std::string& where) -> std::string {
        if (!finite_nonnegative(t.forward)) return where + "T_F must be a finite number >= 0";
        if (!finite_nonnegative(t.backward_input)) return where + "T_I must be a finite number >= 0";
        if (!finite_nonnegative(t.backward_weight)) return where + "T_W must be a finite number >= 0";
        return {};
    };
    const auto check_memory = [&](const stage_memory& mm, const std::string& where) -> std::string {
        if (!finite_nonnegative(mm.activation)) return where + "M_B must be a finite number >= 0";
        if (!finite_nonnegative(mm.weight)) return where + "M_W must be a finite number >= 0";
        if (std::isnan(mm.limit) || mm.limit < 0.0) return where + "the memory limit must be >= 0";
        return {};
    };
    if (costs.per_stage.empty()) {
        if (auto e = check_times(costs.uniform, ""); !e.empty()) return e;
    }
    for (std::size_t k = 0; k < costs.per_stage.size(); ++k) {
        if (auto e = check_times(costs.per_stage[k], "stage " + std::to_string(k) + ": "); !e.empty()) return e;
    }
    if (memory.per_stage.empty()) {
        if (auto e = check_memory(memory.uniform, ""); !e.empty()) return e;
    }
    for (std::size_t k = 0; k < memory.per_stage.size(); ++k) {
        if (auto e = check_memory(memory.per_stage[k], "stage " + std::to_string(k) + ": "); !e.empty()) return e;
    }
    return {};
}

} // namespace detail::autosched

/// Input errors (shape, negative or non-finite numbers, per-stage lists of the wrong length)
/// come back as fits = false with the message starting "invalid input: ".
inline autoschedule_result autoschedule(const shape& s, const pipeline_costs& costs,
                                        const pipeline_memory& memory,
                                        const autoschedule_options& options = {}) {
    namespace as = detail::autosched;
    autoschedule_result out{};
    if (std::string e = as::check_input(s, costs, memory); !e.empty()) {
        out.message = "invalid input: " + e;
        return out;
    }
    const as::problem pr = as::make_problem(s, costs, memory);
    out.smallest_limit.resize(pr.p);
    for (std::uint32_t k = 0; k < pr.p; ++k) {
        out.smallest_limit[k] = std::max(pr.mem[k].activation, pr.mem[k].weight);
    }
    for (std::uint32_t k = 0; k < pr.p; ++k) {
        if (!as::within(out.smallest_limit[k], pr.mem[k].limit)) {
            const double smallest = *std::max_element(out.smallest_limit.begin(), out.smallest_limit.end());
            out.message = "no schedule fits: stage " + std::to_string(k) + " has a memory limit of " +
                          as::number_text(pr.mem[k].limit) + " but one microbatch needs " +
                          as::number_text(out.smallest_limit[k]) + " (max(M_B, M_W)); the smallest limit that fits " +
                          (memory.per_stage.empty() ? "is " : "every stage is ") + as::number_text(smallest);
            return out;
        }
    }

    as::evaluator ev{pr};
    as::order best{};
    as::evaluation best_eval{};
    bool have = false;
    const auto consider = [&](as::order&& o, std::string_view method) {
        if (o.empty()) return false;
        const as::evaluation e = ev.run(o);
        if (!e.legal || !e.fits) return false;
        if (!have || e.better_than(best_eval)) {
            best = std::move(o);
            best_eval = e;
            out.method = method;
            have = true;
            return true;
        }
        return false;
    };

    // 1. The heuristic's eight variants under the given limit.
    std::vector<double> cap(pr.p);
    for (std::uint32_t k = 0; k < pr.p; ++k) cap[k] = pr.mem[k].limit;
    const auto run_variants = [&](const std::vector<double>& caps, std::string_view method) {
        for (const bool may_wait : {true, false}) {
            for (const bool catch_up : {true, false}) {
                for (const bool fill : {true, false}) {
                    consider(as::greedy(pr, caps, may_wait, catch_up, fill), method);
                }
            }
        }
    };
    run_variants(cap, "heuristic");
    if (have) out.heuristic_span = best_eval.span;

    // 2. Tighter caps: k whole activations for k = 1 .. 2p+1, at most 8 of them evenly spread
    //    (each costs eight greedy runs).
    {
        const std::uint32_t top = std::min(2 * pr.p + 1, pr.m + 1);
        const std::uint32_t step = (top + 7) / 8;
        for (std::uint32_t k = 1; k <= top; k += step) {
            std::vector<double> tighter(pr.p);
            bool differs = false;
            for (std::uint32_t q = 0; q < pr.p; ++q) {
                const double c = static_cast<double>(k) * pr.mem[q].activation;
                tighter[q] = std::min(cap[q], std::max(c, out.smallest_limit[q]));
                differs = differs || tighter[q] < cap[q];
            }
            if (differs) run_variants(tighter, "heuristic under a tighter memory cap");
        }
    }

    // 3. List scheduling under the limit.
    for (const bool forward_first : {false, true}) {
        for (const as::w_fill fill : {as::w_fill::lazy, as::w_fill::gaps, as::w_fill::eager}) {
            consider(as::list_schedule(pr, cap, forward_first, fill), "list scheduling under the memory limit");
        }
    }
    // 4. Handcrafted orders, and 1F1B under the cap (W at once, or deferred as in ZB-H1).
    for (const std::uint32_t shift : {0U, 1U, pr.p}) {
        consider(as::capped_one_f_one_b(pr, cap, [&](std::uint32_t stage) { return shift == 1 ? stage : shift == 0 ? 0U : pr.m; }),
                 "1F1B under the memory cap");
    }
    {
        const zb_h1 h1{shape{pr.p, pr.m, 1}};
        if (h1.check()) consider(as::letters_of(h1), "ZB-H1");
        const zb_h2 h2{shape{pr.p, pr.m, 1}};
        if (h2.check()) consider(as::letters_of(h2), "ZB-H2");
        const one_f_one_b<backward_kind::split> plain{shape{pr.p, pr.m, 1}};
        if (plain.check()) consider(as::letters_of(plain), "1F1B with split backward");
    }
    if (!have) {
        // Always fits (limit >= max(M_B, M_W) was checked): F I W of one microbatch at a time.
        as::order sequential(pr.p);
        for (auto& seq : sequential) {
            for (std::uint32_t i = 0; i < pr.m; ++i) {
                seq.push_back(as::kind::f);
                seq.push_back(as::kind::i);
                seq.push_back(as::kind::w);
            }
        }
        consider(std::move(sequential), "one microbatch at a time");
    }

    // 5. Per-stage templates tuned by coordinate descent, from two starts.
    if (options.template_evaluations > 0) {
        const std::uint64_t per_eval = 6ULL * pr.p * pr.m; // build the order, replay it
        const auto budget = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(options.template_evaluations, options.template_work / per_eval) / 2);
        for (const bool defer : {false, true}) {
            std::vector<as::stage_template> tp = as::round_trip_template(pr, cap, defer);
            as::order o = as::templated(pr, cap, tp);
            as::evaluation e{};
            if (!o.empty()) e = ev.run(o);
            if (o.empty() || !e.legal || !e.fits) {
                // Tuning needs a legal start: the memory-capped 1F1B is one (warm-up p - s).
                for (std::uint32_t k = 0; k < pr.p; ++k) tp[k] = {std::max(1U, std::min(tp[k].warmup, pr.p - k)), 0, false};
                o = as::templated(pr, cap, tp);
                if (o.empty()) continue;
                e = ev.run(o);
                if (!e.legal || !e.fits) continue;
            }
            as::tune_templates(pr, ev, cap, tp, o, e, budget);
            consider(std::move(o), "per-stage templates (coordinate descent)");
        }
    }

    // 6. Local search.
    // Each evaluation replays all 3pm actions: cap the total work so that big shapes stay fast.
    const std::uint64_t per_eval = 3ULL * pr.p * pr.m;
    const auto affordable = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(options.local_search_evaluations, options.local_search_work / per_eval));
    if (affordable > 0) {
        const as::evaluation before = best_eval;
        as::improve(pr, ev, best, best_eval, affordable);
        if (best_eval.better_than(before)) out.method = "local search";
    }

    // 7. Exact search on small shapes.
    if (options.exact_actions > 0 && 3ULL * pr.p * pr.m <= options.exact_actions) {
        as::exact_search bb{pr, options.exact_nodes};
        as::order found = best;
        double bound = best_eval.span;
        const bool finished = bb.run(found, bound);
        const as::evaluation e = ev.run(found);
        if (e.legal && e.fits && e.better_than(best_eval)) {
            best = std::move(found);
            best_eval = e;
            out.method = "branch and bound";
        }
        out.proven_optimal = finished;
    }

    out.fits = true;
    out.schedule = as::to_schedule(pr, best);
    out.span = best_eval.span;
    out.makespan = best_eval.makespan;
    double work = 0.0;
    for (std::uint32_t k = 0; k < pr.p; ++k) work = std::max(work, pr.work(k));
    out.bubble_fraction = out.span > 0.0 ? (out.span - work) / out.span : 0.0;
    out.peak_memory = best_eval.peak;
    out.lower_bound = as::lower_bound(pr);
    if (as::within(out.span, out.lower_bound)) out.proven_optimal = true;
    return out;
}

/// Per-stage costs (with M_B, M_W) under which simulate() replays an autoschedule result with
/// the same numbers; use with cost_model{.per_stage = ..., .p2p_latency = costs.p2p}. A full B
/// costs T_I + T_W, so the named schedules with a fused backward compare on the same work.
inline std::vector<stage_costs> to_stage_costs(const shape& s, const pipeline_costs& costs,
                                               const pipeline_memory& memory) {
    const detail::autosched::problem pr = detail::autosched::make_problem(s, costs, memory);
    std::vector<stage_costs> out(pr.p);
    for (std::uint32_t k = 0; k < pr.p; ++k) {
        stage_costs& c = out[k];
        c.forward = pr.t[k].forward;
        c.backward_input = pr.t[k].backward_input;
        c.backward_weight = pr.t[k].backward_weight;
        c.backward = pr.t[k].backward_input + pr.t[k].backward_weight;
        c.activation_memory = pr.mem[k].activation;
        c.weight_memory = pr.mem[k].weight;
    }
    return out;
}

} // namespace pipesched
