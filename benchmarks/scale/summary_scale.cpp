// Time and peak memory of the summary replay (simulate without a timeline) on one large shape:
//
//   pipesched_summary_scale SCHEDULE RANKS MICROBATCHES [CHUNKS] [--fill-w] [--validate]
//
// prints one line: schedule, shape, events, seconds, events/s, makespan, bubble fraction and the
// process's peak resident memory (getrusage ru_maxrss). One schedule per process, so that the
// peak is that schedule's alone; benchmarks/README.md has the loop over every policy.
#include <pipesched/pipesched.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace ps = pipesched;

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fputs("usage: pipesched_summary_scale SCHEDULE RANKS MICROBATCHES [CHUNKS] [--fill-w] [--validate]\n", stderr);
        return 2;
    }
    const auto id = ps::find_schedule(argv[1]);
    if (!id) {
        std::fprintf(stderr, "unknown schedule %s\n", argv[1]);
        return 2;
    }
    ps::schedule_options opt{};
    opt.shape.ranks = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10));
    opt.shape.microbatches = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
    opt.shape.chunks = 1;
    bool fill = false;
    bool validate_only = false;
    for (int i = 4; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--fill-w") fill = true;
        else if (a == "--validate") validate_only = true;
        else opt.shape.chunks = static_cast<std::uint32_t>(std::strtoul(argv[i], nullptr, 10));
    }
    return ps::with_schedule(*id, opt, [&](const auto& pol) {
        if (const ps::shape_check c = pol.check(); !c) {
            std::fprintf(stderr, "%s rejects the shape: %.*s\n", argv[1], static_cast<int>(c.message.size()),
                         c.message.data());
            return 2;
        }
        const auto start = std::chrono::steady_clock::now();
        double makespan = 0.0;
        double bubble = 0.0;
        bool ok = false;
        if (validate_only) {
            ok = static_cast<bool>(ps::validate(pol));
        } else {
            ps::cost_model costs{};
            costs.fill_with_weight = fill;
            const ps::simulation sim = ps::simulate(pol, costs);
            ok = static_cast<bool>(sim);
            makespan = sim.makespan;
            bubble = sim.bubble_fraction;
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double events = static_cast<double>(ps::event_count(pol));
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        std::printf("%-24s p=%u m=%u v=%u%s %s: %.0f events, %.2f s, %.1f M events/s, makespan %.1f, bubble %.4f, "
                    "peak RSS %.1f MiB%s\n",
                    std::string{ps::display_name(ps::info(*id))}.c_str(), opt.shape.ranks, opt.shape.microbatches,
                    pol.shape.chunks, fill ? " fill-w" : "", validate_only ? "validate" : "simulate", events,
                    seconds, events / seconds / 1e6, makespan, bubble,
                    static_cast<double>(usage.ru_maxrss) / 1024.0, ok ? "" : " (NOT VALID)");
        return ok ? 0 : 1;
    });
}
