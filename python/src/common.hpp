// The pybind11 module `pipesched._pipesched`: what its source files share. The module is the
// thin layer under the Python package python/pipesched/__init__.py; it calls the same library
// functions as the command-line tool and hands plain tuples, lists and dicts to Python, which
// wraps them in named tuples and small classes (so that this layer instantiates few pybind11
// templates: the compile time of the module is the CI's, see python/CMakeLists.txt).
//
// Errors: a bad value throws std::invalid_argument with the library's message, which pybind11
// raises as ValueError. Schedules are held as any_schedule of the two placements, as the tool
// holds them, so every analysis is compiled twice rather than once per catalogued schedule.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <pipesched/action.hpp>
#include <pipesched/analysis/verdict.hpp>
#include <pipesched/iteration.hpp>
#include <pipesched/policies/any_schedule.hpp>
#include <pipesched/shape.hpp>

namespace pipesched::python {

namespace py = pybind11;

using loop_schedule = any_schedule<placement::loop>;
using v_schedule = any_schedule<placement::v_shape>;
using bidirectional_schedule = any_schedule<placement::bidirectional>; // DualPipe

/// A schedule as Python holds it: a catalogued policy, an explicit order or an auto-schedule,
/// behind any_schedule; immutable once built, so calls may run without the GIL.
struct schedule_handle {
    std::variant<loop_schedule, v_schedule, bidirectional_schedule> held;
    std::string name;   ///< the display name: PyTorch's for catalogued schedules, else the kind
    std::string source; ///< "catalog", "explicit" or "autoschedule"

    template <class F>
    decltype(auto) visit(F&& f) const {
        return std::visit(std::forward<F>(f), held);
    }
    [[nodiscard]] pipesched::shape dims() const {
        return visit([](const auto& pol) { return pol.shape; });
    }
    [[nodiscard]] placement layout() const {
        return visit([]<class P>(const P&) { return P::layout; });
    }
};

/// A handle holding `pol` behind the any_schedule of its placement.
template <class P>
schedule_handle make_handle(const P& pol, std::string name, std::string source) {
    return {any_schedule<P::layout>{pol}, std::move(name), std::move(source)};
}

/// Raised as ValueError in Python.
[[noreturn]] inline void fail(const std::string& message) { throw std::invalid_argument(message); }

/// A count given from Python as an int, checked against [low, high] here (Python ints of any
/// size arrive as int64 after the package's own check; this is the module's).
inline std::uint32_t count(std::int64_t value, std::string_view name, std::uint32_t low, std::uint32_t high) {
    if (value < low || value > high)
        fail(std::string{name} + " must be " + std::to_string(low) + ".." + std::to_string(high) + ", got " +
             std::to_string(value));
    return static_cast<std::uint32_t>(value);
}

/// The most (stage, microbatch) units a schedule built from Python may have: the tool's work
/// budget (tools/cli.hpp), so that every call answers or refuses within a minute.
inline constexpr std::uint64_t max_units = std::uint64_t{1} << 26;
/// The most events or actions one call returns as Python objects (about 60 bytes each).
inline constexpr std::uint64_t max_listed = std::uint64_t{1} << 22;

/// An action as text: PyTorch's form for F, B, I, W ("0F3") and p2p ("1SEND_F0"); iteration
/// ops by name with their stage and microbatch, as describe(verdict) writes them.
inline std::string action_text(const action& a) {
    if (!action_name(a.kind).empty())
        return std::string{format_action(a).view()};
    return std::string{to_string(a.kind)} + "(stage " + std::to_string(a.stage) + ", microbatch " +
           std::to_string(a.microbatch) + ")";
}

/// (code, message, rank, index, subject, other_rank, cycle): the verdict's fields; the cycle as
/// (rank, index, waiting action) triples, the first max_cycle_report of cycle_length.
py::tuple verdict_tuple(const verdict& v);

/// Cells of PyTorch's CSV ("0F3", "(0F7;7B3)OVERLAP_F_B") per rank to actions; a malformed
/// cell is a ValueError naming its rank, position and the parser's reason.
std::vector<std::vector<action>> parse_cells(const std::vector<std::vector<std::string>>& cells);

/// Iteration options from (grad_sync, param_gather, activation_checkpointing, grad_norm, p2p).
iteration_options iteration_options_from(const py::tuple& t);

void bind_analyses(py::module_& m);
void bind_planning(py::module_& m);

} // namespace pipesched::python
