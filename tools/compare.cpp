// pipesched compare

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 4> compare_flags{{
    schedule_flags[1], schedule_flags[2],
    {"chunks", "V", "model chunks per rank for the multi-chunk schedules (single-chunk ones use 1)", "2", false},
    cost_flag,
}};

int run_compare(const parsed_args& args) {
    const std::uint32_t p = args.count("ranks").value_or(1);
    const std::uint32_t m = args.count("microbatches").value_or(1);
    const std::uint32_t v = args.count("chunks").value_or(2);
    const cost_request costs = read_costs(args);
    std::vector<std::array<std::string, 7>> rows;
    rows.push_back({"schedule", "chunks", "bubble", "makespan", "peak max", "peak rank 0", "note"});
    for (const pipesched::schedule_info& info : pipesched::schedules) {
        pipesched::schedule_options opt{};
        opt.dims = {p, m, info.multi_chunk ? v : 1u};
        pipesched::with_schedule(info.id, opt, [&](const auto& pol) {
            std::array<std::string, 7> row{std::string{pipesched::display_name(info)}, number_text(opt.dims.chunks),
                                           "-", "-", "-", "-", ""};
            if (const pipesched::shape_check c = pol.check(); !c) {
                row[6] = "rejects this shape: " + std::string{c.message};
                rows.push_back(std::move(row));
                return;
            }
            const pipesched::simulation sim = pipesched::simulate(pol, cost_model_for(costs, opt.dims.chunks));
            if (!sim)
                fail_simulation(pipesched::display_name(info), sim.check);
            const double per = static_cast<double>(opt.dims.chunks);
            row[2] = fixed(sim.bubble_fraction);
            row[3] = fixed(sim.makespan);
            // In microbatches of one rank's activations: v chunk activations make one.
            row[4] = fixed(sim.max_peak_activations() / per, 2);
            row[5] = fixed(sim.ranks[0].peak_activations / per, 2);
            rows.push_back(std::move(row));
        });
    }
    std::array<std::size_t, 7> width{};
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i)
            width[i] = std::max(width[i], row[i].size());
    std::string s = "p=" + number_text(p) + " m=" + number_text(m) + " v=" + number_text(v) +
                    "; costs per microbatch of one rank's layers (F, B, I, W), split evenly over its chunks;\n"
                    "peaks in microbatches of one rank's activations\n";
    for (const auto& row : rows) {
        for (std::size_t i = 0; i < row.size(); ++i) {
            if (i + 1 == row.size()) {
                s += row[i];
            } else {
                append_padded(s, row[i], width[i] + 2);
            }
        }
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        s += '\n';
    }
    output_buffer out{stdout};
    out.append(s);
    return finish_output(out);
}

} // namespace

const command_spec compare_command{"compare", "bubble, makespan and peak activations of every schedule for one shape",
     "Simulates every schedule that accepts the shape (single-chunk schedules with one chunk) and\n"
     "prints one row each: bubble fraction, makespan, and peak activations in microbatches of one\n"
     "rank's activations (the maximum over ranks and on rank 0).",
     compare_flags, run_compare};

} // namespace pipesched::cli
