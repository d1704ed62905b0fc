#pragma once
/// \file Internal helpers shared by the plan writers (not part of the public API).

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

namespace partex::plandetail {

/// Times are written in microseconds rounded to the nanosecond, so that files stay readable and
/// golden files stable; non-finite values become null.
inline nlohmann::ordered_json timeValue(double us) {
  if (!std::isfinite(us)) return nullptr;
  double r = std::round(us * 1000.0) / 1000.0;
  if (r == 0.0) r = 0.0;  // no "-0.0"
  return r;
}

/// Same rounding for places that need a plain double (trace timestamps).
inline double roundUs(double us) {
  if (!std::isfinite(us)) return 0.0;
  double r = std::round(us * 1000.0) / 1000.0;
  return r == 0.0 ? 0.0 : r;
}

}  // namespace partex::plandetail
