// Extraction: does the model reproduce a training document's continuation from its true beginning? Each document's
// first prefix + suffix tokens are scored: the suffix is decoded greedily from the prefix (Carlini et al.'s
// k-extractability, the Goldfish paper's exact match), and one teacher-forced pass over the same window gives the
// loss (the membership score) and the argmax accuracy of the suffix's targets, split by the Goldfish mask that a
// training run would have applied to them. Runs on any grid: the documents are shared out over the data × z
// replicas, each row's logits are split over Y, and every rank ends with every score.
#pragma once

#include "axonn/model/decoder.h"
#include "axonn/train/goldfish.h"

#include <cstdint>
#include <span>
#include <vector>

namespace axonn {

struct ExtractionSpec {
    int prefix = 32;
    int suffix = 32;
    GoldfishOptions mask;  // the training run's: which suffix targets it dropped (off: every target kept)
};

struct ExtractionScore {
    bool exact_match = false;  // every suffix token generated
    double token_match = 0;    // the fraction of suffix positions where the generated token is the true one
    int matching_prefix = 0;   // generated tokens before the first wrong one
    double rouge_l = 0;        // ROUGE-L F1 over token ids, generated against true suffix
    double loss = 0;           // mean teacher-forced cross-entropy over the window's targets, in nats
    int kept_correct = 0, kept_total = 0;        // teacher-forced argmax right, on suffix targets the mask keeps
    int dropped_correct = 0, dropped_total = 0;  // ... and on those it drops
    std::vector<std::int32_t> generated;         // the greedy suffix
};

// The means of a group of scores (a duplication bucket): NaN over no score, and accuracies NaN over no target.
struct ExtractionSummary {
    int documents = 0;
    double exact_match = 0, token_match = 0, matching_prefix = 0, rouge_l = 0, loss = 0;
    double kept_accuracy = 0, dropped_accuracy = 0;
};
ExtractionSummary summarize_extraction(std::span<ExtractionScore const> scores);

// Scores each document, which must hold at least prefix + suffix tokens (the window the model reads is their
// first prefix + suffix − 1, at most its context). Collective over the model's grid.
std::vector<ExtractionScore> score_extraction(Decoder& model, std::span<std::vector<std::int32_t> const> documents,
                                              ExtractionSpec const& spec);

// The F1 of the longest common subsequence of two token sequences (ROUGE-L), 0 when either is empty.
double rouge_l_f1(std::span<std::int32_t const> candidate, std::span<std::int32_t const> reference);

// The AUC of a loss-threshold membership attack: the probability that a random member's loss is below a random
// non-member's (ties count half). 0.5 is chance; NaN when either set is empty.
double membership_auc(std::span<double const> member_losses, std::span<double const> nonmember_losses);

}  // namespace axonn
