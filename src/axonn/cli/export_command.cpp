// `axonn export --format hf CKPT OUT`: a checkpoint's weights as a Hugging Face folder, GPT-2 or Llama as the
// checkpoint's model is.
#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/hf_gpt2.h"
#include "axonn/checkpoint/hf_llama.h"
#include "axonn/cli/commands.h"
#include "axonn/comm/grid.h"
#include "axonn/core/error.h"

#include <fmt/format.h>
#include <mpi.h>

#include <memory>
#include <string>

namespace axonn {

void add_export_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("export", "Write a checkpoint's weights in Hugging Face's format");
    command->footer("OUT receives config.json and model.safetensors with transformers' names and layout:\n"
                    "GPT2LMHeadModel.from_pretrained(OUT) or LlamaForCausalLM.from_pretrained(OUT) loads it,\n"
                    "as the checkpoint's model is. Llama weights are written in --dtype (bf16 rounds to nearest\n"
                    "even, which gives back the very bits of weights imported from bf16). Example:\n"
                    "  axonn export --format hf runs/ckpt runs/hf-model");
    auto format = std::make_shared<std::string>("hf");
    auto dtype = std::make_shared<std::string>("f32");
    auto checkpoint = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    command->add_option("--format", *format, "output format: hf (Hugging Face)")->capture_default_str();
    command->add_option("--dtype", *dtype, "the weights' type for a Llama: f32 or bf16 (GPT-2 is always f32)")
        ->check(CLI::IsMember({"f32", "bf16"}))
        ->capture_default_str();
    command->add_option("CKPT", *checkpoint, "a checkpoint folder, or a --ckpt-dir (its newest)")->required();
    command->add_option("OUT", *out, "the folder to write")->required();
    command->callback([format, dtype, checkpoint, out] {
        require_one_process("export");
        if (*format != "hf") throw UsageError(fmt::format("unknown --format {}: export writes hf", *format));
        CheckpointReader reader(resolve_checkpoint(*checkpoint, {}, "CKPT"));
        if (!reader.index().model.is_llama() && *dtype != "f32") {
            throw UsageError(fmt::format("--dtype {}: a GPT-2 checkpoint is exported in f32 only", *dtype));
        }
        ProcessGrid self(MPI_COMM_SELF, GridShape{});
        reader.verify(self.comm(Group::world));
        if (reader.index().model.is_llama()) {
            export_hf_llama(reader, *out, *dtype == "bf16" ? DType::bf16 : DType::f32);
        } else {
            export_hf_gpt2(reader, *out);
        }
        fmt::print("exported {} (step {}, {}) to {}\n", reader.folder().string(), reader.index().step,
                   reader.index().model.family(), *out);
    });
}

}  // namespace axonn
