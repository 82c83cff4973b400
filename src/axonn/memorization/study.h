// `axonn memorization study`: does verbatim memorization grow with model size and repetition, and does the Goldfish
// loss prevent it? One command trains every model of the protocol on a synthetic Markov corpus with canaries in
// duplication buckets (study_corpus.h), on any grid, and measures extraction (extraction.h):
// Each size is first trained on background text alone (the control: it never sees a canary, so its extraction is
// the chance level); every other run starts from its weights and trains on a stream in which the canaries' copies
// are mixed (about 40% of the sequences), so that memorization, not the learning of the chain, decides the outcome.
// Canaries that the size's control reproduces (formulaic text can be "extractable" without memorization: never
// with the chain, possibly with real text) are left out of every run's extraction numbers and counted.
//   A. models of increasing size × {standard loss, Goldfish}: exact match, token match, ROUGE-L, teacher-forced
//      accuracy on kept and dropped targets, held-out loss and the membership AUC, per duplication bucket;
//   ablations (on the largest size): a mask redrawn every step, a static mask with the canaries' copies at random
//      offsets (against the hashed mask on the same shifted data), and a sweep of k;
//   B. the fine-tuning analogue of catastrophic memorization: each size's control is fine-tuned on a fresh canary
//      set alone; the exact match after every
//      epoch gives the epochs until half the canaries are memorized, with and without Goldfish.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/memorization/study_corpus.h"
#include "axonn/train/goldfish.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace axonn {

struct StudyModelSize {
    std::string name;
    int n_layer;
    int n_head;
    int n_embd;
};

struct StudyOptions {
    GridShape grid;
    std::string grid_order = "x,y,z,data";
    int threads = 1;
    std::filesystem::path out;
    StudyCorpusSpec corpus;
    // The real-text option: Devil's Dictionary entries (this folder holds devil.index and devil.dict.dz) as
    // canaries in Jane Austen's novels (the r-cran-janeaustenr package extracted here); empty: the Markov chain.
    std::filesystem::path devil_dir;
    std::filesystem::path austen_package;
    int words = 2000;  // the real text's word vocabulary, besides the 256 bytes
    std::vector<StudyModelSize> sizes;
    int batch = 4;     // small, so that a canary's copy weighs in the step that sees it
    int seq = 72;      // room for a 64-token canary shifted by up to 8
    int pretrain_steps = 1500;  // on background alone: the control model, every other run's starting point
    int steps = 300;           // with the canaries: each run of experiment A and of the ablations
    float lr = 3e-3f;          // peak of each phase; cosine decay to a tenth, 5% warm-up
    GoldfishOptions goldfish;  // the Goldfish runs' loss
    bool ablations = true;
    std::vector<int> k_sweep = {3, 8, 32};
    bool finetune = true;
    int finetune_epochs = 16;  // at the peak learning rate, constant

    // The defaults (about eleven minutes on one core) or --quick's (about 30 seconds).
    static StudyOptions defaults(bool quick);
};

// The study's model sizes by name (XS, S, M, L), in the order given; an unknown name is an axonn::Error.
std::vector<StudyModelSize> study_sizes(std::vector<std::string> const& names);

// Throws axonn::Error naming the first setting that cannot work and how to fix it (run_study checks too).
void validate_study_options(StudyOptions const& options);

// Trains and measures everything, writes results.json, finetune.json, results.md and the PNG plots into
// options.out (rank 0), and returns the results.json records. Collective over MPI_COMM_WORLD.
nlohmann::json run_study(StudyOptions const& options);

}  // namespace axonn
