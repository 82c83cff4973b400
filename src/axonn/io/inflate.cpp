#include "axonn/io/inflate.h"

#include "axonn/core/error.h"

#include <zlib.h>

#include <algorithm>

namespace axonn {
namespace {

// Owns a zlib inflate state for the length of one stream.
class Inflater {
public:
    explicit Inflater(std::filesystem::path const& file) {
        // 15 window bits + 32: accept either a zlib or a gzip header.
        if (inflateInit2(&stream_, 15 + 32) != Z_OK) fail("zlib could not start inflating {}", file.string());
    }
    Inflater(Inflater const&) = delete;
    Inflater& operator=(Inflater const&) = delete;
    ~Inflater() { inflateEnd(&stream_); }
    z_stream& stream() { return stream_; }

private:
    z_stream stream_{};
};

}  // namespace

std::string inflate_bounded(std::string_view compressed, std::size_t expected_bytes, std::size_t max_bytes,
                            std::filesystem::path const& file, std::string_view hint) {
    auto const corrupt = [&](std::string const& detail) {
        fail("{} is corrupt ({}): {}", file.string(), detail, hint);
    };
    if (expected_bytes > max_bytes) {
        corrupt(fmt::format("a record claims {} bytes, more than the {} any of its records holds", expected_bytes,
                            max_bytes));
    }
    std::size_t const limit = expected_bytes > 0 ? expected_bytes : max_bytes;
    Inflater inflater(file);
    z_stream& stream = inflater.stream();
    std::string out(std::min(limit, std::max<std::size_t>({expected_bytes, 4 * compressed.size(), 1024})), '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
    stream.avail_in = static_cast<uInt>(compressed.size());
    int status = Z_OK;
    while (status == Z_OK) {
        if (stream.total_out == out.size()) {
            if (out.size() == limit) corrupt(fmt::format("a compressed stream inflates past {} bytes", limit));
            out.resize(std::min(limit, 2 * out.size()));
        }
        stream.next_out = reinterpret_cast<Bytef*>(out.data()) + stream.total_out;
        stream.avail_out = static_cast<uInt>(out.size() - stream.total_out);
        status = inflate(&stream, Z_NO_FLUSH);
    }
    if (status != Z_STREAM_END) {
        char const* reason = stream.msg != nullptr ? stream.msg : zError(status);
        corrupt(fmt::format("a compressed stream is damaged or cut short: {}", reason));
    }
    out.resize(stream.total_out);
    return out;
}

}  // namespace axonn
