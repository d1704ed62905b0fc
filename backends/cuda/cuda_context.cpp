#include "cuda/cuda_context.h"

#include <cstdio>

namespace partex::cuda {

Status check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return makeError(what, ": CUDA error ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}

Status check(cudnnStatus_t e, const char* what) {
  if (e == CUDNN_STATUS_SUCCESS) return {};
  return makeError(what, ": cuDNN error ", cudnnGetErrorString(e));
}

Status check(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return {};
  return makeError(what, ": cuBLAS error ", std::to_string(static_cast<int>(e)));
}

std::string GpuInfo::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, %d SMs, sm_%d%d, %.1f GiB", name.c_str(), smCount, ccMajor, ccMinor,
                static_cast<double>(memoryBytes) / (1 << 30));
  return buf;
}

int gpuCount(std::string* why) {
  static int count = -1;
  static std::string reason;
  static std::once_flag once;
  std::call_once(once, [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      reason = std::string("no usable GPU: ") + cudaGetErrorString(e);
      (void)cudaGetLastError();  // clear the sticky-free error state
      n = 0;
    } else if (n == 0) {
      reason = "no GPU found";
    }
    count = n;
  });
  if (why) *why = reason;
  return count;
}

Result<GpuInfo> gpuInfo(int index) {
  std::string why;
  if (index < 0 || index >= gpuCount(&why)) return makeError("GPU ", std::to_string(index), ": ", why.empty() ? "no such GPU" : why);
  cudaDeviceProp p{};
  if (auto st = check(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties"); !st) return Error{st.message()};
  GpuInfo g;
  g.index = index;
  g.name = p.name;
  g.smCount = p.multiProcessorCount;
  g.ccMajor = p.major;
  g.ccMinor = p.minor;
  g.memoryBytes = static_cast<int64_t>(p.totalGlobalMem);
  g.memBusWidthBits = p.memoryBusWidth;
  g.l2Bytes = p.l2CacheSize;
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, index) == cudaSuccess) g.smClockMHz = khz / 1000.0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, index) == cudaSuccess) g.memClockMHz = khz / 1000.0;
  (void)cudaDriverGetVersion(&g.driverVersion);
  (void)cudaRuntimeGetVersion(&g.runtimeVersion);
  return g;
}

Result<Context*> Context::get() {
  static std::unique_ptr<Context> ctx;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    auto info = gpuInfo(0);
    if (!info) {
      error = info.message();
      return;
    }
    std::unique_ptr<Context> c(new Context());
    c->info_ = *info;
    Status st = check(cudaSetDevice(0), "cudaSetDevice");
    if (st) st = check(cudaStreamCreateWithFlags(&c->stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    if (st) st = check(cudnnCreate(&c->cudnn_), "cudnnCreate");
    if (st) st = check(cudnnSetStream(c->cudnn_, c->stream_), "cudnnSetStream");
    if (st) st = check(cublasLtCreate(&c->lt_), "cublasLtCreate");
    if (st) st = check(cudaMalloc(&c->workspace_, kWorkspaceBytes), "cudaMalloc(workspace)");
    if (!st) {
      error = st.message();
      return;
    }
    ctx = std::move(c);
  });
  if (!ctx) return makeError("cuda backend: ", error);
  return ctx.get();
}

Context::~Context() {
  // Destroyed at exit, possibly after the CUDA runtime unloaded: errors are ignored.
  if (workspace_) (void)cudaFree(workspace_);
  if (lt_) (void)cublasLtDestroy(lt_);
  if (cudnn_) (void)cudnnDestroy(cudnn_);
  if (stream_) (void)cudaStreamDestroy(stream_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) (void)cudaFree(p_);
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) (void)cudaFree(p_);
}

Status DeviceBuffer::ensure(size_t bytes) {
  bytes = (bytes + 255) / 256 * 256;
  if (bytes == 0) bytes = 256;
  if (p_ && bytes_ >= bytes) return {};
  if (p_) (void)cudaFree(p_);
  p_ = nullptr;
  bytes_ = 0;
  if (auto st = check(cudaMalloc(&p_, bytes), "cudaMalloc"); !st) {
    p_ = nullptr;
    return makeError(st.message(), " (", std::to_string(bytes), " bytes)");
  }
  bytes_ = bytes;
  return {};
}

Status DeviceBuffer::upload(const void* host, size_t bytes, cudaStream_t stream) {
  if (auto st = ensure(bytes); !st) return st;
  if (bytes == 0) return {};
  if (auto st = check(cudaMemcpyAsync(p_, host, bytes, cudaMemcpyHostToDevice, stream), "upload"); !st) return st;
  return check(cudaStreamSynchronize(stream), "upload (synchronise)");
}

PinnedBuffer::~PinnedBuffer() {
  if (p_) (void)cudaFreeHost(p_);
}

Status PinnedBuffer::ensure(size_t bytes) {
  if (p_ && bytes_ >= bytes) return {};
  if (p_) (void)cudaFreeHost(p_);
  p_ = nullptr;
  bytes_ = 0;
  if (auto st = check(cudaMallocHost(&p_, bytes ? bytes : 1), "cudaMallocHost"); !st) {
    p_ = nullptr;
    return st;
  }
  bytes_ = bytes;
  return {};
}

CapturedGraph::~CapturedGraph() { reset(); }

void CapturedGraph::reset() {
  if (exec_) (void)cudaGraphExecDestroy(exec_);
  if (graph_) (void)cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

Status CapturedGraph::capture(cudaStream_t stream, const std::function<Status()>& launch) {
  reset();
  if (auto st = check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"); !st)
    return st;
  Status launched = launch();
  cudaGraph_t g = nullptr;
  Status ended = check(cudaStreamEndCapture(stream, &g), "cudaStreamEndCapture");
  if (!launched || !ended) {
    if (g) (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();  // a failed capture leaves its error: the next call must not see it
    if (!launched) return makeError("capture: ", launched.message());
    return ended;
  }
  graph_ = g;
  if (auto st = check(cudaGraphInstantiate(&exec_, graph_, 0), "cudaGraphInstantiate"); !st) {
    exec_ = nullptr;
    reset();
    return st;
  }
  return {};
}

Status CapturedGraph::replay(cudaStream_t stream) const {
  if (!exec_) return makeError("cudaGraphLaunch: nothing captured");
  return check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
}

}  // namespace partex::cuda
