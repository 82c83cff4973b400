// `axonn import --format hf DIR --out CKPT_DIR`: a Hugging Face folder of any family as an axonn checkpoint
// (weights only, step 0), for `axonn train --init-from CKPT_DIR` or `axonn generate` on any grid.
#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_index.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/comm/grid.h"
#include "axonn/core/error.h"
#include "axonn/core/tensor.h"
#include "axonn/families/hf_model.h"
#include "axonn/families/registry.h"
#include "axonn/train/checkpointing.h"
#include "axonn/train/output_kinds.h"

#include <fmt/format.h>
#include <mpi.h>

#include <filesystem>
#include <memory>
#include <string>

namespace axonn {
namespace {

// Whose a checkpoint of step 0 in --out is, told by its index whether or not it is complete (a save killed between
// its folder's rename and its marker leaves one without COMPLETE).
enum class StepZeroOf { import, training_run, unknown };  // unknown: its index cannot be read

StepZeroOf whose(std::filesystem::path const& step_zero) {
    try {
        std::string const text = read_input_file(step_zero / checkpoint_index_file, "checkpoint index",
                                                 "the checkpoint is damaged", max_checkpoint_index_bytes);
        return parse_checkpoint_index(text).run.is_null() ? StepZeroOf::import : StepZeroOf::training_run;
    } catch (Error const&) {
        return StepZeroOf::unknown;
    }
}

// An earlier import's step 0 is replaced when asked; a training run's checkpoints never, of any step (--overwrite
// replaced a run's step 0 with weights alone, and the run could not be resumed): a resume would take them, and
// --keep would prune the import.
void require_importable_into(std::string const& out, bool overwrite) {
    require_step_folders_are_checkpoints(out, "--out");
    for (CheckpointEntry const& entry : complete_checkpoints(out)) {
        AXONN_REQUIRE(entry.step == 0, "--out {} holds checkpoints of another run ({}): choose a new or empty folder",
                      out, entry.path.filename().string());
    }
    std::filesystem::path const step_zero = std::filesystem::path(out) / checkpoint_folder_name(0);
    if (!std::filesystem::exists(step_zero)) return;
    StepZeroOf const owner = whose(step_zero);
    AXONN_REQUIRE(owner != StepZeroOf::training_run,
                  "--out {} holds a training run's checkpoint of step 0 ({}), which an import never replaces, "
                  "--overwrite or not: choose another folder",
                  out, step_zero.string());
    AXONN_REQUIRE(owner != StepZeroOf::unknown,
                  "--out {} holds a checkpoint of step 0 ({}) whose index cannot be read, so whose it is is unknown "
                  "and an import never replaces it, --overwrite or not: move it out of the folder, or choose another",
                  out, step_zero.string());
    AXONN_REQUIRE(overwrite, "--out {} already holds an earlier import's checkpoint of step 0 ({}): choose another "
                  "folder, or pass --overwrite to replace it",
                  out, step_zero.string());
}

}  // namespace

void add_import_command(CLI::App& app) {
    CLI::App* command =
        app.add_subcommand("import", fmt::format("Turn a Hugging Face {} folder into an axonn checkpoint", family_labels()));
    command->footer("The checkpoint holds the weights alone (step 0, no optimizer state). `axonn train --init-from\n"
                    "DIR` and `axonn generate --model-dir DIR` also read a Hugging Face folder directly. Example:\n"
                    "  axonn import --format hf models/gpt2 --out runs/gpt2-ckpt");
    auto format = std::make_shared<std::string>("hf");
    auto source = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto overwrite = std::make_shared<bool>(false);
    command->add_option("--format", *format, fmt::format("input format: hf (Hugging Face {})", family_labels()))->capture_default_str();
    command->add_option("DIR", *source, "folder with config.json and model.safetensors (or its shards)")->required();
    command->add_option("--out", *out, "checkpoint folder to write into (the checkpoint is OUT/step_00000000)")
        ->required();
    command->add_flag("--overwrite", *overwrite, "replace an earlier import's checkpoint in --out (its step 0)");
    command->callback([command, format, source, out, overwrite] {
        require_one_process("import");
        require_apart_from_config_files(*out, "--out", *command);
        if (*format != "hf") throw UsageError(fmt::format("unknown --format {}: import reads hf", *format));
        require_hf_model_alone(*source, "DIR");
        require_folder_for(*out, "--out", OutputKind::checkpoints);
        require_not_an_input(*out, "--out", {*source});
        require_importable_into(*out, *overwrite);
        ProcessGrid self(MPI_COMM_SELF, GridShape{});
        ModelConfig const config = read_hf_model_config(*source);
        ShardLayout const layout(config.architecture().declarations, GridPosition::of(self));
        Tensor params({layout.total()}, DType::f32);
        read_hf_weights(*source, config, layout, params.span<float>());  // refuses one that is not finite
        // Held while the import writes, as a training run holds its --ckpt-dir, and checked again: two imports (or an
        // import and a run) into one new folder both passed the checks above, and the second replaced the first.
        CheckpointDirLock const writing(*out, "--out");
        require_folder_for(*out, "--out", OutputKind::checkpoints);
        require_importable_into(*out, *overwrite);
        auto const folder = save_checkpoint(self, config, {params.span<float>(), {}, {}}, 0, nullptr,
                                            CheckpointTarget{*out, 0});
        fmt::print("imported {}: {}, to {}\n", *source, config.summary(), folder.string());
    });
}

}  // namespace axonn
