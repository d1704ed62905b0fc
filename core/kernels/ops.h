#pragma once
/// \file The plain CPU kernels (OpenMP loops, no oneDNN): one operator table that the CPU backend
/// (backends/cpu, after its oneDNN entries) and the ONNX importer's constant folding (core/onnx/consteval)
/// both run, so that a folded constant is the value a run computes. Every kernel file contributes entries
/// (op type, a check that says why a node cannot run, a factory).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace partex::cpu {

/// What a kernel sees of its device while running (already applied to the calling thread).
struct ExecContext {
  int threads = 1;  ///< OpenMP team size for this call.
};

/// One node's implementation, created by prepare(), run by one thread at a time.
class OpKernel {
 public:
  virtual ~OpKernel() = default;
  /// `in` has one entry per node input (nullptr when omitted); `out` has one per node output.
  virtual Status run(const ExecContext& ctx, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) = 0;
  /// Whether run() takes these inputs as they are when some are channels-last (Tensor::Layout::Nhwc);
  /// when not, the backend hands it row-major copies of those.
  virtual bool takesNhwc(const std::vector<const Tensor*>& in) const {
    (void)in;
    return false;
  }
  /// Whether the kernel keeps its own (transformed) copy of input i, so that the caller may give it up
  /// (pass an empty tensor there from now on) as long as the input shapes stay.
  virtual bool keepsCopy(size_t i) const {
    (void)i;
    return false;
  }
  /// Frees what the kernel caches between runs (transformed weights, scratch): a kernel run once.
  virtual void releaseCaches() {}
  /// Set by the backend when every consumer of the kernel's (first) output reads channels-last tensors:
  /// run() may then leave that output channels-last (nhwcOutputOk()).
  bool nhwcOut = false;
  /// Whether output 0 can be a view of input 0's storage (Kernel::canViewInput).
  virtual bool canViewInput() const { return false; }
  /// Set by the backend (Kernel::viewInput): run() may make output 0 a view of input 0.
  bool viewIn = false;
};

/// Row-major float32 [N, C, spatial...] (S pixels per image) into the channels-last layout of the same
/// shape: per image the [C][S] plane transposed to [S][C] in cache tiles (transposePlane32), blocks of
/// pixels split over `threads` OpenMP threads (the calling device's). What a CPU kernel pays for a
/// row-major input where an all-CPU plan hands it a channels-last one (a GPU's output arrives on the
/// host row-major; issue 25): its channels-last path, as profiled, then runs on the copy.
void plainToNhwc(const float* src, float* dst, int64_t N, int64_t C, int64_t S, int threads);

/// Returns "" when the node can run, otherwise the reason (one line).
using CheckFn = std::function<std::string(const Graph&, const Node&)>;
/// Creates the kernel of a node that passed its check.
using MakeFn = std::function<Result<std::unique_ptr<OpKernel>>(const Graph&, const Node&)>;

/// One operator type of the table.
struct OpEntry {
  std::string opType;
  CheckFn check;
  MakeFn make;
};

/// The plain kernels' table, every ops_*.cpp of this folder (element-wise, shape, reduce, recurrent,
/// extra, NonMaxSuppression, in that order; one entry per op type).
const std::vector<OpEntry>& plainOpTable();
/// The plain table's entry for `n` (default domain only); nullptr when it has none.
const OpEntry* findPlainEntry(const Node& n);
/// Runs node `op` of `g` once through its plain kernel on the calling thread, one OpenMP thread: the
/// check, the factory and run(). Errors (no plain kernel, refused by the check, bad inputs) name the
/// reason, never abort. What constant folding calls.
Status runPlainKernel(const Graph& g, OpId op, const std::vector<const Tensor*>& in, std::vector<Tensor>& out);

/// The elements of Shape (its start/end attributes applied) or, with `size`, of Size for an input of
/// `dims`: what ShapeKernel writes, for callers that know only the dims (folding Shape of an activation).
std::vector<int64_t> shapeOpValues(const Node& n, const std::vector<int64_t>& dims, bool size);
/// The output shape of Reshape, Flatten, Squeeze, Unsqueeze, Identity or Dropout for an input of `dims`,
/// `second` their shape or axes input (nullptr when omitted): what ReshapeKernel gives its output, for
/// callers that relabel a tensor's bytes without copying them (folding a large weight).
Result<std::vector<int64_t>> relabeledShape(const Node& n, const std::vector<int64_t>& dims, const Tensor* second);

void addElementwiseOps(std::vector<OpEntry>& table);
void addShapeOps(std::vector<OpEntry>& table);
void addReduceOps(std::vector<OpEntry>& table);
void addMiscOps(std::vector<OpEntry>& table);
void addExtraOps(std::vector<OpEntry>& table);
/// NonMaxSuppression (ops_nms.cpp).
void addNmsOps(std::vector<OpEntry>& table);

// Helpers shared by the check functions.

/// DType of the node's input i (Undefined when omitted or out of range).
DType inDType(const Graph& g, const Node& n, size_t i);
/// DType of the node's output i.
DType outDType(const Graph& g, const Node& n, size_t i);
/// True when input i is present.
bool hasIn(const Node& n, size_t i);
/// "" when every present input/output has a dtype in `allowed`, otherwise the reason.
std::string checkDTypes(const Graph& g, const Node& n, const std::vector<DType>& allowed);

}  // namespace partex::cpu
