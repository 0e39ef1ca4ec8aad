// pipesched autoschedule
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include <pipesched/io/json.hpp>
#include <pipesched/search/autoschedule.hpp>
#include <pipesched/search/named_schedules.hpp>
#include <pipesched/io/chrome_trace.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/io/svg.hpp>
#include <pipesched/io/terminal_timeline.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 9> autoschedule_flags{{
    schedule_flags[1],
    schedule_flags[2],
    {"cost", "F=1,I=1,W=1,p2p=0",
     "time of F, I and W of one microbatch through one rank's layers (split evenly over the rank's chunks), and "
     "the p2p time",
     "F=1,I=1,W=1,p2p=0", false},
    {"cost-per-stage", "FILE",
     "one line per rank, or per global stage of a placement with chunks ('#' comments): KEY=VALUE,... with keys "
     "F, I, W, MB, MW, limit; missing keys take the values of --cost, --activation and --memory-limit",
     "", false},
    {"activation", "F=MB,W=MW", "memory that F allocates (M_B) and that W still needs after I (M_W), per rank",
     "F=1,W=1", false},
    {"memory-limit", "L", "memory limit of every rank, in the units of --activation", "", true},
    {"placement", "loop|v|interleaved|any",
     "stages on ranks: one per rank, a V of two chunks, the interleaved loop of --chunks, or the best of all",
     "any", false},
    {"chunks", "V", "chunks per rank of the interleaved placement, 2..64", "2", false},
    {"format", "text|json|csv|svg", "timeline and ranking, JSON, the order as PyTorch CSV, or its diagram as SVG",
     "text", false},
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
    pipesched::autoschedule_options options{};
};

/// Refuses costs whose total work overflows a double, as simulate refuses costs whose replay
/// does: every microbatch's F, I and W on every stage and a p2p hop before each of its stages
/// bound the span, so a finite total keeps the search's times and bubble finite. The message
/// names the cost that overflowed (alone, or the first whose addition did).
void require_finite_work(const request& req, bool per_stage_file) {
    const double m = req.dims.microbatches;
    const std::size_t stages = req.costs.per_stage.empty() ? req.dims.ranks : req.costs.per_stage.size();
    std::array<double, 4> sums{}; // F, I, W, p2p over the whole iteration
    for (std::size_t s = 0; s < stages; ++s) {
        const pipesched::stage_times& t = req.costs.per_stage.empty() ? req.costs.uniform : req.costs.per_stage[s];
        sums[0] += m * t.forward;
        sums[1] += m * t.backward_input;
        sums[2] += m * t.backward_weight;
        sums[3] += 2.0 * m * req.costs.p2p;
    }
    constexpr std::array<std::string_view, 4> names{"F", "I", "W", "p2p"};
    double total = 0.0;
    for (std::size_t k = 0; k < sums.size(); ++k) {
        total += sums[k];
        if (std::isfinite(total))
            continue;
        const std::string flag = k < 3 && per_stage_file ? "--cost-per-stage" : "--cost";
        fail(flag + ": the " + std::string{names[k]} + " costs" +
             (std::isfinite(sums[k]) ? " with the costs before them" : std::string{}) + " add up beyond the largest " +
             "finite time (about 1.8e308) over " + number_text(req.dims.microbatches) + " microbatches and " +
             number_text(stages) + " stages; use smaller costs");
    }
}

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
    const std::string_view placement = args.get("placement").value_or("any");
    if (placement == "loop")
        req.options.placement = pipesched::search_placement::loop;
    else if (placement == "v")
        req.options.placement = pipesched::search_placement::v;
    else if (placement == "interleaved")
        req.options.placement = pipesched::search_placement::interleaved;
    else if (placement != "any")
        fail("--placement must be one of loop, v, interleaved, any, got " + quoted(placement));
    req.options.chunks = args.count("chunks").value_or(2);
    if (req.options.chunks < 2 || req.options.chunks > 64)
        fail("--chunks must be 2..64 (chunks per rank of the interleaved placement), got " +
             number_text(req.options.chunks));
    if (args.get("chunks") && req.options.placement != pipesched::search_placement::interleaved &&
        req.options.placement != pipesched::search_placement::any)
        fail("--chunks applies to --placement interleaved or any");
    // Lines per rank, or per global stage of the V (2 per rank) or interleaved (--chunks) placement.
    const std::uint32_t most_lines = req.dims.ranks * std::max(2U, req.options.chunks);
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
            if (req.costs.per_stage.size() == most_lines)
                fail("--cost-per-stage " + quoted(*path) + ": line " + std::to_string(line_no) + ": more than " +
                     std::to_string(most_lines) + " stages (one line per rank or per global stage)");
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
        const std::size_t lines = req.costs.per_stage.size();
        const std::uint32_t p = req.dims.ranks;
        if (lines != p && lines != 2 * std::size_t{p} && lines != std::size_t{p} * req.options.chunks)
            fail("--cost-per-stage " + quoted(*path) + ": " + std::to_string(lines) + " stages for " + std::to_string(p) +
                 " ranks (one line per rank, or per global stage: " + std::to_string(2 * p) + " for the V" +
                 (req.options.chunks != 2 ? ", " + std::to_string(p * req.options.chunks) + " for the interleaved placement" : "") +
                 ")");
    }
    require_finite_work(req, args.get("cost-per-stage").has_value());
    return req;
}

/// "v", "interleaved" or "loop": the result's placement as --placement spells it.
std::string_view placement_name(const pipesched::autoschedule_result& r) {
    return r.layout == pipesched::placement::v_shape ? "v" : r.chunks > 1 ? "interleaved" : "loop";
}

/// Every catalogued schedule that fits, shortest first (then makespan, then catalog order):
/// multi-chunk ones with 2 chunks per rank and, when --chunks differs, with that many.
std::vector<pipesched::named_schedule_result> named_that_fit(const request& req) {
    std::vector<pipesched::named_schedule_result> out;
    for (pipesched::named_schedule_result& n : pipesched::evaluate_named_schedules(req.dims, req.costs, req.memory, 2)) {
        if (n.fits)
            out.push_back(std::move(n));
    }
    if (req.options.chunks != 2) {
        for (pipesched::named_schedule_result& n :
             pipesched::evaluate_named_schedules(req.dims, req.costs, req.memory, req.options.chunks)) {
            if (n.fits && n.chunks == req.options.chunks)
                out.push_back(std::move(n));
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.span < b.span || (a.span == b.span && a.makespan < b.makespan);
    });
    return out;
}

std::string json_report(const pipesched::autoschedule_result& r,
                        const std::vector<pipesched::named_schedule_result>& named) {
    std::string s = "{\"ranks\":" + number_text(r.visit([](const auto& x) { return x.shape.ranks; })) +
                    ",\"microbatches\":" + number_text(r.visit([](const auto& x) { return x.shape.microbatches; })) +
                    ",\"placement\":\"" + std::string{placement_name(r)} + "\",\"chunks\":" + number_text(r.chunks) +
                    ",\"order\":[";
    r.visit([&](const auto& sched) {
        for (std::uint32_t rank = 0; rank < sched.shape.ranks; ++rank) {
            s += rank == 0 ? "[" : ",[";
            bool first = true;
            for (const pipesched::event e : pipesched::events(sched, rank)) {
                s += first ? "\"" : ",\"";
                first = false;
                s += pipesched::format_action(pipesched::to_action(sched, e)).view();
                s += '"';
            }
            s += ']';
        }
    });
    s += "],\"span\":";
    pipesched::json::append_number(s, r.span);
    s += ",\"makespan\":";
    pipesched::json::append_number(s, r.makespan);
    s += ",\"bubble_fraction\":";
    pipesched::json::append_number(s, r.bubble_fraction);
    s += ",\"peak_memory\":";
    pipesched::json::append_array(s, r.peak_memory);
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
    s += ",\"gap\":";
    pipesched::json::append_number(s, r.gap);
    s += ",\"bound_scope\":";
    pipesched::json::append_string(s, r.bound_scope);
    s += ",\"best_named\":";
    if (!named.empty()) {
        const pipesched::named_schedule_result& n = named.front();
        s += "{\"schedule\":";
        pipesched::json::append_string(s, pipesched::display_name(pipesched::info(n.id)));
        s += ",\"chunks\":" + number_text(n.chunks) + ",\"span\":";
        pipesched::json::append_number(s, n.span);
        s += ",\"makespan\":";
        pipesched::json::append_number(s, n.makespan);
        s += ",\"bubble_fraction\":";
        pipesched::json::append_number(s, n.bubble_fraction);
        s += ",\"peak_memory\":";
        pipesched::json::append_array(s, n.peak_memory);
        s += '}';
    } else {
        s += "null";
    }
    s += "}\n";
    return s;
}

/// The answer replayed under the request's costs, its records kept for a timeline.
pipesched::simulation replay_answer(const request& req, const pipesched::autoschedule_result& r,
                                    pipesched::chrome_trace_sink& records) {
    const std::vector<pipesched::stage_costs> per_stage =
        pipesched::to_stage_costs(req.dims, req.costs, req.memory, r.layout, r.chunks);
    pipesched::cost_model model{};
    model.per_stage = per_stage;
    model.p2p_latency = req.costs.p2p;
    return r.visit([&](const auto& sched) { return pipesched::simulate(sched, model, records); });
}

/// "autoschedule p=4 m=8 (v placement, 2 chunks per rank, <method>, optimal ...)".
std::string answer_title(const request& req, const pipesched::autoschedule_result& r) {
    const std::string where = r.chunks == 1 ? "" : std::string{placement_name(r)} + " placement, " + number_text(r.chunks) + " chunks per rank, ";
    return "autoschedule p=" + number_text(req.dims.ranks) + " m=" + number_text(req.dims.microbatches) + " (" + where +
           std::string{r.method} + (r.proven_optimal ? ", optimal among the searched placements" : "") + ")";
}

std::string svg_report(const request& req, const pipesched::autoschedule_result& r) {
    pipesched::chrome_trace_sink records;
    const pipesched::simulation replay = replay_answer(req, r, records);
    return pipesched::to_svg(records.records(), replay, {.title = answer_title(req, r)});
}

std::string text_report(const request& req, const pipesched::autoschedule_result& r,
                        const std::vector<pipesched::named_schedule_result>& named) {
    pipesched::chrome_trace_sink records;
    const pipesched::simulation replay = replay_answer(req, r, records);
    std::string s = answer_title(req, r) + "\n";
    s += pipesched::render_terminal_timeline(records.records(), {}, replay.stages);
    const auto peak = [](const std::vector<double>& xs) {
        return xs.empty() ? 0.0 : *std::max_element(xs.begin(), xs.end());
    };
    std::vector<std::array<std::string, 5>> rows;
    rows.push_back({"schedule", "span", "makespan", "bubble", "peak memory"});
    rows.push_back({"autoschedule", fixed(r.span), fixed(r.makespan), fixed(r.bubble_fraction), fixed(peak(r.peak_memory), 2)});
    const auto bubble_at = [&](double span) {
        const double work = r.span * (1.0 - r.bubble_fraction);
        return span > 0.0 ? (span - work) / span : 0.0;
    };
    if (r.heuristic_span > 0.0)
        rows.push_back({"zero bubble heuristic (loop)", fixed(r.heuristic_span), "-", fixed(bubble_at(r.heuristic_span)), "-"});
    if (r.lower_bound > 0.0)
        rows.push_back({"lower bound (searched placements)", fixed(r.lower_bound), "-", fixed(bubble_at(r.lower_bound)), "-"});
    if (named.empty())
        rows.push_back({"(no named schedule fits)", "-", "-", "-", "-"});
    for (const pipesched::named_schedule_result& n : named) {
        std::string name{pipesched::display_name(pipesched::info(n.id))};
        if (n.chunks > 1)
            name += " (" + number_text(n.chunks) + " chunks)";
        rows.push_back({name, fixed(n.span), fixed(n.makespan), fixed(n.bubble_fraction), fixed(peak(n.peak_memory), 2)});
    }
    append_columns<5>(s, rows);
    s += "searched placements: " + r.bound_scope + "; no order of them within the limit is shorter than the lower bound";
    s += "; gap " + fixed(r.gap) + "\n";
    return s;
}

int run_autoschedule(const parsed_args& args) {
    const std::string format = format_choice(args, {"text", "json", "csv", "svg"});
    const request req = read_request(args);
    const pipesched::autoschedule_result r = pipesched::autoschedule(req.dims, req.costs, req.memory, req.options);
    if (!r) {
        if (r.message.rfind("invalid input: ", 0) == 0)
            fail(r.message.substr(15));
        std::fputs(("pipesched: " + r.message + "\n").c_str(), stderr);
        return 1;
    }
    std::string s;
    if (format == "csv") {
        s = r.visit([](const auto& sched) { return pipesched::write_csv(sched); });
    } else if (format == "svg") {
        s = svg_report(req, r);
    } else {
        const std::vector<pipesched::named_schedule_result> named = named_that_fit(req);
        s = format == "json" ? json_report(r, named) : text_report(req, r, named);
    }
    output_buffer out{stdout};
    out.append(s);
    return finish_output(out);
}

} // namespace

const command_spec autoschedule_command{
    "autoschedule", "search a zero-bubble schedule for given costs under a memory limit",
    "Searches an order of F, I and W on every rank that minimises the span under the memory limit, in\n"
    "the placements --placement names: one stage per rank (loop), a V of two chunks per rank (rank r\n"
    "holds stages r and 2P-1-r, as ZB-V), the interleaved loop of --chunks chunks, or all (any). --cost\n"
    "is one microbatch through one rank's layers, split evenly over the rank's chunks (as in simulate);\n"
    "--activation and --memory-limit are per rank. The search runs the Zero Bubble heuristic's\n"
    "variants, list scheduling, handcrafted and catalogued orders, per-stage templates, local search,\n"
    "and on small shapes an exact branch and bound; every named schedule of the searched placements\n"
    "that fits is replayed under the same costs, and the answer is never longer than the best of them.\n"
    "text: the timeline and a ranking of every named schedule that fits; json: placement, chunks,\n"
    "order (PyTorch actions per rank, global stage numbers), span, makespan, bubble_fraction,\n"
    "peak_memory, lower_bound, gap and bound_scope (the placements the bound and proven_optimal speak\n"
    "of); csv: the order as PyTorch CSV; svg: the answer's pipeline diagram (docs/diagrams.md). Exit\n"
    "status 1 when no schedule fits the limit, 2 for bad input.",
    autoschedule_flags, run_autoschedule};

} // namespace pipesched::cli
