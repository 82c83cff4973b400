#include "axonn/memorization/memorization_eval.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/tokenizer.h"
#include "axonn/model/gpt.h"
#include "axonn/parallel/shard_layout.h"
#include "axonn/train/checkpointing.h"
#include "axonn/train/threads.h"
#include "axonn/train/train_step.h"

#include <fmt/format.h>
#include <mpi.h>

#include <cmath>
#include <fstream>
#include <map>

namespace axonn {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

EvalDocument parse_document(json const& record, Tokenizer const* tokenizer, int vocab_size) {
    require(record.is_object() && (record.contains("tokens") || record.contains("text")),
            "is not an object with \"tokens\" (a list of ids) or \"text\"");
    EvalDocument document;
    if (record.contains("tokens")) {
        require(record["tokens"].is_array(), "\"tokens\" is not a list of token ids");
        for (json const& id : record["tokens"]) {
            require(id.is_number_integer() && id.get<std::int64_t>() >= 0 && id.get<std::int64_t>() < vocab_size,
                    "token {} is not an id of the model's vocabulary (0 to {})", id.dump(), vocab_size - 1);
            document.tokens.push_back(id.get<std::int32_t>());
        }
    } else {
        require(record["text"].is_string(), "\"text\" is not a string");
        require(tokenizer != nullptr, "has \"text\" but no tokenizer was given");
        document.tokens = tokenizer->encode(record["text"].get<std::string>());
    }
    if (record.contains("repetitions")) {
        require(record["repetitions"].is_number_integer() && record["repetitions"].get<std::int64_t>() >= 0 &&
                    record["repetitions"].get<std::int64_t>() <= 1'000'000'000,
                "\"repetitions\" is not a count from 0 up");
        document.repetitions = record["repetitions"].get<int>();
    }
    return document;
}

json summary_json(ExtractionSummary const& s) {
    auto number = [](double v) { return std::isfinite(v) ? json(v) : json(); };
    return {{"documents", s.documents},         {"exact_match", s.exact_match},
            {"token_match", s.token_match},     {"matching_prefix", s.matching_prefix},
            {"rouge_l", s.rouge_l},             {"loss", s.loss},
            {"kept_accuracy", number(s.kept_accuracy)}, {"dropped_accuracy", number(s.dropped_accuracy)}};
}

}  // namespace

std::vector<EvalDocument> read_eval_documents(fs::path const& path, Tokenizer const* tokenizer, int vocab_size) {
    std::string const text = read_input_file(path, "document file", "pass a JSON-lines file of documents", std::uint64_t{1} << 32);
    std::vector<EvalDocument> documents;
    std::size_t start = 0;
    for (int line = 1; start < text.size(); ++line) {
        std::size_t const end = std::min(text.find('\n', start), text.size());
        std::string_view const content(text.data() + start, end - start);
        start = end + 1;
        if (content.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        try {
            json const record = json::parse(content);
            documents.push_back(parse_document(record, tokenizer, vocab_size));
        } catch (json::exception const& e) {
            throw Error(fmt::format("{} line {}: not JSON ({}): write one object per line, {{\"tokens\": [...]}} or "
                                    "{{\"text\": \"...\"}}", path.string(), line, e.what()));
        } catch (Error const& e) {
            throw Error(fmt::format("{} line {}: {}", path.string(), line, e.what()));
        }
    }
    require(!documents.empty(), "{} holds no document: write one JSON object per line, {{\"tokens\": [...]}} or "
            "{{\"text\": \"...\"}}", path.string());
    return documents;
}

json evaluate_memorization(MemorizationEvalOptions const& options) {
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    use_threads(options.threads);
    fs::path const source = resolve_init_source(options.model_dir);
    GptConfig const config = init_source_config(source);
    ExtractionSpec const& spec = options.spec;
    int const window = spec.prefix + spec.suffix;
    as_usage_errors([&] {
        require(spec.prefix >= 1 && spec.suffix >= 1, "--prefix and --suffix must be at least 1, got {} and {}",
                spec.prefix, spec.suffix);
        require(window - 1 <= config.max_seq, "--prefix {} + --suffix {} is longer than the model's context of {} "
                "tokens (+1): shorten them", spec.prefix, spec.suffix, config.max_seq);
        require_valid_grid(config, options.grid, world, options.batch);
    });
    std::unique_ptr<Tokenizer> tokenizer;
    try {
        tokenizer = make_tokenizer(options.tokenizer, options.tokenizer_dir);
    } catch (Error const&) {
        tokenizer = nullptr;  // only "text" records need it; they say so
    }
    std::vector<EvalDocument> const members = read_eval_documents(options.documents, tokenizer.get(), config.vocab_size);
    std::vector<EvalDocument> heldout;
    if (!options.heldout.empty()) heldout = read_eval_documents(options.heldout, tokenizer.get(), config.vocab_size);

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
    require(!windows.empty(), "no document has the {} tokens of --prefix {} + --suffix {}: lower them", window,
            spec.prefix, spec.suffix);

    ProcessGrid grid(MPI_COMM_WORLD, options.grid, parse_axis_order(options.grid_order));
    StepOptions step_options;
    std::unique_ptr<Backend> const backend = make_step_backend(step_options, grid.rank() == 0);
    int const local = options.batch / (grid.size(Axis::data) * grid.size(Axis::z));
    Gpt model(config, *backend, grid, local, window - 1);
    load_initial_weights(source, model);
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
