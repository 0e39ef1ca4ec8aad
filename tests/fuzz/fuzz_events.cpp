// libFuzzer target: crafted per-rank event lists into validate_events and simulate_events (the
// iteration replay), which used to index peers and neighbouring stages before every rank had
// been checked. Input: three header bytes (ranks 1-4, microbatches 1-4, chunks 1-2 and the
// placement), then five bytes per event (op, chunk, rank, microbatch, peer; peer 255 is
// no_peer); an op byte of 255 starts the next rank's list.
#include <pipesched/analysis/simulate_iteration.hpp>
#include <pipesched/analysis/validate_iteration.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

namespace ps = pipesched;

void require(bool condition) {
    if (!condition) std::abort();
}

bool finite(double x) { return x >= 0.0 && x <= 1.7976931348623157e308; }

struct checking_sink {
    void push(const ps::timed_event& t) { require(finite(t.start) && finite(t.end) && t.start <= t.end); }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) return 0;
    const std::uint32_t chunks = 1 + data[2] % 2;
    const ps::shape dims{1u + data[0] % 4u, 1u + data[1] % 4u, chunks};
    const ps::placement layout = chunks == 2 && (data[2] & 4) != 0 ? ps::placement::v_shape : ps::placement::loop;
    std::vector<std::vector<ps::event>> lists(1);
    for (std::size_t i = 3; i + 5 <= size && lists.size() <= 8; i += 5) {
        if (data[i] == 255) {
            lists.emplace_back();
            continue;
        }
        const ps::event e{static_cast<ps::op>(data[i] % ps::op_count), data[i + 1], data[i + 2], data[i + 3],
                          data[i + 4] == 255 ? ps::no_peer : std::uint16_t{data[i + 4]}};
        lists.back().push_back(e);
    }
    const ps::verdict v = ps::validate_events(lists, dims, layout);
    ps::iteration_cost_model costs{};
    costs.compute.uniform.forward = 1.0 + static_cast<double>(size % 3);
    costs.p2p.latency = static_cast<double>(size % 2);
    costs.activation_bytes = 4.0;
    costs.p2p.bandwidth = 2.0;
    costs.data_parallel.latency = 3.0;
    costs.grad_norm = 0.5;
    checking_sink sink;
    const ps::iteration_simulation sim = ps::simulate_events(lists, dims, layout, costs, sink);
    require(sim.check.code == v.code);
    if (!sim.replayed) return 0;
    require(sim.check.code == ps::verdict_code::valid || sim.check.code == ps::verdict_code::stale_update ||
            sim.check.code == ps::verdict_code::grad_sync_before_backward ||
            sim.check.code == ps::verdict_code::loss_misplaced ||
            sim.check.code == ps::verdict_code::recompute_misplaced);
    require(sim.ranks.size() == lists.size());
    require(finite(sim.makespan));
    return 0;
}
