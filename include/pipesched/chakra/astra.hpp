// pipesched: what ASTRA-sim 2.0 does with a set of Chakra traces (trace.hpp): the checks it
// needs to run them at all, and the per-rank finish times it reports under its analytical,
// congestion-unaware network backend.
//
// check_traces() refuses what makes ASTRA-sim abort, throw or silently stop: duplicate node ids,
// dependencies on nodes that do not exist or that form a cycle, attributes without a value or
// of the wrong type, p2p nodes without comm_src/comm_dst/comm_tag/comm_size or issued by the
// wrong rank, and receives without exactly one matching send. ASTRA-sim matches a receive to a
// send on (tag, src, dst, size); when one is missing it still exits with status 0, leaving the
// ranks involved without their "sys[r] finished" line.
//
// predict_astra() replays the traces the way ASTRA-sim runs them; read from its sources
// (astra-sim/workload/Workload.cc and HardwareResource.cc, the feeder_v3 dependency resolver of
// astra-sim/chakra, astra-network-analytical's event queue, BasicTopology::send and
// bw_GBps_to_Bpns, the analytical frontend's CommonNetworkApi::sim_recv and
// CongestionUnawareNetworkApi::sim_send):
//   - a node is ready when all its ctrl_deps and data_deps (one set) have finished;
//   - whenever a node finishes (and once at time 0) the rank issues its ready nodes in
//     increasing id order, each one whose resource is free: at most one COMP and at most one
//     SEND or collective in flight per rank; receives are never limited;
//   - a COMP takes duration_micros * 1000 ns, or 1 ns when duration_micros is 0;
//   - a send's message arrives after hops * latency + size / (bandwidth * 2^30 / 1e9) ns,
//     computed in double and truncated to whole ns (GB means 2^30 B there); the send finishes at
//     that arrival, and so does its receive if it was issued by then, otherwise the receive
//     finishes when it is issued;
//   - events at the same ns run in the order they were scheduled (ASTRA-sim's event lists are
//     FIFO, and a rank's compute completions due at the same ns run as one batch, placed where
//     the first of them was scheduled); the order decides which of two sends gets the link first
//     when both become ready at the same ns;
//   - a rank finishes when it has no ready and no running node, at the time of the event that
//     left it so; that includes its last send's arrival.
// For compute and p2p nodes this is ASTRA-sim's behaviour exactly (the tests hold the finish
// times ASTRA-sim printed for several schedules). Collectives are approximated (see
// astra_network): ASTRA-sim runs its own collective algorithms (ring phases, dataset splits,
// endpoint delays) that this replay does not reproduce; prediction::approximate says so.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <vector>

#include "trace.hpp"

namespace pipesched::chakra {

/// ASTRA-sim's NATIVE p2p tag range: tags are taken modulo this.
inline constexpr std::uint64_t astra_tag_limit = 500'000'000;
/// The longest COMP node check_traces() accepts, in microseconds.
inline constexpr std::uint64_t max_duration_micros = 1'000'000'000'000;

struct trace_check {
    bool ok = true;
    std::string message;
    [[nodiscard]] explicit operator bool() const noexcept { return ok; }
};

namespace detail {

[[nodiscard]] inline std::string where(std::size_t rank, const node& n) {
    return "rank " + std::to_string(rank) + ", node " + std::to_string(n.id) + " (" + n.name + ")";
}

/// An unsigned integer attribute, or an explanation of why it is not one.
[[nodiscard]] inline bool integer_attr(const node& n, std::string_view name, bool required, std::uint64_t& out,
                                       std::string& why) {
    const attribute* a = n.find(name);
    if (a == nullptr) {
        if (required) why = "has no " + std::string{name} + " attribute";
        return !required;
    }
    if (!a->is_integer()) {
        why = "attribute " + std::string{name} + " must be an integer (ASTRA-sim refuses to convert other types)";
        return false;
    }
    const auto v = a->as_unsigned();
    if (!v) {
        why = "attribute " + std::string{name} + " is negative";
        return false;
    }
    out = *v;
    return true;
}

struct p2p_key {
    std::uint64_t src, dst, tag, size;
    friend auto operator<=>(const p2p_key&, const p2p_key&) = default;
};

} // namespace detail

/// Whether ASTRA-sim can run these traces (index = rank) to the end; the message names the rank,
/// node and attribute of the first problem.
[[nodiscard]] inline trace_check check_traces(const std::vector<trace>& ranks) {
    using detail::where;
    const auto fail = [](std::string m) { return trace_check{false, std::move(m)}; };
    if (ranks.empty()) return fail("no ranks");
    const std::uint64_t n_ranks = ranks.size();
    std::map<detail::p2p_key, std::int64_t> balance; // sends - receives per message
    std::map<detail::p2p_key, std::pair<std::size_t, const node*>> example;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        const trace& t = ranks[r];
        if (t.version.empty()) return fail("rank " + std::to_string(r) + ": GlobalMetadata has no version");
        if (t.nodes.empty()) return fail("rank " + std::to_string(r) + ": no nodes (ASTRA-sim needs a dependency-free node)");
        std::unordered_map<std::uint64_t, std::size_t> index;
        index.reserve(t.nodes.size());
        for (std::size_t i = 0; i < t.nodes.size(); ++i) {
            if (!index.emplace(t.nodes[i].id, i).second) return fail(where(r, t.nodes[i]) + ": duplicate node id");
        }
        // Kahn's algorithm over the union of ctrl and data dependencies.
        std::vector<std::uint32_t> parents(t.nodes.size(), 0);
        std::vector<std::vector<std::uint32_t>> children(t.nodes.size());
        for (std::size_t i = 0; i < t.nodes.size(); ++i) {
            const node& n = t.nodes[i];
            std::vector<std::uint64_t> deps = n.ctrl_deps;
            deps.insert(deps.end(), n.data_deps.begin(), n.data_deps.end());
            std::sort(deps.begin(), deps.end());
            deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
            for (std::uint64_t d : deps) {
                const auto it = index.find(d);
                if (it == index.end()) {
                    return fail(where(r, n) + ": depends on node " + std::to_string(d) + ", which does not exist");
                }
                if (it->second == i) return fail(where(r, n) + ": depends on itself");
                children[it->second].push_back(static_cast<std::uint32_t>(i));
                ++parents[i];
            }
        }
        std::vector<std::uint32_t> queue;
        for (std::size_t i = 0; i < t.nodes.size(); ++i) {
            if (parents[i] == 0) queue.push_back(static_cast<std::uint32_t>(i));
        }
        std::size_t seen = 0;
        while (!queue.empty()) {
            const std::uint32_t i = queue.back();
            queue.pop_back();
            ++seen;
            for (std::uint32_t c : children[i]) {
                if (--parents[c] == 0) queue.push_back(c);
            }
        }
        if (seen != t.nodes.size()) {
            for (std::size_t i = 0; i < t.nodes.size(); ++i) {
                if (parents[i] != 0) return fail(where(r, t.nodes[i]) + ": lies on a dependency cycle or after one");
            }
        }
        for (const node& n : t.nodes) {
            for (const attribute& a : n.attrs) {
                if (a.kind == value_kind::none) {
                    return fail(where(r, n) + ": attribute '" + a.name + "' has no value (ASTRA-sim aborts)");
                }
            }
            std::string why;
            if (const attribute* cpu = n.find("is_cpu_op"); cpu != nullptr && cpu->kind != value_kind::boolean && !cpu->is_integer()) {
                return fail(where(r, n) + ": attribute is_cpu_op must be a bool");
            }
            if (n.duration_micros > max_duration_micros) {
                return fail(where(r, n) + ": duration_micros above 10^12 (11.6 days) is refused: ASTRA-sim's ns clock "
                                          "would overflow on long runs");
            }
            switch (n.type) {
            case node_type::comp: break;
            case node_type::comm_send:
            case node_type::comm_recv: {
                const bool send = n.type == node_type::comm_send;
                std::uint64_t src = r;
                std::uint64_t dst = r;
                std::uint64_t tag = 0;
                std::uint64_t size = 0;
                if (!detail::integer_attr(n, "comm_src", !send, src, why) ||
                    !detail::integer_attr(n, "comm_dst", send, dst, why) ||
                    !detail::integer_attr(n, "comm_tag", true, tag, why) ||
                    !detail::integer_attr(n, "comm_size", true, size, why)) {
                    return fail(where(r, n) + ": " + why);
                }
                if ((send ? src : dst) != r) {
                    return fail(where(r, n) + (send ? ": a send must have comm_src = its rank"
                                                    : ": a receive must have comm_dst = its rank"));
                }
                const std::uint64_t peer = send ? dst : src;
                if (peer >= n_ranks || peer == r) {
                    return fail(where(r, n) + ": peer rank " + std::to_string(peer) + " is not another of the " +
                                std::to_string(n_ranks) + " ranks");
                }
                if (tag >= astra_tag_limit) {
                    return fail(where(r, n) + ": comm_tag must be below 500000000 (ASTRA-sim takes it modulo that)");
                }
                if (size == 0) return fail(where(r, n) + ": comm_size must be at least 1 byte");
                const detail::p2p_key key{src, dst, tag, size};
                balance[key] += send ? 1 : -1;
                example.emplace(key, std::pair{r, &n});
                break;
            }
            case node_type::comm_coll: {
                std::uint64_t type = 0;
                std::uint64_t size = 0;
                if (!detail::integer_attr(n, "comm_type", true, type, why) ||
                    !detail::integer_attr(n, "comm_size", true, size, why)) {
                    return fail(where(r, n) + ": " + why);
                }
                const auto kind = static_cast<collective>(type);
                if (kind != collective::all_reduce && kind != collective::all_gather &&
                    kind != collective::reduce_scatter && kind != collective::all_to_all) {
                    return fail(where(r, n) + ": comm_type " + std::to_string(type) +
                                " is not a collective ASTRA-sim simulates (ALL_REDUCE, ALL_GATHER, "
                                "REDUCE_SCATTER, ALL_TO_ALL)");
                }
                if (size == 0) return fail(where(r, n) + ": comm_size must be at least 1 byte");
                if (const attribute* pg = n.find("pg_name"); pg != nullptr && pg->kind != value_kind::string) {
                    return fail(where(r, n) + ": attribute pg_name must be a string");
                }
                if (const attribute* dims = n.find("involved_dim"); dims != nullptr && dims->kind != value_kind::bool_list) {
                    return fail(where(r, n) + ": attribute involved_dim must be a bool_list");
                }
                break;
            }
            default:
                return fail(where(r, n) + ": node type " + std::string{to_string(n.type)} +
                            " is not produced or replayed by pipesched");
            }
        }
    }
    for (const auto& [key, count] : balance) {
        if (count == 0) continue;
        const auto& [rank, first] = example.at(key);
        return fail(where(rank, *first) + ": message (src " +
                    std::to_string(key.src) + ", dst " + std::to_string(key.dst) + ", tag " + std::to_string(key.tag) +
                    ", size " + std::to_string(key.size) + ") has " +
                    (count > 0 ? std::to_string(count) + " more send(s) than receives"
                               : std::to_string(-count) + " more receive(s) than sends") +
                    "; ASTRA-sim would leave the ranks unfinished");
    }
    return {};
}

/// ASTRA-sim's analytical congestion-unaware network with one dimension, as in its network YAML.
struct astra_network {
    double bandwidth_gbps = 50.0; ///< `bandwidth`, GB/s with GB = 2^30 B
    double latency_ns = 500.0;    ///< `latency` per hop
    std::uint32_t hops = 1;       ///< FullyConnected: 1 between any two ranks
    /// Collectives (approximate): a ring of n ranks in 2(n-1) steps (ALL_REDUCE) or n-1 steps
    /// (ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL), each step one message of size/n bytes plus
    /// this per-step endpoint delay (the system JSON's `endpoint-delay`).
    double endpoint_delay_ns = 10.0;

    /// The delay of one message, as BasicTopology::send computes it.
    [[nodiscard]] std::uint64_t send_delay(std::uint64_t bytes) const noexcept {
        const double bandwidth_bpns = bandwidth_gbps * static_cast<double>(1 << 30) / 1'000'000'000;
        const double delay = hops * latency_ns + static_cast<double>(bytes) / bandwidth_bpns;
        return static_cast<std::uint64_t>(delay);
    }
};

/// Start (issue) and end of one node, in ns; unset (~0) if it never ran.
struct node_times {
    std::uint64_t issue = ~std::uint64_t{0};
    std::uint64_t end = ~std::uint64_t{0};
};

struct prediction {
    std::vector<std::optional<std::uint64_t>> finish_ns; ///< per rank; nullopt: never finishes
    std::vector<std::vector<node_times>> nodes;          ///< per rank, in file order
    bool approximate = false;                            ///< collectives were present
    trace_check check;                                   ///< the traces must pass check_traces
    [[nodiscard]] bool all_finished() const noexcept {
        return std::all_of(finish_ns.begin(), finish_ns.end(), [](const auto& f) { return f.has_value(); });
    }
    [[nodiscard]] std::uint64_t makespan() const noexcept {
        std::uint64_t m = 0;
        for (const auto& f : finish_ns) m = f && *f > m ? *f : m;
        return m;
    }
};

namespace detail {

/// The discrete-event replay behind predict_astra().
class astra_replay {
public:
    astra_replay(const std::vector<trace>& traces, const astra_network& net,
                 const std::map<std::string, std::vector<std::uint32_t>>& groups)
        : traces_{traces}, net_{net}, groups_{groups}, ranks_(traces.size()) {}

    prediction run() {
        prediction out;
        out.finish_ns.assign(traces_.size(), std::nullopt);
        out.nodes.resize(traces_.size());
        for (std::size_t r = 0; r < traces_.size(); ++r) setup(r, out.nodes[r]);
        out_ = &out;
        for (std::size_t r = 0; r < traces_.size(); ++r) {
            issue_ready(r);
            check_finished(r);
        }
        while (!queue_.empty()) {
            auto it = queue_.begin();
            now_ = it->first;
            std::deque<global_event>& list = it->second;
            while (!list.empty()) { // events scheduled for `now_` while running join this list
                const global_event e = list.front();
                list.pop_front();
                handle(e);
            }
            queue_.erase(it);
        }
        for (std::size_t r = 0; r < traces_.size(); ++r) out.finish_ns[r] = ranks_[r].finish;
        out.approximate = approximate_;
        return out;
    }

private:
    enum class kind : std::uint8_t { call_events, arrival, recv_now, collective_done };
    struct global_event {
        kind what;
        std::size_t rank;
        std::uint32_t pos; ///< node position (recv_now, collective_done)
        std::size_t message; ///< arrival: index into messages_
    };
    struct rank_state {
        std::vector<std::uint32_t> parents_left;
        std::vector<std::vector<std::uint32_t>> children;
        std::set<std::pair<std::uint64_t, std::uint32_t>> ready; ///< (id, position)
        bool comp_busy = false;
        bool comm_busy = false;
        std::size_t running = 0;
        std::map<std::uint64_t, std::vector<std::uint32_t>> compute_done; ///< Sys's per-rank event lists
        std::optional<std::uint64_t> finish;
        std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>, std::uint64_t> send_count, recv_count;
        std::map<std::string, std::uint64_t> collective_count;
    };
    struct message {
        std::size_t send_rank = 0;
        std::uint32_t send_pos = 0;
        bool recv_registered = false;
        std::size_t recv_rank = 0;
        std::uint32_t recv_pos = 0;
        bool arrived = false;
    };
    struct pending_collective {
        std::vector<std::pair<std::size_t, std::uint32_t>> members; ///< (rank, pos) issued so far
        std::uint64_t latest_issue = 0;
        std::size_t expected = 0;
        std::uint64_t duration = 0;
    };

    void setup(std::size_t r, std::vector<node_times>& times) {
        const trace& t = traces_[r];
        rank_state& st = ranks_[r];
        times.assign(t.nodes.size(), node_times{});
        std::unordered_map<std::uint64_t, std::uint32_t> index;
        for (std::size_t i = 0; i < t.nodes.size(); ++i) index.emplace(t.nodes[i].id, static_cast<std::uint32_t>(i));
        st.parents_left.assign(t.nodes.size(), 0);
        st.children.assign(t.nodes.size(), {});
        for (std::size_t i = 0; i < t.nodes.size(); ++i) {
            std::vector<std::uint64_t> deps = t.nodes[i].ctrl_deps;
            deps.insert(deps.end(), t.nodes[i].data_deps.begin(), t.nodes[i].data_deps.end());
            std::sort(deps.begin(), deps.end());
            deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
            for (std::uint64_t d : deps) {
                st.children[index.at(d)].push_back(static_cast<std::uint32_t>(i));
                ++st.parents_left[i];
            }
        }
        for (std::size_t i = 0; i < t.nodes.size(); ++i) {
            if (st.parents_left[i] == 0) st.ready.emplace(t.nodes[i].id, static_cast<std::uint32_t>(i));
        }
    }

    void schedule(std::uint64_t at, global_event e) { queue_[at].push_back(e); }

    void handle(const global_event& e) {
        switch (e.what) {
        case kind::call_events: {
            rank_state& st = ranks_[e.rank];
            const auto it = st.compute_done.find(now_);
            if (it == st.compute_done.end()) return;
            const std::vector<std::uint32_t> done = std::move(it->second);
            st.compute_done.erase(it);
            for (std::uint32_t pos : done) complete(e.rank, pos);
            return;
        }
        case kind::arrival: {
            // As process_chunk_arrival: whether the receive is registered is decided before the
            // send's handler runs; the handlers may add messages, so nothing is held by reference.
            const message m = messages_[e.message];
            if (!m.recv_registered) messages_[e.message].arrived = true;
            complete(m.send_rank, m.send_pos);
            if (m.recv_registered) complete(m.recv_rank, m.recv_pos);
            return;
        }
        case kind::recv_now:
        case kind::collective_done: complete(e.rank, e.pos); return;
        }
    }

    [[nodiscard]] const node& at(std::size_t r, std::uint32_t pos) const { return traces_[r].nodes[pos]; }

    void issue_ready(std::size_t r) {
        rank_state& st = ranks_[r];
        const std::vector<std::pair<std::uint64_t, std::uint32_t>> snapshot(st.ready.begin(), st.ready.end());
        for (const auto& [id, pos] : snapshot) {
            const node_type type = at(r, pos).type;
            const bool comp = type == node_type::comp;
            const bool recv = type == node_type::comm_recv;
            if (comp ? st.comp_busy : (!recv && st.comm_busy)) continue;
            st.ready.erase({id, pos});
            ++st.running;
            if (comp) st.comp_busy = true;
            else if (!recv) st.comm_busy = true;
            issue(r, pos);
        }
    }

    void issue(std::size_t r, std::uint32_t pos) {
        const node& n = at(r, pos);
        rank_state& st = ranks_[r];
        out_->nodes[r][pos].issue = now_;
        switch (n.type) {
        case node_type::comp: {
            const std::uint64_t due = now_ + (n.duration_micros == 0 ? 1 : n.duration_micros * 1000);
            auto [it, fresh] = st.compute_done.try_emplace(due);
            it->second.push_back(pos);
            if (fresh) schedule(due, {kind::call_events, r, 0, 0});
            return;
        }
        case node_type::comm_send: {
            const std::uint64_t dst = n.unsigned_attr("comm_dst").value_or(0);
            const std::uint64_t tag = n.unsigned_attr("comm_tag").value_or(0);
            const std::uint64_t size = n.unsigned_attr("comm_size").value_or(0);
            const auto key = std::tuple{tag, std::uint64_t{r}, dst, size};
            const std::uint64_t k = st.send_count[key]++;
            message& m = find_message(key, k);
            m.send_rank = r;
            m.send_pos = pos;
            schedule(now_ + net_.send_delay(size), {kind::arrival, r, 0, message_index_.at({key, k})});
            return;
        }
        case node_type::comm_recv: {
            const std::uint64_t src = n.unsigned_attr("comm_src").value_or(0);
            const std::uint64_t tag = n.unsigned_attr("comm_tag").value_or(0);
            const std::uint64_t size = n.unsigned_attr("comm_size").value_or(0);
            const auto key = std::tuple{tag, src, std::uint64_t{r}, size};
            const std::uint64_t k = st.recv_count[key]++;
            message& m = find_message(key, k);
            if (m.arrived) {
                schedule(now_, {kind::recv_now, r, pos, 0});
            } else {
                m.recv_registered = true;
                m.recv_rank = r;
                m.recv_pos = pos;
            }
            return;
        }
        case node_type::comm_coll: issue_collective(r, pos); return;
        default: return; // refused by check_traces
        }
    }

    message& find_message(const std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>& key,
                          std::uint64_t k) {
        const auto [it, fresh] = message_index_.try_emplace({key, k}, messages_.size());
        if (fresh) messages_.emplace_back();
        return messages_[it->second];
    }

    void issue_collective(std::size_t r, std::uint32_t pos) {
        approximate_ = true;
        const node& n = at(r, pos);
        const attribute* pg = n.find("pg_name");
        const std::string group = pg != nullptr ? pg->text : std::string{};
        std::size_t members = traces_.size();
        if (!group.empty() && group != "0") {
            const auto it = groups_.find(group);
            members = it != groups_.end() ? it->second.size() : 0;
        }
        const std::uint64_t k = ranks_[r].collective_count[group]++;
        pending_collective& c = collectives_[{group, k}];
        c.expected = members;
        c.members.emplace_back(r, pos);
        c.latest_issue = now_;
        if (c.members.size() < c.expected || members == 0) return;
        const std::uint64_t size = n.unsigned_attr("comm_size").value_or(1);
        const auto type = static_cast<collective>(n.unsigned_attr("comm_type").value_or(0));
        const std::uint64_t steps = (type == collective::all_reduce ? 2 : 1) * (members - 1);
        const std::uint64_t chunk = std::max<std::uint64_t>(1, size / members);
        const std::uint64_t step = net_.send_delay(chunk) + static_cast<std::uint64_t>(net_.endpoint_delay_ns);
        const std::uint64_t end = now_ + steps * step;
        for (const auto& [rank, p] : c.members) schedule(end, {kind::collective_done, rank, p, 0});
    }

    void complete(std::size_t r, std::uint32_t pos) {
        rank_state& st = ranks_[r];
        if (st.finish) return;
        const node& n = at(r, pos);
        if (n.type == node_type::comp) st.comp_busy = false;
        else if (n.type != node_type::comm_recv) st.comm_busy = false;
        out_->nodes[r][pos].end = now_;
        --st.running;
        for (std::uint32_t c : st.children[pos]) {
            if (--st.parents_left[c] == 0) st.ready.emplace(at(r, c).id, c);
        }
        issue_ready(r);
        check_finished(r);
    }

    void check_finished(std::size_t r) {
        rank_state& st = ranks_[r];
        if (!st.finish && st.ready.empty() && st.running == 0) st.finish = now_;
    }

    const std::vector<trace>& traces_;
    const astra_network& net_;
    const std::map<std::string, std::vector<std::uint32_t>>& groups_;
    std::vector<rank_state> ranks_;
    std::map<std::uint64_t, std::deque<global_event>> queue_;
    std::uint64_t now_ = 0;
    std::vector<message> messages_;
    std::map<std::pair<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>, std::uint64_t>, std::size_t>
        message_index_;
    std::map<std::pair<std::string, std::uint64_t>, pending_collective> collectives_;
    bool approximate_ = false;
    prediction* out_ = nullptr;
};

} // namespace detail

/// The per-rank finish times ASTRA-sim's analytical congestion-unaware backend reports for these
/// traces (index = rank) on a one-dimensional network; `groups` maps a pg_name to its ranks
/// (the --comm-group-configuration file), needed only for collectives over a group.
[[nodiscard]] inline prediction predict_astra(const std::vector<trace>& ranks, const astra_network& net = {},
                                              const std::map<std::string, std::vector<std::uint32_t>>& groups = {}) {
    prediction out;
    out.check = check_traces(ranks);
    if (!out.check) return out;
    if (!(net.bandwidth_gbps > 0.0) || !(net.latency_ns >= 0.0) || net.hops == 0) {
        out.check = {false, "the network needs bandwidth > 0, latency >= 0 and at least one hop"};
        return out;
    }
    prediction replayed = detail::astra_replay{ranks, net, groups}.run();
    replayed.check = out.check;
    return replayed;
}

} // namespace pipesched::chakra
