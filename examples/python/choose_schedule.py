"""Choose a pipeline schedule for measured stage times and hand it to torchtitan.

Builds the candidate schedules for 4 pipeline ranks and 16 microbatches, checks each one,
replays it with per-stage times measured on the model (milliseconds of one microbatch through
one stage; the last stage carries the output layer and the loss), keeps the fastest whose peak
activation memory fits, and writes it as the CSV that torchtitan's
--parallelism.pipeline_parallel_schedule_csv (PyTorch's _load_csv) reads.

    python3 examples/python/choose_schedule.py schedule.csv

Needs the pipesched package (README.md, "Python").
"""

import sys

import pipesched as ps

RANKS, MICROBATCHES = 4, 16
# Measured per stage of the one-chunk split (ms): forward, input gradient, weight gradient.
MEASURED = [(2.1, 2.3, 1.9), (2.0, 2.2, 1.8), (2.0, 2.2, 1.8), (2.9, 3.1, 2.4)]
MEMORY_LIMIT = 1.0 * RANKS  # activations of one microbatch through one rank's layers, per rank


def costs_for(s: ps.Schedule) -> ps.Costs:
    """The measured times split over the chunks: with v chunks per rank, stage k * p + r holds
    1/v of rank r's layers (the placement of s says which rank runs which stage)."""
    v = s.chunks
    per_stage = []
    for stage in range(s.stages):
        rank = stage % RANKS if s.placement == "loop" else min(stage, 2 * RANKS - 1 - stage)
        f, i, w = (t / v for t in MEASURED[rank])
        per_stage.append(ps.StageCosts(forward=f, backward=i + w, backward_input=i, backward_weight=w,
                                       activation_memory=1.0 / v, weight_memory=0.5 / v))
    return ps.Costs(per_stage=per_stage, p2p=0.05)


def main(out_path: str) -> int:
    rows = []
    for name in ["1F1B", "Interleaved1F1B", "ZBH1", "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"]:
        s = ps.schedule(name, ranks=RANKS, microbatches=MICROBATCHES)
        verdict = s.validate()
        if not verdict:
            print(f"{name}: invalid: {verdict.message}")
            return 1
        sim = s.simulate(costs_for(s), timeline=False)
        peak = max(r.peak_memory for r in sim.ranks)
        rows.append((sim.makespan, name, s, sim.bubble_fraction, peak))
    print(f"{'schedule':24} {'iteration ms':>12} {'bubble':>7} {'peak memory':>11}")
    for makespan, name, _, bubble, peak in sorted(rows, key=lambda row: row[0]):
        print(f"{name:24} {makespan:12.2f} {bubble:7.3f} {peak:11.2f}")
    fitting = [row for row in sorted(rows, key=lambda row: row[0]) if row[4] <= MEMORY_LIMIT]
    if not fitting:
        print("no schedule fits the memory limit")
        return 1
    best = fitting[0]
    best[2].to_csv(out_path)
    # What torchtitan will read back is the schedule we chose.
    assert ps.read_csv(out_path).actions() == best[2].actions()
    print(f"chose {best[1]}: {best[0]:.2f} ms per iteration; wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "schedule.csv"))
