// The folders axonn writes whole, told apart by their files' names: a checkpoint folder (step_N checkpoints, or a
// checkpoint's own index.json and COMPLETE), a Hugging Face model (model.safetensors or its index, beside a
// config.json) and token shards (train.bin, val.bin). One kind never shares a folder with another: `generate`,
// --init-from and --data could not tell which is meant, a --keep pruning deletes what lies in a checkpoint, and a
// --overwrite of one would replace the other's files. Nor does another output file (a trace, metrics, a profile,
// a plot, a grid file) replace one of their files, with --overwrite or not, or land inside a checkpoint; nor does
// one replace a grid file or a machine profile unless it is one of that kind (`axonn tune`, `axonn calibrate`).
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace axonn {

enum class OutputKind { checkpoints, hf_model, token_shards, other };

// The files of axonn's own tuning that only an output of their kind may replace (with --overwrite): a metrics file,
// a trace or a plot over the grid file or the machine profile that --grid auto and the planner read destroyed it.
enum class TuningFile { none, grid_file, machine_profile };

// Refuses `folder` (named by `option`) for output of kind `own` where it holds another kind's files, lies inside
// a checkpoint, or is named as one (step_N) beside checkpoints.
void require_folder_for(std::filesystem::path const& folder, std::string_view option, OutputKind own);

// Refuses an output file `file` (named by `option`) that lies inside a checkpoint (links and `..` resolved), or that
// exists and is a token shard, model weights (safetensors), a checkpoint's index or a Hugging Face model's config,
// or a grid file or machine profile unless the output is one of that kind (`own`), told by its contents (a link or a
// copy is known too).
void require_apart_from_models_and_data(std::filesystem::path const& file, std::string_view option,
                                        TuningFile own = TuningFile::none);

// Every check of an output file written whole (a trace, a grid file, a profile, a plot), before the work: not one of
// the run's `inputs` (core/file_io.h, require_not_an_input), apart from models and data, and replaceable
// (require_replaceable_output: `what` names it there).
void require_output_file(std::filesystem::path const& file, std::string_view option, std::string_view what,
                         bool overwrite, std::vector<std::filesystem::path> const& inputs = {},
                         TuningFile own = TuningFile::none);

}  // namespace axonn
