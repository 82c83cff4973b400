// PNG images, written without any imaging library: the result plots (line_plot.h) are drawn into an RgbImage and
// encoded here as the simplest PNG there is: 8-bit RGB, no interlacing, every row unfiltered (filter type 0), all
// pixel data in one zlib stream in one IDAT chunk. Plots are mostly white, so zlib alone compresses them well.
#pragma once

#include "axonn/core/file_io.h"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace axonn {

struct Rgb {
    std::uint8_t r = 0, g = 0, b = 0;
    friend bool operator==(Rgb, Rgb) = default;
};

inline constexpr Rgb white{255, 255, 255};

// An 8-bit RGB image, row-major, 3 bytes per pixel, row 0 at the top.
struct RgbImage {
    int width = 0, height = 0;
    std::vector<std::uint8_t> pixels;

    RgbImage() = default;
    RgbImage(int image_width, int image_height, Rgb fill = white);

    bool contains(int x, int y) const { return x >= 0 && y >= 0 && x < width && y < height; }
    Rgb at(int x, int y) const;          // the pixel at column x, row y, which must be inside the image
    void set(int x, int y, Rgb colour);  // does nothing outside the image, so drawing clips at its edges
};

// The PNG file's bytes. An image without pixels, or whose pixels do not match its size, is an InternalError.
std::vector<std::uint8_t> encode_png(RgbImage const& image);

// Encodes the image and writes it atomically (whole or not at all); a path that cannot be written is an
// axonn::Error naming it. `existing`: what happens to a file that appeared at `path` after it was checked.
void write_png(std::filesystem::path const& path, RgbImage const& image,
               ExistingDestination existing = ExistingDestination::replace);

}  // namespace axonn
