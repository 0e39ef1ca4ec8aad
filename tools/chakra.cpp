// pipesched chakra
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>

#include <pipesched/io/json.hpp>
#include <pipesched/chakra/astra.hpp>
#include <pipesched/chakra/export.hpp>
#include <pipesched/io/chrome_trace.hpp>

#include "chakra_files.hpp"
#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 23> chakra_flags{{
    optional(schedule_flags[0]), optional(schedule_flags[1]), optional(schedule_flags[2]), schedule_flags[3],
    schedule_flags[4], schedule_flags[5],
    {"cost", "F=10,B=20,...",
     "as in simulate: one microbatch through one rank's layers (F, B, I, W, recompute: default F; overlap: "
     "an F&B pair, default F + B), split evenly over the rank's chunks; loss per microbatch and optimizer "
     "per rank as given; in --time-unit",
     "F=10,B=20,I=10,W=10,loss=1,optimizer=10", false},
    {"time-unit", "us|ms|ns", "the unit of the --cost numbers; Chakra stores whole microseconds", "us", false},
    {"iteration", "", "the whole iteration: loss, grad_sync, grad_norm, optimizer_step (default: compute + p2p)",
     "", false},
    {"overlap-grad-sync", "", "--iteration: each chunk's grad_sync right after its last backward work", "", false},
    {"distributed-optimizer", "", "--iteration: grad_sync as REDUCE_SCATTER and a param_gather (ALL_GATHER) after the step",
     "", false},
    {"recompute", "", "--iteration: activation checkpointing, a recompute before every backward", "", false},
    {"no-grad-norm", "", "--iteration: no grad_norm all-reduce (no gradient clipping)", "", false},
    {"activation-bytes", "N", "bytes of one activation (and of its gradient) between stages", "1048576", false},
    {"grad-bytes", "N", "bytes of one chunk's gradients (grad_sync) and parameters (param_gather)", "67108864",
     false},
    {"data-parallel", "D", "replicas: p x D ranks, data-parallel groups in PREFIX.groups.json", "1", false},
    {"bandwidth", "GBPS", "link bandwidth for the prediction and PREFIX.network.yml (GB = 2^30 B)", "50", false},
    {"latency", "NS", "link latency in ns for the prediction and PREFIX.network.yml", "500", false},
    {"round", "", "round fractional microseconds instead of refusing them", "", false},
    {"out", "PREFIX", "write PREFIX.<rank>.et for every rank, plus the ASTRA-sim configuration files (required "
     "without --read)", "", false},
    {"read", "PREFIX", "instead: print the nodes of PREFIX.0.et, PREFIX.1.et, ... (every rank)", "", false},
    {"format", "text|json", "what was written and the predicted finish times (or the nodes read), as text or JSON",
     "text", false},
    {"verify", "", "read every file back and check it (round trip through the reader)", "", false},
}};

struct chakra_costs {
    pipesched::stage_costs compute{10.0, 20.0, 10.0, 10.0};
    double loss = 1.0;
    double recompute = -1.0;
    double optimizer = 10.0;
};

/// --cost as simulate reads it: the compute keys are one microbatch through one rank's layers,
/// so each of the rank's v chunks is charged 1/v of them; loss (once per microbatch) and the
/// optimizer step (once per rank) as given. Everything times the --time-unit in microseconds.
chakra_costs read_chakra_costs(const parsed_args& args) {
    chakra_costs c{};
    const auto text = args.get("cost");
    if (!text)
        return c;
    static constexpr std::array<std::string_view, 8> keys{"F",    "B",         "I",         "W",
                                                         "loss", "recompute", "optimizer", "overlap"};
    double* const fields[] = {&c.compute.forward, &c.compute.backward, &c.compute.backward_input,
                              &c.compute.backward_weight, &c.loss, &c.recompute, &c.optimizer,
                              &c.compute.overlapped_forward_backward};
    read_key_values("--cost", *text, keys, [&](std::size_t k, double x) { *fields[k] = x; });
    return c;
}

std::uint64_t read_bytes(const parsed_args& args, std::string_view name, std::uint64_t fallback) {
    const auto text = args.get(name);
    if (!text)
        return fallback;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (ec != std::errc{} || end != text->data() + text->size() || v == 0 || v > (std::uint64_t{1} << 50))
        fail("--" + std::string{name} + " needs a whole number of bytes in 1..2^50, got " + quoted(*text));
    return v;
}

double read_positive(const parsed_args& args, std::string_view name, double fallback, bool zero_ok) {
    const auto text = args.get(name);
    if (!text)
        return fallback;
    const std::string flag = "--" + std::string{name};
    const std::string expected = std::string{"a finite number "} + (zero_ok ? ">= 0" : "> 0") + " and at most 1e12";
    const decimal d = read_decimal(*text);
    if (d.state == decimal::status::overflow || (d.state == decimal::status::underflow && !zero_ok))
        fail(flag + " value " + quoted(*text) + " " + decimal_problem(d) + "; it needs " + expected);
    if (d.state == decimal::status::underflow)
        warn(flag + " value " + quoted(*text) + " " + decimal_problem(d) + "; read as 0");
    if (d.state == decimal::status::invalid || d.value < 0.0 || (!zero_ok && d.value == 0.0))
        fail(flag + " needs a finite number " + (zero_ok ? ">= 0" : "> 0") + ", got " + quoted(*text));
    if (d.value > 1e12)
        fail(flag + " value " + quoted(*text) + " is above the limit of 1e12");
    return d.value;
}

std::string read_file(const std::string& path) {
    std::ifstream f{path, std::ios::binary};
    std::string bytes{std::istreambuf_iterator<char>{f}, std::istreambuf_iterator<char>{}};
    if (!f.good() && !f.eof())
        throw std::runtime_error{"cannot read back " + path};
    return bytes;
}

std::string fixed_text(double x) {
    std::string s;
    pipesched::json::append_number(s, x);
    return s;
}

/// What the export, the prediction and the encoded files hold per (stage, microbatch) unit of
/// one data-parallel replica, as measured: peak RSS / units of `pipesched chakra` at 65536 units
/// (1F1B p=64 m=1024 with and without --backward split, --iteration --recompute and
/// --data-parallel 4; DualPipeV, ZBVZeroBubble, zb_h2 and LoopedBFS p=16 m=2048 --iteration
/// --recompute) was 3.7 to 8.3 KiB. The traces are built whole before they are written.
constexpr std::uint64_t chakra_bytes_per_unit = 9 * 1024;

/// The nodes of one rank's trace, as text: one line per node with its id, type, name,
/// dependencies, peer or group, bytes and duration.
void append_nodes_text(std::string& s, const std::string& file, const pipesched::chakra::trace& t) {
    s += printable(file) + ": " + number_text(t.nodes.size()) + " nodes (Chakra " + printable(t.version) + ")\n";
    std::vector<std::array<std::string, 7>> rows;
    rows.push_back({"  id", "type", "name", "depends on", "peer or group", "bytes", "duration us"});
    const auto list = [](const std::vector<std::uint64_t>& ids) {
        std::string l;
        for (const std::uint64_t id : ids)
            l += (l.empty() ? "" : ",") + number_text(id);
        return l;
    };
    for (const pipesched::chakra::node& n : t.nodes) {
        std::string deps = list(n.data_deps);
        if (!n.ctrl_deps.empty())
            deps += (deps.empty() ? "ctrl " : " ctrl ") + list(n.ctrl_deps);
        std::string peer = "-";
        using pipesched::chakra::node_type;
        if (n.type == node_type::comm_send || n.type == node_type::comm_recv) {
            const auto p = n.unsigned_attr(n.type == node_type::comm_send ? "comm_dst" : "comm_src");
            peer = (n.type == node_type::comm_send ? "to " : "from ") + (p ? number_text(*p) : std::string{"?"});
        } else if (n.type == node_type::comm_coll) {
            const auto kind = n.unsigned_attr("comm_type");
            const pipesched::chakra::attribute* group = n.find("pg_name");
            peer = (kind && *kind <= 9 ? std::string{pipesched::chakra::to_string(
                                             static_cast<pipesched::chakra::collective>(*kind))}
                                       : std::string{"?"}) +
                   " group " +
                   (group == nullptr || group->text.empty() ? std::string{"all"} : "'" + printable(group->text) + "'");
        }
        const auto bytes = n.unsigned_attr("comm_size");
        rows.push_back({"  " + number_text(n.id), std::string{pipesched::chakra::to_string(n.type)},
                        n.name.empty() ? std::string{"-"} : printable(n.name), deps.empty() ? std::string{"-"} : deps,
                        peer, bytes ? number_text(*bytes) : std::string{"-"}, number_text(n.duration_micros)});
    }
    append_columns<7>(s, rows);
}

void append_nodes_json(std::string& s, const std::string& file, const pipesched::chakra::trace& t) {
    using pipesched::json::append_string;
    using pipesched::chakra::node_type;
    s += "{\"file\":";
    append_string(s, file);
    s += ",\"version\":";
    append_string(s, t.version);
    s += ",\"nodes\":[";
    const auto list = [&s](const std::vector<std::uint64_t>& ids) {
        s += '[';
        for (std::size_t k = 0; k < ids.size(); ++k)
            s += (k == 0 ? "" : ",") + number_text(ids[k]);
        s += ']';
    };
    for (std::size_t k = 0; k < t.nodes.size(); ++k) {
        const pipesched::chakra::node& n = t.nodes[k];
        s += k == 0 ? "{\"id\":" : ",{\"id\":";
        s += number_text(n.id) + ",\"type\":";
        append_string(s, pipesched::chakra::to_string(n.type));
        s += ",\"name\":";
        append_string(s, n.name);
        s += ",\"data_deps\":";
        list(n.data_deps);
        s += ",\"ctrl_deps\":";
        list(n.ctrl_deps);
        const auto optional_number = [&s, &n](std::string_view key, std::string_view attr) {
            const auto v = n.unsigned_attr(attr);
            s += ",\"" + std::string{key} + "\":" + (v ? number_text(*v) : std::string{"null"});
        };
        if (n.type == node_type::comm_send || n.type == node_type::comm_recv)
            optional_number("peer", n.type == node_type::comm_send ? "comm_dst" : "comm_src");
        else
            s += ",\"peer\":null";
        if (n.type == node_type::comm_coll) {
            const auto kind = n.unsigned_attr("comm_type");
            s += ",\"collective\":";
            if (kind && *kind <= 9)
                append_string(s, pipesched::chakra::to_string(static_cast<pipesched::chakra::collective>(*kind)));
            else
                s += "null";
            const pipesched::chakra::attribute* group = n.find("pg_name");
            s += ",\"group\":";
            append_string(s, group == nullptr ? std::string_view{} : std::string_view{group->text});
        } else {
            s += ",\"collective\":null,\"group\":null";
        }
        optional_number("bytes", "comm_size");
        s += ",\"duration_micros\":" + number_text(n.duration_micros) + "}";
    }
    s += "]}";
}

/// chakra --read PREFIX: every rank's nodes, one file in memory at a time.
int read_chakra(const parsed_args& args, std::string_view prefix) {
    for (const flag_spec& f : chakra_flags) {
        if (f.name != "read" && f.name != "format" && args.get(f.name))
            fail("--" + std::string{f.name} + " does not apply with --read: the files give the traces");
    }
    const std::string format = format_choice(args, {"text", "json"});
    const std::size_t count = chakra_rank_files(prefix);
    // Every file is read and its peers checked before anything is printed, so that an error
    // leaves no partial output; then each is read again and printed, one at a time.
    for (std::size_t r = 0; r < count; ++r)
        require_peer_files(prefix, r, read_chakra_file(chakra_file(prefix, r)), count);
    output_buffer out{stdout};
    if (format == "json")
        out.append("{\"ranks\":[");
    for (std::size_t r = 0; r < count; ++r) {
        const std::string file = chakra_file(prefix, r);
        const pipesched::chakra::trace t = read_chakra_file(file);
        std::string s;
        if (format == "json") {
            if (r != 0)
                s += ',';
            append_nodes_json(s, file, t);
        } else {
            if (r != 0)
                s += '\n';
            append_nodes_text(s, file, t);
        }
        out.append(s);
    }
    if (format == "json")
        out.append("]}\n");
    return finish_output(out);
}

int run_chakra(const parsed_args& args) {
    if (const auto prefix = args.get("read"))
        return read_chakra(args, *prefix);
    for (const std::string_view flag : {"schedule", "ranks", "microbatches", "out"}) {
        if (!args.get(flag))
            fail("missing required flag --" + std::string{flag} + " (or --read PREFIX)" + args.see_help());
    }
    const schedule_request req = read_schedule(args);
    const chakra_costs c = read_chakra_costs(args);
    const std::string format = format_choice(args, {"text", "json"});
    const std::string prefix{args.get("out").value_or("")};
    if (prefix.empty())
        fail("--out needs a path prefix");
    const bool whole = args.get("iteration").has_value();
    for (std::string_view flag : {"overlap-grad-sync", "distributed-optimizer", "recompute", "no-grad-norm"}) {
        if (!whole && args.get(flag))
            fail("--" + std::string{flag} + " applies only with --iteration");
    }
    pipesched::chakra::export_options o{};
    o.whole_iteration = whole;
    o.round_durations = args.get("round").has_value();
    o.activation_bytes = read_bytes(args, "activation-bytes", o.activation_bytes);
    o.gradient_bytes = read_bytes(args, "grad-bytes", o.gradient_bytes);
    o.parameter_bytes = o.gradient_bytes;
    o.data_parallel = args.count("data-parallel").value_or(1);
    if (args.get("overlap-grad-sync"))
        o.iteration.grad_sync = pipesched::grad_sync_mode::overlapped;
    if (args.get("distributed-optimizer")) {
        o.iteration.param_gather = pipesched::param_gather_mode::after_step;
        o.grad_sync = pipesched::chakra::collective::reduce_scatter;
    }
    o.iteration.activation_checkpointing = args.get("recompute").has_value();
    o.iteration.grad_norm = !args.get("no-grad-norm").has_value();
    pipesched::chakra::astra_network net{};
    net.bandwidth_gbps = read_positive(args, "bandwidth", net.bandwidth_gbps, false);
    net.latency_ns = read_positive(args, "latency", net.latency_ns, true);

    const std::string_view unit = args.get("time-unit").value_or("us");
    const double micros_per_unit = unit == "us" ? 1.0 : unit == "ms" ? 1000.0 : unit == "ns" ? 0.001 : 0.0;
    if (micros_per_unit == 0.0)
        fail("--time-unit must be us, ms or ns, got " + quoted(unit));

    resource_estimate estimate{};
    estimate.shape = req.options.shape;
    estimate.bytes_per_unit = chakra_bytes_per_unit * o.data_parallel;
    estimate.build_bytes = schedule_build_bytes(req.id, req.options.shape);
    require_within_budget(estimate,
                          o.data_parallel > 1 ? "chakra --data-parallel " + number_text(o.data_parallel) : "chakra",
                          "use fewer ranks, chunks or microbatches (each data-parallel replica has its own traces)");
    return with_requested_schedule(req, [&](const auto& pol) -> int {
        const double share = micros_per_unit / static_cast<double>(pol.shape.chunks);
        const auto per_chunk = [share](double x) { return x < 0.0 ? x : x * share; }; // < 0: the default rule
        pipesched::iteration_cost_model costs{};
        costs.compute.uniform = {per_chunk(c.compute.forward), per_chunk(c.compute.backward),
                                 per_chunk(c.compute.backward_input), per_chunk(c.compute.backward_weight),
                                 per_chunk(c.compute.overlapped_forward_backward)};
        costs.recompute = per_chunk(c.recompute);
        costs.loss = c.loss * micros_per_unit;
        costs.optimizer = c.optimizer * micros_per_unit;
        const pipesched::chakra::export_result traces = pipesched::chakra::export_traces(pol, costs, o);
        if (!traces)
            fail(traces.error);
        std::map<std::string, std::vector<std::uint32_t>> groups;
        for (const auto& g : traces.groups)
            groups[number_text(g.id)] = g.ranks;
        const pipesched::chakra::prediction predicted = pipesched::chakra::predict_astra(traces.ranks, net, groups);
        if (!predicted.check)
            throw std::logic_error{"exported traces failed the check: " + predicted.check.message};

        const std::size_t n = traces.ranks.size();
        std::vector<std::string> files;
        for (std::size_t r = 0; r < n; ++r) {
            files.push_back(prefix + "." + number_text(r) + ".et");
            const std::string bytes = pipesched::chakra::encode(traces.ranks[r]);
            write_output(files.back(), bytes);
            if (args.get("verify")) {
                const pipesched::chakra::read_result back = pipesched::chakra::read_trace(read_file(files.back()));
                if (!back)
                    throw std::logic_error{files.back() + ": " + back.error.what()};
                if (back.value != traces.ranks[r])
                    throw std::logic_error{files.back() + ": read back differs from what was written"};
            }
        }
        const std::string network = prefix + ".network.yml";
        write_output(network, "topology: [ FullyConnected ]\nnpus_count: [ " + number_text(n) + " ]\nbandwidth: [ " +
                                fixed_text(net.bandwidth_gbps) + " ]  # GB/s, GB = 2^30 B\nlatency: [ " +
                                fixed_text(net.latency_ns) + " ]  # ns\n");
        const std::string system = prefix + ".system.json";
        write_output(system, "{\n    \"scheduling-policy\": \"LIFO\",\n    \"endpoint-delay\": 10,\n"
                           "    \"active-chunks-per-dimension\": 1,\n    \"preferred-dataset-splits\": 1,\n"
                           "    \"all-reduce-implementation\": [\"ring\"],\n"
                           "    \"all-gather-implementation\": [\"ring\"],\n"
                           "    \"reduce-scatter-implementation\": [\"ring\"],\n"
                           "    \"all-to-all-implementation\": [\"ring\"],\n"
                           "    \"collective-optimization\": \"localBWAware\",\n    \"local-mem-bw\": 1600,\n"
                           "    \"boost-mode\": 0,\n    \"roofline-enabled\": 0,\n    \"peak-perf\": 900\n}\n");
        const std::string memory = prefix + ".remote_memory.json";
        write_output(memory, "{ \"memory-type\": \"NO_MEMORY_EXPANSION\" }\n");
        std::string group_file;
        if (!traces.groups.empty()) {
            group_file = prefix + ".groups.json";
            write_output(group_file, pipesched::chakra::comm_groups_json(traces.groups));
        }

        std::string s;
        if (format == "json") {
            s += "{\"files\":[";
            for (std::size_t r = 0; r < n; ++r) {
                if (r != 0)
                    s += ',';
                pipesched::json::append_string(s, files[r]);
            }
            s += "],\"ranks\":" + number_text(n) + ",\"predicted_finish_ns\":[";
            for (std::size_t r = 0; r < n; ++r) {
                if (r != 0)
                    s += ',';
                s += predicted.finish_ns[r] ? number_text(*predicted.finish_ns[r]) : std::string{"null"};
            }
            s += "],\"approximate\":";
            s += predicted.approximate ? "true" : "false";
            s += ",\"comm_groups\":";
            if (group_file.empty())
                s += "null";
            else
                pipesched::json::append_string(s, group_file);
            s += ",\"network\":";
            pipesched::json::append_string(s, network);
            s += ",\"system\":";
            pipesched::json::append_string(s, system);
            s += ",\"remote_memory\":";
            pipesched::json::append_string(s, memory);
            s += "}\n";
        } else {
            s += "wrote " + number_text(n) + " Chakra traces " + prefix + ".{0.." + number_text(n - 1) + "}.et, " +
                 network + ", " + system + ", " + memory;
            if (!group_file.empty())
                s += ", " + group_file;
            s += "\nrun: AstraSim_Analytical_Congestion_Unaware --workload-configuration=" + prefix +
                 " --system-configuration=" + system + " --remote-memory-configuration=" + memory +
                 " --network-configuration=" + network;
            if (!group_file.empty())
                s += " --comm-group-configuration=" + group_file;
            s += predicted.approximate ? "\npredicted (collectives approximated):\n" : "\npredicted:\n";
            for (std::size_t r = 0; r < n; ++r) {
                s += "sys[" + number_text(r) + "] finished, " +
                     (predicted.finish_ns[r] ? number_text(*predicted.finish_ns[r]) : std::string{"never"}) +
                     " cycles\n";
            }
        }
        output_buffer out{stdout};
        out.append(s);
        return finish_output(out);
    });
}

} // namespace

const command_spec chakra_command{"chakra", "write a schedule as Chakra execution traces for ASTRA-sim 2.0 and predict its run",
     "Writes PREFIX.<rank>.et (Chakra ET, one per rank), PREFIX.network.yml (FullyConnected, the\n"
     "given bandwidth and latency), PREFIX.system.json, PREFIX.remote_memory.json and, with\n"
     "--data-parallel above 1, PREFIX.groups.json for --comm-group-configuration. Compute actions\n"
     "become COMP nodes of the --cost durations (--cost as in simulate: one microbatch through one\n"
     "rank's layers, split evenly over its chunks; Chakra stores whole microseconds), transfers COMM_SEND/COMM_RECV\n"
     "pairs, and with --iteration grad_sync, grad_norm and param_gather COMM_COLL nodes. Prints the\n"
     "per-rank finish times ASTRA-sim's analytical congestion-unaware backend reports for them\n"
     "('sys[r] finished, T cycles', in ns): exact for compute and p2p, approximate for collectives.\n"
     "The traces are built whole before they are written, about 9 KiB per stage and microbatch\n"
     "of each data-parallel replica; beyond 4 GiB the shape is refused with exit 2.\n"
     "With --read PREFIX it writes nothing and prints the nodes of PREFIX.0.et, PREFIX.1.et, ...\n"
     "instead (id, type, name, dependencies, peer or group, bytes, duration), one file at a time.",
     chakra_flags, run_chakra};

} // namespace pipesched::cli
