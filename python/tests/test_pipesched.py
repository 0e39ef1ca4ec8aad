"""Tests of the Python module: every binding, checked against hand-derived orders, the
library's formulas and the command-line tool's output, and its error paths.

Run by ctest (python/CMakeLists.txt: python_tests) with the package of the build directory on
PYTHONPATH; PIPESCHED_TEST_DATA names tests/data, PIPESCHED_TOOL the tool when it is built.
"""

import json
import os
import subprocess
import tempfile
import threading
import unittest

import pipesched as ps

DATA = os.environ.get("PIPESCHED_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data"))
TOOL = os.environ.get("PIPESCHED_TOOL", "")

LLAMA_ARGS = ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "4",
              "--global-batch-size", "64", "--micro-batch-size", "1", "--seq-length", "4096"]


def tool_json(*args):
    out = subprocess.run([TOOL, *args], check=False, capture_output=True, text=True)
    return json.loads(out.stdout)


class Catalog(unittest.TestCase):
    def test_every_schedule_by_every_name(self):
        infos = ps.schedules()
        self.assertEqual(len(infos), 14)
        for info in infos:
            for name in [info.name, info.pytorch_name, *info.aliases]:
                if not name:
                    continue
                m = 2 * 4 if info.placement == "v" else 8
                s = ps.schedule(name, ranks=4, microbatches=m)
                self.assertEqual(s.chunks, info.default_chunks, name)
                self.assertEqual(s.placement, info.placement, name)
                self.assertTrue(s.validate(), name)

    def test_names_ignore_case_and_separators(self):
        a = ps.schedule("ZBVZeroBubble", ranks=2, microbatches=4)
        b = ps.schedule("zbv-zero_bubble", ranks=2, microbatches=4)
        self.assertEqual(a.actions(), b.actions())
        self.assertEqual(a.name, "ZBVZeroBubble")


class Orders(unittest.TestCase):
    def test_1f1b_by_hand(self):
        # Rank r runs min(p - r - 1, m) warm-up forwards, then one F one B, then the rest of B.
        s = ps.schedule("1F1B", ranks=2, microbatches=3)
        self.assertEqual(s.actions(), [["0F0", "0F1", "0B0", "0F2", "0B1", "0B2"],
                                       ["1F0", "1B0", "1F1", "1B1", "1F2", "1B2"]])

    def test_gpipe_and_split_backward(self):
        s = ps.schedule("GPipe", ranks=2, microbatches=2, backward="split")
        self.assertEqual(s.actions()[1], ["1F0", "1F1", "1I0", "1W0", "1I1", "1W1"])

    def test_interleaved_stage_numbers(self):
        s = ps.schedule("Interleaved1F1B", ranks=2, microbatches=2, chunks=2)
        self.assertEqual(sorted({a[0] for a in s.actions()[0]}), ["0", "2"])
        self.assertEqual(s.stages, 4)

    def test_events(self):
        s = ps.schedule("1F1B", ranks=2, microbatches=1)
        self.assertEqual(s.events()[1], [ps.Event("forward", 1, 0, 0, None, 1), ps.Event("backward", 1, 0, 0, None, 1)])

    def test_dualpipev_pairs_round_trip(self):
        s = ps.schedule("DualPipeV", ranks=2, microbatches=4)
        cells = [c for row in s.actions() for c in row]
        self.assertTrue(any(c.endswith("OVERLAP_F_B") for c in cells))
        again = ps.explicit_schedule(s.actions())
        self.assertEqual(again.placement, "v")
        self.assertEqual(again.actions(), s.actions())
        self.assertEqual(again.simulate().makespan, s.simulate().makespan)


class Validation(unittest.TestCase):
    def test_missing_duplicate_and_order(self):
        v = ps.explicit_schedule([["0F0", "0B0"], ["1F0"]]).validate()
        self.assertFalse(v)
        self.assertEqual(v.kind, "missing")
        self.assertEqual(v.action, "1B0")
        v = ps.validate([["0F0", "0F0", "0B0"]])
        self.assertEqual((v.kind, v.rank, v.index, v.action), ("duplicate", 0, 1, "0F0"))
        v = ps.validate([["0B0", "0F0"]])
        self.assertEqual(v.kind, "backward_before_forward")

    def test_deadlock_cycle(self):
        # Rank 1 waits at 1F1 for 0F1, which rank 0 runs only after 0B0, which waits for 1B0.
        v = ps.validate([["0F0", "0B0", "0F1", "0B1"], ["1F1", "1B1", "1F0", "1B0"]])
        self.assertEqual(v.kind, "deadlock")
        self.assertEqual(v.cycle, [ps.BlockedRank(0, 1, "0B0"), ps.BlockedRank(1, 0, "1F1")])
        self.assertIn("ranks wait on each other forever", v.message)

    def test_custom_placement_lists(self):
        # Stage 0 on rank 1 and stage 1 on rank 0: neither loop nor V, fine for the lists.
        lists = [["1F0", "1B0"], ["0F0", "0B0"]]
        self.assertTrue(ps.validate(lists))
        with self.assertRaisesRegex(ValueError, "neither in a loop"):
            ps.explicit_schedule(lists)
        self.assertEqual(ps.simulate(lists).makespan, 6.0)
        self.assertEqual(ps.validate(lists, microbatches=2).kind, "missing")

    def test_explicit_rejects_what_the_library_rejects(self):
        with self.assertRaisesRegex(ValueError, r"rank 0, action 1 \(1F0\): stage 1 runs on rank 1 under loop placement"):
            ps.explicit_schedule([["0F0", "1F0"], ["2F0"]], placement="loop", chunks=1)
        with self.assertRaisesRegex(ValueError, "only compute actions"):
            ps.explicit_schedule([["0F0", "0SEND_F0", "0B0"]])
        with self.assertRaisesRegex(ValueError, r"rank 0, action 1 \('0X1'\), column 2: unknown action name"):
            ps.explicit_schedule([["0F0", "0X1"]])
        with self.assertRaisesRegex(ValueError, "negative numbers"):
            ps.validate([["-1F0"]])


class Simulation(unittest.TestCase):
    def test_1f1b_bubble_formula(self):
        # The README's timeline: makespan 33, bubble (p-1)/(m+p-1) = 3/11, peaks 4 3 2 1.
        sim = ps.schedule("1F1B", ranks=4, microbatches=8).simulate()
        self.assertEqual(sim.makespan, 33.0)
        self.assertAlmostEqual(sim.bubble_fraction, 3 / 11)
        self.assertEqual(sim.peak_activations, [4, 3, 2, 1])
        self.assertEqual(len(sim.timeline), 4 * 8 * 2)
        first = sim.timeline[0]
        self.assertEqual((first.rank, first.action, first.start, first.end), (0, "0F0", 0.0, 1.0))

    def test_costs_per_stage_and_p2p(self):
        s = ps.schedule("1F1B", ranks=2, microbatches=1)
        # F0 on stage 0, p2p, F0 on stage 1, B0 there, p2p, B0 on stage 0.
        self.assertEqual(s.simulate(ps.Costs(p2p=0.5)).makespan, 1 + 0.5 + 1 + 2 + 0.5 + 2)
        costs = ps.Costs(per_stage=[ps.StageCosts(forward=3.0, backward=4.0)])
        self.assertEqual(s.simulate(costs).makespan, 3 + 1 + 2 + 4)
        self.assertEqual(s.simulate(ps.Costs(forward=2, backward=5), timeline=False).timeline, None)

    def test_refused_costs(self):
        s = ps.schedule("1F1B", ranks=2, microbatches=2)
        with self.assertRaises(ps.ScheduleError) as e:
            s.simulate(ps.Costs(backward=-1.0))
        self.assertEqual(e.exception.verdict.kind, "invalid_cost")
        self.assertIsInstance(e.exception, ValueError)
        with self.assertRaisesRegex(ValueError, "invalid_cost: the p2p latency is nan"):
            s.simulate(ps.Costs(p2p=float("nan")))
        with self.assertRaises(TypeError):
            s.simulate(ps.Costs(forward="1"))
        with self.assertRaises(TypeError):
            s.simulate({"forward": 1})

    def test_invalid_order_is_not_replayed(self):
        with self.assertRaisesRegex(ps.ScheduleError, "missing"):
            ps.explicit_schedule([["0F0"]]).simulate()

    def test_fill_with_weight(self):
        s = ps.schedule("GPipe", ranks=4, microbatches=4, backward="split")
        plain = s.simulate(timeline=False).makespan
        filled = s.simulate(ps.Costs(fill_with_weight=True), timeline=False).makespan
        self.assertLessEqual(filled, plain)


class Iterations(unittest.TestCase):
    def test_events_of_an_iteration(self):
        it = ps.schedule("1F1B", ranks=2, microbatches=1).iteration(activation_checkpointing=True)
        kinds = [e.kind for e in it.events()[1]]
        self.assertEqual(kinds, ["recv_activation", "forward", "loss", "recompute", "backward", "send_gradient",
                                 "grad_sync", "grad_norm", "optimizer_step"])
        self.assertEqual(it.events()[1][0].peer, 0)
        self.assertTrue(it.validate())

    def test_simulate_with_communication(self):
        s = ps.schedule("1F1B", ranks=2, microbatches=2)
        base = s.iteration().simulate()
        self.assertEqual(base.makespan, s.simulate().makespan)
        slow = s.iteration(grad_sync="overlapped").simulate(
            ps.IterationCosts(optimizer=1.0, gradient_bytes=4.0, dp_bandwidth=1.0))
        self.assertGreater(slow.makespan, base.makespan)
        self.assertEqual(set(slow.ranks[0].exposed), {"p2p", "grad_sync", "grad_norm", "param_gather"})
        self.assertTrue(any(t.comm_stream for t in slow.timeline))

    def test_options_checked(self):
        s = ps.schedule("1F1B", ranks=2, microbatches=2)
        with self.assertRaisesRegex(ValueError, "grad_sync must be 'at_end' or 'overlapped'"):
            s.iteration(grad_sync="later").validate()
        with self.assertRaisesRegex(ValueError, "param_gather must be"):
            s.iteration(param_gather="x").events()
        with self.assertRaises(TypeError):
            s.iteration(ps.IterationOptions(), grad_norm=False)


class Csv(unittest.TestCase):
    def test_round_trip(self):
        s = ps.schedule("InterleavedZeroBubble", ranks=2, microbatches=4)
        text = s.to_csv()
        self.assertEqual(text.splitlines()[0], ",".join(s.actions()[0]))
        again = ps.parse_csv(text)
        self.assertEqual(again.actions(), s.actions())
        self.assertEqual(again.chunks, 2)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.csv")
            s.to_csv(path)
            self.assertEqual(ps.read_csv(path).actions(), s.actions())
            self.assertEqual(ps.write_csv(s.actions(), path), text)

    def test_communication_actions_are_left_out(self):
        self.assertEqual(ps.csv_actions("0F0,0SEND_F0,0B0\n1RECV_F0,1F0,1B0\n"), [["0F0", "0B0"], ["1F0", "1B0"]])

    def test_errors_name_line_and_column(self):
        with self.assertRaisesRegex(ValueError, r"line 2, column 6 \(cell 2\): unknown action name"):
            ps.parse_csv("0F0,0B0\n1F0,1Q0\n")
        with self.assertRaisesRegex(ValueError, "no ranks"):
            ps.csv_actions("")
        with self.assertRaisesRegex(ValueError, "trailing|unexpected characters"):
            ps.write_csv([["0F0x"]])


class Diagram(unittest.TestCase):
    def test_svg_one_box_per_action(self):
        import xml.etree.ElementTree as ET
        for name, m in [("1F1B", 8), ("ZBVZeroBubble", 8), ("DualPipeV", 8)]:
            s = ps.schedule(name, ranks=4, microbatches=m)
            svg = s._repr_svg_()
            self.assertEqual(svg, s.to_svg())
            root = ET.fromstring(svg)
            self.assertTrue(root.tag.endswith("svg"), name)
            boxes = [r for r in root.iter() if r.tag.endswith("rect")
                     and r.get("class", "").startswith("ps-")
                     and r.get("class") not in ("ps-idle", "ps-key", "ps-page")]
            # PyTorch's "(a;b)OVERLAP_F_B" is one action string holding two compute actions.
            compute = sum(2 if "OVERLAP_F_B" in a else 1 for rank in s.actions() for a in rank
                          if any(k in a for k in ("F", "B", "I", "W")) and "SEND" not in a and "RECV" not in a)
            self.assertGreater(len(boxes), 0, name)
            # An overlapped F&B pair is drawn as two half-height boxes, one per action.
            self.assertEqual(len(boxes), compute, name)


class Chakra(unittest.TestCase):
    def test_traces_and_groups(self):
        s = ps.schedule("1F1B", ranks=2, microbatches=2)
        one = s.to_chakra()
        self.assertEqual(len(one.traces), 2)
        self.assertEqual(one.comm_groups, {})
        two = s.iteration().to_chakra(data_parallel=2)
        self.assertEqual(len(two.traces), 4)
        # Replica k holds global ranks k * p .. k * p + p - 1: rank r's data-parallel group is {r, p + r}.
        self.assertIn([0, 2], two.comm_groups.values())
        self.assertIn([1, 3], two.comm_groups.values())
        with tempfile.TemporaryDirectory() as d:
            files = two.write(os.path.join(d, "run"))
            self.assertEqual([os.path.basename(f) for f in files],
                             ["run.0.et", "run.1.et", "run.2.et", "run.3.et", "run.groups.json"])
            if TOOL:
                check = subprocess.run([TOOL, "check", os.path.join(d, "run")], capture_output=True, text=True)
                self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        with self.assertRaisesRegex(ValueError, "grad_sync_collective must be"):
            s.to_chakra(grad_sync_collective="broadcast")
        with self.assertRaisesRegex(ValueError, "data_parallel must be 1..65535, got 0"):
            s.to_chakra(data_parallel=0)


class Planning(unittest.TestCase):
    def test_autoschedule(self):
        r = ps.autoschedule(4, 8, memory_limit=4, placement="loop")
        self.assertTrue(r)
        self.assertEqual((r.placement, r.chunks), ("loop", 1))
        self.assertTrue(r.schedule.validate())
        self.assertAlmostEqual(r.schedule.simulate(ps.Costs(backward_input=1, backward_weight=1)).makespan, r.makespan)
        self.assertLessEqual(r.lower_bound, r.span)
        if TOOL:
            j = tool_json("autoschedule", "--ranks", "4", "--microbatches", "8", "--memory-limit", "4",
                          "--placement", "loop", "--format", "json")
            self.assertEqual(j["order"], r.schedule.actions())
            self.assertEqual((j["span"], j["method"], j["gap"]), (r.span, r.method, r.gap))

    def test_autoschedule_nothing_fits_and_bad_input(self):
        r = ps.autoschedule(2, 4, memory_limit=0.5)
        self.assertFalse(r)
        self.assertIsNone(r.schedule)
        self.assertEqual(r.smallest_limit, [1.0, 1.0])
        with self.assertRaisesRegex(ValueError, "placement must be one of"):
            ps.autoschedule(2, 4, memory_limit=4, placement="ring")
        with self.assertRaises(ValueError):
            ps.autoschedule(2, 4, memory_limit=4, forward=-1)
        with self.assertRaisesRegex(ValueError, "unknown key 'F'"):
            ps.autoschedule(2, 4, memory_limit=4, per_stage=[{"F": 1}])

    def test_plan_from_path_and_dict(self):
        path = os.path.join(DATA, "plan", "llama3_8b.json")
        r = ps.plan(path, LLAMA_ARGS, gpus=32)
        with open(path) as f:
            self.assertEqual(ps.plan(json.load(f), LLAMA_ARGS, gpus=32)["schedules"], r["schedules"])
        self.assertEqual((r["pipeline_parallel"], r["data_parallel"], r["microbatches"]), (4, 4, 16))
        self.assertEqual(len(r["ranks"]), 4)
        self.assertIsNotNone(r["recommended"])
        if TOOL:
            j = tool_json("plan", "--model", path, "--gpus", "32", "--format", "json", "--", *LLAMA_ARGS)
            del r["notes"]
            self.assertEqual(r, j)

    def test_plan_errors(self):
        path = os.path.join(DATA, "plan", "llama3_8b.json")
        with self.assertRaisesRegex(ValueError, "unknown GPU 'v100'"):
            ps.plan(path, LLAMA_ARGS, gpu="v100")
        with self.assertRaisesRegex(ValueError, "gpus 30 is not a multiple of TP x PP x CP = 8"):
            ps.plan(path, LLAMA_ARGS, gpus=30)
        with self.assertRaisesRegex(ValueError, "plan needs"):
            ps.plan()
        with self.assertRaises(ValueError):
            ps.plan({"hidden_size": -4}, LLAMA_ARGS)
        with self.assertRaises(ValueError):
            ps.plan(path, LLAMA_ARGS + ["--num-layers", "x"])
        with self.assertRaises(TypeError):
            ps.plan(path, "--num-layers 32")

    def test_simai_compare(self):
        r = ps.simai_compare(os.path.join(DATA, "simai", "seed_tp2_ga2.txt"))
        self.assertEqual((r["pp"], r["ga"]), (1, 2))
        self.assertEqual(r["simai"]["events"][:4], ["F0", "F1", "loss", "optimizer"])
        self.assertEqual(r["simai"]["verdict"].kind, "stale_update")
        self.assertTrue(r["corrected"]["verdict"])
        self.assertEqual(r["corrected"]["events"][:3], ["F0", "loss", "B0"])
        self.assertGreater(r["simai_report"]["total_time_us"], 0.0)
        if TOOL:
            j = tool_json("simai", os.path.join(DATA, "simai", "seed_tp2_ga2.txt"), "--format", "json")
            for ours, theirs in zip([r["simai"], r["corrected"]], j["orders"]):
                self.assertEqual(ours["events"], theirs["events"])
                self.assertEqual(ours["makespan_ns"], theirs["makespan_ns"])
                self.assertEqual(ours["verdict"].message, theirs["verdict"])
            self.assertEqual(r["problems"], j["problems"])
            self.assertAlmostEqual(r["simai_report"]["total_time_us"], j["simai_report"]["total_time_us"], places=3)
        with self.assertRaises(ValueError):
            ps.simai_compare("not a workload\nat all\n")
        with self.assertRaisesRegex(ValueError, "unknown schedule"):
            ps.simai_compare(os.path.join(DATA, "simai", "seed_tp2_ga2.txt"), "Ring")


class Errors(unittest.TestCase):
    def test_counts(self):
        for bad, message in [(dict(ranks=-1), "ranks must be 1..65535, got -1"),
                             (dict(ranks=0), "ranks must be 1..65535, got 0"),
                             (dict(microbatches=0), "microbatches must be 1..65536, got 0"),
                             (dict(microbatches=-(2**40)), "microbatches must be 1..65536"),
                             (dict(chunks=-2), "chunks must be 1..256, got -2"),
                             (dict(ranks=2**70), "ranks is out of range")]:
            args = dict(name="Interleaved1F1B", ranks=2, microbatches=4) | bad
            with self.assertRaisesRegex(ValueError, message):
                ps.schedule(**args)

    def test_types_and_names(self):
        with self.assertRaisesRegex(ValueError, "unknown schedule 'Ring'"):
            ps.schedule("Ring", 2, 2)
        with self.assertRaises(TypeError):
            ps.schedule("1F1B", "2", 2)
        with self.assertRaises(TypeError):
            ps.schedule("1F1B", True, 2)
        with self.assertRaises(TypeError):
            ps.explicit_schedule("0F0,0B0")
        with self.assertRaises(TypeError):
            ps.explicit_schedule([[0]])
        with self.assertRaisesRegex(ValueError, "backward must be 'full' or 'split'"):
            ps.schedule("1F1B", 2, 2, backward="half")

    def test_policy_constraints(self):
        with self.assertRaisesRegex(ValueError, "DualPipeV: .*microbatches must be at least 2 \\* ranks"):
            ps.schedule("DualPipeV", ranks=4, microbatches=4)
        with self.assertRaisesRegex(ValueError, "group_size applies to Interleaved1F1B only"):
            ps.schedule("1F1B", 2, 4, group_size=2)

    def test_limits(self):
        with self.assertRaisesRegex(ValueError, "units, more than the limit"):
            ps.schedule("GPipe", ranks=65535, microbatches=65536)
        big = ps.schedule("GPipe", ranks=64, microbatches=65536)
        with self.assertRaisesRegex(ValueError, "more than the 4194304"):
            big.actions()
        with self.assertRaisesRegex(ValueError, "timeline=False"):
            big.simulate()


class Stubs(unittest.TestCase):
    def test_stubs_declare_the_public_names(self):
        import ast
        import inspect
        stub = os.path.join(os.path.dirname(ps.__file__), "__init__.pyi")
        with open(stub) as f:
            tree = ast.parse(f.read())
        declared = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        self.assertEqual(declared, set(ps.__all__))
        # Every function's parameters, by name, as the package defines them.
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                real = list(inspect.signature(getattr(ps, node.name)).parameters)
                a = node.args
                names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
                if real[-1:] == ["kwargs"]:
                    real = real[:-1]
                    names = names[:len(real)]
                self.assertEqual(names, real, node.name)


class Gil(unittest.TestCase):
    def test_long_calls_release_the_gil(self):
        s = ps.schedule("ZBVZeroBubble", ranks=32, microbatches=4096)
        done = threading.Event()
        counted = [0]

        def count():
            while not done.is_set():
                counted[0] += 1

        t = threading.Thread(target=count)
        t.start()
        try:
            before = counted[0]
            s.simulate(timeline=False)
            during = counted[0] - before
        finally:
            done.set()
            t.join()
        # With the GIL held for the whole replay, the counter would stand still meanwhile.
        self.assertGreater(during, 1000)


if __name__ == "__main__":
    unittest.main()
