// pipesched: the command-line front end of the library.
//
//   pipesched                       a short demonstration: GPipe vs 1F1B with p = 1, m = 2
//   pipesched order --schedule NAME --ranks P --microbatches M [...]
//                                   every rank's compute actions, as the CSV PyTorch reads
//   pipesched help [COMMAND] | --help | -h | --version
//
// Adding a subcommand: write an array of flag_spec, a function `int run_NAME(const parsed_args&)`
// and one row in `commands`; parsing, duplicate and unknown-flag errors, and the help text come
// from the table. Usage errors are thrown as usage_error and reported by main() as one line on
// stderr with exit status 2.

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <exception>
#include <initializer_list>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <pipesched/analysis/simulate.hpp>
#include <pipesched/analysis/simulate_iteration.hpp>
#include <pipesched/analysis/validate.hpp>
#include <pipesched/catalog.hpp>
#include <pipesched/event.hpp>
#include <pipesched/io/action_text.hpp>
#include <pipesched/io/chrome_trace.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/io/simai.hpp>
#include <pipesched/io/simai_compare.hpp>
#include <pipesched/io/terminal_timeline.hpp>
#include <pipesched/policy.hpp>
#include <pipesched/shape.hpp>
#include <pipesched/sink.hpp>

namespace {

constexpr std::string_view program_name = "pipesched";
constexpr std::string_view program_version = "0.1.0"; // keep in step with project() in CMake

constexpr int exit_ok = 0;
constexpr int exit_output_failed = 1;
constexpr int exit_usage = 2;

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
            if (std::fwrite(text_.data(), 1, text_.size(), file_) != text_.size())
                failed_ = true;
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
bool print(std::string_view text) {
    output_buffer out{stdout};
    out.append(text);
    return out.finish();
}

void append_number(std::string& s, std::uint64_t n) {
    std::array<char, 24> digits{};
    const auto r = std::to_chars(digits.data(), digits.data() + digits.size(), n);
    s.append(digits.data(), r.ptr);
}

std::string number_text(std::uint64_t n) {
    std::string s;
    append_number(s, n);
    return s;
}

/// `text` left-aligned in a field of `width` characters.
void append_padded(std::string& s, std::string_view text, std::size_t width) {
    s.append(text);
    if (text.size() < width)
        s.append(width - text.size(), ' ');
}

constexpr std::size_t text_width = 100; ///< help text
constexpr std::size_t demo_width = 92;  ///< the demonstration's paragraph

/// Appends the words separated by single spaces, starting at column `column`; a word that
/// would pass `width` starts a new line indented by `indent` spaces. Ends with a newline.
void append_words(std::string& s, std::span<const std::string> words, std::size_t column,
                  std::size_t indent, std::size_t width = text_width) {
    bool line_start = true;
    for (const std::string& word : words) {
        if (!line_start && column + 1 + word.size() > width) {
            s += '\n';
            s.append(indent, ' ');
            column = indent;
            line_start = true;
        }
        if (!line_start) {
            s += ' ';
            ++column;
        }
        s += word;
        column += word.size();
        line_start = false;
    }
    s += '\n';
}

std::vector<std::string> split_words(std::string_view text) {
    std::vector<std::string> words;
    while (!text.empty()) {
        const std::size_t space = text.find(' ');
        if (space != 0)
            words.emplace_back(text.substr(0, space));
        text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    }
    return words;
}

/// `text` right-aligned in a field of `width` characters.
void append_right(std::string& s, std::string_view text, std::size_t width) {
    if (text.size() < width)
        s.append(width - text.size(), ' ');
    s.append(text);
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A command-line mistake: reported by main() as `pipesched: <message>`, exit status 2.
struct usage_error {
    std::string message;
};

[[noreturn]] void fail(std::string message) { throw usage_error{std::move(message)}; }

/// A user-supplied value in single quotes, safe to print on one line: control and non-ASCII
/// bytes are escaped and very long values are shortened.
std::string quoted(std::string_view value) {
    constexpr std::size_t max_shown = 64;
    constexpr std::string_view hex = "0123456789abcdef";
    std::string s = "'";
    const std::size_t shown = std::min(value.size(), max_shown);
    for (std::size_t i = 0; i < shown; ++i) {
        const auto byte = static_cast<unsigned char>(value[i]);
        if (byte < 0x20 || byte >= 0x7F) {
            s += "\\x";
            s += hex[byte >> 4];
            s += hex[byte & 0xF];
        } else if (value[i] == '\'' || value[i] == '\\') {
            s += '\\';
            s += value[i];
        } else {
            s += value[i];
        }
    }
    if (shown < value.size())
        s += "...";
    s += '\'';
    return s;
}

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

class parsed_args;

struct command_spec {
    std::string_view name;
    std::string_view summary;     ///< one line, for the command list
    std::string_view description; ///< a paragraph, for `pipesched help <command>`
    std::span<const flag_spec> flags;
    int (*run)(const parsed_args&); ///< nullptr for `help`, which dispatch() handles itself
    std::string_view positional{}; ///< name of the one required positional argument ("FILE"), if any
};

/// The flags given to one subcommand, checked against its flag_spec list.
class parsed_args {
  public:
    parsed_args(const command_spec& cmd, std::span<const std::string_view> args) : command_{&cmd} {
        for (std::size_t i = 0; i < args.size(); ++i) {
            const std::string_view arg = args[i];
            if (!cmd.positional.empty() && !positional_ && (arg == "-" || arg.empty() || arg[0] != '-')) {
                positional_ = arg;
                continue;
            }
            if (arg.size() < 3 || arg.substr(0, 2) != "--") {
                if (arg.size() > 1 && arg[0] == '-') {
                    fail("unknown flag " + quoted(arg) + " for '" + full_name() + "'" + see_help());
                }
                fail("unexpected argument " + quoted(arg) + " for '" + full_name() + "'" +
                     see_help());
            }
            const std::size_t eq = arg.find('=');
            const std::string_view name =
                arg.substr(2, eq == std::string_view::npos ? arg.npos : eq - 2);
            const flag_spec* spec = find(name);
            if (spec == nullptr) {
                fail("unknown flag " + quoted(arg.substr(0, eq)) + " for '" + full_name() + "'" +
                     see_help());
            }
            if (get(spec->name))
                fail("flag --" + std::string{spec->name} + " given twice");
            std::string_view value{};
            if (spec->value_name.empty()) { // a switch
                if (eq != std::string_view::npos) {
                    fail("flag --" + std::string{spec->name} + " takes no value");
                }
            } else if (eq != std::string_view::npos) {
                value = arg.substr(eq + 1);
            } else if (i + 1 < args.size() && args[i + 1].substr(0, 2) != "--") {
                value = args[++i];
            }
            if (!spec->value_name.empty() && value.empty()) {
                fail("flag --" + std::string{spec->name} + " needs a value (" +
                     std::string{spec->value_name} + ")");
            }
            given_.emplace_back(spec, value);
        }
        if (!cmd.positional.empty() && !positional_) {
            fail("missing " + std::string{cmd.positional} + " for '" + full_name() + "'" + see_help());
        }
        for (const flag_spec& spec : cmd.flags) {
            if (spec.required && !get(spec.name)) {
                fail("missing required flag --" + std::string{spec.name} + " " +
                     std::string{spec.value_name} + see_help());
            }
        }
    }

    /// The value of a flag, or nullopt when it was not given (a switch given has value "").
    [[nodiscard]] std::optional<std::string_view> get(std::string_view name) const {
        for (const auto& [spec, value] : given_) {
            if (spec->name == name)
                return value;
        }
        return std::nullopt;
    }

    /// A whole number in 1..2^32-1: decimal digits only, nothing else, no sign.
    [[nodiscard]] std::optional<std::uint32_t> count(std::string_view name) const {
        const auto text = get(name);
        if (!text)
            return std::nullopt;
        std::uint32_t n = 0;
        const char* const first = text->data();
        const char* const last = first + text->size();
        const auto [end, ec] = std::from_chars(first, last, n);
        const std::string flag = "--" + std::string{name};
        if ((*text)[0] == '-')
            fail(flag + " must not be negative, got " + quoted(*text));
        if (ec == std::errc::result_out_of_range) {
            fail(flag + " value " + quoted(*text) + " is too large");
        }
        if (ec != std::errc{} || end != last || (*text)[0] < '0' || (*text)[0] > '9') {
            fail(flag + " needs a positive whole number, got " + quoted(*text));
        }
        if (n == 0)
            fail(flag + " must be at least 1, got " + quoted(*text));
        return n;
    }

    /// The positional argument (only for commands that take one; checked to be present).
    [[nodiscard]] std::string_view positional() const { return positional_.value_or(""); }

    [[nodiscard]] std::string full_name() const {
        return std::string{program_name} + " " + std::string{command_->name};
    }

  private:
    [[nodiscard]] const flag_spec* find(std::string_view name) const {
        for (const flag_spec& spec : command_->flags) {
            if (spec.name == name)
                return &spec;
        }
        return nullptr;
    }
    [[nodiscard]] std::string see_help() const { return " (see '" + full_name() + " --help')"; }

    const command_spec* command_;
    std::vector<std::pair<const flag_spec*, std::string_view>> given_;
    std::optional<std::string_view> positional_;
};

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

std::string schedule_names() {
    std::string s;
    for (const pipesched::schedule_info& info : pipesched::schedules) {
        if (!s.empty())
            s += ", ";
        s += pipesched::display_name(info);
    }
    return s;
}

schedule_request read_schedule(const parsed_args& args) {
    schedule_request req{};
    const std::string_view name = args.get("schedule").value_or("");
    const auto id = pipesched::find_schedule(name);
    if (!id) {
        fail("--schedule: unknown schedule " + quoted(name) + ", expected one of " +
             schedule_names() + " (see 'pipesched --help')");
    }
    req.id = *id;
    req.options.dims.ranks = args.count("ranks").value_or(1);
    req.options.dims.microbatches = args.count("microbatches").value_or(1);
    req.options.dims.chunks = args.count("chunks").value_or(1);
    if (const auto g = args.count("group-size")) {
        if (req.id != pipesched::schedule_id::interleaved_1f1b) {
            fail("--group-size applies only to " +
                 std::string{
                     pipesched::info(pipesched::schedule_id::interleaved_1f1b).pytorch_name} +
                 ", not to " + std::string{pipesched::display_name(pipesched::info(req.id))});
        }
        req.options.group_size = *g;
        req.group_size_given = true;
    }
    if (const auto b = args.get("backward")) {
        if (pipesched::info(req.id).fixed_backward) {
            fail("--backward does not apply to " + std::string{pipesched::display_name(pipesched::info(req.id))} +
                 ": it decides where B, I and W run itself");
        }
        if (*b == "full") {
            req.options.backward = pipesched::backward_kind::full;
        } else if (*b == "split") {
            req.options.backward = pipesched::backward_kind::split;
        } else {
            fail("--backward must be 'full' or 'split', got " + quoted(*b));
        }
    }
    return req;
}

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

/// Largest number of (chunk, microbatch) activations alive at once on any rank: +1 at a
/// forward, -1 when its backward completes (B, or W of a split backward).
template <pipesched::schedule_policy P> std::uint32_t peak_in_flight(const P& pol) {
    struct counter {
        std::uint32_t live = 0;
        std::uint32_t peak = 0;
        void push(const pipesched::event& e) {
            if (e.kind == pipesched::op::forward) {
                peak = std::max(peak, ++live);
            } else if ((e.kind == pipesched::op::backward ||
                        e.kind == pipesched::op::backward_weight) &&
                       live > 0) {
                --live;
            }
        }
    };
    std::uint32_t peak = 0;
    const pipesched::shape s = pol.shape;
    for (std::uint32_t r = 0; r < s.ranks; ++r) {
        counter c{};
        pipesched::emit(pol, r, c);
        peak = std::max(peak, c.peak);
    }
    return peak;
}

// ---------------------------------------------------------------------------------------------
// pipesched order
// ---------------------------------------------------------------------------------------------

constexpr std::array<flag_spec, 6> order_flags{{
    {"schedule", "NAME", "schedule to generate, see Schedules below", "", true},
    {"ranks", "P", "pipeline ranks, 1..65535", "", true},
    {"microbatches", "M", "microbatches per iteration, 1..65536", "", true},
    {"chunks", "V", "model chunks per rank, 1..256; above 1 only for multi-chunk schedules", "1",
     false},
    {"group-size", "G", "Interleaved1F1B only: microbatches per group",
     "m / max(1, m / p): p when p divides m", false},
    {"backward", "full|split", "backward as one action B, or split into I then W", "full", false},
}};

/// Appends one rank's actions to the output as `a,b,c`; an overlapped pair is one cell
/// `(a;b)OVERLAP_F_B`.
template <pipesched::schedule_policy P> struct csv_line_sink {
    const P* pol;
    output_buffer* out;
    bool first = true;
    pipesched::cell_folder cells{};

    void push(const pipesched::event& e) {
        if (!cells.push(pipesched::to_action(*pol, e)))
            return;
        if (!first)
            out->put(',');
        first = false;
        out->append(cells.text());
    }
};

int run_order(const parsed_args& args) {
    const schedule_request req = read_schedule(args);
    return pipesched::with_schedule(req.id, req.options, [&](const auto& pol) -> int {
        require_valid_shape(pol, req);
        output_buffer out{stdout};
        const pipesched::shape s = pol.shape;
        for (std::uint32_t r = 0; r < s.ranks && !out.failed(); ++r) {
            csv_line_sink<std::remove_cvref_t<decltype(pol)>> sink{&pol, &out};
            pipesched::emit(pol, r, sink);
            out.put('\n');
        }
        if (!out.finish()) {
            std::fputs("pipesched: error writing the output\n", stderr);
            return exit_output_failed;
        }
        return exit_ok;
    });
}

// ---------------------------------------------------------------------------------------------
// Shared by check, simulate, compare and simai
// ---------------------------------------------------------------------------------------------

/// The whole of a file, or of standard input for "-". Unreadable input is a usage error.
std::string read_input(std::string_view path) {
    if (path == "-") {
        return std::string{std::istreambuf_iterator<char>{std::cin}, std::istreambuf_iterator<char>{}};
    }
    std::ifstream in{std::string{path}, std::ios::binary};
    if (!in)
        fail("cannot open " + quoted(path));
    std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    if (in.bad())
        fail("cannot read " + quoted(path));
    return text;
}

/// --cost F=1,B=2,I=1,W=1,p2p=0: the time of one microbatch through one rank's share of the
/// model; a schedule with v chunks per rank is charged 1/v of it per chunk, so that schedules
/// with different v compare fairly.
struct cost_request {
    pipesched::stage_costs per_rank{1.0, 2.0, 1.0, 1.0};
    double p2p = 0.0;
};

cost_request read_costs(const parsed_args& args) {
    cost_request c{};
    const auto text = args.get("cost");
    if (!text)
        return c;
    std::string_view rest = *text;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        const std::size_t eq = item.find('=');
        if (eq == std::string_view::npos)
            fail("--cost: expected KEY=VALUE, got " + quoted(item));
        const std::string_view key = item.substr(0, eq);
        const std::string_view value = item.substr(eq + 1);
        double x = 0.0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
        if (ec != std::errc{} || end != value.data() + value.size() || !(x >= 0.0) || !std::isfinite(x))
            fail("--cost: " + std::string{key} + " needs a finite number >= 0, got " + quoted(value));
        if (key == "F") c.per_rank.forward = x;
        else if (key == "B") c.per_rank.backward = x;
        else if (key == "I") c.per_rank.backward_input = x;
        else if (key == "W") c.per_rank.backward_weight = x;
        else if (key == "p2p") c.p2p = x;
        else fail("--cost: unknown key " + quoted(key) + " (expected F, B, I, W or p2p)");
        if (comma != std::string_view::npos && rest.empty())
            fail("--cost: trailing comma in " + quoted(*text));
    }
    return c;
}

pipesched::cost_model cost_model_for(const cost_request& c, std::uint32_t chunks) {
    pipesched::cost_model m{};
    const double share = 1.0 / static_cast<double>(chunks);
    m.uniform = {c.per_rank.forward * share, c.per_rank.backward * share,
                 c.per_rank.backward_input * share, c.per_rank.backward_weight * share};
    m.p2p_latency = c.p2p;
    return m;
}

std::string fixed(double x, int decimals = 3) {
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, x, std::chars_format::fixed, decimals);
    return std::string{buffer, r.ptr};
}

std::string format_choice(const parsed_args& args, std::initializer_list<std::string_view> allowed) {
    const std::string_view f = args.get("format").value_or(*allowed.begin());
    for (const std::string_view a : allowed) {
        if (f == a)
            return std::string{f};
    }
    std::string list;
    for (const std::string_view a : allowed)
        list += (list.empty() ? "" : ", ") + std::string{a};
    fail("--format must be one of " + list + ", got " + quoted(f));
}

int finish_output(output_buffer& out) {
    if (!out.finish()) {
        std::fputs("pipesched: error writing the output\n", stderr);
        return exit_output_failed;
    }
    return exit_ok;
}

// ---------------------------------------------------------------------------------------------
// pipesched check FILE.csv
// ---------------------------------------------------------------------------------------------

constexpr std::array<flag_spec, 1> check_flags{{
    {"microbatches", "M", "microbatches the schedule must cover (default: one past the largest seen)", "",
     false},
}};

int run_check(const parsed_args& args) {
    const std::string_view path = args.positional();
    const std::string text = read_input(path);
    const pipesched::csv_result parsed = pipesched::read_csv(text);
    if (!parsed)
        fail(std::string{path} + ": " + pipesched::describe(parsed.error));
    const pipesched::placement_guess guess = pipesched::infer_placement(parsed.table);
    const auto compute = pipesched::compute_only(parsed.table);
    const std::uint32_t m = args.count("microbatches").value_or(0);
    const pipesched::verdict v = pipesched::validate(compute, m);
    std::size_t actions = 0;
    for (const auto& rank : compute)
        actions += rank.size();
    output_buffer out{stdout};
    if (v) {
        out.append("valid: " + number_text(guess.ranks) + " ranks, " + number_text(guess.stages) + " stages, " +
                   number_text(m != 0 ? m : guess.microbatches) + " microbatches, " + number_text(actions) +
                   " compute actions, placement " + std::string{pipesched::to_string(guess.layout)} + "\n");
        return finish_output(out);
    }
    out.append("invalid: " + pipesched::describe(v) + "\n");
    const int status = finish_output(out);
    return status == exit_ok ? 1 : status;
}

// ---------------------------------------------------------------------------------------------
// pipesched simulate
// ---------------------------------------------------------------------------------------------

constexpr std::array<flag_spec, 10> simulate_flags{{
    order_flags[0], order_flags[1], order_flags[2], order_flags[3], order_flags[4], order_flags[5],
    {"cost", "F=1,B=2,...", "per-microbatch time of one rank's share of the model (F, B, I, W) and p2p latency",
     "F=1,B=2,I=1,W=1,p2p=0", false},
    {"fill-w", "", "a rank that would idle runs its next ready W instead", "", false},
    {"format", "text|json|chrome", "timeline and summary, summary as JSON, or a Chrome/Perfetto trace", "text",
     false},
    {"iteration", "", "chrome only: the whole iteration (p2p, loss, grad sync, optimizer) on their own tracks", "",
     false},
}};

template <pipesched::schedule_policy P>
void append_summary_json(std::string& s, const P& pol, const pipesched::simulation& sim) {
    const pipesched::shape dims = pol.shape;
    s += "{\"schedule\":";
    pipesched::detail::append_json_string(s, P::name);
    s += ",\"ranks\":" + number_text(dims.ranks) + ",\"microbatches\":" + number_text(dims.microbatches) +
         ",\"chunks\":" + number_text(dims.chunks);
    s += ",\"makespan\":";
    pipesched::detail::append_json_number(s, sim.makespan);
    s += ",\"bubble_fraction\":";
    pipesched::detail::append_json_number(s, sim.bubble_fraction);
    const auto list = [&](std::string_view name, auto field) {
        s += ",\"";
        s += name;
        s += "\":[";
        for (std::size_t r = 0; r < sim.ranks.size(); ++r) {
            if (r != 0)
                s += ',';
            field(sim.ranks[r]);
        }
        s += ']';
    };
    list("peak_activations", [&](const pipesched::rank_summary& r) { s += number_text(r.peak_activations); });
    list("busy", [&](const pipesched::rank_summary& r) { pipesched::detail::append_json_number(s, r.busy); });
    list("idle", [&](const pipesched::rank_summary& r) { pipesched::detail::append_json_number(s, r.idle); });
    s += "}";
}

int run_simulate(const parsed_args& args) {
    const schedule_request req = read_schedule(args);
    const cost_request costs = read_costs(args);
    const std::string format = format_choice(args, {"text", "json", "chrome"});
    return pipesched::with_schedule(req.id, req.options, [&](const auto& pol) -> int {
        require_valid_shape(pol, req);
        pipesched::cost_model model = cost_model_for(costs, pol.shape.chunks);
        model.fill_with_weight = args.get("fill-w").has_value();
        pipesched::chrome_trace_sink records;
        const pipesched::simulation sim = pipesched::simulate(pol, model, records);
        if (!sim)
            throw std::logic_error{"a library schedule failed validation: " + pipesched::describe(sim.check)};
        output_buffer out{stdout};
        std::string s;
        const std::string title = std::string{pipesched::display_name(pipesched::info(req.id))} + " p=" +
                                  number_text(pol.shape.ranks) + " m=" + number_text(pol.shape.microbatches) +
                                  " v=" + number_text(pol.shape.chunks);
        if (format == "chrome") {
            pipesched::trace_options options{};
            options.process_name = title;
            if (args.get("iteration")) {
                // The same schedule inside one iteration with Megatron's defaults, replayed with
                // the same compute costs (communication free: the trace shows where it lands).
                pipesched::iteration_cost_model it_costs{};
                it_costs.compute = model;
                pipesched::chrome_trace_sink full;
                pipesched::as_timed_actions<pipesched::chrome_trace_sink> adapter{
                    &full, std::remove_cvref_t<decltype(pol)>::layout, pol.shape.ranks};
                (void)pipesched::simulate(pipesched::iteration{pol}, it_costs, adapter);
                options.process_name = title + " (one iteration)";
                s = full.str(options);
            } else {
                s = records.str(options);
            }
        } else if (format == "json") {
            append_summary_json(s, pol, sim);
            s += '\n';
        } else {
            s += title + "\n";
            s += pipesched::render_terminal_timeline(records.records(), {});
            s += "makespan " + fixed(sim.makespan) + ", bubble fraction " + fixed(sim.bubble_fraction) +
                 ", peak activations per rank:";
            for (const auto& r : sim.ranks)
                s += " " + number_text(r.peak_activations);
            s += "\n";
        }
        out.append(s);
        return finish_output(out);
    });
}

// ---------------------------------------------------------------------------------------------
// pipesched compare
// ---------------------------------------------------------------------------------------------

constexpr std::array<flag_spec, 4> compare_flags{{
    order_flags[1], order_flags[2],
    {"chunks", "V", "model chunks per rank for the multi-chunk schedules (single-chunk ones use 1)", "2", false},
    simulate_flags[6],
}};
static_assert(simulate_flags[6].name == "cost");

int run_compare(const parsed_args& args) {
    const std::uint32_t p = args.count("ranks").value_or(1);
    const std::uint32_t m = args.count("microbatches").value_or(1);
    const std::uint32_t v = args.count("chunks").value_or(2);
    const cost_request costs = read_costs(args);
    std::vector<std::array<std::string, 7>> rows;
    rows.push_back({"schedule", "chunks", "bubble", "makespan", "peak max", "peak rank 0", "note"});
    for (const pipesched::schedule_info& info : pipesched::schedules) {
        pipesched::schedule_options opt{};
        opt.dims = {p, m, info.multi_chunk ? v : 1u};
        pipesched::with_schedule(info.id, opt, [&](const auto& pol) {
            std::array<std::string, 7> row{std::string{pipesched::display_name(info)}, number_text(opt.dims.chunks),
                                           "-", "-", "-", "-", ""};
            if (const pipesched::shape_check c = pol.check(); !c) {
                row[6] = "rejects this shape: " + std::string{c.message};
                rows.push_back(std::move(row));
                return;
            }
            const pipesched::simulation sim = pipesched::simulate(pol, cost_model_for(costs, opt.dims.chunks));
            const double per = static_cast<double>(opt.dims.chunks);
            row[2] = fixed(sim.bubble_fraction);
            row[3] = fixed(sim.makespan);
            // In microbatches of one rank's activations: v chunk activations make one.
            row[4] = fixed(sim.max_peak_activations() / per, 2);
            row[5] = fixed(sim.ranks[0].peak_activations / per, 2);
            rows.push_back(std::move(row));
        });
    }
    std::array<std::size_t, 7> width{};
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i)
            width[i] = std::max(width[i], row[i].size());
    std::string s = "p=" + number_text(p) + " m=" + number_text(m) + " v=" + number_text(v) +
                    "; costs per microbatch of one rank's layers (F, B, I, W), split evenly over its chunks;\n"
                    "peaks in microbatches of one rank's activations\n";
    for (const auto& row : rows) {
        for (std::size_t i = 0; i < row.size(); ++i) {
            if (i + 1 == row.size()) {
                s += row[i];
            } else {
                append_padded(s, row[i], width[i] + 2);
            }
        }
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        s += '\n';
    }
    output_buffer out{stdout};
    out.append(s);
    return finish_output(out);
}

// ---------------------------------------------------------------------------------------------
// pipesched simai FILE
// ---------------------------------------------------------------------------------------------

constexpr std::array<flag_spec, 2> simai_flags{{
    {"schedule", "NAME", "the order to compare SimAI's with", "1F1B", false},
    {"format", "text|json", "a report, or the facts of both orders as JSON", "text", false},
}};

std::string ms(double ns) { return fixed(ns / 1e6) + " ms"; }

/// "7-11, 20" for ascending runs and "16-12" for descending ones (SimAI's backward sweep).
std::string rows_text(const std::vector<std::size_t>& rows) {
    std::string s;
    std::size_t i = 0;
    while (i < rows.size()) {
        std::size_t j = i;
        while (j + 1 < rows.size() && rows[j + 1] == rows[j] + 1)
            ++j;
        if (j == i) {
            while (j + 1 < rows.size() && rows[j] > 0 && rows[j + 1] == rows[j] - 1)
                ++j;
        }
        if (!s.empty())
            s += ", ";
        s += number_text(rows[i]);
        if (j > i)
            s += "-" + number_text(rows[j]);
        i = j + 1;
        if (s.size() > 60 && i < rows.size()) {
            s += ", ...";
            break;
        }
    }
    return s;
}

std::string simai_report_text(std::string_view source, const pipesched::simai::workload& w,
                              const pipesched::simai::comparison& c) {
    using pipesched::simai::meaning;
    const auto& st = c.layout;
    std::string s;
    s += "SimAI workload " + std::string{source} + ": " + w.header.policy + ", tp " +
         number_text(w.header.tp.value_or(1)) + ", pp " + number_text(c.pp) + ", ga " + number_text(c.ga) + ", " +
         number_text(w.rows.size()) + " rows\n";
    if (st.ga_unrolled()) {
        s += "Rows: iteration-level 0-" + number_text(st.prefix_end == 0 ? 0 : st.prefix_end - 1) + ", " +
             number_text(st.blocks.size()) + " microbatch blocks of " + number_text(st.period) + " rows (" +
             number_text(st.body_begin) + "-" + number_text(st.body_end - 1) + "), loss " +
             number_text(st.loss_begin) + "-" + number_text(st.loss_end - 1) + ", optimizer " +
             number_text(st.optimizer_begin) + "-" + number_text(st.optimizer_end - 1) + "\n";
    } else {
        s += "Rows: the microbatch rows do not split into ga identical blocks (" +
             number_text(st.errors_total) + " rows do not fit)\n";
    }
    // The same AICB quirk repeats in every block: show a few and count the rest.
    constexpr std::size_t notes_shown = 2;
    for (std::size_t k = 0; k < st.warnings.size() && k < notes_shown; ++k)
        s += "  note: " + st.warnings[k].message + "\n";
    if (st.warnings_total > notes_shown)
        s += "  note: ... and " + number_text(st.warnings_total - notes_shown) + " more cost differences between blocks\n";

    s += "\nSimAI's order (one pass: forward over the rows, then backward in reverse):\n";
    // Consecutive steps with the same meaning, as one line (placeholders do not split a line).
    std::vector<const pipesched::simai::labelled_step*> steps;
    for (const auto& l : c.simai_steps) {
        if (l.role != meaning::placeholder)
            steps.push_back(&l);
    }
    std::size_t i = 0;
    std::size_t n = 1;
    while (i < steps.size()) {
        const auto& first = *steps[i];
        std::size_t j = i;
        std::vector<std::size_t> rows;
        double end = first.end_ns;
        while (j < steps.size() && steps[j]->role == first.role && steps[j]->microbatch == first.microbatch) {
            if (rows.empty() || rows.back() != steps[j]->what.row)
                rows.push_back(steps[j]->what.row);
            end = std::max(end, steps[j]->end_ns);
            ++j;
        }
        {
            std::string name = first.role == meaning::forward    ? "forward mb " + number_text(first.microbatch)
                               : first.role == meaning::backward ? "backward mb " + number_text(first.microbatch)
                                                                 : std::string{pipesched::simai::to_string(first.role)};
            std::string line = "  " + number_text(n++) + ". ";
            line += name;
            while (line.size() < 24)
                line += ' ';
            line += "rows " + rows_text(rows);
            while (line.size() < 60)
                line += ' ';
            line += ms(first.start_ns) + " .. " + ms(end) + "\n";
            s += line;
        }
        i = j;
    }

    s += "\nProblems with that order:\n";
    if (c.problems.empty())
        s += "  none\n";
    for (std::size_t k = 0; k < c.problems.size(); ++k)
        s += "  " + number_text(k + 1) + ". " + c.problems[k].what + " (rows " + rows_text(c.problems[k].rows) + ")\n";
    s += "  pipesched's iteration rules: " + pipesched::describe(c.simai.check) + "\n";

    const auto join = [](const std::vector<std::string>& events) {
        std::string t;
        for (std::size_t k = 0; k < events.size(); ++k) {
            if (k == 40) {
                t += " ... (" + number_text(events.size()) + " events)";
                break;
            }
            t += (k == 0 ? "" : " ") + events[k];
        }
        return t;
    };
    s += "\nSimAI order:     " + join(c.simai.events) + "\n";
    s += "Corrected order: " + join(c.corrected.events) + "  (" + c.corrected.name +
         (c.pp == 1 ? ", one rank: Megatron's gradient accumulation" : ", rank 0 of " + number_text(c.pp)) + ")\n";
    if (c.pp > 1)
        s += "Note: pp = " + number_text(c.pp) + ": the file describes one stage; SimAI's pass is replayed for it "
             "alone, the corrected order runs " + c.corrected.name + " over " + number_text(c.pp) + " ranks.\n";

    std::vector<std::array<std::string, 3>> table{
        {"", "SimAI", c.corrected.name},
        {"peak microbatches in flight", number_text(c.simai.peak_microbatches_in_flight),
         number_text(c.corrected.peak_microbatches_in_flight)},
        {"optimizer before backward", c.simai.optimizer_before_backward ? "yes" : "no",
         c.corrected.optimizer_before_backward ? "yes" : "no"},
        {"optimizer after all grad sync", c.simai.optimizer_after_all_grad_sync ? "yes" : "no",
         c.corrected.optimizer_after_all_grad_sync ? "yes" : "no"},
        {"makespan", ms(c.simai.makespan_ns), ms(c.corrected.makespan_ns)},
        {"compute", ms(c.simai.compute_ns), ms(c.corrected.compute_ns)},
        {"exposed gradient sync", ms(c.simai.exposed_grad_sync_ns), ms(c.corrected.exposed_grad_sync_ns)},
        {"iteration rules", c.simai.check ? "valid" : std::string{pipesched::to_string(c.simai.check.code)},
         c.corrected.check ? "valid" : std::string{pipesched::to_string(c.corrected.check.code)}},
    };
    s += "\n";
    for (const auto& row : table) {
        append_padded(s, row[0], 32);
        append_padded(s, row[1], 16);
        s += row[2] + "\n";
    }
    s += "\nNetwork model: collective time = 5 us + bytes / bandwidth (x2 for all-reduce); tensor parallel "
         "200 GB/s,\ndata and expert parallel 25 GB/s.\n";
    return s;
}

void append_order_json(std::string& s, const pipesched::simai::order_report& o) {
    using pipesched::detail::append_json_number;
    using pipesched::detail::append_json_string;
    s += "{\"name\":";
    append_json_string(s, o.name);
    s += ",\"events\":[";
    for (std::size_t k = 0; k < o.events.size(); ++k) {
        if (k != 0)
            s += ',';
        append_json_string(s, o.events[k]);
    }
    s += "],\"peak_microbatches_in_flight\":" + number_text(o.peak_microbatches_in_flight);
    s += std::string{",\"optimizer_before_backward\":"} + (o.optimizer_before_backward ? "true" : "false");
    s += std::string{",\"optimizer_after_all_grad_sync\":"} + (o.optimizer_after_all_grad_sync ? "true" : "false");
    s += ",\"makespan_ns\":";
    append_json_number(s, o.makespan_ns);
    s += ",\"compute_ns\":";
    append_json_number(s, o.compute_ns);
    s += ",\"exposed_grad_sync_ns\":";
    append_json_number(s, o.exposed_grad_sync_ns);
    s += ",\"verdict\":";
    append_json_string(s, pipesched::describe(o.check));
    s += "}";
}

/// The `simai` report (text or JSON) of a workload file's contents.
std::string simai_report(std::string_view source, std::string_view text, pipesched::schedule_id policy,
                         std::string_view format) {
    const pipesched::simai::parse_result parsed = pipesched::simai::parse_workload(text);
    if (!parsed) {
        const auto& e = *parsed.error;
        fail(std::string{source} + ": " + e.to_string());
    }
    const pipesched::simai::comparison c = pipesched::simai::compare(parsed.value, policy);
    std::string s;
    if (format == "json") {
        s += "{\"orders\":[";
        append_order_json(s, c.simai);
        s += ',';
        append_order_json(s, c.corrected);
        s += "],\"problems\":[";
        for (std::size_t k = 0; k < c.problems.size(); ++k) {
            if (k != 0)
                s += ',';
            s += "{\"what\":";
            pipesched::detail::append_json_string(s, c.problems[k].what);
            s += ",\"rows\":[";
            for (std::size_t r = 0; r < c.problems[k].rows.size(); ++r)
                s += (r == 0 ? "" : ",") + number_text(c.problems[k].rows[r]);
            s += "]}";
        }
        s += "]}\n";
    } else {
        s = simai_report_text(source, parsed.value, c);
    }
    return s;
}

int run_simai(const parsed_args& args) {
    pipesched::schedule_id policy = pipesched::schedule_id::one_f_one_b;
    if (const auto name = args.get("schedule")) {
        const auto id = pipesched::find_schedule(*name);
        if (!id)
            fail("--schedule: unknown schedule " + quoted(*name) + ", expected one of " + schedule_names());
        policy = *id;
    }
    const std::string format = format_choice(args, {"text", "json"});
    const std::string_view path = args.positional();
    output_buffer out{stdout};
    out.append(simai_report(path, read_input(path), policy, format));
    return finish_output(out);
}

// ---------------------------------------------------------------------------------------------
// The command table
// ---------------------------------------------------------------------------------------------

constexpr std::array<flag_spec, 0> no_flags{};

constexpr std::array<command_spec, 6> commands{{
    {"order", "print every rank's compute actions in execution order (PyTorch CSV)",
     "Prints P lines; line r lists rank r's compute actions in execution order, comma-separated,\n"
     "as <stage><F|B|I|W><microbatch>, stages numbered globally (chunk * P + rank for the\n"
     "schedules below). This is the CSV that torch.distributed.pipelining's _load_csv reads.",
     order_flags, run_order},
    {"check", "validate a schedule read from PyTorch CSV (FILE, or - for standard input)",
     "Reads FILE as torch.distributed.pipelining's schedule CSV (one line per rank, compute and\n"
     "communication actions, empty cells idle) and validates its compute actions: each (stage,\n"
     "microbatch) has one F and one B (or I and W), in order, each stage on one rank, and no\n"
     "deadlock when a rank blocks at its next action until its input exists. Prints 'valid: ...'\n"
     "(exit 0) or 'invalid: <reason>' naming the rank, position and action (exit 1); an unreadable\n"
     "or malformed file is exit 2 with its line and column.",
     check_flags, run_check, "FILE"},
    {"simulate", "replay a schedule on a cost model: timeline, summary JSON or Chrome trace",
     "Replays the schedule with the given costs. text: a timeline (one row per rank, '.' idle) and\n"
     "the summary; json: {makespan, bubble_fraction, peak_activations, busy, idle} per rank;\n"
     "chrome: trace-event JSON for ui.perfetto.dev or chrome://tracing.",
     simulate_flags, run_simulate},
    {"compare", "bubble, makespan and peak activations of every schedule for one shape",
     "Simulates every schedule that accepts the shape (single-chunk schedules with one chunk) and\n"
     "prints one row each: bubble fraction, makespan, and peak activations in microbatches of one\n"
     "rank's activations (the maximum over ranks and on rank 0).",
     compare_flags, run_compare},
    {"simai", "SimAI's execution order of an AICB workload file against a training framework's",
     "Parses a SimAI/AICB workload file, traces the order in which SimAI runs its rows, names each\n"
     "ordering problem with its rows, and compares it with the corrected order (1F1B by default;\n"
     "with pp = 1 that is Megatron's F0 B0 F1 B1 ...): activations in flight, where the optimizer\n"
     "and gradient sync land, makespan and exposed gradient sync under a simple network model.",
     simai_flags, run_simai, "FILE"},
    {"help", "print this help, or one command's usage: pipesched help [COMMAND]",
     "Prints the help of pipesched, or the usage of COMMAND.", no_flags, nullptr},
}};

const command_spec* find_command(std::string_view name) {
    for (const command_spec& cmd : commands) {
        if (cmd.name == name)
            return &cmd;
    }
    return nullptr;
}

std::string unknown_command_message(std::string_view name) {
    return "unknown command " + quoted(name) + " (see 'pipesched --help')";
}

// ---------------------------------------------------------------------------------------------
// Help text
// ---------------------------------------------------------------------------------------------

/// The usage of a command after "pipesched NAME", one element per flag: "--ranks P",
/// "[--chunks V]".
std::vector<std::string> usage_tokens(const command_spec& cmd) {
    std::vector<std::string> tokens;
    if (cmd.name == "help")
        tokens.emplace_back("[COMMAND]");
    if (!cmd.positional.empty())
        tokens.emplace_back(cmd.positional);
    for (const flag_spec& f : cmd.flags) {
        std::string t = f.required ? "--" : "[--";
        t += f.name;
        if (!f.value_name.empty()) {
            t += ' ';
            t += f.value_name;
        }
        if (!f.required)
            t += ']';
        tokens.push_back(std::move(t));
    }
    return tokens;
}

/// `prefix` and the usage line, wrapped at text_width with continuation lines under the
/// first flag.
void append_usage(std::string& s, std::string_view prefix, const command_spec& cmd) {
    std::string head{prefix};
    head += program_name;
    head += ' ';
    head += cmd.name;
    s += head;
    const std::vector<std::string> tokens = usage_tokens(cmd);
    if (tokens.empty()) {
        s += '\n';
        return;
    }
    s += ' ';
    append_words(s, tokens, head.size() + 1, head.size() + 1);
}

void append_flags(std::string& s, const command_spec& cmd) {
    s += "Flags ('--flag value' or '--flag=value'; numbers are decimal):\n";
    std::size_t width = std::string_view{"--help, -h"}.size();
    for (const flag_spec& f : cmd.flags) {
        width = std::max(width, 2 + f.name.size() + 1 + f.value_name.size());
    }
    const std::size_t indent = 2 + width + 2;
    for (const flag_spec& f : cmd.flags) {
        std::string left = "--" + std::string{f.name};
        if (!f.value_name.empty())
            left += " " + std::string{f.value_name};
        // "(default ...)" is kept in one piece when the line wraps.
        std::vector<std::string> words = split_words(f.help);
        if (f.required)
            words.emplace_back("(required)");
        if (!f.default_text.empty())
            words.push_back("(default " + std::string{f.default_text} + ")");
        s += "  ";
        append_padded(s, left, width + 2);
        append_words(s, words, indent, indent);
    }
    s += "  ";
    append_padded(s, "--help, -h", width + 2);
    s += "print this usage\n";
}

void append_schedules(std::string& s) {
    s += "Schedules (--schedule): case, '-', '_' and spaces are ignored\n";
    constexpr std::string_view h1 = "PyTorch name";
    constexpr std::string_view h2 = "library name";
    std::size_t w1 = h1.size();
    std::size_t w2 = h2.size();
    for (const pipesched::schedule_info& info : pipesched::schedules) {
        w1 = std::max(w1, info.pytorch_name.size());
        w2 = std::max(w2, info.name.size());
    }
    s += "  ";
    append_padded(s, h1, w1 + 2);
    append_padded(s, h2, w2 + 2);
    append_padded(s, "chunks", 8);
    s += "also accepted\n";
    for (const pipesched::schedule_info& info : pipesched::schedules) {
        s += "  ";
        append_padded(s, info.pytorch_name.empty() ? "-" : info.pytorch_name, w1 + 2);
        append_padded(s, info.name, w2 + 2);
        append_padded(s, info.multi_chunk ? ">= 1" : "1", 8);
        bool first = true;
        for (std::string_view alias : info.aliases) {
            if (alias.empty())
                continue;
            if (!first)
                s += ", ";
            first = false;
            s += alias;
        }
        s += '\n';
    }
}

constexpr std::string_view exit_status_text =
    "Exit status:\n"
    "  0  success\n"
    "  1  the output could not be written, or an internal error\n"
    "  2  usage error (unknown command or flag, missing or malformed value, unknown schedule)\n"
    "     or a shape the schedule rejects; the reason is one line on stderr starting "
    "'pipesched: '\n";

std::string command_help(const command_spec& cmd) {
    std::string s;
    append_usage(s, "Usage: ", cmd);
    s += '\n';
    s += cmd.description;
    s += "\n";
    if (!cmd.flags.empty()) {
        s += '\n';
        append_flags(s, cmd);
        s += '\n';
        append_schedules(s);
    }
    return s;
}

std::string general_help() {
    std::string s;
    s += "pipesched ";
    s += program_version;
    s += ": pipeline-parallel training schedules\n\n";
    s += "Usage:\n";
    s += "  pipesched                  demonstration: GPipe vs 1F1B on one rank, 2 microbatches\n";
    s += "  pipesched COMMAND [FLAGS]  run a command; pipesched COMMAND --help for its usage\n";
    s += "  pipesched --help | -h      this help\n";
    s += "  pipesched --version        print the version\n\n";
    s += "Commands:\n";
    std::size_t width = 0;
    for (const command_spec& cmd : commands)
        width = std::max(width, cmd.name.size());
    for (const command_spec& cmd : commands) {
        s += "  ";
        append_padded(s, cmd.name, width + 2);
        s += cmd.summary;
        s += '\n';
    }
    for (const command_spec& cmd : commands) {
        if (cmd.flags.empty())
            continue;
        s += '\n';
        append_usage(s, "", cmd);
        s += cmd.description;
        s += "\n\n";
        append_flags(s, cmd);
    }
    s += '\n';
    append_schedules(s);
    s += '\n';
    s += exit_status_text;
    return s;
}

int print_status(std::string_view text) {
    if (print(text))
        return exit_ok;
    std::fputs("pipesched: error writing the output\n", stderr);
    return exit_output_failed;
}

// ---------------------------------------------------------------------------------------------
// The demonstration (no arguments)
// ---------------------------------------------------------------------------------------------

struct demo_column {
    std::string_view title;
    std::vector<std::string> actions;
    std::uint32_t peak = 0;
};

demo_column demo_run(pipesched::schedule_id id, std::uint32_t microbatches) {
    demo_column col{pipesched::info(id).pytorch_name, {}, 0};
    pipesched::schedule_options opt{};
    opt.dims = pipesched::shape{1, microbatches, 1};
    pipesched::with_schedule(id, opt, [&](const auto& pol) {
        for (const pipesched::event e : pipesched::events(pol, 0)) {
            col.actions.emplace_back(pipesched::format_action(pipesched::to_action(pol, e)).view());
        }
        col.peak = peak_in_flight(pol);
    });
    return col;
}

int run_demo() {
    using pipesched::schedule_id;
    const demo_column gpipe = demo_run(schedule_id::gpipe, 2);
    const demo_column ofob = demo_run(schedule_id::one_f_one_b, 2);
    const std::uint32_t more = 8;
    const std::uint32_t gpipe_more = demo_run(schedule_id::gpipe, more).peak;
    const std::uint32_t ofob_more = demo_run(schedule_id::one_f_one_b, more).peak;

    std::string s;
    s += "Why does gradient accumulation run all forwards before all backwards?\n";
    s += "One pipeline rank (p = 1), two microbatches (m = 2); actions are "
         "<stage><F|B><microbatch>:\n\n";
    const std::size_t w1 = std::max(gpipe.title.size(), std::size_t{4}) + 2;
    const std::size_t w2 = std::max(ofob.title.size(), std::size_t{4}) + 2;
    s += "  step  ";
    append_padded(s, gpipe.title, w1);
    s += ofob.title;
    s += '\n';
    const std::size_t steps = std::max(gpipe.actions.size(), ofob.actions.size());
    for (std::size_t i = 0; i < steps; ++i) {
        s += "  ";
        append_right(s, number_text(i + 1), 4);
        s += "  ";
        append_padded(s, i < gpipe.actions.size() ? gpipe.actions[i] : "", w1);
        s += i < ofob.actions.size() ? ofob.actions[i] : "";
        s += '\n';
    }
    s += "  peak  ";
    append_padded(s, number_text(gpipe.peak), w1);
    append_padded(s, number_text(ofob.peak), w2);
    s += "microbatches of activations alive at once\n\n";

    const std::string paragraph =
        "GPipe, every forward before any backward, is the order SimAI's workload row sweep "
        "produces for ga > 1: it keeps the activations of " +
        number_text(gpipe.peak) +
        " microbatches alive. 1F1B is Megatron's gradient accumulation without pipelining "
        "(forward_backward_no_pipelining, F0 B0 F1 B1): each backward frees its microbatch "
        "before the next forward, so it keeps " +
        number_text(ofob.peak) +
        ". Both compute the same gradients in the same time on one rank; only activation "
        "memory differs, and the gap grows with m (m=" +
        number_text(more) + ": " + number_text(gpipe_more) + " for GPipe, " +
        number_text(ofob_more) + " for 1F1B).";
    append_words(s, split_words(paragraph), 0, 0, demo_width);
    s += "\nThe user's own workload, as SimAI runs it and as a training framework runs it:\n\n";
    static constexpr std::string_view seed_workload =
#include "seed_workload.inc"
        ;
    s += simai_report("examples/workloads/simai_seed_tp2_ga2.txt (built in)", seed_workload,
                      pipesched::schedule_id::one_f_one_b, "text");
    s += '\n';
    s += "Next: pipesched simai examples/workloads/simai_seed_tp2_ga2.txt --format json\n"
         "      pipesched order --schedule 1F1B --ranks 4 --microbatches 8\n"
         "      pipesched compare --ranks 4 --microbatches 8\n"
         "      pipesched --help\n";
    return print_status(s);
}

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

bool is_help_flag(std::string_view arg) { return arg == "--help" || arg == "-h"; }

int dispatch(std::span<const std::string_view> args) {
    if (args.empty())
        return run_demo();
    const std::string_view first = args[0];
    const auto rest = args.subspan(1);

    if (is_help_flag(first) || first == "help") {
        // `pipesched help order` and `pipesched --help order` print one command's usage.
        if (rest.empty())
            return print_status(general_help());
        if (rest.size() > 1)
            fail("help takes at most one command, got " + quoted(rest[1]));
        const command_spec* cmd = find_command(rest[0]);
        if (cmd == nullptr)
            fail(unknown_command_message(rest[0]));
        return print_status(command_help(*cmd));
    }
    if (first == "--version") {
        if (!rest.empty())
            fail("--version takes no arguments, got " + quoted(rest[0]));
        std::string s{program_name};
        s += ' ';
        s += program_version;
        s += '\n';
        return print_status(s);
    }
    if (first.size() > 1 && first[0] == '-') {
        fail("unknown option " + quoted(first) + " (see 'pipesched --help')");
    }
    const command_spec* cmd = find_command(first);
    if (cmd == nullptr)
        fail(unknown_command_message(first));
    // Help anywhere among a command's arguments wins over everything else.
    if (std::any_of(rest.begin(), rest.end(), is_help_flag)) {
        return print_status(command_help(*cmd));
    }
    const parsed_args parsed{*cmd, rest};
    if (cmd->run == nullptr) // only `help` has none, and it is handled above
        throw std::logic_error{"no handler for command " + quoted(cmd->name)};
    return cmd->run(parsed);
}

void report(std::string_view message) {
    std::string line{program_name};
    line += ": ";
    line += message;
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
}

} // namespace

int main(int argc, char** argv) {
    try {
        std::vector<std::string_view> args;
        for (int i = 1; i < argc; ++i)
            args.emplace_back(argv[i]);
        return dispatch(args);
    } catch (const usage_error& e) {
        report(e.message);
        return exit_usage;
    } catch (const std::exception& e) {
        report(std::string{"internal error: "} + e.what());
        return exit_output_failed;
    } catch (...) {
        report("internal error");
        return exit_output_failed;
    }
}
