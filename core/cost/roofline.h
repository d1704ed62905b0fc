#pragma once
/// \file Roofline device model: an operator's time on a device from its work.
/// time = launch + max(flops / peak(class, dtype), bytes / bandwidth). Shape-only operators
/// (Reshape, Squeeze, ...) cost only the launch overhead: they move no data.

#include "cost/work.h"
#include "platform/platform.h"

namespace partex {

/// Predicted time in microseconds of `w` on `d` (finite; support is checked separately).
double rooflineUs(const Device& d, const OpWork& w);
/// Predicted time in microseconds of a fused group with the given total flops, off-chip bytes,
/// and dominant class and dtype: one launch.
double rooflineGroupUs(const Device& d, OpClass cls, DType t, int64_t flops, int64_t offchipBytes);

}  // namespace partex
