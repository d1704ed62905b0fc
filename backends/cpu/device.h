#pragma once
/// \file Thread placement for CPU kernels: a scope that pins the calling thread and sets its OpenMP
/// team size for one kernel call, restoring both on exit.

#include <vector>

#include "backend/backend.h"

namespace partex::cpu {

/// The CPUs this process may run on (sched_getaffinity at first call), in increasing order.
const std::vector<int>& allowedCpus();

/// While alive: the calling thread is pinned to `core` (when >= 0) and its OpenMP team size is
/// `threads` (oneDNN, built with the OpenMP runtime, reads it too). Pinning failures are ignored
/// (the kernel still runs, only unpinned). With `teamCores` (a multi-thread device), the OpenMP
/// threads of the calling thread's team are pinned to teamCores[1..] the first time this thread
/// leads a team of that size: a new OpenMP thread inherits its creator's affinity, so without this the
/// whole team of a pinned master would share the master's core.
class DeviceScope {
 public:
  DeviceScope(int threads, int core, const std::vector<int>* teamCores = nullptr);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prevThreads_ = 1;
  bool pinned_ = false;
  std::vector<unsigned char> prevMask_;  ///< The previous cpu_set_t, as bytes.
};

}  // namespace partex::cpu
