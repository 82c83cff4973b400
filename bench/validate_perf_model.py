"""Validate the performance model: predicted against measured step time and exposed communication for every grid of
the ranks (and, with --orders, several rank orders of the axes), on a slow network, side by side in one run.

    /usr/bin/python3 bench/validate_perf_model.py [--rate 1gbit] [--model gpt2-tiny] [--batch 8] [--seq 64]
                                                  [--overlap on] [--nodes N --ranks-per-node R]
                                                  [--orders x,y,z,data data,z,y,x]

1. Inside scripts/slow-network (a private network namespace whose loopback is rate-limited with tc tbf, OpenMPI on
   TCP; with --nodes, N simulated nodes of R ranks, shared memory inside a node and the slow loopback between),
   `axonn calibrate` measures a profile of that network (GEMM, memory and all-reduce rates; between nodes too).
2. For every grid of the ranks the model allows, and every order of --orders, `axonn bench --grid G --grid-order O
   --overlap O --json` runs 10 steps inside the same network and reports the average of the last 8 (the slowest
   rank's step; rank 0's waited time).
3. `axonn plan --machine <that profile> --precision fp32 --overlap O --grid-order O` predicts each grid's step time
   and exposed communication (the trainer computes in fp32), with the same overlap as the runs.
It prints a Markdown table, the Spearman rank correlation of the step times, whether the predicted best (grid,
order) is the measured best and by how much it trails it, and the mean relative errors, for docs/PERFORMANCE.md.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AXONN = os.path.join(ROOT, "build", "axonn")


def slow(args, command):
    """Runs command (a list) under mpirun inside the slow network; returns its stdout."""
    ranks_total = args.nodes * args.ranks_per_node
    mpirun = ["mpirun", "--oversubscribe", "-np", str(ranks_total)] + (
        ["--allow-run-as-root"] if os.geteuid() == 0 else [])
    network = [os.path.join(ROOT, "scripts", "slow-network"), "--rate", args.rate]
    if args.nodes > 1:
        network += ["--nodes", str(args.nodes), "--ranks-per-node", str(args.ranks_per_node)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(network + ["--"] + mpirun + command, check=True, capture_output=True, text=True,
                          env=env).stdout


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):  # average ranks of ties
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    mean_a, mean_b = sum(ra) / len(ra), sum(rb) / len(rb)
    covariance = sum((x - mean_a) * (y - mean_b) for x, y in zip(ra, rb))
    spread = (sum((x - mean_a) ** 2 for x in ra) * sum((y - mean_b) ** 2 for y in rb)) ** 0.5
    return covariance / spread


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", default="1gbit")
    parser.add_argument("--model", default="gpt2-tiny")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--overlap", choices=["on", "off"], default="on")
    parser.add_argument("--nodes", type=int, default=1, help="simulated nodes (scripts/slow-network --nodes)")
    parser.add_argument("--ranks-per-node", type=int, default=4, help="ranks per node (all of them with one node)")
    parser.add_argument("--orders", nargs="+", default=["x,y,z,data"], help="rank orders of the axes to compare")
    args = parser.parse_args()
    ranks_total = args.nodes * args.ranks_per_node

    profile = os.path.join(tempfile.mkdtemp(), "slow.toml")
    slow(args, [AXONN, "calibrate", "--quick", "--name", "slow-network", "--out", profile])
    rows = []
    for order in args.orders:
        plan = json.loads(subprocess.run(
            [AXONN, "plan", "--model", args.model, "--gpus", str(ranks_total), "--machine", profile, "--batch",
             str(args.batch), "--seq", str(args.seq), "--precision", "fp32", "--overlap", args.overlap,
             "--grid-order", order, "--json"], check=True, capture_output=True, text=True).stdout)
        for candidate in plan:
            g = candidate["grid"]
            grid = f"data={g['data']},z={g['z']},y={g['y']},x={g['x']}"
            output = slow(args, [AXONN, "bench", "--model", args.model, "--batch", str(args.batch), "--seq",
                                 str(args.seq), "--grid", grid, "--grid-order", order, "--overlap", args.overlap,
                                 "--json"])
            result = json.loads(output.strip().splitlines()[-1])
            rows.append((grid, order, candidate["time_s"], candidate["exposed_comm_s"], result["step_s"],
                         result["comm_exposed_s"]))
            print(f"{grid} {order}: predicted {candidate['time_s']:.3f} s, measured {result['step_s']:.3f} s",
                  file=sys.stderr)

    network = (f"{args.nodes} simulated nodes x {args.ranks_per_node} ranks" if args.nodes > 1
               else f"{ranks_total} ranks on one node")
    print(f"date {datetime.date.today()} | model {args.model} | batch {args.batch} x {args.seq} | {network} | "
          f"loopback rate-limited to {args.rate} | overlap {args.overlap}")
    print("| grid | order | predicted s/step | measured s/step | error | predicted exposed comm. (s) | measured (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for grid, order, predicted, exposed, measured, measured_exposed in sorted(rows, key=lambda r: r[4]):
        print(f"| {grid} | {order} | {predicted:.3f} | {measured:.3f} | {abs(predicted - measured) / measured:.1%} | "
              f"{exposed:.3f} | {measured_exposed:.3f} |")
    predicted = [r[2] for r in rows]
    measured = [r[4] for r in rows]
    error = sum(abs(p - m) / m for p, m in zip(predicted, measured)) / len(rows)
    chosen = min(rows, key=lambda r: r[2])
    best = min(rows, key=lambda r: r[4])
    print(f"\nSpearman rank correlation of the step times {spearman(predicted, measured):.3f} over {len(rows)} "
          f"(grid, order) pairs; mean relative error of the step time {error:.1%}. Predicted best {chosen[0]} "
          f"({chosen[1]}), measured {chosen[4]:.3f} s; measured best {best[0]} ({best[1]}), {best[4]:.3f} s: the "
          f"prediction's choice is {chosen[4] / best[4] - 1:.1%} slower.")


if __name__ == "__main__":
    main()
