"""PyTorch baseline for AxoNN's training-step benchmark: one eager GPT-2 step on CPU, in fp32 or bf16.

    /usr/bin/python3 bench/pytorch_step.py --model gpt2-tiny --batch 2 --seq 32 [--threads 1] [--iters 10]
                                           [--precision fp32|bf16]

A step is what axonn's trainer does: zero grads, forward, masked cross-entropy, backward, global-norm clip,
scheduled lr, AdamW (non-fused). The model is the parity oracle's (tests/reference/gpt2_reference.py), so
both sides time the same maths. --precision bf16 is PyTorch's mixed precision as its AMP guide describes it: the
forward and the loss run under torch.autocast("cpu", dtype=torch.bfloat16) (its matmuls on bf16 inputs), the
backward outside the autocast context; master weights, gradients and AdamW stay fp32 (no grad scaler: bf16 has
fp32's exponent range). Timing matches AxoNN: run --iters steps, report the mean of all but the first two
(warm-up: allocator, thread pool, first-touch of optimizer state). Prints one JSON object: tokens/s, model FLOP/s,
peak RSS (read before the GEMM measurement below, so it is the step's alone), and the GEMM rate PyTorch itself
reaches in that precision (a 1024^3 matmul of float32 or bfloat16 tensors, best of three after one untimed), on
one thread and on the run's threads.
"""

import argparse
import contextlib
import inspect
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import gpt2_reference as ref  # noqa: E402

# axonn's GPT-2 presets (src/axonn/families/gpt2/gpt2_config.cpp): layers, heads, width, context; GPT-2's vocabulary,
# padded to a multiple of 64 as axonn pads it.
MODELS = {
    name: dict(n_layer=L, n_head=NH, n_embd=C, vocab_size=50257, padded_vocab_size=50304, block_size=maxT)
    for name, (L, NH, C, maxT) in {
        "gpt2-micro": (2, 8, 64, 64),
        "gpt2-tiny": (2, 4, 128, 256),
        "gpt2-mini": (4, 4, 256, 256),
        "gpt2-small": (12, 12, 768, 1024),
        "gpt2-medium": (24, 16, 1024, 1024),
        "gpt2-large": (36, 20, 1280, 1024),
        "gpt2-xl": (48, 25, 1600, 1024),
    }.items()
}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# GPT-2 style hyperparameters; the values do not change the cost of a step, only its numbers.
HYPER = dict(steps=1000, lr=6e-4, min_lr=6e-5, warmup_steps=100, weight_decay=0.1, beta1=0.9, beta2=0.95, eps=1e-8,
             grad_clip=1.0)
WARMUP_ITERS = 2


def init_params(cfg, generator):
    """GPT-2 initialisation (N(0, 0.02) matrices, unit LayerNorm gains, zero biases), fp32."""
    params = {}
    for name, shape in ref.param_shapes(cfg).items():
        if name in ref.DECAYED:
            t = torch.randn(shape, generator=generator) * 0.02
        elif name in ("ln1w", "ln2w", "lnfw"):
            t = torch.ones(shape)
        else:
            t = torch.zeros(shape)
        params[name] = t.requires_grad_()
    return params


def bf16_autocast():
    """PyTorch's mixed precision on CPU: the forward's matmuls on bf16 inputs (its AMP recipe)."""
    return torch.autocast("cpu", dtype=torch.bfloat16)


FORWARD_CONTEXTS = {"fp32": contextlib.nullcontext, "bf16": bf16_autocast}


def matmul_rate(dtype, size=1024):
    """The GEMM rate PyTorch reaches here in dtype on the process's threads (size^3, best of three after one
    untimed): shows whether its BLAS (fp32) or oneDNN (bf16) runs at full speed, which a comparison needs."""
    a, b = torch.rand(size, size).to(dtype), torch.rand(size, size).to(dtype)
    a @ b
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2.0 * size ** 3 / best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="gpt2-tiny")
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--seq", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--precision", choices=sorted(DTYPES), default="fp32",
                        help="fp32, or bf16 mixed precision (autocast forward and loss, fp32 weights and AdamW)")
    args = parser.parse_args()
    cfg = dict(MODELS[args.model], **HYPER)
    if not 1 <= args.seq <= cfg["block_size"] or args.batch < 1 or args.iters <= WARMUP_ITERS or args.threads < 1:
        parser.error(f"need 1 <= seq <= {cfg['block_size']}, batch >= 1, threads >= 1, iters > {WARMUP_ITERS}")
    torch.set_num_threads(args.threads)
    # Denormals flushed on every thread, as axonn flushes its own: a step whose gradients turn denormal would
    # otherwise slow down many times over on CPUs that handle them in microcode.
    torch.set_flush_denormal(True)

    generator = torch.Generator().manual_seed(1234)
    params = init_params(cfg, generator)
    V, B, T = cfg["vocab_size"], args.batch, args.seq
    batch = {"tokens": torch.randint(0, V, (B, T), generator=generator),
             "targets": torch.randint(0, V, (B, T), generator=generator),
             "loss_mask": torch.ones(B, T)}
    # torch >= 2.0 has a fused AdamW; ask for the plain one explicitly there (1.13 only has the plain one).
    extra = {"fused": False} if "fused" in inspect.signature(torch.optim.AdamW.__init__).parameters else {}
    opt = ref.make_optimizer(params, cfg, **extra)

    times = []
    for step in range(args.iters):
        start = time.perf_counter()
        loss, _ = ref.train_step(params, opt, step, batch, cfg, FORWARD_CONTEXTS[args.precision])
        loss.item()  # the step is complete once its loss is readable (matters only for asynchronous backends)
        times.append(time.perf_counter() - start)
    step_s = sum(times[WARMUP_ITERS:]) / (args.iters - WARMUP_ITERS)

    # N counts the real vocabulary rows of wte (V*C, not Vp*C) and includes wpe.
    n_params = sum(p.numel() for p in params.values()) - (cfg["padded_vocab_size"] - V) * cfg["n_embd"]
    peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # ru_maxrss is KiB on Linux
    dtype = DTYPES[args.precision]
    # torch.set_num_threads does not reach Debian's OpenBLAS (its own pool of threads, sized from OMP_NUM_THREADS
    # when it loads), so an fp32 matmul in a two-thread process runs on two threads whatever torch is told: the
    # one-thread rate is measured only in a one-thread process.
    gemm = matmul_rate(dtype)
    gemm_one_thread = gemm if args.threads == 1 else None
    flops_per_token = 6 * n_params + 6 * cfg["n_layer"] * cfg["n_embd"] * T
    tokens_per_s = B * T / step_s
    print(json.dumps({
        "model": args.model, "batch": B, "seq": T, "threads": args.threads, "precision": args.precision,
        "step_s": step_s, "tokens_per_s": tokens_per_s, "model_flops_per_s": flops_per_token * tokens_per_s,
        "peak_rss_bytes": peak_rss_bytes,
        # this process's 1024^3 matmul in the run's precision, best of three: on the run's threads, and on one
        "gemm_flops_per_s": gemm, "gemm_flops_per_s_one_thread": gemm_one_thread,
        "torch_version": torch.__version__,
    }))


if __name__ == "__main__":
    main()
