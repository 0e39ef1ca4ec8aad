// Shared by every subcommand of the `pipesched` tool: output, argument parsing against a flag
// table, usage errors, the schedule and cost flags, and small text helpers.
//
// Adding a subcommand: a file <name>.cpp that defines an array of flag_spec, a function
// `int run_<name>(const parsed_args&)` and a `const command_spec <name>_command`; declare it in
// commands.hpp and add it to the table in main.cpp. Parsing, duplicate and unknown-flag errors
// and the help text come from the table. Usage errors are thrown as usage_error and reported
// by main() as one line on stderr with exit status 2.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <pipesched/analysis/simulate.hpp>
#include <pipesched/catalog.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/policy.hpp>
#include <pipesched/shape.hpp>
#include <pipesched/version.hpp>

#include "progress.hpp"

namespace pipesched::cli {

inline constexpr std::string_view program_name = "pipesched";
inline constexpr std::string_view program_version = pipesched::version_string; // include/pipesched/version.hpp

// Exit statuses (documented in `pipesched --help` and the README).
inline constexpr int exit_ok = 0;
inline constexpr int exit_invalid = 1;  ///< `check`: the schedule is invalid; `autoschedule`: nothing fits
inline constexpr int exit_usage = 2;    ///< usage or input error, or the output could not be written
inline constexpr int exit_output_failed = exit_usage;
inline constexpr int exit_internal = 3; ///< a bug in pipesched: please report it

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

/// Buffers text and hands it to a FILE* in large blocks; memory stays bounded however long a
/// line gets. Once a write fails, further text is dropped and failed() stays true.
class output_buffer {
  public:
    static constexpr std::size_t block = std::size_t{1} << 16;

    explicit output_buffer(std::FILE* file) : file_{file} { text_.reserve(block + 64); }
    output_buffer(const output_buffer&) = delete;
    output_buffer& operator=(const output_buffer&) = delete;
    ~output_buffer() { flush(); }

    void append(std::string_view s) {
        text_.append(s);
        if (text_.size() >= block)
            flush();
    }
    void put(char c) {
        text_.push_back(c);
        if (text_.size() >= block)
            flush();
    }
    void flush() {
        if (!text_.empty() && !failed_) {
            progress::before_output();
            if (std::fwrite(text_.data(), 1, text_.size(), file_) != text_.size())
                failed_ = true;
            progress::wrote(text_.size());
        }
        text_.clear();
    }
    /// Flushes everything down to the file; false if any write failed.
    [[nodiscard]] bool finish() {
        flush();
        if (std::fflush(file_) != 0 || std::ferror(file_) != 0)
            failed_ = true;
        return !failed_;
    }
    [[nodiscard]] bool failed() const noexcept { return failed_; }

  private:
    std::FILE* file_;
    std::string text_;
    bool failed_ = false;
};

/// Writes a complete text to stdout; false on failure.
bool print(std::string_view text);
/// print(), reporting a failed write on stderr: exit_ok or exit_output_failed.
int print_status(std::string_view text);
/// Finishes `out`, reporting a failed write on stderr: exit_ok or exit_output_failed.
int finish_output(output_buffer& out);

void append_number(std::string& s, std::uint64_t n);
std::string number_text(std::uint64_t n);
/// `text` left-aligned in a field of `width` characters.
void append_padded(std::string& s, std::string_view text, std::size_t width);
/// `text` right-aligned in a field of `width` characters.
void append_right(std::string& s, std::string_view text, std::size_t width);

/// Rows as left-aligned columns two spaces apart, each column as wide as its widest cell; the
/// last column is not padded and no line ends in spaces.
template <std::size_t Columns>
void append_columns(std::string& s, std::span<const std::array<std::string, Columns>> rows) {
    std::array<std::size_t, Columns> width{};
    for (const auto& row : rows)
        for (std::size_t i = 0; i < Columns; ++i)
            width[i] = std::max(width[i], row[i].size());
    for (const auto& row : rows) {
        for (std::size_t i = 0; i + 1 < Columns; ++i)
            append_padded(s, row[i], width[i] + 2);
        s += row[Columns - 1];
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        s += '\n';
    }
}

inline constexpr std::size_t text_width = 100; ///< help text
inline constexpr std::size_t demo_width = 92;  ///< the demonstration's paragraph

/// Appends the words separated by single spaces, starting at column `column`; a word that
/// would pass `width` starts a new line indented by `indent` spaces. Ends with a newline.
void append_words(std::string& s, std::span<const std::string> words, std::size_t column,
                  std::size_t indent, std::size_t width = text_width);
std::vector<std::string> split_words(std::string_view text);
/// `x` with `decimals` digits after the point.
std::string fixed(double x, int decimals = 3);

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A command-line mistake: reported by main() as `pipesched: <message>`, exit status 2.
struct usage_error {
    std::string message;
};

[[noreturn]] inline void fail(std::string message) { throw usage_error{std::move(message)}; }

/// A user-supplied value in single quotes, safe to print on one line: control and non-ASCII
/// bytes are escaped and very long values are shortened.
std::string quoted(std::string_view value);

/// `text` with control bytes (newline, escape, ...) and DEL written as \xNN, other bytes as
/// they are: for messages and reports that echo file content or names.
std::string printable(std::string_view text);

// ---------------------------------------------------------------------------------------------
// Command table and argument parsing
// ---------------------------------------------------------------------------------------------

struct flag_spec {
    std::string_view name;         ///< without the leading "--"
    std::string_view value_name;   ///< placeholder in the usage ("P"); empty for a switch
    std::string_view help;         ///< one line
    std::string_view default_text; ///< shown as "(default ...)"; empty if none
    bool required = false;
};

/// The same flag, not required (simulate and compare take --csv FILE instead of schedule_flags).
constexpr flag_spec optional(flag_spec f) {
    f.required = false;
    return f;
}

class parsed_args;

struct command_spec {
    std::string_view name;
    std::string_view summary;     ///< one line, for the command list
    std::string_view description; ///< a paragraph, for `pipesched help <command>`
    std::span<const flag_spec> flags;
    int (*run)(const parsed_args&); ///< nullptr for `help`, which dispatch() handles itself
    std::string_view positional{}; ///< name of the one required positional argument ("FILE"), if any
    /// Non-empty: everything after a lone `--` is passed through unparsed (plan's Megatron
    /// arguments); this names it in the usage line.
    std::string_view trailing{};
};

/// The flags given to one subcommand, checked against its flag_spec list.
class parsed_args {
  public:
    parsed_args(const command_spec& cmd, std::span<const std::string_view> args);

    /// The value of a flag, or nullopt when it was not given (a switch given has value "").
    [[nodiscard]] std::optional<std::string_view> get(std::string_view name) const;

    /// A whole number in 1..2^32-1: decimal digits only, nothing else, no sign.
    [[nodiscard]] std::optional<std::uint32_t> count(std::string_view name) const;

    /// The positional argument (only for commands that take one; checked to be present).
    [[nodiscard]] std::string_view positional() const { return positional_.value_or(""); }

    /// The words after `--`, for commands with command_spec::trailing.
    [[nodiscard]] std::span<const std::string_view> trailing() const { return trailing_; }

    [[nodiscard]] std::string full_name() const;
    /// " (see 'pipesched NAME --help')", for the end of a usage error.
    [[nodiscard]] std::string see_help() const;

  private:
    [[nodiscard]] const flag_spec* find(std::string_view name) const;

    const command_spec* command_;
    std::vector<std::pair<const flag_spec*, std::string_view>> given_;
    std::optional<std::string_view> positional_;
    std::vector<std::string_view> trailing_;
};

/// The value of --format, which must be one of `allowed`; the first is the default.
std::string format_choice(const parsed_args& args, std::initializer_list<std::string_view> allowed);

// ---------------------------------------------------------------------------------------------
// Schedules: shared by every subcommand that builds a policy from the command line
// ---------------------------------------------------------------------------------------------

/// A policy request read from --schedule, --ranks, --microbatches, --chunks, --group-size and
/// --backward.
struct schedule_request {
    pipesched::schedule_id id{};
    pipesched::schedule_options options{};
    bool group_size_given = false;
};

/// "GPipe, 1F1B, ...": every schedule's display name, for error messages.
std::string schedule_names();
schedule_request read_schedule(const parsed_args& args);
/// The stage placement of a schedule.
pipesched::placement schedule_layout(pipesched::schedule_id id);
/// The chunks per rank a schedule runs when --chunks is not given: pipesched::default_chunks.
std::uint32_t required_chunks(pipesched::schedule_id id);

/// Throws a usage_error naming the violated constraint if the policy rejects its shape.
template <pipesched::schedule_policy P>
void require_valid_shape(const P& pol, const schedule_request& req) {
    const pipesched::shape_check c = pol.check();
    if (c)
        return;
    const pipesched::shape s = pol.shape;
    std::string msg{pipesched::display_name(pipesched::info(req.id))};
    msg += ": ";
    msg += c.message;
    msg += " (ranks=" + number_text(s.ranks) + " microbatches=" + number_text(s.microbatches) +
           " chunks=" + number_text(s.chunks);
    if constexpr (requires { pol.group(); }) {
        msg += req.group_size_given ? " group-size=" : " default group-size=";
        msg += number_text(pol.group());
    }
    if (req.options.backward == pipesched::backward_kind::split)
        msg += " backward=split";
    msg += ")";
    fail(std::move(msg));
}

/// Builds the schedule `req` names, refuses a shape it rejects (require_valid_shape, which
/// names policy-specific settings such as the group size), and calls f with the policy held
/// in an any_schedule: f is compiled for the two placements instead of once per schedule, which
/// is most of what the tool costs to build.
template <class F>
int with_requested_schedule(const schedule_request& req, F&& f) {
    return pipesched::with_schedule(req.id, req.options, [&](const auto& pol) -> int {
        require_valid_shape(pol, req);
        using P = std::remove_cvref_t<decltype(pol)>;
        return f(pipesched::any_schedule<P::layout>{pol});
    });
}

/// The flags that choose a schedule (order, simulate): --schedule, --ranks, --microbatches,
/// --chunks, --group-size, --backward.
inline constexpr std::array<flag_spec, 6> schedule_flags{{
    {"schedule", "NAME", "schedule to generate, see Schedules below", "", true},
    {"ranks", "P", "pipeline ranks, 1..65535", "", true},
    {"microbatches", "M", "microbatches per iteration, 1..65536", "", true},
    {"chunks", "V", "model chunks per rank, 1..256; above 1 only for multi-chunk schedules",
     "2 for the multi-chunk schedules (Schedules below), else 1", false},
    {"group-size", "G", "Interleaved1F1B and interleaved_combined_1f1b only: microbatches per group",
     "m / max(1, m / p): p when p divides m", false},
    {"backward", "full|split", "backward as one action B, or split into I then W", "full", false},
}};

/// --cost, shared by simulate and compare.
inline constexpr flag_spec cost_flag{
    "cost", "F=1,B=2,...",
    "one microbatch through one rank's layers (F, B, I, W), split evenly over the rank's chunks; p2p latency; "
    "MoE all-to-all F_dispatch, F_combine, B_dispatch, B_combine (of a B or I; split like F, B), attention "
    "(compute share before the dispatch), slowdown (>= 1, compute under communication) (docs/moe.md)",
    "F=1,B=2,I=1,W=1,p2p=0", false};

// ---------------------------------------------------------------------------------------------
// Input and costs, shared by check, simulate, compare and simai
// ---------------------------------------------------------------------------------------------

/// Largest input file `check`, `simulate --csv`, `compare --csv` and `simai` read: 64 MiB. A
/// CSV of that size holds up to about 16 million actions (16 bytes each once parsed), and the
/// largest AICB workloads are a few MB.
inline constexpr std::size_t max_input_bytes = std::size_t{64} << 20;

/// The most memory the tool lets one command's analysis hold, by its own estimate: 4 GiB. The
/// analyses keep a table per (stage, microbatch) unit (pipesched::structure_check_bytes_per_unit,
/// pipesched::iteration_check_bytes_per_unit, iteration_replay_bytes_per_unit; a text timeline
/// also keeps every action's times), so three numbers on the command line can ask for
/// terabytes (65535 ranks x 256 chunks x 65536 microbatches); beyond the budget the shape is a
/// usage error, not a failed allocation. It is the one limit on the size of the work: what fits
/// runs, however long it takes (a replay takes 0.03 to 0.17 us of CPU per unit; a Chrome trace
/// writes about 340 bytes per action), and shows its progress on a terminal (progress.hpp).
inline constexpr std::uint64_t memory_budget = std::uint64_t{4} << 30;

/// What one command will hold, estimated before it allocates anything.
struct resource_estimate {
    pipesched::shape shape{};         ///< the largest shape it analyses (named in the message)
    std::uint64_t bytes_per_unit = 0; ///< held per (stage, microbatch) unit of `shape`
    std::uint64_t build_bytes = 0;    ///< held to build the schedule (schedule_build_bytes)
};

/// What building the schedule `id` holds for shape s before any analysis: the order a
/// policy stores and the work space of its generator (V-Min and V-Half, build_bytes()); 0 for
/// closed-form policies and for a shape the policy rejects (refused as such).
std::uint64_t schedule_build_bytes(pipesched::schedule_id id, const pipesched::shape& s);

/// A usage error if `what` (a command and its format, as the user typed them) would hold more
/// than memory_budget: it names the shape, the estimate and the budget, then `advice`. The one
/// place every command's estimate is checked. A shape beyond the event's fields (check_common)
/// passes: the policy refuses it, naming the field.
void require_within_budget(const resource_estimate& e, std::string_view what, std::string_view advice);

/// The whole of a file, or of standard input for "-", read in blocks up to max_input_bytes.
/// A file that cannot be opened or read (with the system's reason: a directory, permissions),
/// or that is larger than the limit (/dev/zero), is a usage error naming it.
std::string read_input(std::string_view path);
/// Writes `bytes` to the file at `path`, created or emptied first. A file that cannot be
/// written (a directory, a missing folder, permissions, a full disk) is a usage error naming
/// it, with the system's reason.
void write_output(const std::string& path, std::string_view bytes);
/// How a file name appears in messages: as given when it is plain printable ASCII without
/// quotes or backslashes, else quoted().
std::string file_label(std::string_view path);


/// The largest stage number plus one that a schedule can have: ranks x chunks at their limits.
inline constexpr std::uint32_t max_stages = pipesched::max_ranks * pipesched::max_chunks;

/// A PyTorch CSV schedule as check, simulate --csv and compare --csv use it.
struct loaded_csv {
    std::string label;                                ///< the file name for messages
    pipesched::placement_guess guess;                 ///< ranks, stages, microbatches, placement
    std::vector<std::vector<pipesched::action>> compute; ///< compute_only(table): pairs kept
    std::size_t actions = 0;                          ///< entries of `compute`
};
/// Reads and parses FILE (or - for standard input) within the limits: max_input_bytes, no
/// UTF-8 byte order mark, at most max_ranks rank lines. Usage errors name the file and place.
loaded_csv load_csv(std::string_view path);

/// --cost F=1,B=2,I=1,W=1,p2p=0: the time of one microbatch through one rank's share of the
/// model; a schedule with v chunks per rank is charged 1/v of it per chunk, so that schedules
/// with different v compare fairly. The expert-parallel all-to-all keys (F_dispatch, F_combine,
/// B_dispatch, B_combine) are split the same way; attention and slowdown are not.
struct cost_request {
    pipesched::stage_costs per_rank{1.0, 2.0, 1.0, 1.0};
    double p2p = 0.0;
};

/// A decimal number as a flag gives it: from_chars' syntax (no '+', no leading blanks, no hex),
/// any length. `-0` is zero. What a value that is not a finite double became is kept, so that
/// every flag reports it the same way.
struct decimal {
    enum class status : std::uint8_t {
        ok,        ///< `value` is the nearest double (a denormal is fine)
        underflow, ///< a non-zero value closer to 0 than the smallest double: `value` is 0
        overflow,  ///< beyond the largest finite double: no value
        invalid,   ///< not a number (or nan, inf): no value
    };
    double value = 0.0;
    status state = status::invalid;
};
decimal read_decimal(std::string_view text);

/// "is too large (the largest finite number is 1.7976931348623157e308)" and the like: why
/// `text` is not usable as read_decimal read it, for the end of a message; empty when it is.
std::string decimal_problem(const decimal& d);

/// Writes `pipesched: warning: <message>` on stderr (the output on stdout is unaffected).
void warn(std::string_view message);

/// A number >= 0 of any length ("1.000...1" with 100,000 zeros is fine; `-0` is 0); `what`
/// names it in the error ("--cost: F"). A non-zero value below the smallest double is read as
/// 0 with a warning that says so.
double read_nonnegative(std::string_view what, std::string_view value);

/// KEY=VALUE,KEY=VALUE with keys from `keys`, each at most once, values read_nonnegative;
/// calls set(index of the key in `keys`, value). `where` names the text in errors ("--cost",
/// "FILE: line 3"). Shared by every flag of that form, so they all refuse the same mistakes.
void read_key_values(std::string_view where, std::string_view text, std::span<const std::string_view> keys,
                     const std::function<void(std::size_t, double)>& set);

cost_request read_costs(const parsed_args& args);
pipesched::cost_model cost_model_for(const cost_request& c, std::uint32_t chunks);

/// A replay refused for its costs (invalid_cost, time_overflow) is a usage error naming the
/// --cost key at fault; any other failed verdict of a library schedule is a bug (logic_error).
[[noreturn]] void fail_simulation(std::string_view schedule, const pipesched::verdict& v);

} // namespace pipesched::cli
