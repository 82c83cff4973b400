"""Validate the performance model: predicted against measured step time and exposed communication for every grid of
4 ranks, on a slow network, side by side in one run.

    /usr/bin/python3 bench/validate_perf_model.py [--rate 1gbit] [--model gpt2-tiny] [--batch 8] [--seq 64]
                                                  [--overlap on]

1. Inside scripts/slow-network (a private network namespace whose loopback is rate-limited with tc tbf, OpenMPI on
   TCP), `axonn calibrate` measures a profile of that network (GEMM, memory and all-reduce rates).
2. For every grid of 4 ranks the model allows, `axonn bench --grid G --overlap O --json` runs 10 steps inside the
   same slow network and reports the average of the last 8 (the slowest rank's step; rank 0's waited time).
3. `axonn plan --machine <that profile> --precision fp32 --overlap O` predicts each grid's step time and exposed
   communication (the trainer computes in fp32), with the same overlap as the runs.
It prints a Markdown table, the Spearman rank correlation of the step times, and the mean relative errors of the
step time and of the exposed communication, for docs/PERFORMANCE.md.
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


def slow(rate, command):
    """Runs command (a list) under mpirun inside the slow network; returns its stdout."""
    mpirun = ["mpirun", "--oversubscribe", "-np", "4"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    full = [os.path.join(ROOT, "scripts", "slow-network"), "--rate", rate, "--"] + mpirun + command
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(full, check=True, capture_output=True, text=True, env=env).stdout


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
    args = parser.parse_args()

    profile = os.path.join(tempfile.mkdtemp(), "slow.toml")
    slow(args.rate, [AXONN, "calibrate", "--quick", "--name", "slow-network", "--out", profile])
    plan = json.loads(subprocess.run(
        [AXONN, "plan", "--model", args.model, "--gpus", "4", "--machine", profile, "--batch", str(args.batch),
         "--seq", str(args.seq), "--precision", "fp32", "--overlap", args.overlap, "--json"], check=True, capture_output=True,
        text=True).stdout)
    rows = []
    for candidate in plan:
        g = candidate["grid"]
        grid = f"data={g['data']},z={g['z']},y={g['y']},x={g['x']}"
        output = slow(args.rate, [AXONN, "bench", "--model", args.model, "--batch", str(args.batch), "--seq",
                                  str(args.seq), "--grid", grid, "--overlap", args.overlap, "--json"])
        result = json.loads(output.strip().splitlines()[-1])
        rows.append((grid, candidate["time_s"], candidate["exposed_comm_s"], result["step_s"],
                     result["comm_exposed_s"]))
        print(f"{grid}: predicted {candidate['time_s']:.3f} s, measured {result['step_s']:.3f} s", file=sys.stderr)

    print(f"date {datetime.date.today()} | model {args.model} | batch {args.batch} x {args.seq} | 4 ranks | "
          f"loopback rate-limited to {args.rate} | overlap {args.overlap}")
    print("| grid | predicted s/step | measured s/step | error | predicted exposed comm. (s) | measured (s) | error |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for grid, predicted, exposed, measured, measured_exposed in sorted(rows, key=lambda r: r[3]):
        print(f"| {grid} | {predicted:.3f} | {measured:.3f} | {abs(predicted - measured) / measured:.1%} | "
              f"{exposed:.3f} | {measured_exposed:.3f} | {abs(exposed - measured_exposed) / measured_exposed:.1%} |")
    predicted = [r[1] for r in rows]
    measured = [r[3] for r in rows]
    error = sum(abs(p - m) / m for p, m in zip(predicted, measured)) / len(rows)
    exposed_error = sum(abs(r[2] - r[4]) / r[4] for r in rows) / len(rows)
    print(f"\nSpearman rank correlation of the step times {spearman(predicted, measured):.3f} over {len(rows)} grids; "
          f"mean relative error of the step time {error:.1%}, of the exposed communication {exposed_error:.1%}")


if __name__ == "__main__":
    main()
