// `axonn import --format hf DIR --out CKPT_DIR`: a Hugging Face GPT-2 folder as an axonn checkpoint (weights
// only, step 0), for `axonn train --init-from CKPT_DIR` on any grid.
#include "axonn/checkpoint/checkpoint_writer.h"
#include "axonn/checkpoint/hf_gpt2.h"
#include "axonn/cli/commands.h"
#include "axonn/comm/grid.h"
#include "axonn/core/error.h"
#include "axonn/core/tensor.h"
#include "axonn/model/gpt_parameters.h"

#include <fmt/format.h>
#include <mpi.h>

#include <memory>
#include <string>

namespace axonn {

void add_import_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("import", "Turn a Hugging Face GPT-2 folder into an axonn checkpoint");
    command->footer("The checkpoint holds the weights alone (step 0, no optimizer state). `axonn train --init-from\n"
                    "DIR` also reads a Hugging Face folder directly. Example:\n"
                    "  axonn import --format hf models/gpt2 --out runs/gpt2-ckpt");
    auto format = std::make_shared<std::string>("hf");
    auto source = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    command->add_option("--format", *format, "input format: hf (Hugging Face GPT-2)")->capture_default_str();
    command->add_option("DIR", *source, "folder with config.json and model.safetensors")->required();
    command->add_option("--out", *out, "checkpoint folder to write into (the checkpoint is OUT/step_00000000)")
        ->required();
    command->callback([format, source, out] {
        require_one_process("import");
        if (*format != "hf") throw UsageError(fmt::format("unknown --format {}: import reads hf", *format));
        GptConfig const config = read_hf_gpt2_config(*source);
        ProcessGrid self(MPI_COMM_SELF, GridShape{});
        ShardLayout const layout = gpt_layout(config, GridPosition::of(self));
        HfGpt2Weights weights(*source, config);  // checks every tensor before anything is allocated for them
        Tensor params({layout.total()}, DType::f32);
        weights.read_local(layout, params.span<float>());
        auto const folder = save_checkpoint(self, config, {params.span<float>(), {}, {}}, 0, nullptr,
                                            CheckpointTarget{*out, 0});
        fmt::print("imported {} ({} layers, width {}, vocabulary {}) to {}\n", *source, config.n_layer, config.n_embd,
                   config.vocab_size, folder.string());
    });
}

}  // namespace axonn
