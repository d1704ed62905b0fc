#pragma once
/// \file The CUDA backend's process-wide state: the GPU it runs on (device 0), its stream, the cuDNN and
/// cuBLASLt handles and their workspace, and what was detected about the GPU. Created on first use;
/// cudaSuccess-or-message helpers so that every CUDA call's failure becomes an Error naming the call.
/// No Qt, no ONNX.

#include <cuda_runtime.h>
#include <cublasLt.h>
#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "support/result.h"

namespace partex::cuda {

/// What the runtime reports about a GPU (no measurement: see calibration in bench/gpu and
/// backends/cuda/cuda_calibrate.h).
struct GpuInfo {
  int index = 0;
  std::string name;
  int smCount = 0;
  int ccMajor = 0, ccMinor = 0;
  int64_t memoryBytes = 0;
  double smClockMHz = 0;       ///< Peak SM clock.
  double memClockMHz = 0;      ///< Peak memory clock.
  int memBusWidthBits = 0;
  int64_t l2Bytes = 0;
  int driverVersion = 0;       ///< e.g. 13000 for 13.0.
  int runtimeVersion = 0;
  std::string describe() const;  ///< "NVIDIA H100 80GB HBM3, 132 SMs, sm_90, 79.2 GiB"
};

/// The number of usable GPUs (0 when there is no driver, no device, or the runtime fails), with the
/// reason in `why` when 0. Never throws, never aborts; cheap after the first call.
int gpuCount(std::string* why = nullptr);

/// Info about GPU `index` (gpuCount() > index).
Result<GpuInfo> gpuInfo(int index = 0);

/// Checks a CUDA runtime / cuDNN / cuBLAS status: ok, or an Error "what: <library message>".
Status check(cudaError_t e, const char* what);
Status check(cudnnStatus_t e, const char* what);
Status check(cublasStatus_t e, const char* what);

/// The shared per-process context on GPU 0: one compute stream, the library handles bound to it, and a
/// workspace for cuDNN / cuBLASLt (kWorkspaceBytes, allocated once). Operators enqueue on stream();
/// callers serialise use of the context (a lock() scope): the executor runs one GPU lane.
class Context {
 public:
  static constexpr size_t kWorkspaceBytes = size_t{64} << 20;
  /// The context, created on first use; an error when no GPU is usable.
  static Result<Context*> get();
  cudaStream_t stream() const { return stream_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasLtHandle_t cublasLt() const { return lt_; }
  void* workspace() const { return workspace_; }
  size_t workspaceBytes() const { return kWorkspaceBytes; }
  const GpuInfo& info() const { return info_; }
  /// Whether float32 convolutions and matrix products may use TF32 tensor cores (default off:
  /// float32 results then match the CPU reference to 1e-5 rather than 1e-3).
  bool allowTf32() const { return allowTf32_; }
  void setAllowTf32(bool on) { allowTf32_ = on; }
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }
  ~Context();

 private:
  Context() = default;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  GpuInfo info_;
  bool allowTf32_ = false;
  std::mutex mutex_;
};

/// Device memory owned by one object (cudaMalloc / cudaFree), bytes rounded up to 256.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  ~DeviceBuffer();
  /// Makes the buffer at least `bytes` large (contents lost when it grows).
  Status ensure(size_t bytes);
  /// Copies `bytes` from host memory (synchronously on the context's stream).
  Status upload(const void* host, size_t bytes, cudaStream_t stream);
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

/// Page-locked host memory (cudaMallocHost) for host-device copies at full bandwidth.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();
  Status ensure(size_t bytes);
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

/// A sequence of launches captured once as a CUDA graph and replayed. At batch 1 the host's cost of
/// launching dominates: a replay costs one launch where the sequence costs one per kernel and library
/// call (cuDNN 9's legacy convolution calls take tens of microseconds of host time each). What was
/// captured reads and writes the same device pointers at every replay.
class CapturedGraph {
 public:
  CapturedGraph() = default;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph();
  /// Captures what `launch` enqueues on `stream` (nothing runs), replacing an earlier capture. The
  /// launches must have run once eagerly before: libraries load their kernels lazily, which must not
  /// happen under capture. On failure nothing is kept.
  Status capture(cudaStream_t stream, const std::function<Status()>& launch);
  /// Enqueues the captured graph on `stream`.
  Status replay(cudaStream_t stream) const;
  bool ready() const { return exec_ != nullptr; }
  void reset();

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace partex::cuda
