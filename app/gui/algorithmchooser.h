#pragma once
/// \file The chooser of the algorithms to compare: a search field, "Select all" and "None", and the
/// schedulers as a checkable list grouped by kind (baselines, list heuristics, papers, llama.cpp's
/// rules, exact and best). Typing filters by name, title or group; a group's box ticks all of
/// its entries.

#include <QStringList>
#include <QWidget>

class QLineEdit;
class QTreeWidget;
class QTreeWidgetItem;

namespace partex::gui {

/// The group a scheduler is listed under ("List heuristics" for "heft"); "Other" for one not known here.
QString algorithmGroup(const QString& scheduler);

/// See the file comment.
class AlgorithmChooser : public QWidget {
  Q_OBJECT
 public:
  explicit AlgorithmChooser(QWidget* parent = nullptr);
  /// Scheduler names ticked, in the registry's order.
  QStringList checked() const;
  void setChecked(const QStringList& names);
  void selectAll();
  void selectNone();
  /// Shows only the entries whose name, title or group contains `text` (case-insensitive).
  void setFilter(const QString& text);
  /// Group titles, in order, and the scheduler names listed under `group` (tests).
  QStringList groups() const;
  QStringList entries(const QString& group) const;
  /// Entries shown under the current filter.
  QStringList visibleEntries() const;
  QLineEdit* searchField() const { return search_; }
  QTreeWidget* tree() const { return tree_; }

 signals:
  void changed();

 private:
  QList<QTreeWidgetItem*> leaves() const;
  QLineEdit* search_;
  QTreeWidget* tree_;
};

}  // namespace partex::gui
