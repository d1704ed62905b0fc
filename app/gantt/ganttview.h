#pragma once
/// \file The Gantt chart widget: one row per device and per link, the makespan large with its
/// change against a reference, a time axis, tooltips, zoom (wheel), pan (drag the background), fit
/// (double-click), a preview timeline drawn over ghosts of the current one while a drag hovers over
/// a device, and export to SVG or PNG. The chart itself (data, geometry, painting, export) is
/// GanttChart, which needs no widget; this class adds the events.

#include <QColor>
#include <QList>
#include <QWidget>

#include <vector>

#include "cost/costtable.h"
#include "gantt/ganttchart.h"
#include "gantt/ganttdata.h"
#include "gantt/timescale.h"
#include "sim/simulator.h"
#include "support/result.h"

class QPainter;

namespace partex::gui {

/// A GanttChart in a widget (see GanttChart for how it paints cheaply).
class GanttView : public QWidget {
  Q_OBJECT
 public:
  explicit GanttView(QWidget* parent = nullptr);

  /// Shows `tl` of table `t` with one colour per device (missing colours come from the palette).
  /// The table must outlive the view or the next call; null clears the view. Refits the time
  /// scale unless the user has zoomed or panned since the last fit. Each of `fused` (the timeline's
  /// fused kernels, plan/fusedkernels.h) is drawn as one bar, labelled with its anchor, in place of
  /// its operators' bars.
  void setTimeline(const partex::CostTable* t, const partex::Timeline& tl, const std::vector<QColor>& deviceColors,
                   const std::vector<partex::FusedKernel>& fused = {});
  /// While set, draws `tl` solid (with its fused kernels `fused`) over ghosts of the current
  /// timeline, with its makespan and its change against the current one; nullptr clears. Copied.
  void setPreview(const partex::Timeline* tl, const std::vector<partex::FusedKernel>& fused = {});
  /// Marks the timeline shown (set just before) as a stream of inferences (GanttChart::setStream).
  void setStream(const GanttChart::StreamMarks& s);
  /// Marks the timeline shown (set just before) as a workload of several models (GanttChart::setWorkload).
  void setWorkload(const GanttChart::WorkloadMarks& w);
  /// A makespan to compare against, e.g. the HEFT plan's (<= 0: none).
  void setReferenceMakespan(double us);
  /// What the reference is, as in "-12.3% vs HEFT plan" (default "reference").
  void setReferenceLabel(const QString& label);
  /// A title drawn before the makespan (e.g. the plan's algorithm); empty: none.
  void setTitle(const QString& title);
  QString title() const { return chart_.title(); }
  /// Highlights these tasks with an outline (ids out of range are ignored).
  void setSelectedTasks(const QList<int>& tasks);

  /// The device row under a global position, -1 if none (link rows, axis, outside, a workload shown):
  /// the drop target of the drag controller.
  int deviceAt(const QPoint& globalPos) const;
  /// The task bar under a widget position, -1 if none.
  int taskAt(const QPoint& pos) const;
  /// Where task `task` is drawn in widget coordinates now (empty when unknown or off the plot): the
  /// bar of its fused kernel when it is in one.
  QRectF taskRect(int task) const;

  /// Draws the whole chart (time fitted to the width of `target`) into `target`.
  void renderTo(QPainter* p, const QRectF& target);
  /// Writes the whole chart as SVG (QSvgGenerator) or PNG by the file extension, through a
  /// temporary file and a rename, so that a failure never leaves a half-written file.
  partex::Status saveImage(const QString& path);
  /// Width of exported images in pixels (height follows the rows); default 1600.
  void setExportWidth(int px);
  /// The size saveImage() writes.
  QSize exportSize() const;

  /// Where the header, axis, rows and plot are in this widget now (what paintEvent draws in): views
  /// drawn on the same time axis (MemoryView) take their plot columns from it.
  GanttChart::Frame plotFrame() const { return widgetFrame(); }
  /// The time scale of the plot area (pixel 0 = left edge of the bars).
  const TimeScale& timeScale() const { return scale_; }
  /// Sets the time scale (a compare view keeps two charts on one); emits timeScaleChanged when it changes.
  void setTimeScale(const TimeScale& s);
  /// Time fit() shows up to; <= 0: the larger of the makespan and the preview's.
  void setFitEnd(double us);
  /// The label column is at least this wide, so that stacked charts line up.
  void setMinimumLabelWidth(int px);
  int labelWidth() const { return chart_.labelWidth(); }

  /// Makespan shown now: the preview's while one is set.
  double shownMakespan() const;
  /// The header line, e.g. "HEFT  1.234 ms (-12.3% vs reference)".
  QString makespanText() const;
  /// The tooltip text of the bar under a widget position ("" if none).
  QString toolTipAt(const QPoint& pos) const;
  const std::vector<GanttRow>& rows() const { return chart_.rows(); }
  /// Bars of the timeline shown (the preview while one is set), per row.
  const GanttBars& bars() const { return chart_.bars(); }
  /// Marks drawn by the last paint (filled rectangles for bars and merged runs): lets tests check
  /// the level of detail, and the bench report it.
  int lastMarkCount() const { return chart_.lastMarkCount(); }
  /// The chart this widget shows.
  const GanttChart& chart() const { return chart_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 public slots:
  /// Fits the time axis to [0, fit end] and resumes automatic fitting on new timelines.
  void fit();
  void zoomIn();
  void zoomOut();

 signals:
  /// A task bar was clicked.
  void taskClicked(int task, Qt::KeyboardModifiers mods);
  /// The time scale changed by zoom, pan, fit or resize.
  void timeScaleChanged(const partex::gui::TimeScale& scale);

 protected:
  bool event(QEvent* e) override;
  void changeEvent(QEvent* e) override;
  void paintEvent(QPaintEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;

 private:
  GanttChart::Frame widgetFrame() const;
  /// After the chart's rows changed: the widget's size hints follow.
  void chartChanged();
  void setScaleInternal(const TimeScale& s);

  GanttChart chart_;
  TimeScale scale_;
  bool autoFit_ = true;
  bool panning_ = false;
  QPoint panStart_;
  double panOrigin_ = 0;
};

}  // namespace partex::gui
