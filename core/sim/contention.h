#pragma once
/// \file Memory shared by cores that run at once: the term a stream of inferences adds to each operator's
/// time when two single-core stages (or replicas) run side by side (issue 29, item 4's prediction error).
///
/// A profile measures each operator with its core alone streaming memory; the platform gives every core
/// that one-core bandwidth even when several run at once. The calibration also measures the all-core
/// rate: the same kernels on the multi-core device that spans those cores (this machine's cpu-parallel,
/// exclusive with each core it uses), fitted per op class as the bandwidth at which they stream. Cores
/// streaming at once cannot together exceed it: while j cores of such a pool stream, each gets
/// min(its own bandwidth, the pool's / j). So the memory part of an operator's roofline on core d,
/// M = bytes / bw_d, stretches by s = max(1, j * bw_d / bw_pool) while another core of the pool runs,
/// and an operator whose compute C hides its memory part (C >= s * M) is not slowed at all:
///
///   w'(v,d) = w(v,d) * (L + max(C, (1 + o * (s - 1)) * M) + S) / (L + max(C, M) + S)
///
/// with L, C, M, S the roofline parts of v's work on d (launch, compute, memory, sync: the cost table's
/// groupRoofline), o the share of d's time during which the other cores of the pool are busy (at most 1;
/// their busy time per inference over the period), and j = 1 + max(1, the other cores busy on average).
/// The profile's measured w(v,d) is scaled by the roofline's relative change, so the term adds only what
/// the sharing adds. Nothing here is fitted per model: the bandwidths are the calibration's.
///
/// Pools: a device of kind "cpu" with cores > 1 that is exclusive with single-core "cpu" devices (it
/// runs on their CPUs) is the pool of each of them; two devices exclusive with each other (cpu-serial
/// and core0: one CPU) never run at once. Platforms without such a device (the modelled presets, task
/// graphs, which have no work per task) get no term.

#include <vector>

#include "cost/costtable.h"

namespace partex {

/// Per device of `t`: the pool whose memory it shares (a multi-core "cpu" device exclusive with it), -1
/// when none (multi-core devices themselves, accelerators, tables without device kinds).
std::vector<DeviceId> memoryPools(const CostTable& t);

/// The roofline parts of task v's work on device d that the term needs: its time without sharing
/// (L + max(C, M) + S, as parts), and the ratio bw_d / bw_pool for its op class (0 when d has no pool or
/// v no work). A task of a fused group (CostTable::fusedGroups) takes the group's summed work, since the
/// group's kernel time is what its cost holds.
struct SharedMemoryParts {
  double fixedUs = 0;    ///< L + S.
  double computeUs = 0;  ///< C.
  double memoryUs = 0;   ///< M at d's bandwidth.
  double poolRatio = 0;  ///< bw_d / bw_pool (0: no term).
};
SharedMemoryParts sharedMemoryParts(const CostTable& t, TaskId v, DeviceId d, DeviceId pool);

/// The factor on w(v,d) when the other cores of d's pool are busy a share `overlap` of d's time and
/// `othersBusy` of them run on average (the formula in the file comment); 1 without a term.
double sharedMemoryFactor(const SharedMemoryParts& p, double overlap, double othersBusy);

}  // namespace partex
