// Definitions of the tool's shared helpers (cli.hpp).
#include "cli.hpp"

#include <cerrno>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace pipesched::cli {

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

void append_words(std::string& s, std::span<const std::string> words, std::size_t column,
                  std::size_t indent, std::size_t width) {
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

std::string printable(std::string_view text) {
    constexpr std::string_view hex = "0123456789abcdef";
    std::string s;
    s.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7F) {
            s += "\\x";
            s += hex[byte >> 4];
            s += hex[byte & 0xF];
        } else {
            s += c;
        }
    }
    return s;
}

parsed_args::parsed_args(const command_spec& cmd, std::span<const std::string_view> args) : command_{&cmd} {
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        if (arg == "--" && !cmd.trailing.empty()) {
            trailing_.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
            break;
        }
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

std::optional<std::string_view> parsed_args::get(std::string_view name) const {
    for (const auto& [spec, value] : given_) {
        if (spec->name == name)
            return value;
    }
    return std::nullopt;
}

std::optional<std::uint32_t> parsed_args::count(std::string_view name) const {
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


std::string parsed_args::full_name() const {
    return std::string{program_name} + " " + std::string{command_->name};
}

const flag_spec* parsed_args::find(std::string_view name) const {
    for (const flag_spec& spec : command_->flags) {
        if (spec.name == name)
            return &spec;
    }
    return nullptr;
}
std::string parsed_args::see_help() const { return " (see '" + full_name() + " --help')"; }


std::string schedule_names() {
    std::string s;
    for (const pipesched::schedule_info& info : pipesched::schedules) {
        if (!s.empty())
            s += ", ";
        s += pipesched::display_name(info);
    }
    return s;
}

pipesched::placement schedule_layout(pipesched::schedule_id id) { return pipesched::info(id).layout; }

std::uint32_t required_chunks(pipesched::schedule_id id) {
    return pipesched::default_chunks(pipesched::info(id).chunks);
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
    req.options.shape.ranks = args.count("ranks").value_or(1);
    req.options.shape.microbatches = args.count("microbatches").value_or(1);
    // --chunks defaults to 2 for every multi-chunk schedule (interleaved, looped, V), else 1.
    req.options.shape.chunks = args.count("chunks").value_or(required_chunks(req.id));
    if (const auto g = args.count("group-size")) {
        if (req.id != pipesched::schedule_id::interleaved_1f1b &&
            req.id != pipesched::schedule_id::interleaved_combined_1f1b) {
            fail("--group-size applies only to " +
                 std::string{
                     pipesched::info(pipesched::schedule_id::interleaved_1f1b).pytorch_name} +
                 " and " +
                 std::string{pipesched::display_name(pipesched::info(pipesched::schedule_id::interleaved_combined_1f1b))} +
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

std::string file_label(std::string_view path) {
    const bool plain = !path.empty() && std::all_of(path.begin(), path.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte >= 0x20 && byte < 0x7F && c != '\'' && c != '\\';
    });
    return plain ? std::string{path} : quoted(path);
}

namespace {
std::string os_reason(int error) {
    return error != 0 ? std::string{std::strerror(error)} : std::string{"read error"};
}
} // namespace

namespace {
template <class P>
std::uint64_t policy_build_bytes(const pipesched::shape& s) {
    if constexpr (requires { P::build_bytes(s); P::check_shape(s); })
        return P::check_shape(s) ? P::build_bytes(s) : 0;
    else
        return 0;
}

template <class... Entries>
std::uint64_t catalog_build_bytes(pipesched::detail::catalog_list<Entries...>, pipesched::schedule_id id,
                                  const pipesched::shape& s) {
    std::uint64_t bytes = 0;
    ((bytes = Entries::id == id ? policy_build_bytes<typename Entries::policy>(s) : bytes), ...);
    return bytes;
}

std::string shape_text(const pipesched::shape& s) {
    return "ranks=" + number_text(s.ranks) + " chunks=" + number_text(s.chunks) +
           " microbatches=" + number_text(s.microbatches);
}
} // namespace

std::uint64_t schedule_build_bytes(pipesched::schedule_id id, const pipesched::shape& s) {
    return catalog_build_bytes(pipesched::detail::catalog{}, id, s);
}

void require_within_budget(const resource_estimate& e, std::string_view what, std::string_view advice) {
    const pipesched::shape& s = e.shape;
    if (!pipesched::check_common(s))
        return; // beyond the event's fields: the policy refuses it, naming the field
    const std::uint64_t units = std::uint64_t{s.ranks} * s.chunks * s.microbatches; // < 2^40
    // units * bytes_per_unit < 2^40 * 2^15 and build_bytes < 2^40: no overflow.
    const std::uint64_t bytes = units * e.bytes_per_unit + e.build_bytes;
    if (bytes > memory_budget) {
        const std::uint64_t gib = (bytes + (std::uint64_t{1} << 30) - 1) >> 30;
        std::string figures = number_text(units) + " (stage, microbatch) units of " + number_text(e.bytes_per_unit) +
                              (e.bytes_per_unit == 1 ? " byte" : " bytes");
        if (e.build_bytes != 0)
            figures += ", and " + number_text((e.build_bytes + (std::uint64_t{1} << 20) - 1) >> 20) +
                       " MiB to build the schedule";
        fail(std::string{what} + " needs about " + number_text(gib) + " GiB for " + shape_text(s) + " (" + figures +
             "), more than the tool's " + number_text(memory_budget >> 30) + " GiB: " + std::string{advice});
    }
}

std::string read_input(std::string_view path) {
    const bool standard_input = path == "-";
    const std::string name = standard_input ? std::string{"standard input"} : file_label(path);
    std::FILE* file = standard_input ? stdin : std::fopen(std::string{path}.c_str(), "rb");
    if (file == nullptr)
        fail("cannot open " + name + ": " + os_reason(errno));
    std::string text;
    // A regular file's size is known: one allocation instead of doubling, which held up to
    // twice the text (and three times while it was copied).
    std::error_code size_error;
    if (const std::uintmax_t size = standard_input ? 0 : std::filesystem::file_size(std::string{path}, size_error);
        !size_error && size <= max_input_bytes)
        text.reserve(static_cast<std::size_t>(size));
    std::array<char, 1 << 16> block{};
    int error = 0;
    bool too_large = false;
    for (;;) {
        errno = 0;
        const std::size_t n = std::fread(block.data(), 1, block.size(), file);
        if (text.size() + n > max_input_bytes) {
            too_large = true;
            break;
        }
        text.append(block.data(), n);
        if (n < block.size()) {
            if (std::ferror(file) != 0)
                error = errno != 0 ? errno : EIO;
            break;
        }
    }
    if (!standard_input)
        std::fclose(file);
    if (too_large)
        fail(name + " is larger than the input limit of " + number_text(max_input_bytes >> 20) + " MiB");
    if (error != 0)
        fail("cannot read " + name + ": " + os_reason(error));
    return text;
}

void write_output(const std::string& path, std::string_view bytes) {
    errno = 0;
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr)
        fail("cannot write " + file_label(path) + ": " + os_reason(errno != 0 ? errno : EIO));
    errno = 0;
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
    int error = written ? 0 : (errno != 0 ? errno : EIO);
    errno = 0;
    if (std::fclose(file) != 0 && error == 0)
        error = errno != 0 ? errno : EIO;
    if (error != 0)
        fail("cannot write " + file_label(path) + ": " + os_reason(error));
}

decimal read_decimal(std::string_view text) {
    decimal d{};
    double x = 0.0;
    const char* const last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(text.data(), last, x);
    if (text.empty() || end != last || (ec != std::errc{} && ec != std::errc::result_out_of_range))
        return d;
    if (ec == std::errc::result_out_of_range) {
        // strtod tells an overflow (HUGE_VAL) from an underflow (0 or a denormal).
        const std::string copy{text};
        x = std::strtod(copy.c_str(), nullptr);
        if (std::isinf(x)) {
            d.state = decimal::status::overflow;
            return d;
        }
        if (x == 0.0) {
            d.state = decimal::status::underflow;
            return d; // value 0
        }
    }
    if (!std::isfinite(x))
        return d; // "inf", "nan"
    d.value = x == 0.0 ? 0.0 : x; // -0 is 0
    d.state = decimal::status::ok;
    return d;
}

std::string decimal_problem(const decimal& d) {
    switch (d.state) {
    case decimal::status::ok: return {};
    case decimal::status::underflow:
        return "underflows to 0 (the smallest positive number is 4.9406564584124654e-324)";
    case decimal::status::overflow: return "is too large (the largest finite number is 1.7976931348623157e308)";
    case decimal::status::invalid: return "is not a number";
    }
    return "is not a number";
}

void warn(std::string_view message) {
    const std::string line = "pipesched: warning: " + printable(message) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
}

double read_nonnegative(std::string_view what, std::string_view value) {
    const decimal d = read_decimal(value);
    if (d.state == decimal::status::overflow)
        fail(std::string{what} + " value " + quoted(value) + " " + decimal_problem(d));
    if (d.state == decimal::status::invalid || d.value < 0.0)
        fail(std::string{what} + " needs a finite number >= 0, got " + quoted(value));
    if (d.state == decimal::status::underflow)
        warn(std::string{what} + " value " + quoted(value) + " " + decimal_problem(d) + "; read as 0");
    return d.value;
}

void read_key_values(std::string_view where, std::string_view text, std::span<const std::string_view> keys,
                     const std::function<void(std::size_t, double)>& set) {
    if (text.empty())
        fail(std::string{where} + ": empty");
    std::vector<bool> seen(keys.size(), false);
    std::string_view rest = text;
    while (true) {
        const std::size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        const std::size_t eq = item.find('=');
        if (eq == std::string_view::npos)
            fail(std::string{where} + ": expected KEY=VALUE, got " + quoted(item));
        const std::string_view key = item.substr(0, eq);
        const auto known = std::find(keys.begin(), keys.end(), key);
        if (known == keys.end()) {
            std::string list;
            for (const std::string_view k : keys)
                list += (list.empty() ? "" : ", ") + std::string{k};
            fail(std::string{where} + ": unknown key " + quoted(key) + " (expected " + list + ")");
        }
        const auto k = static_cast<std::size_t>(known - keys.begin());
        if (seen[k])
            fail(std::string{where} + ": " + std::string{key} + " given twice in " + quoted(text));
        seen[k] = true;
        set(k, read_nonnegative(std::string{where} + ": " + std::string{key}, item.substr(eq + 1)));
        if (comma == std::string_view::npos)
            break;
        rest = rest.substr(comma + 1);
        if (rest.empty())
            fail(std::string{where} + ": trailing comma in " + quoted(text));
    }
}

cost_request read_costs(const parsed_args& args) {
    cost_request c{};
    const auto text = args.get("cost");
    if (!text)
        return c;
    static constexpr std::array<std::string_view, 11> keys{"F",          "B",          "I",         "W",
                                                           "p2p",        "F_dispatch", "F_combine", "B_dispatch",
                                                           "B_combine",  "attention",  "slowdown"};
    pipesched::stage_costs& r = c.per_rank;
    double* const fields[] = {&r.forward,          &r.backward,        &r.backward_input,  &r.backward_weight,
                              &c.p2p,              &r.forward_dispatch, &r.forward_combine, &r.backward_dispatch,
                              &r.backward_combine, &r.attention_share, &r.overlap_slowdown};
    read_key_values("--cost", *text, keys, [&](std::size_t k, double x) {
        if (keys[k] == "attention" && x > 1.0)
            fail("--cost: attention is the share of a chunk's compute before its dispatch, from 0 to 1; got " +
                 fixed(x, 6));
        if (keys[k] == "slowdown" && x < 1.0)
            fail("--cost: slowdown multiplies the compute that runs beside all-to-all and must be at least 1; got " +
                 fixed(x, 6));
        *fields[k] = x;
    });
    return c;
}

pipesched::cost_model cost_model_for(const cost_request& c, std::uint32_t chunks) {
    pipesched::cost_model m{};
    const double share = 1.0 / static_cast<double>(chunks);
    const pipesched::stage_costs& r = c.per_rank;
    m.uniform = {r.forward * share, r.backward * share, r.backward_input * share, r.backward_weight * share};
    m.uniform.forward_dispatch = r.forward_dispatch * share;
    m.uniform.forward_combine = r.forward_combine * share;
    m.uniform.backward_dispatch = r.backward_dispatch * share;
    m.uniform.backward_combine = r.backward_combine * share;
    m.uniform.attention_share = r.attention_share;
    m.uniform.overlap_slowdown = r.overlap_slowdown;
    m.p2p_latency = c.p2p;
    return m;
}

std::string fixed(double x, int decimals) {
    // 309 integer digits for the largest double, the point and the decimals: 512 always fits,
    // so the raw buffer is never printed after a failed conversion (it once was, with 64).
    std::array<char, 512> buffer{};
    const auto r = std::to_chars(buffer.data(), buffer.data() + buffer.size(), x, std::chars_format::fixed, decimals);
    if (r.ec != std::errc{})
        throw std::logic_error{"number formatting failed"};
    return std::string{buffer.data(), r.ptr};
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

int print_status(std::string_view text) {
    if (print(text))
        return exit_ok;
    std::fputs("pipesched: error writing the output\n", stderr);
    return exit_output_failed;
}

[[noreturn]] void fail_simulation(std::string_view schedule, const pipesched::verdict& v) {
    if (v.code != pipesched::verdict_code::invalid_cost && v.code != pipesched::verdict_code::time_overflow)
        throw std::logic_error{"a library schedule failed validation: " + pipesched::describe(v)};
    std::string key = "p2p";
    switch (v.subject.kind) {
    case pipesched::op::forward: key = "F"; break;
    case pipesched::op::backward: key = "B"; break;
    case pipesched::op::backward_input: key = "I"; break;
    case pipesched::op::backward_weight: key = "W"; break;
    default: break;
    }
    // An action whose start is not finite waited for an input whose arrival overflowed: the
    // producer's end is finite (checked when it ran), so the p2p cost on top of it overflowed.
    if (v.code == pipesched::verdict_code::time_overflow && !std::isfinite(v.cost))
        key = "p2p";
    if (v.code == pipesched::verdict_code::time_overflow)
        fail("--cost: the " + key + " costs of " + std::string{schedule} +
             " add up beyond the largest finite time (about 1.8e308): " + pipesched::describe(v));
    fail("--cost: " + key + " is not usable for " + std::string{schedule} + ": " + pipesched::describe(v));
}

} // namespace pipesched::cli

