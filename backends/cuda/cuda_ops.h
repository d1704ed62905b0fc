#pragma once
/// \file The CUDA backend's operators: each GpuOp runs one ONNX operator, or a chain the backend fuses
/// (a Conv with the BatchNormalization / per-channel Mul and Add folded into its weights, a residual Add
/// and an activation; an element-wise operator with the activation after it), on device tensors of a
/// value table indexed by ValueId. Weights an operator transforms (a Conv's folded filter) it uploads
/// itself when prepared; every other input, weights included, is read from the value table, which the
/// caller fills (cuda_program.h). Static shapes only: the graph's value shapes are the tensors' shapes.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/tensor.h"
#include "cuda/cuda_context.h"
#include "ir/graph.h"

namespace partex::cuda {

/// A tensor on the GPU: contiguous, row-major, of the graph value's dtype and shape.
struct DevTensor {
  void* ptr = nullptr;
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;
  int64_t numel() const;
  int64_t bytes() const;
  float* f32() const { return static_cast<float*>(ptr); }
};

/// Copies host tensor `t` (a channels-last one transposed to row-major on the way, straight into the
/// pinned buffer `staging`) into `d`, and waits for the copy unless `wait` is false: then the copy is
/// only enqueued on ctx.stream() and `staging` must stay untouched until the stream has been waited for
/// (one staging buffer per tensor in flight). The caller has checked that the sizes match.
Status uploadTensor(Context& ctx, PinnedBuffer& staging, const Tensor& t, const DevTensor& d, bool wait = true);
/// Copies `d` into `out` (made of d's dtype and shape) through `staging`, and waits for the copy.
Status downloadTensor(Context& ctx, PinnedBuffer& staging, const DevTensor& d, Tensor& out);

/// The host tensor of a leaf value (weight or model input) at prepare time: the same data the CPU
/// reference run reads (leafTensor), so that folded weights equal the reference's.
using LeafFn = std::function<Result<const Tensor*>(ValueId)>;

class GpuOp {
 public:
  virtual ~GpuOp() = default;
  /// Values read from the value table at launch (activations, and weights the op does not keep).
  const std::vector<ValueId>& reads() const { return reads_; }
  /// Values written (the chain's last output, or every output of a multi-output operator).
  const std::vector<ValueId>& writes() const { return writes_; }
  /// The graph operators this op runs, in order.
  const std::vector<OpId>& ops() const { return ops_; }
  /// A view (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout): writes()[0] is reads()[0]'s
  /// storage under another shape; launch() does nothing.
  bool isView() const { return view_; }
  /// Device bytes the op keeps (folded weights, scratch).
  virtual int64_t ownedBytes() const { return 0; }
  /// Enqueues the op on ctx.stream(): reads values[reads()], writes values[writes()] (allocated by the
  /// caller at the graph's shapes). Never synchronises; an error names the operator.
  virtual Status launch(Context& ctx, std::vector<DevTensor>& values) = 0;
  const std::string& name() const { return name_; }

 protected:
  std::vector<ValueId> reads_, writes_;
  std::vector<OpId> ops_;
  bool view_ = false;
  std::string name_;
};

/// "" when the CUDA backend runs `op` of `g`, else one line saying why not (op type, dtype, a shape
/// that is not static, an attribute it does not implement).
std::string gpuCheck(const Graph& g, OpId op);

/// The chain the backend runs as one GpuOp starting at `op`: {op} plus the operators it fuses after it
/// (see the file comment), each step only while the chained tensor has one consumer, is not a model
/// output, and (when `placement` is given) the next operator is placed on the same device.
std::vector<OpId> gpuChain(const Graph& g, OpId op, const std::vector<int>* placement = nullptr);

/// `ops` (a topologically ordered set of g's operators) cut into chains: each operator in exactly one,
/// no chain leaving the set, and the chains in an order where every value a chain reads is produced by
/// an earlier chain or comes from outside the set (a residual Add taken by one Conv's chain may read
/// another Conv chain's output, which then runs first).
std::vector<std::vector<OpId>> gpuChains(const Graph& g, const std::vector<OpId>& ops);

/// Whether `ops` is a chain gpuChain could have returned (the Backend's prepareGroup accepts these).
bool gpuChainOk(const Graph& g, const std::vector<OpId>& ops);

/// Prepares a chain (gpuChain) for the context's GPU: validates shapes and attributes, folds and
/// uploads what it keeps, chooses cuDNN / cuBLASLt algorithms (timing them on the GPU).
Result<std::unique_ptr<GpuOp>> makeGpuOp(Context& ctx, const Graph& g, const std::vector<OpId>& chain,
                                         const LeafFn& leaf);

}  // namespace partex::cuda
