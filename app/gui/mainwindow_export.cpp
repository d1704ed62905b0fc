// MainWindow: exports of the plan, trace, CSV, graph image and Gantt image; each writes atomically
// and returns the error naming the file.
#include "gui/mainwindow.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QStatusBar>
#include <QSvgGenerator>

#include <algorithm>

#include "cost/instances.h"
#include "gantt/ganttview.h"
#include "graph/graphview.h"
#include "gui/fileerrors.h"
#include "plan/exports.h"
#include "plan/planfile.h"

namespace partex::gui {

void MainWindow::exportWithDialog(const QString& title, const QString& filter,
                                  Status (MainWindow::*fn)(const QString&)) {
  if (!session_->hasModel()) {
    showError(tr("Open a model first: there is nothing to export"));
    return;
  }
  QString selected;
  QString path = QFileDialog::getSaveFileName(this, title, QString(), filter, &selected);
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) {  // take the extension from the chosen filter
    const int a = selected.indexOf(QLatin1String("*.")), b = selected.indexOf(QLatin1Char(')'), a);
    if (a >= 0 && b > a) path += selected.mid(a + 1, b - a - 1);
  }
  if (auto st = (this->*fn)(path); !st)
    showError(QString::fromStdString(st.message()));
  else
    statusBar()->showMessage(tr("Exported %1").arg(path), 5000);
}

/// The plan's identity for plan files written from the session; an instance's is the one partex-cli
/// writes for it (the file's hash, kInstancePlatformName).
static PlanIdentity identityOf(const Session& s) {
  const std::string file = QFileInfo(s.sourcePath()).fileName().toStdString();
  if (const LoadedInstance* inst = s.instance()) return PlanIdentity{file, inst->sha256, kInstancePlatformName};
  return PlanIdentity{file, s.model()->graph.graphSha256, s.platform().name};
}

Status MainWindow::exportPlan(const QString& path) {
  if (!session_->hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": no model loaded");
  const LoadedModel* m = session_->model();
  return namingFile(path, savePlan(path.toStdString(), *session_->table(), session_->plan(), session_->timeline(),
                                   identityOf(*session_), m ? &m->graph : nullptr));
}

Status MainWindow::exportTrace(const QString& path) {
  if (!session_->hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": no model loaded");
  const std::string label = session_->plan().algorithm.empty() ? "plan" : session_->plan().algorithm;
  return namingFile(path, saveExport(path.toStdString(), traceJson(*session_->table(), session_->timeline(), label, 1,
                                                                   &session_->fusedKernels())));
}

Status MainWindow::exportCsv(const QString& path) {
  if (!session_->hasModel()) return makeError(QFileInfo(path).fileName().toStdString(), ": no model loaded");
  return namingFile(path, saveExport(path.toStdString(), timelineToCsv(*session_->table(), session_->timeline())));
}

Status MainWindow::exportGraphImage(const QString& path) {
  const std::string name = QFileInfo(path).fileName().toStdString();
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix != QLatin1String("svg") && suffix != QLatin1String("png"))
    return makeError(name, ": unknown image type (use .svg or .png)");
  if (!session_->hasModel()) return makeError(name, ": no model loaded");
  if (graph_->layoutRunning()) return makeError(name, ": the graph is still being laid out");
  QGraphicsScene* scene = graph_->scene();
  const QRectF source = scene->itemsBoundingRect().adjusted(-20, -20, 20, 20);
  if (source.isEmpty()) return makeError(name, ": the graph is empty");
  // Through QSaveFile: written to a temporary file beside the target, renamed on commit.
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return makeError(name, ": ", file.errorString().toStdString());
  if (suffix == QLatin1String("svg")) {
    QSvgGenerator gen;
    gen.setOutputDevice(&file);
    gen.setSize(source.size().toSize());
    gen.setViewBox(QRectF(QPointF(0, 0), source.size()));
    gen.setTitle(session_->isInstance() ? QFileInfo(session_->sourcePath()).fileName()
                                        : QString::fromStdString(session_->platform().name));
    QPainter painter(&gen);
    scene->render(&painter, QRectF(QPointF(0, 0), source.size()), source);
  } else {
    // At most 8,000 pixels on a side (a 10,000-operator graph is far bigger at 1:1).
    const double scale = std::min({2.0, 8000.0 / source.width(), 8000.0 / source.height()});
    QImage img((source.size() * scale).toSize().expandedTo(QSize(1, 1)), QImage::Format_ARGB32_Premultiplied);
    img.fill(Qt::white);
    {
      QPainter painter(&img);
      painter.setRenderHint(QPainter::Antialiasing);
      scene->render(&painter, QRectF(QPointF(0, 0), QSizeF(img.size())), source);
    }
    if (!img.save(&file, "PNG")) return makeError(name, ": cannot encode the PNG image");
  }
  if (!file.commit()) return makeError(name, ": ", file.errorString().toStdString());
  return {};
}

Status MainWindow::exportGanttImage(const QString& path) {
  const std::string name = QFileInfo(path).fileName().toStdString();
  if (!session_->hasModel()) return makeError(name, ": no model loaded");
  if (!gantt_) return makeError(name, ": no Gantt chart in this build");
  return namingFile(path, gantt_->saveImage(path));
}

}  // namespace partex::gui
