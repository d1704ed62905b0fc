#include "cuda/cuda_calibrate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cuda/cuda_pool.h"
#include "kernels/kernels.h"

namespace partex::cuda {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Times `fn` (enqueueing work on `s`) with events: median seconds of `reps` after one warm-up.
template <class F>
Result<double> timeEvents(cudaStream_t s, int reps, F&& fn) {
  cudaEvent_t a = nullptr, b = nullptr;
  Status st = check(cudaEventCreate(&a), "cudaEventCreate");
  if (st) st = check(cudaEventCreate(&b), "cudaEventCreate");
  std::vector<double> t;
  if (st) st = fn();
  if (st) st = check(cudaStreamSynchronize(s), "warm-up");
  for (int r = 0; r < reps && st; ++r) {
    st = check(cudaEventRecord(a, s), "cudaEventRecord");
    if (st) st = fn();
    if (st) st = check(cudaEventRecord(b, s), "cudaEventRecord");
    if (st) st = check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    if (st) st = check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    t.push_back(ms * 1e-3);
  }
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  if (!st) return Error{st.message()};
  return median(t);
}

/// One cuBLASLt product C[n,n] = A B of `type` with `compute`, timed.
Result<double> gemmFlops(Context& ctx, cudaDataType_t type, cublasComputeType_t compute, int64_t n) {
  const size_t es = type == CUDA_R_16F ? 2 : 4;
  DeviceBuffer a, b, c;
  Status st = a.ensure(static_cast<size_t>(n * n) * es);
  if (st) st = b.ensure(static_cast<size_t>(n * n) * es);
  if (st) st = c.ensure(static_cast<size_t>(n * n) * es);
  // Not zeros: data decides some kernels' speed (random-ish bytes; 0x3c3c... is a finite value in both types).
  if (st) st = check(cudaMemsetAsync(a.get(), 0x3c, a.bytes(), ctx.stream()), "memset");
  if (st) st = check(cudaMemsetAsync(b.get(), 0x3b, b.bytes(), ctx.stream()), "memset");
  if (!st) return Error{st.message()};
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t l = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  const cudaDataType_t scale = CUDA_R_32F;
  st = check(cublasLtMatmulDescCreate(&desc, compute, scale), "desc");
  if (st) st = check(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(n), static_cast<uint64_t>(n), n), "layout");
  if (st) st = check(cublasLtMatmulPreferenceCreate(&pref), "preference");
  const uint64_t ws = ctx.workspaceBytes();
  if (st) st = check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "ws");
  cublasLtMatmulHeuristicResult_t res{};
  int count = 0;
  if (st) st = check(cublasLtMatmulAlgoGetHeuristic(ctx.cublasLt(), desc, l, l, l, l, pref, 1, &res, &count), "heuristic");
  if (st && count == 0) st = makeError("no cuBLASLt algorithm");
  Result<double> t = 0.0;
  if (st) {
    const float one = 1.f, zero = 0.f;
    t = timeEvents(ctx.stream(), 10, [&]() -> Status {
      return check(cublasLtMatmul(ctx.cublasLt(), desc, &one, a.get(), l, b.get(), l, &zero, c.get(), l, c.get(), l,
                                  &res.algo, ctx.workspace(), ctx.workspaceBytes(), ctx.stream()),
                   "cublasLtMatmul");
    });
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (l) cublasLtMatrixLayoutDestroy(l);
  if (desc) cublasLtMatmulDescDestroy(desc);
  if (!st) return Error{st.message()};
  if (!t) return Error{t.message()};
  return 2.0 * static_cast<double>(n) * n * n / *t;
}

}  // namespace

std::string GpuCalibration::toJson() const {
  char buf[1536];
  std::snprintf(buf, sizeof buf,
                "{\"name\": \"%s\", \"sm_count\": %d, \"cc\": \"%d.%d\", \"memory_bytes\": %lld, \"sm_clock_mhz\": %.0f, "
                "\"mem_clock_mhz\": %.0f, \"bus_width_bits\": %d, \"l2_bytes\": %lld, \"driver\": %d, \"runtime\": %d, "
                "\"d2d_bytes_per_s\": %.4g, \"h2d_bytes_per_s\": %.4g, \"d2h_bytes_per_s\": %.4g, \"h2d_small_us\": %.3f, \"d2h_small_us\": %.3f, "
                "\"h2d_staged_bytes_per_s\": %.4g, \"d2h_staged_bytes_per_s\": %.4g, \"d2h_nhwc_bytes_per_s\": %.4g, "
                "\"launch_us\": %.3f, \"graph_node_us\": %.3f, \"sync_us\": %.3f, \"fp32_flops\": %.4g, "
                "\"tf32_flops\": %.4g, \"fp16_flops\": %.4g, \"seconds\": %.3f}",
                info.name.c_str(), info.smCount, info.ccMajor, info.ccMinor, static_cast<long long>(info.memoryBytes),
                info.smClockMHz, info.memClockMHz, info.memBusWidthBits, static_cast<long long>(info.l2Bytes),
                info.driverVersion, info.runtimeVersion, d2dBytesPerS, h2dBytesPerS, d2hBytesPerS, h2dSmallUs, d2hSmallUs,
                h2dStagedBytesPerS, d2hStagedBytesPerS, d2hNhwcBytesPerS, launchUs,
                graphNodeUs, syncUs, fp32Flops, tf32Flops, fp16Flops, seconds);
  return buf;
}

Result<GpuCalibration> calibrateGpu() {
  const auto t0 = Clock::now();
  auto ctxr = Context::get();
  if (!ctxr) return Error{ctxr.message()};
  Context& ctx = **ctxr;
  auto lock = ctx.lock();
  cudaStream_t s = ctx.stream();
  GpuCalibration c;
  c.info = ctx.info();
  // Device memory bandwidth.
  {
    const size_t bytes = size_t{256} << 20;
    DeviceBuffer a, b;
    if (auto st = a.ensure(bytes); !st) return Error{st.message()};
    if (auto st = b.ensure(bytes); !st) return Error{st.message()};
    auto t = timeEvents(s, 10, [&] { return check(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s), "d2d"); });
    if (!t) return Error{t.message()};
    c.d2dBytesPerS = 2.0 * static_cast<double>(bytes) / *t;
  }
  // Host-device copies over pinned memory.
  {
    const size_t bytes = size_t{64} << 20;
    DeviceBuffer d;
    PinnedBuffer h;
    if (auto st = d.ensure(bytes); !st) return Error{st.message()};
    if (auto st = h.ensure(bytes); !st) return Error{st.message()};
    auto up = timeEvents(s, 10, [&] { return check(cudaMemcpyAsync(d.get(), h.get(), bytes, cudaMemcpyHostToDevice, s), "h2d"); });
    auto down = timeEvents(s, 10, [&] { return check(cudaMemcpyAsync(h.get(), d.get(), bytes, cudaMemcpyDeviceToHost, s), "d2h"); });
    if (!up) return Error{up.message()};
    if (!down) return Error{down.message()};
    c.h2dBytesPerS = static_cast<double>(bytes) / *up;
    c.d2hBytesPerS = static_cast<double>(bytes) / *down;
    // A 4 KiB copy issued and waited for, host-timed: the fixed cost of each direction.
    auto smallCopyUs = [&](void* dst, const void* src, cudaMemcpyKind kind) -> Result<double> {
      std::vector<double> small;
      for (int r = 0; r < 50; ++r) {
        const auto a = Clock::now();
        if (auto st = check(cudaMemcpyAsync(dst, src, 4096, kind, s), "small copy"); !st) return Error{st.message()};
        if (auto st = check(cudaStreamSynchronize(s), "sync"); !st) return Error{st.message()};
        small.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
      }
      return median(small);
    };
    auto h2dSmall = smallCopyUs(d.get(), h.get(), cudaMemcpyHostToDevice);
    auto d2hSmall = smallCopyUs(h.get(), d.get(), cudaMemcpyDeviceToHost);
    if (!h2dSmall) return Error{h2dSmall.message()};
    if (!d2hSmall) return Error{d2hSmall.message()};
    c.h2dSmallUs = *h2dSmall;
    c.d2hSmallUs = *d2hSmall;
    // The executor's staged paths (see GpuCalibration) for a [1, 64, 56, 56] float tensor (784 KiB, a
    // ResNet activation). Not 64x64: over a plane of a multiple of 1024 pixels the conversion below
    // takes plainToNhwc's narrower blocks (2.3x a memcpy on the development machine, against 1.6x over
    // 56x56), a case rarer than the one it should stand for.
    const int C = 64, HW = 56 * 56;
    const size_t act = static_cast<size_t>(C) * HW * sizeof(float);
    std::vector<float> host(act / sizeof(float), 1.f), nhwc(act / sizeof(float), 0.f);
    auto wall = [&](auto&& body) -> Result<double> {
      std::vector<double> us;
      for (int r = 0; r < 21; ++r) {
        const auto a = Clock::now();
        if (auto st = body(); !st) return Error{st.message()};
        if (r > 0) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
      }
      return median(us);
    };
    auto up1 = wall([&]() -> Status {
      std::memcpy(h.get(), host.data(), act);
      if (auto st = check(cudaMemcpyAsync(d.get(), h.get(), act, cudaMemcpyHostToDevice, s), "h2d"); !st) return st;
      return check(cudaStreamSynchronize(s), "sync");
    });
    auto download = [&]() -> Status {
      if (auto st = check(cudaMemcpyAsync(h.get(), d.get(), act, cudaMemcpyDeviceToHost, s), "d2h"); !st) return st;
      return check(cudaStreamSynchronize(s), "sync");
    };
    auto down1 = wall([&]() -> Status {
      if (auto st = download(); !st) return st;
      std::memcpy(host.data(), h.get(), act);
      return {};
    });
    // The NCHW -> NHWC pass as the CPU's kernels make it of a row-major input they read channels-last
    // (cpu::plainToNhwc, core/kernels; one thread, as a cpu-serial reader).
    auto downNhwc = wall([&]() -> Status {
      if (auto st = download(); !st) return st;
      std::memcpy(host.data(), h.get(), act);
      cpu::plainToNhwc(host.data(), nhwc.data(), 1, C, HW, 1);
      return {};
    });
    if (!up1) return Error{up1.message()};
    if (!down1) return Error{down1.message()};
    if (!downNhwc) return Error{downNhwc.message()};
    auto rate = [&](double us, double fixed) { return static_cast<double>(act) / (std::max(us - fixed, 0.1 * us) * 1e-6); };
    c.h2dStagedBytesPerS = rate(*up1, c.h2dSmallUs);
    c.d2hStagedBytesPerS = rate(*down1, c.d2hSmallUs);
    c.d2hNhwcBytesPerS = rate(*downNhwc, c.d2hSmallUs);
  }
  // Launch overhead: host time per launch, round trip, and per node of a graph.
  {
    const int n = 1000;
    std::vector<double> per, rt;
    for (int r = 0; r < 5; ++r) {
      const auto a = Clock::now();
      for (int i = 0; i < n; ++i)
        if (auto st = check(gpuBusyWait(0, s), "launch"); !st) return Error{st.message()};
      per.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count() / n);
      if (auto st = check(cudaStreamSynchronize(s), "sync"); !st) return Error{st.message()};
    }
    for (int r = 0; r < 50; ++r) {
      const auto a = Clock::now();
      if (auto st = check(gpuBusyWait(0, s), "launch"); !st) return Error{st.message()};
      if (auto st = check(cudaStreamSynchronize(s), "sync"); !st) return Error{st.message()};
      rt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
    }
    c.launchUs = median(per);
    c.syncUs = median(rt);
    CapturedGraph graph;
    Status st = graph.capture(s, [&] {
      Status l;
      for (int i = 0; i < n && l; ++i) l = check(gpuBusyWait(0, s), "launch");
      return l;
    });
    if (!st) return Error{st.message()};
    auto t = timeEvents(s, 5, [&] { return graph.replay(s); });
    if (t) c.graphNodeUs = *t * 1e6 / n;
  }
  auto f32 = gemmFlops(ctx, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4096);
  auto tf32 = gemmFlops(ctx, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4096);
  auto f16 = gemmFlops(ctx, CUDA_R_16F, CUBLAS_COMPUTE_32F, 4096);
  if (!f32) return Error{f32.message()};
  c.fp32Flops = *f32;
  c.tf32Flops = tf32 ? *tf32 : 0;
  c.fp16Flops = f16 ? *f16 : 0;
  c.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return c;
}

}  // namespace partex::cuda
