// pipesched: writes a SimAI / AICB workload file (the inverse of parse.hpp's parse_workload).
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "workload.hpp"

namespace pipesched::simai {

/// Writes `w` in AICB's layout: header keys in AICB's order (then unknown keys in their order),
/// the row count, and one tab-separated row per line, each line ending in '\n'. Numbers are
/// written as integers, pp_comm in the shortest form that reads back to the same double.
/// parse_workload(write_workload(w)) == w for every w that parse_workload produced.
/// Precondition for hand-built workloads: names and extra values are non-empty and contain no
/// blanks or newlines, and a plain collective's group matches its column.
[[nodiscard]] inline std::string write_workload(const workload& w) {
    std::string out;
    out.reserve(128 + w.rows.size() * 96);
    const header& h = w.header;
    out += h.policy;
    const auto key = [&out](std::string_view k, bool colon = true) {
        out += ' ';
        out += k;
        if (colon)
            out += ':';
        out += ' ';
    };
    const auto u = [&out](std::uint64_t v) { out += std::to_string(v); };
    if (h.tp) {
        key("model_parallel_NPU_group");
        u(*h.tp);
    }
    if (h.ep) {
        key("ep");
        u(*h.ep);
    }
    key("pp");
    u(h.pp);
    if (h.vpp) {
        key("vpp");
        u(*h.vpp);
    }
    key("ga");
    u(h.ga);
    if (h.all_gpus) {
        key("all_gpus");
        u(*h.all_gpus);
    }
    const auto list = [&](std::string_view k, const std::optional<std::vector<std::uint32_t>>& l) {
        if (!l)
            return;
        key(k);
        u(l->size());
        for (const std::uint32_t layer : *l) {
            out += ' ';
            u(layer);
        }
    };
    list("checkpoints", h.checkpoints);
    list("checkpoint_initiates", h.checkpoint_initiates);
    if (h.pp_comm) {
        key("pp_comm", h.pp_comm_colon);
        std::array<char, 64> buf{};
        const auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), *h.pp_comm);
        out.append(buf.data(), ec == std::errc{} ? ptr : buf.data());
    }
    for (const header_entry& e : h.extra) {
        key(e.key, e.colon);
        out += e.value;
    }
    out += '\n';
    u(w.rows.size());
    out += '\n';
    for (const row& r : w.rows) {
        out += r.name;
        out += '\t';
        out += std::to_string(r.layer_id);
        for (const phase_cost* c : {&r.forward, &r.input_grad, &r.weight_grad}) {
            out += '\t';
            u(c->compute_ns);
            out += '\t';
            out += collective_name(c->kind, c->group);
            out += '\t';
            u(c->bytes);
        }
        out += '\t';
        u(r.update_ns);
        out += '\n';
    }
    return out;
}

} // namespace pipesched::simai
