// pipesched check
#include <pipesched/analysis/validate.hpp>
#include <pipesched/io/csv.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 1> check_flags{{
    {"microbatches", "M", "microbatches the schedule must cover (default: one past the largest seen)", "",
     false},
}};

int run_check(const parsed_args& args) {
    const std::string_view path = args.positional();
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
     "or malformed file is exit 2 with its line and column.",
     check_flags, run_check, "FILE"};

} // namespace pipesched::cli
