#pragma once
/// \file Graph-level rewrites that ONNX Runtime's optimizer applies, matched here as fused groups
/// (ir/fusion.h) so that the executor, the profiler, plan files and the views see them like any other
/// fused kernel: the graph itself is never changed (every operator keeps its name, cost and place in
/// the plan), the runtime runs the matched operators as one kernel. Each rewrite is exact: it applies only
/// where the fused kernel computes what the operators compute one by one (up to float rounding where the
/// formula is the same but oneDNN evaluates it in another order). Each matcher states its pattern, the
/// condition that makes it exact and what it produces (rewrites.cpp, one section each).

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace partex {

/// Which rewrite a fused group is (FusedGroup::ops classified by rewriteOf()).
enum class Rewrite {
  None,             ///< An ir/fusion.h chain (Conv + BatchNormalization + Relu, ...).
  PadIntoConv,      ///< Pad, then a Conv chain whose padding takes the Pad's.
  PadIntoPool,      ///< Pad, then MaxPool or AveragePool with the Pad's padding.
  TransposePair,    ///< Two Transposes that cancel: a copy.
  TransposeMatMul,  ///< MatMul reading Transposes of its operands: strided oneDNN matmul.
  Gelu,             ///< Erf or tanh Gelu written out: one oneDNN eltwise.
  LayerNorm,        ///< LayerNorm over the last axis written out: one oneDNN layer_normalization.
};

/// "pad-into-conv", ...; "" for Rewrite::None.
const char* rewriteName(Rewrite r);

/// A Pad that folds into its only consumer (section "Pad into Conv and pooling").
struct PadFold {
  OpId pad = kNone, into = kNone;
  /// The consumer's pads after the fold (its own plus the Pad's spatial ones: begins, then ends).
  std::vector<int64_t> pads;
};
/// When Pad `pad` folds into the Conv, MaxPool or AveragePool reading its output; else nullopt.
std::optional<PadFold> padFoldOf(const Graph& g, OpId pad);

/// When Transpose `t1`'s only reader is a Transpose whose permutation undoes it: {t1, t2}; else empty.
std::vector<OpId> transposePairOf(const Graph& g, OpId t1);

/// The Transposes feeding MatMul `mm` that fold into it (kNone where an operand is read as it is); both
/// kNone when none does.
struct TransposeMatMul {
  OpId a = kNone, b = kNone;
};
TransposeMatMul transposeMatMulOf(const Graph& g, OpId mm);
/// A Transpose's permutation (its perm, or the axes reversed when it has none and the rank is known).
std::vector<int64_t> transposePerm(const Graph& g, OpId t);

/// When the float32 tensor `x` is read only by a written-out Gelu (erf or tanh form): its operators in
/// node order (the last one writes the result); `tanh` says which form. Else empty.
std::vector<OpId> geluOf(const Graph& g, ValueId x, bool* tanh = nullptr);

/// A written-out LayerNorm over the last axis of `x` (section "LayerNorm").
struct LayerNormMatch {
  std::vector<OpId> ops;                ///< In node order; the last one writes the result.
  ValueId gamma = kNone, beta = kNone;  ///< The Mul and Add weights; kNone where the pattern has none.
  float eps = 0;
};
std::optional<LayerNormMatch> layerNormOf(const Graph& g, ValueId x);

/// Which rewrite the group `ops` (FusedGroup::ops) is.
Rewrite rewriteOf(const Graph& g, const std::vector<OpId>& ops);

/// The ints of a constant int64/int32 weight (its data or its kept payload); false when not known.
bool constInts(const Graph& g, ValueId v, std::vector<int64_t>& out);
/// The value of a constant float32 weight holding one element; false when not known.
bool constScalar(const Graph& g, ValueId v, double& out);

}  // namespace partex
