#pragma once
/// \file Plan files: a versioned JSON document holding the device and the position on that device of
/// every operator, plus (informational) the simulated times and transfers. The schema is documented
/// in docs/plan-format.md. Reading validates the file against the model it is applied to and
/// rebuilds the per-device orders from the "order" fields; every error is one line naming the file.

#include <string>

#include "cost/costtable.h"
#include "ir/graph.h"
#include "sim/plan.h"
#include "sim/simulator.h"
#include "support/result.h"

namespace partex {

/// The plan file format name and the newest version this build reads and writes.
inline constexpr const char* kPlanFormat = "partex-plan";
inline constexpr int kPlanFormatVersion = 1;

/// What a plan is for: written into plan files, and checked when one is read.
struct PlanIdentity {
  std::string modelFile;     ///< Model file name (base name only is written), e.g. "resnet50.onnx".
  std::string modelSha256;   ///< Graph::graphSha256; "" for task graphs (then no hash check is made).
  std::string platformName;  ///< Platform::name (informational: devices are matched by id).
};

/// Serialises a plan and its simulated timeline as plan-file JSON (pretty, two-space indent, ends
/// with a newline). The timeline may be empty (no simulation yet): times are then left out.
/// Tasks missing from plan.order are written after the last ordered task of their device.
/// With the model's graph `g` (ONNX models; null for task graphs), "fused_kernels" lists the plan's
/// fused kernels (plan/fusedkernels.h), an empty array when it has none.
std::string planToJson(const CostTable& t, const Plan& plan, const Timeline& tl, const PlanIdentity& id,
                       const Graph* g = nullptr);

/// Parses plan-file JSON and validates it against the cost table: format and version, the model
/// hash (when both `expect.modelSha256` and the file's hash are non-empty), that every operator of
/// the model appears exactly once and nothing else does, that devices exist and can run their
/// operators, that orders are unique per device and executable (no operator placed before one it
/// depends on on its device, no cycle through the device orders). `origin` names the file in errors.
/// Times, transfers and the makespan in the file are ignored (the simulator recomputes them).
/// "fused_kernels", when present, is validated (devices and operators exist, each operator in one
/// kernel, every kernel's operators on its device in this plan) and then ignored: the kernels follow
/// from the placement and the costs.
Result<Plan> readPlan(const std::string& json, const std::string& origin, const CostTable& t,
                      const PlanIdentity& expect);

/// Writes planToJson() to `path` atomically (temporary file, then rename).
Status savePlan(const std::string& path, const CostTable& t, const Plan& plan, const Timeline& tl,
                const PlanIdentity& id, const Graph* g = nullptr);
/// Reads and validates a plan file; errors name `path`.
Result<Plan> loadPlanFile(const std::string& path, const CostTable& t, const PlanIdentity& expect);

}  // namespace partex
