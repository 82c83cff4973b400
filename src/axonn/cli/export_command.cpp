// `axonn export --format hf CKPT OUT`: a checkpoint's weights as a Hugging Face GPT-2 folder.
#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/hf_gpt2.h"
#include "axonn/cli/commands.h"
#include "axonn/comm/grid.h"
#include "axonn/core/error.h"

#include <fmt/format.h>
#include <mpi.h>

#include <memory>
#include <string>

namespace axonn {

void add_export_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("export", "Write a checkpoint's weights in Hugging Face's GPT-2 format");
    command->footer("OUT receives config.json and model.safetensors (transformers' names and Conv1D layout), which\n"
                    "GPT2LMHeadModel.from_pretrained(OUT) loads. Example:\n"
                    "  axonn export --format hf runs/ckpt runs/hf-model");
    auto format = std::make_shared<std::string>("hf");
    auto checkpoint = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    command->add_option("--format", *format, "output format: hf (Hugging Face GPT-2)")->capture_default_str();
    command->add_option("CKPT", *checkpoint, "a checkpoint folder, or a --ckpt-dir (its newest)")->required();
    command->add_option("OUT", *out, "the folder to write")->required();
    command->callback([format, checkpoint, out] {
        require_one_process("export");
        if (*format != "hf") throw UsageError(fmt::format("unknown --format {}: export writes hf", *format));
        CheckpointReader reader(resolve_checkpoint(*checkpoint, {}));
        ProcessGrid self(MPI_COMM_SELF, GridShape{});
        reader.verify(self.comm(Group::world));
        export_hf_gpt2(reader, *out);
        fmt::print("exported {} (step {}) to {}\n", reader.folder().string(), reader.index().step, *out);
    });
}

}  // namespace axonn
