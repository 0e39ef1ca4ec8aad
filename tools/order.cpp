// pipesched order
#include <pipesched/action.hpp>
#include <pipesched/io/csv.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

/// Appends one rank's actions to the output as `a,b,c`; an overlapped pair is one cell
/// `(a;b)OVERLAP_F_B`.
template <pipesched::schedule_policy P> struct csv_line_sink {
    const P* pol;
    output_buffer* out;
    bool first = true;
    pipesched::cell_folder cells{};

    void push(const pipesched::event& e) {
        if (!cells.push(pipesched::to_action(*pol, e)))
            return;
        if (!first)
            out->put(',');
        first = false;
        out->append(cells.text());
    }
};

int run_order(const parsed_args& args) {
    const schedule_request req = read_schedule(args);
    // Written as it is produced: what the order holds is its schedule's (V-Min and V-Half
    // build theirs whole).
    resource_estimate estimate{};
    estimate.shape = req.options.shape;
    estimate.build_bytes = schedule_build_bytes(req.id, req.options.shape);
    require_within_budget(estimate, "order", "use fewer ranks or microbatches");
    return with_requested_schedule(req, [&](const auto& pol) -> int {
        output_buffer out{stdout};
        const pipesched::shape s = pol.shape;
        progress::task("writing every rank's order", s.ranks, "ranks");
        for (std::uint32_t r = 0; r < s.ranks && !out.failed(); ++r) {
            csv_line_sink<std::remove_cvref_t<decltype(pol)>> sink{&pol, &out};
            pipesched::emit(pol, r, sink);
            out.put('\n');
            progress::advance();
        }
        if (!out.finish()) {
            std::fputs("pipesched: error writing the output\n", stderr);
            return exit_output_failed;
        }
        return exit_ok;
    });
}

} // namespace

const command_spec order_command{"order", "print every rank's compute actions in execution order (PyTorch CSV)",
     "Prints P lines; line r lists rank r's compute actions in execution order, comma-separated,\n"
     "as <stage><F|B|I|W><microbatch>, stages numbered globally (chunk * P + rank for the\n"
     "schedules below). This is the CSV that torch.distributed.pipelining's _load_csv reads.",
     schedule_flags, run_order};

} // namespace pipesched::cli
