"""Logits of a Hugging Face GPT-2 folder, computed by the PyTorch twin (gpt2_reference.forward) in float64.

    /usr/bin/python3 tests/reference/hf_gpt2_logits.py --model DIR --tokens FILE --output FILE

DIR holds config.json and model.safetensors as transformers writes them (GPT2LMHeadModel.save_pretrained):
tensor names "h.{l}.attn.c_attn.weight", ... (an optional "transformer." prefix), Conv1D weights stored
[in, out]. The safetensors file is parsed here from its public definition (u64 header length, JSON header,
raw little-endian data), not with axonn's reader, so that the check of `axonn export` trusts nothing of axonn.
FILE (--tokens) is an axonn tensor file with tokens i32 [B,T]; --output receives logits f64 [B,T,V].
"""

import argparse
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_reference import forward  # noqa: E402
from tensor_file import read_tensor_file, write_tensor_file  # noqa: E402

DTYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(body[begin:end])
        tensors[name] = torch.frombuffer(raw, dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"]).clone()
    return header.get("__metadata__", {}), tensors


def twin_parameters(directory, dtype):
    """The twin's parameter dict (layer-stacked, axonn's [out, in] layout) from a Hugging Face folder."""
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "gpt2" or cfg.get("activation_function", "gelu_new") != "gelu_new":
        raise ValueError("not a GPT-2 with gelu_new")
    metadata, t = read_safetensors(os.path.join(directory, "model.safetensors"))
    if metadata.get("format") != "pt":
        raise ValueError("transformers needs __metadata__ format = pt")
    prefix = "transformer." if "transformer.wte.weight" in t else ""

    def layers(name, transpose):
        stacked = [t[f"{prefix}h.{l}.{name}"] for l in range(cfg["n_layer"])]
        return torch.stack([w.T if transpose else w for w in stacked])

    p = {"wte": t[prefix + "wte.weight"], "wpe": t[prefix + "wpe.weight"],
         "ln1w": layers("ln_1.weight", False), "ln1b": layers("ln_1.bias", False),
         "qkvw": layers("attn.c_attn.weight", True), "qkvb": layers("attn.c_attn.bias", False),
         "attprojw": layers("attn.c_proj.weight", True), "attprojb": layers("attn.c_proj.bias", False),
         "ln2w": layers("ln_2.weight", False), "ln2b": layers("ln_2.bias", False),
         "fcw": layers("mlp.c_fc.weight", True), "fcb": layers("mlp.c_fc.bias", False),
         "fcprojw": layers("mlp.c_proj.weight", True), "fcprojb": layers("mlp.c_proj.bias", False),
         "lnfw": t[prefix + "ln_f.weight"], "lnfb": t[prefix + "ln_f.bias"]}
    if tuple(p["wte"].shape) != (cfg["vocab_size"], cfg["n_embd"]):
        raise ValueError(f"wte.weight has shape {list(p['wte'].shape)}")
    return cfg, {name: w.to(dtype) for name, w in p.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    try:
        cfg, p = twin_parameters(args.model, torch.float64)
        tokens = read_tensor_file(args.tokens)["tokens"].long()
        with torch.no_grad():
            logits = forward(p, tokens, cfg)  # [B,T,V]: the Hugging Face embedding has no padding rows
        write_tensor_file(args.output, {"logits": logits})
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"hf_gpt2_logits: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
