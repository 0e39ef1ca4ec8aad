// pipesched compare

#include <cmath>

#include <pipesched/analysis/validate.hpp>
#include <pipesched/catalog.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 5> compare_flags{{
    optional(schedule_flags[1]), optional(schedule_flags[2]),
    {"chunks", "V", "model chunks per rank for the multi-chunk schedules (single-chunk ones use 1)", "2", false},
    {"csv", "FILE", "also a schedule read from PyTorch CSV; --ranks and --microbatches default to its shape", "",
     false},
    cost_flag,
}};

/// A shape flag within the limits of the event fields (shape.hpp), else a usage error naming it.
void require_within(std::string_view flag, std::uint32_t value, std::uint32_t limit) {
    if (value > limit)
        fail("--" + std::string{flag} + " must be at most " + number_text(limit) + ", got " + number_text(value));
}

// Long: flags, the optional CSV, the memory estimate, one row per schedule and the table are
// one sequence over the same few values; the row's numbers are already a lambda of their own.
int run_compare(const parsed_args& args) {
    const std::optional<std::uint32_t> ranks = args.count("ranks");
    const std::optional<std::uint32_t> microbatches = args.count("microbatches");
    const std::uint32_t v = args.count("chunks").value_or(2);
    const cost_request costs = read_costs(args);
    if (!args.get("csv")) {
        for (const std::string_view flag : {"ranks", "microbatches"}) {
            if (!args.get(flag))
                fail("missing required flag --" + std::string{flag} + " (or --csv FILE)" + args.see_help());
        }
    }
    if (ranks)
        require_within("ranks", *ranks, pipesched::max_ranks);
    if (microbatches)
        require_within("microbatches", *microbatches, pipesched::max_microbatches);
    require_within("chunks", v, pipesched::max_chunks);
    std::optional<loaded_csv> file;
    if (const auto path = args.get("csv")) {
        file = load_csv(*path);
        if (file->actions == 0)
            fail(file->label + ": no compute action (F, B, I or W) to compare");
        if (const pipesched::verdict verdict = pipesched::validate(file->compute); !verdict)
            fail(file->label + ": invalid schedule: " + pipesched::describe(verdict) + " (see 'pipesched check')");
        if (ranks && *ranks != file->guess.ranks)
            fail("--ranks " + number_text(*ranks) + " differs from the " + number_text(file->guess.ranks) +
                 " ranks of " + file->label);
        if (microbatches && *microbatches != file->guess.microbatches)
            fail("--microbatches " + number_text(*microbatches) + " differs from the " +
                 number_text(file->guess.microbatches) + " microbatches of " + file->label);
    }
    const std::uint32_t p = ranks ? *ranks : static_cast<std::uint32_t>(file->guess.ranks);
    const std::uint32_t m = microbatches ? *microbatches : file->guess.microbatches;
    // One schedule at a time: the multi-chunk ones, at v chunks, hold the most, and V-Min and
    // V-Half build their order first. Every schedule is replayed.
    resource_estimate estimate{};
    estimate.shape = {p, m, v};
    estimate.bytes_per_unit = pipesched::structure_check_bytes_per_unit;
    for (const pipesched::schedule_info& info : pipesched::schedules) {
        const pipesched::shape s{p, m, info.multi_chunk ? v : 1u};
        estimate.build_bytes = std::max(estimate.build_bytes, schedule_build_bytes(info.id, s));
    }
    require_within_budget(estimate, "compare", "use fewer ranks or microbatches");
    std::vector<std::array<std::string, 8>> rows;
    rows.push_back({"schedule", "chunks", "bubble", "makespan", "peak max", "peak rank 0", "peak max / v", "note"});
    /// The numbers of one simulated row; false (row left as "-") if the result overflowed.
    const auto fill = [](std::array<std::string, 8>& row, const pipesched::simulation& sim, std::uint32_t chunks) {
        if (!sim)
            fail_simulation(row[0], sim.check); // invalid_cost or time_overflow, naming the --cost key
        row[2] = fixed(sim.bubble_fraction);
        row[3] = fixed(sim.makespan);
        // In chunk activations, as simulate and check print them; then in rank activations (v
        // chunk activations make one), the figure that compares schedules of different v.
        row[4] = number_text(sim.max_peak_activations());
        row[5] = number_text(sim.ranks[0].peak_activations);
        row[6] = fixed(static_cast<double>(sim.max_peak_activations()) / static_cast<double>(chunks), 2);
    };
    progress::task("simulating every schedule at p=" + number_text(p) + " m=" + number_text(m) + " v=" + number_text(v),
                   pipesched::schedules.size() + (file ? 1 : 0), "schedules");
    for (const pipesched::schedule_info& info : pipesched::schedules) {
        pipesched::schedule_options opt{};
        opt.shape = {p, m, info.multi_chunk ? v : 1u};
        pipesched::with_any_schedule(info.id, opt, [&](const auto& pol) {
            std::array<std::string, 8> row{std::string{pipesched::display_name(info)}, number_text(opt.shape.chunks),
                                           "-", "-", "-", "-", "-", ""};
            if (const pipesched::shape_check c = pol.check(); !c) {
                row[7] = "rejects this shape: " + std::string{c.message};
                rows.push_back(std::move(row));
                return;
            }
            // DualPipe's two chunks are stages of two copies, each of a one-chunk stage's layers.
            using P = std::remove_cvref_t<decltype(pol)>;
            const std::uint32_t share = pipesched::chunks_per_copy(P::layout, opt.shape.chunks);
            fill(row, pipesched::simulate(pol, cost_model_for(costs, share)), share);
            if (P::layout == pipesched::placement::bidirectional)
                row[7] = "two model copies (2x parameters): a chunk holds a rank's layers";
            rows.push_back(std::move(row));
        });
        progress::advance();
    }
    if (file) {
        const std::uint32_t chunks = file->guess.chunks != 0 ? file->guess.chunks : 1;
        std::array<std::string, 8> row{file->label, number_text(chunks), "-", "-", "-", "-", "-", ""};
        pipesched::discard_timeline none{};
        const pipesched::placement layout = pipesched::placement_of(file->guess.layout);
        const std::uint32_t share = pipesched::chunks_per_copy(layout, chunks);
        fill(row, pipesched::simulate(file->compute, cost_model_for(costs, share), none, 0, layout), share);
        progress::advance();
        if (file->guess.chunks == 0)
            row[7] = "placement custom: costs charged per stage as for one chunk";
        rows.push_back(std::move(row));
    }
    std::string s = "p=" + number_text(p) + " m=" + number_text(m) + " v=" + number_text(v) +
                    "; costs per microbatch of one rank's layers (F, B, I, W), split evenly over its chunks;\n"
                    "peaks in chunk activations (one microbatch through one chunk, as simulate prints them);\n"
                    "peak max / v in rank activations (one microbatch through all of a rank's layers)\n";
    append_columns<8>(s, rows);
    output_buffer out{stdout};
    out.append(s);
    return finish_output(out);
}

} // namespace

const command_spec compare_command{"compare", "bubble, makespan and peak activations of every schedule for one shape",
     "Simulates every schedule that accepts the shape (single-chunk schedules with one chunk) and\n"
     "prints one row each: bubble fraction, makespan, peak activations in chunk activations (the\n"
     "maximum over ranks and on rank 0, as simulate's peak_activations) and the maximum divided by\n"
     "the chunks, in activations of a rank's whole share of the model. With --csv FILE the file's\n"
     "schedule is the last row, compared at its own shape. A shape whose replay would hold more\n"
     "than 4 GiB (1 byte per stage and microbatch) is refused with exit 2; anything smaller runs,\n"
     "showing its progress on a terminal after a second.",
     compare_flags, run_compare};

} // namespace pipesched::cli
