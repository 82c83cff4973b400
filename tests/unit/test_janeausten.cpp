// The Jane Austen corpus: all six novels decode from the Debian package with the right line counts, the GPT-2
// tokenizer round-trips the whole corpus exactly (and gives encoder.py's ids), and damaged files fail clearly.
#include "axonn/core/error.h"
#include "axonn/io/janeausten.h"
#include "axonn/io/tokenizer.h"

#include "support/temp_dir.h"
#include "support/files.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace axonn {
namespace {

using testing::corpus_root;
using testing::file_bytes;
using testing::write_file;

using axonn::testing::TempDir;


std::filesystem::path data_folder(std::filesystem::path const& root) {
    return root / "usr" / "lib" / "R" / "site-library" / "janeaustenr" / "data";
}

bool corpus_present() { return std::filesystem::exists(data_folder(corpus_root()) / "Rdata.rdb"); }

// Tests that read the real package skip when it has not been fetched.
class NeedsCorpus : public ::testing::Test {
protected:
    void SetUp() override {
        if (!corpus_present()) {
            GTEST_SKIP() << "Jane Austen corpus not found in " << corpus_root().string()
                         << ": run scripts/fetch-corpus";
        }
    }
};

// A fresh folder per test, removed afterwards.
std::int64_t line_count(std::string const& text) { return std::count(text.begin(), text.end(), '\n') + 1; }

// Reads the corpus once for the suite.
class JaneAusten : public NeedsCorpus {
protected:
    static void SetUpTestSuite() {
        if (corpus_present()) books_ = read_janeausten(corpus_root());
    }
    static void TearDownTestSuite() { books_.clear(); }
    static std::vector<Book> const& books() { return books_; }

private:
    static inline std::vector<Book> books_;
};

TEST_F(JaneAusten, HasTheSixNovelsWithTheirLineCounts) {
    struct Expected {
        char const* title;
        std::int64_t lines;
    };
    std::vector<Expected> const expected = {
        {"Emma", 16235},       {"Mansfield Park", 15349},      {"Northanger Abbey", 7856},
        {"Persuasion", 8328},  {"Pride and Prejudice", 13030}, {"Sense and Sensibility", 12624},
    };
    ASSERT_EQ(books().size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(books()[i].title, expected[i].title);
        EXPECT_EQ(line_count(books()[i].text), expected[i].lines) << expected[i].title;
    }
}

TEST_F(JaneAusten, BooksReadAsPrinted) {
    EXPECT_TRUE(books()[0].text.starts_with("EMMA\n\nBy Jane Austen\n")) << books()[0].text.substr(0, 40);
    EXPECT_TRUE(books()[0].text.ends_with("the perfect happiness of the union.\n\n\n\nFINIS"));
}

TEST_F(JaneAusten, TextJoinsTheBooksWithBlankLines) {
    std::string const text = janeausten_text(books());
    std::size_t expected_size = 0;
    for (Book const& book : books()) expected_size += book.text.size() + 2;
    EXPECT_EQ(text.size(), expected_size - 1);
    EXPECT_TRUE(text.starts_with(books()[0].text + "\n\n" + books()[1].text + "\n\n"));
    EXPECT_TRUE(text.ends_with("\n\n" + books().back().text + "\n"));
}

TEST_F(JaneAusten, Gpt2RoundTripsTheWholeCorpusWithEncoderPyIds) {
    if (!std::filesystem::exists(default_gpt2_dir() / "encoder.json")) {
        GTEST_SKIP() << "GPT-2 tokenizer files not found in " << default_gpt2_dir().string()
                     << ": run scripts/fetch-tokenizer";
    }
    auto const tokenizer = make_tokenizer("gpt2", default_gpt2_dir());
    std::string const text = janeausten_text(books());
    std::vector<std::int32_t> const ids = tokenizer->encode(text);
    EXPECT_EQ(tokenizer->decode(ids), text);
    // OpenAI's encoder.py gives 993,333 ids for this text, with this FNV-1a hash over them.
    std::uint64_t hash = 1469598103934665603ull;
    for (std::int32_t id : ids) hash = (hash ^ static_cast<std::uint64_t>(id)) * 1099511628211ull;
    EXPECT_EQ(ids.size(), 993333u);
    EXPECT_EQ(hash, 0x8bac249dbe140359ull);
}



// `bytes` compressed as one zlib stream, as the package compresses its index.
std::string zlib_compressed(std::string const& bytes) {
    uLongf size = compressBound(bytes.size());
    std::string out(size, '\0');
    EXPECT_EQ(compress(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<Bytef const*>(bytes.data()),
                       bytes.size()), Z_OK);
    out.resize(size);
    return out;
}

std::string big_endian(std::int32_t value) {
    auto const bits = static_cast<std::uint32_t>(value);
    return {static_cast<char>(bits >> 24), static_cast<char>(bits >> 16), static_cast<char>(bits >> 8),
            static_cast<char>(bits)};
}

// An R serialization of `depth` lists, each holding the next: a small file that recursion would follow until the
// stack overflows.
std::string nested_lists(int depth) {
    std::string bytes = "X\n" + big_endian(3) + big_endian(0x40300) + big_endian(0x30500) + big_endian(5) + "UTF-8";
    for (int i = 0; i < depth; ++i) bytes += big_endian(19) + big_endian(1);  // a list of one element
    return bytes + big_endian(254);                                              // NULL
}

struct DamagedPackage {
    std::string name;
    std::function<void(std::string& rdx, std::string& rdb)> damage;  // applied to copies of the real files
    std::string blamed_file;                                         // the file the message must name
    std::string expected;                                            // and a phrase it must hold
};

class DamagedPackageTest : public NeedsCorpus, public ::testing::WithParamInterface<DamagedPackage> {};

TEST_P(DamagedPackageTest, ThrowsOneLineNamingTheFile) {
    std::string rdx = file_bytes(data_folder(corpus_root()) / "Rdata.rdx");
    std::string rdb = file_bytes(data_folder(corpus_root()) / "Rdata.rdb");
    GetParam().damage(rdx, rdb);
    TempDir root;
    std::filesystem::create_directories(data_folder(root.path()));
    write_file(data_folder(root.path()) / "Rdata.rdx", rdx);
    write_file(data_folder(root.path()) / "Rdata.rdb", rdb);
    try {
        read_janeausten(root.path());
        FAIL() << "a package with " << GetParam().name << " did not throw";
    } catch (Error const& error) {
        std::string const message = error.what();
        EXPECT_NE(message.find((data_folder(root.path()) / GetParam().blamed_file).string()), std::string::npos)
            << message;
        EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DamagedPackageTest,
    ::testing::Values(
        DamagedPackage{"GarbageIndex", [](std::string& rdx, std::string&) { rdx = "not compressed at all"; },
                       "Rdata.rdx", "corrupt"},
        DamagedPackage{"TruncatedIndex", [](std::string& rdx, std::string&) { rdx.resize(rdx.size() / 2); },
                       "Rdata.rdx", "corrupt"},
        DamagedPackage{"TruncatedDatabase", [](std::string&, std::string& rdb) { rdb.resize(1000); }, "Rdata.rdb",
                       "corrupt"},
        DamagedPackage{"DeeplyNestedIndex",
                       [](std::string& rdx, std::string&) { rdx = zlib_compressed(nested_lists(100000)); },
                       "Rdata.rdx", "nested more than 64 deep"},
        DamagedPackage{"IndexThatInflatesWithoutEnd",
                       [](std::string& rdx, std::string&) { rdx = zlib_compressed(std::string(20 << 20, 'X')); },
                       "Rdata.rdx", "inflates past 16777216 bytes"},
        DamagedPackage{"RecordClaimingGigabytes",
                       [](std::string&, std::string& rdb) { rdb.replace(0, 4, "\xFF\xFF\xFF\xFF"); }, "Rdata.rdb",
                       "claims 4294967295 bytes"},
        DamagedPackage{"DamagedStream",
                       [](std::string&, std::string& rdb) {
                           for (std::size_t i = 100000; i < 100064; ++i) rdb[i] = static_cast<char>(~rdb[i]);
                       },
                       "Rdata.rdb", "corrupt"}),
    [](auto const& info) { return info.param.name; });

TEST(JaneAustenPackage, MissingPackageSaysHowToExtractIt) {
    TempDir root;
    try {
        read_janeausten(root.path() / "absent");
        FAIL() << "a missing package did not throw";
    } catch (Error const& error) {
        std::string const message = error.what();
        EXPECT_NE(message.find("Rdata.rdx"), std::string::npos) << message;
        EXPECT_NE(message.find("dpkg-deb -x"), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace axonn
