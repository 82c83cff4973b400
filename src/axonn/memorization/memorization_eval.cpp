#include "axonn/memorization/memorization_eval.h"

#include "axonn/memorization/eval_documents.h"

#include "axonn/core/error.h"
#include "axonn/io/tokenizer.h"
#include "axonn/model/decoder.h"
#include "axonn/train/checkpointing.h"
#include "axonn/train/job.h"
#include "axonn/train/threads.h"
#include "axonn/train/train_step.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace axonn {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json summary_json(ExtractionSummary const& s) {
    auto number = [](double v) { return std::isfinite(v) ? json(v) : json(); };
    return {{"documents", s.documents},         {"exact_match", s.exact_match},
            {"token_match", s.token_match},     {"matching_prefix", s.matching_prefix},
            {"rouge_l", s.rouge_l},             {"loss", s.loss},
            {"kept_accuracy", number(s.kept_accuracy)}, {"dropped_accuracy", number(s.dropped_accuracy)}};
}

}  // namespace

json evaluate_memorization(MemorizationEvalOptions const& options) {
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    use_threads(options.threads);
    fs::path const source = resolve_init_source(options.model_dir, "--model-dir");
    ModelConfig const config = init_source_config(source);
    Architecture const architecture = config.architecture();
    ExtractionSpec const& spec = options.spec;
    int const window = spec.prefix + spec.suffix;
    as_usage_errors([&] {
        AXONN_REQUIRE(spec.prefix >= 1 && spec.suffix >= 1, "--prefix and --suffix must be at least 1, got {} and {}",
                      spec.prefix, spec.suffix);
        AXONN_REQUIRE(window - 1 <= config.context(),
                      "--prefix {} + --suffix {} is longer than the model's context of {} "
                      "tokens (+1): shorten them",
                      spec.prefix, spec.suffix, config.context());
        require_grid_fits(architecture, DecoderOptions{}, options.grid, world, options.batch);
    });
    // Only "text" records need the tokenizer: one that cannot be loaded, or is not the model's (its vocabulary of
    // another size: byte ids were fed to a Llama 3 model), is an error when such a record comes.
    std::unique_ptr<Tokenizer> tokenizer;
    std::string no_tokenizer;
    try {
        tokenizer = make_tokenizer(options.tokenizer, options.tokenizer_dir);
    } catch (Error const& e) {
        no_tokenizer = fmt::format("the --tokenizer cannot be loaded: {}", e.what());
    }
    if (tokenizer && tokenizer->vocab_size() != config.vocab_size()) {
        no_tokenizer = fmt::format("the tokenizer {} is not the model's (a vocabulary of {} tokens; the model in {} "
                                   "has {}): pass the --tokenizer it was trained with",
                                   options.tokenizer, tokenizer->vocab_size(), options.model_dir.string(),
                                   config.vocab_size());
        tokenizer.reset();
    }
    std::vector<EvalDocument> const members =
        read_eval_documents(options.documents, tokenizer.get(), config.vocab_size(), no_tokenizer);
    std::vector<EvalDocument> heldout;
    if (!options.heldout.empty()) {
        heldout = read_eval_documents(options.heldout, tokenizer.get(), config.vocab_size(), no_tokenizer);
    }

    std::vector<std::vector<std::int32_t>> windows;
    std::vector<int> buckets;  // per window: its repetitions, or -2 for held out
    int skipped = 0;
    auto const add = [&](std::vector<EvalDocument> const& documents, bool held_out) {
        for (EvalDocument const& d : documents) {
            if (static_cast<int>(d.tokens.size()) < window) {
                ++skipped;
                continue;
            }
            windows.emplace_back(d.tokens.begin(), d.tokens.begin() + window);
            buckets.push_back(held_out ? -2 : d.repetitions);
        }
    };
    add(members, false);
    add(heldout, true);
    AXONN_REQUIRE(!windows.empty(), "no document has the {} tokens of --prefix {} + --suffix {}: lower them", window,
                  spec.prefix, spec.suffix);

    StepOptions step_options;
    Job job(step_options, {options.grid, options.grid_order});
    ProcessGrid& grid = job.grid();
    Backend& backend = job.backend();
    // Rows for the windows there are, at most: a --batch far beyond them allocated its activations all the same (a
    // --batch 100000 of 4 documents asked for 63 GB and failed with the allocator's words).
    int const replicas = grid.shape().batch_replicas();
    int const windows_per_replica = static_cast<int>((windows.size() + replicas - 1) / replicas);
    int const local = std::min(options.batch / replicas, windows_per_replica);
    Decoder model(architecture, backend, grid, local, window - 1);
    load_initial_weights(source, config, model);
    std::vector<ExtractionScore> const scores = score_extraction(model, windows, spec);

    std::map<int, std::vector<ExtractionScore>> by_bucket;
    std::vector<ExtractionScore> all_members;
    std::vector<double> member_losses, heldout_losses;
    for (std::size_t i = 0; i < scores.size(); ++i) {
        by_bucket[buckets[i]].push_back(scores[i]);
        (buckets[i] == -2 ? heldout_losses : member_losses).push_back(scores[i].loss);
        if (buckets[i] != -2) all_members.push_back(scores[i]);
    }
    json bucket_list = json::array();
    for (auto const& [repetitions, group] : by_bucket) {
        json entry = summary_json(summarize_extraction(group));
        entry["repetitions"] = repetitions == -2 ? json("held out") : repetitions < 0 ? json() : json(repetitions);
        if (repetitions != -2 && !heldout_losses.empty()) {
            std::vector<double> losses;
            for (ExtractionScore const& s : group) losses.push_back(s.loss);
            entry["mia_auc"] = membership_auc(losses, heldout_losses);
        }
        bucket_list.push_back(entry);
    }
    double const auc = membership_auc(member_losses, heldout_losses);
    return {{"model", options.model_dir.string()},
            {"prefix", spec.prefix},
            {"suffix", spec.suffix},
            {"mask", spec.mask.enabled() ? spec.mask.describe() : "off"},
            {"skipped_short", skipped},
            {"members", summary_json(summarize_extraction(all_members))},
            {"mia_auc", std::isfinite(auc) ? json(auc) : json()},
            {"buckets", bucket_list}};
}

}  // namespace axonn
