#include "backend/backend.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <cmath>

namespace partex {

Result<std::unique_ptr<Kernel>> Backend::prepareGroup(const Graph&, const FusedGroup&, const std::string&) const {
  return makeError("backend '", name(), "' does not fuse operators");
}

namespace {

class CombinedBackend final : public Backend {
 public:
  explicit CombinedBackend(std::vector<const Backend*> parts) : parts_(std::move(parts)) {
    for (const Backend* b : parts_) {
      name_ += (name_.empty() ? "" : "+") + b->name();
      version_ += (version_.empty() ? "" : " | ") + b->version();
    }
  }
  std::string name() const override { return name_; }
  std::string version() const override { return version_; }
  std::vector<BackendDevice> devices() const override {
    std::vector<BackendDevice> all;
    for (const Backend* b : parts_)
      for (auto& d : b->devices())
        if (std::none_of(all.begin(), all.end(), [&](const BackendDevice& x) { return x.id == d.id; })) all.push_back(d);
    return all;
  }
  bool supports(const Graph& g, OpId op, std::string* reason) const override {
    std::string why, all;
    for (const Backend* b : parts_) {
      if (b->supports(g, op, &why)) {
        if (reason) reason->clear();
        return true;
      }
      all += (all.empty() ? "" : "; ") + b->name() + ": " + why;
    }
    if (reason) *reason = all;
    return false;
  }
  Result<std::unique_ptr<Kernel>> prepare(const Graph& g, OpId op, const std::string& deviceId) const override {
    const Backend* b = owner(deviceId);
    if (!b) return makeError("backend '", name_, "': unknown device '", deviceId, "'");
    return b->prepare(g, op, deviceId);
  }
  Result<std::unique_ptr<Kernel>> prepareGroup(const Graph& g, const FusedGroup& group,
                                               const std::string& deviceId) const override {
    const Backend* b = owner(deviceId);
    if (!b) return makeError("backend '", name_, "': unknown device '", deviceId, "'");
    return b->prepareGroup(g, group, deviceId);
  }
  Result<std::map<std::string, double>> deviceFacts(const std::string& deviceId) const override {
    const Backend* b = owner(deviceId);
    if (!b) return makeError("backend '", name_, "': unknown device '", deviceId, "'");
    return b->deviceFacts(deviceId);
  }

 private:
  const Backend* owner(const std::string& deviceId) const {
    for (const Backend* b : parts_)
      for (const auto& d : b->devices())
        if (d.id == deviceId) return b;
    return nullptr;
  }
  std::vector<const Backend*> parts_;
  std::string name_, version_;
};

}  // namespace

std::unique_ptr<Backend> makeCombinedBackend(std::vector<const Backend*> parts) {
  return std::make_unique<CombinedBackend>(std::move(parts));
}

void BackendRegistry::add(std::unique_ptr<Backend> backend) {
  if (!backend) return;
  combined_.reset();
  const std::string n = backend->name();
  for (auto& b : backends_)
    if (b->name() == n) {
      b = std::move(backend);
      return;
    }
  backends_.push_back(std::move(backend));
}

Backend* BackendRegistry::find(const std::string& name) const {
  if (name == "auto") {
    if (backends_.size() == 1) return backends_[0].get();
    if (backends_.empty()) return nullptr;
    if (!combined_) {
      std::vector<const Backend*> parts;
      for (const auto& b : backends_) parts.push_back(b.get());
      combined_ = makeCombinedBackend(std::move(parts));
    }
    return combined_.get();
  }
  for (const auto& b : backends_)
    if (b->name() == name) return b.get();
  return nullptr;
}

std::vector<Backend*> BackendRegistry::all() const {
  std::vector<Backend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

namespace {

/// Value range for a float tensor feeding input `slot` of `n`; false when nothing specific applies.
bool floatRangeFor(const Graph& g, const Node& n, size_t slot, const Value& v, double& lo, double& hi) {
  const std::string& t = n.opType;
  if (t == "BatchNormalization") {
    if (slot == 1 || slot == 4) {
      lo = 0.5;
      hi = 1.5;
      return true;
    }  // scale, variance
    if (slot == 2 || slot == 3) {
      lo = -0.5;
      hi = 0.5;
      return true;
    }
  }
  if ((t == "InstanceNormalization" || t == "LayerNormalization") && slot == 1) {
    lo = 0.5;
    hi = 1.5;
    return true;
  }
  if (slot == 1 && v.isWeight && v.shape.size() >= 2) {
    int64_t fanIn = 0;
    if (t == "Conv")
      fanIn = v.numElements() / std::max<int64_t>(1, v.shape[0]);
    else if (t == "ConvTranspose")
      fanIn = v.numElements() / std::max<int64_t>(1, v.shape[1]);
    else if (t == "MatMul")
      fanIn = v.shape[v.shape.size() - 2];
    else if (t == "Gemm")
      fanIn = n.attrInt("transB", 0) ? v.shape[1] : v.shape[0];
    if (fanIn > 0) {
      hi = std::sqrt(3.0 / static_cast<double>(fanIn));  // variance 1/fan-in keeps activations O(1)
      lo = -hi;
      return true;
    }
  }
  (void)g;
  return false;
}

}  // namespace

Result<Tensor> syntheticTensor(const Graph& g, ValueId id, uint64_t seed) {
  if (id < 0 || id >= static_cast<ValueId>(g.values.size())) return makeError("synthetic tensor: bad value id");
  const Value& v = g.values[static_cast<size_t>(id)];
  if (!v.shapeKnown || shapeElements(v.shape) < 0) return makeError("value '", v.name, "': shape not fully known");
  if (!tensorDTypeSupported(v.dtype))
    return makeError("value '", v.name, "': dtype ", dtypeName(v.dtype), " not supported");
  auto t = Tensor::make(v.dtype, v.shape);
  if (!t) return makeError("value '", v.name, "': ", t.message());
  const int64_t n = t->numElements();
  const uint64_t s = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(id) + 1;
  if (!v.intData.empty() && static_cast<int64_t>(v.intData.size()) == n) {
    void* p = t->raw();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t x = v.intData[static_cast<size_t>(i)];
      switch (v.dtype) {
        case DType::Int64:
          static_cast<int64_t*>(p)[i] = x;
          break;
        case DType::Int32:
          static_cast<int32_t*>(p)[i] = static_cast<int32_t>(x);
          break;
        case DType::Int16:
          static_cast<int16_t*>(p)[i] = static_cast<int16_t>(x);
          break;
        case DType::Int8:
          static_cast<int8_t*>(p)[i] = static_cast<int8_t>(x);
          break;
        case DType::UInt8:
          static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(x);
          break;
        case DType::Bool:
          static_cast<uint8_t*>(p)[i] = x != 0;
          break;
        case DType::Float32:
          static_cast<float*>(p)[i] = static_cast<float>(x);
          break;
        case DType::Float64:
          static_cast<double*>(p)[i] = static_cast<double>(x);
          break;
        default:
          return makeError("value '", v.name, "': integer payload for dtype ", dtypeName(v.dtype));
      }
    }
    return t;
  }
  // Float weights whose values decide the operator's meaning get plausible values: Resize/Upsample
  // scales from the static shapes, Clip bounds 0 and 6, Pow exponents 2.
  for (OpId c : v.consumers) {
    if (c < 0 || c >= static_cast<OpId>(g.nodes.size()) || (v.dtype != DType::Float32 && v.dtype != DType::Float64))
      continue;
    const Node& node = g.nodes[static_cast<size_t>(c)];
    for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
      if (node.inputs[slot] != id) continue;
      const bool scales =
          (node.opType == "Resize" && slot == 2 && node.inputs.size() > 2) || (node.opType == "Upsample" && slot == 1);
      if (scales && node.inputs[0] >= 0 && !node.outputs.empty() && node.outputs[0] >= 0) {
        const Value& x = g.values[static_cast<size_t>(node.inputs[0])];
        const Value& y = g.values[static_cast<size_t>(node.outputs[0])];
        if (x.shapeKnown && y.shapeKnown && x.shape.size() == y.shape.size() &&
            static_cast<int64_t>(x.shape.size()) == n) {
          for (int64_t i = 0; i < n; ++i) {
            const double r = x.shape[static_cast<size_t>(i)] > 0
                                 ? static_cast<double>(y.shape[static_cast<size_t>(i)]) /
                                       static_cast<double>(x.shape[static_cast<size_t>(i)])
                                 : 1.0;
            if (v.dtype == DType::Float32)
              t->data<float>()[i] = static_cast<float>(r);
            else
              t->data<double>()[i] = r;
          }
          return t;
        }
      }
      if (node.opType == "Clip" && (slot == 1 || slot == 2)) {
        t->fill(slot == 1 ? 0.0 : 6.0);
        return t;
      }
      if (node.opType == "Pow" && slot == 1) {
        t->fill(2.0);
        return t;
      }
    }
  }
  const bool isFloat = v.dtype == DType::Float32 || v.dtype == DType::Float64;
  double lo = isFloat ? -1.0 : 0.0, hi = 1.0;
  // Scalar float weights are epsilons, divisors and scale factors far more often than anything else:
  // keep them positive so that Sqrt/Div/Log chains stay finite.
  if (isFloat && v.isWeight && n <= 1) lo = 0.5, hi = 1.5;
  for (OpId c : v.consumers) {
    if (c < 0 || c >= static_cast<OpId>(g.nodes.size())) continue;
    const Node& node = g.nodes[static_cast<size_t>(c)];
    for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
      if (node.inputs[slot] != id) continue;
      if (isFloat) {
        if (floatRangeFor(g, node, slot, v, lo, hi)) goto chosen;
      } else if ((node.opType == "Gather" || node.opType == "GatherElements") && slot == 1 && node.inputs[0] >= 0) {
        const Value& data = g.values[static_cast<size_t>(node.inputs[0])];
        int64_t axis = node.attrInt("axis", 0);
        if (axis < 0) axis += static_cast<int64_t>(data.shape.size());
        if (data.shapeKnown && axis >= 0 && axis < static_cast<int64_t>(data.shape.size()) &&
            data.shape[static_cast<size_t>(axis)] > 0) {
          lo = 0;
          hi = static_cast<double>(data.shape[static_cast<size_t>(axis)]);
          goto chosen;
        }
      }
    }
  }
  if (!isFloat && v.dtype != DType::Bool) hi = 1.0;  // zeros: the neutral integer
  if (v.dtype == DType::Bool) {
    t->fill(1.0);
    return t;
  }  // masks: keep everything
chosen:
  t->fillRandom(s, lo, hi);
  return t;
}

Result<Tensor> leafTensor(const Graph& g, ValueId id, uint64_t seed) {
  if (id < 0 || id >= static_cast<ValueId>(g.values.size())) return makeError("leaf tensor: bad value id");
  const Value& v = g.values[static_cast<size_t>(id)];
  if (!v.isWeight || !v.data) return syntheticTensor(g, id, seed);
  if (!v.shapeKnown || shapeElements(v.shape) < 0) return makeError("weight '", v.name, "': shape not fully known");
  auto t = Tensor::alias(v.dtype, v.shape, v.data);
  if (!t) return makeError("weight '", v.name, "': ", t.message());
  return t;
}

int acceleratorHostCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

int64_t availableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kb) == 1) return static_cast<int64_t>(kb) * 1024;
  }
  return -1;
}

Status checkRunMemory(const Graph& g, int64_t availableBytes) {
  if (availableBytes < 0) availableBytes = availableMemoryBytes();
  if (availableBytes < 0) return Status::ok();
  int64_t placeholders = 0, inputs = 0;
  for (const auto& v : g.values) {
    if (v.producer >= 0 || v.bytes() <= 0) continue;
    if (v.isWeight && v.data && v.data->isSplat())
      placeholders += v.bytes();
    else if (v.isGraphInput || (v.isWeight && !v.data))
      inputs += v.bytes();
  }
  const int64_t need = placeholders + inputs;
  if (need <= availableBytes) return Status::ok();
  auto gb = [](int64_t b) {
    std::ostringstream o;
    o.precision(3);
    o << static_cast<double>(b) / 1e9 << " GB";
    return o.str();
  };
  return makeError("a run needs ", gb(need), " for its weights and inputs before the first kernel (", gb(placeholders),
                   " of them placeholder weights, ConstantOfShape patterns that a run expands: the model has no "
                   "weight data), more than the ",
                   gb(availableBytes), " of memory available");
}

}  // namespace partex
