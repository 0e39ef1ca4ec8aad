// Instructions per event of the generator engine, for callgrind (load-independent, unlike the
// wall-clock benchmarks on a shared machine). One run generates one schedule one way:
//   engine_probe <schedule> <emit|emitx|cursor|none>
// emit folds each event into an order-dependent hash (no closed form, no vectorisation), emitx
// into the XOR fold of benchmarks/policies.cpp, cursor pulls every rank through events(), none
// generates nothing. Instructions per event = (Ir of a mode - Ir of none) / events, with Ir the
// program total of `valgrind --tool=callgrind` (benchmarks/README.md, "One generator engine").
// The difference of whole runs, not --toggle-collect on the generating function: g++ moves
// parts of it into .cold clones that the toggle does not follow.
#include <pipesched/policies/dualpipe_v.hpp>
#include <pipesched/policies/gpipe.hpp>
#include <pipesched/policies/interleaved_1f1b.hpp>
#include <pipesched/policies/looped_bfs.hpp>
#include <pipesched/policies/one_f_one_b.hpp>
#include <pipesched/policies/zb_h2.hpp>
#include <pipesched/policies/zbv.hpp>
#include <pipesched/policy.hpp>
#include <pipesched/sink.hpp>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace {

namespace ps = pipesched;

struct hash_sink {
    std::uint64_t acc = 0;
    void push(const ps::event& e) noexcept { acc = std::rotl(acc, 5) ^ std::bit_cast<std::uint64_t>(e); }
};
struct xor_sink {
    std::uint64_t count = 0;
    std::uint64_t fold = 0;
    void push(const ps::event& e) noexcept {
        ++count;
        fold ^= std::bit_cast<std::uint64_t>(e);
    }
};

template <class P>
[[gnu::noinline]] std::uint64_t run_emit(const P& pol) {
    hash_sink s;
    ps::emit(pol, s);
    return s.acc;
}
template <class P>
[[gnu::noinline]] std::uint64_t run_emitx(const P& pol) {
    xor_sink s;
    ps::emit(pol, s);
    return s.fold + s.count;
}
template <class P>
[[gnu::noinline]] std::uint64_t run_cursor(const P& pol) {
    std::uint64_t acc = 0;
    for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
        for (ps::event e : ps::events(pol, r)) acc = std::rotl(acc, 5) ^ std::bit_cast<std::uint64_t>(e);
    }
    return acc;
}

template <class P>
int run(P pol, std::string_view mode) {
    // The shape is a run-time value, as from a config file: otherwise the optimiser may
    // generate a whole schedule at compile time and fold the hash into a constant.
    asm volatile("" : "+m"(pol));
    if (mode != "emit" && mode != "emitx" && mode != "cursor" && mode != "none") {
        std::fprintf(stderr, "unknown mode (emit, emitx, cursor, none)\n");
        return 2;
    }
    const std::uint64_t hash = mode == "emit"     ? run_emit(pol)
                               : mode == "emitx"  ? run_emitx(pol)
                               : mode == "cursor" ? run_cursor(pol)
                                                  : 0;
    // The hash is printed so that runs of two builds can be compared event for event.
    std::printf("events %zu\nhash %llu\n", ps::event_count(pol), static_cast<unsigned long long>(hash));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: engine_probe <schedule> <emit|emitx|cursor|none>\n");
        return 2;
    }
    const std::string_view name = argv[1];
    const std::string_view mode = argv[2];
    if (name == "gpipe") return run(ps::gpipe<>{{.ranks = 16, .microbatches = 256}}, mode);
    if (name == "1f1b") return run(ps::one_f_one_b<>{{.ranks = 16, .microbatches = 256}}, mode);
    if (name == "zb_h2") return run(ps::zb_h2{{.ranks = 16, .microbatches = 256}}, mode);
    if (name == "interleaved_1f1b") return run(ps::interleaved_1f1b<>{{.ranks = 16, .microbatches = 256, .chunks = 4}}, mode);
    if (name == "looped_bfs") return run(ps::looped_bfs<>{{.ranks = 16, .microbatches = 256, .chunks = 4}}, mode);
    if (name == "zbv") return run(ps::zbv{{.ranks = 16, .microbatches = 256, .chunks = 2}}, mode);
    if (name == "zbv_padded") return run(ps::zbv{{.ranks = 16, .microbatches = 8, .chunks = 2}}, mode);
    if (name == "dualpipe_v") return run(ps::dualpipe_v{{.ranks = 16, .microbatches = 256, .chunks = 2}}, mode);
    if (name == "gpipe_small") return run(ps::gpipe<>{{.ranks = 8, .microbatches = 32}}, mode);
    if (name == "interleaved_1f1b_small") return run(ps::interleaved_1f1b<>{{.ranks = 8, .microbatches = 32, .chunks = 2}}, mode);
    if (name == "zbv_small") return run(ps::zbv{{.ranks = 8, .microbatches = 32, .chunks = 2}}, mode);
    if (name == "dualpipe_v_small") return run(ps::dualpipe_v{{.ranks = 8, .microbatches = 32, .chunks = 2}}, mode);
    std::fprintf(stderr, "unknown schedule\n");
    return 2;
}
