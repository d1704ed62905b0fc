#include "gui/teachpanel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace partex::gui {

namespace {

QString fmtUs(double us) {
  if (!std::isfinite(us)) return QStringLiteral("—");
  if (std::fabs(us) >= 1e6) return QString::number(us / 1e6, 'f', 3) + QStringLiteral(" s");
  if (std::fabs(us) >= 1e3) return QString::number(us / 1e3, 'f', 3) + QStringLiteral(" ms");
  return QString::number(us, 'f', 3) + QStringLiteral(" us");
}

struct AlgoEntry {
  const char* name;
  const char* label;
};
constexpr AlgoEntry kAlgos[] = {
    {"heft", "HEFT: upward rank, earliest finish time"},
    {"cpop", "CPOP: critical path on one processor"},
    {"peft", "PEFT: optimistic cost table"},
    {"greedy", "Greedy: fastest device per operator"},
    {"partitiontuner", "PartitionTuner DP (faithful)"},
    {"partitiontuner-clean", "PartitionTuner DP (clean)"},
};

}  // namespace

// ---- TeachTableModel ---------------------------------------------------------------------------

TeachTableModel::TeachTableModel(QStringList headers, QObject* parent) : QAbstractTableModel(parent), headers_(std::move(headers)) {}

void TeachTableModel::setRows(std::vector<Row> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int TeachTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int TeachTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(headers_.size()); }

QVariant TeachTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      return index.column() < r.cells.size() ? r.cells[index.column()] : QString();
    case Qt::DecorationRole:
      return index.column() == 0 && r.color.isValid() ? QVariant(r.color) : QVariant();
    case Qt::FontRole: {
      if (!r.bold) return {};
      QFont f;
      f.setBold(true);
      return f;
    }
    case Qt::TextAlignmentRole:
      return index.column() == 0 ? QVariant(Qt::AlignLeft | Qt::AlignVCenter) : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    default:
      return {};
  }
}

QVariant TeachTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal || section < 0 || section >= headers_.size()) return {};
  return headers_[section];
}

// ---- TeachPanel --------------------------------------------------------------------------------

TeachPanel::TeachPanel(QWidget* parent) : QWidget(parent) {
  algo_ = new QComboBox(this);
  for (const auto& a : kAlgos) algo_->addItem(QString::fromLatin1(a.label), QString::fromLatin1(a.name));
  restartBtn_ = new QPushButton(tr("Restart"), this);
  backBtn_ = new QPushButton(tr("◀ Back"), this);
  nextBtn_ = new QPushButton(tr("Next ▶"), this);
  backBtn_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Left));
  nextBtn_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Right));
  title_ = new QLabel(this);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  ready_ = new TeachTableModel({tr("Ready list"), tr("Priority")}, this);
  devices_ = new TeachTableModel({tr("Device"), tr("Finish / cost"), tr("")}, this);
  readyView_ = new QTableView(this);
  deviceView_ = new QTableView(this);
  for (QTableView* v : {readyView_, deviceView_}) {
    v->verticalHeader()->hide();
    v->horizontalHeader()->setStretchLastSection(true);
    v->setSelectionMode(QAbstractItemView::NoSelection);
    v->setEditTriggers(QAbstractItemView::NoEditTriggers);
  }
  readyView_->setModel(ready_);
  deviceView_->setModel(devices_);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(restartBtn_);
  buttons->addWidget(backBtn_);
  buttons->addWidget(nextBtn_);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(algo_);
  layout->addLayout(buttons);
  layout->addWidget(title_);
  layout->addWidget(note_);
  layout->addWidget(readyView_, 2);
  layout->addWidget(deviceView_, 1);

  connect(algo_, &QComboBox::currentIndexChanged, this, [this] { record(); });
  connect(restartBtn_, &QPushButton::clicked, this, &TeachPanel::restart);
  connect(backBtn_, &QPushButton::clicked, this, &TeachPanel::back);
  connect(nextBtn_, &QPushButton::clicked, this, &TeachPanel::next);
  record();
}

void TeachPanel::setProblem(std::shared_ptr<const CostTable> table, std::vector<QColor> deviceColors, Constraints constraints) {
  table_ = std::move(table);
  colors_ = std::move(deviceColors);
  constraints_ = std::move(constraints);
  record();
}

bool TeachPanel::setAlgorithm(const QString& name) {
  const int i = algo_->findData(name);
  if (i < 0) return false;
  if (i == algo_->currentIndex())
    record();
  else
    algo_->setCurrentIndex(i);  // records through the signal
  return true;
}

QString TeachPanel::algorithm() const { return algo_->currentData().toString(); }

const TraceStep* TeachPanel::step() const {
  return current_ >= 0 && current_ < stepCount() ? &steps_[static_cast<size_t>(current_)] : nullptr;
}

void TeachPanel::record() {
  steps_.clear();
  current_ = 0;
  unavailable_.clear();
  if (!table_) {
    unavailable_ = tr("Open a model to step through a scheduler.");
  } else if (table_->numTasks() > kMaxTasks) {
    unavailable_ = tr("Teaching mode is for graphs of up to %1 operators; this one has %2.").arg(kMaxTasks).arg(table_->numTasks());
  } else {
    const Scheduler* s = findScheduler(algorithm().toStdString());
    if (!s) {
      unavailable_ = tr("Unknown algorithm.");
    } else {
      SchedOptions o;
      o.trace = [this](const TraceStep& st) { steps_.push_back(st); };
      auto plan = s->schedule(*table_, constraints_, o);
      if (!plan) {
        steps_.clear();
        unavailable_ = QString::fromStdString(plan.message());
      } else if (steps_.empty()) {
        unavailable_ = tr("The algorithm made no decisions to show.");
      }
    }
  }
  show();
}

void TeachPanel::next() { goTo(current_ + 1); }
void TeachPanel::back() { goTo(current_ - 1); }
void TeachPanel::restart() { goTo(0); }

void TeachPanel::goTo(int stepIndex) {
  if (steps_.empty()) return;
  current_ = std::clamp(stepIndex, 0, stepCount() - 1);
  show();
}

void TeachPanel::show() {
  const bool ok = unavailable_.isEmpty() && !steps_.empty();
  backBtn_->setEnabled(ok && current_ > 0);
  nextBtn_->setEnabled(ok && current_ + 1 < stepCount());
  restartBtn_->setEnabled(ok);
  decided_.assign(table_ ? static_cast<size_t>(table_->numTasks()) : 0, -1);
  if (!ok) {
    title_->setText(tr("Teaching mode unavailable"));
    note_->setText(unavailable_);
    ready_->setRows({});
    devices_->setRows({});
    emit stepChanged(-1, -1, {}, decided_);
    return;
  }
  const CostTable& t = *table_;
  for (int i = 0; i <= current_; ++i) {
    const TraceStep& s = steps_[static_cast<size_t>(i)];
    if (s.task >= 0 && s.chosen >= 0) decided_[static_cast<size_t>(s.task)] = s.chosen;
  }
  const TraceStep& s = steps_[static_cast<size_t>(current_)];
  auto taskName = [&](TaskId v) { return QString::fromStdString(t.taskNames[static_cast<size_t>(v)]); };
  auto color = [&](DeviceId d) { return d >= 0 && static_cast<size_t>(d) < colors_.size() ? colors_[static_cast<size_t>(d)] : QColor(); };
  title_->setText(tr("Step %1 of %2").arg(current_ + 1).arg(stepCount()));
  note_->setText(QString::fromStdString(s.note));

  std::vector<TeachTableModel::Row> ready;
  QList<int> readyList;
  if (s.kind == "ranks") {
    // Every task by decreasing priority: the order the ready list will take them in.
    std::vector<TaskId> order(static_cast<size_t>(t.numTasks()));
    for (TaskId v = 0; v < t.numTasks(); ++v) order[static_cast<size_t>(v)] = v;
    std::stable_sort(order.begin(), order.end(), [&](TaskId a, TaskId b) { return s.values[static_cast<size_t>(a)] > s.values[static_cast<size_t>(b)]; });
    for (TaskId v : order) ready.push_back({{taskName(v), QString::number(s.values[static_cast<size_t>(v)], 'f', 3)}, {}, false});
  } else {
    for (size_t i = 0; i < s.ready.size(); ++i) {
      const TaskId v = s.ready[i];
      readyList.append(v);
      const QString pri = i < s.readyPriority.size() ? QString::number(s.readyPriority[i], 'f', 3) : QString();
      ready.push_back({{taskName(v), pri}, color(decided_[static_cast<size_t>(v)]), v == s.task});
    }
  }
  ready_->setRows(std::move(ready));

  std::vector<TeachTableModel::Row> devs;
  if (!s.finish.empty()) {
    for (DeviceId d = 0; d < t.numDevices(); ++d) {
      const double f = s.finish[static_cast<size_t>(d)];
      devs.push_back({{QString::fromStdString(t.deviceIds[static_cast<size_t>(d)]), std::isfinite(f) ? fmtUs(f) : tr("not allowed"),
                       d == s.chosen ? tr("chosen") : QString()},
                      color(d),
                      d == s.chosen});
    }
  }
  devices_->setRows(std::move(devs));
  emit stepChanged(s.task, s.chosen, readyList, decided_);
}

}  // namespace partex::gui
