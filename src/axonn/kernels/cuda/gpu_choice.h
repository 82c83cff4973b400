// Which GPU this process uses: on a node of several GPUs, each rank takes the one its local rank names (as
// mpirun and srun export it), modulo the GPUs it sees; alone, the first.
#pragma once

namespace axonn::cuda {

// The CUDA device index for this process; an Error, with the fix, where no GPU is visible.
int local_device();

// Whether this process sees a CUDA device: the GPU tests skip where it does not.
bool device_present();

}  // namespace axonn::cuda
