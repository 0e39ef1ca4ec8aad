// pipesched: a simulated schedule as a Chrome trace-event JSON file, for Perfetto
// (ui.perfetto.dev) and chrome://tracing.
//
//   pipesched::chrome_trace_sink trace;
//   (void)pipesched::simulate(policy, costs, trace);
//   trace.write(std::cout, {.process_name = "1F1B p=4 m=8"});
//
// What the file holds:
//   - one process (`pid`, named by process_name metadata);
//   - per pipeline rank r a compute track, tid r, named "rank r"; ranks that run other ops get
//     a "rank r communication" track (tid ranks + r) for the p2p ops and a "rank r iteration"
//     track (tid 2*ranks + r) for everything else. thread_sort_index puts each rank's tracks
//     together: 3r, 3r+1, 3r+2. Communication has its own track because p2p overlaps compute.
//   - one complete event (ph "X") per record: ts and dur in microseconds (cost units times
//     microseconds_per_unit); name is PyTorch's action text (`0F1`, `3I2`) for F/B/I/W and
//     `<op> s<stage> mb<microbatch>` otherwise; cat is trace_category(op) (I is
//     "backward_input", never "communication"); args hold stage, chunk, microbatch and rank.
//   - one flow (ph "s" in the producer, ph "f" with bp "e" in the consumer, same id) per
//     cross-rank dependency: F of stage s feeds F of stage s+1, B or I of stage s feeds B or I
//     of stage s-1, drawn when the two stages run on different ranks. Flows are named
//     "activation" or "gradient", with cat "dependency", ids 1, 2, ... Each flow point sits
//     min(1 us, dur/2) inside its slice (just before the producer's end, just after the
//     consumer's start), because a point exactly on a slice boundary is ambiguous when the
//     next slice starts at the same instant; Perfetto draws the arrow from the producer's end to
//     the consumer's start either way.
// Stage owners and chunks are read off the records (see io/detail/timeline_layout.hpp).
//
// Output is deterministic: metadata, then complete events track by track in time order, then
// flows in the order of their consumers. Numbers and strings are written by io/json.hpp: the
// shortest decimal text that reads back to the same double (a non-finite time as null), strings
// JSON-escaped; the process name is copied as bytes, so it must be UTF-8.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../analysis/simulate.hpp"
#include "../timing_model.hpp"
#include "detail/timeline_layout.hpp"
#include "../event.hpp"
#include "../action.hpp"
#include "../stage_map.hpp"
#include "json.hpp"

namespace pipesched {

/// The `cat` of an op's trace event: F/B/I/W by name, p2p ops "communication", and
/// "iteration" for everything else (grad_sync, grad_norm, optimizer_step, param_gather, loss,
/// recompute).
[[nodiscard]] constexpr std::string_view trace_category(op o) noexcept {
    switch (o) {
    case op::forward: return "forward";
    case op::backward: return "backward";
    case op::backward_input: return "backward_input";
    case op::backward_weight: return "backward_weight";
    default: return is_p2p(o) ? "communication" : "iteration";
    }
}

/// The per-rank track an op is drawn on.
enum class trace_track : std::uint8_t { compute, communication, iteration };

[[nodiscard]] constexpr trace_track track_of(op o) noexcept {
    if (is_compute(o)) return trace_track::compute;
    return is_p2p(o) ? trace_track::communication : trace_track::iteration;
}

/// Thread id of a rank's track in a trace of `ranks` ranks: r, ranks + r, 2*ranks + r.
[[nodiscard]] constexpr std::uint64_t trace_tid(trace_track track, std::uint32_t rank,
                                                std::uint32_t ranks) noexcept {
    return std::uint64_t{static_cast<std::uint8_t>(track)} * ranks + rank;
}

struct trace_options {
    /// Microseconds per cost-model unit: the default shows F = 1 as 1 ms. Values that are not
    /// positive and finite fall back to the default.
    double microseconds_per_unit = 1000.0;
    std::string process_name = "pipesched";
    std::uint32_t pid = 1;
    bool flows = true; ///< draw the cross-rank dependencies
};

namespace detail {

// The JSON text itself is io/json.hpp's; these names stay for code written against them.
inline void append_json_string(std::string& out, std::string_view s) { json::append_string(out, s); }
inline void append_json_number(std::string& out, std::uint64_t n) { json::append_number(out, n); }
inline void append_json_number(std::string& out, double x) { json::append_number(out, x); }

/// `0F1` for compute ops, `grad_sync s3 mb0` for the rest.
[[nodiscard]] inline std::string trace_event_name(const action& a) {
    if (is_compute(a.kind)) return std::string{format_action(a).view()};
    std::string name{to_string(a.kind)};
    name += " s";
    name += std::to_string(a.stage);
    name += " mb";
    name += std::to_string(a.microbatch);
    return name;
}

/// The JSON text of a trace, shared by the batch writer and the stream: the events go into a
/// buffer that is handed to `out` (a callable taking a std::string_view) whenever it passes
/// 64 KiB, so memory does not grow with the trace.
template <class Out>
class trace_event_text {
public:
    trace_event_text(Out out, const trace_options& o)
        : out_{std::move(out)}, pid_{o.pid},
          scale_{std::isfinite(o.microseconds_per_unit) && o.microseconds_per_unit > 0.0
                     ? o.microseconds_per_unit
                     : trace_options{}.microseconds_per_unit} {
        buf_.reserve(flush_at + 512);
        buf_ += "{\"traceEvents\":[\n";
    }

    void metadata(std::string_view name, std::uint64_t thread, std::string_view arg,
                  const std::string* text, std::uint64_t number) {
        begin_event();
        buf_ += "\"name\":";
        append_json_string(buf_, name);
        buf_ += ",\"ph\":\"M\"";
        pid_tid(thread);
        buf_ += ",\"args\":{";
        append_json_string(buf_, arg);
        buf_ += ':';
        if (text != nullptr) append_json_string(buf_, *text);
        else append_json_number(buf_, number);
        buf_ += '}';
        end_event();
    }
    /// The name and sort position of one of a rank's tracks.
    void track_names(std::uint32_t rank, trace_track track, std::uint32_t ranks) {
        static constexpr std::array<std::string_view, 3> suffix{"", " communication", " iteration"};
        const auto k = static_cast<std::uint8_t>(track);
        const std::uint64_t thread = trace_tid(track, rank, ranks);
        const std::string name = "rank " + std::to_string(rank) + std::string{suffix[k]};
        metadata("thread_name", thread, "name", &name, 0);
        metadata("thread_sort_index", thread, "sort_index", nullptr, std::uint64_t{rank} * 3 + k);
    }
    void slice(const timed_action& t, std::uint32_t ranks, std::uint32_t chunk) {
        begin_event();
        buf_ += "\"name\":";
        append_json_string(buf_, trace_event_name(t.what));
        buf_ += ",\"cat\":";
        append_json_string(buf_, trace_category(t.what.kind));
        buf_ += ",\"ph\":\"X\"";
        field("ts");
        append_json_number(buf_, ts(t));
        field("dur");
        append_json_number(buf_, dur(t));
        pid_tid(trace_tid(track_of(t.what.kind), t.rank, ranks));
        buf_ += ",\"args\":{\"stage\":";
        append_json_number(buf_, std::uint64_t{t.what.stage});
        buf_ += ",\"chunk\":";
        append_json_number(buf_, std::uint64_t{chunk});
        buf_ += ",\"microbatch\":";
        append_json_number(buf_, std::uint64_t{t.what.microbatch});
        buf_ += ",\"rank\":";
        append_json_number(buf_, std::uint64_t{t.rank});
        buf_ += '}';
        end_event();
    }
    /// One end of a dependency arrow: inside the producer's slice near its end ("s"), or inside
    /// the consumer's near its start ("f").
    void flow_point(bool start, std::uint64_t id, const timed_action& t, bool gradient,
                    std::uint32_t ranks) {
        const double d = dur(t);
        const double inset = std::min(1.0, d > 0.0 ? d / 2 : 0.0);
        begin_event();
        buf_ += gradient ? "\"name\":\"gradient\"" : "\"name\":\"activation\"";
        buf_ += ",\"cat\":\"dependency\"";
        buf_ += start ? ",\"ph\":\"s\"" : ",\"ph\":\"f\",\"bp\":\"e\"";
        field("id");
        append_json_number(buf_, id);
        field("ts");
        append_json_number(buf_, start ? ts(t) + d - inset : ts(t) + inset);
        pid_tid(trace_tid(track_of(t.what.kind), t.rank, ranks));
        end_event();
    }
    /// Closes the JSON and hands out the rest of the text.
    void finish() {
        buf_ += "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"generator\":\"pipesched\","
                "\"microseconds_per_unit\":";
        append_json_number(buf_, scale_);
        buf_ += "}}\n";
        flush();
    }

private:
    static constexpr std::size_t flush_at = std::size_t{1} << 16;

    [[nodiscard]] double ts(const timed_action& t) const noexcept { return t.start * scale_; }
    [[nodiscard]] double dur(const timed_action& t) const noexcept { return (t.end - t.start) * scale_; }
    void flush() {
        out_(std::string_view{buf_});
        buf_.clear();
    }
    void begin_event() {
        if (!first_) buf_ += ",\n";
        first_ = false;
        buf_ += '{';
    }
    void end_event() {
        buf_ += '}';
        if (buf_.size() >= flush_at) flush();
    }
    void field(std::string_view key) {
        buf_ += ",\"";
        buf_ += key;
        buf_ += "\":";
    }
    void pid_tid(std::uint64_t thread) {
        field("pid");
        append_json_number(buf_, std::uint64_t{pid_});
        field("tid");
        append_json_number(buf_, thread);
    }

    Out out_;
    std::uint32_t pid_;
    double scale_;
    std::string buf_;
    bool first_ = true;
};

/// trace_event_text's output for a std::ostream.
struct ostream_out {
    std::ostream* os;
    void operator()(std::string_view text) const {
        os->write(text.data(), static_cast<std::streamsize>(text.size()));
    }
};

class chrome_trace_writer {
public:
    chrome_trace_writer(std::ostream& os, std::span<const timed_action> records, timeline_layout layout,
                        const trace_options& o)
        : records_{records}, options_{o}, layout_{std::move(layout)}, text_{ostream_out{&os}, o} {}

    void run() {
        std::vector<std::size_t> order = rank_time_order(records_);
        // Group each rank's records by track; stable, so time order holds within a track.
        std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
            return sort_index(records_[a]) < sort_index(records_[b]);
        });
        write_metadata();
        for (const std::size_t i : order) {
            const timed_action& t = records_[i];
            text_.slice(t, layout_.ranks, layout_.chunk_of(t.what.stage));
        }
        if (options_.flows) write_flows(order);
        text_.finish();
    }

private:
    [[nodiscard]] static std::uint64_t sort_index(std::uint32_t rank, trace_track track) noexcept {
        return std::uint64_t{rank} * 3 + static_cast<std::uint8_t>(track);
    }
    [[nodiscard]] static std::uint64_t sort_index(const timed_action& t) noexcept {
        return sort_index(t.rank, track_of(t.what.kind));
    }

    void write_metadata() {
        text_.metadata("process_name", 0, "name", &options_.process_name, 0);
        std::vector<std::uint8_t> used(std::size_t{layout_.ranks} * 3, 0);
        for (const timed_action& t : records_) used[sort_index(t)] = 1;
        for (std::uint32_t r = 0; r < layout_.ranks; ++r) {
            for (std::uint8_t k = 0; k < 3; ++k) {
                const auto track = static_cast<trace_track>(k);
                // Every rank gets a compute track, even an idle one.
                if (track != trace_track::compute && used[sort_index(r, track)] == 0) continue;
                text_.track_names(r, track, layout_.ranks);
            }
        }
    }

    void write_flows(std::span<const std::size_t> order) {
        const std::size_t m = layout_.microbatches;
        constexpr std::size_t none = static_cast<std::size_t>(-1);
        std::vector<std::size_t> forward(std::size_t{layout_.stages} * m, none);
        std::vector<std::size_t> backward(std::size_t{layout_.stages} * m, none);
        for (std::size_t i = 0; i < records_.size(); ++i) {
            const action& a = records_[i].what;
            const std::size_t unit = std::size_t{a.stage} * m + a.microbatch;
            if (a.kind == op::forward) forward[unit] = i;
            else if (a.kind == op::backward || a.kind == op::backward_input) backward[unit] = i;
        }
        std::uint64_t id = 0;
        for (const std::size_t i : order) {
            const timed_action& consumer = records_[i];
            const action& a = consumer.what;
            std::size_t producer = none;
            action input{}; // timing_model.hpp's rule: F of s-1 or B/I of s+1
            if (detail::cross_stage_input(a, layout_.stages, input)) {
                const std::size_t unit = std::size_t{input.stage} * m + a.microbatch;
                producer = input.kind == op::forward ? forward[unit] : backward[unit];
            }
            if (producer == none || records_[producer].rank == consumer.rank) continue;
            ++id;
            const bool gradient = a.kind != op::forward;
            text_.flow_point(true, id, records_[producer], gradient, layout_.ranks);
            text_.flow_point(false, id, consumer, gradient, layout_.ranks);
        }
    }

    std::span<const timed_action> records_;
    const trace_options& options_;
    timeline_layout layout_;
    trace_event_text<ostream_out> text_;
};

} // namespace detail

/// Writes the records of a simulation as Chrome trace-event JSON (see the top of this file).
inline void write_chrome_trace(std::ostream& os, std::span<const timed_action> records,
                               const trace_options& options = {}) {
    detail::chrome_trace_writer{os, records, detail::layout_of(records), options}.run();
}

/// The same with where each stage runs given: a simulation's `stages` (simulation::stages).
inline void write_chrome_trace(std::ostream& os, std::span<const timed_action> records,
                               const trace_options& options, const stage_map& stages) {
    detail::chrome_trace_writer{os, records, detail::layout_of(records, stages), options}.run();
}

/// The same, as a string.
[[nodiscard]] inline std::string chrome_trace(std::span<const timed_action> records,
                                              const trace_options& options = {}) {
    std::ostringstream os;
    write_chrome_trace(os, records, options);
    return std::move(os).str();
}

/// A timeline sink that keeps every record (amortised O(1) per push) for write_chrome_trace.
class chrome_trace_sink {
public:
    void push(const timed_action& t) { records_.push_back(t); }
    void reserve(std::size_t n) { records_.reserve(n); }
    void clear() noexcept { records_.clear(); }

    [[nodiscard]] std::span<const timed_action> records() const noexcept { return records_; }
    [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }

    void write(std::ostream& os, const trace_options& options = {}) const {
        write_chrome_trace(os, records_, options);
    }
    [[nodiscard]] std::string str(const trace_options& options = {}) const {
        return chrome_trace(records_, options);
    }

private:
    std::vector<timed_action> records_;
};

static_assert(timeline_sink<chrome_trace_sink>);

/// A timeline sink that writes the trace as records arrive, in memory independent of the
/// trace's length (a 64 KiB buffer and a few bytes per rank and stage): for traces too large
/// to keep, such as `pipesched simulate --format chrome` of a thousand ranks. `write` is any
/// callable taking a std::string_view, called with pieces of the JSON text in order; call
/// finish() once the simulation has run to close the JSON.
///
/// The file holds the same slices, tracks and metadata as write_chrome_trace's, in arrival
/// order rather than track by track (trace viewers sort by time themselves). Since stage owners
/// cannot be read off records not yet seen, they are given: by a placement and shape, or per
/// stage. A flow is written as its producer arrives (its "s" point) and its consumer arrives
/// (its "f" point), with an id computed from the producing unit, 2 * (stage * 65536 +
/// microbatch) + 1 for activations and + 2 for gradients, instead of consecutive numbers.
template <class Write>
class chrome_trace_stream {
public:
    /// A stage_owner entry for a stage that no rank runs.
    static constexpr std::uint32_t no_owner = stage_map::no_rank;

    /// Stages placed by a policy's placement and shape.
    chrome_trace_stream(Write write, placement layout, shape dims, const trace_options& options = {})
        : chrome_trace_stream(std::move(write), stage_map{layout, dims}, dims.ranks, options) {}

    /// Stage s runs on rank stage_owner[s] (no_owner: on none), for example as
    /// infer_placement() reads it from a CSV file; `ranks` tracks are drawn.
    chrome_trace_stream(Write write, std::vector<std::uint32_t> stage_owner, std::uint32_t ranks,
                        const trace_options& options = {})
        : chrome_trace_stream(std::move(write), stage_map{std::move(stage_owner), ranks}, ranks, options) {}

    /// Stages where `stages` puts them (for example stage_map::of_actions of a schedule read
    /// from CSV); `ranks` tracks are drawn.
    chrome_trace_stream(Write write, stage_map stages, std::uint32_t ranks, const trace_options& options = {})
        : text_{std::move(write), options}, flows_{options.flows}, stages_{std::move(stages)},
          used_(std::size_t{ranks} * 3, 0), ranks_{ranks} {
        text_.metadata("process_name", 0, "name", &options.process_name, 0);
        for (std::uint32_t r = 0; r < ranks_; ++r) text_.track_names(r, trace_track::compute, ranks_);
    }
    chrome_trace_stream(const chrome_trace_stream&) = delete;
    chrome_trace_stream& operator=(const chrome_trace_stream&) = delete;

    void push(const timed_action& t) {
        const trace_track track = track_of(t.what.kind);
        if (t.rank < ranks_ && track != trace_track::compute) {
            std::uint8_t& used = used_[std::size_t{t.rank} * 3 + static_cast<std::uint8_t>(track)];
            if (used == 0) text_.track_names(t.rank, track, ranks_);
            used = 1;
        }
        text_.slice(t, ranks_, stages_.chunk_of(t.what.stage));
        if (!flows_) return;
        const action& a = t.what;
        const bool gradient = detail::produces_gradient(a.kind);
        // As a producer: the stage that reads its result (timing_model.hpp's consumer_stage).
        std::uint32_t consumer = 0;
        if (detail::consumer_stage(a, stages_.stages(), consumer) && stages_.on_other_rank(consumer, t.rank)) {
            text_.flow_point(true, flow_id(a.stage, a.microbatch, gradient), t, gradient, ranks_);
        }
        // As a consumer: the stage that produced its input (cross_stage_input).
        action input{};
        if (detail::cross_stage_input(a, stages_.stages(), input) && stages_.on_other_rank(input.stage, t.rank)) {
            text_.flow_point(false, flow_id(input.stage, a.microbatch, gradient), t, gradient, ranks_);
        }
    }

    /// Closes the JSON and hands the rest of the text to `write`. Only the first call writes.
    void finish() {
        if (finished_) return;
        finished_ = true;
        text_.finish();
    }

private:
    [[nodiscard]] static std::uint64_t flow_id(std::uint32_t producer_stage, std::uint32_t microbatch,
                                               bool gradient) noexcept {
        return 2 * (std::uint64_t{producer_stage} * max_microbatches + microbatch) + (gradient ? 2 : 1);
    }

    detail::trace_event_text<Write> text_;
    bool flows_;
    stage_map stages_;
    std::vector<std::uint8_t> used_;
    std::uint32_t ranks_;
    bool finished_ = false;
};

} // namespace pipesched
