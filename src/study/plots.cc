// The report's figure kinds as gnuplot scripts. Layout is done here, in pixels: gnuplot
// only draws panels into the screen rectangles this file computes (margins "at screen"),
// so the canvas grows with the cells, labels, panels and legend entries it must hold.
#include "study/plots.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace dlas::study::plots {

namespace {

constexpr int kMaxWidth = 1240;  // px: panels wrap to the next row beyond this
constexpr double kCharW = 8.0;   // px per character of the sans font (PNG at 10 pt; upper bound)
constexpr int kTitleH = 46;      // px above the panels: the figure's title

// A qualitative palette (matplotlib's tab10) and filled/open markers: series i gets colour
// i % 10 and marker i % 7, so up to 70 series differ in colour or marker.
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kMarkers[] = {7, 5, 9, 11, 13, 4, 8};

const char* colour(size_t i) { return kColours[i % 10]; }
int marker(size_t i) { return kMarkers[i % 7]; }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The rectangle of one panel's data area, in pixels from the top left.
struct Box {
  double x0, y0, x1, y1;
};

// gnuplot margins that put the data area at `b` on a w x h canvas.
std::string margins_at(const Box& b, int w, int h) {
  std::ostringstream s;
  s << "set lmargin at screen " << num(b.x0 / w) << "\nset rmargin at screen " << num(b.x1 / w)
    << "\nset tmargin at screen " << num(1.0 - b.y0 / h) << "\nset bmargin at screen "
    << num(1.0 - b.y1 / h) << "\n";
  return s.str();
}

// Characters of a UTF-8 string as drawn (continuation bytes not counted: "×" is one).
size_t glyphs(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

size_t longest(const std::vector<std::string>& v) {
  size_t n = 0;
  for (const auto& s : v) n = std::max(n, glyphs(s));
  return n;
}

// A datablock string: quotes escaped, newlines kept as gnuplot's "\n".
std::string data_quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '\n')
      o += "\\n";
    else if (c == '"' || c == '\\')
      o += std::string("\\") + c;
    else
      o += c;
  }
  return o + "\"";
}

// Canvas-level text: the figure's title at the top (drawn with the first panel).
std::string title_label(const std::string& title, int h) {
  return "set label 900 " + gp_quote(title) + " at screen 0.5," + num(1.0 - 20.0 / h) +
         " center font ',13' front\n";
}

// A legend strip: entries laid out in a grid of `cols` columns from (x0, y0) px, each a
// sample (line with marker, marker, or filled box) and its name; set as screen labels,
// arrows and objects, so they are drawn with the next plot and never cover data.
struct LegendEntry {
  std::string name, colour;
  int marker = 7;
  enum Kind { kLinePoint, kPoint, kBox, kHollow } kind = kLinePoint;
};
struct Legend {
  std::vector<LegendEntry> entries;
  int cols = 1, rows = 0, entry_w = 0;
  static constexpr int kRowH = 20;

  // Lays the entries out for a canvas `width` px wide; returns the strip's height.
  int layout(int width) {
    if (entries.empty()) return 0;
    size_t len = 0;
    for (const auto& e : entries) len = std::max(len, glyphs(e.name));
    entry_w = static_cast<int>(static_cast<double>(len) * kCharW) + 44;
    cols = std::max(1, std::min(static_cast<int>(entries.size()), (width - 20) / entry_w));
    rows = (static_cast<int>(entries.size()) + cols - 1) / cols;
    return rows * kRowH + 14;
  }

  std::string script(double y0, int w, int h) const {
    std::ostringstream s;
    const double left = (w - cols * entry_w) / 2.0;
    int tag = 1000;
    for (size_t i = 0; i < entries.size(); ++i) {
      const LegendEntry& e = entries[i];
      const double x = left + static_cast<double>(i % cols) * entry_w + 8;
      const double y = y0 + static_cast<double>(i / cols) * kRowH + kRowH / 2.0;
      const std::string sy = num(1.0 - y / h);
      auto sx = [&](double px) { return num(px / w); };
      if (e.kind == LegendEntry::kBox) {
        s << "set object " << tag++ << " rect from screen " << sx(x) << ","
          << num(1.0 - (y - 6) / h) << " to screen " << sx(x + 22) << "," << num(1.0 - (y + 6) / h)
          << " fc rgb '" << e.colour << "' fs solid 0.85 border lc rgb '#333333' front\n";
      } else {
        if (e.kind == LegendEntry::kLinePoint)
          s << "set arrow " << tag++ << " from screen " << sx(x) << "," << sy << " to screen "
            << sx(x + 22) << "," << sy << " nohead lc rgb '" << e.colour << "' lw 1.5 front\n";
        const int pt = e.kind == LegendEntry::kHollow ? 6 : e.marker;
        const double ps = e.kind == LegendEntry::kHollow ? 1.8 : 1.1;
        s << "set label " << tag++ << " '' at screen " << sx(x + 11) << "," << sy << " point pt "
          << pt << " ps " << ps << " lc rgb '" << e.colour << "' front\n";
      }
      s << "set label " << tag++ << " " << gp_quote(e.name) << " at screen " << sx(x + 28) << ","
        << sy << " left front\n";
    }
    return s.str();
  }
};

// Panels of pw x ph px placed in rows of at most `per_row` below the title.
struct Grid {
  int n, pw, ph, per_row, prows, width;

  Grid(int panels, int panel_w, int panel_h, const std::string& title)
      : n(panels), pw(panel_w), ph(panel_h) {
    const int min_width =
        std::max(360, static_cast<int>(static_cast<double>(glyphs(title)) * 8.4) + 40);
    per_row = std::max(1, std::min(n, kMaxWidth / std::max(1, pw)));
    prows = (n + per_row - 1) / per_row;
    width = std::max(min_width, per_row * pw + 20);
  }
  // Top-left corner of panel i.
  std::pair<double, double> origin(int i) const {
    const int used = std::min(per_row, n);
    const double left = (width - used * pw) / 2.0;
    return {left + (i % per_row) * pw, kTitleH + static_cast<double>(i / per_row) * ph};
  }
  int panels_height() const { return prows * ph; }
};

std::string begin_figure(const std::string& title, int w, int h, const Legend& legend,
                         double legend_y) {
  return "reset\nset encoding utf8\nset multiplot\n" + title_label(title, h) +
         legend.script(legend_y, w, h);
}

// After the first panel's plot: the canvas labels are drawn, later panels set their own.
const char* kAfterFirstPlot = "unset label\nunset arrow\nunset object\n";

// Hex colour of a heat cell.
std::string mix(double t, const std::vector<std::pair<double, unsigned>>& stops) {
  t = std::clamp(t, stops.front().first, stops.back().first);
  size_t i = 1;
  while (i + 1 < stops.size() && t > stops[i].first) ++i;
  const auto [t0, c0] = stops[i - 1];
  const auto [t1, c1] = stops[i];
  const double f = t1 > t0 ? (t - t0) / (t1 - t0) : 0;
  unsigned out = 0;
  for (int shift : {16, 8, 0}) {
    const double a = (c0 >> shift) & 0xff, b = (c1 >> shift) & 0xff;
    out |= static_cast<unsigned>(std::lround(a + f * (b - a))) << shift;
  }
  return std::to_string(out);
}

std::string heat_colour(HeatScale scale, double v) {
  if (!(v > 0) || !std::isfinite(v)) return std::to_string(0xeeeeeeu);
  const double l2 = std::log2(v);
  if (scale == HeatScale::kRatioAroundOne)  // red below 1x, white at 1x, blue above
    return mix(l2 / 2.0, {{-1, 0xf4a582}, {0, 0xffffff}, {1, 0x92c5de}});
  return mix(l2 / 4.0, {{0, 0x91cf60}, {0.35, 0xffffbf}, {1, 0xf4a582}});  // green, yellow, red
}

}  // namespace

std::string gp_quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) o += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return o + "\"";
}

std::string both_terminals(const Figure& f, const std::string& svg_path,
                           const std::string& png_path) {
  std::ostringstream s;
  s << "set terminal svg size " << f.width << "," << f.height
    << " font 'sans,10' fontscale 1.3 noenhanced background '#ffffff'\nset output "
    << gp_quote(svg_path) << "\n"
    << f.draw << "set terminal pngcairo size " << f.width << "," << f.height
    << " font 'sans,10' noenhanced background '#ffffff'\nset output " << gp_quote(png_path) << "\n"
    << f.draw << "unset output\n";
  return s.str();
}

Figure heatmap_figure(const std::string& name, const std::string& title, const std::string& caption,
                      const Heatmap& map) {
  const int ncol = static_cast<int>(map.columns.size());
  const int nrow = static_cast<int>(map.rows.size());
  size_t text_chars = 4, text_lines = 1;
  for (const HeatPanel& p : map.panels)
    for (const HeatCell& c : p.cells) {
      std::stringstream lines(c.text);
      size_t n = 0;
      for (std::string line; std::getline(lines, line); ++n)
        text_chars = std::max(text_chars, glyphs(line));
      text_lines = std::max(text_lines, n);
    }
  const int cell_w = std::max(50, static_cast<int>(static_cast<double>(text_chars) * 7.6) + 16);
  // Rows tall enough for the rotated y label beside them.
  const int cell_h =
      std::max({24, static_cast<int>(text_lines) * 17 + 12,
                static_cast<int>((static_cast<double>(glyphs(map.ylabel)) * kCharW + 12) /
                                 std::max(1, nrow))});
  // Column labels rotated by 35 degrees end at their tick: they reach down sin(35) and
  // left cos(35) of their length; the left margin holds the row labels and that reach.
  const double col_len = static_cast<double>(longest(map.columns)) * kCharW;
  const int lm = static_cast<int>(std::max(static_cast<double>(longest(map.rows)) * kCharW + 34,
                                           col_len * 0.82 - cell_w / 2.0 + 8));
  const int bm = static_cast<int>(col_len * 0.58) + 52;
  const int tm = 26, rm = 14;
  const int pw = lm + ncol * cell_w + rm, ph = tm + nrow * cell_h + bm;
  const Grid grid(static_cast<int>(map.panels.size()), pw, ph, title);
  const int w = grid.width, h = kTitleH + grid.panels_height() + 6;

  std::ostringstream s;
  s << begin_figure(title, w, h, Legend{}, 0);
  std::ostringstream xt, yt;
  for (int c = 0; c < ncol; ++c) xt << (c ? ", " : "") << gp_quote(map.columns[c]) << " " << c;
  for (int r = 0; r < nrow; ++r) yt << (r ? ", " : "") << gp_quote(map.rows[r]) << " " << r;
  s << "set xrange [-0.5:" << ncol - 0.5 << "]\nset yrange [" << nrow - 0.5 << ":-0.5]\n"
    << "set xtics (" << xt.str() << ") rotate by 35 right scale 0 nomirror\n"
    << "set ytics (" << yt.str() << ") scale 0 nomirror\nunset key\nunset colorbox\n"
    << "set xlabel " << gp_quote(map.xlabel) << "\nset ylabel " << gp_quote(map.ylabel) << "\n"
    << "set border lw 0.5\n";
  for (size_t i = 0; i < map.panels.size(); ++i) {
    const HeatPanel& p = map.panels[i];
    const auto [x, y] = grid.origin(static_cast<int>(i));
    std::map<std::pair<size_t, size_t>, const HeatCell*> at;
    for (const HeatCell& c : p.cells) at[{c.col, c.row}] = &c;
    s << "$H" << i << " << EOD\n";
    for (int r = 0; r < nrow; ++r)
      for (int c = 0; c < ncol; ++c) {
        const auto it = at.find({static_cast<size_t>(c), static_cast<size_t>(r)});
        const HeatCell* cell = it == at.end() ? nullptr : it->second;
        s << c << " " << r << " "
          << (cell ? heat_colour(map.scale, cell->value) : std::to_string(0xeeeeeeu)) << " "
          << data_quote(cell ? cell->text : "") << "\n";
      }
    s << "EOD\n$M" << i << " << EOD\n";
    bool any_mark = false;
    for (const HeatCell& c : p.cells)
      if (c.mark) {
        s << c.col << " " << c.row << "\n";
        any_mark = true;
      }
    s << "EOD\n"
      << margins_at({x + lm, y + tm, x + pw - rm, y + tm + nrow * cell_h}, w, h) << "set title "
      << gp_quote(p.title) << " font ',11'\n"
      << "plot $H" << i
      << " using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 border lc rgb '#ffffff' "
         "fc rgb variable, '' using 1:2:4 with labels font ',10'";
    if (any_mark)
      s << ", $M" << i
        << " using 1:2:(0.46):(0.46) with boxxyerror fs empty border lc rgb '#111111' lc rgb "
           "'#111111' lw 2.5";
    s << "\n" << (i == 0 ? kAfterFirstPlot : "");
  }
  s << "unset multiplot\n";
  return {name, title, caption, s.str(), w, h};
}

Figure line_figure(const std::string& name, const std::string& title, const std::string& caption,
                   const Axes& axes, const std::vector<LinePanel>& panels) {
  // Series styled by name, in order of first appearance; hollow series are black rings.
  std::vector<std::string> names;
  Legend legend;
  for (const LinePanel& p : panels)
    for (const Series& sr : p.series) {
      if (sr.name.empty() || std::find(names.begin(), names.end(), sr.name) != names.end())
        continue;
      names.push_back(sr.name);
    }
  std::map<std::string, size_t> style;
  size_t next = 0;
  for (const std::string& n : names) {
    bool hollow = false, lines = true;
    for (const LinePanel& p : panels)
      for (const Series& sr : p.series)
        if (sr.name == n) hollow = sr.hollow, lines = sr.lines;
    const size_t i = hollow ? 0 : next++;
    style[n] = i;
    legend.entries.push_back(
        {n, hollow ? "#000000" : colour(i), marker(i),
         hollow ? LegendEntry::kHollow : (lines ? LegendEntry::kLinePoint : LegendEntry::kPoint)});
  }
  const int lm = 70, rm = 18, tm = 40, bm = 60;
  const int pw = 400, ph = 320;
  const Grid grid(static_cast<int>(panels.size()), pw, ph, title);
  const int w = grid.width;
  const int legend_h = legend.layout(w);
  const int h = kTitleH + grid.panels_height() + legend_h + 6;

  std::ostringstream s;
  s << begin_figure(title, w, h, legend, kTitleH + grid.panels_height() + 6);
  auto range = [](double lo, double hi) {
    return "[" + (std::isnan(lo) ? std::string("*") : num(lo)) + ":" +
           (std::isnan(hi) ? std::string("*") : num(hi)) + "]";
  };
  s << (axes.logx ? "set logscale x " + std::to_string(axes.log_base) + "\n" : "")
    << (axes.logy ? "set logscale y\n" : "") << "set format x " << gp_quote(axes.xformat)
    << "\nset format y " << gp_quote(axes.yformat) << "\nset xrange " << range(axes.xmin, axes.xmax)
    << "\nset yrange " << range(axes.ymin, axes.ymax)
    << "\nset offsets graph 0.06, graph 0.06, graph 0.1, graph 0.06\n"
    << "set xlabel " << gp_quote(axes.xlabel) << "\nset ylabel " << gp_quote(axes.ylabel)
    << "\nset grid lc rgb '#dddddd'\nunset key\nset border lw 0.8\n";
  for (size_t i = 0; i < panels.size(); ++i) {
    const LinePanel& p = panels[i];
    const auto [x, y] = grid.origin(static_cast<int>(i));
    std::string cmd;
    for (size_t j = 0; j < p.series.size(); ++j) {
      const Series& sr = p.series[j];
      if (sr.xy.empty()) continue;
      const std::string block = "$L" + std::to_string(i) + "_" + std::to_string(j);
      s << block << " << EOD\n";
      for (size_t k = 0; k < sr.xy.size(); ++k)
        s << num(sr.xy[k].first) << " " << num(sr.xy[k].second) << " "
          << data_quote(k < sr.labels.size() ? sr.labels[k] : "") << "\n";
      s << "EOD\n";
      const size_t st = style.count(sr.name) ? style[sr.name] : 0;
      const std::string c = sr.hollow ? "#000000" : colour(st);
      cmd += (cmd.empty() ? "" : ", ") + block + " using 1:2 ";
      if (sr.hollow)
        cmd += "with points pt 6 ps 2.2 lw 1.5 lc rgb '#000000'";
      else
        cmd += std::string(sr.lines ? "with linespoints lw 1.5" : "with points") + " pt " +
               std::to_string(marker(st)) + " ps 1.1 lc rgb '" + c + "'";
      if (!sr.labels.empty())
        cmd += ", " + block + " using 1:2:3 with labels offset char 0,0.9 font ',8' tc rgb '" + c +
               "'";
    }
    if (cmd.empty()) cmd = "NaN";
    s << margins_at({x + lm, y + tm, x + pw - rm, y + ph - bm}, w, h) << "set title "
      << gp_quote(p.title) << " font ',11'\nplot " << cmd << "\n"
      << (i == 0 ? kAfterFirstPlot : "");
  }
  s << "unset multiplot\n";
  return {name, title, caption, s.str(), w, h};
}

Figure bar_figure(const std::string& name, const std::string& title, const std::string& caption,
                  const std::string& ylabel, const std::vector<std::string>& categories,
                  const std::vector<BarSeries>& series, const std::string& value_format,
                  double reference) {
  const int ncat = static_cast<int>(categories.size());
  const int ns = static_cast<int>(series.size());
  const int bar_px = 40, group_px = ns * bar_px + 30;
  const double cat_len = static_cast<double>(longest(categories)) * kCharW;
  const bool rotate = cat_len > group_px - 6;
  // Rotated category labels end at their group's centre and reach cos(30) of their length
  // to the left.
  const int lm = rotate ? std::max(78, static_cast<int>(cat_len * 0.87 - group_px / 2.0) + 12) : 78;
  const int rm = 18, tm = 10;
  const int bm = rotate ? static_cast<int>(cat_len * 0.5) + 46 : 50;
  const int pw = std::max(360, lm + ncat * group_px + rm), ph = 320 + bm;
  Legend legend;
  for (int j = 0; j < ns; ++j)
    legend.entries.push_back({series[j].name, colour(j), 7, LegendEntry::kBox});
  const int w = std::max(pw + 20, static_cast<int>(static_cast<double>(glyphs(title)) * 8.4) + 40);
  const int legend_h = legend.layout(w);
  const int h = kTitleH + ph + legend_h + 6;
  double top = reference > 0 ? reference : 0;
  for (const BarSeries& b : series)
    for (double v : b.values)
      if (std::isfinite(v)) top = std::max(top, v);
  const double bw = 0.8 / std::max(1, ns);

  std::ostringstream s;
  s << begin_figure(title, w, h, legend, kTitleH + ph + 6);
  std::ostringstream xt;
  for (int c = 0; c < ncat; ++c) xt << (c ? ", " : "") << gp_quote(categories[c]) << " " << c;
  s << "set xrange [-0.5:" << ncat - 0.5 << "]\nset yrange [0:" << num(top * 1.15 + 1e-9)
    << "]\nset xtics (" << xt.str() << ") scale 0 nomirror" << (rotate ? " rotate by 30 right" : "")
    << "\nset ytics nomirror\nset ylabel " << gp_quote(ylabel)
    << "\nset grid ytics lc rgb '#dddddd'\nunset key\n";
  if (std::isfinite(reference))
    s << "set arrow 1 from graph 0, first " << num(reference) << " to graph 1, first "
      << num(reference) << " nohead dt 2 lc rgb '#555555' back\n";
  std::string cmd;
  for (int j = 0; j < ns; ++j) {
    s << "$B" << j << " << EOD\n";
    for (int c = 0; c < ncat; ++c) {
      const double v = c < static_cast<int>(series[j].values.size()) ? series[j].values[c] : NAN;
      if (!std::isfinite(v)) continue;
      char label[64];
      std::snprintf(label, sizeof label, value_format.c_str(), v);
      s << num(c + (j - (ns - 1) / 2.0) * bw) << " " << num(v) << " " << data_quote(label) << "\n";
    }
    s << "EOD\n";
    cmd += std::string(j ? ", " : "") + "$B" + std::to_string(j) + " using 1:($2/2):(" +
           num(bw / 2) + "):($2/2) with boxxyerror fs solid 0.85 border lc rgb '#333333' fc rgb '" +
           colour(j) + "', '' using 1:2:3 with labels offset char 0,0.7 font ',8'";
  }
  if (cmd.empty()) cmd = "NaN";
  const double x = (w - pw) / 2.0;
  s << margins_at({x + lm, kTitleH + tm, x + pw - rm, static_cast<double>(kTitleH + ph - bm)}, w, h)
    << "plot " << cmd << "\n"
    << kAfterFirstPlot << "unset multiplot\n";
  return {name, title, caption, s.str(), w, h};
}

}  // namespace dlas::study::plots
