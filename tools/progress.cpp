// pipesched tool: progress of long work on standard error (progress.hpp says when it shows).
#include "progress.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <unistd.h>

#include "cli.hpp"

namespace pipesched::cli::progress {
namespace {

using clock = std::chrono::steady_clock;

/// How often a shown line is rewritten.
constexpr std::chrono::milliseconds interval{500};

/// The reporter's state: one per process, since one command runs per process.
struct reporter {
    std::mutex mutex;
    std::condition_variable wake;
    std::thread thread;
    bool running = false;  ///< a thread was started (under mutex)
    bool stopping = false; ///< under mutex
    bool terminal = false; ///< stderr is a terminal: rewrite one line in place
    bool shown = false;    ///< a line is on the terminal now (under mutex)
    bool stdout_shares_terminal = false;
    std::string command;
    std::string task;      ///< under mutex
    std::string unit;      ///< under mutex
    std::uint64_t total = 0; ///< under mutex
    std::atomic<std::uint64_t> done{0};
    std::atomic<std::uint64_t> written{0};
    clock::time_point start{};
    clock::duration delay{};
};

reporter& state() {
    static reporter r;
    return r;
}

/// "1.2 GB" and the like (decimal units, as disks and `ls -h --si` count).
std::string bytes_text(std::uint64_t b) {
    const double x = static_cast<double>(b);
    if (b < 1000)
        return number_text(b) + " bytes";
    if (b < 1000000)
        return fixed(x / 1e3, 1) + " kB";
    return b < 1000000000 ? fixed(x / 1e6, 1) + " MB" : fixed(x / 1e9, 1) + " GB";
}

/// The report line (under mutex), without a line end.
std::string line(reporter& r, bool finished) {
    std::string s = std::string{program_name} + " " + r.command + ": ";
    s += r.task.empty() ? std::string{"working"} : r.task;
    const std::uint64_t done = r.done.load(std::memory_order_relaxed);
    if (r.total != 0) {
        const std::uint64_t percent = done >= r.total ? 100 : done * 100 / r.total;
        s += ", " + number_text(done) + " of " + number_text(r.total) + " " + r.unit + " (" + number_text(percent) +
             " %)";
    }
    if (const std::uint64_t w = r.written.load(std::memory_order_relaxed); w != 0)
        s += ", " + bytes_text(w) + " written";
    const double seconds = std::chrono::duration<double>(clock::now() - r.start).count();
    s += ", " + fixed(seconds, 1) + " s";
    if (finished)
        s += ", done";
    return printable(s);
}

void show(reporter& r, bool finished) {
    std::string s = line(r, finished);
    // On a terminal the line is rewritten in place (\r, then erase to its end); elsewhere each
    // report is a line of its own.
    s = r.terminal ? "\r" + s + "\x1b[K" : s + "\n";
    std::fwrite(s.data(), 1, s.size(), stderr);
    std::fflush(stderr);
    r.shown = r.terminal;
}

void erase(reporter& r) {
    if (!r.shown)
        return;
    std::fwrite("\r\x1b[K", 1, 4, stderr);
    std::fflush(stderr);
    r.shown = false;
}

void run(reporter& r) {
    std::unique_lock lock{r.mutex};
    clock::time_point next = r.start + r.delay;
    while (!r.wake.wait_until(lock, next, [&] { return r.stopping; })) {
        show(r, false);
        next = clock::now() + interval;
    }
}

/// When progress shows: the delay, or nothing (never). PIPESCHED_PROGRESS as progress.hpp says;
/// a value it does not know is ignored (the default), since a mistyped variable must not break
/// a command.
std::optional<clock::duration> configured_delay(bool terminal) {
    const char* env = std::getenv("PIPESCHED_PROGRESS");
    const std::string_view v = env == nullptr ? std::string_view{} : std::string_view{env};
    if (v == "never")
        return std::nullopt;
    if (v == "always")
        return std::chrono::seconds{1};
    if (!v.empty()) {
        if (const decimal d = read_decimal(v); d.state == decimal::status::ok && d.value >= 0 && d.value <= 86400)
            return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(d.value));
    }
    if (!terminal)
        return std::nullopt;
    return std::chrono::seconds{1};
}

} // namespace

session::session(std::string_view command) {
    reporter& r = state();
    r.terminal = isatty(STDERR_FILENO) == 1;
    const std::optional<clock::duration> delay = configured_delay(r.terminal);
    if (!delay)
        return;
    r.stdout_shares_terminal = r.terminal && isatty(STDOUT_FILENO) == 1;
    r.command = std::string{command};
    r.start = clock::now();
    r.delay = *delay;
    r.running = true;
    r.thread = std::thread{[&r] { run(r); }};
}

session::~session() {
    reporter& r = state();
    if (!r.running)
        return;
    {
        std::lock_guard lock{r.mutex};
        r.stopping = true;
    }
    r.wake.notify_all();
    r.thread.join();
    // Off a terminal, a command that ran past the delay ends with a "done" line, unless it is
    // ending with an error (which main() reports next); on one, the line goes away.
    if (r.terminal)
        erase(r);
    else if (std::uncaught_exceptions() == 0 && clock::now() - r.start >= r.delay)
        show(r, true);
    r.running = false;
}

void task(std::string text, std::uint64_t total, std::string_view unit) {
    reporter& r = state();
    if (!r.running)
        return;
    std::lock_guard lock{r.mutex};
    r.task = std::move(text);
    r.total = total;
    r.unit = std::string{unit};
    r.done.store(0, std::memory_order_relaxed);
}

void advance(std::uint64_t n) noexcept { state().done.fetch_add(n, std::memory_order_relaxed); }

void wrote(std::uint64_t bytes) noexcept { state().written.fetch_add(bytes, std::memory_order_relaxed); }

void before_output() {
    reporter& r = state();
    if (!r.running || !r.stdout_shares_terminal)
        return;
    std::lock_guard lock{r.mutex};
    erase(r);
}

} // namespace pipesched::cli::progress
