// MainWindow: profiles (load, import from ONNX Runtime, remove) and profiling this machine on a
// worker thread, with a progress dialog that can cancel.
#include "gui/mainwindow.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QListWidget>
#include <QMetaObject>
#include <QProgressBar>
#include <QProgressDialog>
#include <QPushButton>
#include <QStatusBar>

#include <algorithm>
#include <chrono>

#include "backend/backend.h"
#include "gui/fileerrors.h"
#include "profile/ortprofile.h"
#include "profile/profiler.h"
#include "support/strings.h"

namespace partex::gui {

/// The profiler's result, built on the worker.
struct MainWindow::ProfileRun {
  Result<Profile> profile = makeError("not run");
  ProfilerInfo info;
  bool cancelled = false;
};

void MainWindow::updateProfiles() {
  const CostCounts c = session_->costCounts();
  const bool instance = session_->isInstance();
  const QString line =
      !session_->hasModel() ? QString()
      : instance            ? tr("Costs: the instance's own")
                 : tr("Costs: %1 measured, %2 imported, %3 modelled").arg(c.measured).arg(c.imported).arg(c.modelled);
  costs_->setText(line);
  profileCosts_->setText(tr("<b>Profiles</b> &nbsp; %1")
                             .arg(!session_->hasModel()          ? tr("(open a model first)")
                                  : instance                     ? tr("none: a task graph brings its own costs")
                                  : session_->profiles().empty() ? tr("none: all costs are modelled")
                                                                 : line.toHtmlEscaped()));
  // Profiles time an ONNX model's operators on a platform's devices: an instance has neither.
  const QString profileWhy = session_->instanceReason(tr("A profile"));
  for (QPushButton* b : {loadProfileButton_, importOrtButton_}) b->setEnabled(profileWhy.isEmpty());
  for (QAction* a : {loadProfileAction_, importOrtAction_}) a->setEnabled(profileWhy.isEmpty());
  loadProfileButton_->setToolTip(profileWhy.isEmpty()
                                     ? tr("Load a profile measured by Profile on this machine or partex-cli profile")
                                     : profileWhy);
  importOrtButton_->setToolTip(
      profileWhy.isEmpty() ? tr("Import an ONNX Runtime profiling JSON as the times of one device") : profileWhy);
  const int keep = profileList_->currentRow();
  profileList_->clear();
  for (const auto& p : session_->profiles()) {
    const bool ort = p.kind == LoadedProfile::Kind::OrtImport;
    const QString devices = QString::fromStdString(join(p.deviceIds(), ", "));
    auto* item = new QListWidgetItem(
        ort ? tr("%1  (imported, ONNX Runtime%2, as %3: %4 times)")
                  .arg(QString::fromStdString(p.fileName()),
                       p.provider.empty() ? QString() : QStringLiteral(" ") + QString::fromStdString(p.provider),
                       devices)
                  .arg(p.report.opsApplied)
            : tr("%1  (%2 on %3: %4 times)")
                  .arg(QString::fromStdString(p.fileName()), p.profile.imported ? tr("imported") : tr("measured"),
                       devices)
                  .arg(p.report.opsApplied),
        profileList_);
    QString tip = QString::fromStdString(p.path) + QLatin1Char('\n') + QString::fromStdString(applySummary(p));
    if (!p.profile.measuredAt.empty() || !p.profile.machine.empty())
      tip += QLatin1Char('\n') +
             tr("Measured %1 on %2 (%3 %4)")
                 .arg(QString::fromStdString(p.profile.measuredAt), QString::fromStdString(p.profile.machine),
                      QString::fromStdString(p.profile.backendName), QString::fromStdString(p.profile.backendVersion));
    item->setToolTip(tip);
  }
  if (keep >= 0 && keep < profileList_->count()) profileList_->setCurrentRow(keep);
  const int rows = std::min(profileList_->count(), 4);
  profileList_->setVisible(rows > 0);
  if (rows > 0)
    profileList_->setFixedHeight(rows * profileList_->sizeHintForRow(0) + 2 * profileList_->frameWidth() + 2);
  removeProfileButton_->setEnabled(profileList_->currentRow() >= 0);
  const QString why = profilingUnavailableReason();
  profileAction_->setEnabled(why.isEmpty() && !profileJobs_.isRunning());
  profileAction_->setToolTip(why.isEmpty() ? tr("Measure every operator on this computer's cores (%1) and load the "
                                                "profile")
                                                 .arg(profilableDevices().join(QStringLiteral(", ")))
                                           : why);
  profileAction_->setStatusTip(profileAction_->toolTip());
}

Status MainWindow::loadProfile(const QString& path) {
  auto r = session_->addProfile(path);
  if (!r) {
    showError(QString::fromStdString(r.message()));
    return r.status();
  }
  return {};
}

Status MainWindow::importOrtProfile(const QString& path, const QString& device, const QString& provider) {
  auto r = session_->addOrtImport(path, device, provider);
  if (!r) {
    showError(QString::fromStdString(r.message()));
    return r.status();
  }
  return {};
}

Status MainWindow::removeProfile(int index) {
  auto st = session_->removeProfile(index);
  if (!st) showError(QString::fromStdString(st.message()));
  return st;
}

/// The folder of the current model, where profiles are looked for and saved first.
static QString modelFolder(const Session& s) {
  return s.model() ? QFileInfo(QString::fromStdString(s.model()->path)).absolutePath() : QString();
}

void MainWindow::chooseProfile() {
  if (!session_->hasModel()) {
    showError(tr("Open a model first: a profile applies to the model it was measured on"));
    return;
  }
  if (session_->isInstance()) {
    showError(session_->instanceReason(tr("A profile")));
    return;
  }
  const QString path = QFileDialog::getOpenFileName(this, tr("Load profile"), modelFolder(*session_),
                                                    tr("Partex profiles (*.json);;All files (*)"));
  if (!path.isEmpty()) (void)loadProfile(path);
}

void MainWindow::chooseOrtProfile() {
  if (!session_->hasModel()) {
    showError(tr("Open a model first: the imported times apply to its operators"));
    return;
  }
  if (session_->isInstance()) {
    showError(session_->instanceReason(tr("An ONNX Runtime import")));
    return;
  }
  const QString path = QFileDialog::getOpenFileName(this, tr("Import ONNX Runtime profile"), modelFolder(*session_),
                                                    tr("ONNX Runtime profiling JSON (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  QStringList devices;
  for (int d = 0; d < session_->numDevices(); ++d) devices << session_->deviceLabel(d);
  bool ok = false;
  const QString device =
      QInputDialog::getItem(this, tr("Import ONNX Runtime profile"),
                            tr("%1: which device of %2 were these times measured on?")
                                .arg(QFileInfo(path).fileName(), QString::fromStdString(session_->platform().name)),
                            devices, 0, false, &ok);
  if (!ok || device.isEmpty()) return;
  // A trace with several execution providers: ask which one's kernels to keep.
  OrtImportInfo info;
  auto probe = loadOrtProfileFile(path.toStdString(), device.toStdString(), "", &info);
  if (!probe) {
    showError(QString::fromStdString(probe.message()));
    return;
  }
  QString provider;
  if (info.providers.size() > 1) {
    QStringList names{tr("All providers")};
    for (const auto& [name, n] : info.providers) names << QString::fromStdString(name);
    const QString pick = QInputDialog::getItem(this, tr("Import ONNX Runtime profile"),
                                               tr("The trace holds kernels of several execution providers. Keep:"),
                                               names, 0, false, &ok);
    if (!ok) return;
    if (pick != names.first()) provider = pick;
  }
  (void)importOrtProfile(path, device, provider);
}

const Backend* MainWindow::machineBackend() {
  if (!backends_) {
    backends_ = std::make_unique<BackendRegistry>();
    registerBuiltinBackends(*backends_);
  }
  // Every backend of this machine: the CPU, and the GPU where there is one (backends/cuda).
  return backends_->find("auto");
}

QStringList MainWindow::profilableDevices() {
  QStringList out;
  if (!session_->hasModel()) return out;
  const Backend* backend = machineBackend();
  if (!backend) return out;
  const auto devs = backend->devices();
  for (const auto& d : session_->platform().devices)
    if (std::any_of(devs.begin(), devs.end(), [&](const BackendDevice& b) { return b.id == d.id; }))
      out << QString::fromStdString(d.id);
  return out;
}

QString MainWindow::profilingUnavailableReason() {
  if (!session_->hasModel()) return tr("Open a model first");
  if (session_->isInstance()) return session_->instanceReason(tr("Profiling on this machine"));
  if (session_->loading()) return tr("Wait until the model has loaded");
  // Only this computer's platform describes the cores the CPU backend measures: the times of a
  // core0 on a platform file would be this machine's, not that platform's.
  if (session_->platform().name != "this-machine")
    return tr("Profiling measures this computer: choose the this-machine platform (now %1)")
        .arg(QString::fromStdString(session_->platform().name));
  if (profilableDevices().isEmpty()) return tr("No device of this platform is one this machine's backends run on");
  return {};
}

void MainWindow::profileWithDialog() {
  (void)startProfiling();
}

bool MainWindow::profilingRunning() const {
  return profileJobs_.isRunning();
}

void MainWindow::cancelProfiling() {
  profileJobs_.stop();
}

Status MainWindow::startProfiling(const QString& savePath, int reps, int warmup) {
  if (profileJobs_.isRunning()) return makeError("the profiler is already running");
  const QString why = profilingUnavailableReason();
  if (!why.isEmpty()) {
    showError(tr("Cannot profile: %1").arg(why));
    return makeError("cannot profile: ", why.toStdString());
  }
  const Backend* backend = machineBackend();
  auto model = session_->modelPtr();
  ProfilerOptions o;
  // In context, as partex-cli profile does by default: these times predict whole runs best.
  o.method = ProfilerOptions::Method::InContext;
  for (const auto& d : profilableDevices()) o.devices.push_back(d.toStdString());
  o.reps = std::max(1, reps);
  o.warmup = std::max(0, warmup);
  profileSavePath_ = savePath;
  const QString file = QFileInfo(QString::fromStdString(model->path)).fileName();
  const QString what = tr("Profiling %1 on %2 (%3 timed runs per operator)...")
                           .arg(file, profilableDevices().join(QStringLiteral(", ")))
                           .arg(o.reps);
  if (dialogsEnabled_) {
    auto* dlg = new QProgressDialog(what, tr("Cancel"), 0, 1000, this);
    dlg->setWindowTitle(tr("Profile on this machine"));
    dlg->setWindowModality(Qt::WindowModal);
    dlg->setMinimumDuration(0);
    dlg->setAutoClose(false);
    dlg->setAutoReset(false);
    dlg->setValue(0);
    connect(dlg, &QProgressDialog::canceled, this, [this] { cancelProfiling(); });
    profileDialog_ = dlg;
  }
  // Progress comes from the profiling threads: posted to the window, at most every 50 ms.
  QPointer<MainWindow> self(this);
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  const QString head = tr("Profiling %1 (%2 timed runs per operator)").arg(file).arg(o.reps);
  o.progress = [self, last, head](int done, int total, const std::string& step) {
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(50) && done < total) return;
    *last = now;
    if (!self) return;
    const QString text = head + QLatin1Char('\n') + QString::fromStdString(step);
    QMetaObject::invokeMethod(
        self.data(),
        [self, done, total, text] {
          if (!self || !self->profileDialog_) return;
          self->profileDialog_->setMaximum(std::max(1, total));
          self->profileDialog_->setValue(std::min(done, std::max(1, total) - 1));  // 100 % closes nothing
          self->profileDialog_->setLabelText(text);
        },
        Qt::QueuedConnection);
  };
  profileJobs_.start(
      [model, backend, o](const std::atomic<bool>& stop) {
        ProfilerOptions po = o;
        po.cancel = &stop;
        ProfileRun run;
        run.profile = profileModel(model->graph, *backend, po, &run.info);
        run.cancelled = stop.load();
        return run;
      },
      [this](ProfileRun run) { onProfiled(std::move(run)); });
  progress_->show();
  statusBar()->showMessage(what);
  updateProfiles();  // disables the action while it runs
  return {};
}

void MainWindow::onProfiled(ProfileRun run) {
  progress_->hide();
  if (profileDialog_) {
    profileDialog_->close();
    profileDialog_->deleteLater();
  }
  const QString savePath = profileSavePath_;
  profileSavePath_.clear();
  updateProfiles();
  auto finish = [this](bool ok, const QString& msg) {
    statusBar()->showMessage(msg, 10000);
    emit profilingFinished(ok, msg);
  };
  if (run.cancelled) return finish(false, tr("Profiling cancelled"));
  const LoadedModel* m = session_->model();
  if (!run.profile) {
    const QString msg = tr("Profiling failed: %1").arg(QString::fromStdString(run.profile.message()));
    showError(msg);
    return finish(false, msg);
  }
  if (!m || m->graph.graphSha256 != run.profile->modelSha256)
    return finish(false, tr("Profiling finished, but another model was opened meanwhile: the profile is discarded"));
  QString path = savePath;
  if (path.isEmpty()) {
    const QFileInfo mi(QString::fromStdString(m->path));
    const QString suggested = mi.absoluteDir().filePath(mi.completeBaseName() + QStringLiteral(".profile.json"));
    path = dialogsEnabled_ ? QFileDialog::getSaveFileName(this, tr("Save the measured profile"), suggested,
                                                          tr("Partex profiles (*.json);;All files (*)"))
                           : suggested;
    if (path.isEmpty()) return finish(false, tr("The measured profile was not saved, so it is not loaded"));
  }
  if (auto st = saveProfile(path.toStdString(), *run.profile); !st) {
    const QString msg = QString::fromStdString(namingFile(path, st).message());
    showError(msg);
    return finish(false, msg);
  }
  if (auto st = loadProfile(path); !st) return finish(false, QString::fromStdString(st.message()));
  QString done = tr("Measured %1 kernel runs in %2 s, saved %3 and loaded it")
                     .arg(run.info.measurements)
                     .arg(run.info.seconds, 0, 'f', 1)
                     .arg(QFileInfo(path).fileName());
  // Disturbed runs (other programs took the CPUs) are discarded and repeated by the profiler; say so,
  // and say when some could not be avoided, as partex-cli profile does.
  if (run.info.disturbedRunsDiscarded > 0)
    done += tr("; %1 disturbed runs discarded and repeated").arg(run.info.disturbedRunsDiscarded);
  for (const auto& note : run.info.notes) done += QStringLiteral("; ") + QString::fromStdString(note);
  finish(true, done);
}

}  // namespace partex::gui
