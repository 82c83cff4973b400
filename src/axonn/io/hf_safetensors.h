// The weights of a Hugging Face model folder: model.safetensors, or the shards that model.safetensors.index.json
// maps each tensor to (how transformers saves a large model). Nothing a file claims is trusted: the index must be a
// JSON object whose "weight_map" names plain files inside the folder ending in .safetensors, every shard's header is
// checked as read_safetensors_header does, and each tensor must be in the shard the map names, which holds no
// tensor the map does not list; shards beside a
// model.safetensors (two copies of the weights, of which transformers loads the whole file) are refused. Reads
// take ranges of elements, so a rank reads only the parts of a tensor it holds.
#pragma once

#include "axonn/core/file_io.h"
#include "axonn/io/safetensors.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <vector>

namespace axonn {

inline constexpr char const* hf_weights_file = "model.safetensors";
inline constexpr char const* hf_weights_index_file = "model.safetensors.index.json";

inline constexpr char const* hf_config_file = "config.json";
// The largest size, count or length axonn takes from a config.json (a layer's width, a vocabulary, a context).
inline constexpr std::uint64_t hf_config_largest_size = std::uint64_t{1} << 30;

// Writes a Hugging Face model folder's config.json (`config_text`) and model.safetensors (`header`, then what
// `write_tensors` writes into it) side by side, and renames the two into place only once both are on disk: a failure
// on the way (a full disk, a folder where a partial file goes) leaves an earlier export there whole.
void write_hf_model_files(std::filesystem::path const& out, std::string_view config_text, std::string_view header,
                          std::function<void(AtomicFile& weights)> const& write_tensors);

// Whether `dir` holds model.safetensors or model.safetensors.index.json.
bool has_hf_weights(std::filesystem::path const& dir);

// Whether `dir` looks like a Hugging Face model folder (config.json and model.safetensors, or its index, in it).
bool is_hf_model_folder(std::filesystem::path const& dir);

// Refuses a folder holding a Hugging Face config.json without the weights beside it (neither model.safetensors nor
// its index): an incomplete model folder, which was called a Llama axonn does not read, or no checkpoint.
void require_hf_weights_beside_config(std::filesystem::path const& dir);

// Refuses a config.json (`source`) whose "architectures", where given, is not a list of transformers class names of
// the family its model_type names, each starting with `family_classes` ("Llama", "GPT2"): a Llama config saying
// GPT2LMHeadModel was read as a Llama without a word, though transformers builds the class it names.
void require_architectures_of(nlohmann::json const& config, std::string_view family_classes,
                              std::string const& source);

class HfSafetensors {
public:
    explicit HfSafetensors(std::filesystem::path const& dir);

    // The tensor's entry, or null when the folder holds none of that name.
    SafetensorsEntry const* find(std::string const& name) const;
    // Refuses, naming its file, a tensor whose dtype read() does not widen to fp32: weights are F32, BF16 or F16.
    void require_weight_dtype(std::string const& name) const;
    // Elements [begin, begin + count) of a tensor the folder holds, row-major, as fp32 (widened exactly from BF16
    // or F16 on disk). A value that is not finite is refused, named as the folder names it (its element, tensor
    // and file): every command that reads a Hugging Face model (import, --init-from, generate) refuses a damaged
    // one, where a NaN in a row the data never reads went through training into every later checkpoint.
    void read(std::string const& name, std::int64_t begin, std::int64_t count, float* out) const;
    // Where the tensor is: its file, for errors.
    std::string where(std::string const& name) const;
    // Refuses a folder that holds a tensor of a layer past the config's: a name `layer_prefix` N "." ... with
    // N >= layers (a config.json that claims fewer layers than the weights hold would drop the rest unseen).
    void require_no_layer_beyond(std::string const& layer_prefix, std::int64_t layers) const;
    // Refuses a tensor of the folder that is not among `read` (what the model reads) nor `ignored` (a buffer that
    // transformers saves beside the weights, such as GPT-2's causal mask): axonn would leave it out and run another
    // model without a word (a Llama's q_proj.bias, which its config.json did not declare). `model`: "a GPT-2".
    void require_all_read(std::set<std::string> const& read, std::function<bool(std::string const&)> const& ignored,
                          std::string_view model) const;

private:
    struct Shard {
        InputFile input;
        SafetensorsHeader header;
    };
    struct Location {
        int shard;
        SafetensorsEntry const* entry;
    };
    void open_shard(std::filesystem::path const& path);

    std::filesystem::path dir_;
    std::vector<std::unique_ptr<Shard>> shards_;
    std::map<std::string, Location> tensors_;
};

}  // namespace axonn
