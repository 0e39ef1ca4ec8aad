// pipesched demo
#include <pipesched/action.hpp>
#include <pipesched/analysis/simulate.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

/// Largest number of chunk activations alive at once on any rank (the library's rule).
template <pipesched::schedule_policy P> std::uint32_t peak_in_flight(const P& pol) {
    std::uint32_t peak = 0;
    for (std::uint32_t r = 0; r < pol.shape.ranks; ++r)
        peak = std::max(peak, pipesched::peak_activations(pol, r));
    return peak;
}

// ---------------------------------------------------------------------------------------------
// The demonstration (no arguments)
// ---------------------------------------------------------------------------------------------

struct demo_column {
    std::string_view title;
    std::vector<std::string> actions;
    std::uint32_t peak = 0;
};

demo_column demo_run(pipesched::schedule_id id, std::uint32_t microbatches) {
    demo_column col{pipesched::info(id).pytorch_name, {}, 0};
    pipesched::schedule_options opt{};
    opt.shape = pipesched::shape{1, microbatches, 1};
    pipesched::with_schedule(id, opt, [&](const auto& pol) {
        for (const pipesched::event e : pipesched::events(pol, 0)) {
            col.actions.emplace_back(pipesched::format_action(pipesched::to_action(pol, e)).view());
        }
        col.peak = peak_in_flight(pol);
    });
    return col;
}

} // namespace

int run_demo() {
    using pipesched::schedule_id;
    const demo_column gpipe = demo_run(schedule_id::gpipe, 2);
    const demo_column ofob = demo_run(schedule_id::one_f_one_b, 2);
    const std::uint32_t more = 8;
    const std::uint32_t gpipe_more = demo_run(schedule_id::gpipe, more).peak;
    const std::uint32_t ofob_more = demo_run(schedule_id::one_f_one_b, more).peak;

    std::string s;
    s += "Why does gradient accumulation run all forwards before all backwards?\n";
    s += "One pipeline rank (p = 1), two microbatches (m = 2); actions are "
         "<stage><F|B><microbatch>:\n\n";
    const std::size_t w1 = std::max(gpipe.title.size(), std::size_t{4}) + 2;
    const std::size_t w2 = std::max(ofob.title.size(), std::size_t{4}) + 2;
    s += "  step  ";
    append_padded(s, gpipe.title, w1);
    s += ofob.title;
    s += '\n';
    const std::size_t steps = std::max(gpipe.actions.size(), ofob.actions.size());
    for (std::size_t i = 0; i < steps; ++i) {
        s += "  ";
        append_right(s, number_text(i + 1), 4);
        s += "  ";
        append_padded(s, i < gpipe.actions.size() ? gpipe.actions[i] : "", w1);
        s += i < ofob.actions.size() ? ofob.actions[i] : "";
        s += '\n';
    }
    s += "  peak  ";
    append_padded(s, number_text(gpipe.peak), w1);
    append_padded(s, number_text(ofob.peak), w2);
    s += "microbatches of activations alive at once\n\n";

    const std::string paragraph =
        "GPipe, every forward before any backward, is the order SimAI's workload row sweep "
        "produces for ga > 1: it keeps the activations of " +
        number_text(gpipe.peak) +
        " microbatches alive. 1F1B is Megatron's gradient accumulation without pipelining "
        "(forward_backward_no_pipelining, F0 B0 F1 B1): each backward frees its microbatch "
        "before the next forward, so it keeps " +
        number_text(ofob.peak) +
        ". Both compute the same gradients in the same time on one rank; only activation "
        "memory differs, and the gap grows with m (m=" +
        number_text(more) + ": " + number_text(gpipe_more) + " for GPipe, " +
        number_text(ofob_more) + " for 1F1B).";
    append_words(s, split_words(paragraph), 0, 0, demo_width);
    s += "\nThe user's own workload, as SimAI runs it and as a training framework runs it:\n\n";
    static constexpr std::string_view seed_workload =
#include "seed_workload.inc"
        ;
    // The network of the user's SimAI run: 4 GPUs, 2 per server, 2 NICs per server, NVLink 200
    // and NIC 25 GB/s (SimAI_analytical -g 4 -g_p_s 2 -n_p_s 2 -nv 200 -nic 25).
    pipesched::simai::analytical_options network{};
    network.gpus = 4;
    network.gpus_per_server = 2;
    network.nics_per_server = 2;
    network.nvlink_gbps = 200.0f;
    network.nic_gbps = 25.0f;
    s += simai_report("examples/workloads/simai_seed_tp2_ga2.txt (built in)", seed_workload,
                      pipesched::schedule_id::one_f_one_b, "text", network);
    s += '\n';
    s += "Next: pipesched simai examples/workloads/simai_seed_tp2_ga2.txt --gpus 4 --gpus-per-server 2 \\\n"
         "        --nics-per-server 2 --nvlink 200 --nic 25 --format simai-csv\n"
         "      pipesched simai examples/workloads/simai_seed_tp2_ga2.txt --format json\n"
         "      pipesched order --schedule 1F1B --ranks 4 --microbatches 8\n"
         "      pipesched compare --ranks 4 --microbatches 8\n"
         "      pipesched plan --model examples/models/llama3_70b.json --gpus 64 -- \\\n"
         "        --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --seq-length 8192 \\\n"
         "        --global-batch-size 128 --sequence-parallel --use-distributed-optimizer\n"
         "      pipesched plan --search --model examples/models/llama3_70b.json --gpus 256 -- \\\n"
         "        --seq-length 8192 --global-batch-size 512\n"
         "      pipesched --help\n";
    return print_status(s);
}

} // namespace pipesched::cli
