// pipesched: local search over orders: swaps of adjacent actions of a stage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "evaluation.hpp"
#include "problem.hpp"

namespace pipesched::detail::autosched {

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

} // namespace pipesched::detail::autosched
