#include "sim/contention.h"

#include <algorithm>
#include <cmath>

namespace partex {

std::vector<DeviceId> memoryPools(const CostTable& t) {
  const int m = t.numDevices();
  std::vector<DeviceId> pool(static_cast<size_t>(m), -1);
  if (t.deviceKinds.size() != static_cast<size_t>(m) || t.deviceCores.size() != static_cast<size_t>(m) ||
      t.exclusiveWith.size() != static_cast<size_t>(m) || !t.groupRoofline)
    return pool;
  for (DeviceId d = 0; d < m; ++d) {
    const auto ud = static_cast<size_t>(d);
    if (t.deviceKinds[ud] != "cpu" || t.deviceCores[ud] != 1) continue;
    int best = 1;
    for (DeviceId p : t.exclusiveWith[ud]) {
      const auto up = static_cast<size_t>(p);
      if (up < static_cast<size_t>(m) && t.deviceKinds[up] == "cpu" && t.deviceCores[up] > best) {
        best = t.deviceCores[up];
        pool[ud] = p;
      }
    }
  }
  return pool;
}

SharedMemoryParts sharedMemoryParts(const CostTable& t, TaskId v, DeviceId d, DeviceId pool) {
  SharedMemoryParts out;
  if (pool < 0 || t.work.size() != static_cast<size_t>(t.numTasks()) || !t.groupRoofline) return out;
  // The work whose time w(v,d) holds: the fused group's when v is in one (its kernel's), v's otherwise.
  std::vector<TaskId> members{v};
  if (!t.fusedGroupOf.empty() && t.fusedGroupOf[static_cast<size_t>(v)] >= 0)
    members = t.fusedGroups[static_cast<size_t>(t.fusedGroupOf[static_cast<size_t>(v)])];
  const OpWork& head = t.work[static_cast<size_t>(members.back())];
  int64_t flops = 0, bytes = 0;
  for (TaskId u : members) {
    const OpWork& w = t.work[static_cast<size_t>(u)];
    flops += w.flops;
    bytes += w.bytesRead() + w.bytesWritten;
  }
  if (bytes <= 0) return out;
  const RooflineParts own = t.groupRoofline(d, head.cls, head.dtype, flops, bytes);
  const RooflineParts all = t.groupRoofline(pool, head.cls, head.dtype, flops, bytes);
  if (!(own.memoryUs > 0) || !(all.memoryUs > 0) || !std::isfinite(own.memoryUs) || !std::isfinite(all.memoryUs))
    return out;
  out.fixedUs = own.launchUs + own.syncUs;
  out.computeUs = own.computeUs;
  out.memoryUs = own.memoryUs;
  out.poolRatio = all.memoryUs / own.memoryUs;  // bw_d / bw_pool: the same bytes take all/own times as long
  return out;
}

double sharedMemoryFactor(const SharedMemoryParts& p, double overlap, double othersBusy) {
  if (!(p.poolRatio > 0) || !(overlap > 0) || !(p.memoryUs > 0)) return 1.0;
  const double o = std::min(1.0, overlap);
  const double j = 1.0 + std::max(1.0, othersBusy);  // cores streaming at once while another runs
  const double s = std::max(1.0, j * p.poolRatio);
  if (s <= 1.0) return 1.0;
  const double before = p.fixedUs + std::max(p.computeUs, p.memoryUs);
  const double after = p.fixedUs + std::max(p.computeUs, (1.0 + o * (s - 1.0)) * p.memoryUs);
  return before > 0 ? after / before : 1.0;
}

}  // namespace partex
