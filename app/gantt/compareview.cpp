#include "gantt/compareview.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>

#include "gantt/ganttview.h"

namespace partex::gui {

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  a_ = new GanttView(this);
  b_ = new GanttView(this);
  list_ = new QTreeWidget(this);
  list_->setColumnCount(3);
  list_->setRootIsDecorated(false);
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  list_->setUniformRowHeights(true);
  list_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  summary_ = new QLabel(this);

  auto* charts = new QWidget(this);
  auto* chartLayout = new QVBoxLayout(charts);
  chartLayout->setContentsMargins(0, 0, 0, 0);
  chartLayout->setSpacing(2);
  chartLayout->addWidget(a_);
  chartLayout->addWidget(b_);
  auto* side = new QWidget(this);
  auto* sideLayout = new QVBoxLayout(side);
  sideLayout->setContentsMargins(0, 0, 0, 0);
  sideLayout->addWidget(summary_);
  sideLayout->addWidget(list_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(charts);
  split->addWidget(side);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);

  connect(a_, &GanttView::timeScaleChanged, this, [this] { syncScale(a_, b_); });
  connect(b_, &GanttView::timeScaleChanged, this, [this] { syncScale(b_, a_); });
  connect(a_, &GanttView::taskClicked, this, &CompareView::taskClicked);
  connect(b_, &GanttView::taskClicked, this, &CompareView::taskClicked);
  connect(list_, &QTreeWidget::itemSelectionChanged, this, &CompareView::onListSelection);
}

void CompareView::syncScale(GanttView* from, GanttView* to) {
  if (syncing_) return;
  syncing_ = true;
  to->setTimeScale(from->timeScale());
  syncing_ = false;
}

void CompareView::setPlans(const partex::CostTable* t, const std::vector<QColor>& deviceColors, const QString& labelA,
                           const partex::Plan& a, const partex::Timeline& ta, const QString& labelB,
                           const partex::Plan& b, const partex::Timeline& tb) {
  diff_.clear();
  list_->clear();
  list_->setHeaderLabels({tr("Operator"), labelA, labelB});
  if (!t) {
    a_->setTimeline(nullptr, {}, {});
    b_->setTimeline(nullptr, {}, {});
    summary_->clear();
    return;
  }
  a_->setTitle(labelA);
  b_->setTitle(labelB);
  a_->setReferenceMakespan(0);
  b_->setReferenceLabel(labelA);
  b_->setReferenceMakespan(ta.makespan);
  // One label column width and one fit span, so that equal times sit at equal x in both charts.
  const double end = std::max(ta.makespan, tb.makespan);
  a_->setFitEnd(end);
  b_->setFitEnd(end);
  a_->setMinimumLabelWidth(0);
  b_->setMinimumLabelWidth(0);
  a_->setTimeline(t, ta, deviceColors);
  b_->setTimeline(t, tb, deviceColors);
  const int w = std::max(a_->labelWidth(), b_->labelWidth());
  a_->setMinimumLabelWidth(w);
  b_->setMinimumLabelWidth(w);
  a_->fit();
  syncScale(a_, b_);

  const int n = t->numTasks();
  auto name = [&](const partex::Plan& p, int v) {
    const int d = v < static_cast<int>(p.device.size()) ? p.device[static_cast<size_t>(v)] : -1;
    return d >= 0 && d < t->numDevices() ? QString::fromStdString(t->deviceIds[static_cast<size_t>(d)])
                                         : QStringLiteral("-");
  };
  if (static_cast<int>(a.device.size()) == n && static_cast<int>(b.device.size()) == n) {
    QList<QTreeWidgetItem*> items;
    for (int v = 0; v < n; ++v) {
      if (a.device[static_cast<size_t>(v)] == b.device[static_cast<size_t>(v)]) continue;
      diff_.push_back(v);
      auto* item =
          new QTreeWidgetItem({QString::fromStdString(t->taskNames[static_cast<size_t>(v)]), name(a, v), name(b, v)});
      item->setData(0, Qt::UserRole, v);
      items.push_back(item);
    }
    list_->addTopLevelItems(items);
  }
  summary_->setText(tr("%n operator(s) placed differently", nullptr, static_cast<int>(diff_.size())));
}

void CompareView::onListSelection() {
  QList<int> tasks;
  for (auto* item : list_->selectedItems()) tasks.push_back(item->data(0, Qt::UserRole).toInt());
  a_->setSelectedTasks(tasks);
  b_->setSelectedTasks(tasks);
  if (tasks.size() == 1) emit taskClicked(tasks.front(), Qt::NoModifier);
}

}  // namespace partex::gui
