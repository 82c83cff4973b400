// Where a backend and the communication layer meet: the device collectives for the memory a backend keeps its
// tensors in, to put into the grid's CommOptions, so that the collectives of the model's buffers run on the device.
#pragma once

#include "axonn/comm/device_collectives.h"
#include "axonn/kernels/backend.h"

#include <memory>

namespace axonn {

// NCCL on the CUDA backend's stream and GPU (-DAXONN_CUDA=ON builds); none for a backend of host memory.
std::shared_ptr<DeviceCommunication> device_communication(Backend& backend);

}  // namespace axonn
