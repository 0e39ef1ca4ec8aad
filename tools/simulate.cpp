// pipesched simulate
#include <algorithm>

#include <pipesched/analysis/simulate_iteration.hpp>
#include <pipesched/io/chrome_trace.hpp>
#include <pipesched/io/json.hpp>
#include <pipesched/io/svg.hpp>
#include <pipesched/io/terminal_timeline.hpp>
#include <pipesched/iteration.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 11> simulate_flags{{
    optional(schedule_flags[0]), optional(schedule_flags[1]), optional(schedule_flags[2]), schedule_flags[3],
    schedule_flags[4], schedule_flags[5],
    {"csv", "FILE", "replay this PyTorch CSV schedule (- for standard input) instead of --schedule", "", false},
    cost_flag,
    {"fill-w", "", "a rank that would idle runs its next ready W instead", "", false},
    {"format", "text|json|chrome|svg",
     "timeline and summary, summary as JSON, a Chrome/Perfetto trace, or the pipeline diagram as SVG", "text", false},
    {"iteration", "", "chrome and svg only: the whole iteration (p2p, loss, grad sync, optimizer) on their own tracks",
     "", false},
}};

struct summary_head {
    std::string_view schedule; ///< the library's name, or "csv"
    std::string file;          ///< --csv only
    std::uint32_t ranks = 0;
    std::uint32_t microbatches = 0;
    std::uint32_t chunks = 0;
};

void append_summary_json(std::string& s, const summary_head& head, const pipesched::simulation& sim) {
    s += "{\"schedule\":";
    pipesched::json::append_string(s, head.schedule);
    if (!head.file.empty()) {
        s += ",\"file\":";
        pipesched::json::append_string(s, head.file);
    }
    s += ",\"ranks\":" + number_text(head.ranks) + ",\"microbatches\":" + number_text(head.microbatches) +
         ",\"chunks\":" + number_text(head.chunks);
    s += ",\"makespan\":";
    pipesched::json::append_number(s, sim.makespan);
    s += ",\"bubble_fraction\":";
    pipesched::json::append_number(s, sim.bubble_fraction);
    const auto list = [&](std::string_view name, auto field) {
        s += ",\"";
        s += name;
        s += "\":[";
        for (std::size_t r = 0; r < sim.ranks.size(); ++r) {
            if (r != 0)
                s += ',';
            field(sim.ranks[r]);
        }
        s += ']';
    };
    list("peak_activations", [&](const pipesched::rank_summary& r) { s += number_text(r.peak_activations); });
    list("busy", [&](const pipesched::rank_summary& r) { pipesched::json::append_number(s, r.busy); });
    list("idle", [&](const pipesched::rank_summary& r) { pipesched::json::append_number(s, r.idle); });
    if (sim.all_to_all) // only with all-to-all in --cost: the output without it is as it was
        list("exposed_all_to_all",
             [&](const pipesched::rank_summary& r) { pipesched::json::append_number(s, r.exposed_all_to_all); });
    s += "}";
}

/// The text format: timeline, then the summary line.
std::string summary_text(const std::string& title, std::span<const pipesched::timed_action> records,
                         const pipesched::simulation& sim) {
    std::string s = title + "\n";
    s += pipesched::render_terminal_timeline(records, {}, sim.stages);
    s += "makespan " + fixed(sim.makespan) + ", bubble fraction " + fixed(sim.bubble_fraction) +
         ", peak activations per rank (chunk activations):";
    for (const auto& r : sim.ranks)
        s += " " + number_text(r.peak_activations);
    s += "\n";
    if (sim.all_to_all) { // only with all-to-all in --cost: the output without it is as it was
        s += "exposed all-to-all per rank (beyond compute):";
        for (const auto& r : sim.ranks)
            s += " " + fixed(r.exposed_all_to_all);
        s += "\n";
    }
    return s;
}

/// Hands the pieces of a streamed trace to the output buffer.
struct to_output {
    output_buffer* out;
    void operator()(std::string_view piece) const { out->append(piece); }
};

/// A timeline sink that counts what it passes on, for the progress line (progress.hpp).
template <class Sink> struct counted {
    Sink* sink;
    template <class Timed> void push(const Timed& t) {
        progress::advance();
        sink->push(t);
    }
};

/// A simulation the library refused although validation passed: costs that are not usable or
/// whose sums overflow name the --cost key (fail_simulation); anything else says why.
[[noreturn]] void refused(std::string_view schedule, const pipesched::verdict& check) {
    if (check.code == pipesched::verdict_code::invalid_cost || check.code == pipesched::verdict_code::time_overflow)
        fail_simulation(schedule, check);
    fail("cannot simulate " + std::string{schedule} + ": " + pipesched::describe(check));
}

/// Refuses a result that is not a finite number: costs whose sum overflows a double.
void require_finite(const pipesched::simulation& sim) {
    if (!std::isfinite(sim.makespan) || !std::isfinite(sim.bubble_fraction))
        fail("--cost: the simulated times overflow (the makespan exceeds 1.7976931348623157e308); use smaller costs");
}

int run_simulate_csv(const parsed_args& args, std::string_view format, const cost_request& costs) {
    for (const std::string_view flag : {"schedule", "ranks", "microbatches", "chunks", "group-size", "backward"}) {
        if (args.get(flag))
            fail("--" + std::string{flag} + " does not apply with --csv: the file gives the schedule");
    }
    if (args.get("fill-w"))
        fail("--fill-w does not apply with --csv: the file gives the order of every W");
    if (args.get("iteration"))
        fail("--iteration does not apply with --csv: a CSV holds one schedule, not an iteration");
    const loaded_csv in = load_csv(*args.get("csv"));
    if (in.actions == 0)
        fail(in.label + ": no compute action (F, B, I or W) to simulate");
    // Costs are per microbatch of one rank's layers: a file with v stages per rank charges
    // 1/v of them per stage, as for a library schedule.
    const std::uint32_t chunks = in.guess.chunks != 0 ? in.guess.chunks : 1;
    const pipesched::placement layout = pipesched::placement_of(in.guess.layout);
    const pipesched::cost_model model = cost_model_for(costs, pipesched::chunks_per_copy(layout, chunks));
    const std::string title = in.label + " p=" + number_text(in.guess.ranks) + " m=" +
                              number_text(in.guess.microbatches) + " stages=" + number_text(in.guess.stages);
    // Validate first: an invalid file is a usage error here (check says more about it).
    if (const pipesched::verdict v = pipesched::validate(in.compute, 0, 0, layout); !v)
        fail(in.label + ": invalid schedule: " + pipesched::describe(v) + " (see 'pipesched check')");
    output_buffer out{stdout};
    if (format == "chrome") {
        pipesched::trace_options options{};
        options.process_name = title;
        pipesched::chrome_trace_stream<to_output> trace{
            to_output{&out},
            pipesched::stage_map::of_actions(in.compute, static_cast<std::uint32_t>(in.guess.stages), layout),
            static_cast<std::uint32_t>(in.guess.ranks), options};
        const pipesched::simulation sim = pipesched::simulate(in.compute, model, trace, 0, layout);
        if (!sim)
            refused(in.label, sim.check);
        trace.finish();
        return finish_output(out);
    }
    pipesched::chrome_trace_sink records;
    pipesched::discard_timeline none{};
    const pipesched::simulation sim =
        format == "text" || format == "svg" ? pipesched::simulate(in.compute, model, records, 0, layout)
                         : pipesched::simulate(in.compute, model, none, 0, layout);
    if (!sim)
        refused(in.label, sim.check);
    require_finite(sim);
    std::string s;
    if (format == "svg") {
        s = pipesched::to_svg(records.records(), sim, {.title = title});
    } else if (format == "json") {
        append_summary_json(s, {"csv", std::string{*args.get("csv")}, static_cast<std::uint32_t>(in.guess.ranks),
                                in.guess.microbatches, in.guess.chunks}, sim);
        s += '\n';
    } else {
        s = summary_text(title, records.records(), sim);
    }
    out.append(s);
    return finish_output(out);
}

/// What the replay of one format holds per (stage, microbatch) unit (memory_budget): the
/// structural checks; for the iteration, its checks or, after them, its replay's times; for
/// text and svg, also the timeline's records of up to three actions per unit (F, I, W) in a
/// vector that may hold twice what it uses; for the iteration's svg, up to eight (F, I, W,
/// recompute, loss and the p2p ops the unit sends and receives).
constexpr std::uint64_t memory_per_unit(std::string_view format, bool whole_iteration) {
    if (whole_iteration) {
        const std::uint64_t replay =
            std::max(pipesched::iteration_check_bytes_per_unit, pipesched::iteration_replay_bytes_per_unit);
        return format == "svg" ? replay + 2 * 8 * sizeof(pipesched::timed_action) : replay;
    }
    if (format == "text" || format == "svg")
        return pipesched::structure_check_bytes_per_unit + 2 * 3 * sizeof(pipesched::timed_action);
    return pipesched::structure_check_bytes_per_unit;
}

// The help text below and README.md give these numbers.
static_assert(memory_budget == std::uint64_t{4} << 30 && memory_per_unit("json", false) == 1 &&
                  memory_per_unit("text", false) == 241 && memory_per_unit("svg", false) == 241 &&
                  memory_per_unit("chrome", true) == 32 && memory_per_unit("svg", true) == 672,
              "update simulate's and compare's help texts and README.md (Command line) to the memory estimates");

// Long: the flags, the memory estimate and the three formats (the Chrome trace of a schedule
// or of its iteration, each with its progress count) share the schedule's concrete type inside
// one with_requested_schedule call; split, each part would take all of them as parameters.
int run_simulate(const parsed_args& args) {
    const cost_request costs = read_costs(args);
    const std::string format = format_choice(args, {"text", "json", "chrome", "svg"});
    if (args.get("iteration") && format != "chrome" && format != "svg")
        fail("--iteration applies only to --format chrome or svg, not to " + format);
    if (args.get("csv"))
        return run_simulate_csv(args, format, costs);
    for (const std::string_view flag : {"schedule", "ranks", "microbatches"}) {
        if (!args.get(flag))
            fail("missing required flag --" + std::string{flag} + " (or --csv FILE)" + args.see_help());
    }
    const schedule_request req = read_schedule(args);
    resource_estimate estimate{};
    estimate.shape = req.options.shape;
    estimate.bytes_per_unit = memory_per_unit(format, args.get("iteration").has_value());
    estimate.build_bytes = schedule_build_bytes(req.id, req.options.shape);
    require_within_budget(estimate, "simulate --format " + format + (args.get("iteration") ? " --iteration" : ""),
                          format == "text" || format == "svg"
                              ? "--format json or chrome keep no timeline; or fewer ranks, chunks or microbatches"
                                           : "use fewer ranks, chunks or microbatches");
    return with_requested_schedule(req, [&](const auto& pol) -> int {
        using policy = std::remove_cvref_t<decltype(pol)>;
        const std::string_view name = pipesched::display_name(pipesched::info(req.id));
        pipesched::cost_model model = cost_model_for(costs, pipesched::chunks_per_copy(policy::layout, pol.shape.chunks));
        model.fill_with_weight = args.get("fill-w").has_value();
        output_buffer out{stdout};
        const std::string title = std::string{pipesched::display_name(pipesched::info(req.id))} + " p=" +
                                  number_text(pol.shape.ranks) + " m=" + number_text(pol.shape.microbatches) +
                                  " v=" + number_text(pol.shape.chunks);
        if (format == "chrome") {
            // Streamed: written as the replay produces it, whatever its size (about 340 bytes
            // per action), with its progress on a terminal.
            pipesched::trace_options options{};
            options.process_name = title;
            using stream = pipesched::chrome_trace_stream<to_output>;
            if (args.get("iteration")) {
                // The same schedule inside one iteration with Megatron's defaults, replayed with
                // the same compute costs (communication free: the trace shows where it lands).
                options.process_name = title + " (one iteration)";
                const pipesched::iteration whole{pol};
                // event_count() needs an iteration the library models (DualPipe's is refused).
                if (const pipesched::shape_check c = whole.check(); !c)
                    fail(std::string{c.message});
                progress::task("writing the Chrome trace of one iteration of " + title, pipesched::event_count(whole),
                               "events");
                stream trace{to_output{&out}, policy::layout, pol.shape, options};
                counted<stream> counting{&trace};
                pipesched::iteration_cost_model it_costs{};
                it_costs.compute = model;
                pipesched::as_timed_actions<counted<stream>> adapter{&counting, policy::layout, pol.shape.ranks};
                const pipesched::iteration_simulation sim = pipesched::simulate(whole, it_costs, adapter);
                if (!sim.check)
                    refused(name, sim.check);
                trace.finish();
            } else {
                progress::task("writing the Chrome trace of " + title, pipesched::event_count(pol), "actions");
                stream trace{to_output{&out}, policy::layout, pol.shape, options};
                counted<stream> counting{&trace};
                const pipesched::simulation sim = pipesched::simulate(pol, model, counting);
                if (!sim)
                    refused(name, sim.check);
                trace.finish();
            }
            return finish_output(out);
        }
        progress::task("replaying " + title + " (" +
                       number_text(std::uint64_t{pol.shape.ranks} * pol.shape.chunks * pol.shape.microbatches) +
                       " (stage, microbatch) units)");
        pipesched::chrome_trace_sink records;
        if (format == "svg" && args.get("iteration")) {
            // As the Chrome trace's iteration: Megatron's defaults, communication free.
            pipesched::iteration_cost_model it_costs{};
            it_costs.compute = model;
            pipesched::as_timed_actions<pipesched::chrome_trace_sink> adapter{&records, policy::layout, pol.shape.ranks};
            const pipesched::iteration_simulation sim = pipesched::simulate(pipesched::iteration{pol}, it_costs, adapter);
            if (!sim.check)
                refused(name, sim.check);
            out.append(pipesched::to_svg(records.records(), sim, {.title = title + " (one iteration)"}));
            return finish_output(out);
        }
        pipesched::discard_timeline none{};
        // The summary alone needs no records.
        const pipesched::simulation sim = format == "text" || format == "svg" ? pipesched::simulate(pol, model, records)
                                                                              : pipesched::simulate(pol, model, none);
        if (!sim)
            refused(name, sim.check);
        require_finite(sim);
        std::string s;
        if (format == "svg") {
            s = pipesched::to_svg(records.records(), sim, {.title = title});
        } else if (format == "json") {
            append_summary_json(s, {pol.policy_name(), {}, sim.shape.ranks, sim.shape.microbatches, sim.shape.chunks}, sim);
            s += '\n';
        } else {
            s = summary_text(title, records.records(), sim);
        }
        out.append(s);
        return finish_output(out);
    });
}

} // namespace

const command_spec simulate_command{"simulate", "replay a schedule on a cost model: timeline, summary JSON, Chrome trace or SVG diagram",
     "Replays the schedule (or, with --csv FILE, a schedule read from PyTorch CSV) with the given\n"
     "costs. text: a timeline (one row per rank, '.' idle) and the summary; json: {makespan,\n"
     "bubble_fraction, peak_activations, busy, idle} per rank (and exposed_all_to_all when --cost\n"
     "gives MoE all-to-all); chrome: trace-event JSON for ui.perfetto.dev or chrome://tracing,\n"
     "written as it is produced (about 340 bytes per action); svg: the pipeline diagram (ranks as\n"
     "rows, one box per action with its microbatch, bubble fraction in the title;\n"
     "docs/diagrams.md). A shape whose replay would hold more than 4 GiB (1 byte per stage and\n"
     "microbatch; 241 with the text timeline or svg, 32 with --iteration, 672 with --iteration\n"
     "--format svg) is refused with exit 2; anything smaller runs, showing its progress on a\n"
     "terminal after a second.",
     simulate_flags, run_simulate};

} // namespace pipesched::cli
