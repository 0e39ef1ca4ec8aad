// pipesched: the command-line front end of the library.
//
//   pipesched                       a short demonstration: why SimAI runs all forwards first
//   pipesched COMMAND [FLAGS]       order, check, simulate, compare, simai, chakra (one file each)
//   pipesched help [COMMAND] | --help | -h | --version
//
// This file holds the command table and dispatch; cli.hpp says how to add a subcommand.

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "progress.hpp"

namespace pipesched::cli {

namespace {
constexpr std::array<const command_spec*, 9> commands{
    &order_command, &check_command,   &simulate_command, &compare_command,
    &simai_command, &chakra_command,  &autoschedule_command, &plan_command, &help_command};
} // namespace

std::span<const command_spec* const> all_commands() { return commands; }

const command_spec* find_command(std::string_view name) {
    for (const command_spec* cmd : commands) {
        if (cmd->name == name)
            return cmd;
    }
    return nullptr;
}

std::string unknown_command_message(std::string_view name) {
    return "unknown command " + quoted(name) + " (see 'pipesched --help')";
}

namespace {

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
    // Work past a second shows its progress on a terminal (progress.hpp); the line is gone
    // before main() reports an error.
    const progress::session reporting{cmd->name};
    return cmd->run(parsed);
}

void report(std::string_view message) {
    std::string line{program_name};
    line += ": ";
    // One line whatever the message echoes from a file or the command line: no newline,
    // escape sequence or other control byte reaches the terminal.
    line += printable(message);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
}

} // namespace
} // namespace pipesched::cli

int main(int argc, char** argv) {
    using namespace pipesched::cli;
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
        return exit_internal;
    } catch (...) {
        report("internal error");
        return exit_internal;
    }
}
