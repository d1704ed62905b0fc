#pragma once
/// \file Busy intervals of one resource (a device or a link): the simulator's bookkeeping, shared
/// with the exact search so that both make bit-for-bit the same decisions.

#include <utility>
#include <vector>

namespace partex {

/// Sorted, non-overlapping busy intervals; touching ones merge into one block.
struct BusyIntervals {
  std::vector<std::pair<double, double>> iv;
  /// Earliest s >= ready such that [s, s + dur) overlaps no interval.
  double firstFit(double ready, double dur) const;
  /// Inserts [s, e), merging it with touching neighbours so that a packed stretch is one block and
  /// firstFit() walks only real gaps (otherwise a saturated link costs O(k) per booking).
  void insert(double s, double e);
};

}  // namespace partex
