#pragma once
/// \file Per-operator work characterisation: MACs, FLOPs, bytes moved and a work class.
/// Pure functions of the IR (shapes must be known): the importer never calls this, the cost table does.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/opclass.h"

namespace partex {

/// The work of one operator.
struct OpWork {
  OpClass cls = OpClass::Unknown;
  int64_t macs = 0;   ///< Multiply-accumulates (Conv, ConvTranspose, Gemm, MatMul, recurrent cells).
  int64_t flops = 0;  ///< All arithmetic: 2*MACs plus element-wise work.
  int64_t bytesReadActivations = 0;  ///< Bytes of non-weight inputs.
  int64_t bytesReadWeights = 0;      ///< Bytes of weight inputs (initializers and folded constants).
  int64_t bytesWritten = 0;          ///< Bytes of outputs.
  /// Elements of quantised weights (Value::quant of a ggml block type) the operator reads and so
  /// dequantises, and the modelled flops of that (elements * QuantInfo::dequantFlopsPerElement). Not part
  /// of `flops`: the roofline adds them per device (Device::dequantGElemsPerS).
  int64_t dequantElements = 0;
  int64_t dequantFlops = 0;
  DType dtype = DType::Float32;      ///< Dominant compute dtype (first float input or output).
  bool shapesKnown = true;           ///< False when some input/output shape was unknown.
  int64_t bytesRead() const { return bytesReadActivations + bytesReadWeights; }
};

/// The expected number of distinct experts that `tokens` tokens touch when each picks `used` of `experts`
/// uniformly at random and independently: E(1 - (1 - k/E)^T) (k at T = 1, towards E as T grows). The
/// Mixture-of-Experts operators (ExpertMatMul) read that share of their expert weights.
double expectedDistinctExperts(int64_t experts, int64_t used, int64_t tokens);

/// Work class of a node from its op type and domain (the table is in work.cpp); Unknown for other domains.
OpClass opClassOf(const Node& n);

/// Characterises one node. Control flow (If/Loop/Scan) takes its work from its bodies
/// (If: the larger branch; Loop: body times the trip count when it is a known constant).
OpWork characterise(const Graph& g, OpId op);
/// Characterises every node (index = OpId).
std::vector<OpWork> characteriseAll(const Graph& g);

/// Totals over a graph.
struct GraphWork {
  int64_t macs = 0;
  int64_t flops = 0;
  int64_t paramBytes = 0;
  int64_t peakActivationBytes = 0;  ///< Peak live activation bytes in topological order.
};
GraphWork summarise(const Graph& g, const std::vector<OpWork>& work);

}  // namespace partex
