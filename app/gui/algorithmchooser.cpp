#include "gui/algorithmchooser.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>

#include "sched/scheduler.h"

namespace partex::gui {

QString algorithmGroup(const QString& s) {
  static const QStringList baselines = {"single", "priority", "static", "greedy"};
  static const QStringList lists = {"heft", "cpop", "peft", "minmin", "maxmin", "sufferage",
                                    "mct",  "met",  "olb",  "duplex", "etf",    "hbmct"};
  static const QStringList papers = {"partitiontuner", "partitiontuner-clean", "duet", "pimdp", "dlfusion", "coarse", "pipeline", "pipeit"};
  static const QStringList llama = {"offload", "fit", "n-cpu-moe", "n-cpu-ffn", "ot"};
  static const QStringList exact = {"exact", "best"};
  if (baselines.contains(s)) return QObject::tr("Baselines");
  if (lists.contains(s)) return QObject::tr("List heuristics");
  if (papers.contains(s)) return QObject::tr("Papers");
  if (llama.contains(s)) return QObject::tr("llama.cpp rules");
  if (exact.contains(s)) return QObject::tr("Exact and best");
  return QObject::tr("Other");
}

AlgorithmChooser::AlgorithmChooser(QWidget* parent) : QWidget(parent) {
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(4, 4, 4, 4);
  auto* row = new QHBoxLayout;
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Search algorithms"));
  search_->setClearButtonEnabled(true);
  auto* all = new QPushButton(tr("Select all"), this);
  auto* none = new QPushButton(tr("None"), this);
  row->addWidget(search_, 1);
  row->addWidget(all);
  row->addWidget(none);
  l->addLayout(row);
  tree_ = new QTreeWidget(this);
  tree_->setHeaderHidden(true);
  tree_->setRootIsDecorated(true);
  tree_->setUniformRowHeights(true);
  l->addWidget(tree_, 1);
  const QStringList order = {tr("Baselines"),       tr("List heuristics"), tr("Papers"),
                             tr("llama.cpp rules"), tr("Exact and best"),  tr("Other")};
  for (const auto& g : order) {
    auto* item = new QTreeWidgetItem(tree_, {g});
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable | Qt::ItemIsAutoTristate);
    item->setCheckState(0, Qt::Unchecked);
  }
  for (const auto& s : allSchedulers()) {
    const QString name = QString::fromStdString(s->name());
    QTreeWidgetItem* group = tree_->topLevelItem(static_cast<int>(order.indexOf(algorithmGroup(name))));
    auto* item = new QTreeWidgetItem(group, {QString::fromStdString(s->title())});
    item->setData(0, Qt::UserRole, name);
    item->setToolTip(0, QString::fromStdString(s->description()));
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(0, Qt::Unchecked);
  }
  for (int i = tree_->topLevelItemCount() - 1; i >= 0; --i)
    if (tree_->topLevelItem(i)->childCount() == 0) delete tree_->takeTopLevelItem(i);
  tree_->expandAll();
  // Tall enough for every entry without a scroll bar where the screen allows.
  tree_->setMinimumHeight(std::min(560, (static_cast<int>(allSchedulers().size()) + tree_->topLevelItemCount()) *
                                            (tree_->fontMetrics().height() + 4)));
  tree_->setMinimumWidth(320);
  connect(search_, &QLineEdit::textChanged, this, &AlgorithmChooser::setFilter);
  connect(all, &QPushButton::clicked, this, &AlgorithmChooser::selectAll);
  connect(none, &QPushButton::clicked, this, &AlgorithmChooser::selectNone);
  connect(tree_, &QTreeWidget::itemChanged, this, [this] { emit changed(); });
}

QList<QTreeWidgetItem*> AlgorithmChooser::leaves() const {
  QList<QTreeWidgetItem*> out;
  for (int g = 0; g < tree_->topLevelItemCount(); ++g)
    for (int k = 0; k < tree_->topLevelItem(g)->childCount(); ++k) out << tree_->topLevelItem(g)->child(k);
  return out;
}

QStringList AlgorithmChooser::checked() const {
  QStringList ticked;
  for (auto* it : leaves())
    if (it->checkState(0) == Qt::Checked) ticked << it->data(0, Qt::UserRole).toString();
  QStringList out;  // registry order
  for (const auto& s : allSchedulers())
    if (ticked.contains(QString::fromStdString(s->name()))) out << QString::fromStdString(s->name());
  return out;
}

void AlgorithmChooser::setChecked(const QStringList& names) {
  for (auto* it : leaves())
    it->setCheckState(0, names.contains(it->data(0, Qt::UserRole).toString()) ? Qt::Checked : Qt::Unchecked);
}

void AlgorithmChooser::selectAll() {
  // Under a search, "all" means all that the search shows.
  for (auto* it : leaves())
    if (!it->isHidden()) it->setCheckState(0, Qt::Checked);
}

void AlgorithmChooser::selectNone() {
  for (auto* it : leaves())
    if (!it->isHidden()) it->setCheckState(0, Qt::Unchecked);
}

void AlgorithmChooser::setFilter(const QString& text) {
  const QString t = text.trimmed();
  for (int g = 0; g < tree_->topLevelItemCount(); ++g) {
    QTreeWidgetItem* group = tree_->topLevelItem(g);
    int shown = 0;
    for (int k = 0; k < group->childCount(); ++k) {
      QTreeWidgetItem* it = group->child(k);
      const bool match = t.isEmpty() || it->text(0).contains(t, Qt::CaseInsensitive) ||
                         it->data(0, Qt::UserRole).toString().contains(t, Qt::CaseInsensitive) ||
                         group->text(0).contains(t, Qt::CaseInsensitive);
      it->setHidden(!match);
      shown += match ? 1 : 0;
    }
    group->setHidden(shown == 0);
  }
  if (search_->text() != text) search_->setText(text);
}

QStringList AlgorithmChooser::groups() const {
  QStringList out;
  for (int g = 0; g < tree_->topLevelItemCount(); ++g) out << tree_->topLevelItem(g)->text(0);
  return out;
}

QStringList AlgorithmChooser::entries(const QString& group) const {
  QStringList out;
  for (int g = 0; g < tree_->topLevelItemCount(); ++g) {
    if (tree_->topLevelItem(g)->text(0) != group) continue;
    for (int k = 0; k < tree_->topLevelItem(g)->childCount(); ++k)
      out << tree_->topLevelItem(g)->child(k)->data(0, Qt::UserRole).toString();
  }
  return out;
}

QStringList AlgorithmChooser::visibleEntries() const {
  QStringList out;
  for (auto* it : leaves())
    if (!it->isHidden() && !it->parent()->isHidden()) out << it->data(0, Qt::UserRole).toString();
  return out;
}

}  // namespace partex::gui
