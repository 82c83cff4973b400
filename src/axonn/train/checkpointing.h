// The trainer's side of checkpoints: what a checkpoint keeps of a run besides its tensors (the step, the
// schedule, AdamW's settings and step count, the data loader's position, the seed, which is the random number
// generator's whole state since it is counter-based, and the tokenizer), and the three
// ways a run meets one: saving (--ckpt-dir, --ckpt-every, --keep, at the end, on a stop signal), resuming
// (--resume: everything, bit for bit) and starting from weights alone (--init-from: an axonn checkpoint or a
// Hugging Face folder of any family, with a fresh optimizer).
#pragma once

#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/model/decoder.h"
#include "axonn/train/data_loader.h"
#include "axonn/train/training_data.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/run_lineage.h"
#include "axonn/train/trainer.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace axonn {

// The run's checkpoint to resume, opened and checked against the run's options (the same model, a step within
// --steps); none without --resume, or with --resume latest while --ckpt-dir holds no complete checkpoint yet (the
// first run of a job script that always resumes). Every rank opens it.
std::optional<CheckpointReader> open_resume_checkpoint(TrainOptions const& options);

// The run's identity, which its checkpoints and every record of its metrics file carry, so that a resumed run
// continues its own metrics file and no other: the resumed checkpoint's (empty for a checkpoint from before runs had
// one); for a new run with a --ckpt-dir, one made from that folder's whole path, the seed, the model, the batch, the
// sequence length and the tokenizer, so that a relaunch with --resume latest before the first checkpoint is the
// same run (and another experiment in that folder another run); for a new run without, a random one. Collective.
std::string run_identity(TrainOptions const& options, std::optional<CheckpointReader> const& resumed);

// The launches of a run's steps, this one last, from the step it starts at with an id of its own: the resumed
// checkpoint's lineage (none where it records none) and this launch. Collective (rank 0 draws the id).
RunLineage run_lineage(std::optional<CheckpointReader> const& resumed);

// Where a resumed run goes on: the step, the optimizer's count of updates and the place in the data.
struct ResumePoint {
    int step = 0;
    int steps_taken = 0;
    DataLoaderState data;
};

// Everything about a checkpoint to resume that can refuse it, checked before the run changes anything for it (sets
// later checkpoints aside, opens its metrics): its files against their checksums, its run state, and the data it
// was trained on (the shards' dataset ids and token count) against `loader`'s: other data is refused, or, with
// `new_data`, read from its start. Collective (the files are verified by all ranks together).
ResumePoint check_resume_point(CheckpointReader& checkpoint, Communicator& world, DataLoader const& loader,
                               bool new_data);
// Restores weights, moments, the optimizer's step count and the data position of a checked checkpoint.
void restore_checkpoint(CheckpointReader& checkpoint, ResumePoint const& point, Decoder& model, AdamW& optimizer,
                        DataLoader& loader);

// The settings of the checkpoint's run that this run changes ("--steps 200 (was 100)"), the data it validates on
// (`validation`, none if empty) among them: a resumed run that changes any is no longer the interrupted one, and
// is told so.
std::vector<std::string> settings_changed_since(CheckpointReader const& checkpoint, TrainOptions const& options,
                                                std::optional<DataLoader> const& validation);

// Refuses a --ckpt-dir that holds another kind of output (a Hugging Face model, token shards), a folder named as
// a checkpoint that is not one, any of the run's `data` (which its saves and prunings could delete), checkpoints
// of steps after the run's start (step 0, or `resumed`'s; a run resumed from a checkpoint inside ckpt_dir rolls its
// own later ones back instead), or a checkpoint of any step that is not of the run `run_id` (an import's, another
// run's), before the folder is made or locked.
void require_checkpoint_folder_for_run(std::filesystem::path const& ckpt_dir,
                                       std::vector<std::filesystem::path> const& data,
                                       std::optional<CheckpointReader> const& resumed, std::string const& run_id);

// The checkpoints a run's saves hold at once, and what each takes.
struct CheckpointRoom {
    std::int64_t parameters;  // each checkpoint's weights and AdamW's two moments, 12 bytes a parameter
    int ranks;                // each writes its own files, with their headers
    std::int64_t held_at_once;  // 1 for a run that saves once; with --keep K, up to K + 1 (a save is written whole
                                // before an older one is pruned); with --keep 0 (all), every save of the run
    int keep;                   // --keep, for the message
};

// The new checkpoints that the saves of a launch of `ranks` ranks from `start_step` hold at once, where `kept` of
// the run's own are in --ckpt-dir already: with --keep 0 (all kept), every save; with --keep K, the newest K stay,
// and each save is written whole before the older ones go, so at most K + 1 less those already there, and at
// least the one being written.
CheckpointRoom checkpoint_room(TrainOptions const& options, std::int64_t start_step, int ranks, std::int64_t kept);

// Refuses a --ckpt-dir whose file system has less room than `room` (each checkpoint's tensors in fp32, with 256 KiB
// and 16 KiB a rank for the index, the headers and the marker), before any work: a save failed after the training.
// Room freed meanwhile is not counted on, and quotas are not seen.
void require_room_for_checkpoints(std::filesystem::path const& ckpt_dir, CheckpointRoom const& room);

// A file a resumed run continues from its resume step, cutting the later steps' records: "--metrics" and its path.
struct ContinuedLog {
    std::string option;
    std::filesystem::path path;
};

// A run resumed from a checkpoint inside ckpt_dir (`resumed`: its own, rolled back) sets the later ones aside
// (rolled_back_checkpoints, RollbackAside) and rank 0 says so; each of `continued_logs` that exists is copied aside
// first under the same mark, so that the records the run cuts from it are kept. A step that fails undoes the
// others (an axonn::Error that says so). Returns whether it rolled back, on every rank. Collective over
// MPI_COMM_WORLD; with the folder checked (require_checkpoint_folder_for_run) and locked.
bool set_aside_rolled_back_checkpoints(std::filesystem::path const& ckpt_dir,
                                       std::optional<CheckpointReader> const& resumed,
                                       std::vector<ContinuedLog> const& continued_logs);

// The checkpoints of steps after `after_step` that rollbacks set aside in `ckpt_dir` (step_N.rolled-back-TIME),
// with their lineages; one that cannot be read is left out (it tells nothing of its launches).
std::vector<SetAsideBranch> set_aside_branches(std::filesystem::path const& ckpt_dir, std::int64_t after_step);

// Logs that a resumed run (no rollback), resumed at `resume_step`, cuts records of an abandoned branch from (steps
// `abandoned`), as rank 0 found them: each copied whole to its name + a rollback's mark first; returns the line that
// says where ("" for no logs). A copy that fails removes the others: an axonn::Error that says nothing was changed.
std::string copy_abandoned_records_aside(std::vector<ContinuedLog> const& logs, StepSpan abandoned,
                                         std::int64_t resume_step);

// Refuses a Hugging Face model folder that also holds axonn checkpoints (which of the two `option` means is
// unclear). (A folder that checkpoints are written into is checked by output_kinds.h's require_folder_for.)
void require_hf_model_alone(std::filesystem::path const& folder, std::string_view option);

// What --init-from names, as rank 0 resolves it: a Hugging Face folder of any family, an axonn checkpoint, or a
// folder of them (its newest); errors name `option`. Collective over MPI_COMM_WORLD.
std::filesystem::path resolve_init_source(std::filesystem::path const& source, std::string_view option);
// The model a resolved --init-from source holds.
ModelConfig init_source_config(std::filesystem::path const& resolved);
// Loads the weights of `source` (its init_source_config) into this rank's shards. Collective.
void load_initial_weights(std::filesystem::path const& resolved, ModelConfig const& source, Decoder& model);

// Saves the run at `step` (the number of steps done) into --ckpt-dir; returns the checkpoint's folder. Collective.
std::filesystem::path save_training_checkpoint(TrainOptions const& options, Decoder& model, AdamW& optimizer,
                                               TrainingData const& data, int step);
// The same save, with the run's state at `step` copied into host memory for writing while training goes on
// (checkpoint_writer.h: PreparedSave). Collective.
std::unique_ptr<PreparedSave> prepare_training_checkpoint(TrainOptions const& options, Decoder& model, AdamW& optimizer,
                                                          TrainingData const& data, int step);

}  // namespace axonn
