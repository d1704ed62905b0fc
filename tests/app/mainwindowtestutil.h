#pragma once
/// \file Helpers shared by the GUI tests that drive a whole MainWindow.

#include <QSignalSpy>
#include <QtTest>

#include "gui/mainwindow.h"

namespace partex::test {

/// Opens `path` (a model or a project) with dialogs off and waits for the load and the graph layout.
inline bool openAndWait(gui::MainWindow& w, const QString& path) {
  w.setDialogsEnabled(false);
  QSignalSpy loaded(&w, &gui::MainWindow::modelLoaded);
  w.openModel(path);
  if (loaded.isEmpty() && !loaded.wait(120000)) return false;
  if (!loaded.first().first().toBool()) return false;
  return QTest::qWaitFor([&w] { return !w.busy(); }, 120000);
}

}  // namespace partex::test
