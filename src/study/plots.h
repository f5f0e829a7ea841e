// Internal: the report's three figure kinds -- heatmap small multiples, line/point small
// multiples and grouped bars -- as gnuplot scripts laid out in pixels. Every figure sizes
// its canvas from what it holds (cells, labels, panels, legend entries), so labels never
// overlap; legends sit in a strip below the panels, never on the data; colours come from
// one qualitative palette (10 colours x 7 markers for series). One function per kind.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace dlas::study::plots {

// One figure: the files <name>.svg and <name>.png, the report's heading and caption for it,
// and the gnuplot commands that draw the whole canvas (run once per terminal).
struct Figure {
  std::string name, title, caption;
  std::string draw;
  int width = 0, height = 0;  // pixels
};

// Heatmaps: rows x columns shared by every panel (the union; a panel's missing cells are
// grey). `value` picks the cell colour on the figure's scale, `text` is written in it (may
// hold "\n"), `mark` outlines it (the panel's best).
enum class HeatScale {
  kRatioAroundOne,  // value = a speedup: 1 white, > 1 blue, < 1 red (log scale, saturating at 4x)
  kRatioToBest,     // value = time / best time >= 1: 1 green, then yellow, then red (16x)
};
struct HeatCell {
  size_t col = 0, row = 0;
  double value = 1;
  std::string text;
  bool mark = false;
};
struct HeatPanel {
  std::string title;
  std::vector<HeatCell> cells;
};
struct Heatmap {
  std::string xlabel, ylabel;
  std::vector<std::string> columns, rows;  // rows top to bottom
  HeatScale scale = HeatScale::kRatioAroundOne;
  std::vector<HeatPanel> panels;
};
Figure heatmap_figure(const std::string& name, const std::string& title, const std::string& caption,
                      const Heatmap& map);

// Lines (or points) per panel; a series is styled by its name, the same in every panel,
// with one legend entry. `labels`, when given (one per point), are written above the points.
struct Series {
  std::string name;
  std::vector<std::pair<double, double>> xy;
  std::vector<std::string> labels;
  bool lines = true;    // linespoints; false: points only
  bool hollow = false;  // a large open circle (marks a point of another series)
};
struct LinePanel {
  std::string title;
  std::vector<Series> series;
};
struct Axes {
  std::string xlabel, ylabel;  // with units
  bool logx = false, logy = false;
  int log_base = 10;  // of the x axis
  std::string xformat = "%g", yformat = "%g";
  double xmin = NAN, xmax = NAN, ymin = NAN, ymax = NAN;  // NaN: automatic
};
Figure line_figure(const std::string& name, const std::string& title, const std::string& caption,
                   const Axes& axes, const std::vector<LinePanel>& panels);

// Grouped bars: one group per category, one bar per series (NaN: no bar), each bar labelled
// with its value (`value_format`, printf style); a dashed line at `reference` (NaN: none).
struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per category
};
Figure bar_figure(const std::string& name, const std::string& title, const std::string& caption,
                  const std::string& ylabel, const std::vector<std::string>& categories,
                  const std::vector<BarSeries>& series, const std::string& value_format,
                  double reference);

// gnuplot commands that draw `f` into <dir>/<tmp svg> and <tmp png> (both terminals).
std::string both_terminals(const Figure& f, const std::string& svg_path,
                           const std::string& png_path);

// A gnuplot string literal.
std::string gp_quote(const std::string& s);

}  // namespace dlas::study::plots
