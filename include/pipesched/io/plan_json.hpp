// pipesched: plan()'s result as JSON, the document `pipesched plan --format json` prints and the
// Python module's plan() reads (python/pipesched/__init__.py): one writer for both. In io/ (floor
// 9, above plan/), like the other writers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../plan/plan.hpp"
#include "json.hpp"

namespace pipesched::plan {

// The report belongs to plan()'s namespace, beside plan_result; only the file is in io/.

namespace detail {

/// `"name":value` after a comma unless it opens an object or array.
inline void json_field_name(std::string& s, std::string_view name) {
    if (!s.empty() && s.back() != '{' && s.back() != '[')
        s += ',';
    json::append_string(s, name);
    s += ':';
}
inline void json_field(std::string& s, std::string_view name, double x) {
    json_field_name(s, name);
    json::append_number(s, x);
}
inline void json_field(std::string& s, std::string_view name, std::uint64_t n) {
    json_field_name(s, name);
    json::append_number(s, n);
}
inline void json_field(std::string& s, std::string_view name, std::string_view text) {
    json_field_name(s, name);
    json::append_string(s, text);
}
inline void json_field(std::string& s, std::string_view name, bool b) {
    json_field_name(s, name);
    s += b ? "true" : "false";
}

} // namespace detail

/// plan()'s result as the JSON document `pipesched plan --format json` prints (docs/plan.md lists
/// its fields), ending in a newline; `ignored` lists the Megatron arguments that changed nothing.
inline void append_json_report(std::string& s, const model_config& m, const training_config& t, const gpu_spec& g,
                               const plan_result& r, const std::vector<std::string>& ignored) {
    s += '{';
    detail::json_field(s, "model", std::string_view{m.name});
    detail::json_field(s, "gpu", g.name);
    detail::json_field(s, "parameters_total", r.parameters.total());
    detail::json_field(s, "mtp_parameters", r.parameters.mtp);
    detail::json_field(s, "active_parameters", r.parameters.active);
    detail::json_field(s, "tensor_parallel", std::uint64_t{t.tensor_parallel});
    detail::json_field(s, "pipeline_parallel", std::uint64_t{t.pipeline_parallel});
    detail::json_field(s, "data_parallel", std::uint64_t{t.data_parallel});
    detail::json_field(s, "context_parallel", std::uint64_t{t.context_parallel});
    detail::json_field(s, "microbatches", std::uint64_t{r.microbatches});
    detail::json_field(s, "usable_bytes", r.usable_bytes);
    detail::json_field_name(s, "ranks");
    s += '[';
    for (std::size_t k = 0; k < r.ranks.size(); ++k) {
        const rank_report& x = r.ranks[k];
        s += k == 0 ? "{" : ",{";
        detail::json_field(s, "rank", std::uint64_t{k});
        detail::json_field(s, "layers", std::uint64_t{x.layers});
        detail::json_field(s, "parameters", x.parameters);
        detail::json_field(s, "weight_and_optimizer_bytes", x.state_bytes);
        detail::json_field(s, "activation_bytes_per_microbatch", x.activation_bytes);
        detail::json_field(s, "forward_seconds_per_microbatch", x.forward_seconds);
        s += '}';
    }
    s += ']';
    detail::json_field_name(s, "schedules");
    s += '[';
    for (std::size_t k = 0; k < r.schedules.size(); ++k) {
        const schedule_report& x = r.schedules[k];
        s += k == 0 ? "{" : ",{";
        detail::json_field(s, "name", std::string_view{x.name});
        detail::json_field(s, "chunks", std::uint64_t{x.chunks});
        detail::json_field(s, "placement", std::string_view{x.layout == placement::v_shape ? "v" : "loop"});
        detail::json_field(s, "evaluated", x.evaluated);
        detail::json_field(s, "fits", x.fits);
        if (x.evaluated) {
            detail::json_field(s, "iteration_time_s", x.iteration_seconds);
            detail::json_field(s, "pipeline_time_s", x.pipeline_seconds);
            detail::json_field(s, "bubble_fraction", x.bubble_fraction);
            detail::json_field(s, "worst_rank", std::uint64_t{x.worst_rank});
            detail::json_field_name(s, "peak_bytes");
            s += '[';
            for (std::size_t j = 0; j < x.peak_bytes.size(); ++j) {
                if (j != 0)
                    s += ',';
                json::append_number(s, x.peak_bytes[j]);
            }
            s += ']';
        } else {
            detail::json_field(s, "note", std::string_view{x.note});
        }
        s += '}';
    }
    s += ']';
    detail::json_field_name(s, "recommended");
    if (r.recommended) {
        s += '{';
        detail::json_field(s, "name", std::string_view{r.schedules[*r.recommended].name});
        detail::json_field(s, "chunks", std::uint64_t{r.schedules[*r.recommended].chunks});
        s += '}';
    } else {
        s += "null";
        detail::json_field(s, "advice", std::string_view{r.advice});
    }
    detail::json_field_name(s, "megatron_theoretical");
    s += '{';
    detail::json_field(s, "weight_and_optimizer_mb", r.megatron.weight_and_optimizer_mb);
    detail::json_field(s, "activation_mb", r.megatron.activation_mb);
    detail::json_field(s, "total_mb", r.megatron.total_mb);
    s += '}';
    detail::json_field_name(s, "ignored");
    json::append_array(s, ignored);
    s += "}\n";
}

} // namespace pipesched::plan
