// The one place that turns a backend's name and precision into a Backend (every command's job calls it), wrapped
// in the tracing of its operations.
#include "axonn/core/error.h"
#include "axonn/kernels/cpu/gemm.h"
#include "axonn/kernels/cpu_backend.h"
#include "axonn/kernels/tracing_backend.h"
#ifdef AXONN_HAVE_CUDA
#include "axonn/kernels/cuda/cuda_backend.h"
#include "axonn/kernels/cuda/gpu_choice.h"
#endif

namespace axonn {

std::unique_ptr<Backend> make_backend(std::string const& name, DType precision, std::string* emulation) {
#ifdef AXONN_HAVE_CUDA
    AXONN_REQUIRE(name == "cpu" || name == "cuda", "unknown backend '{}': this build has 'cpu' and 'cuda'", name);
#else
    AXONN_REQUIRE(name == "cpu", "unknown backend '{}': this build has 'cpu' (build with -DAXONN_CUDA=ON for 'cuda')",
                  name);
#endif
    AXONN_REQUIRE(precision == DType::f32 || precision == DType::bf16, "unknown precision '{}': use fp32 or bf16",
                  dtype_name(precision));
    if (emulation) emulation->clear();
#ifdef AXONN_HAVE_CUDA
    if (name == "cuda") {
        return std::make_unique<TracingBackend>(std::make_unique<CudaBackend>(precision, cuda::local_device()));
    }
#endif
    if (precision == DType::bf16 && emulation) {
        cpu::Bf16Support const support = cpu::bf16_gemm_support();
        if (!support.native) *emulation = support.reason;
    }
    return std::make_unique<TracingBackend>(std::make_unique<CpuBackend>(precision));
}

}  // namespace axonn
