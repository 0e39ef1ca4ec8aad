// pipesched simulate
#include <pipesched/analysis/simulate_iteration.hpp>
#include <pipesched/io/chrome_trace.hpp>
#include <pipesched/io/terminal_timeline.hpp>
#include <pipesched/iteration.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 10> simulate_flags{{
    schedule_flags[0], schedule_flags[1], schedule_flags[2], schedule_flags[3], schedule_flags[4], schedule_flags[5],
    cost_flag,
    {"fill-w", "", "a rank that would idle runs its next ready W instead", "", false},
    {"format", "text|json|chrome", "timeline and summary, summary as JSON, or a Chrome/Perfetto trace", "text",
     false},
    {"iteration", "", "chrome only: the whole iteration (p2p, loss, grad sync, optimizer) on their own tracks", "",
     false},
}};

template <pipesched::schedule_policy P>
void append_summary_json(std::string& s, const P& pol, const pipesched::simulation& sim) {
    const pipesched::shape dims = pol.shape;
    s += "{\"schedule\":";
    pipesched::detail::append_json_string(s, P::name);
    s += ",\"ranks\":" + number_text(dims.ranks) + ",\"microbatches\":" + number_text(dims.microbatches) +
         ",\"chunks\":" + number_text(dims.chunks);
    s += ",\"makespan\":";
    pipesched::detail::append_json_number(s, sim.makespan);
    s += ",\"bubble_fraction\":";
    pipesched::detail::append_json_number(s, sim.bubble_fraction);
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
    list("busy", [&](const pipesched::rank_summary& r) { pipesched::detail::append_json_number(s, r.busy); });
    list("idle", [&](const pipesched::rank_summary& r) { pipesched::detail::append_json_number(s, r.idle); });
    s += "}";
}

int run_simulate(const parsed_args& args) {
    const schedule_request req = read_schedule(args);
    const cost_request costs = read_costs(args);
    const std::string format = format_choice(args, {"text", "json", "chrome"});
    return pipesched::with_schedule(req.id, req.options, [&](const auto& pol) -> int {
        require_valid_shape(pol, req);
        pipesched::cost_model model = cost_model_for(costs, pol.shape.chunks);
        model.fill_with_weight = args.get("fill-w").has_value();
        pipesched::chrome_trace_sink records;
        const pipesched::simulation sim = pipesched::simulate(pol, model, records);
        if (!sim)
            fail_simulation(pipesched::display_name(pipesched::info(req.id)), sim.check);
        output_buffer out{stdout};
        std::string s;
        const std::string title = std::string{pipesched::display_name(pipesched::info(req.id))} + " p=" +
                                  number_text(pol.shape.ranks) + " m=" + number_text(pol.shape.microbatches) +
                                  " v=" + number_text(pol.shape.chunks);
        if (format == "chrome") {
            pipesched::trace_options options{};
            options.process_name = title;
            if (args.get("iteration")) {
                // The same schedule inside one iteration with Megatron's defaults, replayed with
                // the same compute costs (communication free: the trace shows where it lands).
                pipesched::iteration_cost_model it_costs{};
                it_costs.compute = model;
                pipesched::chrome_trace_sink full;
                pipesched::as_timed_actions<pipesched::chrome_trace_sink> adapter{
                    &full, std::remove_cvref_t<decltype(pol)>::layout, pol.shape.ranks};
                const auto it_sim = pipesched::simulate(pipesched::iteration{pol}, it_costs, adapter);
                if (!it_sim.replayed)
                    fail_simulation(pipesched::display_name(pipesched::info(req.id)), it_sim.check);
                options.process_name = title + " (one iteration)";
                s = full.str(options);
            } else {
                s = records.str(options);
            }
        } else if (format == "json") {
            append_summary_json(s, pol, sim);
            s += '\n';
        } else {
            s += title + "\n";
            s += pipesched::render_terminal_timeline(records.records(), {});
            s += "makespan " + fixed(sim.makespan) + ", bubble fraction " + fixed(sim.bubble_fraction) +
                 ", peak activations per rank:";
            for (const auto& r : sim.ranks)
                s += " " + number_text(r.peak_activations);
            s += "\n";
        }
        out.append(s);
        return finish_output(out);
    });
}

} // namespace

const command_spec simulate_command{"simulate", "replay a schedule on a cost model: timeline, summary JSON or Chrome trace",
     "Replays the schedule with the given costs. text: a timeline (one row per rank, '.' idle) and\n"
     "the summary; json: {makespan, bubble_fraction, peak_activations, busy, idle} per rank;\n"
     "chrome: trace-event JSON for ui.perfetto.dev or chrome://tracing.",
     simulate_flags, run_simulate};

} // namespace pipesched::cli
