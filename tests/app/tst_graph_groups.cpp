// Boxes of the graph view beyond a model's blocks (issue 27, item 4; issue 26, item 6):
//  - expertScopeOfName on the names of the generator, Hugging Face exports and torch.onnx;
//  - ONNX local functions: the importer expands each call (testmodels::withLocalFunctions, hand-counted:
//    pair0 = Pair(x, w) with two nested Block calls of three operators each, block1 = Block, head) and
//    records the call on its operators; the view collapses each call into one box, ungrouped operators
//    stay themselves, and a call expands to its operators;
//  - the main window opens such a model as those boxes.
#include <QtTest>

#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "gen/testmodels.h"
#include "graph/displaygraph.h"
#include "graph/graphscene.h"
#include "graph/graphview.h"
#include "gui/mainwindow.h"
#include "mainwindowtestutil.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "problem/problem.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

class TestGraphGroups : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void expertScopes() {
    QCOMPARE(expertScopeOfName("layers.3.moe.up_exps"), std::string("layers.3.moe"));
    QCOMPARE(expertScopeOfName("model.layers.0.block_sparse_moe.experts.1.w1"), std::string("model.layers.0.block_sparse_moe"));
    QCOMPARE(expertScopeOfName("/model/layers.0/mlp/experts/MatMul"), std::string("/model/layers.0/mlp/experts"));
    QCOMPARE(expertScopeOfName("layers.3.attn.q_proj"), std::string());
    QCOMPARE(expertScopeOfName("layers.3.moe"), std::string());  // the scope itself names no operator in it
    QCOMPARE(expertScopeOfName("moe.router"), std::string());    // no block
  }

  void importerRecordsFunctionCalls() {
    auto g = importOnnxBytes(testmodels::withLocalFunctions(), "functions.onnx");
    QVERIFY2(g, g.message().c_str());
    QStringList names;
    for (const Node& n : g->nodes) names << QString::fromStdString(n.name);
    names.sort();
    QCOMPARE(names, (QStringList{"block1/act", "block1/scale", "block1/shift", "head", "pair0/first/act",
                                 "pair0/first/scale", "pair0/first/shift", "pair0/second/act", "pair0/second/scale",
                                 "pair0/second/shift"}));
    for (const Node& n : g->nodes) {
      const std::string call = n.attrString(kFunctionCallAttr, "");
      const std::string fn = n.attrString(kFunctionAttr, "");
      if (n.name == "head") {
        QVERIFY(call.empty() && fn.empty());
      } else if (n.name.rfind("pair0/", 0) == 0) {
        QCOMPARE(call, std::string("pair0"));  // the outermost call, also for the nested Block calls
        QCOMPARE(fn, std::string("local.Pair"));
      } else {
        QCOMPARE(call, std::string("block1"));
        QCOMPARE(fn, std::string("local.Block"));
      }
    }
    // Bodies are wired to the call's tensors: the head reads block1's output, block1 reads pair0's.
    const OpId head = g->findNode("head");
    QVERIFY(head >= 0);
    const Value& h1 = g->values[static_cast<size_t>(g->nodes[static_cast<size_t>(head)].inputs[0])];
    QCOMPARE(h1.name, std::string("h1"));
    QCOMPARE(g->nodes[static_cast<size_t>(h1.producer)].name, std::string("block1/act"));
    QCOMPARE(h1.shape, (std::vector<int64_t>{1, 4}));
    QVERIFY2(g->warnings.empty(), g->warnings.empty() ? "" : g->warnings.front().c_str());  // no opaque operator
  }

  void selfCallingFunctionIsOneLine() {
    auto g = importOnnxBytes(testmodels::withSelfCallingFunction(), "again.onnx");
    QVERIFY(!g);
    const std::string msg = g.message();
    QVERIFY2(msg.find("again.onnx") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("local function 'local.Again' is called more than 16 calls deep") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find('\n') == std::string::npos, msg.c_str());
  }

  void callsCollapseIntoBoxes() {
    auto g = importOnnxBytes(testmodels::withLocalFunctions(), "functions.onnx");
    QVERIFY2(g, g.message().c_str());
    auto plat = loadPreset("mobile-soc");
    QVERIFY(plat);
    const Graph graph = *g;
    auto p = problemFromGraph(std::move(g).value(), *plat, "functions");
    QVERIFY2(p, p.message().c_str());
    const CostTable& t = p->table;
    const auto calls = functionCallsOf(t, graph);
    QCOMPARE(static_cast<int>(calls.size()), t.numTasks());
    const Grouping gr = groupByBlocks(t, calls);
    QCOMPARE(gr.names, (std::vector<std::string>{"pair0 (local.Pair)", "block1 (local.Block)"}));
    QCOMPARE(static_cast<int>(gr.ops[0].size()), 6);
    QCOMPARE(static_cast<int>(gr.ops[1].size()), 3);
    int ungrouped = 0;
    for (int x : gr.groupOf) ungrouped += x < 0 ? 1 : 0;
    QCOMPARE(ungrouped, 1);  // head
    std::vector<uint8_t> expanded(2, 0);
    const DisplayGraph collapsed = buildDisplayGraph(t, &gr, expanded);
    QCOMPARE(static_cast<int>(collapsed.nodes.size()), 3);
    QCOMPARE(static_cast<int>(collapsed.edges.size()), 2);  // pair0 -> block1 -> head
    expanded[0] = 1;
    const DisplayGraph open = buildDisplayGraph(t, &gr, expanded);
    QCOMPARE(static_cast<int>(open.nodes.size()), 6 + 1 + 1);
    // Without the calls, the names show no structure: no groups.
    QCOMPARE(groupByBlocks(t).size(), 0);
  }

  void mainWindowOpensCallsAsBoxes() {
    QTemporaryDir dir;
    const QString path = dir.filePath("functions.onnx");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray::fromStdString(testmodels::withLocalFunctions()));
    }
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.setPlatform("mobile-soc");
    QVERIFY(test::openAndWait(w, path));
    GraphScene* sc = w.graphView()->graphScene();
    QVERIFY(sc->grouped());
    QCOMPARE(static_cast<int>(sc->display().nodes.size()), 3);
    QSignalSpy laid(w.graphView(), &GraphView::layoutReady);
    w.graphView()->expandGroup(1);  // block1
    QVERIFY(laid.wait(60000));
    QCOMPARE(static_cast<int>(sc->display().nodes.size()), 1 + 3 + 1);
  }
};

QTEST_MAIN(TestGraphGroups)
#include "tst_graph_groups.moc"
