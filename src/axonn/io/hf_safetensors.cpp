#include "axonn/io/hf_safetensors.h"

#include "axonn/core/bfloat16.h"
#include "axonn/core/error.h"
#include "axonn/core/float16.h"
#include "axonn/core/guarded_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string_view>

namespace axonn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// `count` elements of a 16-bit float type at `offset`, widened to fp32 (exactly: fp32 holds every such value).
template <typename Narrow, typename Widen>
void widen(InputFile const& input, std::uint64_t offset, std::int64_t count, float* out, Widen widened) {
    static_assert(sizeof(Narrow) == 2);
    std::vector<Narrow> raw(static_cast<std::size_t>(count));
    read_exactly(input, offset, raw.data(), raw.size() * sizeof(Narrow), "Hugging Face weights");
    for (std::size_t i = 0; i < raw.size(); ++i) out[i] = widened(raw[i]);
}

constexpr std::uint64_t max_safetensors_header_bytes = std::uint64_t{64} << 20;

// A shard's name as the index gives it: a plain file of the folder, never a path out of it.
void check_shard_name(std::string const& name, fs::path const& index) {
    AXONN_REQUIRE(!name.empty() && fs::path(name).filename() == name && name != "." && name != ".." &&
                      name.ends_with(".safetensors"),
                  "{} maps a tensor to \"{}\", which is not a .safetensors file of the folder: the index is damaged",
                  index.string(), name);
}

// tensor name -> shard file name, from model.safetensors.index.json.
std::map<std::string, std::string> read_weight_map(fs::path const& index) {
    std::string const text = read_input_file(index, "Hugging Face weight index", "pass a Hugging Face model folder",
                                             max_safetensors_header_bytes);
    json parsed;
    try {
        parsed = parse_guarded_json(text, 8);  // {"metadata": {...}, "weight_map": {...}}
    } catch (Error const& e) {
        fail("{} is not a weight index ({}): fix it, or fetch the model again", index.string(), e.what());
    }
    AXONN_REQUIRE(parsed.is_object() && parsed.contains("weight_map") &&
                      parsed["weight_map"].is_object() && !parsed["weight_map"].empty(),
                  "{} is not a weight index: it needs a non-empty \"weight_map\" object", index.string());
    std::map<std::string, std::string> map;
    for (auto const& [tensor, file] : parsed["weight_map"].items()) {
        AXONN_REQUIRE(file.is_string(), "{} maps {} to {}, not to a file name", index.string(), tensor, file.dump());
        check_shard_name(file.get<std::string>(), index);
        map.emplace(tensor, file.get<std::string>());
    }
    return map;
}

}  // namespace

void write_hf_model_files(fs::path const& out, std::string_view config_text, std::string_view header,
                          std::function<void(AtomicFile& weights)> const& write_tensors) {
    create_folder(out, "export folder");
    AtomicFile config(out / hf_config_file, "Hugging Face config");
    config.write(config_text);
    config.finish();
    AtomicFile weights(out / hf_weights_file, "Hugging Face weights");
    weights.write(header.data(), header.size());
    write_tensors(weights);
    weights.finish();
    weights.commit();
    config.commit();
}

void require_architectures_of(nlohmann::json const& config, std::string_view family_classes,
                              std::string const& source) {
    if (!config.contains("architectures") || config["architectures"].is_null()) return;
    nlohmann::json const& classes = config["architectures"];
    bool const names = classes.is_array() && std::all_of(classes.begin(), classes.end(), [](auto const& name) {
                           return name.is_string();
                       });
    AXONN_REQUIRE(names, "{} sets architectures = {}: a list of transformers class names was expected; fix it, or "
                  "fetch the model's config.json again", source, classes.dump());
    for (nlohmann::json const& name : classes) {
        AXONN_REQUIRE(name.get<std::string>().starts_with(family_classes),
                      "{} names the class {} in architectures, which is no {} model though its model_type is {}: "
                      "one of the two is wrong; fix it, or fetch the model's config.json again",
                      source, name.dump(), family_classes, config.value("model_type", nlohmann::json()).dump());
    }
}

bool has_hf_weights(fs::path const& dir) {
    std::error_code error;
    return fs::exists(dir / hf_weights_file, error) || fs::exists(dir / hf_weights_index_file, error);
}

bool is_hf_model_folder(fs::path const& dir) {
    std::error_code error;
    return fs::is_regular_file(dir / hf_config_file, error) && has_hf_weights(dir);
}

void require_hf_weights_beside_config(fs::path const& dir) {
    std::error_code error;
    AXONN_REQUIRE(!fs::is_regular_file(dir / hf_config_file, error) || has_hf_weights(dir),
                  "{} holds a Hugging Face {} but no weights ({} or {}): the model folder is incomplete; fetch it "
                  "again",
                  dir.string(), hf_config_file, hf_weights_file, hf_weights_index_file);
}

void HfSafetensors::open_shard(fs::path const& path) {
    auto shard = std::make_unique<Shard>();
    shard->input = open_input_file(path, "Hugging Face weights", "the model folder is incomplete: fetch it again");
    shard->header = read_safetensors_header(shard->input, "Hugging Face weights");
    shards_.push_back(std::move(shard));
}

HfSafetensors::HfSafetensors(fs::path const& dir) : dir_(dir) {
    fs::path const index = dir / hf_weights_index_file;
    std::error_code error;
    if (!fs::exists(index, error)) {
        open_shard(dir / hf_weights_file);
        for (SafetensorsEntry const& entry : shards_.front()->header.tensors) tensors_[entry.name] = {0, &entry};
        return;
    }
    auto const weight_map = read_weight_map(index);
    // transformers loads model.safetensors where a folder holds it, whatever an index says: two models in one folder.
    bool const whole_file_too = fs::exists(dir / hf_weights_file, error);
    for (auto const& [tensor, file] : weight_map) {
        AXONN_REQUIRE(!whole_file_too || file == hf_weights_file,
                      "{} holds both {} and {}, whose shards ({}, ...) are another copy of the weights: transformers "
                      "would load {}; remove the files of the model that is not wanted",
                      dir.string(), hf_weights_file, hf_weights_index_file, file, hf_weights_file);
    }
    std::map<std::string, int> shard_of_file;
    for (auto const& [tensor, file] : weight_map) {
        auto [found, added] = shard_of_file.emplace(file, static_cast<int>(shards_.size()));
        if (added) open_shard(dir / file);
        SafetensorsEntry const* entry = shards_[found->second]->header.find(tensor);
        AXONN_REQUIRE(entry != nullptr, "{} maps {} to {}, which does not hold it: the index is damaged",
                      index.string(), tensor, file);
        tensors_[tensor] = {found->second, entry};
    }
    // A tensor of a shard that the index does not list there would be left unread without a word (transformers
    // reads every key of the shards it loads).
    for (std::size_t s = 0; s < shards_.size(); ++s) {
        for (SafetensorsEntry const& entry : shards_[s]->header.tensors) {
            auto const listed = tensors_.find(entry.name);
            AXONN_REQUIRE(listed != tensors_.end() && listed->second.shard == static_cast<int>(s),
                          "{} holds {}, which {} does not list there: the index is damaged, or the shard is another "
                          "model's",
                          shards_[s]->input.path.string(), entry.name, index.string());
        }
    }
}

SafetensorsEntry const* HfSafetensors::find(std::string const& name) const {
    auto const found = tensors_.find(name);
    return found == tensors_.end() ? nullptr : found->second.entry;
}

void HfSafetensors::require_no_layer_beyond(std::string const& layer_prefix, std::int64_t layers) const {
    for (auto it = tensors_.lower_bound(layer_prefix); it != tensors_.end() && it->first.starts_with(layer_prefix);
         ++it) {
        std::string_view const rest = std::string_view(it->first).substr(layer_prefix.size());
        std::int64_t layer = -1;
        auto const [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
        if (error != std::errc() || end == rest.data() + rest.size() || *end != '.') continue;
        AXONN_REQUIRE(layer < layers,
                      "{}: {} is a weight of layer {}, but config.json says the model has {} layer{}: its config does "
                      "not describe these weights (fix its layer count)",
                      where(it->first), it->first, layer, layers, layers == 1 ? "" : "s");
    }
}

void HfSafetensors::require_all_read(std::set<std::string> const& read,
                                     std::function<bool(std::string const&)> const& ignored,
                                     std::string_view model) const {
    for (auto const& [name, location] : tensors_) {
        AXONN_REQUIRE(read.contains(name) || ignored(name),
                      "{}: {} is no weight of {} as its config.json describes it: axonn would leave it out and run "
                      "another model; remove the tensor, or use a model whose config declares it, if axonn has one",
                      where(name), name, model);
    }
}

std::string HfSafetensors::where(std::string const& name) const {
    auto const found = tensors_.find(name);
    return found == tensors_.end() ? std::string() : shards_[found->second.shard]->input.path.string();
}

void HfSafetensors::read(std::string const& name, std::int64_t begin, std::int64_t count, float* out) const {
    Location const& location = tensors_.at(name);
    Shard const& shard = *shards_[location.shard];
    SafetensorsEntry const& entry = *location.entry;
    AXONN_INVARIANT(begin >= 0 && count >= 0 && begin + count <= shape_numel(entry.shape),
                    "elements {}..{} of {}, which has {}", begin, begin + count, name, shape_numel(entry.shape));
    auto const element = static_cast<std::uint64_t>(dtype_size(entry.dtype));
    std::uint64_t const offset = shard.header.data_start + entry.begin + static_cast<std::uint64_t>(begin) * element;
    if (entry.dtype == DType::f32) {
        read_exactly(shard.input, offset, out, static_cast<std::size_t>(count) * sizeof(float), "Hugging Face weights");
    } else if (entry.dtype == DType::bf16) {
        widen<bfloat16>(shard.input, offset, count, out, [](bfloat16 value) { return static_cast<float>(value); });
    } else {
        AXONN_INVARIANT(entry.dtype == DType::f16, "{} is {}, not a weight's dtype", name, dtype_name(entry.dtype));
        widen<std::uint16_t>(shard.input, offset, count, out, float16_to_float);
    }
    float const* const bad = std::find_if(out, out + count, [](float value) { return !std::isfinite(value); });
    AXONN_REQUIRE(bad == out + count,
                  "Hugging Face folder {} holds a weight that is not finite (NaN or infinite): element {} of {} in {}: "
                  "the model is damaged; use a sound copy of it",
                  dir_.string(), begin + (bad - out), name, shard.input.path.filename().string());
}

void HfSafetensors::require_weight_dtype(std::string const& name) const {
    DType const dtype = tensors_.at(name).entry->dtype;
    AXONN_REQUIRE(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
                  "{}: {} is {}; axonn reads F32, BF16 or F16 weights: convert it to one of them", where(name), name,
                  safetensors_dtype_name(dtype));
}

}  // namespace axonn
