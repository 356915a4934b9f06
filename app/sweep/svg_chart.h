// SVG charts for the sweep reports, each one standalone SVG document (white background, sans-serif, tooltips in
// <title>): grouped bars (speed-ups, utilisation), stacked horizontal bars (stall mix), a scatter plot with lines
// (roofline, Pareto frontier) on linear or log axes, and the tornado of a sensitivity sweep. One place draws
// axes, legends and labels, so every plot of `warpsim sweep sensitivity`, `sweep pareto` and `warpsim report`
// looks alike. write_png rasterizes a document with librsvg (the same drawing, not a second renderer).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace warpsim::sweep::svg {

std::string escape(const std::string& text);  // for XML text and attributes
const char* colour(std::size_t index);         // a categorical palette, repeating

struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per group; NaN: no bar
};
// One group of bars per `groups` entry, one bar per series, a value label on each bar. `reference` draws a
// dashed horizontal line (1.0 for speed-ups); `value_format` is an fmt format for one double ("{:.2f}").
std::string grouped_bars(const std::string& title, const std::string& y_label, const std::vector<std::string>& groups,
                         const std::vector<BarSeries>& series, std::optional<double> reference,
                         const std::string& value_format);

// One horizontal bar per row, split into `segments` by the row's shares (fractions summing to about 1).
std::string stacked_bars(const std::string& title, const std::vector<std::string>& rows,
                         const std::vector<std::string>& segments, const std::vector<std::vector<double>>& shares);

struct Axis {
  std::string label;
  bool log = false;  // log10 (every value must be > 0)
};
struct ScatterPoint {
  double x = 0, y = 0;
  std::string label;    // drawn beside the marker ("" for none)
  bool filled = true;   // false: a hollow marker (a dominated candidate)
};
struct ScatterSeries {
  std::string name;
  std::size_t colour = 0;
  std::vector<ScatterPoint> points;
  bool markers = true;
  bool line = false;    // a line through the points in order
  bool dashed = false;
  bool in_legend = true;
};
std::string scatter(const std::string& title, const Axis& x, const Axis& y, const std::vector<ScatterSeries>& series);

struct TornadoRow {
  std::string label;
  double down = 0, up = 0;  // relative changes (-0.1: 10% less)
};
struct TornadoPanel {
  std::string title;
  std::vector<TornadoRow> rows;
};
// A tornado per panel: each row a bar per direction growing from the centre (left: negative).
std::string tornado(const std::string& title, const std::vector<TornadoPanel>& panels, const std::string& down_name,
                    const std::string& up_name);

// Rasterizes `svg_document` to a PNG file (librsvg + cairo). InputError naming the file when it cannot.
void write_png(const std::string& svg_document, const std::string& png_path);

}  // namespace warpsim::sweep::svg
