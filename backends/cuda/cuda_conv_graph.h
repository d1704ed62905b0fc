#pragma once
/// \file Float32 NCHW 2-D convolution forward through cuDNN 9's graph (backend) API: one operation graph
/// (X, W -> Y), the engine configurations cuDNN's heuristics list for it, and an execution plan per
/// usable configuration. The legacy API (cudnnConvolutionForward) reaches only its fixed list of
/// algorithms; the graph API exposes every engine and knob setting, and at batch 1 some of them are
/// several times faster than the best legacy FMA algorithm. ConvK (cuda_ops.cpp) times these plans
/// beside the legacy algorithms and keeps the fastest. No Qt, no ONNX.

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_context.h"
#include "support/result.h"

namespace partex::cuda {

/// Execution plans for one convolution, built once; each candidate runs on the context's stream (the
/// cuDNN handle's), with the context's workspace, so that a run can be captured in a CUDA graph.
/// Groups are implied by the shapes, as in the graph API: W is [K, C/g, kh, kw] for X [N, C, H, W].
class ConvGraphPlans {
 public:
  /// The most plans build() keeps unless told otherwise: each one costs a plan finalisation at build
  /// time and a timing in ConvK.
  static constexpr int kDefaultMaxPlans = 12;

  ConvGraphPlans() = default;
  ConvGraphPlans(ConvGraphPlans&&) noexcept = default;
  ConvGraphPlans& operator=(ConvGraphPlans&&) noexcept = default;
  ConvGraphPlans(const ConvGraphPlans&) = delete;
  ConvGraphPlans& operator=(const ConvGraphPlans&) = delete;
  ~ConvGraphPlans();

  /// Plans for y = conv(x, w) (cross-correlation, symmetric pads [top, left], strides and dilations
  /// [h, w]), from heuristics mode A and then the fallback mode, in that order: at most `maxPlans` of
  /// mode A's, then at most 4 of the fallback mode's that mode A did not list. Engine configurations whose
  /// plan does not build, that need more than `maxWorkspace` bytes, that compile kernels at run time,
  /// or whose numerics differ from float32 FMA (tensor cores unless `allowTf32`; inputs converted
  /// down; reduced-precision reduction) are skipped. An error only when the operation graph itself
  /// is refused; zero usable plans is not an error (count() == 0).
  static Result<ConvGraphPlans> build(Context& ctx, const int64_t xDims[4], const int64_t wDims[4],
                                      const int64_t yDims[4], const int64_t pads[2], const int64_t strides[2],
                                      const int64_t dilations[2], bool allowTf32, size_t maxWorkspace,
                                      int maxPlans = kDefaultMaxPlans);

  /// Usable plans.
  int count() const { return static_cast<int>(plans_.size()); }
  /// Plan i for logs: "eng<global index>{<knob type>=<value>,...}" and its heuristics mode.
  std::string describe(int i) const;
  /// Workspace bytes plan i needs (at most build()'s maxWorkspace).
  size_t workspace(int i) const;
  /// Whether x, w and y meet the alignment the plans were built for (16 bytes).
  static bool aligned(const void* x, const void* w, const void* y);
  /// Enqueues plan i on ctx's stream: y = conv(x, w), with ctx.workspace(). The variant pack (which
  /// does not depend on the plan) is built on the first run with these pointers and kept for the next.
  Status run(int i, Context& ctx, const float* x, const float* w, float* y);

 private:
  /// A backend descriptor, destroyed with its owner.
  struct DescDeleter {
    void operator()(void* d) const;
  };
  using Desc = std::unique_ptr<void, DescDeleter>;
  struct Plan {
    Desc plan;
    std::string what;
    size_t workspace = 0;
  };

  static Status create(Desc& out, cudnnBackendDescriptorType_t type);

  std::vector<Desc> keep_;  ///< Tensors, convolution, operation, graph and engine configurations.
  std::vector<Plan> plans_;
  Desc pack_;               ///< The last run's variant pack, for packPtrs_.
  const void* packPtrs_[4] = {nullptr, nullptr, nullptr, nullptr};  ///< x, w, y, workspace.
};

}  // namespace partex::cuda
