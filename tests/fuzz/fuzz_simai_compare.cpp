// libFuzzer target: simai::compare (SimAI's order against a corrected one) on whatever
// parse_workload accepts, not only the parser. Shapes are bounded (pp and ga at most 64, 512
// rows) so that one input stays fast; the tool refuses larger ones with its own limits.
#include <pipesched/catalog.hpp>
#include <pipesched/simai/compare_catalog.hpp>
#include <pipesched/simai/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

namespace sm = pipesched::simai;

void require(bool condition) {
    if (!condition) std::abort();
}

bool finite(double x) { return x >= 0.0 && x <= 1.7976931348623157e308; }

void require_report(const sm::order_report& r) {
    require(finite(r.makespan_ns) && finite(r.compute_ns) && finite(r.exposed_grad_sync_ns));
    require(!pipesched::describe(r.check).empty());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text{reinterpret_cast<const char*>(data), size};
    const sm::parse_result parsed = sm::parse_workload(text);
    if (!parsed) return 0;
    const sm::workload& w = parsed.value;
    if (w.header.ga > 64 || w.header.pp > 64 || w.rows.size() > 512) return 0;
    // One schedule per input, chosen by its length, so that every schedule gets fuzzed.
    const auto id = pipesched::schedules[size % pipesched::schedules.size()].id;
    const sm::comparison c = sm::compare(w, id);
    require(c.ga >= 1 && c.pp >= 1);
    require(c.forward_ns.size() == c.ga && c.backward_ns.size() == c.ga);
    require_report(c.simai);
    require_report(c.corrected);
    for (const sm::ordering_problem& p : c.problems) require(!p.what.empty());
    return 0;
}
