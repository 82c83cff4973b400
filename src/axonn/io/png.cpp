#include "axonn/io/png.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"

#include <zlib.h>

#include <array>
#include <cstddef>
#include <string_view>

namespace axonn {
namespace {

constexpr std::array<std::uint8_t, 8> png_signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
constexpr std::uint8_t bit_depth = 8;
constexpr std::uint8_t colour_type_rgb = 2;
constexpr std::uint8_t filter_type_none = 0;

std::size_t pixel_index(RgbImage const& image, int x, int y) {
    return (static_cast<std::size_t>(y) * static_cast<std::size_t>(image.width) + static_cast<std::size_t>(x)) * 3;
}

// PNG stores every integer big-endian.
void append_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(value >> shift));
}

// A chunk: length, type, data, and the CRC-32 of type and data.
void append_chunk(std::vector<std::uint8_t>& out, std::string_view type, std::vector<std::uint8_t> const& data) {
    AXONN_INVARIANT(type.size() == 4 && data.size() <= 0x7fffffffu, "bad PNG chunk {} of {} bytes", type, data.size());
    append_u32(out, static_cast<std::uint32_t>(data.size()));
    std::size_t const type_begin = out.size();
    out.insert(out.end(), type.begin(), type.end());
    out.insert(out.end(), data.begin(), data.end());
    uLong const crc =
        ::crc32(::crc32(0L, Z_NULL, 0), out.data() + type_begin, static_cast<uInt>(out.size() - type_begin));
    append_u32(out, static_cast<std::uint32_t>(crc));
}

std::vector<std::uint8_t> header_chunk_data(RgbImage const& image) {
    std::vector<std::uint8_t> data;
    append_u32(data, static_cast<std::uint32_t>(image.width));
    append_u32(data, static_cast<std::uint32_t>(image.height));
    data.insert(data.end(), {bit_depth, colour_type_rgb, 0 /* deflate */, 0 /* adaptive filtering */,
                             0 /* no interlace */});
    return data;
}

// Every row prefixed with its filter type (none), then deflated as one zlib stream.
std::vector<std::uint8_t> compressed_rows(RgbImage const& image) {
    std::size_t const row_bytes = static_cast<std::size_t>(image.width) * 3;
    std::vector<std::uint8_t> rows;
    rows.reserve((row_bytes + 1) * static_cast<std::size_t>(image.height));
    for (int y = 0; y < image.height; ++y) {
        rows.push_back(filter_type_none);
        auto const row = image.pixels.begin() + static_cast<std::ptrdiff_t>(pixel_index(image, 0, y));
        rows.insert(rows.end(), row, row + static_cast<std::ptrdiff_t>(row_bytes));
    }
    uLongf compressed_size = ::compressBound(static_cast<uLong>(rows.size()));
    std::vector<std::uint8_t> compressed(compressed_size);
    int const status = ::compress2(compressed.data(), &compressed_size, rows.data(), static_cast<uLong>(rows.size()),
                                   Z_BEST_COMPRESSION);
    AXONN_REQUIRE(status == Z_OK, "cannot compress a {}x{} PNG image: zlib error {}", image.width, image.height,
                  status);
    compressed.resize(compressed_size);
    return compressed;
}

}  // namespace

RgbImage::RgbImage(int image_width, int image_height, Rgb fill) : width(image_width), height(image_height) {
    AXONN_INVARIANT(width >= 0 && height >= 0, "an image cannot be {}x{} pixels", width, height);
    pixels.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
    for (std::size_t i = 0; i < pixels.size(); i += 3) {
        pixels[i] = fill.r;
        pixels[i + 1] = fill.g;
        pixels[i + 2] = fill.b;
    }
}

Rgb RgbImage::at(int x, int y) const {
    AXONN_INVARIANT(contains(x, y), "pixel ({}, {}) is outside the {}x{} image", x, y, width, height);
    std::size_t const i = pixel_index(*this, x, y);
    return {pixels[i], pixels[i + 1], pixels[i + 2]};
}

void RgbImage::set(int x, int y, Rgb colour) {
    if (!contains(x, y)) return;
    std::size_t const i = pixel_index(*this, x, y);
    pixels[i] = colour.r;
    pixels[i + 1] = colour.g;
    pixels[i + 2] = colour.b;
}

std::vector<std::uint8_t> encode_png(RgbImage const& image) {
    AXONN_INVARIANT(image.width > 0 && image.height > 0, "a PNG image needs pixels, not {}x{}", image.width,
                    image.height);
    AXONN_INVARIANT(image.pixels.size() == pixel_index(image, 0, image.height),
                    "a {}x{} RGB image has {} bytes of pixels, not {}", image.width, image.height, image.pixels.size(),
                    pixel_index(image, 0, image.height));
    std::vector<std::uint8_t> png(png_signature.begin(), png_signature.end());
    append_chunk(png, "IHDR", header_chunk_data(image));
    append_chunk(png, "IDAT", compressed_rows(image));
    append_chunk(png, "IEND", {});
    return png;
}

void write_png(std::filesystem::path const& path, RgbImage const& image, ExistingDestination existing) {
    std::vector<std::uint8_t> const png = encode_png(image);
    write_file_atomically(path, std::string_view(reinterpret_cast<char const*>(png.data()), png.size()), "PNG image",
                          existing);
}

}  // namespace axonn
