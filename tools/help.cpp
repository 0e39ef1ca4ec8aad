// pipesched help

#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

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
    if (!cmd.trailing.empty())
        tokens.push_back("[-- " + std::string{cmd.trailing} + "]");
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
        // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on `"--" + string`.
        std::string left = "--";
        left += f.name;
        if (!f.value_name.empty()) {
            left += ' ';
            left += f.value_name;
        }
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
    s += "Schedules (--schedule): case, '-', '_' and spaces are ignored; chunks: per rank without\n"
         "--chunks ('any': --chunks V takes any count)\n";
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
        const bool two = schedule_layout(info.id) != pipesched::placement::loop;
        append_padded(s, two ? "2" : info.multi_chunk ? "2, any" : "1", 8);
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
    "  0  success (check: the schedule is valid)\n"
    "  1  check: the schedule is invalid (the reason is printed on stdout); autoschedule, plan: no\n"
    "     schedule fits the memory (autoschedule: the reason on stderr; plan: in its report)\n"
    "  2  usage error (unknown command or flag, missing or malformed value, unknown schedule),\n"
    "     a shape the schedule rejects, an unreadable, malformed or too large input file, or an\n"
    "     output that could not be written; the reason is one line on stderr starting 'pipesched: '\n"
    "  3  internal error (a bug in pipesched)\n";

} // namespace

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
    for (const command_spec* cmd : all_commands())
        width = std::max(width, cmd->name.size());
    for (const command_spec* cmd : all_commands()) {
        s += "  ";
        append_padded(s, cmd->name, width + 2);
        s += cmd->summary;
        s += '\n';
    }
    for (const command_spec* cmd : all_commands()) {
        if (cmd->flags.empty())
            continue;
        s += '\n';
        append_usage(s, "", *cmd);
        s += cmd->description;
        s += "\n\n";
        append_flags(s, *cmd);
    }
    s += '\n';
    append_schedules(s);
    s += '\n';
    s += exit_status_text;
    return s;
}

constexpr std::array<flag_spec, 0> no_flags{};

const command_spec help_command{"help", "print this help, or one command's usage: pipesched help [COMMAND]",
                                "Prints the help of pipesched, or the usage of COMMAND.", no_flags, nullptr};

} // namespace pipesched::cli
