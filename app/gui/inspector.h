#pragma once
/// \file The inspector's text: everything about the selected operator(s) as HTML, built from the
/// session (attributes, shapes, work, a cost row per device with provenance, transfers in and out,
/// and why the operator sits where it is).

#include <QList>
#include <QString>

namespace partex::gui {

class Session;

/// HTML for the inspector; a summary when several operators are selected.
QString inspectorHtml(const Session& s, const QList<int>& selection);

}  // namespace partex::gui
