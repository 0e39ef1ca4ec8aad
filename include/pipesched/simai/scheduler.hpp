// pipesched: a pipeline scheduler SimAI can call (aliyun/SimAI issue #283 asks for one).
//
// SimAI's Workload sweeps the rows of an AICB workload once: forward over rows 0..n-1, backward
// over n-1..0. That is GPipe's order on one stage, with the loss and optimizer rows in the
// forward sweep and the gradient synchronisation last (order.hpp). `step_scheduler` gives
// SimAI the corrected order instead: for a parsed workload and a schedule policy it yields, per
// pipeline rank, the SimAI steps of one training iteration in the order
// `pipesched::iteration<policy>` runs them:
//
//   F of microbatch k   the rows of AICB's k-th microbatch block (of the rank's chunk), in order:
//                       forward compute, then the forward collective (blocking)
//   B of microbatch k   the same rows in reverse: input-grad compute, input-grad collective
//                       (blocking), weight-grad compute, weight-grad collective (non-blocking)
//   I / W               the input-grad / weight-grad half of B
//   recompute           the forward steps again (activation checkpointing)
//   recv / send         one p2p step of pp_comm bytes with the peer rank (recv blocking)
//   loss                the cross_entropy* rows, once per iteration, with the last
//                       microbatch's loss (AICB writes them once for all microbatches)
//   grad_sync           the iteration-level rows' collectives other than all-gathers (reduce-
//                       scatter, layernorm and embedding all-reduces, expert gradients), in
//                       row order, non-blocking as SimAI issues weight-grad collectives
//   optimizer_step      first waits for every outstanding collective (`drain_before`), then
//                       the iteration-level computes (grad_param_compute) and the optimizer*
//                       rows
//   param_gather        the iteration-level all-gathers (distributed optimizer), when any
//
// With v chunks per rank (interleaved, V schedules) the rank's rows of a microbatch block are
// split into v contiguous parts, one per chunk. Columns SimAI does not act on (0-ns computes,
// NONE collectives) are left out, as in SimAI's pass; forward collectives of 1..4095 bytes are
// padded to 4096 as SimAI does. Every row's every column appears exactly once per rank over the
// iteration (the loss rows only on the last stage), the same work as SimAI's pass, in another
// order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../detail/enum_table.hpp"
#include "../iteration.hpp"
#include "parse.hpp" // for its users, who parse workloads (it came with this header before the split)
#include "structure.hpp"
#include "workload.hpp"

namespace pipesched::simai {

enum class scheduled_kind : std::uint8_t { compute, collective, send, recv };

inline constexpr auto scheduled_kind_names = pipesched::detail::enum_table<scheduled_kind::recv>(
    {{scheduled_kind::compute, "compute"}, {scheduled_kind::collective, "collective"},
     {scheduled_kind::send, "send"}, {scheduled_kind::recv, "recv"}});

[[nodiscard]] constexpr std::string_view to_string(scheduled_kind k) noexcept { return pipesched::detail::name_in(scheduled_kind_names, k); }

/// One step for SimAI's Workload to execute.
struct scheduled_step {
    scheduled_kind what = scheduled_kind::compute;
    std::uint32_t rank = 0;       ///< pipeline rank (stage of the AICB file)
    event source{};               ///< the pipesched event this step belongs to
    std::size_t row = 0;          ///< workload row (compute / collective)
    phase column = phase::forward;
    std::uint32_t microbatch = 0;
    std::uint64_t compute_ns = 0;       ///< compute steps
    collective kind = collective::none; ///< collective steps
    comm_group group = comm_group::none;
    std::uint64_t bytes = 0;   ///< collectives (after SimAI's 4096 padding) and p2p
    bool blocking = false;     ///< wait for completion before the next step
    bool drain_before = false; ///< wait for every outstanding collective before this step
    std::uint32_t peer = 0;    ///< send / recv: the other rank

    friend bool operator==(const scheduled_step&, const scheduled_step&) = default;
};

/// The corrected order of `w`'s rows under policy P, one cursor per pipeline rank.
template <schedule_policy P>
class step_scheduler {
public:
    /// pp and ga of the policy's shape must equal the workload's; check error() before use.
    step_scheduler(const workload& w, const P& policy, iteration_options options = {})
        : w_{&w}, layout_{analyse(w)}, it_{policy, with_param_gather(w, options)} {
        const shape dims = policy.shape;
        if (!layout_.ga_unrolled()) {
            error_ = "the workload's microbatch rows do not split into ga = " + std::to_string(w.header.ga) +
                     " blocks, so its rows cannot be mapped onto microbatches";
        } else if (dims.ranks != w.header.pp || dims.microbatches != w.header.ga) {
            error_ = "the policy's shape (" + std::to_string(dims.ranks) + " ranks, " +
                     std::to_string(dims.microbatches) + " microbatches) does not match the workload's pp " +
                     std::to_string(w.header.pp) + " and ga " + std::to_string(w.header.ga);
        } else if (const shape_check c = it_.check(); !c) { // the policy's, or an iteration not modelled
            error_ = std::string("the policy rejects the shape: ") + std::string(c.message);
        } else if (dims.chunks > layout_.period) {
            error_ = "more chunks per rank than rows in a microbatch block";
        }
        pp_bytes_ = w.header.pp_comm ? static_cast<std::uint64_t>(*w.header.pp_comm) : 0;
    }

    [[nodiscard]] const std::optional<std::string>& error() const noexcept { return error_; }
    [[nodiscard]] const structure& layout() const noexcept { return layout_; }
    [[nodiscard]] const iteration<P>& schedule() const noexcept { return it_; }

    class cursor_type {
    public:
        cursor_type(const step_scheduler& s, std::uint32_t rank) : s_{&s}, inner_{s.it_.cursor(rank)}, rank_{rank} {
            fill();
        }
        [[nodiscard]] bool done() const noexcept { return next_ == steps_.size(); }
        [[nodiscard]] const scheduled_step& current() const noexcept { return steps_[next_]; }
        void advance() {
            if (++next_ == steps_.size()) fill();
        }

    private:
        /// Expands pipesched events until one yields SimAI steps (or the iteration ends).
        void fill() {
            steps_.clear();
            next_ = 0;
            while (steps_.empty() && !inner_.done()) {
                s_->expand(inner_.current(), rank_, steps_);
                inner_.advance();
            }
        }
        const step_scheduler* s_;
        typename iteration<P>::cursor_type inner_;
        std::uint32_t rank_;
        std::vector<scheduled_step> steps_;
        std::size_t next_ = 0;
    };

    /// Rank `rank`'s steps, pulled one at a time (requires !error()).
    [[nodiscard]] cursor_type cursor(std::uint32_t rank) const { return cursor_type{*this, rank}; }

private:
    static iteration_options with_param_gather(const workload& w, iteration_options o) {
        for (std::size_t i = 0; i < w.rows.size() && is_iteration_row_name(w.rows[i].name); ++i) {
            for (const phase p : {phase::forward, phase::input_grad, phase::weight_grad}) {
                if (w.rows[i].cost(p).kind == collective::allgather) o.param_gather = param_gather_mode::after_step;
            }
        }
        return o;
    }

    /// A step of `what` for event e on rank `rank`, from column p of workload row `row`.
    [[nodiscard]] static scheduled_step step_of(scheduled_kind what, const event& e, std::uint32_t rank,
                                                std::size_t row, phase p) noexcept {
        scheduled_step s{};
        s.what = what;
        s.rank = rank;
        s.source = e;
        s.row = row;
        s.column = p;
        s.microbatch = e.microbatch;
        return s;
    }
    void add_compute(std::vector<scheduled_step>& out, const event& e, std::uint32_t rank, std::size_t row,
                     phase p) const {
        const std::uint64_t ns = w_->rows[row].cost(p).compute_ns;
        if (ns == 0) return;
        scheduled_step s = step_of(scheduled_kind::compute, e, rank, row, p);
        s.compute_ns = ns;
        out.push_back(s);
    }
    void add_collective(std::vector<scheduled_step>& out, const event& e, std::uint32_t rank, std::size_t row,
                        phase p) const {
        const phase_cost& c = w_->rows[row].cost(p);
        if (c.kind == collective::none) return;
        scheduled_step s = step_of(scheduled_kind::collective, e, rank, row, p);
        s.kind = c.kind;
        s.group = c.group;
        s.bytes = p == phase::forward && c.bytes > 0 && c.bytes < 4096 ? 4096 : c.bytes;
        s.blocking = p != phase::weight_grad;
        out.push_back(s);
    }
    void forward_rows(std::vector<scheduled_step>& out, const event& e, std::uint32_t rank, std::size_t begin,
                      std::size_t end) const {
        for (std::size_t i = begin; i < end; ++i) {
            add_compute(out, e, rank, i, phase::forward);
            add_collective(out, e, rank, i, phase::forward);
        }
    }
    /// The rows of microbatch `mb`'s block that chunk `chunk` of a rank holds.
    [[nodiscard]] std::pair<std::size_t, std::size_t> chunk_rows(std::uint32_t mb, std::uint32_t chunk) const {
        const block& b = layout_.blocks[mb];
        const std::size_t len = b.end - b.begin;
        const std::size_t v = it_.shape.chunks;
        return {b.begin + chunk * len / v, b.begin + (chunk + 1) * len / v};
    }

    void expand(const event& e, std::uint32_t rank, std::vector<scheduled_step>& out) const {
        const auto [begin, end] = e.kind == op::forward || e.kind == op::backward || e.kind == op::backward_input ||
                                          e.kind == op::backward_weight || e.kind == op::recompute
                                      ? chunk_rows(e.microbatch, e.chunk)
                                      : std::pair<std::size_t, std::size_t>{0, 0};
        switch (e.kind) {
        case op::forward:
        case op::recompute: forward_rows(out, e, rank, begin, end); break;
        case op::backward:
        case op::backward_input:
        case op::backward_weight:
            for (std::size_t i = end; i-- > begin;) {
                if (e.kind != op::backward_weight) {
                    add_compute(out, e, rank, i, phase::input_grad);
                    add_collective(out, e, rank, i, phase::input_grad);
                }
                if (e.kind != op::backward_input) {
                    add_compute(out, e, rank, i, phase::weight_grad);
                    add_collective(out, e, rank, i, phase::weight_grad);
                }
            }
            break;
        case op::loss:
            if (e.microbatch + 1u == it_.shape.microbatches) {
                forward_rows(out, e, rank, layout_.loss_begin, layout_.loss_end);
            }
            break;
        case op::send_activation:
        case op::send_gradient:
        case op::recv_activation:
        case op::recv_gradient: {
            scheduled_step s{};
            const bool send = e.kind == op::send_activation || e.kind == op::send_gradient;
            s.what = send ? scheduled_kind::send : scheduled_kind::recv;
            s.rank = rank;
            s.source = e;
            s.microbatch = e.microbatch;
            s.column = e.kind == op::send_activation || e.kind == op::recv_activation ? phase::forward
                                                                                       : phase::input_grad;
            s.bytes = pp_bytes_;
            s.blocking = !send;
            s.peer = e.peer;
            out.push_back(s);
            break;
        }
        case op::grad_sync:
            if (e.chunk != 0) break; // the iteration-level rows describe the whole rank
            for (std::size_t i = 0; i < layout_.prefix_end; ++i) {
                for (const phase p : {phase::forward, phase::input_grad, phase::weight_grad}) {
                    if (w_->rows[i].cost(p).kind != collective::allgather) add_collective(out, e, rank, i, p);
                }
            }
            for (scheduled_step& s : out) s.blocking = false;
            break;
        case op::optimizer_step: {
            const std::size_t first = out.size();
            for (std::size_t i = 0; i < layout_.prefix_end; ++i) {
                for (const phase p : {phase::forward, phase::input_grad, phase::weight_grad}) add_compute(out, e, rank, i, p);
            }
            forward_rows(out, e, rank, layout_.optimizer_begin, layout_.optimizer_end);
            if (out.size() > first) out[first].drain_before = true;
            break;
        }
        case op::param_gather:
            for (std::size_t i = 0; i < layout_.prefix_end; ++i) {
                for (const phase p : {phase::forward, phase::input_grad, phase::weight_grad}) {
                    if (w_->rows[i].cost(p).kind == collective::allgather) add_collective(out, e, rank, i, p);
                }
            }
            break;
        default: break; // grad_norm (AICB writes no row for it), overlap markers
        }
    }

    const workload* w_;
    structure layout_;
    iteration<P> it_;
    std::uint64_t pp_bytes_ = 0;
    std::optional<std::string> error_;
};

} // namespace pipesched::simai
