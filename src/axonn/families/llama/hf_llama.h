// Hugging Face's Llama weights (LlamaForCausalLM: model.safetensors, or shards with model.safetensors.index.json)
// read straight into a rank's shards on any grid, each rank reading only the rows it holds. Hugging Face stores
// every Linear as axonn does, [out, in]; axonn's qkvw stacks q_proj, k_proj and v_proj's rows and its gateupw
// gate_proj and up_proj's, so each of its rows comes from one row of one of them:
//
//   axonn name   Hugging Face name (per layer l: model.layers.l.)             layout
//   embed        model.embed_tokens.weight                                    [V, C]     (axonn: [Vp, C])
//   ln1w         input_layernorm.weight                                       [C]
//   qkvw         self_attn.q_proj, k_proj, v_proj .weight                      [NH·hs | NKV·hs | NKV·hs, C]
//   attprojw     self_attn.o_proj.weight                                      [C, C]
//   ln2w         post_attention_layernorm.weight                              [C]
//   gateupw      mlp.gate_proj, up_proj .weight                               [F | F, C]
//   downw        mlp.down_proj.weight                                         [C, F]
//   lnfw         model.norm.weight                                            [C]
//   lm_head      lm_head.weight                                               [V, C]     (axonn: [Vp, C])
#pragma once

#include "axonn/core/tensor.h"
#include "axonn/families/llama/llama_config.h"
#include "axonn/families/registry.h"
#include "axonn/io/hf_safetensors.h"
#include "axonn/parallel/shard_layout.h"

#include <filesystem>
#include <span>

namespace axonn {

class HfLlamaWeights {
public:
    // Checks on opening that every tensor is there, F32 or BF16, of the shape `config` gives.
    HfLlamaWeights(std::filesystem::path const& dir, LlamaConfig const& config);
    // This rank's shards of every parameter, into the flat buffer `params` laid out by `layout` (Llama's).
    void read_local(ShardLayout const& layout, std::span<float> params);

private:
    std::filesystem::path dir_;
    LlamaConfig config_;
    HfSafetensors files_;
};

// Writes config.json and model.safetensors into `out` (created if missing) from a Llama checkpoint's weights, in
// `dtype` (f32, or bf16 rounded to nearest even: exact for weights that were bf16 when imported). Holds one axonn
// tensor in memory at a time.
void export_hf_llama(LlamaConfig const& config, ReadTensor const& read_tensor, std::filesystem::path const& out,
                     DType dtype);

}  // namespace axonn
