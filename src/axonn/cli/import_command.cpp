// `axonn import --format hf DIR --out CKPT_DIR`: a Hugging Face folder of any family as an axonn checkpoint
// (weights only, step 0), for `axonn train --init-from CKPT_DIR` or `axonn generate` on any grid.
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/cli/commands.h"
#include "axonn/comm/grid.h"
#include "axonn/core/error.h"
#include "axonn/core/tensor.h"
#include "axonn/families/hf_model.h"
#include "axonn/families/registry.h"

#include <fmt/format.h>
#include <mpi.h>

#include <memory>
#include <string>

namespace axonn {

void add_import_command(CLI::App& app) {
    CLI::App* command =
        app.add_subcommand("import", fmt::format("Turn a Hugging Face {} folder into an axonn checkpoint", family_labels()));
    command->footer("The checkpoint holds the weights alone (step 0, no optimizer state). `axonn train --init-from\n"
                    "DIR` and `axonn generate --model-dir DIR` also read a Hugging Face folder directly. Example:\n"
                    "  axonn import --format hf models/gpt2 --out runs/gpt2-ckpt");
    auto format = std::make_shared<std::string>("hf");
    auto source = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    command->add_option("--format", *format, fmt::format("input format: hf (Hugging Face {})", family_labels()))->capture_default_str();
    command->add_option("DIR", *source, "folder with config.json and model.safetensors (or its shards)")->required();
    command->add_option("--out", *out, "checkpoint folder to write into (the checkpoint is OUT/step_00000000)")
        ->required();
    command->callback([format, source, out] {
        require_one_process("import");
        if (*format != "hf") throw UsageError(fmt::format("unknown --format {}: import reads hf", *format));
        ProcessGrid self(MPI_COMM_SELF, GridShape{});
        ModelConfig const config = read_hf_model_config(*source);
        ShardLayout const layout(config.architecture().declarations, GridPosition::of(self));
        Tensor params({layout.total()}, DType::f32);
        read_hf_weights(*source, config, layout, params.span<float>());
        auto const folder = save_checkpoint(self, config, {params.span<float>(), {}, {}}, 0, nullptr,
                                            CheckpointTarget{*out, 0});
        fmt::print("imported {}: {}, to {}\n", *source, config.summary(), folder.string());
    });
}

}  // namespace axonn
