// `axonn prepare`: every document is split between train.bin and val.bin, each part ends with end-of-text, the
// token counts add up, and bad options fail with a one-line error.
#include "axonn/core/error.h"
#include "axonn/io/prepare.h"
#include "axonn/io/token_shard.h"
#include "axonn/io/tokenizer.h"

#include "support/error_of.h"
#include "support/temp_dir.h"
#include "support/files.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace axonn {
namespace {

using testing::error_of;
using testing::file_bytes;
using testing::write_file;

using axonn::testing::TempDir;

using Ids = std::vector<std::int32_t>;

// A fresh folder per test, removed afterwards.

Ids read_shard(std::filesystem::path const& path) {
    TokenShard const shard = TokenShard::open(path);
    Ids tokens(static_cast<std::size_t>(shard.size()));
    shard.read(0, shard.size(), tokens.data());
    return tokens;
}

Ids concat(std::vector<Ids> const& parts) {
    Ids all;
    for (Ids const& part : parts) all.insert(all.end(), part.begin(), part.end());
    return all;
}

std::string const first_document(100, 'a');  // byte tokenizer: 100 tokens, 10 to validation
std::string const second_document(30, 'b');  // 30 tokens, 3 to validation

// Options that tokenize `inputs` bytewise into dir/shards.
PrepareOptions byte_options(TempDir const& dir, std::vector<std::filesystem::path> inputs) {
    PrepareOptions options;
    options.inputs = std::move(inputs);
    options.out_dir = dir / "shards";
    options.tokenizer = "byte";
    return options;
}

TEST(Prepare, SplitsEveryDocumentAndEndsEachPartWithEndOfText) {
    TempDir dir;
    PrepareOptions options;
    options.inputs = {write_file(dir / "one.txt", first_document), write_file(dir / "two.txt", second_document)};
    options.out_dir = dir / "nested" / "shards";
    options.tokenizer = "byte";
    PrepareReport const report = prepare_shards(options);

    EXPECT_EQ(report.train_path, dir / "nested" / "shards" / "train.bin");
    EXPECT_EQ(report.val_path, dir / "nested" / "shards" / "val.bin");
    Ids const train = read_shard(report.train_path);
    Ids const val = read_shard(report.val_path);
    Ids const eot = {256};
    EXPECT_EQ(train, concat({Ids(90, 'a'), eot, Ids(27, 'b'), eot}));
    EXPECT_EQ(val, concat({Ids(10, 'a'), eot, Ids(3, 'b'), eot}));
    EXPECT_EQ(report.train_tokens, static_cast<std::int64_t>(train.size()));
    EXPECT_EQ(report.val_tokens, static_cast<std::int64_t>(val.size()));
    EXPECT_EQ(TokenShard::open(report.train_path).token_bits(), 16);
}

TEST(Prepare, OneTokenDocumentGoesToTraining) {
    TempDir dir;
    PrepareOptions const options = byte_options(dir, {write_file(dir / "tiny.txt", "x")});
    PrepareReport const report = prepare_shards(options);
    EXPECT_EQ(read_shard(report.train_path), (Ids{'x', 256}));
    EXPECT_EQ(read_shard(report.val_path), (Ids{256}));
}

TEST(Prepare, ReportsProgressUpToOne) {
    TempDir dir;
    PrepareOptions const options =
        byte_options(dir, {write_file(dir / "one.txt", first_document), write_file(dir / "two.txt", second_document)});
    std::vector<double> fractions;
    prepare_shards(options, [&](double fraction) { fractions.push_back(fraction); });
    ASSERT_EQ(fractions.size(), 2u);
    EXPECT_DOUBLE_EQ(fractions[0], 100.0 / 130.0);
    EXPECT_DOUBLE_EQ(fractions[1], 1.0);
    // A file whose byte-order mark is dropped still counts whole: the bar ended at 95%.
    fractions.clear();
    PrepareOptions marked = byte_options(dir, {write_file(dir / "marked.txt", "\xEF\xBB\xBF" + second_document)});
    marked.overwrite = true;
    prepare_shards(marked, [&](double fraction) { fractions.push_back(fraction); });
    EXPECT_EQ(fractions, (std::vector<double>{1.0}));
}

TEST(Prepare, Gpt2TokenCountsAddUp) {
    if (!std::filesystem::exists(default_gpt2_dir() / "encoder.json")) {
        GTEST_SKIP() << "GPT-2 tokenizer files not found in " << default_gpt2_dir().string()
                     << ": run scripts/fetch-tokenizer";
    }
    std::vector<std::string> const documents = {
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in "
        "want of a wife.",
        "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to "
        "unite some of the best blessings of existence.",
    };
    TempDir dir;
    PrepareOptions options;
    options.out_dir = dir / "shards";
    options.gpt2_dir = default_gpt2_dir();
    auto const tokenizer = make_tokenizer("gpt2", options.gpt2_dir);
    std::int64_t document_tokens = 0;
    for (std::size_t i = 0; i < documents.size(); ++i) {
        options.inputs.push_back(write_file(dir / ("doc" + std::to_string(i) + ".txt"), documents[i]));
        document_tokens += static_cast<std::int64_t>(tokenizer->encode(documents[i]).size());
    }
    PrepareReport const report = prepare_shards(options);

    EXPECT_EQ(report.train_tokens + report.val_tokens, document_tokens + 2 * std::ssize(documents));
    TokenShard const train = TokenShard::open(report.train_path);
    TokenShard const val = TokenShard::open(report.val_path);
    EXPECT_EQ(train.size(), report.train_tokens);
    EXPECT_EQ(val.size(), report.val_tokens);
    EXPECT_EQ(train.token_bits(), 16);
    EXPECT_EQ(train.max_token(), 50256);
    EXPECT_GT(report.train_tokens, 4 * report.val_tokens);
    for (auto const& path : {report.train_path, report.val_path}) {
        Ids const tokens = read_shard(path);
        EXPECT_EQ(std::count(tokens.begin(), tokens.end(), 50256), 2) << path;
        EXPECT_EQ(tokens.back(), 50256) << path;
    }
}

TEST(Prepare, TheTwoShardsRecordTheirTokenizerAndOneDataset) {
    TempDir dir;
    PrepareOptions options = byte_options(dir, {write_file(dir / "one.txt", first_document)});
    PrepareReport const first = prepare_shards(options);
    TokenShard const train = TokenShard::open(first.train_path), val = TokenShard::open(first.val_path);
    EXPECT_EQ(train.tokenizer(), (ShardTokenizer{"byte", 257}));
    EXPECT_EQ(val.tokenizer(), (ShardTokenizer{"byte", 257}));
    EXPECT_NE(train.dataset_id(), 0u);
    EXPECT_EQ(train.dataset_id(), val.dataset_id());
    // The id is the data's: the same text prepared again is the same dataset; another split of it is another.
    options.overwrite = true;
    prepare_shards(options);
    EXPECT_EQ(TokenShard::open(first.train_path).dataset_id(), train.dataset_id());
    options.val_fraction = 0.2;
    prepare_shards(options);
    EXPECT_NE(TokenShard::open(first.train_path).dataset_id(), train.dataset_id());
    options.val_fraction = 0.1;
    options.inputs = {write_file(dir / "two.txt", second_document)};
    prepare_shards(options);
    EXPECT_NE(TokenShard::open(first.train_path).dataset_id(), train.dataset_id());
}

// An earlier run's pair in the output folder is refused, both shards untouched, unless overwrite is given.
TEST(Prepare, AnEarlierPairIsReplacedOnlyWhenAsked) {
    TempDir dir;
    PrepareOptions options = byte_options(dir, {write_file(dir / "one.txt", first_document)});
    PrepareReport const first = prepare_shards(options);
    std::string const train_before = file_bytes(first.train_path), val_before = file_bytes(first.val_path);
    std::string const error = error_of([&] { prepare_shards(options); });
    EXPECT_NE(error.find("token shard " + first.train_path.string() + " already exists"), std::string::npos)
        << error;
    EXPECT_NE(error.find("pass --overwrite"), std::string::npos) << error;
    EXPECT_EQ(file_bytes(first.train_path), train_before);
    EXPECT_EQ(file_bytes(first.val_path), val_before);
    options.overwrite = true;
    options.inputs = {write_file(dir / "two.txt", second_document)};
    prepare_shards(options);
    EXPECT_NE(file_bytes(first.train_path), train_before);
}

// `axonn prepare --input dir/* --out dir` names the folder's earlier train.bin and val.bin: they are skipped,
// not tokenized as text.
TEST(Prepare, SkipsItsOwnOutputsAmongTheInputs) {
    TempDir dir;
    PrepareOptions options;
    options.inputs = {write_file(dir / "one.txt", first_document)};
    options.out_dir = dir.path();
    options.tokenizer = "byte";
    prepare_shards(options);
    Ids const train_before = read_shard(dir / "train.bin");
    options.inputs = {dir / "one.txt", dir / "train.bin", dir / "val.bin"};
    options.overwrite = true;
    PrepareReport const again = prepare_shards(options);
    EXPECT_EQ(again.skipped, (std::vector<std::filesystem::path>{dir / "train.bin", dir / "val.bin"}));
    EXPECT_EQ(read_shard(dir / "train.bin"), train_before);
}

TEST(Prepare, RefusesBinaryInputUnlessAllowed) {
    TempDir dir;
    // A broken two-byte sequence.
    PrepareOptions options = byte_options(dir, {write_file(dir / "bytes.dat", std::string("text\xC3(", 6))});
    try {
        prepare_shards(options);
        FAIL() << "invalid UTF-8 was tokenized";
    } catch (Error const& error) {
        EXPECT_NE(std::string(error.what()).find("is not UTF-8 text (byte 0xC3 at offset 4)"), std::string::npos)
            << error.what();
    }
    options.allow_binary = true;
    EXPECT_EQ(read_shard(prepare_shards(options).train_path).size(), 6u);  // 5 bytes of 6 and end-of-text
}

// A byte-order mark that starts a file is the file's encoding, not the document's text: the document trains as if
// the mark were not there, and a file of the mark alone is as empty as an empty file.
TEST(Prepare, DropsAByteOrderMarkThatStartsADocument) {
    TempDir dir;
    PrepareOptions options = byte_options(dir, {write_file(dir / "marked.txt", "\xEF\xBB\xBFxy")});
    PrepareReport const report = prepare_shards(options);
    EXPECT_EQ(read_shard(report.train_path), (Ids{'x', 256}));
    EXPECT_EQ(read_shard(report.val_path), (Ids{'y', 256}));
    options.inputs = {write_file(dir / "mark_only.txt", "\xEF\xBB\xBF")};
    options.overwrite = true;
    std::string const mark_only = error_of([&] { prepare_shards(options); });
    EXPECT_NE(mark_only.find("holds only a byte-order mark: remove it from the inputs"), std::string::npos) << mark_only;
}

struct BadOptions {
    std::string name;
    std::function<void(PrepareOptions&, TempDir const&)> spoil;  // applied to valid byte-tokenizer options
    std::string expected;                                        // a phrase the message must hold
};

class BadOptionsTest : public ::testing::TestWithParam<BadOptions> {};

TEST_P(BadOptionsTest, ThrowsOneLineError) {
    TempDir dir;
    PrepareOptions options = byte_options(dir, {write_file(dir / "one.txt", first_document)});
    GetParam().spoil(options, dir);
    try {
        prepare_shards(options);
        FAIL() << "prepare with " << GetParam().name << " did not throw";
    } catch (Error const& error) {
        std::string const message = error.what();
        EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "shards" / "train.bin"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadOptionsTest,
    ::testing::Values(
        BadOptions{"NoInputs", [](PrepareOptions& o, TempDir const&) { o.inputs.clear(); }, "no input"},
        BadOptions{"MissingInput",
                   [](PrepareOptions& o, TempDir const& dir) { o.inputs.push_back(dir / "absent.txt"); },
                   "absent.txt does not exist"},
        BadOptions{"EmptyInput",
                   [](PrepareOptions& o, TempDir const& dir) { o.inputs.push_back(write_file(dir / "empty.txt", "")); },
                   "empty.txt is empty"},
        BadOptions{"FolderInput", [](PrepareOptions& o, TempDir const& dir) { o.inputs.push_back(dir.path()); },
                   "is a folder, not a regular file"},
        BadOptions{"OnlyShardsAsInput",
                   [](PrepareOptions& o, TempDir const& dir) {
                       write_token_shard(dir / "old.bin", Ids{1, 2, 3}, 16);
                       o.inputs = {dir / "old.bin"};
                   },
                   "every input is a token shard"},
        BadOptions{"NoOutputFolder", [](PrepareOptions& o, TempDir const&) { o.out_dir.clear(); }, "no output"},
        BadOptions{"UnknownTokenizer", [](PrepareOptions& o, TempDir const&) { o.tokenizer = "words"; }, "'words'"},
        BadOptions{"ZeroValFraction", [](PrepareOptions& o, TempDir const&) { o.val_fraction = 0.0; }, "(0, 1)"},
        BadOptions{"WholeValFraction", [](PrepareOptions& o, TempDir const&) { o.val_fraction = 1.0; }, "(0, 1)"},
        BadOptions{"NegativeValFraction", [](PrepareOptions& o, TempDir const&) { o.val_fraction = -0.5; },
                   "(0, 1)"}),
    [](auto const& info) { return info.param.name; });

}  // namespace
}  // namespace axonn
