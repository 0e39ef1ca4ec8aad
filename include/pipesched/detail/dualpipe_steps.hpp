// pipesched internals: DeepSeek's eight steps, the one order behind DualPipe and DualPipeV
// (DeepSeek-V3 Technical Report, arXiv 2412.19437; github.com/deepseek-ai/DualPipe, dualpipe.py
// and dualpipev.py, whose step() bodies run the same steps).
//
// A rank runs two "phases" (dualpipe.py's word): DualPipeV's phases are its two chunks, and
// DualPipeV on p ranks with m microbatches is DualPipe's first half of ranks, cut out (Sea AI
// Lab's "cut-in-half"): DualPipe rank r of p with m microbatches runs the steps of DualPipeV
// rank min(r, p-1-r) of p/2 with m/2, its phase 0 being the direction the rank's half of the
// ranks is fed from (the first pipeline on ranks 0..p/2-1, the second on ranks p/2..p-1).
// So the steps are written here once, as phases of slots on six streams named by phase, and
// each policy gives the streams that turn a phase's k-th unit into its (chunk, microbatch).
// The steps themselves, with their repeat counts, are listed in policies/dualpipe_v.hpp.
#pragma once

#include <cstdint>

#include "../event.hpp"
#include "program.hpp"

namespace pipesched::detail {

struct dualpipe_steps {
    /// The W's of steps 7 and 8, in units of phases (chunk = phase, microbatch = the phase's
    /// count): the k-th is the k-th deferred I of the rank, the I's of step 6 in order, then
    /// those of step 7. `ranks`, `microbatches` and `rank` are the V's (DualPipe's halves').
    struct weight_queue {
        std::uint32_t ranks = 1;
        std::uint32_t microbatches = 1;
        std::uint32_t rank = 0;
        std::uint32_t taken = 0;

        constexpr unit next() noexcept { return unit_at(taken++); }
        [[nodiscard]] constexpr unit unit_at(std::uint32_t k) const noexcept {
            const std::uint32_t p = ranks;
            const std::uint32_t r = rank;
            const std::uint32_t m = microbatches;
            const std::uint32_t half = (r + 1) / 2;
            const std::uint32_t even = r % 2 == 0 ? 1 : 0;
            if (k < even) return {0, m - p + half};
            if (k < r + 1) {
                const std::uint32_t t = k - even;
                return t % 2 == 0 ? unit{1, m - r - 1 + half + even + t / 2}
                                  : unit{0, m - p + half + even + t / 2};
            }
            return {0, m - p + k};
        }
    };

    /// Streams per op kind and phase (B and I of a phase share one, as in the references), the
    /// direct W's of step 3, and the queue of deferred weight gradients.
    enum stream : std::uint32_t { f0, f1, b0, b1, w1, queue };
    static constexpr letter F0 = slot(op::forward, f0);
    static constexpr letter F1 = slot(op::forward, f1);
    static constexpr letter B0 = slot(op::backward, b0);
    static constexpr letter B1 = slot(op::backward, b1);
    static constexpr letter I0 = slot(op::backward_input, b0);
    static constexpr letter I1 = slot(op::backward_input, b1);
    static constexpr letter W1 = slot(op::backward_weight, w1);
    static constexpr letter Wq = slot(op::backward_weight, queue); ///< the oldest deferred W
    static constexpr letter X = slot(op::overlap_f_b, no_stream);  ///< a pair's marker, unit (0, 0)

    using patterns = pattern_list<pattern<F0>, pattern<F0, F1>, pattern<I1, W1, F1>, pattern<F0, B1, X, F1, B0>,
                                  pattern<X, F0, B1, X, F1, B0>, pattern<B1, X, F1, B0>, pattern<B1, B0>,
                                  pattern<B1, I0>, pattern<I1, I0>, pattern<Wq, I0>, pattern<Wq>>;

    /// The steps of rank `prm.rank` of a V of `prm.ranks` ranks and `prm.microbatches`
    /// microbatches per phase (m >= 2p).
    [[nodiscard]] static constexpr basic_program<11, 6> steps(const program_params& prm) noexcept {
        const std::uint32_t p = prm.ranks;
        const std::uint32_t r = prm.rank;
        const std::uint32_t m = prm.microbatches;
        const std::uint32_t last = r + 1 == p ? 1 : 0; // step 4 starts without a pair
        const std::uint32_t main = m - 2 * p + r + 1;   // repeats of step 4
        const std::uint32_t half = (r + 1) / 2;         // step 6 repeats before the switch
        const std::uint32_t even = r % 2 == 0 ? 1 : 0;  // step 6 has one mixed repeat
        basic_program<11, 6> prog{};
        prog.then(2 * (p - r - 1), {F0})                // 1
            .then(r + 1, {F0, F1})                      // 2
            .then(p - r - 1, {I1, W1, F1})              // 3
            .then(last, {F0, B1, X, F1, B0})            // 4, the last rank's first repeat
            .then(main - last, {X, F0, B1, X, F1, B0})  // 4
            .then(p - r - 1, {B1, X, F1, B0})           // 5
            .then(half, {B1, B0})                       // 6
            .then(even, {B1, I0})
            .then(r + 1 - half - even, {I1, I0})
            .then(p - r - 1, {Wq, I0})                  // 7
            .then(r + 1, {Wq});                         // 8
        return prog;
    }
};

} // namespace pipesched::detail
