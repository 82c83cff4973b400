"""Independent PyTorch oracle for axonn's GPT-2 (used by the C++ parity test, and imported by bench/pytorch_step.py).

    /usr/bin/python3 tests/reference/gpt2_reference.py --input DIR --output FILE [--dtype float64|float32]

DIR holds config.json, weights.axt (the 16 layer-stacked parameters, f32) and batch.axt (tokens i32 [B,T],
targets i32 [B,T] with ignore index -1, loss_mask f32 [B,T]). FILE receives, all f64:
  logits [B,T,V] and loss [] of the forward at the initial weights,
  grad.<name> for every parameter (unclipped gradient at the initial weights), grad_norm [] (global L2 norm, step 0),
  losses [steps]: the loss before each of `steps` clipped, scheduled AdamW updates on the same batch.
The oracle computes in float64 by default so that differences against the C++ run show only the C++ rounding.
Written from the model description, not from the C++ code, so that it cannot inherit its mistakes.
"""

import argparse
import contextlib
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_file import read_tensor_file, write_tensor_file  # noqa: E402

PARAM_NAMES = ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
               "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"]
# Only the matrices are decayed (the stacked ones count as the matrices they stack); biases and LayerNorms are not.
DECAYED = {"wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw"}
CONFIG_KEYS = ["vocab_size", "padded_vocab_size", "n_layer", "n_head", "n_embd", "block_size", "steps", "lr",
               "min_lr", "warmup_steps", "weight_decay", "beta1", "beta2", "eps", "grad_clip"]


def param_shapes(cfg):
    Vp, maxT, L, C = cfg["padded_vocab_size"], cfg["block_size"], cfg["n_layer"], cfg["n_embd"]
    return {"wte": (Vp, C), "wpe": (maxT, C), "ln1w": (L, C), "ln1b": (L, C), "qkvw": (L, 3 * C, C),
            "qkvb": (L, 3 * C), "attprojw": (L, C, C), "attprojb": (L, C), "ln2w": (L, C), "ln2b": (L, C),
            "fcw": (L, 4 * C, C), "fcb": (L, 4 * C), "fcprojw": (L, C, 4 * C), "fcprojb": (L, C),
            "lnfw": (C,), "lnfb": (C,)}


def forward(p, tokens, cfg):
    """p: name -> parameter tensor; tokens [B,T] (long). Returns logits [B,T,Vp] (padded columns included)."""
    B, T = tokens.shape
    C, NH = cfg["n_embd"], cfg["n_head"]
    hs = C // NH
    # unbind once: its backward stacks all L per-layer grads in one op (indexing per layer would add L full copies).
    layers = {name: p[name].unbind(0) for name in PARAM_NAMES if name not in ("wte", "wpe", "lnfw", "lnfb")}
    causal = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
    x = p["wte"][tokens] + p["wpe"][:T]  # [B,T,C]
    for l in range(cfg["n_layer"]):
        w = {name: layer[l] for name, layer in layers.items()}
        h = F.layer_norm(x, (C,), w["ln1w"], w["ln1b"], eps=1e-5)  # [B,T,C]
        qkv = h @ w["qkvw"].T + w["qkvb"]  # [B,T,3C]
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in qkv.split(C, dim=-1))  # [B,NH,T,hs] each
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)  # [B,NH,T,T]
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)  # [B,T,C], heads side by side
        x = x + y @ w["attprojw"].T + w["attprojb"]
        h2 = F.layer_norm(x, (C,), w["ln2w"], w["ln2b"], eps=1e-5)
        f = F.gelu(h2 @ w["fcw"].T + w["fcb"], approximate="tanh")  # [B,T,4C]
        x = x + f @ w["fcprojw"].T + w["fcprojb"]
    xf = F.layer_norm(x, (C,), p["lnfw"], p["lnfb"], eps=1e-5)
    return xf @ p["wte"].T  # [B,T,Vp], tied embedding


def loss_fn(logits, targets, loss_mask, V):
    """Weighted mean cross-entropy over the V real columns; targets == -1 and zero mask weights drop out."""
    real = logits[..., :V]  # slicing = masking the padded columns to -inf before the softmax; they get zero grad
    ce = F.cross_entropy(real.reshape(-1, V), targets.reshape(-1), ignore_index=-1, reduction="none")  # [B*T]
    w = loss_mask.reshape(-1).to(ce.dtype) * (targets.reshape(-1) != -1)
    total = w.sum()
    # With no weighted token the loss is defined as 0 (and so are the grads), not 0/0.
    return (w * ce).sum() / (total if total > 0 else torch.ones_like(total))


def lr_at(step, cfg):
    """Linear warmup to lr over warmup_steps, then cosine decay to min_lr at step `steps`."""
    lr, min_lr, warmup, steps = cfg["lr"], cfg["min_lr"], cfg["warmup_steps"], cfg["steps"]
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))


def make_optimizer(p, cfg, **kwargs):
    groups = [{"params": [p[n] for n in PARAM_NAMES if n in DECAYED], "weight_decay": cfg["weight_decay"]},
              {"params": [p[n] for n in PARAM_NAMES if n not in DECAYED], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"], **kwargs)


def train_step(p, opt, step, batch, cfg, forward_context=contextlib.nullcontext):
    """One step as axonn does it: loss and grads, global-norm clip, scheduled lr, AdamW. Returns (loss, norm).
    The forward and the loss run inside forward_context() (an autocast, for mixed precision); the backward outside."""
    opt.zero_grad(set_to_none=True)
    with forward_context():
        loss = loss_fn(forward(p, batch["tokens"], cfg), batch["targets"], batch["loss_mask"], cfg["vocab_size"])
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_([p[n] for n in PARAM_NAMES], cfg["grad_clip"])
    for group in opt.param_groups:
        group["lr"] = lr_at(step, cfg)
    opt.step()
    return loss.detach(), norm


def load_inputs(directory, dtype):
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.load(f)
    missing = [k for k in CONFIG_KEYS if k not in cfg]
    if missing:
        raise ValueError(f"config.json lacks {', '.join(missing)}")
    if cfg["n_embd"] % cfg["n_head"] or cfg["padded_vocab_size"] < cfg["vocab_size"]:
        raise ValueError("config.json: n_embd must divide by n_head and padded_vocab_size be >= vocab_size")
    weights = read_tensor_file(os.path.join(directory, "weights.axt"))
    p = {}
    for name, shape in param_shapes(cfg).items():
        if name not in weights:
            raise ValueError(f"weights.axt lacks {name}")
        if tuple(weights[name].shape) != shape:
            raise ValueError(f"weights.axt: {name} has shape {list(weights[name].shape)}, expected {list(shape)}")
        p[name] = weights[name].to(dtype).requires_grad_()
    raw = read_tensor_file(os.path.join(directory, "batch.axt"))
    for name in ("tokens", "targets", "loss_mask"):
        if name not in raw:
            raise ValueError(f"batch.axt lacks {name}")
    if raw["tokens"].dim() != 2 or raw["tokens"].numel() == 0:
        raise ValueError(f"batch.axt: tokens must be a non-empty [B,T], got {list(raw['tokens'].shape)}")
    batch = {"tokens": raw["tokens"].long(), "targets": raw["targets"].long(), "loss_mask": raw["loss_mask"].to(dtype)}
    B, T = batch["tokens"].shape
    V = cfg["vocab_size"]
    if any(batch[n].shape != (B, T) for n in batch) or T > cfg["block_size"]:
        raise ValueError(f"batch.axt: tokens/targets/loss_mask must all be [B,T] with T <= {cfg['block_size']}")
    if batch["tokens"].min() < 0 or batch["tokens"].max() >= V:
        raise ValueError(f"batch.axt: tokens must lie in [0, {V})")
    if batch["targets"].min() < -1 or batch["targets"].max() >= V:
        raise ValueError(f"batch.axt: targets must lie in [0, {V}) or be -1")
    if (batch["loss_mask"] < 0).any():
        raise ValueError("batch.axt: loss_mask must be non-negative")
    return cfg, p, batch


def run(directory, dtype):
    """Everything the parity test compares against, as {name: f64 tensor}."""
    cfg, p, batch = load_inputs(directory, dtype)
    V = cfg["vocab_size"]
    out = {}
    # The forward and unclipped grads at the initial weights, before anything touches them.
    logits = forward(p, batch["tokens"], cfg)
    loss = loss_fn(logits, batch["targets"], batch["loss_mask"], V)
    loss.backward()
    out["logits"] = logits[..., :V].detach()
    out["loss"] = loss.detach()
    for name in PARAM_NAMES:
        out[f"grad.{name}"] = p[name].grad.detach().clone()
    out["grad_norm"] = torch.linalg.vector_norm(torch.stack([p[n].grad.norm() for n in PARAM_NAMES]))
    # The optimisation loop recomputes step 0 from scratch, so it needs no state from above.
    opt = make_optimizer(p, cfg, foreach=False)
    losses = [train_step(p, opt, s, batch, cfg)[0] for s in range(cfg["steps"])]
    out["losses"] = torch.stack(losses) if losses else torch.zeros(0)
    return {name: t.to(torch.float64) for name, t in out.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="folder with config.json, weights.axt, batch.axt")
    parser.add_argument("--output", required=True, help="tensor file to write")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    args = parser.parse_args()
    torch.set_num_threads(1)
    try:
        write_tensor_file(args.output, run(args.input, getattr(torch, args.dtype)))
    except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
        print(f"gpt2_reference: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
