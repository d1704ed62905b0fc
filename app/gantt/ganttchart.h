#pragma once
/// \file The Gantt chart without a widget: its data (a timeline, an optional preview, the selection,
/// a reference makespan), its geometry (rows, bars, where a point falls), its painting and its
/// export to SVG or PNG. Needs QtGui only (no QtWidgets), so that `partex-cli render` draws exactly
/// what the GUI's GanttView shows without linking the GUI. GanttView adds the events: zoom, pan,
/// fit, tooltips and clicks.

#include <QColor>
#include <QCoreApplication>
#include <QFont>
#include <QList>
#include <QRectF>
#include <QSize>
#include <QString>
#include <QStringList>

#include <optional>
#include <utility>
#include <vector>

#include "cost/costtable.h"
#include "gantt/ganttdata.h"
#include "gantt/timescale.h"
#include "plan/fusedkernels.h"
#include "sim/simulator.h"
#include "support/result.h"

class QPainter;

namespace partex::gui {

/// See the file comment. Paints cheaply: only the visible rows and the bars inside the visible time
/// range (binary search on start-sorted rows), and bars narrower than two pixels merged into one
/// mark per run of pixel columns, so that a repaint costs O(visible bars + width), not O(tasks).
class GanttChart {
  Q_DECLARE_TR_FUNCTIONS(GanttChart)
 public:
  static constexpr double kHeaderH = 44;      ///< Makespan line.
  static constexpr double kAxisH = 26;        ///< Time axis.
  static constexpr double kRowH = 26;         ///< Row height in exports and at full size.
  static constexpr double kMinRowH = 12;      ///< Rows shrink to this when the widget is short.
  static constexpr double kBottom = 8;        ///< Margin under the last row.
  static constexpr double kFitMargin = 1.03;  ///< A fit leaves 3% of room right of the makespan.

  GanttChart();

  /// The font the chart's text sizes derive from (the widget's; the application's by default).
  void setFont(const QFont& f);
  const QFont& font() const { return font_; }

  /// Shows `tl` of table `t` with one colour per device (missing colours come from the palette) and
  /// its fused kernels `fused`, each drawn as one bar labelled with its anchor. The table must
  /// outlive the chart or the next call; null clears. Clears the preview and the selection.
  void setTimeline(const partex::CostTable* t, const partex::Timeline& tl, const std::vector<QColor>& deviceColors,
                   const std::vector<partex::FusedKernel>& fused = {});
  /// A stream of inferences through one plan (sim/stream.h), shown after setTimeline() of the stream's
  /// unrolled table and timeline: task v of inference i is v + i * tasksPerInference.
  struct StreamMarks {
    int tasksPerInference = 0;  ///< 0: no stream (what setTimeline() resets to).
    int inferences = 0;
    double periodStartUs = 0;  ///< The steady-state period marked: [start, start + period).
    double periodUs = 0;
    double latencyUs = 0;       ///< Median latency of an inference in the steady state.
    int bottleneckDevice = -1;  ///< The device busiest per inference, marked on its row; -1: none.
  };
  /// Marks the timeline shown as a stream: bars of odd inferences lighter with a diagonal hatch, so
  /// that successive inferences are told apart on every row; the steady-state period between two
  /// dashed lines; the bottleneck device's row labelled so; the header its period, rate and latency.
  void setStream(const StreamMarks& s);
  const StreamMarks& stream() const { return stream_; }
  /// The inference a task bar of the shown timeline belongs to (0 when no stream is shown).
  int inferenceOf(int task) const {
    return stream_.tasksPerInference > 0 && task >= 0 ? task / stream_.tasksPerInference : 0;
  }
  /// A workload of several models (core's scheduleWorkload with keepTimeline), shown after setTimeline()
  /// of its joint table and timeline.
  struct WorkloadRequestMark {
    int model = 0;
    double releaseUs = 0;
    double endUs = -1;      ///< -1 when dropped.
    double deadlineUs = 0;  ///< Absolute: release + the model's deadline.
    bool dropped = false;
    bool missed() const { return dropped || endUs > deadlineUs + 1e-6; }
  };
  struct WorkloadMarks {
    std::vector<QString> models;        ///< Model names; empty: no workload (what setTimeline() resets to).
    std::vector<int> requestOfTask;     ///< Per task: index into requests, -1 for none (the clock's).
    std::vector<WorkloadRequestMark> requests;
    int hiddenDevice = -1;              ///< A pseudo-device whose row is left out (the workload's clock).
    QString algorithm;                  ///< The scheduler that dispatched it ("partex", "band").
  };
  /// Shows the timeline as a workload: each model's operators in its own hue (kModelHues), shaded per
  /// device; one row per model under the devices with every request from its release to its end and its
  /// deadline ticked, missed and dropped requests in red (and their operators outlined in red); a legend
  /// of the models in the header, which gives the deadlines met.
  void setWorkload(const WorkloadMarks& w);
  const WorkloadMarks& workload() const { return workload_; }
  /// The model of a task of the shown timeline (-1 when none or no workload is shown).
  int modelOfTask(int task) const;
  /// The fill of a task's bar: its device's colour, or in a workload its model's hue in its device's shade.
  QColor taskColor(int task) const;
  /// Model `model`'s colour on device `device` of `devices`: one hue per model, lighter on later devices.
  static QColor modelColor(int model, int device, int devices);
  /// The legend entries the last paint drew (model names), empty when none was drawn (no workload, or
  /// no room in the header).
  const QStringList& drawnLegend() const { return drawnLegend_; }
  /// Requests whose deadline was met / all of them (0/0 without a workload).
  std::pair<int, int> deadlinesMet() const;

  /// While set, `tl` is drawn solid over ghosts of the current timeline; nullptr clears. Copied.
  void setPreview(const partex::Timeline* tl, const std::vector<partex::FusedKernel>& fused = {});
  void setReferenceMakespan(double us);
  void setReferenceLabel(const QString& label);
  void setTitle(const QString& title);
  const QString& title() const { return title_; }
  /// Highlights these tasks with an outline (ids out of range are ignored).
  void setSelectedTasks(const QList<int>& tasks);
  /// The label column is at least this wide, so that stacked charts line up.
  void setMinimumLabelWidth(int px);
  int labelWidth() const { return labelWidth_; }
  /// Time a fit shows up to; <= 0: the larger of the makespan and the preview's.
  void setFitEnd(double us);
  double fitEnd() const;

  const partex::CostTable* table() const { return table_; }
  bool hasPreview() const { return preview_.has_value(); }
  /// Makespan shown now: the preview's while one is set.
  double shownMakespan() const;
  /// The header line, e.g. "HEFT: makespan 1.234 ms (-12.3% vs reference)".
  QString makespanText() const;
  const std::vector<GanttRow>& rows() const { return rows_; }
  /// Bars of the timeline shown (the preview while one is set), per row.
  const GanttBars& bars() const { return preview_ ? previewBars_ : bars_; }
  /// Marks drawn by the last paint (filled rectangles for bars and merged runs).
  int lastMarkCount() const { return lastMarks_; }

  /// Where the header, axis, labels, rows and plot are in one area.
  struct Frame {
    QRectF area;
    double plotLeft = 0;
    double plotWidth = 0;
    double rowsTop = 0;
    double rowHeight = 0;
  };
  /// The frame of `area`; with `compactRows`, rows shrink (down to kMinRowH) to fit its height.
  Frame frameFor(const QRectF& area, bool compactRows) const;
  /// The row at height y, or -1.
  int rowAtY(const Frame& f, double y) const;
  /// The bar under a point in the shown timeline: row and bar index, or {-1, -1}.
  std::pair<int, int> barAt(const Frame& f, const TimeScale& sc, const QPointF& pos) const;
  /// The task whose bar is under a point, or -1.
  int taskAt(const Frame& f, const TimeScale& sc, const QPointF& pos) const;
  /// Where task `task` is drawn (its fused kernel's bar when it is in one); empty when off the plot.
  QRectF taskRect(const Frame& f, const TimeScale& sc, int task) const;
  /// The tooltip text of the bar under a point ("" if none).
  QString toolTipAt(const Frame& f, const TimeScale& sc, const QPointF& pos) const;

  /// Paints the chart in frame `f` at time scale `sc`; only rows that intersect `dirty`.
  void paint(QPainter& p, const Frame& f, const TimeScale& sc, const QRectF& dirty);

  /// Width of exported images in pixels (height follows the rows); default 1600.
  void setExportWidth(int px);
  /// The size saveImage() writes.
  QSize exportSize() const;
  /// Draws the whole chart (time fitted to the width of `target`) into `target`.
  void renderTo(QPainter* p, const QRectF& target);
  /// Writes the whole chart as SVG (QSvgGenerator) or PNG by the file extension, through a
  /// temporary file and a rename, so that a failure never leaves a half-written file.
  partex::Status saveImage(const QString& path);

 private:
  void relayout();
  bool shownSpan(int v, double& start, double& end) const;
  QColor deviceColorOf(int device) const;
  void paintRowBars(QPainter& p, const Frame& f, const TimeScale& sc, int row, const GanttBars& bars,
                    const partex::Timeline& tl, bool ghost);
  void paintRequests(QPainter& p, const Frame& f, const TimeScale& sc, int row);
  void paintLegend(QPainter& p, const QRectF& header, double textRight);

  QFont font_;
  const partex::CostTable* table_ = nullptr;
  partex::Timeline tl_;
  std::vector<partex::FusedKernel> fused_;
  std::optional<partex::Timeline> preview_;
  std::vector<partex::FusedKernel> previewFused_;
  std::vector<QColor> colors_;
  StreamMarks stream_;
  WorkloadMarks workload_;
  std::vector<int> requestLane_;  ///< Per request: its lane in its model's row (requests that overlap in time stack).
  std::vector<int> modelLanes_;   ///< Per model: the lanes its row is split into.
  QStringList drawnLegend_;
  std::vector<GanttRow> rows_;
  GanttBars bars_;
  GanttBars previewBars_;
  std::vector<char> selected_;  ///< Per task.
  QList<int> selectedList_;
  double referenceUs_ = 0;
  QString referenceLabel_;
  QString title_;
  double fitEnd_ = 0;
  int minLabelWidth_ = 0;
  int labelWidth_ = 90;
  int exportWidth_ = 1600;
  int lastMarks_ = 0;
};

}  // namespace partex::gui
