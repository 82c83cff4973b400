"""axonn against PyTorch on the same GPT-2 training step, in fp32 and bf16, on one core and on every core.

    /usr/bin/python3 bench/compare_pytorch.py [--model gpt2-small] [--shapes 4x64 8x256] [--precisions fp32 bf16]
                                              [--threads 1 N] [--iters 10] [--repeats 1] [--json OUT]

For each B x T shape, precision and thread count it runs `build/axonn bench --precision P --json` and then
bench/pytorch_step.py (forward + backward + AdamW, same shapes, same precision, same threads, --iters iterations
averaging all but the first two), and prints Markdown tables for docs/PERFORMANCE.md: one row per run (tokens/s,
speed-up, MFU, peak memory), then the ratios per shape (bf16/fp32 and every-core/one-core tokens/s of each
program). --threads defaults to 1 and this machine's CPU count; --shapes 1x1024 is gpt2-small's full context,
where the attention's T x T dominates. --json OUT also writes every row, with both programs' JSON, as a JSON list.
--repeats R runs each pair R times, axonn and PyTorch in turn, and prints medians with their range: on a shared
virtual machine one run's speed can drift by 20%, so one pair of runs can make either side look better than it is.
The speed-up is the median of the R pairs' own ratios (each pair ran minutes apart, under the same drift).

bf16 is mixed precision on both sides: axonn's GEMMs on bf16 inputs with fp32 accumulation; PyTorch's forward
and loss under torch.autocast("cpu", dtype=torch.bfloat16), its backward outside it; fp32 master weights and
AdamW on both. If axonn runs a bf16 request in fp32 (a CPU without native bf16), the row is marked.
Both MFUs use the denominator axonn measured: its single-core GEMM rate in the row's precision x threads (bf16
rows: the bf16 rate), and the same model FLOPs per token (6N + 6LCT, axonn's count). The header prints the GEMM
rates PyTorch itself reaches next to axonn's (a 1024^3 matmul in fp32 and in bf16, in the same processes).
PyTorch runs at its best, as its CPU tuning guide asks: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which some of
these machines set to hold OpenBLAS to older kernels, are removed from its environment alone; and it runs on
jemalloc told to keep freed memory (glibc hands PyTorch's large freed tensors back to the kernel, and on these
virtual machines touching fresh pages again costs more than the step's GEMMs: 29 instead of 166 tokens/s at
B = 4, T = 64); and bench/pytorch_step.py flushes denormals (torch.set_flush_denormal(True)), as axonn does. Run it on a quiet machine: the two vCPUs here may share one core's vector units.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def pytorch_at_its_best(env):
    """PyTorch's environment: OpenBLAS on its own kernels, jemalloc keeping freed memory for reuse."""
    if not os.path.exists(JEMALLOC):
        sys.exit(f"error: {JEMALLOC} is missing; run scripts/install-deps --test (it installs libjemalloc2)")
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env["LD_PRELOAD"] = JEMALLOC
    env["MALLOC_CONF"] = "dirty_decay_ms:-1,muzzy_decay_ms:-1,retain:true"
    return env


def run_json(command, threads, full_speed_pytorch=False):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if full_speed_pytorch:
        env = pytorch_at_its_best(env)
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command)} exited with {result.returncode}:\n{result.stderr}")
    if result.stderr.strip():  # axonn's warnings (a bf16 fallback, threads past the CPUs) are worth seeing
        print(result.stderr.strip(), file=sys.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def torch_blas():
    """The BLAS library PyTorch's matmul really runs on (Debian's torch links the generic libblas.so.3,
    which update-alternatives points at OpenBLAS when it is installed, else at the slow reference BLAS)."""
    import torch
    torch.ones(64, 64) @ torch.ones(64, 64)
    with open("/proc/self/maps") as maps:
        libraries = {line.split()[-1] for line in maps if "blas" in line.lower()}
    return ", ".join(sorted(os.path.realpath(path) for path in libraries)) or "unknown"


def cpu_model():
    """lscpu's "Model name" (platform.processor() is empty on most Linux systems)."""
    try:
        output = subprocess.run(["lscpu"], capture_output=True, text=True, env=dict(os.environ, LC_ALL="C")).stdout
    except OSError:
        return "unknown CPU"
    names = [line.split(":", 1)[1].strip() for line in output.splitlines() if line.startswith("Model name:")]
    return names[0] if names else "unknown CPU"


def shape(text):
    try:
        batch, seq = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not BxT (e.g. 4x64)")
    if batch < 1 or seq < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: B and T must be positive")
    return batch, seq


def run_pair(args, batch, seq, precision, threads):
    """axonn, then PyTorch, on one shape, precision and thread count: their JSON results."""
    ours = run_json([os.path.join(ROOT, "build", "axonn"), "bench", "--model", args.model, "--batch", str(batch),
                     "--seq", str(seq), "--threads", str(threads), "--precision", precision,
                     "--iters", str(args.iters), "--json"], threads)
    theirs = run_json(["/usr/bin/python3", os.path.join(ROOT, "bench", "pytorch_step.py"), "--model", args.model,
                       "--batch", str(batch), "--seq", str(seq), "--threads", str(threads),
                       "--precision", precision, "--iters", str(args.iters)], threads, full_speed_pytorch=True)
    return ours, theirs


def with_range(values, form):
    """The median of some runs' figures, and their range in parentheses when there was more than one run."""
    text = form.format(statistics.median(values))
    return text if len(values) == 1 else f"{text} ({form.format(min(values))}-{form.format(max(values))})"


def measure(args, batch, seq, precision, threads):
    """One row: both programs on one shape, precision and thread count, --repeats times in turn, with the derived
    figures (medians over the runs; the speed-up the median of each pair's own ratio)."""
    pairs = []
    for repeat in range(args.repeats):
        if args.repeats > 1:
            print(f"  run {repeat + 1} of {args.repeats}", file=sys.stderr)
        pairs.append(run_pair(args, batch, seq, precision, threads))
    ours_runs, theirs_runs = [p[0] for p in pairs], [p[1] for p in pairs]
    ours, theirs = pairs[0]  # the precision run and the FLOPs counted are the same in every run
    fell_back = ours.get("precision", "fp32") != precision
    if fell_back:
        print(f"note: {batch}x{seq} on {threads} thread(s): axonn ran {precision} as {ours.get('precision')} "
              f"(this CPU has no native {precision}); its row is marked and its MFU is against the "
              f"{ours.get('precision')} GEMM rate", file=sys.stderr)
    # One count of model FLOPs per token for both (axonn's 6N + 6LCT); pytorch_step.py computes the same.
    flops_per_token = ours["model_flops_per_s"] / ours["tokens_per_s"]
    theirs_count = theirs["model_flops_per_s"] / theirs["tokens_per_s"]
    if abs(theirs_count - flops_per_token) > 1e-6 * flops_per_token:
        print(f"note: model FLOPs per token differ: axonn {flops_per_token:.6g}, pytorch_step.py {theirs_count:.6g}; "
              "both MFUs use axonn's", file=sys.stderr)
    # Each run's MFU against the GEMM rate axonn measured in that same run (its precision x threads).
    axonn_mfus = [flops_per_token * o["tokens_per_s"] / o["gemm_flops_per_s"] for o in ours_runs]
    pytorch_mfus = [flops_per_token * t["tokens_per_s"] / o["gemm_flops_per_s"] for o, t in pairs]
    speedups = [o["tokens_per_s"] / t["tokens_per_s"] for o, t in pairs]
    peak_rss_ours = max(o["peak_rss_bytes"] for o in ours_runs)
    peak_rss_theirs = max(t["peak_rss_bytes"] for t in theirs_runs)
    return {
        "model": args.model, "batch": batch, "seq": seq, "precision": precision, "threads": threads,
        "axonn_precision": ours.get("precision", "fp32"), "axonn_fell_back": fell_back,
        "flops_per_token": flops_per_token,
        "mfu_denominator_flops_per_s": statistics.median([o["gemm_flops_per_s"] for o in ours_runs]),
        "runs": len(pairs),
        "axonn_tokens_per_s": statistics.median([o["tokens_per_s"] for o in ours_runs]),
        "pytorch_tokens_per_s": statistics.median([t["tokens_per_s"] for t in theirs_runs]),
        "axonn_runs_tokens_per_s": [o["tokens_per_s"] for o in ours_runs],
        "pytorch_runs_tokens_per_s": [t["tokens_per_s"] for t in theirs_runs],
        "speedup": statistics.median(speedups), "runs_speedup": speedups,
        "axonn_mfu": statistics.median(axonn_mfus), "pytorch_mfu": statistics.median(pytorch_mfus),
        "runs_axonn_mfu": axonn_mfus, "runs_pytorch_mfu": pytorch_mfus,
        "axonn_peak_rss_bytes": peak_rss_ours, "pytorch_peak_rss_bytes": peak_rss_theirs,
        "memory_ratio": peak_rss_ours / peak_rss_theirs,
        "axonn_runs": ours_runs, "pytorch_runs": theirs_runs,
    }


def gflops(values):
    """The median of some FLOP/s measurements, in GFLOP/s ('-' when there are none)."""
    return f"{statistics.median(values) / 1e9:.1f}" if values else "-"


def header(rows, threads_list):
    """The date, CPU, GEMM rates (axonn's single-core rate in each precision; PyTorch's on one thread and on the
    most threads, medians over the runs) and PyTorch's BLAS."""
    import torch
    rates = []
    for precision in ("fp32", "bf16"):
        mine = [r for r in rows if r["precision"] == precision]
        if not mine:
            continue
        ours = gflops([o["gemm_flops_per_s"] / r["threads"] for r in mine if not r["axonn_fell_back"]
                       for o in r["axonn_runs"]])
        if all(r["axonn_fell_back"] for r in mine):
            ours = f"n/a (ran {mine[0]['axonn_precision']})"
        theirs_one = gflops([t["gemm_flops_per_s_one_thread"] for r in mine if r["threads"] == 1
                             for t in r["pytorch_runs"]])
        most = max(threads_list)
        theirs_most = gflops([t["gemm_flops_per_s"] for r in mine if r["threads"] == most for t in r["pytorch_runs"]])
        line = f"axonn {precision} {ours} per core, PyTorch {precision} {theirs_one} on 1 thread"
        if most > 1:
            line += f" / {theirs_most} on {most}"
        rates.append(line)
    return (f"date {datetime.date.today()} | {cpu_model()} | {os.cpu_count()} CPUs | GEMM GFLOP/s (1024^3 for "
            f"PyTorch): {'; '.join(rates)} | PyTorch {torch.__version__}, BLAS: {torch_blas()}, bf16 on oneDNN "
            f"(available: {torch.backends.mkldnn.is_available()}), run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE "
            f"unset and jemalloc; this environment sets OPENBLAS_CORETYPE="
            f"{os.environ.get('OPENBLAS_CORETYPE', 'nothing')}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gpt2-small")
    parser.add_argument("--shapes", nargs="+", type=shape, default=[(4, 64), (8, 256)], help="BxT pairs")
    parser.add_argument("--precisions", nargs="+", choices=["fp32", "bf16"], default=["fp32", "bf16"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count() or 1],
                        help="thread counts (default: 1 and this machine's CPU count)")
    parser.add_argument("--iters", type=int, default=10, help="steps per run; the first two are not timed")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each pair, the two programs in turn; medians and ranges are printed")
    parser.add_argument("--json", metavar="OUT", help="also write every row as a JSON list to OUT")
    args = parser.parse_args()
    if any(t < 1 for t in args.threads):
        parser.error("--threads must be positive")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.iters < 3:
        parser.error("--iters must be at least 3 (the first two steps are not timed)")
    threads_list = sorted(set(args.threads))
    shapes = list(dict.fromkeys(args.shapes))
    precisions = list(dict.fromkeys(args.precisions))

    rows = []
    for batch, seq in shapes:
        for precision in precisions:
            for threads in threads_list:
                print(f"running {batch}x{seq} {precision} on {threads} thread(s)...", file=sys.stderr)
                rows.append(measure(args, batch, seq, precision, threads))

    print(header(rows, threads_list))
    print()
    print("| shape (BxT) | precision | threads | axonn tokens/s | PyTorch tokens/s | speed-up | axonn MFU | "
          "PyTorch MFU | axonn peak MiB | PyTorch peak MiB | memory ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        precision = r["precision"] + (f" (axonn ran {r['axonn_precision']})*" if r["axonn_fell_back"] else "")
        print(f"| {r['batch']}x{r['seq']} | {precision} | {r['threads']} | "
              f"{with_range(r['axonn_runs_tokens_per_s'], '{:.1f}')} | "
              f"{with_range(r['pytorch_runs_tokens_per_s'], '{:.1f}')} | {with_range(r['runs_speedup'], '{:.2f}x')} | "
              f"{with_range([100 * m for m in r['runs_axonn_mfu']], '{:.1f}%')} | "
              f"{with_range([100 * m for m in r['runs_pytorch_mfu']], '{:.1f}%')} | "
              f"{r['axonn_peak_rss_bytes'] / 2**20:.0f} | {r['pytorch_peak_rss_bytes'] / 2**20:.0f} | "
              f"{r['memory_ratio']:.2f} |")
    print(f"\nMFU: model FLOPs/s (6N + 6LCT per token, {args.model}) / axonn's measured single-core GEMM rate in the "
          "row's precision x threads, each run against its own; peak MiB: peak RSS of the whole process (the "
          "highest over the runs).")
    if args.repeats > 1:
        print(f"Each figure is the median of {args.repeats} runs, the two programs in turn, with the range in "
              "parentheses; the speed-up is the median of each pair's own ratio.")
    if any(r["axonn_fell_back"] for r in rows):
        print("* axonn had no native bf16 on this CPU and ran fp32; the row's axonn figures are fp32's.")

    # Ratios per shape: bf16 over fp32 at each thread count, and more threads over the fewest at each precision.
    by_key = {(r["batch"], r["seq"], r["precision"], r["threads"]): r for r in rows}
    ratios = []
    fewest = threads_list[0]
    for batch, seq in shapes:
        if "fp32" in precisions and "bf16" in precisions:
            for threads in threads_list:
                fp32, bf16 = by_key[(batch, seq, "fp32", threads)], by_key[(batch, seq, "bf16", threads)]
                mark = "*" if bf16["axonn_fell_back"] else ""
                ratios.append((f"{batch}x{seq}", "bf16 / fp32", f"{threads} thread{'s' * (threads > 1)}",
                               f"{bf16['axonn_tokens_per_s'] / fp32['axonn_tokens_per_s']:.2f}x{mark}",
                               f"{bf16['pytorch_tokens_per_s'] / fp32['pytorch_tokens_per_s']:.2f}x"))
        for precision in precisions:
            for threads in threads_list[1:]:
                one, many = by_key[(batch, seq, precision, fewest)], by_key[(batch, seq, precision, threads)]
                ratios.append((f"{batch}x{seq}", f"{threads} / {fewest} threads", precision,
                               f"{many['axonn_tokens_per_s'] / one['axonn_tokens_per_s']:.2f}x",
                               f"{many['pytorch_tokens_per_s'] / one['pytorch_tokens_per_s']:.2f}x"))
    if ratios:
        print("\n| shape (BxT) | tokens/s ratio | at | axonn | PyTorch |")
        print("| --- | --- | --- | --- | --- |")
        for ratio in ratios:
            print("| " + " | ".join(ratio) + " |")

    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
            out.write("\n")


if __name__ == "__main__":
    main()
