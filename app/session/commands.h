#pragma once
/// \file Undo commands over the session's plan (Qt undoframework style): each stores the state
/// before and after, so undo and redo restore device, order, pins and provenance exactly.

#include <QList>
#include <QUndoCommand>

#include <optional>

#include "session/session.h"

namespace partex::gui {

/// Replaces the session's PlanState (scheduler results, pins). The first redo() may reuse a timeline
/// the session already simulated; later redos and undos re-simulate (deterministic, and it keeps the
/// session's incremental simulator in step with the plan).
class PlanCommand : public QUndoCommand {
 public:
  PlanCommand(Session* s, PlanState before, PlanState after, const QString& text,
              std::optional<Timeline> afterTimeline = std::nullopt);
  void undo() override;
  void redo() override;
  const PlanState& before() const { return before_; }
  const PlanState& after() const { return after_; }

 protected:
  Session* session_;
  PlanState before_;
  PlanState after_;
  std::optional<Timeline> firstTimeline_;
};

/// A manual repartition: a list of operators to one device. Consecutive moves of the same operator
/// set merge into one step (trying a selection on device 2, then 3, undoes back to where it was);
/// a merge that returns to the original state makes the command obsolete.
class MoveOpsCommand : public PlanCommand {
 public:
  enum { Id = 0x5041 };
  MoveOpsCommand(Session* s, QList<int> ops, int device, PlanState before, PlanState after,
                 std::optional<Timeline> afterTimeline);
  int id() const override { return Id; }
  bool mergeWith(const QUndoCommand* other) override;
  const QList<int>& ops() const { return ops_; }
  int device() const { return device_; }

 private:
  QList<int> ops_;  ///< Sorted.
  int device_;
};

}  // namespace partex::gui
