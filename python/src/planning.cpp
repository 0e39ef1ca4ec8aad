// pipesched._pipesched: the auto-scheduler, plan and SimAI's order, each called as the tool's
// command calls it (tools/autoschedule.cpp, tools/plan.cpp, tools/simai.cpp).
#include <algorithm>
#include <optional>
#include <string_view>

#include <pipesched/catalog.hpp>
#include <pipesched/plan/hf_config.hpp>
#include <pipesched/plan/megatron_args.hpp>
#include <pipesched/plan/plan.hpp>
#include <pipesched/io/plan_json.hpp>
#include <pipesched/search/autoschedule.hpp>
#include <pipesched/simai/analytical_compare.hpp>
#include <pipesched/simai/parse.hpp>

#include "common.hpp"

namespace pipesched::python {
namespace {

namespace pl = pipesched::plan;

search_placement search_placement_from(const std::string& name) {
    if (name == "loop")
        return search_placement::loop;
    if (name == "v")
        return search_placement::v;
    if (name == "interleaved")
        return search_placement::interleaved;
    if (name == "any")
        return search_placement::any;
    fail("placement must be one of loop, v, interleaved, any, got '" + name.substr(0, 32) + "'");
}

/// (fits, message, schedule or None, fields): autoschedule()'s answer; `fields` holds what
/// `pipesched autoschedule --format json` prints but the order.
py::tuple run_autoschedule(std::int64_t ranks, std::int64_t microbatches, const std::array<double, 4>& times,
                           const std::vector<std::array<double, 3>>& per_stage_times,
                           const std::array<double, 3>& memory,
                           const std::vector<std::array<double, 3>>& per_stage_memory, const std::string& placement_name,
                           std::int64_t chunks) {
    const shape dims{count(ranks, "ranks", 1, max_ranks), count(microbatches, "microbatches", 1, max_microbatches), 1};
    pipeline_costs costs{};
    costs.uniform = {times[0], times[1], times[2]};
    costs.p2p = times[3];
    for (const auto& t : per_stage_times)
        costs.per_stage.push_back({t[0], t[1], t[2]});
    pipeline_memory mem{};
    mem.uniform = {memory[0], memory[1], memory[2]};
    for (const auto& x : per_stage_memory)
        mem.per_stage.push_back({x[0], x[1], x[2]});
    autoschedule_options o{};
    o.placement = search_placement_from(placement_name);
    o.chunks = count(chunks, "chunks", 2, 64);
    // The search holds a few tables of every action of the largest placement it tries.
    const std::uint64_t units = std::uint64_t{dims.ranks} * dims.microbatches * std::max(2U, o.chunks);
    if (units > max_units)
        fail("ranks x microbatches x chunks = " + std::to_string(units) + " units, more than the limit of " +
             std::to_string(max_units) + " (2^26)");
    autoschedule_result r;
    {
        py::gil_scoped_release nogil;
        r = autoschedule(dims, costs, mem, o);
    }
    if (!r && r.message.rfind("invalid input: ", 0) == 0)
        fail(r.message.substr(15));
    py::dict fields;
    fields["smallest_limit"] = r.smallest_limit;
    if (!r)
        return py::make_tuple(false, r.message, py::none(), fields);
    fields["placement"] = r.layout == placement::v_shape ? "v" : r.chunks > 1 ? "interleaved" : "loop";
    fields["chunks"] = r.chunks;
    fields["span"] = r.span;
    fields["makespan"] = r.makespan;
    fields["bubble_fraction"] = r.bubble_fraction;
    fields["peak_memory"] = r.peak_memory;
    fields["method"] = std::string{r.method};
    fields["proven_optimal"] = r.proven_optimal;
    fields["heuristic_span"] = r.heuristic_span > 0.0 ? py::object(py::float_(r.heuristic_span)) : py::object(py::none());
    fields["lower_bound"] = r.lower_bound;
    fields["gap"] = r.gap;
    fields["bound_scope"] = r.bound_scope;
    schedule_handle h = r.visit([](const auto& sched) { return make_handle(sched, "autoschedule", "autoschedule"); });
    return py::make_tuple(true, std::string{}, py::cast(std::move(h)), fields);
}

/// A positive option (GPU memory, TFLOP/s, efficiency): as the tool's positive_flag.
double positive(double x, std::string_view name, double high) {
    if (!(x > 0.0) || x > high)
        fail(std::string{name} + " must be above 0 and at most " + std::to_string(static_cast<long long>(high)) +
             ", got " + std::to_string(x));
    return x;
}

/// plan() as `pipesched plan --format json` runs it: the JSON document (pl::append_json_report)
/// and the config reader's notes. NaN for an option means "not given" (the tool's default).
py::tuple run_plan(const std::optional<std::string>& config, const std::string& config_label,
                   const std::vector<std::string>& megatron, const std::string& gpu_name, std::int64_t gpus,
                   std::int64_t microbatches, double gpu_memory_gib, double gpu_tflops, double efficiency,
                   double memory_reserve_gib, const std::vector<std::array<double, 4>>& stage_times,
                   bool autoschedule_too) {
    if (!config && megatron.empty())
        fail("plan needs a config.json (path or dict), Megatron arguments, or both");
    try {
        std::optional<pl::model_config> base;
        std::vector<std::string> notes;
        if (config) {
            if (config->size() > pl::max_config_bytes)
                fail(config_label + ": " + std::to_string(config->size()) + " bytes, more than the limit of " +
                     std::to_string(pl::max_config_bytes));
            pl::hf_model hf = pl::read_hf_config(*config, config_label);
            base = hf.model;
            notes = std::move(hf.notes);
        }
        const std::vector<std::string_view> words(megatron.begin(), megatron.end());
        pl::megatron_arguments ma = pl::read_megatron_arguments(words, base);
        pl::model_config& m = ma.model;
        pl::training_config& t = ma.training;
        const std::uint64_t per_replica = t.tensor_parallel * t.pipeline_parallel * t.context_parallel;
        if (gpus != 0) {
            const std::uint32_t n = count(gpus, "gpus", 1, 0xFFFFFFFFu);
            if (n % per_replica != 0)
                fail("gpus " + std::to_string(n) + " is not a multiple of TP x PP x CP = " + std::to_string(per_replica));
            t.data_parallel = n / per_replica;
        }
        if (t.expert_parallel > 1 &&
            (t.data_parallel * t.context_parallel * t.tensor_parallel) % (t.expert_parallel * t.expert_tp()) != 0)
            fail("--expert-model-parallel-size " + std::to_string(t.expert_parallel) + " x expert TP " +
                 std::to_string(t.expert_tp()) + " does not divide DP x CP x TP = " +
                 std::to_string(t.data_parallel * t.context_parallel * t.tensor_parallel) + " (give gpus)");
        if (microbatches != 0)
            t.microbatches = count(microbatches, "microbatches", 1, 0xFFFFFFFFu);
        if (t.global_batch == 0 && t.microbatches == 0)
            fail("give --global-batch-size in the Megatron arguments, or microbatches");
        const std::optional<pl::gpu_spec> preset = pl::find_gpu(gpu_name);
        if (!preset)
            fail("unknown GPU '" + gpu_name.substr(0, 32) + "' (h100, h200, a100-80gb, a100-40gb, b200, mi300x)");
        pl::gpu_spec g = *preset;
        if (gpu_memory_gib == gpu_memory_gib)
            g.memory_bytes = positive(gpu_memory_gib, "gpu_memory", 1e6) * pl::gib;
        if (gpu_tflops == gpu_tflops)
            g.peak_flops = positive(gpu_tflops, "gpu_tflops", 1e9) * 1e12;
        pl::plan_options o;
        if (efficiency == efficiency)
            o.efficiency = positive(efficiency, "efficiency", 1.0);
        if (memory_reserve_gib == memory_reserve_gib) {
            if (!(memory_reserve_gib >= 0.0) || !(memory_reserve_gib * pl::gib < g.memory_bytes))
                fail("memory_reserve " + std::to_string(memory_reserve_gib) + " GiB must be at least 0 and leave some of "
                     "the GPU's memory");
            o.memory_reserve_bytes = memory_reserve_gib * pl::gib;
        }
        for (const auto& st : stage_times) {
            for (const double x : st)
                if (!(x >= 0.0) || x > 1e300)
                    fail("stage_times: every time must be a finite number >= 0");
            o.measured.push_back({st[0], st[1], st[2], st[3]});
        }
        o.autoschedule = autoschedule_too;
        // What the tool's estimate counts (tools/plan.cpp): every schedule at every chunk count.
        const std::uint64_t per_step = std::max<std::uint64_t>(1, t.micro_batch * t.data_parallel);
        const std::uint64_t mb_count = std::max<std::uint64_t>(
            1, std::min<std::uint64_t>(t.microbatches != 0 ? t.microbatches : t.global_batch / per_step, 0xFFFFFFFFu));
        const std::uint64_t pm = t.pipeline_parallel * mb_count;
        std::uint64_t units = 5 * pm;
        for (const schedule_info& info : schedules) {
            if (!info.multi_chunk)
                units += pm;
            else if (info.chunks == chunk_rule::two)
                units += 2 * pm;
            else
                for (const std::uint32_t v : pl::legal_chunk_counts(m, t))
                    units += v * pm;
        }
        if (units > max_units)
            fail("plan would replay " + std::to_string(units) + " (stage, microbatch) units, more than the limit of " +
                 std::to_string(max_units) + " (2^26); use fewer microbatches or pipeline ranks");
        std::string json;
        {
            py::gil_scoped_release nogil;
            const pl::plan_result r = pl::plan(m, t, g, o, ma.padded_vocab_for_megatron);
            pl::append_json_report(json, m, t, g, r, ma.ignored);
        }
        return py::make_tuple(json, notes);
    } catch (const pl::input_error& e) {
        fail(e.what());
    }
}

/// SimAI's order of an AICB workload against the catalogued schedule `name`, as a dict of
/// simai::compare()'s result.
py::dict run_simai_compare(const std::string& text, const std::string& name) {
    const std::optional<schedule_id> id = find_schedule(name);
    if (!id)
        fail("unknown schedule '" + name.substr(0, 64) + "'");
    if (text.size() > (std::size_t{64} << 20))
        fail("the workload is more than 64 MiB");
    const simai::parse_result parsed = simai::parse_workload(text);
    if (!parsed)
        fail(describe(*parsed.error));
    const simai::header& hd = parsed.value.header;
    const std::uint64_t ga = std::max<std::uint64_t>(1, hd.ga);
    const std::uint64_t pp = std::max<std::uint64_t>(1, hd.pp);
    // The tool's limits (tools/simai.cpp, require_within_limits).
    if (ga > max_microbatches || pp > max_ranks || pp * ga > (std::uint64_t{1} << 21))
        fail("line 1: pp " + std::to_string(pp) + " x ga " + std::to_string(ga) +
             " is beyond the limits (pp <= 65535, ga <= 65536, pp x ga <= 2097152)");
    schedule_options so{};
    so.shape = {static_cast<std::uint32_t>(pp), static_cast<std::uint32_t>(ga), 1};
    with_schedule(*id, so, [&](const auto& pol) {
        if (const shape_check c = pol.check(); !c)
            fail(std::string{display_name(info(*id))} + " cannot run this workload (pp " + std::to_string(pp) +
                 ", ga " + std::to_string(ga) + ", one chunk per rank): " + std::string{c.message});
    });
    // As `pipesched simai` runs it: without the checkpoint lists SimAI v1.6 misreads, both orders
    // replayed with SimAI's analytical time per collective.
    simai::workload w = parsed.value;
    w.header.checkpoints.reset();
    w.header.checkpoint_initiates.reset();
    simai::analytical_comparison_result analysed;
    {
        py::gil_scoped_release nogil;
        analysed = simai::compare_analytical(w, *id);
    }
    if (!analysed)
        fail("SimAI's analytical model: " + describe(*analysed.error, &w));
    const simai::comparison& c = analysed.value.timeline;
    const auto report = [](const simai::order_report& o) {
        py::dict d;
        d["name"] = o.name;
        d["events"] = o.events;
        d["peak_microbatches_in_flight"] = o.peak_microbatches_in_flight;
        d["optimizer_before_backward"] = o.optimizer_before_backward;
        d["optimizer_after_all_grad_sync"] = o.optimizer_after_all_grad_sync;
        d["makespan_ns"] = o.makespan_ns;
        d["compute_ns"] = o.compute_ns;
        d["exposed_grad_sync_ns"] = o.exposed_grad_sync_ns;
        d["verdict"] = verdict_tuple(o.check);
        return d;
    };
    py::dict out;
    out["pp"] = c.pp;
    out["ga"] = c.ga;
    out["simai"] = report(c.simai);
    out["corrected"] = report(c.corrected);
    py::list problems;
    for (const simai::ordering_problem& p : c.problems) {
        py::dict d;
        d["what"] = p.what;
        d["rows"] = p.rows;
        problems.append(d);
    }
    out["problems"] = problems;
    out["forward_ns"] = c.forward_ns;
    out["backward_ns"] = c.backward_ns;
    out["loss_ns"] = c.loss_ns;
    out["optimizer_ns"] = c.optimizer_ns;
    out["grad_sync_ns"] = c.grad_sync_ns;
    out["grad_norm_ns"] = c.grad_norm_ns;
    out["param_gather_ns"] = c.param_gather_ns;
    // SimAI's own analytical report, in its units (microseconds), as the tool's simai_report.
    const simai::analytical_totals& t = analysed.value.report.totals;
    py::dict totals;
    totals["expose_dp_comm_us"] = t.expose_dp_comm_us;
    totals["expose_dp_ep_comm_us"] = t.expose_dp_ep_comm_us;
    totals["expose_tp_comm_us"] = t.expose_tp_comm_us;
    totals["expose_ep_comm_us"] = t.expose_ep_comm_us;
    totals["expose_pp_comm_us"] = t.expose_pp_comm_us;
    totals["bubble_time_us"] = t.bubble_time_us;
    totals["total_comp_us"] = t.total_comp_us;
    totals["total_exposed_comm_us"] = t.total_exposed_comm_us;
    totals["total_time_us"] = t.total_time_us;
    totals["notes"] = analysed.value.report.notes;
    out["simai_report"] = totals;
    return out;
}

} // namespace

void bind_planning(py::module_& m) {
    m.def("autoschedule", &run_autoschedule);
    m.def("plan", &run_plan);
    m.def("simai_compare", &run_simai_compare);
}

} // namespace pipesched::python
