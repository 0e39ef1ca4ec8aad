// pipesched plan

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>
#include <string>
#include <vector>

#include <pipesched/chakra/export.hpp>
#include <pipesched/io/chrome_trace.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/io/json.hpp>
#include <pipesched/io/svg.hpp>
#include <pipesched/plan/hf_config.hpp>
#include <pipesched/plan/megatron_args.hpp>
#include <pipesched/plan/plan.hpp>
#include <pipesched/io/plan_json.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "plan_search.hpp"

namespace pipesched::cli {
namespace {

namespace pl = pipesched::plan;

constexpr std::array<flag_spec, 21> plan_flags{{
    {"model", "FILE", "a Hugging Face config.json (the model's shape; Megatron arguments after -- override it)", "",
     false},
    {"gpu", "NAME", "h100, h200, h800, a100-80gb, a100-40gb, b200 or mi300x", "h100", false},
    {"gpus", "N", "world size: data-parallel size = N / (TP x PP x CP)", "TP x PP x CP", false},
    {"microbatches", "M", "microbatches per iteration, instead of global batch / (micro-batch x DP)", "", false},
    {"gpu-memory", "GIB", "GPU memory in GiB, instead of the preset's", "", false},
    {"gpu-tflops", "T", "peak dense BF16 TFLOP/s, instead of the preset's", "", false},
    {"efficiency", "E", "fraction of the peak the GEMMs reach at their best shape, in [1e-6, 1]", "the GPU's", false},
    {"gpus-per-node", "N", "GPUs per node (NVLink domain); must divide --gpus", "8", false},
    {"nvlink-gbytes", "GB/s", "NVLink bandwidth per GPU, one direction", "the GPU's", false},
    {"nic-gbits", "Gb/s", "network bandwidth per GPU (its NIC), one direction", "the GPU's", false},
    {"memory-reserve", "GIB", "GiB per GPU not available to the model (CUDA context, NCCL, fragmentation)", "8", false},
    {"stage-times", "FILE",
     "measured seconds per stage, one line per stage in model order (P lines, or P x V for V chunks): "
     "F=...,B=...,I=...,W=... ('#' comments; B defaults to I + W, I and W to B / 2)",
     "", false},
    {"no-autoschedule", "", "leave the auto-scheduler out of the ranking", "", false},
    {"format", "text|json", "the report as text, or the whole document as JSON", "text", false},
    {"emit", "csv|chakra|chrome|svg",
     "also write the recommended schedule: PyTorch CSV, Chakra traces, a trace, or its diagram in seconds", "",
     false},
    {"out", "PATH", "where --emit writes (for chakra, the prefix of PATH.<rank>.et)", "", false},
    {"search", "", "search the layout too: TP, PP, CP, EP, DP, micro-batch, recompute, distributed optimizer "
                   "(what the Megatron arguments set stays fixed); needs --gpus", "", false},
    {"top", "K", "with --search: how many candidates to report", "10", false},
    {"jobs", "N", "with --search: threads", "the number of cores", false},
    {"runtime", "megatron|pytorch|any", "with --search: only schedules this runtime runs", "any", false},
    {"allow-cross-node-tp", "", "with --search: tensor-parallel groups may span nodes", "", false},
}};

std::string general(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

/// A flag's number in [low, high] (low > 0): a denormal or 0 is refused rather than read as a
/// GPU so slow or an efficiency so small that nothing could ever fit.
double positive_flag(const parsed_args& args, std::string_view name, double fallback, double low, double high) {
    const auto text = args.get(name);
    if (!text)
        return fallback;
    const double x = read_nonnegative("--" + std::string{name}, *text);
    if (!(x >= low) || x > high)
        fail("--" + std::string{name} + " must be at least " + general(low) + " and at most " + general(high) +
             ", got " + quoted(*text));
    return x;
}

/// plan()'s errors name the field at fault; the flag that set it is what the user typed.
[[noreturn]] void fail_plan(const pl::input_error& e, const parsed_args& args) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 10> flags{{
        {"training_config.tensor_parallel", "--tensor-model-parallel-size"},
        {"model_config.kv_heads", "--num-query-groups"},
        {"plan_options.measured", "--stage-times"},
        {"plan_options.efficiency", "--efficiency"},
        {"plan_options.memory_reserve_bytes", "--memory-reserve"},
        {"gpu_spec.memory_bytes", "--gpu-memory"},
        {"gpu_spec.peak_flops", "--gpu-tflops x --efficiency"},
        {"training_config.global_batch", "--global-batch-size"},
        {"training_config.microbatches", "--microbatches"},
        {"training_config.layout", "--pipeline-model-parallel-layout"},
    }};
    for (const auto& [field, flag] : flags) {
        if (e.field != field)
            continue;
        std::string detail = e.detail;
        // The message's own field names become flags too.
        for (const auto& [other, other_flag] : flags)
            for (std::size_t at = detail.find(other); at != std::string::npos; at = detail.find(other, at))
                detail.replace(at, other.size(), other_flag);
        if (field == "gpu_spec.memory_bytes" && !args.get("gpu-memory"))
            fail("--gpu " + std::string{args.get("gpu").value_or("h100")} + ": " + detail);
        fail(std::string{flag} + ": " + detail);
    }
    fail(e.what());
}

std::vector<pl::stage_seconds> read_stage_times(std::string_view path) {
    const std::string text = read_input(path);
    std::vector<pl::stage_seconds> out;
    std::size_t line_number = 0;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        std::string_view line{text.data() + start, end - start};
        ++line_number;
        start = end + 1;
        if (const std::size_t hash = line.find('#'); hash != std::string_view::npos)
            line = line.substr(0, hash);
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t'))
            line.remove_suffix(1);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
            line.remove_prefix(1);
        if (line.empty()) {
            if (end == text.size())
                break;
            continue;
        }
        if (out.size() >= 65536)
            fail(file_label(path) + ": more than 65536 stages");
        constexpr std::array<std::string_view, 4> keys{"F", "B", "I", "W"};
        std::array<double, 4> v{-1.0, -1.0, -1.0, -1.0};
        read_key_values(file_label(path) + ": line " + number_text(line_number), line, keys,
                        [&](std::size_t k, double x) { v[k] = x; });
        if (v[0] < 0.0)
            fail(file_label(path) + ": line " + number_text(line_number) + ": F is required");
        if (v[1] < 0.0 && (v[2] < 0.0 || v[3] < 0.0))
            fail(file_label(path) + ": line " + number_text(line_number) + ": give B, or both I and W");
        if (v[1] < 0.0)
            v[1] = v[2] + v[3];
        if (v[2] < 0.0)
            v[2] = v[3] < 0.0 ? v[1] / 2 : std::max(0.0, v[1] - v[3]);
        if (v[3] < 0.0)
            v[3] = std::max(0.0, v[1] - v[2]);
        out.push_back({v[0], v[1], v[2], v[3]});
    }
    if (out.empty())
        fail(file_label(path) + ": no stage");
    return out;
}

std::string gib(double bytes) { return fixed(bytes / pl::gib, 2); }

std::string billions(double n) { return fixed(n / 1e9, 2) + " B"; }

std::string schedule_label(const pl::schedule_report& s) {
    return s.name + (s.chunks > 1 ? " (v=" + number_text(s.chunks) + ")" : std::string{});
}

void append_text_report(std::string& s, const pl::model_config& m, const pl::training_config& t, const pl::gpu_spec& g,
                        const pl::plan_options& o, const pl::plan_result& r, const std::vector<std::string>& notes) {
    s += "model " + m.name + ": " + billions(r.parameters.total()) + " parameters";
    if (r.parameters.mtp > 0)
        s += " (+ " + billions(r.parameters.mtp) + " in MTP layers)";
    if (r.parameters.active < r.parameters.total())
        s += ", " + billions(r.parameters.active) + " active";
    s += ", " + number_text(m.layers) + " layers\n";
    s += "gpu " + std::string{g.name} + ": " + fixed(g.peak_flops / 1e12, 1) + " TFLOP/s, GEMMs at most x " +
         fixed(o.efficiency > 0.0 ? o.efficiency : g.gemm_efficiency, 2) + ", " + gib(g.memory_bytes) + " GiB less " + gib(o.memory_reserve_bytes) + " GiB reserve = " +
         gib(r.usable_bytes) + " GiB for the model\n";
    s += "parallel: TP " + number_text(t.tensor_parallel) + ", PP " + number_text(t.pipeline_parallel) + ", DP " +
         number_text(t.data_parallel) + ", CP " + number_text(t.context_parallel);
    if (m.experts > 0)
        s += ", EP " + number_text(t.expert_parallel);
    s += " (" + number_text(t.world()) + " GPUs); " + number_text(r.microbatches) + " microbatches of " +
         number_text(t.micro_batch) + " x " + number_text(t.seq_length) + " tokens\n\n";
    s += "per pipeline rank (one GPU):\n";
    std::vector<std::array<std::string, 6>> ranks;
    ranks.push_back({"rank", "layers", "parameters", "weights+grads+optimizer", "activations/microbatch", "forward/microbatch"});
    for (std::size_t k = 0; k < r.ranks.size(); ++k) {
        const pl::rank_report& x = r.ranks[k];
        ranks.push_back({number_text(k), number_text(x.layers), billions(x.parameters), gib(x.state_bytes) + " GiB",
                         gib(x.activation_bytes) + " GiB", fixed(x.forward_seconds * 1e3, 2) + " ms"});
    }
    append_columns<6>(s, ranks);
    s += "\nschedules, fastest that fits first (peak: weights, gradients, optimizer states and the replay's peak of "
         "activations, on the worst rank):\n";
    std::vector<std::array<std::string, 6>> rows;
    rows.push_back({"schedule", "iteration", "bubble", "peak", "rank", "fits"});
    for (const pl::schedule_report& x : r.schedules) {
        if (!x.evaluated) {
            rows.push_back({schedule_label(x), "-", "-", "-", "-", x.note});
            continue;
        }
        rows.push_back({schedule_label(x), fixed(x.iteration_seconds, 3) + " s", fixed(x.bubble_fraction, 3),
                        gib(x.worst_bytes()) + " GiB", number_text(x.worst_rank), x.fits ? "yes" : "no"});
    }
    append_columns<6>(s, rows);
    s += '\n';
    if (r.recommended) {
        const pl::schedule_report& best = r.schedules[*r.recommended];
        s += "recommended: " + schedule_label(best) + ", " + fixed(best.iteration_seconds, 3) + " s per iteration, " +
             gib(best.worst_bytes()) + " GiB on rank " + number_text(best.worst_rank) + " of " + gib(r.usable_bytes) +
             " GiB\n";
    } else {
        s += r.advice + '\n';
    }
    s += "Megatron-LM's theoretical memory for these arguments (first stage, 1F1B or interleaved; docs/plan.md): "
         "weight and optimizer " +
         fixed(r.megatron.weight_and_optimizer_mb, 2) + " MB, activation " + fixed(r.megatron.activation_mb, 2) +
         " MB, total " + fixed(r.megatron.total_mb, 2) + " MB\n";
    for (const std::string& n : notes)
        s += "note: " + n + '\n';
}

/// Writes the recommended schedule with the costs plan() replayed it under: PyTorch CSV, a
/// Chrome trace (microseconds), its SVG diagram (seconds), or Chakra traces of one data-parallel replica's whole iteration
/// (durations rounded to whole microseconds, as Chakra stores them). Returns the files written.
std::vector<std::string> emit(std::string_view kind, const std::string& path, const pl::model_config& m,
                              const pl::training_config& t, const pl::gpu_spec& g, const pl::plan_options& o,
                              const pl::plan_result& r) {
    const pl::schedule_report& best = r.schedules[*r.recommended];
    const pl::stage_model_costs costs = pl::stage_costs_for(m, t, g, o, best.chunks, best.layout);
    std::vector<pipesched::stage_costs> micros = costs.per_stage;
    for (pipesched::stage_costs& c : micros) {
        c.forward *= 1e6;
        c.backward *= 1e6;
        c.backward_input *= 1e6;
        c.backward_weight *= 1e6;
    }
    const pipesched::cost_model model{{}, micros, costs.p2p * 1e6, false};
    std::vector<std::string> files;
    const auto write = [&](const auto& pol) {
        if (kind == "csv") {
            write_output(path, pipesched::write_csv(pol));
            files.push_back(path);
        } else if (kind == "chrome") {
            pipesched::chrome_trace_sink records;
            const pipesched::simulation sim = pipesched::simulate(pol, model, records);
            if (!sim)
                fail("the recommended schedule's replay failed: " + std::string{pipesched::describe(sim.check)});
            write_output(path, pipesched::chrome_trace(records.records()));
            files.push_back(path);
        } else if (kind == "svg") {
            const pipesched::cost_model seconds{{}, costs.per_stage, costs.p2p, false};
            pipesched::chrome_trace_sink records;
            const pipesched::simulation sim = pipesched::simulate(pol, seconds, records);
            if (!sim)
                fail("the recommended schedule's replay failed: " + std::string{pipesched::describe(sim.check)});
            pipesched::svg_options options{};
            options.title = best.name + " p=" + number_text(t.pipeline_parallel) + " m=" + number_text(r.microbatches) +
                            " v=" + number_text(best.chunks) + ", recommended by plan (" + m.name + ", " + std::string{g.name} + ")";
            options.unit = "s";
            write_output(path, pipesched::to_svg(records.records(), sim, options));
            files.push_back(path);
        } else {
            pipesched::iteration_cost_model ic{};
            ic.compute = model;
            pipesched::chakra::export_options eo{};
            eo.whole_iteration = true;
            eo.round_durations = true;
            eo.activation_bytes = static_cast<std::uint64_t>(pl::p2p_bytes(m, t));
            double largest = 0.0;
            for (const pl::rank_report& rank : r.ranks)
                largest = std::max(largest, rank.parameters);
            eo.gradient_bytes = static_cast<std::uint64_t>(largest * 4.0 / best.chunks);
            eo.parameter_bytes = static_cast<std::uint64_t>(largest * 2.0);
            eo.iteration.activation_checkpointing = t.recompute == pl::recompute_kind::full;
            if (t.distributed_optimizer) {
                eo.iteration.param_gather = pipesched::param_gather_mode::after_step;
                eo.grad_sync = pipesched::chakra::collective::reduce_scatter;
            }
            const pipesched::chakra::export_result traces = pipesched::chakra::export_traces(pol, ic, eo);
            if (!traces)
                fail("--emit chakra: " + traces.error);
            for (std::size_t k = 0; k < traces.ranks.size(); ++k) {
                files.push_back(path + "." + number_text(k) + ".et");
                write_output(files.back(), pipesched::chakra::encode(traces.ranks[k]));
            }
        }
    };
    if (best.searched) {
        r.searched[best.search_index].visit(write);
        return files;
    }
    pipesched::schedule_options opt{};
    opt.shape = {static_cast<std::uint32_t>(t.pipeline_parallel), static_cast<std::uint32_t>(r.microbatches), best.chunks};
    pipesched::with_any_schedule(best.id, opt, write);
    return files;
}

int run_plan(const parsed_args& args) {
    const std::string format = format_choice(args, {"text", "json"});
    const auto emit_kind = args.get("emit");
    const auto out_path = args.get("out");
    if (emit_kind && *emit_kind != "csv" && *emit_kind != "chakra" && *emit_kind != "chrome" && *emit_kind != "svg")
        fail("--emit must be csv, chakra, chrome or svg, got " + quoted(*emit_kind));
    if (emit_kind && !out_path)
        fail("--emit needs --out PATH");
    if (out_path && !emit_kind)
        fail("--out applies only with --emit");
    const auto model_path = args.get("model");
    if (!model_path && args.trailing().empty())
        fail("plan needs --model config.json, Megatron arguments after --, or both" + args.see_help());
    try {
        std::optional<pl::model_config> base;
        std::vector<std::string> notes;
        if (model_path) {
            const pl::hf_model hf = pl::read_hf_config(read_input(*model_path), file_label(*model_path));
            base = hf.model;
            notes = hf.notes;
        }
        pl::megatron_arguments ma = pl::read_megatron_arguments(args.trailing(), base);
        pl::model_config& m = ma.model;
        pl::training_config& t = ma.training;
        const std::uint64_t per_replica = t.tensor_parallel * t.pipeline_parallel * t.context_parallel;
        if (const auto gpus = args.count("gpus")) {
            if (*gpus % per_replica != 0)
                fail("--gpus " + number_text(*gpus) + " is not a multiple of TP x PP x CP = " + number_text(per_replica));
            t.data_parallel = *gpus / per_replica;
        }
        if (t.expert_parallel > 1 && (t.data_parallel * t.context_parallel * t.tensor_parallel) %
                                             (t.expert_parallel * t.expert_tp()) != 0)
            fail("--expert-model-parallel-size " + number_text(t.expert_parallel) + " x expert TP " +
                 number_text(t.expert_tp()) + " does not divide DP x CP x TP = " +
                 number_text(t.data_parallel * t.context_parallel * t.tensor_parallel) + " (give --gpus)");
        if (const auto mb = args.count("microbatches"))
            t.microbatches = *mb;
        if (t.global_batch == 0 && t.microbatches == 0)
            fail("give --global-batch-size after -- or --microbatches M");
        const std::string gpu_name{args.get("gpu").value_or("h100")};
        const std::optional<pl::gpu_spec> preset = pl::find_gpu(gpu_name);
        if (!preset)
            fail("--gpu: unknown GPU " + cli::quoted(gpu_name) + " (h100, h200, h800, a100-80gb, a100-40gb, b200, mi300x)");
        pl::gpu_spec g = *preset;
        g.memory_bytes = positive_flag(args, "gpu-memory", g.memory_bytes / pl::gib, 1e-3, 1e6) * pl::gib;
        g.peak_flops = positive_flag(args, "gpu-tflops", g.peak_flops / 1e12, 1e-3, 1e9) * 1e12;
        g.nvlink_bandwidth = positive_flag(args, "nvlink-gbytes", g.nvlink_bandwidth / 1e9, 1e-3, 1e6) * 1e9;
        g.network_bandwidth = positive_flag(args, "nic-gbits", g.network_bandwidth * 8 / 1e9, 1e-3, 1e7) * 1e9 / 8;
        if (const auto per_node = args.count("gpus-per-node")) {
            if (*per_node == 0 || *per_node > 65536)
                fail("--gpus-per-node must be in 1..65536, got " + number_text(*per_node));
            if (t.world() % *per_node != 0 && *per_node % t.world() != 0)
                fail("--gpus-per-node " + number_text(*per_node) + " does not divide the " + number_text(t.world()) +
                     " GPUs");
            g.gpus_per_node = static_cast<std::uint32_t>(*per_node);
        }
        pl::plan_options o;
        if (args.get("efficiency"))
            o.efficiency = positive_flag(args, "efficiency", 1.0, 1e-6, 1.0);
        if (const auto reserve = args.get("memory-reserve")) {
            o.memory_reserve_bytes = read_nonnegative("--memory-reserve", *reserve) * pl::gib;
            if (!(o.memory_reserve_bytes < g.memory_bytes))
                fail("--memory-reserve " + quoted(*reserve) + " GiB leaves nothing of the GPU's " + gib(g.memory_bytes) +
                     " GiB");
        }
        if (const auto path = args.get("stage-times"))
            o.measured = read_stage_times(*path);
        o.autoschedule = !args.get("no-autoschedule");
        if (args.get("search")) {
            if (emit_kind)
                fail("--emit writes one schedule: run plan without --search on the layout it picks");
            return run_plan_search(args, ma, g, o, format);
        }
        for (const std::string_view search_only : {"top", "jobs", "runtime", "allow-cross-node-tp"})
            if (args.get(search_only))
                fail("--" + std::string{search_only} + " applies only with --search");
        // Every schedule keeps a table per (stage, microbatch) unit while it is replayed, V-Min
        // and V-Half build their order first, and every chunk count the layers allow is replayed.
        const std::uint64_t per_step = std::max<std::uint64_t>(1, t.micro_batch * t.data_parallel);
        const std::uint64_t mb_count = std::max<std::uint64_t>(
            1, std::min<std::uint64_t>(t.microbatches != 0 ? t.microbatches : t.global_batch / per_step, 0xFFFFFFFFu));
        const std::vector<std::uint32_t> chunk_counts = pl::legal_chunk_counts(m, t);
        const std::uint32_t most_chunks = chunk_counts.empty() ? 2 : std::max(2u, chunk_counts.back());
        resource_estimate estimate{};
        estimate.shape = {static_cast<std::uint32_t>(t.pipeline_parallel), static_cast<std::uint32_t>(mb_count),
                          most_chunks};
        estimate.bytes_per_unit = pipesched::structure_check_bytes_per_unit;
        for (const pipesched::schedule_info& info : pipesched::schedules) {
            estimate.build_bytes = std::max(
                estimate.build_bytes, schedule_build_bytes(info.id, {estimate.shape.ranks, estimate.shape.microbatches, 2}));
        }
        require_within_budget(estimate, "plan", "use fewer microbatches or pipeline ranks");
        const pl::plan_result r = pl::plan(m, t, g, o, ma.padded_vocab_for_megatron);
        for (const std::string& word : ma.ignored)
            notes.push_back("ignored: " + word);
        std::string s;
        if (format == "json")
            pl::append_json_report(s, m, t, g, r, ma.ignored);
        else
            append_text_report(s, m, t, g, o, r, notes);
        if (emit_kind && r.recommended) {
            const std::vector<std::string> files = emit(*emit_kind, std::string{*out_path}, m, t, g, o, r);
            if (format == "text")
                s += "wrote " + std::to_string(files.size()) + " file" + (files.size() == 1 ? "" : "s") + ": " +
                     files.front() + (files.size() > 1 ? " ... " + files.back() : std::string{}) + '\n';
        } else if (emit_kind) {
            s += format == "text" ? "nothing written: no schedule fits\n" : "";
        }
        output_buffer out{stdout};
        out.append(s);
        const int status = finish_output(out);
        return status != exit_ok ? status : r.recommended ? exit_ok : 1;
    } catch (const pl::input_error& e) {
        fail_plan(e, args);
    }
}

} // namespace

const command_spec plan_command{
    "plan", "every schedule in seconds and bytes for a real model and GPU, and the one that fits",
    "Reads a model (a Hugging Face config.json with --model, Megatron-LM launch arguments after\n"
    "--, or both: the arguments override the config) and a GPU, computes per-stage seconds\n"
    "(each operation's time on the GPU and its links: GEMMs by shape, attention, memory-bound\n"
    "kernels, tensor/context/expert-parallel collectives) and bytes (weights,\n"
    "gradients and optimizer states; activations per microbatch from Korthikanti et al.), replays\n"
    "every schedule and the auto-scheduler with them, and prints the ranking and the fastest\n"
    "schedule that fits. Megatron arguments that change nothing here are listed as ignored.\n"
    "Exit status: 0 when a schedule fits, 1 when none does (the report says by how much and what\n"
    "would help), 2 for bad input. docs/plan.md explains the model.",
    plan_flags, run_plan, {}, "MEGATRON-ARGUMENTS"};

} // namespace pipesched::cli
