#include "sweep/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "support/files.h"
#include "sweep/runner.h"
#include "sweep/svg.h"

namespace partex {

namespace {

using svg::Canvas;
using svg::Scale;

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double frac = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  size_t n = 0;
  for (double x : v)
    if (x > 0) {
      s += std::log(x);
      ++n;
    }
  return n ? std::exp(s / static_cast<double>(n)) : 0;
}

/// Algorithms in order of first appearance (the sweep file's order).
std::vector<std::string> algorithmsOf(const std::vector<SweepRow>& rows) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& r : rows)
    if (seen.insert(r.algorithm).second) out.push_back(r.algorithm);
  return out;
}

/// A legend of series in a column from (x, y).
void legend(Canvas& c, double x, double y, const std::vector<std::string>& names, bool lines) {
  for (size_t i = 0; i < names.size(); ++i) {
    const double yy = y + 18.0 * static_cast<double>(i);
    if (lines) c.line(x, yy - 4, x + 22, yy - 4, svg::seriesColor(i), 2.5, svg::seriesDash(i));
    c.marker(svg::seriesMarker(i), x + 11, yy - 4, 4.5, svg::seriesColor(i));
    c.text(x + 28, yy, names[i], 11);
  }
}

/// Legend names, with "(N of M cases)" for an algorithm valid in fewer cases than the most valid one
/// (exact skipped on large graphs): its mean is over fewer models than the others'.
std::vector<std::string> withValidCounts(const std::vector<SweepRow>& rows, const std::vector<std::string>& algos) {
  std::map<std::string, size_t> valid, all;
  size_t most = 0;
  for (const auto& r : rows) {
    ++all[r.algorithm];
    if (r.valid) most = std::max(most, ++valid[r.algorithm]);
  }
  std::vector<std::string> out;
  for (const auto& a : algos)
    out.push_back(valid[a] < most ? a + " (" + std::to_string(valid[a]) + " of " + std::to_string(all[a]) + " cases)"
                                  : a);
  return out;
}

std::string emptyPlot(const std::string& title) {
  Canvas c(520, 120);
  c.text(260, 30, title, 14, "middle", 0, "bold");
  c.text(260, 70, "no valid results to plot", 12, "middle");
  return c.str();
}

}  // namespace

std::string ratioBoxPlotSvg(const std::vector<SweepRow>& rows) {
  const std::string title = "Makespan / lower bound per algorithm (lower is better)";
  struct Box {
    std::string name;
    std::vector<double> v;
    double q1 = 0, med = 0, q3 = 0;
  };
  std::vector<Box> boxes;
  for (const auto& a : algorithmsOf(rows)) {
    Box b;
    b.name = a;
    for (const auto& r : rows)
      if (r.algorithm == a && r.valid && r.ratioToBound > 0) b.v.push_back(r.ratioToBound);
    if (b.v.empty()) continue;
    b.q1 = quantile(b.v, 0.25);
    b.med = quantile(b.v, 0.5);
    b.q3 = quantile(b.v, 0.75);
    boxes.push_back(std::move(b));
  }
  if (boxes.empty()) return emptyPlot(title);
  std::stable_sort(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) { return a.med < b.med; });
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& b : boxes)
    for (double x : b.v) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  const bool log = hi / lo > 20;
  const double left = 190, right = 30, top = 50, rowH = 24, width = 860;
  const double height = top + rowH * static_cast<double>(boxes.size()) + 60;
  Canvas c(width, height);
  c.text(width / 2, 24, title, 15, "middle", 0, "bold");
  Scale x = svg::niceScale(std::min(1.0, lo), hi, log);
  x.pixLo = left;
  x.pixHi = width - right;
  const double y1 = top + rowH * static_cast<double>(boxes.size());
  c.axes(&x, nullptr, left, top, width - right, y1, std::string("makespan / lower bound") + (log ? " (log scale)" : ""),
         "");
  if (x.lo <= 1 && x.hi >= 1) c.line(x(1), top, x(1), y1, "#444", 1, "4 3");
  for (size_t i = 0; i < boxes.size(); ++i) {
    const Box& b = boxes[i];
    const double cy = top + rowH * (static_cast<double>(i) + 0.5);
    const double iqr = b.q3 - b.q1;
    double wlo = b.q3, whi = b.q1;
    for (double v : b.v) {
      if (v >= b.q1 - 1.5 * iqr) wlo = std::min(wlo, v);
      if (v <= b.q3 + 1.5 * iqr) whi = std::max(whi, v);
    }
    const std::string col = svg::seriesColor(i);
    c.text(left - 8, cy + 4, b.name + " (" + std::to_string(b.v.size()) + ")", 11, "end");
    c.line(x(wlo), cy, x(b.q1), cy, "#333");
    c.line(x(b.q3), cy, x(whi), cy, "#333");
    c.line(x(wlo), cy - 5, x(wlo), cy + 5, "#333");
    c.line(x(whi), cy - 5, x(whi), cy + 5, "#333");
    c.rect(x(b.q1), cy - 8, std::max(1.5, x(b.q3) - x(b.q1)), 16, col, "#333");
    c.line(x(b.med), cy - 8, x(b.med), cy + 8, "#000", 2.5);
    for (double v : b.v)
      if (v < wlo || v > whi) c.circle(x(v), cy, 2.2, "#333", 0.6);
  }
  return c.str();
}

std::string speedupVsBandwidthSvg(const std::vector<SweepRow>& rows) {
  const std::string title = "Speed-up over the best single device against link bandwidth (geometric mean over models)";
  std::vector<std::string> platforms, algos;
  std::set<std::string> seenP;
  std::set<double> bws;
  for (const auto& r : rows)
    if (r.valid && r.speedup > 0) {
      if (seenP.insert(r.platform).second) platforms.push_back(r.platform);
      bws.insert(r.bandwidthScale);
    }
  for (const auto& a : algorithmsOf(rows))
    if (std::any_of(rows.begin(), rows.end(),
                    [&](const SweepRow& r) { return r.algorithm == a && r.valid && r.speedup > 0; }))
      algos.push_back(a);
  if (platforms.empty()) return emptyPlot(title);
  // series[platform][algo][bw] = speed-ups
  std::map<std::string, std::map<std::string, std::map<double, std::vector<double>>>> s;
  double lo = 1, hi = 1;
  for (const auto& r : rows)
    if (r.valid && r.speedup > 0) s[r.platform][r.algorithm][r.bandwidthScale].push_back(r.speedup);
  for (auto& [p, byA] : s)
    for (auto& [a, byB] : byA)
      for (auto& [b, v] : byB) {
        const double g = geomean(v);
        lo = std::min(lo, g);
        hi = std::max(hi, g);
      }
  const size_t cols = std::min<size_t>(3, platforms.size());
  const size_t nrows = (platforms.size() + cols - 1) / cols;
  const double panelW = 330, panelH = 250, marginL = 70, gapX = 40, gapY = 70, top = 60, legendW = 230;
  const double width = marginL + static_cast<double>(cols) * (panelW + gapX) + legendW;
  const double height = std::max(top + static_cast<double>(nrows) * (panelH + gapY) + 10,
                                 top + 18.0 * static_cast<double>(algos.size()) + 40);
  Canvas c(width, height);
  c.text(width / 2, 26, title, 15, "middle", 0, "bold");
  const bool logX = *bws.rbegin() / *bws.begin() >= 4;
  const bool logY = hi / lo > 8;
  for (size_t pi = 0; pi < platforms.size(); ++pi) {
    const double x0 = marginL + static_cast<double>(pi % cols) * (panelW + gapX), x1 = x0 + panelW;
    const double y0 = top + static_cast<double>(pi / cols) * (panelH + gapY), y1 = y0 + panelH;
    Scale x;
    x.log = logX;
    x.lo = *bws.begin();
    x.hi = *bws.rbegin();
    if (x.hi <= x.lo) {
      x.lo *= 0.5;
      x.hi *= 2;
    } else if (logX) {
      x.lo /= 1.25;
      x.hi *= 1.25;
    } else {
      const double pad = (x.hi - x.lo) * 0.05;
      x.lo -= pad;
      x.hi += pad;
    }
    x.pixLo = x0;
    x.pixHi = x1;
    Scale y = svg::niceScale(logY ? lo : std::min(lo, 1.0) * 0.95, hi * 1.05, logY);
    y.pixLo = y1;
    y.pixHi = y0;
    c.axes(nullptr, &y, x0, y0, x1, y1, "", pi % cols == 0 ? "speed-up (x)" : "");
    for (double b : bws) {  // ticks at the swept scales
      c.line(x(b), y0, x(b), y1, "#e4e4e4");
      c.line(x(b), y1, x(b), y1 + 4, "#555");
      c.text(x(b), y1 + 16, svg::tickLabel(b), 11, "middle");
    }
    c.rect(x0, y0, panelW, panelH, "none", "#888");
    c.text((x0 + x1) / 2, y1 + 34, "link bandwidth scale", 12, "middle");
    c.text((x0 + x1) / 2, y0 - 8, platforms[pi], 13, "middle", 0, "bold");
    if (y.lo <= 1 && y.hi >= 1) c.line(x0, y(1), x1, y(1), "#444", 1, "4 3");
    for (size_t ai = 0; ai < algos.size(); ++ai) {
      auto it = s[platforms[pi]].find(algos[ai]);
      if (it == s[platforms[pi]].end()) continue;
      std::vector<std::pair<double, double>> pts;
      for (const auto& [b, v] : it->second) pts.emplace_back(x(b), y(geomean(v)));
      c.polyline(pts, svg::seriesColor(ai), 2, svg::seriesDash(ai), svg::seriesMarker(ai));
    }
  }
  legend(c, width - legendW + 10, top + 10, withValidCounts(rows, algos), true);
  return c.str();
}

std::string schedTimeVsSizeSvg(const std::vector<SweepRow>& rows) {
  const std::string title = "Scheduler time against graph size";
  std::vector<std::string> algos;
  for (const auto& a : algorithmsOf(rows))
    if (std::any_of(rows.begin(), rows.end(), [&](const SweepRow& r) { return r.algorithm == a && r.valid; }))
      algos.push_back(a);
  if (algos.empty()) return emptyPlot(title);
  double xlo = std::numeric_limits<double>::infinity(), xhi = 0, ylo = std::numeric_limits<double>::infinity(), yhi = 0;
  const double floorMs = 1e-3;
  for (const auto& r : rows)
    if (r.valid) {
      xlo = std::min(xlo, static_cast<double>(std::max(1, r.tasks)));
      xhi = std::max(xhi, static_cast<double>(std::max(1, r.tasks)));
      ylo = std::min(ylo, std::max(floorMs, r.schedMs));
      yhi = std::max(yhi, std::max(floorMs, r.schedMs));
    }
  const double left = 80, right = 250, top = 50, width = 900,
               height = std::max(520.0, top + 18.0 * static_cast<double>(algos.size()) + 40);
  const double x1 = width - right, y1 = height - 60;
  Canvas c(width, height);
  c.text((left + x1) / 2, 26, title, 15, "middle", 0, "bold");
  Scale x = svg::niceScale(xlo, xhi, true);
  x.pixLo = left;
  x.pixHi = x1;
  Scale y = svg::niceScale(ylo, yhi, true);
  y.pixLo = y1;
  y.pixHi = top;
  c.axes(&x, &y, left, top, x1, y1, "operators (tasks), log scale", "scheduler time (ms), log scale");
  for (size_t ai = 0; ai < algos.size(); ++ai)
    for (const auto& r : rows)
      if (r.valid && r.algorithm == algos[ai])
        c.circle(x(static_cast<double>(std::max(1, r.tasks))), y(std::max(floorMs, r.schedMs)), 3.5,
                 svg::seriesColor(ai), 0.75);
  legend(c, x1 + 20, top + 10, withValidCounts(rows, algos), false);
  return c.str();
}

std::string reportMarkdown(const SweepSpec& spec, const SweepTable& table) {
  const auto& rows = table.rows;
  size_t valid = 0;
  for (const auto& r : rows) valid += r.valid;
  std::string md = "# Sweep report: " + std::filesystem::path(spec.file).filename().string() + "\n\n";
  md += std::to_string(rows.size()) + " cases with results (" + std::to_string(valid) + " with a valid plan), " +
        std::to_string(table.missing.size()) + " missing; Partex " + partexVersion() + ".\n\n";
  // Wins: the best makespan of a problem (every key part but the algorithm), ties within 1e-9 relative.
  std::map<std::string, double> bestOf;
  auto problemOf = [](const SweepRow& r) { return r.key.substr(0, r.key.rfind('|')); };
  for (const auto& r : rows)
    if (r.valid) {
      auto [it, fresh] = bestOf.emplace(problemOf(r), r.makespanUs);
      if (!fresh) it->second = std::min(it->second, r.makespanUs);
    }
  md +=
      "| algorithm | valid | makespan/LB geo. mean | makespan/LB median | wins | speed-up geo. mean | sched ms median "
      "|\n";
  md += "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& a : algorithmsOf(rows)) {
    std::vector<double> ratio, speed, ms;
    size_t n = 0, wins = 0, problems = 0;
    for (const auto& r : rows) {
      if (r.algorithm != a) continue;
      ++problems;
      if (!r.valid) continue;
      ++n;
      ratio.push_back(r.ratioToBound);
      speed.push_back(r.speedup);
      ms.push_back(r.schedMs);
      if (r.makespanUs <= bestOf[problemOf(r)] * (1 + 1e-9)) ++wins;
    }
    char buf[256];
    std::snprintf(buf, sizeof buf, "| %s | %zu/%zu | %.3f | %.3f | %zu | %.3f | %.2f |\n", a.c_str(), n, problems,
                  geomean(ratio), quantile(ratio, 0.5), wins, geomean(speed), quantile(ms, 0.5));
    md += buf;
  }
  md += "\n![makespan / lower bound](plots/ratio_to_lower_bound.svg)\n\n";
  md += "![speed-up against link bandwidth](plots/speedup_vs_bandwidth.svg)\n\n";
  md += "![scheduler time against graph size](plots/sched_time_vs_size.svg)\n";
  return md;
}

Status writeSweepReport(const SweepSpec& spec, const SweepTable& table) {
  const std::filesystem::path out(spec.output);
  std::error_code ec;
  std::filesystem::create_directories(out / "plots", ec);
  if (ec) return makeError((out / "plots").string(), ": cannot create the folder: ", ec.message());
  if (auto st = writeFileAtomic((out / "plots" / "ratio_to_lower_bound.svg").string(), ratioBoxPlotSvg(table.rows));
      !st)
    return st;
  if (auto st =
          writeFileAtomic((out / "plots" / "speedup_vs_bandwidth.svg").string(), speedupVsBandwidthSvg(table.rows));
      !st)
    return st;
  if (auto st = writeFileAtomic((out / "plots" / "sched_time_vs_size.svg").string(), schedTimeVsSizeSvg(table.rows));
      !st)
    return st;
  return writeFileAtomic((out / "report.md").string(), reportMarkdown(spec, table));
}

}  // namespace partex
