#include "axonn/parallel/vocab_parallel.h"

namespace axonn {

void vocab_parallel_embedding_forward(Backend& backend, Communicator& y, VocabSlice const& slice, float* out,
                                      std::int32_t const* tokens, WeightView wte_block, float const* wpe, int B,
                                      int T, int C_local) {
    backend.encoder_forward(out, tokens, wte_block, wpe, B, T, C_local, slice.begin, slice.rows);
    y.all_reduce(out, static_cast<std::size_t>(B) * T * C_local);
}

void vocab_parallel_cross_entropy_forward(Backend& backend, Communicator& y, VocabSlice const& slice, float* losses,
                                          float* logsumexp, float* row_max, double* sums, float const* logits,
                                          std::int32_t const* targets, std::int64_t N) {
    backend.cross_entropy_max(row_max, logits, N, slice.valid, slice.rows);
    y.all_reduce_max(row_max, static_cast<std::size_t>(N));
    backend.cross_entropy_sums(sums, logits, row_max, targets, N, slice.valid, slice.rows, slice.begin);
    y.all_reduce(sums, static_cast<std::size_t>(2 * N));
    backend.cross_entropy_losses(losses, logsumexp, row_max, sums, targets, N);
}

}  // namespace axonn
