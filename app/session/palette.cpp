#include "session/palette.h"

#include <array>

namespace partex::gui {

QColor deviceColor(int index, const std::string& platformColor) {
  if (!platformColor.empty()) {
    QColor c(QString::fromStdString(platformColor));
    if (c.isValid()) return c;
  }
  // Okabe & Ito (2008) without black, then Tol's muted scheme: distinguishable under the common
  // colour-vision deficiencies.
  static constexpr std::array<const char*, 16> kColors = {
      "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999",
      "#332288", "#88CCEE", "#44AA99", "#117733", "#DDCC77", "#CC6677", "#AA4499", "#882255"};
  const int n = static_cast<int>(kColors.size());
  const int i = ((index % n) + n) % n;
  return QColor(QString::fromLatin1(kColors[static_cast<size_t>(i)]));
}

QColor textColorOn(const QColor& background) {
  // Relative luminance (sRGB approximation) decides the contrast colour.
  const double l = 0.2126 * background.redF() + 0.7152 * background.greenF() + 0.0722 * background.blueF();
  return l > 0.55 ? QColor(Qt::black) : QColor(Qt::white);
}

}  // namespace partex::gui
