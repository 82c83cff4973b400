// `axonn export --format hf CKPT OUT`: a checkpoint's weights as a Hugging Face folder of the checkpoint's model's
// family.
#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/checkpoint/checkpoint_reader.h"
#include "axonn/checkpoint/hf_export.h"
#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/comm/grid.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/families/hf_model.h"
#include "axonn/families/registry.h"
#include "axonn/io/hf_safetensors.h"
#include "axonn/train/output_kinds.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace axonn {
namespace {

// "GPT2LMHeadModel.from_pretrained(OUT) or LlamaForCausalLM.from_pretrained(OUT) loads it", and which families
// --dtype bf16 serves, from the registry.
std::string export_footer() {
    std::vector<std::string> loaders, bf16_families;
    for (ModelFamily const* family : model_families()) {
        loaders.push_back(fmt::format("{}.from_pretrained(OUT)", family->hf_class));
        if (family->exports_bf16) bf16_families.emplace_back(family->label);
    }
    return fmt::format("OUT receives config.json and model.safetensors with transformers' names and layout:\n"
                       "{} loads it,\nas the checkpoint's model is. {} weights are written in --dtype (bf16 rounds "
                       "to nearest\neven, which gives back the very bits of weights imported from bf16). Example:\n"
                       "  axonn export --format hf runs/ckpt runs/hf-model",
                       fmt::join(loaders, " or "), fmt::join(bf16_families, " and "));
}

std::string dtype_help() {
    std::vector<std::string> bf16_families, f32_families;
    for (ModelFamily const* family : model_families()) {
        (family->exports_bf16 ? bf16_families : f32_families).emplace_back(family->label);
    }
    return fmt::format("the weights' type for a {}: f32 or bf16 ({} is always f32)", fmt::join(bf16_families, " or "),
                       fmt::join(f32_families, " or "));
}

// OUT must not hold another kind of output (a checkpoint folder: generate and --init-from could not tell which to
// read) or lie in the checkpoint read, and an earlier export there is replaced only with --overwrite.
void require_export_folder(std::filesystem::path const& out, std::filesystem::path const& checkpoint,
                           bool overwrite) {
    require_folder_for(out, "OUT", OutputKind::hf_model);
    require_not_an_input(out, "OUT", {checkpoint});
    AXONN_REQUIRE(overwrite || !is_hf_model_folder(out),
                  "OUT {} already holds a Hugging Face model (an earlier export?): choose another folder, or pass "
                  "--overwrite to replace it",
                  out.string());
    // Each file the export writes, before either is written: one alone is not replaced without --overwrite, and
    // a device or a FIFO in its place never.
    require_replaceable_output(out / hf_config_file, "Hugging Face config", overwrite);
    require_replaceable_output(out / hf_weights_file, "Hugging Face weights", overwrite);
    // The export writes model.safetensors, which beside an index of shards would be a second copy of the weights.
    std::error_code error;
    AXONN_REQUIRE(!std::filesystem::exists(out / hf_weights_index_file, error),
                  "OUT {} holds a model in shards ({}), which the export's {} would not replace but stand beside: "
                  "choose another folder, or remove the shards and their index first",
                  out.string(), hf_weights_index_file, hf_weights_file);
}

}  // namespace

void add_export_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("export", "Write a checkpoint's weights in Hugging Face's format");
    command->footer(export_footer());
    auto format = std::make_shared<std::string>("hf");
    auto dtype = std::make_shared<std::string>("f32");
    auto checkpoint = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto overwrite = std::make_shared<bool>(false);
    command->add_option("--format", *format, "output format: hf (Hugging Face)")->capture_default_str();
    command->add_option("--dtype", *dtype, dtype_help())
        ->check(CLI::IsMember({"f32", "bf16"}))
        ->capture_default_str();
    command->add_option("CKPT", *checkpoint, "a checkpoint folder, or a --ckpt-dir (its newest)")->required();
    command->add_option("OUT", *out, "the folder to write (not a checkpoint folder)")->required();
    command->add_flag("--overwrite", *overwrite, "replace an earlier export in OUT");
    command->callback([command, format, dtype, checkpoint, out, overwrite] {
        require_one_process("export");
        require_apart_from_config_files(*out, "OUT", *command);
        if (*format != "hf") throw UsageError(fmt::format("unknown --format {}: export writes hf", *format));
        require_export_folder(*out, *checkpoint, *overwrite);
        MadeFolder made(*out, "export folder");
        FolderLock const writing(*out, "export folder");
        require_export_folder(*out, *checkpoint, *overwrite);  // again, held: another export may have written there
        CheckpointReader reader(resolve_checkpoint(*checkpoint, {}, "CKPT"));
        ModelFamily const& family = family_of(reader.index().model);
        if (!family.exports_bf16 && *dtype != "f32") {
            throw UsageError(fmt::format("--dtype {}: a {} checkpoint is exported in f32 only", *dtype, family.label));
        }
        ProcessGrid self(MPI_COMM_SELF, GridShape{});
        reader.verify(self.comm(Group::world));
        export_hf(reader, *out, *dtype == "bf16" ? DType::bf16 : DType::f32);
        made.keep();
        fmt::print("exported {} (step {}, {}) to {}\n", reader.folder().string(), reader.index().step,
                   reader.index().model.family(), *out);
    });
}

}  // namespace axonn
