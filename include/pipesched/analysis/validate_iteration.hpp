// pipesched: the rules of one whole iteration (see iteration.hpp), on top of validate().
//
// validate(iteration<P>) and validate_events(lists, shape, placement) check, in order:
//   1. the compute actions alone, exactly as validate() does for a schedule (overlap_f_b
//      markers included, so that overlapped pairs are checked and replayed as pairs);
//   2. one pass per rank, in order:
//      - a send/recv names the rank of the neighbouring stage as its peer; a tensor is sent
//        after the compute that produces it and received before the compute that consumes it;
//      - loss runs on the last stage between F and B/I of its microbatch; recompute runs between
//        a unit's F and its B/I;
//      - a chunk's grad_sync follows all backward work (B, or W) of that chunk on the rank;
//      - the two events right after an overlap_f_b marker are the pair's compute events
//        (nothing in between: its receives come before the marker, its sends after the pair;
//        otherwise malformed_overlap);
//      - grad_norm and optimizer_step follow every grad_sync of the rank (otherwise the update
//        uses gradients that are not yet reduced: a stale update);
//   3. every send has exactly one receive and vice versa, and on each channel (sender, receiver,
//      activation or gradient) they pair up in the same order, as NCCL matches p2p messages;
//   4. a replay with blocking receives (a recv waits until its send has been posted; sends do
//      not block, like Megatron's batched isend/irecv) and grad_norm as a collective of all
//      pipeline ranks (Megatron reduces the norm over the model-parallel group) finishes;
//      otherwise the verdict is a deadlock naming the cycle.
// Linear in the number of events; per rank, sequence numbers for its two neighbours and a
// table for any other peer. When everything passes, which is the common case, steps 1, 2 and
// 4 share one walk over the events (each event is checked when the replay reaches it; step 1
// on the per-unit flags of step 2, without its own replay, which the iteration replay implies:
// run_one_replay() says why), then step 3 runs; on any error the steps run one after the other
// as listed, so the verdict is always the first error in this order.
//
// validate(iteration<P>) tries something cheaper first: the library placed every event but
// P's own, so when P's compute passes validate() and each channel pairs its sends and
// receives in the same order, all four steps pass (detail::valid_by_construction says why); it
// walks P's compute twice (validate(P)'s two passes, the first also counting each channel's
// sends and receives) instead of every event of the iteration. Anything else gets the checks
// above, which name the error.
// validate_events() has no such shortcut: events from outside can break any rule.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "../event.hpp"
#include "../action.hpp"
#include "../iteration.hpp"
#include "../policy.hpp"
#include "../shape.hpp"
#include "../sink.hpp"
#include "channel_order.hpp"
#include "iteration_validator.hpp"
#include "sources.hpp"
#include "validate.hpp"

namespace pipesched {

/// What validate(iteration) holds per (stage, microbatch) unit at most, in bytes: the iteration
/// checks' state of the unit and, when the one walk found an error and the steps run one after
/// the other, the compute projection's structural checks (the one walk does those on the
/// iteration's own flags). The shortcut for an iteration<P> (valid_by_construction) holds
/// less, and is gone before the full checks start: two sequence gaps and the structural byte.
/// simulate(iteration) holds these during its checks and, once they are gone, its replay's
/// (iteration_replay_bytes_per_unit, simulate_iteration.hpp).
inline constexpr std::size_t iteration_check_bytes_per_unit =
    sizeof(detail::iteration_unit_state) + structure_check_bytes_per_unit;
static_assert(2 * sizeof(std::uint32_t) + structure_check_bytes_per_unit <= iteration_check_bytes_per_unit);

/// Validates one whole iteration: the schedule's compute, then the iteration rules above.
template <schedule_policy P>
[[nodiscard]] constexpr verdict validate(const iteration<P>& it) {
    if (const shape_check c = it.check(); !c) {
        verdict v{};
        v.code = verdict_code::invalid_shape;
        v.shape_message = c.message;
        return v;
    }
    if (detail::valid_by_construction(it)) return verdict{};
    const detail::policy_events<iteration<P>> src{it};
    return detail::iteration_validator<detail::policy_events<iteration<P>>>{src}.run();
}

/// Validates per-rank event lists (compute, p2p and iteration ops) against a shape and placement.
[[nodiscard]] constexpr verdict validate_events(std::span<const std::vector<event>> per_rank,
                                                shape dims, placement layout) {
    if (const shape_check c = check_common(dims); !c) {
        verdict v{};
        v.code = verdict_code::invalid_shape;
        v.shape_message = c.message;
        return v;
    }
    const event_lists src{per_rank, dims, layout};
    return detail::iteration_validator<event_lists>{src}.run();
}

} // namespace pipesched
