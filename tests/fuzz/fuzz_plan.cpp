// libFuzzer target: a config.json reader and a Megatron launch line on arbitrary bytes, then
// plan() on what they accept. Bad input must end in plan::input_error with a message (never a
// crash, a hang or another exception); what is accepted must plan to finite, non-negative
// numbers, with the recommendation pointing at a schedule that fits.
#include <pipesched/plan/hf_config.hpp>
#include <pipesched/plan/megatron_args.hpp>
#include <pipesched/plan/plan.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

void require(bool condition) {
    if (!condition) std::abort();
}

namespace pl = pipesched::plan;

void check_plan(const pl::model_config& m, pl::training_config t) {
    // Small shapes keep one input fast: at most 4 ranks and 8 microbatches.
    t.pipeline_parallel = std::min<std::uint64_t>(t.pipeline_parallel, 4);
    t.microbatches = 8;
    if (t.seq_length == 0) t.seq_length = 128;
    t.seq_length = std::min<std::uint64_t>(t.seq_length, 4096);
    try {
        pl::plan_options o;
        o.autoschedule = false;
        const pl::plan_result r = pl::plan(m, t, *pl::find_gpu("h100"), o);
        for (const pl::schedule_report& s : r.schedules) {
            if (!s.evaluated) continue;
            require(std::isfinite(s.iteration_seconds) && s.iteration_seconds >= 0.0);
            for (const double b : s.peak_bytes) require(std::isfinite(b) && b >= 0.0);
        }
        if (r.recommended) require(r.schedules[*r.recommended].fits);
        else require(!r.advice.empty());
    } catch (const pl::input_error& e) {
        require(e.what()[0] != '\0');
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text{reinterpret_cast<const char*>(data), size};
    std::optional<pl::model_config> model;
    try {
        model = pl::read_hf_config(text, "config.json").model;
    } catch (const pl::input_error& e) {
        require(std::string_view{e.what()}.substr(0, 11) == "config.json");
    }
    std::vector<std::string_view> words;
    for (std::size_t i = 0; i < text.size();) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\n')) ++i;
        std::size_t j = i;
        while (j < text.size() && text[j] != ' ' && text[j] != '\n') ++j;
        if (j > i) words.push_back(text.substr(i, j - i));
        i = j;
    }
    try {
        const pl::megatron_arguments a = pl::read_megatron_arguments(words, model);
        check_plan(a.model, a.training);
    } catch (const pl::input_error& e) {
        require(e.what()[0] != '\0');
    }
    return 0;
}
