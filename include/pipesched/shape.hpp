// pipesched: shape of a pipeline (ranks, microbatches, chunks) and stage placement.
#pragma once

#include <cstdint>
#include <string_view>

namespace pipesched {

/// The limits come from the 8-byte event (rank and microbatch are 16-bit, chunk 8-bit).
inline constexpr std::uint32_t max_ranks = 0xFFFF;  // 0xFFFF itself is `no_peer`
inline constexpr std::uint32_t max_microbatches = 0x10000;
inline constexpr std::uint32_t max_chunks = 0x100;

/// {p, m, v}: pipeline ranks, microbatches per iteration (gradient-accumulation steps),
/// model chunks per rank (virtual pipeline size).
struct shape {
    std::uint32_t ranks = 1;
    std::uint32_t microbatches = 1;
    std::uint32_t chunks = 1;

    [[nodiscard]] constexpr std::uint32_t stages() const noexcept { return ranks * chunks; }
    friend constexpr bool operator==(const shape&, const shape&) = default;
};

/// How (rank, chunk) maps to a global stage 0..p*v-1.
enum class placement : std::uint8_t {
    loop,    ///< stage = chunk*p + rank (Megatron and PyTorch interleaved)
    v_shape, ///< v = 2: chunk 0 -> stage rank, chunk 1 -> stage 2p-1-rank (ZB-V, DualPipeV)
    /// v = 2, two pipelines run from opposite ends (DualPipe): chunk 0 of rank r is stage r of
    /// the first (stages 0..p-1, entered at rank 0), chunk 1 is stage 2p-1-r, i.e. stage p-1-r
    /// of the second (stages p..2p-1, entered at rank p-1). The ranks hold their stages as in
    /// v_shape; what differs is who feeds whom (timing_model.hpp's stage_line).
    bidirectional,
};

[[nodiscard]] constexpr std::string_view to_string(placement pl) noexcept {
    return pl == placement::loop ? "loop" : pl == placement::v_shape ? "v_shape" : "bidirectional";
}

[[nodiscard]] constexpr std::uint32_t stage_of(placement pl, std::uint32_t ranks,
                                               std::uint32_t rank, std::uint32_t chunk) noexcept {
    if (pl != placement::loop && chunk % 2 == 1) {
        return (chunk + 1) * ranks - 1 - rank;
    }
    return chunk * ranks + rank;
}

/// How many of a rank's chunks one copy of the model is split into on that rank: all of them,
/// but one for placement::bidirectional, whose two chunks are stages of two copies (a stage
/// holds the layers of a one-chunk stage, a rank twice the parameters). A cost given per
/// microbatch of one rank's layers is shared among this many chunks.
[[nodiscard]] constexpr std::uint32_t chunks_per_copy(placement pl, std::uint32_t chunks) noexcept {
    return pl == placement::bidirectional ? 1 : chunks;
}

struct rank_chunk {
    std::uint32_t rank;
    std::uint32_t chunk;
    friend constexpr bool operator==(const rank_chunk&, const rank_chunk&) = default;
};

/// Inverse of stage_of.
[[nodiscard]] constexpr rank_chunk locate_stage(placement pl, std::uint32_t ranks,
                                                std::uint32_t stage) noexcept {
    const std::uint32_t chunk = stage / ranks;
    const std::uint32_t offset = stage % ranks;
    if (pl != placement::loop && chunk % 2 == 1) {
        return {ranks - 1 - offset, chunk};
    }
    return {offset, chunk};
}

/// The rank of the stage after (next) or before the stage of (rank, chunk): the same as
/// locate_stage(pl, ranks, stage_of(pl, ranks, rank, chunk) +/- 1).rank, without its division
/// (the iteration cursor asks for every compute event). The caller checks that the stage
/// exists (not after the last, not before the first).
[[nodiscard]] constexpr std::uint32_t neighbour_rank(placement pl, std::uint32_t ranks, std::uint32_t rank,
                                                     std::uint32_t chunk, bool next) noexcept {
    if (pl == placement::loop) {
        if (next) return rank + 1 == ranks ? 0 : rank + 1;
        return rank == 0 ? ranks - 1 : rank - 1;
    }
    // The V runs down the ranks in even chunks and up in odd ones, and turns on the end rank;
    // the bidirectional placement's two pipelines run the same ways and do not meet (the
    // caller's check that the stage exists leaves out the end ranks' turn).
    const bool down = (chunk % 2 == 0) == next;
    if (down) return rank + 1 < ranks ? rank + 1 : rank;
    return rank > 0 ? rank - 1 : rank;
}

/// Result of checking a shape against a policy's constraints. `message` names the violated
/// constraint and is a string literal, so it is usable at compile time and needs no allocation.
struct shape_check {
    bool ok = true;
    std::string_view message{};

    constexpr explicit operator bool() const noexcept { return ok; }
};

inline constexpr shape_check shape_ok{};

/// Constraints every policy shares: non-empty and within the event's field widths.
[[nodiscard]] constexpr shape_check check_common(const shape& s) noexcept {
    if (s.ranks == 0) return {false, "ranks must be at least 1"};
    if (s.microbatches == 0) return {false, "microbatches must be at least 1"};
    if (s.chunks == 0) return {false, "chunks must be at least 1"};
    if (s.ranks > max_ranks) return {false, "ranks must be at most 65535"};
    if (s.microbatches > max_microbatches) return {false, "microbatches must be at most 65536"};
    if (s.chunks > max_chunks) return {false, "chunks must be at most 256"};
    return shape_ok;
}

/// The common constraints, then the one of a policy that runs a fixed number of chunks per rank:
/// chunks must be `required`, or `message` says why.
[[nodiscard]] constexpr shape_check check_chunks(const shape& s, std::uint32_t required,
                                                 std::string_view message) noexcept {
    if (const auto c = check_common(s); !c) return c;
    if (s.chunks != required) return {false, message};
    return shape_ok;
}

} // namespace pipesched
