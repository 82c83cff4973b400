#include "axonn/train/checkpointing.h"

#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/checkpoint/hf_gpt2.h"
#include "axonn/core/error.h"

#include <fmt/format.h>

#include <limits>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json run_state_json(TrainOptions const& options, AdamW const& optimizer, DataLoaderState const& data, int step) {
    LrSchedule const& schedule = options.schedule;
    AdamWConfig const& adamw = options.optimizer;
    return {{"step", step},
            {"seed", options.seed},
            {"tokenizer", options.tokenizer},
            {"batch", options.batch},
            {"seq", options.seq},
            {"precision", precision_name(options.run.model.precision)},
            {"schedule", {{"max_lr", schedule.max_lr}, {"min_lr", schedule.min_lr},
                          {"warmup_steps", schedule.warmup_steps}, {"total_steps", schedule.total_steps}}},
            {"optimizer", {{"beta1", adamw.beta1}, {"beta2", adamw.beta2}, {"eps", adamw.eps},
                           {"weight_decay", adamw.weight_decay}, {"grad_clip", adamw.grad_clip},
                           {"steps_taken", optimizer.steps_taken()}}},
            {"data", {{"position", data.position}, {"epoch", data.epoch}}}};
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
    require(valid, "checkpoint {} is damaged: its run state has no valid {} (an integer in [{}, {}])",
            checkpoint.folder().string(), name, low, high);
    return value->get<std::int64_t>();
}

fs::path resolve_init_source(fs::path const& source) {
    if (is_hf_model_folder(source)) return source;
    return resolve_checkpoint(source.string(), {});
}

}  // namespace

std::optional<CheckpointReader> open_resume_checkpoint(TrainOptions const& options) {
    if (options.resume.empty()) return std::nullopt;
    // A job script that always passes --resume latest starts its first run afresh.
    if (options.resume == "latest" && !options.ckpt_dir.empty() && complete_checkpoints(options.ckpt_dir).empty()) {
        return std::nullopt;
    }
    CheckpointReader checkpoint(resolve_checkpoint(options.resume, options.ckpt_dir));
    std::string const folder = checkpoint.folder().string();
    require(checkpoint.has_training_state(), "checkpoint {} holds weights only, no training state to resume: start "
            "from its weights with --init-from {}", folder, folder);
    std::string const differences = model_differences(checkpoint.index().model, options.model);
    require(differences.empty(), "checkpoint {} is of another model: {}; pass the model options it was trained with, "
            "or start a new run with --init-from", folder, differences);
    require(checkpoint.index().step <= options.steps, "checkpoint {} is at step {}, past --steps {}: raise --steps to "
            "train on", folder, checkpoint.index().step, options.steps);
    return checkpoint;
}

int restore_checkpoint(CheckpointReader& checkpoint, Gpt& model, AdamW& optimizer, DataLoader& loader) {
    checkpoint.verify(model.grid().comm(Group::world));
    json const& run = checkpoint.index().run;
    auto const step = run_value(run, {"step"}, checkpoint.index().step, checkpoint.index().step, checkpoint);
    auto const steps_taken = run_value(run, {"optimizer", "steps_taken"}, 0, std::numeric_limits<int>::max(), checkpoint);
    DataLoaderState data;
    data.position = run_value(run, {"data", "position"}, 0, loader.total_tokens() - 1, checkpoint);
    data.epoch = run_value(run, {"data", "epoch"}, 0, std::numeric_limits<std::int64_t>::max(), checkpoint);
    checkpoint.read_local(model.layout(), {model.params(), optimizer.exp_avg(), optimizer.exp_avg_sq()});
    optimizer.restore_steps_taken(static_cast<int>(steps_taken));
    loader.restore(data);
    return static_cast<int>(step);
}

GptConfig init_source_config(fs::path const& source) {
    fs::path const resolved = resolve_init_source(source);
    if (is_hf_model_folder(resolved)) return read_hf_gpt2_config(resolved);
    return CheckpointReader(resolved).index().model;
}

void load_initial_weights(fs::path const& source, Gpt& model) {
    fs::path const resolved = resolve_init_source(source);
    if (is_hf_model_folder(resolved)) {
        HfGpt2Weights(resolved, model.config()).read_local(model.layout(), model.params());
        return;
    }
    CheckpointReader checkpoint(resolved);
    checkpoint.verify(model.grid().comm(Group::world));
    checkpoint.read_local(model.layout(), {model.params(), {}, {}});
}

fs::path save_training_checkpoint(TrainOptions const& options, Gpt& model, AdamW& optimizer, DataLoader const& loader,
                                  int step) {
    LocalTensors const local{model.param_values(), optimizer.exp_avg(), optimizer.exp_avg_sq()};
    CheckpointTarget const target{options.ckpt_dir, options.keep, options.ckpt_file_mib << 20};
    return save_checkpoint(model.grid(), model.config(), local, step,
                           run_state_json(options, optimizer, loader.state(), step), target);
}

}  // namespace axonn
