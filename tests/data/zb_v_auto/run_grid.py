#!/usr/bin/env python3
"""Runs the Zero Bubble authors' V-shape auto-scheduler over a grid and writes one CSV row per
setting (see README.md next to this file for the columns and the command).

Usage: run_grid.py PATH_TO/v_auto_schedule.py [--quick] > grid.csv

The module is imported from the path given; nothing of it is copied here. Each returned order is
checked and replayed by this script's own code (legality, peak memory, span), so that every
number in the CSV is defined by this file, and the replayed span must equal the module's own
evaluation (evaluate_schedule) or the script stops.
"""
import contextlib
import importlib.util
import io
import math
import sys

LETTERS = "FfBbWw"  # their letters: F, f forward of chunk 0, 1; B, b input gradient of chunk 1, 0


def load(path):
    spec = importlib.util.spec_from_file_location("v_auto_schedule", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def memoize_blocks(module):
    """schedule() tries the same building blocks for every cost; their outcome depends on
    (p, m, block, memory) only, so each is computed once per (p, m, memory) group. Returns the
    function that empties the cache."""
    original = module.schedule_by_building_block
    cache = {}

    def cached(p, m, building_block, max_mem, keep_stable_phase=False):
        key = (p, m, tuple(tuple(row) for row in building_block), max_mem, keep_stable_phase)
        if key not in cache:
            cache[key] = original(p, m, building_block, max_mem, keep_stable_phase)
        return cache[key]

    module.schedule_by_building_block = cached
    return cache.clear


def orders_of(result):
    """Per rank, the letters in execution order (microbatches are implied: within a letter they
    run in order 0, 1, ...)."""
    out = []
    for rank_nodes in result:
        letters = []
        for node in rank_nodes:
            # node.type is upper case; the chunk tells the letter apart: F chunk 0 -> 'F',
            # F chunk 1 -> 'f'; B chunk 1 -> 'B', B chunk 0 -> 'b'; W likewise.
            t, c = node.type, node.chunk
            if t == "F":
                letter = "F" if c == 0 else "f"
            elif t == "B":
                letter = "B" if c == 1 else "b"
            else:
                letter = "W" if c == 1 else "w"
            letters.append(letter)
        out.append("".join(letters))
    return out


def check_and_replay(orders, m, f, b, w, c):
    """Our own replay of an order in the V placement: rank r holds stage r (F, b, w: chunk 0)
    and stage 2p-1-r (f, B, W: chunk 1). F flows rank 0 -> p-1, then f flows p-1 -> 0 (the
    turn at rank p-1 stays on the rank), B flows 0 -> p-1 after rank 0's f (the loss stage), b
    flows p-1 -> 0 after rank p-1's B. W needs its B, w its b, same rank. Every cross-rank input
    adds c. Each rank runs its order serially, each action as early as its inputs allow.
    Returns (span, makespan, per-rank peak memory in chunk activations: F, f add one; W, w
    release one; B, b release nothing)."""
    p = len(orders)
    cost = {"F": f, "f": f, "B": b, "b": b, "W": w, "w": w}
    for r, o in enumerate(orders):
        for letter in LETTERS:
            if o.count(letter) != m:
                raise ValueError(f"rank {r}: {o.count(letter)} {letter}, expected {m}")
    end = {}  # (rank, letter, microbatch) -> end time
    pos = [0] * p
    count = [dict.fromkeys(LETTERS, 0) for _ in range(p)]
    free = [0.0] * p
    first = [None] * p

    def ready(r, letter, i):
        if letter == "F":
            return 0.0 if r == 0 else end.get((r - 1, "F", i), None), r > 0
        if letter == "f":
            if r == p - 1:
                return end.get((r, "F", i), None), False
            return end.get((r + 1, "f", i), None), True
        if letter == "B":
            if r == 0:
                return end.get((r, "f", i), None), False
            return end.get((r - 1, "B", i), None), True
        if letter == "b":
            if r == p - 1:
                return end.get((r, "B", i), None), False
            return end.get((r + 1, "b", i), None), True
        if letter == "W":
            return end.get((r, "B", i), None), False
        return end.get((r, "b", i), None), False

    moved = True
    while moved:
        moved = False
        for r in range(p):
            while pos[r] < len(orders[r]):
                letter = orders[r][pos[r]]
                i = count[r][letter]
                t, remote = ready(r, letter, i)
                if t is None:
                    break
                start = max(free[r], t + (c if remote else 0.0))
                if first[r] is None:
                    first[r] = start
                free[r] = start + cost[letter]
                end[(r, letter, i)] = free[r]
                count[r][letter] += 1
                pos[r] += 1
                moved = True
    if any(pos[r] < len(orders[r]) for r in range(p)):
        raise ValueError("deadlock: some rank waits for an input that never comes")
    span = max(free[r] - first[r] for r in range(p))
    makespan = max(free) - min(first)
    peaks = []
    for o in orders:
        held, peak = 0, 0
        for letter in o:
            held += 1 if letter in "Ff" else -1 if letter in "Ww" else 0
            peak = max(peak, held)
        peaks.append(peak)
    return span, makespan, peaks


# (name, f, b, w, c): per-chunk times of F, B (input gradient only) and W, and the p2p time.
COSTS = [
    ("uniform", 1, 1, 1, 0),
    ("cm_paper", 3, 4, 2, 0),       # the controllable-memory paper's T_F=3, T_B=4, T_W=2
    ("cm_paper_p2p", 3, 4, 2, 1),
    ("w_above_f", 1, 1, 2, 0),
    ("tiny_w", 1, 1, 0.125, 0),
    ("b_double_p2p", 1, 2, 1, 0.5),
]


def microbatches(p):
    # m < p (when p > 2), m = p, p < m < 2p (not a multiple of p), m = 2p, 3p + 1, 4p
    values = [p - 1] if p > 2 else []
    values += [p, p + (p + 1) // 2, 2 * p, 3 * p + 1, 4 * p]
    return values


def memories(p):
    # Chunk activations per rank. Every limit up to 2p for small p; for larger p the smallest
    # that works is found by the run itself (lower ones come back empty) and the others spread.
    if p <= 4:
        return list(range(1, 2 * p + 1))
    return sorted(set([2, math.ceil(2 * p / 3), p - 1, p, math.ceil(3 * p / 2), 2 * p]))


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    module = load(sys.argv[1])
    quick = "--quick" in sys.argv[2:]
    clear = memoize_blocks(module)
    print("p,m,cost_set,f,b,w,c,max_mem,status,span,makespan,peak_mem,rank_peaks,order")
    ranks = range(2, 5) if quick else range(2, 9)
    for p in ranks:
        for m in microbatches(p):
            for mem in memories(p):
                clear()
                for name, f, b, w, c in COSTS:
                    row = [p, m, name, f, b, w, c, mem]
                    try:
                        with contextlib.redirect_stdout(io.StringIO()):
                            result = module.schedule(p, m, (f, b, w, c), mem)
                    except TypeError:
                        # no building block fits the limit: schedule() has nothing to return
                        print(",".join(map(str, row + ["none", "", "", "", "", ""])))
                        continue
                    orders = orders_of(result)
                    span, makespan, peaks = check_and_replay(orders, m, f, b, w, c)
                    # the module's own cost of the order it returned: per rank, the end of its
                    # last W or w minus the start of its first F, the largest over ranks
                    theirs = module.evaluate_schedule(orders, f, b, w, c)
                    if abs(span - theirs) > 1e-9 * max(1.0, theirs):
                        raise SystemExit(f"replayed span {span} != theirs {theirs} at {row}")
                    if max(peaks) > mem:
                        raise SystemExit(f"peak {max(peaks)} above the limit at {row}")
                    print(",".join(map(str, row + ["ok", span, makespan, max(peaks),
                                                   " ".join(map(str, peaks)), "/".join(orders)])))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
