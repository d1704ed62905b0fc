#include "cuda/cuda_conv_graph.h"

#include <cstring>

// The sequence follows NVIDIA's cuDNN backend documentation (cuDNN 9, "Graph API" and "cudnn_graph
// library: backend descriptor types"): tensor descriptors with dimensions, strides, unique ids and
// alignment; a convolution descriptor; a forward-convolution operation (alpha 1, beta 0); an operation
// graph; heuristics that list engine configurations; an execution plan per configuration; and a variant
// pack (the data pointers by unique id, and the workspace) for cudnnBackendExecute. Grouped convolution
// is implied by the shapes: the graph API takes W as [K, C/g, kh, kw] and derives g from X's C.

namespace partex::cuda {

namespace {

constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;
/// The byte alignment the tensors are declared with (run() checks the pointers): cudaMalloc returns
/// 256-byte aligned memory and the backend's values each have their own allocation.
constexpr int64_t kAlignment = 16;
/// Fallback-mode engines added after mode A's.
constexpr int kFallbackExtra = 4;

Status setAttr(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
               int64_t count, const void* values, const char* what) {
  return check(cudnnBackendSetAttribute(d, name, type, count, values), what);
}

/// NCHW packed strides of a 4-D shape.
void packedStrides(const int64_t d[4], int64_t s[4]) {
  s[3] = 1;
  s[2] = d[3];
  s[1] = d[2] * d[3];
  s[0] = d[1] * d[2] * d[3];
}

/// The global engine index and knob choices of an engine configuration, "eng<id>{type=value,...}".
/// Best effort: a query that fails leaves its part out (the description is for logs and for telling
/// equal configurations from two heuristics modes apart).
std::string describeConfig(cudnnBackendDescriptor_t cfg, cudnnBackendDescriptor_t engine) {
  std::string s = "eng";
  int64_t id = -1, n = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &id) ==
          CUDNN_STATUS_SUCCESS &&
      n == 1)
    s += std::to_string(id);
  else
    s += "?";
  // Knob choices: descriptors created here, filled in by the query.
  std::vector<cudnnBackendDescriptor_t> knobs;
  bool ok = true;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS && ok; ++i) {
    cudnnBackendDescriptor_t k = nullptr;
    ok = cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &k) == CUDNN_STATUS_SUCCESS;
    if (ok) knobs.push_back(k);
  }
  int64_t got = 0;
  if (ok) ok = cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                        static_cast<int64_t>(knobs.size()), &got, knobs.data()) == CUDNN_STATUS_SUCCESS;
  s += "{";
  for (int64_t i = 0; ok && i < got && i < static_cast<int64_t>(knobs.size()); ++i) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0, c1 = 0, c2 = 0;
    if (cudnnBackendGetAttribute(knobs[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE,
                                 1, &c1, &type) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(knobs[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                                 &c2, &value) != CUDNN_STATUS_SUCCESS)
      continue;
    if (s.back() != '{') s += ",";
    s += std::to_string(static_cast<int>(type)) + "=" + std::to_string(value);
  }
  s += ok ? "}" : "?}";
  for (auto k : knobs) cudnnBackendDestroyDescriptor(k);
  return s;
}

}  // namespace

void ConvGraphPlans::DescDeleter::operator()(void* d) const {
  if (d) cudnnBackendDestroyDescriptor(d);
}

ConvGraphPlans::~ConvGraphPlans() {
  // Users before what they use: the variant pack, the plans, then the configurations, graph,
  // operation and tensors in the reverse of their creation.
  pack_.reset();
  plans_.clear();
  while (!keep_.empty()) keep_.pop_back();
}

Status ConvGraphPlans::create(Desc& out, cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  if (auto st = check(cudnnBackendCreateDescriptor(type, &d), "cudnnBackendCreateDescriptor"); !st) return st;
  out.reset(d);
  return {};
}

Result<ConvGraphPlans> ConvGraphPlans::build(Context& ctx, const int64_t xDims[4], const int64_t wDims[4],
                                             const int64_t yDims[4], const int64_t pads[2], const int64_t strides[2],
                                             const int64_t dilations[2], bool allowTf32, size_t maxWorkspace,
                                             int maxPlans) {
  // Shapes first: the graph API would refuse them too, with a less telling message.
  for (int i = 0; i < 4; ++i)
    if (xDims[i] <= 0 || wDims[i] <= 0 || yDims[i] <= 0) return makeError("conv graph: empty or negative dimension");
  if (xDims[1] % wDims[1] != 0) return makeError("conv graph: input channels not a multiple of the filter's");
  const int64_t groups = xDims[1] / wDims[1];
  if (wDims[0] % groups != 0 || yDims[1] != wDims[0] || yDims[0] != xDims[0])
    return makeError("conv graph: output channels or batch do not match the filter and the groups");
  for (int i = 0; i < 2; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || pads[i] < 0) return makeError("conv graph: bad stride, dilation or pad");
    const int64_t span = (wDims[2 + i] - 1) * dilations[i] + 1;
    if ((xDims[2 + i] + 2 * pads[i] - span) / strides[i] + 1 != yDims[2 + i])
      return makeError("conv graph: output size does not match the geometry");
  }

  ConvGraphPlans g;
  auto make = [&g](cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t& raw) -> Status {
    Desc d;
    if (auto st = create(d, type); !st) return st;
    raw = d.get();
    g.keep_.push_back(std::move(d));
    return {};
  };

  // The three tensors.
  cudnnBackendDescriptor_t tensors[3] = {nullptr, nullptr, nullptr};
  const int64_t* dims[3] = {xDims, wDims, yDims};
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  for (int t = 0; t < 3; ++t) {
    int64_t st4[4];
    packedStrides(dims[t], st4);
    const cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    Status st = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, tensors[t]);
    if (st) st = setAttr(tensors[t], CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
    if (st) st = setAttr(tensors[t], CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims[t], "tensor dimensions");
    if (st) st = setAttr(tensors[t], CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st4, "tensor strides");
    if (st) st = setAttr(tensors[t], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uids[t], "tensor id");
    if (st) st = setAttr(tensors[t], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlignment, "tensor alignment");
    if (st) st = check(cudnnBackendFinalize(tensors[t]), "tensor finalize");
    if (!st) return makeError("conv graph: ", st.message());
  }

  // The convolution and its forward operation.
  cudnnBackendDescriptor_t conv = nullptr, op = nullptr, graph = nullptr;
  {
    const int64_t spatial = 2;
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    Status st = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, conv);
    if (st) st = setAttr(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial, "spatial dims");
    if (st) st = setAttr(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, "compute type");
    if (st) st = setAttr(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "mode");
    if (st) st = setAttr(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations, "dilations");
    if (st) st = setAttr(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides, "strides");
    if (st) st = setAttr(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads, "pre paddings");
    if (st) st = setAttr(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads, "post paddings");
    if (st) st = check(cudnnBackendFinalize(conv), "convolution finalize");

    const float alpha = 1.f, beta = 0.f;
    if (st) st = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, op);
    if (st) st = setAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tensors[0], "op x");
    if (st) st = setAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tensors[1], "op w");
    if (st) st = setAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tensors[2], "op y");
    if (st) st = setAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv, "op conv");
    if (st) st = setAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, "op alpha");
    if (st) st = setAttr(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, "op beta");
    if (st) st = check(cudnnBackendFinalize(op), "operation finalize");

    // The graph of that one operation. The handle attribute is marked deprecated in cuDNN 9 headers
    // but still accepted; NVIDIA's frontend sets it, and so do we.
    cudnnHandle_t handle = ctx.cudnn();
    if (st) st = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, graph);
    if (st) st = setAttr(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op, "graph ops");
    if (st) st = setAttr(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle");
    if (st) st = check(cudnnBackendFinalize(graph), "operation graph finalize");
    if (!st) return makeError("conv graph: ", st.message());
  }

  // Engine configurations from the heuristics, mode A then fallback; a plan for each usable one.
  const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
  for (int m = 0; m < 2; ++m) {
    const int limit = m == 0 ? maxPlans : g.count() + kFallbackExtra;
    Desc heur;
    Status st = create(heur, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    if (st) st = setAttr(heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph,
                         "heuristics graph");
    if (st) st = setAttr(heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[m], "heuristics mode");
    if (st) st = check(cudnnBackendFinalize(heur.get()), "heuristics finalize");
    int64_t available = 0;
    if (st) st = check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                                0, &available, nullptr),
                       "heuristics count");
    if (!st || available <= 0) continue;  // this mode has nothing for the graph
    // The result descriptors are created here and filled in by the query.
    std::vector<Desc> cfgs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < available && st; ++i) {
      Desc d;
      st = create(d, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      if (st) raw.push_back(d.get()), cfgs.push_back(std::move(d));
    }
    int64_t got = 0;
    if (st) st = check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                                static_cast<int64_t>(raw.size()), &got, raw.data()),
                       "heuristics results");
    if (!st) continue;
    for (int64_t i = 0; i < got && i < static_cast<int64_t>(raw.size()) && g.count() < limit; ++i) {
      cudnnBackendDescriptor_t cfg = raw[static_cast<size_t>(i)];
      // The configuration's engine (a descriptor filled in by the query) and its notes.
      Desc engine;
      if (!create(engine, CUDNN_BACKEND_ENGINE_DESCRIPTOR)) continue;
      cudnnBackendDescriptor_t e = engine.get();
      int64_t n = 0;
      if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) !=
          CUDNN_STATUS_SUCCESS)
        continue;
      cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
      int64_t nNotes = 0;
      if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                   CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nNotes, notes) != CUDNN_STATUS_SUCCESS)
        continue;
      cudnnBackendBehaviorNote_t behaviour[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
      int64_t nBehaviour = 0;
      if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                   CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &nBehaviour, behaviour) != CUDNN_STATUS_SUCCESS)
        continue;
      bool usable = true;
      for (int64_t k = 0; k < nNotes && k < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++k) {
        const cudnnBackendNumericalNote_t note = notes[k];
        // As PyTorch does for float32 (aten/src/ATen/native/cudnn/Conv_v8.cpp): no converted inputs,
        // no tensor cores (TF32) unless allowed; and no reduced-precision accumulation.
        if (note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS || note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION ||
            (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && !allowTf32))
          usable = false;
      }
      // Engines compiled at run time (NVRTC) would add seconds to prepare and need NVRTC at run time.
      for (int64_t k = 0; k < nBehaviour && k < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++k)
        if (behaviour[k] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) usable = false;
      if (!usable) continue;
      std::string what = (m == 0 ? "A:" : "F:") + describeConfig(cfg, e);
      bool seen = false;
      for (const Plan& p : g.plans_) seen = seen || p.what.substr(2) == what.substr(2);
      if (seen) continue;
      // The plan; a configuration whose plan does not build (not supported on this GPU, for
      // these shapes) is skipped.
      Desc plan;
      cudnnHandle_t handle = ctx.cudnn();
      int64_t ws = 0, nWs = 0;
      Status ps = create(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      if (ps) ps = setAttr(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle");
      if (ps) ps = setAttr(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg,
                           "plan configuration");
      if (ps) ps = check(cudnnBackendFinalize(plan.get()), "plan finalize");
      if (ps) ps = check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                                  1, &nWs, &ws),
                         "plan workspace");
      if (!ps || ws < 0 || static_cast<size_t>(ws) > maxWorkspace) continue;
      g.keep_.push_back(std::move(engine));
      g.keep_.push_back(std::move(cfgs[static_cast<size_t>(i)]));
      g.plans_.push_back(Plan{std::move(plan), std::move(what), static_cast<size_t>(ws)});
    }
  }
  return g;
}

std::string ConvGraphPlans::describe(int i) const {
  if (i < 0 || i >= count()) return "none";
  return plans_[static_cast<size_t>(i)].what;
}

size_t ConvGraphPlans::workspace(int i) const {
  if (i < 0 || i >= count()) return 0;
  return plans_[static_cast<size_t>(i)].workspace;
}

bool ConvGraphPlans::aligned(const void* x, const void* w, const void* y) {
  auto ok = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(kAlignment) == 0; };
  return ok(x) && ok(w) && ok(y);
}

Status ConvGraphPlans::run(int i, Context& ctx, const float* x, const float* w, float* y) {
  if (i < 0 || i >= count()) return makeError("conv graph: no plan ", std::to_string(i));
  if (!aligned(x, w, y)) return makeError("conv graph: a pointer is not ", std::to_string(kAlignment), "-byte aligned");
  const void* ptrs[4] = {x, w, y, ctx.workspace()};
  if (!pack_ || std::memcmp(ptrs, packPtrs_, sizeof ptrs) != 0) {
    pack_.reset();
    Desc pack;
    void* data[3] = {const_cast<float*>(x), const_cast<float*>(w), y};
    const int64_t uids[3] = {kUidX, kUidW, kUidY};
    void* ws = ctx.workspace();
    Status st = create(pack, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    if (st) st = setAttr(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids, "variant pack ids");
    if (st) st = setAttr(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data,
                         "variant pack pointers");
    if (st) st = setAttr(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws, "variant pack workspace");
    if (st) st = check(cudnnBackendFinalize(pack.get()), "variant pack finalize");
    if (!st) return makeError("conv graph: ", st.message());
    pack_ = std::move(pack);
    std::memcpy(packPtrs_, ptrs, sizeof ptrs);
  }
  if (auto st = check(cudnnBackendExecute(ctx.cudnn(), plans_[static_cast<size_t>(i)].plan.get(), pack_.get()),
                      "cudnnBackendExecute");
      !st)
    return makeError("conv graph: ", describe(i), ": ", st.message());
  return {};
}

}  // namespace partex::cuda
