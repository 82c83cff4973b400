// Line charts of results, drawn and written as PNG without Python or any plotting library: a row of panels under
// a common title, each with its series as lines and markers, numeric axes, axis labels and a legend. Text is set
// in a built-in bitmap font of printable ASCII (anything else shows as '?').
#pragma once

#include "axonn/io/png.h"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace axonn {

// One line. Points whose y is NaN (or infinite) are not drawn and break the line: a gap. A series with an empty
// label has no legend entry.
struct PlotSeries {
    std::string label;
    std::vector<double> x, y;  // the same length
};

struct PlotPanel {
    std::string title, x_label, y_label;
    std::vector<PlotSeries> series;
    bool log2_x = false;                 // x axis in log2 scale, ticks at the powers of two present; x <= 0 not drawn
    std::optional<double> y_min, y_max;  // fixed y range; otherwise from the data with a margin
};

// The colour of the series at `index` in its panel: one of 8, readable on white, repeating after the 8th.
Rgb plot_series_colour(std::size_t index);

// Draws the panels side by side in one row under a common title (no title: no title band). Each panel is
// panel_width x panel_height pixels; no panels at all draw the title alone, one panel wide.
RgbImage render_line_plots(std::string const& title, std::vector<PlotPanel> const& panels, int panel_width = 480,
                           int panel_height = 360);

// render_line_plots, written as PNG; a path that cannot be written is an axonn::Error naming it.
void write_line_plots(std::filesystem::path const& png, std::string const& title,
                      std::vector<PlotPanel> const& panels, int panel_width = 480, int panel_height = 360);

}  // namespace axonn
