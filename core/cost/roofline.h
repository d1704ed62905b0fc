#pragma once
/// \file Roofline device model: an operator's time on a device from its work.
/// time = launch + max(flops / peak(class, dtype), activation bytes / bandwidth + weight bytes /
/// device bandwidth). Launch and (activation) bandwidth are the class's where the device gives them per
/// class (Device::launchOverheadUsByClass, bandwidthGBsByClass), and all three numbers the op type's
/// where it gives them per op type (Device::opTypeCosts): a device calibrated on real kernels reaches
/// different ceilings per class. Weights always stream at the device's memBandwidthGBs (read-only, laid
/// out once: no per-call layout conversion), so without per-class numbers the memory time is
/// (activations + weights) / memBandwidthGBs.
/// Shape-only operators (Reshape, Squeeze, ...) cost only the launch overhead: they move no data.
/// A multi-core device with a barrier cost (Device::coreSyncUs) adds the barrier of its `cores`
/// (coreSyncCostUs) to every kernel that moves data: the default is to run on all of them.

#include <string>

#include "cost/work.h"
#include "platform/platform.h"

namespace partex {

/// Predicted time in microseconds of `w` on `d` (finite; support is checked separately). `opType`
/// (the node's ONNX op type; may be empty) selects Device::opTypeCosts.
double rooflineUs(const Device& d, const OpWork& w, const std::string& opType = {});
/// The thin-kernel floor of `w` on `d` (Device::waveOutputs, reductionStepUsByClass): waves *
/// (MACs per output element) * the class's step, where waves = ceil(output elements / waveOutputs); 0
/// when the device does not model it or `w` has no multiply-accumulates. rooflineUs takes the larger of
/// it and the flops at the peak as the compute time.
double reductionFloorUs(const Device& d, const OpWork& w);
/// Predicted time in microseconds of a fused group with the given total flops, off-chip bytes,
/// and dominant class and dtype: one launch.
double rooflineGroupUs(const Device& d, OpClass cls, DType t, int64_t flops, int64_t offchipBytes);

/// A group's roofline time in its parts (rooflineGroupUs = launch + max(compute, memory) + sync): the
/// fixed launch, compute at the full peak of class `cls`, the memory time of `offchipBytes`, and the
/// barrier of all the device's cores.
struct RooflineParts {
  double launchUs = 0, computeUs = 0, memoryUs = 0, syncUs = 0;
  double syncLevelUs = 0;  ///< One level of the barrier tree (Device::coreSyncUs, 0 when unset).
};
RooflineParts rooflineGroupParts(const Device& d, OpClass cls, DType t, int64_t flops, int64_t offchipBytes);
/// The barrier of a kernel on k cores of d: Device::coreSyncUs * ceil(log2 k), 0 for k <= 1.
double coreSyncCostUs(const Device& d, int k);
/// A time that `w`'s share of any group on d never goes below: half of (its flops at the device's
/// highest peak for its dtype + its weight bytes at the device's highest bandwidth). For any group S,
/// rooflineGroupUs >= max(sum of compute, sum of weight reads) >= sum over S of this floor.
double rooflineFloorUs(const Device& d, const OpWork& w);

}  // namespace partex
