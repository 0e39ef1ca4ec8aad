// Definitions of the tool's shared helpers (cli.hpp).
#include "cli.hpp"

#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
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

parsed_args::parsed_args(const command_spec& cmd, std::span<const std::string_view> args) : command_{&cmd} {
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
    if (v.code == pipesched::verdict_code::time_overflow)
        fail("--cost: the " + key + " costs of " + std::string{schedule} +
             " add up beyond the largest finite time (about 1.8e308): " + pipesched::describe(v));
    fail("--cost: " + key + " is not usable for " + std::string{schedule} + ": " + pipesched::describe(v));
}

} // namespace pipesched::cli

