// `axonn memorization study --experiment extreme`: the Goldfish paper's extreme-repetition experiment (a pretrained
// model fine-tuned for up to 100 epochs on 100 real documents), reproduced at this machine's scale, for several
// model sizes, with the standard loss, with Goldfish (k = 4, h = 13) and, on one model, with k = 8 and 32.
// Every model is first trained on Jane Austen's novels; from those weights, each loss fine-tunes it on Devil's
// Dictionary entries (extreme_corpus.h), every epoch visiting every document once, and every few epochs measures,
// over the documents: exact match (the greedy 32-token continuation of the first 32 tokens equals the text),
// ROUGE-L, token accuracy, the membership AUC against as many unseen entries, and the validation loss on Austen.
// The criteria (extreme_report.h) say whether the standard loss memorizes, Goldfish prevents it at little cost,
// and larger models memorize in fewer epochs.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/train/goldfish.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace axonn {

struct ExtremeOptions {
    GridShape grid;
    std::string grid_order = "x,y,z,data";
    int threads = 1;
    std::filesystem::path out;
    std::filesystem::path devil_dir, austen_package, llama3_dir;
    // Model presets, smallest first; a Llama preset reads the text with Llama 3's tokenizer, the others with the
    // word vocabulary.
    std::vector<std::string> models;
    std::string ablation_model;  // runs Goldfish at each k of k_ablations too ("": none)
    int words = 2000;     // the word vocabulary's words, besides the 256 bytes
    int documents = 100;  // fine-tuned on
    int unseen = 100;     // never trained on
    int prefix = 32, suffix = 32;
    int seq = 64;         // each training sequence: a document's first seq + 1 tokens
    int batch = 4;        // documents per fine-tuning step
    // Austen windows per fine-tuning step, each new: without them the fine-tuning forgets the novels and the
    // validation loss rises by nats, which would make it measure the forgetting, not what a loss costs.
    int replay = 1;
    int pretrain_steps = 1000;  // on Austen, from the seed
    float pretrain_lr = 1e-3f;  // warm-up over 5% of the steps, cosine decay to a tenth
    int epochs = 100;
    int eval_every = 5;         // epochs between measurements (the first epoch is always measured)
    float lr = 1e-3f;           // fine-tuning's peak: cosine decay to a tenth over every epoch
    GoldfishOptions goldfish;   // k = 4, h = 13
    std::vector<int> k_ablations = {8, 32};  // on ablation_model
    std::uint64_t seed = 1;
    bool quick = false;

    // The full experiment or --quick's (its own, smaller criteria: extreme_report.h).
    static ExtremeOptions defaults(bool quick);
};

// Throws axonn::Error naming the first setting that cannot work and how to fix it.
void validate_extreme_options(ExtremeOptions const& options);

// Trains and measures everything, writes results.json, results.md and the plots into options.out (rank 0), and
// returns the results.json records (every rank). Collective over MPI_COMM_WORLD.
nlohmann::json run_extreme_study(ExtremeOptions const& options);

}  // namespace axonn
