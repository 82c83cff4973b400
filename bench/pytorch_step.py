"""PyTorch baseline for AxoNN's training-step benchmark: one fp32 eager GPT-2 step on CPU.

    /usr/bin/python3 bench/pytorch_step.py --model gpt2-tiny --batch 2 --seq 32 [--threads 1] [--iters 10]

A step is what axonn's trainer does: zero grads, forward, masked cross-entropy, backward, global-norm clip,
scheduled lr, AdamW (non-fused). The model is the parity oracle's (tests/reference/gpt2_reference.py), so
both sides time the same maths. Timing matches AxoNN: run --iters steps, report the mean of all but the first two
(warm-up: allocator, thread pool, first-touch of optimizer state). Prints one JSON object.
"""

import argparse
import inspect
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import gpt2_reference as ref  # noqa: E402

MODELS = {
    "gpt2-small": dict(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, padded_vocab_size=50304, block_size=1024),
    "gpt2-tiny": dict(n_layer=2, n_head=4, n_embd=128, vocab_size=50257, padded_vocab_size=50304, block_size=256),
}
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


def matmul_rate(size=2048):
    """The fp32 GEMM rate PyTorch reaches here (2048^3, best of three after one untimed): shows whether its BLAS
    runs at full speed, which a comparison needs."""
    a, b = torch.rand(size, size), torch.rand(size, size)
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
    args = parser.parse_args()
    cfg = dict(MODELS[args.model], **HYPER)
    if not 1 <= args.seq <= cfg["block_size"] or args.batch < 1 or args.iters <= WARMUP_ITERS or args.threads < 1:
        parser.error(f"need 1 <= seq <= {cfg['block_size']}, batch >= 1, threads >= 1, iters > {WARMUP_ITERS}")
    torch.set_num_threads(args.threads)

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
        loss, _ = ref.train_step(params, opt, step, batch, cfg)
        loss.item()  # the step is complete once its loss is readable (matters only for asynchronous backends)
        times.append(time.perf_counter() - start)
    step_s = sum(times[WARMUP_ITERS:]) / (args.iters - WARMUP_ITERS)

    # N counts the real vocabulary rows of wte (V*C, not Vp*C) and includes wpe.
    n_params = sum(p.numel() for p in params.values()) - (cfg["padded_vocab_size"] - V) * cfg["n_embd"]
    gemm_flops_per_s = matmul_rate()
    flops_per_token = 6 * n_params + 6 * cfg["n_layer"] * cfg["n_embd"] * T
    tokens_per_s = B * T / step_s
    print(json.dumps({
        "model": args.model, "batch": B, "seq": T, "threads": args.threads,
        "step_s": step_s, "tokens_per_s": tokens_per_s, "model_flops_per_s": flops_per_token * tokens_per_s,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,  # ru_maxrss is KiB on Linux
        "gemm_flops_per_s": gemm_flops_per_s,  # this process's fp32 2048^3 matmul, best of three
        "torch_version": torch.__version__,
    }))


if __name__ == "__main__":
    main()
