// Turning a CUDA, cuBLAS or NCCL status into this program's errors: a failed call is reported by name, with what
// was being done, as an Error (the machine's fault: out of memory, a lost device), never ignored.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace axonn::cuda {

void check(cudaError_t status, char const* what);
void check(cublasStatus_t status, char const* what);
// The error of the last kernel launch, if any (a launch reports bad arguments only through this).
void check_launch(char const* kernel);

}  // namespace axonn::cuda
