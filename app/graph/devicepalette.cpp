#include "graph/devicepalette.h"

#include <QBrush>
#include <QFont>

#include <algorithm>

#include "session/palette.h"
#include "session/session.h"
#include "support/strings.h"

namespace partex::gui {

DevicePaletteModel::DevicePaletteModel(Session* session, QObject* parent)
    : QAbstractListModel(parent), session_(session) {
  connect(session_, &Session::modelChanged, this, [this] {
    beginResetModel();
    rows_ = session_->numDevices();
    highlight_ = -1;
    endResetModel();
  });
  connect(session_, &Session::planChanged, this, [this] {
    if (rows_ > 0) emit dataChanged(index(0), index(rows_ - 1));
  });
}

int DevicePaletteModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : rows_;
}

QVariant DevicePaletteModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() < 0 || index.row() >= rows_ || index.row() >= session_->numDevices()) return {};
  const int d = index.row();
  const auto& tl = session_->timeline();
  const double util = static_cast<size_t>(d) < tl.utilisation.size() ? tl.utilisation[static_cast<size_t>(d)] : 0.0;
  const auto& platform = session_->platform();
  const QString name = static_cast<size_t>(d) < platform.devices.size()
                           ? QString::fromStdString(platform.devices[static_cast<size_t>(d)].name)
                           : QString();
  int ops = 0;
  for (DeviceId x : session_->plan().device) ops += x == d;
  switch (role) {
    case Qt::DisplayRole:
      return QStringLiteral("%1  %2   %3 %   %4 ops\n     %5")
          .arg(d + 1)
          .arg(session_->deviceLabel(d))
          .arg(util * 100, 0, 'f', 0)
          .arg(ops)
          .arg(name);
    case Qt::DecorationRole:
      return session_->deviceColor(d);
    case Qt::ToolTipRole: {
      const double busy = static_cast<size_t>(d) < tl.busy.size() ? tl.busy[static_cast<size_t>(d)] : 0.0;
      QString tip =
          tr("%1 (%2): busy %3 us of %4 us, %5 operators. Drop operators here, or press %6 to move the selection here.")
              .arg(session_->deviceLabel(d), name)
              .arg(busy, 0, 'f', 1)
              .arg(tl.makespan, 0, 'f', 1)
              .arg(ops)
              .arg(d + 1);
      if (static_cast<size_t>(d) < tl.peakBytes.size() && tl.peakBytes[static_cast<size_t>(d)] > 0)
        tip += tr(" Peak memory %1.")
                   .arg(QString::fromStdString(humanBytes(static_cast<double>(tl.peakBytes[static_cast<size_t>(d)]))));
      return tip;
    }
    case Qt::BackgroundRole:
      if (d == highlight_) return QBrush(allowed_ ? QColor(255, 250, 200) : QColor(255, 215, 215));
      return {};
    case Qt::FontRole:
      if (d == highlight_) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::UserRole:
      return d;
    default:
      return {};
  }
}

void DevicePaletteModel::setHighlight(int device, bool allowed) {
  if (device == highlight_ && allowed == allowed_) return;
  const int old = highlight_;
  highlight_ = device;
  allowed_ = allowed;
  if (old >= 0 && old < rows_) emit dataChanged(index(old), index(old));
  if (device >= 0 && device < rows_) emit dataChanged(index(device), index(device));
}

DevicePalette::DevicePalette(Session* session, QWidget* parent) : QListView(parent) {
  model_ = new DevicePaletteModel(session, this);
  setModel(model_);
  setIconSize(QSize(22, 22));
  setSpacing(2);
  setSelectionMode(QAbstractItemView::NoSelection);
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setUniformItemSizes(true);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // A new platform may have more devices: a new size hint (the main window grows the dock to it).
  connect(model_, &QAbstractItemModel::modelReset, this, [this] { updateGeometry(); });
}

int DevicePalette::heightFor(int rows) const {
  const int text = std::max(iconSize().height(), fontMetrics().height()) + 6;
  const int row = model_->rowCount() > 0 ? std::max(text, sizeHintForRow(0)) : text;
  return rows * (row + 2 * spacing()) + 2 * frameWidth() + 2;  // each entry has its spacing on both sides
}

QSize DevicePalette::sizeHint() const {
  const int rows = model_->rowCount() > 0 ? std::min(model_->rowCount(), kMaxRowsShown) : 4;
  return {QListView::sizeHint().width(), heightFor(rows)};
}

QSize DevicePalette::minimumSizeHint() const {
  // Two entries at least; a small screen scrolls the rest (the default layout gives sizeHint()).
  return {QListView::minimumSizeHint().width(), heightFor(std::min(std::max(model_->rowCount(), 1), 2))};
}

int DevicePalette::deviceAt(const QPoint& globalPos) const {
  const QPoint p = viewport()->mapFromGlobal(globalPos);
  if (!viewport()->rect().contains(p) || !isVisible()) return -1;
  const QModelIndex i = indexAt(p);
  return i.isValid() ? i.row() : -1;
}

QPoint DevicePalette::globalCenterOf(int device) const {
  return viewport()->mapToGlobal(visualRect(model_->index(device)).center());
}

}  // namespace partex::gui
