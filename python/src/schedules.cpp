// pipesched._pipesched: the module, building schedules (catalog, explicit lists, PyTorch CSV) and
// reading them back (actions, events, CSV). The analyses are in analyses.cpp, the
// auto-scheduler, plan and SimAI in planning.cpp: three files compiled in parallel.
#include <algorithm>
#include <optional>
#include <utility>

#include <pipesched/analysis/validate.hpp>
#include <pipesched/catalog.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/io/svg.hpp>
#include <pipesched/iteration.hpp>
#include <pipesched/policies/explicit_schedule.hpp>
#include <pipesched/version.hpp>

#include "common.hpp"

namespace pipesched::python {

py::tuple verdict_tuple(const verdict& v) {
    py::list cycle;
    for (std::uint32_t k = 0; k < v.cycle_length && k < max_cycle_report; ++k)
        cycle.append(py::make_tuple(v.cycle[k].rank, v.cycle[k].index, action_text(v.cycle[k].waiting)));
    const bool has_subject = !v && v.code != verdict_code::invalid_shape;
    return py::make_tuple(std::string{to_string(v.code)}, describe(v), v.rank, v.index,
                          has_subject ? py::object(py::str(action_text(v.subject))) : py::object(py::none()),
                          v.other_rank, cycle);
}

std::vector<std::vector<action>> parse_cells(const std::vector<std::vector<std::string>>& cells) {
    if (cells.size() > max_ranks)
        fail(std::to_string(cells.size()) + " action lists, more than the limit of " + std::to_string(max_ranks) +
             " ranks");
    std::vector<std::vector<action>> out(cells.size());
    for (std::size_t r = 0; r < cells.size(); ++r) {
        if (cells[r].size() > max_listed)
            fail("rank " + std::to_string(r) + " has " + std::to_string(cells[r].size()) +
                 " actions, more than the limit of " + std::to_string(max_listed));
        for (std::size_t i = 0; i < cells[r].size(); ++i) {
            const std::string& text = cells[r][i];
            const cell_parse_result c = parse_cell(text);
            if (!c || c.count == 0) {
                const std::string why = c ? std::string{"an empty action"} : std::string{describe(c.error)};
                fail("rank " + std::to_string(r) + ", action " + std::to_string(i) + " ('" + text.substr(0, 40) +
                     "'), column " + std::to_string(c.position + 1) + ": " + why);
            }
            out[r].insert(out[r].end(), c.actions.begin(), c.actions.begin() + static_cast<std::ptrdiff_t>(c.count));
        }
    }
    return out;
}

namespace {

void require_units(const shape& s) {
    const std::uint64_t units = std::uint64_t{s.ranks} * s.chunks * s.microbatches;
    if (units > max_units)
        fail("ranks x chunks x microbatches = " + std::to_string(units) + " units, more than the limit of " +
             std::to_string(max_units) + " (2^26) that pipesched's Python module builds");
}

schedule_handle make_schedule(const std::string& name, std::int64_t ranks, std::int64_t microbatches,
                              std::int64_t chunks, std::int64_t group_size, const std::string& backward) {
    const std::optional<schedule_id> id = find_schedule(name);
    if (!id) {
        std::string names;
        for (const schedule_info& s : schedules)
            names += (names.empty() ? "" : ", ") + std::string{display_name(s)};
        fail("unknown schedule '" + name.substr(0, 64) + "' (known: " + names + ")");
    }
    const schedule_info& info = pipesched::info(*id);
    schedule_options o{};
    o.shape.ranks = count(ranks, "ranks", 1, max_ranks);
    o.shape.microbatches = count(microbatches, "microbatches", 1, max_microbatches);
    o.shape.chunks = chunks == 0 ? default_chunks(info.chunks) : count(chunks, "chunks", 1, max_chunks);
    o.group_size = group_size == 0 ? 0 : count(group_size, "group_size", 1, max_microbatches);
    if (backward == "split")
        o.backward = backward_kind::split;
    else if (backward != "full")
        fail("backward must be 'full' or 'split', got '" + backward.substr(0, 32) + "'");
    if (o.group_size != 0 && *id != schedule_id::interleaved_1f1b)
        fail("group_size applies to Interleaved1F1B only, not to " + std::string{display_name(info)});
    require_units(o.shape);
    return with_any_schedule(*id, o, [&](const auto& pol) {
        if (const shape_check c = pol.check(); !c)
            fail(std::string{display_name(info)} + ": " + std::string{c.message} + " (ranks=" +
                 std::to_string(o.shape.ranks) + " microbatches=" + std::to_string(o.shape.microbatches) +
                 " chunks=" + std::to_string(o.shape.chunks) + ")");
        return make_handle(pol, std::string{display_name(info)}, "catalog");
    });
}

/// Whether each stage runs on exactly one rank (a placement, if neither loop nor V) rather than
/// on none or two (a broken schedule, which from_actions names under the loop placement).
bool every_stage_owned(const placement_guess& g) {
    if (g.owners.empty())
        return false;
    return std::none_of(g.owners.begin(), g.owners.end(), [](std::size_t o) {
        return o == placement_guess::no_owner || o == placement_guess::two_owners;
    });
}

/// An explicit schedule of compute actions per rank. The placement is the one given ("loop",
/// "v") or the one infer_placement sees; the counts are given or those the actions use.
schedule_handle from_actions(std::vector<std::vector<action>> lists, std::int64_t microbatches, std::int64_t chunks,
                             const std::string& layout, std::string source) {
    const placement_guess guess = infer_placement(schedule_table{lists});
    if (lists.empty())
        fail("no action lists: a schedule needs one list per rank");
    const auto ranks = count(static_cast<std::int64_t>(lists.size()), "ranks (action lists)", 1, max_ranks);
    placement where = placement::loop;
    if (layout == "v" || layout == "v_shape")
        where = placement::v_shape;
    else if (layout.empty() && guess.layout == inferred_placement::v_shape)
        where = placement::v_shape;
    else if (layout.empty() && guess.layout == inferred_placement::custom && every_stage_owned(guess))
        fail("the actions place stages neither in a loop (stage s on rank s % ranks) nor in a V; give "
             "placement='loop' or 'v' to be told which action breaks it, or check such lists with "
             "pipesched.validate(actions) and pipesched.simulate(actions)");
    else if (!layout.empty() && layout != "loop")
        fail("placement must be 'loop' or 'v', got '" + layout.substr(0, 32) + "'");
    shape s{};
    s.ranks = ranks;
    const std::int64_t guessed_chunks =
        where == placement::v_shape ? 2 : std::max<std::int64_t>(1, static_cast<std::int64_t>((guess.stages + ranks - 1) / ranks));
    s.chunks = count(chunks != 0 ? chunks : guessed_chunks, "chunks", 1, max_chunks);
    s.microbatches = count(microbatches != 0 ? microbatches : std::max<std::int64_t>(1, guess.microbatches),
                           "microbatches", 1, max_microbatches);
    require_units(s);
    const auto build = [&](auto built) -> schedule_handle {
        if (!built)
            fail(built.error);
        return make_handle(built.schedule, "explicit", std::move(source));
    };
    if (where == placement::v_shape)
        return build(explicit_schedule<placement::v_shape>::from_actions(lists, s));
    return build(explicit_schedule<placement::loop>::from_actions(lists, s));
}

schedule_handle explicit_from_cells(const std::vector<std::vector<std::string>>& cells, std::int64_t microbatches,
                                    std::int64_t chunks, const std::string& layout) {
    return from_actions(parse_cells(cells), microbatches, chunks, layout, "explicit");
}

/// PyTorch CSV text: the compute actions of every rank (communication actions are dropped, as
/// `pipesched check` drops them), as cells.
std::vector<std::vector<std::string>> read_csv_cells(const std::string& text) {
    if (text.size() > (std::size_t{64} << 20))
        fail("the CSV text is " + std::to_string(text.size()) + " bytes, more than the limit of 67108864 (64 MiB)");
    csv_result parsed = read_csv(text);
    if (!parsed)
        fail(describe(parsed.error));
    if (parsed.table.ranks.size() > max_ranks)
        fail(std::to_string(parsed.table.ranks.size()) + " rank lines, more than the limit of " +
             std::to_string(max_ranks) + " ranks");
    std::vector<std::vector<std::string>> out;
    for (const std::vector<action>& row : compute_only(std::move(parsed.table))) {
        std::vector<std::string>& cells = out.emplace_back();
        cell_folder folder{};
        for (const action& a : row) {
            if (folder.push(a))
                cells.emplace_back(folder.text());
        }
    }
    return out;
}

template <class P>
std::uint64_t listed_events(const P& pol) {
    std::uint64_t n = 0;
    for (std::uint32_t r = 0; r < pol.shape.ranks; ++r)
        n += pol.size(r);
    if (n > max_listed)
        fail("the schedule has " + std::to_string(n) + " events, more than the " + std::to_string(max_listed) +
             " (2^22) one call returns as Python objects; use to_csv() or a smaller shape");
    return n;
}

/// Per rank, the cells PyTorch's CSV holds: "0F3", and an overlapped pair as one cell.
py::list actions_of(const schedule_handle& h) {
    return h.visit([](const auto& pol) {
        listed_events(pol);
        py::list out;
        for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
            py::list row;
            cell_folder folder{};
            for (const event& e : events(pol, r)) {
                if (folder.push(to_action(pol, e)))
                    row.append(py::str(std::string{folder.text()}));
            }
            out.append(std::move(row));
        }
        return out;
    });
}

iteration_options read_iteration_options(const std::string& grad_sync, const std::string& param_gather,
                                         bool checkpointing, bool grad_norm, bool p2p) {
    iteration_options o{};
    if (grad_sync == "overlapped")
        o.grad_sync = grad_sync_mode::overlapped;
    else if (grad_sync != "at_end")
        fail("grad_sync must be 'at_end' or 'overlapped', got '" + grad_sync.substr(0, 32) + "'");
    if (param_gather == "after_step")
        o.param_gather = param_gather_mode::after_step;
    else if (param_gather == "next_iteration")
        o.param_gather = param_gather_mode::next_iteration;
    else if (param_gather != "none")
        fail("param_gather must be 'none', 'after_step' or 'next_iteration', got '" + param_gather.substr(0, 32) + "'");
    o.activation_checkpointing = checkpointing;
    o.grad_norm = grad_norm;
    o.p2p = p2p;
    return o;
}

/// (kind, rank, chunk, microbatch, peer or None, stage) per event of every rank.
template <class P>
py::list event_rows(const P& pol, placement layout) {
    listed_events(pol);
    py::list out;
    for (std::uint32_t r = 0; r < pol.shape.ranks; ++r) {
        py::list row;
        for (const event& e : events(pol, r)) {
            const py::object peer = e.peer == no_peer ? py::object(py::none()) : py::object(py::int_(e.peer));
            row.append(py::make_tuple(std::string{to_string(e.kind)}, e.rank, e.chunk, e.microbatch, peer,
                                      stage_of(layout, pol.shape.ranks, e.rank, e.chunk)));
        }
        out.append(std::move(row));
    }
    return out;
}

} // namespace

iteration_options iteration_options_from(const py::tuple& t) {
    if (t.size() != 5)
        fail("iteration options: expected (grad_sync, param_gather, activation_checkpointing, grad_norm, p2p)");
    return read_iteration_options(t[0].cast<std::string>(), t[1].cast<std::string>(), t[2].cast<bool>(),
                                  t[3].cast<bool>(), t[4].cast<bool>());
}

} // namespace pipesched::python

PYBIND11_MODULE(_pipesched, m) {
    using namespace pipesched::python;
    namespace ps = pipesched;
    m.doc() = "pipesched's C++ library; use the package pipesched, which wraps this module";
    m.attr("version") = std::string{ps::version_string};
    m.def("catalog", [] {
        py::list out;
        for (const ps::schedule_info& s : ps::schedules) {
            py::list aliases;
            for (std::string_view a : s.aliases)
                if (!a.empty())
                    aliases.append(std::string{a});
            out.append(py::make_tuple(std::string{s.name}, std::string{s.pytorch_name}, aliases, s.multi_chunk,
                                      s.fixed_backward, s.layout == ps::placement::v_shape ? "v" : s.layout == ps::placement::bidirectional ? "bidirectional" : "loop",
                                      ps::default_chunks(s.chunks)));
        }
        return out;
    });
    py::class_<schedule_handle>(m, "Schedule")
        .def_property_readonly("name", [](const schedule_handle& h) { return h.name; })
        .def_property_readonly("source", [](const schedule_handle& h) { return h.source; })
        .def_property_readonly("policy_name",
                               [](const schedule_handle& h) { return std::string{h.visit([](const auto& p) { return p.policy_name(); })}; })
        .def_property_readonly("ranks", [](const schedule_handle& h) { return h.dims().ranks; })
        .def_property_readonly("microbatches", [](const schedule_handle& h) { return h.dims().microbatches; })
        .def_property_readonly("chunks", [](const schedule_handle& h) { return h.dims().chunks; })
        .def_property_readonly("placement", [](const schedule_handle& h) {
            return h.layout() == ps::placement::v_shape ? "v" : h.layout() == ps::placement::bidirectional ? "bidirectional" : "loop";
        })
        .def("actions", &actions_of)
        .def("events", [](const schedule_handle& h, const py::object& options) {
            return h.visit([&](const auto& pol) {
                using P = std::remove_cvref_t<decltype(pol)>;
                if (options.is_none())
                    return event_rows(pol, P::layout);
                return event_rows(ps::iteration<P>{pol, iteration_options_from(options.cast<py::tuple>())}, P::layout);
            });
        }, py::arg("iteration") = py::none())
        .def("to_csv", [](const schedule_handle& h) {
            return h.visit([](const auto& pol) {
                std::string text;
                {
                    py::gil_scoped_release nogil;
                    text = ps::write_csv(pol);
                }
                return text;
            });
        })
        .def("to_svg", [](const schedule_handle& h) {
            return h.visit([](const auto& pol) {
                std::string text;
                {
                    py::gil_scoped_release nogil;
                    text = ps::to_svg(pol); // unit costs: F = 1, B = 2, I = W = 1
                }
                return text;
            });
        });
    m.def("make_schedule", &make_schedule, py::arg("name"), py::arg("ranks"), py::arg("microbatches"),
          py::arg("chunks") = 0, py::arg("group_size") = 0, py::arg("backward") = "full");
    m.def("explicit_schedule", &explicit_from_cells, py::arg("actions"), py::arg("microbatches") = 0,
          py::arg("chunks") = 0, py::arg("placement") = "");
    m.def("read_csv", &read_csv_cells, py::arg("text"));
    bind_analyses(m);
    bind_planning(m);
}
