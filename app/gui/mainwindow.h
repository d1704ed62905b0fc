#pragma once
/// \file Main window. Until the visual explorer lands it opens a model (menu, recent files, drag
/// and drop, command line) off the GUI thread and lists its operators with their work.

#include <QFutureWatcher>
#include <QMainWindow>
#include <QStringList>

#include <memory>

#include "gui/operatortablemodel.h"
#include "support/result.h"

class QLabel;
class QTableView;
class QSortFilterProxyModel;
class QLineEdit;
class QMenu;
class QProgressBar;

namespace partex::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Starts loading a model in the background; `dims` are "NAME=VALUE" or "INPUT:AXIS=VALUE".
  void openModel(const QString& path, const QStringList& dims = {});
  /// The model shown now (null before the first load).
  std::shared_ptr<const LoadedModel> model() const { return model_; }
  QTableView* operatorView() const { return view_; }
  /// The last load error ("" when none); also shown in a dialog unless dialogs are suppressed.
  QString lastError() const { return lastError_; }
  /// Tests and screenshots turn modal dialogs off (errors then go to the status bar only).
  void setDialogsEnabled(bool on) { dialogsEnabled_ = on; }

 signals:
  /// Emitted when a load finished (ok or not).
  void modelLoaded(bool ok);

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void onLoadFinished();
  void chooseFile();
  void updateRecentMenu();
  void addRecent(const QString& path);
  void showError(const QString& message);

  OperatorTableModel* table_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* view_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QLabel* summary_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  std::shared_ptr<const LoadedModel> model_;
  QFutureWatcher<Result<std::shared_ptr<const LoadedModel>>>* watcher_ = nullptr;
  QString loadingPath_;
  QStringList loadingDims_;
  QString lastError_;
  bool dialogsEnabled_ = true;
};

/// Imports and characterises a model (runs on a worker thread).
Result<std::shared_ptr<const LoadedModel>> loadModel(const std::string& path, const std::vector<std::string>& dims);

}  // namespace partex::gui
