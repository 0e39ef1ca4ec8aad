// pipesched: a lower bound on the span of every order of the loop placement with one stage per
// rank within the memory limits, from the round trip each stage waits for at both ends.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "problem.hpp"

namespace pipesched::detail::autosched {

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

} // namespace pipesched::detail::autosched
