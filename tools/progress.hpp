// pipesched tool: progress of long work, on standard error.
//
// The tool bounds a command by the memory it will hold (require_within_budget), not by the
// work it does: a shape that fits may replay billions of actions or write a trace of many
// gigabytes. Work that runs longer than a second shows what it is doing and how far it got on
// one line of stderr, rewritten in place, and erased when the command ends; only when stderr is
// a terminal, so that pipes, files and the tests see exactly what they saw before.
//
// PIPESCHED_PROGRESS changes that: `never`; `always` (also when stderr is not a terminal,
// after one second); or a number of seconds after which it shows, terminal or not (`0`: from
// the start). When stderr is not a terminal each report is a line of its own, and the last
// one says "done", so that a test can read it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pipesched::cli::progress {

/// One command's progress reporting, from start to end (main.cpp holds one around the
/// command). Starts the reporter thread only when progress may show.
class session {
public:
    explicit session(std::string_view command);
    ~session();
    session(const session&) = delete;
    session& operator=(const session&) = delete;
};

/// What the command is doing now ("replaying 1F1B p=1024 m=65536 v=1"), and how many `unit`
/// it will have done when it is finished (0: not known, only the time is shown). Resets the
/// count of advance().
void task(std::string text, std::uint64_t total = 0, std::string_view unit = {});
/// `n` more of the current task's units are done. Cheap (one relaxed atomic add): a caller may
/// call it per action.
void advance(std::uint64_t n = 1) noexcept;
/// `bytes` more of the output are written (output_buffer::flush).
void wrote(std::uint64_t bytes) noexcept;
/// Erases the progress line when standard output is the same terminal, before output is
/// written to it (output_buffer::flush); the next report draws it again.
void before_output();

} // namespace pipesched::cli::progress
