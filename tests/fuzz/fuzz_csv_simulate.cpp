// libFuzzer target: CSV -> validate -> simulate, the path `pipesched check` and a user's own
// schedule take. Overlapped pairs keep their flag, so pairs are validated and replayed as pairs.
// Whatever read_csv accepts must be validated and simulated without a crash; validate and
// simulate must agree; a replayed schedule has finite, consistent numbers.
#include <pipesched/analysis/simulate.hpp>
#include <pipesched/analysis/validate.hpp>
#include <pipesched/io/csv.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

void require(bool condition) {
    if (!condition) std::abort();
}

bool finite(double x) { return x >= 0.0 && x <= 1.7976931348623157e308; }

struct checking_timeline {
    std::size_t count = 0;
    void push(const pipesched::timed_action& t) {
        require(finite(t.start) && finite(t.end) && t.start <= t.end);
        ++count;
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text{reinterpret_cast<const char*>(data), size};
    const pipesched::csv_result parsed = pipesched::read_csv(text);
    if (!parsed) return 0;
    // The compute actions with their overlap flags (PyTorch's (F;B)OVERLAP_F_B cells).
    std::vector<std::vector<pipesched::action>> compute(parsed.table.ranks.size());
    std::size_t actions = 0;
    for (std::size_t r = 0; r < parsed.table.ranks.size(); ++r) {
        for (const pipesched::action& a : parsed.table.ranks[r]) {
            if (pipesched::is_compute(a.kind)) compute[r].push_back(a);
        }
        actions += compute[r].size();
    }
    const pipesched::verdict v = pipesched::validate(compute);
    require(!pipesched::describe(v).empty());

    // Costs from the input's length, so that the fuzzer also reaches unusual but legal ones.
    pipesched::cost_model costs{};
    costs.uniform.forward = 1.0 + static_cast<double>(size % 3);
    costs.uniform.backward_weight = static_cast<double>(size % 2);
    costs.p2p_latency = static_cast<double>(size % 5) * 0.5;
    costs.fill_with_weight = size % 2 == 1;
    checking_timeline timeline;
    const pipesched::simulation sim = pipesched::simulate(compute, costs, timeline);
    require(sim.check.code == v.code);
    if (!sim) {
        require(sim.ranks.empty());
        return 0;
    }
    require(timeline.count == actions);
    require(sim.ranks.size() == compute.size());
    require(finite(sim.makespan));
    require(sim.bubble_fraction >= 0.0 && sim.bubble_fraction <= 1.0);
    for (const pipesched::rank_summary& r : sim.ranks) {
        require(finite(r.busy) && r.busy <= sim.makespan * (1 + 1e-9) + 1e-9);
        require(r.last_end <= sim.makespan);
    }
    return 0;
}
