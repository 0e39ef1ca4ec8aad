// pipesched simai
#include <pipesched/io/json.hpp>
#include <pipesched/simai/analytical_compare.hpp>
#include <pipesched/simai/parse.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>
#include <system_error>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 14> simai_flags{{
    {"schedule", "NAME", "the order to compare SimAI's with", "1F1B", false},
    {"format", "text|json|simai-csv", "a report, the facts as JSON, or SimAI's own EndToEnd CSV", "text", false},
    {"gpus", "N", "SimAI's -g: GPUs in the job", "the workload's all_gpus", false},
    {"gpus-per-server", "N", "SimAI's -g_p_s", "8", false},
    {"nics-per-server", "N", "SimAI's -n_p_s", "8", false},
    {"nvlink", "GBPS", "SimAI's -nv: NVLink bandwidth per GPU", "from --gpu-type", false},
    {"nic", "GBPS", "SimAI's -nic: bandwidth of one NIC", "from --nic-type", false},
    {"gpu-type", "A100|A800|H100|H800|H20", "SimAI's -g_type, used without --nvlink", "A100", false},
    {"nic-type", "cx6|cx7|bf3", "SimAI's -nic_t, used without --nic", "cx7", false},
    {"dp-overlap", "R", "SimAI's -dp_o: share of data-parallel comm hidden, 0..1", "0", false},
    {"tp-overlap", "R", "SimAI's -tp_o, 0..1", "0", false},
    {"ep-overlap", "R", "SimAI's -ep_o, 0..1", "0", false},
    {"pp-overlap", "R", "SimAI's -pp_o, above 0 and at most 1", "1", false},
    {"full", "", "text: every step of SimAI's order (else the first 200 and last 50 of a longer one)", "", false},
}};

/// A float as SimAI's std::stof reads it, but the whole value must be a number. A value that
/// a float cannot hold says so: beyond its range, or so small that it becomes 0 (an error where
/// 0 is not allowed, else a warning).
float float_flag(const parsed_args& args, std::string_view name, float fallback, float low, float high,
                 bool low_open) {
    const auto v = args.get(name);
    if (!v)
        return fallback;
    const std::string flag = "--" + std::string{name};
    const std::string expected = std::string{"expected a number "} + (low_open ? "above " : "from ") + fixed(low, 0) +
                                 (high < 1e30f ? " to " + fixed(high, 0) : std::string{});
    const decimal d = read_decimal(*v);
    if (d.state == decimal::status::invalid)
        fail(flag + ": " + expected + ", got " + quoted(*v));
    if (d.state == decimal::status::overflow || d.value > static_cast<double>(std::numeric_limits<float>::max()))
        fail(flag + ": " + quoted(*v) + " is too large for SimAI's float (the largest is 3.40282347e38); " + expected);
    const auto x = static_cast<float>(d.value);
    if (x == 0.0f && (d.state == decimal::status::underflow || d.value != 0.0)) {
        const std::string why = quoted(*v) + " underflows to 0 in SimAI's float (the smallest positive float is 1.4e-45)";
        if (low_open || low > 0.0f)
            fail(flag + ": " + why + "; " + expected);
        warn(flag + ": " + why + "; read as 0");
    }
    const bool above_low = low_open ? x > low : x >= low;
    if (!above_low || !(x <= high))
        fail(flag + ": " + expected + ", got " + quoted(*v));
    return x;
}

pipesched::simai::analytical_options read_network(const parsed_args& args) {
    pipesched::simai::analytical_options o{};
    if (const auto n = args.count("gpus"))
        o.gpus = *n;
    if (const auto n = args.count("gpus-per-server"))
        o.gpus_per_server = *n;
    if (const auto n = args.count("nics-per-server"))
        o.nics_per_server = *n;
    const float huge = 3.0e38f;
    o.nvlink_gbps = float_flag(args, "nvlink", o.nvlink_gbps, 0.0f, huge, true);
    o.nic_gbps = float_flag(args, "nic", o.nic_gbps, 0.0f, huge, true);
    if (const auto t = args.get("gpu-type")) {
        o.gpu = pipesched::simai::parse_gpu_type(*t);
        if (o.gpu == pipesched::simai::gpu_type::none)
            fail("--gpu-type: unknown GPU type " + quoted(*t) + ", expected A100, A800, H100, H800 or H20");
    }
    if (const auto t = args.get("nic-type")) {
        o.nic = pipesched::simai::parse_nic_type(*t);
        if (o.nic == pipesched::simai::nic_type::none)
            fail("--nic-type: unknown NIC type " + quoted(*t) + ", expected cx6, cx7 or bf3");
    }
    o.dp_overlap = float_flag(args, "dp-overlap", o.dp_overlap, 0.0f, 1.0f, false);
    o.tp_overlap = float_flag(args, "tp-overlap", o.tp_overlap, 0.0f, 1.0f, false);
    o.ep_overlap = float_flag(args, "ep-overlap", o.ep_overlap, 0.0f, 1.0f, false);
    o.pp_overlap = float_flag(args, "pp-overlap", o.pp_overlap, 0.0f, 1.0f, true);
    return o;
}

/// The SimAI_analytical arguments that give the same report.
std::string simai_arguments(const pipesched::simai::analytical_options& o) {
    const auto g = [](float x) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", static_cast<double>(x));
        return std::string{buf};
    };
    std::string s = "-g " + number_text(o.gpus) + " -g_p_s " + number_text(o.gpus_per_server) + " -n_p_s " +
                    number_text(o.nics_per_server);
    s += o.nvlink_gbps > 0.0f ? " -nv " + g(o.nvlink_gbps) : " -g_type " + std::string{pipesched::simai::to_string(o.gpu)};
    s += o.nic_gbps > 0.0f ? " -nic " + g(o.nic_gbps) : " -nic_t " + std::string{pipesched::simai::to_string(o.nic)};
    if (o.dp_overlap != 0.0f)
        s += " -dp_o " + g(o.dp_overlap);
    if (o.tp_overlap != 0.0f)
        s += " -tp_o " + g(o.tp_overlap);
    if (o.ep_overlap != 0.0f)
        s += " -ep_o " + g(o.ep_overlap);
    if (o.pp_overlap != 1.0f)
        s += " -pp_o " + g(o.pp_overlap);
    return s;
}

std::string ms(double ns) { return fixed(ns / 1e6) + " ms"; }

/// "7-11, 20" for ascending runs and "16-12" for descending ones (SimAI's backward sweep).
std::string rows_text(const std::vector<std::size_t>& rows) {
    std::string s;
    std::size_t i = 0;
    while (i < rows.size()) {
        std::size_t j = i;
        while (j + 1 < rows.size() && rows[j + 1] == rows[j] + 1)
            ++j;
        if (j == i) {
            while (j + 1 < rows.size() && rows[j] > 0 && rows[j + 1] == rows[j] - 1)
                ++j;
        }
        if (!s.empty())
            s += ", ";
        s += number_text(rows[i]);
        if (j > i)
            s += "-" + number_text(rows[j]);
        i = j + 1;
        if (s.size() > 60 && i < rows.size()) {
            s += ", ...";
            break;
        }
    }
    return s;
}

/// Rows begin..end-1 as "3-7" (a single row as "3-3"), or "none" when there are none.
std::string row_range(std::size_t begin, std::size_t end) {
    if (begin >= end)
        return "none";
    return number_text(begin) + "-" + number_text(end - 1);
}

/// What the report should say before its numbers are trusted: checkpoint lists (which SimAI
/// v1.6 misreads; the analysis runs without them) and compute times that look like AICB's
/// placeholders or have forward and backward swapped. Each names the line it comes from.
std::vector<std::string> workload_warnings(std::string_view text, const pipesched::simai::workload& w) {
    std::vector<std::string> warnings;
    const pipesched::simai::header& h = w.header;
    const auto listed = [](const std::optional<std::vector<std::uint32_t>>& v) { return v && !v->empty(); };
    if (listed(h.checkpoints) || listed(h.checkpoint_initiates)) {
        const std::string_view first_line = text.substr(0, text.find('\n'));
        const std::size_t at = first_line.find("checkpoint");
        warnings.push_back("line 1, column " + number_text(at == std::string_view::npos ? 1 : at + 1) +
                           ": the workload lists checkpoints; SimAI v1.6 misreads checkpoint lists (it reads the "
                           "first listed layer for every entry), so this analysis leaves them out: SimAI's order, "
                           "its report and the timelines below are those of the rows without recomputation");
    }
    std::size_t placeholder_backward = 0;
    std::size_t first_placeholder = 0;
    bool all_placeholders = !w.rows.empty();
    double forward = 0.0;
    double backward = 0.0;
    for (std::size_t i = 0; i < w.rows.size(); ++i) {
        const pipesched::simai::row& r = w.rows[i];
        const std::uint64_t f = r.forward.compute_ns;
        const std::uint64_t b = r.input_grad.compute_ns + r.weight_grad.compute_ns;
        forward += static_cast<double>(f);
        backward += static_cast<double>(b);
        if (f > 1 || r.input_grad.compute_ns > 1 || r.weight_grad.compute_ns > 1)
            all_placeholders = false;
        if (f > 1 && r.input_grad.compute_ns <= 1 && r.weight_grad.compute_ns <= 1) {
            if (placeholder_backward++ == 0)
                first_placeholder = i;
        }
    }
    if (all_placeholders) {
        warnings.push_back("lines 3-" + number_text(pipesched::simai::line_of_row(w.rows.size() - 1)) +
                           ": every row's compute time is 0 or 1 ns (AICB's placeholder when it has no compute "
                           "model): the times below are communication only");
    } else if (placeholder_backward > 0) {
        const std::size_t line = pipesched::simai::line_of_row(first_placeholder);
        warnings.push_back(number_text(placeholder_backward) + " rows (the first on line " + number_text(line) + ", " +
                           printable(w.rows[first_placeholder].name) +
                           ") have a forward above 1 ns but a backward of 0 or 1 ns: their backward is missing "
                           "from the times below");
    }
    if (!all_placeholders && forward > 2.0 * backward) {
        warnings.push_back("lines 3-" + number_text(pipesched::simai::line_of_row(w.rows.size() - 1)) +
                           ": the forward compute (" + fixed(forward / 1e6) + " ms) is more than twice the backward (" +
                           fixed(backward / 1e6) +
                           " ms), where a backward usually takes about twice its forward: check the columns");
    }
    return warnings;
}

/// A text report lists SimAI's order in full up to this many steps; a longer one (one step per
/// microbatch and pass: ga = 65536 made 11.8 MB) shows its first and last steps, unless --full.
constexpr std::size_t steps_shown_first = 200;
constexpr std::size_t steps_shown_last = 50;

std::string simai_report_text(std::string_view source, const pipesched::simai::workload& w,
                              const pipesched::simai::analytical_comparison& a, std::span<const std::string> warnings,
                              bool megatron_order, bool one_chunk, bool full) {
    const pipesched::simai::comparison& c = a.timeline;
    using pipesched::simai::meaning;
    const auto& st = c.layout;
    std::string s;
    s += "SimAI workload " + std::string{source} + ": " + printable(w.header.policy) + ", tp " +
         number_text(w.header.tp.value_or(1)) + ", pp " + number_text(c.pp) + ", ga " + number_text(c.ga) + ", " +
         number_text(w.rows.size()) + " rows\n";
    for (const std::string& warning : warnings)
        s += "  warning: " + warning + "\n";
    if (st.ga_unrolled()) {
        s += "Rows: iteration-level " + row_range(0, st.prefix_end) + ", " + number_text(st.blocks.size()) +
             " microbatch blocks of " + number_text(st.period) + " rows (" + row_range(st.body_begin, st.body_end) +
             "), loss " + row_range(st.loss_begin, st.loss_end) + ", optimizer " +
             row_range(st.optimizer_begin, st.optimizer_end) + "\n";
    } else {
        s += "Rows: the microbatch rows do not split into ga identical blocks (" +
             number_text(st.errors_total) + " rows do not fit)\n";
    }
    // The same AICB quirk repeats in every block: show a few and count the rest.
    constexpr std::size_t notes_shown = 2;
    for (std::size_t k = 0; k < st.warnings.size() && k < notes_shown; ++k)
        s += "  note: " + printable(st.warnings[k].message) + "\n";
    if (st.warnings_total > notes_shown)
        s += "  note: ... and " + number_text(st.warnings_total - notes_shown) + " more cost differences between blocks\n";

    s += "\nSimAI's order (one pass: forward over the rows, then backward in reverse):\n";
    // Consecutive steps with the same meaning, as one line (placeholders do not split a line).
    std::vector<const pipesched::simai::labelled_step*> steps;
    for (const auto& l : c.simai_steps) {
        if (l.role != meaning::placeholder)
            steps.push_back(&l);
    }
    std::size_t i = 0;
    std::size_t n = 1;
    std::vector<std::string> lines;
    while (i < steps.size()) {
        const auto& first = *steps[i];
        std::size_t j = i;
        std::vector<std::size_t> rows;
        double end = first.end_ns;
        while (j < steps.size() && steps[j]->role == first.role && steps[j]->microbatch == first.microbatch) {
            if (rows.empty() || rows.back() != steps[j]->what.row)
                rows.push_back(steps[j]->what.row);
            end = std::max(end, steps[j]->end_ns);
            ++j;
        }
        {
            std::string name = first.role == meaning::forward    ? "forward mb " + number_text(first.microbatch)
                               : first.role == meaning::backward ? "backward mb " + number_text(first.microbatch)
                                                                 : std::string{pipesched::simai::to_string(first.role)};
            std::string line = "  " + number_text(n++) + ". ";
            line += name;
            // Columns at 24 and 60, at least one space apart past step 9999 (`backward mb 43rows`).
            do
                line += ' ';
            while (line.size() < 24);
            line += "rows " + rows_text(rows);
            do
                line += ' ';
            while (line.size() < 60);
            line += ms(first.start_ns) + " .. " + ms(end) + "\n";
            lines.push_back(std::move(line));
        }
        i = j;
    }
    const bool abbreviated = !full && lines.size() > steps_shown_first + steps_shown_last;
    for (std::size_t k = 0; k < lines.size(); ++k) {
        if (abbreviated && k == steps_shown_first) {
            s += "  ... " + number_text(lines.size() - steps_shown_first - steps_shown_last) +
                 " more steps (--full prints every step)\n";
            k = lines.size() - steps_shown_last;
        }
        s += lines[k];
    }

    s += "\nProblems with that order:\n";
    if (c.problems.empty())
        s += "  none\n";
    for (std::size_t k = 0; k < c.problems.size(); ++k) {
        s += "  " + number_text(k + 1) + ". " + c.problems[k].what;
        if (!c.problems[k].rows.empty())
            s += " (rows " + rows_text(c.problems[k].rows) + ")";
        s += "\n";
    }
    s += "  pipesched's iteration rules: " + pipesched::describe(c.simai.check) + "\n";
    if (c.simai.check.code == pipesched::verdict_code::stale_update)
        s += "  (stale_update: an optimizer step runs before the gradient synchronisation it needs; SimAI moves\n"
             "  no tensors and adds its analytical numbers up row by row in any order, so no number of its\n"
             "  report changes, only where the collectives land in a timeline and the activations alive.)\n";

    const auto join = [](const std::vector<std::string>& events) {
        std::string t;
        for (std::size_t k = 0; k < events.size(); ++k) {
            if (k == 40) {
                t += " ... (" + number_text(events.size()) + " events)";
                break;
            }
            t += (k == 0 ? "" : " ") + events[k];
        }
        return t;
    };
    s += "\nSimAI order:     " + join(c.simai.events) + "\n";
    s += "Corrected order: " + join(c.corrected.events) + "  (" + c.corrected.name +
         (c.pp > 1          ? ", rank 0 of " + number_text(c.pp)
          : megatron_order ? std::string{", one rank: Megatron's gradient accumulation"}
                           : std::string{", one rank"}) +
         (one_chunk ? ", one chunk per rank" : "") + ")\n";
    if (c.pp > 1)
        s += "Note: pp = " + number_text(c.pp) + ": the file describes one stage; SimAI's pass is replayed for it "
             "alone, the corrected order runs " + c.corrected.name + " over " + number_text(c.pp) + " ranks.\n";

    const auto print_table = [&s](const std::vector<std::array<std::string, 3>>& table) {
        for (const auto& row : table) {
            append_padded(s, row[0], 32);
            append_padded(s, row[1], 16);
            s += row[2] + "\n";
        }
    };
    s += "\n";
    print_table({
        {"", "SimAI", c.corrected.name},
        {"peak microbatches in flight", number_text(c.simai.peak_microbatches_in_flight),
         number_text(c.corrected.peak_microbatches_in_flight)},
        {"optimizer before backward", c.simai.optimizer_before_backward ? "yes" : "no",
         c.corrected.optimizer_before_backward ? "yes" : "no"},
        {"optimizer after all grad sync", c.simai.optimizer_after_all_grad_sync ? "yes" : "no",
         c.corrected.optimizer_after_all_grad_sync ? "yes" : "no"},
        {"iteration rules", c.simai.check ? "valid" : std::string{pipesched::to_string(c.simai.check.code)},
         c.corrected.check ? "valid" : std::string{pipesched::to_string(c.corrected.check.code)}},
    });

    const pipesched::simai::analytical_totals& t = a.report.totals;
    const auto us_ms = [](double us) { return fixed(us / 1e3) + " ms"; };
    s += "\nSimAI's analytical report (SimAI_analytical " + simai_arguments(a.report.options) +
         "),\nthe same for both orders:\n";
    s += "  total time " + us_ms(t.total_time_us) + " = compute " + us_ms(t.total_comp_us) + " + exposed comm " +
         us_ms(t.total_exposed_comm_us) + " + bubble " + us_ms(t.bubble_time_us) + " + exposed PP " +
         us_ms(t.expose_pp_comm_us) + "\n";
    s += "  exposed comm: DP " + us_ms(t.expose_dp_comm_us) + ", DP_EP " + us_ms(t.expose_dp_ep_comm_us) + ", TP " +
         us_ms(t.expose_tp_comm_us) + ", EP " + us_ms(t.expose_ep_comm_us) + "\n";
    for (const std::string& note : a.report.notes)
        s += "  note: " + note + "\n";
    s += "  SimAI's analytical mode adds up each row's compute and communication, so it cannot show\n"
         "  the difference between the two orders in time, only in memory and placement (above).\n";

    s += "\nTimeline replay with SimAI's per-collective times (what a timeline backend such as SimAI's\n"
         "ns-3 mode would see; the SimAI order's steps above are timed with it):\n";
    print_table({
        {"", "SimAI", c.corrected.name},
        {"makespan", ms(c.simai.makespan_ns), ms(c.corrected.makespan_ns)},
        {"compute and blocking comm", ms(c.simai.compute_ns), ms(c.corrected.compute_ns)},
        {"exposed gradient sync", ms(c.simai.exposed_grad_sync_ns), ms(c.corrected.exposed_grad_sync_ns)},
    });
    if (c.pp > 1) {
        s += "Pipeline bubble on rank 0: SimAI's term (pp-1)/(ga*vpp) x stage time " + ms(a.simai_bubble_ns) +
             ";\n  " + c.corrected.name + "'s actual bubble " + ms(a.policy_bubble_without_p2p_ns) + ", or " +
             ms(a.policy_bubble_ns) + " with SimAI's pp message time of " + ms(a.p2p_message_ns) +
             " (pp_comm / 2^30 s / pp_o).\n";
        const bool policy_larger = a.policy_bubble_without_p2p_ns > a.simai_bubble_ns;
        s += std::string{"  "} + (policy_larger ? c.corrected.name + "'s bubble is larger" : "SimAI's term is larger") +
             (w.header.vpp && *w.header.vpp > 1
                  ? ": SimAI divides by vpp = " + number_text(*w.header.vpp) +
                        ", which AICB writes as the layers per stage, not virtual stages.\n"
                  : ".\n");
    }
    return s;
}

void append_order_json(std::string& s, const pipesched::simai::order_report& o) {
    using pipesched::json::append_number;
    using pipesched::json::append_string;
    s += "{\"name\":";
    append_string(s, o.name);
    s += ",\"events\":[";
    for (std::size_t k = 0; k < o.events.size(); ++k) {
        if (k != 0)
            s += ',';
        append_string(s, o.events[k]);
    }
    s += "],\"peak_microbatches_in_flight\":" + number_text(o.peak_microbatches_in_flight);
    s += std::string{",\"optimizer_before_backward\":"} + (o.optimizer_before_backward ? "true" : "false");
    s += std::string{",\"optimizer_after_all_grad_sync\":"} + (o.optimizer_after_all_grad_sync ? "true" : "false");
    s += ",\"makespan_ns\":";
    append_number(s, o.makespan_ns);
    s += ",\"compute_ns\":";
    append_number(s, o.compute_ns);
    s += ",\"exposed_grad_sync_ns\":";
    append_number(s, o.exposed_grad_sync_ns);
    s += ",\"verdict\":";
    append_string(s, pipesched::describe(o.check));
    s += "}";
}

/// The analysis replays SimAI's pass (linear in the rows) and the corrected order of pp ranks
/// times ga microbatches; these bound what a small file can ask for.
constexpr std::uint64_t max_pipeline_units = std::uint64_t{1} << 21;

/// Refuses header values beyond what the analysis can replay, naming the limit, and a
/// schedule that cannot run the workload's shape, saying why.
void require_within_limits(std::string_view source, const pipesched::simai::header& h,
                           pipesched::schedule_id policy) {
    const std::uint64_t ga = std::max<std::uint64_t>(1, h.ga);
    const std::uint64_t pp = std::max<std::uint64_t>(1, h.pp);
    const std::string where = std::string{source} + ": line 1: ";
    if (ga > pipesched::max_microbatches) {
        fail(where + "ga " + number_text(ga) + " is above the limit of " + number_text(pipesched::max_microbatches) +
             " microbatches");
    }
    if (pp > pipesched::max_ranks)
        fail(where + "pp " + number_text(pp) + " is above the limit of " + number_text(pipesched::max_ranks) + " ranks");
    if (pp * ga > max_pipeline_units) {
        fail(where + "pp " + number_text(pp) + " x ga " + number_text(ga) + " = " + number_text(pp * ga) +
             " pipeline units is above the limit of " + number_text(max_pipeline_units) +
             " that the corrected order is replayed for");
    }
    pipesched::schedule_options options{};
    options.shape = {static_cast<std::uint32_t>(pp), static_cast<std::uint32_t>(ga), 1};
    pipesched::with_schedule(policy, options, [&](const auto& pol) {
        if (const pipesched::shape_check c = pol.check(); !c) {
            fail("--schedule " + std::string{pipesched::display_name(pipesched::info(policy))} +
                 " cannot run this workload (pp " + number_text(pp) + ", ga " + number_text(ga) +
                 ", one chunk per rank): " + std::string{c.message});
        }
    });
}

/// Whether `policy` on one rank runs Megatron's gradient accumulation without pipelining
/// (forward_backward_no_pipelining: F0 B0 F1 B1 ...), as 1F1B does and GPipe does not.
bool same_order_as_megatron(pipesched::schedule_id policy, std::uint32_t ga) {
    pipesched::schedule_options options{};
    options.shape = {1, std::max<std::uint32_t>(1, ga), 1};
    return pipesched::with_schedule(policy, options, [](const auto& pol) {
        if (!pol.check())
            return false;
        std::uint32_t k = 0;
        for (const pipesched::event& e : pipesched::events(pol, 0)) {
            const pipesched::op expected = k % 2 == 0 ? pipesched::op::forward : pipesched::op::backward;
            if (e.kind != expected || e.microbatch != k / 2)
                return false;
            ++k;
        }
        return k == 2 * pol.shape.microbatches;
    });
}

} // namespace

std::string simai_report(std::string_view source, std::string_view text, pipesched::schedule_id policy,
                         std::string_view format, const pipesched::simai::analytical_options& network, bool full) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
        fail(std::string{source} + ": line 1, column 1: a UTF-8 byte order mark (BOM); save the file without one");
    const pipesched::simai::parse_result parsed = pipesched::simai::parse_workload(text);
    if (!parsed) {
        const auto& e = *parsed.error;
        fail(std::string{source} + ": " + describe(e));
    }
    require_within_limits(source, parsed.value.header, policy);
    const std::vector<std::string> warnings = workload_warnings(text, parsed.value);
    // SimAI v1.6 misreads checkpoint lists (warned above): the analysis runs without them.
    pipesched::simai::workload w = parsed.value;
    w.header.checkpoints.reset();
    w.header.checkpoint_initiates.reset();
    const pipesched::simai::analytical_comparison_result analysed =
        pipesched::simai::compare_analytical(w, policy, network);
    if (!analysed)
        fail(std::string{source} + ": SimAI's analytical model: " + describe(*analysed.error, &w));
    const pipesched::simai::analytical_comparison& a = analysed.value;
    const pipesched::simai::comparison& c = a.timeline;
    std::string s;
    if (format == "simai-csv") {
        // SimAI names the report after -r; a run as `-r NAME-` puts "NAME-" in the first field.
        std::string name{source};
        if (const std::size_t slash = name.find_last_of('/'); slash != std::string::npos)
            name = name.substr(slash + 1);
        if (const std::size_t dot = name.find_last_of('.'); dot != std::string::npos && dot > 0)
            name = name.substr(0, dot);
        for (const std::string& warning : warnings)
            warn(std::string{source} + ": " + warning);
        return pipesched::simai::end_to_end_csv(a.report, name + "-");
    }
    if (format == "json") {
        s += "{\"orders\":[";
        append_order_json(s, c.simai);
        s += ',';
        append_order_json(s, c.corrected);
        s += "],\"problems\":[";
        for (std::size_t k = 0; k < c.problems.size(); ++k) {
            if (k != 0)
                s += ',';
            s += "{\"what\":";
            pipesched::json::append_string(s, c.problems[k].what);
            s += ",\"rows\":[";
            for (std::size_t r = 0; r < c.problems[k].rows.size(); ++r)
                s += (r == 0 ? "" : ",") + number_text(c.problems[k].rows[r]);
            s += "]}";
        }
        const pipesched::simai::analytical_totals& t = a.report.totals;
        s += "],\"simai_report\":{\"arguments\":";
        pipesched::json::append_string(s, simai_arguments(a.report.options));
        const std::pair<const char*, double> fields[] = {
            {"expose_dp_comm_us", t.expose_dp_comm_us},       {"expose_dp_ep_comm_us", t.expose_dp_ep_comm_us},
            {"expose_tp_comm_us", t.expose_tp_comm_us},       {"expose_ep_comm_us", t.expose_ep_comm_us},
            {"expose_pp_comm_us", t.expose_pp_comm_us},       {"bubble_time_us", t.bubble_time_us},
            {"total_comp_us", t.total_comp_us},               {"total_exposed_comm_us", t.total_exposed_comm_us},
            {"total_time_us", t.total_time_us},               {"policy_bubble_us", a.policy_bubble_ns / 1e3},
            {"policy_bubble_without_p2p_us", a.policy_bubble_without_p2p_ns / 1e3},
            {"p2p_message_us", a.p2p_message_ns / 1e3},
        };
        for (const auto& [key, value] : fields) {
            s += ",\"" + std::string{key} + "\":";
            pipesched::json::append_number(s, std::round(value * 1e3) / 1e3); // to the nanosecond
        }
        s += ",\"notes\":";
        pipesched::json::append_array(s, a.report.notes);
        s += "},\"warnings\":";
        pipesched::json::append_array(s, warnings);
        s += "}\n";
    } else {
        // A multi-chunk schedule runs one chunk per rank here (the file's stages): said so.
        s = simai_report_text(source, w, a, warnings, same_order_as_megatron(policy, c.ga),
                              pipesched::info(policy).multi_chunk, full);
    }
    return s;
}

namespace {

int run_simai(const parsed_args& args) {
    pipesched::schedule_id policy = pipesched::schedule_id::one_f_one_b;
    if (const auto name = args.get("schedule")) {
        const auto id = pipesched::find_schedule(*name);
        if (!id)
            fail("--schedule: unknown schedule " + quoted(*name) + ", expected one of " + schedule_names());
        policy = *id;
    }
    const std::string format = format_choice(args, {"text", "json", "simai-csv"});
    if (args.get("full") && format != "text")
        fail("--full applies only to --format text, not to " + format);
    const pipesched::simai::analytical_options network = read_network(args);
    const std::string_view path = args.positional();
    output_buffer out{stdout};
    out.append(simai_report(path == "-" ? std::string{"standard input"} : file_label(path), read_input(path), policy,
                            format, network, args.get("full").has_value()));
    return finish_output(out);
}

} // namespace

const command_spec simai_command{"simai", "SimAI's execution order of an AICB workload file against a training framework's",
     "Parses a SimAI/AICB workload file, traces the order in which SimAI runs its rows, names each\n"
     "ordering problem with its rows, and compares it with the corrected order (1F1B by default;\n"
     "with pp = 1 that is Megatron's F0 B0 F1 B1 ...): activations in flight, where the optimizer\n"
     "and gradient sync land. Times come from SimAI's own analytical model (SimAI_analytical v1.6),\n"
     "whose command-line parameters the network flags mirror: its report (the EndToEnd CSV with\n"
     "--format simai-csv), the same for both orders, and a timeline replay of both orders with\n"
     "SimAI's per-collective times. A text report lists the first 200 and the last 50 steps of an\n"
     "order longer than 250 steps; --full lists every step.",
     simai_flags, run_simai, "FILE"};

} // namespace pipesched::cli
