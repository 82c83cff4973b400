#include "axonn/memorization/extraction.h"

#include "axonn/core/error.h"
#include "axonn/model/generate.h"
#include "axonn/model/kv_cache.h"
#include "axonn/parallel/batch_sum.h"

#include <algorithm>
#include <cmath>

namespace axonn {
namespace {

// Which rows of the document list each replica runs: chunks of replicas × the model's rows, replica r taking
// rows [r·rows, (r+1)·rows) of each chunk; rows past the end repeat document 0 and are not reported.
struct RowPlan {
    int rows;      // per replica and chunk: the model's batch
    int replicas;  // data × z
    int replica;   // this rank's
    int documents;

    int chunks() const { return (documents + rows * replicas - 1) / (rows * replicas); }
    int document(int chunk, int row) const {
        int const index = (chunk * replicas + replica) * rows + row;
        return index < documents ? index : -1;
    }
};

// The fields each rank reports per document; summed over z and data, every rank holds every document's.
constexpr int result_fields = 6;  // loss, kept_correct, kept_total, dropped_correct, dropped_total, reported

// One teacher-forced pass over the chunk's windows: inputs window[0, W−1), targets window[1, W).
void teacher_forced(Decoder& model, RowPlan const& plan, int chunk,
                    std::span<std::vector<std::int32_t> const> documents, ExtractionSpec const& spec,
                    std::vector<double>& fields) {
    int const W = spec.prefix + spec.suffix, T = W - 1, B = plan.rows;
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(B) * T), targets(tokens.size());
    for (int b = 0; b < B; ++b) {
        int const d = std::max(plan.document(chunk, b), 0);
        std::copy_n(documents[d].begin(), T, tokens.begin() + b * T);
        std::copy_n(documents[d].begin() + 1, T, targets.begin() + b * T);
    }
    model.forward(Batch{B, T, tokens.data(), targets.data(), nullptr});
    std::vector<std::int32_t> predicted(tokens.size());
    argmax_tokens(model, B, T, 0, predicted.data());
    std::vector<float> keep(tokens.size());
    goldfish_mask(spec.mask, targets, T, 0, keep);
    for (int b = 0; b < B; ++b) {
        int const d = plan.document(chunk, b);
        if (d < 0) continue;
        double* out = fields.data() + static_cast<std::size_t>(d) * result_fields;
        double loss = 0;
        for (int t = 0; t < T; ++t) loss += model.token_losses()[b * T + t];
        out[0] = loss / T;
        for (int t = spec.prefix - 1; t < T; ++t) {  // the targets that are suffix tokens
            std::size_t const i = static_cast<std::size_t>(b) * T + t;
            bool const correct = predicted[i] == targets[i];
            if (keep[i] != 0.0f) {
                out[1] += correct;
                out[2] += 1;
            } else {
                out[3] += correct;
                out[4] += 1;
            }
        }
        out[5] = 1;
    }
}

// Greedy decoding of the chunk's suffixes from their prefixes: one forward over the prefixes fills a cache of keys
// and values, then each new token is one forward of one token per row.
void greedy_suffixes(Decoder& model, RowPlan const& plan, int chunk,
                     std::span<std::vector<std::int32_t> const> documents, ExtractionSpec const& spec,
                     std::vector<double>& generated) {
    int const B = plan.rows;
    std::vector<std::int32_t> prefixes(static_cast<std::size_t>(B) * spec.prefix), next(static_cast<std::size_t>(B));
    for (int b = 0; b < B; ++b) {
        auto const& document = documents[std::max(plan.document(chunk, b), 0)];
        std::copy_n(document.begin(), spec.prefix, prefixes.begin() + static_cast<std::ptrdiff_t>(b) * spec.prefix);
    }
    KvCache cache(model.architecture(), model.grid().shape(), B, spec.prefix + spec.suffix - 1);
    model.forward_cached(Batch{B, spec.prefix, prefixes.data(), nullptr, nullptr}, cache);
    argmax_tokens(model, B, spec.prefix, spec.prefix - 1, next.data());
    for (int s = 0; s < spec.suffix; ++s) {
        for (int b = 0; b < B; ++b) {
            int const d = plan.document(chunk, b);
            if (d >= 0) generated[static_cast<std::size_t>(d) * spec.suffix + s] = next[b];
        }
        if (s + 1 == spec.suffix) break;
        model.forward_cached(Batch{B, 1, next.data(), nullptr, nullptr}, cache);
        argmax_tokens(model, B, 1, 0, next.data());
    }
}

ExtractionScore score_of(std::span<std::int32_t const> truth, std::span<double const> generated_ids,
                         double const* fields) {
    ExtractionScore score;
    for (double id : generated_ids) score.generated.push_back(static_cast<std::int32_t>(id));
    int const S = static_cast<int>(truth.size());
    int matches = 0;
    score.matching_prefix = -1;
    for (int i = 0; i < S; ++i) {
        bool const same = score.generated[i] == truth[i];
        matches += same;
        if (!same && score.matching_prefix < 0) score.matching_prefix = i;
    }
    if (score.matching_prefix < 0) score.matching_prefix = S;
    score.exact_match = matches == S;
    score.token_match = S > 0 ? static_cast<double>(matches) / S : 0;
    score.rouge_l = rouge_l_f1(score.generated, truth);
    score.loss = fields[0];
    score.kept_correct = static_cast<int>(fields[1]);
    score.kept_total = static_cast<int>(fields[2]);
    score.dropped_correct = static_cast<int>(fields[3]);
    score.dropped_total = static_cast<int>(fields[4]);
    return score;
}

}  // namespace

std::vector<ExtractionScore> score_extraction(Decoder& model, std::span<std::vector<std::int32_t> const> documents,
                                              ExtractionSpec const& spec) {
    int const W = spec.prefix + spec.suffix;
    AXONN_REQUIRE(spec.prefix >= 1 && spec.suffix >= 1,
                  "the prefix and the suffix need 1 token or more each, got {} and {}", spec.prefix, spec.suffix);
    AXONN_REQUIRE(W - 1 <= model.max_seq(),
                  "a prefix of {} and a suffix of {} tokens need a context of {}, longer than the "
                  "model's {}: shorten them",
                  spec.prefix, spec.suffix, W - 1, model.max_seq());
    for (std::size_t d = 0; d < documents.size(); ++d) {
        AXONN_REQUIRE(static_cast<int>(documents[d].size()) >= W,
                      "document {} has {} tokens, fewer than the prefix {} and "
                      "suffix {} it is scored on",
                      d, documents[d].size(), spec.prefix, spec.suffix);
    }
    ProcessGrid& grid = model.grid();
    RowPlan const plan{model.max_batch(), grid.shape().batch_replicas(), grid.batch_replica(),
                       static_cast<int>(documents.size())};
    std::vector<double> fields(documents.size() * result_fields, 0.0);
    std::vector<double> generated(documents.size() * static_cast<std::size_t>(spec.suffix), 0.0);
    for (int chunk = 0; chunk < plan.chunks(); ++chunk) {
        teacher_forced(model, plan, chunk, documents, spec, fields);
        greedy_suffixes(model, plan, chunk, documents, spec, generated);
    }
    // Each document's values are on the ranks of one replica only: the sums over Z and data hand them to all.
    // Every X and Y rank of a replica holds the same values, and each Z and data group has one rank per replica.
    sum_over_batch(grid, fields);
    sum_over_batch(grid, generated);
    std::vector<ExtractionScore> scores;
    for (std::size_t d = 0; d < documents.size(); ++d) {
        AXONN_INVARIANT(fields[d * result_fields + 5] == 1.0, "document {} was scored {} times", d,
                        fields[d * result_fields + 5]);
        std::span<std::int32_t const> const truth(documents[d].data() + spec.prefix, spec.suffix);
        scores.push_back(score_of(truth, std::span(generated).subspan(d * spec.suffix, spec.suffix),
                                  fields.data() + d * result_fields));
    }
    return scores;
}

ExtractionSummary summarize_extraction(std::span<ExtractionScore const> scores) {
    ExtractionSummary summary;
    double kept_correct = 0, kept_total = 0, dropped_correct = 0, dropped_total = 0;
    for (ExtractionScore const& s : scores) {
        summary.exact_match += s.exact_match;
        summary.token_match += s.token_match;
        summary.matching_prefix += s.matching_prefix;
        summary.rouge_l += s.rouge_l;
        summary.loss += s.loss;
        kept_correct += s.kept_correct;
        kept_total += s.kept_total;
        dropped_correct += s.dropped_correct;
        dropped_total += s.dropped_total;
    }
    summary.documents = static_cast<int>(scores.size());
    double const n = scores.empty() ? std::nan("") : static_cast<double>(scores.size());  // no score: no mean
    for (double* mean : {&summary.exact_match, &summary.token_match, &summary.matching_prefix, &summary.rouge_l,
                         &summary.loss}) {
        *mean /= n;
    }
    summary.kept_accuracy = kept_total > 0 ? kept_correct / kept_total : std::nan("");
    summary.dropped_accuracy = dropped_total > 0 ? dropped_correct / dropped_total : std::nan("");
    return summary;
}

double rouge_l_f1(std::span<std::int32_t const> candidate, std::span<std::int32_t const> reference) {
    if (candidate.empty() || reference.empty()) return 0.0;
    std::vector<int> previous(reference.size() + 1, 0), current(reference.size() + 1, 0);
    for (std::int32_t c : candidate) {
        for (std::size_t j = 1; j <= reference.size(); ++j) {
            current[j] = c == reference[j - 1] ? previous[j - 1] + 1 : std::max(previous[j], current[j - 1]);
        }
        std::swap(previous, current);
    }
    double const lcs = previous.back();
    if (lcs == 0) return 0.0;
    double const precision = lcs / static_cast<double>(candidate.size());
    double const recall = lcs / static_cast<double>(reference.size());
    return 2 * precision * recall / (precision + recall);
}

double membership_auc(std::span<double const> member_losses, std::span<double const> nonmember_losses) {
    if (member_losses.empty() || nonmember_losses.empty()) return std::nan("");
    double wins = 0;
    for (double m : member_losses) {
        for (double n : nonmember_losses) wins += m < n ? 1.0 : (m == n ? 0.5 : 0.0);
    }
    return wins / (static_cast<double>(member_losses.size()) * static_cast<double>(nonmember_losses.size()));
}

}  // namespace axonn
