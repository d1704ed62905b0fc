#pragma once
/// \file Measures the GPU once, as the CPU calibration measures the cores: memory bandwidth (a large
/// device-to-device copy, bytes read plus written), host-device copy bandwidth over pinned memory both
/// ways, the launch overhead of a minimal kernel (alone and in a captured CUDA graph), and the FP32,
/// TF32 and FP16 matrix-product throughput of cuBLASLt. The cost model's GPU device takes its
/// bandwidth, flop rates and launch overhead from here instead of a datasheet.

#include <string>

#include "cuda/cuda_context.h"

namespace partex::cuda {

struct GpuCalibration {
  GpuInfo info;
  double d2dBytesPerS = 0;   ///< Device memory: (read + write) bytes per second of a 256 MiB copy.
  double h2dBytesPerS = 0;   ///< Pinned host to device, 64 MiB.
  double d2hBytesPerS = 0;   ///< Device to pinned host, 64 MiB.
  double h2dSmallUs = 0;     ///< One 4 KiB host-to-device copy, issued and waited for: the fixed cost.
  double d2hSmallUs = 0;     ///< The same back to the host (the downloads' fixed cost; 0: not measured).
  /// The executor's paths for a [1, 64, 56, 56] activation (784 KiB), less the fixed cost: a kernel's
  /// input copied from an ordinary host tensor into its pinned staging buffer, then to the device, waited
  /// for (uploadTensor);
  /// an output copied back to staging, waited for, then into the host tensor (downloadTensor); and the
  /// same download followed by the NCHW -> NHWC pass a CPU kernel that reads channels-last makes of it.
  double h2dStagedBytesPerS = 0;
  double d2hStagedBytesPerS = 0;
  double d2hNhwcBytesPerS = 0;
  double launchUs = 0;       ///< Host cost of one kernel launch issued back to back (stream, no graph).
  double graphNodeUs = 0;    ///< GPU time per kernel of a captured graph of minimal kernels.
  double syncUs = 0;         ///< Launch of one minimal kernel and waiting for it (round trip).
  double fp32Flops = 0;      ///< cuBLASLt SGEMM 4096^3, flop/s (no TF32).
  double tf32Flops = 0;      ///< The same with TF32 tensor cores.
  double fp16Flops = 0;      ///< cuBLASLt HGEMM 4096^3 (FP32 accumulate), flop/s.
  double seconds = 0;        ///< How long the calibration took.
  std::string toJson() const;
};

/// Runs the measurements on GPU 0 (about a second); medians of several repetitions each.
Result<GpuCalibration> calibrateGpu();

}  // namespace partex::cuda
