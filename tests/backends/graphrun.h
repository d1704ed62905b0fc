#pragma once
/// \file Test helper: runs a whole graph operator by operator through a Backend, keeping every
/// intermediate tensor, so that kernels can be checked end to end without an executor.

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/npy.h"
#include "gen/generator.h"
#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/tensordata.h"
#include "onnx/importer.h"

namespace partex::test {

/// A small graph built in a test: values, int64 constants with data, float32 operators, inputs and
/// outputs. build() indexes it (Graph::rebuildIndex) and hands it over.
struct GraphBuilder {
  Graph g;
  explicit GraphBuilder(const std::string& name, int64_t opset = 17) {
    g.name = name;
    g.opsetVersion = opset;
  }
  ValueId value(const std::string& name, DType t, std::vector<int64_t> shape) {
    Value v;
    v.name = name;
    v.dtype = t;
    v.shape = std::move(shape);
    v.shapeKnown = true;
    return g.addValue(v);
  }
  /// A float32 model input.
  ValueId input(const std::string& name, std::vector<int64_t> shape) {
    const ValueId v = value(name, DType::Float32, std::move(shape));
    g.values[static_cast<size_t>(v)].isGraphInput = true;
    g.inputs.push_back(v);
    return v;
  }
  /// An int64 constant (a weight with data), e.g. a Reshape's shape.
  ValueId ints(const std::string& name, const std::vector<int64_t>& x) {
    const ValueId v = value(name, DType::Int64, {static_cast<int64_t>(x.size())});
    Value& w = g.values[static_cast<size_t>(v)];
    w.isWeight = true;
    auto d = TensorData::allocate(x.size() * sizeof(int64_t));
    std::memcpy(d->mutableData(), x.data(), x.size() * sizeof(int64_t));
    w.data = std::move(d);
    return v;
  }
  /// An operator with one float32 output "<name>_out" of `shape`; returns that output.
  ValueId node(const std::string& name, const std::string& type, std::vector<ValueId> ins, std::vector<int64_t> shape,
               std::map<std::string, Attribute> attrs = {}) {
    Node nd;
    nd.name = name;
    nd.opType = type;
    nd.inputs = std::move(ins);
    nd.attrs = std::move(attrs);
    const ValueId out = value(name + "_out", DType::Float32, std::move(shape));
    nd.outputs = {out};
    g.addNode(nd);
    return out;
  }
  void output(ValueId v) {
    g.values[static_cast<size_t>(v)].isGraphOutput = true;
    g.outputs.push_back(v);
  }
  Graph build() {
    g.rebuildIndex();
    return std::move(g);
  }
};

/// An input of oneNodeGraph(): its dtype and shape; DType::Undefined leaves the input omitted (kNone).
struct NodeInput {
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;
};

/// A one-node graph (opset 17): the present inputs are graph inputs "in<i>" with known shapes, `nOut`
/// outputs "out<i>" of unknown shape with the first input's dtype, the node named `name`.
inline Graph oneNodeGraph(const std::string& op, const std::vector<NodeInput>& ins, int nOut = 1,
                          std::map<std::string, Attribute> attrs = {}, const std::string& name = "node") {
  Graph g;
  g.opsetVersion = 17;
  Node n;
  n.name = name;
  n.opType = op;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].dtype == DType::Undefined) {
      n.inputs.push_back(kNone);
      continue;
    }
    Value v;
    v.name = "in" + std::to_string(i);
    v.dtype = ins[i].dtype;
    v.shape = ins[i].shape;
    v.shapeKnown = true;
    v.isGraphInput = true;
    const ValueId id = g.addValue(v);
    g.inputs.push_back(id);
    n.inputs.push_back(id);
  }
  for (int i = 0; i < nOut; ++i) {
    Value v;
    v.name = "out" + std::to_string(i);
    v.dtype = ins.empty() ? DType::Float32 : ins[0].dtype;
    const ValueId id = g.addValue(v);
    g.outputs.push_back(id);
    n.outputs.push_back(id);
  }
  g.addNode(n);
  g.rebuildIndex();
  return g;
}

/// A model of the generator, imported (as `partex-cli generate` then opening the file would).
inline Result<Graph> generatedGraph(const GenSpec& spec) {
  auto bytes = generateModel(spec);
  if (!bytes) return Error{bytes.message()};
  return importOnnxBytes(*bytes, spec.kind + ".onnx");
}

/// dir/PREFIX0.pb, dir/PREFIX1.pb, ... while they exist (an ONNX conformance case's inputs or outputs).
inline std::vector<std::string> numberedFiles(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> files;
  for (int i = 0;; ++i) {
    const std::string p = dir + "/" + prefix + std::to_string(i) + ".pb";
    if (!std::ifstream(p).good()) break;
    files.push_back(p);
  }
  return files;
}

/// True when `backend` offers a device with this id.
inline bool hasDevice(const Backend& backend, const std::string& id) {
  const auto devs = backend.devices();
  return std::any_of(devs.begin(), devs.end(), [&](const BackendDevice& d) { return d.id == id; });
}

/// Runs every node of `g` in order on `deviceId`. `values` must hold the graph inputs and weights;
/// outputs are added. `onOutput` (optional) sees each produced tensor; returning a non-empty string
/// stops the run with that message.
inline Status runGraph(const Graph& g, const Backend& backend, const std::string& deviceId,
                       std::map<ValueId, Tensor>& values,
                       const std::function<std::string(const Node&, const Tensor&)>& onOutput = {}) {
  for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op) {
    const Node& n = g.nodes[static_cast<size_t>(op)];
    auto k = backend.prepare(g, op, deviceId);
    if (!k) return Error{k.message()};
    std::vector<const Tensor*> ins;
    for (ValueId v : n.inputs) {
      if (v < 0) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = values.find(v);
      if (it == values.end())
        return makeError("node '", n.name, "': input '", g.values[static_cast<size_t>(v)].name, "' has no data");
      ins.push_back(&it->second);
    }
    std::vector<Tensor> outs;
    Status s = (*k)->run(ins, outs);
    if (!s) return s;
    if (outs.size() < n.outputs.size()) return makeError("node '", n.name, "': too few outputs");
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i] < 0) continue;
      if (onOutput) {
        std::string why = onOutput(n, outs[i]);
        if (!why.empty()) return makeError("node '", n.name, "' (", n.opType, "): ", why);
      }
      values[n.outputs[i]] = std::move(outs[i]);
    }
  }
  return Status::ok();
}

/// Like runGraph, but each fused group of `g` (ir/fusion.h, every operator on the one device) runs as the
/// backend's one fused kernel, as the executor runs it; the groups' inner tensors are never made. Returns
/// the number of fused kernels run.
inline Result<int> runGraphFused(const Graph& g, const Backend& backend, const std::string& deviceId,
                                 std::map<ValueId, Tensor>& values) {
  const auto groups = fusedGroups(g);
  const auto groupOf = groupOfOps(g, groups);
  int fused = 0;
  for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op) {
    const Node& n = g.nodes[static_cast<size_t>(op)];
    const int gi = groupOf[static_cast<size_t>(op)];
    std::unique_ptr<Kernel> kernel;
    std::vector<ValueId> inputs = n.inputs, outputs = n.outputs;
    if (gi >= 0) {
      const FusedGroup& grp = groups[static_cast<size_t>(gi)];
      if (grp.ops.back() != op) continue;  // runs in the group's last operator's slot
      auto k = backend.prepareGroup(g, grp, deviceId);
      if (!k) return Error{k.message()};
      kernel = std::move(*k);
      inputs = grp.inputs;
      outputs = {grp.output};
      ++fused;
    } else {
      auto k = backend.prepare(g, op, deviceId);
      if (!k) return Error{k.message()};
      kernel = std::move(*k);
    }
    std::vector<const Tensor*> ins;
    for (ValueId v : inputs) {
      auto it = v < 0 ? values.end() : values.find(v);
      if (v >= 0 && it == values.end())
        return makeError("node '", n.name, "': input '", g.values[static_cast<size_t>(v)].name, "' has no data");
      ins.push_back(v < 0 ? nullptr : &it->second);
    }
    std::vector<Tensor> outs;
    if (Status s = kernel->run(ins, outs); !s) return Error{s.message()};
    if (outs.size() < outputs.size()) return makeError("node '", n.name, "': too few outputs");
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i] >= 0) values[outputs[i]] = std::move(outs[i]);
  }
  return fused;
}

/// The --dim bindings a shared model needs (../shared/models/README.md: the PP-OCR models have symbolic
/// sizes); none for the others.
inline std::vector<std::string> sharedModelDims(const std::string& file) {
  if (file == "ch_PP-OCRv4_det_infer.onnx") return {"x:0=1", "x:2=640", "x:3=640"};
  if (file == "ch_ppocr_mobile_v2.0_cls_infer.onnx") return {"x:0=1", "x:2=48", "x:3=192"};
  return {};
}

/// Imports a shared model file with the bindings it needs.
inline Result<Graph> importSharedModel(const std::string& path) {
  ImportOptions io;
  const std::string file = path.substr(path.find_last_of('/') + 1);
  for (const auto& d : sharedModelDims(file)) io.dims.push_back(*parseDimBinding(d));
  return importOnnxFile(path, io);
}

/// The tensors of every leaf a run reads (weights with their data, seeded model inputs: leafTensor).
inline Result<std::map<ValueId, Tensor>> leafTensors(const Graph& g, uint64_t seed) {
  std::map<ValueId, Tensor> leaves;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values.size()); ++v) {
    const Value& val = g.values[static_cast<size_t>(v)];
    if (!(val.isWeight || val.isGraphInput) || val.consumers.empty()) continue;
    auto t = leafTensor(g, v, seed);
    if (!t) return Error{t.message()};
    leaves[v] = std::move(*t);
  }
  return leaves;
}

/// Looks a leaf up in `leaves` (which must outlive the function): what a GPU program's build takes.
inline std::function<Result<const Tensor*>(ValueId)> leafLookup(const std::map<ValueId, Tensor>& leaves) {
  return [&leaves](ValueId v) -> Result<const Tensor*> {
    auto it = leaves.find(v);
    if (it == leaves.end()) return makeError("no leaf tensor for value ", std::to_string(v));
    return &it->second;
  };
}

/// The model outputs of `g` run on `backend`'s `deviceId` from `leaves`, read from `cacheDir` when an
/// earlier run under the same `name` wrote them there (NAME.<output index>.npy), else computed and
/// written there ("" = no cache); `fromCache` (optional) says which. A GPU machine's runs share the CPU
/// reference this way.
inline Result<std::map<ValueId, Tensor>> cachedReference(const Graph& g, const std::string& name,
                                                          const std::map<ValueId, Tensor>& leaves, const Backend& backend,
                                                          const std::string& deviceId, const std::string& cacheDir,
                                                          bool* fromCache = nullptr) {
  auto file = [&](size_t i) { return cacheDir + "/" + name + "." + std::to_string(i) + ".npy"; };
  std::map<ValueId, Tensor> ref;
  bool cached = !cacheDir.empty();
  for (size_t i = 0; cached && i < g.outputs.size(); ++i) {
    auto t = readNpyFile(file(i));
    if (t) ref[g.outputs[i]] = std::move(*t);
    else cached = false;
  }
  if (fromCache) *fromCache = cached;
  if (cached) return ref;
  ref = leaves;
  if (auto st = runGraph(g, backend, deviceId, ref); !st) return Error{st.message()};
  if (!cacheDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cacheDir, ec);
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      Tensor plain;
      if (ref[g.outputs[i]].toPlain(plain)) (void)writeNpyFile(file(i), plain);
    }
  }
  return ref;
}

}  // namespace partex::test
