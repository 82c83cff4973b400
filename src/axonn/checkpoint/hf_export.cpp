#include "axonn/checkpoint/hf_export.h"

#include "axonn/families/registry.h"

namespace axonn {

void export_hf(CheckpointReader& checkpoint, std::filesystem::path const& out, DType dtype) {
    ModelConfig const& model = checkpoint.index().model;
    family_of(model).export_hf(
        model, [&checkpoint](std::string const& name) { return checkpoint.read_tensor(name); }, out, dtype);
}

}  // namespace axonn
