// Fuzzes axonn::parse_hf_llama_config (src/axonn/families/llama/hf_llama_config.cpp), the reader of a Hugging Face
// Llama config.json, and through it LlamaConfig::validate() and the Llama architecture's declarations.
//
// Input: the text of a config.json.
//
// A failure is anything but a clean result or an axonn::Error: a crash, a sanitizer report, another exception
// escaping, or an accepted config that does not survive a round trip: hf_llama_config_json() of it must be
// accepted again and written back the same.
#include "axonn/core/error.h"
#include "axonn/families/llama/hf_llama_config.h"
#include "axonn/families/llama/llama_parameters.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::string const text(reinterpret_cast<char const*>(data), size);
    axonn::LlamaConfig config;
    try {
        config = axonn::parse_hf_llama_config(text, "config.json");
    } catch (axonn::Error const&) {
        return 0;  // a refused config: the expected outcome for most inputs
    }
    // An accepted config must describe a model that can be declared: every parameter's shape is positive.
    for (axonn::ParamDecl const& parameter : axonn::llama_parameters(config)) {
        for (auto const extent : parameter.shape) {
            if (extent <= 0) {
                std::fprintf(stderr, "fuzz_hf_llama_config: accepted config declares %s with extent %lld\n",
                             parameter.name.c_str(), static_cast<long long>(extent));
                std::abort();
            }
        }
    }
    nlohmann::json const written = axonn::hf_llama_config_json(config, "float32");
    try {
        nlohmann::json const again = axonn::hf_llama_config_json(
            axonn::parse_hf_llama_config(written.dump(), "config.json written back"), "float32");
        if (again != written) {
            std::fprintf(stderr, "fuzz_hf_llama_config: written back as\n%s\nthen\n%s\n", written.dump().c_str(),
                         again.dump().c_str());
            std::abort();
        }
    } catch (axonn::Error const& e) {
        std::fprintf(stderr, "fuzz_hf_llama_config: the config written back is refused: %s\n", e.what());
        std::abort();
    }
    return 0;
}
