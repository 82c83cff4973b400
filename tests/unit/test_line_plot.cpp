// PNG images and line plots. What encode_png writes is read back by a small decoder of its own here (signature,
// every chunk's CRC, the header's fields, the inflated rows and their filter type), and the plots in it show what
// they should: a white background, a marker in its series' colour at each point, a gap where a value is missing,
// text in the titles and labels. No data, one point, or a path that cannot be written fail cleanly.
#include "axonn/core/error.h"
#include "axonn/io/line_plot.h"
#include "axonn/io/png.h"

#include "support/error_of.h"
#include "support/temp_dir.h"
#include "support/files.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace axonn {
namespace {

using axonn::testing::error_of;
using axonn::testing::TempDir;

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// ----- A PNG reader for what encode_png writes: 8-bit RGB, one IDAT, unfiltered rows -----

std::uint32_t read_u32(std::uint8_t const* bytes) {
    return std::uint32_t{bytes[0]} << 24 | std::uint32_t{bytes[1]} << 16 | std::uint32_t{bytes[2]} << 8 | bytes[3];
}

struct Chunk {
    std::string type;
    std::vector<std::uint8_t> data;
};

// Splits a PNG into its chunks, checking the signature and every chunk's CRC.
void read_chunks(std::vector<std::uint8_t> const& png, std::vector<Chunk>& chunks) {
    constexpr std::array<std::uint8_t, 8> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    ASSERT_GE(png.size(), signature.size());
    ASSERT_TRUE(std::equal(signature.begin(), signature.end(), png.begin())) << "no PNG signature";
    std::size_t at = signature.size();
    while (at < png.size()) {
        ASSERT_LE(at + 12, png.size()) << "a chunk is cut off";
        std::uint32_t const length = read_u32(&png[at]);
        ASSERT_LE(at + 12 + length, png.size()) << "a chunk's data is cut off";
        std::uint8_t const* type = &png[at + 4];  // type and data: what the CRC covers
        std::string const name(type, type + 4);
        EXPECT_EQ(read_u32(type + 4 + length), ::crc32(::crc32(0L, Z_NULL, 0), type, 4 + length))
            << "chunk " << name << " has a wrong CRC";
        chunks.push_back({name, std::vector<std::uint8_t>(type + 4, type + 4 + length)});
        at += 12 + length;
    }
}

void decode_png(std::vector<std::uint8_t> const& png, RgbImage& image) {
    std::vector<Chunk> chunks;
    ASSERT_NO_FATAL_FAILURE(read_chunks(png, chunks));
    ASSERT_EQ(chunks.size(), 3u);
    EXPECT_EQ(chunks[0].type, "IHDR");
    EXPECT_EQ(chunks[1].type, "IDAT");
    EXPECT_EQ(chunks[2].type, "IEND");
    EXPECT_TRUE(chunks[2].data.empty());
    std::vector<std::uint8_t> const& header = chunks[0].data;
    ASSERT_EQ(header.size(), 13u);
    auto const width = static_cast<int>(read_u32(&header[0]));
    auto const height = static_cast<int>(read_u32(&header[4]));
    ASSERT_GT(width, 0);
    ASSERT_GT(height, 0);
    EXPECT_EQ(header[8], 8) << "bit depth";
    EXPECT_EQ(header[9], 2) << "colour type (RGB)";
    EXPECT_EQ(header[10], 0) << "compression method";
    EXPECT_EQ(header[11], 0) << "filter method";
    EXPECT_EQ(header[12], 0) << "interlace method";

    std::size_t const row_bytes = 1 + 3 * static_cast<std::size_t>(width);
    std::vector<std::uint8_t> rows(row_bytes * static_cast<std::size_t>(height));
    uLongf inflated = rows.size();
    ASSERT_EQ(::uncompress(rows.data(), &inflated, chunks[1].data.data(), chunks[1].data.size()), Z_OK);
    ASSERT_EQ(inflated, rows.size());
    image = RgbImage(width, height);
    for (std::size_t y = 0; y < static_cast<std::size_t>(height); ++y) {
        ASSERT_EQ(rows[y * row_bytes], 0) << "row " << y << " is filtered";
        std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(y * row_bytes + 1), row_bytes - 1,
                    image.pixels.begin() + static_cast<std::ptrdiff_t>(y * (row_bytes - 1)));
    }
}

// Renders, encodes and decodes again: the tests look at the pixels a reader of the file would see.
void render_and_decode(std::string const& title, std::vector<PlotPanel> const& panels, RgbImage& image) {
    ASSERT_NO_FATAL_FAILURE(decode_png(encode_png(render_line_plots(title, panels)), image));
}

std::vector<std::uint8_t> png_file_bytes(std::filesystem::path const& path) {
    std::string const bytes = testing::file_bytes(path);
    return {bytes.begin(), bytes.end()};
}

// ----- Looking at pixels -----

int count_not_white(RgbImage const& image, int left, int top, int right, int bottom) {
    int count = 0;
    for (int y = top; y < bottom; ++y) {
        for (int x = left; x < right; ++x) count += image.at(x, y) == white ? 0 : 1;
    }
    return count;
}

int count_in_column(RgbImage const& image, int x, Rgb colour) {
    int count = 0;
    for (int y = 0; y < image.height; ++y) count += image.at(x, y) == colour ? 1 : 0;
    return count;
}

// The middle columns of the series' markers, left to right. A marker is 6 or 7 pixels of the colour high, a
// line through it 1 or 2: columns where the colour is at least 5 high are marker columns.
std::vector<double> marker_centres(RgbImage const& image, Rgb colour) {
    std::vector<double> centres;
    int first = -1;
    for (int x = 0; x <= image.width; ++x) {
        bool const marker = x < image.width && count_in_column(image, x, colour) >= 5;
        if (marker && first < 0) first = x;
        if (!marker && first >= 0) {
            centres.push_back((first + x - 1) / 2.0);
            first = -1;
        }
    }
    return centres;
}

// The row where the colour is most common: the line of a series of equal values.
int busiest_row(RgbImage const& image, Rgb colour) {
    int best = 0, most = -1;
    for (int y = 0; y < image.height; ++y) {
        int count = 0;
        for (int x = 0; x < image.width; ++x) count += image.at(x, y) == colour ? 1 : 0;
        if (count > most) {
            most = count;
            best = y;
        }
    }
    return best;
}

// How many unbroken stretches of the colour the row holds.
int runs_in_row(RgbImage const& image, int y, Rgb colour) {
    int runs = 0;
    bool inside = false;
    for (int x = 0; x < image.width; ++x) {
        bool const here = image.at(x, y) == colour;
        runs += here && !inside ? 1 : 0;
        inside = here;
    }
    return runs;
}

double mean_row(RgbImage const& image, Rgb colour) {
    double sum = 0;
    int count = 0;
    for (int y = 0; y < image.height; ++y) {
        for (int x = 0; x < image.width; ++x) {
            if (image.at(x, y) != colour) continue;
            sum += y;
            ++count;
        }
    }
    return count ? sum / count : -1;
}

// One panel of one unlabelled series (no legend to find its colour in), y fixed to [-1, 1].
PlotPanel flat_panel(std::vector<double> x, std::vector<double> y, bool log2_x = false) {
    PlotPanel panel;
    panel.series.push_back({"", std::move(x), std::move(y)});
    panel.log2_x = log2_x;
    panel.y_min = -1;
    panel.y_max = 1;
    return panel;
}

void expect_evenly_spaced(std::vector<double> const& centres) {
    for (std::size_t i = 2; i < centres.size(); ++i) {
        EXPECT_NEAR(centres[i] - centres[i - 1], centres[1] - centres[0], 1.0) << "marker " << i;
    }
}

// ----- PNG -----

TEST(Png, EncodesAPngThatDecodesToTheSamePixels) {
    RgbImage image(7, 5);
    for (std::size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<std::uint8_t>(i * 37);
    RgbImage decoded;
    ASSERT_NO_FATAL_FAILURE(decode_png(encode_png(image), decoded));
    EXPECT_EQ(decoded.width, 7);
    EXPECT_EQ(decoded.height, 5);
    EXPECT_EQ(decoded.pixels, image.pixels);
}

TEST(Png, AnImageWhosePixelsDoNotMatchItsSizeIsABug) {
    RgbImage image(4, 4);
    image.pixels.pop_back();
    EXPECT_THROW(encode_png(image), InternalError);
    EXPECT_THROW(encode_png(RgbImage()), InternalError);
}

TEST(Png, WritesTheFileAndNamesAPathThatCannotBeWritten) {
    TempDir dir;
    RgbImage const image(3, 2, {10, 20, 30});
    write_png(dir / "image.png", image);
    EXPECT_EQ(png_file_bytes(dir / "image.png"), encode_png(image));
    std::filesystem::path const missing = dir / "no_such_folder" / "image.png";
    EXPECT_NE(error_of([&] { write_png(missing, image); }).find(missing.string()), std::string::npos);
}

// ----- Line plots -----

TEST(LinePlot, TheBackgroundIsWhite) {
    RgbImage image;
    ASSERT_NO_FATAL_FAILURE(render_and_decode("Title", {flat_panel({0, 1, 2}, {0, 0.5, 0})}, image));
    EXPECT_EQ(image.width, 480);
    EXPECT_EQ(image.at(0, 0), white);
    EXPECT_EQ(image.at(image.width - 1, 0), white);
    EXPECT_EQ(image.at(0, image.height - 1), white);
    EXPECT_EQ(image.at(image.width - 1, image.height - 1), white);
    EXPECT_GT(count_not_white(image, 0, 0, image.width, image.height), 0);
    EXPECT_LT(count_not_white(image, 0, 0, image.width, image.height), image.width * image.height / 5);
}

TEST(LinePlot, EachPointHasAMarkerInItsSeriesColourEvenlySpacedLikeItsX) {
    RgbImage image;
    ASSERT_NO_FATAL_FAILURE(render_and_decode("", {flat_panel({0, 1, 2, 3, 4}, {0, 0, 0, 0, 0})}, image));
    std::vector<double> const centres = marker_centres(image, plot_series_colour(0));
    EXPECT_EQ(centres.size(), 5u);
    expect_evenly_spaced(centres);
    EXPECT_EQ(runs_in_row(image, busiest_row(image, plot_series_colour(0)), plot_series_colour(0)), 1)
        << "one unbroken line";
}

TEST(LinePlot, ALog2AxisSpacesPowersOfTwoEvenly) {
    RgbImage image;
    ASSERT_NO_FATAL_FAILURE(render_and_decode("", {flat_panel({1, 2, 4, 8, 16, 32}, {0, 0, 0, 0, 0, 0}, true)},
                                              image));
    std::vector<double> const centres = marker_centres(image, plot_series_colour(0));
    EXPECT_EQ(centres.size(), 6u);
    expect_evenly_spaced(centres);
}

TEST(LinePlot, ANanValueLeavesAGapInTheLine) {
    RgbImage image;
    ASSERT_NO_FATAL_FAILURE(render_and_decode("", {flat_panel({0, 1, 2, 3, 4}, {0, 0, nan, 0, 0})}, image));
    std::vector<double> const centres = marker_centres(image, plot_series_colour(0));
    ASSERT_EQ(centres.size(), 4u);
    EXPECT_NEAR(centres[2] - centres[1], 2 * (centres[1] - centres[0]), 1.0) << "the missing point keeps its place";
    EXPECT_EQ(runs_in_row(image, busiest_row(image, plot_series_colour(0)), plot_series_colour(0)), 2)
        << "no line across the missing point";
}

TEST(LinePlot, SeriesAreDrawnAtTheirValuesInTheirOwnColours) {
    PlotPanel panel = flat_panel({0, 1, 2}, {0.5, 0.5, 0.5});
    panel.series.push_back({"", {0, 1, 2}, {-0.5, -0.5, -0.5}});
    RgbImage image;
    ASSERT_NO_FATAL_FAILURE(render_and_decode("", {panel}, image));
    ASSERT_NE(plot_series_colour(0), plot_series_colour(1));
    double const high = mean_row(image, plot_series_colour(0));
    double const low = mean_row(image, plot_series_colour(1));
    ASSERT_GE(high, 0);
    ASSERT_GE(low, 0);
    EXPECT_LT(high, low) << "the larger value is drawn higher";
}

TEST(LinePlot, PanelsStandSideBySide) {
    RgbImage image;
    ASSERT_NO_FATAL_FAILURE(render_and_decode("", {flat_panel({0, 1}, {0, 0}), flat_panel({0, 1}, {0, 0})}, image));
    EXPECT_EQ(image.width, 2 * 480);
    EXPECT_EQ(image.height, 360);
    std::vector<double> const centres = marker_centres(image, plot_series_colour(0));
    ASSERT_EQ(centres.size(), 4u);
    EXPECT_LT(centres[1], 480);
    EXPECT_GT(centres[2], 480);
}

TEST(LinePlot, TitlesAndLabelsAreDrawnAsText) {
    PlotPanel labelled = flat_panel({0, 1}, {0, 0});
    labelled.x_label = "ranks";
    labelled.y_label = "step time (ms)";
    labelled.series[0].label = "tensor parallel";
    RgbImage titled, bare;
    ASSERT_NO_FATAL_FAILURE(render_and_decode("Scaling", {labelled}, titled));
    ASSERT_NO_FATAL_FAILURE(render_and_decode("", {flat_panel({0, 1}, {0, 0})}, bare));
    int const band = titled.height - bare.height;
    EXPECT_GT(band, 0) << "a title gets a band of its own";
    EXPECT_GT(count_not_white(titled, 0, 0, titled.width, band), 30) << "the title";
    EXPECT_GT(count_not_white(titled, 0, titled.height - 17, titled.width, titled.height), 20) << "the x label";
    EXPECT_EQ(count_not_white(bare, 0, bare.height - 17, bare.width, bare.height), 0);
    EXPECT_GT(count_not_white(titled, 0, band, 17, titled.height), 30) << "the y label";
    EXPECT_EQ(count_not_white(bare, 0, 0, 17, bare.height), 0);
}

TEST(LinePlot, NoDataOnePointAndOddRangesDrawWithoutFailing) {
    PlotPanel empty;
    empty.series.push_back({"nothing", {}, {}});
    PlotPanel one_point;
    one_point.series.push_back({"one", {3}, {7}});
    PlotPanel all_missing;
    all_missing.series.push_back({"missing", {1, 2}, {nan, nan}});
    PlotPanel not_on_log_axis = flat_panel({-1, 0, 3, 3.5}, {0, 0, 0, 0}, true);  // within one octave, and x <= 0
    PlotPanel backwards = flat_panel({0, 1}, {1e12, 1e12 + 1});
    backwards.y_min = 5;
    backwards.y_max = -5;
    PlotPanel tiny = flat_panel({1e-9, 2e-9}, {1e-7, 3e-7});
    tiny.y_min.reset();
    tiny.y_max.reset();
    PlotPanel far_outside = flat_panel({0, 1, 2, 3}, {0, 1e300, -1e300, 1e308});  // y fixed to [-1, 1]
    PlotPanel huge;
    huge.series.push_back({"", {-1e308, 0, 1e308}, {-1e308, 0, 1e308}});
    RgbImage image;
    ASSERT_NO_FATAL_FAILURE(render_and_decode("All odd: \t\xc3\xa9", {empty, one_point, all_missing,
                                                                      not_on_log_axis, backwards, tiny}, image));
    EXPECT_EQ(image.width, 6 * 480);
    EXPECT_EQ(marker_centres(image, plot_series_colour(0)).size(), 1u + 2u + 2u + 3u)
        << "the single point, the two drawable x on the log axis, the two tiny points, and the 3 legends' samples";
    ASSERT_NO_FATAL_FAILURE(render_and_decode("", {far_outside, huge}, image));
    ASSERT_NO_FATAL_FAILURE(render_and_decode("No panels", {}, image));
    EXPECT_EQ(image.width, 480);
}

TEST(LinePlot, ASeriesWithMoreXThanYIsABug) {
    PlotPanel panel;
    panel.series.push_back({"bad", {1, 2, 3}, {1, 2}});
    EXPECT_THROW(render_line_plots("", {panel}), InternalError);
}

TEST(LinePlot, WritesAPngAndNamesAFolderThatDoesNotExist) {
    TempDir dir;
    std::vector<PlotPanel> const panels = {flat_panel({0, 1}, {0, 0})};
    write_line_plots(dir / "plot.png", "Plot", panels);
    RgbImage image;
    ASSERT_NO_FATAL_FAILURE(decode_png(png_file_bytes(dir / "plot.png"), image));
    EXPECT_EQ(image.pixels, render_line_plots("Plot", panels).pixels);
    std::filesystem::path const missing = dir / "no_such_folder" / "plot.png";
    std::string const message = error_of([&] { write_line_plots(missing, "Plot", panels); });
    EXPECT_NE(message.find(missing.string()), std::string::npos) << message;
}

}  // namespace
}  // namespace axonn
