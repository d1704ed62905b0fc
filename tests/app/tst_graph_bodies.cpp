// The bodies of control-flow operators in the graph view: addBodies adds one node per body node with
// the body's data edges and hangs each body's first nodes under its operator; in the main window,
// toggling an If shows its two branches as body items (which select their If) and toggling again
// hides them.
#include <QtTest>

#include <QImage>
#include <QPainter>
#include <QStandardPaths>
#include <fstream>

#include "gen/testmodels.h"
#include "graph/displaygraph.h"
#include "graph/graphitems.h"
#include "graph/graphscene.h"
#include "graph/graphview.h"
#include "gui/mainwindow.h"
#include "mainwindowtestutil.h"
#include "onnx/importer.h"
#include "session/session.h"
#include "testutil.h"

using namespace partex;
using namespace partex::gui;

namespace {

int countBodyItems(GraphScene* scene) {
  int n = 0;
  for (QGraphicsItem* it : scene->items())
    if (it->type() == BodyNodeItem::Type) ++n;
  return n;
}

}  // namespace

class TestGraphBodies : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("PartexTest");
  }

  /// One display node per body node; edges inside a body and from the operator to the body's roots;
  /// an If nested in a body stays one node.
  void addBodiesBuildsNodesAndEdges() {
    auto g = importOnnxBytes(testmodels::withControlFlow(), "controlflow.onnx");
    QVERIFY2(g.isOk(), g.message().c_str());
    DisplayGraph d;
    for (int op = 0; op < static_cast<int>(g->nodes.size()); ++op) {
      d.nodeOfOp.push_back(op);
      d.nodes.push_back({op, -1});
    }
    const int ifOp = g->findNode("choose"), loopOp = g->findNode("iterate"), square = g->findNode("square");
    QVERIFY(ifOp >= 0 && loopOp >= 0 && square >= 0);
    QVERIFY(hasBodies(*g, ifOp) && hasBodies(*g, loopOp));
    QVERIFY(!hasBodies(*g, square));
    const size_t ops = d.nodes.size();
    addBodies(d, *g, {ifOp, loopOp, square});
    // then_branch and else_branch: one node each; the Loop body: Cast, Add, Greater, the inner If and
    // two Identity nodes.
    const Node& loop = g->nodes[static_cast<size_t>(loopOp)];
    QCOMPARE(loop.subgraphs.size(), size_t{1});
    const Graph& body = *loop.subgraphs[0].second;
    QCOMPARE(d.nodes.size(), ops + 2 + body.nodes.size());
    int innerIf = -1;
    for (size_t i = ops; i < d.nodes.size(); ++i) {
      const DisplayNode& n = d.nodes[i];
      QCOMPARE(n.op, -1);
      QCOMPARE(n.group, -1);
      QVERIFY(n.parentOp == ifOp || n.parentOp == loopOp);
      if (n.parentOp == loopOp && body.nodes[static_cast<size_t>(n.bodyNode)].name == "inner_if")
        innerIf = static_cast<int>(i);
    }
    QVERIFY(innerIf >= 0);
    auto hasEdge = [&](int a, int b) {
      for (const auto& e : d.edges)
        if (e.src == a && e.dst == b) return true;
      return false;
    };
    // Both branches hang under the If; the inner If is fed by the body's Greater, and by its Add and
    // Cast through the values its branches read (its implicit inputs), not by the Loop.
    QVERIFY(hasEdge(ifOp, static_cast<int>(ops)));
    QVERIFY(hasEdge(ifOp, static_cast<int>(ops) + 1));
    QVERIFY(!hasEdge(loopOp, innerIf));
    int feeders = 0;
    for (const auto& e : d.edges) feeders += e.dst == innerIf ? 1 : 0;
    QCOMPARE(feeders, 3);
    for (const auto& e : d.edges)
      if (e.src >= static_cast<int>(ops)) QVERIFY(e.costEdges.empty());
  }

  /// In the window: toggling the If lays its branches out as body items; selecting one selects the If.
  void toggleInWindow() {
    const std::string path = test::tempDir() + "/controlflow.onnx";
    {
      std::ofstream f(path, std::ios::binary);
      f << testmodels::withControlFlow();
    }
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(test::openAndWait(w, QString::fromStdString(path)));
    GraphView* view = w.graphView();
    GraphScene* scene = static_cast<GraphScene*>(view->scene());
    QCOMPARE(countBodyItems(scene), 0);
    const int ifOp = w.session()->model()->graph.findNode("choose");
    QVERIFY(ifOp >= 0);
    QSignalSpy laid(view, &GraphView::layoutReady);
    view->toggleBodies(ifOp);
    QVERIFY(view->bodiesShown(ifOp));
    QVERIFY(laid.wait(60000));
    QCOMPARE(countBodyItems(scene), 2);
    QGraphicsItem* body = nullptr;
    for (QGraphicsItem* it : scene->items())
      if (it->type() == BodyNodeItem::Type) body = it;
    QVERIFY(body);
    QCOMPARE(scene->opsOf(body), QList<int>{ifOp});
    // The body items paint (their operator's colour, op type and branch name) without a crash.
    QImage img(900, 700, QImage::Format_ARGB32);
    img.fill(Qt::white);
    {
      QPainter p(&img);
      scene->render(&p);
    }
    QVERIFY(img.save(QString::fromStdString(test::tempDir() + "/bodies.png")));
    body->setSelected(true);
    QVERIFY(w.session()->selection().contains(ifOp));
    view->toggleBodies(ifOp);
    QVERIFY(!view->bodiesShown(ifOp));
    QVERIFY(laid.wait(60000));
    QCOMPARE(countBodyItems(scene), 0);
  }
};

QTEST_MAIN(TestGraphBodies)
#include "tst_graph_bodies.moc"
