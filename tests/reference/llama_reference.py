"""Independent PyTorch oracle for axonn's Llama, written from Hugging Face's modeling_llama (not from the C++ code),
in float64. Two modes:

    /usr/bin/python3 tests/reference/llama_reference.py --input DIR --output FILE           (the kernels)
    /usr/bin/python3 tests/reference/llama_reference.py --model --input DIR --output FILE   (the whole model)
    /usr/bin/python3 tests/reference/llama_reference.py --write-hf DIR --input DIR2 --output FILE

--write-hf writes a Hugging Face Llama folder into DIR (config.json from DIR2/config.json, model.safetensors with
random F32 weights, or BF16 with --bf16, under transformers' names: model.embed_tokens, model.layers.L.{input_layernorm,
self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head) and the logits
[B,T,V] of DIR2/batch.axt's tokens under those weights into FILE, computed in float64.

The model mode reads DIR/config.json (Hugging Face's LlamaConfig names, plus padded_vocab_size), DIR/weights.axt
(axonn's tensors by their names and serial shapes: embed [Vp,C], ln1w [L,C], qkvw [L,(NH+2NKV)hs,C] as [q|k|v],
attprojw [L,C,C], ln2w [L,C], gateupw [L,2F,C] as [gate|up], downw [L,C,F], lnfw [C], lm_head [Vp,C]) and
DIR/batch.axt (tokens and targets i32 [B,T], -1 = ignored; loss_mask f32 [B,T]), and writes logits [B,T,V], the
loss (the mask-weighted mean cross-entropy), grad.<name> for every tensor and grad_norm; with "steps" (and lr,
min_lr, warmup_steps, weight_decay, beta1, beta2, eps, grad_clip) in config.json, also losses [steps]: the loss
before each of that many clipped, scheduled AdamW steps on the same batch.

The kernel mode:

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
from gpt2_reference import lr_at  # noqa: E402  (the trainer's schedule, the same for every family)
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


def model_forward(p, tokens, cfg, inv_freq):
    """LlamaForCausalLM's forward on axonn's tensors: logits [B,T,Vp]."""
    B, T = tokens.shape
    C, F_ = cfg["hidden_size"], cfg["intermediate_size"]
    attention_cfg = {"NH": cfg["num_attention_heads"], "NKV": cfg["num_key_value_heads"], "C": C,
                     "first_position": 0}
    eps = cfg["rms_norm_eps"]
    x = p["embed"][tokens]
    for l in range(cfg["num_hidden_layers"]):
        h = rms_norm(x, p["ln1w"][l], eps)
        qkv = h @ p["qkvw"][l].T
        x = x + attention(qkv, attention_cfg, inv_freq) @ p["attprojw"][l].T
        h = rms_norm(x, p["ln2w"][l], eps)
        gate_up = h @ p["gateupw"][l].T
        x = x + (F.silu(gate_up[..., :F_]) * gate_up[..., F_:]) @ p["downw"][l].T
    return rms_norm(x, p["lnfw"], eps) @ p["lm_head"].T


def model_loss(p, tokens, targets, loss_mask, cfg, inv_freq):
    """The logits [B,T,V] of the real vocabulary and the mask-weighted mean cross-entropy."""
    V = cfg["vocab_size"]
    logits = model_forward(p, tokens, cfg, inv_freq)[..., :V]  # the padded columns are never logits
    ce = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=-1, reduction="none")
    w = loss_mask.reshape(-1) * (targets.reshape(-1) != -1)
    return logits, (w * ce).sum() / w.sum()


def adamw_losses(p, tokens, targets, loss_mask, cfg, inv_freq):
    """The loss before each of cfg["steps"] steps as a trainer takes them: gradients clipped to a global norm of
    grad_clip, the learning rate warmed up linearly then decayed on a cosine to min_lr, AdamW (weight decay on the
    matrices only: the embedding, the head and the layers' Linears, not the norms' gains)."""
    decayed = [p[n] for n in ("embed", "qkvw", "attprojw", "gateupw", "downw", "lm_head")]
    others = [p[n] for n in ("ln1w", "ln2w", "lnfw")]
    opt = torch.optim.AdamW([{"params": decayed, "weight_decay": cfg["weight_decay"]},
                             {"params": others, "weight_decay": 0.0}],
                            lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"], foreach=False)
    losses = []
    for step in range(cfg["steps"]):
        opt.zero_grad(set_to_none=True)
        loss = model_loss(p, tokens, targets, loss_mask, cfg, inv_freq)[1]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), cfg["grad_clip"])
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses) if losses else torch.zeros(0, dtype=torch.float64)


def run_model(args):
    with open(os.path.join(args.input, "config.json")) as f:
        cfg = json.load(f)
    weights = read_tensor_file(os.path.join(args.input, "weights.axt"))
    p = {name: t.to(torch.float64).requires_grad_(True) for name, t in weights.items()}
    batch = read_tensor_file(os.path.join(args.input, "batch.axt"))
    tokens, targets = batch["tokens"].long(), batch["targets"].long()
    loss_mask = batch["loss_mask"].to(torch.float64)
    inv_freq = llama3_inv_freq(cfg["hidden_size"] // cfg["num_attention_heads"], cfg["rope_theta"],
                               cfg["rope_scaling"])
    logits, loss = model_loss(p, tokens, targets, loss_mask, cfg, inv_freq)
    loss.backward()
    out = {"logits": logits.detach(), "loss": loss.detach()}
    for name, t in p.items():
        out["grad." + name] = t.grad.detach().clone()
    out["grad_norm"] = torch.linalg.vector_norm(torch.stack([t.grad.norm() for t in p.values()]))
    if "steps" in cfg:
        out["losses"] = adamw_losses(p, tokens, targets, loss_mask, cfg, inv_freq)
    write_tensor_file(args.output, out)


def write_safetensors(path, tensors, dtype):
    """The safetensors format by hand (no package needed): u64 header length, the JSON header padded with spaces to
    a multiple of 8, then the raw little-endian data (F32 or BF16) in the header's order."""
    header, offset, blobs = {}, 0, []
    code = {torch.float32: "F32", torch.bfloat16: "BF16"}[dtype]
    for name, tensor in tensors.items():
        data = tensor.contiguous().to(dtype).reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": code, "shape": list(tensor.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    encoded = json.dumps(header).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(len(encoded).to_bytes(8, "little"))
        f.write(encoded)
        for data in blobs:
            f.write(data)


def write_hf(args):
    with open(os.path.join(args.input, "config.json")) as f:
        cfg = json.load(f)
    L, C, F_ = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["intermediate_size"]
    NH, NKV, V = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["vocab_size"]
    hs = C // NH
    generator = torch.Generator().manual_seed(7)

    def normal(*shape, std=0.05):
        return torch.randn(*shape, generator=generator, dtype=torch.float32) * std

    hf = {"model.embed_tokens.weight": normal(V, C)}
    for l in range(L):
        prefix = f"model.layers.{l}."
        hf[prefix + "input_layernorm.weight"] = 1 + normal(C, std=0.1)
        hf[prefix + "self_attn.q_proj.weight"] = normal(NH * hs, C)
        hf[prefix + "self_attn.k_proj.weight"] = normal(NKV * hs, C)
        hf[prefix + "self_attn.v_proj.weight"] = normal(NKV * hs, C)
        hf[prefix + "self_attn.o_proj.weight"] = normal(C, C)
        hf[prefix + "post_attention_layernorm.weight"] = 1 + normal(C, std=0.1)
        hf[prefix + "mlp.gate_proj.weight"] = normal(F_, C)
        hf[prefix + "mlp.up_proj.weight"] = normal(F_, C)
        hf[prefix + "mlp.down_proj.weight"] = normal(C, F_)
    hf["model.norm.weight"] = 1 + normal(C, std=0.1)
    hf["lm_head.weight"] = normal(V, C)
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    # The logits below are those of the weights as stored: rounded to bf16 when they are stored so.
    hf = {name: tensor.to(dtype).to(torch.float32) for name, tensor in hf.items()}
    os.makedirs(args.write_hf, exist_ok=True)
    write_safetensors(os.path.join(args.write_hf, "model.safetensors"), hf, dtype)
    with open(os.path.join(args.write_hf, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)

    # The same model in axonn's stacked tensors, in float64, for the logits.
    def layers(name):
        return torch.stack([hf[f"model.layers.{l}.{name}"] for l in range(L)]).to(torch.float64)

    p = {"embed": hf["model.embed_tokens.weight"].to(torch.float64), "ln1w": layers("input_layernorm.weight"),
         "qkvw": torch.cat([layers("self_attn.q_proj.weight"), layers("self_attn.k_proj.weight"),
                            layers("self_attn.v_proj.weight")], dim=1),
         "attprojw": layers("self_attn.o_proj.weight"), "ln2w": layers("post_attention_layernorm.weight"),
         "gateupw": torch.cat([layers("mlp.gate_proj.weight"), layers("mlp.up_proj.weight")], dim=1),
         "downw": layers("mlp.down_proj.weight"), "lnfw": hf["model.norm.weight"].to(torch.float64),
         "lm_head": hf["lm_head.weight"].to(torch.float64)}
    tokens = read_tensor_file(os.path.join(args.input, "batch.axt"))["tokens"].long()
    inv_freq = llama3_inv_freq(hs, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"))
    with torch.no_grad():
        logits = model_forward(p, tokens, cfg, inv_freq)
    write_tensor_file(args.output, {"logits": logits})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--model", action="store_true", help="the whole model, not the kernels")
    parser.add_argument("--write-hf", help="write a Hugging Face Llama folder here, and its logits to --output")
    parser.add_argument("--bf16", action="store_true", help="with --write-hf: store the weights in BF16")
    args = parser.parse_args()
    if args.write_hf:
        write_hf(args)
        return
    if args.model:
        run_model(args)
        return
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
