// libFuzzer target: simai::parse_workload on arbitrary bytes. An accepted input must survive
// write_workload -> parse_workload unchanged, and SimAI's order and the structure analysis must
// accept it; a rejected one must carry an error code, point at a line of the input (or at none)
// and leave no value.
#include <pipesched/simai/order.hpp>
#include <pipesched/simai/parse.hpp>
#include <pipesched/simai/structure.hpp>
#include <pipesched/simai/write.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

namespace sm = pipesched::simai;

void require(bool condition) {
    if (!condition)
        std::abort();
}

/// Number of lines of `text` as the parser counts them (a final '\n' ends the last line),
/// plus one for the "missing line after the end" errors.
std::size_t line_limit(std::string_view text) {
    std::size_t lines = 0;
    for (const char c : text)
        lines += c == '\n' ? 1 : 0;
    if (!text.empty() && text.back() != '\n')
        ++lines;
    return lines + 1;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text{reinterpret_cast<const char*>(data), size};
    const sm::parse_result first = sm::parse_workload(text);
    if (!first) {
        const sm::parse_error& e = *first.error;
        require(!e.message.empty());
        require(e.code != sm::parse_errc::none);
        require(!sm::describe(e.code).empty());
        require(e.line <= line_limit(text));
        require(e.field <= sm::row_fields + 1 || e.line == 1);
        require(first.value == sm::workload{});
        return 0;
    }
    const sm::workload& w = first.value;
    require(!w.rows.empty());
    require(w.header.pp >= 1 && w.header.ga >= 1);

    const std::string written = sm::write_workload(w);
    const sm::parse_result second = sm::parse_workload(written);
    require(static_cast<bool>(second));
    require(second.value == w);
    require(sm::write_workload(second.value) == written);

    // SimAI's order: with no-ops kept, six steps per row plus any recomputed forwards.
    sm::order_options all;
    all.skip_noops = false;
    all.recompute = false;
    const auto steps = sm::simai_order(w, all);
    require(steps.size() == 6 * w.rows.size());
    std::size_t skipped = 0;
    sm::for_each_step(w, [&](const sm::step& s) {
        require(s.row < w.rows.size());
        require(s.what == sm::step_kind::compute ? s.duration_ns > 0
                                                 : s.kind != sm::collective::none);
        ++skipped;
    });
    require(skipped <= steps.size() + 2 * w.rows.size() * w.rows.size());

    const sm::structure st = sm::analyse(w);
    require(st.roles.size() == w.rows.size());
    require(st.prefix_end <= st.body_end && st.body_end <= st.loss_end &&
            st.loss_end <= st.optimizer_end && st.optimizer_end == w.rows.size());
    require(st.blocks.empty() || st.blocks.size() == w.header.ga);
    for (const sm::block& b : st.blocks)
        require(b.end - b.begin == st.period);
    require(st.errors.size() <= sm::max_findings && st.warnings.size() <= sm::max_findings);
    return 0;
}
