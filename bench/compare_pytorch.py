"""axonn against PyTorch on the same GPT-2 training step, measured side by side in one run.

    /usr/bin/python3 bench/compare_pytorch.py [--shapes 4x64 8x256] [--model gpt2-small] [--threads 1]

For each B x T shape it runs `build/axonn bench --json` and then bench/pytorch_step.py (forward + backward +
AdamW, same shapes, same threads, 10 iterations averaging the last 8), and prints a Markdown table for
docs/PERFORMANCE.md. Both MFUs use the denominator axonn measured: the machine's single-core fp32 GEMM rate.
PyTorch runs at its best, as its CPU tuning guide asks: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which some of
these machines set to hold OpenBLAS to older kernels, are removed from its environment alone; and it runs on
jemalloc told to keep freed memory (glibc hands PyTorch's large freed tensors back to the kernel, and on these
virtual machines touching fresh pages again costs more than the step's GEMMs: 29 instead of 166 tokens/s at
B = 4, T = 64). The table prints the fp32 GEMM rate PyTorch reaches next to axonn's. Run it on a quiet machine: the two vCPUs here may share one core's vector units.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import datetime

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
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(output.strip().splitlines()[-1])


def torch_blas():
    """The BLAS library PyTorch's matmul really runs on (Debian's torch links the generic libblas.so.3,
    which update-alternatives points at OpenBLAS when it is installed, else at the slow reference BLAS)."""
    import torch
    torch.ones(64, 64) @ torch.ones(64, 64)
    with open("/proc/self/maps") as maps:
        libraries = {line.split()[-1] for line in maps if "blas" in line.lower()}
    return ", ".join(sorted(os.path.realpath(path) for path in libraries)) or "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gpt2-small")
    parser.add_argument("--shapes", nargs="+", default=["4x64", "8x256"], help="BxT pairs")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    print(f"date {datetime.date.today()} | {platform.processor() or platform.machine()} | threads {args.threads} | "
          f"PyTorch BLAS: {torch_blas()} (run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset and jemalloc; this environment sets "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'nothing')})", file=sys.stderr)
    rows = []
    for shape in args.shapes:
        batch, seq = (int(x) for x in shape.split("x"))
        ours = run_json([os.path.join(ROOT, "build", "axonn"), "bench", "--model", args.model, "--batch", str(batch),
                         "--seq", str(seq), "--threads", str(args.threads), "--json"], args.threads)
        theirs = run_json(["/usr/bin/python3", os.path.join(ROOT, "bench", "pytorch_step.py"), "--model", args.model,
                           "--batch", str(batch), "--seq", str(seq), "--threads", str(args.threads)], args.threads,
                          full_speed_pytorch=True)
        peak = ours["gemm_flops_per_s"]
        rows.append((batch, seq, ours, theirs, peak))

    print("| B | T | axonn tokens/s | axonn GFLOP/s | axonn MFU | axonn peak RSS | PyTorch tokens/s | "
          "PyTorch GFLOP/s | PyTorch MFU | PyTorch peak RSS | speed-up |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for batch, seq, ours, theirs, peak in rows:
        print(f"| {batch} | {seq} | {ours['tokens_per_s']:.1f} | {ours['model_flops_per_s'] / 1e9:.1f} | "
              f"{100 * ours['mfu']:.1f}% | {ours['peak_rss_bytes'] / 2**20:.0f} MiB | {theirs['tokens_per_s']:.1f} | "
              f"{theirs['model_flops_per_s'] / 1e9:.1f} | {100 * theirs['model_flops_per_s'] / peak:.1f}% | "
              f"{theirs['peak_rss_bytes'] / 2**20:.0f} MiB | {ours['tokens_per_s'] / theirs['tokens_per_s']:.2f}x |")
    ours_rates = ", ".join(f"{r[4] / 1e9:.1f}" for r in rows)
    theirs_rates = ", ".join(f"{r[3]['gemm_flops_per_s'] / 1e9:.1f}" for r in rows)
    print(f"\nMFU denominator (axonn's measured single-core fp32 GEMM x threads): {ours_rates} GFLOP/s; "
          f"PyTorch's own 2048^3 fp32 matmul in the same runs: {theirs_rates} GFLOP/s")


if __name__ == "__main__":
    main()
