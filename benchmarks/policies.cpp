// Streaming throughput of the schedule policies: how many events per second each way of
// reading a schedule delivers, and how fast validate() checks one.
//
// Modes, each over every rank of one policy value (items = events, so items_per_second is
// events per second and the `time/event` counter its inverse):
//   BM_emit_count   pipesched::emit(pol, sink) into fold_sink (push, phase loops)
//   BM_emit_vector  pipesched::emit(pol, sink) into a std::vector<event> (push + store)
//   BM_cursor       for (event e : pipesched::events(pol, r)) into fold_sink (pull)
//   BM_at           pol.at(r, i) for every i into fold_sink (closed-form random access)
//   BM_validate     pipesched::validate(pol) (for an iteration: the iteration rules)
//   BM_simulate     pipesched::simulate(pol): validate + cost-model replay (for an iteration:
//                   the iteration rules and the replay with communication streams)
// and, against the order (issue 31, item 6), per schedule at p = 8, m = 64 and p = 32, m = 256
// (v = 2 where the schedule runs several chunks), items = the schedule's compute events in all
// three, so that the ratio of two items/s figures is the ratio of their times:
//   BM_ratio_order          emit(pol) into fold_sink: the compute order alone
//   BM_ratio_iteration      emit(iteration{pol}) into fold_sink, then validate(iteration{pol})
//   BM_ratio_replay         validate(pol), then simulate(pol)
//
// Benchmark names read <mode>/<policy>/p<ranks>_m<microbatches>_v<chunks>.
#include <benchmark/benchmark.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <pipesched/analysis/simulate.hpp>
#include <pipesched/analysis/simulate_iteration.hpp>
#include <pipesched/analysis/validate.hpp>
#include <pipesched/analysis/validate_iteration.hpp>
#include <pipesched/catalog.hpp>
#include <pipesched/iteration.hpp>
#include <pipesched/event.hpp>
#include <pipesched/policies/gpipe.hpp>
#include <pipesched/policies/interleaved_1f1b.hpp>
#include <pipesched/policies/looped_bfs.hpp>
#include <pipesched/policies/interleaved_zero_bubble.hpp>
#include <pipesched/policies/one_f_one_b.hpp>
#include <pipesched/policies/dualpipe_v.hpp>
#include <pipesched/policies/zb_h1.hpp>
#include <pipesched/policies/zb_h2.hpp>
#include <pipesched/policies/zbv.hpp>
#include <pipesched/policy.hpp>
#include <pipesched/shape.hpp>
#include <pipesched/sink.hpp>

namespace {

using pipesched::backward_kind;
using pipesched::event;

// The sink the throughput numbers are measured against. It must look at every byte of every
// event, otherwise the optimiser is entitled to delete the work being measured:
//   - a bare counter is useless: after inlining, `++count` over a loop of known trip count
//     folds to `count += n` and no event is ever built;
//   - a sum of the events is not much better: an event's 8 bytes, read as one integer, are
//     affine in the loop counter inside each phase (the microbatch sits in bits 32..47), and
//     clang's scalar evolution turns sums of affine sequences into closed forms;
//   - an XOR has no such closed form, so every event has to be materialised and folded in. It
//     is still one cheap, associative instruction, so the sink costs about as little as a sink
//     can and the numbers stay a measure of the generator (the compiler may vectorise the
//     fold, which is legitimate: each event is still produced).
// The fold is read through benchmark::DoNotOptimize after every emit so that it is live, and
// it is compared across modes after the timed loop, so all modes provably see the same events.
struct fold_sink {
    std::uint64_t count = 0;
    std::uint64_t fold = 0;

    constexpr void push(const event& e) noexcept {
        ++count;
        fold ^= std::bit_cast<std::uint64_t>(e);
    }
};

// Appends to a vector whose capacity was reserved once, outside the timed loop.
struct vector_sink {
    std::vector<event>* out;
    void push(const event& e) { out->push_back(e); }
};

// Hides the policy's fields from the optimiser at the top of every iteration, so the schedule
// is generated from run-time values (as when the shape comes from a config file) and no work
// can be hoisted out of the timed loop.
template <class P> void opaque(P& pol) {
    benchmark::DoNotOptimize(pol.shape.ranks);
    benchmark::DoNotOptimize(pol.shape.microbatches);
    benchmark::DoNotOptimize(pol.shape.chunks);
    if constexpr (requires { pol.group_size; })
        benchmark::DoNotOptimize(pol.group_size);
}

// The reference: every rank through the cursor, computed once outside any timed loop.
template <class P> fold_sink reference(const P& pol) {
    fold_sink s{};
    for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
        for (auto c = pol.cursor(r); !c.done(); c.advance())
            s.push(c.current());
    }
    return s;
}

template <class P> void finish(benchmark::State& state, const P& pol, const fold_sink& seen) {
    const fold_sink want = reference(pol);
    if (seen.count != want.count || seen.fold != want.fold) {
        state.SkipWithError("the events differ from the cursor's");
        return;
    }
    const auto events = static_cast<double>(want.count);
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(want.count));
    state.counters["events"] = events;
    // kIsIterationInvariantRate | kInvert: seconds per event, printed with an SI prefix (1.2n).
    state.counters["time/event"] = benchmark::Counter(
        events, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

template <class P> void bm_emit_count(benchmark::State& state, P pol) {
    fold_sink last{};
    for (auto _ : state) {
        opaque(pol);
        fold_sink sink{};
        pipesched::emit(pol, sink);
        benchmark::DoNotOptimize(sink.count);
        benchmark::DoNotOptimize(sink.fold);
        last = sink;
    }
    finish(state, pol, last);
}

template <class P> void bm_emit_vector(benchmark::State& state, P pol) {
    std::vector<event> out;
    out.reserve(pipesched::event_count(pol));
    for (auto _ : state) {
        opaque(pol);
        out.clear();
        pipesched::emit(pol, vector_sink{&out});
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    fold_sink last{};
    for (const event& e : out)
        last.push(e);
    finish(state, pol, last);
}

template <class P> void bm_cursor(benchmark::State& state, P pol) {
    fold_sink last{};
    for (auto _ : state) {
        opaque(pol);
        fold_sink sink{};
        for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
            for (event e : pipesched::events(pol, r))
                sink.push(e);
        }
        benchmark::DoNotOptimize(sink.count);
        benchmark::DoNotOptimize(sink.fold);
        last = sink;
    }
    finish(state, pol, last);
}

template <class P> void bm_at(benchmark::State& state, P pol) {
    fold_sink last{};
    for (auto _ : state) {
        opaque(pol);
        fold_sink sink{};
        for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
            const std::size_t n = pol.size(r);
            for (std::size_t i = 0; i < n; ++i)
                sink.push(pol.at(r, i));
        }
        benchmark::DoNotOptimize(sink.count);
        benchmark::DoNotOptimize(sink.fold);
        last = sink;
    }
    finish(state, pol, last);
}

template <class P> void bm_validate(benchmark::State& state, P pol) {
    bool valid = true;
    for (auto _ : state) {
        opaque(pol);
        const pipesched::verdict v = pipesched::validate(pol);
        bool ok = static_cast<bool>(v);
        benchmark::DoNotOptimize(ok);
        valid = valid && ok;
    }
    if (!valid) {
        state.SkipWithError("validate() rejected a library policy");
        return;
    }
    finish(state, pol, reference(pol));
}

// simulate() validates first, so this is the cost of validate + replay together.
template <class P> void bm_simulate(benchmark::State& state, P pol) {
    bool valid = true;
    for (auto _ : state) {
        opaque(pol);
        const auto result = pipesched::simulate(pol);
        double makespan = result.makespan;
        benchmark::DoNotOptimize(makespan);
        valid = valid && static_cast<bool>(result.check);
    }
    if (!valid) {
        state.SkipWithError("simulate() rejected a library policy");
        return;
    }
    finish(state, pol, reference(pol));
}

// The three ratio modes: items are P's compute events in each (finish() counts them).
template <class P> void bm_ratio_order(benchmark::State& state, P pol) { bm_emit_count(state, pol); }

template <class P> void bm_ratio_iteration(benchmark::State& state, P pol) {
    bool valid = true;
    for (auto _ : state) {
        opaque(pol);
        const pipesched::iteration it{pol};
        fold_sink sink{};
        pipesched::emit(it, sink);
        benchmark::DoNotOptimize(sink.fold);
        bool ok = static_cast<bool>(pipesched::validate(it));
        benchmark::DoNotOptimize(ok);
        valid = valid && ok;
    }
    if (!valid) {
        state.SkipWithError("validate(iteration) rejected a library policy");
        return;
    }
    finish(state, pol, reference(pol));
}

template <class P> void bm_ratio_replay(benchmark::State& state, P pol) {
    bool valid = true;
    for (auto _ : state) {
        opaque(pol);
        bool ok = static_cast<bool>(pipesched::validate(pol));
        const auto result = pipesched::simulate(pol);
        double makespan = result.makespan;
        benchmark::DoNotOptimize(makespan);
        valid = valid && ok && static_cast<bool>(result.check);
    }
    if (!valid) {
        state.SkipWithError("validate or simulate rejected a library policy");
        return;
    }
    finish(state, pol, reference(pol));
}

std::string shape_label(const pipesched::shape& s) {
    return "p" + std::to_string(s.ranks) + "_m" + std::to_string(s.microbatches) + "_v" +
           std::to_string(s.chunks);
}

template <class P>
void add(std::string_view mode, std::string_view label, const P& pol,
         void (*fn)(benchmark::State&, P)) {
    const std::string name =
        std::string{mode} + "/" + std::string{label} + "/" + shape_label(pol.shape);
    if (const pipesched::shape_check c = pol.check(); !c) {
        // A shape the policy rejects is a mistake in this file: make it visible in the table.
        benchmark::RegisterBenchmark(name.c_str(), [c](benchmark::State& state) {
            state.SkipWithError(c.message.data()); // the messages are string literals
        });
        return;
    }
    benchmark::RegisterBenchmark(name.c_str(),
                                 [pol, fn](benchmark::State& state) { fn(state, pol); });
}

// The four streaming modes of one policy value.
template <class P> void add_streaming(std::string_view label, const P& pol) {
    add("BM_emit_count", label, pol, &bm_emit_count<P>);
    add("BM_emit_vector", label, pol, &bm_emit_vector<P>);
    add("BM_cursor", label, pol, &bm_cursor<P>);
    if constexpr (pipesched::indexable_policy<P>) add("BM_at", label, pol, &bm_at<P>); // closed form only
}

// The large shapes are the target workloads (p = 64 ranks, m = 4096 microbatches: 0.5 M
// events single-chunk, 2 M with v = 4); the small ones show per-rank start-up costs.
constexpr pipesched::shape big_single{64, 4096, 1};
constexpr pipesched::shape big_multi{64, 4096, 4};
constexpr pipesched::shape small_single{8, 32, 1};
constexpr pipesched::shape small_multi{8, 32, 2};

[[maybe_unused]] const bool policy_benchmarks_registered = [] {
    for (const pipesched::shape s : {big_single, small_single}) {
        add_streaming("gpipe", pipesched::gpipe<>{s});
        add_streaming("1f1b", pipesched::one_f_one_b<>{s});
        add_streaming("1f1b_split", pipesched::one_f_one_b<backward_kind::split>{s});
    }
    for (const pipesched::shape s : {big_multi, small_multi}) {
        add_streaming("interleaved_1f1b", pipesched::interleaved_1f1b<>{s});
        add_streaming("looped_bfs", pipesched::looped_bfs<>{s});
        add_streaming("interleaved_zero_bubble", pipesched::interleaved_zero_bubble{s});
    }
    // V placement: v = 2 only; DualPipeV needs m >= 2p.
    for (const pipesched::shape s : {pipesched::shape{64, 4096, 2}, pipesched::shape{8, 32, 2}}) {
        add_streaming("zbv", pipesched::zbv{s});
        add_streaming("dualpipe_v", pipesched::dualpipe_v{s});
    }
    // The zero-bubble family always splits the backward (F, I and W per unit).
    for (const pipesched::shape s : {big_single, small_single}) {
        add_streaming("zb_h1", pipesched::zb_h1{s});
        add_streaming("zb_h2", pipesched::zb_h2{s});
    }
    using interleaved = pipesched::interleaved_1f1b<>;
    add("BM_validate", "interleaved_1f1b", interleaved{{32, 256, 2}}, &bm_validate<interleaved>);
    add("BM_validate", "interleaved_1f1b", interleaved{big_multi}, &bm_validate<interleaved>);
    add("BM_simulate", "interleaved_1f1b", interleaved{{32, 256, 2}}, &bm_simulate<interleaved>);
    add("BM_simulate", "interleaved_1f1b", interleaved{big_multi}, &bm_simulate<interleaved>);
    // A whole iteration (p2p, loss, grad sync, optimizer) around the same schedule: items are
    // the iteration's events, validated with the iteration rules and replayed with
    // communication streams.
    using iteration = pipesched::iteration<interleaved>;
    add("BM_validate", "iteration_interleaved", iteration{interleaved{{32, 256, 2}}}, &bm_validate<iteration>);
    add("BM_validate", "iteration_interleaved", iteration{interleaved{big_multi}}, &bm_validate<iteration>);
    add("BM_simulate", "iteration_interleaved", iteration{interleaved{{32, 256, 2}}}, &bm_simulate<iteration>);
    add("BM_simulate", "iteration_interleaved", iteration{interleaved{big_multi}}, &bm_simulate<iteration>);
    // Every catalogued schedule at the two shapes of the comparison with PyTorch.
    for (const pipesched::schedule_info& info : pipesched::schedules) {
        for (const pipesched::shape base : {pipesched::shape{8, 64, 1}, pipesched::shape{32, 256, 1}}) {
            pipesched::schedule_options o{};
            o.shape = {base.ranks, base.microbatches, info.multi_chunk ? 2u : 1u};
            pipesched::with_schedule(info.id, o, [&](const auto& pol) {
                using P = std::remove_cvref_t<decltype(pol)>;
                add("BM_ratio_order", pol.name, pol, &bm_ratio_order<P>);
                if (pipesched::iteration{pol}.check()) // DualPipe's iteration is refused (two pipelines)
                    add("BM_ratio_iteration", pol.name, pol, &bm_ratio_iteration<P>);
                add("BM_ratio_replay", pol.name, pol, &bm_ratio_replay<P>);
            });
        }
    }
    return true;
}();

} // namespace
