// Building train.bin and val.bin from text files (see prepare.h).
#include "axonn/io/prepare.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/token_shard.h"
#include "axonn/io/tokenizer.h"
#include "axonn/io/utf8.h"

#include <linux/magic.h>
#include <sys/statfs.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <system_error>

namespace axonn {
namespace {

constexpr std::uint64_t max_document_bytes = std::uint64_t{1} << 34;  // 16 GiB

// A file of the kernel's (under /proc or /sys) reports size 0 whatever it holds: not a document to train on.
bool is_kernel_file(std::filesystem::path const& path) {
    struct statfs info {};
    return ::statfs(path.c_str(), &info) == 0 && (info.f_type == PROC_SUPER_MAGIC || info.f_type == SYSFS_MAGIC);
}

// An input that is one of prepare's own outputs: a token shard (any name), or a file this command writes.
bool is_prepare_output(std::filesystem::path const& path, std::string_view contents,
                       std::filesystem::path const& out_dir) {
    std::error_code error;
    for (char const* name : {"train.bin", "val.bin", "train.bin.partial", "val.bin.partial"}) {
        if (std::filesystem::equivalent(path, out_dir / name, error)) return true;
    }
    std::int32_t magic = 0;
    if (contents.size() >= token_shard_header_bytes) std::memcpy(&magic, contents.data(), sizeof(magic));
    return magic == token_shard_magic;
}

constexpr char const* input_hint = "name the text files to tokenize";

// Every input opens as a regular file, before the slow tokenizing starts.
void check_inputs(std::vector<std::filesystem::path> const& inputs) {
    for (auto const& path : inputs) {
        require(!is_kernel_file(path), "input {} is a file of the kernel (/proc or /sys), whose size reads as 0, not "
                "a document: copy its text into a regular file first", path.string());
        open_input_file(path, "input text file", input_hint);
    }
}

// The document in `path`, or nothing when it is one of prepare's outputs.
std::optional<std::string> read_document(std::filesystem::path const& path, PrepareOptions const& options) {
    std::string text = read_input_file(path, "input text file", input_hint, max_document_bytes);
    if (is_prepare_output(path, text, options.out_dir)) return std::nullopt;
    require(!text.empty(), "input text file {} is empty: remove it from the inputs", path.string());
    if (!options.allow_binary) {
        if (auto const offset = first_non_text_byte(text)) {
            fail("input {} is not UTF-8 text (byte 0x{:02X} at offset {}): remove it from the inputs, or pass "
                 "--allow-binary to tokenize its bytes anyway", path.string(),
                 static_cast<unsigned char>(text[*offset]), *offset);
        }
    }
    return text;
}

std::uintmax_t total_input_bytes(std::vector<std::filesystem::path> const& inputs) {
    std::uintmax_t total = 0;
    for (auto const& input : inputs) {
        std::error_code error;
        std::uintmax_t const bytes = std::filesystem::file_size(input, error);
        if (!error) total += bytes;
    }
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

// A random id that the two shards of one run share (never 0, which means "none").
std::uint64_t new_dataset_id() {
    std::random_device entropy;
    std::uint64_t id = 0;
    while (id == 0) id = (static_cast<std::uint64_t>(entropy()) << 32) | entropy();
    return id;
}

}  // namespace

void validate_prepare_options(PrepareOptions const& options) {
    as_usage_errors([&] {
        require(!options.inputs.empty(), "no input text files: name at least one");
        require(!options.out_dir.empty(), "no output folder: name one for train.bin and val.bin");
        require(options.val_fraction > 0.0 && options.val_fraction < 1.0,
                "--val-fraction {} is outside (0, 1): use e.g. 0.1", options.val_fraction);
        check_tokenizer_name(options.tokenizer);
    });
}

PrepareReport prepare_shards(PrepareOptions const& options, std::function<void(double)> const& progress) {
    validate_prepare_options(options);
    auto const tokenizer =
        make_tokenizer(options.tokenizer, options.gpt2_dir.empty() ? default_gpt2_dir() : options.gpt2_dir);
    check_inputs(options.inputs);
    create_folder(options.out_dir, "token shards");  // before the slow tokenizing, so that a bad folder fails at once
    PrepareReport report{0, 0, options.out_dir / "train.bin", options.out_dir / "val.bin", {}};
    std::uintmax_t const total_bytes = total_input_bytes(options.inputs);
    std::uintmax_t done_bytes = 0;
    Split split;
    for (auto const& input : options.inputs) {
        std::optional<std::string> const text = read_document(input, options);
        if (!text) {
            report.skipped.push_back(input);
            continue;
        }
        split_document(tokenizer->encode(*text), options.val_fraction, tokenizer->eot_id(), split);
        done_bytes += text->size();
        if (progress) progress(std::min(1.0, static_cast<double>(done_bytes) / std::max(1.0, double(total_bytes))));
    }
    require(report.skipped.size() < options.inputs.size(), "every input is a token shard or an output of `axonn "
            "prepare`: name the text files to tokenize");
    int const token_bits = tokenizer->vocab_size() <= 65536 ? 16 : 32;
    ShardOrigin const origin{{tokenizer->name(), tokenizer->vocab_size()}, new_dataset_id()};
    AtomicFile train(report.train_path, "token shard"), val(report.val_path, "token shard");
    write_token_shard(train, split.train, token_bits, origin);
    write_token_shard(val, split.val, token_bits, origin);
    train.finish();
    val.finish();
    train.commit();
    val.commit();
    report.train_tokens = static_cast<std::int64_t>(split.train.size());
    report.val_tokens = static_cast<std::int64_t>(split.val.size());
    return report;
}

}  // namespace axonn
