#include "sim/intervals.h"

#include <algorithm>
#include <iterator>

namespace partex {

double BusyIntervals::firstFit(double ready, double dur) const {
  auto it = std::upper_bound(iv.begin(), iv.end(), ready, [](double r, const std::pair<double, double>& x) { return r < x.second; });
  double s = ready;
  for (; it != iv.end(); ++it) {
    if (s + dur <= it->first) return s;
    s = std::max(s, it->second);
  }
  return s;
}

void BusyIntervals::insert(double s, double e) {
  // Touching neighbours merge into one block, as in the simulator (same free gaps, shorter walks).
  auto it = std::upper_bound(iv.begin(), iv.end(), std::make_pair(s, e));
  const bool joinPrev = it != iv.begin() && std::prev(it)->second >= s;
  const bool joinNext = it != iv.end() && it->first <= e;
  if (joinPrev && joinNext) {
    auto prev = std::prev(it);
    prev->second = std::max(prev->second, std::max(e, it->second));
    iv.erase(it);
  } else if (joinPrev) {
    auto prev = std::prev(it);
    prev->second = std::max(prev->second, e);
  } else if (joinNext) {
    it->first = s;
    it->second = std::max(it->second, e);
  } else {
    iv.insert(it, {s, e});
  }
}

}  // namespace partex
