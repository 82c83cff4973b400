// What a decoder runs on and how: a batch of this rank's rows, the options of a run on its grid, and one pass of a
// training step.
#pragma once

#include "axonn/core/tensor.h"
#include "axonn/parallel/param_decl.h"

#include <cstdint>

namespace axonn {

// One batch of B sequences of T tokens: this process's rows. targets and loss_mask are null for inference.
struct Batch {
    int B = 0;
    int T = 0;
    std::int32_t const* tokens = nullptr;   // [B,T]
    std::int32_t const* targets = nullptr;  // [B,T], -1 = ignore
    float const* loss_mask = nullptr;       // [B,T] weight of each token's loss; null = all 1
};

// How a model runs on its grid.
enum class Recompute { none, layer };

struct DecoderOptions {
    bool overlap = true;                    // hide collectives behind computation
    Recompute recompute = Recompute::none;  // layer: keep each layer's input, recompute the layer in the backward
    bool cache_weights = false;             // keep the Z-gathered weights for a whole step (AxoNN's caching)
    // The GEMMs' input type, which the backend must have been made for: f32, or bf16 (mixed precision: the GEMMs
    // read a bf16 copy of the fp32 master weights, refreshed whenever those changed, and the Z all-gathers move it).
    DType precision = DType::f32;
    // The element types of the gradients' communication, f32 or bf16 (half the bytes; each sum is rounded to bf16,
    // then widened into the fp32 gradients): the weight gradients' Z reduce-scatters (`grad_scatter_comm`), and
    // the all-reduces over data and, for key/value rows replicated there, over Y (`grad_sum_comm`).
    DType grad_scatter_comm = DType::f32;
    DType grad_sum_comm = DType::f32;
    // The LM head and its loss in chunks of at most this many token rows; 0: all of a pass's rows at once. Only a
    // chunk's logits [rows, this rank's vocabulary rows] are held (they are the largest activation: a row per
    // token, a column per word), and in training each chunk's backward runs as soon as its loss is known. The
    // losses and gradients are those of the whole batch, summed in another order. A forward without targets needs
    // all its rows' logits at once.
    int logit_rows = 0;
    // The embedding's and the LM head's layout (param_decl.h): by default the one that moves fewer bytes over X on
    // the grid, nearly always the X·Y plane's, whose X traffic is a token's hidden state rather than its logits.
    VocabSplit vocab_split = VocabSplit::automatic;
};

// Into how many chunks of rows the LM head cuts a pass of `rows` token rows: the fewest of at most `logit_rows`
// rows each (1 when logit_rows is 0). Chunk c holds rows [rows·c/n, rows·(c+1)/n).
std::int64_t logit_chunks(std::int64_t rows, int logit_rows);

// One forward-backward pass of a training step. A step of k micro-batches is k passes: the first overwrites the
// gradients and the others add to them; the last completes the gradient sync over the grid. The loss of every
// pass is normalised by the loss weight of the whole step, so that the k passes give the gradient of the global
// batch's mean loss.
struct Pass {
    double loss_weight_total = 0;  // Σ of the loss weights of the step's tokens on all ranks; 0: this pass's own
    bool first = true;
    bool last = true;
};

}  // namespace axonn
