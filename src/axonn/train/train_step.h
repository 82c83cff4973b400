// One optimisation step, shared by `axonn train`, `axonn bench`, `axonn parity` and the tests: forward and
// backward over the step's micro-batches (the gradients accumulate, and the last backward syncs them over the
// grid), global-norm clipping and the AdamW update. A step whose loss or gradient norm is not finite changes no
// weight, so the caller can stop on weights that are still finite.
#pragma once

#include "axonn/model/decoder.h"
#include "axonn/train/optimizer.h"

#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace axonn {

// How a step runs on its grid (--overlap, --recompute, --cache-weights, --precision, --logit-rows, --micro-batch).
struct StepOptions {
    // The LM head in chunks of 1,024 token rows by default: enough rows for its GEMMs to run at speed, and at
    // most 1,024 rows of logits held (gpt2-small's are 196 MiB in fp32; Llama 3's vocabulary's 501 MiB).
    DecoderOptions model{.logit_rows = 1024};
    int micro_batch = 0;  // sequences per pass on each data × z replica; 0: the replica's whole share in one pass
    bool gemm_tuning = true;  // time the ways of computing a GEMM shape once and use the fastest (Backend)
    std::string backend = "cpu";  // make_backend's name: "cpu", or "cuda" in a build with the CUDA backend

    // The sequences a rank's Decoder holds per pass, out of its share of the global batch; throws axonn::Error when
    // the micro-batch does not divide that share.
    int pass_batch(int replica_batch) const;
};

// A step whose batch carries a loss mask of 0s and 1s (the Goldfish loss, masked prompts): the mean training
// loss over every target of the global batch, over the kept ones (the loss optimised) and over the dropped ones.
// A mean over no target is NaN.
struct MaskedLosses {
    double all_targets;
    double kept_targets;
    double dropped_targets;
};

struct StepResult {
    float loss;
    double grad_norm;  // before clipping
    bool updated;      // false when the loss or the norm is not finite: the weights are then left as they were
    std::optional<MaskedLosses> masked;  // with a loss mask only
};

// This rank's rows of a global batch of `B · T` tokens: the share of its (data, z) position. loss_mask[B,T], if
// given, weighs each target's loss (train/goldfish.h); targets may be null too (a forward without a loss).
Batch replica_rows(ProcessGrid const& grid, int B, int T, std::int32_t const* tokens, std::int32_t const* targets,
                   float const* loss_mask = nullptr);
// This rank's rows of a step split into passes of `micro_batch` sequences each (0 or all of them: one pass).
std::vector<Batch> micro_batches(Batch const& rows, int micro_batch);

// The backend for these options' precision. Where bf16 was asked for and the CPU has no native bf16 GEMM, the
// backend emulates it, and `announce` (rank 0) prints a one-line note that says so and why.
std::unique_ptr<Backend> make_step_backend(StepOptions& options, bool announce);

StepResult train_step(Decoder& model, AdamW& optimizer, std::span<Batch const> passes, float learning_rate);
// The loss of the global batch the passes make up, without a backward (validation).
float eval_step(Decoder& model, std::span<Batch const> passes);
inline StepResult train_step(Decoder& model, AdamW& optimizer, Batch const& batch, float learning_rate) {
    return train_step(model, optimizer, std::span<Batch const>(&batch, 1), learning_rate);
}

}  // namespace axonn
