#include "gantt/ganttchart.h"

#include <QFileInfo>
#include <QFontMetrics>
#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>

#include <algorithm>
#include <cmath>

#include "session/palette.h"

namespace partex::gui {

namespace {

constexpr double kRightMargin = 16;
constexpr int kLabelFontPx = 12;
constexpr int kBarFontPx = 11;
constexpr int kHeaderFontPx = 20;

QFont pixelFont(const QFont& base, int px, bool bold = false) {
  QFont f = base;
  f.setPixelSize(px);
  f.setBold(bold);
  return f;
}

/// "+12.3%" or "\u221212.3%" (a real minus sign) for value against reference.
QString percentChange(double value, double reference) {
  const double pct = (value / reference - 1.0) * 100.0;
  const QString num = QString::number(std::fabs(pct), 'f', 1);
  if (num == QLatin1String("0.0")) return QStringLiteral("\u00b10.0%");
  return (pct < 0 ? QStringLiteral("\u2212") : QStringLiteral("+")) + num + QLatin1Char('%');
}

QString taskLabel(const partex::CostTable& t, int v) {
  if (v < 0) return QStringLiteral("host");
  if (v >= t.numTasks()) return QStringLiteral("?");
  return QString::fromStdString(t.taskNames[static_cast<size_t>(v)]);
}

}  // namespace

GanttChart::GanttChart() : referenceLabel_(tr("reference")) {}

void GanttChart::setFont(const QFont& f) {
  if (f == font_) return;
  font_ = f;
  relayout();
}

void GanttChart::setTimeline(const partex::CostTable* t, const partex::Timeline& tl,
                             const std::vector<QColor>& deviceColors, const std::vector<partex::FusedKernel>& fused) {
  table_ = t;
  preview_.reset();
  previewFused_.clear();
  previewBars_ = {};
  if (t) {
    tl_ = tl;
    fused_ = fused;
  } else {
    tl_ = {};
    fused_.clear();
  }
  colors_ = deviceColors;
  stream_ = {};
  workload_ = {};
  relayout();
  setSelectedTasks({});  // the tasks of another timeline: the caller selects again
}

void GanttChart::setStream(const StreamMarks& s) {
  stream_ = s;
  if (stream_.tasksPerInference < 0 || !std::isfinite(stream_.periodUs) || !std::isfinite(stream_.periodStartUs)) stream_ = {};
  relayout();  // the bottleneck's row label is wider
}

void GanttChart::setWorkload(const WorkloadMarks& w) {
  workload_ = w;
  const int models = static_cast<int>(workload_.models.size());
  bool ok = true;
  for (const auto& r : workload_.requests) ok = ok && r.model >= 0 && r.model < models;
  for (int r : workload_.requestOfTask) ok = ok && r < static_cast<int>(workload_.requests.size());
  if (!ok) workload_ = {};  // marks of another workload: not trusted
  // Requests of one model that overlap in time (several per release, or one still running at the next
  // release) go to separate lanes of its row, the first free one by release time, at most four.
  requestLane_.assign(workload_.requests.size(), 0);
  modelLanes_.assign(workload_.models.size(), 1);
  std::vector<size_t> order(workload_.requests.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    return workload_.requests[a].releaseUs < workload_.requests[b].releaseUs;
  });
  std::vector<std::vector<double>> laneEnd(workload_.models.size());
  for (size_t i : order) {
    const auto& q = workload_.requests[i];
    const double end = q.dropped ? q.deadlineUs : std::max(q.endUs, q.releaseUs);
    auto& ends = laneEnd[static_cast<size_t>(q.model)];
    size_t lane = 0;
    while (lane < ends.size() && ends[lane] > q.releaseUs) ++lane;
    if (lane == ends.size()) {
      if (ends.size() < 4) {
        ends.push_back(end);
      } else {
        lane = static_cast<size_t>(std::min_element(ends.begin(), ends.end()) - ends.begin());
      }
    }
    ends[lane] = std::max(ends[lane], end);
    requestLane_[i] = static_cast<int>(lane);
    modelLanes_[static_cast<size_t>(q.model)] = std::max(modelLanes_[static_cast<size_t>(q.model)], static_cast<int>(lane) + 1);
  }
  relayout();
}

int GanttChart::modelOfTask(int task) const {
  if (workload_.models.empty() || task < 0 || static_cast<size_t>(task) >= workload_.requestOfTask.size()) return -1;
  const int r = workload_.requestOfTask[static_cast<size_t>(task)];
  return r < 0 ? -1 : workload_.requests[static_cast<size_t>(r)].model;
}

namespace {

/// One hue per model, far apart on the colour wheel (blue, orange, green, purple, red, teal, yellow,
/// indigo); a ninth model and later ones step round the wheel.
constexpr int kModelHues[] = {210, 28, 130, 285, 350, 175, 55, 250};

int modelHue(int model) {
  const int n = static_cast<int>(sizeof kModelHues / sizeof kModelHues[0]);
  return model >= 0 && model < n ? kModelHues[model] : (model * 47) % 360;
}

/// A model's own colour (its request row, its legend swatch): the hue at a middle shade.
QColor modelBaseColor(int model) {
  return QColor::fromHsl(modelHue(model), 170, 128);
}

}  // namespace

QColor GanttChart::modelColor(int model, int device, int devices) {
  const int span = std::max(1, devices - 1);
  const int l = 80 + std::clamp(device, 0, span) * 110 / span;  // darkest on device 0, lightest on the last
  return QColor::fromHsl(modelHue(model), 170, l);
}

QColor GanttChart::taskColor(int task) const {
  const int d = task >= 0 && static_cast<size_t>(task) < tl_.tasks.size() ? tl_.tasks[static_cast<size_t>(task)].device : -1;
  const int model = modelOfTask(task);
  if (model < 0) return deviceColorOf(d);
  const int devices = table_ ? table_->numDevices() - (workload_.hiddenDevice >= 0 ? 1 : 0) : 1;
  return modelColor(model, d, devices);
}

std::pair<int, int> GanttChart::deadlinesMet() const {
  int met = 0;
  for (const auto& r : workload_.requests) met += r.missed() ? 0 : 1;
  return {met, static_cast<int>(workload_.requests.size())};
}

void GanttChart::setPreview(const partex::Timeline* tl, const std::vector<partex::FusedKernel>& fused) {
  if (tl && table_) {
    preview_ = *tl;
    previewFused_ = fused;
  } else {
    preview_.reset();
    previewFused_.clear();
  }
  relayout();
}

void GanttChart::setReferenceMakespan(double us) {
  referenceUs_ = us > 0 && std::isfinite(us) ? us : 0;
}

void GanttChart::setReferenceLabel(const QString& label) {
  referenceLabel_ = label;
}

void GanttChart::setTitle(const QString& title) {
  title_ = title;
}

void GanttChart::setSelectedTasks(const QList<int>& tasks) {
  const int n = table_ ? table_->numTasks() : 0;
  selected_.assign(static_cast<size_t>(n), 0);
  selectedList_.clear();
  for (int v : tasks) {
    if (v < 0 || v >= n || selected_[static_cast<size_t>(v)]) continue;
    selected_[static_cast<size_t>(v)] = 1;
    selectedList_.push_back(v);
  }
}

void GanttChart::relayout() {
  rows_.clear();
  bars_ = {};
  previewBars_ = {};
  if (table_) {
    rows_ = ganttRows(*table_, {&tl_, preview_ ? &*preview_ : nullptr});
    if (!workload_.models.empty()) {
      // The clock's row goes (its tasks are the gaps between releases); a row per model comes last.
      const int hidden = workload_.hiddenDevice;
      rows_.erase(std::remove_if(rows_.begin(), rows_.end(),
                                 [hidden](const GanttRow& r) {
                                   return hidden >= 0 && ((r.kind == GanttRowKind::Device && r.device == hidden) ||
                                                          (r.kind == GanttRowKind::Link && r.link < 0 &&
                                                           (r.from == hidden || r.to == hidden)));
                                 }),
                  rows_.end());
      for (size_t m = 0; m < workload_.models.size(); ++m) {
        GanttRow r;
        r.kind = GanttRowKind::Requests;
        r.device = static_cast<int>(m);
        r.label = workload_.models[m];
        rows_.push_back(r);
      }
    }
    bars_ = ganttBars(*table_, rows_, tl_, fused_);
    if (preview_) previewBars_ = ganttBars(*table_, rows_, *preview_, previewFused_);
  }
  const QFontMetrics fm(pixelFont(font_, kLabelFontPx, true));
  int w = 0;
  if (stream_.tasksPerInference > 0 && stream_.bottleneckDevice >= 0)
    for (auto& r : rows_)
      if (r.kind == GanttRowKind::Device && r.device == stream_.bottleneckDevice) r.label += tr(" (bottleneck)");
  for (const auto& r : rows_) w = std::max(w, fm.horizontalAdvance(r.label));
  labelWidth_ = std::max({70, w + 34, minLabelWidth_});
}

void GanttChart::setMinimumLabelWidth(int px) {
  minLabelWidth_ = std::max(0, px);
  relayout();
}

QColor GanttChart::deviceColorOf(int device) const {
  if (device >= 0 && device < static_cast<int>(colors_.size()) && colors_[static_cast<size_t>(device)].isValid())
    return colors_[static_cast<size_t>(device)];
  return deviceColor(device);
}

double GanttChart::shownMakespan() const {
  return preview_ ? preview_->makespan : tl_.makespan;
}

double GanttChart::fitEnd() const {
  if (fitEnd_ > 0) return fitEnd_;
  return std::max(tl_.makespan, preview_ ? preview_->makespan : 0.0);
}

void GanttChart::setFitEnd(double us) {
  fitEnd_ = us > 0 && std::isfinite(us) ? us : 0;
}

QString GanttChart::makespanText() const {
  if (!table_) return tr("No timeline");
  const double m = shownMakespan();
  QString s;
  if (!title_.isEmpty()) s += title_ + QStringLiteral(": ");
  if (stream_.tasksPerInference > 0 && !preview_) {
    s += tr("stream of %1: period %2 (%3/s), latency %4")
             .arg(stream_.inferences)
             .arg(TimeScale::formatDuration(stream_.periodUs))
             .arg(stream_.periodUs > 0 ? 1e6 / stream_.periodUs : 0.0, 0, 'f', 1)
             .arg(TimeScale::formatDuration(stream_.latencyUs));
    return s;
  }
  if (!workload_.models.empty() && !preview_) {
    const auto [met, all] = deadlinesMet();
    s += tr("%1 of %2 deadlines met").arg(met).arg(all);
    if (met < all) s += tr(" (%1 missed)").arg(all - met);
    s += tr(", makespan ") + TimeScale::formatDuration(m);
    return s;
  }
  s += (preview_ ? tr("preview makespan ") : tr("makespan ")) + TimeScale::formatDuration(m);
  QStringList deltas;
  if (preview_ && tl_.makespan > 0) deltas << percentChange(m, tl_.makespan) + tr(" vs current");
  if (referenceUs_ > 0) deltas << percentChange(m, referenceUs_) + tr(" vs ") + referenceLabel_;
  if (!deltas.isEmpty()) s += QStringLiteral(" (") + deltas.join(QStringLiteral(", ")) + QLatin1Char(')');
  return s;
}

// ---- Geometry -----------------------------------------------------------------------------------

GanttChart::Frame GanttChart::frameFor(const QRectF& area, bool compactRows) const {
  Frame f;
  f.area = area;
  f.plotLeft = area.left() + labelWidth_;
  f.plotWidth = std::max(10.0, area.width() - labelWidth_ - kRightMargin);
  f.rowsTop = area.top() + kHeaderH + kAxisH;
  f.rowHeight = kRowH;
  if (compactRows && !rows_.empty()) {
    const double avail = (area.height() - kHeaderH - kAxisH - kBottom) / static_cast<double>(rows_.size());
    f.rowHeight = std::clamp(std::floor(avail), kMinRowH, kRowH);
  }
  return f;
}

int GanttChart::rowAtY(const Frame& f, double y) const {
  if (y < f.rowsTop) return -1;
  const int r = static_cast<int>(std::floor((y - f.rowsTop) / f.rowHeight));
  return r < static_cast<int>(rows_.size()) ? r : -1;
}

std::pair<int, int> GanttChart::barAt(const Frame& f, const TimeScale& sc, const QPointF& pos) const {
  if (!table_) return {-1, -1};
  const int r = rowAtY(f, pos.y());
  if (r < 0 || pos.x() < f.plotLeft || pos.x() > f.plotLeft + f.plotWidth) return {-1, -1};
  const auto& shown = bars();
  const auto& rowBars = shown.perRow[static_cast<size_t>(r)];
  const double t = sc.timeAt(pos.x() - f.plotLeft);
  const double tol = 2 * sc.usPerPixel;  // a bar narrower than a pixel is still hit within 2 px
  int best = -1;
  double bestDist = kInf;
  for (size_t i = firstVisibleBar(rowBars, shown.maxDuration[static_cast<size_t>(r)], t - tol); i < rowBars.size();
       ++i) {
    const auto& b = rowBars[i];
    if (b.start > t + tol) break;
    if (b.end < t - tol) continue;
    const double d = t < b.start ? b.start - t : (t > b.end ? t - b.end : 0.0);
    // Inside two bars (a fused kernel's span can hold another operator scheduled between its own):
    // the shorter one, which is painted over the longer.
    const bool inner =
        d == 0 && bestDist == 0 && best >= 0 &&
        b.end - b.start < rowBars[static_cast<size_t>(best)].end - rowBars[static_cast<size_t>(best)].start;
    if (d < bestDist || inner) {
      bestDist = d;
      best = static_cast<int>(i);
    }
  }
  return {best < 0 ? -1 : r, best};
}

int GanttChart::taskAt(const Frame& f, const TimeScale& sc, const QPointF& pos) const {
  auto [r, i] = barAt(f, sc, pos);
  if (r < 0) return -1;
  const auto& b = bars().perRow[static_cast<size_t>(r)][static_cast<size_t>(i)];
  return b.kind == GanttBarKind::Task ? b.index : -1;
}

bool GanttChart::shownSpan(int v, double& start, double& end) const {
  const partex::Timeline& shown = preview_ ? *preview_ : tl_;
  if (!table_ || v < 0 || v >= static_cast<int>(shown.tasks.size())) return false;
  const GanttBars& b = bars();
  const int k = static_cast<size_t>(v) < b.kernelOf.size() ? b.kernelOf[static_cast<size_t>(v)] : -1;
  start = shown.tasks[static_cast<size_t>(v)].start;
  end = shown.tasks[static_cast<size_t>(v)].end;
  if (k >= 0)
    for (int m : b.kernels[static_cast<size_t>(k)].ops) {
      start = std::min(start, shown.tasks[static_cast<size_t>(m)].start);
      end = std::max(end, shown.tasks[static_cast<size_t>(m)].end);
    }
  return true;
}

QRectF GanttChart::taskRect(const Frame& f, const TimeScale& sc, int task) const {
  const partex::Timeline& shown = preview_ ? *preview_ : tl_;
  double start = 0, end = 0;
  if (!shownSpan(task, start, end)) return {};
  const auto& s = shown.tasks[static_cast<size_t>(task)];
  if (s.device < 0 || s.device >= table_->numDevices()) return {};
  const double x0 = std::max(f.plotLeft, f.plotLeft + sc.xAt(start));
  const double x1 = std::min(f.plotLeft + f.plotWidth, f.plotLeft + sc.xAt(end));
  if (x1 <= x0) return {};
  return QRectF(x0, f.rowsTop + s.device * f.rowHeight, x1 - x0, f.rowHeight);
}

QString GanttChart::toolTipAt(const Frame& f, const TimeScale& sc, const QPointF& pos) const {
  if (const int row = rowAtY(f, pos.y());
      row >= 0 && rows_[static_cast<size_t>(row)].kind == GanttRowKind::Requests && pos.x() >= f.plotLeft) {
    // A request's span (release to end, or to its deadline when dropped), within 2 px.
    const double t = sc.timeAt(pos.x() - f.plotLeft), tol = 2 * sc.usPerPixel;
    const int model = rows_[static_cast<size_t>(row)].device;
    int index = 0;
    for (const auto& q : workload_.requests) {
      if (q.model != model) continue;
      const double end = q.dropped ? q.deadlineUs : q.endUs;
      if (t >= q.releaseUs - tol && t <= end + tol) {
        const QString what = q.dropped ? tr("dropped") : (q.missed() ? tr("deadline missed by %1").arg(TimeScale::formatDuration(q.endUs - q.deadlineUs)) : tr("deadline met"));
        return tr("<b>%1 #%2</b><br>released %3<br>%4<br>deadline %5<br>%6")
            .arg(workload_.models[static_cast<size_t>(model)].toHtmlEscaped())
            .arg(index)
            .arg(TimeScale::formatDuration(q.releaseUs),
                 q.dropped ? tr("never ran to its end") : tr("ended %1, latency %2").arg(TimeScale::formatDuration(q.endUs), TimeScale::formatDuration(q.endUs - q.releaseUs)),
                 TimeScale::formatDuration(q.deadlineUs), what);
      }
      ++index;
    }
    return {};
  }
  auto [r, i] = barAt(f, sc, pos);
  if (r < 0) return {};
  const auto& t = *table_;
  const auto& tl = preview_ ? *preview_ : tl_;
  const auto& b = bars().perRow[static_cast<size_t>(r)][static_cast<size_t>(i)];
  const QString times = tr("start %1<br>end %2<br>duration %3")
                            .arg(TimeScale::formatDuration(b.start), TimeScale::formatDuration(b.end),
                                 TimeScale::formatDuration(b.end - b.start));
  if (b.kind == GanttBarKind::Task && b.kernel >= 0) {
    // One fused kernel: every operator it runs, and the cost of its last one (the kernel's time).
    const auto& k = bars().kernels[static_cast<size_t>(b.kernel)];
    QStringList names, types;
    for (int v : k.ops) {
      names << taskLabel(t, v).toHtmlEscaped();
      if (static_cast<size_t>(v) < t.taskTypes.size())
        types << QString::fromStdString(t.taskTypes[static_cast<size_t>(v)]).toHtmlEscaped();
    }
    const size_t ci =
        static_cast<size_t>(k.last()) * static_cast<size_t>(t.numDevices()) + static_cast<size_t>(k.device);
    const auto prov = ci < t.provenance.size() ? t.provenance[ci] : partex::Provenance::Modelled;
    return tr("<b>fused kernel: %1</b><br>%2<br>one kernel of %3 operators on device %4<br>%5<br>cost %6")
        .arg(names.join(QStringLiteral(" + ")), types.join(QStringLiteral(" + ")))
        .arg(k.ops.size())
        .arg(QString::fromStdString(t.deviceIds[static_cast<size_t>(k.device)]).toHtmlEscaped(), times,
             QString::fromLatin1(partex::provenanceName(prov)));
  }
  if (b.kind == GanttBarKind::Task) {
    const int d = tl.tasks[static_cast<size_t>(b.index)].device;
    const std::string& type =
        static_cast<size_t>(b.index) < t.taskTypes.size() ? t.taskTypes[static_cast<size_t>(b.index)] : std::string();
    const size_t ci = static_cast<size_t>(b.index) * static_cast<size_t>(t.numDevices()) + static_cast<size_t>(d);
    const auto prov = ci < t.provenance.size() ? t.provenance[ci] : partex::Provenance::Modelled;
    return tr("<b>%1</b>%2<br>device %3<br>%4<br>cost %5")
        .arg(taskLabel(t, b.index).toHtmlEscaped(),
             type.empty() ? QString()
                          : QStringLiteral(" (") + QString::fromStdString(type).toHtmlEscaped() + QLatin1Char(')'),
             QString::fromStdString(t.deviceIds[static_cast<size_t>(d)]).toHtmlEscaped(), times,
             QString::fromLatin1(partex::provenanceName(prov)));
  }
  const auto& x = tl.transfers[static_cast<size_t>(b.index)];
  return tr("<b>transfer %1 -> %2</b><br>%3 -> %4 on %5<br>%6 bytes<br>%7<br>cost modelled")
      .arg(taskLabel(t, x.src).toHtmlEscaped(), taskLabel(t, x.dst).toHtmlEscaped(),
           QString::fromStdString(t.deviceIds[static_cast<size_t>(x.from)]).toHtmlEscaped(),
           QString::fromStdString(t.deviceIds[static_cast<size_t>(x.to)]).toHtmlEscaped(),
           rows_[static_cast<size_t>(r)].label.toHtmlEscaped(), QString::number(x.bytes), times);
}

// ---- Painting -----------------------------------------------------------------------------------

void GanttChart::paintRowBars(QPainter& p, const Frame& f, const TimeScale& sc, int row, const GanttBars& bars,
                              const partex::Timeline& tl, bool ghost) {
  const auto& rowBars = bars.perRow[static_cast<size_t>(row)];
  if (rowBars.empty()) return;
  const auto& r = rows_[static_cast<size_t>(row)];
  const double top = f.rowsTop + row * f.rowHeight + std::max(2.0, f.rowHeight * 0.12);
  const double h = f.rowHeight - 2 * std::max(2.0, f.rowHeight * 0.12);
  const double left = f.plotLeft, right = f.plotLeft + f.plotWidth;
  const double t0 = sc.timeAt(0), t1 = sc.timeAt(f.plotWidth);
  const int alpha = ghost ? 70 : 255;
  const QColor rowColor = r.kind == GanttRowKind::Device ? deviceColorOf(r.device) : QColor();
  // A stream's odd inferences: lighter, and hatched where a bar is wide enough to show it.
  auto oddInference = [&](const GanttBar& b) {
    return b.kind == GanttBarKind::Task && stream_.tasksPerInference > 0 && inferenceOf(b.index) % 2 == 1;
  };
  auto colorOf = [&](const GanttBar& b) {
    QColor c = b.kind == GanttBarKind::Task
                   ? (workload_.models.empty() ? rowColor : taskColor(b.index))
                   : deviceColorOf(tl.transfers[static_cast<size_t>(b.index)].from).lighter(125);
    if (oddInference(b)) c = c.lighter(145);
    c.setAlpha(alpha);
    return c;
  };
  const QFont barFont = pixelFont(font_, kBarFontPx);
  const QFontMetrics fm(barFont);
  const bool labels = !ghost && h >= fm.height();
  if (labels) p.setFont(barFont);

  // A run of adjacent narrow bars becomes one mark: at most one mark per pixel column.
  int runStart = -1, runEnd = -1;
  QColor runColor;
  auto flush = [&] {
    if (runStart < 0) return;
    p.fillRect(QRectF(runStart, top, runEnd - runStart, h), runColor);
    ++lastMarks_;
    runStart = -1;
  };
  for (size_t i = firstVisibleBar(rowBars, bars.maxDuration[static_cast<size_t>(row)], t0); i < rowBars.size(); ++i) {
    const GanttBar& b = rowBars[i];
    if (b.start > t1) break;
    if (b.end < t0) continue;
    const double x0 = std::max(left - 1, left + sc.xAt(b.start));
    const double x1 = std::min(right + 1, left + sc.xAt(b.end));
    if (x1 - x0 >= 2.0) {
      flush();
      const QColor c = colorOf(b);
      const QRectF rect(x0, top, x1 - x0, h);
      p.fillRect(rect, c);
      ++lastMarks_;
      if (oddInference(b) && !ghost) p.fillRect(rect, QBrush(c.darker(130), Qt::BDiagPattern));
      if (ghost || x1 - x0 < 6) continue;
      // A workload's request that missed its deadline: its operators outlined in red.
      const int req = b.kind == GanttBarKind::Task && !workload_.models.empty() &&
                              static_cast<size_t>(b.index) < workload_.requestOfTask.size()
                          ? workload_.requestOfTask[static_cast<size_t>(b.index)]
                          : -1;
      const bool missed = req >= 0 && workload_.requests[static_cast<size_t>(req)].missed();
      p.setPen(missed ? QPen(QColor(0xC0, 0x39, 0x2B), 1.5) : QPen(c.darker(160), 0));
      p.setBrush(Qt::NoBrush);
      p.drawRect(rect.adjusted(0.5, 0.5, -0.5, -0.5));
      if (b.kernel >= 0) {
        // A fused kernel: a darker band along the bottom marks one kernel for several operators.
        p.fillRect(QRectF(x0 + 1, top + h - 3, x1 - x0 - 2, 2), c.darker(170));
      }
      if (labels && x1 - x0 >= 36) {
        QString name = b.kind == GanttBarKind::Task ? taskLabel(*table_, b.index) : QString();
        if (b.kernel >= 0)
          name += QStringLiteral(" +%1").arg(bars.kernels[static_cast<size_t>(b.kernel)].ops.size() - 1);
        if (!name.isEmpty()) {
          p.setPen(textColorOn(c));
          p.drawText(rect.adjusted(3, 0, -3, 0), Qt::AlignLeft | Qt::AlignVCenter,
                     fm.elidedText(name, Qt::ElideRight, static_cast<int>(x1 - x0) - 6));
        }
      }
    } else {
      const int px = static_cast<int>(std::floor(x0));
      const int pe = std::max(px + 1, static_cast<int>(std::ceil(x1)));
      if (runStart >= 0 && px <= runEnd) {
        runEnd = std::max(runEnd, pe);
      } else {
        flush();
        runStart = px;
        runEnd = pe;
        runColor = colorOf(b);
      }
    }
  }
  flush();
}

void GanttChart::paint(QPainter& p, const Frame& f, const TimeScale& sc, const QRectF& dirty) {
  lastMarks_ = 0;
  const QRectF& a = f.area;
  p.fillRect(a, Qt::white);
  const QColor ink(0x22, 0x22, 0x22), grid(0xE4, 0xE4, 0xE4), muted(0x70, 0x70, 0x70);

  // Header: the makespan, large.
  p.setPen(ink);
  p.setFont(pixelFont(font_, kHeaderFontPx, true));
  const QString header = makespanText();
  p.drawText(QRectF(a.left() + 10, a.top(), a.width() - 20, kHeaderH), Qt::AlignLeft | Qt::AlignVCenter, header);
  drawnLegend_.clear();
  if (!table_) return;
  if (!workload_.models.empty())
    paintLegend(p, QRectF(a.left(), a.top(), a.width(), kHeaderH),
                a.left() + 10 + QFontMetrics(p.font()).horizontalAdvance(header));

  const double rowsBottom = f.rowsTop + f.rowHeight * static_cast<double>(rows_.size());
  const double right = f.plotLeft + f.plotWidth;

  // Row backgrounds and labels (only rows that intersect the dirty rectangle).
  const QFont labelFont = pixelFont(font_, kLabelFontPx, true);
  const QFont linkFont = pixelFont(font_, kLabelFontPx);
  for (size_t i = 0; i < rows_.size(); ++i) {
    const QRectF rowRect(a.left(), f.rowsTop + static_cast<double>(i) * f.rowHeight, a.width(), f.rowHeight);
    if (!rowRect.intersects(dirty)) continue;
    if (i % 2) p.fillRect(QRectF(a.left(), rowRect.top(), right - a.left(), f.rowHeight), QColor(0xF6, 0xF6, 0xF6));
    const auto& r = rows_[i];
    double textLeft = a.left() + 8;
    if (r.kind == GanttRowKind::Requests) {
      const double sw = std::min(12.0, f.rowHeight - 4);
      p.fillRect(QRectF(textLeft, rowRect.center().y() - sw / 2, sw, sw), modelBaseColor(r.device));
      textLeft += sw + 6;
      p.setFont(labelFont);
      p.setPen(ink);
    } else if (r.kind == GanttRowKind::Device) {
      const double sw = std::min(12.0, f.rowHeight - 4);
      p.fillRect(QRectF(textLeft, rowRect.center().y() - sw / 2, sw, sw), deviceColorOf(r.device));
      textLeft += sw + 6;
      p.setFont(labelFont);
      p.setPen(ink);
    } else {
      textLeft += 18;
      p.setFont(linkFont);
      p.setPen(muted);
    }
    p.drawText(QRectF(textLeft, rowRect.top(), f.plotLeft - textLeft - 4, f.rowHeight),
               Qt::AlignLeft | Qt::AlignVCenter, r.label);
  }

  // Time axis and grid.
  const double axisTop = a.top() + kHeaderH;
  p.setPen(QPen(muted, 0));
  p.drawLine(QPointF(f.plotLeft, f.rowsTop - 0.5), QPointF(right, f.rowsTop - 0.5));
  p.setFont(pixelFont(font_, kLabelFontPx));
  for (const auto& tick : sc.ticks(f.plotWidth, 90)) {
    const double x = std::round(f.plotLeft + sc.xAt(tick.us)) + 0.5;
    p.setPen(QPen(grid, 0));
    p.drawLine(QPointF(x, f.rowsTop), QPointF(x, rowsBottom));
    p.setPen(QPen(muted, 0));
    p.drawLine(QPointF(x, f.rowsTop - 6), QPointF(x, f.rowsTop));
    p.drawText(QRectF(x + 3, axisTop, 120, kAxisH - 6), Qt::AlignLeft | Qt::AlignBottom, tick.label);
  }

  // Bars: the current timeline, as ghosts under the preview while one is set.
  for (size_t i = 0; i < rows_.size(); ++i) {
    const QRectF rowRect(a.left(), f.rowsTop + static_cast<double>(i) * f.rowHeight, a.width(), f.rowHeight);
    if (!rowRect.intersects(dirty)) continue;
    if (rows_[i].kind == GanttRowKind::Requests) {
      paintRequests(p, f, sc, static_cast<int>(i));
      continue;
    }
    paintRowBars(p, f, sc, static_cast<int>(i), bars_, tl_, preview_.has_value());
    if (preview_) paintRowBars(p, f, sc, static_cast<int>(i), previewBars_, *preview_, false);
  }

  // Selected tasks: an outline at least 4 px wide, even where bars were merged.
  const partex::Timeline& shown = preview_ ? *preview_ : tl_;
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(ink, 2));
  for (int v : selectedList_) {
    double start = 0, end = 0;
    if (!shownSpan(v, start, end)) continue;  // a member of a fused kernel: its kernel's bar
    const auto& s = shown.tasks[static_cast<size_t>(v)];
    if (s.device < 0 || s.device >= static_cast<int>(rows_.size())) continue;  // device d is row d
    double x0 = f.plotLeft + sc.xAt(start), x1 = f.plotLeft + sc.xAt(end);
    if (x1 < f.plotLeft || x0 > right) continue;
    if (x1 - x0 < 4) {
      const double c = (x0 + x1) / 2;
      x0 = c - 2;
      x1 = c + 2;
    }
    p.drawRect(QRectF(x0, f.rowsTop + s.device * f.rowHeight + 1, x1 - x0, f.rowHeight - 2));
  }

  // Makespan markers: the shown makespan solid, the current one dashed under a preview.
  auto marker = [&](double us, const QColor& c, Qt::PenStyle style) {
    const double x = f.plotLeft + sc.xAt(us);
    if (x < f.plotLeft || x > right) return;
    p.setPen(QPen(c, 1.5, style));
    p.drawLine(QPointF(x, f.rowsTop - 8), QPointF(x, rowsBottom));
  };
  // A stream's steady-state period: two dashed lines and its length between them, over the rows.
  if (stream_.tasksPerInference > 0 && stream_.periodUs > 0 && !preview_) {
    const QColor periodInk(0x1F, 0x5F, 0xAF);
    const double xa = f.plotLeft + sc.xAt(stream_.periodStartUs);
    const double xb = f.plotLeft + sc.xAt(stream_.periodStartUs + stream_.periodUs);
    p.setPen(QPen(periodInk, 1.5, Qt::DashLine));
    for (double x : {xa, xb})
      if (x >= f.plotLeft && x <= right) p.drawLine(QPointF(x, f.rowsTop - 8), QPointF(x, rowsBottom));
    if (xb > f.plotLeft && xa < right) {
      p.setFont(pixelFont(font_, kLabelFontPx, true));
      p.setPen(periodInk);
      // Above the rows, on a white ground over the axis' ticks, starting at the period's first line.
      const QString text = tr("period %1").arg(TimeScale::formatDuration(stream_.periodUs));
      const QFontMetrics fm(p.font());
      const double w = fm.horizontalAdvance(text) + 8, h = fm.height();
      const double l = std::clamp(xa, f.plotLeft, std::max(f.plotLeft, right - w));
      const QRectF box(l, f.rowsTop - kAxisH, w, h);
      p.fillRect(box, Qt::white);
      p.drawText(box, Qt::AlignCenter, text);
    }
    return;  // a stream has no single makespan to mark
  }
  if (!workload_.models.empty() && !preview_) return;  // the requests' rows mark what counts: their deadlines
  if (referenceUs_ > 0) marker(referenceUs_, muted, Qt::DotLine);
  if (preview_) marker(tl_.makespan, muted, Qt::DashLine);
  marker(shownMakespan(), QColor(0xC0, 0x39, 0x2B), Qt::SolidLine);
}

void GanttChart::paintRequests(QPainter& p, const Frame& f, const TimeScale& sc, int row) {
  const int model = rows_[static_cast<size_t>(row)].device;
  const double rowTop = f.rowsTop + row * f.rowHeight;
  // Each request in its lane (overlapping requests of the model stack); dropped ones first.
  const int lanes = model >= 0 && static_cast<size_t>(model) < modelLanes_.size() ? modelLanes_[static_cast<size_t>(model)] : 1;
  const double margin = lanes > 1 ? std::max(2.0, f.rowHeight * 0.12) : std::max(3.0, f.rowHeight * 0.22);
  const double laneH = (f.rowHeight - 2 * margin) / lanes;
  const double left = f.plotLeft, right = f.plotLeft + f.plotWidth;
  const QColor base = modelBaseColor(model), red(0xC0, 0x39, 0x2B);
  auto x = [&](double us) { return std::clamp(left + sc.xAt(us), left - 1, right + 1); };
  for (const bool droppedPass : {true, false}) {
    for (size_t qi = 0; qi < workload_.requests.size(); ++qi) {
      const auto& q = workload_.requests[qi];
      if (q.model != model || q.dropped != droppedPass) continue;
      const double end = q.dropped ? q.deadlineUs : q.endUs;
      const double x0 = x(q.releaseUs), x1 = std::max(x0 + 1, x(end)), xd = x(q.deadlineUs);
      if (x1 < left || x0 > right) continue;
      const double top = rowTop + margin + laneH * (qi < requestLane_.size() ? requestLane_[qi] : 0);
      const double h = std::max(1.0, laneH - (lanes > 1 ? 1 : 0));
      if (q.dropped) {
        // Dropped: never ran to its end; hatched red up to its deadline.
        p.fillRect(QRectF(x0, top, x1 - x0, h), QBrush(red, Qt::BDiagPattern));
        p.setPen(QPen(red, 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRectF(x0, top, x1 - x0, h).adjusted(0.5, 0.5, -0.5, -0.5));
      } else if (q.missed()) {
        p.fillRect(QRectF(x0, top, std::max(0.0, xd - x0), h), base);
        p.fillRect(QRectF(xd, top, std::max(1.0, x1 - xd), h), red);  // the part past the deadline
      } else {
        p.fillRect(QRectF(x0, top, x1 - x0, h), base);
      }
      ++lastMarks_;
      // The deadline: a tick across the row, red when missed.
      if (xd >= left && xd <= right) {
        p.setPen(QPen(q.missed() ? red : QColor(0x22, 0x22, 0x22), 1.5));
        p.drawLine(QPointF(xd, rowTop + 2), QPointF(xd, rowTop + f.rowHeight - 2));
      }
    }
  }
}

void GanttChart::paintLegend(QPainter& p, const QRectF& header, double textRight) {
  // Right-aligned in the header: a swatch and the name of each model, then the missed mark.
  const QFont font = pixelFont(font_, kLabelFontPx, true);
  const QFontMetrics fm(font);
  const double sw = 12, gap = 14;
  std::vector<std::pair<QString, QColor>> entries;
  for (size_t m = 0; m < workload_.models.size(); ++m)
    entries.emplace_back(workload_.models[m], modelBaseColor(static_cast<int>(m)));
  entries.emplace_back(tr("deadline missed"), QColor(0xC0, 0x39, 0x2B));
  double width = 0;
  for (const auto& e : entries) width += sw + 5 + fm.horizontalAdvance(e.first) + gap;
  const double start = header.right() - 10 - width;
  if (start < textRight + 24) return;  // no room beside the header text: the rows' labels still name the models
  p.setFont(font);
  double xl = start;
  for (const auto& e : entries) {
    p.fillRect(QRectF(xl, header.center().y() - sw / 2, sw, sw), e.second);
    xl += sw + 5;
    p.setPen(QColor(0x22, 0x22, 0x22));
    const double w = fm.horizontalAdvance(e.first);
    p.drawText(QRectF(xl, header.top(), w + 2, header.height()), Qt::AlignLeft | Qt::AlignVCenter, e.first);
    xl += w + gap;
  }
  for (const auto& m : workload_.models) drawnLegend_ << m;
}

// ---- Export -------------------------------------------------------------------------------------

void GanttChart::setExportWidth(int px) {
  exportWidth_ = std::clamp(px, 200, 20000);
}

QSize GanttChart::exportSize() const {
  const double h = kHeaderH + kAxisH + kBottom + kRowH * static_cast<double>(rows_.size());
  return {exportWidth_, static_cast<int>(std::ceil(h))};
}

void GanttChart::renderTo(QPainter* p, const QRectF& target) {
  if (!p) return;
  const Frame f = frameFor(target, false);
  TimeScale sc;
  sc.fit(0, std::max(fitEnd(), 1e-3) * kFitMargin, f.plotWidth);
  p->save();
  p->setClipRect(target);
  paint(*p, f, sc, target);
  p->restore();
}

partex::Status GanttChart::saveImage(const QString& path) {
  const std::string where = path.toStdString();
  if (!table_) return partex::makeError(where, ": no timeline to draw");
  const QString ext = QFileInfo(path).suffix().toLower();
  if (ext != QLatin1String("svg") && ext != QLatin1String("png"))
    return partex::makeError(where, ": unsupported image type '", ext.toStdString(), "' (use .svg or .png)");
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly))
    return partex::makeError(where, ": cannot write: ", file.errorString().toStdString());
  const QSize size = exportSize();
  if (ext == QLatin1String("svg")) {
    QSvgGenerator gen;
    gen.setOutputDevice(&file);
    gen.setSize(size);
    gen.setViewBox(QRect(QPoint(0, 0), size));
    gen.setTitle(QStringLiteral("Partex Gantt chart: ") + QString::fromStdString(table_->name));
    gen.setDescription(makespanText());
    QPainter p;
    if (!p.begin(&gen)) {
      file.cancelWriting();
      return partex::makeError(where, ": cannot start the SVG painter");
    }
    renderTo(&p, QRectF(QPointF(0, 0), QSizeF(size)));
    p.end();
  } else {
    QImage img(size, QImage::Format_ARGB32_Premultiplied);
    img.fill(Qt::white);
    QPainter p(&img);
    p.setRenderHint(QPainter::TextAntialiasing);
    renderTo(&p, QRectF(QPointF(0, 0), QSizeF(size)));
    p.end();
    if (!img.save(&file, "PNG")) {
      file.cancelWriting();
      return partex::makeError(where, ": cannot encode the PNG image");
    }
  }
  if (!file.commit()) return partex::makeError(where, ": cannot write: ", file.errorString().toStdString());
  return partex::Status::ok();
}

}  // namespace partex::gui
