// libFuzzer target: parse_action and parse_cell on arbitrary bytes. Whatever they accept must
// print back to exactly the input (the grammar has one spelling per value), and errors must
// point inside the input or just past its end.
#include <pipesched/action.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {
void require(bool condition) {
    if (!condition) std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text{reinterpret_cast<const char*>(data), size};

    const pipesched::action_parse_result one = pipesched::parse_action(text);
    if (one) {
        require(pipesched::format_action(one.value).view() == text);
        require(!one.value.overlapped_with_next);
    } else {
        require(one.position <= text.size());
        require(one.error != pipesched::action_errc::none);
    }

    const pipesched::cell_parse_result cell = pipesched::parse_cell(text);
    if (!cell) {
        require(cell.position <= text.size());
        require(cell.count == 0);
        // A text that is one action parses as the same cell.
        require(!one);
        return 0;
    }
    if (cell.count == 0) {
        require(text.empty());
    } else if (cell.count == 1) {
        require(one && cell.actions[0] == one.value);
    } else {
        require(cell.count == 2);
        require(cell.actions[0].overlapped_with_next && !cell.actions[1].overlapped_with_next);
        require(pipesched::is_compute(cell.actions[0].kind) &&
                pipesched::is_compute(cell.actions[1].kind));
        require(pipesched::format_overlap(cell.actions[0], cell.actions[1]).view() == text);
    }
    return 0;
}
