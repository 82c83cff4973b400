// The memorization metrics and the study's data (src/axonn/memorization/):
//   - ROUGE-L and the membership AUC on hand-computed cases;
//   - the Markov chain's entropy is the Zipf weights' (2.36 nats for 16 successors, the study's floor), and its
//     samples follow the chain: the empirical conditional entropy of 2^18 tokens is within 0.02 nats of it;
//   - the study corpus puts every canary copy in exactly one slot, the same slots for every loss, at offset 0
//     unless shifted;
//   - extraction scores on a model that has memorized nothing are at the control level, and a document whose
//     suffix is the model's own greedy continuation is an exact match (the metric can say yes);
//   - the real-text option: dictd folders are read entry by entry (a synthetic one, and Debian's dict-devil with
//     its 1,003 entries when scripts/fetch-corpus has fetched it), damaged ones are one-line errors, and the word
//     vocabulary encodes known words as one token and spells the rest in bytes, losslessly;
//   - the protocol's criteria, table-driven: results that meet them pass all seven, and each row breaks one thing
//     and must fail exactly the criteria it names;
//   - the smoke study (--quick): standard exact match at 32 repetitions above Goldfish's, held-out losses within
//     0.1 nats, every criterion of the protocol passed (as --check requires), and its output files.
#include "axonn/core/error.h"
#include "axonn/families/gpt2/gpt2_config.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/memorization/eval_documents.h"
#include "axonn/memorization/extraction.h"
#include "axonn/memorization/markov_corpus.h"
#include "axonn/memorization/real_text.h"
#include "axonn/memorization/study.h"
#include "axonn/memorization/study_corpus.h"
#include "axonn/memorization/study_report.h"
#include "axonn/model/generate.h"
#include "support/error_of.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <functional>
#include <fstream>
#include <map>

namespace axonn {
namespace {

TEST(ExtractionMetrics, RougeLIsTheF1OfTheLongestCommonSubsequence) {
    std::vector<std::int32_t> const reference = {1, 2, 3, 4, 5, 6};
    EXPECT_DOUBLE_EQ(rouge_l_f1(reference, reference), 1.0);
    EXPECT_DOUBLE_EQ(rouge_l_f1(std::vector<std::int32_t>{7, 8, 9}, reference), 0.0);
    // LCS of {1,3,9,5} and {1..6} is {1,3,5}: precision 3/4, recall 3/6, F1 = 2·(3/4)(1/2)/(5/4) = 0.6.
    EXPECT_NEAR(rouge_l_f1(std::vector<std::int32_t>{1, 3, 9, 5}, reference), 0.6, 1e-12);
    EXPECT_DOUBLE_EQ(rouge_l_f1(std::vector<std::int32_t>{}, reference), 0.0);
}

TEST(ExtractionMetrics, MembershipAucCountsPairsWithTiesAsHalf) {
    EXPECT_DOUBLE_EQ(membership_auc(std::vector<double>{1, 2}, std::vector<double>{3, 4}), 1.0);
    EXPECT_DOUBLE_EQ(membership_auc(std::vector<double>{3, 4}, std::vector<double>{1, 2}), 0.0);
    // Pairs (1,1) tie, (1,3) win, (2,1) loss, (2,3) win: (0.5 + 1 + 0 + 1) / 4.
    EXPECT_DOUBLE_EQ(membership_auc(std::vector<double>{1, 2}, std::vector<double>{1, 3}), 0.625);
    EXPECT_TRUE(std::isnan(membership_auc(std::vector<double>{}, std::vector<double>{1})));
}

TEST(MarkovCorpus, EntropyIsTheZipfWeightsAndSamplesFollowTheChain) {
    MarkovChain const chain(256, 16, 1);
    // −Σ p ln p and p_1 of p_i ∝ 1/i, i = 1..16, computed in Python's double precision.
    EXPECT_NEAR(chain.entropy_nats(), 2.358932519358829, 1e-12);
    EXPECT_NEAR(chain.max_probability(), 0.2957941917269395, 1e-12);
    std::vector<std::int32_t> tokens(std::size_t{1} << 18);
    chain.sample(tokens, 7, 0);
    std::map<std::pair<int, int>, double> pairs;
    std::map<int, double> from;
    for (std::size_t i = 1; i < tokens.size(); ++i) {
        pairs[{tokens[i - 1], tokens[i]}] += 1;
        from[tokens[i - 1]] += 1;
    }
    double entropy = 0;
    for (auto const& [pair, count] : pairs) entropy -= count / (tokens.size() - 1) * std::log(count / from[pair.first]);
    EXPECT_NEAR(entropy, chain.entropy_nats(), 0.02);
    for (auto const& [state, count] : from) {
        int successors = 0;
        for (auto const& [pair, c] : pairs) successors += pair.first == state;
        EXPECT_LE(successors, 16) << "state " << state;
    }
}

TEST(StudyCorpus, EveryCanaryCopyHasOneSlotTheSameForEveryRun) {
    StudyCorpusSpec spec;
    spec.buckets = {1, 4};
    spec.canaries_per_bucket = 3;
    StudyCorpus const corpus(spec, markov_text(spec));
    ASSERT_EQ(corpus.members().size(), 6u);
    EXPECT_EQ(corpus.member_copies(), 15);
    StudyCorpus::Layout const layout{40, 72, true, 0};
    std::map<std::vector<std::int32_t>, int> copies;
    std::vector<std::int32_t> window(73);
    for (int slot = 0; slot < layout.slots; ++slot) {
        corpus.training_sequence(layout, slot, window);
        std::vector<std::int32_t> const head(window.begin(), window.begin() + 64);
        for (Canary const& canary : corpus.members()) copies[canary.tokens] += head == canary.tokens;
        std::vector<std::int32_t> again(73);
        corpus.training_sequence(layout, slot, again);
        EXPECT_EQ(again, window) << "slot " << slot << " is not a function of the slot";
    }
    for (Canary const& canary : corpus.members()) EXPECT_EQ(copies[canary.tokens], canary.repetitions);
    // Shifted: each copy starts at an offset below max_shift.
    StudyCorpus::Layout const shifted{40, 72, true, 8};
    int found = 0;
    for (int slot = 0; slot < shifted.slots; ++slot) {
        corpus.training_sequence(shifted, slot, window);
        for (Canary const& canary : corpus.members()) {
            for (int offset = 0; offset < 8; ++offset) {
                found += std::equal(canary.tokens.begin(), canary.tokens.end(), window.begin() + offset);
            }
        }
    }
    EXPECT_EQ(found, 15);
    StudyCorpus::Layout const too_short{10, 72, true, 0};
    EXPECT_THROW(corpus.training_sequence(too_short, 0, window), Error);
}

TEST(Extraction, ScoresAnUntrainedModelAtTheControlLevelAndItsOwnContinuationAsExact) {
    GptConfig config = gpt_preset("gpt2-micro");
    config.vocab_size = 256;
    config.max_seq = 32;
    CpuBackend backend;
    ProcessGrid serial(MPI_COMM_SELF, GridShape{});
    Decoder model(config, backend, serial, 4, 32);
    model.init_weights(11);
    MarkovChain const chain(256, 16, 3);
    std::vector<std::vector<std::int32_t>> documents(6, std::vector<std::int32_t>(24));
    for (std::size_t d = 0; d < documents.size(); ++d) chain.sample(documents[d], 1, d);
    ExtractionSpec spec{8, 16, parse_goldfish("k=4,h=2")};
    std::vector<ExtractionScore> scores = score_extraction(model, documents, spec);
    ASSERT_EQ(scores.size(), documents.size());
    for (ExtractionScore const& s : scores) {
        EXPECT_FALSE(s.exact_match);
        EXPECT_LT(s.token_match, 0.5);
        EXPECT_EQ(s.kept_total + s.dropped_total, 16);
        EXPECT_NEAR(s.loss, std::log(256.0), 0.5);  // an untrained model is near uniform
    }
    // Replace document 2's suffix by what the model generates: now it "memorized" it.
    std::copy(scores[2].generated.begin(), scores[2].generated.end(), documents[2].begin() + 8);
    scores = score_extraction(model, documents, spec);
    EXPECT_TRUE(scores[2].exact_match);
    EXPECT_EQ(scores[2].matching_prefix, 16);
    EXPECT_DOUBLE_EQ(scores[2].rouge_l, 1.0);
    EXPECT_EQ(scores[2].kept_correct + scores[2].dropped_correct, 16) << "teacher forcing disagrees with greedy";
    // A window longer than the context is refused.
    ExtractionSpec const long_spec{20, 20, {}};
    std::vector<std::vector<std::int32_t>> long_documents(1, std::vector<std::int32_t>(40, 1));
    EXPECT_THROW(score_extraction(model, long_documents, long_spec), Error);
}

TEST(MemorizationEval, DocumentFilesAreCheckedLineByLine) {
    testing::TempDir const dir;
    auto const write = [&](std::string const& name, std::string const& text) {
        std::ofstream(dir.path() / name) << text;
        return dir.path() / name;
    };
    std::vector<EvalDocument> const documents =
        read_eval_documents(write("good.jsonl", "{\"tokens\": [1, 2, 3], \"repetitions\": 4}\n\n{\"tokens\": [5]}\n"),
                            nullptr, 10);
    ASSERT_EQ(documents.size(), 2u);
    EXPECT_EQ(documents[0].repetitions, 4);
    EXPECT_EQ(documents[1].repetitions, -1);
    struct Bad {
        std::string text;
        std::string expected;
    };
    for (Bad const& bad : {Bad{"", "holds no document"}, Bad{"{\"tokens\": [1]}\n{oops\n", "line 2: not valid JSON"},
                           Bad{"{\"tokens\": [1, 99]}\n", "token 99 is not an id"},
                           Bad{"{\"words\": 3}\n", "line 1: is not an object with \"tokens\""},
                           Bad{"{\"text\": \"hello\"}\n", "no tokenizer"},
                           Bad{"{\"text\": \"he\\u0000llo\"}\n", "\"text\" holds a NUL character"},
                           // The text was ignored.
                           Bad{"{\"tokens\": [1], \"text\": \"hello\"}\n", "has both \"tokens\" and \"text\""},
                           Bad{"{\"tokens\": [1], \"repetitions\": -2}\n",
                               "\"repetitions\" is -2, not a count from 0 to 1000000000"},
                           Bad{"{\"tokens\": [[[[[1]]]]]}\n", "nests deeper"}}) {
        try {
            read_eval_documents(write("bad.jsonl", bad.text), nullptr, 10);
            ADD_FAILURE() << "accepted: " << bad.text;
        } catch (Error const& e) {
            EXPECT_NE(std::string(e.what()).find(bad.expected), std::string::npos) << e.what();
        }
    }
}

// A gzip stream of `text`, as dictzip's files are (gzip-compatible).
std::string gzip(std::string const& text) {
    z_stream stream{};
    EXPECT_EQ(deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(text.size() + 1024, '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    stream.avail_in = static_cast<uInt>(text.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
    out.resize(stream.total_out);
    deflateEnd(&stream);
    return out;
}

TEST(RealText, DictdFoldersAreReadEntryByEntry) {
    testing::TempDir const dir;
    std::string const dictionary = "ALPHA, n.  The first.\nBETA, n.  The second, longer entry.\n";
    std::ofstream(dir.path() / "devil.dict.dz", std::ios::binary) << gzip(dictionary);
    // Offsets and lengths in dictd's base 64 (A=0 ... Z=25, a=26 ...): "ALPHA..." is 22 (W) bytes at 0, "BETA..."
    // 36 (k) at 22.
    std::ofstream(dir.path() / "devil.index") << "00databaseshort\tA\tB\nalpha\tA\tW\nbeta\tW\tk\n";
    std::vector<std::string> const entries = read_devils_dictionary(dir.path());
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0], "ALPHA, n.  The first.\n");
    EXPECT_EQ(entries[1], "BETA, n.  The second, longer entry.\n");
    std::ofstream(dir.path() / "devil.index") << "alpha\tA\tW\nbeta\tW\tz\n";
    EXPECT_NE(testing::error_of([&] { read_devils_dictionary(dir.path()); }).find("line 2 points past the end"),
              std::string::npos);
    std::ofstream(dir.path() / "devil.index") << "alpha A W\n";
    EXPECT_NE(testing::error_of([&] { read_devils_dictionary(dir.path()); }).find("is not \"headword TAB"),
              std::string::npos);
    std::ofstream(dir.path() / "devil.dict.dz", std::ios::binary) << "not gzip";
    EXPECT_NE(testing::error_of([&] { read_devils_dictionary(dir.path()); }).find("is corrupt"), std::string::npos);
    EXPECT_NE(testing::error_of([&] { read_devils_dictionary(dir.path() / "nowhere"); }).find("fetch-corpus"),
              std::string::npos);

    std::filesystem::path const fetched = std::filesystem::path(AXONN_SOURCE_DIR) / "data" / "corpus" / "devil";
    if (!std::filesystem::exists(fetched / "devil.index")) GTEST_SKIP() << "scripts/fetch-corpus has not run";
    std::vector<std::string> const devil = read_devils_dictionary(fetched);
    EXPECT_EQ(devil.size(), 1003u);
    EXPECT_EQ(devil.front().rfind("ABASEMENT, n.", 0), 0u);
    EXPECT_EQ(devil.back().rfind("ZOOLOGY, n.", 0), 0u);
}

TEST(RealText, WordVocabularyKeepsFrequentWordsAndSpellsTheRest) {
    WordVocabulary const vocabulary("the cat and the dog and the cat.", 3);
    EXPECT_EQ(vocabulary.size(), 3 + 256);
    // The pieces " and", " cat" and " the" come twice each ("the" and " dog" once; "." is a byte anyway): they are
    // the words, in that order (count, then text).
    std::vector<std::int32_t> const ids = vocabulary.encode(" the cat sat.");
    std::vector<std::int32_t> const expected = {2, 1, 3 + ' ', 3 + 's', 3 + 'a', 3 + 't', 3 + '.'};
    EXPECT_EQ(ids, expected);
    EXPECT_EQ(vocabulary.decode(ids), " the cat sat.");
    std::string const odd = "Zq\xc3\xa9 9!";
    EXPECT_EQ(vocabulary.decode(vocabulary.encode(odd)), odd);
}

TEST(RealText, DevilInAustenGivesDistinctCanariesAndFixedWindows) {
    std::filesystem::path const corpus = std::filesystem::path(AXONN_SOURCE_DIR) / "data" / "corpus";
    if (!std::filesystem::exists(corpus / "devil" / "devil.index") || !std::filesystem::exists(corpus / "janeaustenr")) {
        GTEST_SKIP() << "scripts/fetch-corpus has not run";
    }
    std::unique_ptr<StudyText> const text = devil_in_austen_text(corpus / "devil", corpus / "janeaustenr", 2000, 1);
    EXPECT_EQ(text->vocab(), 2256);
    std::vector<std::vector<std::int32_t>> const canaries = text->canaries({5, 6, 7, 8}, 64);
    ASSERT_EQ(canaries.size(), 4u);
    for (std::size_t i = 0; i < canaries.size(); ++i) {
        EXPECT_EQ(canaries[i].size(), 64u);
        for (std::size_t j = 0; j < i; ++j) EXPECT_NE(canaries[i], canaries[j]);
        for (std::int32_t id : canaries[i]) EXPECT_LT(id, 2256);
    }
    std::vector<std::int32_t> a(73), b(73), c(73);
    text->background(11, a, -1);
    text->background(11, b, -1);
    text->background(12, c, -1);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    text->validation(0, a);
    text->validation(1, b);
    EXPECT_NE(a, b);
    // Asking for more canaries than the dictionary's long entries is an error that says what to lower.
    std::vector<std::uint64_t> many(2000);
    EXPECT_NE(testing::error_of([&] { text->canaries(many, 64); }).find("lower --canaries"), std::string::npos);
}

// Experiment A's records for one model and loss: buckets 1x and 32x, and the held-out record.
std::vector<nlohmann::json> bucket_records(std::string const& model, std::string const& loss, double once,
                                           double often, double val_loss) {
    std::vector<nlohmann::json> records;
    for (auto [repetitions, exact] : {std::pair{1, once}, std::pair{32, often}, std::pair{0, 0.0}}) {
        records.push_back({{"model", model}, {"experiment", "size"}, {"loss", loss}, {"repetitions", repetitions},
                           {"exact_match", exact}, {"val_loss", val_loss}});
    }
    return records;
}

std::vector<bool> study_verdicts(std::vector<std::vector<nlohmann::json>> const& runs) {
    nlohmann::json all = nlohmann::json::array();
    for (auto const& run : runs) {
        for (nlohmann::json const& record : run) all.push_back(record);
    }
    std::vector<bool> passed;
    for (StudyCriterion const& c : study_criteria(all, study_val_loss_gap)) passed.push_back(c.passed);
    return passed;
}

// The protocol's criteria (0, 1a, 1b, 1c, 2a, 2b, 5) on two sizes that meet them, then broken one way per row:
// each row must fail exactly the criteria it names.
TEST(MemorizationStudy, EachBrokenResultFailsTheCriterionItBreaks) {
    auto const passing = [] {
        return std::vector<std::vector<nlohmann::json>>{
            bucket_records("S", "standard", 0.0, 0.25, 3.00), bucket_records("S", "goldfish", 0.0, 0.0, 3.02),
            bucket_records("M", "standard", 0.0, 0.875, 2.90), bucket_records("M", "goldfish", 0.0, 0.0, 2.93)};
    };
    EXPECT_EQ(study_verdicts(passing()), std::vector<bool>(7, true));
    struct Row {
        char const* what;
        std::function<void(std::vector<std::vector<nlohmann::json>>&)> breaks;
        std::vector<bool> expected;
    };
    std::vector<Row> const table = {
        {"a bucket whose canaries were all left out", [](auto& runs) { runs[0][1]["exact_match"] = nullptr; },
         {false, true, true, true, true, true, true}},
        {"a canary seen once reproduced", [](auto& runs) { runs[0][0]["exact_match"] = 0.125; },
         {true, false, true, true, true, true, true}},
        {"the largest below half at 32x", [](auto& runs) { runs[2][1]["exact_match"] = 0.375; },
         {true, true, false, true, true, true, true}},
        {"the smaller model memorizes more", [](auto& runs) { runs[0][1]["exact_match"] = 1.0; },
         {true, true, true, false, true, true, true}},
        {"Goldfish leaks one canary in eight", [](auto& runs) { runs[3][1]["exact_match"] = 0.125; },
         {true, true, true, true, false, true, true}},
        {"Goldfish as memorized as the standard loss",
         [](auto& runs) { runs[3][1]["exact_match"] = 0.875; },
         {true, true, true, true, false, false, true}},
        {"Goldfish's held-out loss 0.06 nats above",
         [](auto& runs) {
             for (nlohmann::json& r : runs[1]) r["val_loss"] = 3.06;
         },
         {true, true, true, true, true, true, false}},
    };
    for (Row const& row : table) {
        auto runs = passing();
        row.breaks(runs);
        EXPECT_EQ(study_verdicts(runs), row.expected) << row.what;
    }
}

// The protocol's smoke criteria on the --quick study (model M, buckets 1x and 32x): about 30 s.
TEST(MemorizationStudy, QuickStudyShowsGoldfishPreventingExtraction) {
    testing::TempDir const dir;
    StudyOptions options = StudyOptions::defaults(true);
    options.out = dir.path() / "study";
    nlohmann::json const results = run_study(options);
    double standard = -1, goldfish = -1, standard_val = 0, goldfish_val = 0;
    for (nlohmann::json const& r : results) {
        if (r["repetitions"] != 32 || r["experiment"] != "size") continue;  // not the control's record
        ASSERT_TRUE(r["loss"] == "standard" || r["loss"] == "goldfish") << r.dump();
        (r["loss"] == "standard" ? standard : goldfish) = r["exact_match"];
        (r["loss"] == "standard" ? standard_val : goldfish_val) = r["val_loss"];
    }
    ASSERT_GE(standard, 0) << "no standard record at 32x";
    ASSERT_GE(goldfish, 0) << "no Goldfish record at 32x";
    EXPECT_GT(standard, goldfish) << "standard " << standard << ", goldfish " << goldfish;
    EXPECT_LT(std::abs(standard_val - goldfish_val), 0.1);
    // The protocol's own criteria decide too, as `--check` would.
    for (StudyCriterion const& c : study_criteria(results, study_val_loss_gap)) {
        EXPECT_TRUE(c.passed) << c.name << ": " << c.measured;
    }
    for (char const* file : {"results.json", "results.md", "finetune.json", "exact_match.png"}) {
        EXPECT_TRUE(std::filesystem::exists(options.out / file)) << file;
    }
}

}  // namespace
}  // namespace axonn
