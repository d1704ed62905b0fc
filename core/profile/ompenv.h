#pragma once
/// \file The OpenMP wait policy of this process. Partex runs per-core devices (one pinned thread each)
/// beside an OpenMP team (cpu-parallel) on the same CPUs. A team whose threads sleep after each parallel
/// operator (the passive policy) pays a wake-up of the second thread per operator, about 60 us on these
/// VMs: a two-thread team ran ShuffleNet's operators 2x slower than one thread. Unbounded spinning
/// (libgomp's active policy alone) takes the CPU from the per-core operators that follow there. So every
/// program that links the profiler or the executor sets OMP_WAIT_POLICY=ACTIVE with GOMP_SPINCOUNT=100000
/// (about 1 ms of spinning, then sleep) from an ELF pre-initialiser, which runs before any shared
/// library's constructor (libgomp reads both once, when it loads), unless the user has set
/// OMP_WAIT_POLICY, whose choice is kept and reported (a GOMP_SPINCOUNT of the user's is kept too).

#include <string>

namespace partex {

/// The policy libgomp was started with: "active" (set by Partex, with its bounded spin count), or the
/// user's value as given ("passive", ...).
std::string ompWaitPolicy();
/// True when the policy is the user's own (OMP_WAIT_POLICY was set before Partex started).
bool ompWaitPolicyFromUser();

/// True while partex-cli has left the policy's second start for later (startWithWaitPolicy).
bool waitPolicyDeferred();
/// Where partex-cli left the policy's second start for later (a command that runs kernels only to measure
/// this machine: `platforms`, `schedule`, ...), starts the program again now with the policy set, from
/// the beginning, and does not return; returns at once everywhere else. Call it before measuring.
void startWithWaitPolicy();

}  // namespace partex
