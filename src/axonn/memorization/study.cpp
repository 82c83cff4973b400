#include "axonn/memorization/study.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/core/timer.h"
#include "axonn/families/gpt2/gpt2_parameters.h"
#include "axonn/memorization/extraction.h"
#include "axonn/memorization/study_report.h"
#include "axonn/memorization/study_training.h"
#include "axonn/train/job.h"
#include "axonn/train/schedule.h"
#include "axonn/train/threads.h"
#include "axonn/model/decoder.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace axonn {
namespace {

using nlohmann::json;

GptConfig study_config(StudyModelSize const& size, StudyOptions const& options, int vocab) {
    GptConfig config;
    config.name = size.name;
    config.vocab_size = vocab;
    config.n_layer = size.n_layer;
    config.n_head = size.n_head;
    config.n_embd = size.n_embd;
    config.max_seq = options.seq;
    config.validate();
    return config;
}

// What one training run learns from, and how its loss is masked.
struct RunSpec {
    StudyModelSize size;
    std::string loss;        // "standard", "goldfish", or an ablation's name
    std::string experiment;  // "size" (experiment A), "ablation" or "control"
    GoldfishOptions mask;
    int max_shift = 0;       // canary copies at random offsets 0 .. max_shift − 1
    bool with_canaries = true;
};

// Everything a run needs from the job: the grid, the backend, and where to print.
struct StudyContext {
    StudyOptions const& options;
    StudyCorpus const& corpus;
    ProcessGrid& grid;
    Backend& backend;
    bool leader;
    std::vector<bool> const* control_extracted;  // per member canary, for the size being run: left out
};

// A fresh model of `size` from the study's seed, or from `start` (another model's weights on this grid) when given.
StudyModel new_model(StudyContext const& context, StudyModelSize const& size, std::span<float const> start = {}) {
    StudyOptions const& options = context.options;
    return new_study_model(study_config(size, options, context.corpus.text().vocab()), context.backend, context.grid,
                           options.batch, options.seq, options.corpus.seed, start);
}

// Trains for `steps` steps on global batches of `sequence`'s slots under the schedule and the mask; the losses of
// the last tenth of the steps are averaged.
MaskedLosses train(StudyContext const& context, StudyModel& trained, int steps, LrSchedule const& schedule,
                   GoldfishOptions const& mask, SequenceSource const& sequence, std::string const& label,
                   bool show_progress = true) {
    StudyTrainingRun const run{context.options.batch, context.options.seq, steps, 0, label, show_progress};
    return train_study_model(trained, context.grid, run, schedule, mask, sequence).losses;
}

// The mean loss over the same 16 validation sequences for every run (the runs' differences are paired).
double validation_loss(StudyContext const& context, Decoder& model) {
    return mean_study_loss(model, context.grid, context.options.seq, 16,
                           [&](std::int64_t i, std::span<std::int32_t> w) {
                               context.corpus.validation_sequence(static_cast<int>(i), w);
                           });
}

std::vector<std::vector<std::int32_t>> canary_tokens(std::vector<Canary> const& canaries) {
    std::vector<std::vector<std::int32_t>> documents;
    for (Canary const& canary : canaries) documents.push_back(canary.tokens);
    return documents;
}

// The split of teacher-forced accuracy: by the run's own mask when it is a fixed one, else by the Goldfish mask.
GoldfishOptions scoring_mask(StudyOptions const& options, GoldfishOptions const& run_mask) {
    return run_mask.enabled() && run_mask.strategy != GoldfishStrategy::random ? run_mask : options.goldfish;
}

json number_or_null(double value) { return std::isfinite(value) ? json(value) : json(); }

json bucket_record(RunSpec const& run, Architecture const& model, int repetitions,
                   std::vector<ExtractionScore> const& scores, std::vector<double> const& heldout_losses) {
    ExtractionSummary const summary = summarize_extraction(scores);
    std::vector<double> losses;
    for (ExtractionScore const& s : scores) losses.push_back(s.loss);
    return {{"model", run.size.name},
            {"parameters", model.parameter_count()},
            {"loss", run.loss},
            {"experiment", run.experiment},
            {"repetitions", repetitions},
            {"canaries", summary.documents},
            {"exact_match", number_or_null(summary.exact_match)},
            {"token_match", number_or_null(summary.token_match)},
            {"matching_prefix", number_or_null(summary.matching_prefix)},
            {"rouge_l", number_or_null(summary.rouge_l)},
            {"canary_loss", number_or_null(summary.loss)},
            {"kept_accuracy", number_or_null(summary.kept_accuracy)},
            {"dropped_accuracy", number_or_null(summary.dropped_accuracy)},
            {"mia_auc", number_or_null(membership_auc(losses, heldout_losses))}};
}

// Extraction of every member canary (and the held-out ones, repetitions 0), one record per bucket.
json measure(StudyContext const& context, RunSpec const& run, StudyModel& trained, MaskedLosses const& train_losses,
             double seconds, std::vector<bool>* extracted) {
    StudyOptions const& options = context.options;
    ExtractionSpec const spec{options.corpus.prefix, options.corpus.suffix, scoring_mask(options, run.mask)};
    std::vector<std::vector<std::int32_t>> documents = canary_tokens(context.corpus.members());
    std::vector<std::vector<std::int32_t>> const heldout = canary_tokens(context.corpus.heldout());
    documents.insert(documents.end(), heldout.begin(), heldout.end());
    std::vector<ExtractionScore> const scores = score_extraction(*trained.model, documents, spec);
    std::size_t const members = context.corpus.members().size();
    std::vector<double> heldout_losses;
    for (std::size_t i = members; i < scores.size(); ++i) heldout_losses.push_back(scores[i].loss);
    std::vector<double> member_losses;
    for (std::size_t i = 0; i < members; ++i) member_losses.push_back(scores[i].loss);
    if (extracted != nullptr) {
        extracted->clear();
        for (std::size_t i = 0; i < members; ++i) extracted->push_back(scores[i].exact_match);
    }

    double const val_loss = validation_loss(context, *trained.model);
    json records = json::array();
    auto const add = [&](int repetitions, std::vector<ExtractionScore> const& bucket) {
        json record = bucket_record(run, trained.model->architecture(), repetitions, bucket, heldout_losses);
        record["val_loss"] = val_loss;
        record["mia_auc_all_members"] = number_or_null(membership_auc(member_losses, heldout_losses));
        record["train_loss_all"] = train_losses.all_targets;
        record["train_loss_kept"] = train_losses.kept_targets;
        record["train_loss_dropped"] = number_or_null(train_losses.dropped_targets);
        record["goldfish"] = run.mask.enabled() ? run.mask.describe() : "off";
        record["canary_offsets"] = run.max_shift > 0 ? fmt::format("0-{}", run.max_shift - 1) : "0";
        record["train_seconds"] = seconds;
        records.push_back(record);
    };
    for (int repetitions : options.corpus.buckets) {
        std::vector<ExtractionScore> bucket;
        int excluded = 0;
        for (std::size_t i = 0; i < members; ++i) {
            if (context.corpus.members()[i].repetitions != repetitions) continue;
            if (context.control_extracted != nullptr && (*context.control_extracted)[i]) {
                ++excluded;
            } else {
                bucket.push_back(scores[i]);
            }
        }
        add(repetitions, bucket);
        records.back()["excluded_as_control_extracted"] = excluded;
    }
    add(0, std::vector<ExtractionScore>(scores.begin() + static_cast<std::ptrdiff_t>(members), scores.end()));
    return records;
}

// Warm-up over the first 5% of the steps, then cosine decay to a tenth of the peak.
LrSchedule study_schedule(float peak, int steps) {
    LrSchedule schedule{peak, peak / 10, std::max(1, steps / 20), steps};
    schedule.validate();
    return schedule;
}

// Trains one run and measures it: the control, from the seed on background alone for the pretraining steps; every
// other run, from the control's weights (`start`) on the canary phase's stream. The control's model is returned
// through `keep`, as the others' starting point and the fine-tuning experiment's.
json run_one(StudyContext const& context, RunSpec const& run, std::span<float const> start,
             StudyModel* keep = nullptr, std::vector<bool>* extracted = nullptr) {
    StudyOptions const& options = context.options;
    StudyModel trained = new_model(context, run.size, start);
    int const steps = run.with_canaries ? options.steps : options.pretrain_steps;
    // The canary phase's background follows the pretraining's.
    StudyCorpus::Layout const layout{steps * options.batch, options.seq, run.with_canaries, run.max_shift,
                                     run.with_canaries ? std::int64_t{options.pretrain_steps} * options.batch : 0};
    Stopwatch watch;
    std::string const label = fmt::format("{} {}", run.size.name, run.loss);
    MaskedLosses const losses = train(context, trained, steps, study_schedule(options.lr, steps), run.mask,
                                      [&](std::int64_t slot, std::span<std::int32_t> w) {
                                          context.corpus.training_sequence(layout, static_cast<int>(slot), w);
                                      }, label);
    double const seconds = watch.seconds();
    json records = measure(context, run, trained, losses, seconds, extracted);
    if (context.leader) {
        json const& top = records[records.size() - 2];  // the most repeated bucket
        fmt::print(stderr, "{:<22} val {:.3f} | exact match at {}x: {} | {:.1f} s\n", label,
                   top["val_loss"].get<double>(), top["repetitions"].get<int>(),
                   top["exact_match"].is_number() ? fmt::format("{:.2f}", top["exact_match"].get<double>()) : "-",
                   seconds);
    }
    if (keep != nullptr) *keep = std::move(trained);
    return records;
}

// Experiment B for one size: from the control model's weights, fine-tune on the fine-tuning canaries alone with
// each loss, measuring exact match after every epoch.
json finetune_size(StudyContext const& context, StudyModelSize const& size, StudyModel& control) {
    StudyOptions const& options = context.options;
    std::span<float const> const start = control.model->param_values();
    std::vector<Canary> const& canaries = context.corpus.finetune();
    int const per_epoch = static_cast<int>(canaries.size()) / options.batch;
    ExtractionSpec spec{options.corpus.prefix, options.corpus.suffix, options.goldfish};
    std::vector<std::vector<std::int32_t>> const documents = canary_tokens(canaries);
    json records = json::array();
    for (bool goldfish : {false, true}) {
        StudyModel tuned = new_model(context, size, start);
        LrSchedule const constant{options.lr, options.lr, 0, options.finetune_epochs * per_epoch};
        GoldfishOptions const mask = goldfish ? options.goldfish : GoldfishOptions{};
        std::vector<double> exact_by_epoch;
        json epochs_to_half;
        for (int epoch = 0; epoch < options.finetune_epochs; ++epoch) {
            // Each epoch visits every canary once, in an order drawn from the epoch.
            std::vector<int> order(canaries.size());
            std::iota(order.begin(), order.end(), 0);
            seeded_shuffle(std::span(order), {options.corpus.seed, 900 + static_cast<std::uint64_t>(epoch)});
            auto const sequence = [&](std::int64_t slot, std::span<std::int32_t> w) {
                std::vector<std::int32_t> const& text = canaries[order[slot % order.size()]].tokens;
                std::copy(text.begin(), text.end(), w.begin());
                context.corpus.text().background((1ULL << 50) + static_cast<std::uint64_t>(slot),
                                                 w.subspan(text.size()), text.back());
            };
            train(context, tuned, per_epoch, constant, mask, sequence,
                  fmt::format("{} fine-tuning epoch {}", size.name, epoch + 1), false);
            std::vector<ExtractionScore> const scores = score_extraction(*tuned.model, documents, spec);
            double exact = 0;
            for (ExtractionScore const& s : scores) exact += s.exact_match;
            exact_by_epoch.push_back(exact / static_cast<double>(scores.size()));
            if (epochs_to_half.is_null() && exact_by_epoch.back() >= 0.5) epochs_to_half = epoch + 1;
        }
        if (context.leader) {
            fmt::print(stderr, "{:<22} exact match after 1 epoch {:.2f}, after {} {:.2f}; half memorized after {}\n",
                       fmt::format("{} fine-tune {}", size.name, goldfish ? "goldfish" : "standard"),
                       exact_by_epoch.front(), options.finetune_epochs, exact_by_epoch.back(),
                       epochs_to_half.is_null() ? std::string("never") : epochs_to_half.dump() + " epochs");
        }
        records.push_back({{"model", size.name},
                           {"parameters", control.model->architecture().parameter_count()},
                           {"loss", goldfish ? "goldfish" : "standard"},
                           {"canaries", canaries.size()},
                           {"learning_rate", options.lr},
                           {"exact_match_by_epoch", exact_by_epoch},
                           {"epochs_to_half", epochs_to_half}});
    }
    return records;
}

}  // namespace

std::vector<StudyModelSize> study_sizes(std::vector<std::string> const& names) {
    std::vector<StudyModelSize> const all = {{"XS", 1, 2, 32}, {"S", 2, 4, 64}, {"M", 4, 4, 128}, {"L", 6, 6, 192}};
    std::vector<StudyModelSize> chosen;
    auto previous = all.begin();
    for (std::string const& name : names) {
        auto const found = std::find_if(all.begin(), all.end(), [&](StudyModelSize const& s) { return s.name == name; });
        AXONN_REQUIRE(found != all.end(), "unknown study model size '{}': choose among XS, S, M and L", name);
        // The criteria read the last size as the largest and compare each with the one before it.
        AXONN_REQUIRE(chosen.empty() || found > previous,
                      "--sizes {}: list the sizes smallest first, each once (XS, S, M, L)", fmt::join(names, ","));
        chosen.push_back(*found);
        previous = found;
    }
    return chosen;
}

StudyOptions StudyOptions::defaults(bool quick) {
    StudyOptions options;
    options.goldfish = parse_goldfish("k=4,h=13");
    options.sizes = study_sizes({"XS", "S", "M", "L"});
    if (quick) {
        options.sizes = study_sizes({"M"});
        options.pretrain_steps = 600;
        options.corpus.buckets = {1, 32};
        options.ablations = false;
        options.finetune = false;
    }
    return options;
}

void validate_study_options(StudyOptions const& options) {
    StudyCorpusSpec const& corpus = options.corpus;
    AXONN_REQUIRE(!options.sizes.empty(), "the study needs at least one model size (--sizes)");
    AXONN_REQUIRE(options.batch >= 1 && options.steps >= 1 && options.pretrain_steps >= 1,
                  "--batch, --steps and --pretrain-steps must be at least 1, got {}, {} and {}", options.batch,
                  options.steps, options.pretrain_steps);
    AXONN_REQUIRE(std::isfinite(options.lr) && options.lr > 0, "--lr must be positive, got {}", options.lr);
    AXONN_REQUIRE(
        corpus.vocab >= 2 && corpus.vocab <= 4096 && corpus.successors >= 1 && corpus.successors <= corpus.vocab,
        "--vocab must lie in 2..4096 and --successors in 1..vocab, got {} and {}", corpus.vocab, corpus.successors);
    AXONN_REQUIRE(corpus.canaries_per_bucket >= 1 && !corpus.buckets.empty(),
                  "the study needs canaries: --canaries at least 1 and one bucket or more in --buckets");
    std::int64_t copies = 0;
    for (std::size_t i = 0; i < corpus.buckets.size(); ++i) {
        int const repetitions = corpus.buckets[i];
        AXONN_REQUIRE(repetitions >= 1 && repetitions <= 1'000'000,
                      "--buckets: a canary group is trained on 1 to "
                      "1000000 times, got {}",
                      repetitions);
        // The criteria compare each bucket with the one before it: fewer repetitions first.
        AXONN_REQUIRE(i == 0 || repetitions > corpus.buckets[i - 1],
                      "--buckets {}: list the repetitions in increasing order, each once",
                      fmt::join(corpus.buckets, ","));
        copies += std::int64_t{repetitions} * corpus.canaries_per_bucket;
    }
    AXONN_REQUIRE(corpus.prefix + corpus.suffix <= options.seq,
                  "canaries of {} + {} tokens are longer than the study's "
                  "context of {} tokens",
                  corpus.prefix, corpus.suffix, options.seq);
    AXONN_REQUIRE(
        !options.finetune || corpus.finetune_canaries % options.batch == 0,
        "--batch {} does not divide the {} "
        "fine-tuning canaries, so an epoch would not see each once: choose a divisor of {}, or --skip finetune",
        options.batch, corpus.finetune_canaries, corpus.finetune_canaries);
    AXONN_REQUIRE(copies <= std::int64_t{options.steps} * options.batch,
                  "the canaries' {} copies do not fit in {} steps "
                  "of {} sequences: raise --steps or --batch, or lower --canaries",
                  copies, options.steps, options.batch);
}

json run_study(StudyOptions const& options) {
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    as_usage_errors([&] { validate_study_options(options); });
    std::shared_ptr<StudyText const> const text =
        options.devil_dir.empty() ? markov_text(options.corpus)
                                  : devil_in_austen_text(options.devil_dir, options.austen_package, options.words,
                                                         options.corpus.seed);
    as_usage_errors([&] {
        for (StudyModelSize const& size : options.sizes) {
            require_grid_fits(ModelConfig(study_config(size, options, text->vocab())).architecture(), DecoderOptions{},
                              options.grid, world, options.batch);
        }
        use_threads(options.threads);
    });
    StepOptions step_options;
    Job job(step_options, {options.grid, options.grid_order});
    ProcessGrid& grid = job.grid();
    Backend& backend = job.backend();
    StudyCorpus const corpus(options.corpus, text);
    std::vector<bool> control_extracted;
    StudyContext context{options, corpus, grid, backend, grid.rank() == 0, nullptr};
    Stopwatch watch;
    if (context.leader) {
        fmt::print(stderr, "memorization study on grid {}: {} canaries x buckets {} + {} held out; per size {} steps on "
                   "background alone, then {} steps with the canaries, of {} x {} tokens. {}\n",
                   grid.shape().to_string(), options.corpus.canaries_per_bucket, json(options.corpus.buckets).dump(),
                   options.corpus.heldout, options.pretrain_steps, options.steps, options.batch, options.seq,
                   text->describe());
    }

    json results = json::array();
    json finetune = json::array();
    auto const append = [](json& into, json const& records) {
        for (json const& record : records) into.push_back(record);
    };
    std::vector<float> largest_control;
    for (StudyModelSize const& size : options.sizes) {
        StudyModel control;
        context.control_extracted = nullptr;
        append(results, run_one(context, RunSpec{size, "control", "control", GoldfishOptions{}, 0, false}, {},
                                &control, &control_extracted));
        context.control_extracted = &control_extracted;
        std::vector<float> const start(control.model->params().begin(), control.model->params().end());
        append(results, run_one(context, RunSpec{size, "standard", "size", GoldfishOptions{}}, start));
        append(results, run_one(context, RunSpec{size, "goldfish", "size", options.goldfish}, start));
        if (options.finetune) append(finetune, finetune_size(context, size, control));
        largest_control = start;
    }
    if (options.ablations) {
        StudyModelSize const& largest = options.sizes.back();
        std::span<float const> const start = largest_control;
        GoldfishOptions random = options.goldfish, positional = options.goldfish;
        random.strategy = GoldfishStrategy::random;
        positional.strategy = GoldfishStrategy::positional;
        int const shift = options.seq - options.corpus.prefix - options.corpus.suffix;
        append(results, run_one(context, RunSpec{largest, "random mask", "ablation", random}, start));
        append(results, run_one(context, RunSpec{largest, "static mask, shifted", "ablation", positional, shift}, start));
        append(results, run_one(context, RunSpec{largest, "goldfish, shifted", "ablation", options.goldfish, shift}, start));
        append(results, run_one(context, RunSpec{largest, "standard, shifted", "ablation", GoldfishOptions{}, shift}, start));
        for (int k : options.k_sweep) {
            GoldfishOptions swept = options.goldfish;
            swept.k = k;
            append(results, run_one(context, RunSpec{largest, fmt::format("goldfish k={}", k), "ablation", swept}, start));
        }
    }
    if (context.leader) {
        StudySummary const summary{options, text->describe(), watch.seconds(), grid.shape().to_string()};
        write_study_report(options.out, summary, results, finetune);
        fmt::print(stderr, "study done in {:.0f} s: {}\n", watch.seconds(), (options.out / "results.md").string());
    }
    return results;
}

}  // namespace axonn
