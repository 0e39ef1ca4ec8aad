// iteration<P>: the full per-rank stream of one training iteration, and its validation rules.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <pipesched/analysis/validate_iteration.hpp>
#include <pipesched/catalog.hpp>
#include <pipesched/detail/list_cursor.hpp>
#include <pipesched/iteration.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ps = pipesched;

namespace {

using ps::op;

/// "F0 send>1 ..." — a compact spelling of one rank's stream, for exact-order checks. Built
/// with append only: GCC 12 at -O3 reports a false -Wrestrict inside std::string's
/// operator+ (GCC bug 105329), which a plain Release build turned into an error.
template <class P>
std::string spell(const P& pol, std::uint32_t rank) {
    std::string out;
    for (ps::event e : ps::events(pol, rank)) {
        if (!out.empty()) out += ' ';
        const auto put = [&](std::string_view name, bool chunk, char direction = '\0') {
            out.append(name);
            if (name != "sync") out.append(std::to_string(e.microbatch));
            if (chunk && pol.shape.chunks > 1) out.append("c").append(std::to_string(e.chunk));
            if (direction != '\0') out.append(1, direction).append(std::to_string(e.peer));
        };
        switch (e.kind) {
        case op::forward: put("F", true); break;
        case op::backward: put("B", true); break;
        case op::backward_input: put("I", true); break;
        case op::backward_weight: put("W", true); break;
        case op::recompute: put("R", true); break;
        case op::loss: put("loss", false); break;
        case op::send_activation: put("sa", true, '>'); break;
        case op::recv_activation: put("ra", true, '<'); break;
        case op::send_gradient: put("sg", true, '>'); break;
        case op::recv_gradient: put("rg", true, '<'); break;
        case op::grad_sync: put("sync", true); break;
        case op::grad_norm: out.append("norm"); break;
        case op::optimizer_step: out.append("step"); break;
        case op::param_gather: out.append("gather"); break;
        default: out.append("?"); break;
        }
    }
    return out;
}

// The user's question, answered: p = 1, m = 2, Megatron's defaults.
inline constexpr ps::iteration user_1f1b{ps::one_f_one_b<>{{.ranks = 1, .microbatches = 2, .chunks = 1}}};
inline constexpr ps::iteration user_gpipe{ps::gpipe<>{{.ranks = 1, .microbatches = 2, .chunks = 1}}};
PIPESCHED_VERIFY(ps::validate(user_1f1b));
PIPESCHED_VERIFY(ps::validate(user_gpipe));
PIPESCHED_VERIFY(ps::require_valid<user_1f1b>()); // optimizer after every gradient sync, at compile time
constexpr auto user_events = ps::to_array<user_1f1b>();
PIPESCHED_VERIFY(user_events.size() == 9); // F0 loss0 B0 F1 loss1 B1 sync norm step
PIPESCHED_VERIFY(user_events[1].kind == op::loss && user_events[2].kind == op::backward);
PIPESCHED_VERIFY(user_events[8].kind == op::optimizer_step);

inline constexpr ps::iteration_options overlapped_options{
    ps::grad_sync_mode::overlapped, ps::param_gather_mode::after_step, true, true, true};
inline constexpr ps::iteration interleaved_full{ps::interleaved_1f1b<ps::backward_kind::split>{{.ranks = 2, .microbatches = 4, .chunks = 2}},
                                                overlapped_options};
PIPESCHED_VERIFY(ps::validate(interleaved_full));
// validate(iteration) answers these by its shortcut (the library built the iteration around a
// valid schedule, and every channel pairs up in order); the full checks agree, at compile
// time as well.
template <class It>
constexpr bool full_checks_pass(const It& it) {
    using source = ps::detail::policy_events<It>;
    const source src{it};
    return static_cast<bool>(ps::detail::iteration_validator<source>{src}.run_step_by_step());
}
PIPESCHED_VERIFY(ps::detail::valid_by_construction(interleaved_full) && full_checks_pass(interleaved_full));
PIPESCHED_VERIFY(ps::detail::valid_by_construction(user_1f1b) && full_checks_pass(user_1f1b));

TEST_CASE("iteration: exact streams, checked by hand against Megatron's order") {
    CHECK(spell(user_1f1b, 0) == "F0 loss0 B0 F1 loss1 B1 sync norm step");
    CHECK(spell(user_gpipe, 0) == "F0 loss0 F1 loss1 B0 B1 sync norm step");

    // 1F1B, p = 2, m = 2: rank 0 sends activations to 1 and receives gradients from it.
    const ps::iteration two{ps::one_f_one_b<>{{.ranks = 2, .microbatches = 2, .chunks = 1}}};
    CHECK(spell(two, 0) == "F0 sa0>1 F1 sa1>1 rg0<1 B0 rg1<1 B1 sync norm step");
    CHECK(spell(two, 1) == "ra0<0 F0 loss0 B0 sg0>0 ra1<0 F1 loss1 B1 sg1>0 sync norm step");

    // Overlapped grad sync right after the last backward; recompute before each backward;
    // distributed optimizer gathers after the step.
    ps::iteration_options o{};
    o.grad_sync = ps::grad_sync_mode::overlapped;
    o.activation_checkpointing = true;
    o.param_gather = ps::param_gather_mode::after_step;
    const ps::iteration ckpt{ps::one_f_one_b<>{{.ranks = 2, .microbatches = 2, .chunks = 1}}, o};
    CHECK(spell(ckpt, 0) == "F0 sa0>1 F1 sa1>1 rg0<1 R0 B0 rg1<1 R1 B1 sync norm step gather");
    CHECK(spell(ckpt, 1) == "ra0<0 F0 loss0 R0 B0 sg0>0 ra1<0 F1 loss1 R1 B1 sg1>0 sync norm step gather");

    // Interleaved p = 2, v = 2: the chunk-1 forward on rank 0 receives from rank 1 (stage 1 -> 2);
    // with split backward the overlapped sync of a chunk follows its last W.
    ps::iteration_options split_opts{};
    split_opts.grad_sync = ps::grad_sync_mode::overlapped;
    split_opts.param_gather = ps::param_gather_mode::next_iteration;
    const ps::iteration inter{ps::interleaved_1f1b<ps::backward_kind::split>{{.ranks = 2, .microbatches = 2, .chunks = 2}}, split_opts};
    CHECK(spell(inter, 0) ==
          "gather F0c0 sa0c0>1 F1c0 sa1c0>1 ra0c1<1 F0c1 sa0c1>1 ra1c1<1 F1c1 sa1c1>1 "
          "rg0c1<1 I0c1 sg0c1>1 W0c1 rg1c1<1 I1c1 sg1c1>1 W1c1 syncc1 rg0c0<1 I0c0 W0c0 rg1c0<1 I1c0 W1c0 syncc0 "
          "norm step");
    CHECK(ps::validate(inter));
}

TEST_CASE("iteration: size() matches the stream for every option and policy") {
    for (std::uint32_t p = 1; p <= 5; ++p) {
        for (std::uint32_t m = 1; m <= 2 * p + 1; ++m) {
            for (std::uint32_t v = 1; v <= 3; ++v) {
                for (int mode = 0; mode < 16; ++mode) {
                    ps::iteration_options o{};
                    o.grad_sync = (mode & 1) ? ps::grad_sync_mode::overlapped : ps::grad_sync_mode::at_end;
                    o.activation_checkpointing = (mode & 2) != 0;
                    o.param_gather = (mode & 4) ? ps::param_gather_mode::after_step : ps::param_gather_mode::none;
                    o.grad_norm = (mode & 8) != 0;
                    const auto check_one = [&](const auto& pol) {
                        if (!pol.check()) return;
                        const ps::iteration it{pol, o};
                        INFO(pol.name << " p=" << p << " m=" << m << " v=" << v << " mode=" << mode);
                        std::size_t total = 0;
                        for (std::uint32_t r = 0; r < p; ++r) {
                            std::size_t n = 0;
                            for (ps::event e : ps::events(it, r)) {
                                (void)e;
                                ++n;
                            }
                            CHECK(n == it.size(r));
                            total += n;
                        }
                        CHECK(total == ps::event_count(it));
                        const ps::verdict verdict = ps::validate(it);
                        INFO(ps::describe(verdict));
                        CHECK(static_cast<bool>(verdict));
                    };
                    check_one(ps::one_f_one_b<>{{.ranks = p, .microbatches = m, .chunks = v}});
                    check_one(ps::gpipe<ps::backward_kind::split>{{.ranks = p, .microbatches = m, .chunks = v}});
                    check_one(ps::interleaved_1f1b<>{{.ranks = p, .microbatches = m, .chunks = v}});
                    check_one(ps::looped_bfs<ps::backward_kind::split>{{.ranks = p, .microbatches = m, .chunks = v}});
                }
            }
        }
    }
}

/// Per-rank events as they are given, without a phase loop: emit() reads them through the
/// cursor, so that iteration<listed>'s generate() meets every marker sequence the cursor does.
struct listed {
    static constexpr std::string_view name = "listed";
    static constexpr ps::placement layout = ps::placement::loop;
    ps::shape shape{};
    std::vector<std::vector<ps::event>> per_rank{};
    [[nodiscard]] ps::shape_check check() const noexcept { return ps::check_common(shape); }
    [[nodiscard]] std::size_t size(std::uint32_t r) const { return per_rank[r].size(); }
    [[nodiscard]] ps::detail::list_cursor<ps::event> cursor(std::uint32_t r) const {
        return ps::detail::list_cursor<ps::event>{per_rank[r]};
    }
};

/// emit() and the cursor of one iteration, event for event (constexpr: also at compile time).
template <class P>
constexpr bool emit_matches_cursor(const ps::iteration<P>& it) {
    struct compare {
        const ps::iteration<P>* it;
        std::uint32_t rank;
        decltype(std::declval<const ps::iteration<P>&>().cursor(0u)) c;
        bool same = true;
        constexpr void push(const ps::event& e) {
            same = same && !c.done() && c.current() == e;
            if (!c.done()) c.advance();
        }
    };
    for (std::uint32_t r = 0; r < it.shape.ranks; ++r) {
        compare sink{&it, r, it.cursor(r)};
        ps::emit(it, r, sink);
        if (!sink.same || !sink.c.done()) return false;
    }
    return true;
}
inline constexpr ps::iteration dualpipe_overlapped{ps::dualpipe_v{{.ranks = 3, .microbatches = 6, .chunks = 2}},
                                                   {.grad_sync = ps::grad_sync_mode::overlapped,
                                                    .activation_checkpointing = true}};
PIPESCHED_VERIFY(emit_matches_cursor(dualpipe_overlapped));
PIPESCHED_VERIFY(emit_matches_cursor(user_1f1b));

TEST_CASE("iteration: emit() through the policy's phase loops gives the cursor's events") {
    // emit(iteration) runs P's own emit path and places the iteration's events around each
    // compute event (generate()); the cursor pulls P's cursor and looks ahead for a pair. Every
    // catalogued policy, every option, and the marker sequences that are not a pair.
    std::size_t compared = 0;
    for (const ps::schedule_info& info : ps::schedules) {
        for (const ps::shape s : {ps::shape{1, 2, 2}, ps::shape{2, 4, 2}, ps::shape{3, 6, 2}, ps::shape{4, 9, 3}}) {
            for (int mode = 0; mode < 32; ++mode) {
                ps::iteration_options o{};
                o.grad_sync = (mode & 1) ? ps::grad_sync_mode::overlapped : ps::grad_sync_mode::at_end;
                o.activation_checkpointing = (mode & 2) != 0;
                o.param_gather = (mode & 4) ? ps::param_gather_mode::after_step : ps::param_gather_mode::next_iteration;
                o.grad_norm = (mode & 8) != 0;
                o.p2p = (mode & 16) == 0;
                ps::schedule_options so{};
                so.shape = {s.ranks, s.microbatches, info.multi_chunk ? s.chunks : 1};
                ps::with_schedule(info.id, so, [&](const auto& pol) {
                    // DualPipe's iteration is refused by iteration::check() (two pipelines).
                    if (!pol.check() || !ps::iteration{pol, o}.check()) return;
                    INFO(pol.name << " p=" << s.ranks << " m=" << s.microbatches << " mode=" << mode);
                    const std::size_t n = pipesched_test::streams_agree(ps::iteration{pol, o});
                    CHECK(n != 0);
                    compared += n;
                });
            }
        }
    }
    CHECK(compared > 100000);
    // Markers that do not open a pair are passed on as they are, wherever they stand.
    const auto ev = [](op kind, std::uint16_t mb, std::uint8_t chunk = 0) {
        return ps::event{kind, chunk, 0, mb, ps::no_peer};
    };
    const ps::event mark = ev(op::overlap_f_b, 0);
    const std::vector<std::vector<ps::event>> odd{
        {mark},
        {ev(op::forward, 0), mark},
        {mark, ev(op::forward, 0)},
        {mark, mark, ev(op::forward, 0), ev(op::backward, 1)},
        {mark, ev(op::forward, 0), mark, ev(op::forward, 1), ev(op::backward_input, 0)},
        {mark, ev(op::forward, 0), ev(op::backward_weight, 0), ev(op::backward, 1)},
        {mark, ev(op::backward, 0), ev(op::forward, 1)},
        {mark, ev(op::forward, 1, 1), ev(op::backward, 0, 1), mark, ev(op::forward, 0)},
    };
    for (const auto& list : odd) {
        for (int mode = 0; mode < 4; ++mode) {
            ps::iteration_options o{};
            o.grad_sync = (mode & 1) ? ps::grad_sync_mode::overlapped : ps::grad_sync_mode::at_end;
            o.activation_checkpointing = (mode & 2) != 0;
            const ps::iteration it{listed{{2, 2, 2}, {list, {}}}, o};
            // size() assumes a valid order, so the two streams are compared directly.
            struct collect {
                std::vector<ps::event>* out;
                void push(const ps::event& e) { out->push_back(e); }
            };
            for (std::uint32_t r = 0; r < 2; ++r) {
                std::vector<ps::event> pushed;
                ps::emit(it, r, collect{&pushed});
                std::vector<ps::event> pulled;
                for (ps::event e : ps::events(it, r)) pulled.push_back(e);
                CHECK(pushed == pulled);
                CHECK(pushed.size() >= list.size() * (r == 0 ? 1 : 0) + 2);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Each iteration rule, broken on purpose. Streams are edited copies of a valid iteration.

std::vector<std::vector<ps::event>> stream_of(const auto& it) {
    std::vector<std::vector<ps::event>> out(it.shape.ranks);
    for (std::uint32_t r = 0; r < it.shape.ranks; ++r) {
        for (ps::event e : ps::events(it, r)) out[r].push_back(e);
    }
    return out;
}

std::size_t find(const std::vector<ps::event>& v, op kind, std::uint32_t mb = 0) {
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i].kind == kind && v[i].microbatch == mb) return i;
    }
    FAIL("event not found");
    return 0;
}

ps::verdict check_stream(const std::vector<std::vector<ps::event>>& s, ps::shape dims) {
    return ps::validate_events(s, dims, ps::placement::loop);
}

TEST_CASE("iteration rules: the SimAI order (optimizer before backward) is a stale update") {
    // p = 1, m = 2 as in the user's workload, but in SimAI's order: F0 F1, loss, optimizer,
    // B1 B0, grad sync.
    const ps::shape dims{1, 2, 1};
    const std::vector<std::vector<ps::event>> simai = pipesched_test::simai_user_order();
    const ps::verdict v = check_stream(simai, dims);
    CHECK(v.code == ps::verdict_code::stale_update);
    CHECK(v.index == 4);
    CHECK(v.subject.kind == op::optimizer_step);
    CHECK(ps::describe(v).find("stale_update: optimizer_step") == 0);

    // Moving the optimizer to the end fixes it.
    std::vector<std::vector<ps::event>> fixed = simai;
    const ps::event step = fixed[0][4];
    fixed[0].erase(fixed[0].begin() + 4);
    fixed[0].push_back(step);
    CHECK(check_stream(fixed, dims));
}

TEST_CASE("iteration rules: each violation is reported with its rank and index") {
    const ps::iteration two{ps::one_f_one_b<>{{.ranks = 2, .microbatches = 2, .chunks = 1}}};
    const ps::shape dims{2, 2, 1};
    const auto base = stream_of(two);
    REQUIRE(check_stream(base, dims));

    SUBCASE("grad_norm before grad_sync") {
        auto s = base;
        std::swap(s[0][find(s[0], op::grad_sync)], s[0][find(s[0], op::grad_norm)]);
        const auto v = check_stream(s, dims);
        CHECK(v.code == ps::verdict_code::stale_update);
        CHECK(v.rank == 0);
    }
    SUBCASE("grad_sync before the last backward") {
        auto s = base;
        const std::size_t sync = find(s[1], op::grad_sync);
        const ps::event e = s[1][sync];
        s[1].erase(s[1].begin() + static_cast<std::ptrdiff_t>(sync));
        s[1].insert(s[1].begin() + static_cast<std::ptrdiff_t>(find(s[1], op::backward, 1)), e);
        const auto v = check_stream(s, dims);
        CHECK(v.code == ps::verdict_code::grad_sync_before_backward);
        CHECK(v.rank == 1);
    }
    SUBCASE("loss before its forward") {
        auto s = base;
        std::swap(s[1][find(s[1], op::forward, 0)], s[1][find(s[1], op::loss, 0)]);
        CHECK(check_stream(s, dims).code == ps::verdict_code::loss_misplaced);
    }
    SUBCASE("backward on the last stage without its loss") {
        auto s = base;
        s[1].erase(s[1].begin() + static_cast<std::ptrdiff_t>(find(s[1], op::loss, 1)));
        CHECK(check_stream(s, dims).code == ps::verdict_code::loss_misplaced);
    }
    SUBCASE("recompute after its backward") {
        auto s = base;
        s[0].insert(s[0].begin() + static_cast<std::ptrdiff_t>(find(s[0], op::backward, 0)) + 1,
                    ps::event{op::recompute, 0, 0, 0, ps::no_peer});
        const auto v = check_stream(s, dims);
        CHECK(v.code == ps::verdict_code::recompute_misplaced);
        CHECK(v.index == find(s[0], op::recompute, 0));
    }
    SUBCASE("forward consumes an activation it never received") {
        auto s = base;
        s[1].erase(s[1].begin() + static_cast<std::ptrdiff_t>(find(s[1], op::recv_activation, 1)));
        CHECK(check_stream(s, dims).code == ps::verdict_code::input_not_received);
    }
    SUBCASE("receive without send") {
        // (A send without its receive cannot get this far: the consumer's compute would have
        // consumed a tensor it never received, reported as input_not_received.)
        auto s = base;
        s[0].erase(s[0].begin() + static_cast<std::ptrdiff_t>(find(s[0], op::send_activation, 1)));
        const auto v = check_stream(s, dims);
        CHECK(v.code == ps::verdict_code::unmatched_recv);
        CHECK(v.rank == 1);
        CHECK(v.index == find(s[1], op::recv_activation, 1));
        CHECK(v.subject.kind == op::recv_activation);
    }
    SUBCASE("duplicate receive") {
        auto s = base;
        s[0][find(s[0], op::recv_gradient, 1)].microbatch = 0;
        CHECK(check_stream(s, dims).code == ps::verdict_code::duplicate);
    }
    SUBCASE("send to the wrong peer") {
        auto s = base;
        s[0][find(s[0], op::send_activation, 0)].peer = 0;
        CHECK(check_stream(s, dims).code == ps::verdict_code::p2p_wrong_peer);
    }
    SUBCASE("send before the compute that produces it") {
        auto s = base;
        std::swap(s[0][find(s[0], op::forward, 1)], s[0][find(s[0], op::send_activation, 1)]);
        CHECK(check_stream(s, dims).code == ps::verdict_code::send_before_compute);
    }
    SUBCASE("receive posted too early deadlocks") {
        // Rank 0 waits for the gradient of mb 0 before running any forward: rank 1 never gets
        // its activation.
        auto s = base;
        const std::size_t recv = find(s[0], op::recv_gradient, 0);
        const ps::event e = s[0][recv];
        s[0].erase(s[0].begin() + static_cast<std::ptrdiff_t>(recv));
        s[0].insert(s[0].begin(), e);
        const auto v = check_stream(s, dims);
        CHECK(v.code == ps::verdict_code::deadlock);
        CHECK(v.cycle_length == 2);
        CHECK(ps::describe(v).find("recv_gradient") != std::string::npos);
    }
    SUBCASE("sends and receives pair up in a different order on one channel") {
        auto s = base;
        // Rank 0 sends mb 1 before mb 0 (after both forwards): the channel 0 -> 1 would hand
        // rank 1 the wrong tensor first.
        const std::size_t s0 = find(s[0], op::send_activation, 0);
        const ps::event first = s[0][s0];
        s[0].erase(s[0].begin() + static_cast<std::ptrdiff_t>(s0));
        s[0].insert(s[0].begin() + static_cast<std::ptrdiff_t>(find(s[0], op::send_activation, 1)) + 1, first);
        const auto v = check_stream(s, dims);
        CHECK(v.code == ps::verdict_code::p2p_order_mismatch);
        CHECK(v.rank == 0);
        CHECK(v.index == find(s[0], op::send_activation, 0)); // the first unit whose pair is out of order
        CHECK(v.subject.kind == op::send_activation);
        CHECK(v.subject.microbatch == 0);
        CHECK(v.other_rank == 1);
    }
    SUBCASE("grad_norm missing on one rank deadlocks the others at the collective") {
        auto s = base;
        s[1].erase(s[1].begin() + static_cast<std::ptrdiff_t>(find(s[1], op::grad_norm)));
        const auto v = check_stream(s, dims);
        CHECK(v.code == ps::verdict_code::deadlock);
    }
}

} // namespace

TEST_CASE("iteration rules: of several unmatched p2p pairs, the first by stage, then microbatch, then activation") {
    // Rank 1 (stage 1) sends activations to rank 2 and gradients to rank 0; two of its sends
    // are gone. The receive reported is the one of the lower microbatch, whichever direction.
    const ps::iteration three{ps::one_f_one_b<>{{.ranks = 3, .microbatches = 4, .chunks = 1}}};
    const ps::shape dims{3, 4, 1};
    const auto base = stream_of(three);
    REQUIRE(check_stream(base, dims));
    const auto without_sends = [&](std::uint32_t activation_mb, std::uint32_t gradient_mb) {
        auto s = base;
        s[1].erase(s[1].begin() + static_cast<std::ptrdiff_t>(find(s[1], op::send_activation, activation_mb)));
        s[1].erase(s[1].begin() + static_cast<std::ptrdiff_t>(find(s[1], op::send_gradient, gradient_mb)));
        return s;
    };
    SUBCASE("the gradient's microbatch is lower") {
        const auto s = without_sends(3, 1);
        const ps::verdict v = check_stream(s, dims);
        CHECK(v.code == ps::verdict_code::unmatched_recv);
        CHECK(v.rank == 0);
        CHECK(v.index == find(s[0], op::recv_gradient, 1));
        CHECK(v.subject == ps::action{0, op::recv_gradient, 1});
        CHECK(v.other_rank == 1);
    }
    SUBCASE("the activation's microbatch is lower, or the same") {
        for (const std::uint32_t gradient_mb : {2u, 1u}) {
            const auto s = without_sends(1, gradient_mb);
            const ps::verdict v = check_stream(s, dims);
            CHECK(v.code == ps::verdict_code::unmatched_recv);
            CHECK(v.rank == 2);
            CHECK(v.index == find(s[2], op::recv_activation, 1));
            CHECK(v.subject == ps::action{2, op::recv_activation, 1});
        }
    }
}
