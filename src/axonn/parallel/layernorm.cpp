#include "axonn/parallel/layernorm.h"

namespace axonn {

void parallel_layernorm_forward(Backend& backend, Communicator& x, double* stats, OperandOut out, float* mean,
                                float* rstd, float const* inp, float const* weight, float const* bias, std::int64_t N,
                                int C_local, int C_total) {
    backend.layernorm_statistics(stats, inp, N, C_local);
    complete_parallel_layernorm_forward(backend, x, stats, out, mean, rstd, inp, weight, bias, N, C_local, C_total);
}

void complete_parallel_layernorm_forward(Backend& backend, Communicator& x, double* stats, OperandOut out,
                                         float* mean, float* rstd, float const* inp, float const* weight,
                                         float const* bias, std::int64_t N, int C_local, int C_total) {
    x.all_reduce(stats, static_cast<std::size_t>(2 * N));
    backend.layernorm_forward(out, mean, rstd, inp, weight, bias, stats, N, C_local, C_total);
}

void parallel_layernorm_backward(Backend& backend, Communicator& x, double* stats, float* dinp, float* dweight,
                                 float* dbias, float const* dout, float const* inp, float const* weight,
                                 float const* mean, float const* rstd, std::int64_t N, int C_local, int C_total) {
    backend.layernorm_backward_statistics(stats, dout, inp, weight, mean, rstd, N, C_local);
    x.all_reduce(stats, static_cast<std::size_t>(2 * N));
    backend.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, stats, N, C_local, C_total);
}

}  // namespace axonn
