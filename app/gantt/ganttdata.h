#pragma once
/// \file The rows and bars of a Gantt chart, computed once per timeline from the cost table, which
/// the view paints and hit-tests: one row per device, one per link resource, and one per ordered
/// device pair whose uncontended transfers take time (task graphs, links without a resource), as
/// the trace export does. Bars are sorted by start time per row, so painting and hit-testing find
/// the visible ones by binary search.

#include <QString>

#include <vector>

#include "cost/costtable.h"
#include "plan/fusedkernels.h"
#include "sim/simulator.h"

namespace partex::gui {

/// What a Gantt row shows. Requests: a workload's model, one span per request from its release to its
/// end (GanttChart::setWorkload); its `device` field holds the model's index, and it has no bars.
enum class GanttRowKind { Device, Link, Requests };
/// What a bar is.
enum class GanttBarKind { Task, Transfer };

/// One row of the chart.
struct GanttRow {
  GanttRowKind kind = GanttRowKind::Device;
  QString label;
  int device = -1;  ///< Device rows: the device.
  int link = -1;    ///< Link rows of a link resource: its index; -1 for an uncontended device pair.
  int from = -1;    ///< Uncontended pair rows: the source device.
  int to = -1;      ///< Uncontended pair rows: the destination device.
};

/// One bar: a task on its device row, a fused kernel (one bar for all its operators) on its device
/// row, or a transfer on its link row.
struct GanttBar {
  double start = 0;
  double end = 0;
  int index = 0;  ///< Task id (a fused kernel: its anchor), or index into Timeline::transfers.
  GanttBarKind kind = GanttBarKind::Task;
  int kernel = -1;  ///< A fused kernel's bar: index into GanttBars::kernels; -1 otherwise.
};

/// The bars of one timeline laid out on a row layout.
struct GanttBars {
  std::vector<std::vector<GanttBar>> perRow;  ///< Per row, sorted by start.
  std::vector<double> maxDuration;            ///< Per row: the longest bar (bounds the binary search).
  std::vector<partex::FusedKernel> kernels;   ///< The fused kernels drawn, as given.
  std::vector<int> kernelOf;                  ///< Per task: index into kernels, or -1 (drawn alone).
};

/// The row layout for a table and the timelines that will be shown on it (null entries skipped):
/// devices, then link resources, then the uncontended device pairs any of them uses, by (from, to).
std::vector<GanttRow> ganttRows(const partex::CostTable& t, const std::vector<const partex::Timeline*>& timelines);

/// The bars of `tl` on `rows`. Tasks or transfers that name devices or links outside the table
/// (a timeline that does not belong to the table) are left out rather than trusted; transfers that
/// take no time are left out (nothing to draw). Each of `fused` (the timeline's fused kernels,
/// plan/fusedkernels.h) is one bar in place of its operators', from its first operator's start to its
/// last one's end; a kernel whose operators are not all on its device in `tl` is ignored.
GanttBars ganttBars(const partex::CostTable& t, const std::vector<GanttRow>& rows, const partex::Timeline& tl,
                    const std::vector<partex::FusedKernel>& fused = {});

/// The index of the first bar of a start-sorted row that may overlap [t0, ...): the first with
/// start >= t0 - maxDuration.
size_t firstVisibleBar(const std::vector<GanttBar>& bars, double maxDuration, double t0);

}  // namespace partex::gui
