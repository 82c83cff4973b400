#include "axonn/train/data_loader.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"

#include <algorithm>

namespace axonn {

std::vector<std::filesystem::path> shard_paths(std::filesystem::path const& path) {
    std::error_code error;
    // Anything but a folder is one shard, which TokenShard::open checks (a missing path, a loop of links, a FIFO).
    if (!std::filesystem::is_directory(path, error)) return {path};
    // Every *.bin but val.bin is a shard, whatever it is: TokenShard::open says what is wrong with one that is not.
    std::vector<std::filesystem::path> paths;
    bool validation = false;
    for (auto const& entry : folder_entries(path)) {
        std::filesystem::path const& name = entry.path();
        validation = validation || name.filename() == validation_shard_name;
        if (name.extension() == ".bin" && name.filename() != validation_shard_name) paths.push_back(name);
    }
    std::sort(paths.begin(), paths.end());
    AXONN_REQUIRE(!paths.empty() || !validation,
                  "folder {} holds no training shard, only the validation shard {}: give the training data's folder, "
                  "or prepare both into a new one (`axonn prepare --input FILES --out NEW_FOLDER`)",
                  path.string(), validation_shard_name);
    AXONN_REQUIRE(!paths.empty(), "folder {} holds no .bin token shards: run `axonn prepare --input FILES --out {}`",
                  path.string(), path.string());
    return paths;
}

DataLoader::DataLoader(std::filesystem::path const& path, int batch, int seq, ShardTokenizer const& tokenizer)
    : batch_(batch), seq_(seq), window_(static_cast<std::size_t>(seq) + 1), window_mask_(window_.size()) {
    AXONN_INVARIANT(batch > 0 && seq > 0, "batch ({}) and sequence length ({}) must be positive", batch, seq);
    for (auto const& shard_path : shard_paths(path)) {
        TokenShard shard = TokenShard::open(shard_path);
        if (auto const& recorded = shard.tokenizer()) {
            AXONN_REQUIRE(
                *recorded == tokenizer,
                "{} was prepared with the {} tokenizer ({} ids) but this run uses {} ({} ids): pass --tokenizer "
                "{}, or prepare the data again with --tokenizer {}",
                shard_path.string(), recorded->name, recorded->vocab_size, tokenizer.name, tokenizer.vocab_size,
                recorded->name, tokenizer.name);
        }
        AXONN_REQUIRE(shard.max_token() < tokenizer.vocab_size,
                      "{} holds token id {} but the model's vocabulary has {} entries: prepare the data with the "
                      "model's tokenizer",
                      shard_path.string(), shard.max_token(), tokenizer.vocab_size);
        shard_starts_.push_back(total_tokens_);
        total_tokens_ += shard.size();
        shards_.push_back(std::move(shard));
    }
    std::int64_t const needed = static_cast<std::int64_t>(batch) * seq + 1;
    AXONN_REQUIRE(total_tokens_ >= needed,
                  "{} holds {} tokens, fewer than one batch needs ({} = B·T + 1): lower --batch "
                  "or --seq, or prepare more text",
                  path.string(), total_tokens_, needed);
}

bool DataLoader::has_loss_mask() const {
    return std::any_of(shards_.begin(), shards_.end(), [](TokenShard const& shard) { return shard.has_loss_mask(); });
}

std::int64_t DataLoader::loss_tokens() const {
    std::int64_t total = 0;
    for (TokenShard const& shard : shards_) total += shard.loss_tokens();
    return total;
}

// read(shard, offset, count, out) for each shard's part of the stream's [position, position + count).
template <typename T, typename Read>
void DataLoader::read_stream(std::int64_t position, std::int64_t count, T* out, Read read) const {
    while (count > 0) {
        auto const next_start = std::upper_bound(shard_starts_.begin(), shard_starts_.end(), position);
        std::size_t const shard = static_cast<std::size_t>(next_start - shard_starts_.begin()) - 1;
        std::int64_t const offset = position - shard_starts_[shard];
        std::int64_t const available = std::min(count, shards_[shard].size() - offset);
        read(shards_[shard], offset, available, out);
        out += available;
        position += available;
        count -= available;
    }
}

void DataLoader::next_batch(std::int32_t* tokens, std::int32_t* targets, float* loss_mask) {
    for (int b = 0; b < batch_; ++b) {
        if (state_.position + seq_ + 1 > total_tokens_) {  // not enough left for a window: next epoch
            state_.position = 0;
            ++state_.epoch;
        }
        std::ptrdiff_t const row = static_cast<std::ptrdiff_t>(b) * seq_;
        read_stream(state_.position, seq_ + 1, window_.data(),
                    [](TokenShard const& shard, std::int64_t offset, std::int64_t count, std::int32_t* out) {
                        shard.read(offset, count, out);
                    });
        std::copy(window_.begin(), window_.end() - 1, tokens + row);
        std::copy(window_.begin() + 1, window_.end(), targets + row);
        if (loss_mask != nullptr) {
            read_stream(state_.position, seq_ + 1, window_mask_.data(),
                        [](TokenShard const& shard, std::int64_t offset, std::int64_t count, std::uint8_t* out) {
                            shard.read_loss_mask(offset, count, out);
                        });
            std::copy(window_mask_.begin() + 1, window_mask_.end(), loss_mask + row);  // target t is token t+1
        }
        state_.position += seq_;
    }
}

void DataLoader::restore(DataLoaderState const& state) {
    AXONN_REQUIRE(state.position >= 0 && state.position < total_tokens_ && state.epoch >= 0,
                  "data loader position {} is outside the data ({} tokens): the checkpoint belongs to other data",
                  state.position, total_tokens_);
    state_ = state;
}

}  // namespace axonn
