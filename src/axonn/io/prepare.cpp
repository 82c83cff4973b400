// Building train.bin and val.bin from text files (see prepare.h).
#include "axonn/io/prepare.h"

#include "axonn/core/error.h"
#include "axonn/io/token_shard.h"
#include "axonn/io/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>

namespace axonn {
namespace {

void check_options(PrepareOptions const& options) {
    require(!options.inputs.empty(), "no input text files: name at least one");
    require(!options.out_dir.empty(), "no output folder: name one for train.bin and val.bin");
    require(options.val_fraction > 0.0 && options.val_fraction < 1.0,
            "validation fraction {} is outside (0, 1): use e.g. 0.1", options.val_fraction);
    for (auto const& input : options.inputs) {
        std::error_code error;
        require(std::filesystem::is_regular_file(input, error), "input text file {} does not exist: check the path",
                input.string());
        require(std::filesystem::file_size(input, error) > 0, "input text file {} is empty: remove it from the inputs",
                input.string());
    }
}

std::string read_document(std::filesystem::path const& path) {
    std::ifstream in(path, std::ios::binary);
    require(in.good(), "cannot read input text file {}: check its permissions", path.string());
    std::ostringstream contents;
    contents << in.rdbuf();
    return std::move(contents).str();
}

std::uintmax_t total_input_bytes(std::vector<std::filesystem::path> const& inputs) {
    std::uintmax_t total = 0;
    for (auto const& input : inputs) total += std::filesystem::file_size(input);
    return total;
}

// Where a document of `count` tokens splits: the last val_fraction goes to validation, with at least one token
// on each side. A one-token document cannot be split and goes to training whole.
std::size_t train_part_size(std::size_t count, double val_fraction) {
    if (count < 2) return count;
    auto const val = static_cast<std::size_t>(std::llround(static_cast<double>(count) * val_fraction));
    return count - std::clamp<std::size_t>(val, 1, count - 1);
}

struct Split {
    std::vector<std::int32_t> train, val;
};

// Appends one document's tokens to the two streams, each part closed by end-of-text.
void split_document(std::vector<std::int32_t> const& tokens, double val_fraction, std::int32_t eot_id, Split& split) {
    auto const boundary = tokens.begin() + static_cast<std::ptrdiff_t>(train_part_size(tokens.size(), val_fraction));
    split.train.insert(split.train.end(), tokens.begin(), boundary);
    split.train.push_back(eot_id);
    split.val.insert(split.val.end(), boundary, tokens.end());
    split.val.push_back(eot_id);
}

void create_out_dir(std::filesystem::path const& out_dir) {
    std::error_code error;
    std::filesystem::create_directories(out_dir, error);
    require(!error, "cannot create output folder {}: {}", out_dir.string(), error.message());
}

}  // namespace

PrepareReport prepare_shards(PrepareOptions const& options, std::function<void(double)> const& progress) {
    check_options(options);
    auto const tokenizer =
        make_tokenizer(options.tokenizer, options.gpt2_dir.empty() ? default_gpt2_dir() : options.gpt2_dir);
    create_out_dir(options.out_dir);  // before the slow tokenizing, so that a bad folder fails at once
    std::uintmax_t const total_bytes = total_input_bytes(options.inputs);
    std::uintmax_t done_bytes = 0;
    Split split;
    for (auto const& input : options.inputs) {
        std::string const text = read_document(input);
        split_document(tokenizer->encode(text), options.val_fraction, tokenizer->eot_id(), split);
        done_bytes += text.size();
        if (progress) progress(static_cast<double>(done_bytes) / static_cast<double>(total_bytes));
    }
    int const token_bits = tokenizer->vocab_size() <= 65536 ? 16 : 32;
    PrepareReport report{static_cast<std::int64_t>(split.train.size()), static_cast<std::int64_t>(split.val.size()),
                         options.out_dir / "train.bin", options.out_dir / "val.bin"};
    write_token_shard(report.train_path, split.train, token_bits);
    write_token_shard(report.val_path, split.val, token_bits);
    return report;
}

}  // namespace axonn
