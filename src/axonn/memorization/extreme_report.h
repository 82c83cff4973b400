// What the extreme-repetition experiment writes: results.json (one record per model, loss and measured epoch),
// results.md (the settings, the criteria checked against the numbers, and the tables) and the plots
// exact_match.png (exact match against epochs, a panel per loss, a line per model) and ablations.png (the largest
// model under each loss and k, and its validation loss against the targets supervised).
#pragma once

#include "axonn/memorization/extreme_study.h"
#include "axonn/memorization/study_report.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace axonn {

struct ExtremeSummary {
    ExtremeOptions const& options;
    std::string grid;
    double seconds;
    std::string words, llama3;  // the tokenizations used, described ("" when unused)
};

// The bounds the criteria check. The full experiment's are the protocol's; --quick's are smaller, for a smoke
// run on 20 documents.
struct ExtremeThresholds {
    double min_standard_exact;  // the largest model, standard loss, final epoch
    double max_goldfish_exact;  // Goldfish at options.goldfish's k, every model, every epoch
    double max_val_loss_ratio;  // |Goldfish / standard − 1| at equal supervised targets, every model
};
ExtremeThresholds extreme_thresholds(bool quick);

// The criteria, from the records of run_extreme_study. The size sweep is the models that share the first model's
// tokenizer (the GPT-2 presets by default): (1) the standard loss memorizes the documents on the sweep's largest
// model; (2) Goldfish at k = `goldfish_k` keeps exact match near zero on every model; (3) its validation loss stays
// close to the standard loss's at the same number of supervised targets, on every model; (4) under the standard
// loss, larger models of the sweep need no more epochs to reproduce half the documents, and the largest fewer
// than the smallest.
std::vector<StudyCriterion> extreme_criteria(nlohmann::json const& results, ExtremeThresholds const& thresholds,
                                             int goldfish_k);

void write_extreme_report(std::filesystem::path const& out, ExtremeSummary const& summary,
                          nlohmann::json const& results);

}  // namespace axonn
