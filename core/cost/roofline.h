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

#include <string>

#include "cost/work.h"
#include "platform/platform.h"

namespace partex {

/// Predicted time in microseconds of `w` on `d` (finite; support is checked separately). `opType`
/// (the node's ONNX op type; may be empty) selects Device::opTypeCosts.
double rooflineUs(const Device& d, const OpWork& w, const std::string& opType = {});
/// Predicted time in microseconds of a fused group with the given total flops, off-chip bytes,
/// and dominant class and dtype: one launch.
double rooflineGroupUs(const Device& d, OpClass cls, DType t, int64_t flops, int64_t offchipBytes);

}  // namespace partex
