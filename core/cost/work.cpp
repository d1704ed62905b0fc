#include "cost/work.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

namespace partex {

// Work classes and FLOP costs (default ONNX domain; "ai.onnx" is the same domain). MACs are counted for the
// conv and matmul classes only; FLOPs = 2*MACs plus the element-wise work listed.
//
// conv           Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv (com.microsoft FusedConv).
//                  MACs: Conv = output elements * Cin/group * prod(kernel);
//                  ConvTranspose = input elements * Cout/group * prod(kernel).
//                  FLOPs: 2*MACs, +1 per output element with a bias, QLinearConv +2 per output (requantise).
// matmul         MatMul, Gemm, Einsum, MatMulInteger, QLinearMatMul, LSTM, GRU, RNN, Attention
//                  (com.microsoft Attention, MultiHeadAttention, FusedMatMul).
//                  MACs: MatMul = broadcast batch * M * N * K (1-D operands promoted); Gemm = M*N*K;
//                  Einsum = product of every label's size * (operands - 1); LSTM/GRU/RNN = directions * seq *
//                  batch * gates*H * (input + H) with 4/3/1 gates; Attention = projections + QK^T + AV.
//                  FLOPs: 2*MACs, + M*N for Gemm's C, + per hidden unit and step 28 (LSTM), 19 (GRU), 5 (RNN)
//                  (+2 per gate with a bias), + 5 per attention score (softmax).
// elementwise    per OUTPUT element: 1: Add Sub Mul Div Neg Abs Relu Sqrt Reciprocal Floor Ceil Round Sign Mod
//                  BitShift Bitwise* Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor Not IsNaN IsInf
//                  Where Cast CastLike ThresholdedRelu; 2: Clip LeakyRelu PRelu Shrink QuantizeLinear
//                  DequantizeLinear; 3: HardSigmoid Softsign; 4: Exp Log Pow Sigmoid Tanh Erf Softplus Elu Celu
//                  HardSwish, trigonometric and hyperbolic, DynamicQuantizeLinear; 5: Selu; 8: Gelu Mish
//                  (com.microsoft Gelu FastGelu BiasGelu QuickGelu). Variadic Sum Max Min: inputs-1; Mean: inputs.
// reduction      per INPUT element: 1: ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1 ReduceLogSum
//                  ArgMax ArgMin CumSum NonMaxSuppression; 2: ReduceL2 ReduceSumSquare ReduceLogSumExp;
//                  TopK: ceil(log2 k), at least 1.
// normalisation  per INPUT element: BatchNormalization 4; LayerNormalization InstanceNormalization
//                  GroupNormalization MeanVarianceNormalization 8; LpNormalization 3; Softmax LogSoftmax 5;
//                  Hardmax 2; LRN size+4 (com.microsoft SkipLayerNormalization 9, SimplifiedLayerNormalization 6).
// pooling        MaxPool AveragePool LpPool: prod(kernel_shape) per output element; GlobalAveragePool
//                  GlobalMaxPool GlobalLpPool: 1 per input element; MaxRoiPool 1 per output; RoiAlign
//                  4 * samples per output.
// data_movement  Transpose Concat Split Slice Gather GatherElements GatherND Scatter ScatterND ScatterElements Pad
//                  Tile Expand Resize Upsample DepthToSpace SpaceToDepth Compress ReverseSequence OneHot NonZero
//                  Unique Trilu Constant ConstantOfShape EyeLike Range MaxUnpool Col2Im CenterCropPad Random*
//                  Multinomial Bernoulli Sequence*: 0 FLOPs (Resize/Upsample: nearest 0, linear 4, cubic 16 per
//                  output element).
// shape_only     Reshape Flatten Squeeze Unsqueeze Identity Shape Size Dropout Optional*: 0 FLOPs and 0 bytes
//                  (views of their input, or metadata).
// control_flow   If: the larger branch (by FLOPs, then bytes); Loop: body * trip count when M is a constant
//                  (weight with intData, at most 2^31), else body once; Scan: body * scan length.
// unknown        anything else, including every op of another domain (ai.onnx.ml, custom domains): 0 FLOPs.
//
// Bytes: bytesReadActivations sums the distinct non-weight inputs, bytesReadWeights the distinct weight inputs,
// bytesWritten the outputs. Gather, GatherElements, GatherND and Slice read at most as many bytes of their data
// input as they write (they touch only the selected elements, not a whole embedding table). A control-flow node
// moves the larger of its own inputs/outputs and its bodies' traffic (times the trip count).
// Shapes: shapesKnown is false when an input, or an output that is read or is a graph output, has an open
// shape; MACs and FLOPs that need it are then 0.

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int64_t satMul(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return (a < 0 || b < 0) ? -1 : 0;
  if (a > kMax / b) return kMax;
  return a * b;
}

int64_t satAdd(int64_t a, int64_t b) {
  if (a > kMax - b) return kMax;
  return a + b;
}

/// Product of dims [from, to); -1 when one is unknown.
int64_t prod(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) {
    if (s[i] < 0) return -1;
    p = satMul(p, s[i]);
  }
  return p;
}

bool isFloat(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16 || t == DType::Float64;
}

enum class Rule {
  PerOutput,  ///< perElem * output elements
  PerInput,   ///< perElem * input 0 elements
  Variadic,   ///< (inputs - 1) * output elements (+perElem * output for Mean)
  None,       ///< no arithmetic
  Special,    ///< computed by code
};

struct OpInfo {
  OpClass cls;
  Rule rule;
  double perElem;
};

using Table = std::unordered_map<std::string, OpInfo>;

// The tables read better packed than one name per line.
// clang-format off
const Table& defaultDomainTable() {
  static const Table table = [] {
    Table t;
    auto add = [&t](std::initializer_list<const char*> ops, OpClass c, Rule r, double per) {
      for (const char* op : ops) t[op] = OpInfo{c, r, per};
    };
    // Conv and matmul families: MACs from shapes.
    add({"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "DeformConv"}, OpClass::Conv, Rule::Special, 0);
    add({"MatMul", "Gemm", "Einsum", "MatMulInteger", "QLinearMatMul", "LSTM", "GRU", "RNN", "Attention"},
        OpClass::MatMul, Rule::Special, 0);
    // Element-wise.
    add({"Add", "Sub", "Mul", "Div", "Neg", "Abs", "Relu", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign",
         "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Equal", "Less", "Greater",
         "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf", "Where", "Cast", "CastLike",
         "ThresholdedRelu"},
        OpClass::Elementwise, Rule::PerOutput, 1);
    add({"Clip", "LeakyRelu", "PRelu", "Shrink", "QuantizeLinear", "DequantizeLinear"}, OpClass::Elementwise,
        Rule::PerOutput, 2);
    add({"HardSigmoid", "Softsign"}, OpClass::Elementwise, Rule::PerOutput, 3);
    add({"Exp", "Log", "Pow", "Sigmoid", "Tanh", "Erf", "Softplus", "Elu", "Celu", "HardSwish", "Sin", "Cos", "Tan",
         "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "DynamicQuantizeLinear"},
        OpClass::Elementwise, Rule::PerOutput, 4);
    add({"Selu"}, OpClass::Elementwise, Rule::PerOutput, 5);
    add({"Gelu", "Mish"}, OpClass::Elementwise, Rule::PerOutput, 8);
    add({"Sum", "Max", "Min"}, OpClass::Elementwise, Rule::Variadic, 0);
    add({"Mean"}, OpClass::Elementwise, Rule::Variadic, 1);
    // Reductions (per input element).
    add({"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceLogSum", "ArgMax",
         "ArgMin", "CumSum", "NonMaxSuppression"},
        OpClass::Reduction, Rule::PerInput, 1);
    add({"ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"}, OpClass::Reduction, Rule::PerInput, 2);
    add({"TopK"}, OpClass::Reduction, Rule::Special, 0);
    // Normalisation (per input element).
    add({"BatchNormalization"}, OpClass::Normalisation, Rule::PerInput, 4);
    add({"LayerNormalization", "InstanceNormalization", "GroupNormalization", "MeanVarianceNormalization"},
        OpClass::Normalisation, Rule::PerInput, 8);
    add({"LpNormalization"}, OpClass::Normalisation, Rule::PerInput, 3);
    add({"Softmax", "LogSoftmax"}, OpClass::Normalisation, Rule::PerInput, 5);
    add({"Hardmax"}, OpClass::Normalisation, Rule::PerInput, 2);
    add({"LRN"}, OpClass::Normalisation, Rule::Special, 0);
    // Pooling.
    add({"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "MaxRoiPool",
         "RoiAlign"},
        OpClass::Pooling, Rule::Special, 0);
    // Data movement.
    add({"Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "Scatter", "ScatterND",
         "ScatterElements", "Pad", "Tile", "Expand", "DepthToSpace", "SpaceToDepth", "Compress", "ReverseSequence",
         "OneHot", "NonZero", "Unique", "Trilu", "Constant", "ConstantOfShape", "EyeLike", "Range", "MaxUnpool",
         "Col2Im", "CenterCropPad", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
         "Multinomial", "Bernoulli", "SequenceConstruct", "SequenceEmpty", "SequenceAt", "SequenceInsert",
         "SequenceErase", "SequenceLength", "SplitToSequence", "ConcatFromSequence", "SequenceMap"},
        OpClass::DataMovement, Rule::None, 0);
    add({"Resize", "Upsample"}, OpClass::DataMovement, Rule::Special, 0);
    // Shape-only.
    add({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Dropout", "Optional",
         "OptionalHasElement", "OptionalGetElement"},
        OpClass::ShapeOnly, Rule::None, 0);
    // Control flow.
    add({"If", "Loop", "Scan"}, OpClass::ControlFlow, Rule::Special, 0);
    return t;
  }();
  return table;
}

/// A few com.microsoft contrib ops that ONNX Runtime's optimisers leave in exported models.
const Table& microsoftTable() {
  static const Table table = [] {
    Table t;
    t["FusedConv"] = {OpClass::Conv, Rule::Special, 0};
    t["FusedMatMul"] = {OpClass::MatMul, Rule::Special, 0};
    t["Attention"] = {OpClass::MatMul, Rule::Special, 0};
    t["MultiHeadAttention"] = {OpClass::MatMul, Rule::Special, 0};
    for (const char* op : {"Gelu", "FastGelu", "BiasGelu", "QuickGelu"})
      t[op] = {OpClass::Elementwise, Rule::PerOutput, 8};
    t["SkipLayerNormalization"] = {OpClass::Normalisation, Rule::PerInput, 9};
    t["LayerNormalization"] = {OpClass::Normalisation, Rule::PerInput, 8};
    t["SimplifiedLayerNormalization"] = {OpClass::Normalisation, Rule::PerInput, 6};
    return t;
  }();
  return table;
}
/// Partex's own operators (domain "partex"): ExpertMatMul, a Mixture-of-Experts projection.
const Table& partexTable() {
  static const Table table = [] {
    Table t;
    t["ExpertMatMul"] = {OpClass::MatMul, Rule::Special, 0};
    return t;
  }();
  return table;
}
// clang-format on

const OpInfo* lookup(const Node& n) {
  const Table* t = nullptr;
  if (n.domain.empty() || n.domain == "ai.onnx")
    t = &defaultDomainTable();
  else if (n.domain == "com.microsoft")
    t = &microsoftTable();
  else if (n.domain == "partex")
    t = &partexTable();
  if (!t) return nullptr;
  auto it = t->find(n.opType);
  return it == t->end() ? nullptr : &it->second;
}

bool isMs(const Node& n) {
  return n.domain == "com.microsoft";
}

/// Accessors for one node of one graph.
struct NodeView {
  const Graph& g;
  const Node& n;

  const Value* in(size_t i) const {
    if (i >= n.inputs.size()) return nullptr;
    ValueId v = n.inputs[i];
    if (v < 0 || static_cast<size_t>(v) >= g.values.size()) return nullptr;
    return &g.values[static_cast<size_t>(v)];
  }
  const Value* out(size_t i) const {
    if (i >= n.outputs.size()) return nullptr;
    ValueId v = n.outputs[i];
    if (v < 0 || static_cast<size_t>(v) >= g.values.size()) return nullptr;
    return &g.values[static_cast<size_t>(v)];
  }
  /// Elements of input i; -1 when absent or unknown.
  int64_t inElems(size_t i) const {
    const Value* v = in(i);
    return v ? v->numElements() : -1;
  }
  int64_t outElems(size_t i) const {
    const Value* v = out(i);
    return v ? v->numElements() : -1;
  }
  /// Shape of input i when fully known, else nullptr.
  const std::vector<int64_t>* inShape(size_t i) const {
    const Value* v = in(i);
    return (v && v->numElements() >= 0) ? &v->shape : nullptr;
  }
  const std::vector<int64_t>* outShape(size_t i) const {
    const Value* v = out(i);
    return (v && v->numElements() >= 0) ? &v->shape : nullptr;
  }
  size_t presentInputs() const {
    size_t k = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (in(i)) ++k;
    return k;
  }
};

// ---- MACs of the compute-heavy families -----------------------------------------------------------------------

/// Conv-like: output elements * (Cin/group) * prod(kernel). w is the weight input index.
int64_t convMacs(const NodeView& v, size_t w) {
  int64_t out = v.outElems(0);
  if (out < 0) return -1;
  if (const auto* ws = v.inShape(w); ws && ws->size() >= 3) return satMul(out, prod(*ws, 1, ws->size()));
  // Weight shape unknown: Cin from the data input, kernel from the attribute.
  const auto* xs = v.inShape(0);
  auto kernel = v.n.attrInts("kernel_shape");
  int64_t group = std::max<int64_t>(1, v.n.attrInt("group", 1));
  if (!xs || xs->size() < 3 || kernel.empty()) return -1;
  int64_t k = prod(kernel, 0, kernel.size());
  if (k < 0) return -1;
  return satMul(satMul(out, (*xs)[1] / group), k);
}

/// ConvTranspose: input elements * (Cout/group) * prod(kernel); W is [Cin, Cout/group, k...].
int64_t convTransposeMacs(const NodeView& v) {
  int64_t x = v.inElems(0);
  const auto* ws = v.inShape(1);
  if (x < 0) return -1;
  if (ws && ws->size() >= 3) return satMul(x, prod(*ws, 1, ws->size()));
  // Weight shape unknown: Cout/group from the output's channels, kernel from the attribute.
  const auto* ys = v.outShape(0);
  auto kernel = v.n.attrInts("kernel_shape");
  int64_t group = std::max<int64_t>(1, v.n.attrInt("group", 1));
  if (!ys || ys->size() < 3 || kernel.empty()) return -1;
  int64_t k = prod(kernel, 0, kernel.size());
  if (k < 0) return -1;
  return satMul(satMul(x, (*ys)[1] / group), k);
}

/// numpy-style matmul MACs: batch (broadcast) * M * N * K; 1-D operands are promoted and their dim dropped.
int64_t matmulMacs(std::vector<int64_t> a, std::vector<int64_t> b, bool transA = false, bool transB = false) {
  if (a.empty() || b.empty()) return -1;
  if (a.size() == 1) a.insert(a.begin(), 1);  // [K] -> [1, K]
  if (b.size() == 1) b.push_back(1);          // [K] -> [K, 1]
  if (transA) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (transB) std::swap(b[b.size() - 1], b[b.size() - 2]);
  int64_t m = a[a.size() - 2], k = a[a.size() - 1], n = b[b.size() - 1];
  if (m < 0 || k < 0 || n < 0) return -1;
  size_t ra = a.size() - 2, rb = b.size() - 2, rank = std::max(ra, rb);
  int64_t batch = 1;
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - ra ? 1 : a[i - (rank - ra)];
    int64_t db = i < rank - rb ? 1 : b[i - (rank - rb)];
    if (da < 0 || db < 0) return -1;
    batch = satMul(batch, da == 1 ? db : (db == 1 ? da : std::max(da, db)));
  }
  return satMul(satMul(satMul(batch, m), n), k);
}

/// Einsum (best effort): the naive loop nest over every distinct label, once per extra operand.
int64_t einsumMacs(const NodeView& v) {
  std::string eq;
  for (char c : v.n.attrString("equation", ""))
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  auto arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    auto comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() < 2) return 0;  // one operand: a transpose/trace/sum, no multiply-accumulate
  std::map<char, int64_t> dims;
  std::vector<int64_t> ellipsis;  // broadcast dims covered by "..."
  for (size_t t = 0; t < terms.size(); ++t) {
    const auto* s = v.inShape(t);
    if (!s) return -1;
    std::string term = terms[t];
    size_t dots = term.find("...");
    size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
    if (s->size() < letters) return -1;
    size_t nEll = s->size() - letters;
    size_t axis = 0;
    for (size_t i = 0; i < term.size();) {
      if (dots != std::string::npos && i == dots) {
        // Right-align the ellipsis dims with those of the other operands.
        if (ellipsis.size() < nEll) ellipsis.insert(ellipsis.begin(), nEll - ellipsis.size(), 1);
        for (size_t e = 0; e < nEll; ++e) {
          int64_t d = (*s)[axis + e];
          int64_t& cur = ellipsis[ellipsis.size() - nEll + e];
          cur = std::max(cur, d);
        }
        axis += nEll;
        i += 3;
        continue;
      }
      int64_t d = (*s)[axis];
      auto [it, inserted] = dims.emplace(term[i], d);
      if (!inserted) it->second = std::max(it->second, d);
      ++axis;
      ++i;
    }
  }
  int64_t p = 1;
  for (const auto& [c, d] : dims) p = satMul(p, d);
  for (int64_t d : ellipsis) p = satMul(p, d);
  return satMul(p, static_cast<int64_t>(terms.size() - 1));
}

struct RecurrentWork {
  int64_t macs = -1;
  int64_t flops = -1;
};

/// LSTM (4 gates), GRU (3) and RNN (1): per direction, step and batch row, gates*H*(input + H) MACs plus the
/// cell's element-wise work per hidden unit (LSTM 28, GRU 19, RNN 5; +2 per gate with a bias input B).
RecurrentWork recurrentWork(const NodeView& v, int64_t gates, int64_t cellFlopsPerUnit) {
  RecurrentWork r;
  const auto* xs = v.inShape(0);
  const auto* ws = v.inShape(1);
  const auto* rs = v.inShape(2);
  if (!xs || xs->size() != 3) return r;
  bool batchFirst = v.n.attrInt("layout", 0) == 1;
  int64_t seq = batchFirst ? (*xs)[1] : (*xs)[0];
  int64_t batch = batchFirst ? (*xs)[0] : (*xs)[1];
  int64_t inputSize = (ws && ws->size() == 3) ? (*ws)[2] : (*xs)[2];
  int64_t hidden = v.n.attrInt("hidden_size", -1);
  if (hidden <= 0 && rs && rs->size() == 3) hidden = (*rs)[2];
  if (hidden <= 0 && ws && ws->size() == 3) hidden = (*ws)[1] / gates;
  int64_t dirs =
      (ws && ws->size() == 3) ? (*ws)[0] : (v.n.attrString("direction", "forward") == "bidirectional" ? 2 : 1);
  if (hidden <= 0 || inputSize < 0 || seq < 0 || batch < 0 || dirs <= 0) return r;
  int64_t cells = satMul(satMul(dirs, seq), batch);  // cell evaluations
  r.macs = satMul(satMul(cells, gates * hidden), satAdd(inputSize, hidden));
  int64_t perUnit = cellFlopsPerUnit + (v.in(3) ? 2 * gates : 0);
  r.flops = satAdd(satMul(2, r.macs), satMul(satMul(cells, hidden), perUnit));
  return r;
}

struct AttentionWork {
  int64_t macs = -1;
  int64_t extraFlops = 0;
};

/// Attention: com.microsoft Attention (input projection + QK^T + AV), com.microsoft MultiHeadAttention and
/// ONNX Attention (QK^T + AV, Q/K/V given). Softmax over the scores costs 5 per score.
AttentionWork attentionWork(const NodeView& v) {
  AttentionWork a;
  if (isMs(v.n) && v.n.opType == "Attention") {
    const auto* xs = v.inShape(0);  // [B, S, in]
    const auto* ws = v.inShape(1);  // [in, q+k+v]
    if (!xs || xs->size() != 3 || !ws || ws->size() != 2) return a;
    int64_t b = (*xs)[0], s = (*xs)[1], in = (*xs)[2], all = (*ws)[1];
    auto sizes = v.n.attrInts("qkv_hidden_sizes");
    int64_t qh = all / 3, vh = all / 3;
    if (sizes.size() == 3) qh = sizes[0], vh = sizes[2];
    int64_t heads = std::max<int64_t>(1, v.n.attrInt("num_heads", 1));
    int64_t proj = satMul(satMul(satMul(b, s), in), all);
    int64_t scores = satMul(satMul(b, s), s);  // per head
    a.macs = satAdd(proj, satMul(scores, satAdd(qh, vh)));
    a.extraFlops = satAdd(satMul(satMul(b, s), all), satMul(satMul(scores, heads), 5));  // bias add, softmax
    return a;
  }
  // Q/K/V given: 4-D [B, H, S, D] or 3-D [B, S, H*D].
  const auto* qs = v.inShape(0);
  const auto* ks = v.inShape(1);
  const auto* vs = v.inShape(2);
  if (!qs || !ks || !vs || qs->size() != ks->size() || qs->size() != vs->size()) return a;
  if (qs->size() == 4) {
    int64_t b = (*qs)[0], hq = (*qs)[1], sq = (*qs)[2], d = (*qs)[3], sk = (*ks)[2], dv = (*vs)[3];
    int64_t scores = satMul(satMul(satMul(b, hq), sq), sk);
    a.macs = satMul(scores, satAdd(d, dv));
    a.extraFlops = satMul(scores, 5);
  } else if (qs->size() == 3) {
    int64_t b = (*qs)[0], sq = (*qs)[1], qh = (*qs)[2], sk = (*ks)[1], vh = (*vs)[2];
    int64_t hq = std::max<int64_t>(1, v.n.attrInt(isMs(v.n) ? "num_heads" : "q_num_heads", 1));
    int64_t hk = std::max<int64_t>(1, v.n.attrInt(isMs(v.n) ? "num_heads" : "kv_num_heads", hq));
    int64_t scores = satMul(satMul(b, sq), sk);  // per head
    a.macs = satMul(scores, satAdd(qh, satMul(vh, hq) / hk));
    a.extraFlops = satMul(satMul(scores, hq), 5);
  }
  return a;
}

// ---- control flow ----------------------------------------------------------------------------------------------

/// Sum of the work of every node of a body.
OpWork bodyWork(const Graph& body) {
  OpWork s;
  s.cls = OpClass::ControlFlow;
  for (size_t i = 0; i < body.nodes.size(); ++i) {
    OpWork w = characterise(body, static_cast<OpId>(i));
    s.macs = satAdd(s.macs, w.macs);
    s.flops = satAdd(s.flops, w.flops);
    s.bytesReadActivations = satAdd(s.bytesReadActivations, w.bytesReadActivations);
    s.bytesReadWeights = satAdd(s.bytesReadWeights, w.bytesReadWeights);
    s.bytesWritten = satAdd(s.bytesWritten, w.bytesWritten);
    s.shapesKnown = s.shapesKnown && w.shapesKnown;
  }
  return s;
}

const Graph* findBody(const Node& n, const std::string& name) {
  for (const auto& [key, g] : n.subgraphs)
    if (key == name && g) return g.get();
  return nullptr;
}

/// Trip multiplier of a Loop or Scan; `known` false when it had to assume 1.
int64_t tripCount(const NodeView& v, bool& known) {
  known = true;
  if (v.n.opType == "Loop") {
    const Value* m = v.in(0);
    if (m && m->isWeight && m->intData.size() == 1) {
      int64_t trips = m->intData[0];
      if (trips <= 0) return 0;
      // INT64_MAX-like counts come from while-loops converted by exporters: the real count is dynamic.
      if (trips <= (int64_t{1} << 31)) return trips;
    }
    known = false;
    return 1;
  }
  // Scan: the scan inputs are the last num_scan_inputs inputs; the length is their scan axis.
  int64_t nScan = v.n.attrInt("num_scan_inputs", 0);
  if (nScan <= 0 || static_cast<size_t>(nScan) > v.n.inputs.size()) {
    known = false;
    return 1;
  }
  size_t first = v.n.inputs.size() - static_cast<size_t>(nScan);
  const auto* s = v.inShape(first);
  bool scan8 = v.g.opsetVersion > 0 && v.g.opsetVersion < 9;  // Scan-8: [batch, seq, ...], input 0 = lengths
  if (!s || s->empty()) {
    known = false;
    return 1;
  }
  if (scan8) {
    if (s->size() < 2) {
      known = false;
      return 1;
    }
    return satMul((*s)[0], (*s)[1]);
  }
  auto axes = v.n.attrInts("scan_input_axes");
  int64_t axis = axes.empty() ? 0 : axes[0];
  if (axis < 0) axis += static_cast<int64_t>(s->size());
  if (axis < 0 || axis >= static_cast<int64_t>(s->size())) {
    known = false;
    return 1;
  }
  return (*s)[static_cast<size_t>(axis)];
}

/// Fills `w` (class, IO bytes and dtype already set) from the bodies of a control-flow node.
void controlFlowWork(const NodeView& v, OpWork& w) {
  OpWork body;
  if (v.n.opType == "If") {
    const Graph* t = findBody(v.n, "then_branch");
    const Graph* e = findBody(v.n, "else_branch");
    OpWork tw = t ? bodyWork(*t) : OpWork{};
    OpWork ew = e ? bodyWork(*e) : OpWork{};
    bool takeThen = tw.flops != ew.flops ? tw.flops > ew.flops
                                         : tw.bytesRead() + tw.bytesWritten >= ew.bytesRead() + ew.bytesWritten;
    body = takeThen ? tw : ew;
    body.shapesKnown = tw.shapesKnown && ew.shapesKnown;
  } else {
    const Graph* b = findBody(v.n, "body");
    if (b) {
      bool known = true;
      int64_t trips = tripCount(v, known);
      OpWork once = bodyWork(*b);
      body.macs = satMul(once.macs, trips);
      body.flops = satMul(once.flops, trips);
      body.bytesReadActivations = satMul(once.bytesReadActivations, trips);
      body.bytesReadWeights = satMul(once.bytesReadWeights, trips);
      body.bytesWritten = satMul(once.bytesWritten, trips);
      body.shapesKnown = once.shapesKnown;
    }
  }
  w.macs = body.macs;
  w.flops = body.flops;
  // The node moves at least its own inputs and outputs; its body's traffic when that is larger.
  w.bytesReadActivations = std::max(w.bytesReadActivations, body.bytesReadActivations);
  w.bytesReadWeights = std::max(w.bytesReadWeights, body.bytesReadWeights);
  w.bytesWritten = std::max(w.bytesWritten, body.bytesWritten);
  w.shapesKnown = w.shapesKnown && body.shapesKnown;
}

bool isQuantised(const Node& n) {
  return n.opType == "ConvInteger" || n.opType == "QLinearConv" || n.opType == "MatMulInteger" ||
         n.opType == "QLinearMatMul";
}

DType dominantDtype(const NodeView& v) {
  if (isQuantised(v.n)) {
    if (const Value* x = v.in(0); x && x->dtype != DType::Undefined) return x->dtype;
  }
  for (size_t i = 0; i < v.n.inputs.size(); ++i) {
    const Value* x = v.in(i);
    if (x && !x->isWeight && isFloat(x->dtype)) return x->dtype;
  }
  for (size_t i = 0; i < v.n.outputs.size(); ++i) {
    const Value* y = v.out(i);
    if (y && y->dtype != DType::Undefined) return y->dtype;
  }
  for (size_t i = 0; i < v.n.inputs.size(); ++i) {
    const Value* x = v.in(i);
    if (x && x->dtype != DType::Undefined) return x->dtype;
  }
  return DType::Float32;
}

bool readsOnlySelection(const Node& n) {
  return n.opType == "Gather" || n.opType == "GatherElements" || n.opType == "GatherND" || n.opType == "Slice";
}

/// A quantised weight of which `elements` are read: their dequantisation (ir/quant.h).
void addDequant(const Value& x, int64_t elements, OpWork& w) {
  const QuantInfo* q = quantInfo(x.quant);
  if (!q || !q->quantised || elements <= 0) return;
  w.dequantElements = satAdd(w.dequantElements, elements);
  w.dequantFlops = satAdd(w.dequantFlops, static_cast<int64_t>(static_cast<double>(elements) * q->dequantFlopsPerElement));
}

void addBytes(const NodeView& v, OpWork& w) {
  std::set<ValueId> seen;
  int64_t outBytes = 0;
  for (size_t i = 0; i < v.n.outputs.size(); ++i) {
    const Value* y = v.out(i);
    if (!y) continue;
    if (!seen.insert(v.n.outputs[i]).second) continue;
    outBytes = satAdd(outBytes, y->bytes());
  }
  w.bytesWritten = outBytes;
  seen.clear();
  for (size_t i = 0; i < v.n.inputs.size(); ++i) {
    const Value* x = v.in(i);
    if (!x || !seen.insert(v.n.inputs[i]).second) continue;
    int64_t b = x->bytes();
    if (i == 0 && readsOnlySelection(v.n) && v.out(0) && v.out(0)->numElements() >= 0)
      b = std::min(b, v.out(0)->bytes());
    if (x->isWeight) {
      w.bytesReadWeights = satAdd(w.bytesReadWeights, b);
      addDequant(*x, i == 0 && readsOnlySelection(v.n) && v.out(0) ? v.out(0)->numElements() : x->numElements(), w);
    }
    else
      w.bytesReadActivations = satAdd(w.bytesReadActivations, b);
  }
}

bool allShapesKnown(const NodeView& v) {
  for (size_t i = 0; i < v.n.inputs.size(); ++i)
    if (const Value* x = v.in(i); x && x->numElements() < 0) return false;
  // An output nobody reads (Dropout's mask, LSTM's Y_c) does not count: ONNX often leaves its shape open.
  for (size_t i = 0; i < v.n.outputs.size(); ++i)
    if (const Value* y = v.out(i); y && y->numElements() < 0 && (!y->consumers.empty() || y->isGraphOutput))
      return false;
  return true;
}

}  // namespace

double expectedDistinctExperts(int64_t experts, int64_t used, int64_t tokens) {
  if (experts <= 0 || used <= 0 || tokens <= 0) return 0.0;
  if (used >= experts) return static_cast<double>(experts);
  const double miss = std::pow(1.0 - static_cast<double>(used) / static_cast<double>(experts), static_cast<double>(tokens));
  return static_cast<double>(experts) * (1.0 - miss);
}

namespace {

/// ExpertMatMul reads only the experts its tokens are routed to: E(1 - (1 - k/E)^T) of E expert matrices
/// for T tokens (expectedDistinctExperts, uniform routing), so its weight bytes and dequantised elements
/// are that share of the whole tensor (addBytes counted all of it; memory still holds all of it).
void expertWeightShare(const NodeView& v, OpWork& w) {
  const auto* ws = v.inShape(1);
  const auto* is = v.inShape(2);
  const Value* wv = v.in(1);
  if (!wv || !wv->isWeight) return;
  const int64_t experts = (*ws)[0], used = is->back();
  int64_t tokens = 1;
  for (size_t i = 0; i + 1 < is->size(); ++i) tokens = satMul(tokens, (*is)[i]);
  const double share = experts > 0 ? expectedDistinctExperts(experts, used, tokens) / static_cast<double>(experts) : 1.0;
  const int64_t full = wv->bytes();
  const int64_t read = static_cast<int64_t>(std::llround(static_cast<double>(full) * share));
  w.bytesReadWeights = std::max<int64_t>(0, w.bytesReadWeights - full + read);
  if (w.dequantElements > 0) {
    const int64_t elems = wv->numElements();
    const int64_t kept = static_cast<int64_t>(std::llround(static_cast<double>(elems) * share));
    const QuantInfo* q = quantInfo(wv->quant);
    w.dequantElements = std::max<int64_t>(0, w.dequantElements - elems + kept);
    if (q) w.dequantFlops = static_cast<int64_t>(static_cast<double>(w.dequantElements) * q->dequantFlopsPerElement);
  }
}

/// MACs and FLOPs of the ops whose rule is Special (besides control flow). Returns false when a needed shape
/// was unknown (MACs and FLOPs stay 0 then).
bool specialWork(const NodeView& v, OpWork& w) {
  const Node& n = v.n;
  const std::string& op = n.opType;
  const int64_t out = v.outElems(0);
  int64_t macs = -1, flops = -1;
  auto plusBias = [&](size_t biasInput) { return v.in(biasInput) && out > 0 ? out : 0; };

  if (op == "Conv" || op == "DeformConv" || op == "FusedConv") {
    macs = convMacs(v, 1);
    if (macs >= 0) {
      flops = satAdd(satMul(2, macs), plusBias(op == "DeformConv" ? 3 : 2));
      if (op == "FusedConv" && !n.attrString("activation", "").empty()) flops = satAdd(flops, out);
    }
  } else if (op == "ConvInteger") {
    macs = convMacs(v, 1);
    if (macs >= 0) flops = satMul(2, macs);
  } else if (op == "QLinearConv") {
    macs = convMacs(v, 3);
    if (macs >= 0) flops = satAdd(satAdd(satMul(2, macs), plusBias(8)), satMul(2, out));  // requantisation
  } else if (op == "ConvTranspose") {
    macs = convTransposeMacs(v);
    if (macs >= 0) flops = satAdd(satMul(2, macs), plusBias(2));
  } else if (op == "Gemm") {
    const auto* as = v.inShape(0);
    const auto* bs = v.inShape(1);
    if (as && bs && as->size() == 2 && bs->size() == 2) {
      macs = matmulMacs(*as, *bs, n.attrInt("transA", 0) != 0, n.attrInt("transB", 0) != 0);
      if (macs >= 0) {
        int64_t mn = out >= 0 ? out : 0;
        flops = satAdd(satMul(2, macs), v.in(2) ? mn : 0);
      }
    }
  } else if (op == "MatMul" || op == "MatMulInteger" || op == "FusedMatMul") {
    const auto* as = v.inShape(0);
    const auto* bs = v.inShape(1);
    if (as && bs) {
      bool ta = op == "FusedMatMul" && n.attrInt("transA", 0) != 0 && as->size() >= 2;
      bool tb = op == "FusedMatMul" && n.attrInt("transB", 0) != 0 && bs->size() >= 2;
      macs = matmulMacs(*as, *bs, ta, tb);
      if (macs >= 0) flops = satMul(2, macs);
    }
  } else if (op == "ExpertMatMul" && n.domain == "partex") {
    // x [..., in] or [..., k, in], experts [E, in, out], ids [..., k]: each token through its k experts.
    const auto* ws = v.inShape(1);
    const auto* is = v.inShape(2);
    if (ws && ws->size() == 3 && is && !is->empty() && out >= 0) {
      macs = satMul(out, (*ws)[1]);  // out = tokens * k * out features
      flops = satMul(2, macs);
      expertWeightShare(v, w);
    }
  } else if (op == "QLinearMatMul") {
    const auto* as = v.inShape(0);
    const auto* bs = v.inShape(3);
    if (as && bs) {
      macs = matmulMacs(*as, *bs);
      if (macs >= 0) flops = satAdd(satMul(2, macs), out > 0 ? satMul(2, out) : 0);
    }
  } else if (op == "Einsum") {
    macs = einsumMacs(v);
    if (macs >= 0) {
      flops = satMul(2, macs);
      if (macs == 0) flops = std::max<int64_t>(0, v.inElems(0));  // single operand: a reduction at most
    }
  } else if (op == "LSTM" || op == "GRU" || op == "RNN") {
    int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
    int64_t cell = op == "LSTM" ? 28 : op == "GRU" ? 19 : 5;
    auto r = recurrentWork(v, gates, cell);
    macs = r.macs;
    flops = r.flops;
  } else if (op == "Attention" || op == "MultiHeadAttention") {
    auto a = attentionWork(v);
    macs = a.macs;
    if (macs >= 0) flops = satAdd(satMul(2, macs), a.extraFlops);
  } else if (op == "TopK") {
    int64_t in = v.inElems(0);
    if (in >= 0) {
      int64_t k = 1;
      if (const Value* kv = v.in(1); kv && kv->intData.size() == 1) k = kv->intData[0];
      int64_t logk = 1;
      while ((int64_t{1} << logk) < k && logk < 62) ++logk;
      flops = satMul(in, logk);
      macs = 0;
    }
  } else if (op == "LRN") {
    int64_t in = v.inElems(0);
    if (in >= 0) {
      macs = 0;
      flops = satMul(in, std::max<int64_t>(1, n.attrInt("size", 1)) + 4);
    }
  } else if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    auto kernel = n.attrInts("kernel_shape");
    int64_t k = kernel.empty() ? -1 : prod(kernel, 0, kernel.size());
    if (out >= 0 && k >= 0) {
      macs = 0;
      flops = satMul(out, k);
    }
  } else if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool") {
    int64_t in = v.inElems(0);
    if (in >= 0) macs = 0, flops = in;
  } else if (op == "MaxRoiPool") {
    if (out >= 0) macs = 0, flops = out;
  } else if (op == "RoiAlign") {
    int64_t sr = n.attrInt("sampling_ratio", 0);
    int64_t samples = sr > 0 ? sr * sr : 4;
    if (out >= 0) macs = 0, flops = satMul(out, 4 * samples);
  } else if (op == "Resize" || op == "Upsample") {
    std::string mode = n.attrString("mode", "nearest");
    int64_t per = mode == "nearest" ? 0 : mode == "cubic" ? 16 : 4;
    if (out >= 0) macs = 0, flops = satMul(out, per);
  }
  if (macs < 0 || flops < 0) return false;
  w.macs = macs;
  w.flops = flops;
  return true;
}

}  // namespace

OpClass opClassOf(const Node& n) {
  const OpInfo* info = lookup(n);
  return info ? info->cls : OpClass::Unknown;
}

OpWork characterise(const Graph& g, OpId op) {
  OpWork w;
  if (op < 0 || static_cast<size_t>(op) >= g.nodes.size()) return w;
  NodeView v{g, g.nodes[static_cast<size_t>(op)]};
  const OpInfo* info = lookup(v.n);
  w.cls = info ? info->cls : OpClass::Unknown;
  w.dtype = dominantDtype(v);
  w.shapesKnown = allShapesKnown(v);
  if (w.cls == OpClass::ShapeOnly) return w;  // views and metadata: no arithmetic, no data moved
  addBytes(v, w);
  if (!info) return w;

  switch (info->rule) {
    case Rule::None:
      break;
    case Rule::PerOutput: {
      int64_t e = v.outElems(0);
      if (e < 0) {
        for (size_t i = 0; i < v.n.inputs.size(); ++i) e = std::max(e, v.inElems(i));
        w.shapesKnown = false;
      }
      if (e > 0) w.flops = static_cast<int64_t>(static_cast<double>(e) * info->perElem);
      break;
    }
    case Rule::PerInput: {
      int64_t e = v.inElems(0);
      if (e > 0) w.flops = static_cast<int64_t>(static_cast<double>(e) * info->perElem);
      break;
    }
    case Rule::Variadic: {
      int64_t e = v.outElems(0);
      int64_t ops = static_cast<int64_t>(v.presentInputs()) - 1 + static_cast<int64_t>(info->perElem);
      if (e > 0 && ops > 0) w.flops = satMul(e, ops);
      break;
    }
    case Rule::Special:
      if (w.cls == OpClass::ControlFlow) {
        controlFlowWork(v, w);
      } else if (!specialWork(v, w)) {
        w.shapesKnown = false;
      }
      break;
  }
  return w;
}

std::vector<OpWork> characteriseAll(const Graph& g) {
  std::vector<OpWork> out;
  out.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) out.push_back(characterise(g, static_cast<OpId>(i)));
  return out;
}

namespace {

/// Names a body reads from an enclosing scope: values that the body neither produces nor holds as weights
/// or inputs (recursively through nested bodies).
void freeNames(const Graph& body, std::set<std::string>& out) {
  std::set<std::string> bound;
  for (const auto& v : body.values)
    if (v.producer != kNone || v.isWeight || v.isGraphInput) bound.insert(v.name);
  for (ValueId i : body.inputs)
    if (i >= 0 && static_cast<size_t>(i) < body.values.size()) bound.insert(body.values[static_cast<size_t>(i)].name);
  for (const auto& n : body.nodes) {
    for (ValueId o : n.outputs)
      if (o >= 0 && static_cast<size_t>(o) < body.values.size()) bound.insert(body.values[static_cast<size_t>(o)].name);
  }
  for (const auto& n : body.nodes) {
    for (ValueId i : n.inputs) {
      if (i < 0 || static_cast<size_t>(i) >= body.values.size()) continue;
      const auto& name = body.values[static_cast<size_t>(i)].name;
      if (!bound.count(name)) out.insert(name);
    }
    for (const auto& [key, sub] : n.subgraphs) {
      if (!sub) continue;
      std::set<std::string> inner;
      freeNames(*sub, inner);
      for (const auto& name : inner)
        if (!bound.count(name)) out.insert(name);
    }
  }
}

/// Outer values a control-flow node reads through its bodies without listing them as inputs.
std::vector<ValueId> implicitInputs(const Graph& g, const Node& n) {
  std::vector<ValueId> ids;
  if (n.subgraphs.empty()) return ids;
  std::set<std::string> names;
  for (const auto& [key, sub] : n.subgraphs)
    if (sub) freeNames(*sub, names);
  for (const auto& name : names) {
    ValueId v = g.findValue(name);
    if (v >= 0) ids.push_back(v);
  }
  return ids;
}

int64_t bodyParamBytes(const Graph& g) {
  int64_t total = 0;
  for (const auto& n : g.nodes)
    for (const auto& [key, sub] : n.subgraphs)
      if (sub) total = satAdd(total, satAdd(sub->paramBytes(), bodyParamBytes(*sub)));
  return total;
}

}  // namespace

GraphWork summarise(const Graph& g, const std::vector<OpWork>& work) {
  GraphWork t;
  for (const auto& w : work) {
    t.macs = satAdd(t.macs, w.macs);
    t.flops = satAdd(t.flops, w.flops);
  }
  t.paramBytes = satAdd(g.paramBytes(), bodyParamBytes(g));

  // Peak live activations, nodes in stored (topological) order. A tensor is live from its producer (the start
  // for graph inputs) until its last consumer; graph outputs stay live until the end. Weights are excluded.
  const size_t nv = g.values.size();
  const size_t nn = g.nodes.size();
  std::vector<std::vector<ValueId>> reads(nn);
  std::vector<int64_t> lastUse(nv, -1);
  for (size_t i = 0; i < nn; ++i) {
    const Node& n = g.nodes[i];
    reads[i] = n.inputs;
    auto implicit = implicitInputs(g, n);
    reads[i].insert(reads[i].end(), implicit.begin(), implicit.end());
    for (ValueId v : reads[i])
      if (v >= 0 && static_cast<size_t>(v) < nv) lastUse[static_cast<size_t>(v)] = static_cast<int64_t>(i);
  }
  auto isActivation = [&](ValueId v) {
    return v >= 0 && static_cast<size_t>(v) < nv && !g.values[static_cast<size_t>(v)].isWeight;
  };
  auto keepsToEnd = [&](ValueId v) { return g.values[static_cast<size_t>(v)].isGraphOutput; };
  std::vector<char> live(nv, 0);
  int64_t current = 0;
  // Graph inputs (and any other activation without a producer, e.g. an outer-scope value in a body).
  std::vector<char> produced(nv, 0);
  for (const auto& n : g.nodes)
    for (ValueId v : n.outputs)
      if (v >= 0 && static_cast<size_t>(v) < nv) produced[static_cast<size_t>(v)] = 1;
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = g.values[v];
    if (val.isWeight || produced[v]) continue;
    if (!val.isGraphInput && lastUse[v] < 0) continue;  // an unused dangling value: not part of the model
    live[v] = 1;
    current = satAdd(current, val.bytes());
  }
  int64_t peak = current;
  // Unused graph inputs are live only at the start.
  for (size_t v = 0; v < nv; ++v)
    if (live[v] && lastUse[v] < 0 && !keepsToEnd(static_cast<ValueId>(v))) live[v] = 0, current -= g.values[v].bytes();

  for (size_t i = 0; i < nn; ++i) {
    const Node& n = g.nodes[i];
    for (ValueId v : n.outputs) {
      if (!isActivation(v) || live[static_cast<size_t>(v)]) continue;
      live[static_cast<size_t>(v)] = 1;
      current = satAdd(current, g.values[static_cast<size_t>(v)].bytes());
    }
    peak = std::max(peak, current);
    auto release = [&](ValueId v) {
      if (!isActivation(v) || !live[static_cast<size_t>(v)] || keepsToEnd(v)) return;
      if (lastUse[static_cast<size_t>(v)] > static_cast<int64_t>(i)) return;
      live[static_cast<size_t>(v)] = 0;
      current -= g.values[static_cast<size_t>(v)].bytes();
    };
    for (ValueId v : reads[i]) release(v);
    for (ValueId v : n.outputs) release(v);  // outputs nobody reads die at once
  }
  t.peakActivationBytes = peak;
  return t;
}

}  // namespace partex
