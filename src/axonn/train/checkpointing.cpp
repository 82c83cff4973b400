#include "axonn/train/checkpointing.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/comm/rank_zero.h"
#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/families/hf_model.h"
#include "axonn/families/registry.h"
#include "axonn/model/architecture.h"
#include "axonn/model/decoder_options.h"
#include "axonn/parallel/param_decl.h"
#include "axonn/train/host_state.h"
#include "axonn/train/output_kinds.h"
#include "axonn/train/stop_signals.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <tuple>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string goldfish_setting(GoldfishOptions const& goldfish) {
    return goldfish.enabled() ? goldfish.describe() : "off";
}

// What identifies the training data: the dataset ids of its shards in the order they are read (one id per `axonn
// prepare`; 0 for shards written without one) and its length in tokens. The order is the token stream's: shards
// renamed into another order are other data ("order": "shards" says the ids are in it).
json dataset_json(DataLoader const& loader) {
    std::vector<std::string> ids;
    for (TokenShard const& shard : loader.shards()) ids.push_back(fmt::format("{:016x}", shard.dataset_id()));
    return {{"ids", ids}, {"order", "shards"}, {"tokens", loader.total_tokens()}};
}

// Whether `recorded` (a checkpoint's dataset record) is `loader`'s data. Checkpoints from before the order was
// recorded kept the ids sorted, each once: compared so.
bool is_recorded_dataset(json const& recorded, DataLoader const& loader) {
    json const now = dataset_json(loader);
    if (!recorded.is_object() || recorded.contains("order")) return recorded == now;
    std::set<std::string> const ids(now["ids"].begin(), now["ids"].end());
    return recorded == json{{"ids", std::vector<std::string>(ids.begin(), ids.end())}, {"tokens", now["tokens"]}};
}

// What a run validates on: its validation data's dataset_json, or null for none.
json validation_json(std::optional<DataLoader> const& validation) {
    return validation ? dataset_json(*validation) : json();
}

std::string describe_dataset(json const& dataset) {
    if (!dataset.is_object()) return "not recorded";
    std::vector<std::string> ids;
    if (dataset.contains("ids") && dataset["ids"].is_array()) {
        for (json const& id : dataset["ids"]) ids.push_back(id.is_string() ? id.get<std::string>() : id.dump());
    }
    return fmt::format("dataset {} of {} tokens", fmt::join(ids, "+"),
                       dataset.contains("tokens") ? dataset["tokens"].dump() : "?");
}

// --grad-comm's value for the gradients' communication types: fp32, bf16, or bf16-scatter.
std::string grad_comm_name(DecoderOptions const& model) {
    if (model.grad_scatter_comm == DType::f32) return "fp32";
    return model.grad_sum_comm == DType::bf16 ? "bf16" : "bf16-scatter";
}

// The step options that change the order or the precision of the step's sums (the others, overlap, recomputation
// and cached weights, leave every bit as it is): a resume that changes one goes on within rounding, not bit for bit.
json arithmetic_json(StepOptions const& run) {
    return {{"micro_batch", run.micro_batch},
            {"logit_rows", run.model.logit_rows},
            {"grad_comm", grad_comm_name(run.model)},
            {"vocab_split", vocab_split_name(run.model.vocab_split)},
            {"gemm_tuning", run.gemm_tuning ? "on" : "off"}};
}

// Whether an arithmetic_json value recorded as `was` computes what this run's value does on this run's grid and
// batch. The options are recorded as given, and values that differ can sum alike: --micro-batch equal to a replica's
// share and none, two --logit-rows that cut a pass into as many chunks, --vocab-split xy where auto takes xy.
bool same_arithmetic(std::string_view key, json const& was, TrainOptions const& options) {
    StepOptions const& run = options.run;
    auto const pass_sequences = [&](int micro_batch) {
        return micro_batch > 0 ? micro_batch : options.batch / options.grid.batch_replicas();
    };
    if (key == "micro_batch" && was.is_number_integer()) {
        return pass_sequences(was.get<int>()) == pass_sequences(run.micro_batch);
    }
    if (key == "logit_rows" && was.is_number_integer()) {
        std::int64_t const rows = std::int64_t{pass_sequences(run.micro_batch)} * options.seq;
        return logit_chunks(rows, was.get<int>()) == logit_chunks(rows, run.model.logit_rows);
    }
    if (key == "vocab_split" && was.is_string()) {
        Architecture const architecture = options.model.architecture();
        auto const resolved = [&](VocabSplit split) {
            return architecture.with_vocab_split(split, options.grid, run.model.precision).vocab_split;
        };
        VocabSplit const now = resolved(run.model.vocab_split);
        return std::ranges::any_of(std::array{VocabSplit::automatic, VocabSplit::xy, VocabSplit::y},
                                   [&](VocabSplit split) {
                                       return vocab_split_name(split) == was.get<std::string>() &&
                                              resolved(split) == now;
                                   });
    }
    return false;
}

json run_state_json(TrainOptions const& options, AdamW const& optimizer, TrainingData const& data, int step) {
    DataLoaderState const position = data.train.state();
    LrSchedule const& schedule = options.schedule;
    AdamWConfig const& adamw = options.optimizer;
    return {{"step", step},
            {"run_id", options.run_id},
            {"lineage", lineage_json(options.lineage)},
            {"seed", options.seed},
            {"tokenizer", options.tokenizer},
            {"val_data", options.val_data.string()},  // empty: val.bin beside the training data
            {"batch", options.batch},
            {"seq", options.seq},
            {"precision", precision_name(options.run.model.precision)},
            {"goldfish", goldfish_setting(options.goldfish)},
            {"arithmetic", arithmetic_json(options.run)},
            {"schedule", {{"max_lr", schedule.max_lr}, {"min_lr", schedule.min_lr},
                          {"warmup_steps", schedule.warmup_steps}, {"total_steps", schedule.total_steps}}},
            {"optimizer", {{"beta1", adamw.beta1}, {"beta2", adamw.beta2}, {"eps", adamw.eps},
                           {"weight_decay", adamw.weight_decay}, {"grad_clip", adamw.grad_clip},
                           {"steps_taken", optimizer.steps_taken()}}},
            {"data", {{"position", position.position}, {"epoch", position.epoch},
                      {"dataset", dataset_json(data.train)}}},
            {"validation", validation_json(data.val)}};
}

// A whole number at `path` (such as {"data", "position"}) of a checkpoint's run state, within [low, high].
std::int64_t run_value(json const& run, std::initializer_list<char const*> path, std::int64_t low, std::int64_t high,
                       CheckpointReader const& checkpoint) {
    json const* value = &run;
    std::string name;
    for (char const* key : path) {
        if (!name.empty()) name += '.';
        name += key;
        if (!value->is_object() || !value->contains(key)) value = nullptr;
        if (value == nullptr) break;
        value = &(*value)[key];
    }
    bool const valid = value != nullptr && value->is_number_integer() && value->get<std::int64_t>() >= low &&
                       value->get<std::int64_t>() <= high;
    if (!valid) {
        checkpoint.damaged(fmt::format("its run state's {} is {}, not an integer in [{}, {}]", name,
                                       value == nullptr ? "missing" : value->dump(), low, high));
    }
    return value->get<std::int64_t>();
}

// The settings a run state records for a resume to compare with its own (older checkpoints lack some): a value no
// run writes (a batch of 0, a precision of "fp8") is damage, not a setting to warn about.
void require_recorded_settings(CheckpointReader const& checkpoint, std::int64_t step) {
    json const& run = checkpoint.index().run;
    constexpr std::int64_t largest = std::numeric_limits<int>::max();
    if (run.contains("batch")) run_value(run, {"batch"}, 1, largest, checkpoint);
    if (run.contains("seq")) run_value(run, {"seq"}, 1, checkpoint.index().model.architecture().context, checkpoint);
    if (run.contains("schedule") && run["schedule"].is_object() && run["schedule"].contains("total_steps")) {
        run_value(run, {"schedule", "total_steps"}, step, largest, checkpoint);
    }
    for (char const* key : {"tokenizer", "precision", "goldfish", "val_data"}) {
        if (run.contains(key) && !run[key].is_string()) {
            checkpoint.damaged(fmt::format("its run state's {} is {}, not a string", key, run[key].dump()));
        }
    }
    if (run.contains("precision") && run["precision"] != "fp32" && run["precision"] != "bf16") {
        checkpoint.damaged(
            fmt::format("its run state's precision is {}, neither fp32 nor bf16", run["precision"].dump()));
    }
    if (run.contains("seed") && !run["seed"].is_number_unsigned()) {
        checkpoint.damaged(fmt::format("its run state's seed is {}, not a non-negative integer", run["seed"].dump()));
    }
    if (run.contains("goldfish") && run["goldfish"] != "off") {
        try {
            parse_goldfish(run["goldfish"].get<std::string>());
        } catch (Error const& e) {
            checkpoint.damaged(fmt::format("its run state's goldfish is {} ({})", run["goldfish"].dump(), e.what()));
        }
    }
    // The settings a resume compares, in floating point or whole numbers.
    for (auto const& [group, key] : {std::pair{"schedule", "max_lr"}, std::pair{"schedule", "min_lr"},
                                     std::pair{"schedule", "warmup_steps"}, std::pair{"optimizer", "weight_decay"},
                                     std::pair{"optimizer", "grad_clip"}}) {
        bool const recorded = run.contains(group) && run[group].is_object() && run[group].contains(key);
        if (recorded && !run[group][key].is_number()) {
            checkpoint.damaged(
                fmt::format("its run state's {}.{} is {}, not a number", group, key, run[group][key].dump()));
        }
    }
}

// The settings of the interrupted run that this one changes: "--steps 200 (was 100)".
std::vector<std::string> changed_settings(json const& run, TrainOptions const& options,
                                          std::optional<DataLoader> const& validation) {
    std::vector<std::string> changed;
    // The options in floating point are floats: shown as the float they are ("0.001", not 0.0010000000474974513).
    auto const shown = [](json const& value) {
        return value.is_number_float() ? fmt::format("{}", static_cast<float>(value.get<double>())) : value.dump();
    };
    auto const compare = [&](char const* option, json const& saved, json const& now) {
        if (!saved.is_null() && saved != now) {
            changed.push_back(fmt::format("{} {} (was {})", option, shown(now), shown(saved)));
        }
    };
    auto const saved = [&](char const* group, char const* key) {
        return run.contains(group) && run[group].is_object() && run[group].contains(key) ? run[group][key] : json();
    };
    compare("--steps", saved("schedule", "total_steps"), options.schedule.total_steps);
    compare("--lr", saved("schedule", "max_lr"), options.schedule.max_lr);
    compare("--min-lr", saved("schedule", "min_lr"), options.schedule.min_lr);
    compare("--warmup", saved("schedule", "warmup_steps"), options.schedule.warmup_steps);
    compare("--weight-decay", saved("optimizer", "weight_decay"), options.optimizer.weight_decay);
    compare("--grad-clip", saved("optimizer", "grad_clip"), options.optimizer.grad_clip);
    for (auto const& [option, key, now] : {std::tuple{"--batch", "batch", json(options.batch)},
                                           std::tuple{"--seq", "seq", json(options.seq)},
                                           std::tuple{"--seed", "seed", json(options.seed)},
                                           std::tuple{"--tokenizer", "tokenizer", json(options.tokenizer)},
                                           std::tuple{"--precision", "precision",
                                                      json(precision_name(options.run.model.precision))}}) {
        compare(option, run.contains(key) ? run[key] : json(), now);
    }
    // As parsed: an earlier build wrote h for every strategy ("k=4,h=13,strategy=static"), and now only for hash's.
    json const goldfish = run.contains("goldfish") ? run["goldfish"] : json();
    compare("--goldfish",
            goldfish.is_string() && goldfish != "off" ? json(parse_goldfish(goldfish.get<std::string>()).describe())
                                                      : goldfish,
            json(goldfish_setting(options.goldfish)));
    json const arithmetic = arithmetic_json(options.run);
    for (auto const& [option, key] :
         {std::pair{"--micro-batch", "micro_batch"}, std::pair{"--logit-rows", "logit_rows"},
          std::pair{"--grad-comm", "grad_comm"}, std::pair{"--vocab-split", "vocab_split"},
          std::pair{"--gemm-tuning", "gemm_tuning"}}) {
        if (!same_arithmetic(key, saved("arithmetic", key), options)) {
            compare(option, saved("arithmetic", key), arithmetic[key]);
        }
    }
    // The validation data, told by its contents where the checkpoint records them: --val-data naming the val.bin
    // that was taken by default changes nothing, and `--data DIR/train.bin` after `--data DIR` (which validated on
    // DIR/val.bin) changes it. Older checkpoints recorded only the option.
    if (!run.contains("validation")) {
        compare("--val-data", run.contains("val_data") ? run["val_data"] : json(), json(options.val_data.string()));
    } else if (json const now = validation_json(validation);
               validation ? !is_recorded_dataset(run["validation"], *validation) : !run["validation"].is_null()) {
        auto const described = [](json const& recorded) {
            return recorded.is_null() ? std::string("none") : describe_dataset(recorded);
        };
        changed.push_back(fmt::format("validation data {} (was {}{})", described(now),
                                      described(run["validation"]),
                                      validation ? "" : "; pass --val-data to validate as it did"));
    }
    return changed;
}

}  // namespace

std::optional<CheckpointReader> open_resume_checkpoint(TrainOptions const& options) {
    std::string const chosen = decided_by_rank_zero([&] {
        // Another run's folder: refused for that before any check of the checkpoints it holds (a --steps below the
        // newest was the reason given). By rank 0 alone, before it takes the lock itself: another rank checking
        // could find this job's own lock.
        if (!options.ckpt_dir.empty()) require_not_in_use(options.ckpt_dir, "--ckpt-dir");
        if (options.resume.empty()) return std::string();
        // A job script that always passes --resume latest starts its first run afresh.
        bool const first_run = options.resume == "latest" && !options.ckpt_dir.empty() &&
                               complete_checkpoints(options.ckpt_dir).empty();
        return first_run ? std::string() : resolve_checkpoint(options.resume, options.ckpt_dir).string();
    });
    if (chosen.empty()) return std::nullopt;
    CheckpointReader checkpoint(chosen);
    std::string const folder = checkpoint.folder().string();
    AXONN_REQUIRE(checkpoint.has_training_state(),
                  "checkpoint {} holds weights only, no training state to resume: start "
                  "from its weights with --init-from {}",
                  folder, folder);
    // A vocabulary of another size most often means another tokenizer: the fix is --tokenizer, not the model options.
    json const& run = checkpoint.index().run;
    json const tokenizer = run.is_object() ? run.value("tokenizer", json()) : json();
    AXONN_REQUIRE(checkpoint.index().model.vocab_size() == options.model.vocab_size() || !tokenizer.is_string() ||
                      tokenizer == options.tokenizer,
                  "checkpoint {} was trained with --tokenizer {} (a vocabulary of {} tokens), and this run reads "
                  "--tokenizer {} ({} tokens): pass --tokenizer {}",
                  folder, tokenizer.get<std::string>(), checkpoint.index().model.vocab_size(), options.tokenizer,
                  options.model.vocab_size(), tokenizer.get<std::string>());
    std::string const differences = model_differences(checkpoint.index().model, options.model);
    AXONN_REQUIRE(differences.empty(),
                  "checkpoint {} is of another model: {}; pass the model options it was trained with, "
                  "or start a new run with --init-from",
                  folder, differences);
    // The run state's own step first: a hand-edited index whose steps disagree is damaged, whatever --steps says.
    run_value(checkpoint.index().run, {"step"}, checkpoint.index().step, checkpoint.index().step, checkpoint);
    AXONN_REQUIRE(checkpoint.index().step <= options.steps,
                  "checkpoint {} is at step {}, past --steps {}: raise --steps to "
                  "train on",
                  folder, checkpoint.index().step, options.steps);
    return checkpoint;
}

std::string run_identity(TrainOptions const& options, std::optional<CheckpointReader> const& resumed) {
    if (resumed) {
        json const& run = resumed->index().run;
        // A checkpoint from before runs had ids has none: its run's records have none either.
        if (!run.is_object() || !run.contains("run_id")) return std::string();
        AXONN_REQUIRE(is_hex_id(run["run_id"]),
                      "checkpoint {} is damaged: its run state's run_id is {}, not 16 hex digits",
                      resumed->folder().string(), run["run_id"].dump());
        return run["run_id"].get<std::string>();
    }
    return decided_by_rank_zero([&] {
        if (options.ckpt_dir.empty()) return fmt::format("{:016x}", random_id());
        // The folder's whole path: two runs' `--ckpt-dir ck` in two folders are two runs (weakly_canonical leaves a
        // relative path relative where none of it exists yet, as at a run's first launch), and `ck/` is `ck`.
        std::error_code error;
        fs::path folder = fs::absolute(options.ckpt_dir, error);
        if (error) folder = options.ckpt_dir;
        fs::path const canonical = fs::weakly_canonical(folder, error);
        if (!error) folder = canonical;
        folder = folder.lexically_normal();
        if (!folder.has_filename()) folder = folder.parent_path();
        // What the run is besides: another model, batch, sequence or tokenizer in that folder is another run.
        std::string const run = fmt::format("{}\n{}\n{}\n{} {} {}", folder.string(), options.seed,
                                            family_of(options.model).index_json(options.model).dump(), options.batch,
                                            options.seq, options.tokenizer);
        return fmt::format("{:016x}", stable_hash(run));
    });
}

RunLineage run_lineage(std::optional<CheckpointReader> const& resumed) {
    RunLineage lineage;
    std::int64_t from_step = 0;
    if (resumed) {
        lineage = lineage_from_json(resumed->index().run, resumed->index().step, resumed->folder().string());
        from_step = resumed->index().step;
    }
    lineage.push_back({from_step, decided_by_rank_zero([] { return fmt::format("{:016x}", random_id()); })});
    return lineage;
}

ResumePoint check_resume_point(CheckpointReader& checkpoint, Communicator& world, DataLoader const& loader,
                               bool new_data) {
    checkpoint.verify(world);
    json const& run = checkpoint.index().run;
    auto const step = run_value(run, {"step"}, checkpoint.index().step, checkpoint.index().step, checkpoint);
    // One AdamW update a step, from step 0 (a run from --init-from starts its optimizer there too).
    auto const steps_taken = run_value(run, {"optimizer", "steps_taken"}, step, step, checkpoint);
    require_recorded_settings(checkpoint, step);
    DataLoaderState data;
    data.position = run_value(run, {"data", "position"}, 0, std::numeric_limits<std::int64_t>::max(), checkpoint);
    data.epoch = run_value(run, {"data", "epoch"}, 0, std::numeric_limits<std::int64_t>::max(), checkpoint);
    // Checkpoints from before the dataset was recorded: the same data as far as the position can tell.
    json const saved = run["data"].value("dataset", json());
    bool const same_data =
        saved.is_null() ? data.position < loader.total_tokens() : is_recorded_dataset(saved, loader);
    if (same_data && data.position >= loader.total_tokens()) {
        checkpoint.damaged(fmt::format("its run state's data position {} lies past the {} tokens of the data it was "
                                       "trained on", data.position, loader.total_tokens()));
    }
    if (!same_data) {
        AXONN_REQUIRE(new_data,
                      "checkpoint {} was trained on other data ({}) than --data holds ({}): resume on the data it "
                      "was trained on, or pass --new-data to go on from its weights and optimizer at the start of "
                      "this data",
                      checkpoint.folder().string(), describe_dataset(saved), describe_dataset(dataset_json(loader)));
        data = DataLoaderState{};
        if (world.rank() == 0) {
            fmt::print("  --new-data: the checkpoint was trained on {}; this run reads {} from its start\n",
                       describe_dataset(saved), describe_dataset(dataset_json(loader)));
        }
    } else if (new_data && world.rank() == 0) {
        fmt::print("  --new-data changes nothing: --data holds the data the checkpoint was trained on ({}), and the "
                   "run goes on where it stopped in it (token {} of epoch {})\n",
                   describe_dataset(dataset_json(loader)), data.position, data.epoch);
    }
    return {static_cast<int>(step), static_cast<int>(steps_taken), data};
}

void restore_checkpoint(CheckpointReader& checkpoint, ResumePoint const& point, Decoder& model, AdamW& optimizer,
                        DataLoader& loader) {
    HostState::write(model, &optimizer, [&](LocalBuffers const& out) {
        checkpoint.read_local(model.layout(), out);
    });
    optimizer.restore_steps_taken(point.steps_taken);
    loader.restore(point.data);
}

std::vector<std::string> settings_changed_since(CheckpointReader const& checkpoint, TrainOptions const& options,
                                                std::optional<DataLoader> const& validation) {
    return changed_settings(checkpoint.index().run, options, validation);
}

namespace {

// Whether two checkpoint folders hold one checkpoint: the same index (which records every file's size and checksum,
// and the run's state and lineage), as a copy and its original do.
bool same_checkpoint(fs::path const& a, fs::path const& b) {
    try {
        auto const index = [](fs::path const& folder) {
            return read_input_file(folder / checkpoint_index_file, "checkpoint index", "the checkpoint is damaged",
                                   std::uint64_t{1} << 30);
        };
        return index(a) == index(b);
    } catch (Error const&) {
        return false;
    }
}

// Where in ckpt_dir this run rolls its checkpoints back to, when it does: the folder of the checkpoint resumed
// ("DIR/step_N/" too) where it lies inside ckpt_dir (the run's own), named there or through a link to it; or, for a
// checkpoint elsewhere (a copy) that records its run's id, its original in ckpt_dir (kept), else the copy itself
// (a checkpoint of its step in ckpt_dir is then another branch's, set aside with the later ones, which are that
// run's own too: require_checkpoints_of_run refuses any other run's). None for a fresh run, or a checkpoint
// elsewhere of a run without an id.
std::optional<fs::path> rollback_point(fs::path const& ckpt_dir, std::optional<CheckpointReader> const& resumed) {
    if (!resumed) return std::nullopt;
    std::error_code error;
    fs::path const folder = resumed->folder().has_filename() ? resumed->folder() : resumed->folder().parent_path();
    fs::path const linked = fs::canonical(folder, error);
    for (fs::path const& named : {folder, linked}) {
        if (!named.empty() && fs::equivalent(named.parent_path(), ckpt_dir, error)) return folder;
    }
    json const& run = resumed->index().run;
    if (!run.is_object() || !run.contains("run_id")) return std::nullopt;
    fs::path const original = ckpt_dir / checkpoint_folder_name(resumed->index().step);
    return same_checkpoint(original, folder) ? original : folder;
}

// The step a run starts from: the resumed checkpoint's, or 0.
std::int64_t start_step(std::optional<CheckpointReader> const& resumed) {
    return resumed ? resumed->index().step : 0;
}

// The id of the run a complete checkpoint in a --ckpt-dir belongs to, as its index records it: "" for weights alone
// (`axonn import`'s) or a checkpoint from before runs had ids; nullopt where the index cannot be read as JSON.
std::optional<std::string> recorded_run_id(fs::path const& folder) {
    try {
        json const index = json::parse(read_input_file(folder / checkpoint_index_file, "checkpoint index",
                                                       "the checkpoint is damaged", std::uint64_t{1} << 30));
        json const run = index.is_object() ? index.value("run", json()) : json();
        json const id = run.is_object() ? run.value("run_id", json()) : json();
        return id.is_string() ? id.get<std::string>() : std::string();
    } catch (std::exception const&) {
        return std::nullopt;
    }
}

// Refuses complete checkpoints in ckpt_dir of any run but `run_id` (of any step: `--keep` would delete the earlier
// ones as this run's own, and `--resume latest` could take one).
void require_checkpoints_of_run(fs::path const& ckpt_dir, std::string const& run_id) {
    for (CheckpointEntry const& entry : complete_checkpoints(ckpt_dir)) {
        std::optional<std::string> const id = recorded_run_id(entry.path);
        if (id == run_id) continue;
        std::string const folder = entry.path.string();
        std::string const whose = !id ? "whose index.json cannot be read"
                                  : id->empty() ? "of weights alone (an import's) or of a run without an id"
                                                : "of another run (" + *id + ")";
        std::string const its_use = !id            ? ""
                                    : id->empty() ? " (to start from its weights: --init-from " + folder +
                                                        " with another --ckpt-dir)"
                                                  : " (to continue that run: --resume " + folder + ")";
        // Which run this one is: a resumed checkpoint's (named so, since it may be the one of "another run"), or new.
        std::string const this_run = run_id.empty() ? "a run without an id" : "run " + run_id;
        fail("--ckpt-dir {} holds {}, a checkpoint {}, while this is {}: the two runs' checkpoints would mix there "
             "(--keep would delete it as this run's, --resume latest could take it); choose another --ckpt-dir, or "
             "move that checkpoint out{}",
             ckpt_dir.string(), folder, whose, this_run, its_use);
    }
}

}  // namespace

void require_checkpoint_folder_for_run(fs::path const& ckpt_dir, std::vector<fs::path> const& data,
                                       std::optional<CheckpointReader> const& resumed, std::string const& run_id) {
    require_folder_for(ckpt_dir, "--ckpt-dir", OutputKind::checkpoints);
    require_step_folders_are_checkpoints(ckpt_dir, "--ckpt-dir");
    for (fs::path const& input : data) {
        require_input_outside(input, "the data", ckpt_dir, "--ckpt-dir",
                              "which this run's saves and prunings change: move the data out of it");
    }
    if (!rollback_point(ckpt_dir, resumed)) require_no_later_checkpoints(ckpt_dir, start_step(resumed));
    require_checkpoints_of_run(ckpt_dir, run_id);
}

namespace {

// The logs a rollback continues that exist: their copies, made first, keep the records it cuts.
std::vector<ContinuedLog> existing_logs(std::vector<ContinuedLog> const& logs) {
    std::vector<ContinuedLog> existing;
    for (ContinuedLog const& log : logs) {
        std::error_code error;
        if (fs::is_regular_file(log.path, error)) existing.push_back(log);
    }
    return existing;
}

// "--metrics m.jsonl and --trace t.json": the logs, each with its option.
std::string named_logs(std::vector<ContinuedLog> const& logs) {
    std::vector<std::string> options;
    for (ContinuedLog const& log : logs) options.push_back(fmt::format("{} {}", log.option, log.path.string()));
    return fmt::format("{}", fmt::join(options, " and "));
}

// "a copy of the file as it was, m.jsonl.rolled-back-T": where the logs' copies keep them.
std::string copies_kept(std::vector<fs::path> const& copies) {
    std::vector<std::string> names;
    for (fs::path const& copy : copies) names.push_back(copy.string());
    bool const one = copies.size() == 1;
    return fmt::format("{} as {}, {}", one ? "a copy of the file" : "copies of the files", one ? "it was" : "they were",
                       fmt::join(names, " and "));
}

// "; --metrics m.jsonl continues from step 2, kept first in a copy of the file as it was, m.jsonl.rolled-back-T":
// the logs a rollback continues, and their copies. (Not "its later steps' records": resuming a branch set aside
// can cut none, and still replaces the records of the branch it sets aside.)
std::string continued_logs_note(std::vector<ContinuedLog> const& logs, std::vector<fs::path> const& copies,
                                std::int64_t step) {
    if (copies.empty()) return std::string();
    return fmt::format("; {} continue{} from step {}, kept first in {}", named_logs(logs),
                       copies.size() == 1 ? "s" : "", step, copies_kept(copies));
}

// The names of the checkpoints set aside, for one line: each of a few, or the first and the last of many (a run
// that saved every step, rolled back far, listed a hundred names).
std::string listed_names(std::vector<std::string> const& names) {
    constexpr std::size_t listed_whole = 4;
    if (names.size() <= listed_whole) return fmt::format("{}", fmt::join(names, ", "));
    return fmt::format("{} to {} ({} checkpoints)", names.front(), names.back(), names.size());
}

// Copies the logs aside, then sets the checkpoints aside (the logs first: their copies are the step a full disk
// fails); returns the checkpoints' new names. One that fails undoes the rest and says so.
std::vector<std::string> set_aside_all(std::vector<fs::path> const& checkpoints, std::vector<ContinuedLog> const& logs,
                                       RollbackAside& aside) {
    std::vector<std::string> names;
    try {
        for (ContinuedLog const& log : logs) aside.copy(log.path);
        for (fs::path const& checkpoint : checkpoints) names.push_back(aside.rename(checkpoint).filename().string());
    } catch (Error const& e) {
        std::string const left = aside.undo();
        fail("{}; the rollback is undone{}: free the space or fix the permission, and run again", e.what(),
             left.empty() ? ", the checkpoints and files are as they were" : fmt::format(" except for {}", left));
    }
    return names;
}

// The launch that computed the last step before a checkpoint of step `step` (its step - 1), as `lineage` says;
// "" where it records none.
std::string last_launch(RunLineage const& lineage, std::int64_t step) {
    return step > 0 ? launch_at(lineage, step - 1) : std::string();
}

// The complete checkpoints in ckpt_dir of steps before the resumed one's that are not on its way: their last step
// was computed by another launch than the resumed checkpoint's lineage says. Resuming a checkpoint a rollback set
// aside finds the branch that replaced it there (its checkpoints after the rollback's step), which `--resume
// latest` and a later rollback would take for this branch's. One whose lineage cannot be told (none recorded, or
// an index that cannot be read) stays.
std::vector<fs::path> earlier_checkpoints_of_other_branches(fs::path const& ckpt_dir, CheckpointReader const& resumed) {
    std::int64_t const step = resumed.index().step;
    RunLineage const resumed_lineage = lineage_from_json(resumed.index().run, step, resumed.folder().string());
    std::vector<fs::path> other;
    for (CheckpointEntry const& entry : complete_checkpoints(ckpt_dir)) {
        if (entry.step >= step) continue;
        std::string launch;
        try {
            CheckpointReader const checkpoint(entry.path);
            launch = last_launch(lineage_from_json(checkpoint.index().run, entry.step, entry.path.string()),
                                 entry.step);
        } catch (Error const&) {
            continue;
        }
        std::string const resumed_launch = last_launch(resumed_lineage, entry.step);
        if (!launch.empty() && !resumed_launch.empty() && launch != resumed_launch) other.push_back(entry.path);
    }
    return other;
}

// "the later checkpoints": what a rollback to `step` sets aside, from the names it gave them.
std::string set_aside_kind(std::vector<std::string> const& names, std::int64_t step, bool earlier) {
    if (earlier) return "checkpoints of the branch it leaves (each one not on the way to the one resumed)";
    // A checkpoint of the resumed step other than the one resumed is set aside too.
    bool const step_itself = std::any_of(names.begin(), names.end(), [&](std::string const& name) {
        return name.starts_with(checkpoint_folder_name(step));
    });
    return step_itself ? "checkpoints of this step (other than the one resumed) and later" : "later checkpoints";
}

}  // namespace

bool set_aside_rolled_back_checkpoints(fs::path const& ckpt_dir, std::optional<CheckpointReader> const& resumed,
                                       std::vector<ContinuedLog> const& continued_logs) {
    std::string const note = decided_by_rank_zero([&] {
        std::optional<fs::path> const folder = rollback_point(ckpt_dir, resumed);
        if (!folder) return std::string();
        std::int64_t const step = start_step(resumed);
        std::vector<fs::path> const earlier = earlier_checkpoints_of_other_branches(ckpt_dir, *resumed);
        std::vector<fs::path> leaving = earlier;  // oldest first
        for (fs::path const& later : rolled_back_checkpoints(ckpt_dir, step, *folder)) leaving.push_back(later);
        if (leaving.empty()) return std::string();
        std::vector<ContinuedLog> const logs = existing_logs(continued_logs);
        std::vector<fs::path> marked = leaving;
        for (ContinuedLog const& log : logs) marked.push_back(log.path);
        RollbackAside aside(rollback_mark(marked));
        std::vector<std::string> names;
        {
            EndingDeferred const whole;  // Ctrl-C waits until the rollback is done or undone
            names = set_aside_all(leaving, logs, aside);
        }
        return fmt::format("  rolling back to step {}: the {} are kept aside as {} in {} (never resumed or pruned; "
                           "delete them when they are no longer wanted){}\n",
                           step, set_aside_kind(names, step, !earlier.empty()), listed_names(names), ckpt_dir.string(),
                           continued_logs_note(logs, aside.copies(), step));
    });
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) fmt::print("{}", note);
    return !note.empty();
}

std::vector<SetAsideBranch> set_aside_branches(fs::path const& ckpt_dir, std::int64_t after_step) {
    std::vector<SetAsideBranch> branches;
    std::error_code error;
    if (ckpt_dir.empty() || !fs::is_directory(ckpt_dir, error)) return branches;
    for (auto const& entry : folder_entries(ckpt_dir)) {
        std::string const name = entry.path().filename().string();
        std::optional<std::int64_t> const step = named_step(name);
        if (!step || *step <= after_step || rollback_mark_of(name).empty()) continue;
        try {
            CheckpointReader const checkpoint(entry.path());
            branches.push_back({*step, lineage_from_json(checkpoint.index().run, *step, entry.path().string())});
        } catch (Error const&) {
            // Damaged: it tells nothing of its launches (the records it would claim are cut as a crash's are).
        }
    }
    return branches;
}

std::string copy_abandoned_records_aside(std::vector<ContinuedLog> const& logs, StepSpan abandoned,
                                         std::int64_t resume_step) {
    if (logs.empty()) return std::string();
    std::vector<fs::path> paths;
    for (ContinuedLog const& log : logs) paths.push_back(log.path);
    RollbackAside aside(rollback_mark(paths));
    try {
        for (fs::path const& path : paths) aside.copy(path);
    } catch (Error const& e) {
        aside.undo();
        fail("{}; nothing was changed: free the space or fix the permission, and run again", e.what());
    }
    bool const one = logs.size() == 1;
    std::string const steps = abandoned.first == abandoned.last
                                  ? fmt::format("step {}", abandoned.first)
                                  : fmt::format("steps {} to {}", abandoned.first, abandoned.last);
    // Steps before the resumed one are another branch's for good; later ones this run computes again, its own way.
    std::string const again = abandoned.last < resume_step
                                  ? "does not compute again"
                                  : fmt::format("computes again from step {} with its own settings", resume_step);
    return fmt::format("  {} hold{} records of {} that a rollback abandoned (it was not given {} to cut), which this "
                       "run cuts and {}: they are kept in {}\n",
                       named_logs(logs), one ? "s" : "", steps, one ? "the file" : "the files", again,
                       copies_kept(aside.copies()));
}

CheckpointRoom checkpoint_room(TrainOptions const& options, std::int64_t start_step, int ranks, std::int64_t kept) {
    // The saves of this launch: every --ckpt-every steps after its start, before the last step, and the last.
    std::int64_t const every = options.ckpt_every;
    std::int64_t const saves =
        1 + (every > 0 ? std::max<std::int64_t>(0, (options.steps - 1) / every - start_step / every) : 0);
    std::int64_t const pruned_to = std::max<std::int64_t>(1, options.keep + 1 - kept);
    std::int64_t const held = options.keep == 0 ? saves : std::min(saves, pruned_to);
    return {options.model.parameter_count(), ranks, held, options.keep};
}

void require_room_for_checkpoints(fs::path const& ckpt_dir, CheckpointRoom const& room) {
    constexpr double index_bytes = 256 * 1024, files_bytes_per_rank = 16 * 1024;
    double const one = 3.0 * static_cast<double>(sizeof(float)) * static_cast<double>(room.parameters) +
                       index_bytes + files_bytes_per_rank * room.ranks;
    double const needed = one * room.held_at_once;
    std::optional<std::uint64_t> const free = free_bytes_for(ckpt_dir);
    if (!free || static_cast<double>(*free) >= needed) return;
    std::string const held =
        room.held_at_once == 1 ? "one checkpoint,"
        : room.keep == 0
            ? fmt::format("{} checkpoints (--keep 0, the default, keeps every save of the run), each",
                          room.held_at_once)
            : fmt::format("{} checkpoints (--keep {}: each save is written whole before an older one is pruned), each",
                          room.held_at_once, room.keep);
    fail("--ckpt-dir {} has {} free, less than this run's saves need (about {}: {} the weights and AdamW's two "
         "moments at 12 bytes a parameter, with the files' headers and index), so a save would fail in the middle of "
         "the run or after it: free space there, {}or choose another folder",
         ckpt_dir.string(), human_bytes(static_cast<double>(*free)), human_bytes(needed), held,
         room.held_at_once > 1 ? "keep fewer checkpoints (--keep, --ckpt-every), " : "");
}

void require_hf_model_alone(fs::path const& folder, std::string_view option) {
    if (!is_hf_model_folder(folder)) return;
    if (auto const checkpoints = checkpoint_content(folder)) {
        fail("{} {} holds both a Hugging Face model and axonn checkpoints ({}): name the checkpoint folder "
             "itself, or move the Hugging Face files to a folder of their own",
             option, folder.string(), *checkpoints);
    }
}

fs::path resolve_init_source(fs::path const& source, std::string_view option) {
    return decided_by_rank_zero([&] {
        if (!is_hf_model_folder(source)) return resolve_checkpoint(source.string(), {}, option).string();
        require_hf_model_alone(source, option);
        return source.string();
    });
}

ModelConfig init_source_config(fs::path const& resolved) {
    if (is_hf_model_folder(resolved)) return read_hf_model_config(resolved);
    return CheckpointReader(resolved).index().model;
}

void load_initial_weights(fs::path const& resolved, ModelConfig const& source, Decoder& model) {
    if (is_hf_model_folder(resolved)) {
        HostState::write(model, nullptr, [&](LocalBuffers const& out) {
            read_hf_weights(resolved, source, model.layout(), out.params);
        });
        return;
    }
    CheckpointReader checkpoint(resolved);
    checkpoint.verify(model.grid().comm(Group::world));
    HostState::write(model, nullptr, [&](LocalBuffers const& out) { checkpoint.read_local(model.layout(), out); });
}

namespace {

CheckpointTarget checkpoint_target(TrainOptions const& options) {
    return {options.ckpt_dir, options.keep, static_cast<std::uint64_t>(options.ckpt_file_mib) << 20};
}

}  // namespace

fs::path save_training_checkpoint(TrainOptions const& options, Decoder& model, AdamW& optimizer,
                                  TrainingData const& data, int step) {
    HostState const state = HostState::read(model, &optimizer);
    return save_checkpoint(model.grid(), options.model, state.tensors(), step,
                           run_state_json(options, optimizer, data, step), checkpoint_target(options));
}

std::unique_ptr<PreparedSave> prepare_training_checkpoint(TrainOptions const& options, Decoder& model, AdamW& optimizer,
                                                          TrainingData const& data, int step) {
    HostState const state = HostState::read(model, &optimizer);
    return std::make_unique<PreparedSave>(model.grid(), options.model, state.tensors(), step,
                                          run_state_json(options, optimizer, data, step), checkpoint_target(options));
}

}  // namespace axonn
