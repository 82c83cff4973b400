// What `axonn memorization study` writes: results.json (one record per model, loss and duplication bucket),
// finetune.json (exact match per epoch of each fine-tuning run), results.md (the settings, the pass criteria of the
// protocol checked against the numbers, and every table) and the plots: exact_match.png (exact match against
// repetitions, a panel per loss, a line per size), ablations.png and finetune.png (epochs to memorize against size,
// and exact match per epoch).
#pragma once

#include "axonn/memorization/study.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace axonn {

struct StudySummary {
    StudyOptions const& options;
    std::string corpus;  // what the text is
    double seconds;
    std::string grid;
};

// One of the protocol's pass criteria, as measured.
struct StudyCriterion {
    std::string name;
    std::string measured;
    bool passed;
};

// The largest held-out loss difference, in nats, that criterion 5 allows between Goldfish and the standard loss.
constexpr double study_val_loss_gap = 0.05;

// Criteria 1 (standard exact match grows with repetitions and size), 2 (Goldfish keeps it near zero) and
// 5 (Goldfish costs little held-out loss), from experiment A's records.
std::vector<StudyCriterion> study_criteria(nlohmann::json const& results, double max_val_loss_gap);

void write_study_report(std::filesystem::path const& out, StudySummary const& summary, nlohmann::json const& results,
                        nlohmann::json const& finetune);

}  // namespace axonn
