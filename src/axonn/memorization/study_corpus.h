// The memorization study's data, from a StudyText: by default one Markov chain (markov_corpus.h) and a seed, or real
// text (Devil's Dictionary canaries in Jane Austen, real_text.h):
//   - canaries: fixed passages of prefix + suffix tokens, a group of them per duplication bucket (each canary of
//     bucket r appears r times in training), plus held-out canaries that are never trained on (the non-members of
//     the membership attack, and the control level of extraction), and a separate set for fine-tuning;
//   - background: a fresh sample for every other training sequence (never repeated for the chain);
//   - validation: samples never trained on (for the chain, their loss has the chain's entropy as its floor).
// A training run is a list of slots, one sequence each: the canaries' copies sit in slots chosen by a seeded
// shuffle, the same for every loss, so a standard and a Goldfish run see the same data in the same order.
#pragma once

#include "axonn/memorization/markov_corpus.h"
#include "axonn/memorization/real_text.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
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

// Where a study's tokens come from.
class StudyText {
public:
    virtual ~StudyText() = default;
    virtual int vocab() const = 0;
    // The background sample drawn from random stream `stream` into `tokens`, following token `previous` where the
    // source can (-1: anywhere); a pure function of its arguments.
    virtual void background(std::uint64_t stream, std::span<std::int32_t> tokens, std::int32_t previous) const = 0;
    // Validation sample `index`, never trained on.
    virtual void validation(int index, std::span<std::int32_t> tokens) const = 0;
    // One distinct canary of `length` tokens per stream (an axonn::Error when the source has too few).
    virtual std::vector<std::vector<std::int32_t>> canaries(std::vector<std::uint64_t> const& streams,
                                                           int length) const = 0;
    virtual std::string describe() const = 0;  // what the text is, with the floor of its loss where known
};

// The synthetic corpus: a chain of spec.vocab states and spec.successors successors, from spec.seed.
std::unique_ptr<StudyText> markov_text(StudyCorpusSpec const& spec);
// The real-text corpus: Devil's Dictionary entries (folder with devil.index, devil.dict.dz) as canaries, Jane
// Austen's novels (the r-cran-janeaustenr package folder) as background, the last 5% of them for validation,
// tokenized by a WordVocabulary of the novels' `words` most frequent words.
std::unique_ptr<StudyText> devil_in_austen_text(std::filesystem::path const& devil_folder,
                                                std::filesystem::path const& austen_package, int words,
                                                std::uint64_t seed);

struct Canary {
    std::vector<std::int32_t> tokens;  // prefix + suffix
    int repetitions;                   // 0: held out
};

class StudyCorpus {
public:
    StudyCorpus(StudyCorpusSpec const& spec, std::shared_ptr<StudyText const> text);

    StudyCorpusSpec const& spec() const { return spec_; }
    StudyText const& text() const { return *text_; }
    std::vector<Canary> const& members() const { return members_; }
    std::vector<Canary> const& heldout() const { return heldout_; }
    std::vector<Canary> const& finetune() const { return finetune_; }
    // Copies of every member canary in training: Σ buckets × canaries per bucket.
    int member_copies() const;

    // The tokens of a training run's slot `slot` (seq + 1 tokens: inputs then the last target). The run has
    // `slots` slots in all; with canaries, those of member copies hold the canary at `offset(slot)` tokens in
    // (0 unless shifted, else 0 .. max_shift − 1), after background tokens and followed by background that continues
    // it.
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
    std::shared_ptr<StudyText const> text_;
    std::vector<Canary> members_, heldout_, finetune_;
    mutable int cached_slots_ = -1;
    mutable std::vector<int> cached_assignment_;
};

}  // namespace axonn
