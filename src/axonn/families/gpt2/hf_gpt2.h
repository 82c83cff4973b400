// Hugging Face's GPT-2 format, in and out: a folder with config.json (GPT2Config) and model.safetensors, whose
// tensors carry transformers' names ("h.0.attn.c_attn.weight", an optional "transformer." prefix) and its
// Conv1D layout: a Linear weight is stored [in, out], the transpose of axonn's [out, in]. Per-layer tensors are
// separate ("h.3.ln_1.weight") where axonn stacks them, and the embedding has the real vocabulary's rows only
// (axonn pads it to a multiple of 64 with zero rows). The LM head is tied to the embedding, as in GPT-2.
//
//   axonn name   Hugging Face name (per layer l: h.l.)      layout
//   wte          wte.weight                                 [V, C]      (axonn: [Vp, C], padding rows zero)
//   wpe          wpe.weight                                 [maxT, C]
//   ln1w, ln1b   h.l.ln_1.weight, .bias                     [C]
//   qkvw, qkvb   h.l.attn.c_attn.weight, .bias              [C, 3C] = qkvw[l]ᵀ, [3C]
//   attprojw, b  h.l.attn.c_proj.weight, .bias              [C, C]  = attprojw[l]ᵀ, [C]
//   ln2w, ln2b   h.l.ln_2.weight, .bias                     [C]
//   fcw, fcb     h.l.mlp.c_fc.weight, .bias                 [C, 4C] = fcw[l]ᵀ, [4C]
//   fcprojw, b   h.l.mlp.c_proj.weight, .bias               [4C, C] = fcprojw[l]ᵀ, [C]
//   lnfw, lnfb   ln_f.weight, .bias                         [C]
#pragma once

#include "axonn/core/file_io.h"
#include "axonn/core/tensor.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/families/registry.h"
#include "axonn/io/hf_safetensors.h"
#include "axonn/io/safetensors.h"
#include "axonn/parallel/shard_layout.h"

#include <filesystem>
#include <span>
#include <string>

namespace axonn {

// The model a Hugging Face GPT-2 config.json describes. A config that axonn's GPT-2 cannot reproduce (another
// architecture or activation, an untied head, another LayerNorm epsilon, ...) is an axonn::Error naming the key.
GptConfig read_hf_gpt2_config(std::filesystem::path const& dir);

// The weights of a Hugging Face GPT-2 folder (model.safetensors, or shards listed by model.safetensors.index.json),
// checked on opening: every tensor present, F32 or BF16, of the shape its config gives.
class HfGpt2Weights {
public:
    HfGpt2Weights(std::filesystem::path const& dir, GptConfig const& config);

    // This rank's shards of every parameter, into the flat buffer `params` laid out by `layout`. Each rank reads
    // only its ranges of the files: its rows of the tensors stored as axonn stores them, and for those stored
    // transposed (Conv1D) the stored rows that are its columns.
    void read_local(ShardLayout const& layout, std::span<float> params);

private:
    Tensor read(std::string const& name, Shape const& shape);

    std::filesystem::path dir_;
    GptConfig config_;
    HfSafetensors files_;
    std::string prefix_;  // "" or "transformer."
};

// Writes config.json and model.safetensors into `out` (created if missing) from a checkpoint's weights.
void export_hf_gpt2(GptConfig const& config, ReadTensor const& read_tensor, std::filesystem::path const& out);

}  // namespace axonn
