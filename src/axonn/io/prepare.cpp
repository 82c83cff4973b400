// Building train.bin and val.bin from text files (see prepare.h).
#include "axonn/io/prepare.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/rng.h"
#include "axonn/io/token_shard.h"
#include "axonn/io/tokenizer.h"
#include "axonn/io/utf8.h"

#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

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
    return contents.size() >= token_shard_header_bytes && starts_with_token_shard_magic(contents.data());
}

constexpr char const* input_hint = "name the text files to tokenize";

// Whether an opened input starts as a token shard does.
bool starts_as_token_shard(InputFile const& file) {
    std::array<char, sizeof(token_shard_magic)> first{};
    return file.info.st_size >= static_cast<off_t>(token_shard_header_bytes) &&
           ::pread(file.handle.get(), first.data(), first.size(), 0) == static_cast<ssize_t>(first.size()) &&
           starts_with_token_shard_magic(first.data());
}

// Every input opens as a regular file and is named once, through any path or link (a file named twice would be
// trained on twice and, in text format, would put the same text in train.bin and val.bin), and none that is not a
// token shard is one of the shards this run writes (writing it would destroy the document), before the slow
// tokenizing starts. (An earlier run's shard among the inputs is skipped: tokenize_inputs.)
void check_inputs(std::vector<std::filesystem::path> const& inputs, std::filesystem::path const& out_dir) {
    std::map<std::pair<dev_t, ino_t>, std::filesystem::path> named;  // the file itself → as given
    for (auto const& path : inputs) {
        AXONN_REQUIRE(!is_kernel_file(path),
                      "input {} is a file of the kernel (/proc or /sys), whose size reads as 0, not "
                      "a document: copy its text into a regular file first",
                      path.string());
        InputFile const file = open_input_file(path, "input text file", input_hint);
        auto const [earlier, added] = named.emplace(std::pair(file.info.st_dev, file.info.st_ino), path);
        AXONN_REQUIRE(added, "input {} is the same file as input {}: name each document once", path.string(),
                      earlier->second.string());
        if (starts_as_token_shard(file)) continue;
        for (char const* shard : {"train.bin", "val.bin"}) {
            std::error_code error;
            AXONN_REQUIRE(!std::filesystem::equivalent(path, out_dir / shard, error),
                          "input {} is the file {} that this run writes: writing it would destroy the document; "
                          "choose another --out",
                          path.string(), (out_dir / shard).string());
        }
    }
}

// The document in `path`, or nothing when it is one of prepare's outputs.
std::optional<std::string> read_document(std::filesystem::path const& path, PrepareOptions const& options) {
    std::string text = read_input_file(path, "input text file", input_hint, max_document_bytes);
    if (is_prepare_output(path, text, options.out_dir)) return std::nullopt;
    AXONN_REQUIRE(!text.empty(), "input text file {} is empty: remove it from the inputs", path.string());
    if (!options.allow_binary) {
        require_utf8_text(text, "input " + path.string(),
                          "remove it from the inputs, or pass --allow-binary to tokenize its bytes anyway");
        drop_byte_order_mark(text);
        AXONN_REQUIRE(!text.empty(), "input text file {} holds only a byte-order mark: remove it from the inputs",
                      path.string());
    }
    return text;
}

// The size of an input file, which the progress counts (its text may be shorter: a byte-order mark dropped).
std::uintmax_t input_bytes(std::filesystem::path const& input) {
    std::error_code error;
    std::uintmax_t const bytes = std::filesystem::file_size(input, error);
    return error ? 0 : bytes;
}

std::uintmax_t total_input_bytes(std::vector<std::filesystem::path> const& inputs) {
    std::uintmax_t total = 0;
    for (auto const& input : inputs) total += input_bytes(input);
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
    MaskedTokens train, val;
    std::int64_t train_records = 0, val_records = 0;
};

// Appends one document's tokens to the two streams, each part closed by end-of-text.
void split_document(std::vector<std::int32_t> const& tokens, double val_fraction, std::int32_t eot_id, Split& split) {
    std::size_t const boundary = train_part_size(tokens.size(), val_fraction);
    split.train.append(std::span(tokens).first(boundary), 1);
    split.train.append(std::span(&eot_id, 1), 1);
    split.val.append(std::span(tokens).subspan(boundary), 1);
    split.val.append(std::span(&eot_id, 1), 1);
}

// The seed of the records' train/val shuffle: fixed, so that the same records always split alike.
constexpr PhiloxKey record_split_key{0x5EED5EED, 1};

// Which records go to validation: round(val_fraction x count) of them (at least one, and one left for
// training), chosen by a seeded shuffle so that records sorted by topic or source do not split by it.
std::vector<bool> validation_records(std::size_t count, double val_fraction, std::filesystem::path const& first) {
    AXONN_REQUIRE(count >= 2, "{} holds {} record: a train/val split needs at least 2; add records", first.string(),
                  count);
    auto const val = std::clamp<std::size_t>(
        static_cast<std::size_t>(std::llround(static_cast<double>(count) * val_fraction)), 1, count - 1);
    std::vector<std::size_t> order(count);
    for (std::size_t i = 0; i < count; ++i) order[i] = i;
    seeded_shuffle(std::span(order), record_split_key);
    std::vector<bool> is_val(count, false);
    for (std::size_t i = 0; i < val; ++i) is_val[order[i]] = true;
    return is_val;
}

void split_records(std::vector<MaskedTokens> const& records, double val_fraction,
                   std::filesystem::path const& first_input, Split& split) {
    std::vector<bool> const is_val = validation_records(records.size(), val_fraction, first_input);
    for (std::size_t i = 0; i < records.size(); ++i) {
        (is_val[i] ? split.val : split.train).append(records[i]);
        ++(is_val[i] ? split.val_records : split.train_records);
    }
}

// Every input's tokens, split: each document between the two shards, or each record to one of them. Inputs that
// are prepare's own outputs are skipped and listed in `skipped`.
Split tokenize_inputs(PrepareOptions const& options, Tokenizer const& tokenizer,
                      std::vector<std::filesystem::path>& skipped, std::function<void(double)> const& progress) {
    std::uintmax_t const total_bytes = total_input_bytes(options.inputs);
    std::uintmax_t done_bytes = 0;
    bool const records = options.format == "jsonl";
    PromptTemplate const prompt_template = parse_prompt_template(options.prompt_template);
    Split split;
    std::vector<MaskedTokens> record_tokens;
    for (auto const& input : options.inputs) {
        std::optional<std::string> const text = read_document(input, options);
        if (!text) {
            skipped.push_back(input);
            continue;
        }
        if (records) {
            for (PromptRecord const& record : parse_prompt_records(input, *text, options.fields)) {
                record_tokens.push_back(tokenize_record(tokenizer, apply_template(prompt_template, record)));
            }
        } else {
            split_document(tokenizer.encode(*text), options.val_fraction, tokenizer.eot_id(), split);
        }
        done_bytes += input_bytes(input);
        if (progress) progress(std::min(1.0, static_cast<double>(done_bytes) / std::max(1.0, double(total_bytes))));
    }
    AXONN_REQUIRE(skipped.size() < options.inputs.size(),
                  "every input is a token shard or an output of `axonn prepare`: "
                  "name the {} files to tokenize",
                  records ? "JSON-lines" : "text");
    if (records) split_records(record_tokens, options.val_fraction, options.inputs.front(), split);
    return split;
}

}  // namespace

void validate_prepare_options(PrepareOptions const& options) {
    as_usage_errors([&] {
        AXONN_REQUIRE(options.format == "text" || options.format == "jsonl",
                      "unknown --format {}: use text (one document per file) or jsonl (prompt and response records)",
                      options.format);
        AXONN_REQUIRE(!options.fields.prompt.empty() && !options.fields.response.empty() &&
                          options.fields.prompt != options.fields.response,
                      "--prompt-field '{}' and --response-field '{}' must name two different fields",
                      options.fields.prompt, options.fields.response);
        parse_prompt_template(options.prompt_template);
        AXONN_REQUIRE(options.format == "jsonl" || parse_prompt_template(options.prompt_template) ==
                                                       PromptTemplate::plain,
                      "--template {} writes prompt and response records (--format jsonl); text files are tokenized "
                      "as they are: add --format jsonl, or drop --template",
                      options.prompt_template);
        RecordFields const default_fields;
        AXONN_REQUIRE(options.format == "jsonl" || (options.fields.prompt == default_fields.prompt &&
                                                    options.fields.response == default_fields.response),
                      "--prompt-field and --response-field name the fields of prompt and response records (--format "
                      "jsonl); text files have none: add --format jsonl, or drop them");
        AXONN_REQUIRE(!options.inputs.empty(), "no input text files: name at least one");
        AXONN_REQUIRE(!options.out_dir.empty(), "no output folder: name one for train.bin and val.bin");
        AXONN_REQUIRE(options.val_fraction > 0.0 && options.val_fraction < 1.0,
                      "--val-fraction {} is outside (0, 1): use e.g. 0.1", options.val_fraction);
        check_tokenizer_name(options.tokenizer);
    });
}

// Llama 3's chat template is written with its special-token strings: a tokenizer that does not read each as one
// id (GPT-2's, the byte tokenizer) would train on them as plain text, a format no Llama 3 chat model reads.
void require_template_tokens(PromptTemplate prompt_template, Tokenizer const& tokenizer) {
    if (prompt_template != PromptTemplate::llama3) return;
    for (char const* special : {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}) {
        AXONN_REQUIRE(tokenizer.encode(special).size() == 1,
                      "--template llama3 writes {} as one special token, but the {} tokenizer reads it as plain text: "
                      "use --tokenizer llama3 (or a Llama 3 tokenizer.json folder), or another --template",
                      special, tokenizer.name());
    }
}

// A hash of what training reads from the pair: the tokenizer, and each shard's tokens and loss mask. Preparing the
// same text again with the same options makes the same dataset (a run resumed on it is on its own data); any
// other split, tokenizer or text makes another.
std::uint64_t dataset_id(std::string const& tokenizer, Split const& split) {
    auto const bytes = [](auto const* values, std::size_t count) {
        return std::string_view(reinterpret_cast<char const*>(values), count * sizeof *values);
    };
    std::uint64_t hash = stable_hash(tokenizer);
    for (MaskedTokens const* part : {&split.train, &split.val}) {
        std::uint64_t const count = part->tokens.size();  // where one part ends
        hash = stable_hash(bytes(&count, 1), hash);
        hash = stable_hash(bytes(part->tokens.data(), part->tokens.size()), hash);
        hash = stable_hash(bytes(part->loss_mask.data(), part->loss_mask.size()), hash);
    }
    return hash == 0 ? 1 : hash;  // 0 is "none"
}

namespace {

// An earlier run's pair is replaced only when asked.
void require_replaceable_shards(PrepareOptions const& options) {
    for (char const* shard : {"train.bin", "val.bin"}) {
        require_replaceable_output(options.out_dir / shard, "token shard", options.overwrite);
    }
}

}  // namespace

PrepareReport prepare_shards(PrepareOptions const& options, std::function<void(double)> const& progress) {
    validate_prepare_options(options);
    require_replaceable_shards(options);  // now, not after the tokenizing
    auto const tokenizer =
        make_tokenizer(options.tokenizer, options.gpt2_dir.empty() ? default_gpt2_dir() : options.gpt2_dir);
    if (options.format == "jsonl") {
        as_usage_errors([&] { require_template_tokens(parse_prompt_template(options.prompt_template), *tokenizer); });
    }
    check_inputs(options.inputs, options.out_dir);
    MadeFolder out(options.out_dir, "token shards");  // before the slow tokenizing, so that a bad folder fails at once
    FolderLock const writing(options.out_dir, "token shard folder");
    require_replaceable_shards(options);  // again, held: another prepare of the same --out may have written it
    PrepareReport report{0, 0, options.out_dir / "train.bin", options.out_dir / "val.bin", {}};
    bool const records = options.format == "jsonl";
    Split const split = tokenize_inputs(options, *tokenizer, report.skipped, progress);
    int const token_bits = tokenizer->vocab_size() <= 65536 ? 16 : 32;
    // The two shards share an id of their contents: checkpoints record it, and a resume on other data is caught.
    ShardOrigin const origin{{tokenizer->name(), tokenizer->vocab_size()}, dataset_id(tokenizer->name(), split)};
    // Text counts every token: its shards carry no mask.
    auto const mask = [records](MaskedTokens const& part) {
        return records ? std::span<std::uint8_t const>(part.loss_mask) : std::span<std::uint8_t const>();
    };
    AtomicFile train(report.train_path, "token shard"), val(report.val_path, "token shard");
    write_token_shard(train, split.train.tokens, token_bits, origin, mask(split.train));
    write_token_shard(val, split.val.tokens, token_bits, origin, mask(split.val));
    train.finish();
    val.finish();
    train.commit();
    val.commit();
    out.keep();
    report.train_tokens = static_cast<std::int64_t>(split.train.tokens.size());
    report.val_tokens = static_cast<std::int64_t>(split.val.tokens.size());
    report.train_records = split.train_records;
    report.val_records = split.val_records;
    report.train_loss_tokens = std::count(split.train.loss_mask.begin(), split.train.loss_mask.end(), 1);
    report.val_loss_tokens = std::count(split.val.loss_mask.begin(), split.val.loss_mask.end(), 1);
    return report;
}

}  // namespace axonn
