// partex: the Qt front end.
// `partex [MODEL] [--dim NAME=VALUE]... [--platform P] [--algo A] [--screenshot FILE]`.
// Without a model it opens the bundled example (a generated ResNet-18).
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <QTimer>

#include <cstdio>

#include "gui/mainwindow.h"
#include "onnx/generator.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("Partex"));
  QApplication::setOrganizationName(QStringLiteral("Partex"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Partition explorer for deep-learning models on heterogeneous processors"));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption dimOpt(QStringLiteral("dim"),
                            QStringLiteral("Bind a symbolic input dimension (NAME=VALUE or INPUT:AXIS=VALUE)."),
                            QStringLiteral("binding"));
  QCommandLineOption shotOpt(QStringLiteral("screenshot"),
                             QStringLiteral("Save a screenshot of the window after loading, then quit."),
                             QStringLiteral("file"));
  QCommandLineOption platOpt(QStringLiteral("platform"),
                             QStringLiteral("Platform preset or file (default mobile-soc)."),
                             QStringLiteral("platform"));
  QCommandLineOption algoOpt(QStringLiteral("algo"),
                             QStringLiteral("Run this scheduler once the model is loaded (see partex-cli algos)."),
                             QStringLiteral("algorithm"));
  parser.addOption(dimOpt);
  parser.addOption(shotOpt);
  parser.addOption(platOpt);
  parser.addOption(algoOpt);
  parser.addPositionalArgument(QStringLiteral("model"), QStringLiteral("ONNX model to open"));
  parser.process(app);

  QString model = parser.positionalArguments().value(0);
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

  partex::gui::MainWindow w;
  if (parser.isSet(platOpt)) w.setPlatform(parser.value(platOpt));
  const QString shot = parser.value(shotOpt);
  const QString algo = parser.value(algoOpt);
  if (shot.isEmpty() && !algo.isEmpty()) {
    QObject::connect(&w, &partex::gui::MainWindow::modelLoaded, &w, [&w, algo](bool ok) {
      if (ok) w.runScheduler(algo);
    });
  }
  if (!shot.isEmpty()) {
    w.setDialogsEnabled(false);
    QObject::connect(&w, &partex::gui::MainWindow::modelLoaded, &w, [&w, shot, algo](bool ok) {
      if (ok && !algo.isEmpty()) w.runScheduler(algo);
      // Wait until the layout and the scheduler are done (polled: either may finish first), then grab.
      auto* poll = new QTimer(&w);
      QObject::connect(poll, &QTimer::timeout, &w, [&w, shot, ok, poll] {
        if (ok && w.busy()) return;
        poll->stop();
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
  w.openModel(model, parser.values(dimOpt));
  return QApplication::exec();
}
