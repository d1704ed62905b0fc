// The LLM tab (issue 26, item 6, the GUI half of `partex-cli llm`) and the graph of a language model:
//  - llmModelRef: the reference the job takes for what the session opened;
//  - on a small MoE GGUF file written by the project's writer (qwen3moe, 4 layers, 4 experts), with a GPU
//    too small for all of it: the argument string the panel shows is core's for the same job, and read
//    back with the -ot importer it gives the placement shown, every tensor covered; Copy puts it on the
//    clipboard; the rules table has llama.cpp's four rules;
//  - in the main window: the placement is applied to the graph (each expert tensor's reader on the
//    tensor's device), the memory view unfolds and its GPU lane holds the tensors placed there;
//  - the graph opens by layer, and a layer, expanded, shows its routed experts as one box (hand count of
//    the generator's expert operators).
#include <QtTest>

#include <QClipboard>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>

#include <regex>
#include <set>

#include "gguf/ggufwriter.h"
#include "graph/graphscene.h"
#include "graph/graphview.h"
#include "gui/llmpanel.h"
#include "gui/mainwindow.h"
#include "mainwindowtestutil.h"
#include "platform/platform.h"
#include "problem/llmjob.h"
#include "sched/llamarules.h"
#include "sched/llmjob.h"
#include "session/session.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

namespace {

constexpr int kLayers = 4;
/// The GPU's memory: 0.06 GiB, less than the F32 model's weights (about 107 MB, most of it experts);
/// with it the fastest placement splits the model (as tst_llmjob's cliRoundTrip finds on the same shape).
constexpr int64_t kGpuBytes = 64424509;

GenSpec smallMoe() {
  GenSpec s;
  s.kind = "moe";
  s.layers = kLayers;
  s.hidden = 512;
  s.heads = 8;
  s.kvHeads = 2;
  s.experts = 4;
  s.expertsUsed = 2;
  s.expertFfn = 1024;
  s.vocab = 1000;
  return s;
}

Platform smallGpu() {
  auto p = loadPreset("desktop-rtx4070");
  if (!p) qFatal("preset: %s", p.message().c_str());
  for (auto& d : p->devices)
    if (d.kind == DeviceKind::Gpu) d.memCapacityBytes = kGpuBytes;
  p->name = "rtx4070-small";
  return *p;
}

/// -ngl N and the -ot string of a llama.cpp argument string ("-ngl 3 -ot \"...\" --no-op-offload").
bool readArgs(const std::string& text, int& ngl, std::string& ot, bool& opOffload) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("-ngl ([0-9]+)"))) return false;
  ngl = std::stoi(m[1]);
  ot.clear();
  if (std::regex_search(text, m, std::regex("-ot \"([^\"]*)\""))) ot = m[1];
  opOffload = text.find("--no-op-offload") == std::string::npos;
  return true;
}

}  // namespace

class TestGuiLlm : public QObject {
  Q_OBJECT

  QString gguf_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().clear();
    gguf_ = QString::fromStdString(test::tempDir() + "/gui-moe.gguf");
    const Status st = ggufForSpec(smallMoe(), "qwen3moe", QuantType::F32).write(gguf_.toStdString());
    QVERIFY2(st, st.message().c_str());
  }

  void modelRef() {
    QCOMPARE(llmModelRef("/m/x.gguf"), std::string("/m/x.gguf"));
    QCOMPARE(llmModelRef("/m/x.gguf?phase=decode&seq=64"), std::string("/m/x.gguf"));
    QCOMPARE(llmModelRef("gen:moe?preset=gpt-oss-20b&phase=decode&seq=9&quant=mxfp4"),
             std::string("gen:moe?preset=gpt-oss-20b&quant=mxfp4"));
    QCOMPARE(llmModelRef("gen:llama?phase=prefill"), std::string("gen:llama"));
    QCOMPARE(llmModelRef("/m/x.onnx"), std::string());
    QCOMPARE(llmModelRef("gen:resnet18"), std::string());
    QCOMPARE(llmModelRef(""), std::string());
  }

  /// The panel alone: core's arguments for the job, read back to the placement; Copy; the rules.
  void panelShowsCoresArguments() {
    LlmPanel panel;
    panel.setPrompt(64);
    panel.setGenerate(16);
    panel.setTimeLimit(20);  // the search ends by itself on this model: the placement is deterministic
    QVERIFY(!panel.setModel("/m/x.onnx", smallGpu()));
    QVERIFY(!panel.analyseButton()->isEnabled());
    QVERIFY(panel.setModel(gguf_ + "?phase=decode&seq=8", smallGpu()));
    QSignalSpy done(&panel, &LlmPanel::finished);
    panel.analyse();
    QVERIFY(done.wait(120000));
    QVERIFY2(done.first().first().toBool(), qPrintable(panel.statusLabel()->text()));
    const LlmReport* r = panel.report();
    QVERIFY(r);
    QVERIFY(!r->best.timeLimitReached);
    QCOMPARE(r->layers, kLayers);
    QVERIFY(r->experts);
    QCOMPARE(r->gpuCapacity, kGpuBytes);

    // The same job by core's calls, as `partex-cli llm` makes them: the same arguments.
    LlmJobSpec spec;
    spec.model = gguf_.toStdString();
    spec.prompt = 64;
    spec.generate = 16;
    auto tables = loadLlmJobTables(spec, smallGpu());
    QVERIFY2(tables, tables.message().c_str());
    auto job = LlmJob::make(std::move(tables).value());
    QVERIFY2(job, job.message().c_str());
    const auto rules = evaluateLlmRules(*job);
    auto best = bestLlmJob(*job, rules, Deadline::in(20));
    QVERIFY2(best, best.message().c_str());
    const std::string args = job->args(best->single).text;
    QCOMPARE(panel.argsEdit()->text().toStdString(), args);

    // Read back with the -ot importer on the last decode table: the placement shown, every tensor, and
    // a GPU too small for the model leaves some of it on the host.
    int ngl = 0;
    std::string ot;
    bool opOffload = true;
    QVERIFY2(readArgs(args, ngl, ot, opOffload), args.c_str());
    const CostTable& t = job->argTable();
    const LlamaTensors m = llamaTensors(t);
    TensorPlacement back = nglPlacement(m, ngl, job->accel(), t.host);
    if (!ot.empty()) {
      auto ov = parseOverrides(t, ot);
      QVERIFY2(ov, ov.message().c_str());
      QVERIFY(applyOverrides(t, m, *ov, back, true));
    }
    std::set<DeviceId> devices;
    int covered = 0;
    for (size_t w = 0; w < m.name.size(); ++w) {
      if (!m.placed(w) || m.cache[w]) continue;
      auto it = r->best.single.tensors.find(m.name[w]);
      QVERIFY2(it != r->best.single.tensors.end(), m.name[w].c_str());
      QCOMPARE(it->second, back[w]);
      devices.insert(back[w]);
      ++covered;
    }
    QCOMPARE(covered, static_cast<int>(r->best.single.tensors.size()));
    QVERIFY2(devices.size() == 2, args.c_str());  // both the GPU and the host hold weights
    QCOMPARE(opOffload, r->best.single.opOffload);

    // Copy.
    QApplication::clipboard()->clear();
    QVERIFY(panel.copyButton()->isEnabled());
    QTest::mouseClick(panel.copyButton(), Qt::LeftButton);
    QCOMPARE(QApplication::clipboard()->text().toStdString(), args);

    // llama.cpp's four rules, each row with its arguments (or why it does not apply).
    QTableWidget* tw = panel.rulesTable();
    QCOMPARE(tw->rowCount(), 4);
    QStringList names;
    for (int i = 0; i < 4; ++i) names << tw->item(i, 0)->text();
    QCOMPARE(names, (QStringList{"-ngl", "--n-cpu-moe", "--n-cpu-ffn", "--fit"}));
    QVERIFY2(tw->item(0, 5)->text().startsWith("-ngl "), qPrintable(tw->item(0, 5)->text()));
    QVERIFY2(tw->item(1, 5)->text().contains("--n-cpu-moe"), qPrintable(tw->item(1, 5)->text()));
    // A MoE model without dense FFN tensors: --n-cpu-ffn says why instead of timings.
    QVERIFY(tw->item(2, 1)->text().isEmpty());
    QVERIFY2(tw->item(2, 5)->text().contains("no dense FFN"), qPrintable(tw->item(2, 5)->text()));
    // The summary's prefill and tokens/s are the report's.
    const QString summary = panel.summaryLabel()->text();
    QVERIFY2(summary.contains(QString::number(r->best.singleTime.prefillUs / 1000, 'f', 1) + " ms"), qPrintable(summary));
    QVERIFY2(summary.contains(QString::number(r->best.singleTime.decodeTokensPerS(16), 'f', 2) + " tokens/s"),
             qPrintable(summary));
  }

  /// The main window: opened, the GGUF runs the LLM tab, whose placement colours the graph and fills the
  /// memory view; the graph is by layer, with each layer's experts one box.
  void mainWindowAppliesPlacementAndGroupsExperts() {
    const QString platFile = QString::fromStdString(test::tempDir() + "/rtx4070-small.json");
    {
      QFile f(platFile);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray::fromStdString(platformToJson(smallGpu())));
    }
    MainWindow w;
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resetLayout();
    w.llmPanel()->setPrompt(64);
    w.llmPanel()->setGenerate(16);
    w.llmPanel()->setTimeLimit(20);
    w.setPlatform(platFile);
    QSignalSpy done(w.llmPanel(), &LlmPanel::finished);
    QVERIFY2(test::openAndWait(w, gguf_ + "?phase=decode&seq=64"), qPrintable(w.lastError()));
    QVERIFY(w.dock("llmDock")->isVisible());
    if (done.isEmpty()) QVERIFY(done.wait(120000));
    QVERIFY2(done.last().first().toBool(), qPrintable(w.llmPanel()->statusLabel()->text()));
    QVERIFY(QTest::qWaitFor([&w] { return !w.busy(); }, 60000));
    const LlmReport* r = w.llmPanel()->report();
    QVERIFY(r);

    // Applied: the plan is the placement's, named so; each expert projection runs where its tensor lives.
    Session* s = w.session();
    QCOMPARE(s->state().algorithm, std::string("llama.cpp placement"));
    QVERIFY(w.planTitle().contains("llama.cpp placement"));
    const CostTable& t = *s->table();
    int experts = 0;
    for (size_t w8 = 0; w8 < t.weightNames.size(); ++w8) {
      const std::string& name = t.weightNames[w8];
      if (name.find("_exps.weight") == std::string::npos) continue;
      const DeviceId dev = r->best.single.tensors.at(name);
      for (TaskId v = 0; v < t.numTasks(); ++v)
        for (int32_t k : t.taskWeights[static_cast<size_t>(v)])
          if (static_cast<size_t>(k) == w8) {
            QCOMPARE(s->deviceOf(v), dev);
            ++experts;
          }
    }
    QCOMPARE(experts, 3 * kLayers);  // gate, up and down projections of the routed experts per layer

    // The memory view unfolds on each device's memory; the GPU's weights are the tensors placed there
    // (plus, at most, the shared constants its operators read).
    QVERIFY(!w.memoryFolded());
    const LlamaTensors m = llamaTensors(t);
    int64_t onGpu = 0, others = 0;  // others: constants (they follow their readers) and KV caches (by -ngl)
    for (size_t k = 0; k < m.name.size(); ++k) {
      if (!m.placed(k) || m.cache[k])
        others += t.weightBytes[k];
      else if (r->best.single.tensors.at(m.name[k]) == r->accel)
        onGpu += t.weightBytes[k];
    }
    QVERIFY(onGpu > 0);
    const DeviceMemory& gpu = s->memory()[static_cast<size_t>(r->accel)];
    QVERIFY2(gpu.weights >= onGpu && gpu.weights <= onGpu + others,
             qPrintable(QString("GPU weights %1, placed %2, others %3").arg(gpu.weights).arg(onGpu).arg(others)));
    QVERIFY(gpu.weights < kGpuBytes);

    // By layer: embedding, the four layers and the head, one box each.
    GraphView* g = w.graphView();
    GraphScene* sc = g->graphScene();
    QVERIFY(sc->grouped());
    QCOMPARE(static_cast<int>(sc->display().nodes.size()), kLayers + 2);
    const Grouping& gr = sc->grouping();
    int layer1 = -1, experts1 = -1;
    for (int i = 0; i < gr.size(); ++i) {
      if (gr.names[size_t(i)] == "layers.1") layer1 = i;
      if (gr.names[size_t(i)] == "layers.1.moe") experts1 = i;
    }
    QVERIFY(layer1 >= 0 && experts1 >= 0);
    QCOMPARE(gr.parentOf(experts1), layer1);
    // The generator's routed-expert operators of a layer, by hand (core/gen/gen_llama.cpp): router,
    // router_softmax, topk, gate_exps, up_exps, down_exps, silu_sigmoid, silu, gate_mul, route_weight,
    // weighted, sum.
    QCOMPARE(static_cast<int>(gr.ops[size_t(experts1)].size()), 12);
    // Expanded, layer 1 shows its other operators one by one and its experts as one box.
    QSignalSpy laid(g, &GraphView::layoutReady);
    g->expandGroup(layer1);
    QVERIFY(laid.wait(60000));
    const int layerOps = static_cast<int>(gr.ops[size_t(layer1)].size());
    QCOMPARE(static_cast<int>(sc->display().nodes.size()), (kLayers + 2 - 1) + (layerOps - 12) + 1);
    int expertBoxes = 0;
    for (const auto& n : sc->display().nodes) expertBoxes += n.group == experts1 ? 1 : 0;
    QCOMPARE(expertBoxes, 1);
    // And the experts box opens in turn.
    g->expandGroup(experts1);
    QVERIFY(laid.wait(60000));
    QCOMPARE(static_cast<int>(sc->display().nodes.size()), (kLayers + 2 - 1) + layerOps);
  }
};

QTEST_MAIN(TestGuiLlm)
#include "tst_gui_llm.moc"
