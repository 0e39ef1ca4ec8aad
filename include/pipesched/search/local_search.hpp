// pipesched: local search over orders: swaps of adjacent actions of a rank.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "evaluation.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

/// Local search: first-improvement over swaps of adjacent actions of a rank that keep the
/// order legal (I after its F, W after its I; memory is checked by the evaluation), within a
/// budget of evaluations.
template <class Evaluator>
void improve(const problem& pr, Evaluator& ev, order& best, evaluation& best_eval,
                    std::uint32_t budget) {
    std::uint32_t used = 0;
    std::vector<std::uint32_t> counts(3 * std::size_t{pr.v}, 0U);
    bool improved = true;
    while (improved && used < budget) {
        improved = false;
        for (std::uint32_t r = 0; r < pr.p && used < budget; ++r) {
            std::vector<task>& seq = best[r];
            std::fill(counts.begin(), counts.end(), 0U); // per chunk, letters before position j
            for (std::size_t j = 0; j + 1 < seq.size() && used < budget; ++j) {
                const task b = seq[j + 1];
                // After the swap b runs first: it needs its predecessor among the first j actions
                // (an action of another chunk never is its predecessor).
                const std::uint32_t* n = &counts[3 * std::size_t{b.chunk}];
                const bool own_chunk = seq[j].chunk == b.chunk;
                const bool legal = seq[j] != b && (!own_chunk || ((b.k != kind::i || n[1] < n[0]) && (b.k != kind::w || n[2] < n[1])));
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
                ++counts[3 * std::size_t{seq[j].chunk} + static_cast<std::size_t>(seq[j].k)];
            }
        }
    }
}

} // namespace pipesched::detail::autosched
