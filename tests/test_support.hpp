// Shared helpers for the tests. Everything is constexpr so each check can run both inside
// static_assert and as a run-time CHECK (sanitizers and coverage only see the latter).
#pragma once

#include "verify.hpp"

#include <pipesched/action.hpp>
#include <pipesched/pipesched.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <initializer_list>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pipesched_test {

namespace ps = pipesched;

/// True when rank `rank` of `pol` runs exactly the comma-separated PyTorch actions `csv`
/// (an overlapped pair, op::overlap_f_b and the two actions after it, is one cell
/// `(a;b)OVERLAP_F_B`).
template <ps::schedule_policy P>
constexpr bool order_is(const P& pol, std::uint32_t rank, std::string_view csv) {
    std::size_t pos = 0;
    ps::cell_folder cells{};
    for (ps::event e : ps::events(pol, rank)) {
        if (!cells.push(ps::to_action(pol, e))) continue;
        if (pos > csv.size()) return false;
        const std::size_t comma = csv.find(',', pos);
        const std::size_t end = comma == std::string_view::npos ? csv.size() : comma;
        if (cells.text() != csv.substr(pos, end - pos)) return false;
        pos = end + 1;
    }
    return pos == csv.size() + 1 || (csv.empty() && pos == 0);
}

/// Peak number of (chunk, microbatch) activations alive on a rank: +1 at F, -1 when the
/// backward that frees it (B, or W for a split backward) runs.
template <ps::schedule_policy P>
constexpr std::uint32_t peak_alive(const P& pol, std::uint32_t rank) {
    std::int64_t alive = 0;
    std::int64_t peak = 0;
    for (ps::event e : ps::events(pol, rank)) {
        if (e.kind == ps::op::forward) ++alive;
        if (e.kind == ps::op::backward || e.kind == ps::op::backward_weight) --alive;
        peak = alive > peak ? alive : peak;
    }
    return static_cast<std::uint32_t>(peak);
}

/// The 1F1B and interleaved shapes that several files check by hand (orders, makespans).
inline constexpr ps::one_f_one_b<> ofob_4x8{{.ranks = 4, .microbatches = 8, .chunks = 1}};
inline constexpr ps::interleaved_1f1b<> inter_4x8x2{{.ranks = 4, .microbatches = 8, .chunks = 2}};

/// Equal up to rounding, for times summed from small integers.
constexpr bool near(double a, double b) { return (a > b ? a - b : b - a) < 1e-9; }

/// An action by its fields, for hand-written tables.
constexpr ps::action act(std::uint32_t stage, ps::op kind, std::uint32_t mb = 0, bool overlap = false) {
    return ps::action{stage, kind, mb, overlap};
}

/// The lines of a text, without their '\n'; a last line without '\n' counts, an empty text has none.
inline std::vector<std::string> lines_of(std::string_view text) {
    std::vector<std::string> out;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        out.emplace_back(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    }
    return out;
}

/// Calls f(policy) for every shape with p <= 8, m <= 4p, v <= 4 that a P accepts.
template <class P>
void for_each_accepted_shape(auto&& f) {
    for (std::uint32_t p = 1; p <= 8; ++p) {
        for (std::uint32_t m = 1; m <= 4 * p; ++m) {
            for (std::uint32_t v = 1; v <= 4; ++v) {
                const P pol{{.ranks = p, .microbatches = m, .chunks = v}};
                if (pol.check()) f(pol);
            }
        }
    }
}

/// A deliberately naive reference for "the cross-rank dependencies can be met": sweep the
/// ranks again and again, running each rank's next step whenever its inputs exist, until
/// nothing moves. A step is an action, or an overlapped pair (an overlap_f_b marker and the two
/// actions after it) that starts only when both inputs exist. Quadratic, independent of
/// pipesched::validate, for small shapes only.
template <ps::schedule_policy P>
bool naive_dependencies_met(const P& pol) {
    const ps::shape s = pol.shape;
    const std::uint32_t stages = s.stages();
    std::vector<std::vector<ps::event>> seq(s.ranks);
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        for (ps::event e : ps::events(pol, r)) seq[r].push_back(e);
    }
    std::vector<std::uint8_t> fwd(std::size_t{stages} * s.microbatches, 0);
    std::vector<std::uint8_t> bwd(std::size_t{stages} * s.microbatches, 0);
    const auto at = [&](std::uint32_t stage, std::uint32_t mb) { return std::size_t{stage} * s.microbatches + mb; };
    const auto ready = [&](const ps::event& e) {
        const std::uint32_t st = ps::stage_of(pol, e);
        if (e.kind == ps::op::forward) return st == 0 || fwd[at(st - 1, e.microbatch)] != 0;
        if (e.kind == ps::op::backward || e.kind == ps::op::backward_input) {
            return fwd[at(st, e.microbatch)] != 0 && (st + 1 == stages || bwd[at(st + 1, e.microbatch)] != 0);
        }
        return true;
    };
    const auto run = [&](const ps::event& e) {
        const std::uint32_t st = ps::stage_of(pol, e);
        if (e.kind == ps::op::forward) fwd[at(st, e.microbatch)] = 1;
        if (e.kind == ps::op::backward || e.kind == ps::op::backward_input) bwd[at(st, e.microbatch)] = 1;
    };
    std::vector<std::size_t> next(s.ranks, 0);
    bool moved = true;
    while (moved) {
        moved = false;
        for (std::uint32_t r = 0; r < s.ranks; ++r) {
            while (next[r] < seq[r].size()) {
                const ps::event e = seq[r][next[r]];
                if (e.kind == ps::op::overlap_f_b) {
                    const ps::event f = seq[r][next[r] + 1];
                    const ps::event b = seq[r][next[r] + 2];
                    if (!ready(f) || !ready(b)) break;
                    run(f);
                    run(b);
                    next[r] += 3;
                } else {
                    if (!ready(e)) break;
                    run(e);
                    ++next[r];
                }
                moved = true;
            }
        }
    }
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        if (next[r] != seq[r].size()) return false;
    }
    return true;
}

/// What every (stage, microbatch) unit of a schedule runs, read off its events.
struct unit_census {
    /// (stage, microbatch) -> how many F, B, I, W (indexed by op).
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::array<int, 4>> counts;
    bool order_ok = true;  ///< B or I after its F, W after its I
    bool fields_ok = true; ///< rank, chunk, microbatch in range, no peer, each stage on one rank
};

template <ps::schedule_policy P>
unit_census census(const P& pol) {
    unit_census out;
    std::map<std::uint32_t, std::uint32_t> stage_rank;
    const ps::shape s = pol.shape;
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        for (ps::event e : ps::events(pol, r)) {
            const std::uint32_t st = ps::stage_of(pol, e);
            auto& c = out.counts[{st, e.microbatch}];
            c[static_cast<std::size_t>(e.kind)]++;
            if (ps::is_backward(e.kind) && c[0] == 0) out.order_ok = false;
            if (e.kind == ps::op::backward_weight && c[2] == 0) out.order_ok = false;
            if (!stage_rank.emplace(st, r).second && stage_rank[st] != r) out.fields_ok = false;
            if (e.rank != r || e.microbatch >= s.microbatches || e.chunk >= s.chunks || e.peer != ps::no_peer) {
                out.fields_ok = false;
            }
        }
    }
    return out;
}

/// Events of every rank three ways, compared: the cursor, at() (when the policy has it) and
/// emit(). Returns the number of events when all three agree and match size(), else 0.
template <ps::schedule_policy P>
std::size_t streams_agree(const P& pol) {
    struct collect {
        std::vector<ps::event>* out;
        void push(const ps::event& e) { out->push_back(e); }
    };
    std::vector<ps::event> pushed;
    ps::emit(pol, collect{&pushed});
    std::size_t k = 0;
    const ps::shape s = pol.shape;
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        std::size_t i = 0;
        for (ps::event e : ps::events(pol, r)) {
            if constexpr (ps::indexable_policy<P>) {
                if (!(e == pol.at(r, i))) return 0;
            }
            if (k >= pushed.size() || !(pushed[k] == e)) return 0;
            ++i;
            ++k;
        }
        if (i != pol.size(r) || i != ps::event_count(pol, r)) return 0;
    }
    return k == pushed.size() && k == ps::event_count(pol) ? k : 0;
}

/// The user's workload (p = 1, m = 2) in SimAI's order: F0 F1, loss, optimizer, B1 B0, grad sync.
inline std::vector<std::vector<ps::event>> simai_user_order() {
    const auto at = [](ps::op kind, std::uint16_t mb) { return ps::event{kind, 0, 0, mb, ps::no_peer}; };
    return {{at(ps::op::forward, 0), at(ps::op::forward, 1), at(ps::op::loss, 0), at(ps::op::loss, 1),
             at(ps::op::optimizer_step, 0), at(ps::op::backward, 1), at(ps::op::backward, 0),
             at(ps::op::grad_sync, 0)}};
}

/// Every number of two simulations, bit for bit (== on doubles), and the same verdict.
inline bool identical(const ps::simulation& a, const ps::simulation& b) {
    if (a.check != b.check || a.makespan != b.makespan || a.bubble_fraction != b.bubble_fraction ||
        a.ranks.size() != b.ranks.size()) {
        return false;
    }
    for (std::size_t r = 0; r < a.ranks.size(); ++r) {
        const ps::rank_summary& x = a.ranks[r];
        const ps::rank_summary& y = b.ranks[r];
        if (x.busy != y.busy || x.idle != y.idle || x.peak_activations != y.peak_activations ||
            x.peak_memory != y.peak_memory || x.first_start != y.first_start || x.last_end != y.last_end) {
            return false;
        }
    }
    return true;
}

/// The same for the iteration replay.
inline bool identical(const ps::iteration_simulation& a, const ps::iteration_simulation& b) {
    if (a.check != b.check || a.replayed != b.replayed || a.makespan != b.makespan ||
        a.bubble_fraction != b.bubble_fraction || a.ranks.size() != b.ranks.size()) {
        return false;
    }
    for (std::size_t r = 0; r < a.ranks.size(); ++r) {
        const ps::iteration_rank_summary& x = a.ranks[r];
        const ps::iteration_rank_summary& y = b.ranks[r];
        if (x.compute_busy != y.compute_busy || x.idle != y.idle || x.exposed != y.exposed ||
            x.peak_activations != y.peak_activations || x.end != y.end) {
            return false;
        }
    }
    return true;
}

/// A timeline sink that keeps every record.
struct recording_timeline {
    std::vector<ps::timed_action> records;
    void push(const ps::timed_action& t) { records.push_back(t); }
};

/// The same for the iteration replay's timed events.
struct recording_events {
    std::vector<ps::timed_event> records;
    void push(const ps::timed_event& t) { records.push_back(t); }
};

/// Calls f(policy) for every catalogued schedule, both backward kinds, every p in `ranks` and m
/// in `microbatches` (two chunks for the multi-chunk schedules) whose shape the schedule accepts.
/// The policy is an any_schedule holding the catalogued one (the same events: test_any_schedule.cpp),
/// so f is compiled for the two placements instead of for each of the 15 policy types; for the
/// tests of the replay and the writers, which are about the events, not the type that makes them.
template <class F>
void for_each_accepted_schedule(std::initializer_list<std::uint32_t> ranks,
                                std::initializer_list<std::uint32_t> microbatches, F&& f) {
    for (const ps::schedule_info& info : ps::schedules) {
        for (const std::uint32_t p : ranks) {
            for (const std::uint32_t m : microbatches) {
                for (const ps::backward_kind backward : {ps::backward_kind::full, ps::backward_kind::split}) {
                    ps::schedule_options opt{};
                    opt.shape = {.ranks = p, .microbatches = m, .chunks = info.multi_chunk ? 2u : 1u};
                    opt.backward = backward;
                    ps::with_any_schedule(info.id, opt, [&](const auto& pol) {
                        if (pol.check()) f(pol);
                    });
                }
            }
        }
    }
}

/// One `ok` row of tests/data/zb_v_auto/grid.csv (what the Zero Bubble authors' V search returns;
/// README.md there): per-chunk costs f (T_F), b (T_I), w (T_W), p2p c, the limit in chunk
/// activations per rank and their span.
struct zb_v_row {
    std::uint32_t p = 0, m = 0;
    std::string cost_set{};
    double f = 0, b = 0, w = 0, c = 0, max_mem = 0, span = 0;
};

/// Every `ok` row in file order; empty when the file is missing or its header is not the one
/// the columns are read by.
inline std::vector<zb_v_row> zb_v_grid_ok_rows() {
    std::string path = __FILE__;
    path = path.substr(0, path.find_last_of("/\\") + 1) + "data/zb_v_auto/grid.csv";
    std::ifstream in{path};
    std::string line;
    if (!in || !std::getline(in, line) || line.rfind("p,m,cost_set,f,b,w,c,max_mem,status,span,", 0) != 0) return {};
    std::vector<zb_v_row> out;
    while (std::getline(in, line)) {
        std::vector<std::string> cell;
        std::size_t from = 0;
        for (int k = 0; k < 10; ++k) {
            const std::size_t comma = line.find(',', from);
            cell.push_back(line.substr(from, comma - from));
            from = comma + 1;
        }
        if (cell[8] != "ok") continue;
        out.push_back({static_cast<std::uint32_t>(std::stoul(cell[0])), static_cast<std::uint32_t>(std::stoul(cell[1])), cell[2],
                       std::stod(cell[3]), std::stod(cell[4]), std::stod(cell[5]), std::stod(cell[6]), std::stod(cell[7]),
                       std::stod(cell[9])});
    }
    return out;
}

} // namespace pipesched_test
