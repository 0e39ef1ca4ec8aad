// The subcommands of the `pipesched` tool, one file each, and what they share with each other.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <pipesched/catalog.hpp>
#include <pipesched/simai/analytical_network.hpp>

#include "cli.hpp"

namespace pipesched::cli {

extern const command_spec order_command;    // order.cpp
extern const command_spec check_command;    // check.cpp
extern const command_spec simulate_command; // simulate.cpp
extern const command_spec compare_command;  // compare.cpp
extern const command_spec simai_command;    // simai.cpp
extern const command_spec autoschedule_command; // autoschedule.cpp
extern const command_spec chakra_command;   // chakra.cpp
extern const command_spec plan_command;     // plan.cpp
extern const command_spec help_command;     // help.cpp

/// Every command, in the order `pipesched --help` lists them (main.cpp).
std::span<const command_spec* const> all_commands();
const command_spec* find_command(std::string_view name);
std::string unknown_command_message(std::string_view name);

/// The `simai` report (text or JSON) of a workload file's contents (simai.cpp; the demo shows
/// it for the built-in workload); `full`: the text lists every step of SimAI's order.
std::string simai_report(std::string_view source, std::string_view text, pipesched::schedule_id policy,
                         std::string_view format, const pipesched::simai::analytical_options& network = {},
                         bool full = false);

/// `pipesched --help` and `pipesched help COMMAND` (help.cpp).
std::string general_help();
std::string command_help(const command_spec& cmd);

/// The demonstration run with no arguments (demo.cpp).
int run_demo();

} // namespace pipesched::cli
