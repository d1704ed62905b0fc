#include "gui/mainwindow.h"

#include <QAction>
#include <QApplication>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "onnx/importer.h"
#include "support/strings.h"

namespace partex::gui {

Result<std::shared_ptr<const LoadedModel>> loadModel(const std::string& path, const std::vector<std::string>& dims) {
  ImportOptions opts;
  for (const auto& d : dims) {
    auto b = parseDimBinding(d);
    if (!b) return makeError("--dim ", d, ": ", b.message());
    opts.dims.push_back(*b);
  }
  auto g = importOnnxFile(path, opts);
  if (!g) return Error{g.message()};
  auto m = std::make_shared<LoadedModel>();
  m->graph = std::move(g).value();
  m->work = characteriseAll(m->graph);
  m->total = summarise(m->graph, m->work);
  return std::shared_ptr<const LoadedModel>(std::move(m));
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("Partex"));
  setAcceptDrops(true);
  resize(1400, 900);

  table_ = new OperatorTableModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(table_);
  proxy_->setSortRole(Qt::UserRole);
  proxy_->setFilterKeyColumn(-1);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);

  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  summary_ = new QLabel(tr("Open an ONNX model (File > Open, or drop a file here)."), central);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary_->setWordWrap(true);
  filter_ = new QLineEdit(central);
  filter_->setPlaceholderText(tr("Filter operators by name, type or class (Ctrl+F)"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  view_ = new QTableView(central);
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(OperatorTableModel::Index, Qt::AscendingOrder);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setAlternatingRowColors(true);
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(summary_);
  layout->addWidget(filter_);
  layout->addWidget(view_, 1);
  setCentralWidget(central);

  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open..."), this, &MainWindow::chooseFile);
  open->setShortcut(QKeySequence::Open);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows);
  quit->setShortcut(QKeySequence::Quit);
  auto* find = new QAction(tr("Find"), this);
  find->setShortcut(QKeySequence::Find);
  connect(find, &QAction::triggered, filter_, [this] { filter_->setFocus(); filter_->selectAll(); });
  addAction(find);
  updateRecentMenu();

  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);
  progress_->setMaximumWidth(200);
  progress_->hide();
  statusBar()->addPermanentWidget(progress_);

  watcher_ = new QFutureWatcher<Result<std::shared_ptr<const LoadedModel>>>(this);
  connect(watcher_, &QFutureWatcherBase::finished, this, &MainWindow::onLoadFinished);
}

MainWindow::~MainWindow() { watcher_->waitForFinished(); }

void MainWindow::openModel(const QString& path, const QStringList& dims) {
  if (watcher_->isRunning()) watcher_->waitForFinished();
  loadingPath_ = path;
  loadingDims_ = dims;
  std::vector<std::string> d;
  for (const auto& s : dims) d.push_back(s.toStdString());
  progress_->show();
  statusBar()->showMessage(tr("Loading %1...").arg(QFileInfo(path).fileName()));
  watcher_->setFuture(QtConcurrent::run(loadModel, path.toStdString(), d));
}

void MainWindow::onLoadFinished() {
  progress_->hide();
  auto result = watcher_->result();
  if (!result) {
    QString msg = QString::fromStdString(result.message());
    // Symbolic input dimensions: ask the user to bind them, then retry.
    if (dialogsEnabled_ && msg.contains(QLatin1String("not bound"))) {
      bool ok = false;
      QString text = QInputDialog::getText(this, tr("Bind symbolic dimensions"),
                                           msg + tr("\n\nBindings, comma separated (NAME=VALUE or INPUT:AXIS=VALUE):"),
                                           QLineEdit::Normal, loadingDims_.join(QLatin1Char(',')), &ok);
      if (ok && !text.trimmed().isEmpty()) {
        openModel(loadingPath_, text.split(QLatin1Char(','), Qt::SkipEmptyParts));
        return;
      }
    }
    showError(msg);
    emit modelLoaded(false);
    return;
  }
  lastError_.clear();
  model_ = result.value();
  table_->setModel(model_);
  view_->resizeColumnsToContents();
  const auto& g = model_->graph;
  summary_->setText(tr("<b>%1</b> &nbsp; %2 operators &nbsp; %3 MACs &nbsp; %4 FLOPs &nbsp; parameters %5 &nbsp; peak activations %6 &nbsp; opset %7%8")
                        .arg(QFileInfo(loadingPath_).fileName().toHtmlEscaped())
                        .arg(g.nodes.size())
                        .arg(QString::fromStdString(humanCount(static_cast<double>(model_->total.macs))))
                        .arg(QString::fromStdString(humanCount(static_cast<double>(model_->total.flops))))
                        .arg(QString::fromStdString(humanBytes(static_cast<double>(model_->total.paramBytes))))
                        .arg(QString::fromStdString(humanBytes(static_cast<double>(model_->total.peakActivationBytes))))
                        .arg(g.opsetVersion)
                        .arg(g.warnings.empty() ? QString() : tr(" &nbsp; <font color=#b35806>%1 warning(s)</font>").arg(g.warnings.size())));
  setWindowTitle(tr("%1 - Partex").arg(QFileInfo(loadingPath_).fileName()));
  statusBar()->showMessage(tr("Loaded %1").arg(loadingPath_), 5000);
  addRecent(QFileInfo(loadingPath_).absoluteFilePath());
  emit modelLoaded(true);
}

void MainWindow::chooseFile() {
  QString path = QFileDialog::getOpenFileName(this, tr("Open ONNX model"), QString(), tr("ONNX models (*.onnx);;All files (*)"));
  if (!path.isEmpty()) openModel(path);
}

void MainWindow::updateRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = QSettings().value(QStringLiteral("recentFiles")).toStringList();
  for (const QString& f : recent) recentMenu_->addAction(f, this, [this, f] { openModel(f); });
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::addRecent(const QString& path) {
  QSettings s;
  QStringList recent = s.value(QStringLiteral("recentFiles")).toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > 10) recent.removeLast();
  s.setValue(QStringLiteral("recentFiles"), recent);
  updateRecentMenu();
}

void MainWindow::showError(const QString& message) {
  lastError_ = message;
  statusBar()->showMessage(message);
  if (dialogsEnabled_) QMessageBox::critical(this, tr("Cannot open model"), message);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.first().isLocalFile()) openModel(urls.first().toLocalFile());
}

}  // namespace partex::gui
