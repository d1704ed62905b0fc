#pragma once
/// \file The OpenMP wait policy of this process. Partex runs per-core devices (one pinned thread each)
/// beside an OpenMP team (cpu-parallel) on the same CPUs; with libgomp's default policy a team thread
/// spins for a while after every parallel operator and takes the CPU from the per-core thread pinned
/// there, which makes a mixed plan run far slower than predicted. libgomp reads OMP_WAIT_POLICY once,
/// when the library loads, before main(): so every program that links the profiler or the executor
/// sets OMP_WAIT_POLICY=PASSIVE from an ELF pre-initialiser (it runs before any shared library's
/// constructor), unless the user has set the variable, whose choice is kept and reported.

#include <string>

namespace partex {

/// The policy libgomp was started with: "passive" (set by Partex, or by the user), or the user's
/// value as given ("active", ...).
std::string ompWaitPolicy();
/// True when the policy is the user's own (OMP_WAIT_POLICY was set before Partex started).
bool ompWaitPolicyFromUser();

}  // namespace partex
