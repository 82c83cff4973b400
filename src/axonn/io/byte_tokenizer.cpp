// The byte tokenizer: id b is the byte b, and 256 marks the end of a text.
#include "axonn/io/tokenizer.h"

#include "axonn/core/error.h"

namespace axonn {
namespace {

constexpr std::int32_t byte_eot_id = 256;

class ByteTokenizer final : public Tokenizer {
public:
    std::vector<std::int32_t> encode(std::string_view text) const override {
        std::vector<std::int32_t> ids;
        ids.reserve(text.size());
        for (char c : text) ids.push_back(static_cast<unsigned char>(c));
        return ids;
    }

    std::string decode(std::span<std::int32_t const> ids) const override {
        std::string text;
        text.reserve(ids.size());
        for (std::int32_t id : ids) {
            AXONN_REQUIRE(id >= 0 && id <= byte_eot_id, "token id {} is outside the byte tokenizer's vocabulary 0..{}",
                          id, byte_eot_id);
            if (id == byte_eot_id) {
                text += gpt2_end_of_text;
            } else {
                text += static_cast<char>(id);
            }
        }
        return text;
    }

    std::int32_t vocab_size() const override { return byte_eot_id + 1; }
    std::int32_t eot_id() const override { return byte_eot_id; }
    std::string name() const override { return "byte"; }
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_tokenizer() { return std::make_unique<ByteTokenizer>(); }

}  // namespace axonn
