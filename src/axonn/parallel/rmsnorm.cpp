#include "axonn/parallel/rmsnorm.h"

namespace axonn {

void parallel_rmsnorm_forward(Backend& backend, Communicator& x, double* stats, OperandOut out, float* rstd,
                              float const* inp, float const* weight, std::int64_t N, int C_local, int C_total,
                              double eps) {
    backend.rmsnorm_statistics(stats, inp, N, C_local);
    complete_parallel_rmsnorm_forward(backend, x, stats, out, rstd, inp, weight, N, C_local, C_total, eps);
}

void complete_parallel_rmsnorm_forward(Backend& backend, Communicator& x, double* stats, OperandOut out, float* rstd,
                                       float const* inp, float const* weight, std::int64_t N, int C_local,
                                       int C_total, double eps) {
    x.all_reduce(stats, static_cast<std::size_t>(N));
    backend.rmsnorm_forward(out, rstd, inp, weight, stats, N, C_local, C_total, eps);
}

void parallel_rmsnorm_backward(Backend& backend, Communicator& x, double* stats, float* dinp, float* dweight,
                               float const* dout, float const* inp, float const* weight, float const* rstd,
                               std::int64_t N, int C_local, int C_total) {
    backend.rmsnorm_backward_statistics(stats, dout, inp, weight, rstd, N, C_local);
    x.all_reduce(stats, static_cast<std::size_t>(N));
    backend.rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, stats, N, C_local, C_total);
}

}  // namespace axonn
