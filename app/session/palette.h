#pragma once
/// \file The one device palette: every view (graph nodes, palette dock, Gantt bars, exports) asks it
/// for a device's colour so that a device looks the same everywhere.

#include <QColor>

#include <string>

namespace partex::gui {

/// Colour of the device at `index`: the platform's own "#rrggbb" when it sets one, otherwise the
/// colour-blind-safe Okabe-Ito palette (then Paul Tol's muted set) in device order.
QColor deviceColor(int index, const std::string& platformColor = {});
/// Black or white, whichever reads better on `background`.
QColor textColorOn(const QColor& background);

}  // namespace partex::gui
