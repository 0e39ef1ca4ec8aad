// libFuzzer target: read_csv on arbitrary bytes. An accepted input must survive
// write_csv -> read_csv unchanged; a rejected one must point at a real line and column.
// Accepted tables also go through compute_only, infer_placement and validate.
#include <pipesched/analysis/validate.hpp>
#include <pipesched/io/csv.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void require(bool condition) {
    if (!condition) std::abort();
}

/// Length of line `line` (1-based) of `text`, without its '\n'; npos if there is no such line.
std::size_t line_length(std::string_view text, std::size_t line) {
    std::size_t start = 0;
    for (std::size_t l = 1; l < line; ++l) {
        const std::size_t nl = text.find('\n', start);
        if (nl == std::string_view::npos) return std::string_view::npos;
        start = nl + 1;
    }
    const std::size_t nl = text.find('\n', start);
    return (nl == std::string_view::npos ? text.size() : nl) - start;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text{reinterpret_cast<const char*>(data), size};
    const pipesched::csv_result first = pipesched::read_csv(text);
    if (!first) {
        const pipesched::csv_error& e = first.error;
        require(e.code != pipesched::csv_errc::none);
        require(!e.message.empty());
        require(first.table.ranks.empty());
        if (e.code == pipesched::csv_errc::no_ranks) {
            require(e.line == 1 && e.column == 1);
        } else {
            const std::size_t length = line_length(text, e.line);
            require(e.line >= 1 && length != std::string_view::npos);
            require(e.column >= 1 && e.column <= length + 1);
            require(e.cell >= 1);
        }
        return 0;
    }
    require(!first.table.ranks.empty());
    const std::string written = pipesched::write_csv(first.table);
    const pipesched::csv_result second = pipesched::read_csv(written);
    require(static_cast<bool>(second));
    require(second.table == first.table);
    require(pipesched::write_csv(second.table) == written);

    // The analyses must accept whatever read_csv accepts.
    const auto compute = pipesched::compute_only(first.table);
    require(compute.size() == first.table.ranks.size());
    const pipesched::placement_guess g = pipesched::infer_placement(first.table);
    require(g.ranks == first.table.ranks.size());
    require(g.layout == pipesched::inferred_placement::custom || g.chunks * g.ranks == g.stages);

    // validate() allocates stages x microbatches; a valid schedule has at least that many
    // compute actions, so larger tables are skipped (they could only be `missing`).
    std::size_t compute_actions = 0;
    for (const auto& row : compute) compute_actions += row.size();
    if (g.stages > 0 && g.stages * g.microbatches <= compute_actions) {
        const pipesched::verdict v =
            pipesched::validate(compute, g.microbatches, static_cast<std::uint32_t>(g.stages));
        require(!pipesched::describe(v).empty());
        if (v && g.layout == pipesched::inferred_placement::custom) {
            // A valid schedule runs every stage on one rank: the owner table is complete.
            for (const std::size_t owner : g.owners) {
                require(owner < g.ranks);
            }
        }
    }
    return 0;
}
