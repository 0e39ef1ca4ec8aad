// pipesched check
#include <filesystem>

#include <pipesched/analysis/validate.hpp>
#include <pipesched/io/chakra.hpp>
#include <pipesched/io/chakra_astra.hpp>
#include <pipesched/io/csv.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 1> check_flags{{
    {"microbatches", "M", "microbatches the schedule must cover (default: one past the largest seen)", "",
     false},
}};

/// FILE named PREFIX.<rank>.et: the whole set PREFIX.0.et, PREFIX.1.et, ... as ASTRA-sim reads
/// it, checked with chakra::check_traces (io/chakra_astra.hpp).
int check_chakra(std::string_view path) {
    const std::string_view stem = path.substr(0, path.size() - 3);
    const std::size_t dot = stem.rfind('.');
    const std::string_view rank = dot == std::string_view::npos ? std::string_view{} : stem.substr(dot + 1);
    if (rank.empty() || rank.find_first_not_of("0123456789") != std::string_view::npos)
        fail(pipesched::cli::quoted(path) + ": a Chakra trace must be named PREFIX.<rank>.et, as ASTRA-sim reads them");
    const std::string prefix{stem.substr(0, dot)};
    std::vector<pipesched::chakra::trace> ranks;
    std::size_t nodes = 0;
    for (std::size_t r = 0; r <= 0xFFFF; ++r) {
        const std::string file = prefix + "." + number_text(r) + ".et";
        if (!std::filesystem::exists(file)) {
            if (r == 0)
                fail(pipesched::cli::quoted(file) + " does not exist: ASTRA-sim needs every rank from 0");
            break;
        }
        const pipesched::chakra::read_result t = pipesched::chakra::read_trace(read_input(file));
        if (!t)
            fail(file + ": " + t.error.what());
        nodes += t.value.nodes.size();
        ranks.push_back(t.value);
    }
    const pipesched::chakra::trace_check c = pipesched::chakra::check_traces(ranks);
    output_buffer out{stdout};
    if (c) {
        out.append("valid: " + number_text(ranks.size()) + " Chakra traces " + prefix + ".{0.." +
                   number_text(ranks.size() - 1) + "}.et, " + number_text(nodes) +
                   " nodes, every receive matched by one send\n");
        return finish_output(out);
    }
    out.append("invalid: " + c.message + "\n");
    const int status = finish_output(out);
    return status == exit_ok ? 1 : status;
}

int run_check(const parsed_args& args) {
    const std::string_view path = args.positional();
    if (path.size() > 3 && path.substr(path.size() - 3) == ".et")
        return check_chakra(path);
    const std::string text = read_input(path);
    const pipesched::csv_result parsed = pipesched::read_csv(text);
    if (!parsed)
        fail(std::string{path} + ": " + pipesched::describe(parsed.error));
    const pipesched::placement_guess guess = pipesched::infer_placement(parsed.table);
    const auto compute = pipesched::compute_only(parsed.table);
    const std::uint32_t m = args.count("microbatches").value_or(0);
    const pipesched::verdict v = pipesched::validate(compute, m);
    std::size_t actions = 0;
    for (const auto& rank : compute)
        actions += rank.size();
    output_buffer out{stdout};
    if (v) {
        out.append("valid: " + number_text(guess.ranks) + " ranks, " + number_text(guess.stages) + " stages, " +
                   number_text(m != 0 ? m : guess.microbatches) + " microbatches, " + number_text(actions) +
                   " compute actions, placement " + std::string{pipesched::to_string(guess.layout)} + "\n");
        return finish_output(out);
    }
    out.append("invalid: " + pipesched::describe(v) + "\n");
    const int status = finish_output(out);
    return status == exit_ok ? 1 : status;
}

} // namespace

const command_spec check_command{"check", "validate a schedule read from PyTorch CSV (FILE, or - for standard input)",
     "Reads FILE as torch.distributed.pipelining's schedule CSV (one line per rank, compute and\n"
     "communication actions, empty cells idle) and validates its compute actions: each (stage,\n"
     "microbatch) has one F and one B (or I and W), in order, each stage on one rank, and no\n"
     "deadlock when a rank blocks at its next action until its input exists. Prints 'valid: ...'\n"
     "(exit 0) or 'invalid: <reason>' naming the rank, position and action (exit 1); an unreadable\n"
     "or malformed file is exit 2 with its line and column.\n"
     "A FILE named PREFIX.<rank>.et is read as Chakra execution traces instead: every\n"
     "PREFIX.<r>.et from r = 0 is read and checked for what ASTRA-sim needs (unique node ids,\n"
     "existing and acyclic dependencies, typed attributes, each receive matched by one send).",
     check_flags, run_check, "FILE"};

} // namespace pipesched::cli
