#!/usr/bin/env python3
"""Overlap of communication with computation, measured on a slow network (scripts/slow-network).

For each grid, a model and batch for which the step's communication takes about as long as its computation:
`axonn bench` with --overlap off, then on, inside the same rate-limited network namespace. Prints a Markdown
table: the step time of each, the ratio, the communication time of the blocking step (all of it waited), the part
still waited with overlap on, and the fraction hidden (1 - waited with overlap / communication without). With
--trace-dir, also writes a trace of the first grid's last step, blocking and overlapped, and a PNG of both
(bench/plot_timeline.py).

    /usr/bin/python3 bench/overlap_slow_network.py [--trace-dir runs/overlap]

Needs the build (scripts/build), iproute2 and util-linux (unshare, tc), and root or user namespaces; the picture
needs python3-matplotlib.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AXONN = os.path.join(ROOT, "build", "axonn")

SMALL = ["--model", "gpt2-tiny", "--n-layer", "8", "--n-embd", "256", "--vocab", "512", "--seq", "128"]
WIDE = ["--model", "gpt2-tiny", "--n-layer", "8", "--n-embd", "512", "--n-head", "8", "--vocab", "512", "--seq", "128"]

# (grid, ranks, model, global batch, link rate): chosen so that communication ≈ computation on a 2-vCPU machine.
CASES = [
    ("data=2", 2, SMALL, 24, "1gbit"),
    ("z=2", 2, SMALL, 32, "1gbit"),
    ("y=2", 2, WIDE, 16, "2gbit"),
    ("z=2,y=2", 4, WIDE, 16, "8gbit"),
]


def bench(grid, ranks, model, batch, rate, overlap, trace=None):
    mpirun = ["mpirun", "--oversubscribe", "-x", "OMP_NUM_THREADS=1"]
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    command = [os.path.join(ROOT, "scripts", "slow-network"), "--rate", rate, "--", *mpirun, "-np", str(ranks),
               AXONN, "bench", *model, "--batch", str(batch), "--grid", grid, "--overlap", overlap, "--json"]
    if trace:
        command += ["--trace", trace, "--overwrite"]  # this script's own trace of an earlier run, replaced
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace-dir", help="write the first grid's traces and timeline picture here")
    args = parser.parse_args()
    print(f"date {datetime.date.today()} | {platform.processor() or platform.machine()} | "
          f"one rank per process, 1 thread each, ranks oversubscribed on {os.cpu_count()} vCPUs")
    print("| grid | ranks | link | model | batch | step, overlap off (s) | step, on (s) | on / off | "
          "communication, off (s) | waited, on (s) | hidden |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for index, (grid, ranks, model, batch, rate) in enumerate(CASES):
        traces = {}
        if args.trace_dir and index == 0:
            os.makedirs(args.trace_dir, exist_ok=True)
            traces = {o: os.path.join(args.trace_dir, f"trace-overlap-{o}.json") for o in ("off", "on")}
        off = bench(grid, ranks, model, batch, rate, "off", traces.get("off"))
        on = bench(grid, ranks, model, batch, rate, "on", traces.get("on"))
        width = model[model.index("--n-embd") + 1]
        print(f"| {grid} | {ranks} | {rate} | 8 layers, width {width} | {batch} x 128 | {off['step_s']:.3f} | "
              f"{on['step_s']:.3f} | {on['step_s'] / off['step_s']:.2f} | {off['comm_exposed_s']:.3f} | "
              f"{on['comm_exposed_s']:.3f} | {100 * (1 - on['comm_exposed_s'] / off['comm_exposed_s']):.0f}% |",
              flush=True)
        if traces:
            picture = os.path.join(args.trace_dir, "timeline.png")
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "plot_timeline.py"), traces["off"],
                            traces["on"], "--labels", "overlap off", "overlap on", "--out", picture, "--title",
                            f"grid {grid}, {rate} link, {batch} x 128 tokens"], check=True)
            print(f"\ntimeline of the last step, rank 0: {picture}")


if __name__ == "__main__":
    main()
