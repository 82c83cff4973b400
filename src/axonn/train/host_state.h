// The weights and AdamW's moments as the host reads and writes them for checkpoints and imports: a host
// backend's own buffers, or copies of a device backend's (the GPU's memory, which the host cannot touch).
#pragma once

#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/checkpoint_tensors.h"
#include "axonn/model/decoder.h"
#include "axonn/train/optimizer.h"

#include <functional>
#include <vector>

namespace axonn {

class HostState {
public:
    // The values now, for a save: the weights, and the moments when `optimizer` is given (else empty).
    static HostState read(Decoder& model, AdamW* optimizer);
    LocalTensors const& tensors() const { return view_; }

    // For a restore or an import: `fill` writes the host buffers it is given (the moments' empty without an
    // optimizer), whose values then become the model's (and the optimizer's).
    static void write(Decoder& model, AdamW* optimizer, std::function<void(LocalBuffers const&)> const& fill);

private:
    std::vector<float> params_, exp_avg_, exp_avg_sq_;  // a device backend's copies
    LocalTensors view_;
};

}  // namespace axonn
