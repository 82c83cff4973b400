#include "axonn/train/training_data.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace axonn {
namespace {

namespace fs = std::filesystem;

// (The error_code forms: a path that cannot be examined, such as a loop of links, is reported by the reader.)
// A folder's train.bin leaves its other shards out: `note` names them, for the banner.
fs::path training_path(TrainOptions const& options, std::string& note) {
    fs::path const train_file = options.data / training_shard_name;
    std::error_code error;
    if (!fs::is_directory(options.data, error) || !fs::exists(train_file, error)) return options.data;
    std::vector<std::string> others;
    for (auto const& entry : folder_entries(options.data)) {
        std::string const name = entry.path().filename().string();
        if (entry.path().extension() == ".bin" && name != training_shard_name && name != validation_shard_name) {
            others.push_back(name);
        }
    }
    std::sort(others.begin(), others.end());
    if (!others.empty()) {
        note = fmt::format("--data {} trains on its train.bin alone, not on its other shards ({}): name the shards to "
                           "train on them all",
                           options.data.string(), fmt::join(others, ", "));
    }
    return train_file;
}

std::optional<fs::path> validation_path(TrainOptions const& options) {
    std::error_code error;
    if (!options.val_data.empty()) {
        if (auto const problem = path_problem(options.val_data)) {
            fail("--val-data {} {}: check the path, or leave --val-data out to validate on val.bin beside --data",
                 options.val_data.string(), *problem);
        }
        // A folder that prepare wrote: its val.bin, as --data's folder gives its train.bin (its other shards are
        // training data: the folder without a val.bin is read as shards).
        fs::path const folder_val = options.val_data / validation_shard_name;
        if (fs::is_directory(options.val_data, error) && fs::exists(folder_val, error)) return folder_val;
        return options.val_data;
    }
    fs::path const val_file = options.data / validation_shard_name;
    if (fs::is_directory(options.data, error) && fs::exists(val_file, error)) return val_file;
    return std::nullopt;
}

// Validation data must not be trained on, and a train.bin/val.bin pair must come from one run of prepare (a run
// stopped between writing the two would otherwise pair new training data with old validation data).
void check_data_split(DataLoader const& train, DataLoader const& val) {
    for (TokenShard const& validation : val.shards()) {
        for (TokenShard const& training : train.shards()) {
            std::error_code error;
            AXONN_REQUIRE(!fs::equivalent(validation.path(), training.path(), error),
                          "{} is both training and validation data: pass --val-data a shard that is not in --data",
                          validation.path().string());
            bool const pair = training.path().filename() == training_shard_name &&
                              validation.path().filename() == validation_shard_name &&
                              training.path().parent_path() == validation.path().parent_path();
            AXONN_REQUIRE(!pair || training.dataset_id() == validation.dataset_id(),
                          "{} and {} come from different runs of `axonn prepare` (one was stopped between them?): run "
                          "prepare again",
                          training.path().string(), validation.path().string());
        }
    }
}

// Validation batches beyond one pass over the validation data only repeat it: the default takes up to 8 of those
// there are, and more than there are, asked for, is refused.
int evaluation_batches(TrainOptions const& options, DataLoader const& val) {
    constexpr int default_batches = 8;
    std::int64_t const available =
        std::max<std::int64_t>(1, (val.total_tokens() - 1) / (static_cast<std::int64_t>(options.batch) * options.seq));
    if (options.eval_batches == 0) return static_cast<int>(std::min<std::int64_t>(default_batches, available));
    if (options.eval_batches <= available) return options.eval_batches;
    throw UsageError(
        fmt::format("--eval-batches {} is more than the validation data holds: it has {} batches of {} x "
                    "{} tokens; use at most {}",
                    options.eval_batches, available, options.batch, options.seq, available));
}

std::optional<DataLoader> open_validation(TrainOptions const& options, ShardTokenizer const& tokenizer,
                                          DataLoader const& train, std::string& note) {
    std::optional<fs::path> const path = validation_path(options);
    if (!path) {
        note = "no validation data (pass --val-data, or --data a folder that holds val.bin)";
        return std::nullopt;
    }
    if (options.val_data.empty() && options.eval_batches == 0) {  // both defaulted: adapt rather than refuse
        std::int64_t const needed = static_cast<std::int64_t>(options.batch) * options.seq + 1;
        std::int64_t const tokens = TokenShard::open(*path).size();
        if (tokens < needed) {
            note = fmt::format("no validation: {} holds {} tokens, fewer than one batch of {} x {} needs ({}); pass "
                               "--val-data larger data to validate",
                               path->string(), tokens, options.batch, options.seq, needed);
            return std::nullopt;
        }
    }
    std::optional<DataLoader> val;
    val.emplace(*path, options.batch, options.seq, tokenizer);
    check_data_split(train, *val);
    return val;
}

}  // namespace

TrainingData::TrainingData(TrainOptions const& options, ShardTokenizer const& tokenizer)
    : train(training_path(options, training_note), options.batch, options.seq, tokenizer),
      val(open_validation(options, tokenizer, train, no_validation_note)), batch(options, train.has_loss_mask()),
      loss_mask(options.goldfish.enabled() || train.has_loss_mask() ? batch.tokens.size() : 0) {
    if (val) {
        eval_batches = evaluation_batches(options, *val);
        val_batch.emplace(options, val->has_loss_mask());
    }
}

std::vector<fs::path> TrainingData::inputs() const {
    std::vector<fs::path> paths;
    for (TokenShard const& shard : train.shards()) paths.push_back(shard.path());
    if (val) {
        for (TokenShard const& shard : val->shards()) paths.push_back(shard.path());
    }
    return paths;
}

std::vector<Batch> local_passes(ProcessGrid const& grid, TrainOptions const& options, BatchBuffers const& batch,
                                float const* loss_mask) {
    return micro_batches(
        replica_rows(grid, options.batch, options.seq, batch.tokens.data(), batch.targets.data(), loss_mask),
        options.run.micro_batch);
}

void apply_data_mask(BatchBuffers& batch, std::span<float> loss_mask, bool goldfish) {
    for (std::size_t i = 0; i < loss_mask.size(); ++i) {
        loss_mask[i] = goldfish ? loss_mask[i] * batch.loss_mask[i] : batch.loss_mask[i];
        if (goldfish && batch.loss_mask[i] == 0.0f) batch.targets[i] = -1;
    }
}

}  // namespace axonn
