#include "axonn/parallel/norm.h"

#include "axonn/parallel/layernorm.h"
#include "axonn/parallel/rmsnorm.h"

namespace axonn {

void parallel_norm_forward(Backend& backend, ProcessGrid& grid, NormSpec const& spec, double* stats, OperandOut out,
                           float* mean, float* rstd, float const* inp, float const* weight, float const* bias,
                           std::int64_t N) {
    Communicator& x = grid.comm(Group::x);
    int const local_width = spec.width / x.size();
    if (spec.layernorm) {
        parallel_layernorm_forward(backend, x, stats, out, mean, rstd, inp, weight, bias, N, local_width, spec.width);
    } else {
        parallel_rmsnorm_forward(backend, x, stats, out, rstd, inp, weight, N, local_width, spec.width, spec.eps);
    }
}

void parallel_residual_norm_forward(Backend& backend, ProcessGrid& grid, NormSpec const& spec, double* stats,
                                    ResidualAdd const& residual, OperandOut out, float* mean, float* rstd,
                                    float const* weight, float const* bias, std::int64_t N) {
    Communicator& x = grid.comm(Group::x);
    int const local_width = spec.width / x.size();
    backend.residual_norm_statistics(residual.sum, residual.a, residual.b, stats, N, local_width, spec.layernorm);
    if (spec.layernorm) {
        complete_parallel_layernorm_forward(backend, x, stats, out, mean, rstd, residual.sum, weight, bias, N,
                                            local_width, spec.width);
    } else {
        complete_parallel_rmsnorm_forward(backend, x, stats, out, rstd, residual.sum, weight, N, local_width,
                                          spec.width, spec.eps);
    }
}

void parallel_norm_backward(Backend& backend, ProcessGrid& grid, NormSpec const& spec, double* stats, float* dinp,
                            float* dweight, float* dbias, float const* dout, float const* inp, float const* weight,
                            float const* mean, float const* rstd, std::int64_t N) {
    Communicator& x = grid.comm(Group::x);
    int const local_width = spec.width / x.size();
    if (spec.layernorm) {
        parallel_layernorm_backward(backend, x, stats, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N,
                                    local_width, spec.width);
    } else {
        parallel_rmsnorm_backward(backend, x, stats, dinp, dweight, dout, inp, weight, rstd, N, local_width,
                                  spec.width);
    }
}

}  // namespace axonn
