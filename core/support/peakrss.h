#pragma once
/// \file The peak resident memory of this process and of its children, as the operating system's tools
/// report it.
///
/// GNU time, `sacct` and cgroups count a process's children: a forked helper (the this-machine
/// bandwidth probe) that touches more memory than the process itself sets the figure a user sees. The
/// tree's peak here is max(this process's ru_maxrss, RUSAGE_CHILDREN's ru_maxrss): the Linux kernel keeps,
/// for the children, the largest peak of any terminated and waited-for descendant (`cmaxrss`), which is
/// what GNU time prints for a command (wait4's rusage). Not the cgroup's memory.peak: a cgroup may hold
/// other processes (a login shell, a container's other programs, other jobs' steps), so its peak is not
/// this tree's.

#include <cstdint>

namespace partex {

/// Peak resident set sizes in bytes (0 where getrusage fails).
struct PeakRss {
  int64_t self = 0;      ///< This process (getrusage RUSAGE_SELF).
  int64_t children = 0;  ///< Largest terminated, waited-for descendant (RUSAGE_CHILDREN).
  /// The process tree's peak as GNU time reports it: the larger of the two. Children still running or
  /// not yet waited for are not in it; sibling children that ran at the same time count as the largest
  /// one, not as their sum.
  int64_t tree() const { return self > children ? self : children; }
};

/// This process's peaks so far; call it after the children whose memory should count were waited for.
PeakRss peakResidentSet();

}  // namespace partex
