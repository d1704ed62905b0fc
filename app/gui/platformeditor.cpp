#include "gui/platformeditor.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>

#include "support/files.h"

namespace partex::gui {

namespace {

/// The whole platform must still be a valid platform file: the same checks as opening one.
Status validate(const Platform& p) {
  auto back = parsePlatform(platformToJson(p), "edited platform");
  if (!back) return Error{back.message()};
  return {};
}

/// A positive finite number from an edit, or false.
bool positive(const QVariant& v, double& out, bool allowZero = false) {
  bool ok = false;
  out = v.toString().trimmed().toDouble(&ok);
  return ok && std::isfinite(out) && (allowZero ? out >= 0 : out > 0);
}

QString num(double x) { return QString::number(x, 'g', 6); }

}  // namespace

// ---- Devices -----------------------------------------------------------------------------------

PlatformDevicesModel::PlatformDevicesModel(Platform& platform, QObject* parent) : QAbstractTableModel(parent), p_(platform) {}

void PlatformDevicesModel::reload() {
  beginResetModel();
  endResetModel();
}

int PlatformDevicesModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(p_.devices.size()); }
int PlatformDevicesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PlatformDevicesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  const Device& d = p_.devices[static_cast<size_t>(index.row())];
  switch (index.column()) {
    case Id: return QString::fromStdString(d.id);
    case Name: return QString::fromStdString(d.name);
    case Kind: return QString::fromLatin1(deviceKindName(d.kind));
    case PeakGflops: return num(d.defaultPeakGflops);
    case BandwidthGBs: return num(d.memBandwidthGBs);
    case LaunchUs: return num(d.launchOverheadUs);
    case CapacityMiB: return d.memCapacityBytes > 0 ? num(static_cast<double>(d.memCapacityBytes) / (1024.0 * 1024.0)) : QStringLiteral("0");
    case Cores: return d.cores;
    default: return {};
  }
}

bool PlatformDevicesModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return false;
  Platform candidate = p_;
  Device& d = candidate.devices[static_cast<size_t>(index.row())];
  const std::string oldId = d.id;
  double x = 0;
  QString bad;
  switch (index.column()) {
    case Id: {
      const std::string id = value.toString().trimmed().toStdString();
      if (id.empty()) {
        bad = tr("a device id cannot be empty");
        break;
      }
      d.id = id;
      // Links, exclusive groups and the host refer to devices by id: rename them too.
      for (Link& l : candidate.links) {
        if (l.from == oldId) l.from = id;
        if (l.to == oldId) l.to = id;
      }
      for (ExclusiveGroup& g : candidate.exclusiveGroups)
        for (std::string& m : g.devices)
          if (m == oldId) m = id;
      if (candidate.host == oldId) candidate.host = id;
      break;
    }
    case Name: d.name = value.toString().toStdString(); break;
    case Kind: {
      const std::string k = value.toString().trimmed().toLower().toStdString();
      bool found = false;
      for (DeviceKind kind : {DeviceKind::Cpu, DeviceKind::Gpu, DeviceKind::Npu, DeviceKind::Dsp, DeviceKind::Pim})
        if (k == deviceKindName(kind)) {
          d.kind = kind;
          found = true;
        }
      if (!found) bad = tr("kind must be one of cpu, gpu, npu, dsp, pim");
      break;
    }
    case PeakGflops:
      if (!positive(value, x)) bad = tr("peak GFLOP/s must be a positive number");
      else d.defaultPeakGflops = x;
      break;
    case BandwidthGBs:
      if (!positive(value, x)) bad = tr("memory bandwidth must be a positive number");
      else d.memBandwidthGBs = x;
      break;
    case LaunchUs:
      if (!positive(value, x, true)) bad = tr("launch overhead must be zero or a positive number");
      else d.launchOverheadUs = x;
      break;
    case CapacityMiB:
      if (!positive(value, x, true)) bad = tr("memory capacity must be zero (unlimited) or a positive number of MiB");
      else d.memCapacityBytes = static_cast<int64_t>(std::llround(x * 1024.0 * 1024.0));
      break;
    case Cores: {
      bool ok = false;
      const int c = value.toString().trimmed().toInt(&ok);
      if (!ok || c < 1) bad = tr("cores must be a whole number of at least 1");
      else d.cores = c;
      break;
    }
    default: return false;
  }
  if (bad.isEmpty()) {
    if (auto st = validate(candidate); !st) bad = QString::fromStdString(st.message());
  }
  if (!bad.isEmpty()) {
    emit refused(tr("Device '%1': %2").arg(QString::fromStdString(oldId), bad));
    return false;
  }
  p_ = std::move(candidate);
  emit dataChanged(index.siblingAtColumn(0), index.siblingAtColumn(ColumnCount - 1));
  emit edited();
  return true;
}

Qt::ItemFlags PlatformDevicesModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  return Qt::ItemIsSelectable | Qt::ItemIsEnabled | Qt::ItemIsEditable;
}

QVariant PlatformDevicesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  switch (section) {
    case Id: return tr("Id");
    case Name: return tr("Name");
    case Kind: return tr("Kind");
    case PeakGflops: return tr("Peak GFLOP/s");
    case BandwidthGBs: return tr("Memory GB/s");
    case LaunchUs: return tr("Launch µs");
    case CapacityMiB: return tr("Capacity MiB");
    case Cores: return tr("Cores");
    default: return {};
  }
}

// ---- Links -------------------------------------------------------------------------------------

PlatformLinksModel::PlatformLinksModel(Platform& platform, QObject* parent) : QAbstractTableModel(parent), p_(platform) {}

void PlatformLinksModel::reload() {
  beginResetModel();
  endResetModel();
}

int PlatformLinksModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(p_.links.size()); }
int PlatformLinksModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PlatformLinksModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const Link& l = p_.links[static_cast<size_t>(index.row())];
  if (role == Qt::CheckStateRole) {
    if (index.column() == SharedMemory) return l.sharedMemory ? Qt::Checked : Qt::Unchecked;
    if (index.column() == Bidirectional) return l.bidirectional ? Qt::Checked : Qt::Unchecked;
    return {};
  }
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  switch (index.column()) {
    case From: return QString::fromStdString(l.from);
    case To: return QString::fromStdString(l.to);
    case BandwidthGBs: return num(l.bandwidthGBs);
    case LatencyUs: return num(l.latencyUs);
    case SharedMemory: return l.sharedMemory ? tr("yes") : tr("no");
    case Bidirectional: return l.bidirectional ? tr("yes") : tr("no");
    default: return {};
  }
}

bool PlatformLinksModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return false;
  const bool check = role == Qt::CheckStateRole && (index.column() == SharedMemory || index.column() == Bidirectional);
  if (role != Qt::EditRole && !check) return false;
  Platform candidate = p_;
  Link& l = candidate.links[static_cast<size_t>(index.row())];
  const QString label = QString::fromStdString(p_.links[static_cast<size_t>(index.row())].from + " - " + p_.links[static_cast<size_t>(index.row())].to);
  double x = 0;
  QString bad;
  auto flag = [&]() {
    if (check) return value.toInt() == Qt::Checked;
    const QString s = value.toString().trimmed().toLower();
    return s == QLatin1String("yes") || s == QLatin1String("true") || s == QLatin1String("1");
  };
  switch (index.column()) {
    case From:
    case To: {
      const std::string id = value.toString().trimmed().toStdString();
      if (p_.findDevice(id) < 0) {
        bad = tr("no device '%1'").arg(QString::fromStdString(id));
        break;
      }
      (index.column() == From ? l.from : l.to) = id;
      if (l.from == l.to) bad = tr("a link joins two different devices");
      break;
    }
    case BandwidthGBs:
      if (!positive(value, x)) bad = tr("bandwidth must be a positive number");
      else l.bandwidthGBs = x;
      break;
    case LatencyUs:
      if (!positive(value, x, true)) bad = tr("latency must be zero or a positive number");
      else l.latencyUs = x;
      break;
    case SharedMemory: l.sharedMemory = flag(); break;
    case Bidirectional: l.bidirectional = flag(); break;
    default: return false;
  }
  if (bad.isEmpty()) {
    if (auto st = validate(candidate); !st) bad = QString::fromStdString(st.message());
  }
  if (!bad.isEmpty()) {
    emit refused(tr("Link %1: %2").arg(label, bad));
    return false;
  }
  p_ = std::move(candidate);
  emit dataChanged(index.siblingAtColumn(0), index.siblingAtColumn(ColumnCount - 1));
  emit edited();
  return true;
}

Qt::ItemFlags PlatformLinksModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsSelectable | Qt::ItemIsEnabled;
  if (index.column() == SharedMemory || index.column() == Bidirectional) return f | Qt::ItemIsUserCheckable;
  return f | Qt::ItemIsEditable;
}

QVariant PlatformLinksModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  switch (section) {
    case From: return tr("From");
    case To: return tr("To");
    case BandwidthGBs: return tr("GB/s");
    case LatencyUs: return tr("Latency µs");
    case SharedMemory: return tr("Shared memory");
    case Bidirectional: return tr("Both ways");
    default: return {};
  }
}

// ---- Editor ------------------------------------------------------------------------------------

PlatformEditor::PlatformEditor(QWidget* parent) : QWidget(parent) {
  devices_ = new PlatformDevicesModel(platform_, this);
  links_ = new PlatformLinksModel(platform_, this);
  preset_ = new QComboBox(this);
  for (const auto& n : presetNames()) preset_->addItem(QString::fromStdString(n), QString::fromStdString(n));
  auto* open = new QPushButton(tr("Open…"), this);
  auto* save = new QPushButton(tr("Save as…"), this);
  message_ = new QLabel(this);
  message_->setWordWrap(true);
  deviceView_ = new QTableView(this);
  deviceView_->setModel(devices_);
  linkView_ = new QTableView(this);
  linkView_->setModel(links_);
  for (QTableView* v : {deviceView_, linkView_}) {
    v->verticalHeader()->hide();
    v->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  }
  auto* top = new QHBoxLayout;
  top->addWidget(preset_, 1);
  top->addWidget(open);
  top->addWidget(save);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(new QLabel(tr("Devices"), this));
  layout->addWidget(deviceView_, 2);
  layout->addWidget(new QLabel(tr("Links"), this));
  layout->addWidget(linkView_, 1);
  layout->addWidget(message_);

  auto onEdit = [this] {
    showMessage({});
    emit platformEdited(platform_);
  };
  connect(devices_, &PlatformDevicesModel::edited, this, onEdit);
  connect(links_, &PlatformLinksModel::edited, this, onEdit);
  connect(devices_, &PlatformDevicesModel::refused, this, &PlatformEditor::showMessage);
  connect(links_, &PlatformLinksModel::refused, this, &PlatformEditor::showMessage);
  connect(preset_, &QComboBox::activated, this, [this](int i) {
    const QString name = preset_->itemData(i).toString();
    if (auto st = load(name); st) emit platformChosen(name);
  });
  connect(open, &QPushButton::clicked, this, &PlatformEditor::chooseFile);
  connect(save, &QPushButton::clicked, this, &PlatformEditor::saveFile);
  controls_ = {preset_, open, save, deviceView_, linkView_};
}

void PlatformEditor::setPlatform(const Platform& p, const QString& source) {
  for (QWidget* w : controls_) w->setEnabled(true);
  platform_ = p;
  devices_->reload();
  links_->reload();
  updating_ = true;
  int i = preset_->findData(source);
  if (i < 0) {
    preset_->addItem(source, source);
    i = preset_->count() - 1;
  }
  preset_->setCurrentIndex(i);
  updating_ = false;
  showMessage({});
}

void PlatformEditor::setUnavailable(const QString& reason) {
  platform_ = Platform{};
  devices_->reload();
  links_->reload();
  for (QWidget* w : controls_) w->setEnabled(false);
  showMessage(reason);
}

Status PlatformEditor::load(const QString& nameOrPath) {
  auto p = loadPlatform(nameOrPath.toStdString());
  if (!p) {
    showMessage(QString::fromStdString(p.message()));
    return Error{p.message()};
  }
  setPlatform(*p, nameOrPath);
  emit platformEdited(platform_);
  return {};
}

Status PlatformEditor::saveAs(const QString& path) {
  auto st = writeFileAtomic(path.toStdString(), platformToJson(platform_));
  if (!st) showMessage(QString::fromStdString(st.message()));
  else showMessage(tr("Saved %1").arg(path));
  return st;
}

void PlatformEditor::showMessage(const QString& text) {
  lastMessage_ = text;
  message_->setText(text);
}

void PlatformEditor::chooseFile() {
  const QString f = QFileDialog::getOpenFileName(this, tr("Open platform"), {}, tr("Platform files (*.json)"));
  if (f.isEmpty()) return;
  if (auto st = load(f); st) emit platformChosen(f);
}

void PlatformEditor::saveFile() {
  const QString f = QFileDialog::getSaveFileName(this, tr("Save platform"), QString::fromStdString(platform_.name) + QStringLiteral(".json"),
                                                 tr("Platform files (*.json)"));
  if (!f.isEmpty()) (void)saveAs(f);
}

}  // namespace partex::gui
