#pragma once
/// \file The tooltip rule of the chart views (GanttView, MemoryView): the text under the cursor, or
/// none (hidden, the event ignored so that Qt does not keep an old tip).
#include <QHelpEvent>
#include <QToolTip>
#include <QWidget>

namespace partex {

/// Handles a QEvent::ToolTip for `w` with `textAt(position)`; returns false for any other event.
template <class TextAt>
bool showChartToolTip(QWidget* w, QEvent* e, const TextAt& textAt) {
  if (e->type() != QEvent::ToolTip) return false;
  auto* he = static_cast<QHelpEvent*>(e);
  const QString text = textAt(he->pos());
  if (text.isEmpty()) {
    QToolTip::hideText();
    e->ignore();
  } else {
    QToolTip::showText(he->globalPos(), text, w);
  }
  return true;
}

}  // namespace partex
