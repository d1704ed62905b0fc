// MainWindow: projects (save, open), autosave and recovery, and the question on close.
#include "gui/mainwindow.h"

#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QStandardPaths>
#include <QStatusBar>

#include <algorithm>

#include "graph/graphview.h"
#include "gui/fileerrors.h"
#include "plan/exports.h"
#include "plan/planfile.h"

namespace partex::gui {

/// "dir/name.platform.json" for "dir/name.partex": where an edited platform is saved beside a project.
static QString sidecarPlatformPath(const QString& projectPath) {
  const QFileInfo fi(projectPath);
  return fi.dir().filePath(fi.completeBaseName() + QStringLiteral(".platform.json"));
}

QString MainWindow::viewStateJson() const {
  QJsonObject v;
  v.insert(QStringLiteral("zoom"), graph_->transform().m11());
  const QPointF c = graph_->mapToScene(graph_->viewport()->rect().center());
  v.insert(QStringLiteral("center"), QJsonArray{c.x(), c.y()});
  QJsonArray sel;
  if (const auto* t = session_->table())
    for (int op : session_->selection()) sel.append(QString::fromStdString(t->taskNames[static_cast<size_t>(op)]));
  v.insert(QStringLiteral("selected"), sel);
  v.insert(QStringLiteral("reference_makespan_us"), session_->state().schedulerMakespan);
  return QString::fromUtf8(QJsonDocument(v).toJson(QJsonDocument::Compact));
}

void MainWindow::applyViewState() {
  if (pendingView_.isEmpty() || session_->loading()) return;
  const QJsonObject v = QJsonDocument::fromJson(pendingView_.toUtf8()).object();
  pendingView_.clear();
  const double zoom = v.value(QStringLiteral("zoom")).toDouble(0);
  if (zoom >= 0.01 && zoom <= 8) graph_->setTransform(QTransform::fromScale(zoom, zoom));
  const QJsonArray c = v.value(QStringLiteral("center")).toArray();
  if (c.size() == 2) graph_->centerOn(c[0].toDouble(), c[1].toDouble());
}

Result<Project> MainWindow::buildProject(const QString& path, bool sidecarPlatform) {
  const LoadedModel* m = session_->model();
  const CostTable* t = session_->table();
  if (session_->isInstance())
    return makeError(QFileInfo(path).fileName().toStdString(), ": ",
                     session_->instanceReason(tr("A project")).toStdString(), " (File > Export > Plan keeps the plan)");
  if (!m || !t) return makeError(QFileInfo(path).fileName().toStdString(), ": no model loaded to save");
  Project p;
  p.modelPath = QFileInfo(QString::fromStdString(m->path)).absoluteFilePath().toStdString();
  p.modelSha256 = m->graph.graphSha256;
  p.dims = m->dims;
  if (const auto& edited = session_->editedPlatform(); edited && sidecarPlatform) {
    // An edited platform has no file or preset name: it goes beside the project.
    const QString side = sidecarPlatformPath(path);
    if (auto st = saveExport(side.toStdString(), platformToJson(*edited)); !st) return Error{st.message()};
    p.platform = QFileInfo(side).absoluteFilePath().toStdString();
  } else {
    const QString name = session_->platformName();
    const auto presets = presetNames();
    const bool preset = std::find(presets.begin(), presets.end(), name.toStdString()) != presets.end();
    p.platform =
        preset || !QFileInfo::exists(name) ? name.toStdString() : QFileInfo(name).absoluteFilePath().toStdString();
  }
  // Profiles by path (projectToJson makes those beside or below the project relative), in the
  // session's application order: Partex profiles, then ONNX Runtime imports.
  for (const auto& lp : session_->profiles()) {
    if (lp.kind == LoadedProfile::Kind::Partex)
      p.profiles.push_back(lp.path);
    else
      p.ortImports.push_back({lp.path, lp.device, lp.provider});
  }
  const PlanState& st = session_->state();
  PlanIdentity id{QFileInfo(QString::fromStdString(m->path)).fileName().toStdString(), m->graph.graphSha256,
                  session_->platform().name};
  p.planJson = planToJson(*t, st.plan, session_->timeline(), id, &m->graph);
  p.algorithm = st.algorithm;
  for (const auto& [op, dev] : st.pinned)
    p.pins.emplace_back(t->taskNames[static_cast<size_t>(op)], t->deviceIds[static_cast<size_t>(dev)]);
  for (int op = 0; op < t->numTasks(); ++op)
    if (session_->isManual(op))
      p.moves.emplace_back(t->taskNames[static_cast<size_t>(op)],
                           t->deviceIds[static_cast<size_t>(session_->deviceOf(op))]);
  p.viewJson = viewStateJson().toStdString();
  return p;
}

Status MainWindow::writeProject(const QString& path) {
  auto p = buildProject(path, true);
  if (!p) return p.status();
  return namingFile(path, partex::saveProject(path.toStdString(), *p));
}

Status MainWindow::saveProject(const QString& path) {
  if (auto st = writeProject(path); !st) return st;
  projectPath_ = QFileInfo(path).absoluteFilePath();
  session_->markSaved();
  removeAutosave();  // the work is safe in the project now
  addRecent(projectPath_);
  setWindowTitle(tr("%1[*] - Partex").arg(QFileInfo(path).fileName()));
  setWindowModified(false);
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
  return {};
}

Status MainWindow::openProject(const QString& path) {
  return startProject(path, false);
}

Status MainWindow::startProject(const QString& path, bool recovery) {
  auto p = loadProjectFile(path.toStdString());
  if (!p) {
    const QString msg = QString::fromStdString(namingFile(path, p.status()).message());
    showError(msg);
    emit modelLoaded(false);
    return Error{msg.toStdString()};
  }
  loadingPath_ = path;
  loadingDims_.clear();
  loadingProject_ = true;
  recovering_ = recovery;
  pendingView_ = QString::fromStdString(p->viewJson);
  platformBox_->setCurrentText(QString::fromStdString(p->platform));
  session_->openProject(*p, path, recovery);
  return {};
}

void MainWindow::chooseProject() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open project"), QString(),
                                                    tr("Partex projects (*.partex);;All files (*)"));
  if (!path.isEmpty()) (void)openProject(path);
}

void MainWindow::saveProjectAs() {
  if (!session_->hasModel()) {
    showError(tr("Open a model first: there is nothing to save"));
    return;
  }
  if (session_->isInstance()) {
    showError(session_->instanceReason(tr("A project")) + tr(" (File > Export > Plan keeps the plan)"));
    return;
  }
  QString path = QFileDialog::getSaveFileName(this, tr("Save project"), projectPath_,
                                              tr("Partex projects (*.partex);;All files (*)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QLatin1String(kProjectExtension);
  if (auto st = saveProject(path); !st) showError(QString::fromStdString(st.message()));
}

// --- Autosave and recovery ---------------------------------------------------------------------

QString MainWindow::autosavePath() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/autosave.partex");
}

void MainWindow::setAutosaveInterval(int ms) {
  autosave_->start(ms);
}

bool MainWindow::autosaveNow() {
  if (!session_->hasModel() || session_->loading() || !session_->modified()) return false;
  if (session_->isInstance()) return false;  // the autosave is a project: instances have none
  const QString path = autosavePath();
  QDir().mkpath(QFileInfo(path).path());
  if (auto st = writeProject(path); !st) {
    statusBar()->showMessage(tr("Autosave failed: %1").arg(QString::fromStdString(st.message())), 8000);
    return false;
  }
  return true;
}

void MainWindow::removeAutosave() {
  QFile::remove(autosavePath());
  QFile::remove(sidecarPlatformPath(autosavePath()));
}

bool MainWindow::checkRecovery(const QString& instead) {
  const QFileInfo fi(autosavePath());
  if (!fi.exists() || !dialogsEnabled_) return false;
  QString question =
      tr("Recover unsaved work from %1?").arg(QLocale().toString(fi.lastModified(), QLocale::ShortFormat));
  if (!instead.isEmpty())
    question += QLatin1Char('\n') + tr("Yes opens the recovered work instead of %1; No discards it and opens %1.")
                                        .arg(QFileInfo(instead).fileName());
  const auto answer =
      QMessageBox::question(this, tr("Partex"), question, QMessageBox::Yes | QMessageBox::No, QMessageBox::Yes);
  if (answer != QMessageBox::Yes) {
    removeAutosave();
    return false;
  }
  return recoverAutosave().isOk();
}

Status MainWindow::recoverAutosave() {
  const QString path = autosavePath();
  if (!QFileInfo::exists(path)) return makeError(path.toStdString(), ": no autosave to recover");
  return startProject(path, true);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (dialogsEnabled_ && session_->modified() && session_->isInstance()) {
    // No project to save it in: the plan file is where an edited instance plan goes.
    const auto answer = QMessageBox::question(
        this, tr("Partex"),
        tr("The plan of %1 was changed and is not saved (File > Export > Plan keeps it). Close anyway?")
            .arg(QFileInfo(session_->sourcePath()).fileName()),
        QMessageBox::Close | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer == QMessageBox::Cancel) {
      e->ignore();
      return;
    }
  } else if (dialogsEnabled_ && session_->modified()) {
    const auto answer =
        QMessageBox::question(this, tr("Partex"), tr("Save the changes to the project before closing?"),
                              QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Cancel) {
      e->ignore();
      return;
    }
    if (answer == QMessageBox::Save) {
      if (projectPath_.isEmpty())
        saveProjectAs();
      else if (auto st = saveProject(projectPath_); !st)
        showError(QString::fromStdString(st.message()));
      if (session_->modified()) {  // not saved (cancelled or failed): stay open
        e->ignore();
        return;
      }
    }
  }
  removeAutosave();
  saveLayout();
  QMainWindow::closeEvent(e);
}

}  // namespace partex::gui
