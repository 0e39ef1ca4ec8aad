// A template for plugging pipesched into an event-driven simulator such as SimAI or ASTRA-sim.
//
// SimAI's `Workload` advances when the simulator's event queue calls `Workload::call(event,
// data)`: it issues the next compute (scheduling a callback after its duration) or the next
// collective (a callback when it completes). This example keeps that shape: one `rank_driver`
// per pipeline rank pulls its next event from a pipesched cursor on each `call`, charges
// compute time, posts sends, blocks on receives until the matching send has arrived, launches
// data-parallel gradient syncs on a communication stream and waits for them before the
// optimizer. Replace `event_queue` with your simulator's queue and the cost constants with your
// compute and network models; the order of events is pipesched's.
//
// Run with no arguments: simulates one iteration of interleaved 1F1B (p = 4, m = 8, v = 2,
// overlapped grad sync), prints the iteration time, and checks it against
// pipesched::simulate(iteration) with the same costs (exit 1 if they disagree).

#include <pipesched/pipesched.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <vector>

namespace ps = pipesched;

namespace {

// --- the simulator's side: a time-ordered queue of callbacks ------------------------------
class event_queue {
public:
    void schedule(double at, std::function<void()> callback) {
        queue_.push(entry{at, sequence_++, std::move(callback)});
    }
    double run() {
        while (!queue_.empty()) {
            entry e = queue_.top();
            queue_.pop();
            now_ = e.at;
            e.callback();
        }
        return now_;
    }
    [[nodiscard]] double now() const { return now_; }

private:
    struct entry {
        double at;
        std::uint64_t sequence; // ties run in the order they were scheduled
        std::function<void()> callback;
        bool operator>(const entry& other) const {
            return std::tie(at, sequence) > std::tie(other.at, other.sequence);
        }
    };
    std::priority_queue<entry, std::vector<entry>, std::greater<>> queue_;
    std::uint64_t sequence_ = 0;
    double now_ = 0.0;
};

// --- costs (your compute and network models go here) --------------------------------------
constexpr double forward_time = 1.0;
constexpr double backward_time = 2.0;
constexpr double p2p_time = 0.25;      // latency + activation bytes / bandwidth
constexpr double grad_sync_time = 3.0; // one chunk's data-parallel reduce-scatter
constexpr double optimizer_time = 1.0;

double compute_time(ps::op kind) {
    switch (kind) {
    case ps::op::forward: return forward_time;
    case ps::op::backward: return backward_time;
    case ps::op::optimizer_step: return optimizer_time;
    default: return 0.0; // loss, grad_norm: folded into neighbours in this example
    }
}

// --- the workload's side: one driver per pipeline rank ------------------------------------
using iteration_type = ps::iteration<ps::interleaved_1f1b<>>;
/// A tensor in flight: (stage that produced it, microbatch, is a gradient).
using tensor_key = std::tuple<std::uint32_t, std::uint32_t, bool>;

struct network;

class rank_driver {
public:
    rank_driver(const iteration_type& it, std::uint32_t rank, event_queue& q, network& net)
        : it_{&it}, cursor_{it.cursor(rank)}, queue_{q}, net_{net} {}

    /// SimAI's Workload::call: the previous step finished, issue the next one.
    void call();
    /// A tensor this rank waits for has arrived.
    void deliver();

    double finished_at = 0.0;

private:
    const iteration_type* it_;
    iteration_type::cursor_type cursor_;
    event_queue& queue_;
    network& net_;
    double comm_free_ = 0.0; // the data-parallel stream
};

struct network {
    std::map<tensor_key, int> arrived;        // tensors delivered, not yet received
    std::map<tensor_key, rank_driver*> waiting; // receivers blocked on a tensor
};

tensor_key key_of(const iteration_type& it, const ps::event& e) {
    const bool grad = e.kind == ps::op::send_gradient || e.kind == ps::op::recv_gradient;
    const std::uint32_t stage = it.stage(e.rank, e.chunk);
    std::uint32_t producer = stage; // a send names its own stage
    if (e.kind == ps::op::recv_activation) producer = stage - 1;
    if (e.kind == ps::op::recv_gradient) producer = stage + 1;
    return {producer, e.microbatch, grad};
}

void rank_driver::call() {
    while (!cursor_.done()) {
        const ps::event e = cursor_.current();
        cursor_.advance();
        switch (e.kind) {
        case ps::op::send_activation:
        case ps::op::send_gradient: {
            const tensor_key k = key_of(*it_, e);
            queue_.schedule(queue_.now() + p2p_time, [this, k] {
                auto w = net_.waiting.find(k);
                if (w != net_.waiting.end()) {
                    rank_driver* receiver = w->second;
                    net_.waiting.erase(w);
                    receiver->deliver();
                } else {
                    ++net_.arrived[k];
                }
            });
            continue; // sends do not block
        }
        case ps::op::recv_activation:
        case ps::op::recv_gradient: {
            const tensor_key k = key_of(*it_, e);
            auto a = net_.arrived.find(k);
            if (a != net_.arrived.end()) {
                if (--a->second == 0) net_.arrived.erase(a);
                continue;
            }
            net_.waiting[k] = this; // resume in deliver()
            return;
        }
        case ps::op::grad_sync: {
            const double start = std::max(queue_.now(), comm_free_);
            comm_free_ = start + grad_sync_time;
            continue; // overlaps the remaining backward work
        }
        case ps::op::optimizer_step: {
            // Wait for every gradient sync, then step.
            const double start = std::max(queue_.now(), comm_free_);
            queue_.schedule(start + optimizer_time, [this] { call(); });
            return;
        }
        default: {
            const double t = compute_time(e.kind);
            if (t == 0.0) continue;
            queue_.schedule(queue_.now() + t, [this] { call(); });
            return;
        }
        }
    }
    finished_at = std::max(queue_.now(), comm_free_);
}

void rank_driver::deliver() { call(); }

} // namespace

int main() {
    ps::iteration_options options{};
    options.grad_sync = ps::grad_sync_mode::overlapped;
    options.grad_norm = false; // a pipeline-wide collective; left out to keep the driver short
    const iteration_type it{ps::interleaved_1f1b<>{{4, 8, 2}}, options};
    if (const ps::verdict v = ps::validate(it); !v) {
        std::printf("invalid iteration: %s\n", ps::describe(v).c_str());
        return 1;
    }

    event_queue queue;
    network net;
    std::vector<rank_driver> ranks;
    ranks.reserve(it.shape.ranks);
    for (std::uint32_t r = 0; r < it.shape.ranks; ++r) ranks.emplace_back(it, r, queue, net);
    for (rank_driver& r : ranks) queue.schedule(0.0, [&r] { r.call(); });
    queue.run();

    double iteration_time = 0.0;
    for (std::uint32_t r = 0; r < it.shape.ranks; ++r) {
        std::printf("rank %u finishes at %.2f\n", r, ranks[r].finished_at);
        iteration_time = std::max(iteration_time, ranks[r].finished_at);
    }
    std::printf("iteration time: %.2f\n", iteration_time);

    // The same iteration through pipesched's own replay, as a cross-check.
    ps::iteration_cost_model costs{};
    costs.compute.uniform = {forward_time, backward_time, 1.0, 1.0};
    costs.p2p = {p2p_time, 0.0};
    costs.data_parallel = {grad_sync_time, 0.0};
    costs.optimizer = optimizer_time;
    const ps::iteration_simulation reference = ps::simulate(it, costs);
    std::printf("pipesched::simulate:  %.2f (bubble %.1f%%, exposed grad sync %.2f)\n",
                reference.makespan, 100.0 * reference.bubble_fraction,
                reference.exposed(ps::comm_kind::grad_sync));
    return std::abs(reference.makespan - iteration_time) < 1e-9 ? 0 : 1;
}
