// V-Min and V-Half (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024).
#include <doctest/doctest.h>

#include <pipesched/search/autoschedule.hpp>
#include <pipesched/analysis/simulate_iteration.hpp>
#include <pipesched/catalog.hpp>
#include <pipesched/chakra/export.hpp>
#include <pipesched/io/csv.hpp>
#include <pipesched/iteration.hpp>
#include <pipesched/pipesched.hpp>
#include <pipesched/detail/v_controllable.hpp>
#include <pipesched/detail/v_controllable_schedule.hpp>
#include <pipesched/policies/v_half.hpp>
#include <pipesched/policies/v_min.hpp>
#include <pipesched/policies/v_half.hpp>
#include <pipesched/policies/v_min.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace ps = pipesched;

static_assert(ps::schedule_policy<ps::v_min>);
static_assert(ps::schedule_policy<ps::v_half>);

template <class P>
void check_grid(std::uint32_t (*formula)(std::uint32_t)) {
    for (std::uint32_t p = 1; p <= 12; ++p) {
        for (std::uint32_t m = 1; m <= 16; ++m) {
            INFO(P::name << " p=" << p << " m=" << m);
            const P pol{{.ranks = p, .microbatches = m, .chunks = 2}};
            REQUIRE(pol.check());
            REQUIRE(ps::validate(pol));
            for (std::uint32_t r = 0; r < p; ++r) {
                CHECK(pol.size(r) == 6u * m); // F, I, W of both chunks
            }
            const ps::simulation sim = ps::simulate(pol);
            REQUIRE(sim);
            // In chunk activations: two per microbatch of a rank's layers. Below the steady state
            // every microbatch is in flight at once (2m).
            CHECK(sim.max_peak_activations() == std::min(2 * m, 2 * formula(p)));
            for (std::uint32_t r = 0; r < p; ++r) CHECK(ps::peak_activations(pol, r) == sim.ranks[r].peak_activations);
        }
    }
}

TEST_CASE("V-Min: valid on a grid, peak (p+4)//3 microbatches of a rank's activations") {
    check_grid<ps::v_min>([](std::uint32_t p) { return (p + 4) / 3; });
}

TEST_CASE("V-Half: valid on a grid, peak (p+2)//2 microbatches of a rank's activations") {
    check_grid<ps::v_half>([](std::uint32_t p) { return (p + 2) / 2; });
}

TEST_CASE("V-Min and V-Half: memory against 1F1B and ZB-V at unit costs") {
    // 1F1B holds p microbatches of a rank's activations on rank 0, ZB-V 2p chunk activations
    // (= p microbatches); V-Half about half, V-Min about a third (Qi et al. 2024, Table 1).
    const std::uint32_t p = 8;
    const std::uint32_t m = 32;
    const auto peak = [](const auto& pol) { return ps::simulate(pol).max_peak_activations(); };
    CHECK(peak(ps::zbv{{.ranks = p, .microbatches = m, .chunks = 2}}) == 16);
    CHECK(peak(ps::v_half{{.ranks = p, .microbatches = m, .chunks = 2}}) == 10);
    CHECK(peak(ps::v_min{{.ranks = p, .microbatches = m, .chunks = 2}}) == 8);
    // The price is bubble: at unit costs ZB-V has the least.
    ps::cost_model unit{};
    unit.uniform = {0.5, 1.0, 0.5, 0.5};
    const double zbv = ps::simulate(ps::zbv{{.ranks = p, .microbatches = m, .chunks = 2}}, unit).makespan;
    const double half = ps::simulate(ps::v_half{{.ranks = p, .microbatches = m, .chunks = 2}}, unit).makespan;
    const double vmin = ps::simulate(ps::v_min{{.ranks = p, .microbatches = m, .chunks = 2}}, unit).makespan;
    CHECK(zbv <= half);
    CHECK(half <= vmin);
}

TEST_CASE("V-Min: rank 0's order for p = 4, m = 8, as the authors' generator builds it") {
    // From sail-sg/zero-bubble-pipeline-parallelism at 39f2c186,
    // megatron/core/pipeline_parallel/zerobubble/scheduler/zbv_greedy.py:
    // PipelineGraph(4, 8, 'min', 1, 1, 1, 0).create_schedule(config with max_chunks=2,
    // n_stages=4), its B printed as I, stages numbered by layer_group_idx (python3 3.11, torch
    // import stubbed). The same orders were compared for p <= 12, m <= 24, min and half.
    const std::string expected =
        "0F0,0F1,0F2,7F0,7I0,7W0,7F1,7I1,7W1,0I0,0W0,0F3,7F2,7I2,0I1,7W2,0W1,0F4,7F3,7I3,0I2,7W3,0W2,"
        "0F5,7F4,7I4,0I3,7W4,0W3,0F6,7F5,7I5,0I4,7W5,0W4,0F7,7F6,7I6,0I5,7W6,0W5,7F7,7I7,0I6,7W7,0W6,"
        "0I7,0W7\n";
    const std::string csv = ps::write_csv(ps::v_min{{.ranks = 4, .microbatches = 8, .chunks = 2}});
    CHECK(csv.substr(0, csv.find('\n') + 1) == expected);
}

TEST_CASE("V-Min and V-Half: shapes, catalog names, iteration") {
    CHECK_FALSE(ps::v_min{{.ranks = 4, .microbatches = 8, .chunks = 1}}.check());
    CHECK(std::string{ps::v_min{{.ranks = 4, .microbatches = 8, .chunks = 1}}.check().message} == "V-Min runs two chunks per rank in a V: chunks must be 2");
    CHECK_FALSE(ps::v_half{{.ranks = 2048, .microbatches = 1024, .chunks = 2}}.check());
    CHECK_FALSE(ps::v_half{{.ranks = 0, .microbatches = 8, .chunks = 2}}.check());
    CHECK(ps::find_schedule("v_min") == ps::schedule_id::v_min);
    CHECK(ps::find_schedule("V-Min") == ps::schedule_id::v_min);
    CHECK(ps::find_schedule("ZBVMin") == ps::schedule_id::v_min);
    CHECK(ps::find_schedule("VHalf") == ps::schedule_id::v_half);
    CHECK(ps::find_schedule("ZB-V-Half") == ps::schedule_id::v_half);
    const auto name = ps::with_schedule(ps::schedule_id::v_half, {{.ranks = 4, .microbatches = 8, .chunks = 2}}, [](const auto& pol) { return pol.name; });
    CHECK(name == "v_half");
    CHECK(ps::validate(ps::iteration{ps::v_min{{.ranks = 4, .microbatches = 8, .chunks = 2}}}));
    CHECK(ps::validate(ps::iteration{ps::v_half{{.ranks = 3, .microbatches = 5, .chunks = 2}}}));
}

TEST_CASE("explicit schedules (V-Min, an autoschedule result) export to Chakra like any policy") {
    const ps::v_min vmin{{.ranks = 4, .microbatches = 8, .chunks = 2}};
    const ps::chakra::export_result a = ps::chakra::export_traces(vmin, ps::iteration_cost_model{});
    INFO(a.error);
    REQUIRE(a);
    CHECK(a.ranks.size() == 4);
    const auto r = ps::autoschedule({4, 8, 1}, {}, {});
    REQUIRE(r);
    const ps::chakra::export_result b =
        r.visit([](const auto& s) { return ps::chakra::export_traces(s, ps::iteration_cost_model{}); });
    INFO(b.error);
    REQUIRE(b);
    CHECK(b.ranks.size() == 4);
}

} // namespace

TEST_CASE("V-Min and V-Half's shared pieces: detail/v_controllable.hpp and detail/v_controllable_schedule.hpp") {
    namespace vc = ps::detail::v_controllable;
    // The building block's slots (F chunk 0, F chunk 1, I chunk 1, I chunk 0), by hand from the
    // paper's offsets. V-Min, p = 3 (3 divides p: d = 2): r, 2p-1-r, 2p+d+r, 4p+d-1-r.
    const auto min3 = vc::building_block(vc::memory_setup::min, 3);
    REQUIRE(min3.size() == 3);
    CHECK(min3[0] == std::array<std::int64_t, 4>{0, 5, 8, 13});
    CHECK(min3[2] == std::array<std::int64_t, 4>{2, 3, 10, 11});
    // p = 4 (d = 0): rank 1 gets 1, 6, 9, 14.
    CHECK(vc::building_block(vc::memory_setup::min, 4)[1] == std::array<std::int64_t, 4>{1, 6, 9, 14});
    // V-Half, p = 2 (2 divides p: d = 3): 2r, 3p-2-r, 3p+d+2r-1, 6p+d-2-r.
    const auto half2 = vc::building_block(vc::memory_setup::half, 2);
    CHECK(half2[0] == std::array<std::int64_t, 4>{0, 4, 8, 13});
    CHECK(half2[1] == std::array<std::int64_t, 4>{2, 3, 10, 12});

    // peak_memory: F +1, an explicit W -1; without W lists every empty slot runs a pending W.
    // F0 at 0, I1 at 1, (empty 2), F1 at 3, I0 at 5: the W pending from slot 1 runs in slot 2.
    const vc::rank_slots implicit_w{{0}, {3}, {1}, {5}};
    CHECK(vc::peak_memory(implicit_w) == 1);
    // The same with both W's placed explicitly after the last I: nothing frees slot 2's memory.
    const vc::rank_slots explicit_w{{0}, {3}, {1}, {5}, {6}, {7}};
    CHECK(vc::peak_memory(explicit_w) == 2);

    // The generator is what the policies store, event for event.
    const auto orders = vc::generate(vc::memory_setup::half, 3, 5);
    const ps::v_half half{{.ranks = 3, .microbatches = 5, .chunks = 2}};
    REQUIRE(orders.size() == 3);
    for (std::uint32_t r = 0; r < 3; ++r) {
        std::vector<ps::event> stored;
        for (const ps::event e : ps::events(half, r)) stored.push_back(e);
        CHECK(stored == orders[r]);
    }

    // The shared policy template's shape rules, with each setup's own name in the message.
    using min_schedule = ps::detail::v_controllable_schedule<vc::memory_setup::min>;
    using half_schedule = ps::detail::v_controllable_schedule<vc::memory_setup::half>;
    CHECK(std::string{half_schedule::check_shape({.ranks = 4, .microbatches = 8, .chunks = 1}).message} ==
          "V-Half runs two chunks per rank in a V: chunks must be 2");
    CHECK(std::string{min_schedule::check_shape({.ranks = 2048, .microbatches = 1024, .chunks = 2}).message} ==
          "V-Min stores its order: ranks * microbatches must be at most 2^20");
    CHECK(std::string{half_schedule::check_shape({.ranks = 2048, .microbatches = 1024, .chunks = 2}).message} ==
          "V-Half stores its order: ranks * microbatches must be at most 2^20");
    CHECK(min_schedule::check_shape({.ranks = 1024, .microbatches = 1024, .chunks = 2}));
    CHECK_FALSE(min_schedule::check_shape({.ranks = 1024, .microbatches = 1025, .chunks = 2}));
}

TEST_CASE("V-Min and V-Half's squeeze: its shortcuts agree with the definitions they replace") {
    namespace vc = ps::detail::v_controllable;
    // kth_of_two: the k-th smallest of two sorted lists, as sorting their union says; lists of
    // every length 0..5 with interleaved, disjoint and equal values.
    for (std::size_t na = 0; na <= 5; ++na) {
        for (std::size_t nb = 0; nb <= 5; ++nb) {
            for (std::int64_t stride : {1, 2, 7}) {
                std::vector<std::int64_t> a, b;
                for (std::size_t j = 0; j < na; ++j) a.push_back(static_cast<std::int64_t>(j) * stride);
                for (std::size_t j = 0; j < nb; ++j) b.push_back(static_cast<std::int64_t>(j) * 3 + 1);
                std::vector<std::int64_t> both = a;
                both.insert(both.end(), b.begin(), b.end());
                std::sort(both.begin(), both.end());
                for (std::size_t k = 0; k < both.size(); ++k) {
                    INFO("na=" << na << " nb=" << nb << " stride=" << stride << " k=" << k);
                    CHECK(vc::kth_of_two(a, b, k) == both[k]);
                }
            }
        }
    }
    // implicit_w_memory::try_move: a move is taken exactly when peak_memory of the moved lists
    // stays within the cap, also after earlier moves (it keeps its counts up to date). Each rank
    // of V-Half building blocks (W's implicit) under three caps: every action, in slot order,
    // tries every earlier empty slot in turn, as the squeeze does, and stays where it fits.
    std::size_t taken = 0;
    std::size_t refused = 0;
    for (const std::int64_t p : {4, 5}) {
        const auto block = vc::building_block(vc::memory_setup::half, p);
        for (std::uint32_t r = 0; r < static_cast<std::uint32_t>(p); ++r) {
            for (const std::int64_t extra : {0, 1, 2}) {
                vc::rank_slots lists(4);
                for (std::size_t k = 0; k < 4; ++k) {
                    for (std::int64_t i = 0; i < 5; ++i) lists[k].push_back(block[r][k] + 6 * i);
                }
                const std::int64_t cap = vc::peak_memory(lists) + extra;
                vc::implicit_w_memory memory{lists};
                std::vector<std::pair<std::int64_t, std::pair<std::size_t, std::size_t>>> order; // slot, (list, index)
                for (std::size_t k = 0; k < 4; ++k) {
                    for (std::size_t i = 0; i < lists[k].size(); ++i) order.push_back({lists[k][i], {k, i}});
                }
                std::sort(order.begin(), order.end());
                for (const auto& entry : order) {
                    // Plain variables: clang 14 cannot capture structured bindings (INFO does).
                    const std::int64_t from = entry.first;
                    const std::size_t k = entry.second.first;
                    const std::size_t i = entry.second.second;
                    const std::int64_t earliest = i > 0 ? lists[k][i - 1] + 1 : 0; // lists stay sorted
                    for (std::int64_t to = earliest; to < from; ++to) {
                        bool used = false;
                        for (const auto& l : lists) used = used || std::find(l.begin(), l.end(), to) != l.end();
                        if (used) continue;
                        vc::rank_slots moved = lists;
                        moved[k][i] = to;
                        INFO("p=" << p << " r=" << r << " cap=" << cap << " list " << k << " #" << i << " " << from
                                  << " -> " << to);
                        const bool fits = vc::peak_memory(moved) <= cap;
                        REQUIRE(memory.try_move(k, from, to, cap) == fits);
                        (fits ? taken : refused) += 1;
                        if (fits) {
                            lists = moved;
                            break;
                        }
                    }
                }
            }
        }
    }
    CHECK(taken > 400); // 534 and 280 when written
    CHECK(refused > 200);

    // The same on random slot lists (a fixed linear congruential sequence): actions far apart
    // with empty slots between them, so that a move's effect on the pending W's outlasts its old
    // slot and the counts after it must be walked on until they meet the old ones again.
    std::uint64_t seed = 12345;
    const auto draw = [&seed](std::uint64_t n) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return (seed >> 33) % n;
    };
    std::size_t checked = 0;
    for (int trial = 0; trial < 400; ++trial) {
        std::vector<std::int64_t> free_slots(40);
        for (std::size_t j = 0; j < free_slots.size(); ++j) free_slots[j] = static_cast<std::int64_t>(j);
        vc::rank_slots lists(4);
        for (std::size_t k = 0; k < 4; ++k) {
            for (int j = 0; j < 3; ++j) {
                const std::size_t pick = draw(free_slots.size());
                lists[k].push_back(free_slots[pick]);
                free_slots.erase(free_slots.begin() + static_cast<std::ptrdiff_t>(pick));
            }
            std::sort(lists[k].begin(), lists[k].end());
        }
        const std::int64_t cap = vc::peak_memory(lists) + static_cast<std::int64_t>(draw(2));
        vc::implicit_w_memory memory{lists};
        for (int move = 0; move < 6; ++move) {
            const std::size_t k = draw(4);
            const std::size_t i = draw(3);
            const std::int64_t from = lists[k][i];
            const std::int64_t earliest = i > 0 ? lists[k][i - 1] + 1 : 0;
            if (earliest >= from) continue;
            const std::int64_t to = earliest + static_cast<std::int64_t>(draw(static_cast<std::uint64_t>(from - earliest)));
            bool used = false;
            for (const auto& l : lists) used = used || std::find(l.begin(), l.end(), to) != l.end();
            if (used) continue;
            vc::rank_slots moved = lists;
            moved[k][i] = to;
            const bool fits = vc::peak_memory(moved) <= cap;
            INFO("trial " << trial << " move " << move << ": list " << k << " #" << i << " " << from << " -> " << to);
            REQUIRE(memory.try_move(k, from, to, cap) == fits);
            if (fits) lists = moved;
            ++checked;
        }
    }
    CHECK(checked > 1000);
}

TEST_CASE("V-Min and V-Half's builder: the orders of the per-slot builder it replaced, in memory linear in p * m") {
    namespace vc = ps::detail::v_controllable;
    // FNV-1a over every rank's events (kind, chunk, rank, microbatch; a marker after each rank),
    // computed from the builder that kept tables per slot (quadratic in p at small m) before it
    // was replaced; the two were also compared event for event for p, m <= 40 and on larger
    // shapes (p = 4096 with m = 1, p = 1024 with m = 1024). Shapes with few microbatches and many
    // ranks are where the old tables grew with p^2.
    struct pinned {
        vc::memory_setup setup;
        std::uint32_t p;
        std::uint32_t m;
        std::uint64_t hash;
    };
    static constexpr pinned orders[] = {
        {vc::memory_setup::min, 1, 1, 0x966e9f12049e4933ULL},
        {vc::memory_setup::min, 2, 3, 0xefa870b27e08216dULL},
        {vc::memory_setup::min, 3, 7, 0xd97dbc0d7bb3b88bULL},
        {vc::memory_setup::min, 5, 16, 0x308c7b17750b35a6ULL},
        {vc::memory_setup::min, 12, 40, 0x3f1cb87d072b22e5ULL},
        {vc::memory_setup::min, 64, 8, 0xdf21c4712e6ac999ULL},
        {vc::memory_setup::min, 97, 33, 0xabe9d3d18dda7e83ULL},
        {vc::memory_setup::min, 300, 3, 0x2b3ab3bb3615d041ULL},
        {vc::memory_setup::min, 1000, 2, 0xe628cb804a9df279ULL},
        {vc::memory_setup::min, 4096, 1, 0x2362d2466e31ab51ULL},
        {vc::memory_setup::half, 1, 1, 0xadd6c7f9befa919fULL},
        {vc::memory_setup::half, 2, 3, 0xe800a1dace1e6325ULL},
        {vc::memory_setup::half, 3, 7, 0x251607df3a752ae3ULL},
        {vc::memory_setup::half, 5, 16, 0x1f3c29dfd3c6310eULL},
        {vc::memory_setup::half, 12, 40, 0x624181e731ba890dULL},
        {vc::memory_setup::half, 64, 8, 0x748667603a93279dULL},
        {vc::memory_setup::half, 97, 33, 0xf5eb1cd692531937ULL},
        {vc::memory_setup::half, 300, 3, 0x63a24d9cc9f60231ULL},
        {vc::memory_setup::half, 1000, 2, 0x17814ab53bbef2a5ULL},
        {vc::memory_setup::half, 4096, 1, 0x30041094c0768325ULL},
    };
    for (const pinned& o : orders) {
        INFO((o.setup == vc::memory_setup::min ? "V-Min" : "V-Half") << " p=" << o.p << " m=" << o.m);
        const auto all = vc::generate(o.setup, o.p, o.m);
        std::uint64_t h = 14695981039346656037ULL;
        const auto mix = [&h](std::uint64_t v) {
            h ^= v;
            h *= 1099511628211ULL;
        };
        for (const auto& rank : all) {
            for (const ps::event& e : rank) {
                mix(static_cast<std::uint64_t>(e.kind));
                mix(e.chunk);
                mix(e.rank);
                mix(e.microbatch);
            }
            mix(0xFFFFFFFFULL);
        }
        CHECK(h == o.hash);
    }
    // The bound a caller sizes with (the command-line tool's memory estimate): linear in p * m
    // plus a term per rank.
    using min_schedule = ps::detail::v_controllable_schedule<vc::memory_setup::min>;
    CHECK(min_schedule::build_bytes({.ranks = 8192, .microbatches = 1, .chunks = 2}) ==
          8192 * (vc::build_bytes_per_unit + vc::build_bytes_per_rank));
    CHECK(min_schedule::build_bytes({.ranks = 1024, .microbatches = 1024, .chunks = 2}) ==
          1024 * 1024 * vc::build_bytes_per_unit + 1024 * vc::build_bytes_per_rank);
    // Many ranks, one microbatch: every rank runs F, I and W of both chunks, and the order is valid.
    const ps::v_min wide{{.ranks = 4096, .microbatches = 1, .chunks = 2}};
    REQUIRE(wide.check());
    for (std::uint32_t r = 0; r < 4096; r += 1365) CHECK(wide.size(r) == 6u);
    CHECK(ps::validate(wide));
}
