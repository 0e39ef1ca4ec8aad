// pipesched: SimAI's execution order of a workload, step by step (Workload.cc,
// `Workload::iterate_hybrid_parallel_Transformer_fwd_in_bckwd`;
// `iterate_hybrid_parallel_Transformer` is the same without the checkpoint branch).
//
// SimAI's front ends (ns-3 `AstraSimNetwork.cc`, `AnalyticalAstra.cc`) construct `Sys` with
// num_passes = 1, so the state machine runs exactly one pass over the rows:
//
//   Forward_Pass, rows 0..n-1:   wait until the row's weight-gradient collective of the previous
//                                pass has finished (nothing to wait for in pass 1); forward compute
//                                (`get_fwd_pass_compute`, waited only if > 0); then
//                                `issue_forward_pass_comm(None, Blocking)`.
//   Input_Gradient, rows n-1..0: input-grad compute (waited if > 0); then
//                                `issue_input_grad_comm(LIFO, Blocking)`.
//   Weight_Gradient, same row:   weight-grad compute (waited if > 0); then
//                                `issue_weight_grad_comm(FIFO, Non_Blocking)`; wait for the row's
//                                input-grad collective (already done, it was blocking); next row.
//
// There is no notion of microbatch, loss or optimizer: AICB's ga microbatches are just more rows,
// so all forwards run before all backwards, and the cross_entropy* / optimizer* rows (which carry
// their all-reduce in the forward column) run at the end of the forward sweep, before any
// backward and before the gradient reduce-scatter / all-gather rows that AICB puts first and
// SimAI therefore reaches last. At the end `check_for_sim_end` waits for all outstanding
// (non-blocking) weight-gradient collectives.
//
// Details that matter for an exact model:
// - A collective of kind NONE is not issued at all (`Layer::issue_*_comm` returns at once).
//   A zero-byte collective of a real kind *is* issued (nothing in the loop checks the size).
// - A compute of 0 ns is not waited for (`if (counter > 0)`); a compute of 1 ns (AICB's
//   placeholder) is a real 1-tick wait. Every state change also costs one tick
//   (`register_event(..., 1)`), which this model does not include.
// - Some revisions pad forward collectives: in the Forward_Pass state,
//   `if (fwd_pass_comm_size < 4096 && fwd_pass_comm_size > 0) fwd_pass_comm_size = 4096;`
//   before `issue_forward_pass_comm`. Only forward collectives, only non-zero ones; the padded
//   size is stored in the layer, so a recomputed forward uses it too. aliyun/SimAI at commit
//   0253299 and the older 1854d89 do not have it (order_options::pad_small_forward = false).
// - `update_ns` (the 12th field) becomes the layer's `weight_grad_update_time`, and the Layer
//   constructor copies it to `fwd_update_time` and `input_grad_update_time`: `Layer::call`
//   delays the completion of *every* collective of the row (forward, input-grad, weight-grad) by
//   update_ns. It is not a compute step. Steps carry it as `step::update_ns`.
// - Checkpoints: when the backward sweep reaches a row listed in `checkpoint_initiates`
//   (`needs_fwd_in_bckwd_initiation`), before its input-grad compute SimAI walks down to the
//   nearest row listed in `checkpoints` (`is_checkpoint`, the row itself included) and reruns
//   the forward (compute + blocking collective) of the rows from that checkpoint up to, not
//   including, the initiating row (state Forward_In_BackPass); then the backward continues. The
//   case where the initiating row is itself a checkpoint, or no checkpoint lies below it, makes
//   SimAI walk past the rows it should (out of bounds); this model recomputes nothing then.
//   Revisions differ here: aliyun/SimAI 1854d89 reads the header positionally and fills both
//   maps correctly; 0253299 scans tokens and stores the `checkpoint_initiates:` layers into the
//   checkpoint map instead of `need_checkpoint_initiation` (and reads every listed layer from
//   the token right after the count), so no recompute ever happens there
//   (order_options::recompute = false reproduces that). All five AICB files in
//   tests/data/simai have `checkpoints: 0 checkpoint_initiates: 0`.
// - `compute_scale` / `comm_scale` multiply times and sizes; the front ends pass 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "workload.hpp"

namespace pipesched::simai {

enum class step_kind : std::uint8_t { compute, collective };

/// One thing SimAI does in its single pass.
struct step {
    std::size_t row = 0;       ///< index into workload::rows
    std::string_view name;     ///< the row's name (a view into the workload)
    phase ph = phase::forward; ///< which column of the row
    step_kind what = step_kind::compute;
    collective kind = collective::none; ///< collectives only
    comm_group group = comm_group::none;
    std::uint64_t bytes = 0;       ///< collectives: size SimAI simulates (after 4096 padding)
    std::uint64_t file_bytes = 0;  ///< collectives: size written in the file
    std::uint64_t duration_ns = 0; ///< computes: the compute time; collectives: 0 (network)
    std::uint64_t update_ns = 0;   ///< collectives: delay added to their completion
    bool blocking = false;         ///< collectives: SimAI waits for completion before going on
    bool recompute = false;        ///< a forward rerun for a checkpoint (Forward_In_BackPass)

    friend bool operator==(const step&, const step&) = default;
};

struct order_options {
    /// Leave out what SimAI does not act on: 0-ns computes (not waited for) and NONE
    /// collectives (not issued). Zero-byte collectives of a real kind stay (they are issued).
    bool skip_noops = true;
    /// Forward collectives with 0 < bytes < 4096 are simulated as 4096 bytes (newer SimAI).
    bool pad_small_forward = true;
    /// Follow checkpoint_initiates / checkpoints (Forward_In_BackPass). See the header comment.
    bool recompute = true;
};

/// Calls visit(const step&) for every step of SimAI's pass, in order.
template <class Visitor>
void for_each_step(const workload& w, Visitor&& visit, order_options opt = {}) {
    const std::size_t n = w.rows.size();
    const auto new_step = [&w](std::size_t i, phase ph, step_kind what, bool recompute) {
        step s{};
        s.row = i;
        s.name = w.rows[i].name;
        s.ph = ph;
        s.what = what;
        s.recompute = recompute;
        return s;
    };
    const auto collective_step = [&](std::size_t i, phase ph, bool blocking, bool recompute) {
        const row& r = w.rows[i];
        const phase_cost& c = r.cost(ph);
        if (opt.skip_noops && c.kind == collective::none)
            return;
        step s = new_step(i, ph, step_kind::collective, recompute);
        s.kind = c.kind;
        s.group = c.group;
        s.file_bytes = c.bytes;
        s.bytes = (ph == phase::forward && opt.pad_small_forward && c.bytes > 0 && c.bytes < 4096)
                      ? 4096
                      : c.bytes;
        s.update_ns = c.kind == collective::none ? 0 : r.update_ns;
        s.blocking = blocking;
        visit(static_cast<const step&>(s));
    };
    const auto compute_step = [&](std::size_t i, phase ph, bool recompute) {
        const std::uint64_t ns = w.rows[i].cost(ph).compute_ns;
        if (opt.skip_noops && ns == 0)
            return;
        step s = new_step(i, ph, step_kind::compute, recompute);
        s.duration_ns = ns;
        visit(static_cast<const step&>(s));
    };
    const auto forward = [&](std::size_t i, bool recompute) {
        compute_step(i, phase::forward, recompute);
        collective_step(i, phase::forward, true, recompute);
    };

    for (std::size_t i = 0; i < n; ++i)
        forward(i, false);

    std::vector<bool> is_checkpoint;
    std::vector<bool> initiates;
    if (opt.recompute && w.header.checkpoint_initiates && !w.header.checkpoint_initiates->empty()) {
        is_checkpoint.assign(n, false);
        initiates.assign(n, false);
        if (w.header.checkpoints) {
            for (const std::uint32_t l : *w.header.checkpoints) {
                if (l < n)
                    is_checkpoint[l] = true;
            }
        }
        for (const std::uint32_t l : *w.header.checkpoint_initiates) {
            if (l < n)
                initiates[l] = true;
        }
    }
    for (std::size_t i = n; i-- > 0;) {
        if (!initiates.empty() && initiates[i]) {
            std::size_t c = i;
            while (c > 0 && !is_checkpoint[c])
                --c;
            if (is_checkpoint[c] && c < i) {
                for (std::size_t k = c; k < i; ++k)
                    forward(k, true);
            }
        }
        compute_step(i, phase::input_grad, false);
        collective_step(i, phase::input_grad, true, false);
        compute_step(i, phase::weight_grad, false);
        collective_step(i, phase::weight_grad, false, false);
    }
}

/// SimAI's pass as a vector (steps view the workload's names: keep `w` alive). Linear in the
/// rows plus the recomputed forwards; with checkpoints that is O(rows^2) in the worst case
/// (many initiating rows above one checkpoint), as in SimAI.
[[nodiscard]] inline std::vector<step> simai_order(const workload& w, order_options opt = {}) {
    std::vector<step> steps;
    steps.reserve(w.rows.size() * 4);
    for_each_step(
        w, [&steps](const step& s) { steps.push_back(s); }, opt);
    return steps;
}

} // namespace pipesched::simai
