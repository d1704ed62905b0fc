// libpartex_render_images.so: the images of `partex-cli render` (render_images.h). The Gantt chart is
// the painting the GUI's GanttView shows (GanttChart, Qt GUI without widgets, offscreen); the graph is
// Graphviz's dot layout of planToDot's text, recoloured with the GUI's palette.
#include <QByteArray>
#include <QGuiApplication>

#include <graphviz/gvc.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/render_images.h"
#include "gantt/ganttchart.h"
#include "session/palette.h"
#include "support/files.h"

namespace partex::cli {

namespace {

/// Graphviz error messages of the current call, joined into one line.
std::string& graphvizErrors() {
  static std::string s;
  return s;
}

int collectGraphvizError(char* msg) {
  std::string m = msg ? msg : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.pop_back();
  if (!m.empty()) graphvizErrors() += (graphvizErrors().empty() ? "" : "; ") + m;
  return 0;
}

/// Owns a Graphviz context and graph; frees the layout, graph and context in order.
class GraphvizJob {
 public:
  GraphvizJob() : gvc_(gvContext()) {}
  ~GraphvizJob() {
    if (g_ && laidOut_) gvFreeLayout(gvc_, g_);
    if (g_) agclose(g_);
    if (gvc_) gvFreeContext(gvc_);
  }
  GraphvizJob(const GraphvizJob&) = delete;
  GraphvizJob& operator=(const GraphvizJob&) = delete;

  /// Parses DOT text, recolours nodes n<task> and legend_<device> and renders it as `format`.
  Result<std::string> render(const std::string& dot, const std::vector<int>& taskDevice,
                             const std::vector<QColor>& colors, const std::string& format) {
    graphvizErrors().clear();
    agseterr(AGERR);
    agseterrf(&collectGraphvizError);
    if (!gvc_) return Error{"cannot start Graphviz"};
    g_ = agmemread(dot.c_str());
    if (!g_) return Error{"Graphviz cannot read the graph: " + graphvizErrors()};
    for (Agnode_t* n = agfstnode(g_); n; n = agnxtnode(g_, n)) {
      const std::string name = agnameof(n);
      int device = -1;
      if (name.rfind("legend_", 0) == 0) {
        device = std::atoi(name.c_str() + 7);
      } else if (name.size() > 1 && name[0] == 'n') {
        const int v = std::atoi(name.c_str() + 1);
        if (v >= 0 && v < static_cast<int>(taskDevice.size())) device = taskDevice[static_cast<size_t>(v)];
      }
      if (device < 0 || device >= static_cast<int>(colors.size())) continue;
      const QColor c = colors[static_cast<size_t>(device)];
      std::string fill = c.name().toStdString(), text = gui::textColorOn(c).name().toStdString();
      std::string empty;
      agsafeset(n, const_cast<char*>("fillcolor"), fill.data(), empty.data());
      agsafeset(n, const_cast<char*>("fontcolor"), text.data(), empty.data());
    }
    if (gvLayout(gvc_, g_, "dot") != 0) return Error{"Graphviz layout failed: " + graphvizErrors()};
    laidOut_ = true;
    char* data = nullptr;
    unsigned int len = 0;
    if (gvRenderData(gvc_, g_, format.c_str(), &data, &len) != 0 || !data) {
      if (data) gvFreeRenderData(data);
      return Error{"Graphviz cannot render " + format + ": " + graphvizErrors()};
    }
    std::string out(data, len);
    gvFreeRenderData(data);
    return out;
  }

 private:
  GVC_t* gvc_ = nullptr;
  Agraph_t* g_ = nullptr;
  bool laidOut_ = false;
};

/// Removes the files this call wrote when a later step fails, so that a failed render leaves nothing.
struct Written {
  std::vector<std::string> paths;
  void rollback() const {
    for (const auto& p : paths) std::remove(p.c_str());
  }
};

int failed(std::string* error, const std::string& message, const Written& written) {
  written.rollback();
  if (error) *error = message;
  return 2;
}

}  // namespace

}  // namespace partex::cli

extern "C" __attribute__((visibility("default"))) int partex_render_images(const partex::cli::RenderImagesJob* job,
                                                                          std::string* error,
                                                                          std::vector<std::string>* written) {
  using namespace partex;
  using namespace partex::cli;
  Written done;
  if (!job || !job->table || !job->timeline) return failed(error, "render: nothing to draw", done);
  // Qt only from here on, headless. Qt's own chatter (e.g. "XDG_RUNTIME_DIR not set") would break
  // the one-line error contract on stderr: only critical messages get through, as one line each.
  qputenv("QT_QPA_PLATFORM", "offscreen");
  qInstallMessageHandler([](QtMsgType type, const QMessageLogContext&, const QString& msg) {
    if (type == QtCriticalMsg || type == QtFatalMsg)
      std::cerr << "partex-cli: Qt: " << msg.simplified().toStdString() << "\n";
  });
  static int argc = 1;
  static char arg0[] = "partex-cli";
  static char* argv[] = {arg0, nullptr};
  QGuiApplication qapp(argc, argv);
  std::vector<QColor> colors;
  for (size_t d = 0; d < job->deviceColors.size(); ++d)
    colors.push_back(gui::deviceColor(static_cast<int>(d), job->deviceColors[d]));

  if (!job->graphPath.empty()) {
    GraphvizJob gv;
    auto image = gv.render(job->dot, job->taskDevice, colors, imageType(job->graphPath));
    if (!image) return failed(error, job->graphPath + ": " + image.message(), done);
    if (Status st = writeFileAtomic(job->graphPath, *image); !st) return failed(error, st.message(), done);
    done.paths.push_back(job->graphPath);
  }
  if (!job->ganttPath.empty()) {
    gui::GanttChart view;
    view.setTimeline(job->table, *job->timeline, colors, job->fused);
    view.setTitle(QString::fromStdString(job->title));
    if (job->referenceUs > 0) {
      view.setReferenceLabel(QString::fromStdString(job->referenceLabel));
      view.setReferenceMakespan(job->referenceUs);
    }
    view.setExportWidth(job->width);
    if (Status st = view.saveImage(QString::fromStdString(job->ganttPath)); !st)
      return failed(error, st.message(), done);
    done.paths.push_back(job->ganttPath);
  }
  if (written) *written = done.paths;
  return 0;
}
