// Prints the Chrome trace of interleaved 1F1B, p = 4, m = 8, v = 2, split backward, simulated
// with the default costs and a p2p latency of 0.25, for tests/tools/check_trace.py to parse.
#include <pipesched/io/chrome_trace.hpp>
#include <pipesched/pipesched.hpp>

#include <iostream>

int main() {
    namespace ps = pipesched;
    const ps::interleaved_1f1b<ps::backward_kind::split> pol{{4, 8, 2}};
    ps::cost_model costs{};
    costs.p2p_latency = 0.25;
    ps::chrome_trace_sink trace;
    trace.reserve(ps::event_count(pol));
    const ps::simulation sim = ps::simulate(pol, costs, trace);
    if (!sim) {
        std::cerr << "trace_dump: " << ps::describe(sim.check) << '\n';
        return 1;
    }
    ps::trace_options options{};
    options.process_name = "interleaved_1f1b p=4 m=8 v=2 split";
    trace.write(std::cout, options);
    return std::cout.good() ? 0 : 1;
}
