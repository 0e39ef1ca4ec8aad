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
//                            tensor_of() for the op that moves or produces it
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
//                            both exist
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
// It sits on the ground floor beside the vocabulary (event.hpp, action.hpp) and includes nothing
// else of the library, so that every floor above, the generators of detail/ included, asks it
// instead of writing a rule again (CONTRIBUTING.md, "Layout").
//
// Everything here is a small constexpr function on values: the replays inline it into their
// loops, so a fast path that keeps its state in registers runs these same rules.
#pragma once

#include <cstdint>
#include <span>

#include "action.hpp"
#include "event.hpp"

namespace pipesched {

/// Duration of each compute op on one stage (one chunk of one microbatch).
struct stage_costs {
    double forward = 1.0;
    double backward = 2.0;       ///< a full backward (B)
    double backward_input = 1.0; ///< I of a split backward
    double backward_weight = 1.0; ///< W of a split backward
    /// An overlapped pair whose F runs on this stage ("F&B" in DualPipe's bubble formula);
    /// negative (the default): F + B of the two actions, no speed-up.
    double overlapped_forward_backward = -1.0;
    /// M_B: memory one unit's F allocates on this stage (the memory rule above).
    double activation_memory = 1.0;
    /// M_W: the part of it that W still needs after I; I releases M_B - M_W, W releases M_W.
    double weight_memory = 1.0;

    /// How long `kind` runs on this stage (0 for an op that is no computation).
    [[nodiscard]] constexpr double duration(op kind) const noexcept {
        switch (kind) {
        case op::forward: return forward;
        case op::backward: return backward;
        case op::backward_input: return backward_input;
        case op::backward_weight: return backward_weight;
        default: return 0.0;
        }
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
    /// set, else duration(f) + duration(b). A NaN is passed on, for the replay to refuse.
    [[nodiscard]] constexpr double overlapped(const action& f, const action& b) const noexcept {
        const double fused = of_stage(f.stage).overlapped_forward_backward;
        return fused >= 0.0 || fused != fused ? fused : duration(f) + duration(b);
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
[[nodiscard]] constexpr bool has_sender(tensor t, std::uint32_t s, std::uint32_t stages) noexcept {
    return t == tensor::activation ? s > 0 : s + 1 < stages;
}
[[nodiscard]] constexpr bool has_receiver(tensor t, std::uint32_t s, std::uint32_t stages) noexcept {
    return t == tensor::activation ? s + 1 < stages : s > 0;
}
/// The stage that sends stage s its tensor t; false if none does (the first stage's activation,
/// the last stage's gradient: the loss stage turns around).
[[nodiscard]] constexpr bool sender_stage(tensor t, std::uint32_t s, std::uint32_t stages,
                                          std::uint32_t& from) noexcept {
    if (!has_sender(t, s, stages)) return false;
    from = upstream_of(t, s);
    return true;
}
/// The stage that receives stage s's tensor t; false if none does.
[[nodiscard]] constexpr bool receiver_stage(tensor t, std::uint32_t s, std::uint32_t stages,
                                            std::uint32_t& to) noexcept {
    if (!has_receiver(t, s, stages)) return false;
    to = downstream_of(t, s);
    return true;
}

/// The stage on the other end of a send or receive by stage s: the receiver of the tensor a
/// send moves, the sender of the tensor a receive waits for; false if there is none (or `kind`
/// is no send or receive).
[[nodiscard]] constexpr bool p2p_peer_stage(op kind, std::uint32_t s, std::uint32_t stages,
                                            std::uint32_t& other) noexcept {
    const tensor t = tensor_moved(kind);
    if (kind == op::send_activation || kind == op::send_gradient) return receiver_stage(t, s, stages, other);
    if (kind == op::recv_activation || kind == op::recv_gradient) return sender_stage(t, s, stages, other);
    return false;
}

/// The last stage, where the loss runs between a microbatch's F and its B or I.
[[nodiscard]] constexpr bool is_loss_stage(std::uint32_t s, std::uint32_t stages) noexcept {
    return s + 1 == stages;
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
[[nodiscard]] constexpr bool cross_stage_input(const action& a, std::uint32_t stages,
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
[[nodiscard]] constexpr bool consumer_stage(const action& a, std::uint32_t stages,
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
