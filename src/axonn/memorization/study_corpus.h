// The memorization study's data, all drawn from one Markov chain (markov_corpus.h) and a seed:
//   - canaries: fixed chain samples of prefix + suffix tokens, a group of them per duplication bucket (each
//     canary of bucket r appears r times in training), plus held-out canaries that are never trained on (the
//     non-members of the membership attack, and the control level of extraction);
//   - background: a fresh chain sample for every other training sequence, never repeated;
//   - validation: fresh chain samples, whose loss a model that knows the chain brings down to its entropy.
// A training run is a list of slots, one sequence each: the canaries' copies sit in slots chosen by a seeded
// shuffle, the same for every loss, so a standard and a Goldfish run see the same data in the same order.
#pragma once

#include "axonn/memorization/markov_corpus.h"

#include <cstdint>
#include <span>
#include <vector>

namespace axonn {

struct StudyCorpusSpec {
    int vocab = 256;
    int successors = 16;
    int prefix = 32;
    int suffix = 32;
    std::vector<int> buckets = {1, 2, 4, 8, 16, 32};  // repetitions of each canary group
    int canaries_per_bucket = 8;
    int heldout = 32;
    int finetune_canaries = 64;  // a separate set, for the fine-tuning experiment
    std::uint64_t seed = 1;
};

struct Canary {
    std::vector<std::int32_t> tokens;  // prefix + suffix
    int repetitions;                   // 0: held out
};

class StudyCorpus {
public:
    explicit StudyCorpus(StudyCorpusSpec const& spec);

    StudyCorpusSpec const& spec() const { return spec_; }
    MarkovChain const& chain() const { return chain_; }
    std::vector<Canary> const& members() const { return members_; }
    std::vector<Canary> const& heldout() const { return heldout_; }
    std::vector<Canary> const& finetune() const { return finetune_; }
    // Copies of every member canary in training: Σ buckets × canaries per bucket.
    int member_copies() const;

    // The tokens of a training run's slot `slot` (seq + 1 tokens: inputs then the last target). The run has
    // `slots` slots in all; with canaries, those of member copies hold the canary at `offset(slot)` tokens in
    // (0 unless shifted, else 0 .. max_shift − 1), after background tokens and followed by the chain's continuation.
    struct Layout {
        int slots;
        int seq;
        bool with_canaries = true;
        int max_shift = 0;
        std::int64_t first_background = 0;  // the run's background samples start here: runs in turn never repeat one
    };
    void training_sequence(Layout const& layout, int slot, std::span<std::int32_t> tokens) const;
    // Validation sequence i (seq + 1 tokens), never trained on.
    void validation_sequence(int i, std::span<std::int32_t> tokens) const;

private:
    // For each slot of a run of `slots`, the member canary it holds, or -1.
    std::vector<int> const& canary_slots(int slots) const;

    StudyCorpusSpec spec_;
    MarkovChain chain_;
    std::vector<Canary> members_, heldout_, finetune_;
    mutable int cached_slots_ = -1;
    mutable std::vector<int> cached_assignment_;
};

}  // namespace axonn
