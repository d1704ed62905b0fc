// Lower bound on the makespan of any plan that respects the constraints (see scheduler.h).
#include <algorithm>
#include <cstdint>

#include "sched/scheduler.h"

namespace partex {

namespace {

/// Largest number of the given devices that may run at the same time: a maximum independent set of
/// the exclusivity graph (exact up to 20 devices; beyond that the device count, which still bounds it).
int maxConcurrentDevices(const CostTable& t, const std::vector<DeviceId>& devs) {
  const int k = static_cast<int>(devs.size());
  if (k == 0) return 0;
  if (k > 20) return k;
  std::vector<uint32_t> conflict(static_cast<size_t>(k), 0);
  for (int i = 0; i < k; ++i) {
    const auto di = static_cast<size_t>(devs[static_cast<size_t>(i)]);
    if (di >= t.exclusiveWith.size()) continue;
    for (DeviceId x : t.exclusiveWith[di])
      for (int j = 0; j < k; ++j)
        if (devs[static_cast<size_t>(j)] == x && j != i) {
          conflict[static_cast<size_t>(i)] |= 1u << j;
          conflict[static_cast<size_t>(j)] |= 1u << i;
        }
  }
  bool any = false;
  for (uint32_t c : conflict) any = any || c != 0;
  if (!any) return k;
  int best = 1;
  for (uint32_t mask = 1; mask < (1u << k); ++mask) {
    const int bits = __builtin_popcount(mask);
    if (bits <= best) continue;
    bool ok = true;
    for (int i = 0; i < k && ok; ++i)
      if ((mask >> i & 1u) && (conflict[static_cast<size_t>(i)] & mask)) ok = false;
    if (ok) best = bits;
  }
  return best;
}

}  // namespace

double lowerBound(const CostTable& t, const Constraints& c) {
  const int n = t.numTasks();
  const int nd = t.numDevices();
  if (n == 0 || nd == 0) return 0.0;
  // Best allowed time of every task (tasks without an allowed device count 0: no plan exists then,
  // and the bound stays finite).
  std::vector<double> best(static_cast<size_t>(n), 0.0);
  std::vector<char> used(static_cast<size_t>(nd), 0);
  for (TaskId v = 0; v < n; ++v) {
    double b = kInf;
    for (DeviceId d = 0; d < nd; ++d)
      if (c.allowed(t, v, d)) {
        b = std::min(b, t.wFloor(v, d));  // below w where a compiled block can make v cheaper
        used[static_cast<size_t>(d)] = 1;
      }
    best[static_cast<size_t>(v)] = b < kInf ? b : 0.0;
  }
  // 1. Longest path with every task on its best device and free transfers.
  std::vector<double> path(static_cast<size_t>(n), 0.0);
  double longest = 0, sum = 0, largest = 0;
  for (TaskId v : t.topoOrder()) {
    double ready = 0;
    for (int32_t e : t.inEdges[static_cast<size_t>(v)])
      ready = std::max(ready, path[static_cast<size_t>(t.edges[static_cast<size_t>(e)].src)]);
    const double b = best[static_cast<size_t>(v)];
    path[static_cast<size_t>(v)] = ready + b;
    longest = std::max(longest, ready + b);
    sum += b;
    largest = std::max(largest, b);
  }
  // 2. Total work spread over the devices that can run at the same time.
  std::vector<DeviceId> devs;
  for (DeviceId d = 0; d < nd; ++d)
    if (used[static_cast<size_t>(d)]) devs.push_back(d);
  const int k = std::max(1, maxConcurrentDevices(t, devs));
  // 3. The largest single task.
  return std::max({longest, sum / k, largest});
}

}  // namespace partex
