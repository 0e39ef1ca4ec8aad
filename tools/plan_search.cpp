// pipesched plan --search: the layout search's flags, report and JSON (plan.cpp reads the model,
// the launch line and the GPU, then hands over here).

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include <pipesched/io/json.hpp>
#include <pipesched/plan/layout_search.hpp>

#include "plan_search.hpp"
#include "progress.hpp"

namespace pipesched::cli {
namespace {

namespace pl = pipesched::plan;

/// Whether the launch line sets `flag` (as `--flag value`, `--flag=value` or a switch): what it
/// sets stays fixed in the search.
bool given(std::span<const std::string_view> words, std::string_view flag) {
    for (const std::string_view w : words)
        if (w == flag || (w.size() > flag.size() && w.substr(0, flag.size()) == flag && w[flag.size()] == '='))
            return true;
    return false;
}

std::string gib_text(double bytes) { return fixed(bytes / pl::gib, 2); }

std::string schedule_text(const pl::schedule_report& s) {
    return s.name + (s.chunks > 1 ? " v=" + number_text(s.chunks) : std::string{});
}

std::string runtimes_text(const pl::runtime_support& r) {
    std::string out;
    for (const std::string& n : pl::runtime_names(r)) out += (out.empty() ? "" : ",") + n;
    return out;
}

std::string recompute_text(pl::recompute_kind k) { return pl::detail::recompute_word(k); }

void append_table(std::string& s, const std::vector<pl::layout_candidate>& rows, bool with_gap) {
    std::vector<std::array<std::string, 14>> table;
    table.push_back({"#", "TP", "PP", "CP", "EP", "DP", "mbs", "recompute", "dist-opt", "schedule", "iteration",
                     "tokens/s/GPU", "MFU", "peak"});
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const pl::layout_candidate& c = rows[i];
        const pl::training_config& t = c.training;
        table.push_back({number_text(i + 1), number_text(t.tensor_parallel), number_text(t.pipeline_parallel),
                         number_text(t.context_parallel), number_text(t.expert_parallel), number_text(t.data_parallel),
                         number_text(t.micro_batch), recompute_text(t.recompute), t.distributed_optimizer ? "yes" : "no",
                         schedule_text(c.schedule), fixed(c.schedule.iteration_seconds, 3) + " s",
                         fixed(c.tokens_per_second_per_gpu, 0), fixed(100.0 * c.mfu, 1) + "%",
                         gib_text(c.schedule.worst_bytes()) + " GiB"});
    }
    append_columns<14>(s, table);
    if (!with_gap) return;
    s += "\n    bubble, lead over the next row, runtimes that run the schedule:\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const pl::layout_candidate& c = rows[i];
        s += "    " + number_text(i + 1) + ": bubble " + fixed(c.schedule.bubble_fraction, 3) + ", " +
             (i + 1 < rows.size() ? fixed(100.0 * c.faster_than_next, 2) + "% faster than #" + number_text(i + 2)
                                  : std::string{"last shown"}) +
             ", " + runtimes_text(c.runtimes) + '\n';
    }
}

/// A JSON object's members in order: `"name":` before each value, a comma between them.
class json_object {
  public:
    explicit json_object(std::string& out) : s_{out} { s_ += '{'; }
    ~json_object() { s_ += '}'; }
    json_object(const json_object&) = delete;
    json_object& operator=(const json_object&) = delete;
    std::string& key(std::string_view name) {
        if (s_.back() != '{') s_ += ',';
        json::append_string(s_, name);
        s_ += ':';
        return s_;
    }
    void number(std::string_view name, std::uint64_t n) { json::append_number(key(name), n); }
    void number(std::string_view name, double x) { json::append_number(key(name), x); }
    void text(std::string_view name, std::string_view v) { json::append_string(key(name), v); }
    void boolean(std::string_view name, bool b) { key(name) += b ? "true" : "false"; }

  private:
    std::string& s_;
};

void append_candidate_json(std::string& s, const pl::layout_candidate& c) {
    const pl::training_config& t = c.training;
    json_object o{s};
    o.number("tensor_parallel", std::uint64_t{t.tensor_parallel});
    o.number("pipeline_parallel", std::uint64_t{t.pipeline_parallel});
    o.number("data_parallel", std::uint64_t{t.data_parallel});
    o.number("context_parallel", std::uint64_t{t.context_parallel});
    o.number("expert_parallel", std::uint64_t{t.expert_parallel});
    o.number("micro_batch_size", std::uint64_t{t.micro_batch});
    o.text("recompute", recompute_text(t.recompute));
    o.boolean("distributed_optimizer", t.distributed_optimizer);
    o.boolean("sequence_parallel", t.sequence_parallel);
    {
        json_object schedule{o.key("schedule")};
        schedule.text("name", c.schedule.name);
        schedule.number("chunks", std::uint64_t{c.schedule.chunks});
        schedule.boolean("searched", c.schedule.searched);
    }
    o.number("iteration_time_s", c.schedule.iteration_seconds);
    o.number("tokens_per_second_per_gpu", c.tokens_per_second_per_gpu);
    o.number("mfu", c.mfu);
    o.number("peak_bytes", c.schedule.worst_bytes());
    o.number("worst_rank", std::uint64_t{c.schedule.worst_rank});
    o.number("bubble_fraction", c.schedule.bubble_fraction);
    o.number("faster_than_next", c.faster_than_next);
    json::append_array(o.key("runtimes"), pl::runtime_names(c.runtimes));
    json::append_array(o.key("megatron_args"), c.megatron_args);
}

void append_list_json(std::string& s, const std::vector<pl::layout_candidate>& rows) {
    s += '[';
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (i != 0) s += ',';
        append_candidate_json(s, rows[i]);
    }
    s += ']';
}

} // namespace

int run_plan_search(const parsed_args& args, const pl::megatron_arguments& ma, const pl::gpu_spec& g,
                    const pl::plan_options& o, std::string_view format) {
    const pl::model_config& m = ma.model;
    const pl::training_config& t = ma.training;
    pl::search_space space;
    const auto gpus = args.count("gpus");
    if (!gpus) fail("--search needs --gpus N (the GPUs to lay the model out on)");
    space.gpus = *gpus;
    if (const auto top = args.count("top")) space.top = *top; // count() refuses 0 and non-numbers
    if (const auto jobs = args.count("jobs")) space.jobs = std::min<std::uint32_t>(*jobs, 256);
    if (const auto runtime = args.get("runtime")) {
        if (*runtime == "megatron") space.runtime = pl::runtime_filter::megatron;
        else if (*runtime == "pytorch") space.runtime = pl::runtime_filter::pytorch;
        else if (*runtime != "any") fail("--runtime must be megatron, pytorch or any, got " + quoted(*runtime));
    }
    space.allow_cross_node_tp = args.get("allow-cross-node-tp").has_value();
    const auto words = args.trailing();
    if (given(words, "--tensor-model-parallel-size")) space.tensor_parallel = t.tensor_parallel;
    if (given(words, "--pipeline-model-parallel-size")) space.pipeline_parallel = t.pipeline_parallel;
    if (given(words, "--context-parallel-size")) space.context_parallel = t.context_parallel;
    if (given(words, "--expert-model-parallel-size")) space.expert_parallel = t.expert_parallel;
    if (given(words, "--micro-batch-size")) space.micro_batch = t.micro_batch;
    if (given(words, "--recompute-granularity")) space.recompute = t.recompute;
    if (given(words, "--use-distributed-optimizer")) space.distributed_optimizer = t.distributed_optimizer;
    for (const std::string_view fixed_layout : {"--num-layers-per-virtual-pipeline-stage",
                                                "--num-virtual-stages-per-pipeline-rank", "--pipeline-model-parallel-layout",
                                                "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"})
        if (given(words, fixed_layout))
            fail(std::string{fixed_layout} + " fixes the layers of each stage, which --search chooses: leave it out");
    if (t.microbatches != 0) fail("--search chooses the micro-batch size: give --global-batch-size, not --microbatches");
    if (t.global_batch == 0) fail("--search needs --global-batch-size after --");
    if (t.seq_length == 0) fail("--search needs --seq-length after --");
    // The search calls this serialised; the second pass starts with a jump past the layouts
    // it does not revisit, so the count advances by the difference.
    std::size_t reported = 0;
    space.progress = [&](std::size_t done, std::size_t all) {
        if (reported == 0) progress::task("searching the layouts of " + m.name, all, "layout steps");
        progress::advance(done - reported);
        reported = done;
    };
    const pl::layout_search_result r = pl::search_layouts(m, t, g, o, space);
    std::string s;
    if (format == "json") {
        {
            json_object doc{s};
            doc.text("model", m.name);
            doc.text("gpu", g.name);
            doc.number("gpus", std::uint64_t{space.gpus});
            doc.number("layouts", std::uint64_t{r.layouts});
            doc.number("evaluated", std::uint64_t{r.evaluated});
            doc.number("autoscheduled", std::uint64_t{r.autoscheduled});
            doc.number("pruned", std::uint64_t{r.pruned});
            doc.number("autoschedule_skipped", std::uint64_t{r.autoschedule_skipped});
            append_list_json(doc.key("candidates"), r.candidates);
            append_list_json(doc.key("pareto"), r.pareto);
            doc.text("advice", r.advice);
        }
        s += '\n';
    } else {
        s += "layout search: " + m.name + " on " + number_text(space.gpus) + " x " + std::string{g.name} +
             ", global batch " + number_text(t.global_batch) + " x " + number_text(t.seq_length) + " tokens\n";
        s += number_text(r.layouts) + " layouts: " + number_text(r.evaluated) + " replayed with every schedule (" +
             number_text(r.autoscheduled) + " also with the auto-scheduler), " + number_text(r.pruned) +
             " skipped by the exact bounds (docs/plan.md)" +
             (r.autoschedule_skipped > 0 ? ", " + number_text(r.autoschedule_skipped) +
                                               " too large for the auto-scheduler (ranks x microbatches above " +
                                               number_text(space.autoschedule_units) + ")"
                                         : std::string{}) +
             (r.refused > 0 ? ", " + number_text(r.refused) + " refused by plan" : std::string{}) + "\n\n";
        if (r.candidates.empty()) {
            s += r.advice + '\n';
        } else {
            s += "fastest " + number_text(r.candidates.size()) + " (peak: the worst rank's bytes):\n";
            append_table(s, r.candidates, true);
            s += "\nPareto front, iteration time against peak bytes (within " + fixed(space.pareto_window, 2) +
                 "x of the fastest):\n";
            append_table(s, r.pareto, false);
            s += "\nMegatron-LM flags of #1 (append to the model's own):";
            for (const std::string& w : r.candidates.front().megatron_args) s += ' ' + w;
            s += '\n';
            if (!r.advice.empty()) s += "note: " + r.advice + '\n';
        }
    }
    output_buffer out{stdout};
    out.append(s);
    const int status = finish_output(out);
    return status != exit_ok ? status : r.candidates.empty() ? 1 : exit_ok;
}

} // namespace pipesched::cli
