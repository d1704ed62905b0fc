// Peak resident set of this process and of its waited-for children (getrusage).
#include "support/peakrss.h"

#include <sys/resource.h>

namespace partex {

namespace {

/// ru_maxrss of `who` in bytes: Linux reports KiB.
int64_t maxRss(int who) {
  rusage u{};
  if (getrusage(who, &u) != 0) return 0;
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

}  // namespace

PeakRss peakResidentSet() {
  return {maxRss(RUSAGE_SELF), maxRss(RUSAGE_CHILDREN)};
}

}  // namespace partex
