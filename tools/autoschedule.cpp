// pipesched autoschedule
#include <cmath>
#include <string>
#include <vector>

#include <pipesched/io/json.hpp>
#include <pipesched/search/autoschedule.hpp>
#include <pipesched/search/named_schedules.hpp>
#include <pipesched/io/chrome_trace.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/io/terminal_timeline.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 7> autoschedule_flags{{
    schedule_flags[1],
    schedule_flags[2],
    {"cost", "F=1,I=1,W=1,p2p=0", "time of F, I and W of one microbatch on every stage, and the p2p time", "F=1,I=1,W=1,p2p=0",
     false},
    {"cost-per-stage", "FILE",
     "one line per stage (P lines; '#' comments): KEY=VALUE,... with keys F, I, W, MB, MW, limit; missing keys "
     "take the values of --cost, --activation and --memory-limit",
     "", false},
    {"activation", "F=MB,W=MW", "memory that F allocates (M_B) and that W still needs after I (M_W)", "F=1,W=1",
     false},
    {"memory-limit", "L", "memory limit of every stage, in the units of --activation", "", true},
    {"format", "text|json|csv", "timeline and comparison, JSON, or the order as PyTorch CSV", "text", false},
}};

/// KEY=VALUE,... with keys from `keys`; calls set(key, value) for each (cli.hpp's rules).
template <class Set>
void read_pairs(std::string_view where, std::string_view text, std::initializer_list<std::string_view> keys, Set set) {
    const std::vector<std::string_view> list{keys};
    read_key_values(where, text, list, [&](std::size_t k, double x) { set(list[k], x); });
}

struct request {
    pipesched::shape dims{};
    pipesched::pipeline_costs costs{};
    pipesched::pipeline_memory memory{};
};

request read_request(const parsed_args& args) {
    request req{};
    req.dims = {args.count("ranks").value_or(1), args.count("microbatches").value_or(1), 1};
    if (const pipesched::shape_check c = pipesched::check_common(req.dims); !c)
        fail(std::string{c.message});
    if (const auto text = args.get("cost")) {
        read_pairs("--cost", *text, {"F", "I", "W", "p2p"}, [&](std::string_view k, double x) {
            if (k == "F") req.costs.uniform.forward = x;
            else if (k == "I") req.costs.uniform.backward_input = x;
            else if (k == "W") req.costs.uniform.backward_weight = x;
            else req.costs.p2p = x;
        });
    }
    if (const auto text = args.get("activation")) {
        read_pairs("--activation", *text, {"F", "W"}, [&](std::string_view k, double x) {
            (k == "F" ? req.memory.uniform.activation : req.memory.uniform.weight) = x;
        });
    }
    req.memory.uniform.limit = read_nonnegative("--memory-limit", args.get("memory-limit").value_or(""));
    if (const auto path = args.get("cost-per-stage")) {
        const std::string text = read_input(*path);
        std::size_t line_no = 0;
        std::size_t pos = 0;
        while (pos < text.size()) {
            const std::size_t nl = text.find('\n', pos);
            std::string_view line{text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos};
            pos = nl == std::string::npos ? text.size() : nl + 1;
            ++line_no;
            if (!line.empty() && line.back() == '\r')
                line.remove_suffix(1);
            if (line.empty() || line[0] == '#')
                continue;
            if (req.costs.per_stage.size() == req.dims.ranks)
                fail("--cost-per-stage " + quoted(*path) + ": line " + std::to_string(line_no) + ": more than " +
                     std::to_string(req.dims.ranks) + " stages (one line per rank)");
            pipesched::stage_times t = req.costs.uniform;
            pipesched::stage_memory m = req.memory.uniform;
            read_pairs("--cost-per-stage " + quoted(*path) + ": line " + std::to_string(line_no), line,
                       {"F", "I", "W", "MB", "MW", "limit"}, [&](std::string_view k, double x) {
                           if (k == "F") t.forward = x;
                           else if (k == "I") t.backward_input = x;
                           else if (k == "W") t.backward_weight = x;
                           else if (k == "MB") m.activation = x;
                           else if (k == "MW") m.weight = x;
                           else m.limit = x;
                       });
            req.costs.per_stage.push_back(t);
            req.memory.per_stage.push_back(m);
        }
        if (req.costs.per_stage.size() != req.dims.ranks)
            fail("--cost-per-stage " + quoted(*path) + ": " + std::to_string(req.costs.per_stage.size()) +
                 " stages for " + std::to_string(req.dims.ranks) + " ranks (one line per rank)");
    }
    return req;
}

void append_numbers(std::string& s, const std::vector<double>& xs) {
    s += '[';
    for (std::size_t i = 0; i < xs.size(); ++i) {
        if (i != 0)
            s += ',';
        pipesched::json::append_number(s, xs[i]);
    }
    s += ']';
}

std::string json_report(const pipesched::autoschedule_result& r,
                        const std::optional<pipesched::named_schedule_result>& named) {
    std::string s = "{\"ranks\":" + number_text(r.schedule.shape.ranks) +
                    ",\"microbatches\":" + number_text(r.schedule.shape.microbatches) + ",\"order\":[";
    for (std::uint32_t rank = 0; rank < r.schedule.shape.ranks; ++rank) {
        s += rank == 0 ? "[" : ",[";
        bool first = true;
        for (const pipesched::event e : pipesched::events(r.schedule, rank)) {
            s += first ? "\"" : ",\"";
            first = false;
            s += pipesched::format_action(pipesched::to_action(r.schedule, e)).view();
            s += '"';
        }
        s += ']';
    }
    s += "],\"span\":";
    pipesched::json::append_number(s, r.span);
    s += ",\"makespan\":";
    pipesched::json::append_number(s, r.makespan);
    s += ",\"bubble_fraction\":";
    pipesched::json::append_number(s, r.bubble_fraction);
    s += ",\"peak_memory\":";
    append_numbers(s, r.peak_memory);
    s += ",\"method\":";
    pipesched::json::append_string(s, r.method);
    s += std::string{",\"proven_optimal\":"} + (r.proven_optimal ? "true" : "false");
    s += ",\"heuristic_span\":";
    if (r.heuristic_span > 0.0)
        pipesched::json::append_number(s, r.heuristic_span);
    else
        s += "null";
    s += ",\"lower_bound\":";
    pipesched::json::append_number(s, r.lower_bound);
    s += ",\"best_named\":";
    if (named) {
        s += "{\"schedule\":";
        pipesched::json::append_string(s, pipesched::display_name(pipesched::info(named->id)));
        s += ",\"chunks\":" + number_text(named->chunks) + ",\"span\":";
        pipesched::json::append_number(s, named->span);
        s += ",\"makespan\":";
        pipesched::json::append_number(s, named->makespan);
        s += ",\"bubble_fraction\":";
        pipesched::json::append_number(s, named->bubble_fraction);
        s += ",\"peak_memory\":";
        append_numbers(s, named->peak_memory);
        s += '}';
    } else {
        s += "null";
    }
    s += "}\n";
    return s;
}

std::string text_report(const request& req, const pipesched::autoschedule_result& r,
                        const std::optional<pipesched::named_schedule_result>& named) {
    const std::vector<pipesched::stage_costs> per_stage = pipesched::to_stage_costs(req.dims, req.costs, req.memory);
    pipesched::cost_model model{};
    model.per_stage = per_stage;
    model.p2p_latency = req.costs.p2p;
    pipesched::chrome_trace_sink records;
    (void)pipesched::simulate(r.schedule, model, records);
    std::string s = "autoschedule p=" + number_text(req.dims.ranks) + " m=" + number_text(req.dims.microbatches) +
                    " (" + std::string{r.method} + (r.proven_optimal ? ", optimal" : "") + ")\n";
    s += pipesched::render_terminal_timeline(records.records(), {});
    const auto peak = [](const std::vector<double>& xs) {
        return xs.empty() ? 0.0 : *std::max_element(xs.begin(), xs.end());
    };
    std::vector<std::array<std::string, 5>> rows;
    rows.push_back({"schedule", "span", "makespan", "bubble", "peak memory"});
    rows.push_back({"autoschedule", fixed(r.span), fixed(r.makespan), fixed(r.bubble_fraction), fixed(peak(r.peak_memory), 2)});
    if (r.heuristic_span > 0.0) {
        double work = 0.0;
        for (std::uint32_t k = 0; k < req.dims.ranks; ++k) {
            const pipesched::stage_times& t = k < req.costs.per_stage.size() ? req.costs.per_stage[k] : req.costs.uniform;
            work = std::max(work, req.dims.microbatches * (t.forward + t.backward_input + t.backward_weight));
        }
        rows.push_back({"zero bubble heuristic", fixed(r.heuristic_span), "-", fixed((r.heuristic_span - work) / r.heuristic_span), "-"});
        if (r.lower_bound > 0.0)
            rows.push_back({"lower bound (none shorter)", fixed(r.lower_bound), "-", fixed((r.lower_bound - work) / r.lower_bound), "-"});
    }
    if (named) {
        rows.push_back({std::string{pipesched::display_name(pipesched::info(named->id))} + " (best named that fits)",
                        fixed(named->span), fixed(named->makespan), fixed(named->bubble_fraction),
                        fixed(peak(named->peak_memory), 2)});
    } else {
        rows.push_back({"(no named schedule fits)", "-", "-", "-", "-"});
    }
    append_columns<5>(s, rows);
    return s;
}

int run_autoschedule(const parsed_args& args) {
    const std::string format = format_choice(args, {"text", "json", "csv"});
    const request req = read_request(args);
    const pipesched::autoschedule_result r = pipesched::autoschedule(req.dims, req.costs, req.memory);
    if (!r) {
        if (r.message.rfind("invalid input: ", 0) == 0)
            fail(r.message.substr(15));
        std::fputs(("pipesched: " + r.message + "\n").c_str(), stderr);
        return 1;
    }
    std::string s;
    if (format == "csv") {
        s = pipesched::write_csv(r.schedule);
    } else {
        const auto named = pipesched::best_named_schedule(req.dims, req.costs, req.memory);
        s = format == "json" ? json_report(r, named) : text_report(req, r, named);
    }
    output_buffer out{stdout};
    out.append(s);
    return finish_output(out);
}

} // namespace

const command_spec autoschedule_command{
    "autoschedule", "search a zero-bubble schedule for given costs under a memory limit",
    "Searches an order of F, I and W on every stage (one stage per rank) that minimises the span\n"
    "under the memory limit: the Zero Bubble heuristic's variants, handcrafted orders, per-stage\n"
    "templates, local search, and on small shapes an exact branch and bound. text: the timeline and\n"
    "a comparison with the heuristic, the lower bound and the best named schedule that fits; json:\n"
    "order (PyTorch actions per rank), span, makespan, bubble_fraction, peak_memory, lower_bound and\n"
    "the same for the best named schedule; csv: the order as PyTorch CSV. Exit status 1 when no\n"
    "schedule fits the limit, 2 for bad input.",
    autoschedule_flags, run_autoschedule};

} // namespace pipesched::cli
