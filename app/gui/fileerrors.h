#pragma once
/// \file Errors about a file the main window writes or reads, named the way the user chose it.

#include <QFileInfo>
#include <QString>

#include "support/result.h"

namespace partex::gui {

/// "name: " + the message, unless the message already names the file.
inline Status namingFile(const QString& path, Status st) {
  if (st) return st;
  const QString name = QFileInfo(path).fileName();
  if (QString::fromStdString(st.message()).contains(name)) return st;
  return makeError(name.toStdString(), ": ", st.message());
}

}  // namespace partex::gui
