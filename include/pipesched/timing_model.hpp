// pipesched: the timing model, the one place where the rules of a pipeline are written.
//
// Every analysis of an order (validate, simulate, their iteration forms in validate_iteration
// and simulate_iteration, the replay engine in replay.hpp) and every builder that times an order
// (the auto-schedule search) asks the same questions of each action; this header answers them,
// and nothing else in the library writes the rules again:
//
//   tensors between stages   an F sends its activation to stage s+1, a B or I its input gradient
//                            to stage s-1: sender_stage(), receiver_stage() (and their
//                            unchecked forms upstream_of(), downstream_of()) for a tensor kind,
//                            tensor_of() for the op that moves or produces it; within a
//                            stage_line: one pipeline of all stages, or (placement::
//                            bidirectional, DualPipe) two pipelines of half the stages each,
//                            each running half the microbatches (runs_unit())
//   an action's input        cross_stage_input(): F of stage s needs F of s-1, B or I of stage s
//                            needs B or I of s+1 (written as B), same microbatch; the first
//                            stage's F and the last stage's B or I need none: the loss stage
//                            turns around (is_loss_stage()) on its own F, which ran before on
//                            the same rank; W needs only its own I, on the same rank
//   who reads a result       consumer_stage(): the stage that receives an F's or B's/I's result
//   when an input is there   input_ready(): the producer's end, plus the p2p latency when the
//                            producer sits on another rank; start_time(): an action starts when
//                            its input is there and its rank is free
//   costs                    stage_costs::duration() of F, B, I, W on one stage; cost_model
//                            per stage: duration() of an action
//   overlapped pairs         well_formed_pair(): an F, then a B or I of another unit; it runs as
//                            one computation of cost_model::overlapped(F, B) once the inputs of
//                            both exist; with expert-parallel all-to-all in the costs, that is
//                            overlapped_pair_time(): the F's and the B's sub-phases interleaved
//                            so that each all-to-all runs under the other chunk's compute
//                            (DeepSeek-V3's DualPipe, Megatron-LM's combined 1F1B; docs/moe.md)
//   all-to-all               stage_costs::all_to_all(): the expert-parallel dispatch and combine
//                            inside an F, B or I (none in a W); exposed_all_to_all(): what
//                            they add to a chunk alone or to a pair beyond its compute
//   memory                   stage_costs::memory_change(): F adds M_B, I releases M_B - M_W,
//                            W releases M_W, a full B releases M_B (Qi et al. 2024, section
//                            3.1); cost_model::memory_change() of an action; the search's
//                            problem (search/problem.hpp) keeps one stage_costs per stage and
//                            calls the same; activation_change() / activation_counter: the
//                            same rule in chunk activations (M_B = M_W = 1)
//   blocking receives        a receive waits for the send of its tensor, which the producing
//                            stage (sender_stage() of the receiving one) posts after its compute;
//                            sends never block (PyTorch's and Megatron's batched isend/irecv)
//   the rank clock           basic_rank_clock / rank_clock: when a rank is free, its first start,
//                            its memory and peak; the one clock of simulate() and the search
//   usable numbers           usable_cost(): finite and >= 0; finite_time()
//
// It sits on the ground floor beside the vocabulary (event.hpp, action.hpp, shape.hpp) and
// includes nothing else of the library, so that every floor above, the generators of detail/
// included, asks it instead of writing a rule again (CONTRIBUTING.md, "Layout").
//
// Everything here is a small constexpr function on values: the replays inline it into their
// loops, so a fast path that keeps its state in registers runs these same rules.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "action.hpp"
#include "event.hpp"
#include "shape.hpp"

namespace pipesched {

/// Duration of each compute op on one stage (one chunk of one microbatch): its compute, plus
/// the expert-parallel all-to-all of the stage's MoE layers when there are any.
struct stage_costs {
    double forward = 1.0;        ///< compute of an F (without its all-to-all)
    double backward = 2.0;       ///< compute of a full backward (B)
    double backward_input = 1.0; ///< compute of the I of a split backward
    double backward_weight = 1.0; ///< W of a split backward (no all-to-all: weights stay local)
    /// An overlapped pair whose F runs on this stage ("F&B" in DualPipe's bubble formula);
    /// negative (the default): F + B of the two actions, no speed-up.
    double overlapped_forward_backward = -1.0;
    /// M_B: memory one unit's F allocates on this stage (the memory rule above).
    double activation_memory = 1.0;
    /// M_W: the part of it that W still needs after I; I releases M_B - M_W, W releases M_W.
    double weight_memory = 1.0;

    // Expert-parallel all-to-all inside a chunk (docs/moe.md): totals over the stage's MoE
    // layers, in the unit of the compute times. All 0 (the default): a dense stage, and every
    // number is what it was without them. Totals, not per layer: with the layers of a stage
    // alike, the pair model below is the same for one layer of the totals as for L layers of
    // a share 1/L each, run back to back (every time in it scales by 1/L).
    double forward_dispatch = 0.0;  ///< the F's dispatch (tokens to their experts)
    double forward_combine = 0.0;   ///< the F's combine (expert outputs back)
    double backward_dispatch = 0.0; ///< the gradient of the dispatch, in a B or an I
    double backward_combine = 0.0;  ///< the gradient of the combine, in a B or an I
    /// Share of a chunk's compute before its dispatch (attention and router; the rest, the
    /// experts' MLP, runs between dispatch and combine), in [0, 1]; used by the pair model.
    double attention_share = 0.5;
    /// Factor (>= 1) on the compute of an overlapped pair that hides all-to-all: the SMs the
    /// communication kernels take from the computation (DeepSeek-V3 report, section 3.2.2: 20
    /// of the H800's 132 SMs). 1: no contention.
    double overlap_slowdown = 1.0;

    /// Compute of `kind` on this stage, without all-to-all (0 for an op that is no computation).
    [[nodiscard]] constexpr double compute(op kind) const noexcept {
        switch (kind) {
        case op::forward: return forward;
        case op::backward: return backward;
        case op::backward_input: return backward_input;
        case op::backward_weight: return backward_weight;
        default: return 0.0;
        }
    }

    /// Whether any all-to-all is given (a NaN counts: the replay then refuses it).
    [[nodiscard]] constexpr bool has_all_to_all() const noexcept {
        return forward_dispatch != 0.0 || forward_combine != 0.0 || backward_dispatch != 0.0 ||
               backward_combine != 0.0;
    }

    /// The all-to-all of `kind` run alone: dispatch + combine of an F, of a B or I; 0 for a W.
    /// NaN when a part is negative or not finite, so that the replay refuses the action.
    [[nodiscard]] constexpr double all_to_all(op kind) const noexcept {
        const bool fwd = kind == op::forward;
        if (!fwd && kind != op::backward && kind != op::backward_input) return 0.0;
        const double dispatch = fwd ? forward_dispatch : backward_dispatch;
        const double combine = fwd ? forward_combine : backward_combine;
        const auto usable = [](double x) { return x >= 0.0 && x <= 1.7976931348623157e308; };
        if (!usable(dispatch) || !usable(combine)) return std::numeric_limits<double>::quiet_NaN();
        return dispatch + combine;
    }

    /// How long `kind` runs alone on this stage: compute + all-to-all, one after the other (0
    /// for an op that is no computation). Without all-to-all, exactly the compute.
    [[nodiscard]] constexpr double duration(op kind) const noexcept {
        const double c = compute(kind);
        if (!has_all_to_all()) return c;
        const double a = all_to_all(kind);
        // A NaN is returned as it is: arithmetic on it is no constant expression for clang.
        if (a != a) return a;
        if (c != c) return c;
        return c + a;
    }

    /// Change of the rank's memory when `kind` runs on this stage: the memory rule above, the
    /// one statement of it that cost_model, the chunk-activation count and the auto-schedule
    /// search all call.
    [[nodiscard]] constexpr double memory_change(op kind) const noexcept {
        switch (kind) {
        case op::forward: return activation_memory;
        case op::backward: return -activation_memory;
        case op::backward_input: return weight_memory - activation_memory;
        case op::backward_weight: return -weight_memory;
        default: return 0.0;
        }
    }
};

namespace detail {

/// The pair model (docs/moe.md): an F on stage costs `f` and a backward `b_kind` (B or I) on
/// stage costs `b` run as one computation whose sub-phases interleave on two resources, the
/// compute stream and the expert-parallel link (one all-to-all at a time), in the order of
/// DeepSeek-V3's DualPipe (report, figure 4) and Megatron-LM's combined 1F1B
/// (TransformerLayerSchedulePlan.run in megatron/core/models/common/model_chunk_schedule_plan.py):
///     compute: attention F | MLP B    | MLP F      | attention B
///     link:    combine B   | dispatch F | dispatch B | combine F
/// each sub-phase starting when its resource is free and its own chunk's previous sub-phase has
/// ended (F: attention, dispatch, MLP, combine; B: combine, MLP, dispatch, attention). Compute
/// is split by the F's stage's attention_share and slowed by its overlap_slowdown. Returns
/// when the last sub-phase ends; NaN if a time, the share or the factor is not usable.
[[nodiscard]] constexpr double overlapped_pair_time(const stage_costs& f, const stage_costs& b,
                                                    op b_kind) noexcept {
    const auto usable = [](double x) { return x >= 0.0 && x <= 1.7976931348623157e308; };
    const double share = f.attention_share;
    const double slow = f.overlap_slowdown;
    const double cf = f.compute(op::forward);
    const double cb = b.compute(b_kind);
    const double df = f.forward_dispatch, xf = f.forward_combine; // x: combine
    const double db = b.backward_dispatch, xb = b.backward_combine;
    if (!(usable(cf) && usable(cb) && usable(df) && usable(xf) && usable(db) && usable(xb) && share >= 0.0 &&
          share <= 1.0 && slow >= 1.0 && usable(slow))) {
        return std::numeric_limits<double>::quiet_NaN();
    }
    const auto later = [](double x, double y) { return x > y ? x : y; };
    const double attention_f = cf * share * slow, mlp_f = cf * (1.0 - share) * slow;
    const double attention_b = cb * share * slow, mlp_b = cb * (1.0 - share) * slow;
    const double combine_b_end = xb;                                   // link, from 0
    const double attention_f_end = attention_f;                        // compute, from 0
    const double mlp_b_end = later(attention_f_end, combine_b_end) + mlp_b;
    const double dispatch_f_end = later(combine_b_end, attention_f_end) + df;
    const double mlp_f_end = later(mlp_b_end, dispatch_f_end) + mlp_f;
    const double dispatch_b_end = later(dispatch_f_end, mlp_b_end) + db;
    const double attention_b_end = later(mlp_f_end, dispatch_b_end) + attention_b;
    const double combine_f_end = later(dispatch_b_end, mlp_f_end) + xf;
    return later(attention_b_end, combine_f_end);
}

} // namespace detail

struct cost_model {
    stage_costs uniform{};                ///< costs of every stage...
    std::span<const stage_costs> per_stage{}; ///< ...unless overridden here (index = stage)
    double p2p_latency = 0.0;             ///< added to every cross-rank dependency
    bool fill_with_weight = false;        ///< run a ready W instead of idling

    [[nodiscard]] constexpr const stage_costs& of_stage(std::uint32_t stage) const noexcept {
        return stage < per_stage.size() ? per_stage[stage] : uniform;
    }

    [[nodiscard]] constexpr double duration(const action& a) const noexcept { return of_stage(a.stage).duration(a.kind); }

    /// Change of the rank's memory when `a` runs (the memory rule above).
    [[nodiscard]] constexpr double memory_change(const action& a) const noexcept {
        return of_stage(a.stage).memory_change(a.kind);
    }

    /// Duration of an overlapped pair: the F's stage's overlapped_forward_backward if it is
    /// set (the user's number overrides any model); else, when either stage has all-to-all,
    /// the pair model (detail::overlapped_pair_time); else duration(f) + duration(b), no
    /// speed-up. A NaN is passed on, for the replay to refuse.
    [[nodiscard]] constexpr double overlapped(const action& f, const action& b) const noexcept {
        const stage_costs& sf = of_stage(f.stage);
        const double fused = sf.overlapped_forward_backward;
        if (fused >= 0.0 || fused != fused) return fused;
        const stage_costs& sb = of_stage(b.stage);
        if (!sf.has_all_to_all() && !sb.has_all_to_all()) return duration(f) + duration(b);
        return detail::overlapped_pair_time(sf, sb, b.kind);
    }

    /// Whether any stage's costs hold all-to-all (simulate then reports what is exposed).
    [[nodiscard]] constexpr bool has_all_to_all() const noexcept {
        if (uniform.has_all_to_all()) return true;
        for (const stage_costs& c : per_stage)
            if (c.has_all_to_all()) return true;
        return false;
    }

    /// All-to-all time `a` adds when it runs alone: the whole of its all-to-all.
    [[nodiscard]] constexpr double exposed_all_to_all(const action& a) const noexcept {
        return of_stage(a.stage).all_to_all(a.kind);
    }
    /// All-to-all time the pair (f, b) adds beyond its compute: its duration less the compute
    /// of both at full speed (what is not hidden, and the slowdown's cost), at least 0.
    [[nodiscard]] constexpr double exposed_all_to_all(const action& f, const action& b) const noexcept {
        const double pair = overlapped(f, b);
        if (pair != pair) return pair; // no arithmetic on a NaN (clang's constant evaluation)
        const double extra = pair - of_stage(f.stage).compute(f.kind) - of_stage(b.stage).compute(b.kind);
        return extra > 0.0 ? extra : 0.0;
    }
};

namespace detail {

// ---------------------------------------------------------------------------------------------
// Tensors between stages.
// ---------------------------------------------------------------------------------------------

/// What crosses from one stage to its neighbour: the activation (forward, to s+1) or the input
/// gradient (backward, to s-1). The values are the in-flight result kinds of simulate.hpp.
enum class tensor : std::uint8_t { activation = 0, gradient = 1 };

/// The tensor a compute op produces for another stage: the activation for F, the gradient for
/// B and I (meaningless for W).
[[nodiscard]] constexpr tensor tensor_of(op kind) noexcept {
    return kind == op::forward ? tensor::activation : tensor::gradient;
}
/// The tensor a send or receive moves.
[[nodiscard]] constexpr tensor tensor_moved(op kind) noexcept {
    return kind == op::send_activation || kind == op::recv_activation ? tensor::activation : tensor::gradient;
}

/// The stages of a schedule and which of them are joined. Every placement but one joins them
/// into one pipeline 0..S-1, entered at stage 0, its loss on stage S-1, every microbatch on
/// every stage. placement::bidirectional (DualPipe, DeepSeek-V3) runs two pipelines side by
/// side: stages [0, S/2) run the first half of the microbatches and stages [S/2, S) the second
/// half; no tensor crosses from one pipeline to the other, and each has its first stage and
/// its loss stage. Converts from a stage count (one pipeline), so that code which only ever
/// meets one pipeline passes the count as before.
struct stage_line {
    std::uint32_t count = 0; ///< stages
    std::uint32_t split = 0; ///< first stage of the second pipeline; count when there is one

    constexpr stage_line() = default;
    /// Implicit: a stage count is one pipeline of that many stages.
    constexpr stage_line(std::uint32_t stages) noexcept : count{stages}, split{stages} {}
    constexpr stage_line(std::uint32_t stages, std::uint32_t first_of_second) noexcept
        : count{stages}, split{first_of_second} {}

    /// The stages of `stages` placed by `pl`.
    [[nodiscard]] static constexpr stage_line of(placement pl, std::uint32_t stages) noexcept {
        return pl == placement::bidirectional ? stage_line{stages, stages / 2} : stage_line{stages};
    }
    [[nodiscard]] constexpr bool two_pipelines() const noexcept { return split != count; }
    friend constexpr bool operator==(const stage_line&, const stage_line&) = default;
};

/// Whether microbatch mb of m runs on stage s: always in one pipeline; with two, on the stages
/// of its half (the first m/2 microbatches on the first pipeline's stages, the rest on the
/// second's).
[[nodiscard]] constexpr bool runs_unit(stage_line line, std::uint32_t s, std::uint32_t mb,
                                       std::uint32_t m) noexcept {
    return !line.two_pipelines() || (s < line.split) == (mb < m / 2);
}

/// The stage that sends stage s its tensor t, unchecked: s-1 for the activation, s+1 for the
/// gradient. has_sender() says whether there is one.
[[nodiscard]] constexpr std::uint32_t upstream_of(tensor t, std::uint32_t s) noexcept {
    return t == tensor::activation ? s - 1 : s + 1;
}
/// The stage that receives stage s's tensor t, unchecked: s+1 for the activation, s-1 for the
/// gradient. has_receiver() says whether there is one.
[[nodiscard]] constexpr std::uint32_t downstream_of(tensor t, std::uint32_t s) noexcept {
    return t == tensor::activation ? s + 1 : s - 1;
}
/// Whether stage s is the first of its pipeline (no activation comes in) or the last (no
/// gradient comes in: the loss stage turns around).
[[nodiscard]] constexpr bool first_of_pipeline(std::uint32_t s, stage_line line) noexcept {
    return s == 0 || s == line.split;
}
[[nodiscard]] constexpr bool last_of_pipeline(std::uint32_t s, stage_line line) noexcept {
    return s + 1 >= line.count || s + 1 == line.split;
}
[[nodiscard]] constexpr bool has_sender(tensor t, std::uint32_t s, stage_line stages) noexcept {
    return t == tensor::activation ? !first_of_pipeline(s, stages) : !last_of_pipeline(s, stages);
}
[[nodiscard]] constexpr bool has_receiver(tensor t, std::uint32_t s, stage_line stages) noexcept {
    return t == tensor::activation ? !last_of_pipeline(s, stages) : !first_of_pipeline(s, stages);
}
/// The stage that sends stage s its tensor t; false if none does (the first stage's activation,
/// the last stage's gradient: the loss stage turns around).
[[nodiscard]] constexpr bool sender_stage(tensor t, std::uint32_t s, stage_line stages,
                                          std::uint32_t& from) noexcept {
    if (!has_sender(t, s, stages)) return false;
    from = upstream_of(t, s);
    return true;
}
/// The stage that receives stage s's tensor t; false if none does.
[[nodiscard]] constexpr bool receiver_stage(tensor t, std::uint32_t s, stage_line stages,
                                            std::uint32_t& to) noexcept {
    if (!has_receiver(t, s, stages)) return false;
    to = downstream_of(t, s);
    return true;
}

/// The stage on the other end of a send or receive by stage s: the receiver of the tensor a
/// send moves, the sender of the tensor a receive waits for; false if there is none (or `kind`
/// is no send or receive).
[[nodiscard]] constexpr bool p2p_peer_stage(op kind, std::uint32_t s, stage_line stages,
                                            std::uint32_t& other) noexcept {
    const tensor t = tensor_moved(kind);
    if (kind == op::send_activation || kind == op::send_gradient) return receiver_stage(t, s, stages, other);
    if (kind == op::recv_activation || kind == op::recv_gradient) return sender_stage(t, s, stages, other);
    return false;
}

/// The last stage (of its pipeline), where the loss runs between a microbatch's F and its B or I.
[[nodiscard]] constexpr bool is_loss_stage(std::uint32_t s, stage_line stages) noexcept {
    return s < stages.count && last_of_pipeline(s, stages);
}

/// B or I: the backward pass that produces the input gradient for the previous stage.
[[nodiscard]] constexpr bool produces_gradient(op kind) noexcept {
    return kind == op::backward || kind == op::backward_input;
}

// ---------------------------------------------------------------------------------------------
// An action's input and its reader.
// ---------------------------------------------------------------------------------------------

/// The action of another stage whose result `a` needs: F of stage s needs F of s-1, B or I of
/// stage s needs the B or I of s+1 (written as B); W, the first stage's F and the last stage's
/// backward need none (the last stage's B/I needs its own F, which ran before it on the same
/// rank). False if `a` needs nothing from another stage.
[[nodiscard]] constexpr bool cross_stage_input(const action& a, stage_line stages,
                                               action& input) noexcept {
    // One branch per tensor with the tensor a constant, so that each test folds to the single
    // compare it is (the form the replays' loops are fastest with).
    if (a.kind == op::forward) {
        if (!has_sender(tensor::activation, a.stage, stages)) return false;
        input = action{upstream_of(tensor::activation, a.stage), op::forward, a.microbatch};
        return true;
    }
    if (!produces_gradient(a.kind) || !has_sender(tensor::gradient, a.stage, stages)) return false;
    input = action{upstream_of(tensor::gradient, a.stage), op::backward, a.microbatch};
    return true;
}

/// The stage that reads the result of `a`: the next stage for F, the previous one for B or I.
/// False if nobody does (the last stage's F, the first stage's B or I, every W).
[[nodiscard]] constexpr bool consumer_stage(const action& a, stage_line stages,
                                            std::uint32_t& consumer) noexcept {
    if (a.kind == op::forward && has_receiver(tensor::activation, a.stage, stages)) {
        consumer = downstream_of(tensor::activation, a.stage);
        return true;
    }
    if (produces_gradient(a.kind) && has_receiver(tensor::gradient, a.stage, stages)) {
        consumer = downstream_of(tensor::gradient, a.stage);
        return true;
    }
    return false;
}

/// When an input produced at `produced` can be used on the consumer's rank: at once on the
/// producer's own rank, after the p2p latency from another.
[[nodiscard, gnu::always_inline]] constexpr double input_ready(double produced, bool same_rank,
                                                               double p2p_latency) noexcept {
    return same_rank ? produced : produced + p2p_latency;
}

/// An action starts when its input is there and its rank is free.
[[nodiscard, gnu::always_inline]] constexpr double start_time(double ready, double free_at) noexcept {
    return ready > free_at ? ready : free_at;
}

// ---------------------------------------------------------------------------------------------
// Overlapped pairs.
// ---------------------------------------------------------------------------------------------

/// The first action of an overlapped pair: an F, not flagged again when a marker opened the
/// pair.
[[nodiscard]] constexpr bool opens_pair(bool marker, const action& f) noexcept {
    return f.kind == op::forward && !(marker && f.overlapped_with_next);
}
/// The second action of the pair opened by `f`: a B or I of another unit, not flagged.
[[nodiscard]] constexpr bool closes_pair(const action& f, const action& b) noexcept {
    const bool same_unit = b.stage == f.stage && b.microbatch == f.microbatch;
    return produces_gradient(b.kind) && !same_unit && !b.overlapped_with_next;
}
/// An overlapped pair: an F (flagged, unless a marker opened the pair), then a B or I of
/// another unit, not flagged.
[[nodiscard]] constexpr bool well_formed_pair(bool marker, const action& f, const action& b) noexcept {
    return opens_pair(marker, f) && closes_pair(f, b);
}

// ---------------------------------------------------------------------------------------------
// Memory, in chunk activations.
// ---------------------------------------------------------------------------------------------

/// Change of a rank's live chunk activations when an op runs: an F allocates one, and it is
/// freed by a full B or, for a split backward, by the W (I frees nothing: the weight gradient
/// still needs the stored inputs; Qi et al., the accounting behind ZB-H1's peak of p). It is
/// stage_costs::memory_change() with M_B = M_W = 1.
[[nodiscard]] constexpr int activation_change(op kind) noexcept {
    constexpr stage_costs one_activation{.activation_memory = 1.0, .weight_memory = 1.0};
    return static_cast<int>(one_activation.memory_change(kind));
}

/// Running count of live activations and its peak, by activation_change().
struct activation_counter {
    std::int64_t alive = 0;
    std::int64_t peak = 0;
    constexpr void add(op kind) noexcept {
        alive += activation_change(kind);
        if (alive > peak) peak = alive;
    }
};

// ---------------------------------------------------------------------------------------------
// The rank clock.
// ---------------------------------------------------------------------------------------------

/// A rank's clock and memory while a replay runs it, the one clock of every replay (simulate()
/// and its fast loop, the auto-schedule search's clock): when the rank is free, its first start,
/// its memory by stage_costs::memory_change() and the peak of it; with Summary, also its busy
/// time and its live chunk activations (activation_change()), which simulate() reports and the
/// search, which replays millions of actions, does not need. run() is the one place an action
/// changes them: the rank is busy from `start` (start_time() of its input and free_at) to `end`.
template <bool Summary>
struct basic_rank_clock {
    double free_at = 0.0;
    double first_start = 0.0;
    double memory = 0.0;
    double peak_memory = 0.0;
    bool started = false;
    double busy = 0.0;                ///< Summary only
    activation_counter activations{}; ///< Summary only

    /// An action of `kind` runs from `start` to `end` and changes the memory by `memory_change`;
    /// `adds_busy` is false for the second action of an overlapped pair (the same computation).
    [[gnu::always_inline]] constexpr void run(op kind, double start, double end, double memory_change,
                                              bool adds_busy = true) noexcept {
        free_at = end;
        if constexpr (Summary) {
            if (adds_busy) busy += end - start;
        }
        if (!started) {
            first_start = start;
            started = true;
        }
        memory += memory_change;
        if (memory > peak_memory) peak_memory = memory;
        if constexpr (Summary) activations.add(kind);
    }
    /// The end of the rank's last action: a rank is free when its last action ends.
    [[nodiscard]] constexpr double last_end() const noexcept { return free_at; }
};

/// The replay's clock, with the summary's busy time and activations.
using rank_clock = basic_rank_clock<true>;

// ---------------------------------------------------------------------------------------------
// Usable numbers.
// ---------------------------------------------------------------------------------------------

/// True for a usable duration: finite and >= 0 (false for NaN, infinities, negatives).
[[nodiscard]] constexpr bool usable_cost(double x) noexcept {
    return x >= 0.0 && x <= 1.7976931348623157e308;
}
[[nodiscard]] constexpr bool finite_time(double x) noexcept {
    return x >= -1.7976931348623157e308 && x <= 1.7976931348623157e308;
}

} // namespace detail

} // namespace pipesched
