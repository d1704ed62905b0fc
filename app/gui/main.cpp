// partex: the Qt front end.
// `partex [MODEL|TASKGRAPH.json|PROJECT.partex] [--dim NAME=VALUE]... [--platform P] [--profile FILE]...
//  [--algo A] [--screenshot FILE]`. A task graph (Partex, SAGA or WfCommons JSON) brings its own devices:
// --platform is then ignored, with a note in the status bar.
// Without a model it offers to recover an autosave, else opens the bundled example (a generated ResNet-18).
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QStandardPaths>
#include <QTimer>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "graph/graphview.h"
#include "gui/mainwindow.h"
#include "gen/generator.h"
#include "profile/calibration.h"
#include "session/session.h"
#include "sim/stream.h"

namespace {

void setIdentity() {
  QCoreApplication::setApplicationName(QStringLiteral("Partex"));
  QCoreApplication::setOrganizationName(QStringLiteral("Partex"));
  QCoreApplication::setApplicationVersion(QStringLiteral("0.1.0"));
}

/// The command line's options, also built for --help without a display.
struct Options {
  QCommandLineOption dim, shot, platform, algo, select, profile, critical, compare, stream, objective;
};

Options addOptions(QCommandLineParser& parser) {
  parser.setApplicationDescription(
      QStringLiteral("Partition explorer for deep-learning models on heterogeneous processors"));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption dimOpt(QStringLiteral("dim"),
                                  QStringLiteral("Bind a symbolic input dimension (NAME=VALUE or INPUT:AXIS=VALUE)."),
                                  QStringLiteral("binding"));
  const QCommandLineOption shotOpt(QStringLiteral("screenshot"),
                                   QStringLiteral("Save a screenshot of the window after loading, then quit."),
                                   QStringLiteral("file"));
  const QCommandLineOption platOpt(QStringLiteral("platform"),
                                   QStringLiteral("Platform preset or file (default mobile-soc)."),
                                   QStringLiteral("platform"));
  const QCommandLineOption algoOpt(
      QStringLiteral("algo"), QStringLiteral("Run this scheduler once the model is loaded (see partex-cli algos)."),
      QStringLiteral("algorithm"));
  const QCommandLineOption selectOpt(
      QStringLiteral("select"),
      QStringLiteral("Select and centre the first operator whose name or type contains TEXT."), QStringLiteral("text"));
  const QCommandLineOption profileOpt(
      QStringLiteral("profile"),
      QStringLiteral("Apply a measured profile (partex-cli profile) once loaded; repeatable."), QStringLiteral("file"));
  const QCommandLineOption criticalOpt(QStringLiteral("critical-path"), QStringLiteral("Show the critical path."));
  const QCommandLineOption compareOpt(QStringLiteral("compare"),
                                      QStringLiteral("Compare these schedulers (comma separated) once loaded."),
                                      QStringLiteral("algorithms"));
  parser.addOption(profileOpt);
  parser.addOption(compareOpt);
  parser.addOption(selectOpt);
  parser.addOption(criticalOpt);
  const QCommandLineOption streamOpt(QStringLiteral("stream"),
                                     QStringLiteral("Show the Gantt chart as a stream of inferences through the plan."));
  parser.addOption(streamOpt);
  const QCommandLineOption objectiveOpt(
      QStringLiteral("objective"),
      QStringLiteral("What --algo, --compare and the Scheduler dock optimise: latency (default) or throughput (a "
                     "stream of inferences; shows the stream view), as partex-cli --objective."),
      QStringLiteral("objective"));
  parser.addOption(objectiveOpt);
  parser.addOption(dimOpt);
  parser.addOption(shotOpt);
  parser.addOption(platOpt);
  parser.addOption(algoOpt);
  parser.addPositionalArgument(
      QStringLiteral("model"),
      QStringLiteral("ONNX model, project (.partex), task graph (Partex, SAGA or WfCommons JSON) or workload of "
                     "several models (JSON, as partex-cli workload) to open"));
  return {dimOpt, shotOpt, platOpt, algoOpt, selectOpt, profileOpt, criticalOpt, compareOpt, streamOpt, objectiveOpt};
}

bool wantsHelpOrVersion(const std::vector<char*>& args) {
  for (size_t i = 1; i < args.size() && args[i]; ++i) {
    const std::string a = args[i];
    if (a == "--") break;
    if (a == "-h" || a == "--help" || a == "-?" || a == "--help-all" || a == "-v" || a == "--version") return true;
  }
  return false;
}

bool envSet(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

/// Why no window can open ("" when one can): on X11/Wayland systems, no QT_QPA_PLATFORM and neither
/// DISPLAY nor WAYLAND_DISPLAY. Qt would abort in its platform plugin with a page of text.
std::string missingDisplay() {
#if defined(Q_OS_UNIX) && !defined(Q_OS_MACOS)
  if (envSet("QT_QPA_PLATFORM") || envSet("DISPLAY") || envSet("WAYLAND_DISPLAY")) return {};
  return "no display (DISPLAY and WAYLAND_DISPLAY are unset): run it in a desktop session, under xvfb-run, "
         "or with QT_QPA_PLATFORM=offscreen (with --screenshot FILE); partex --help lists the options";
#else
  return {};
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // Qt's own -platform/--platform option picks the windowing plugin: take ours out of argv first,
  // so that `--platform mobile-soc` means the device platform, as in partex-cli.
  QString devicePlatform;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--platform" || a == "-platform") && i + 1 < argc) {
      devicePlatform = QString::fromLocal8Bit(argv[++i]);
      continue;
    }
    if (a.rfind("--platform=", 0) == 0) {
      devicePlatform = QString::fromLocal8Bit(argv[i] + 11);
      continue;
    }
    args.push_back(argv[i]);
  }
  int qtArgc = static_cast<int>(args.size());
  args.push_back(nullptr);
  // --help and --version print and exit without a display: they are parsed under a QCoreApplication,
  // which needs no windowing plugin; a QApplication without a display would abort in the plugin.
  if (wantsHelpOrVersion(args)) {
    QCoreApplication core(qtArgc, args.data());
    setIdentity();
    QCommandLineParser parser;
    (void)addOptions(parser);
    parser.process(core);  // prints and exits
    return 0;
  }
  if (const std::string why = missingDisplay(); !why.empty()) {
    std::fprintf(stderr, "partex: %s\n", why.c_str());
    return 2;
  }
  QApplication app(qtArgc, args.data());
  setIdentity();
  // The this-machine platform is calibrated on the real CPU kernels when first loaded (cached per machine).
  partex::installThisMachineCalibration(partex::registerBuiltinBackends);

  QCommandLineParser parser;
  const Options o = addOptions(parser);
  const QCommandLineOption &dimOpt = o.dim, &shotOpt = o.shot, &algoOpt = o.algo, &selectOpt = o.select,
                           &profileOpt = o.profile, &criticalOpt = o.critical, &compareOpt = o.compare;
  parser.process(app);

  QString model = parser.positionalArguments().value(0);
  const bool explicitModel = !model.isEmpty();
  if (model.isEmpty()) {
    // First start: the bundled example, generated in code (no model files ship with Partex).
    QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/examples");
    QDir().mkpath(dir);
    model = dir + QStringLiteral("/resnet18.onnx");
    if (!QFileInfo::exists(model)) {
      partex::GenSpec spec;
      spec.kind = "resnet18";
      auto st = partex::generateModelFile(spec, model.toStdString());
      if (!st) std::fprintf(stderr, "partex: cannot write the bundled example: %s\n", st.message().c_str());
    }
  }

  partex::Objective objective = partex::Objective::Latency;
  if (parser.isSet(o.objective) && !partex::parseObjective(parser.value(o.objective).toStdString(), objective)) {
    std::fprintf(stderr, "partex: --objective %s: expected latency or throughput\n",
                 qPrintable(parser.value(o.objective)));
    return 2;
  }
  partex::gui::MainWindow w;
  if (!devicePlatform.isEmpty()) w.setPlatform(devicePlatform);
  if (objective != partex::Objective::Latency) w.setObjective(objective);
  if (parser.isSet(criticalOpt)) w.setShowCriticalPath(true);
  if (parser.isSet(o.stream)) w.setShowStream(true);
  const QString shot = parser.value(shotOpt);
  // Profiles go on first: the scheduler, the comparison and the screenshot below see measured costs.
  const QStringList profiles = parser.values(profileOpt);
  const QString algo = parser.value(algoOpt);
  if (!profiles.isEmpty())
    QObject::connect(&w, &partex::gui::MainWindow::modelLoaded, &w, [&w, profiles, algo](bool ok) {
      if (!ok) return;
      bool applied = false;
      for (const auto& f : profiles) applied = w.loadProfile(f).isOk() || applied;
      // The initial HEFT plan was made on the modelled costs: plan again on the measured ones (an
      // --algo below does that itself).
      if (applied && algo.isEmpty()) w.runScheduler(QStringLiteral("heft"));
    });
  const QString select = parser.value(selectOpt);
  const QStringList compare = parser.value(compareOpt).split(QLatin1Char(','), Qt::SkipEmptyParts);
  if (!compare.isEmpty())
    QObject::connect(&w, &partex::gui::MainWindow::modelLoaded, &w, [&w, compare](bool ok) {
      if (ok) w.session()->runCompare(compare);
    });
  QElapsedTimer clock;
  clock.start();
  if (shot.isEmpty() && !algo.isEmpty()) {
    QObject::connect(&w, &partex::gui::MainWindow::modelLoaded, &w, [&w, algo](bool ok) {
      if (ok) w.runScheduler(algo);
    });
  }
  if (!shot.isEmpty()) {
    w.setDialogsEnabled(false);
    QObject::connect(&w, &partex::gui::MainWindow::modelLoaded, &w, [&w, shot, algo, select, &clock](bool ok) {
      if (ok)
        std::fprintf(stderr, "partex: loaded %d operators (import, cost table, HEFT) in %lld ms\n",
                     w.session()->numOps(), static_cast<long long>(clock.elapsed()));
      if (ok && !algo.isEmpty()) w.runScheduler(algo);
      // Wait until the layout and the scheduler are done (polled: either may finish first), then grab.
      auto* poll = new QTimer(&w);
      QObject::connect(poll, &QTimer::timeout, &w, [&w, shot, ok, poll, select, &clock] {
        if (ok && w.busy()) return;
        poll->stop();
        if (ok) {
          std::fprintf(stderr, "partex: ready after %lld ms (layout of %s took %.0f ms)\n",
                       static_cast<long long>(clock.elapsed()),
                       w.graphView()->layoutSummary().toLocal8Bit().constData(), w.graphView()->lastLayoutMs());
          if (!select.isEmpty()) w.graphView()->findNext(select);
        }
        QTimer::singleShot(300, &w, [&w, shot, ok] {
          w.grab().save(shot);
          if (!ok) std::fprintf(stderr, "partex: %s\n", w.lastError().toLocal8Bit().constData());
          QApplication::exit(ok ? 0 : 2);
        });
      });
      poll->start(200);
    });
  }
  w.show();
  // Unsaved work from a session that did not exit cleanly comes first, also when a model was named on
  // the command line: the new session's first autosave would otherwise overwrite it unseen.
  if (shot.isEmpty() && w.checkRecovery(explicitModel ? model : QString())) return QApplication::exec();
  w.openModel(model, parser.values(dimOpt));
  return QApplication::exec();
}
