// The one place that turns a backend's name and precision into a Backend: train, bench and parity all call it.
#include "axonn/core/error.h"
#include "axonn/kernels/cpu/bf16.h"
#include "axonn/kernels/cpu_backend.h"

namespace axonn {

std::unique_ptr<Backend> make_backend(std::string const& name, DType precision, std::string* fallback) {
    require(name == "cpu", "unknown backend '{}': this build has 'cpu'", name);
    require(precision == DType::f32 || precision == DType::bf16, "unknown precision '{}': use fp32 or bf16",
            dtype_name(precision));
    if (fallback) fallback->clear();
    if (precision == DType::bf16) {
        cpu::Bf16Support const support = cpu::bf16_gemm_support();
        if (!support.available) {
            if (fallback) *fallback = support.reason;
            precision = DType::f32;
        }
    }
    return std::make_unique<CpuBackend>(precision);
}

}  // namespace axonn
