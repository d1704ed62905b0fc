#include "session/commands.h"

#include <algorithm>

namespace partex::gui {

PlanCommand::PlanCommand(Session* s, PlanState before, PlanState after, const QString& text,
                         std::optional<Timeline> afterTimeline)
    : session_(s), before_(std::move(before)), after_(std::move(after)), firstTimeline_(std::move(afterTimeline)) {
  setText(text);
}

void PlanCommand::undo() {
  session_->applyState(before_, nullptr);
}

void PlanCommand::redo() {
  if (firstTimeline_) {
    const Timeline tl = std::move(*firstTimeline_);
    firstTimeline_.reset();
    session_->applyState(after_, &tl);
    return;
  }
  session_->applyState(after_, nullptr);
}

static QList<int> sorted(QList<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

MoveOpsCommand::MoveOpsCommand(Session* s, QList<int> ops, int device, PlanState before, PlanState after,
                               std::optional<Timeline> afterTimeline)
    : PlanCommand(s, std::move(before), std::move(after), QString(), std::move(afterTimeline)),
      ops_(sorted(std::move(ops))),
      device_(device) {
  const QString what =
      ops_.size() == 1
          ? QStringLiteral("'%1'").arg(QString::fromStdString(s->table()->taskNames[static_cast<size_t>(ops_.first())]))
          : QObject::tr("%1 operators").arg(ops_.size());
  setText(QObject::tr("Move %1 to %2").arg(what, s->deviceLabel(device)));
}

bool MoveOpsCommand::mergeWith(const QUndoCommand* other) {
  const auto* o = dynamic_cast<const MoveOpsCommand*>(other);
  if (!o || o->ops_ != ops_ || !(o->before_ == after_)) return false;
  after_ = o->after_;
  device_ = o->device_;
  setText(o->text());
  setObsolete(after_ == before_);
  return true;
}

}  // namespace partex::gui
