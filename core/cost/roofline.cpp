#include "cost/roofline.h"

#include <algorithm>
#include <cmath>

namespace partex {

namespace {

/// Peak GFLOP/s of `d` for a class and dtype: the class peak (or the default) times the dtype speed-up.
/// Kept local (rather than Device::peak) so that cost/ does not depend on platform/'s link order; it follows
/// the same rule. Non-positive or non-finite numbers fall back to 1 GFLOP/s so that times stay finite.
double peakGflops(const Device& d, OpClass cls, DType t) {
  double p = d.defaultPeakGflops;
  if (auto it = d.peakGflops.find(cls); it != d.peakGflops.end()) p = it->second;
  if (!(p > 0) || !std::isfinite(p))
    p = (d.defaultPeakGflops > 0 && std::isfinite(d.defaultPeakGflops)) ? d.defaultPeakGflops : 1.0;
  if (auto it = d.dtypeSpeedup.find(t); it != d.dtypeSpeedup.end() && it->second > 0 && std::isfinite(it->second))
    p *= it->second;
  return p;
}

double bandwidthGBs(const Device& d) {
  return (d.memBandwidthGBs > 0 && std::isfinite(d.memBandwidthGBs)) ? d.memBandwidthGBs : 1.0;
}

double launchUs(const Device& d) {
  return (d.launchOverheadUs > 0 && std::isfinite(d.launchOverheadUs)) ? d.launchOverheadUs : 0.0;
}

double boundUs(const Device& d, OpClass cls, DType t, int64_t flops, int64_t bytes) {
  // GFLOP/s * 1e3 = FLOP per microsecond; GB/s * 1e3 = bytes per microsecond.
  double computeUs = static_cast<double>(std::max<int64_t>(0, flops)) / (peakGflops(d, cls, t) * 1e3);
  double memoryUs = static_cast<double>(std::max<int64_t>(0, bytes)) / (bandwidthGBs(d) * 1e3);
  return std::max(computeUs, memoryUs);
}

}  // namespace

double rooflineUs(const Device& d, const OpWork& w) {
  if (w.cls == OpClass::ShapeOnly) return launchUs(d);  // views and metadata: no data moved
  return launchUs(d) + boundUs(d, w.cls, w.dtype, w.flops, w.bytesRead() + w.bytesWritten);
}

double rooflineGroupUs(const Device& d, OpClass cls, DType t, int64_t flops, int64_t offchipBytes) {
  return launchUs(d) + boundUs(d, cls, t, flops, offchipBytes);
}

}  // namespace partex
