#include "axonn/memorization/study_corpus.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/io/janeausten.h"

#include <fmt/format.h>

#include <algorithm>

namespace axonn {
namespace {

// Streams of the counter-based RNG, one per use, so that no two draw the same numbers.
enum Stream : std::uint64_t {
    member_stream = 1ULL << 40,
    heldout_stream = 2ULL << 40,
    finetune_stream = 3ULL << 40,
    background_stream = 4ULL << 40,
    validation_stream = 5ULL << 40,
    shuffle_stream = 6ULL << 40,
    shift_stream = 7ULL << 40,
};

class MarkovText : public StudyText {
public:
    explicit MarkovText(StudyCorpusSpec const& spec)
        : chain_(spec.vocab, spec.successors, spec.seed), seed_(spec.seed) {}

    int vocab() const override { return chain_.vocab(); }
    void background(std::uint64_t stream, std::span<std::int32_t> tokens, std::int32_t previous) const override {
        chain_.sample(tokens, seed_, stream, previous);
    }
    void validation(int index, std::span<std::int32_t> tokens) const override {
        chain_.sample(tokens, seed_, validation_stream + static_cast<std::uint64_t>(index));
    }
    std::vector<std::vector<std::int32_t>> canaries(std::vector<std::uint64_t> const& streams,
                                                   int length) const override {
        std::vector<std::vector<std::int32_t>> out;
        for (std::uint64_t stream : streams) {
            out.emplace_back(static_cast<std::size_t>(length));
            chain_.sample(out.back(), seed_, stream);
        }
        return out;
    }
    std::string describe() const override {
        return fmt::format("Synthetic Markov chain over {} tokens (entropy {:.3f} nats/token: the floor of the "
                           "validation loss)", chain_.vocab(), chain_.entropy_nats());
    }

private:
    MarkovChain chain_;
    std::uint64_t seed_;
};

class DevilInAustenText : public StudyText {
public:
    DevilInAustenText(std::filesystem::path const& devil_folder, std::filesystem::path const& austen_package,
                      int words, std::uint64_t seed)
        : austen_(janeausten_text(read_janeausten(austen_package))), vocabulary_(austen_, words), seed_(seed) {
        std::vector<std::int32_t> const tokens = vocabulary_.encode(austen_);
        std::size_t const split = tokens.size() / 20 * 19;  // the last 5% validate
        train_.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(split));
        validation_.assign(tokens.begin() + static_cast<std::ptrdiff_t>(split), tokens.end());
        for (std::string const& entry : read_devils_dictionary(devil_folder)) {
            entries_.push_back(vocabulary_.encode(entry));
        }
    }

    int vocab() const override { return vocabulary_.size(); }
    // A window of the training part at an offset drawn from the stream: a different passage for every stream.
    void background(std::uint64_t stream, std::span<std::int32_t> tokens, std::int32_t) const override {
        std::uint64_t const room = train_.size() - tokens.size();
        std::uint64_t const start = philox4x32({seed_, stream}, 0)[0] % room;
        std::copy_n(train_.begin() + static_cast<std::ptrdiff_t>(start), tokens.size(), tokens.begin());
    }
    void validation(int index, std::span<std::int32_t> tokens) const override {
        std::size_t const start = static_cast<std::size_t>(index) * tokens.size() % (validation_.size() - tokens.size());
        std::copy_n(validation_.begin() + static_cast<std::ptrdiff_t>(start), tokens.size(), tokens.begin());
    }
    // The entries long enough, in an order drawn from the seed: the i-th canary asked for is the i-th of them.
    std::vector<std::vector<std::int32_t>> canaries(std::vector<std::uint64_t> const& streams,
                                                   int length) const override {
        std::vector<std::size_t> long_enough;
        for (std::size_t e = 0; e < entries_.size(); ++e) {
            if (static_cast<int>(entries_[e].size()) >= length) long_enough.push_back(e);
        }
        AXONN_REQUIRE(long_enough.size() >= streams.size(),
                      "the Devil's Dictionary has {} entries of {} tokens or more, "
                      "fewer than the {} canaries asked for: lower --canaries",
                      long_enough.size(), length, streams.size());
        seeded_shuffle(std::span(long_enough), {seed_, shuffle_stream + 1});
        std::vector<std::vector<std::int32_t>> out;
        for (std::size_t i = 0; i < streams.size(); ++i) {
            auto const& entry = entries_[long_enough[i]];
            out.emplace_back(entry.begin(), entry.begin() + length);
        }
        return out;
    }
    std::string describe() const override {
        return fmt::format("Real text: Devil's Dictionary entries as canaries in Jane Austen's novels ({} training "
                           "and {} validation tokens of a {}-token word vocabulary with byte fallback)",
                           train_.size(), validation_.size(), vocabulary_.size());
    }

private:
    std::string austen_;
    WordVocabulary vocabulary_;
    std::uint64_t seed_;
    std::vector<std::int32_t> train_, validation_;
    std::vector<std::vector<std::int32_t>> entries_;
};

}  // namespace

std::unique_ptr<StudyText> markov_text(StudyCorpusSpec const& spec) { return std::make_unique<MarkovText>(spec); }

std::unique_ptr<StudyText> devil_in_austen_text(std::filesystem::path const& devil_folder,
                                                std::filesystem::path const& austen_package, int words,
                                                std::uint64_t seed) {
    return std::make_unique<DevilInAustenText>(devil_folder, austen_package, words, seed);
}

StudyCorpus::StudyCorpus(StudyCorpusSpec const& spec, std::shared_ptr<StudyText const> text)
    : spec_(spec), text_(std::move(text)) {
    // Every canary comes from its own stream; the source turns the streams into distinct passages in one call.
    std::vector<std::uint64_t> streams;
    std::vector<Canary> all;
    auto const add = [&](std::uint64_t stream, int count, int repetitions) {
        for (int i = 0; i < count; ++i) {
            all.push_back({{}, repetitions});
            streams.push_back(stream + static_cast<std::uint64_t>(i));
        }
    };
    for (std::size_t b = 0; b < spec.buckets.size(); ++b) {
        add(member_stream + (b << 20), spec.canaries_per_bucket, spec.buckets[b]);
    }
    add(heldout_stream, spec.heldout, 0);
    add(finetune_stream, spec.finetune_canaries, 0);
    std::vector<std::vector<std::int32_t>> tokens = text_->canaries(streams, spec.prefix + spec.suffix);
    for (std::size_t i = 0; i < all.size(); ++i) all[i].tokens = std::move(tokens[i]);
    std::size_t const members = all.size() - static_cast<std::size_t>(spec.heldout + spec.finetune_canaries);
    members_.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(members));
    heldout_.assign(all.begin() + static_cast<std::ptrdiff_t>(members),
                    all.begin() + static_cast<std::ptrdiff_t>(members + spec.heldout));
    finetune_.assign(all.begin() + static_cast<std::ptrdiff_t>(members + spec.heldout), all.end());
}

int StudyCorpus::member_copies() const {
    int copies = 0;
    for (Canary const& canary : members_) copies += canary.repetitions;
    return copies;
}

std::vector<int> const& StudyCorpus::canary_slots(int slots) const {
    if (cached_slots_ == slots) return cached_assignment_;
    AXONN_REQUIRE(member_copies() <= slots,
                  "the canaries' {} copies do not fit in {} training sequences: train longer or "
                  "use fewer canaries",
                  member_copies(), slots);
    std::vector<int> assignment(static_cast<std::size_t>(slots), -1);
    std::size_t next = 0;
    for (std::size_t c = 0; c < members_.size(); ++c) {
        for (int r = 0; r < members_[c].repetitions; ++r) assignment[next++] = static_cast<int>(c);
    }
    seeded_shuffle(std::span(assignment), {spec_.seed, shuffle_stream});
    cached_slots_ = slots;
    cached_assignment_ = std::move(assignment);
    return cached_assignment_;
}

void StudyCorpus::training_sequence(Layout const& layout, int slot, std::span<std::int32_t> tokens) const {
    auto const stream = background_stream + static_cast<std::uint64_t>(layout.first_background + slot);
    int const canary = layout.with_canaries ? canary_slots(layout.slots)[static_cast<std::size_t>(slot)] : -1;
    if (canary < 0) {
        text_->background(stream, tokens, -1);
        return;
    }
    std::vector<std::int32_t> const& text = members_[static_cast<std::size_t>(canary)].tokens;
    int const offset = layout.max_shift > 0
                           ? static_cast<int>(philox4x32({spec_.seed, shift_stream}, static_cast<std::uint64_t>(slot))[0] %
                                              static_cast<std::uint32_t>(layout.max_shift))
                           : 0;
    AXONN_INVARIANT(offset + static_cast<int>(text.size()) <= static_cast<int>(tokens.size()),
                    "a canary of {} tokens at offset {} does not fit in a sequence of {}", text.size(), offset,
                    tokens.size());
    text_->background(stream, tokens.first(static_cast<std::size_t>(offset)), -1);
    std::copy(text.begin(), text.end(), tokens.begin() + offset);
    std::size_t const after = static_cast<std::size_t>(offset) + text.size();
    text_->background(stream + (1ULL << 32), tokens.subspan(after), text.back());
}

void StudyCorpus::validation_sequence(int i, std::span<std::int32_t> tokens) const { text_->validation(i, tokens); }

}  // namespace axonn
