#pragma once
/// \file Internal to the CPU backend: the operator table. Every kernel file contributes entries (op type,
/// a check that says why a node cannot run, a factory); CpuBackend looks them up.

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
};

/// Whether value `v` of `g` may be stored channels-last: a float32 rank-4 activation that is no model
/// output and whose every consumer reads channels-last inputs there (Conv's X, pooling's X; element-wise
/// operators, BatchNormalization and channel Concat when their own output may be channels-last too).
bool nhwcOutputOk(const Graph& g, ValueId v);

/// The kernel of a fused group (ir/fusion.h; `ops` anchor first, a lone Conv included): ops_fused.cpp.
Result<std::unique_ptr<OpKernel>> makeFusedKernel(const Graph& g, const std::vector<OpId>& ops);

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

/// The table filled by every kernel file (see ops_*.cpp).
const std::vector<OpEntry>& opTable();
void addOneDnnOps(std::vector<OpEntry>& table);
void addElementwiseOps(std::vector<OpEntry>& table);
void addShapeOps(std::vector<OpEntry>& table);
void addReduceOps(std::vector<OpEntry>& table);
void addMiscOps(std::vector<OpEntry>& table);
void addExtraOps(std::vector<OpEntry>& table);

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
