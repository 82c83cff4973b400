#include "axonn/memorization/extreme_corpus.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/io/janeausten.h"
#include "axonn/io/tokenizer.h"
#include "axonn/memorization/real_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <set>

namespace axonn {
namespace {

constexpr int min_document_words = 70;
constexpr std::uint64_t document_order_stream = 11ULL << 40;

int word_count(std::string_view text) {
    int words = 0;
    bool in_word = false;
    for (char c : text) {
        bool const space = std::isspace(static_cast<unsigned char>(c)) != 0;
        words += !space && !in_word;
        in_word = !space;
    }
    return words;
}

// Splits the encoded novels 95/5 and encodes the documents, all with `encode`.
template <typename Encode>
ExtremeTokens tokenize(ExtremeTextSource const& source, std::string tokenizer, Encode&& encode) {
    ExtremeTokens tokens;
    tokens.tokenizer = std::move(tokenizer);
    std::vector<std::int32_t> const austen = encode(source.austen);
    std::size_t const split = austen.size() / 20 * 19;
    tokens.train.assign(austen.begin(), austen.begin() + static_cast<std::ptrdiff_t>(split));
    tokens.validation.assign(austen.begin() + static_cast<std::ptrdiff_t>(split), austen.end());
    for (std::string const& text : source.documents) tokens.documents.push_back(encode(text));
    for (std::string const& text : source.unseen) tokens.unseen.push_back(encode(text));
    return tokens;
}

// Renumbers the ids in use to 0 ... n − 1, in the order of the original ids, and sets the vocabulary to n.
void compact_ids(ExtremeTokens& tokens, std::int32_t original_vocab) {
    std::vector<std::int32_t> compact(static_cast<std::size_t>(original_vocab), -1);
    auto const each_list = [&](auto&& visit) {
        visit(tokens.train);
        visit(tokens.validation);
        for (auto& document : tokens.documents) visit(document);
        for (auto& document : tokens.unseen) visit(document);
    };
    each_list([&](std::vector<std::int32_t>& ids) {
        for (std::int32_t id : ids) compact[static_cast<std::size_t>(id)] = 0;
    });
    std::int32_t used = 0;
    for (std::int32_t& id : compact) {
        if (id == 0) id = used++;
    }
    each_list([&](std::vector<std::int32_t>& ids) {
        for (std::int32_t& id : ids) id = compact[static_cast<std::size_t>(id)];
    });
    tokens.vocab = used;
}

}  // namespace

ExtremeTextSource read_extreme_text(std::filesystem::path const& devil_folder,
                                    std::filesystem::path const& austen_package, int documents, int unseen,
                                    std::uint64_t seed) {
    ExtremeTextSource source;
    source.austen = janeausten_text(read_janeausten(austen_package));
    // The index names some entries twice (under two headwords): each text once, or a document trained on could
    // also be an unseen one.
    std::vector<std::string> qualifying;
    std::set<std::string, std::less<>> seen;
    for (std::string& entry : read_devils_dictionary(devil_folder)) {
        if (word_count(entry) >= min_document_words && seen.insert(entry).second) qualifying.push_back(std::move(entry));
    }
    AXONN_REQUIRE(static_cast<int>(qualifying.size()) >= documents + unseen,
                  "the Devil's Dictionary has {} entries of {} "
                  "words or more, fewer than the {} documents and {} unseen ones asked for: lower --documents",
                  qualifying.size(), min_document_words, documents, unseen);
    std::vector<std::size_t> order(qualifying.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    seeded_shuffle(std::span(order), {seed, document_order_stream});
    for (int i = 0; i < documents + unseen; ++i) {
        (i < documents ? source.documents : source.unseen).push_back(qualifying[order[static_cast<std::size_t>(i)]]);
    }
    return source;
}

std::string ExtremeTokens::describe() const {
    return tokenizer == "words"
               ? fmt::format("a word vocabulary of {} ids (the novels' most frequent words, other words in bytes)", vocab)
               : fmt::format("Llama 3's tokenizer, its ids compacted to the {} the text uses", vocab);
}

ExtremeTokens word_tokens(ExtremeTextSource const& source, int words) {
    WordVocabulary const vocabulary(source.austen, words);
    ExtremeTokens tokens = tokenize(source, "words", [&](std::string_view text) { return vocabulary.encode(text); });
    tokens.vocab = vocabulary.size();
    return tokens;
}

ExtremeTokens llama3_tokens(ExtremeTextSource const& source, std::filesystem::path const& llama3_dir) {
    std::unique_ptr<Tokenizer> const llama3 = make_llama3_tokenizer(llama3_dir);
    ExtremeTokens tokens = tokenize(source, "llama3", [&](std::string_view text) { return llama3->encode(text); });
    compact_ids(tokens, llama3->vocab_size());
    return tokens;
}

}  // namespace axonn
