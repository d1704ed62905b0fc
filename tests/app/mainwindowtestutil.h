#pragma once
/// \file Helpers shared by the GUI tests that drive a whole MainWindow.

#include <QSignalSpy>
#include <QtTest>

#include "graph/devicepalette.h"
#include "graph/graphview.h"
#include "gui/mainwindow.h"

namespace partex::test {

/// Opens `path` (a model or a project) with dialogs off and waits, up to `timeoutMs` each, for the load
/// and the graph layout; false when the load failed or timed out.
inline bool openAndWait(gui::MainWindow& w, const QString& path, int timeoutMs = 120000) {
  w.setDialogsEnabled(false);
  QSignalSpy loaded(&w, &gui::MainWindow::modelLoaded);
  w.openModel(path);
  if (loaded.isEmpty() && !loaded.wait(timeoutMs)) return false;
  if (!loaded.first().first().toBool()) return false;
  return QTest::qWaitFor([&w] { return !w.busy(); }, timeoutMs);
}

/// Presses on `op`'s node, moves in steps to the palette entry of `device` and releases there:
/// the view holds the implicit grab, so every event goes to its viewport (as in real use).
inline void dragOpToDevice(gui::MainWindow& w, int op, int device) {
  gui::GraphView* g = w.graphView();
  g->centerOnOp(op);
  const QPoint from = g->viewportPosOfOp(op);
  w.palette()->scrollTo(w.palette()->model()->index(device, 0));  // a workflow's many processors overflow the list
  const QPoint to = g->viewport()->mapFromGlobal(w.palette()->globalCenterOf(device));
  QTest::mousePress(g->viewport(), Qt::LeftButton, {}, from);
  for (int i = 1; i <= 6; ++i) QTest::mouseMove(g->viewport(), from + (to - from) * i / 6);
  QTest::mouseRelease(g->viewport(), Qt::LeftButton, {}, to);
}

}  // namespace partex::test
