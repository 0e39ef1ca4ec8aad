// pipesched: what the rows of an AICB workload mean in one training iteration (analyse).
//
// AICB writes: iteration-level rows first (grad_gather, grad_param_comm, grad_param_compute,
// layernorm, embedding_grads, grad_norm, moe_grad_norm*), then the per-microbatch layer rows
// repeated ga times, then the loss rows (cross_entropy*), then the optimizer rows (optimizer*).
// analyse() finds the prefix (leading run of iteration-level names), the suffix (trailing
// cross_entropy* run followed by the trailing optimizer* run) and splits the rows in between
// into exactly `ga` consecutive blocks. Blocks must have the same name sequence (the structure);
// costs may differ and every difference is reported as a warning naming both rows. In the seed
// file the first microbatch's embedding_layer weight-grad compute is 17374000 ns, the second's
// 2478000; in every AICB file here the only differences are of this kind: microbatch k > 0's
// embedding_layer weight-grad compute equals that of the row just before it (the previous
// block's last row), which looks like a value carried over inside AICB's generator. When the name
// sequences do not line up, `errors` names the rows that do not fit and `natural_period` gives the
// smallest period the names do have, which tells whether ga was unrolled at all.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../detail/enum_table.hpp"
#include "workload.hpp"

namespace pipesched::simai {

enum class row_role : std::uint8_t {
    iteration,  ///< iteration-level rows before the microbatch blocks (grad sync, grad norm)
    microbatch, ///< a row of one of the ga repeated microbatch blocks
    loss,       ///< cross_entropy*
    optimizer,  ///< optimizer*
    unknown,    ///< an iteration/loss/optimizer name among the microbatch rows
};

inline constexpr auto row_role_names = pipesched::detail::enum_table<row_role::unknown>(
    {{row_role::iteration, "iteration"}, {row_role::microbatch, "microbatch"},
     {row_role::loss, "loss"}, {row_role::optimizer, "optimizer"}, {row_role::unknown, "unknown"}});

[[nodiscard]] constexpr std::string_view to_string(row_role r) noexcept { return pipesched::detail::name_in(row_role_names, r); }

[[nodiscard]] inline bool is_iteration_row_name(std::string_view name) noexcept {
    return name == "grad_gather" || name == "grad_param_comm" || name == "grad_param_compute" ||
           name == "layernorm" || name == "embedding_grads" || name == "grad_norm" ||
           name.substr(0, 13) == "moe_grad_norm";
}
[[nodiscard]] inline bool is_loss_row_name(std::string_view name) noexcept {
    return name.substr(0, 13) == "cross_entropy";
}
[[nodiscard]] inline bool is_optimizer_row_name(std::string_view name) noexcept {
    return name.substr(0, 9) == "optimizer";
}

/// Rows [begin, end) are microbatch `microbatch`'s block.
struct block {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::uint32_t microbatch = 0;
    friend bool operator==(const block&, const block&) = default;
};

/// A finding about one row, compared with a reference row (both 0-based row indices; the file
/// line is line_of_row(row)). `message` names both rows.
struct finding {
    std::size_t row = 0;
    std::size_t reference_row = 0;
    std::string message;
};

struct structure {
    std::vector<row_role> roles; ///< one per row
    std::size_t prefix_end = 0;  ///< rows [0, prefix_end) are iteration-level
    std::size_t body_begin = 0;  ///< rows [body_begin, body_end) hold the microbatches
    std::size_t body_end = 0;
    std::size_t loss_begin = 0; ///< rows [loss_begin, loss_end) are cross_entropy*
    std::size_t loss_end = 0;
    std::size_t optimizer_begin = 0; ///< rows [optimizer_begin, optimizer_end) are optimizer*
    std::size_t optimizer_end = 0;
    std::uint32_t ga = 0;           ///< from the header
    std::size_t period = 0;         ///< rows per microbatch block, 0 when the split failed
    std::size_t natural_period = 0; ///< smallest period of the body's name sequence
    std::vector<block> blocks;      ///< ga blocks when the split worked, else empty
    std::vector<std::size_t> unknown_rows;
    std::vector<finding> errors;   ///< rows that do not fit the ga blocks (capped)
    std::vector<finding> warnings; ///< cost differences between blocks, misplaced rows (capped)
    std::size_t errors_total = 0;  ///< before capping
    std::size_t warnings_total = 0;

    /// Whether the file unrolls ga as ga identical-by-name blocks of rows.
    [[nodiscard]] bool ga_unrolled() const noexcept { return period != 0 && blocks.size() == ga; }
};

/// At most this many errors and warnings are kept (the totals count all).
inline constexpr std::size_t max_findings = 64;

namespace detail {

inline void add_finding(std::vector<finding>& list, std::size_t& total, std::size_t row,
                        std::size_t reference, std::string message) {
    ++total;
    if (list.size() < max_findings)
        list.push_back(finding{row, reference, std::move(message)});
}

[[nodiscard]] inline std::string row_ref(const workload& w, std::size_t i) {
    return "row " + std::to_string(i) + " (line " + std::to_string(line_of_row(i)) + ", " +
           std::string(std::string_view(w.rows[i].name).substr(0, 60)) + ")";
}

inline void compare_costs(const workload& w, std::size_t i, std::size_t ref, std::uint32_t mb,
                          std::vector<finding>& out, std::size_t& total) {
    const row& a = w.rows[i];
    const row& b = w.rows[ref];
    const auto note = [&](std::string what, const std::string& mine, const std::string& theirs) {
        add_finding(out, total, i, ref,
                    row_ref(w, i) + " of microbatch " + std::to_string(mb) + ": " + what + " " +
                        mine + " differs from microbatch 0's " + row_ref(w, ref) + ": " + theirs);
    };
    const auto num = [](std::uint64_t v) { return std::to_string(v); };
    if (a.layer_id != b.layer_id) {
        note("layer id", std::to_string(a.layer_id), std::to_string(b.layer_id));
    }
    for (const phase ph : {phase::forward, phase::input_grad, phase::weight_grad}) {
        const phase_cost& x = a.cost(ph);
        const phase_cost& y = b.cost(ph);
        const std::string col(to_string(ph));
        if (x.compute_ns != y.compute_ns) {
            note(col + " compute", num(x.compute_ns) + " ns", num(y.compute_ns) + " ns");
        }
        if (x.kind != y.kind || x.group != y.group) {
            note(col + " collective", collective_name(x.kind, x.group),
                 collective_name(y.kind, y.group));
        }
        if (x.bytes != y.bytes)
            note(col + " bytes", num(x.bytes), num(y.bytes));
    }
    if (a.update_ns != b.update_ns)
        note("update", num(a.update_ns) + " ns", num(b.update_ns) + " ns");
}

} // namespace detail

/// Maps the rows of an AICB workload onto the iteration: prefix, ga microbatch blocks, loss,
/// optimizer. See the header comment for the rules.
[[nodiscard]] inline structure analyse(const workload& w) {
    structure s;
    const std::size_t n = w.rows.size();
    s.ga = w.header.ga;
    s.roles.assign(n, row_role::microbatch);

    std::size_t p = 0;
    while (p < n && is_iteration_row_name(w.rows[p].name))
        s.roles[p++] = row_role::iteration;
    s.prefix_end = p;

    std::size_t e = n;
    while (e > p && is_optimizer_row_name(w.rows[e - 1].name))
        s.roles[--e] = row_role::optimizer;
    s.optimizer_begin = e;
    s.optimizer_end = n;
    while (e > p && is_loss_row_name(w.rows[e - 1].name))
        s.roles[--e] = row_role::loss;
    s.loss_begin = e;
    s.loss_end = s.optimizer_begin;
    s.body_begin = p;
    s.body_end = e;

    for (std::size_t i = s.body_begin; i < s.body_end; ++i) {
        const std::string_view name = w.rows[i].name;
        const char* what = is_iteration_row_name(name)   ? "an iteration-level row"
                           : is_loss_row_name(name)      ? "a loss row"
                           : is_optimizer_row_name(name) ? "an optimizer row"
                                                         : nullptr;
        if (what == nullptr)
            continue;
        s.roles[i] = row_role::unknown;
        s.unknown_rows.push_back(i);
        detail::add_finding(s.warnings, s.warnings_total, i, i,
                            detail::row_ref(w, i) + " is " + what +
                                " but sits among the microbatch rows");
    }

    const std::size_t body = s.body_end - s.body_begin;
    const auto names_equal = [&](std::size_t a, std::size_t b) {
        return w.rows[a].name == w.rows[b].name;
    };
    // Smallest period of the name sequence (diagnostic; equals the block length when ga is
    // unrolled and a block is not itself periodic).
    for (std::size_t q = 1; q <= body && s.natural_period == 0; ++q) {
        if (body % q != 0)
            continue;
        bool periodic = true;
        for (std::size_t i = s.body_begin + q; i < s.body_end && periodic; ++i) {
            periodic = names_equal(i, i - q);
        }
        if (periodic)
            s.natural_period = q;
    }

    if (body == 0) {
        detail::add_finding(s.errors, s.errors_total, s.body_begin, s.body_begin,
                            "no microbatch rows between the iteration-level rows and the "
                            "loss/optimizer rows");
        return s;
    }
    if (body % s.ga != 0) {
        detail::add_finding(
            s.errors, s.errors_total, s.body_begin, s.body_begin,
            "the " + std::to_string(body) + " microbatch rows (rows " +
                std::to_string(s.body_begin) + ".." + std::to_string(s.body_end - 1) +
                ") do not split into ga = " + std::to_string(s.ga) + " equal blocks");
        return s;
    }
    const std::size_t period = body / s.ga;
    for (std::size_t i = s.body_begin + period; i < s.body_end; ++i) {
        const std::size_t ref = s.body_begin + (i - s.body_begin) % period;
        if (names_equal(i, ref))
            continue;
        const auto mb = static_cast<std::uint32_t>((i - s.body_begin) / period);
        detail::add_finding(s.errors, s.errors_total, i, ref,
                            detail::row_ref(w, i) + " of microbatch " + std::to_string(mb) +
                                " does not match " + detail::row_ref(w, ref) +
                                " of microbatch 0 (block length " + std::to_string(period) + ")");
    }
    if (s.errors_total != 0)
        return s;

    s.period = period;
    for (std::uint32_t mb = 0; mb < s.ga; ++mb) {
        const std::size_t begin = s.body_begin + mb * period;
        s.blocks.push_back(block{begin, begin + period, mb});
        if (mb == 0)
            continue;
        for (std::size_t k = 0; k < period; ++k) {
            detail::compare_costs(w, begin + k, s.body_begin + k, mb, s.warnings, s.warnings_total);
        }
    }
    return s;
}

} // namespace pipesched::simai
