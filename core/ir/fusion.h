#pragma once
/// \file The CPU runtime's fusion rules: which chains of operators it runs as one kernel. Pure graph
/// analysis (no backend, no data), so that the executor, the profiler, the simulator and the views all
/// see the same groups. The rules (docs/design-decisions.md, "A CPU runtime as fast as ONNX Runtime"):
///  - An anchor is a float32 Conv (1-3 spatial dims), a Gemm or a MatMul whose B is a 2-D weight.
///  - Its output is followed, while the current tensor has exactly one consumer, is not a model output and
///    that consumer runs on the anchor's device (the placement, when one is given), by
///      1. foldable affine steps, only before anything else: BatchNormalization (inference, weights
///         scale/B/mean/var), Mul or Add by a weight that is a scalar or holds one value per output
///         channel; they are folded into the anchor's weights and bias;
///      2. at most one residual Add or two-input Sum whose other operand is an activation (not a weight)
///         of exactly the same shape: oneDNN's sum post-op, accumulated into the output;
///      3. element-wise activations: Relu, LeakyRelu, Clip (constant bounds), Sigmoid, Tanh, Elu,
///         HardSwish, Softplus, Abs, Sqrt, Exp: oneDNN eltwise post-ops; and, once a step of 2 or 3 was
///         taken, Mul/Add/Sub/Div by a scalar weight (PP-LCNet's learnable affine block after its
///         activation): linear post-ops.
///    Once a step of 2 or 3 is taken, no step of 1 follows. x * Sigmoid(x) (SiLU, swish: the tensor read
///    by a Sigmoid and by the Mul of it and that Sigmoid's output) counts as one activation, and so does
///    HardSwish written out as x * Clip(x + 3, 0, 6) / 6 (PP-OCR; hardSwishOf()).
///  - A per-channel affine anchor on a rank-4 activation (BatchNormalization, or Mul/Add by a per-channel
///    weight, that no Conv took) takes further affine steps and then Relu, LeakyRelu or Clip: one pass
///    over memory instead of one per operator (DenseNet's pre-activation BatchNormalization + Relu).
///  - A channel shuffle, Reshape [N,C,H,W] -> [N,g,C/g,H,W], Transpose (0,2,1,3,4), Reshape back to
///    [N,C,H,W] (ShuffleNet), is one group: a permutation of the channels (channelShuffle()).
///  - The graph-level rewrites of ir/rewrites.h, ONNX Runtime's exact ones, are groups too, found first:
///    Pad into pooling, two Transposes that cancel, Transposes into a MatMul of activations, Gelu and
///    LayerNorm written out (their operators in node order, the last one writing the result); and a Pad
///    that folds into a Conv anchor is the first operator of that Conv's group.
///  - A group of one operator is no group: every operator not in a group runs alone.

#include <functional>
#include <vector>

#include "ir/graph.h"

namespace partex {

/// One fused kernel: an anchor and the operators folded into it.
struct FusedGroup {
  /// Anchor first (a folded Pad before its Conv), then the chain in order; a rewrite's operators in node
  /// order (ir/rewrites.h). At least two operators; the last one writes the output.
  std::vector<OpId> ops;
  /// External inputs in the kernel's order: the anchor's inputs (kNone where omitted), then for each
  /// following operator its inputs other than the chained tensor, in node order.
  std::vector<ValueId> inputs;
  ValueId output = kNone;       ///< The last operator's (first) output: the group's only output.
};

/// The fused groups of `g` under a placement (device index per operator; empty: every operator on one
/// device). Groups are disjoint and ordered by anchor id.
std::vector<FusedGroup> fusedGroups(const Graph& g, const std::vector<int>& placement = {});

/// When the tensor `x` is read only by x * Clip(x + 3, 0, 6) / 6 (HardSwish written out: Add, Clip, Mul,
/// then Div by 6 or Mul by 1/6, constants as weights): those four operators in order; else empty.
std::vector<OpId> hardSwishOf(const Graph& g, ValueId x);

/// When `reshape` starts a channel shuffle (see above): its group count g and the last Reshape; else 0.
int64_t channelShuffle(const Graph& g, OpId reshape, OpId* last = nullptr);

/// Per operator: index into `groups` of the group it belongs to, or -1.
std::vector<int> groupOfOps(const Graph& g, const std::vector<FusedGroup>& groups);

/// The epilogue rule of an accelerator backend that fuses less than the CPU runtime (the CUDA backend's
/// chains; Device::fusion "epilogues" in the cost model): the chain of operators run as one kernel
/// starting at `op`, `op` first. A Conv takes, in order, affine steps folded into its filter and bias
/// (BatchNormalization with weight statistics; Mul/Add by a per-channel or scalar weight; Sub/Div of one
/// by such a weight), then at most one residual Add/Sum of a float32 activation of the same shape, then one
/// activation (isEpilogueActivation). An element-wise binary operator (Add, Sub, Mul, Div, Pow, Max,
/// Min), Sum, BatchNormalization, Gemm or MatMul takes one activation. Each step only while the chained
/// tensor has exactly one consumer that reads it once, is not a model output, and (with `placement`) that
/// consumer is on `op`'s device; `runs(c)` says whether the device runs operator c at all (every operator
/// of the chain must be runnable; `op` itself too, else the chain is {op}).
std::vector<OpId> epilogueChain(const Graph& g, OpId op, const std::vector<int>* placement,
                                const std::function<bool(OpId)>& runs);

/// An activation such an epilogue applies: Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Elu,
/// Softplus, or Clip whose bounds are attributes or constant inputs.
bool isEpilogueActivation(const Graph& g, const Node& n);

/// Whether the executor runs operator `op` as an alias of its input, with no kernel and no copy: an
/// Identity, or a Dropout in inference (no training_mode input, its mask read by nobody), of the ONNX
/// domain, whose input an operator produces and whose output is not a model output. Its readers read
/// the input's tensor itself (ONNX Runtime removes such nodes: EliminateDropout, EliminateIdentity).
/// The per-operator profile counts it as 0 us for the same reason.
bool runsAsAlias(const Graph& g, OpId op);

/// Whether a runtime may run operator `op` as a view of its input when its kernel can
/// (Kernel::canViewInput: Reshape, Flatten, Squeeze, Unsqueeze, and an Identity or Dropout that is no
/// alias): its output is then input 0's storage under another shape, no copy, so input 0 must live
/// until the output's last reader has run. Not for a model output (a view cannot be handed out as
/// the result), not for an operator that runsAsAlias, and only when input and output have one dtype.
/// ONNX Runtime runs Reshape and its kin the same way (its kernels reuse the input's buffer).
bool runsAsView(const Graph& g, OpId op);

}  // namespace partex
