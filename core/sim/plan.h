#pragma once
/// \file A plan: the device of every task and the order of tasks on each device. Schedulers produce
/// plans, the simulator judges them, plan files store them.

#include <string>
#include <vector>

#include "cost/costtable.h"

namespace partex {

/// Operators a device's compiler runs as one kernel (a fused block), on a number of its cores: the
/// knobs of DLFusion (fusion scheme and core count per block) and of coarse subgraphs. Only on devices
/// that compile blocks (CostTable::deviceCompilesBlocks). The block takes blockTimeUs(tasks, device,
/// cores); the simulator shares it among the members in proportion to their own costs, each member
/// still waiting for its inputs (sim/simulator.h).
struct PlanBlock {
  DeviceId device = 0;
  std::vector<TaskId> tasks;  ///< Consecutive in the device's order, in that order; a convex subgraph.
  int cores = 0;              ///< Cores used, 1..CostTable::deviceCores; 0: all of them.
};

struct Plan {
  std::vector<DeviceId> device;            ///< Per task.
  std::vector<std::vector<TaskId>> order;  ///< Per device: its tasks in execution order.
  /// Compiled blocks (empty for the schedulers that leave kernels to the runtime: every task then
  /// runs alone on all the cores of its device). Tasks in no block run alone.
  std::vector<PlanBlock> blocks;
  std::string algorithm;                   ///< Scheduler name that made it ("manual" after edits).
  std::string optionsJson = "{}";          ///< The scheduler options, as JSON text.
  /// Replicas for a stream of inferences (issue 29; OpenVINO's throughput streams, ONNX Runtime's
  /// sessions side by side): the plan as written is replica 0, and entry k is replica k + 1, the same
  /// operators in the same orders with the operators of plan device d run on device replicas[k][d] (one
  /// entry per device of the table; the identity where a device is not renamed). Inference t of a stream runs
  /// on replica t mod (replicas.size() + 1). Empty: one replica, every inference on the plan's devices.
  /// A single inference (simulate(), the makespan) is replica 0's.
  std::vector<std::vector<DeviceId>> replicas;
};

/// The largest number of replicas a plan may carry (plan files are refused above it): a stream keeps a
/// multiple of it in flight.
inline constexpr int kMaxReplicas = 64;
/// 1 + plan.replicas.size().
int replicaCount(const Plan& plan);
/// Replica r (0 .. replicaCount - 1) as a plan of its own, without replicas: every task on its plan
/// device's image, each image's order the plan device's order, blocks moved with their devices.
/// Replica 0 is the plan itself. `plan.replicas` must pass checkReplicas.
Plan replicaPlan(const Plan& plan, int r);
/// Checks plan.replicas against a plan whose shape is otherwise valid: at most kMaxReplicas replicas, one
/// entry per device, every entry a device, no two devices the plan uses renamed to one device, and every
/// replica's plan valid (each operator runnable on its image, blocks on devices that compile them). The
/// message names the entry as the plan file does ("replicas[0]" is replica 1).
Status checkReplicas(const CostTable& t, const Plan& plan);

/// Fills `order` from `device` alone: on each device, tasks by decreasing upward rank (mean costs),
/// ties by topological position. Used by algorithms that output only an assignment.
void orderByUpwardRank(const CostTable& t, Plan& plan);
/// Upward ranks rank_u(v) = wbar(v) + max_s (cbar(v,s) + rank_u(s)) with means over capable devices.
std::vector<double> upwardRanks(const CostTable& t);
/// Checks that the plan is complete and consistent with the table: every task on exactly one
/// device that can run it, orders a permutation of the assignment. The message names the task.
/// Blocks are checked too (checkBlocks), and the replicas (checkReplicas).
Status checkPlanShape(const CostTable& t, const Plan& plan);
/// Checks plan.blocks against a plan whose assignment and orders are consistent: each block non-empty,
/// on a device that compiles blocks, with 0..cores cores, its tasks on that device, consecutive in its
/// order as listed, in no other block, and convex (no path leaves the block and comes back).
Status checkBlocks(const CostTable& t, const Plan& plan);
/// Removes the blocks that checkBlocks would refuse (after a move took a member away or put another
/// task between members); returns how many it removed. Their tasks then run alone.
int dropBrokenBlocks(const CostTable& t, Plan& plan);
/// Per task: its time as a member of a block of the plan (the block's blockTimeUs shared among its
/// members in proportion to their costs wIn, equally when those are all 0), or -1 for a task in no
/// block. Empty when the plan has no blocks. The plan's blocks must pass checkBlocks.
std::vector<double> blockDurations(const CostTable& t, const Plan& plan);

}  // namespace partex
