#include "app/sweep/svg_chart.h"

#include <cairo.h>
#include <fmt/format.h>
#include <librsvg/rsvg.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <tuple>

#include "app/fnv1a.h"
#include "sim/core/error.h"

namespace warpsim::sweep::svg {
namespace {

constexpr double kWidth = 820;
constexpr double kTitleHeight = 34;
constexpr double kSwatch = 11, kLegendLine = 17;

// Sans-serif glyphs average a little over half their size in width: enough to keep labels apart.
double text_width(const std::string& s, double font_size) { return 0.62 * font_size * static_cast<double>(s.size()); }

std::string text(double x, double y, const std::string& s, double size, const char* anchor = "start",
                 const std::string& extra = "") {
  return fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='{}' text-anchor='{}'{}>{}</text>\n", x, y, size, anchor,
                     extra.empty() ? "" : " " + extra, escape(s));
}

std::string document(double width, double height, const std::string& title, const std::string& body) {
  return fmt::format("<svg xmlns='http://www.w3.org/2000/svg' width='{:.0f}' height='{:.0f}' viewBox='0 0 {:.0f} {:.0f}' "
                     "font-family='DejaVu Sans, Liberation Sans, Arial, sans-serif'>\n"
                     "<rect width='100%' height='100%' fill='white'/>\n{}{}</svg>\n",
                     width, height, width, height,
                     text(10, 22, title, 14, "start", "font-weight='bold'"), body);
}

// Tick values: "nice" steps (1, 2, 5 x 10^n) covering [lo, hi].
std::vector<double> linear_ticks(double lo, double hi, int wanted = 5) {
  const double span = hi - lo;
  if (!(span > 0)) return {lo};
  const double raw = span / wanted, magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * magnitude) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

// 1.5e12 -> "1.5T": tick labels of FLOP/s and bytes.
std::string short_number(double v, int digits = 3) {
  const double a = std::fabs(v);
  for (const auto& [scale, suffix] : {std::pair{1e15, "P"}, std::pair{1e12, "T"}, std::pair{1e9, "G"}, std::pair{1e6, "M"},
                                      std::pair{1e3, "k"}})
    if (a >= scale) return fmt::format("{:.{}g}{}", v / scale, digits, suffix);
  return fmt::format("{:.{}g}", v, digits);
}

// Tick labels with as many digits as it takes to tell neighbours apart (a narrow range: 0.000268, 0.000269).
std::vector<std::string> tick_labels(const std::vector<double>& ticks) {
  std::vector<std::string> labels;
  for (int digits = 3; digits <= 9; ++digits) {
    labels.clear();
    for (double t : ticks) labels.push_back(short_number(t, digits));
    if (std::adjacent_find(labels.begin(), labels.end()) == labels.end()) break;
  }
  return labels;
}

// A legend, one entry a line, at (x, y); returns its height.
double legend(std::string& body, double x, double y, const std::vector<std::pair<std::string, std::size_t>>& entries) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double top = y + kLegendLine * static_cast<double>(i);
    body += fmt::format("<rect width='{}' height='{}' transform='translate({:.1f},{:.1f})' fill='{}'/>\n", kSwatch, kSwatch, x, top,
                        colour(entries[i].second));
    body += text(x + kSwatch + 5, top + kSwatch - 1, entries[i].first, 11);
  }
  return kLegendLine * static_cast<double>(entries.size());
}

double legend_width(const std::vector<std::string>& names) {
  double w = 0;
  for (const auto& n : names) w = std::max(w, text_width(n, 11));
  return w + kSwatch + 15;
}

// Maps a value onto [p0, p1] pixels over [lo, hi], linear or log10.
struct Scale {
  double lo, hi, p0, p1;
  bool log;
  double operator()(double v) const {
    const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi, x = log ? std::log10(v) : v;
    return b > a ? p0 + (x - a) / (b - a) * (p1 - p0) : (p0 + p1) / 2;
  }
};

std::vector<double> ticks_of(const Scale& s) {
  if (!s.log) return linear_ticks(s.lo, s.hi);
  std::vector<double> t;
  for (int e = static_cast<int>(std::floor(std::log10(s.lo) + 1e-9)); e <= static_cast<int>(std::ceil(std::log10(s.hi) - 1e-9)); ++e) {
    const double v = std::pow(10.0, e);
    if (v >= s.lo * (1 - 1e-9) && v <= s.hi * (1 + 1e-9)) t.push_back(v);
  }
  return t;
}

// The range a scale shows for `values`: a margin around them (log: a factor), never empty.
std::pair<double, double> range_of(const std::vector<double>& values, bool log, bool from_zero) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values)
    if (std::isfinite(v) && (!log || v > 0)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) return {log ? 1 : 0, log ? 10 : 1};
  if (log) {
    lo = std::pow(10, std::floor(std::log10(lo) - 0.05));
    hi = std::pow(10, std::ceil(std::log10(hi) + 0.05));
    return {lo, hi};
  }
  if (from_zero) lo = std::min(lo, 0.0);
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    return {from_zero ? lo : lo - pad, hi + pad};
  }
  const double pad = 0.08 * (hi - lo);
  const auto t = linear_ticks(from_zero ? lo : lo - pad, hi + pad);
  return {from_zero ? lo : std::min(t.front(), lo - pad), std::max(t.back(), hi + pad)};
}

struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// Horizontal grid lines at the value axis' ticks, labelled left of the plot.
std::string value_grid(const Scale& y, double left, double right) {
  std::string out;
  const auto y_ticks = ticks_of(y);
  const auto y_labels = tick_labels(y_ticks);
  for (std::size_t i = 0; i < y_ticks.size(); ++i) {
    const double t = y_ticks[i];
    out += fmt::format("<line x1='{:.1f}' y1='{:.1f}' x2='{:.1f}' y2='{:.1f}' stroke='#e5e5e5'/>\n", left, y(t), right, y(t));
    out += text(left - 6, y(t) + 4, y_labels[i], 10, "end");
  }
  return out;
}

}  // namespace

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '"' ? "&quot;" : c == '\'' ? "&#39;" : std::string(1, c);
  return out;
}

const char* colour(std::size_t index) {
  // Tableau 10, then darker hues: enough for the 15 energy components and the 11 warp states without a repeat.
  static const char* palette[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2",
                                  "#ff9da6", "#9d755d", "#bab0ac", "#1f3d7a", "#8c564b", "#2ca02c", "#7b2d8e",
                                  "#17becf", "#bcbd22", "#636363", "#d62728", "#003f5c", "#ffa600"};
  return palette[index % (sizeof palette / sizeof *palette)];
}

std::string grouped_bars(const std::string& title, const std::string& y_label, const std::vector<std::string>& groups,
                         const std::vector<BarSeries>& series, std::optional<double> reference, const std::string& value_format) {
  std::vector<std::string> names;
  std::vector<double> all;
  for (const auto& s : series) {
    names.push_back(s.name);
    all.insert(all.end(), s.values.begin(), s.values.end());
  }
  if (reference) all.push_back(*reference);
  auto [lo, hi] = range_of(all, false, true);
  hi *= 1.08;  // room for the value labels
  const double left = 70, right = kWidth - legend_width(names) - 20, top = kTitleHeight + 16;
  const double group_w = (right - left) / static_cast<double>(std::max<std::size_t>(groups.size(), 1));
  double longest = 0;
  for (const auto& g : groups) longest = std::max(longest, text_width(g, 11));
  const bool rotate = longest > group_w - 6;
  const double label_h = rotate ? std::min(longest * 0.6 + 12, 190.0) : 22;
  const double bottom = top + 280, height = bottom + label_h + 30;
  const Scale y{lo, hi, bottom, top, false};
  std::string body;
  body += value_grid(y, left, right);
  body += text(16, (top + bottom) / 2, y_label, 11, "middle", fmt::format("transform='rotate(-90 16 {:.1f})'", (top + bottom) / 2));
  const double bar_w = group_w * 0.8 / static_cast<double>(std::max<std::size_t>(series.size(), 1));
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const double gx = left + group_w * static_cast<double>(g);
    for (std::size_t s = 0; s < series.size(); ++s) {
      const double v = g < series[s].values.size() ? series[s].values[g] : std::nan("");
      if (!std::isfinite(v)) continue;
      const double x = gx + group_w * 0.1 + bar_w * static_cast<double>(s), y0 = y(std::max(0.0, v)), y1 = y(std::min(0.0, v));
      const std::string label = fmt::format(fmt::runtime(value_format), v);
      body += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' fill='{}'><title>{} / {}: {}</title></rect>\n", x,
                          y0, std::max(bar_w - 1, 1.0), std::max(y1 - y0, 0.5), colour(s), escape(groups[g]), escape(series[s].name), escape(label));
      if (text_width(label, 9) <= bar_w + 2)
        body += text(x + bar_w / 2, y0 - 3, label, 9, "middle");
      else if (bar_w >= 9)  // narrow bars: the label stands upright above the bar
        body += text(x + bar_w / 2 + 3, y0 - 3, label, 9, "start", fmt::format("transform='rotate(-90 {:.1f} {:.1f})'", x + bar_w / 2 + 3, y0 - 3));
    }
    const double cx = gx + group_w / 2;
    body += rotate ? text(cx, bottom + 14, groups[g], 11, "end", fmt::format("transform='rotate(-35 {:.1f} {:.1f})'", cx, bottom + 14))
                   : text(cx, bottom + 16, groups[g], 11, "middle");
  }
  if (reference)
    body += fmt::format("<line x1='{:.1f}' y1='{:.1f}' x2='{:.1f}' y2='{:.1f}' stroke='#333' stroke-dasharray='5,4'/>\n", left, y(*reference),
                        right, y(*reference));
  body += fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{2:.1f}' y2='{1:.1f}' stroke='#333'/>\n", left, y(0), right);
  std::vector<std::pair<std::string, std::size_t>> entries;
  for (std::size_t s = 0; s < series.size(); ++s) entries.emplace_back(series[s].name, s);
  legend(body, right + 15, top, entries);
  return document(kWidth, height, title, body);
}

std::string stacked_bars(const std::string& title, const std::vector<std::string>& rows, const std::vector<std::string>& segments,
                         const std::vector<std::vector<double>>& shares) {
  constexpr double kRow = 24, kBar = 16;
  double label_w = 0;
  for (const auto& r : rows) label_w = std::max(label_w, text_width(r, 11));
  const double left = std::min(label_w, 330.0) + 24, right = kWidth - 20, top = kTitleHeight + 24;
  std::string body;
  const Scale x{0, 1, left, right, false};
  for (double t : linear_ticks(0, 1)) {
    body += fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' stroke='#e5e5e5'/>\n", x(t), top - 4,
                        top + kRow * static_cast<double>(rows.size()));
    body += text(x(t), top - 8, fmt::format("{:.0f}%", 100 * t), 10, "middle");
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double y = top + kRow * static_cast<double>(r);
    body += text(left - 8, y + kBar - 4, rows[r], 11, "end");
    double at = 0;
    for (std::size_t s = 0; s < segments.size() && s < shares[r].size(); ++s) {
      const double share = shares[r][s];
      if (!(share > 0)) continue;
      const double x0 = x(at), w = x(at + share) - x0;
      body += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{}' fill='{}'><title>{} / {}: {:.1f}%</title></rect>\n", x0,
                          y, w, kBar, colour(s), escape(rows[r]), escape(segments[s]), 100 * share);
      const std::string pct = fmt::format("{:.0f}%", 100 * share);
      if (w > text_width(pct, 9) + 4) body += text(x0 + w / 2, y + kBar - 4, pct, 9, "middle", "fill='white'");
      at += share;
    }
  }
  // The legend flows in lines below the bars.
  double lx = left, ly = top + kRow * static_cast<double>(rows.size()) + 14;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const double w = text_width(segments[s], 11) + kSwatch + 18;
    if (lx + w > right && lx > left) lx = left, ly += kLegendLine;
    std::string entry;
    legend(entry, lx, ly, {{segments[s], s}});
    body += entry;
    lx += w;
  }
  return document(kWidth, ly + kLegendLine + 12, title, body);
}

std::string scatter(const std::string& title, const Axis& x_axis, const Axis& y_axis, const std::vector<ScatterSeries>& series) {
  std::vector<double> xs, ys;
  std::vector<std::string> names;
  for (const auto& s : series) {
    for (const auto& p : s.points) xs.push_back(p.x), ys.push_back(p.y);
    if (s.in_legend) names.push_back(s.name);
  }
  const auto [xlo, xhi] = range_of(xs, x_axis.log, false);
  const auto [ylo, yhi] = range_of(ys, y_axis.log, false);
  const double left = 78, right = kWidth - legend_width(names) - 24, top = kTitleHeight + 16, bottom = top + 340;
  const Scale x{xlo, xhi, left, right, x_axis.log}, y{ylo, yhi, bottom, top, y_axis.log};
  std::string body;
  const auto x_ticks = ticks_of(x);
  const auto x_labels = tick_labels(x_ticks);
  for (std::size_t i = 0; i < x_ticks.size(); ++i) {
    const double t = x_ticks[i];
    body += fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' stroke='#e5e5e5'/>\n", x(t), top, bottom);
    body += text(x(t), bottom + 15, x_labels[i], 10, "middle");
  }
  body += value_grid(y, left, right);
  body += fmt::format("<rect width='{:.1f}' height='{:.1f}' transform='translate({:.1f},{:.1f})' fill='none' stroke='#333'/>\n", right - left,
                      bottom - top, left, top);
  body += text((left + right) / 2, bottom + 36, x_axis.label, 11, "middle");
  body += text(16, (top + bottom) / 2, y_axis.label, 11, "middle", fmt::format("transform='rotate(-90 16 {:.1f})'", (top + bottom) / 2));
  // Several plots share one HTML page: the clip path's id is unique to this plot's title.
  Fnv1a64 id;
  id.add(title);
  const std::string clip = "plot-" + id.hex();
  body += fmt::format("<clipPath id='{}'><rect width='{:.1f}' height='{:.1f}' transform='translate({:.1f},{:.1f})'/></clipPath>\n",
                      clip, right - left, bottom - top, left, top);
  std::vector<Box> taken;  // label boxes placed so far: a label that would overlap one moves
  std::size_t marker_series = 0;
  for (const auto& s : series) {
    if (s.line && s.points.size() > 1) {
      std::string path;
      for (const auto& p : s.points) path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", x(p.x), y(p.y));
      body += fmt::format("<path d='{}' fill='none' stroke='{}' stroke-width='1.8'{} clip-path='url(#{})'/>\n", path, colour(s.colour),
                          s.dashed ? " stroke-dasharray='6,4'" : "", clip);
    }
    if (!s.markers) continue;
    // Later series draw smaller markers, so that equal points of two candidates show as rings, not as one.
    const double radius = std::max(2.5, 7.0 - 1.5 * static_cast<double>(marker_series++));
    for (const auto& p : s.points) {
      const double px = x(p.x), py = y(p.y);
      body += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='{:.1f}' fill='{}' stroke='{}' stroke-width='1.8'><title>{}: {} = {:.4g}, {} = {:.4g}</title></circle>\n",
                          px, py, radius, p.filled ? colour(s.colour) : "white", colour(s.colour), escape(p.label.empty() ? s.name : p.label),
                          escape(x_axis.label), p.x, escape(y_axis.label), p.y);
      taken.push_back({px - radius, py - radius, px + radius, py + radius});
    }
  }
  std::vector<std::tuple<double, double, std::string>> labelled;  // one label for equal points with equal labels
  for (const auto& s : series) {
    if (!s.markers) continue;
    for (const auto& p : s.points) {
      if (p.label.empty()) continue;
      const double px = x(p.x), py = y(p.y), w = text_width(p.label, 10), h = 11;
      if (std::any_of(labelled.begin(), labelled.end(), [&](const auto& l) {
            return std::get<2>(l) == p.label && std::fabs(std::get<0>(l) - px) < 4 && std::fabs(std::get<1>(l) - py) < 4;
          }))
        continue;
      labelled.emplace_back(px, py, p.label);
      // Right, left, above, below, then further out: the first place that overlaps no label or marker.
      const std::vector<std::pair<double, double>> offsets = {{8, -6}, {-8 - w, -6}, {-w / 2, -10}, {-w / 2, 16},
                                                              {8, 10}, {-8 - w, 10}, {8, -20}, {-8 - w, -20}, {-w / 2, 30}};
      std::optional<Box> placed;
      for (const auto& [dx, dy] : offsets) {
        Box b{px + dx, py + dy - h + 2, px + dx + w + 4, py + dy + 3};  // a little room between labels
        if (b.x0 < left || b.x1 > right + 20 || b.y0 < top - 12 || b.y1 > bottom) continue;
        if (std::none_of(taken.begin(), taken.end(), [&](const Box& o) { return o.overlaps(b); })) {
          placed = b;
          break;
        }
      }
      if (!placed) continue;  // the marker's tooltip still names it
      taken.push_back(*placed);
      body += text(placed->x0, placed->y1 - 2, p.label, 10, "start", fmt::format("fill='{}'", "#222"));
    }
  }
  std::vector<std::pair<std::string, std::size_t>> entries;
  for (const auto& s : series)
    if (s.in_legend) entries.emplace_back(s.name, s.colour);
  legend(body, right + 16, top, entries);
  return document(kWidth, bottom + 50, title, body);
}

std::string tornado(const std::string& title, const std::vector<TornadoPanel>& panels, const std::string& down_name,
                    const std::string& up_name) {
  constexpr double kLabel = 190, kRow = 22, kHeader = 46, kGap = 18, kBarMax = 250;
  const double centre = kLabel + kBarMax + 20;
  const auto percent = [](double change) { return fmt::format("{:+.1f}%", 100 * change); };
  std::string body;
  double y = 30;
  for (const TornadoPanel& panel : panels) {
    double largest = 0;
    for (const TornadoRow& r : panel.rows) largest = std::max({largest, std::fabs(r.down), std::fabs(r.up)});
    const double scale = largest > 0 ? kBarMax / largest : 0;
    body += text(10, y + 20, panel.title, 13, "start", "font-weight='bold'");
    const double top = y + kHeader - 14, bottom = top + kRow * static_cast<double>(panel.rows.size());
    body += fmt::format("<line x1='{0}' y1='{1}' x2='{0}' y2='{2}' stroke='black'/>\n", centre, top, bottom);
    double row = top;
    for (const TornadoRow& r : panel.rows) {
      body += text(kLabel, row + 15, r.label, 12, "end");
      for (const auto& [change, index, name] : {std::tuple{r.down, 0, &down_name}, std::tuple{r.up, 1, &up_name}}) {
        const double length = std::fabs(change) * scale, x = change < 0 ? centre - length : centre, offset = index == 0 ? 2 : 11;
        body += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='8' fill='{}'><title>{} {}: {}</title></rect>\n", x, row + offset,
                            length, colour(static_cast<std::size_t>(index)), escape(r.label), escape(*name), percent(change));
        body += text(change < 0 ? x - 3 : x + length + 3, row + offset + 7, percent(change), 9, change < 0 ? "end" : "start");
      }
      row += kRow;
    }
    y = bottom + kGap;
  }
  return document(760, y + 12, title, body);
}

void write_png(const std::string& svg_document, const std::string& png_path) {
  GError* error = nullptr;
  RsvgHandle* handle = rsvg_handle_new_from_data(reinterpret_cast<const guint8*>(svg_document.data()), svg_document.size(), &error);
  const auto fail = [&](const std::string& why) {
    throw InputError(fmt::format("cannot draw '{}': {}", png_path, why));
  };
  if (!handle) {
    const std::string why = error ? error->message : "librsvg could not read the SVG";
    if (error) g_error_free(error);
    fail(why);
  }
  gdouble width = 0, height = 0;
  if (!rsvg_handle_get_intrinsic_size_in_pixels(handle, &width, &height)) width = kWidth, height = 400;
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(std::ceil(width)), static_cast<int>(std::ceil(height)));
  cairo_t* cr = cairo_create(surface);
  const RsvgRectangle viewport{0, 0, width, height};
  const bool drawn = rsvg_handle_render_document(handle, cr, &viewport, &error);
  std::string why = drawn ? "" : (error ? error->message : "librsvg could not render it");
  if (error) g_error_free(error);
  cairo_destroy(cr);
  g_object_unref(handle);
  // Written beside the target and renamed: a reader never sees half a PNG.
  const std::filesystem::path target = png_path;
  const std::filesystem::path tmp = target.parent_path() / fmt::format(".{}.tmp.{}", target.filename().string(), getpid());
  if (drawn && cairo_surface_write_to_png(surface, tmp.string().c_str()) != CAIRO_STATUS_SUCCESS) why = "cannot write the file";
  cairo_surface_destroy(surface);
  std::error_code ec;
  if (!why.empty()) {
    std::filesystem::remove(tmp, ec);
    fail(why);
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) fail(ec.message());
}

}  // namespace warpsim::sweep::svg
