// `axonn memorization eval`: how much of a set of documents (eval_documents.h; optionally held-out ones, never
// trained on) a trained model reproduces. Each is scored on its first prefix + suffix tokens (extraction.h);
// shorter ones are skipped and counted.
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/memorization/extraction.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace axonn {

struct MemorizationEvalOptions {
    std::filesystem::path model_dir;  // an axonn checkpoint (or a folder of them) or a Hugging Face GPT-2 folder
    std::filesystem::path documents;
    std::filesystem::path heldout;    // optional
    ExtractionSpec spec;
    std::string tokenizer = "gpt2";   // for "text" records
    std::filesystem::path tokenizer_dir;
    GridShape grid;
    std::string grid_order = "x,y,z,data";
    int batch = 16;                   // documents per forward pass over the whole grid
    int threads = 1;
};

// The per-bucket and overall summaries, the membership AUC against the held-out documents, and how many documents
// were too short. Collective over MPI_COMM_WORLD.
nlohmann::json evaluate_memorization(MemorizationEvalOptions const& options);

}  // namespace axonn
