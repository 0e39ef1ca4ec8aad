// pipesched: SimAI / AICB workload files. Parse, write, replay SimAI's execution order, and map
// the rows of an AICB-generated workload onto the training iteration they describe.
//
// ---------------------------------------------------------------------------------------------
// The file format (what SimAI's `Workload::initialize_workload` in Workload.cc reads)
// ---------------------------------------------------------------------------------------------
//
//   line 1   <policy> key: value key: value ...
//            e.g. HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 2
//                 ga: 2 all_gpus: 4 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0
//   line 2   number of rows
//   line 3+  one row per line, 12 fields:
//            name  -1  fwd_ns fwd_comm fwd_bytes  ig_ns ig_comm ig_bytes  wg_ns wg_comm wg_bytes
//            update_ns
//
// SimAI splits line 1 into whitespace-separated tokens, takes the first as the policy
// (`Workload::decode_parallelsim`) and then looks for the tokens `model_parallel_NPU_group:`,
// `ep:`, `pp:`, `vpp:`, `ga:`, `all_gpus:`, `checkpoints:`, `checkpoint_initiates:`, and
// `pp_comm` with or without the colon, reading the token after each with std::stoi. It reads
// line 2 with std::getline + std::stoi and then every row field with `operator>>` (so any
// whitespace separates fields, and a row may even span lines). `checkpoints: N l1 .. lN` and
// `checkpoint_initiates: N l1 .. lN` list layer (row) indices.
//
// This parser accepts what the real AICB files contain and reports everything else with the
// line, the 1-based field and the 1-based column:
//
// - Fields are separated by runs of blanks (space, tab, CR, VT, FF), like SimAI's `>>`. The
//   AICB files use exactly one tab; the workload pasted in the SimAI issue that started this
//   project uses runs of spaces, so both must work. CRLF line ends and trailing blanks are
//   therefore harmless. Unlike SimAI, a row must be on one line (that is what makes line numbers
//   in errors meaningful); blank lines are allowed only after the last row.
// - Header keys may be written with or without the trailing colon (SimAI's own
//   example/workload_analytical.txt has `pp_comm 50331648`). Unknown keys are kept, in order, with
//   their single value. A key that appears twice is an error. `pp:` and `ga:` are required (the
//   analysis needs them) and must be at least 1.
// - Byte counts and nanosecond counts are unsigned 64-bit integers. They may be written as
//   decimal or floating-point text (`8388608`, `8388608.0`, `8.388608e6`) as long as the value
//   is a whole number; negative values, NaN, infinity, fractions and values beyond 2^64-1 are
//   errors. (SimAI reads these fields into `Tick`/`uint64_t` with `>>`, which would stop at the
//   '.' and misread the rest of the row.) `pp_comm` is a double (`pp_comm: 8388608.0`).
// - The second field (always -1 in AICB files) is read as an int; SimAI reads it into
//   `int depen` and only prints it.
// - Collective names are matched exactly: NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL,
//   ALLREDUCEALLTOALL, each optionally suffixed _EP or _DP_EP. Anything else is an error. (SimAI
//   silently turns an unknown name into "no collective". aliyun/SimAI 0253299 matches the base
//   name as a prefix, ALLREDUCE first, so `ALLREDUCEALLTOALL` becomes an all-reduce with no
//   group there; 1854d89 outside its ANALYTI build accepts only the plain names, so `_EP` and
//   `_DP_EP` collectives become "no collective" there.)
//   The group follows SimAI's rule: a plain name is the tensor-parallel group in the forward
//   and input-gradient columns and the data-parallel group in the weight-gradient column;
//   `_EP` is the expert-parallel group and `_DP_EP` the expert-data-parallel group. NONE with a
//   non-zero byte count is accepted (the GPT files have it); the bytes are kept but SimAI
//   issues nothing.
//
// ---------------------------------------------------------------------------------------------
// SimAI's execution order (Workload.cc,
// `Workload::iterate_hybrid_parallel_Transformer_fwd_in_bckwd`;
// `iterate_hybrid_parallel_Transformer` is the same without the checkpoint branch)
// ---------------------------------------------------------------------------------------------
//
// SimAI's front ends (ns-3 `AstraSimNetwork.cc`, `AnalyticalAstra.cc`) construct `Sys` with
// num_passes = 1, so the state machine runs exactly one pass over the rows:
//
//   Forward_Pass, rows 0..n-1:   wait until the row's weight-gradient collective of the previous
//                                pass has finished (nothing to wait for in pass 1); forward compute
//                                (`get_fwd_pass_compute`, waited only if > 0); then
//                                `issue_forward_pass_comm(None, Blocking)`.
//   Input_Gradient, rows n-1..0: input-grad compute (waited if > 0); then
//                                `issue_input_grad_comm(LIFO, Blocking)`.
//   Weight_Gradient, same row:   weight-grad compute (waited if > 0); then
//                                `issue_weight_grad_comm(FIFO, Non_Blocking)`; wait for the row's
//                                input-grad collective (already done, it was blocking); next row.
//
// There is no notion of microbatch, loss or optimizer: AICB's ga microbatches are just more rows,
// so all forwards run before all backwards, and the cross_entropy* / optimizer* rows (which carry
// their all-reduce in the forward column) run at the end of the forward sweep, before any
// backward and before the gradient reduce-scatter / all-gather rows that AICB puts first and
// SimAI therefore reaches last. At the end `check_for_sim_end` waits for all outstanding
// (non-blocking) weight-gradient collectives.
//
// Details that matter for an exact model:
// - A collective of kind NONE is not issued at all (`Layer::issue_*_comm` returns at once).
//   A zero-byte collective of a real kind *is* issued (nothing in the loop checks the size).
// - A compute of 0 ns is not waited for (`if (counter > 0)`); a compute of 1 ns (AICB's
//   placeholder) is a real 1-tick wait. Every state change also costs one tick
//   (`register_event(..., 1)`), which this model does not include.
// - Some revisions pad forward collectives: in the Forward_Pass state,
//   `if (fwd_pass_comm_size < 4096 && fwd_pass_comm_size > 0) fwd_pass_comm_size = 4096;`
//   before `issue_forward_pass_comm`. Only forward collectives, only non-zero ones; the padded
//   size is stored in the layer, so a recomputed forward uses it too. aliyun/SimAI at commit
//   0253299 and the older 1854d89 do not have it (order_options::pad_small_forward = false).
// - `update_ns` (the 12th field) becomes the layer's `weight_grad_update_time`, and the Layer
//   constructor copies it to `fwd_update_time` and `input_grad_update_time`: `Layer::call`
//   delays the completion of *every* collective of the row (forward, input-grad, weight-grad) by
//   update_ns. It is not a compute step. Steps carry it as `step::update_ns`.
// - Checkpoints: when the backward sweep reaches a row listed in `checkpoint_initiates`
//   (`needs_fwd_in_bckwd_initiation`), before its input-grad compute SimAI walks down to the
//   nearest row listed in `checkpoints` (`is_checkpoint`, the row itself included) and reruns
//   the forward (compute + blocking collective) of the rows from that checkpoint up to, not
//   including, the initiating row (state Forward_In_BackPass); then the backward continues. The
//   case where the initiating row is itself a checkpoint, or no checkpoint lies below it, makes
//   SimAI walk past the rows it should (out of bounds); this model recomputes nothing then.
//   Revisions differ here: aliyun/SimAI 1854d89 reads the header positionally and fills both
//   maps correctly; 0253299 scans tokens and stores the `checkpoint_initiates:` layers into the
//   checkpoint map instead of `need_checkpoint_initiation` (and reads every listed layer from
//   the token right after the count), so no recompute ever happens there
//   (order_options::recompute = false reproduces that). All five AICB files in
//   tests/data/simai have `checkpoints: 0 checkpoint_initiates: 0`.
// - `compute_scale` / `comm_scale` multiply times and sizes; the front ends pass 1.
//
// ---------------------------------------------------------------------------------------------
// Structure of an AICB workload (analyse)
// ---------------------------------------------------------------------------------------------
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

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace pipesched::simai {

// =============================================================================================
// Data model
// =============================================================================================

/// Collective operation of one column of a row.
enum class collective : std::uint8_t {
    none,
    allreduce,
    allgather,
    reducescatter,
    alltoall,
    allreduce_alltoall, ///< SimAI's ComType::All_Reduce_All_to_All (no AICB file uses it)
};

/// Which process group a collective runs in.
enum class comm_group : std::uint8_t {
    none,  ///< no collective
    tp,    ///< tensor parallel: plain name in the forward or input-gradient column
    dp,    ///< data parallel: plain name in the weight-gradient column
    ep,    ///< expert parallel: `_EP`
    dp_ep, ///< expert data parallel: `_DP_EP`
};

/// The three column groups of a row, which are also SimAI's three loop states.
enum class phase : std::uint8_t { forward, input_grad, weight_grad };

[[nodiscard]] constexpr std::string_view to_string(collective c) noexcept {
    switch (c) {
    case collective::none:
        return "NONE";
    case collective::allreduce:
        return "ALLREDUCE";
    case collective::allgather:
        return "ALLGATHER";
    case collective::reducescatter:
        return "REDUCESCATTER";
    case collective::alltoall:
        return "ALLTOALL";
    case collective::allreduce_alltoall:
        return "ALLREDUCEALLTOALL";
    }
    return "?";
}

[[nodiscard]] constexpr std::string_view to_string(comm_group g) noexcept {
    switch (g) {
    case comm_group::none:
        return "none";
    case comm_group::tp:
        return "tp";
    case comm_group::dp:
        return "dp";
    case comm_group::ep:
        return "ep";
    case comm_group::dp_ep:
        return "dp_ep";
    }
    return "?";
}

[[nodiscard]] constexpr std::string_view to_string(phase p) noexcept {
    switch (p) {
    case phase::forward:
        return "forward";
    case phase::input_grad:
        return "input_grad";
    case phase::weight_grad:
        return "weight_grad";
    }
    return "?";
}

/// One column group of a row: compute time, then a collective.
struct phase_cost {
    std::uint64_t compute_ns = 0;
    collective kind = collective::none;
    comm_group group = comm_group::none;
    std::uint64_t bytes = 0;

    friend bool operator==(const phase_cost&, const phase_cost&) = default;
};

/// One row ("layer" in SimAI).
struct row {
    std::string name;
    int layer_id = -1; ///< the second field; AICB always writes -1, SimAI reads it as `depen`
    phase_cost forward{};
    phase_cost input_grad{};
    phase_cost weight_grad{};
    std::uint64_t update_ns = 0; ///< delay SimAI adds to the completion of each collective

    [[nodiscard]] const phase_cost& cost(phase p) const noexcept {
        return p == phase::forward ? forward : p == phase::input_grad ? input_grad : weight_grad;
    }
    friend bool operator==(const row&, const row&) = default;
};

/// A header key this library does not interpret, kept as written.
struct header_entry {
    std::string key;   ///< without the trailing colon
    bool colon = true; ///< whether the key was written with a colon
    std::string value;
    friend bool operator==(const header_entry&, const header_entry&) = default;
};

struct header {
    std::string policy = "HYBRID_TRANSFORMER_FWD_IN_BCKWD";
    std::optional<std::uint32_t> tp;       ///< model_parallel_NPU_group
    std::optional<std::uint32_t> ep;       ///< expert-parallel size
    std::uint32_t pp = 1;                  ///< pipeline-parallel size (required)
    std::optional<std::uint32_t> vpp;      ///< AICB writes the layers per stage here, not v
    std::uint32_t ga = 1;                  ///< gradient-accumulation steps (required)
    std::optional<std::uint32_t> all_gpus; ///< world size
    std::optional<std::vector<std::uint32_t>> checkpoints;          ///< row indices
    std::optional<std::vector<std::uint32_t>> checkpoint_initiates; ///< row indices
    std::optional<double> pp_comm;   ///< pipeline p2p message size in bytes
    bool pp_comm_colon = true;       ///< `pp_comm:` (true) or `pp_comm` (false)
    std::vector<header_entry> extra; ///< unknown keys, in file order

    friend bool operator==(const header&, const header&) = default;
};

struct workload {
    simai::header header{};
    std::vector<row> rows;
    friend bool operator==(const workload&, const workload&) = default;
};

/// File line of row i (rows start on line 3 and may not be interrupted by blank lines).
[[nodiscard]] constexpr std::size_t line_of_row(std::size_t i) noexcept { return i + 3; }

/// The name of a collective as written in the file (ALLREDUCE, ALLTOALL_EP ...). tp and dp are
/// both written as the plain name; which one it means depends on the column.
[[nodiscard]] inline std::string collective_name(collective kind, comm_group group) {
    std::string s(to_string(kind));
    if (kind == collective::none)
        return s;
    if (group == comm_group::ep)
        s += "_EP";
    if (group == comm_group::dp_ep)
        s += "_DP_EP";
    return s;
}

// =============================================================================================
// Parsing
// =============================================================================================

struct parse_error {
    std::size_t line = 0;   ///< 1-based; 0 when not tied to a line
    std::size_t field = 0;  ///< 1-based field (row) or token (header) index; 0 when not known
    std::size_t column = 0; ///< 1-based byte column in the line; 0 when not known
    std::string message;

    /// "line 5, field 3, column 20: ..."
    [[nodiscard]] std::string to_string() const {
        std::string s;
        if (line != 0)
            s += "line " + std::to_string(line);
        if (field != 0)
            s += (s.empty() ? "" : ", ") + std::string("field ") + std::to_string(field);
        if (column != 0)
            s += (s.empty() ? "" : ", ") + std::string("column ") + std::to_string(column);
        if (!s.empty())
            s += ": ";
        return s + message;
    }
};

struct parse_result {
    workload value{};
    std::optional<parse_error> error;
    explicit operator bool() const noexcept { return !error.has_value(); }
};

/// The number of fields in a row.
inline constexpr std::size_t row_fields = 12;

namespace detail {

[[nodiscard]] constexpr bool is_blank(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
[[nodiscard]] constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
[[nodiscard]] constexpr char lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
[[nodiscard]] constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (lower(a[i]) != lower(b[i]))
            return false;
    }
    return true;
}

struct token {
    std::string_view text;
    std::size_t column = 0; ///< 1-based
};

/// Calls f(token) for every blank-separated token of `line`; returns the token count.
template <class F> std::size_t for_each_token(std::string_view line, F&& f) {
    std::size_t count = 0;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && is_blank(line[i]))
            ++i;
        if (i == line.size())
            break;
        const std::size_t begin = i;
        while (i < line.size() && !is_blank(line[i]))
            ++i;
        f(token{line.substr(begin, i - begin), begin + 1});
        ++count;
    }
    return count;
}

[[nodiscard]] inline bool is_blank_line(std::string_view line) noexcept {
    return std::all_of(line.begin(), line.end(), [](char c) { return is_blank(c); });
}

/// Splits text into lines at '\n'. The last line need not end with '\n'.
class line_reader {
  public:
    explicit line_reader(std::string_view text) noexcept : text_(text) {}
    bool next(std::string_view& line) noexcept {
        if (pos_ > text_.size() || (pos_ == text_.size() && (text_.empty() || ended_))) {
            return false;
        }
        const std::size_t nl = text_.find('\n', pos_);
        if (nl == std::string_view::npos) {
            line = text_.substr(pos_);
            pos_ = text_.size();
            ended_ = true;
        } else {
            line = text_.substr(pos_, nl - pos_);
            pos_ = nl + 1;
            ended_ = pos_ == text_.size(); // "a\n" has one line, not a trailing empty one
        }
        ++number_;
        return true;
    }
    [[nodiscard]] std::size_t number() const noexcept { return number_; }

  private:
    std::string_view text_;
    std::size_t pos_ = 0;
    std::size_t number_ = 0;
    bool ended_ = false;
};

enum class number_errc : std::uint8_t {
    ok,
    not_a_number,
    negative,
    nan,
    infinity,
    fraction,
    overflow,
    out_of_range,
};

[[nodiscard]] inline std::string describe(number_errc e, std::string_view text) {
    // Appended, not "'" + std::string(...): GCC 12 at -O3 reports a false -Wrestrict inside
    // operator+(const char*, std::string&&) (GCC bug 105329).
    std::string quoted{"'"};
    quoted.append(text.substr(0, 40)).append(text.size() > 40 ? "...'" : "'");
    switch (e) {
    case number_errc::ok:
        return "ok";
    case number_errc::not_a_number:
        return "not a number: " + quoted;
    case number_errc::negative:
        return "negative value " + quoted + " (must be >= 0)";
    case number_errc::nan:
        return "NaN is not a valid value: " + quoted;
    case number_errc::infinity:
        return "infinity is not a valid value: " + quoted;
    case number_errc::fraction:
        return "not a whole number: " + quoted;
    case number_errc::overflow:
        return "value " + quoted + " does not fit in 64 bits";
    case number_errc::out_of_range:
        return "value " + quoted + " is out of range for a double";
    }
    return "?";
}

/// Recognises nan / inf / infinity (any case, optional "nan(...)" payload) after the sign.
[[nodiscard]] inline number_errc special_value(std::string_view s) noexcept {
    if (s.size() >= 3 && iequals(s.substr(0, 3), "nan"))
        return number_errc::nan;
    if (iequals(s, "inf") || iequals(s, "infinity"))
        return number_errc::infinity;
    return number_errc::ok;
}

/// Parses a non-negative whole number written as decimal or floating-point text, exactly (no
/// rounding through double): digits [. digits] [e|E [+|-] digits], optional leading '+'.
[[nodiscard]] inline number_errc parse_whole(std::string_view s, std::uint64_t& out) noexcept {
    out = 0;
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    if (const number_errc special = special_value(s); special != number_errc::ok)
        return special;
    std::size_t i = 0;
    const std::size_t int_begin = i;
    while (i < s.size() && is_digit(s[i]))
        ++i;
    const std::string_view int_part = s.substr(int_begin, i - int_begin);
    std::string_view frac_part{};
    if (i < s.size() && s[i] == '.') {
        ++i;
        const std::size_t frac_begin = i;
        while (i < s.size() && is_digit(s[i]))
            ++i;
        frac_part = s.substr(frac_begin, i - frac_begin);
    }
    if (int_part.empty() && frac_part.empty())
        return number_errc::not_a_number;
    std::int64_t exponent = 0;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        bool exp_negative = false;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
            exp_negative = s[i] == '-';
            ++i;
        }
        if (i == s.size() || !is_digit(s[i]))
            return number_errc::not_a_number;
        constexpr std::int64_t exponent_cap = 1'000'000'000'000; // saturate, the value is decided
        while (i < s.size() && is_digit(s[i])) {
            if (exponent < exponent_cap)
                exponent = exponent * 10 + (s[i] - '0');
            ++i;
        }
        if (exp_negative)
            exponent = -exponent;
    }
    if (i != s.size())
        return number_errc::not_a_number;

    // digits = int_part followed by frac_part; value = digits * 10^(exponent - |frac_part|)
    const std::size_t total = int_part.size() + frac_part.size();
    const auto digit = [&](std::size_t k) noexcept {
        return k < int_part.size() ? int_part[k] : frac_part[k - int_part.size()];
    };
    std::size_t first = 0;
    while (first < total && digit(first) == '0')
        ++first;
    if (first == total) { // zero, whatever the exponent
        return negative ? number_errc::negative : number_errc::ok;
    }
    if (negative)
        return number_errc::negative;
    const std::size_t significant = total - first;
    const std::int64_t scale = exponent - static_cast<std::int64_t>(frac_part.size());
    std::size_t keep = significant; // digits that are left of the decimal point
    if (scale < 0) {
        const std::uint64_t drop = static_cast<std::uint64_t>(-scale);
        if (drop >= significant)
            return number_errc::fraction; // first digit is non-zero
        keep = significant - static_cast<std::size_t>(drop);
        for (std::size_t k = first + keep; k < total; ++k) {
            if (digit(k) != '0')
                return number_errc::fraction;
        }
    } else if (static_cast<std::uint64_t>(scale) + significant > 20) {
        return number_errc::overflow;
    }
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t value = 0;
    for (std::size_t k = first; k < first + keep; ++k) {
        const auto d = static_cast<std::uint64_t>(digit(k) - '0');
        if (value > (max - d) / 10)
            return number_errc::overflow;
        value = value * 10 + d;
    }
    for (std::int64_t k = 0; k < scale; ++k) {
        if (value > max / 10)
            return number_errc::overflow;
        value *= 10;
    }
    out = value;
    return number_errc::ok;
}

/// A non-negative, finite double (pp_comm).
[[nodiscard]] inline number_errc parse_double(std::string_view s, double& out) noexcept {
    out = 0;
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    if (const number_errc special = special_value(s); special != number_errc::ok)
        return special;
    if (s.empty() || !(is_digit(s[0]) || s[0] == '.'))
        return number_errc::not_a_number;
    double value = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec == std::errc::invalid_argument || ptr != s.data() + s.size()) {
        return number_errc::not_a_number;
    }
    // out of range: too large or too small (underflow) for a double
    if (ec != std::errc{} || !std::isfinite(value))
        return number_errc::out_of_range;
    if (negative)
        return number_errc::negative;
    out = value;
    return number_errc::ok;
}

struct collective_spelling {
    std::string_view name;
    collective kind;
};
inline constexpr std::array<collective_spelling, 5> collective_bases{{
    {"ALLREDUCEALLTOALL", collective::allreduce_alltoall}, // before ALLREDUCE: longest first
    {"ALLREDUCE", collective::allreduce},
    {"ALLGATHER", collective::allgather},
    {"REDUCESCATTER", collective::reducescatter},
    {"ALLTOALL", collective::alltoall},
}};

/// Exact match of a collective name; the plain name's group depends on the column.
[[nodiscard]] inline bool parse_collective(std::string_view s, phase column, collective& kind,
                                           comm_group& group) noexcept {
    if (s == "NONE") {
        kind = collective::none;
        group = comm_group::none;
        return true;
    }
    for (const auto& base : collective_bases) {
        if (s.substr(0, base.name.size()) != base.name)
            continue;
        const std::string_view suffix = s.substr(base.name.size());
        if (suffix.empty()) {
            group = column == phase::weight_grad ? comm_group::dp : comm_group::tp;
        } else if (suffix == "_EP") {
            group = comm_group::ep;
        } else if (suffix == "_DP_EP") {
            group = comm_group::dp_ep;
        } else {
            continue;
        }
        kind = base.kind;
        return true;
    }
    return false;
}

inline constexpr std::array<std::string_view, row_fields> field_names{
    "name",
    "layer id",
    "forward compute ns",
    "forward collective",
    "forward bytes",
    "input-grad compute ns",
    "input-grad collective",
    "input-grad bytes",
    "weight-grad compute ns",
    "weight-grad collective",
    "weight-grad bytes",
    "update ns",
};

[[nodiscard]] inline parse_error make_error(std::size_t line, std::size_t field, std::size_t column,
                                            std::string message) {
    return parse_error{line, field, column, std::move(message)};
}

/// Parses header line 1 into `h`; returns an error or nothing.
[[nodiscard]] inline std::optional<parse_error> parse_header(std::string_view line, header& h) {
    std::vector<token> tokens;
    for_each_token(line, [&](token t) { tokens.push_back(t); });
    if (tokens.empty()) {
        return make_error(
            1, 0, 0, "empty header line (expected a policy name followed by key: value pairs)");
    }
    h.policy = std::string(tokens[0].text);
    if (h.policy != "HYBRID_TRANSFORMER_FWD_IN_BCKWD" && h.policy != "HYBRID_TRANSFORMER") {
        return make_error(1, 1, tokens[0].column,
                          "unsupported policy '" + h.policy.substr(0, 60) +
                              "' (expected HYBRID_TRANSFORMER_FWD_IN_BCKWD or HYBRID_TRANSFORMER)");
    }
    bool seen_pp = false;
    bool seen_ga = false;
    // (key, token index) for duplicate detection after the loop
    std::vector<std::pair<std::string_view, std::size_t>> keys;
    std::size_t i = 1;
    while (i < tokens.size()) {
        const token key_token = tokens[i];
        std::string_view key = key_token.text;
        const bool colon = key.back() == ':';
        if (colon)
            key.remove_suffix(1);
        const std::size_t key_field = i + 1;
        if (key.empty() || key.find(':') != std::string_view::npos) {
            return make_error(1, key_field, key_token.column,
                              "malformed header key '" + std::string(key_token.text.substr(0, 60)) +
                                  "'");
        }
        const std::string key_name(key.substr(0, 60));
        if (i + 1 >= tokens.size() || tokens[i + 1].text.back() == ':') {
            return make_error(1, key_field, key_token.column,
                              "header key '" + key_name + "' has no value");
        }
        const token value = tokens[i + 1];
        keys.emplace_back(key, i);
        const auto number_error = [&](number_errc e) {
            return make_error(1, key_field + 1, value.column,
                              "header key '" + key_name + "': " + describe(e, value.text));
        };
        const auto read_u32 = [&](std::uint32_t& out) -> std::optional<parse_error> {
            std::uint64_t v = 0;
            if (const number_errc e = parse_whole(value.text, v); e != number_errc::ok) {
                return number_error(e);
            }
            if (v > std::numeric_limits<std::uint32_t>::max()) {
                return make_error(1, key_field + 1, value.column,
                                  "header key '" + key_name + "': value " +
                                      std::string(value.text.substr(0, 40)) +
                                      " does not fit in 32 bits");
            }
            out = static_cast<std::uint32_t>(v);
            return std::nullopt;
        };
        const auto read_opt = [&](std::optional<std::uint32_t>& out) -> std::optional<parse_error> {
            std::uint32_t v = 0;
            if (auto e = read_u32(v))
                return e;
            out = v;
            return std::nullopt;
        };
        std::optional<parse_error> err;
        i += 2;
        if (key == "model_parallel_NPU_group") {
            err = read_opt(h.tp);
        } else if (key == "ep") {
            err = read_opt(h.ep);
        } else if (key == "pp") {
            err = read_u32(h.pp);
            seen_pp = true;
        } else if (key == "vpp") {
            err = read_opt(h.vpp);
        } else if (key == "ga") {
            err = read_u32(h.ga);
            seen_ga = true;
        } else if (key == "all_gpus") {
            err = read_opt(h.all_gpus);
        } else if (key == "checkpoints" || key == "checkpoint_initiates") {
            std::uint32_t count = 0;
            err = read_u32(count);
            if (!err) {
                const std::size_t available = tokens.size() - i;
                if (count > available) {
                    return make_error(1, key_field + 1, value.column,
                                      "header key '" + key_name + "' announces " +
                                          std::to_string(count) + " layers but only " +
                                          std::to_string(available) + " tokens follow");
                }
                std::vector<std::uint32_t> layers;
                layers.reserve(count);
                for (std::uint32_t k = 0; k < count; ++k, ++i) {
                    std::uint64_t layer = 0;
                    const number_errc e = parse_whole(tokens[i].text, layer);
                    if (e != number_errc::ok || layer > std::numeric_limits<std::uint32_t>::max()) {
                        return make_error(
                            1, i + 1, tokens[i].column,
                            "header key '" + key_name + "': layer " + std::to_string(k + 1) +
                                " of " + std::to_string(count) + ": " +
                                (e != number_errc::ok ? describe(e, tokens[i].text)
                                                      : std::string("does not fit in 32 bits")));
                    }
                    layers.push_back(static_cast<std::uint32_t>(layer));
                }
                (key == "checkpoints" ? h.checkpoints : h.checkpoint_initiates) = std::move(layers);
            }
        } else if (key == "pp_comm") {
            double v = 0;
            if (const number_errc e = parse_double(value.text, v); e != number_errc::ok) {
                return number_error(e);
            }
            h.pp_comm = v;
            h.pp_comm_colon = colon;
        } else {
            h.extra.push_back(header_entry{std::string(key), colon, std::string(value.text)});
        }
        if (err)
            return err;
    }
    // Duplicate keys: sort, O(k log k) even for adversarial headers; report the earliest
    // second occurrence in file order.
    std::sort(keys.begin(), keys.end());
    std::size_t dup_token = 0;
    for (std::size_t k = 1; k < keys.size(); ++k) {
        if (keys[k].first == keys[k - 1].first && (k < 2 || keys[k - 2].first != keys[k].first)) {
            if (dup_token == 0 || keys[k].second < dup_token)
                dup_token = keys[k].second;
        }
    }
    if (dup_token != 0) {
        std::string_view k = tokens[dup_token].text;
        if (k.back() == ':')
            k.remove_suffix(1);
        return make_error(1, dup_token + 1, tokens[dup_token].column,
                          "duplicate header key '" + std::string(k.substr(0, 60)) + "'");
    }
    if (!seen_pp)
        return make_error(1, 0, 0, "header is missing required key 'pp:'");
    if (!seen_ga)
        return make_error(1, 0, 0, "header is missing required key 'ga:'");
    if (h.pp == 0)
        return make_error(1, 0, 0, "header key 'pp' must be at least 1");
    if (h.ga == 0)
        return make_error(1, 0, 0, "header key 'ga' must be at least 1");
    return std::nullopt;
}

/// Parses one row line into `r`.
[[nodiscard]] inline std::optional<parse_error> parse_row(std::string_view line,
                                                          std::size_t line_no, row& r) {
    std::array<token, row_fields + 1> fields{}; // one more to locate an extra field
    const std::size_t count = for_each_token(line, [&, n = std::size_t{0}](token t) mutable {
        if (n < fields.size())
            fields[n] = t;
        ++n;
    });
    if (count != row_fields) {
        std::string message =
            "expected " + std::to_string(row_fields) + " fields, found " + std::to_string(count);
        if (count > row_fields) {
            return make_error(line_no, row_fields + 1, fields[row_fields].column,
                              message + " (unexpected field 13 and later)");
        }
        std::size_t end = line.size();
        while (end > 0 && is_blank(line[end - 1]))
            --end;
        return make_error(line_no, count + 1, end + 1,
                          message + " (field " + std::to_string(count + 1) + ", " +
                              std::string(field_names[count]) + ", is missing)");
    }
    const auto fail = [&](std::size_t field, std::string what) {
        return make_error(line_no, field + 1, fields[field].column,
                          std::string(field_names[field]) + ": " + what);
    };
    r.name = std::string(fields[0].text);
    {
        const std::string_view t = fields[1].text;
        int v = 0;
        const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (ec == std::errc::result_out_of_range)
            return fail(1, "value '" + std::string(t.substr(0, 40)) + "' does not fit in an int");
        if (ec != std::errc{} || ptr != t.data() + t.size()) {
            return fail(1, "not an integer: '" + std::string(t.substr(0, 40)) + "'");
        }
        r.layer_id = v;
    }
    const auto number = [&](std::size_t field, std::uint64_t& out) -> std::optional<parse_error> {
        if (const number_errc e = parse_whole(fields[field].text, out); e != number_errc::ok) {
            return fail(field, describe(e, fields[field].text));
        }
        return std::nullopt;
    };
    const auto column_group = [&](std::size_t first, phase ph,
                                  phase_cost& c) -> std::optional<parse_error> {
        if (auto e = number(first, c.compute_ns))
            return e;
        const std::string_view name = fields[first + 1].text;
        if (!parse_collective(name, ph, c.kind, c.group)) {
            return fail(first + 1,
                        "unknown collective '" + std::string(name.substr(0, 40)) +
                            "' (expected NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL or "
                            "ALLREDUCEALLTOALL, optionally followed by _EP or _DP_EP)");
        }
        return number(first + 2, c.bytes);
    };
    if (auto e = column_group(2, phase::forward, r.forward))
        return e;
    if (auto e = column_group(5, phase::input_grad, r.input_grad))
        return e;
    if (auto e = column_group(8, phase::weight_grad, r.weight_grad))
        return e;
    return number(11, r.update_ns);
}

} // namespace detail

/// Parses a whole workload file. Never throws on bad input (only std::bad_alloc), never reads
/// past `text`, allocates O(text.size()).
[[nodiscard]] inline parse_result parse_workload(std::string_view text) {
    parse_result result;
    const auto fail = [&result](parse_error e) {
        result.error = std::move(e);
        result.value = workload{};
        return std::move(result);
    };
    if (std::all_of(text.begin(), text.end(),
                    [](char c) { return c == '\n' || detail::is_blank(c); })) {
        return fail(detail::make_error(0, 0, 0, "empty file"));
    }
    detail::line_reader lines(text);
    std::string_view line;
    lines.next(line);
    if (auto e = detail::parse_header(line, result.value.header))
        return fail(std::move(*e));

    if (!lines.next(line) || detail::is_blank_line(line)) {
        return fail(detail::make_error(2, 0, 0,
                                       "missing row-count line after the header (line 2 must hold "
                                       "the number of rows)"));
    }
    std::uint64_t declared = 0;
    {
        std::vector<detail::token> tokens;
        detail::for_each_token(line, [&](detail::token t) {
            if (tokens.size() < 2)
                tokens.push_back(t);
        });
        if (tokens.size() != 1) {
            return fail(detail::make_error(2, 2, tokens[1].column,
                                           "the row-count line must hold a single number"));
        }
        if (const auto e = detail::parse_whole(tokens[0].text, declared);
            e != detail::number_errc::ok) {
            return fail(detail::make_error(2, 1, tokens[0].column,
                                           "row count: " + detail::describe(e, tokens[0].text)));
        }
        if (declared == 0) {
            return fail(detail::make_error(2, 1, tokens[0].column,
                                           "row count must be at least 1 (SimAI needs one row)"));
        }
    }
    // Reserve no more than the text can hold (a row has at least 23 bytes), so a huge declared
    // count cannot allocate unboundedly.
    const std::uint64_t plausible = text.size() / 23 + 1;
    result.value.rows.reserve(static_cast<std::size_t>(std::min(declared, plausible)));
    std::uint64_t found = 0;
    while (found < declared) {
        if (!lines.next(line)) {
            return fail(detail::make_error(lines.number() + 1, 0, 0,
                                           "file ends after " + std::to_string(found) + " of " +
                                               std::to_string(declared) +
                                               " declared rows (truncated file?)"));
        }
        if (detail::is_blank_line(line)) {
            return fail(detail::make_error(lines.number(), 0, 0,
                                           "blank line where row " + std::to_string(found + 1) +
                                               " of " + std::to_string(declared) +
                                               " was expected"));
        }
        row r;
        if (auto e = detail::parse_row(line, lines.number(), r))
            return fail(std::move(*e));
        result.value.rows.push_back(std::move(r));
        ++found;
    }
    // Anything but blank lines after the declared rows is a count mismatch.
    std::size_t first_extra = 0;
    std::uint64_t extra = 0;
    while (lines.next(line)) {
        if (detail::is_blank_line(line))
            continue;
        if (extra == 0)
            first_extra = lines.number();
        ++extra;
    }
    if (extra != 0) {
        return fail(detail::make_error(first_extra, 0, 0,
                                       "header declares " + std::to_string(declared) +
                                           " rows, found " + std::to_string(declared + extra)));
    }
    // Checkpoint layers must name rows.
    const header& h = result.value.header;
    for (const auto* list : {&h.checkpoints, &h.checkpoint_initiates}) {
        if (!list->has_value())
            continue;
        for (const std::uint32_t layer : **list) {
            if (layer >= declared) {
                return fail(detail::make_error(
                    1, 0, 0,
                    std::string(list == &h.checkpoints ? "checkpoints" : "checkpoint_initiates") +
                        ": layer " + std::to_string(layer) + " is out of range (the file has " +
                        std::to_string(declared) + " rows)"));
            }
        }
    }
    return result;
}

// =============================================================================================
// Writing
// =============================================================================================

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

// =============================================================================================
// SimAI's execution order
// =============================================================================================

enum class step_kind : std::uint8_t { compute, collective };

/// One thing SimAI does in its single pass.
struct step {
    std::size_t row = 0;       ///< index into workload::rows
    std::string_view name;     ///< the row's name (a view into the workload)
    phase ph = phase::forward; ///< which column of the row
    step_kind what = step_kind::compute;
    collective kind = collective::none; ///< collectives only
    comm_group group = comm_group::none;
    std::uint64_t bytes = 0;       ///< collectives: size SimAI simulates (after 4096 padding)
    std::uint64_t file_bytes = 0;  ///< collectives: size written in the file
    std::uint64_t duration_ns = 0; ///< computes: the compute time; collectives: 0 (network)
    std::uint64_t update_ns = 0;   ///< collectives: delay added to their completion
    bool blocking = false;         ///< collectives: SimAI waits for completion before going on
    bool recompute = false;        ///< a forward rerun for a checkpoint (Forward_In_BackPass)

    friend bool operator==(const step&, const step&) = default;
};

struct order_options {
    /// Leave out what SimAI does not act on: 0-ns computes (not waited for) and NONE
    /// collectives (not issued). Zero-byte collectives of a real kind stay (they are issued).
    bool skip_noops = true;
    /// Forward collectives with 0 < bytes < 4096 are simulated as 4096 bytes (newer SimAI).
    bool pad_small_forward = true;
    /// Follow checkpoint_initiates / checkpoints (Forward_In_BackPass). See the header comment.
    bool recompute = true;
};

/// Calls visit(const step&) for every step of SimAI's pass, in order.
template <class Visitor>
void for_each_step(const workload& w, Visitor&& visit, order_options opt = {}) {
    const std::size_t n = w.rows.size();
    const auto collective_step = [&](std::size_t i, phase ph, bool blocking, bool recompute) {
        const row& r = w.rows[i];
        const phase_cost& c = r.cost(ph);
        if (opt.skip_noops && c.kind == collective::none)
            return;
        step s{};
        s.row = i;
        s.name = r.name;
        s.ph = ph;
        s.what = step_kind::collective;
        s.kind = c.kind;
        s.group = c.group;
        s.file_bytes = c.bytes;
        s.bytes = (ph == phase::forward && opt.pad_small_forward && c.bytes > 0 && c.bytes < 4096)
                      ? 4096
                      : c.bytes;
        s.update_ns = c.kind == collective::none ? 0 : r.update_ns;
        s.blocking = blocking;
        s.recompute = recompute;
        visit(static_cast<const step&>(s));
    };
    const auto compute_step = [&](std::size_t i, phase ph, bool recompute) {
        const row& r = w.rows[i];
        const std::uint64_t ns = r.cost(ph).compute_ns;
        if (opt.skip_noops && ns == 0)
            return;
        step s{};
        s.row = i;
        s.name = r.name;
        s.ph = ph;
        s.what = step_kind::compute;
        s.duration_ns = ns;
        s.recompute = recompute;
        visit(static_cast<const step&>(s));
    };
    const auto forward = [&](std::size_t i, bool recompute) {
        compute_step(i, phase::forward, recompute);
        collective_step(i, phase::forward, true, recompute);
    };

    for (std::size_t i = 0; i < n; ++i)
        forward(i, false);

    std::vector<bool> is_checkpoint;
    std::vector<bool> initiates;
    if (opt.recompute && w.header.checkpoint_initiates && !w.header.checkpoint_initiates->empty()) {
        is_checkpoint.assign(n, false);
        initiates.assign(n, false);
        if (w.header.checkpoints) {
            for (const std::uint32_t l : *w.header.checkpoints) {
                if (l < n)
                    is_checkpoint[l] = true;
            }
        }
        for (const std::uint32_t l : *w.header.checkpoint_initiates) {
            if (l < n)
                initiates[l] = true;
        }
    }
    for (std::size_t i = n; i-- > 0;) {
        if (!initiates.empty() && initiates[i]) {
            std::size_t c = i;
            while (c > 0 && !is_checkpoint[c])
                --c;
            if (is_checkpoint[c] && c < i) {
                for (std::size_t k = c; k < i; ++k)
                    forward(k, true);
            }
        }
        compute_step(i, phase::input_grad, false);
        collective_step(i, phase::input_grad, true, false);
        compute_step(i, phase::weight_grad, false);
        collective_step(i, phase::weight_grad, false, false);
    }
}

/// SimAI's pass as a vector (steps view the workload's names: keep `w` alive). Linear in the
/// rows plus the recomputed forwards; with checkpoints that is O(rows^2) in the worst case
/// (many initiating rows above one checkpoint), as in SimAI.
[[nodiscard]] inline std::vector<step> simai_order(const workload& w, order_options opt = {}) {
    std::vector<step> steps;
    steps.reserve(w.rows.size() * 4);
    for_each_step(
        w, [&steps](const step& s) { steps.push_back(s); }, opt);
    return steps;
}

// =============================================================================================
// Structure of an AICB workload
// =============================================================================================

enum class row_role : std::uint8_t {
    iteration,  ///< iteration-level rows before the microbatch blocks (grad sync, grad norm)
    microbatch, ///< a row of one of the ga repeated microbatch blocks
    loss,       ///< cross_entropy*
    optimizer,  ///< optimizer*
    unknown,    ///< an iteration/loss/optimizer name among the microbatch rows
};

[[nodiscard]] constexpr std::string_view to_string(row_role r) noexcept {
    switch (r) {
    case row_role::iteration:
        return "iteration";
    case row_role::microbatch:
        return "microbatch";
    case row_role::loss:
        return "loss";
    case row_role::optimizer:
        return "optimizer";
    case row_role::unknown:
        return "unknown";
    }
    return "?";
}

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
