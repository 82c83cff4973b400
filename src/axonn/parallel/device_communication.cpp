// Compiled twice like make_backend.cpp: in the CPU library, and with AXONN_HAVE_CUDA in the CUDA object library.
#include "axonn/parallel/device_communication.h"

#include "axonn/core/error.h"
#ifdef AXONN_HAVE_CUDA
#include "axonn/comm/nccl/nccl_communication.h"
#endif

namespace axonn {

std::shared_ptr<DeviceCommunication> device_communication(Backend& backend) {
    if (backend.memory() == Memory::host) return nullptr;
#ifdef AXONN_HAVE_CUDA
    DeviceContext const context = backend.device_context();
    return std::make_shared<NcclCommunication>(static_cast<cudaStream_t>(context.stream), context.device);
#else
    fail("backend {} keeps its tensors in device memory but has no collectives for it", backend.name());
#endif
}

}  // namespace axonn
