// pipesched plan --search: the layout search against brute force (every layout of the space
// through plan(), every fitting row sorted), its exact pruning, fixed knobs, the runtime filter,
// the Megatron launch flags read back by plan, and the errors.
#include <doctest/doctest.h>

#include <pipesched/plan/layout_search.hpp>
#include <pipesched/plan/megatron_args.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace pl = pipesched::plan;

/// A small Llama-like model: 8 layers, GQA with 4 KV heads, SwiGLU, so that TP 1..4, PP up to
/// 8 (and 10 with the embedding and loss counted), CP and every schedule are in the space.
pl::model_config small_model() {
    pl::model_config m;
    m.name = "small";
    m.hidden = 2048;
    m.layers = 8;
    m.heads = 16;
    m.kv_heads = 4;
    m.ffn_hidden = 5632;
    m.vocab = 32000;
    return m;
}

pl::training_config small_training() {
    pl::training_config t;
    t.seq_length = 4096;
    t.global_batch = 16;
    return t;
}

/// A GPU small enough that memory decides part of the ranking.
pl::gpu_spec small_gpu() {
    pl::gpu_spec g = *pl::find_gpu("h100");
    g.memory_bytes = 14 * pl::gib;
    return g;
}

pl::plan_options quick_options() {
    pl::plan_options o;
    o.memory_reserve_bytes = 2 * pl::gib;
    o.autoschedule = false; // the brute force below replays every layout: keep it short
    return o;
}

/// Every fitting row of every layout, sorted as the search sorts them.
std::vector<pl::layout_candidate> brute_force(const pl::model_config& m, const pl::training_config& base,
                                              const pl::gpu_spec& g, const pl::plan_options& o,
                                              const pl::search_space& space) {
    std::vector<pl::layout_candidate> all;
    for (const pl::training_config& t : pl::detail::enumerate_layouts(m, base, g, space)) {
        const pl::plan_result r = pl::plan(m, t, g, o);
        for (const pl::schedule_report& s : r.schedules) {
            if (!s.evaluated || !s.fits || (s.chunks > 1 && t.pipeline_parallel == 1)) continue;
            pl::layout_candidate c;
            c.training = t;
            c.schedule = s;
            c.runtimes = pl::runtimes_of(s);
            if (pl::detail::allowed(c.runtimes, space.runtime)) all.push_back(c);
        }
    }
    std::sort(all.begin(), all.end(), pl::detail::better);
    return all;
}

/// The first (fastest) row of each of the first `k` layouts of `all`.
std::vector<pl::layout_candidate> top_layouts(const std::vector<pl::layout_candidate>& all, std::size_t k) {
    std::vector<pl::layout_candidate> out;
    for (const pl::layout_candidate& c : all) {
        bool seen = false;
        for (const pl::layout_candidate& x : out) seen = seen || pl::detail::same_layout(x.training, c.training);
        if (!seen && out.size() < k) out.push_back(c);
    }
    return out;
}

bool same_row(const pl::layout_candidate& a, const pl::layout_candidate& b) {
    return pl::detail::rank_key(a) == pl::detail::rank_key(b);
}

std::vector<std::string_view> views(const std::vector<std::string>& words) {
    return {words.begin(), words.end()};
}

} // namespace

namespace {

void check_against_brute_force(std::uint64_t gpus, std::optional<bool> distributed_optimizer,
                               bool autoschedule = false, std::size_t k = 5, double window = 1.25) {
    const pl::model_config m = small_model();
    const pl::training_config base = small_training();
    const pl::gpu_spec g = small_gpu();
    pl::plan_options o = quick_options();
    o.autoschedule = autoschedule;
    {
        pl::search_space space;
        space.gpus = gpus;
        space.top = k;
        space.pareto_window = window;
        space.jobs = 1;
        space.distributed_optimizer = distributed_optimizer;
        if (autoschedule) { // a space small enough to replay the auto-scheduler on every layout
            space.micro_batch = 1;
            space.recompute = pl::recompute_kind::none;
        }
        const std::vector<pl::layout_candidate> all = brute_force(m, base, g, o, space);
        REQUIRE(all.size() > space.top);
        if (autoschedule) CHECK(std::any_of(all.begin(), all.end(), [](const auto& c) { return c.schedule.searched; }));
        const pl::layout_search_result r = pl::search_layouts(m, base, g, o, space);
        CAPTURE(gpus);
        const std::vector<pl::layout_candidate> top = top_layouts(all, space.top);
        REQUIRE(top.size() == space.top);
        REQUIRE(r.candidates.size() == space.top);
        for (std::size_t i = 0; i < space.top; ++i) CHECK(same_row(r.candidates[i], top[i]));
        CHECK(r.pruned > 0); // the bounds did skip layouts
        CHECK(r.evaluated + r.pruned + r.refused == r.layouts);
        CHECK(r.autoscheduled <= r.evaluated);
        // The Pareto front within the window, by brute force.
        std::vector<pl::layout_candidate> front;
        double smallest = 1e300;
        for (const pl::layout_candidate& c : all) {
            if (c.schedule.iteration_seconds > all.front().schedule.iteration_seconds * space.pareto_window) break;
            if (c.schedule.worst_bytes() < smallest) {
                smallest = c.schedule.worst_bytes();
                front.push_back(c);
            }
        }
        REQUIRE(r.pareto.size() == front.size());
        for (std::size_t i = 0; i < front.size(); ++i) CHECK(same_row(r.pareto[i], front[i]));
        // Two threads give the same answer.
        space.jobs = 2;
        const pl::layout_search_result r2 = pl::search_layouts(m, base, g, o, space);
        REQUIRE(r2.candidates.size() == r.candidates.size());
        for (std::size_t i = 0; i < r.candidates.size(); ++i) CHECK(same_row(r2.candidates[i], r.candidates[i]));
        // Each row says how much faster it is than the next.
        for (std::size_t i = 0; i + 1 < r.candidates.size(); ++i)
            CHECK(r.candidates[i].faster_than_next ==
                  doctest::Approx(1.0 - r.candidates[i].schedule.iteration_seconds /
                                            r.candidates[i + 1].schedule.iteration_seconds));
        CHECK(r.candidates.back().faster_than_next == 0.0);
        MESSAGE(gpus, " GPUs: ", r.layouts, " layouts, ", r.evaluated, " replayed, ", r.pruned, " pruned");
    }
}

} // namespace

TEST_CASE("layout search: the top K and the Pareto front equal brute force, with pruning (8 GPUs, distributed optimizer)") {
    check_against_brute_force(8, true);
}

TEST_CASE("layout search: with the auto-scheduler's second pass, still brute force's answer") {
    check_against_brute_force(4, true, true, 1, 1.0);
}

TEST_CASE("layout search: the top K and the Pareto front equal brute force, with pruning (8 and 16 GPUs)" *
          doctest::test_suite("large grids") * doctest::skip()) {
    check_against_brute_force(8, false);
    check_against_brute_force(16, std::nullopt);
}

TEST_CASE("layout search: the bounds never exceed what plan() reports") {
    const pl::model_config m = small_model();
    const pl::training_config base = small_training();
    const pl::gpu_spec g = small_gpu();
    std::size_t rows = 0;
    std::size_t searched = 0;
    std::size_t tight = 0; // rows that meet their time bound (to a millionth)
    for (const bool autoschedule : {false, true}) {
        pl::plan_options o = quick_options();
        o.autoschedule = autoschedule;
        pl::search_space space;
        space.gpus = autoschedule ? 2 : 4;
        if (autoschedule) { // the auto-scheduler is plan()'s dearest part: a smaller space
            space.micro_batch = 2;
            space.distributed_optimizer = true;
        }
        for (const pl::training_config& t : pl::detail::enumerate_layouts(m, base, g, space)) {
            const std::uint64_t mb = base.global_batch / (t.micro_batch * t.data_parallel);
            const pl::detail::layout_bounds b = pl::detail::bounds_of(m, t, g, o, mb);
            for (const pl::schedule_report& s : pl::plan(m, t, g, o).schedules) {
                if (!s.evaluated) continue;
                ++rows;
                searched += s.searched;
                tight += s.iteration_seconds < b.seconds * (1 + 1e-6);
                CHECK(b.seconds <= s.iteration_seconds);
                CHECK(b.bytes <= s.worst_bytes());
            }
        }
    }
    CHECK(rows > 100);
    CHECK(searched > 10);
    CHECK(tight > 10); // at one stage per rank every schedule meets the bound: it is tight there
}

TEST_CASE("layout search: every layout Megatron accepts, and fixed knobs stay fixed") {
    const pl::model_config m = small_model();
    const pl::training_config base = small_training();
    const pl::gpu_spec g = small_gpu();
    pl::search_space space;
    space.gpus = 16;
    const std::vector<pl::training_config> all = pl::detail::enumerate_layouts(m, base, g, space);
    for (const pl::training_config& t : all) {
        CHECK(t.world() == 16);
        CHECK(m.heads % t.tensor_parallel == 0);
        CHECK(m.query_groups() % t.tensor_parallel == 0);
        CHECK(t.tensor_parallel <= 8); // inside a node
        CHECK(base.global_batch % (t.micro_batch * t.data_parallel) == 0);
        CHECK(t.sequence_parallel == (t.tensor_parallel > 1));
        CHECK_NOTHROW((void)pl::stage_contents(m, t, 1));
    }
    // PP 10 divides neither 8 nor 9 layers but 8 + embedding + loss: accounted for, as Megatron.
    pl::search_space wide = space;
    wide.gpus = 10;
    bool ten = false;
    for (const pl::training_config& t : pl::detail::enumerate_layouts(m, base, g, wide))
        if (t.pipeline_parallel == 10) {
            ten = true;
            CHECK(t.account_for_embedding);
            CHECK(t.account_for_loss);
        }
    CHECK(ten);
    space.tensor_parallel = 2;
    space.micro_batch = 2;
    space.recompute = pl::recompute_kind::full;
    space.top = 3;
    space.jobs = 1;
    const pl::layout_search_result r = pl::search_layouts(m, base, g, quick_options(), space);
    REQUIRE(!r.candidates.empty());
    for (const pl::layout_candidate& c : r.candidates) {
        CHECK(c.training.tensor_parallel == 2);
        CHECK(c.training.micro_batch == 2);
        CHECK(c.training.recompute == pl::recompute_kind::full);
    }
    // A fixed value the model refuses leaves nothing.
    space.tensor_parallel = 3;
    CHECK(pl::detail::enumerate_layouts(m, base, g, space).empty());
}

TEST_CASE("layout search: --runtime megatron keeps the schedules Megatron-LM runs") {
    pl::search_space space;
    space.gpus = 8;
    space.top = 20;
    space.jobs = 1;
    space.runtime = pl::runtime_filter::megatron;
    space.distributed_optimizer = true;
    const pl::layout_search_result r = pl::search_layouts(small_model(), small_training(), small_gpu(), quick_options(), space);
    REQUIRE(!r.candidates.empty());
    for (const pl::layout_candidate& c : r.candidates) {
        CHECK(c.runtimes.megatron);
        CHECK((c.schedule.id == pipesched::schedule_id::one_f_one_b ||
               c.schedule.id == pipesched::schedule_id::interleaved_1f1b));
        CHECK(!c.schedule.searched);
    }
}

TEST_CASE("layout search: a candidate's Megatron flags, read back by plan, give the same numbers") {
    const pl::model_config m = small_model();
    const pl::gpu_spec g = small_gpu();
    const pl::plan_options o = quick_options();
    pl::search_space space;
    space.gpus = 8;
    space.top = 10;
    space.jobs = 1;
    const pl::layout_search_result r = pl::search_layouts(m, small_training(), g, o, space);
    REQUIRE(r.candidates.size() == 10);
    for (const pl::layout_candidate& c : r.candidates) {
        CAPTURE(c.schedule.name);
        const std::vector<std::string> args = c.megatron_args;
        pl::megatron_arguments ma = pl::read_megatron_arguments(views(args), m);
        CHECK(ma.ignored.empty());
        pl::training_config& t = ma.training;
        t.data_parallel = space.gpus / (t.tensor_parallel * t.pipeline_parallel * t.context_parallel);
        const pl::plan_result again = pl::plan(ma.model, t, g, o);
        const auto same = std::find_if(again.schedules.begin(), again.schedules.end(), [&](const pl::schedule_report& s) {
            return s.name == c.schedule.name && s.chunks == c.schedule.chunks;
        });
        REQUIRE(same != again.schedules.end());
        CHECK(same->iteration_seconds == c.schedule.iteration_seconds);
        CHECK(same->worst_bytes() == c.schedule.worst_bytes());
        CHECK(c.tokens_per_second_per_gpu ==
              doctest::Approx(16.0 * 4096.0 / c.schedule.iteration_seconds / 8.0));
        CHECK(c.mfu > 0.0);
        CHECK(c.mfu < 1.0);
    }
}

TEST_CASE("layout search: bad input and spaces with no answer") {
    const pl::model_config m = small_model();
    const pl::gpu_spec g = small_gpu();
    pl::search_space space;
    CHECK_THROWS_WITH_AS((void)pl::search_layouts(m, small_training(), g, {}, space),
                         doctest::Contains("number of GPUs"), pl::input_error);
    space.gpus = 8;
    space.top = 0;
    CHECK_THROWS_WITH_AS((void)pl::search_layouts(m, small_training(), g, {}, space), doctest::Contains("top"),
                         pl::input_error);
    space.top = 3;
    pl::training_config no_batch = small_training();
    no_batch.global_batch = 0;
    CHECK_THROWS_WITH_AS((void)pl::search_layouts(m, no_batch, g, {}, space), doctest::Contains("global batch"),
                         pl::input_error);
    // 5 GPUs, 6 layers, 16 heads, a batch of 4: no TP, PP, CP or DP of 5 is legal.
    pl::model_config six = m;
    six.layers = 6;
    pl::training_config four = small_training();
    four.global_batch = 4;
    space.gpus = 5;
    CHECK(pl::detail::enumerate_layouts(six, four, g, space).empty());
    CHECK_THROWS_WITH_AS((void)pl::search_layouts(six, four, g, quick_options(), space),
                         doctest::Contains("no legal layout of the model on 5 GPUs"), pl::input_error);
    // A model far too large for the GPUs: the closest miss and by how much.
    pl::model_config big = m;
    big.hidden = 16384;
    big.ffn_hidden = 53248;
    big.heads = 128;
    big.kv_heads = 8;
    big.layers = 16;
    space.gpus = 2;
    const pl::layout_search_result too_big = pl::search_layouts(big, small_training(), g, quick_options(), space);
    CHECK(too_big.candidates.empty());
    REQUIRE(too_big.closest.has_value());
    CHECK(too_big.advice.find("no layout fits") != std::string::npos);
    CHECK(too_big.advice.find("GiB over") != std::string::npos);
    // A space too large to hold is refused, not allocated.
    space.gpus = 16;
    space.max_layouts = 10;
    CHECK_THROWS_WITH_AS((void)pl::search_layouts(m, small_training(), g, quick_options(), space),
                         doctest::Contains("more than 10 layouts"), pl::input_error);
}
