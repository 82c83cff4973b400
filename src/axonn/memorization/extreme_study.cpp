#include "axonn/memorization/extreme_study.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/rng.h"
#include "axonn/core/timer.h"
#include "axonn/families/registry.h"
#include "axonn/io/tokenizer.h"
#include "axonn/memorization/extraction.h"
#include "axonn/memorization/extreme_corpus.h"
#include "axonn/memorization/extreme_report.h"
#include "axonn/memorization/study_training.h"
#include "axonn/parallel/shard_layout.h"
#include "axonn/train/job.h"
#include "axonn/train/threads.h"
#include "axonn/model/decoder.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace axonn {
namespace {

using nlohmann::json;

constexpr std::uint64_t pretrain_stream = 12ULL << 40;
constexpr std::uint64_t epoch_order_stream = 13ULL << 40;
constexpr std::uint64_t replay_stream = 14ULL << 40;
constexpr int validation_sequences = 20;  // one forward of the evaluator

// A model of the experiment: its preset, shaped to the experiment's context and its tokenizer's vocabulary.
struct ExtremeModel {
    std::string name;
    ModelConfig config;
    ExtremeTokens const* tokens;
    // The same model built for more rows per forward, into which the trained weights are copied to be measured:
    // decoding 200 documents 4 rows at a time would cost more than an epoch of training.
    std::unique_ptr<Decoder> evaluator;
};

// Rows per forward of the evaluator, over the whole grid: 20 where the grid's replicas divide it.
int evaluation_rows(ExtremeOptions const& options) {
    return 20 % options.grid.batch_replicas() == 0 ? 20 : options.batch;
}

// Llama presets read the text with Llama 3's tokenizer; the others with the word vocabulary.
bool reads_llama3(std::string const& preset) { return family_of(model_preset(preset)).name == "llama"; }

ModelConfig extreme_config(std::string const& preset, int seq, int vocab) {
    ShapeOverrides overrides;
    overrides.context = seq;
    ModelConfig config = model_preset(preset).with_overrides(overrides);
    config.set_vocab_size(vocab);
    config.validate();
    return config;
}

// One fine-tuning run: a loss on one model.
struct ExtremeRun {
    std::string loss;     // "standard" or "goldfish"
    GoldfishOptions mask;  // off for the standard loss
};

std::string run_label(ExtremeRun const& run) {
    return run.mask.enabled() ? fmt::format("goldfish k={}", run.mask.k) : run.loss;
}

struct ExtremeContext {
    ExtremeOptions const& options;
    ProcessGrid& grid;
    Backend& backend;
    bool leader;
};

// The measurements of one model after `epoch` epochs of a run: extraction of the documents and the unseen entries,
// the membership AUC and the validation loss on Austen.
json measure(ExtremeContext const& context, ExtremeModel const& model, Decoder& trained, ExtremeRun const& run,
             int epoch, std::int64_t supervised, double train_loss, double seconds) {
    ExtremeOptions const& options = context.options;
    Decoder& decoder = *model.evaluator;
    std::copy(trained.params().begin(), trained.params().end(), decoder.params().begin());
    ExtremeTokens const& tokens = *model.tokens;
    std::vector<std::vector<std::int32_t>> documents = tokens.documents;
    documents.insert(documents.end(), tokens.unseen.begin(), tokens.unseen.end());
    // The accuracy split is by the Goldfish mask of the run (k = 4 for the standard loss: what Goldfish would drop).
    ExtractionSpec const spec{options.prefix, options.suffix, run.mask.enabled() ? run.mask : options.goldfish};
    std::vector<ExtractionScore> const scores = score_extraction(decoder, documents, spec);
    std::span<ExtractionScore const> const members(scores.data(), tokens.documents.size());
    std::span<ExtractionScore const> const unseen(scores.data() + tokens.documents.size(), tokens.unseen.size());
    ExtractionSummary const member = summarize_extraction(members), outsider = summarize_extraction(unseen);
    std::vector<double> member_losses, unseen_losses;
    for (ExtractionScore const& s : members) member_losses.push_back(s.loss);
    for (ExtractionScore const& s : unseen) unseen_losses.push_back(s.loss);
    int correct = 0, total = 0, exact = 0;
    for (ExtractionScore const& s : members) {
        correct += s.kept_correct + s.dropped_correct;
        total += s.kept_total + s.dropped_total;
        exact += s.exact_match;
    }
    double const val_loss = mean_study_loss(decoder, context.grid, options.seq, validation_sequences,
                                            [&](std::int64_t i, std::span<std::int32_t> window) {
                                                std::size_t const room = tokens.validation.size() - window.size();
                                                std::size_t const start = static_cast<std::size_t>(i) * window.size() % room;
                                                std::copy_n(tokens.validation.begin() + static_cast<std::ptrdiff_t>(start),
                                                            window.size(), window.begin());
                                            });
    auto const number = [](double value) { return std::isfinite(value) ? json(value) : json(); };
    return {{"experiment", "extreme"},
            {"model", model.name},
            {"parameters", model.config.parameter_count()},
            {"tokenizer", tokens.tokenizer},
            {"loss", run.loss},
            {"k", run.mask.enabled() ? json(run.mask.k) : json()},
            {"goldfish", run.mask.enabled() ? run.mask.describe() : "off"},
            {"epoch", epoch},
            {"documents", member.documents},
            {"exact_matches", exact},
            {"exact_match", member.exact_match},
            {"rouge_l", member.rouge_l},
            {"token_accuracy", number(total > 0 ? static_cast<double>(correct) / total : std::nan(""))},
            {"token_match", member.token_match},
            {"matching_prefix", member.matching_prefix},
            {"kept_accuracy", number(member.kept_accuracy)},
            {"dropped_accuracy", number(member.dropped_accuracy)},
            {"document_loss", member.loss},
            {"unseen_loss", outsider.loss},
            {"unseen_exact_match", outsider.exact_match},
            {"auc", number(membership_auc(member_losses, unseen_losses))},
            {"val_loss", val_loss},
            {"supervised_targets", supervised},
            {"train_loss", number(train_loss)},
            {"seconds", seconds}};
}

// Window `index` of Austen's training part for the random stream `stream`: at an offset drawn from both.
void austen_window(ExtremeOptions const& options, std::vector<std::int32_t> const& text, std::uint64_t stream,
                   std::int64_t index, std::span<std::int32_t> window) {
    std::uint64_t const room = text.size() - window.size();
    std::uint64_t const start = philox4x32({options.seed, stream}, static_cast<std::uint64_t>(index))[0] % room;
    std::copy_n(text.begin() + static_cast<std::ptrdiff_t>(start), window.size(), window.begin());
}

// Trains a model of `model` from the seed on windows of Austen's training part.
StudyModel pretrain(ExtremeContext const& context, ExtremeModel const& model) {
    ExtremeOptions const& options = context.options;
    std::vector<std::int32_t> const& text = model.tokens->train;
    StudyModel trained = new_study_model(model.config, context.backend, context.grid, options.batch, options.seq,
                                         options.seed);
    LrSchedule schedule{options.pretrain_lr, options.pretrain_lr / 10, std::max(1, options.pretrain_steps / 20),
                        options.pretrain_steps};
    schedule.validate();
    StudyTrainingRun const run{options.batch, options.seq, options.pretrain_steps, 0,
                               fmt::format("{} on Austen", model.name)};
    train_study_model(trained, context.grid, run, schedule, GoldfishOptions{},
                      [&](std::int64_t slot, std::span<std::int32_t> window) {
                          austen_window(options, text, pretrain_stream, slot, window);
                      });
    return trained;
}

// Fine-tunes from the pretrained weights on the documents, every epoch visiting each once in an order drawn from
// the epoch (the same for every loss), each step beside `replay` new Austen windows, and measures after the first
// epoch, every eval_every, and the last.
json fine_tune(ExtremeContext const& context, ExtremeModel const& model, std::span<float const> start,
               ExtremeRun const& run, json const& pretrained) {
    ExtremeOptions const& options = context.options;
    std::vector<std::vector<std::int32_t>> const& documents = model.tokens->documents;
    int const per_epoch = options.documents / options.batch;
    StudyModel tuned = new_study_model(model.config, context.backend, context.grid,
                                       options.batch + options.replay, options.seq, options.seed, start);
    // Cosine decay to a tenth over the whole fine-tuning: at a constant rate the exact matches of the last epochs
    // swing by 10-15 documents from one measurement to the next.
    LrSchedule const schedule{options.lr, options.lr / 10, 0, options.epochs * per_epoch};
    json records = json::array();
    json first = pretrained;
    first["loss"] = run.loss;
    first["k"] = run.mask.enabled() ? json(run.mask.k) : json();
    first["goldfish"] = run.mask.enabled() ? run.mask.describe() : "off";
    records.push_back(first);
    std::int64_t supervised = 0;
    Stopwatch watch;
    int const rows = options.batch + options.replay;
    for (int epoch = 1; epoch <= options.epochs; ++epoch) {
        std::vector<int> order(documents.size());
        std::iota(order.begin(), order.end(), 0);
        seeded_shuffle(std::span(order), {options.seed, epoch_order_stream + static_cast<std::uint64_t>(epoch)});
        StudyTrainingRun const pass{rows, options.seq, per_epoch, 0, "", false, (epoch - 1) * per_epoch};
        // Each step: `batch` documents in the epoch's order, then `replay` Austen windows never used before.
        auto const sequence = [&](std::int64_t slot, std::span<std::int32_t> window) {
            std::int64_t const step = slot / rows, row = slot % rows;
            if (row < options.batch) {
                std::vector<std::int32_t> const& text = documents[static_cast<std::size_t>(
                    order[static_cast<std::size_t>(step * options.batch + row)])];
                std::copy_n(text.begin(), window.size(), window.begin());
                return;
            }
            std::int64_t const replayed = ((epoch - 1) * std::int64_t{per_epoch} + step) * options.replay +
                                          (row - options.batch);
            austen_window(options, model.tokens->train, replay_stream, replayed, window);
        };
        StudyTraining const trained = train_study_model(tuned, context.grid, pass, schedule, run.mask, sequence);
        supervised += trained.supervised_targets;
        if (epoch != 1 && epoch % options.eval_every != 0 && epoch != options.epochs) continue;
        records.push_back(measure(context, model, *tuned.model, run, epoch, supervised,
                                  run.mask.enabled() ? trained.losses.kept_targets : trained.losses.all_targets,
                                  watch.seconds()));
        json const& last = records.back();
        if (context.leader) {
            fmt::print(stderr, "{:<12} {:<14} epoch {:>3}: train loss {:.3f} | exact match {:>3}/{} | ROUGE-L {:.2f} | "
                       "AUC {:.2f} | val {:.3f} | {:.0f} s\n", model.name, run_label(run), epoch,
                       last["train_loss"].get<double>(), last["exact_matches"].get<int>(), options.documents,
                       last["rouge_l"].get<double>(),
                       last["auc"].is_number() ? last["auc"].get<double>() : std::nan(""),
                       last["val_loss"].get<double>(), watch.seconds());
        }
    }
    return records;
}

// The runs of a model: standard and Goldfish, and the k ablations on the ablation model.
std::vector<ExtremeRun> runs_of(ExtremeOptions const& options, std::string const& model) {
    std::vector<ExtremeRun> runs = {{"standard", GoldfishOptions{}}, {"goldfish", options.goldfish}};
    if (model != options.ablation_model) return runs;
    for (int k : options.k_ablations) {
        GoldfishOptions mask = options.goldfish;
        mask.k = k;
        runs.push_back({"goldfish", mask});
    }
    return runs;
}

}  // namespace

ExtremeOptions ExtremeOptions::defaults(bool quick) {
    ExtremeOptions options;
    options.goldfish = parse_goldfish("k=4,h=13");
    options.models = {"gpt2-micro", "gpt2-tiny", "gpt2-mini", "llama-tiny"};
    options.ablation_model = "gpt2-tiny";
    options.quick = quick;
    if (quick) {
        options.models = {"gpt2-micro", "gpt2-tiny", "llama-tiny"};
        options.ablation_model = "";
        options.documents = 20;
        options.unseen = 20;
        options.pretrain_steps = 300;
        options.epochs = 60;
        options.eval_every = 10;
        options.lr = 2e-3f;  // a fifth of the full run's steps per epoch: 10^-3 leaves gpt2-tiny at 1 of 20
    }
    return options;
}

void validate_extreme_options(ExtremeOptions const& options) {
    AXONN_REQUIRE(!options.models.empty(), "the experiment needs at least one model (--models)");
    // An unknown preset names the known ones. The report compares each family's models in the order listed:
    // smallest first, each once.
    std::map<std::string, std::int64_t> largest_of_family;
    for (std::string const& name : options.models) {
        ModelConfig const model = model_preset(name);
        std::int64_t& largest = largest_of_family[model.family()];
        AXONN_REQUIRE(model.parameter_count() > largest,
                      "--models {}: list each family's models smallest first, each once",
                      fmt::join(options.models, ","));
        largest = model.parameter_count();
    }
    AXONN_REQUIRE(options.ablation_model.empty() || std::find(options.models.begin(), options.models.end(),
                                                              options.ablation_model) != options.models.end(),
                  "--ablation-model {} is not among --models: name one of them, or \"\" for no ablations",
                  options.ablation_model);
    AXONN_REQUIRE(options.documents >= 1 && options.unseen >= 1,
                  "--documents and --unseen must be at least 1, got {} and {}", options.documents, options.unseen);
    AXONN_REQUIRE(options.batch >= 1 && options.documents % options.batch == 0,
                  "--batch {} does not divide the {} "
                  "documents, so an epoch would not see each once: choose a divisor of {}",
                  options.batch, options.documents, options.documents);
    AXONN_REQUIRE(options.replay >= 0, "--replay must not be negative, got {}", options.replay);
    AXONN_REQUIRE(options.epochs >= 1 && options.eval_every >= 1 && options.pretrain_steps >= 1,
                  "--epochs, --eval-every and --pretrain-steps must be at least 1, got {}, {} and {}", options.epochs,
                  options.eval_every, options.pretrain_steps);
    AXONN_REQUIRE(
        std::isfinite(options.lr) && options.lr > 0 && std::isfinite(options.pretrain_lr) && options.pretrain_lr > 0,
        "--lr and --pretrain-lr must be positive, got {} and {}", options.lr, options.pretrain_lr);
    AXONN_REQUIRE(options.prefix >= 1 && options.suffix >= 1 && options.prefix + options.suffix <= options.seq + 1,
                  "a prefix of {} and a suffix of {} tokens do not fit in the training window of {} tokens",
                  options.prefix, options.suffix, options.seq + 1);
    AXONN_REQUIRE(options.seq + 1 <= 65,
                  "each document holds 65 tokens or more: a window of {} tokens is too long (the "
                  "largest is 64 + 1)",
                  options.seq + 1);
}

json run_extreme_study(ExtremeOptions const& options) {
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    as_usage_errors([&] { validate_extreme_options(options); });
    ExtremeTextSource const source =
        read_extreme_text(options.devil_dir, options.austen_package, options.documents, options.unseen, options.seed);
    bool const any_llama = std::any_of(options.models.begin(), options.models.end(), reads_llama3);
    bool const any_words = !std::all_of(options.models.begin(), options.models.end(), reads_llama3);
    ExtremeTokens const words = any_words ? word_tokens(source, options.words) : ExtremeTokens{};
    ExtremeTokens const llama3 = any_llama ? llama3_tokens(source, options.llama3_dir) : ExtremeTokens{};
    std::vector<ExtremeModel> models;
    for (std::string const& name : options.models) {
        ExtremeTokens const& tokens = reads_llama3(name) ? llama3 : words;
        models.push_back({name, extreme_config(name, options.seq, tokens.vocab), &tokens, nullptr});
    }
    as_usage_errors([&] {
        for (ExtremeModel const& model : models) {
            Architecture const architecture = model.config.architecture();
            require_grid_fits(architecture, DecoderOptions{}, options.grid, world, options.batch);
            require_grid_fits(architecture, DecoderOptions{}, options.grid, world, options.batch + options.replay);
        }
        use_threads(options.threads);
    });
    StepOptions step_options;
    Job job(step_options, {options.grid, options.grid_order});
    ExtremeContext const context{options, job.grid(), job.backend(), job.leader()};
    for (ExtremeModel& model : models) {
        model.evaluator = std::make_unique<Decoder>(model.config, job.backend(), job.grid(),
                                                    evaluation_rows(options) / options.grid.batch_replicas(),
                                                    options.seq);
    }
    if (context.leader) create_folder(options.out, "results (--out)");
    Stopwatch watch;
    if (context.leader) {
        fmt::print(stderr, "extreme-repetition experiment on grid {}: {} Devil's Dictionary entries fine-tuned on for "
                   "{} epochs ({} unseen), after {} steps on Jane Austen; batches of {} x {} tokens\n",
                   job.grid().shape().to_string(), options.documents, options.epochs, options.unseen,
                   options.pretrain_steps, options.batch, options.seq);
    }
    json results = json::array();
    for (ExtremeModel const& model : models) {
        Stopwatch pretraining;
        StudyModel base = pretrain(context, model);
        json const pretrained = measure(context, model, *base.model, {"pretrained", GoldfishOptions{}}, 0, 0,
                                        std::nan(""), pretraining.seconds());
        std::vector<float> const start(base.model->params().begin(), base.model->params().end());
        for (ExtremeRun const& run : runs_of(options, model.name)) {
            for (json const& record : fine_tune(context, model, start, run, pretrained)) results.push_back(record);
        }
    }
    if (context.leader) {
        ExtremeSummary const summary{options, job.grid().shape().to_string(), watch.seconds(),
                                     words.vocab > 0 ? words.describe() : "", llama3.vocab > 0 ? llama3.describe() : ""};
        write_extreme_report(options.out, summary, results);
        fmt::print(stderr, "extreme-repetition experiment done in {:.0f} s: {}\n", watch.seconds(),
                   (options.out / "results.md").string());
    }
    return results;
}

}  // namespace axonn
