// Learning-rate schedule: linear warm-up, then cosine decay to a floor (llm.c's and nanoGPT's).
#pragma once

namespace axonn {

struct LrSchedule {
    float max_lr = 6e-4f;
    float min_lr = 6e-5f;
    int warmup_steps = 0;
    int total_steps = 1;

    // Learning rate of 0-based step `step`: max_lr · (step+1)/warmup during warm-up, then
    // min_lr + ½(max_lr − min_lr)(1 + cos(π · progress)) with progress going 0 → 1 over the remaining steps.
    float at(int step) const;
    void validate() const;
};

}  // namespace axonn
