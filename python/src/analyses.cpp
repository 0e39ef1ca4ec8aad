// pipesched._pipesched: validate and simulate, of schedules, of whole iterations and of per-rank
// action lists, and the Chakra export. Each call releases the GIL while the library works.
#include <array>
#include <utility>

#include <pipesched/analysis/simulate.hpp>
#include <pipesched/analysis/simulate_iteration.hpp>
#include <pipesched/analysis/validate.hpp>
#include <pipesched/analysis/validate_iteration.hpp>
#include <pipesched/chakra/export.hpp>
#include <pipesched/chakra/trace.hpp>

#include "common.hpp"

namespace pipesched::python {
namespace {

/// stage_costs from (F, B, I, W, overlapped F&B, activation memory, weight memory).
stage_costs stage_costs_from(const std::array<double, 7>& x) {
    return {x[0], x[1], x[2], x[3], x[4], x[5], x[6]};
}

/// A cost_model and the per-stage table its span points into.
struct costs_holder {
    std::vector<stage_costs> per_stage;
    cost_model model{};
};

/// (uniform, per_stage, p2p latency, fill_with_weight) as the package's Costs sends it.
costs_holder costs_from(const py::tuple& t) {
    if (t.size() != 4)
        fail("costs: expected (uniform, per_stage, p2p, fill_with_weight)");
    costs_holder c;
    c.model.uniform = stage_costs_from(t[0].cast<std::array<double, 7>>());
    for (const auto& x : t[1].cast<std::vector<std::array<double, 7>>>())
        c.per_stage.push_back(stage_costs_from(x));
    c.model.per_stage = c.per_stage;
    c.model.p2p_latency = t[2].cast<double>();
    c.model.fill_with_weight = t[3].cast<bool>();
    return c;
}

struct iteration_costs_holder {
    costs_holder compute;
    iteration_cost_model model{};
};

/// (compute costs, recompute, loss, optimizer, p2p latency, p2p bandwidth, activation bytes,
/// data-parallel latency, data-parallel bandwidth, gradient bytes, parameter bytes, grad_norm).
iteration_costs_holder iteration_costs_from(const py::tuple& t) {
    if (t.size() != 12)
        fail("iteration costs: expected 12 fields");
    iteration_costs_holder c;
    c.compute = costs_from(t[0].cast<py::tuple>());
    c.model.compute = c.compute.model;
    c.model.compute.per_stage = c.compute.per_stage;
    c.model.recompute = t[1].cast<double>();
    c.model.loss = t[2].cast<double>();
    c.model.optimizer = t[3].cast<double>();
    c.model.p2p = {t[4].cast<double>(), t[5].cast<double>()};
    c.model.activation_bytes = t[6].cast<double>();
    c.model.data_parallel = {t[7].cast<double>(), t[8].cast<double>()};
    c.model.gradient_bytes = t[9].cast<double>();
    c.model.parameter_bytes = t[10].cast<double>();
    c.model.grad_norm = t[11].cast<double>();
    return c;
}

struct action_records {
    std::vector<timed_action> records;
    bool keep = true;
    void push(const timed_action& t) {
        if (keep)
            records.push_back(t);
    }
};

struct event_records {
    std::vector<timed_event> records;
    bool keep = true;
    void push(const timed_event& t) {
        if (keep)
            records.push_back(t);
    }
};

/// (verdict, makespan, bubble_fraction, ranks, timed actions or None); a rank is (busy, idle,
/// peak_activations, peak_memory, first_start, last_end), a timed action (rank, index, action,
/// start, end).
py::tuple simulation_tuple(const simulation& sim, const action_records& timeline) {
    py::list ranks;
    for (const rank_summary& r : sim.ranks)
        ranks.append(py::make_tuple(r.busy, r.idle, r.peak_activations, r.peak_memory, r.first_start, r.last_end));
    py::object timed = py::none();
    if (timeline.keep && sim) {
        py::list list;
        for (const timed_action& t : timeline.records)
            list.append(py::make_tuple(t.rank, t.index, action_text(t.what), t.start, t.end));
        timed = std::move(list);
    }
    return py::make_tuple(verdict_tuple(sim.check), sim.makespan, sim.bubble_fraction, ranks, timed);
}

/// The iteration's replay: (verdict, replayed, makespan, bubble_fraction, ranks, timed events or
/// None); a rank is (compute_busy, idle, {comm kind: exposed}, peak_activations, end), a timed
/// event (rank, index, kind, chunk, microbatch, peer or None, stage, start, end, comm_stream).
py::tuple iteration_tuple(const iteration_simulation& sim, const event_records& timeline, placement layout,
                          std::uint32_t ranks_count) {
    py::list ranks;
    for (const iteration_rank_summary& r : sim.ranks) {
        py::dict exposed;
        for (std::size_t k = 0; k < comm_kind_count; ++k)
            exposed[py::str(std::string{to_string(static_cast<comm_kind>(k))})] = r.exposed[k];
        ranks.append(py::make_tuple(r.compute_busy, r.idle, exposed, r.peak_activations, r.end));
    }
    py::object timed = py::none();
    if (timeline.keep && sim.replayed) {
        py::list list;
        for (const timed_event& t : timeline.records) {
            const event& e = t.what;
            const py::object peer = e.peer == no_peer ? py::object(py::none()) : py::object(py::int_(e.peer));
            list.append(py::make_tuple(e.rank, t.index, std::string{to_string(e.kind)}, e.chunk, e.microbatch, peer,
                                       stage_of(layout, ranks_count, e.rank, e.chunk), t.start, t.end,
                                       t.comm_stream));
        }
        timed = std::move(list);
    }
    return py::make_tuple(verdict_tuple(sim.check), sim.replayed, sim.makespan, sim.bubble_fraction, ranks, timed);
}

void require_listable(const shape& s, bool timeline) {
    const std::uint64_t units = std::uint64_t{s.ranks} * s.chunks * s.microbatches;
    if (timeline && 3 * units > max_listed)
        fail("a timeline of " + std::to_string(units) + " units is more than one call returns as Python objects "
             "(2^22 actions); simulate with timeline=False for the summary alone");
}

chakra::collective collective_from(const std::string& name) {
    if (name == "all_reduce")
        return chakra::collective::all_reduce;
    if (name == "reduce_scatter")
        return chakra::collective::reduce_scatter;
    fail("grad_sync_collective must be 'all_reduce' or 'reduce_scatter', got '" + name.substr(0, 32) + "'");
}

} // namespace

void bind_analyses(py::module_& m) {
    m.def("validate", [](const schedule_handle& h) {
        verdict v;
        {
            py::gil_scoped_release nogil;
            v = h.visit([](const auto& pol) { return validate(pol); });
        }
        return verdict_tuple(v);
    });
    m.def("simulate", [](const schedule_handle& h, const py::tuple& costs, bool timeline) {
        require_listable(h.dims(), timeline);
        const costs_holder c = costs_from(costs);
        action_records records{{}, timeline};
        simulation sim;
        {
            py::gil_scoped_release nogil;
            sim = h.visit([&](const auto& pol) { return simulate(pol, c.model, records); });
        }
        return simulation_tuple(sim, records);
    });
    m.def("validate_iteration", [](const schedule_handle& h, const py::tuple& options) {
        const iteration_options o = iteration_options_from(options);
        verdict v;
        {
            py::gil_scoped_release nogil;
            v = h.visit([&](const auto& pol) { return validate(iteration{pol, o}); });
        }
        return verdict_tuple(v);
    });
    m.def("simulate_iteration", [](const schedule_handle& h, const py::tuple& options, const py::tuple& costs,
                                   bool timeline) {
        require_listable(h.dims(), timeline);
        const iteration_options o = iteration_options_from(options);
        const iteration_costs_holder c = iteration_costs_from(costs);
        event_records records{{}, timeline};
        iteration_simulation sim;
        {
            py::gil_scoped_release nogil;
            sim = h.visit([&](const auto& pol) { return simulate(iteration{pol, o}, c.model, records); });
        }
        return iteration_tuple(sim, records, h.layout(), h.dims().ranks);
    });
    m.def("validate_actions", [](const std::vector<std::vector<std::string>>& cells, std::int64_t microbatches,
                                 std::int64_t stages) {
        const std::vector<std::vector<action>> lists = parse_cells(cells);
        const std::uint32_t mb = microbatches == 0 ? 0 : count(microbatches, "microbatches", 1, max_microbatches);
        const std::uint32_t st = stages == 0 ? 0 : count(stages, "stages", 1, max_ranks * max_chunks);
        verdict v;
        {
            py::gil_scoped_release nogil;
            v = validate(lists, mb, st);
        }
        return verdict_tuple(v);
    }, py::arg("actions"), py::arg("microbatches") = 0, py::arg("stages") = 0);
    m.def("simulate_actions", [](const std::vector<std::vector<std::string>>& cells, const py::tuple& costs,
                                 std::int64_t microbatches, bool timeline) {
        const std::vector<std::vector<action>> lists = parse_cells(cells);
        std::uint64_t actions = 0;
        for (const auto& l : lists)
            actions += l.size();
        if (timeline && actions > max_listed)
            fail("a timeline of " + std::to_string(actions) + " actions is more than one call returns (2^22)");
        const std::uint32_t mb = microbatches == 0 ? 0 : count(microbatches, "microbatches", 1, max_microbatches);
        const costs_holder c = costs_from(costs);
        action_records records{{}, timeline};
        simulation sim;
        {
            py::gil_scoped_release nogil;
            sim = simulate(lists, c.model, records, mb);
        }
        return simulation_tuple(sim, records);
    });
    m.def("to_chakra", [](const schedule_handle& h, const py::tuple& options, const py::tuple& costs,
                          bool whole_iteration, std::int64_t data_parallel, const std::string& grad_sync,
                          std::int64_t activation_bytes, std::int64_t gradient_bytes, std::int64_t parameter_bytes,
                          bool round_durations) {
        chakra::export_options o{};
        o.whole_iteration = whole_iteration;
        o.iteration = iteration_options_from(options);
        o.data_parallel = count(data_parallel, "data_parallel", 1, max_ranks);
        o.grad_sync = collective_from(grad_sync);
        const auto bytes = [](std::int64_t n, std::string_view name) {
            if (n < 0)
                fail(std::string{name} + " must be at least 0, got " + std::to_string(n));
            return static_cast<std::uint64_t>(n);
        };
        o.activation_bytes = bytes(activation_bytes, "activation_bytes");
        o.gradient_bytes = bytes(gradient_bytes, "gradient_bytes");
        o.parameter_bytes = bytes(parameter_bytes, "parameter_bytes");
        o.round_durations = round_durations;
        const shape s = h.dims();
        if (std::uint64_t{s.ranks} * o.data_parallel > max_ranks)
            fail("ranks x data_parallel must be at most 65535, got " + std::to_string(std::uint64_t{s.ranks} * o.data_parallel));
        const iteration_costs_holder c = iteration_costs_from(costs);
        chakra::export_result r;
        std::vector<std::string> encoded;
        {
            py::gil_scoped_release nogil;
            r = h.visit([&](const auto& pol) { return chakra::export_traces(pol, c.model, o); });
            for (const chakra::trace& t : r.ranks)
                encoded.push_back(chakra::encode(t));
        }
        if (!r)
            fail(r.error);
        py::list traces;
        for (const std::string& e : encoded)
            traces.append(py::bytes(e));
        return py::make_tuple(traces, chakra::comm_groups_json(r.groups));
    });
}

} // namespace pipesched::python
