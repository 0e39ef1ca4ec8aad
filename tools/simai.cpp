// pipesched simai
#include <pipesched/io/json.hpp>
#include <pipesched/io/simai.hpp>
#include <pipesched/io/simai_compare.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 2> simai_flags{{
    {"schedule", "NAME", "the order to compare SimAI's with", "1F1B", false},
    {"format", "text|json", "a report, or the facts of both orders as JSON", "text", false},
}};

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

/// The shortest decimal text of x ("5", "0.5", "25").
std::string shortest(double x) {
    std::array<char, 32> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), x);
    return r.ec == std::errc{} ? std::string(buf.data(), r.ptr) : fixed(x);
}

/// The network model the comparison used, in words, read off the model itself.
std::string network_text(const pipesched::simai::network_model& net) {
    using pipesched::simai::collective;
    using pipesched::simai::comm_group;
    constexpr std::uint64_t probe = 1'000'000'000; // bytes
    const double all_reduce = net.collective_ns(collective::allreduce, comm_group::tp, probe) - net.latency_ns;
    const double all_gather = net.collective_ns(collective::allgather, comm_group::tp, probe) - net.latency_ns;
    std::string s = "\nNetwork model: collective time = " + shortest(net.latency_ns / 1000.0) +
                    " us + bytes / bandwidth";
    if (all_gather > 0.0 && all_reduce != all_gather)
        s += " (x" + shortest(all_reduce / all_gather) + " for all-reduce)";
    // Bandwidths are bytes per ns, which is GB/s.
    s += "; tensor parallel " + shortest(net.tp_bandwidth) + " GB/s,\n";
    if (net.dp_bandwidth == net.ep_bandwidth) {
        s += "data and expert parallel " + shortest(net.dp_bandwidth) + " GB/s.\n";
    } else {
        s += "data parallel " + shortest(net.dp_bandwidth) + " GB/s, expert parallel " + shortest(net.ep_bandwidth) +
             " GB/s.\n";
    }
    return s;
}

std::string simai_report_text(std::string_view source, const pipesched::simai::workload& w,
                              const pipesched::simai::comparison& c) {
    using pipesched::simai::meaning;
    const auto& st = c.layout;
    std::string s;
    s += "SimAI workload " + std::string{source} + ": " + printable(w.header.policy) + ", tp " +
         number_text(w.header.tp.value_or(1)) + ", pp " + number_text(c.pp) + ", ga " + number_text(c.ga) + ", " +
         number_text(w.rows.size()) + " rows\n";
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
            while (line.size() < 24)
                line += ' ';
            line += "rows " + rows_text(rows);
            while (line.size() < 60)
                line += ' ';
            line += ms(first.start_ns) + " .. " + ms(end) + "\n";
            s += line;
        }
        i = j;
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
         (c.pp == 1 ? ", one rank: Megatron's gradient accumulation" : ", rank 0 of " + number_text(c.pp)) + ")\n";
    if (c.pp > 1)
        s += "Note: pp = " + number_text(c.pp) + ": the file describes one stage; SimAI's pass is replayed for it "
             "alone, the corrected order runs " + c.corrected.name + " over " + number_text(c.pp) + " ranks.\n";

    std::vector<std::array<std::string, 3>> table{
        {"", "SimAI", c.corrected.name},
        {"peak microbatches in flight", number_text(c.simai.peak_microbatches_in_flight),
         number_text(c.corrected.peak_microbatches_in_flight)},
        {"optimizer before backward", c.simai.optimizer_before_backward ? "yes" : "no",
         c.corrected.optimizer_before_backward ? "yes" : "no"},
        {"optimizer after all grad sync", c.simai.optimizer_after_all_grad_sync ? "yes" : "no",
         c.corrected.optimizer_after_all_grad_sync ? "yes" : "no"},
        {"makespan", ms(c.simai.makespan_ns), ms(c.corrected.makespan_ns)},
        {"compute", ms(c.simai.compute_ns), ms(c.corrected.compute_ns)},
        {"exposed gradient sync", ms(c.simai.exposed_grad_sync_ns), ms(c.corrected.exposed_grad_sync_ns)},
        {"iteration rules", c.simai.check ? "valid" : std::string{pipesched::to_string(c.simai.check.code)},
         c.corrected.check ? "valid" : std::string{pipesched::to_string(c.corrected.check.code)}},
    };
    s += "\n";
    for (const auto& row : table) {
        append_padded(s, row[0], 32);
        append_padded(s, row[1], 16);
        s += row[2] + "\n";
    }
    s += network_text(pipesched::simai::network_model{});
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
    options.dims = {static_cast<std::uint32_t>(pp), static_cast<std::uint32_t>(ga), 1};
    pipesched::with_schedule(policy, options, [&](const auto& pol) {
        if (const pipesched::shape_check c = pol.check(); !c) {
            fail("--schedule " + std::string{pipesched::display_name(pipesched::info(policy))} +
                 " cannot run this workload (pp " + number_text(pp) + ", ga " + number_text(ga) +
                 ", one chunk per rank): " + std::string{c.message});
        }
    });
}

} // namespace

std::string simai_report(std::string_view source, std::string_view text, pipesched::schedule_id policy,
                         std::string_view format) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
        fail(std::string{source} + ": line 1, column 1: a UTF-8 byte order mark (BOM); save the file without one");
    const pipesched::simai::parse_result parsed = pipesched::simai::parse_workload(text);
    if (!parsed) {
        const auto& e = *parsed.error;
        fail(std::string{source} + ": " + e.to_string());
    }
    require_within_limits(source, parsed.value.header, policy);
    const pipesched::simai::comparison c = pipesched::simai::compare(parsed.value, policy);
    std::string s;
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
        s += "]}\n";
    } else {
        s = simai_report_text(source, parsed.value, c);
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
    const std::string format = format_choice(args, {"text", "json"});
    const std::string_view path = args.positional();
    output_buffer out{stdout};
    out.append(simai_report(path == "-" ? std::string{"standard input"} : file_label(path), read_input(path), policy,
                            format));
    return finish_output(out);
}

} // namespace

const command_spec simai_command{"simai", "SimAI's execution order of an AICB workload file against a training framework's",
     "Parses a SimAI/AICB workload file, traces the order in which SimAI runs its rows, names each\n"
     "ordering problem with its rows, and compares it with the corrected order (1F1B by default;\n"
     "with pp = 1 that is Megatron's F0 B0 F1 B1 ...): activations in flight, where the optimizer\n"
     "and gradient sync land, makespan and exposed gradient sync under a simple network model.",
     simai_flags, run_simai, "FILE"};

} // namespace pipesched::cli
