#!/usr/bin/env python3
"""Checks the Chrome trace JSON that pipesched writes.

Usage: check_trace.py TRACE_DUMP_EXECUTABLE
Runs the executable, parses its standard output with the json module and checks the structure
of the trace (see the assertions below). Exits non-zero with a message on the first failure.
"""
import json
import re
import subprocess
import sys

ALLOWED_CATEGORIES = {
    "forward", "backward", "backward_input", "backward_weight", "communication", "iteration",
}
COMPUTE_CATEGORY = {"F": "forward", "B": "backward", "I": "backward_input", "W": "backward_weight"}
COMPUTE_NAME = re.compile(r"^[0-9]+([FBIW])[0-9]+$")
# The dumped schedule: interleaved 1F1B, p = 4, m = 8, v = 2, split backward.
RANKS, MICROBATCHES, CHUNKS = 4, 8, 2


def fail(message):
    print("check_trace.py: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        fail("usage: check_trace.py TRACE_DUMP_EXECUTABLE")
    run = subprocess.run([sys.argv[1]], stdout=subprocess.PIPE, check=False)
    if run.returncode != 0:
        fail("%s exited with %d" % (sys.argv[1], run.returncode))
    try:
        trace = json.loads(run.stdout.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        fail("the trace is not valid JSON: %s" % e)

    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        fail("expected an object with a traceEvents list")
    if trace.get("displayTimeUnit") not in ("ms", "ns"):
        fail("displayTimeUnit must be ms or ns")
    events = trace["traceEvents"]

    thread_names = {}
    slices = []
    flows = {}
    for e in events:
        ph = e.get("ph")
        if ph == "M":
            if e.get("name") == "thread_name":
                thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif ph == "X":
            for key in ("ts", "dur", "pid", "tid", "name", "cat"):
                if key not in e:
                    fail("X event without %s: %r" % (key, e))
            if e["cat"] not in ALLOWED_CATEGORIES:
                fail("unknown category %r in %r" % (e["cat"], e))
            compute = COMPUTE_NAME.match(e["name"])
            if compute and e["cat"] != COMPUTE_CATEGORY[compute.group(1)]:
                fail("%s has category %r" % (e["name"], e["cat"]))
            if not e["dur"] > 0:
                fail("non-positive duration in %r" % e)
            slices.append(e)
        elif ph in ("s", "f"):
            for key in ("id", "ts", "pid", "tid"):
                if key not in e:
                    fail("flow event without %s: %r" % (key, e))
            if ph == "f" and e.get("bp") != "e":
                fail("flow finish without bp e: %r" % e)
            flows.setdefault(e["id"], []).append(e)
        else:
            fail("unexpected phase %r" % ph)

    used = {(e["pid"], e["tid"]) for e in slices}
    used |= {(e["pid"], e["tid"]) for pair in flows.values() for e in pair}
    for track in sorted(used):
        if track not in thread_names:
            fail("no thread_name metadata for pid %d tid %d" % track)

    expected_slices = 3 * RANKS * CHUNKS * MICROBATCHES  # F, I and W per stage and microbatch
    if len(slices) != expected_slices:
        fail("%d X events, expected %d" % (len(slices), expected_slices))
    # Each slice on a compute track "rank r" belongs to rank r, and slices on a track never
    # overlap.
    by_track = {}
    for e in slices:
        by_track.setdefault((e["pid"], e["tid"]), []).append(e)
        if thread_names[(e["pid"], e["tid"])] != "rank %d" % e["args"]["rank"]:
            fail("%r is on track %r" % (e, thread_names[(e["pid"], e["tid"])]))
    for track, items in by_track.items():
        items.sort(key=lambda e: e["ts"])
        for a, b in zip(items, items[1:]):
            if a["ts"] + a["dur"] > b["ts"] + 1e-6:
                fail("%r overlaps %r" % (a, b))

    # Every adjacent pair of stages lives on two ranks (loop placement, p > 1): one activation
    # and one gradient per microbatch and pair.
    expected_flows = 2 * MICROBATCHES * (RANKS * CHUNKS - 1)
    if len(flows) != expected_flows:
        fail("%d flows, expected %d" % (len(flows), expected_flows))
    for flow_id, pair in flows.items():
        phases = sorted(e["ph"] for e in pair)
        if phases != ["f", "s"]:
            fail("flow id %r has phases %r, expected one s and one f" % (flow_id, phases))
        start = next(e for e in pair if e["ph"] == "s")
        finish = next(e for e in pair if e["ph"] == "f")
        if start["tid"] == finish["tid"]:
            fail("flow id %r stays on one track" % flow_id)
        if finish["ts"] < start["ts"]:
            fail("flow id %r goes back in time" % flow_id)
        for point in (start, finish):
            inside = [e for e in by_track.get((point["pid"], point["tid"]), [])
                      if e["ts"] < point["ts"] < e["ts"] + e["dur"]]
            if len(inside) != 1:
                fail("flow point %r is not inside exactly one slice" % point)
    print("check_trace.py: %d slices, %d flows, %d tracks: ok"
          % (len(slices), len(flows), len(thread_names)))


if __name__ == "__main__":
    main()
