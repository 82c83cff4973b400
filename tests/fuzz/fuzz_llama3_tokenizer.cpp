// Fuzzes axonn::make_llama3_tokenizer (src/axonn/io/llama3_tokenizer.cpp), the reader of a Hugging Face
// tokenizer.json, and, when a file loads, its encoder and decoder on a fixed text and on the input itself.
//
// Input: the bytes of a tokenizer.json.
//
// A failure is anything but a clean result or an axonn::Error: a crash, a sanitizer report, another exception
// escaping, or a loaded tokenizer that encodes to an id outside its vocabulary.
#include "axonn/core/error.h"
#include "axonn/io/tokenizer.h"
#include "fuzz_files.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void encode_and_decode(axonn::Tokenizer const& tokenizer, std::string_view text) {
    std::vector<std::int32_t> const ids = tokenizer.encode(text);
    for (std::int32_t const id : ids) {
        if (id < 0 || id >= tokenizer.vocab_size()) {
            std::fprintf(stderr, "fuzz_llama3_tokenizer: encoded to id %d of a vocabulary of %d\n", id,
                         tokenizer.vocab_size());
            std::abort();
        }
    }
    (void)tokenizer.decode(ids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::filesystem::path const folder = fuzz::work_folder("llama3-tokenizer");
    fuzz::write_file(folder / "tokenizer.json", data, size);
    try {
        std::unique_ptr<axonn::Tokenizer> const tokenizer = axonn::make_llama3_tokenizer(folder);
        encode_and_decode(*tokenizer, "Hello, world! It's 2026: \xc3\xa9t\xc3\xa9 \xe2\x82\xac 12345<|eot_id|>\r\n  x");
        encode_and_decode(*tokenizer, std::string_view(reinterpret_cast<char const*>(data), size));
    } catch (axonn::Error const&) {
        // A one-line refusal: what a damaged or foreign file should get.
    }
    return 0;
}
