#pragma once
/// \file Small hand-built ONNX models (serialized ModelProto bytes) for the importer's tests and the
/// fuzzer's seed corpus. Tests cannot include ONNX headers, so the models are built here.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace partex::testmodels {

/// x[1,3,8,8] -> Relu -> Add(bias initializer) -> y. Opset 13, IR 8. Valid.
std::string tiny();
/// tiny() with another IR version.
std::string withIrVersion(int64_t irVersion);
/// tiny() with another default-domain opset.
std::string withOpset(int64_t opset);
/// An operator the checker rejects (unknown op "NoSuchOp" in the default domain).
std::string failingChecker();
/// Add 'a' reads the output of Relu 'b', which reads 'a': a cycle.
std::string withCycle();
/// A Conv with strides [0, 1] (ONNX's own shape inference would divide by zero).
std::string withZeroStride();
/// Conv 'conv' on a rank-2 input x[8,8] with a rank-4 weight [4,3,3,3] and no kernel_shape (libonnx
/// 1.12's inference reads past its vectors on it; found by fuzzing).
std::string withConvRankMismatch();
/// MaxUnpool 'unpool' whose indices input has rank 1 (libonnx 1.12 reads its dimension 1).
std::string withRankOneUnpoolIndices();
/// STFT 'stft' (opset 17) on a rank-1 signal x[16] (libonnx 1.12 reads the signal's dimension 1).
std::string withRankOneStftSignal();
/// LayerNormalization 'norm' (opset 17) on x[2,3] with axis -3 and a mean output (libonnx 1.12 writes
/// the mean's dimensions from axis + rank = -1 on).
std::string withLayerNormAxisBelowRank();
/// GatherND 'gather' (opset 13) with indices [2,1] and batch_dims -2 (libonnx 1.12 copies the data's
/// dimensions from 1 + (-2) on).
std::string withNegativeGatherNdStart();
/// SplitToSequence 'split' (opset 13) of x[6] by a scalar split of 0 (libonnx 1.12 divides by it).
std::string withZeroSequenceSplit();
/// Range 'range' whose start and limit initializers hold 0 and 10 but whose scalar delta has two bytes
/// of raw data, no whole value (libonnx 1.12 reads the first value of each).
std::string withEmptyRangeDelta();
/// Expand 'expand' of x[2,3] to a shape input declared [2^40] (libonnx 1.12 adds one output axis per
/// element: hours and terabytes). Valid otherwise.
std::string withHugeExpandShape();
/// EyeLike (dtype float) and ai.onnx.ml LabelEncoder on the output of com.example::FancyOp, which
/// has no type (libonnx 1.12 reads their input's type without a null check). Valid otherwise.
std::string withUntypedEyeLikeInput();
/// Node 'add' reads `missing` (default 'ghost'), which nothing defines.
std::string withDanglingInput(const std::string& missing = "ghost");
/// A Concat (axis 1) of Sigmoid(x), Neg(x) and Relu(z), x[1,4,6] and z[1,2,6], read by Tanh -> y[1,10,6]:
/// each input has the Concat as its only reader, so the executor can write it in its slice.
std::string concatOfProducers();
/// x[N,3,H,W] -> Conv -> Relu -> GlobalAveragePool -> Flatten -> y (symbols N, H, W).
std::string withSymbolicDims();
/// Conv whose weight 'W' [4,3,3,3] float is stored externally in `location` (432 bytes) at `offset`
/// with `length` (as written in the external_data entries; an empty string leaves the entry out).
std::string withExternalData(const std::string& location, const std::string& offset = "0",
                             const std::string& length = "432");
/// Weights of every kind, each consumed by an operator: initializers 'Wraw' [4,4] (raw_data, i*0.25-1),
/// 'Bfield' [4] (float_data 1..4) and 'big' [64,80] (raw_data, i*0.001; more than the folding limit);
/// folded 'Wid' = Identity(Wraw), 'Bsq' = Bfield*Bfield, 'Wcos' = ConstantOfShape [4,4] of 0.5 and
/// 'Wflat' = Reshape(ConstantOfShape [100,50] of 0.25, [5000]); 'bigT' = Transpose(big), too large to
/// fold, stays an operator. Inputs x[1,4], z[5000], u[80,64]; outputs y = (x@Wid + Bsq)@Wcos,
/// y2 = z + Wflat, y3 = u + bigT, y4 = x@Wraw.
std::string withWeightData();
/// x[2,3,4] -> Reshape(x, shape) -> Relu -> z[6,4], where `shape` (int64 [2]) is a model input: a run on
/// the synthetic (zero) shape fails, a run on shape = [6, 4] succeeds (a run that uses the given input).
std::string withReshapeByInput();
/// If on a bool input; both branches read the outer input 'x'.
std::string withIf();
/// Calls of model-local functions (domain "local", IR 8, opset 13): Block(x, w) = Relu(Add(Mul(x, w), w))
/// (body nodes scale, shift, act) and Pair(x, w) = Block(Block(x, w), w) (body calls first, second).
/// Graph: x[1,4], weight w[1,4]; pair0 = Pair(x, w) -> h0, block1 = Block(h0, w) -> h1, head = Sigmoid(h1)
/// -> y. Expanded: pair0's 6 operators, block1's 3 and head, 10 in all.
std::string withLocalFunctions();
/// Node 'call' of local function local.Again, whose body calls local.Again again (it never ends).
std::string withSelfCallingFunction();
/// Loop (trip count 3) whose body adds the outer initializer 'w' to the carried value.
std::string withLoop();
/// Control flow with outer-scope reads (tests/backends/tst_cpu_controlflow.cpp checks it against values
/// it computes): inputs x [2,3] float, cond bool, n int64; weight w [3] = 0.25; a = x*x.
/// y_if = If(cond) then a + w else x - a. Loop(n) carries s (s0 = x): t = s + a; u = i > 1 ? t * half
/// (a body weight, 0.5) : t + float(i) (+ (a - a), reading 'a' two scopes out), an If nested in the
/// body; s = u; scans stacks every u.
/// A while loop (no trip count) doubles k from 1 while k < limit (100, an outer weight): k_final 128,
/// ks = 2, 4, ..., 128. Loop 'swap' exchanges p (1) and q (2) three times: p_end 2, q_end 1.
/// Outputs y_if, s_final [2,3], scans [n,2,3], k_final, ks [7], p_end and q_end.
std::string withControlFlow();

/// If(cond) over x [2,80]: then x Gemm'd (transB) with rows 0..59 of the weight w [100,80] (all 0.25;
/// the Slice's 4800 elements are above what the importer folds, so the branch slices w at run time:
/// every output element is 20 * mean of its row of x); else a LayerNorm of x written out (ReduceMean,
/// Sub, Pow, ReduceMean, Add 1e-5, Sqrt, Div). Output y [2,60] or [2,80].
std::string withFixedBranch();
/// A Loop whose body reads loop-invariant values (Paddle2ONNX's export pattern): inputs n int64, a [2,3],
/// w [3,2], s0 [2,2] float. Loop(n) carries s (s0) and w, which the body passes through unchanged; the
/// body computes aw = a x Transpose(Transpose(w)) (from the outer 'a' and the passed-through w only),
/// t = aw * float(i) and s = s + t. Outputs s_final = s0 + aw * n(n-1)/2, w_final = w, ts [n,2,2] (t of
/// every iteration).
std::string withInvariantLoop();
/// Scan over axis 1 of x [2,4], backwards, its output stacked along axis 1 backwards too: state s
/// (s0 = 0) adds each column; y[:, j] = sum of x[:, j..3] (a reverse cumulative sum), s_end the row sums.
std::string withScan();
/// com.example::FancyOp between two Relus.
std::string withUnknownDomain();
/// Attention-like shape arithmetic: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, plus
/// Expand, Tile, Slice, Resize and Pad whose shape inputs are computed, and a ConstantOfShape weight.
/// Operators after folding: Reshape x2, Transpose x2, MatMul x2, Expand, Tile, Slice, Resize, Pad.
std::string withShapeChain();
/// Constant subgraphs only (opset 13), every result a graph output, for checking that folding computes
/// what the CPU backend computes: Max/Min with NaN in either position, integer Mod (Python and C
/// fmod) and float fmod with negative operands, integer Div, Clip of NaN, Pow, a three-input Sum,
/// ReduceMax/ReduceSum, Cast, comparisons, Where, shape operators (Concat, Gather, Slice, Transpose,
/// Expand, Tile, Range, Split, Unsqueeze) and the operators the backend runs through oneDNN (Relu,
/// Sqrt, Exp, Sigmoid, Tanh, float Clip; relu_nan and clip_nan of f_v, which holds a NaN). Initializers: f_one [1] 1,
/// f_nan [1] NaN, f_v [6] (NaN, -2.5, -0.5, 0, 1.5, 4), i_a [6] (-7, 7, -7, 7, 0, 5), i_b [6] (3, -3, -3, 3, 2, 5), f_a
/// [4]
/// (-7.5, 7.5, -7.5, 1.5), f_b [4] (2, -2, -2, 0.5). `outputs` (if not null) receives the outputs'
/// names.
std::string withFoldCases(std::vector<std::string>* outputs = nullptr);
/// RandomNormal (no inputs, not folded) feeding an Add.
std::string withRandom();
/// Nodes without names and with duplicate names.
std::string withUnnamedAndDuplicateNames();
/// A valid chain listed in reverse (not topologically sorted) order.
std::string unsorted();
/// A DAG of `nodes` elementwise operators on [1,64] tensors (for speed tests).
std::string largeDag(int nodes);

/// Every model above by a file-like name, for seed corpora.
std::vector<std::pair<std::string, std::string>> all();

}  // namespace partex::testmodels
