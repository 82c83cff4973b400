#!/usr/bin/env python3
"""Draws rank 0's timeline from Chrome traces written by `axonn train --trace` or `axonn bench --trace`, one panel
per trace (for example blocking above overlapped): the kernels, the waits for collectives, and the collectives in
flight on each group, over the same time axis.

    /usr/bin/python3 bench/plot_timeline.py off.json on.json --labels "overlap off" "overlap on" --out timeline.png
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"kernel": "#4c72b0", "wait": "#c44e52", "collective": "#55a868"}


def rank_spans(path, pid=0):
    with open(path) as file:
        events = json.load(file)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name" and e["pid"] == pid}
    spans = [e for e in events if e.get("ph") == "X" and e["pid"] == pid and e["cat"] in COLOURS]
    return spans, names


def draw(axis, path, label):
    spans, names = rank_spans(path)
    start = min(s["ts"] for s in spans)
    rows = {}  # track label -> row
    for span in sorted(spans, key=lambda s: s["tid"]):
        # A group's lanes (collectives in flight together) share one row here.
        track = "compute" if span["cat"] in ("kernel", "wait") else names.get(span["tid"], "comm").split(" #")[0]
        row = rows.setdefault(track, len(rows))
        axis.broken_barh([((span["ts"] - start) / 1e3, span["dur"] / 1e3)], (row - 0.4, 0.8),
                         facecolors=COLOURS[span["cat"]], linewidth=0)
    axis.set_yticks(range(len(rows)), list(rows))
    axis.invert_yaxis()
    axis.set_title(label, loc="left", fontsize=10)
    return max((s["ts"] + s["dur"] - start) / 1e3 for s in spans)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--labels", nargs="+", help="one per trace (default: the file names)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    figure, axes = plt.subplots(len(args.traces), 1, figsize=(12, 2.2 + 1.8 * len(args.traces)), sharex=True,
                                squeeze=False)
    ends = []
    labels = args.labels or [path.rsplit("/", 1)[-1] for path in args.traces]
    for axis, path, label in zip(axes[:, 0], args.traces, labels):
        ends.append(draw(axis, path, f"{label}: rank 0, one training step"))
    axes[-1, 0].set_xlabel("milliseconds")
    axes[-1, 0].set_xlim(0, max(ends))
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    figure.legend(handles, ["kernel", "waiting for a collective", "collective in flight"], loc="upper right",
                  ncol=3, fontsize=9)
    figure.suptitle(args.title, x=0.01, ha="left")
    figure.tight_layout(rect=(0, 0, 1, 0.94))
    figure.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
