#pragma once
/// \file The device palette: one entry per device of the platform with its colour, id, name and
/// utilisation in the current timeline. It is a drop target of the graph view's drag: the main
/// window asks it which device lies under the cursor.

#include <QAbstractListModel>
#include <QListView>

namespace partex::gui {

class Session;

/// One row per device. Display: "1  npu  (Mobile NPU)  43 %"; decoration: the device colour;
/// tooltip: busy time and peak memory; UserRole: the device index.
class DevicePaletteModel : public QAbstractListModel {
  Q_OBJECT
 public:
  explicit DevicePaletteModel(Session* session, QObject* parent = nullptr);
  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  /// The device a drag hovers, drawn highlighted (-1: none).
  void setHighlight(int device, bool allowed);
  int highlight() const { return highlight_; }

 private:
  Session* session_;
  int rows_ = 0;
  int highlight_ = -1;
  bool allowed_ = true;
};

/// The palette's view.
class DevicePalette : public QListView {
  Q_OBJECT
 public:
  explicit DevicePalette(Session* session, QWidget* parent = nullptr);
  DevicePaletteModel* paletteModel() const { return model_; }
  /// Device under a global screen position, -1 when none.
  int deviceAt(const QPoint& globalPos) const;
  /// Centre of a device's entry in global coordinates (tests).
  QPoint globalCenterOf(int device) const;
  /// Tall enough for every device of a platform of up to eight; the minimum is two entries.
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;
  /// Entries shown without scrolling: the devices, at most eight (four before a model).
  static constexpr int kMaxRowsShown = 8;

 private:
  int heightFor(int rows) const;
  DevicePaletteModel* model_;
};

}  // namespace partex::gui
