#include "axonn/io/line_plot.h"

#include "axonn/core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <utility>

namespace axonn {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// The font: 5 columns by 9 rows per glyph. Rows 0-6 stand on the baseline (capitals are 7 rows high, lowercase 5);
// rows 7-8 hold descenders. Rows left out are blank.

constexpr int glyph_columns = 5;
constexpr int glyph_rows = 9;
constexpr int cap_height = 7;

struct Glyph {
    char character;
    std::array<std::string_view, glyph_rows> rows;
};

// clang-format off
constexpr std::array<Glyph, 95> font = {{
    {' ', {}},
    {'!', {"..#..", "..#..", "..#..", "..#..", "..#..", ".....", "..#.."}},
    {'"', {".#.#.", ".#.#.", ".#.#."}},
    {'#', {".#.#.", ".#.#.", "#####", ".#.#.", "#####", ".#.#.", ".#.#."}},
    {'$', {"..#..", ".####", "#.#..", ".###.", "..#.#", "####.", "..#.."}},
    {'%', {"##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"}},
    {'&', {".##..", "#..#.", "#.#..", ".#...", "#.#.#", "#..#.", ".##.#"}},
    {'\'', {"..#..", "..#..", "..#.."}},
    {'(', {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."}},
    {')', {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."}},
    {'*', {".....", "..#..", "#.#.#", ".###.", "#.#.#", "..#..", "....."}},
    {'+', {".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."}},
    {',', {".....", ".....", ".....", ".....", ".....", ".##..", ".##..", "..#..", ".#..."}},
    {'-', {".....", ".....", ".....", "#####", ".....", ".....", "....."}},
    {'.', {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."}},
    {'/', {".....", "....#", "...#.", "..#..", ".#...", "#....", "....."}},
    {'0', {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."}},
    {'1', {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'2', {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"}},
    {'3', {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."}},
    {'4', {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."}},
    {'5', {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."}},
    {'6', {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."}},
    {'7', {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."}},
    {'8', {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."}},
    {'9', {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."}},
    {':', {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."}},
    {';', {".....", ".##..", ".##..", ".....", ".....", ".##..", ".##..", "..#..", ".#..."}},
    {'<', {"...#.", "..#..", ".#...", "#....", ".#...", "..#..", "...#."}},
    {'=', {".....", ".....", "#####", ".....", "#####", ".....", "....."}},
    {'>', {".#...", "..#..", "...#.", "....#", "...#.", "..#..", ".#..."}},
    {'?', {".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."}},
    {'@', {".###.", "#...#", "....#", ".##.#", "#.#.#", "#.#.#", ".###."}},
    {'A', {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
    {'B', {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."}},
    {'C', {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."}},
    {'D', {"###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###.."}},
    {'E', {"#####", "#....", "#....", "####.", "#....", "#....", "#####"}},
    {'F', {"#####", "#....", "#....", "####.", "#....", "#....", "#...."}},
    {'G', {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"}},
    {'H', {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
    {'I', {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'J', {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."}},
    {'K', {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"}},
    {'L', {"#....", "#....", "#....", "#....", "#....", "#....", "#####"}},
    {'M', {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"}},
    {'N', {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"}},
    {'O', {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
    {'P', {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."}},
    {'Q', {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"}},
    {'R', {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"}},
    {'S', {".####", "#....", "#....", ".###.", "....#", "....#", "####."}},
    {'T', {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."}},
    {'U', {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
    {'V', {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
    {'W', {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."}},
    {'X', {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"}},
    {'Y', {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."}},
    {'Z', {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"}},
    {'[', {".###.", ".#...", ".#...", ".#...", ".#...", ".#...", ".###."}},
    {'\\', {".....", "#....", ".#...", "..#..", "...#.", "....#", "....."}},
    {']', {".###.", "...#.", "...#.", "...#.", "...#.", "...#.", ".###."}},
    {'^', {"..#..", ".#.#.", "#...#"}},
    {'_', {".....", ".....", ".....", ".....", ".....", ".....", ".....", "#####"}},
    {'`', {".#...", "..#..", "...#."}},
    {'a', {".....", ".....", ".###.", "....#", ".####", "#...#", ".####"}},
    {'b', {"#....", "#....", "#.##.", "##..#", "#...#", "#...#", "####."}},
    {'c', {".....", ".....", ".###.", "#....", "#....", "#...#", ".###."}},
    {'d', {"....#", "....#", ".##.#", "#..##", "#...#", "#...#", ".####"}},
    {'e', {".....", ".....", ".###.", "#...#", "#####", "#....", ".###."}},
    {'f', {"..##.", ".#..#", ".#...", "###..", ".#...", ".#...", ".#..."}},
    {'g', {".....", ".....", ".####", "#...#", "#...#", "#...#", ".####", "....#", ".###."}},
    {'h', {"#....", "#....", "#.##.", "##..#", "#...#", "#...#", "#...#"}},
    {'i', {"..#..", ".....", ".##..", "..#..", "..#..", "..#..", ".###."}},
    {'j', {"...#.", ".....", "..##.", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."}},
    {'k', {"#....", "#....", "#..#.", "#.#..", "##...", "#.#..", "#..#."}},
    {'l', {".##..", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'m', {".....", ".....", "##.#.", "#.#.#", "#.#.#", "#.#.#", "#.#.#"}},
    {'n', {".....", ".....", "#.##.", "##..#", "#...#", "#...#", "#...#"}},
    {'o', {".....", ".....", ".###.", "#...#", "#...#", "#...#", ".###."}},
    {'p', {".....", ".....", "####.", "#...#", "#...#", "#...#", "####.", "#....", "#...."}},
    {'q', {".....", ".....", ".####", "#...#", "#...#", "#...#", ".####", "....#", "....#"}},
    {'r', {".....", ".....", "#.##.", "##..#", "#....", "#....", "#...."}},
    {'s', {".....", ".....", ".####", "#....", ".###.", "....#", "####."}},
    {'t', {".#...", ".#...", "###..", ".#...", ".#...", ".#..#", "..##."}},
    {'u', {".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#"}},
    {'v', {".....", ".....", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
    {'w', {".....", ".....", "#...#", "#...#", "#.#.#", "#.#.#", ".#.#."}},
    {'x', {".....", ".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#"}},
    {'y', {".....", ".....", "#...#", "#...#", "#...#", "#...#", ".####", "....#", ".###."}},
    {'z', {".....", ".....", "#####", "...#.", "..#..", ".#...", "#####"}},
    {'{', {"...#.", "..#..", "..#..", ".#...", "..#..", "..#..", "...#."}},
    {'|', {"..#..", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."}},
    {'}', {".#...", "..#..", "..#..", "...#.", "..#..", "..#..", ".#..."}},
    {'~', {".....", ".....", ".#...", "#.#.#", "...#.", ".....", "....."}},
}};
// clang-format on

// The table is indexed by character code, and a typo in its art would draw garbage: both are checked here.
constexpr bool font_is_well_formed() {
    for (std::size_t i = 0; i < font.size(); ++i) {
        if (font[i].character != static_cast<char>(' ' + i)) return false;
        for (std::string_view const& row : font[i].rows) {
            if (!row.empty() && row.size() != glyph_columns) return false;
            if (row.find_first_not_of(".#") != std::string_view::npos) return false;
        }
    }
    return true;
}
static_assert(font_is_well_formed(), "the font must hold printable ASCII in order, in rows of 5 '.' or '#'");

Glyph const& glyph_of(char c) {
    auto const code = static_cast<unsigned char>(c);
    return font[(code >= ' ' && code <= '~' ? code : '?') - ' '];
}

// The bytes after the first of a UTF-8 character: skipped, so that a character the font lacks is one '?'.
bool continues_a_character(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

bool is_ink(Glyph const& glyph, int column, int row) {
    std::string_view const line = glyph.rows[static_cast<std::size_t>(row)];
    return static_cast<std::size_t>(column) < line.size() && line[static_cast<std::size_t>(column)] == '#';
}

// The columns a glyph's ink spans. Text is set proportionally, so that 'i' takes less room than 'm'; digits keep the
// full width so that numbers with as many digits are as wide, and a space is 3 columns.
struct InkSpan {
    int first, last;
};

InkSpan ink_span(Glyph const& glyph) {
    if (glyph.character >= '0' && glyph.character <= '9') return {0, glyph_columns - 1};
    InkSpan span{glyph_columns, -1};
    for (int row = 0; row < glyph_rows; ++row) {
        for (int column = 0; column < glyph_columns; ++column) {
            if (!is_ink(glyph, column, row)) continue;
            span.first = std::min(span.first, column);
            span.last = std::max(span.last, column);
        }
    }
    return span.last < 0 ? InkSpan{0, 2} : span;
}

// Columns from one glyph's start to the next's: its ink and one blank column.
int advance(Glyph const& glyph) {
    InkSpan const span = ink_span(glyph);
    return span.last - span.first + 2;
}

int text_width(std::string_view text, int scale = 1) {
    int columns = 0;
    for (char c : text) {
        if (!continues_a_character(c)) columns += advance(glyph_of(c));
    }
    return std::max(0, columns - 1) * scale;  // no blank column after the last glyph
}

// ---------------------------------------------------------------------------------------------------------------
// Drawing. Pixel (i, j) covers [i, i+1) x [j, j+1); shapes are anti-aliased by how far a pixel's centre is from
// their edge, text is not (a bitmap font is sharpest as it is).

struct Point {
    int x, y;
};

struct Vec2 {
    double x, y;
};

// Right and bottom are exclusive.
struct Rect {
    int left, top, right, bottom;
    int width() const { return right - left; }
    int height() const { return bottom - top; }
    bool contains(Vec2 p) const { return p.x >= left && p.x < right && p.y >= top && p.y < bottom; }
};

constexpr Rgb text_colour{30, 30, 30};
constexpr Rgb axis_colour{90, 90, 90};
constexpr Rgb grid_colour{230, 230, 230};
constexpr Rgb legend_border_colour{200, 200, 200};

enum class TextDirection { rightward, upward };

void draw_text_pixel(RgbImage& image, Point origin, int along, int down, int scale, Rgb colour,
                     TextDirection direction) {
    for (int dy = 0; dy < scale; ++dy) {
        for (int dx = 0; dx < scale; ++dx) {
            int const u = along + dx;
            int const v = down + dy;
            if (direction == TextDirection::rightward) {
                image.set(origin.x + u, origin.y + v, colour);
            } else {
                image.set(origin.x + v, origin.y - u, colour);
            }
        }
    }
}

// Draws `text` with the top-left corner of its first glyph at `origin`; upward text is turned a quarter turn
// anticlockwise (for a y-axis label), and `origin` is then the bottom-left corner.
void draw_text(RgbImage& image, Point origin, std::string_view text, Rgb colour, int scale = 1,
               TextDirection direction = TextDirection::rightward) {
    int pen = 0;
    for (char c : text) {
        if (continues_a_character(c)) continue;
        Glyph const& glyph = glyph_of(c);
        InkSpan const span = ink_span(glyph);
        for (int row = 0; row < glyph_rows; ++row) {
            for (int column = span.first; column <= span.last; ++column) {
                if (!is_ink(glyph, column, row)) continue;
                draw_text_pixel(image, origin, pen + (column - span.first) * scale, row * scale, scale, colour,
                                direction);
            }
        }
        pen += advance(glyph) * scale;
    }
}

void draw_text_centred(RgbImage& image, int centre_x, int top, std::string_view text, Rgb colour, int scale = 1) {
    draw_text(image, {centre_x - text_width(text, scale) / 2, top}, text, colour, scale);
}

// Mixes `colour` over what is there, in proportion `coverage` (0 to 1).
void blend(RgbImage& image, int x, int y, Rgb colour, double coverage) {
    if (coverage <= 0 || !image.contains(x, y)) return;
    if (coverage >= 1) {
        image.set(x, y, colour);
        return;
    }
    Rgb const old = image.at(x, y);
    auto const mix = [coverage](std::uint8_t from, std::uint8_t to) {
        return static_cast<std::uint8_t>(std::lround(from + (to - from) * coverage));
    };
    image.set(x, y, {mix(old.r, colour.r), mix(old.g, colour.g), mix(old.b, colour.b)});
}

void fill_rect(RgbImage& image, Rect const& rect, Rgb colour) {
    for (int y = rect.top; y < rect.bottom; ++y) {
        for (int x = rect.left; x < rect.right; ++x) image.set(x, y, colour);
    }
}

void draw_outline(RgbImage& image, Rect const& rect, Rgb colour) {
    fill_rect(image, {rect.left, rect.top, rect.right, rect.top + 1}, colour);
    fill_rect(image, {rect.left, rect.bottom - 1, rect.right, rect.bottom}, colour);
    fill_rect(image, {rect.left, rect.top, rect.left + 1, rect.bottom}, colour);
    fill_rect(image, {rect.right - 1, rect.top, rect.right, rect.bottom}, colour);
}

// Coverage of a pixel whose centre is `distance` from the middle of a shape that reaches `radius` from it: full
// inside, none outside, and a one-pixel ramp across the edge that smooths it.
double coverage(double distance, double radius) { return std::clamp(radius + 0.5 - distance, 0.0, 1.0); }

double distance_to_segment(Vec2 p, Vec2 a, Vec2 b) {
    double const dx = b.x - a.x;
    double const dy = b.y - a.y;
    double const length_squared = dx * dx + dy * dy;
    double const t =
        length_squared > 0 ? std::clamp(((p.x - a.x) * dx + (p.y - a.y) * dy) / length_squared, 0.0, 1.0) : 0.0;
    return std::hypot(p.x - (a.x + t * dx), p.y - (a.y + t * dy));
}

// Calls visit(x, y) for every pixel of `clip` (and of the image) within `reach` of the box spanned by a and b.
template <typename Visit>
void for_pixels_near(RgbImage const& image, Vec2 a, Vec2 b, double reach, Rect const& clip, Visit&& visit) {
    int const left = std::max({clip.left, 0, static_cast<int>(std::floor(std::min(a.x, b.x) - reach))});
    int const right = std::min({clip.right, image.width, static_cast<int>(std::ceil(std::max(a.x, b.x) + reach))});
    int const top = std::max({clip.top, 0, static_cast<int>(std::floor(std::min(a.y, b.y) - reach))});
    int const bottom = std::min({clip.bottom, image.height, static_cast<int>(std::ceil(std::max(a.y, b.y) + reach))});
    for (int y = top; y < bottom; ++y) {
        for (int x = left; x < right; ++x) visit(x, y);
    }
}

constexpr double line_half_width = 1.0;  // lines are 2 pixels wide

void draw_segment(RgbImage& image, Vec2 a, Vec2 b, Rgb colour, Rect const& clip) {
    for_pixels_near(image, a, b, line_half_width + 1, clip, [&](int x, int y) {
        blend(image, x, y, colour, coverage(distance_to_segment({x + 0.5, y + 0.5}, a, b), line_half_width));
    });
}

// Series are told apart by marker shape as well as colour, for readers who cannot tell the colours apart.
enum class MarkerShape { circle, square, diamond };

MarkerShape marker_shape(std::size_t series_index) {
    constexpr std::array<MarkerShape, 3> shapes = {MarkerShape::circle, MarkerShape::square, MarkerShape::diamond};
    return shapes[series_index % shapes.size()];
}

// Coverage of the pixel whose centre is (dx, dy) from the marker's centre; the three shapes look about as big.
double marker_coverage(MarkerShape shape, double dx, double dy) {
    switch (shape) {
        case MarkerShape::circle: return coverage(std::hypot(dx, dy), 3.5);
        case MarkerShape::square: return coverage(std::max(std::abs(dx), std::abs(dy)), 3.0);
        case MarkerShape::diamond: return coverage(std::abs(dx) + std::abs(dy), 4.5);
    }
    return 0;
}

constexpr double marker_reach = 5;

void draw_marker(RgbImage& image, Vec2 centre, MarkerShape shape, Rgb colour, Rect const& clip) {
    for_pixels_near(image, centre, centre, marker_reach, clip, [&](int x, int y) {
        blend(image, x, y, colour, marker_coverage(shape, x + 0.5 - centre.x, y + 0.5 - centre.y));
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Axes. Positions along an axis are in axis units: the value itself, or its log2 on a log2 axis.

struct Range {
    double lo, hi;
};

struct Tick {
    double position;  // in axis units
    std::string label;
};

struct Axis {
    Range range{0, 1};  // in axis units
    bool log2 = false;
    std::vector<Tick> ticks;

    double units(double value) const { return log2 ? std::log2(value) : value; }
    double fraction_of_units(double position) const { return (position - range.lo) / (range.hi - range.lo); }
    double fraction(double value) const { return fraction_of_units(units(value)); }
};

bool is_drawable_x(PlotPanel const& panel, double x) { return std::isfinite(x) && (!panel.log2_x || x > 0); }

bool is_drawable(PlotPanel const& panel, double x, double y) { return is_drawable_x(panel, x) && std::isfinite(y); }

void extend(std::optional<Range>& range, double value) {
    range = range ? Range{std::min(range->lo, value), std::max(range->hi, value)} : Range{value, value};
}

// The x values that could be drawn, in axis units, even where y is missing: a configuration that failed everywhere
// keeps its place on the axis.
std::optional<Range> x_data_range(PlotPanel const& panel) {
    std::optional<Range> range;
    for (PlotSeries const& series : panel.series) {
        for (double x : series.x) {
            if (is_drawable_x(panel, x)) extend(range, panel.log2_x ? std::log2(x) : x);
        }
    }
    return range;
}

std::optional<Range> y_data_range(PlotPanel const& panel) {
    std::optional<Range> range;
    for (PlotSeries const& series : panel.series) {
        for (std::size_t i = 0; i < series.y.size(); ++i) {
            if (is_drawable(panel, series.x[i], series.y[i])) extend(range, series.y[i]);
        }
    }
    return range;
}

// The data's range with room around it, so that markers at the extremes clear the frame. One value alone is
// centred; no values at all give [0, 1].
Range with_margin(std::optional<Range> data, double fraction) {
    if (!data) return {0, 1};
    if (!std::isfinite(data->hi - data->lo)) return *data;  // values near the largest double: no room for more
    if (data->hi > data->lo) {
        double const margin = (data->hi - data->lo) * fraction;
        return {data->lo - margin, data->hi + margin};
    }
    double const pad = data->lo != 0 ? std::abs(data->lo) * 0.1 : 1.0;
    return {data->lo - pad, data->hi + pad};
}

// 1, 2 or 5 times a power of ten: tick spacings a reader counts in at a glance.
struct NiceStep {
    double size;
    int exponent;  // of the power of ten; the labels need -exponent decimals
};

// The smallest nice step that puts at most about `most` intervals on `span`.
NiceStep nice_step(double span, int most) {
    double const rough = span / std::max(1, most);
    int const exponent = static_cast<int>(std::floor(std::log10(rough)));
    double const power = std::pow(10.0, exponent);
    for (double mantissa : {1.0, 2.0, 5.0}) {
        if (mantissa * power >= rough * (1 - 1e-9)) return {mantissa * power, exponent};
    }
    return {10 * power, exponent + 1};
}

// "1.5e6" rather than fmt's "1.5e+06": tick labels are short.
std::string compact_exponent(std::string text) {
    std::size_t const e = text.find('e');
    if (e == std::string::npos) return text;
    std::string mantissa = text.substr(0, e);
    std::string exponent = text.substr(e + 1);
    bool const negative = exponent.front() == '-';
    exponent.erase(0, exponent.find_first_not_of("+-0"));
    return mantissa + "e" + (negative ? "-" : "") + (exponent.empty() ? "0" : exponent);
}

std::string linear_tick_label(double value, NiceStep step) {
    if (std::abs(value) < step.size * 1e-6) value = 0;  // rounding leaves 1e-17 or -0 where zero was meant
    bool const scientific = std::abs(value) >= 1e6 || step.exponent < -4;  // fixed point takes too many digits
    if (scientific && value == 0) return "0";
    if (scientific) {
        int const significant = static_cast<int>(std::floor(std::log10(std::abs(value)))) - step.exponent + 1;
        return compact_exponent(fmt::format("{:.{}e}", value, std::max(0, significant - 1)));
    }
    return fmt::format("{:.{}f}", value, std::max(0, -step.exponent));
}

constexpr int max_ticks = 64;  // a bound on every tick loop, whatever the range

std::vector<Tick> linear_ticks(Range range, int most) {
    std::vector<Tick> ticks;
    double const span = range.hi - range.lo;
    if (!(span > 0) || !std::isfinite(span)) return ticks;
    NiceStep const step = nice_step(span, most);
    double const first = std::ceil(range.lo / step.size - 1e-9);
    double const count = std::min<double>(std::floor(range.hi / step.size + 1e-9) - first, max_ticks);
    for (int i = 0; i <= count; ++i) {
        double const value = (first + i) * step.size;
        ticks.push_back({value, linear_tick_label(value, step)});
    }
    return ticks;
}

std::string power_of_two_label(int exponent) {
    if (exponent >= 0 && exponent < 20) return std::to_string(1 << exponent);
    if (exponent >= -3 && exponent < 0) return fmt::format("{}", std::ldexp(1.0, exponent));  // 0.5 to 0.125
    return fmt::format("2^{}", exponent);
}

// Ticks at the powers of two in the range (log2 units). A range within one octave has none: it gets nice linear
// ticks of the values themselves, placed on the log scale.
std::vector<Tick> log2_ticks(Range range, int most) {
    std::vector<Tick> ticks;
    double const first = std::ceil(range.lo);
    double const count = std::min<double>(std::floor(range.hi) - first, max_ticks);
    for (int i = 0; i <= count; ++i) {
        int const exponent = static_cast<int>(first) + i;
        ticks.push_back({static_cast<double>(exponent), power_of_two_label(exponent)});
    }
    if (!ticks.empty()) return ticks;
    for (Tick tick : linear_ticks({std::exp2(range.lo), std::exp2(range.hi)}, most)) {
        if (tick.position > 0) ticks.push_back({std::log2(tick.position), tick.label});
    }
    return ticks;
}

constexpr int label_spacing = 8;  // the least blank between neighbouring x tick labels

bool x_labels_fit(Axis const& axis, std::vector<Tick> const& ticks, int length) {
    for (std::size_t i = 1; i < ticks.size(); ++i) {
        double const apart = (axis.fraction_of_units(ticks[i].position) -
                              axis.fraction_of_units(ticks[i - 1].position)) * length;
        double const needed = (text_width(ticks[i].label) + text_width(ticks[i - 1].label)) / 2.0 + label_spacing;
        if (apart < needed) return false;
    }
    return true;
}

std::vector<Tick> every_nth(std::vector<Tick> const& ticks, std::size_t n) {
    std::vector<Tick> kept;
    for (std::size_t i = 0; i < ticks.size(); i += n) kept.push_back(ticks[i]);
    return kept;
}

// Pixels per tick interval that the axes aim at: about what a reader needs between grid lines.
constexpr int x_pixels_per_tick = 60;
constexpr int y_pixels_per_tick = 40;

// The x axis over `length` pixels, with as many ticks as fit without their labels touching.
Axis x_axis(PlotPanel const& panel, int length) {
    Axis axis;
    axis.log2 = panel.log2_x;
    axis.range = with_margin(x_data_range(panel), 0.04);
    int const most = std::max(2, length / x_pixels_per_tick);
    if (axis.log2) {
        std::vector<Tick> const all = log2_ticks(axis.range, most);
        for (std::size_t n = 1; n <= std::max<std::size_t>(all.size(), 1); ++n) {
            axis.ticks = every_nth(all, n);
            if (x_labels_fit(axis, axis.ticks, length)) break;
        }
        return axis;
    }
    for (int fewer = most;; --fewer) {
        axis.ticks = linear_ticks(axis.range, fewer);
        if (fewer <= 1 || x_labels_fit(axis, axis.ticks, length)) break;
    }
    return axis;
}

// The y axis over `length` pixels: the fixed ends where the panel gives them, the data's with a margin otherwise.
Axis y_axis(PlotPanel const& panel, int length) {
    Axis axis;
    Range range = with_margin(y_data_range(panel), 0.05);
    if (panel.y_min && std::isfinite(*panel.y_min)) range.lo = *panel.y_min;
    if (panel.y_max && std::isfinite(*panel.y_max)) range.hi = *panel.y_max;
    if (!(range.hi > range.lo)) {  // one end fixed beyond all the data, or both fixed the wrong way round
        if (panel.y_max && !panel.y_min) {
            range.lo = range.hi - 1;
        } else {
            range.hi = range.lo + 1;
        }
    }
    axis.range = range;
    axis.ticks = linear_ticks(range, std::max(2, length / y_pixels_per_tick));
    return axis;
}

// ---------------------------------------------------------------------------------------------------------------
// Panels.

constexpr int padding = 8;  // around a panel's content, and the title's
constexpr int tick_length = 4;
constexpr int label_gap = 4;  // between a tick and its label, and between tick labels and the axis label
constexpr int min_panel_width = 160;
constexpr int min_panel_height = 120;
constexpr int title_scale = 2;
constexpr int title_band_height = glyph_rows * title_scale + 2 * padding;

struct PanelLayout {
    Rect plot;  // the frame of the data area
    Axis x, y;
};

int widest_label(std::vector<Tick> const& ticks) {
    int widest = 0;
    for (Tick const& tick : ticks) widest = std::max(widest, text_width(tick.label));
    return widest;
}

// Works inward from the panel's edges: its title above the plot, axis and tick labels below it and left of it.
// The y axis comes first, because the width of its labels decides where the plot starts.
PanelLayout lay_out_panel(PlotPanel const& panel, Rect const& area) {
    PanelLayout layout;
    layout.plot.top = area.top + padding + glyph_rows + padding;
    layout.plot.bottom = area.bottom - padding - glyph_rows - label_gap - glyph_rows - label_gap - tick_length;
    layout.y = y_axis(panel, layout.plot.height());
    layout.plot.right = area.right - 2 * padding;
    int const left = area.left + padding + glyph_rows + label_gap + widest_label(layout.y.ticks) + label_gap +
                     tick_length;
    layout.plot.left = std::min(left, layout.plot.right - min_panel_width / 2);  // absurd labels: keep a plot
    layout.x = x_axis(panel, layout.plot.width());
    return layout;
}

// A pixel coordinate far off the image is brought nearer, where it still points the same way but stays a number
// that converts to int: a value far outside a fixed y range would otherwise be 1e300 pixels away, or infinitely.
double near_the_image(double coordinate) {
    constexpr double far = 1e6;
    return std::isnan(coordinate) ? -far : std::clamp(coordinate, -far, far);
}

// Where a data point lands, on whole pixels so that lines between points at the same height stay crisp.
Vec2 to_pixel(PanelLayout const& layout, double x, double y) {
    Rect const& plot = layout.plot;
    return {near_the_image(std::round(plot.left + layout.x.fraction(x) * plot.width())),
            near_the_image(std::round(plot.bottom - layout.y.fraction(y) * plot.height()))};
}

int tick_column(PanelLayout const& layout, Tick const& tick) {
    int const column = static_cast<int>(std::lround(layout.plot.left +
                                                    layout.x.fraction_of_units(tick.position) * layout.plot.width()));
    return std::clamp(column, layout.plot.left, layout.plot.right - 1);
}

int tick_row(PanelLayout const& layout, Tick const& tick) {
    int const row = static_cast<int>(std::lround(layout.plot.bottom -
                                                 layout.y.fraction_of_units(tick.position) * layout.plot.height()));
    return std::clamp(row, layout.plot.top, layout.plot.bottom - 1);
}

void draw_grid(RgbImage& image, PanelLayout const& layout) {
    Rect const& plot = layout.plot;
    for (Tick const& tick : layout.x.ticks) {
        int const column = tick_column(layout, tick);
        fill_rect(image, {column, plot.top, column + 1, plot.bottom}, grid_colour);
    }
    for (Tick const& tick : layout.y.ticks) {
        int const row = tick_row(layout, tick);
        fill_rect(image, {plot.left, row, plot.right, row + 1}, grid_colour);
    }
}

void draw_axes(RgbImage& image, PanelLayout const& layout) {
    Rect const& plot = layout.plot;
    draw_outline(image, plot, axis_colour);
    for (Tick const& tick : layout.x.ticks) {
        int const column = tick_column(layout, tick);
        fill_rect(image, {column, plot.bottom, column + 1, plot.bottom + tick_length}, axis_colour);
        draw_text_centred(image, column, plot.bottom + tick_length + label_gap, tick.label, text_colour);
    }
    for (Tick const& tick : layout.y.ticks) {
        int const row = tick_row(layout, tick);
        fill_rect(image, {plot.left - tick_length, row, plot.left, row + 1}, axis_colour);
        int const right = plot.left - tick_length - label_gap;
        draw_text(image, {right - text_width(tick.label), row - cap_height / 2}, tick.label, text_colour);
    }
}

void draw_panel_labels(RgbImage& image, PlotPanel const& panel, PanelLayout const& layout, Rect const& area) {
    Rect const& plot = layout.plot;
    int const centre_x = (plot.left + plot.right) / 2;
    draw_text_centred(image, centre_x, area.top + padding, panel.title, text_colour);
    draw_text_centred(image, centre_x, area.bottom - padding - glyph_rows, panel.x_label, text_colour);
    int const centre_y = (plot.top + plot.bottom) / 2;
    draw_text(image, {area.left + padding, centre_y + text_width(panel.y_label) / 2}, panel.y_label, text_colour, 1,
              TextDirection::upward);
}

// A series' points in pixels, nothing where a point is not drawn: a gap in its line.
std::vector<std::optional<Vec2>> series_pixels(PlotPanel const& panel, PlotSeries const& series,
                                               PanelLayout const& layout) {
    std::vector<std::optional<Vec2>> points;
    for (std::size_t i = 0; i < series.x.size(); ++i) {
        bool const drawn = is_drawable(panel, series.x[i], series.y[i]);
        points.push_back(drawn ? std::optional<Vec2>(to_pixel(layout, series.x[i], series.y[i])) : std::nullopt);
    }
    return points;
}

// Lines first and markers over them, every series' lines before any markers, so that no line hides a point.
void draw_series(RgbImage& image, PlotPanel const& panel, PanelLayout const& layout) {
    std::vector<std::vector<std::optional<Vec2>>> pixels;
    for (PlotSeries const& series : panel.series) pixels.push_back(series_pixels(panel, series, layout));
    for (std::size_t s = 0; s < pixels.size(); ++s) {
        for (std::size_t i = 1; i < pixels[s].size(); ++i) {
            if (pixels[s][i - 1] && pixels[s][i]) {
                draw_segment(image, *pixels[s][i - 1], *pixels[s][i], plot_series_colour(s), layout.plot);
            }
        }
    }
    for (std::size_t s = 0; s < pixels.size(); ++s) {
        for (std::optional<Vec2> const& point : pixels[s]) {
            if (point) draw_marker(image, *point, marker_shape(s), plot_series_colour(s), layout.plot);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The legend: a boxed list of each labelled series' line and marker, in the corner of the plot where it hides
// the least data.

constexpr int legend_inset = 6;  // from the frame
constexpr int legend_padding = 6;
constexpr int legend_sample_length = 22;
constexpr int legend_row_height = 12;

std::vector<std::size_t> labelled_series(PlotPanel const& panel) {
    std::vector<std::size_t> labelled;
    for (std::size_t s = 0; s < panel.series.size(); ++s) {
        if (!panel.series[s].label.empty()) labelled.push_back(s);
    }
    return labelled;
}

Rect legend_box(Rect const& plot, int width, int height, bool right, bool top) {
    int const left = right ? plot.right - legend_inset - width : plot.left + legend_inset;
    int const upper = top ? plot.top + legend_inset : plot.bottom - legend_inset - height;
    return {left, upper, left + width, upper + height};
}

// How much data a box would hide: the points, and samples every few pixels along the lines, that fall in it or
// near enough for a marker to reach it.
int hidden_data(PlotPanel const& panel, PanelLayout const& layout, Rect const& box) {
    Rect const near{box.left - 4, box.top - 4, box.right + 4, box.bottom + 4};
    int hidden = 0;
    for (PlotSeries const& series : panel.series) {
        std::vector<std::optional<Vec2>> const points = series_pixels(panel, series, layout);
        for (std::size_t i = 0; i < points.size(); ++i) {
            if (!points[i]) continue;
            hidden += near.contains(*points[i]) ? 1 : 0;
            if (i == 0 || !points[i - 1]) continue;
            Vec2 const a = *points[i - 1];
            Vec2 const b = *points[i];
            int const samples = std::min(1000, static_cast<int>(std::hypot(b.x - a.x, b.y - a.y) / 3));
            for (int k = 1; k < samples; ++k) {
                double const t = static_cast<double>(k) / samples;
                hidden += near.contains({a.x + t * (b.x - a.x), a.y + t * (b.y - a.y)}) ? 1 : 0;
            }
        }
    }
    return hidden;
}

// The corner that hides the least, preferring the top right, then top left, bottom right, bottom left.
Rect place_legend(PlotPanel const& panel, PanelLayout const& layout, int width, int height) {
    Rect best = legend_box(layout.plot, width, height, true, true);
    int least = hidden_data(panel, layout, best);
    for (auto [right, top] : {std::pair{false, true}, std::pair{true, false}, std::pair{false, false}}) {
        Rect const box = legend_box(layout.plot, width, height, right, top);
        int const hidden = hidden_data(panel, layout, box);
        if (hidden < least) {
            least = hidden;
            best = box;
        }
    }
    return best;
}

void draw_legend(RgbImage& image, PlotPanel const& panel, PanelLayout const& layout) {
    std::vector<std::size_t> const entries = labelled_series(panel);
    if (entries.empty()) return;
    int widest = 0;
    for (std::size_t s : entries) widest = std::max(widest, text_width(panel.series[s].label));
    int const width = 2 * legend_padding + legend_sample_length + label_gap + widest;
    int const rows = static_cast<int>(entries.size());
    int const height = 2 * legend_padding + (rows - 1) * legend_row_height + glyph_rows - 2;  // descenders are rare
    Rect const box = place_legend(panel, layout, width, height);
    fill_rect(image, box, white);
    draw_outline(image, box, legend_border_colour);
    for (int row = 0; row < rows; ++row) {
        std::size_t const s = entries[static_cast<std::size_t>(row)];
        int const top = box.top + legend_padding + row * legend_row_height;
        double const line_y = top + cap_height / 2 + 1;  // through the middle of the capitals, on a pixel edge
        Vec2 const start{static_cast<double>(box.left + legend_padding), line_y};
        Vec2 const end{start.x + legend_sample_length, line_y};
        draw_segment(image, start, end, plot_series_colour(s), box);
        draw_marker(image, {(start.x + end.x) / 2, line_y}, marker_shape(s), plot_series_colour(s), box);
        draw_text(image, {box.left + legend_padding + legend_sample_length + label_gap, top}, panel.series[s].label,
                  text_colour);
    }
}

void require_matching_series(PlotPanel const& panel) {
    for (PlotSeries const& series : panel.series) {
        AXONN_INVARIANT(series.x.size() == series.y.size(), "plot series '{}' has {} x values but {} y values",
                        series.label, series.x.size(), series.y.size());
    }
}

void draw_panel(RgbImage& image, PlotPanel const& panel, Rect const& area) {
    require_matching_series(panel);
    PanelLayout const layout = lay_out_panel(panel, area);
    draw_grid(image, layout);
    draw_series(image, panel, layout);
    draw_axes(image, layout);
    draw_legend(image, panel, layout);
    draw_panel_labels(image, panel, layout, area);
}

}  // namespace

Rgb plot_series_colour(std::size_t index) {
    // Tableau's palette, less its two palest colours, which are hard to see on white.
    constexpr std::array<Rgb, 8> palette = {{{31, 119, 180},
                                             {255, 127, 14},
                                             {44, 160, 44},
                                             {214, 39, 40},
                                             {148, 103, 189},
                                             {140, 86, 75},
                                             {227, 119, 194},
                                             {127, 127, 127}}};
    return palette[index % palette.size()];
}

RgbImage render_line_plots(std::string const& title, std::vector<PlotPanel> const& panels, int panel_width,
                           int panel_height) {
    AXONN_INVARIANT(panel_width >= min_panel_width && panel_height >= min_panel_height,
                    "a plot panel of {}x{} pixels is too small to draw: it needs at least {}x{}", panel_width,
                    panel_height, min_panel_width, min_panel_height);
    std::size_t const columns = std::max<std::size_t>(panels.size(), 1);
    AXONN_INVARIANT(columns * static_cast<std::size_t>(panel_width) <= 1 << 16 && panel_height <= 1 << 16,
                    "{} plot panels of {}x{} pixels make too large an image", panels.size(), panel_width, panel_height);
    int const top = title.empty() ? 0 : title_band_height;
    RgbImage image(static_cast<int>(columns) * panel_width, top + panel_height);
    draw_text_centred(image, image.width / 2, padding, title, text_colour, title_scale);
    for (std::size_t i = 0; i < panels.size(); ++i) {
        int const left = static_cast<int>(i) * panel_width;
        draw_panel(image, panels[i], {left, top, left + panel_width, top + panel_height});
    }
    return image;
}

void write_line_plots(std::filesystem::path const& png, std::string const& title,
                      std::vector<PlotPanel> const& panels, int panel_width, int panel_height) {
    write_png(png, render_line_plots(title, panels, panel_width, panel_height));
}

}  // namespace axonn
