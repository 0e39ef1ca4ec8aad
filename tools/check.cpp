// pipesched check
#include <filesystem>
#include <system_error>

#include <pipesched/analysis/simulate.hpp>
#include <pipesched/analysis/validate.hpp>
#include <pipesched/chakra/trace.hpp>
#include <pipesched/chakra/astra.hpp>
#include <pipesched/io/csv.hpp>

#include "chakra_files.hpp"
#include "cli.hpp"
#include "commands.hpp"

namespace pipesched::cli {
namespace {

constexpr std::array<flag_spec, 3> check_flags{{
    {"microbatches", "M", "microbatches the schedule must cover (default: one past the largest seen)", "",
     false},
    {"ranks", "P", "ranks the file must have, each running some compute action (default: its lines)", "",
     false},
    {"stages", "S", "stages the schedule must cover (default: one past the largest seen)", "", false},
}};

/// The Chakra traces PREFIX.0.et, PREFIX.1.et, ... as ASTRA-sim reads them, checked with
/// chakra::check_traces (chakra/astra.hpp).
int check_chakra(std::string_view prefix) {
    const std::size_t count = chakra_rank_files(prefix);
    // The check holds every rank's parsed trace at once (a few times the file's bytes), so the
    // set is bounded as a whole, not only each file (read_input's 64 MiB).
    constexpr std::uintmax_t max_set_bytes = std::uintmax_t{512} << 20;
    std::uintmax_t total = 0;
    for (std::size_t r = 0; r < count; ++r) {
        std::error_code ec;
        const std::uintmax_t size = std::filesystem::file_size(chakra_file(prefix, r), ec);
        total += ec ? 0 : size;
        if (total > max_set_bytes)
            fail(pipesched::cli::quoted(std::string{prefix}) + ": the first " + number_text(r + 1) +
                 " trace files already hold " + number_text(total) + " bytes, more than the 536870912 (512 MiB) " +
                 "'check' reads as one set; check fewer ranks");
    }
    std::vector<pipesched::chakra::trace> ranks;
    std::size_t nodes = 0;
    for (std::size_t r = 0; r < count; ++r) {
        ranks.push_back(read_chakra_file(chakra_file(prefix, r)));
        nodes += ranks.back().nodes.size();
    }
    for (std::size_t r = 0; r < count; ++r)
        require_peer_files(prefix, r, ranks[r], count);
    const pipesched::chakra::trace_check c = pipesched::chakra::check_traces(ranks);
    output_buffer out{stdout};
    if (c) {
        out.append("valid: " + number_text(ranks.size()) + " Chakra traces " + std::string{prefix} + ".{0.." +
                   number_text(ranks.size() - 1) + "}.et, " + number_text(nodes) +
                   " nodes, every receive matched by one send\n");
        return finish_output(out);
    }
    out.append("invalid: " + c.message + "\n");
    const int status = finish_output(out);
    return status == exit_ok ? exit_invalid : status;
}

/// The PREFIX of a FILE named PREFIX.<rank>.et, or of a FILE that does not exist while
/// FILE.0.et does (the prefix itself, as ASTRA-sim's --workload-configuration takes it).
std::optional<std::string> chakra_prefix(std::string_view path) {
    if (path.size() > 3 && path.substr(path.size() - 3) == ".et") {
        const std::string_view stem = path.substr(0, path.size() - 3);
        const std::size_t dot = stem.rfind('.');
        const std::string_view rank = dot == std::string_view::npos ? std::string_view{} : stem.substr(dot + 1);
        if (rank.empty() || rank.find_first_not_of("0123456789") != std::string_view::npos)
            fail(pipesched::cli::quoted(path) + ": a Chakra trace must be named PREFIX.<rank>.et, as ASTRA-sim reads them");
        return std::string{stem.substr(0, dot)};
    }
    if (path != "-" && !path.empty() && !std::filesystem::exists(std::string{path}) &&
        std::filesystem::exists(chakra_file(path, 0)))
        return std::string{path};
    return std::nullopt;
}

/// The `invalid: ...` text of a verdict on a file's compute actions. The library's wording,
/// except where a file can say more: the range an out_of_range action violated, and for a
/// missing action the rank that runs its stage, or that no rank does.
std::string invalid_text(const pipesched::verdict& v, std::span<const std::vector<pipesched::action>> compute,
                         std::uint64_t stages, std::uint32_t microbatches) {
    if (v.code == pipesched::verdict_code::out_of_range) {
        return "out_of_range: " + std::string{pipesched::format_action(v.subject).view()} + " at rank " +
               number_text(v.rank) + " index " + number_text(v.index) + " (stages 0-" + number_text(stages - 1) +
               ", microbatches 0-" + number_text(microbatches - 1) + ")";
    }
    if (v.code == pipesched::verdict_code::missing) {
        const std::uint32_t stage = v.subject.stage;
        std::string s = "missing: " + std::string{pipesched::format_action(v.subject).view()} + " never runs (";
        for (std::size_t r = 0; r < compute.size(); ++r) {
            for (const pipesched::action& a : compute[r]) {
                if (a.stage == stage)
                    return s + "stage " + number_text(stage) + " is on rank " + number_text(r) + ")";
            }
        }
        return s + "no rank runs stage " + number_text(stage) + ")";
    }
    return pipesched::describe(v);
}

/// Lines up to the last one that is not blank: the ranks of the file. Counted before parsing so
/// that millions of blank lines cannot make millions of empty ranks.
std::size_t rank_lines(std::string_view text) {
    std::size_t lines = 0;
    std::size_t last_nonblank = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        ++lines;
        const std::size_t newline = text.find('\n', pos);
        const std::size_t end = newline == std::string_view::npos ? text.size() : newline;
        std::string_view line = text.substr(pos, end - pos);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (!line.empty())
            last_nonblank = lines;
        pos = newline == std::string_view::npos ? text.size() : newline + 1;
    }
    return last_nonblank;
}

int report(output_buffer& out, std::string_view invalid) {
    out.append("invalid: ");
    out.append(invalid);
    out.put('\n');
    const int status = finish_output(out);
    return status == exit_ok ? exit_invalid : status;
}

} // namespace

/// The schedule of a PyTorch CSV file, parsed within the tool's limits (shared by check,
/// simulate --csv and compare --csv). Usage errors name the file, line and column.
loaded_csv load_csv(std::string_view path) {
    loaded_csv in{};
    in.label = path == "-" ? std::string{"standard input"} : file_label(path);
    std::string text = read_input(path);
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
        fail(in.label + ": line 1, column 1: a UTF-8 byte order mark (BOM); save the file without one");
    if (const std::size_t lines = rank_lines(text); lines > pipesched::max_ranks) {
        fail(in.label + ": " + number_text(lines) + " rank lines, more than the limit of " +
             number_text(pipesched::max_ranks) + " ranks");
    }
    pipesched::csv_result parsed = pipesched::read_csv(text);
    if (!parsed)
        fail(in.label + ": " + pipesched::describe(parsed.error));
    // What the file holds once parsed (csv_bytes_per_action): the text goes, and the table is
    // filtered in place instead of copied.
    std::string{}.swap(text);
    in.guess = pipesched::infer_placement(parsed.table);
    in.compute = pipesched::compute_only(std::move(parsed.table));
    for (const auto& rank : in.compute)
        in.actions += rank.size();
    return in;
}

std::string chakra_file(std::string_view prefix, std::size_t rank) {
    return std::string{prefix} + "." + number_text(rank) + ".et";
}

std::size_t chakra_rank_files(std::string_view prefix) {
    std::size_t count = 0;
    while (count <= pipesched::max_ranks && std::filesystem::exists(chakra_file(prefix, count)))
        ++count;
    if (count == 0)
        fail(pipesched::cli::quoted(chakra_file(prefix, 0)) + " does not exist: ASTRA-sim needs every rank from 0");
    return count;
}

pipesched::chakra::trace read_chakra_file(const std::string& file) {
    pipesched::chakra::read_result t = pipesched::chakra::read_trace(read_input(file));
    if (!t)
        fail(file_label(file) + ": " + t.error.what());
    return std::move(t.value);
}

void require_peer_files(std::string_view prefix, std::size_t rank, const pipesched::chakra::trace& t,
                        std::size_t ranks) {
    for (const pipesched::chakra::node& n : t.nodes) {
        const bool send = n.type == pipesched::chakra::node_type::comm_send;
        if (!send && n.type != pipesched::chakra::node_type::comm_recv)
            continue;
        const std::optional<std::uint64_t> peer = n.unsigned_attr(send ? "comm_dst" : "comm_src");
        if (peer && *peer >= ranks && *peer <= pipesched::max_ranks) {
            fail(pipesched::cli::quoted(chakra_file(prefix, ranks)) + " is missing: rank " + number_text(rank) +
                 ", node " + number_text(n.id) + " (" + printable(n.name) + ") " +
                 (send ? "sends to rank " : "receives from rank ") + number_text(*peer) + ", but the traces stop at " +
                 chakra_file(prefix, ranks - 1) + " (ASTRA-sim reads every PREFIX.<rank>.et from 0)");
        }
    }
}

namespace {

int run_check(const parsed_args& args) {
    if (const std::optional<std::string> prefix = chakra_prefix(args.positional()))
        return check_chakra(*prefix);
    // Flags first: a mistake in them is reported before the file is read.
    const std::uint32_t m = args.count("microbatches").value_or(0);
    const std::optional<std::uint32_t> ranks = args.count("ranks");
    const std::optional<std::uint32_t> stages = args.count("stages");
    if (ranks && *ranks > pipesched::max_ranks)
        fail("--ranks must be at most " + number_text(pipesched::max_ranks) + ", got " + number_text(*ranks));
    if (m > pipesched::max_microbatches) {
        fail("--microbatches must be at most " + number_text(pipesched::max_microbatches) + ", got " +
             number_text(m));
    }
    if (stages && *stages > max_stages)
        fail("--stages must be at most " + number_text(max_stages) + ", got " + number_text(*stages));

    const loaded_csv in = load_csv(args.positional());
    const pipesched::placement_guess& guess = in.guess;
    output_buffer out{stdout};
    if (in.actions == 0)
        return report(out, "no compute action (F, B, I or W) in the file");
    if (ranks && guess.ranks != *ranks) {
        return report(out, "the file has " + number_text(guess.ranks) + (guess.ranks == 1 ? " rank" : " ranks") +
                               ", --ranks says " + number_text(*ranks));
    }
    if (ranks) {
        for (std::size_t r = 0; r < in.compute.size(); ++r) {
            if (in.compute[r].empty())
                return report(out, "rank " + number_text(r) + " runs no compute action");
        }
    }
    // Stage numbers the library cannot place (more than ranks x chunks) are out of range here,
    // before validate() counts stages up to the largest one it sees.
    const std::uint64_t stage_count = stages ? *stages : std::min<std::uint64_t>(guess.stages, max_stages);
    const std::uint32_t mb_count = m != 0 ? m : guess.microbatches;
    for (std::size_t r = 0; r < in.compute.size(); ++r) {
        for (std::size_t i = 0; i < in.compute[r].size(); ++i) {
            const pipesched::action& a = in.compute[r][i];
            if (pipesched::is_compute(a.kind) && a.stage >= stage_count) {
                pipesched::verdict v{};
                v.code = pipesched::verdict_code::out_of_range;
                v.rank = static_cast<std::uint32_t>(r);
                v.index = static_cast<std::uint32_t>(i);
                v.subject = a;
                return report(out, invalid_text(v, in.compute, stage_count, mb_count));
            }
        }
    }
    const pipesched::placement layout = pipesched::placement_of(guess.layout);
    const pipesched::verdict v =
        pipesched::validate(in.compute, m, static_cast<std::uint32_t>(stages.value_or(0)), layout);
    if (!v)
        return report(out, invalid_text(v, in.compute, stage_count, mb_count));
    // Valid: the activations each rank holds at its peak, from the order alone.
    pipesched::discard_timeline none{};
    const pipesched::simulation sim = pipesched::simulate(in.compute, pipesched::cost_model{}, none, m, layout);
    std::string s = "valid: " + number_text(guess.ranks) + " ranks, " + number_text(stage_count) + " stages, " +
                    number_text(mb_count) + " microbatches, " + number_text(in.actions) +
                    " compute actions, placement " + std::string{pipesched::to_string(guess.layout)} + "\n";
    s += "peak activations per rank (chunk activations):";
    for (const pipesched::rank_summary& r : sim.ranks)
        s += " " + number_text(r.peak_activations);
    s += '\n';
    out.append(s);
    return finish_output(out);
}

} // namespace

const command_spec check_command{"check", "validate a schedule read from PyTorch CSV (FILE, or - for standard input)",
     "Reads FILE as torch.distributed.pipelining's schedule CSV (one line per rank, compute and\n"
     "communication actions, empty cells idle) and validates its compute actions: each (stage,\n"
     "microbatch) has one F and one B (or I and W), in order, each stage on one rank, overlapped\n"
     "pairs (F;B)OVERLAP_F_B an F and a B or I of another unit, and no deadlock when a rank blocks\n"
     "at its next action until its input exists. Prints 'valid: ...' and the peak activations of\n"
     "each rank (exit 0), or 'invalid: <reason>' naming the rank, position and action (exit 1).\n"
     "An unreadable or malformed file, or one beyond the limits (64 MiB, 65535 ranks), is exit 2\n"
     "with its line and column.\n"
     "A FILE named PREFIX.<rank>.et, or a PREFIX (as ASTRA-sim's --workload-configuration takes it)\n"
     "for which PREFIX.0.et exists, is read as Chakra execution traces instead: every PREFIX.<r>.et\n"
     "from r = 0 is read and checked for what ASTRA-sim needs (unique node ids, existing and\n"
     "acyclic dependencies, typed attributes, each receive matched by one send); a rank file that\n"
     "a node sends to or receives from but that does not exist is named as missing (exit 2).",
     check_flags, run_check, "FILE"};

} // namespace pipesched::cli
