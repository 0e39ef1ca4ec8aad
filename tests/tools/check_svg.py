#!/usr/bin/env python3
"""Checks the SVG diagrams that `pipesched ... --format svg` and `plan --emit svg` write.

Usage: check_svg.py PIPESCHED WORK_DIR PLAN_CONFIG
Runs the tool, parses every picture with xml.etree (so it must be well-formed XML) and checks
that it holds exactly one action box (a <rect> whose class is not ps-page, ps-idle, ps-lane or
ps-key) per action, counted independently: from the same schedule as PyTorch CSV (one cell per
action, two in an overlapped pair's cell). Exits non-zero with a message on the first failure.
"""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
BACKGROUND = {"ps-page", "ps-idle", "ps-lane", "ps-key"}
FILLS = {"ps-F": "#4e79a7", "ps-B": "#59a14f", "ps-I": "#76b7b2", "ps-W": "#b07aa1", "ps-FB": "#f28e2b",
         "ps-O": "#e15759", "ps-G": "#8cd17d"}


def fail(message):
    print("check_svg.py: " + message, file=sys.stderr)
    sys.exit(1)


def run(tool, args):
    done = subprocess.run([tool] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        fail("pipesched %s exited with %d: %s" % (" ".join(args), done.returncode, done.stderr.decode()))
    return done.stdout


def parse(text, what):
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        fail("%s: not well-formed XML: %s" % (what, e))
    if root.tag != SVG + "svg":
        fail("%s: the root is %s, not svg" % (what, root.tag))
    return root


def census(root, what):
    """Rects per class; checks that each op's class has its one color."""
    classes = {}
    for rect in root.iter(SVG + "rect"):
        cls = rect.get("class")
        if cls is None:
            fail("%s: a rect without a class" % what)
        classes[cls] = classes.get(cls, 0) + 1
        if cls in FILLS and rect.get("fill") != FILLS[cls]:
            fail("%s: a %s rect is %s, not %s" % (what, cls, rect.get("fill"), FILLS[cls]))
    return classes


def action_boxes(classes):
    return sum(n for cls, n in classes.items() if cls not in BACKGROUND)


def csv_actions(text):
    """Actions in PyTorch CSV: one per cell, two in a (a;b)OVERLAP_F_B cell."""
    return sum(cell.count(";") + 1 for line in text.decode().splitlines() for cell in line.split(",") if cell)


def check_against_csv(tool, what, svg_args, csv_args):
    root = parse(run(tool, svg_args), what)
    classes = census(root, what)
    expected = csv_actions(run(tool, csv_args))
    if action_boxes(classes) != expected:
        fail("%s: %d action boxes for %d actions (%s)" % (what, action_boxes(classes), expected, classes))
    if "ps-idle" not in classes:
        fail("%s: no idle bands" % what)
    return root, classes


def main():
    if len(sys.argv) != 4:
        fail("usage: check_svg.py PIPESCHED WORK_DIR PLAN_CONFIG")
    tool, work, plan_config = sys.argv[1:]
    os.makedirs(work, exist_ok=True)

    # simulate, a library schedule: the 1F1B of the README, by hand 32 F and 32 B.
    shape = ["--ranks", "4", "--microbatches", "8"]
    root, classes = check_against_csv(tool, "simulate 1F1B", ["simulate", "--schedule", "1F1B"] + shape + ["--format", "svg"],
                                      ["order", "--schedule", "1F1B"] + shape)
    if classes.get("ps-F") != 32 or classes.get("ps-B") != 32 or classes.get("ps-idle") != 4:
        fail("simulate 1F1B: expected 32 F, 32 B and 4 idle bands, got %s" % classes)
    title = root.find(SVG + "title")
    if title is None or title.text != "1F1B p=4 m=8 v=1":
        fail("simulate 1F1B: title %r" % (None if title is None else title.text))
    texts = [t.text or "" for t in root.iter(SVG + "text")]
    if not any(t.startswith("bubble fraction 0.273, makespan 33 ") for t in texts):
        fail("simulate 1F1B: no bubble fraction 0.273 in %s" % texts[:3])

    # Split backward over two chunks, and DualPipeV's overlapped pairs, replayed from CSV too.
    for name, extra in (("ZBVZeroBubble", []), ("Interleaved1F1B", ["--chunks", "2", "--backward", "split"]),
                        ("DualPipeV", [])):
        dims = ["--ranks", "4", "--microbatches", "8"] + extra
        check_against_csv(tool, "simulate " + name, ["simulate", "--schedule", name] + dims + ["--format", "svg"],
                          ["order", "--schedule", name] + dims)
        csv_path = os.path.join(work, "svg_%s.csv" % name)
        with open(csv_path, "wb") as f:
            f.write(run(tool, ["order", "--schedule", name] + dims))
        check_against_csv(tool, "simulate --csv " + name, ["simulate", "--csv", csv_path, "--format", "svg"],
                          ["order", "--schedule", name] + dims)

    # autoschedule: its answer, counted against the same answer as CSV.
    auto = ["autoschedule", "--ranks", "4", "--microbatches", "8", "--memory-limit", "4"]
    check_against_csv(tool, "autoschedule", auto + ["--format", "svg"], auto + ["--format", "csv"])

    # The whole iteration: communication lanes, an optimizer box per rank.
    root = parse(run(tool, ["simulate", "--schedule", "1F1B"] + shape + ["--iteration", "--format", "svg"]), "iteration")
    classes = census(root, "iteration")
    if classes.get("ps-lane") != 4 or classes.get("ps-O") != 4 or classes.get("ps-F") != 32:
        fail("simulate --iteration: expected 4 lanes, 4 optimizer steps and 32 F, got %s" % classes)

    # plan --emit svg: the recommended schedule in seconds.
    out = os.path.join(work, "plan_emit.svg")
    run(tool, ["plan", "--model", plan_config, "--gpus", "8", "--emit", "svg", "--out", out, "--",
               "--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "4", "--seq-length", "8192",
               "--global-batch-size", "16", "--sequence-parallel"])
    with open(out, "rb") as f:
        root = parse(f.read(), "plan --emit svg")
    classes = census(root, "plan --emit svg")
    texts = [t.text or "" for t in root.iter(SVG + "text")]
    if action_boxes(classes) == 0 or not any(t in ("time (s)", "time (ms)") for t in texts):
        fail("plan --emit svg: no actions or no axis in seconds: %s" % texts[-4:])
    print("check_svg.py: every picture is well-formed, one box per action")


if __name__ == "__main__":
    main()
