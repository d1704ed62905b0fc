#include "cpu/device.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <cstring>

namespace partex::cpu {

const std::vector<int>& allowedCpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    if (out.empty())
      for (int c = 0; c < omp_get_num_procs(); ++c) out.push_back(c);
    return out;
  }();
  return cpus;
}

namespace {

void pinTo(int core) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(core, &one);
  pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

}  // namespace

DeviceScope::DeviceScope(int threads, int core, const std::vector<int>* teamCores)
    : prevThreads_(omp_get_max_threads()) {
  if (threads < 1) threads = 1;
  if (prevThreads_ != threads) omp_set_num_threads(threads);
  if (threads > 1 && teamCores && static_cast<int>(teamCores->size()) >= threads) {
    // libgomp keeps one pool of threads per master thread and gives team slot i to the same pool
    // thread every time, so pinning each slot once per (master thread, team size) is enough.
    thread_local int pinnedTeamSize = 0;
    if (pinnedTeamSize != threads) {
      const std::vector<int>& cores = *teamCores;
#pragma omp parallel num_threads(threads)
      {
        const int i = omp_get_thread_num();
        if (i > 0) pinTo(cores[static_cast<size_t>(i)]);
      }
      pinnedTeamSize = threads;
    }
  }
  if (core >= 0) {
    cpu_set_t prev;
    CPU_ZERO(&prev);
    if (pthread_getaffinity_np(pthread_self(), sizeof(prev), &prev) == 0) {
      // Already pinned to exactly this core (the executor's and profiler's threads are): nothing to
      // move or restore, one system call instead of three per kernel call.
      if (CPU_COUNT(&prev) == 1 && CPU_ISSET(core, &prev)) return;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(core, &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0) {
        pinned_ = true;
        prevMask_.resize(sizeof(prev));
        std::memcpy(prevMask_.data(), &prev, sizeof(prev));
      }
    }
  }
}

DeviceScope::~DeviceScope() {
  if (pinned_) {
    cpu_set_t prev;
    std::memcpy(&prev, prevMask_.data(), sizeof(prev));
    pthread_setaffinity_np(pthread_self(), sizeof(prev), &prev);
  }
  if (omp_get_max_threads() != prevThreads_) omp_set_num_threads(prevThreads_);
}

}  // namespace partex::cpu
