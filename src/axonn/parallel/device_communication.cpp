// Compiled twice like make_backend.cpp: in the CPU library, and with AXONN_HAVE_CUDA in the CUDA object library.
#include "axonn/parallel/device_communication.h"

#include "axonn/core/error.h"
#ifdef AXONN_HAVE_CUDA
#include "axonn/comm/nccl/nccl_communication.h"
#include "axonn/kernels/cuda/cuda_backend.h"
#endif

namespace axonn {

std::shared_ptr<DeviceCommunication> device_communication(Backend& backend) {
#ifdef AXONN_HAVE_CUDA
    if (auto* cuda = dynamic_cast<CudaBackend*>(&backend)) {
        return std::make_shared<NcclCommunication>(cuda->stream(), cuda->device());
    }
#endif
    invariant(backend.memory() == Memory::host, "backend {} keeps its tensors in device memory but has no "
              "collectives for it", backend.name());
    return nullptr;
}

}  // namespace axonn
