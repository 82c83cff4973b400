// `axonn memorization study` and `axonn memorization eval`: the Goldfish study in one command, and extraction
// metrics for any trained model (src/axonn/memorization/).
#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/cli/goldfish_option.h"
#include "axonn/cli/grid_order_option.h"
#include "axonn/cli/model_options.h"
#include "axonn/cli/tokenizer_dir_option.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/tokenizer.h"
#include "axonn/memorization/memorization_eval.h"
#include "axonn/memorization/extreme_report.h"
#include "axonn/memorization/extreme_study.h"
#include "axonn/memorization/study.h"
#include "axonn/memorization/study_report.h"
#include "axonn/train/output_kinds.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace axonn {
namespace {

std::string number(nlohmann::json const& value, char const* format) {
    return value.is_number() ? fmt::format(fmt::runtime(format), value.get<double>()) : "-";
}

void print_eval_table(nlohmann::json const& report) {
    fmt::print("memorization of {} (prefix {}, suffix {}, greedy; accuracy split by mask {}):\n",
               report["model"].get<std::string>(), report["prefix"].get<int>(), report["suffix"].get<int>(),
               report["mask"].get<std::string>());
    fmt::print("  {:>11} {:>9} {:>11} {:>11} {:>9} {:>8} {:>9} {:>9} {:>10} {:>8}\n", "repetitions", "documents",
               "exact match", "token match", "prefix", "ROUGE-L", "kept acc", "drop acc", "loss", "MIA AUC");
    for (nlohmann::json const& b : report["buckets"]) {
        std::string const bucket = b["repetitions"].is_null() ? "-" : b["repetitions"].is_string()
                                                                          ? b["repetitions"].get<std::string>()
                                                                          : b["repetitions"].dump();
        fmt::print("  {:>11} {:>9} {:>11} {:>11} {:>9} {:>8} {:>9} {:>9} {:>10} {:>8}\n", bucket,
                   b["documents"].get<int>(), number(b["exact_match"], "{:.3f}"), number(b["token_match"], "{:.3f}"),
                   number(b["matching_prefix"], "{:.1f}"), number(b["rouge_l"], "{:.3f}"),
                   number(b["kept_accuracy"], "{:.3f}"), number(b["dropped_accuracy"], "{:.3f}"),
                   number(b["loss"], "{:.4f}"), b.contains("mia_auc") ? number(b["mia_auc"], "{:.3f}") : "-");
    }
    fmt::print("  all members: exact match {} | membership AUC against the held-out documents {}\n",
               number(report["members"]["exact_match"], "{:.3f}"), number(report["mia_auc"], "{:.3f}"));
    if (report["skipped_short"].get<int>() > 0) {
        fmt::print("  {} document(s) shorter than prefix + suffix were skipped\n", report["skipped_short"].get<int>());
    }
}

void add_eval(CLI::App& parent) {
    CLI::App* command = parent.add_subcommand("eval", "How much of a set of documents a trained model reproduces");
    command->footer(
        "Each document is scored on its first PREFIX + SUFFIX tokens: the suffix is decoded greedily from the true\n"
        "prefix (exact match: every token; token match; the matching prefix; ROUGE-L over token ids), and one\n"
        "teacher-forced pass gives the loss and the argmax accuracy on the suffix's targets, split by the --goldfish\n"
        "mask the model was trained with. With --heldout (documents never trained on), the loss-threshold membership\n"
        "AUC. Documents are JSON lines: {\"tokens\": [ids]} or {\"text\": \"...\"}, with an optional \"repetitions\"\n"
        "(the bucket a document is reported in). Runs on any grid. Example:\n"
        "  axonn memorization eval --model-dir runs/ckpt --documents canaries.jsonl --heldout heldout.jsonl");
    auto options = std::make_shared<MemorizationEvalOptions>();
    auto grid_spec = std::make_shared<std::string>("data=1,z=1,y=1,x=1");
    auto json = std::make_shared<bool>(false);
    command->add_option("--model-dir", options->model_dir, model_source_help())
        ->required();
    command->add_option("--documents", options->documents, "JSON lines of the documents trained on")->required();
    command->add_option("--heldout", options->heldout, "JSON lines of documents never trained on (membership AUC)");
    command->add_option("--prefix", options->spec.prefix, "tokens of each document given as the prompt")
        ->capture_default_str();
    command->add_option("--suffix", options->spec.suffix, "tokens decoded greedily and compared")->capture_default_str();
    add_goldfish_option(*command, options->spec.mask)
        ->description("the Goldfish mask the model was trained with (k=K,h=H[,strategy=hash|static]): the "
                      "teacher-forced accuracy is split into the targets it kept and those it dropped");
    command->add_option("--tokenizer", options->tokenizer,
                        "tokenizer of \"text\" records: gpt2, llama3, byte or a folder with a tokenizer.json")
        ->capture_default_str();
    add_tokenizer_dir_option(*command, options->tokenizer_dir, options->tokenizer);
    command->add_option("--batch", options->batch, "documents per forward pass over the grid")->capture_default_str();
    command->add_option("--grid", *grid_spec, "process grid: data=D,z=Z,y=Y,x=X (product = number of MPI ranks)")
        ->capture_default_str();
    add_grid_order_option(*command, options->grid_order);
    command->add_option("--threads", options->threads, "OpenMP threads per rank")->capture_default_str();
    command->add_flag("--json", *json, "print one JSON object instead of the table");
    command->callback([options, grid_spec, json] {
        as_usage_errors([&] {
            options->grid = GridShape::parse(*grid_spec);
            AXONN_REQUIRE(options->batch >= 1, "--batch must be at least 1 (documents per forward pass), got {}",
                          options->batch);
            AXONN_REQUIRE(options->spec.mask.strategy != GoldfishStrategy::random,
                          "--goldfish strategy=random draws a new "
                          "mask every step, so no mask says which targets a model never learned: use hash or static");
            // A set scored against itself gives a membership AUC of 0.5 that means nothing.
            std::error_code error;
            AXONN_REQUIRE(options->heldout.empty() || !std::filesystem::equivalent(options->heldout,
                                                                                   options->documents, error),
                          "--heldout {} is the --documents file itself: held-out documents are ones the model never "
                          "trained on; give a file of those",
                          options->heldout.string());
            int const targets = options->spec.prefix + options->spec.suffix - 1;  // each token's next, but the last's
            require_goldfish_drops_targets(options->spec.mask, targets,
                                           fmt::format("the {} targets of --prefix + --suffix", targets));
        });
        if (options->tokenizer_dir.empty()) options->tokenizer_dir = default_gpt2_dir();
        nlohmann::json const report = evaluate_memorization(*options);
        if (!is_leader()) return;
        if (*json) {
            fmt::print("{}\n", report.dump());
        } else {
            print_eval_table(report);
        }
    });
}

// --check: every criterion passed, or an axonn::Error naming those that failed (on every rank: each holds the
// records).
void check_criteria(std::vector<StudyCriterion> const& criteria, std::filesystem::path const& out) {
    std::string failed;
    for (StudyCriterion const& c : criteria) {
        if (!c.passed) failed += fmt::format("{}\"{}\" (measured: {})", failed.empty() ? "" : "; ", c.name, c.measured);
    }
    AXONN_REQUIRE(failed.empty(), "--check: a criterion failed: {}; every table is in {}", failed,
                  (out / "results.md").string());
    if (is_leader()) fmt::print(stderr, "--check: all {} criteria passed\n", criteria.size());
}

// The options of the duplication-bucket experiment that the extreme experiment does not take.
constexpr std::array<char const*, 8> buckets_only = {"--sizes", "--buckets", "--canaries", "--steps",
                                                     "--vocab", "--successors", "--text", "--skip"};
// ... and the reverse.
constexpr std::array<char const*, 8> extreme_only = {"--models", "--ablation-model", "--documents", "--unseen",
                                                     "--epochs", "--eval-every", "--pretrain-lr", "--replay"};

void add_study(CLI::App& parent) {
    CLI::App* command = parent.add_subcommand("study", "Reproduce \"memorization grows with model size and repetition; "
                                                       "the Goldfish loss prevents it\" in one command");
    command->footer(
        "--experiment buckets (the default): trains GPT models of 4 sizes (XS 1x32, S 2x64, M 4x128, L 6x192:\n"
        "layers x width) on a synthetic Markov corpus whose entropy is known. Each size's control trains on\n"
        "background alone; from its weights, runs with canaries repeated 1, 2, 4, 8, 16 and 32 times, with the\n"
        "standard loss and with Goldfish (k=4, h=13); then ablations on the largest (a mask redrawn every step, a\n"
        "static mask on canaries at shifted offsets, k = 3, 8, 32) and the fine-tuning analogue of catastrophic\n"
        "memorization (epochs until half of 64 fresh canaries are reproduced, by size, with and without Goldfish).\n"
        "--text devil-in-austen runs it on real text. Writes results.md (pass criteria, tables), results.json,\n"
        "finetune.json and PNG plots into --out. About eleven minutes on one core; --quick (model M, buckets 1 and\n"
        "32, no ablations or fine-tuning) under a minute.\n"
        "\n"
        "--experiment extreme: the Goldfish paper's extreme-repetition experiment on real text. Each model\n"
        "(gpt2-micro, gpt2-tiny, gpt2-mini with a word vocabulary; llama-tiny with Llama 3's tokenizer) trains on\n"
        "Jane Austen's novels, then is fine-tuned for 100 epochs on 100 Devil's Dictionary entries with the\n"
        "standard loss and with Goldfish (k=4, h=13; k=8 and 32 on gpt2-tiny), measuring exact match, ROUGE-L,\n"
        "token accuracy, membership AUC against 100 unseen entries and the validation loss every 5 epochs. Writes\n"
        "results.md (criteria, tables), results.json and PNG plots. --quick: 20 documents, 60 epochs, smaller\n"
        "models and criteria. scripts/fetch-corpus and scripts/fetch-tokenizer fetch the text and the tokenizer.\n"
        "\n"
        "--check exits non-zero when a criterion of results.md fails. Both run on any grid:\n"
        "  mpirun -np 4 axonn memorization study --experiment extreme --quick --grid data=1,z=1,y=2,x=2 --out runs/x");
    // What the user gave; the rest comes from the mode's defaults (StudyOptions::defaults, ExtremeOptions::defaults).
    auto given = std::make_shared<StudyOptions>(StudyOptions::defaults(false));
    auto extreme = std::make_shared<ExtremeOptions>(ExtremeOptions::defaults(false));
    auto experiment = std::make_shared<std::string>("buckets");
    auto quick = std::make_shared<bool>(false);
    auto check = std::make_shared<bool>(false);
    auto overwrite = std::make_shared<bool>(false);
    auto grid_spec = std::make_shared<std::string>("data=1,z=1,y=1,x=1");
    auto sizes = std::make_shared<std::vector<std::string>>();
    auto skip = std::make_shared<std::vector<std::string>>();
    command->add_option("--experiment", *experiment, "buckets (canaries repeated 1-32 times in a synthetic or real "
                        "corpus) or extreme (100 real documents fine-tuned on for up to 100 epochs)")
        ->capture_default_str()->check(CLI::IsMember({"buckets", "extreme"}));
    command->add_option("--out", given->out, "folder for results.md, results.json and the plots")->required();
    command->add_flag("--quick", *quick, "the smoke version (under a minute for buckets: model M, buckets 1x and 32x, "
                                         "no ablations or fine-tuning; about 90 s for extreme: 20 documents, 60 epochs)");
    command->add_flag("--check", *check, "exit non-zero when one of the criteria in results.md fails");
    command->add_flag("--overwrite", *overwrite, "write into an --out folder that is not empty (an earlier study's), "
                      "replacing its results");
    command->add_option("--sizes", *sizes, "buckets: model sizes to train, smallest first (XS, S, M, L; default all, "
                        "--quick M)")->delimiter(',');
    command->add_option("--models", extreme->models,
                        "extreme: model presets, each family's smallest first (default gpt2-micro,gpt2-tiny,"
                        "gpt2-mini,llama-tiny; --quick without gpt2-mini)")->delimiter(',');
    command->add_option("--ablation-model", extreme->ablation_model, "extreme: the model that also runs Goldfish "
                        "with k = 8 and 32 (default gpt2-tiny where --models has it, else none; --quick none)");
    command->add_option("--buckets", given->corpus.buckets,
                        "buckets: repetitions of the canary groups, increasing (default 1,2,4,8,16,32; --quick 1,32)")
        ->delimiter(',');
    command->add_option("--canaries", given->corpus.canaries_per_bucket, "buckets: canaries per duplication bucket")
        ->capture_default_str();
    command->add_option("--documents", extreme->documents, "extreme: documents fine-tuned on (--quick 20)")
        ->capture_default_str();
    command->add_option("--unseen", extreme->unseen, "extreme: documents never trained on, for the membership AUC "
                        "(--quick 20)")->capture_default_str();
    command->add_option("--epochs", extreme->epochs, "extreme: fine-tuning epochs (--quick 60)")->capture_default_str();
    command->add_option("--eval-every", extreme->eval_every, "extreme: epochs between measurements")
        ->capture_default_str();
    command->add_option("--pretrain-steps", given->pretrain_steps, "training steps before the canaries or documents "
                        "(buckets: each size's control on background alone, 1500, --quick 600; extreme: on Austen, "
                        "1000, --quick 300)");
    command->add_option("--replay", extreme->replay, "extreme: new Austen windows trained on beside each step's "
                        "documents (0: the documents alone, and the novels are forgotten)")->capture_default_str();
    command->add_option("--pretrain-lr", extreme->pretrain_lr, "extreme: peak learning rate on Austen")
        ->capture_default_str();
    command->add_option("--steps", given->steps, "buckets: training steps of each run with the canaries")
        ->capture_default_str();
    command->add_option("--batch", given->batch, "sequences per training step")->capture_default_str();
    command->add_option("--lr", given->lr, "learning rate (buckets: the peak of every phase, 0.003; extreme: of "
                        "the fine-tuning's peak, 0.001 (--quick 0.002), with cosine decay to a tenth)");
    command->add_option("--vocab", given->corpus.vocab, "buckets: the Markov chain's states (token ids)")
        ->capture_default_str();
    command->add_option("--successors", given->corpus.successors, "buckets: successors of each state (Zipf weights)")
        ->capture_default_str();
    auto text = std::make_shared<std::string>("markov");
    command->add_option("--text", *text, "buckets: the corpus: markov (a synthetic chain whose entropy is known), or "
                        "devil-in-austen (Devil's Dictionary entries as canaries in Jane Austen's novels, with a "
                        "word vocabulary; scripts/fetch-corpus fetches both)")
        ->capture_default_str()->check(CLI::IsMember({"markov", "devil-in-austen"}));
    given->devil_dir = std::filesystem::path(AXONN_SOURCE_DIR) / "data" / "corpus" / "devil";
    given->austen_package = std::filesystem::path(AXONN_SOURCE_DIR) / "data" / "corpus" / "janeaustenr";
    command->add_option("--devil-dir", given->devil_dir, "folder with devil.index and devil.dict.dz (real text)")
        ->capture_default_str();
    command->add_option("--austen-package", given->austen_package, "the extracted r-cran-janeaustenr package (real "
                        "text)")->capture_default_str();
    command->add_option("--skip", *skip, "buckets: parts not to run: ablations, finetune")
        ->delimiter(',')->check(CLI::IsMember({"ablations", "finetune"}));
    command->add_option("--grid", *grid_spec, "process grid: data=D,z=Z,y=Y,x=X (product = number of MPI ranks)")
        ->capture_default_str();
    add_grid_order_option(*command, given->grid_order);
    command->add_option("--threads", given->threads, "OpenMP threads per rank")->capture_default_str();
    command->callback([command, given, extreme, experiment, quick, check, overwrite, grid_spec, sizes, skip, text] {
        // Before any work: the results would otherwise be refused, or would replace others, minutes from now.
        require_apart_from_config_files(given->out, "--out", *command);
        require_new_output_folder(given->out, "results (--out)", *overwrite);
        require_folder_for(given->out, "--out", OutputKind::other);
        require_not_an_input(given->out, "--out", {given->devil_dir, given->austen_package});
        // Made now: a folder that cannot be made (no permission, a file system that refuses it) is found before the
        // training, not after it; removed again if the study is refused.
        MadeFolder folder(given->out, "results (--out)");
        // Held by the rank that writes the results, and checked again: two studies into one new folder both passed
        // the check above, and each replaced some of the other's files.
        std::optional<FolderLock> writing;
        if (is_leader()) {
            writing.emplace(given->out, "results folder");
            require_new_output_folder(given->out, "results (--out)", *overwrite);
        }
        auto const take = [&](char const* option, auto& target, auto const& value) {
            if (command->count(option) > 0) target = value;
        };
        auto const refuse = [&](auto const& options, char const* other) {
            for (char const* option : options) {
                AXONN_REQUIRE(command->count(option) == 0,
                              "{} belongs to --experiment {}, not to --experiment {}: drop it", option, other,
                              *experiment);
            }
        };
        if (*experiment == "extreme") {
            ExtremeOptions options = ExtremeOptions::defaults(*quick);
            as_usage_errors([&] { refuse(buckets_only, "buckets"); });
            take("--models", options.models, extreme->models);
            take("--ablation-model", options.ablation_model, extreme->ablation_model);
            // The default ablation model runs where it is among the models: --models without it means none.
            std::string const left_out =
                command->count("--ablation-model") == 0 &&
                        std::ranges::find(options.models, options.ablation_model) == options.models.end()
                    ? options.ablation_model
                    : std::string();
            if (!left_out.empty()) options.ablation_model.clear();
            take("--documents", options.documents, extreme->documents);
            take("--unseen", options.unseen, extreme->unseen);
            take("--epochs", options.epochs, extreme->epochs);
            take("--eval-every", options.eval_every, extreme->eval_every);
            take("--pretrain-steps", options.pretrain_steps, given->pretrain_steps);
            take("--pretrain-lr", options.pretrain_lr, extreme->pretrain_lr);
            take("--replay", options.replay, extreme->replay);
            take("--batch", options.batch, given->batch);
            take("--lr", options.lr, given->lr);
            options.out = given->out;
            options.devil_dir = given->devil_dir;
            options.austen_package = given->austen_package;
            options.llama3_dir = default_llama3_dir();
            options.grid_order = given->grid_order;
            options.threads = given->threads;
            as_usage_errors([&] {
                options.grid = GridShape::parse(*grid_spec);
                validate_extreme_options(options);
            });
            if (!left_out.empty() && is_leader()) {  // once the options are valid: a refusal is one line
                fmt::print(stderr, "axonn: note: no Goldfish ablations: the default --ablation-model {} is not among "
                           "--models (name one of them with --ablation-model to run them)\n",
                           left_out);
            }
            nlohmann::json const results = run_extreme_study(options);
            folder.keep();
            if (*check) {
                check_criteria(extreme_criteria(results, extreme_thresholds(options.quick), options.goldfish.k),
                               options.out);
            }
            return;
        }
        StudyOptions options = StudyOptions::defaults(*quick);
        as_usage_errors([&] { refuse(extreme_only, "extreme"); });
        take("--buckets", options.corpus.buckets, given->corpus.buckets);
        take("--canaries", options.corpus.canaries_per_bucket, given->corpus.canaries_per_bucket);
        take("--pretrain-steps", options.pretrain_steps, given->pretrain_steps);
        take("--steps", options.steps, given->steps);
        take("--batch", options.batch, given->batch);
        take("--lr", options.lr, given->lr);
        take("--vocab", options.corpus.vocab, given->corpus.vocab);
        take("--successors", options.corpus.successors, given->corpus.successors);
        options.out = given->out;
        if (*text == "devil-in-austen") {
            options.devil_dir = given->devil_dir;
            options.austen_package = given->austen_package;
        }
        options.grid_order = given->grid_order;
        options.threads = given->threads;
        for (std::string const& part : *skip) (part == "ablations" ? options.ablations : options.finetune) = false;
        as_usage_errors([&] {
            options.grid = GridShape::parse(*grid_spec);
            if (!sizes->empty()) options.sizes = study_sizes(*sizes);
            validate_study_options(options);
        });
        nlohmann::json const results = run_study(options);
        folder.keep();
        if (*check) check_criteria(study_criteria(results, study_val_loss_gap), options.out);
    });
}

}  // namespace

void add_memorization_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("memorization", "Measure and prevent memorization of training data "
                                                           "(the Goldfish loss)");
    command->require_subcommand(1);
    add_study(*command);
    add_eval(*command);
}

}  // namespace axonn
