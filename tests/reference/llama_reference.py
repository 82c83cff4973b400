"""Independent PyTorch oracle for axonn's Llama kernels, written from Hugging Face's modeling_llama (not from the
C++ code), in float64:

    /usr/bin/python3 tests/reference/llama_reference.py --input DIR --output FILE

DIR holds config.json (B, T, C, NH, NKV, F, rms_norm_eps, rope_theta, rope_scaling {factor, low_freq_factor,
high_freq_factor, original_max_position_embeddings} or null, first_position) and inputs.axt (f64):
  x [B*T, C], weight [C], dnorm [B*T, C]       RMSNorm's input, gain and output gradient;
  qkv [B, T, (NH + 2*NKV)*hs], datt [B, T, C]  the attention block's [q | k | v] before the rotary embedding;
  gateup [B*T, 2F], dmlp [B*T, F]              SwiGLU's [gate | up] input.
FILE receives (f64): inv_freq [hs/2]; norm [B*T, C], grad.x, grad.weight; attention [B, T, C] of
softmax(rope(q)·rope(k)ᵀ/sqrt(hs), causal)·v with key/value heads repeated over their query heads (positions
first_position + t), and grad.qkv; mlp [B*T, F] = silu(gate)·up and grad.gateup.
"""

import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_file import read_tensor_file, write_tensor_file  # noqa: E402


def llama3_inv_freq(head_dim, theta, scaling):
    """transformers' default RoPE frequencies, then _compute_llama3_parameters' rescaling when scaling is given."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    if scaling is None:
        return inv_freq
    factor = scaling["factor"]
    low_freq_factor = scaling["low_freq_factor"]
    high_freq_factor = scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, inv_freq_llama)


def rms_norm(x, weight, eps):
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def attention(qkv, cfg, inv_freq):
    """qkv [B, T, (NH+2NKV)*hs] -> [B, T, NH*hs], as LlamaAttention computes it (no projections)."""
    B, T = qkv.shape[0], qkv.shape[1]
    NH, NKV = cfg["NH"], cfg["NKV"]
    hs = cfg["C"] // NH
    q = qkv[..., :NH * hs].view(B, T, NH, hs).transpose(1, 2)
    k = qkv[..., NH * hs:(NH + NKV) * hs].view(B, T, NKV, hs).transpose(1, 2)
    v = qkv[..., (NH + NKV) * hs:].view(B, T, NKV, hs).transpose(1, 2)
    positions = torch.arange(cfg["first_position"], cfg["first_position"] + T, dtype=torch.float64)
    freqs = torch.outer(positions, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    k = k.repeat_interleave(NH // NKV, dim=1)  # repeat_kv
    v = v.repeat_interleave(NH // NKV, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(hs)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    return out.transpose(1, 2).reshape(B, T, NH * hs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    with open(os.path.join(args.input, "config.json")) as f:
        cfg = json.load(f)
    inputs = {name: t.to(torch.float64) for name, t in read_tensor_file(os.path.join(args.input, "inputs.axt")).items()}
    out = {}
    hs = cfg["C"] // cfg["NH"]
    inv_freq = llama3_inv_freq(hs, cfg["rope_theta"], cfg["rope_scaling"])
    out["inv_freq"] = inv_freq

    x = inputs["x"].clone().requires_grad_(True)
    weight = inputs["weight"].clone().requires_grad_(True)
    norm = rms_norm(x, weight, cfg["rms_norm_eps"])
    (norm * inputs["dnorm"]).sum().backward()
    out["norm"], out["grad.x"], out["grad.weight"] = norm.detach(), x.grad, weight.grad

    qkv = inputs["qkv"].clone().requires_grad_(True)
    att = attention(qkv, cfg, inv_freq)
    (att * inputs["datt"]).sum().backward()
    out["attention"], out["grad.qkv"] = att.detach(), qkv.grad

    gateup = inputs["gateup"].clone().requires_grad_(True)
    gate, up = gateup[:, :cfg["F"]], gateup[:, cfg["F"]:]
    mlp = F.silu(gate) * up
    (mlp * inputs["dmlp"]).sum().backward()
    out["mlp"], out["grad.gateup"] = mlp.detach(), gateup.grad

    write_tensor_file(args.output, out)


if __name__ == "__main__":
    main()
