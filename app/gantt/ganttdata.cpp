#include "gantt/ganttdata.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace partex::gui {

namespace {

bool validDevice(const partex::CostTable& t, int d) {
  return d >= 0 && d < t.numDevices();
}

}  // namespace

std::vector<GanttRow> ganttRows(const partex::CostTable& t, const std::vector<const partex::Timeline*>& timelines) {
  std::vector<GanttRow> rows;
  for (int d = 0; d < t.numDevices(); ++d) {
    GanttRow r;
    r.kind = GanttRowKind::Device;
    r.device = d;
    r.label = QString::fromStdString(t.deviceIds[static_cast<size_t>(d)]);
    rows.push_back(r);
  }
  for (int l = 0; l < t.numLinkResources; ++l) {
    GanttRow r;
    r.kind = GanttRowKind::Link;
    r.link = l;
    r.label = static_cast<size_t>(l) < t.linkNames.size() ? QString::fromStdString(t.linkNames[static_cast<size_t>(l)])
                                                          : QStringLiteral("link %1").arg(l);
    rows.push_back(r);
  }
  std::set<std::pair<int, int>> pairs;
  for (const auto* tl : timelines) {
    if (!tl) continue;
    for (const auto& x : tl->transfers)
      if (x.link < 0 && x.end > x.start && validDevice(t, x.from) && validDevice(t, x.to)) pairs.emplace(x.from, x.to);
  }
  for (const auto& [a, b] : pairs) {
    GanttRow r;
    r.kind = GanttRowKind::Link;
    r.from = a;
    r.to = b;
    r.label = QString::fromStdString(t.deviceIds[static_cast<size_t>(a)] + "->" + t.deviceIds[static_cast<size_t>(b)]);
    rows.push_back(r);
  }
  return rows;
}

GanttBars ganttBars(const partex::CostTable& t, const std::vector<GanttRow>& rows, const partex::Timeline& tl,
                    const std::vector<partex::FusedKernel>& fused) {
  GanttBars out;
  out.perRow.resize(rows.size());
  out.maxDuration.assign(rows.size(), 0.0);
  std::vector<int> deviceRow(static_cast<size_t>(t.numDevices()), -1);
  std::vector<int> linkRow(static_cast<size_t>(std::max(0, t.numLinkResources)), -1);
  std::map<std::pair<int, int>, int> pairRow;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.kind == GanttRowKind::Device && validDevice(t, r.device))
      deviceRow[static_cast<size_t>(r.device)] = static_cast<int>(i);
    else if (r.kind == GanttRowKind::Link && r.link >= 0 && r.link < t.numLinkResources)
      linkRow[static_cast<size_t>(r.link)] = static_cast<int>(i);
    else if (r.kind == GanttRowKind::Link && r.link < 0)
      pairRow[{r.from, r.to}] = static_cast<int>(i);
  }
  auto add = [&](int row, const GanttBar& b) {
    if (row < 0) return;
    out.perRow[static_cast<size_t>(row)].push_back(b);
    auto& m = out.maxDuration[static_cast<size_t>(row)];
    m = std::max(m, b.end - b.start);
  };
  const int n = std::min(t.numTasks(), static_cast<int>(tl.tasks.size()));
  // Fused kernels that match this timeline: all operators on the kernel's device, each in one kernel.
  out.kernelOf.assign(static_cast<size_t>(std::max(0, n)), -1);
  for (const auto& k : fused) {
    bool ok = k.ops.size() >= 2 && validDevice(t, k.device);
    for (int v : k.ops)
      ok = ok && v >= 0 && v < n && tl.tasks[static_cast<size_t>(v)].device == k.device &&
           out.kernelOf[static_cast<size_t>(v)] < 0 &&
           tl.tasks[static_cast<size_t>(v)].end >= tl.tasks[static_cast<size_t>(v)].start;
    if (!ok) continue;
    const int ki = static_cast<int>(out.kernels.size());
    out.kernels.push_back(k);
    double start = tl.tasks[static_cast<size_t>(k.ops.front())].start, end = start;
    for (int v : k.ops) {
      out.kernelOf[static_cast<size_t>(v)] = ki;
      start = std::min(start, tl.tasks[static_cast<size_t>(v)].start);
      end = std::max(end, tl.tasks[static_cast<size_t>(v)].end);
    }
    add(deviceRow[static_cast<size_t>(k.device)], {start, end, k.ops.front(), GanttBarKind::Task, ki});
  }
  for (int v = 0; v < n; ++v) {
    const auto& s = tl.tasks[static_cast<size_t>(v)];
    if (out.kernelOf[static_cast<size_t>(v)] >= 0) continue;  // drawn as its kernel's bar
    if (!validDevice(t, s.device) || !(s.end >= s.start)) continue;
    add(deviceRow[static_cast<size_t>(s.device)], {s.start, s.end, v, GanttBarKind::Task});
  }
  for (size_t i = 0; i < tl.transfers.size(); ++i) {
    const auto& x = tl.transfers[i];
    if (!(x.end > x.start)) continue;
    int row = -1;
    if (x.link >= 0 && x.link < t.numLinkResources) {
      row = linkRow[static_cast<size_t>(x.link)];
    } else if (x.link < 0) {
      auto it = pairRow.find({x.from, x.to});
      if (it != pairRow.end()) row = it->second;
    }
    add(row, {x.start, x.end, static_cast<int>(i), GanttBarKind::Transfer});
  }
  for (auto& bars : out.perRow)
    std::stable_sort(bars.begin(), bars.end(), [](const GanttBar& a, const GanttBar& b) { return a.start < b.start; });
  return out;
}

size_t firstVisibleBar(const std::vector<GanttBar>& bars, double maxDuration, double t0) {
  const double key = t0 - maxDuration;
  auto it = std::lower_bound(bars.begin(), bars.end(), key, [](const GanttBar& b, double k) { return b.start < k; });
  return static_cast<size_t>(it - bars.begin());
}

}  // namespace partex::gui
