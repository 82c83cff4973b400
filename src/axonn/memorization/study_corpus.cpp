#include "axonn/memorization/study_corpus.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"

#include <algorithm>
#include <numeric>

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

std::vector<Canary> draw_canaries(MarkovChain const& chain, StudyCorpusSpec const& spec, std::uint64_t stream,
                                  int count, int repetitions) {
    std::vector<Canary> canaries;
    for (int i = 0; i < count; ++i) {
        Canary canary{std::vector<std::int32_t>(static_cast<std::size_t>(spec.prefix + spec.suffix)), repetitions};
        chain.sample(canary.tokens, spec.seed, stream + static_cast<std::uint64_t>(i));
        canaries.push_back(std::move(canary));
    }
    return canaries;
}

}  // namespace

StudyCorpus::StudyCorpus(StudyCorpusSpec const& spec)
    : spec_(spec), chain_(spec.vocab, spec.successors, spec.seed) {
    for (std::size_t b = 0; b < spec.buckets.size(); ++b) {
        std::vector<Canary> group = draw_canaries(chain_, spec, member_stream + (b << 20), spec.canaries_per_bucket,
                                                  spec.buckets[b]);
        members_.insert(members_.end(), group.begin(), group.end());
    }
    heldout_ = draw_canaries(chain_, spec, heldout_stream, spec.heldout, 0);
    finetune_ = draw_canaries(chain_, spec, finetune_stream, spec.finetune_canaries, 0);
}

int StudyCorpus::member_copies() const {
    int copies = 0;
    for (Canary const& canary : members_) copies += canary.repetitions;
    return copies;
}

std::vector<int> const& StudyCorpus::canary_slots(int slots) const {
    if (cached_slots_ == slots) return cached_assignment_;
    require(member_copies() <= slots, "the canaries' {} copies do not fit in {} training sequences: train longer or "
            "use fewer canaries", member_copies(), slots);
    std::vector<int> assignment(static_cast<std::size_t>(slots), -1);
    std::size_t next = 0;
    for (std::size_t c = 0; c < members_.size(); ++c) {
        for (int r = 0; r < members_[c].repetitions; ++r) assignment[next++] = static_cast<int>(c);
    }
    for (int i = slots - 1; i > 0; --i) {  // Fisher-Yates, seeded
        auto const j = static_cast<int>(philox4x32({spec_.seed, shuffle_stream}, i)[0] %
                                        static_cast<std::uint32_t>(i + 1));
        std::swap(assignment[i], assignment[j]);
    }
    cached_slots_ = slots;
    cached_assignment_ = std::move(assignment);
    return cached_assignment_;
}

void StudyCorpus::training_sequence(Layout const& layout, int slot, std::span<std::int32_t> tokens) const {
    auto const stream = background_stream + static_cast<std::uint64_t>(layout.first_background + slot);
    int const canary = layout.with_canaries ? canary_slots(layout.slots)[static_cast<std::size_t>(slot)] : -1;
    if (canary < 0) {
        chain_.sample(tokens, spec_.seed, stream);
        return;
    }
    std::vector<std::int32_t> const& text = members_[static_cast<std::size_t>(canary)].tokens;
    int const offset = layout.max_shift > 0
                           ? static_cast<int>(philox4x32({spec_.seed, shift_stream}, static_cast<std::uint64_t>(slot))[0] %
                                              static_cast<std::uint32_t>(layout.max_shift))
                           : 0;
    invariant(offset + static_cast<int>(text.size()) <= static_cast<int>(tokens.size()),
              "a canary of {} tokens at offset {} does not fit in a sequence of {}", text.size(), offset, tokens.size());
    chain_.sample(tokens.first(static_cast<std::size_t>(offset)), spec_.seed, stream);
    std::copy(text.begin(), text.end(), tokens.begin() + offset);
    std::size_t const after = static_cast<std::size_t>(offset) + text.size();
    chain_.sample(tokens.subspan(after), spec_.seed, stream + (1ULL << 32), text.back());
}

void StudyCorpus::validation_sequence(int i, std::span<std::int32_t> tokens) const {
    chain_.sample(tokens, spec_.seed, validation_stream + static_cast<std::uint64_t>(i));
}

}  // namespace axonn
