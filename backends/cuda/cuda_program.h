#pragma once
/// \file A model (or the part of a plan placed on the GPU) run on the GPU with its tensors resident
/// there: weights uploaded once, every intermediate tensor in device memory, the operators fused into
/// chains (cuda_ops.h) and enqueued on one stream, and the whole sequence captured once as a CUDA graph
/// and replayed, since at batch 1 launch overhead dominates. Inputs and outputs cross over pinned host
/// buffers. Also times each operator with CUDA events (the GPU profile).
///
/// Use:
/// \code
///   auto p = cuda::Program::build(g, order, leaf);     // order: a topological order of g's operators
///   p->setInput(v, tensor); p->run(true);              // true: replay the CUDA graph
///   Tensor out; p->output(g.outputs[0], out);
/// \endcode

#include <memory>
#include <string>
#include <vector>

#include "backend/tensor.h"
#include "cuda/cuda_ops.h"
#include "ir/graph.h"

namespace partex::cuda {

class Program {
 public:
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  /// Prepares `ops` (a topologically ordered subset of g's operators; their inputs produced outside
  /// the subset are the program's inputs) for GPU 0. Every leaf value read (weights, model inputs) is
  /// taken from `leaf` at build time: weights are uploaded then, inputs too (setInput replaces them).
  static Result<std::unique_ptr<Program>> build(const Graph& g, const std::vector<OpId>& ops, const LeafFn& leaf);

  /// Values the program reads that it does not produce (model inputs, weights, tensors from other
  /// devices), and values it produces that are read outside it or are model outputs.
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }

  /// Copies a host tensor into input value v (dtype and shape must match). Enqueued on the stream.
  Status setInput(ValueId v, const Tensor& t);
  /// Runs every operator once: replaying the CUDA graph when `graph` (captured on the first such
  /// call), else launching them one by one. Waits for the GPU to finish.
  Status run(bool graph);
  /// Copies value v (an output, or any value the program holds) to the host.
  Status output(ValueId v, Tensor& out);

  /// Per GpuOp: the operators it runs and its time in microseconds measured with CUDA events around
  /// its launch (one eager run, after `warmup` runs; median of `reps`).
  struct OpTime {
    std::vector<OpId> ops;
    std::string name;
    double us = 0;
  };
  Result<std::vector<OpTime>> timeOps(int warmup, int reps);

  /// Number of GpuOps (kernels or library calls; views excluded) and device bytes held.
  int launches() const;
  int64_t deviceBytes() const { return deviceBytes_; }

 private:
  Program() = default;
  Status launchAll();

  const Graph* g_ = nullptr;
  Context* ctx_ = nullptr;
  std::vector<std::unique_ptr<GpuOp>> ops_;
  std::vector<DevTensor> values_;           // by ValueId
  std::vector<DeviceBuffer> buffers_;       // storage of values_ (views share their source's)
  std::vector<ValueId> inputs_, outputs_;
  PinnedBuffer staging_;
  CapturedGraph captured_;
  int64_t deviceBytes_ = 0;
};

}  // namespace partex::cuda
