#pragma once
/// \file What a model, platform or project change installs in a session, built on a worker thread:
/// the model, the platform, the cost table with the profiles applied, and the initial plan; or, for a
/// scheduling instance, its cost table and the initial plan.

#include <memory>
#include <string>
#include <vector>

#include "cost/costtable.h"
#include "plan/project.h"
#include "platform/platform.h"
#include "session/loadedmodel.h"
#include "session/planstate.h"
#include "session/profiles.h"
#include "sim/simulator.h"
#include "support/result.h"

namespace partex::gui {

struct Prepared {
  std::shared_ptr<const LoadedModel> model;        ///< Null for an instance.
  std::shared_ptr<const LoadedInstance> instance;  ///< Set instead of `model` and `platform` for an instance.
  std::string platformName;  ///< Preset name or platform file, as the user gave it ("" for an instance).
  Platform platform;         ///< Empty for an instance: its devices and links are in `table`.
  std::shared_ptr<const CostTable> modelled;  ///< The cost table from the device models alone.
  std::shared_ptr<const CostTable> table;     ///< `modelled` with `profiles` applied: the one scheduled.
  std::vector<LoadedProfile> profiles;        ///< Applied to `table`, in order.
  PlanState state;                            ///< The initial plan: HEFT, or everything on the host when HEFT fails.
  Timeline timeline;                          ///< Its simulation.
  std::string note;       ///< A problem that did not stop the load (a project's plan that did not fit).
  bool modified = false;  ///< Install as unsaved work (a recovered autosave).
};

/// Builds the cost table of `model` on a platform (preset name or file), applies `profiles` over it in
/// order (one that no longer applies, e.g. for a device the platform lacks, is dropped and named in
/// Prepared::note) and makes an initial HEFT plan on the result. Runs on a worker thread; every
/// failure is a one-line message.
Result<Prepared> prepareSession(std::shared_ptr<const LoadedModel> model, const std::string& platformNameOrPath,
                                const std::vector<LoadedProfile>& profiles = {});
/// The same on a platform given as an object (an edited platform); `label` names it.
Result<Prepared> prepareSession(std::shared_ptr<const LoadedModel> model, Platform platform, const std::string& label,
                                const std::vector<LoadedProfile>& profiles = {});

/// Reads a scheduling instance (core's readInstanceFile: a Partex task graph, a SAGA instance or a
/// WfCommons workflow) and makes the initial HEFT plan on its cost table. Runs on a worker thread;
/// every failure is a one-line message naming the file (the parser's reason).
Result<Prepared> prepareInstance(const std::string& path);

/// Builds a session from a project (runs on a worker thread): the model with its dimensions, the
/// platform, the profiles and ONNX Runtime imports (read and applied in order; a missing, unreadable
/// or mismatched one is left out with a warning naming it in Prepared::note, and Prepared::modified is
/// set, since the session then differs from the file), then the embedded plan validated against the
/// cost table (readPlan), the pins and the manual flags. A plan that does not fit falls back to HEFT
/// (respecting the pins) and says so in Prepared::note; a missing model or platform, or an invalid
/// pin, fails. `origin` names the file.
Result<Prepared> prepareProject(const Project& project, const std::string& origin);

}  // namespace partex::gui
