"""axonn against PyTorch on the same GPT-2 training step, measured side by side in one run.

    /usr/bin/python3 bench/compare_pytorch.py [--shapes 4x64 8x256] [--model gpt2-small] [--threads 1]

For each B x T shape it runs `build/axonn bench --json` and then bench/pytorch_step.py (forward + backward +
AdamW, same shapes, same threads, 10 iterations averaging the last 8), and prints a Markdown table for
docs/PERFORMANCE.md. Both MFUs use the denominator axonn measured: the machine's single-core fp32 GEMM rate.
Run it on a quiet machine: the two vCPUs here share one core's vector units.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_json(command, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
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
          f"PyTorch BLAS: {torch_blas()} (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')})", file=sys.stderr)
    rows = []
    for shape in args.shapes:
        batch, seq = (int(x) for x in shape.split("x"))
        ours = run_json([os.path.join(ROOT, "build", "axonn"), "bench", "--model", args.model, "--batch", str(batch),
                         "--seq", str(seq), "--threads", str(args.threads), "--json"], args.threads)
        theirs = run_json(["/usr/bin/python3", os.path.join(ROOT, "bench", "pytorch_step.py"), "--model", args.model,
                           "--batch", str(batch), "--seq", str(seq), "--threads", str(args.threads)], args.threads)
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
    print(f"\nMFU denominator (measured single-core fp32 GEMM x threads): "
          f"{', '.join(f'{r[4] / 1e9:.1f}' for r in rows)} GFLOP/s")


if __name__ == "__main__":
    main()
