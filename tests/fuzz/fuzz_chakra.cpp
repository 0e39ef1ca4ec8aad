// libFuzzer target: read_trace (Chakra ET) on arbitrary bytes. An accepted file must survive
// encode -> read_trace unchanged; a rejected one must point inside the input. Accepted traces
// also go through check_traces and, when that passes, predict_astra as a one-rank run.
#include <pipesched/chakra/trace.hpp>
#include <pipesched/chakra/astra.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

void require(bool condition) {
    if (!condition) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace ck = pipesched::chakra;
    const std::string_view bytes{reinterpret_cast<const char*>(data), size};
    const ck::read_result r = ck::read_trace(bytes);
    if (!r) {
        require(r.error.offset <= size);
        require(!r.error.what().empty());
        return 0;
    }
    const ck::read_result again = ck::read_trace(ck::encode(r.value));
    require(static_cast<bool>(again));
    require(again.value == r.value);
    const std::vector<ck::trace> ranks{r.value};
    const ck::prediction p = ck::predict_astra(ranks);
    require(static_cast<bool>(p.check) == static_cast<bool>(ck::check_traces(ranks)));
    if (p.check) require(p.finish_ns.size() == 1);
    return 0;
}
