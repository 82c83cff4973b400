// `axonn generate`: continue text prompts with a trained model (an axonn checkpoint or a Hugging Face folder),
// on any grid, with the cache of keys and values (model/generate.h).
#pragma once

#include "axonn/comm/grid.h"
#include "axonn/model/generate.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

struct GenerationJobOptions {
    std::filesystem::path model_dir;   // an axonn checkpoint (or a folder of them: its newest) or a Hugging Face one
    std::vector<std::string> prompts;  // texts; an empty one starts from the end-of-text token
    SampleOptions sample;
    std::string stop_token;            // "" none, a token id, or "eot" (the tokenizer's end of text)
    std::string tokenizer = "gpt2";
    std::filesystem::path tokenizer_dir;
    GridShape grid;
    std::string grid_order = "x,y,z,data";
    int threads = 1;
    int prompt_chunk = 256;            // prompt tokens per forward (and the activations' room, per rank)
};

struct GenerationJobResult {
    std::vector<std::string> completions;              // the text each prompt is continued by
    std::vector<std::vector<std::int32_t>> tokens;     // its token ids
    std::vector<int> prompt_tokens;                    // how many tokens each prompt is
    double seconds = 0;                                // the generation alone (after loading)
};

// Runs the job on every rank (collective over MPI_COMM_WORLD); the result is the same on all. `on_text`, where
// given, hears the text of each new token of prompt 0 on rank 0 as it comes (for streaming one prompt).
GenerationJobResult run_generation(GenerationJobOptions const& options,
                                   std::function<void(std::string_view)> const& on_text = {});

}  // namespace axonn
