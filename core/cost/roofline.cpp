#include "cost/roofline.h"

#include <algorithm>
#include <cmath>

namespace partex {

namespace {

bool usable(double v) {
  return v > 0 && std::isfinite(v);
}

/// The three roofline numbers of one operator on one device, after class and op-type overrides.
/// Non-positive or non-finite numbers fall back to the next level (op type -> class -> device default
/// -> 1 GFLOP/s or 1 GB/s), so that times stay finite. Kept here (rather than Device::peak) so that cost/
/// does not depend on platform/'s link order; the peak follows the same rule.
struct Ceilings {
  double peakGflops = 1.0;
  double bandwidthGBs = 1.0;        ///< For activations (op type's, class's or the device's).
  double weightBandwidthGBs = 1.0;  ///< For weights: always the device's.
  double launchUs = 0.0;
};

Ceilings ceilings(const Device& d, OpClass cls, DType t, const std::string* opType) {
  Ceilings c;
  c.peakGflops = usable(d.defaultPeakGflops) ? d.defaultPeakGflops : 1.0;
  if (auto it = d.peakGflops.find(cls); it != d.peakGflops.end() && usable(it->second)) c.peakGflops = it->second;
  c.bandwidthGBs = usable(d.memBandwidthGBs) ? d.memBandwidthGBs : 1.0;
  c.weightBandwidthGBs = c.bandwidthGBs;
  if (auto it = d.bandwidthGBsByClass.find(cls); it != d.bandwidthGBsByClass.end() && usable(it->second))
    c.bandwidthGBs = it->second;
  c.launchUs = (d.launchOverheadUs > 0 && std::isfinite(d.launchOverheadUs)) ? d.launchOverheadUs : 0.0;
  if (auto it = d.launchOverheadUsByClass.find(cls);
      it != d.launchOverheadUsByClass.end() && it->second >= 0 && std::isfinite(it->second))
    c.launchUs = it->second;
  if (opType && !opType->empty() && !d.opTypeCosts.empty()) {
    if (auto it = d.opTypeCosts.find(*opType); it != d.opTypeCosts.end()) {
      const OpTypeCost& o = it->second;
      if (usable(o.peakGflops)) c.peakGflops = o.peakGflops;
      if (usable(o.bandwidthGBs)) c.bandwidthGBs = o.bandwidthGBs;
      if (o.launchOverheadUs >= 0 && std::isfinite(o.launchOverheadUs)) c.launchUs = o.launchOverheadUs;
    }
  }
  if (auto it = d.dtypeSpeedup.find(t); it != d.dtypeSpeedup.end() && usable(it->second)) c.peakGflops *= it->second;
  return c;
}

/// max(compute, memory); memory = activation bytes at the (class's) bandwidth + weight bytes at the
/// device's. Without per-class numbers both are the device's: (activations + weights) / bandwidth.
double boundUs(const Ceilings& c, int64_t flops, int64_t activationBytes, int64_t weightBytes) {
  // GFLOP/s * 1e3 = FLOP per microsecond; GB/s * 1e3 = bytes per microsecond.
  const double computeUs = static_cast<double>(std::max<int64_t>(0, flops)) / (c.peakGflops * 1e3);
  const double memoryUs = static_cast<double>(std::max<int64_t>(0, activationBytes)) / (c.bandwidthGBs * 1e3) +
                          static_cast<double>(std::max<int64_t>(0, weightBytes)) / (c.weightBandwidthGBs * 1e3);
  return std::max(computeUs, memoryUs);
}

}  // namespace

double coreSyncCostUs(const Device& d, int k) {
  if (k <= 1 || !(d.coreSyncUs > 0) || !std::isfinite(d.coreSyncUs)) return 0.0;
  return d.coreSyncUs * std::ceil(std::log2(static_cast<double>(k)));
}

double reductionFloorUs(const Device& d, const OpWork& w) {
  if (d.waveOutputs <= 0 || w.macs <= 0 || w.bytesWritten <= 0) return 0.0;
  const auto it = d.reductionStepUsByClass.find(w.cls);
  if (it == d.reductionStepUsByClass.end() || !usable(it->second)) return 0.0;
  const int64_t elem = std::max<int64_t>(1, dtypeSize(w.dtype));
  const int64_t outputs = std::max<int64_t>(1, w.bytesWritten / elem);
  const double steps = static_cast<double>(w.macs) / static_cast<double>(outputs);
  const double waves = std::ceil(static_cast<double>(outputs) / static_cast<double>(d.waveOutputs));
  return waves * steps * it->second;
}

double rooflineUs(const Device& d, const OpWork& w, const std::string& opType) {
  const Ceilings c = ceilings(d, w.cls, w.dtype, &opType);
  if (w.cls == OpClass::ShapeOnly) return c.launchUs;  // views and metadata: no data moved
  // Dequantising quantised weights adds to the compute side: at the device's measured rate where it
  // has one, else as modelled flops at the operator's peak.
  int64_t flops = w.flops;
  double dequantUs = 0.0;
  if (w.dequantElements > 0) {
    if (usable(d.dequantGElemsPerS))
      dequantUs = static_cast<double>(w.dequantElements) / (d.dequantGElemsPerS * 1e3);
    else
      flops += w.dequantFlops;
  }
  const double compute = std::max(static_cast<double>(std::max<int64_t>(0, flops)) / (c.peakGflops * 1e3) + dequantUs,
                                  reductionFloorUs(d, w));
  const double memory = boundUs(c, 0, w.bytesReadActivations + w.bytesWritten, w.bytesReadWeights);
  return c.launchUs + std::max(compute, memory) + coreSyncCostUs(d, d.cores);
}

RooflineParts rooflineGroupParts(const Device& d, OpClass cls, DType t, int64_t flops, int64_t offchipBytes) {
  const Ceilings c = ceilings(d, cls, t, nullptr);
  RooflineParts r;
  r.launchUs = c.launchUs;
  r.computeUs = static_cast<double>(std::max<int64_t>(0, flops)) / (c.peakGflops * 1e3);
  r.memoryUs = static_cast<double>(std::max<int64_t>(0, offchipBytes)) / (c.bandwidthGBs * 1e3);
  r.syncUs = coreSyncCostUs(d, d.cores);
  r.syncLevelUs = d.coreSyncUs > 0 && std::isfinite(d.coreSyncUs) ? d.coreSyncUs : 0.0;
  return r;
}

double rooflineGroupUs(const Device& d, OpClass cls, DType t, int64_t flops, int64_t offchipBytes) {
  const RooflineParts r = rooflineGroupParts(d, cls, t, flops, offchipBytes);
  return r.launchUs + std::max(r.computeUs, r.memoryUs) + r.syncUs;
}

double rooflineFloorUs(const Device& d, const OpWork& w) {
  double peak = usable(d.defaultPeakGflops) ? d.defaultPeakGflops : 1.0;
  for (const auto& [cls, v] : d.peakGflops)
    if (usable(v)) peak = std::max(peak, v);
  for (const auto& [type, o] : d.opTypeCosts)
    if (usable(o.peakGflops)) peak = std::max(peak, o.peakGflops);
  double speedup = 1.0;  // a group runs all its flops at its dominant member's dtype: the best of any
  for (const auto& [dt, v] : d.dtypeSpeedup)
    if (usable(v)) speedup = std::max(speedup, v);
  peak *= speedup;
  double bw = usable(d.memBandwidthGBs) ? d.memBandwidthGBs : 1.0;
  for (const auto& [cls, v] : d.bandwidthGBsByClass)
    if (usable(v)) bw = std::max(bw, v);
  for (const auto& [type, o] : d.opTypeCosts)
    if (usable(o.bandwidthGBs)) bw = std::max(bw, o.bandwidthGBs);
  const double compute = static_cast<double>(std::max<int64_t>(0, w.flops)) / (peak * 1e3);
  const double weights = static_cast<double>(std::max<int64_t>(0, w.bytesReadWeights)) / (bw * 1e3);
  return 0.5 * (compute + weights);
}

}  // namespace partex
