#pragma once
/// \file Platform editor: choose a preset or open a platform file, edit its devices and links in two
/// tables, save it as a file. Every accepted edit emits platformEdited() with the whole platform, so
/// the session re-simulates at once; an edit that would make the platform invalid (a negative
/// bandwidth, a duplicate device id, a link to a device that does not exist) is refused and the
/// reason is shown.

#include <QAbstractTableModel>
#include <QList>
#include <QWidget>

#include "platform/platform.h"
#include "support/result.h"

class QComboBox;
class QLabel;
class QTableView;

namespace partex::gui {

/// Editable table of a platform's devices. The platform lives in the editor; the model edits it
/// through a reference and validates every change.
class PlatformDevicesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Id, Name, Kind, PeakGflops, BandwidthGBs, LaunchUs, CapacityMiB, Cores, ColumnCount };
  explicit PlatformDevicesModel(Platform& platform, QObject* parent = nullptr);
  void reload();
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void edited();
  void refused(const QString& reason);

 private:
  Platform& p_;
};

/// Editable table of a platform's links.
class PlatformLinksModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { From, To, BandwidthGBs, LatencyUs, SharedMemory, Bidirectional, ColumnCount };
  explicit PlatformLinksModel(Platform& platform, QObject* parent = nullptr);
  void reload();
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void edited();
  void refused(const QString& reason);

 private:
  Platform& p_;
};

/// See the file comment.
class PlatformEditor : public QWidget {
  Q_OBJECT
 public:
  explicit PlatformEditor(QWidget* parent = nullptr);
  /// Shows a platform; `source` is its preset name or file path (for the chooser). Enables editing.
  void setPlatform(const Platform& p, const QString& source);
  /// Nothing to edit (a scheduling instance is loaded: its devices and costs are its own): empties the
  /// tables, disables the controls and shows `reason`.
  void setUnavailable(const QString& reason);
  const Platform& platform() const { return platform_; }
  /// Loads a preset by name or a platform file; errors name the file.
  Status load(const QString& nameOrPath);
  /// Writes the platform as JSON, atomically; errors name the file.
  Status saveAs(const QString& path);
  PlatformDevicesModel* devicesModel() const { return devices_; }
  PlatformLinksModel* linksModel() const { return links_; }
  /// The last refusal or error shown ("" when none).
  QString lastMessage() const { return lastMessage_; }

 signals:
  /// The platform changed (an accepted edit, a preset or a file): re-simulate.
  void platformEdited(const partex::Platform& platform);
  /// The user picked a preset or a file in the chooser (the session reloads it by name).
  void platformChosen(const QString& nameOrPath);

 private:
  void showMessage(const QString& text);
  void chooseFile();
  void saveFile();

  Platform platform_;
  PlatformDevicesModel* devices_ = nullptr;
  PlatformLinksModel* links_ = nullptr;
  QComboBox* preset_ = nullptr;
  QLabel* message_ = nullptr;
  QTableView* deviceView_ = nullptr;
  QTableView* linkView_ = nullptr;
  QList<QWidget*> controls_;  ///< What setUnavailable() disables.
  QString lastMessage_;
  bool updating_ = false;
};

}  // namespace partex::gui
