// `axonn prepare --format jsonl`: each record becomes its prompt part's tokens (mask 0), its response part's and
// end-of-text (mask 1), exactly at the boundary; templates write the documented text; the train/val split is by
// record and deterministic; every bad record is a one-line error naming the file, the line and the fix.
#include "axonn/core/error.h"
#include "axonn/io/prepare.h"
#include "axonn/io/prompt_records.h"
#include "axonn/io/token_shard.h"
#include "axonn/io/tokenizer.h"

#include "support/temp_dir.h"
#include "support/files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace axonn {
namespace {

using testing::write_file;

using axonn::testing::TempDir;

constexpr std::int32_t byte_eot = 256;


// A shard read back as records: the tokens and mask up to and including each end-of-text.
struct ShardRecord {
    std::vector<std::int32_t> tokens;
    std::vector<std::uint8_t> mask;
    bool operator==(ShardRecord const&) const = default;
};

std::vector<ShardRecord> read_records(std::filesystem::path const& path) {
    TokenShard const shard = TokenShard::open(path);
    EXPECT_TRUE(shard.has_loss_mask()) << path;
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(shard.size()));
    std::vector<std::uint8_t> mask(tokens.size());
    shard.read(0, shard.size(), tokens.data());
    shard.read_loss_mask(0, shard.size(), mask.data());
    std::vector<ShardRecord> records(1);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        records.back().tokens.push_back(tokens[i]);
        records.back().mask.push_back(mask[i]);
        if (tokens[i] == byte_eot) records.emplace_back();
    }
    EXPECT_TRUE(records.back().tokens.empty()) << path << " does not end with end-of-text";
    records.pop_back();
    return records;
}

// The record the byte tokenizer makes of a prompt part and a response part.
ShardRecord byte_record(std::string const& prompt_part, std::string const& response_part) {
    ShardRecord record;
    for (unsigned char c : prompt_part) record.tokens.push_back(c), record.mask.push_back(0);
    for (unsigned char c : response_part) record.tokens.push_back(c), record.mask.push_back(1);
    record.tokens.push_back(byte_eot);
    record.mask.push_back(1);
    return record;
}

PrepareOptions jsonl_options(TempDir const& dir, std::string const& records) {
    PrepareOptions options;
    options.inputs = {write_file(dir / "records.jsonl", records)};
    options.out_dir = dir / "shards";
    options.tokenizer = "byte";
    options.format = "jsonl";
    return options;
}

std::string const four_records = R"({"prompt": "Q1?", "response": "A one."}
{"prompt": "Q2?", "response": "A two.", "source": {"id": 2}}

{"prompt": "", "response": "no prompt"}
{"prompt": "Q4?", "response": ""}
)";

TEST(PrepareRecords, MasksThePromptAndCountsTheResponseAndItsEndOfText) {
    TempDir dir;
    PrepareOptions options = jsonl_options(dir, four_records);
    options.val_fraction = 0.25;
    PrepareReport const report = prepare_shards(options);
    std::vector<ShardRecord> const train = read_records(report.train_path), val = read_records(report.val_path);
    ASSERT_EQ(train.size(), 3u);
    ASSERT_EQ(val.size(), 1u);
    EXPECT_EQ(report.train_records, 3);
    EXPECT_EQ(report.val_records, 1);
    // Every record lies in one shard, whole, in the file's order.
    std::vector<ShardRecord> const expected = {byte_record("Q1?", "A one."), byte_record("Q2?", "A two."),
                                               byte_record("", "no prompt"), byte_record("Q4?", "")};
    std::vector<ShardRecord> remaining = expected;
    remaining.erase(std::find(remaining.begin(), remaining.end(), val[0]));
    EXPECT_EQ(train, remaining);
    std::int64_t loss_tokens = 0;
    for (ShardRecord const& record : expected) loss_tokens += std::count(record.mask.begin(), record.mask.end(), 1);
    EXPECT_EQ(report.train_loss_tokens + report.val_loss_tokens, loss_tokens);
    EXPECT_EQ(TokenShard::open(report.train_path).loss_tokens(), report.train_loss_tokens);
}

TEST(PrepareRecords, TheSplitIsTheSameEveryRunAndTakesTheValidationFraction) {
    std::string records;
    for (int i = 0; i < 40; ++i) records += R"({"prompt": "p)" + std::to_string(i) + R"(", "response": "r"})" "\n";
    TempDir dir;
    PrepareOptions options = jsonl_options(dir, records);
    options.val_fraction = 0.1;
    PrepareReport const first = prepare_shards(options);
    std::vector<ShardRecord> const val = read_records(first.val_path);
    EXPECT_EQ(val.size(), 4u);
    options.overwrite = true;
    prepare_shards(options);
    EXPECT_EQ(read_records(first.val_path), val);
}

TEST(PrepareRecords, ReadsTheNamedFields) {
    TempDir dir;
    PrepareOptions options =
        jsonl_options(dir, "{\"question\": \"Why?\", \"answer\": \"So.\", \"prompt\": 3}\n"
                           "{\"question\": \"How?\", \"answer\": \"Thus.\"}\n");
    options.fields = {"question", "answer"};
    PrepareReport const report = prepare_shards(options);
    std::vector<ShardRecord> all = read_records(report.train_path);
    for (ShardRecord const& record : read_records(report.val_path)) all.push_back(record);
    std::sort(all.begin(), all.end(), [](auto const& a, auto const& b) { return a.tokens < b.tokens; });
    EXPECT_EQ(all, (std::vector<ShardRecord>{byte_record("How?", "Thus."), byte_record("Why?", "So.")}));
}

TEST(PrepareRecords, TemplatesWriteTheirFormats) {
    PromptRecord const record{"Name a colour.", "Blue."};
    TemplatedRecord const plain = apply_template(PromptTemplate::plain, record);
    EXPECT_EQ(plain.prompt_part, "Name a colour.");
    EXPECT_EQ(plain.response_part, "Blue.");
    TemplatedRecord const alpaca = apply_template(parse_prompt_template("alpaca"), record);
    EXPECT_EQ(alpaca.prompt_part,
              "Below is an instruction that describes a task. Write a response that appropriately completes the "
              "request.\n\n### Instruction:\nName a colour.\n\n### Response:\n");
    EXPECT_EQ(alpaca.response_part, "Blue.");
    TemplatedRecord const llama3 = apply_template(parse_prompt_template("llama3"), record);
    EXPECT_EQ(llama3.prompt_part,
              "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nName a colour.<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(llama3.response_part, "Blue.<|eot_id|>");
    EXPECT_THROW(parse_prompt_template("chatml"), UsageError);
}

TEST(PrepareRecords, TheGpt2BoundaryIsWhereTheResponseStarts) {
    if (!std::filesystem::exists(default_gpt2_dir() / "encoder.json")) {
        GTEST_SKIP() << "GPT-2 tokenizer files not found in " << default_gpt2_dir().string()
                     << ": run scripts/fetch-tokenizer";
    }
    auto const tokenizer = make_tokenizer("gpt2", default_gpt2_dir());
    // Tokenized together, "Answer:" and "yes" would not split where the response starts; apart, they do.
    TemplatedRecord const record{"Question: is it? Answer:", "yes"};
    MaskedTokens const masked = tokenize_record(*tokenizer, record);
    std::vector<std::int32_t> const prompt = tokenizer->encode(record.prompt_part);
    std::vector<std::int32_t> const response = tokenizer->encode(record.response_part);
    ASSERT_EQ(masked.tokens.size(), prompt.size() + response.size() + 1);
    EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), masked.tokens.begin()));
    EXPECT_TRUE(std::equal(response.begin(), response.end(), masked.tokens.begin() + std::ssize(prompt)));
    EXPECT_EQ(masked.tokens.back(), tokenizer->eot_id());
    for (std::size_t i = 0; i < masked.loss_mask.size(); ++i) {
        EXPECT_EQ(masked.loss_mask[i], i < prompt.size() ? 0 : 1) << "token " << i;
    }
}

// Under the Llama 3 tokenizer, the llama3 template's special-token strings are one id each: the prompt part is
// <|begin_of_text|> <|start_header_id|> user <|end_header_id|> \n\n {prompt} <|eot_id|> <|start_header_id|>
// assistant <|end_header_id|> \n\n, the response part {response} <|eot_id|>, then <|end_of_text|>.
TEST(PrepareRecords, TheLlama3TemplateGivesLlama3sSpecialIds) {
    if (!std::filesystem::exists(default_llama3_dir() / "tokenizer.json")) {
        GTEST_SKIP() << "Llama 3 tokenizer not found in " << default_llama3_dir().string()
                     << ": run scripts/fetch-tokenizer";
    }
    auto const tokenizer = make_tokenizer("llama3", {});
    constexpr std::int32_t begin_of_text = 128000, end_of_text = 128001, start_header = 128006, end_header = 128007,
                           eot_id = 128009;
    MaskedTokens const masked = tokenize_record(
        *tokenizer, apply_template(PromptTemplate::llama3, PromptRecord{"Name a colour.", "Blue."}));
    std::vector<std::int32_t> const prompt = tokenizer->encode("Name a colour."), response = tokenizer->encode("Blue.");
    std::vector<std::int32_t> expected = {begin_of_text, start_header};
    auto const append = [&expected](std::vector<std::int32_t> const& ids) {
        expected.insert(expected.end(), ids.begin(), ids.end());
    };
    append(tokenizer->encode("user"));
    expected.push_back(end_header);
    append(tokenizer->encode("\n\n"));
    append(prompt);
    expected.insert(expected.end(), {eot_id, start_header});
    append(tokenizer->encode("assistant"));
    expected.push_back(end_header);
    append(tokenizer->encode("\n\n"));
    std::size_t const prompt_part = expected.size();
    append(response);
    expected.insert(expected.end(), {eot_id, end_of_text});
    EXPECT_EQ(masked.tokens, expected);
    for (std::size_t i = 0; i < masked.loss_mask.size(); ++i) {
        EXPECT_EQ(masked.loss_mask[i], i < prompt_part ? 0 : 1) << "token " << i;
    }
}

struct BadRecords {
    std::string name;
    std::string contents;  // of records.jsonl
    std::string expected;  // a phrase the message must hold besides the file name
};

class BadRecordsTest : public ::testing::TestWithParam<BadRecords> {};

TEST_P(BadRecordsTest, ThrowsOneLineNamingTheFileAndLine) {
    TempDir dir;
    PrepareOptions const options = jsonl_options(dir, GetParam().contents);
    try {
        prepare_shards(options);
        FAIL() << "records with " << GetParam().name << " were accepted";
    } catch (Error const& error) {
        std::string const message = error.what();
        EXPECT_NE(message.find((dir / "records.jsonl").string()), std::string::npos) << message;
        EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "shards" / "train.bin"));
}

std::string const good_line = R"({"prompt": "a", "response": "b"})" "\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, BadRecordsTest,
    ::testing::Values(
        BadRecords{"NotJson", good_line + "{\"prompt\": \"a\",\n", "records.jsonl line 2: not valid JSON"},
        BadRecords{"NotAnObject", good_line + good_line + "[\"a\", \"b\"]\n",
                   "line 3: the line is an array, not an object"},
        BadRecords{"MissingResponse", good_line + "{\"prompt\": \"a\"}\n",
                   "line 2: the record has no \"response\" field: add it, or name the field that holds it with "
                   "--response-field"},
        BadRecords{"MissingPrompt", "{\"question\": \"a\", \"response\": \"b\"}\n" + good_line,
                   "line 1: the record has no \"prompt\" field"},
        BadRecords{"NumberResponse", good_line + "{\"prompt\": \"a\", \"response\": 42}\n",
                   "line 2: the record's \"response\" is a number, not a string"},
        BadRecords{"TooDeep", good_line + "{\"prompt\": \"a\", \"response\": \"b\", \"x\": [[[[[[[[[1]]]]]]]]]}\n",
                   "line 2: the JSON nests deeper than 8 levels"},
        BadRecords{"TooLong", good_line + "{\"prompt\": \"" + std::string(16 << 20, 'a') + "\"}\n",
                   "line 2: the line has 16777230 bytes, more than the 16777216 a line may hold"},
        // A NUL written as \u0000 is refused as a raw NUL byte is (an empty response is a record: it teaches the end).
        BadRecords{"EscapedNul", good_line + "{\"prompt\": \"a\\u0000b\", \"response\": \"c\"}\n",
                   "line 2: the record's \"prompt\" holds a NUL character (\\u0000), which no text holds"},
        BadRecords{"NoRecord", "\n  \n\n", "holds no record"},
        BadRecords{"Empty", "", "is empty"},
        BadRecords{"OneRecord", good_line, "holds 1 record: a train/val split needs at least 2"}),
    [](auto const& info) { return info.param.name; });

TEST(PrepareRecords, RefusesAnUnknownFormatOrTemplateAndOneFieldForBoth) {
    TempDir dir;
    PrepareOptions options = jsonl_options(dir, good_line + good_line);
    options.format = "csv";
    EXPECT_THROW(prepare_shards(options), UsageError);
    options = jsonl_options(dir, good_line + good_line);
    options.prompt_template = "chatml";
    EXPECT_THROW(prepare_shards(options), UsageError);
    options = jsonl_options(dir, good_line + good_line);
    options.fields = {"text", "text"};
    EXPECT_THROW(prepare_shards(options), UsageError);
}

}  // namespace
}  // namespace axonn
