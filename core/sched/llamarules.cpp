// llama.cpp's placement rules over weight tensors (llamarules.h). Read in llama.cpp's source:
// src/llama-model.cpp load_tensors (-ngl's slots), common/common.h and common/arg.cpp (the override
// regexes of --n-cpu-moe, --cpu-moe, --n-cpu-ffn), src/llama-model-loader.cpp / create_tensor (the
// first matching override wins), ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph (where
// operators without weights run), ggml-cuda's offload_op (batch >= 32). Commits in docs/design-decisions.md.
// GCC 12 with AddressSanitizer reports -Wmaybe-uninitialized inside libstdc++'s <regex> (a std::function
// moved in _NFA::_M_insert_subexpr_end), a known false positive of that warning under the sanitizers'
// instrumentation; the warning stays on in every other build and file.
#if defined(__GNUC__) && !defined(__clang__) && defined(__SANITIZE_ADDRESS__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "sched/llamarules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "support/strings.h"

namespace partex {

int layerOfName(const std::string& name) {
  static const std::string key = "layers.";
  for (size_t at = name.find(key); at != std::string::npos; at = name.find(key, at + 1)) {
    if (at > 0 && name[at - 1] != '.' && name[at - 1] != '/') continue;
    size_t i = at + key.size(), digits = 0;
    int64_t L = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && digits < 9) {
      L = L * 10 + (name[i] - '0');
      ++i;
      ++digits;
    }
    if (digits > 0 && i < name.size() && (name[i] == '.' || name[i] == '/')) return static_cast<int>(L);
  }
  return -1;
}

namespace {

/// "<prefix><L>.<rest>" at the start of `s`: L and rest, or -1.
int leadingLayer(const std::string& s, const std::string& prefix, std::string* rest) {
  if (s.rfind(prefix, 0) != 0) return -1;
  size_t i = prefix.size();
  int64_t L = 0;
  size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && digits < 9) {
    L = L * 10 + (s[i] - '0');
    ++i;
    ++digits;
  }
  if (digits == 0 || i >= s.size() || s[i] != '.') return -1;
  if (rest) *rest = s.substr(i + 1);
  return static_cast<int>(L);
}


bool isCacheName(const std::string& n, int* layer) {
  for (const char* p : {"past_key.", "past_value."}) {
    const std::string prefix = p;
    if (n.rfind(prefix, 0) != 0) continue;
    const std::string tail = n.substr(prefix.size());
    if (tail.empty() || tail.find_first_not_of("0123456789") != std::string::npos) return false;
    *layer = std::stoi(tail);
    return true;
  }
  return false;
}

/// The weights task v reads (none for task graphs, which have no weight table).
const std::vector<int32_t>& weightsOf(const CostTable& t, TaskId v) {
  static const std::vector<int32_t> none;
  return static_cast<size_t>(v) < t.taskWeights.size() ? t.taskWeights[static_cast<size_t>(v)] : none;
}

std::string regexEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string(".^$|()[]{}*+?\\").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

bool isLlamaRule(const std::string& s) {
  return s == "offload" || s == "fit" || s == "n-cpu-moe" || s == "n-cpu-ffn" || s == "ot";
}

std::string ggufTensorName(const std::string& weightName) {
  std::string n = weightName;
  if (n.rfind("model.", 0) == 0) n = n.substr(6);
  if (n == "token_embd.weight" || n == "output.weight" || n == "output_norm.weight") return n;
  if (n == "embed_tokens.weight") return "token_embd.weight";
  if (n == "lm_head.weight") return "output.weight";
  if (n == "norm.weight") return "output_norm.weight";
  std::string rest;
  if (int L = leadingLayer(n, "blk.", &rest); L >= 0) return n;
  const int L = leadingLayer(n, "layers.", &rest);
  if (L < 0) return "";
  static const std::map<std::string, std::string> kinds = {
      {"input_norm.weight", "attn_norm.weight"},
      {"input_layernorm.weight", "attn_norm.weight"},
      {"attn.q_proj.weight", "attn_q.weight"},
      {"attn.k_proj.weight", "attn_k.weight"},
      {"attn.v_proj.weight", "attn_v.weight"},
      {"attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"post_attention_norm.weight", "ffn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  auto it = kinds.find(rest);
  return it == kinds.end() ? "" : "blk." + std::to_string(L) + "." + it->second;
}

LlamaTensors llamaTensors(const CostTable& t) {
  const size_t nw = t.weightBytes.size();
  LlamaTensors m;
  m.name.assign(nw, "");
  m.slot.assign(nw, LlamaTensors::kConstant);
  m.cache.assign(nw, 0);
  // Readers of each weight, by the layers of their names.
  std::vector<std::set<int>> readerLayers(nw);
  std::vector<std::string> outsideReader(nw);
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const int L = layerOfName(t.taskNames[static_cast<size_t>(v)]);
    for (int32_t w : weightsOf(t, v)) {
      readerLayers[static_cast<size_t>(w)].insert(L);
      if (L < 0 && outsideReader[static_cast<size_t>(w)].empty()) outsideReader[static_cast<size_t>(w)] = t.taskNames[static_cast<size_t>(v)];
    }
  }
  int maxLayer = -1;
  std::vector<char> output(nw, 0);
  for (size_t w = 0; w < nw; ++w) {
    const std::string& raw = w < t.weightNames.size() ? t.weightNames[w] : std::string();
    int L = -1;
    if (isCacheName(raw, &L)) {
      m.cache[w] = 1;
      m.slot[w] = L;
      m.name[w] = raw;
      maxLayer = std::max(maxLayer, L);
      continue;
    }
    const std::string g = ggufTensorName(raw);
    if (!g.empty()) {
      m.name[w] = g;
      if (g == "token_embd.weight") {
        m.slot[w] = LlamaTensors::kInput;
      } else if (g == "output.weight" || g == "output_norm.weight") {
        output[w] = 1;
      } else {
        std::string rest;
        L = leadingLayer(g, "blk.", &rest);
        m.slot[w] = L;
        maxLayer = std::max(maxLayer, L);
        if (rest.find("_exps") != std::string::npos && rest.rfind("ffn_", 0) == 0) m.experts = true;
        if (rest.rfind("ffn_up.", 0) == 0 || rest.rfind("ffn_down.", 0) == 0 || rest.rfind("ffn_gate.", 0) == 0)
          m.denseFfn = true;
      }
      continue;
    }
    // No known name: the slot of its readers.
    const auto& ls = readerLayers[w];
    if (ls.size() == 1 && *ls.begin() >= 0) {
      m.slot[w] = *ls.begin();
      m.name[w] = raw;
      maxLayer = std::max(maxLayer, m.slot[w]);
    } else if (ls.size() == 1 && *ls.begin() < 0) {
      const std::string& r = outsideReader[w];
      if (r.find("embed") != std::string::npos) {
        m.slot[w] = LlamaTensors::kInput;
        m.name[w] = raw;
      } else if (r.find("lm_head") != std::string::npos) {
        output[w] = 1;
        m.name[w] = raw;
      }
    }
  }
  m.layers = maxLayer + 1;
  for (size_t w = 0; w < nw; ++w)
    if (output[w]) m.slot[w] = m.layers;
  return m;
}

DeviceId defaultAccelerator(const CostTable& t) {
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    if (d != t.host && static_cast<size_t>(d) < t.deviceKinds.size() && t.deviceKinds[static_cast<size_t>(d)] == "gpu")
      return d;
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    if (d != t.host) return d;
  return -1;
}

TensorPlacement nglPlacement(const LlamaTensors& m, int ngl, DeviceId accel, DeviceId host) {
  const int start = std::max(m.layers + 1 - ngl, 0);
  TensorPlacement p(m.slot.size(), -1);
  for (size_t w = 0; w < m.slot.size(); ++w) {
    const int s = m.slot[w];
    if (s == LlamaTensors::kConstant) continue;
    p[w] = s == LlamaTensors::kInput ? host : (s >= start && accel >= 0 ? accel : host);
  }
  return p;
}

std::string llamaDeviceName(const CostTable& t, DeviceId d) {
  if (d == t.host) return "CPU";
  // Accelerators numbered from the default one, then in device order.
  std::vector<DeviceId> accels;
  const DeviceId first = defaultAccelerator(t);
  if (first >= 0) accels.push_back(first);
  for (DeviceId x = 0; x < t.numDevices(); ++x)
    if (x != t.host && x != first) accels.push_back(x);
  for (size_t i = 0; i < accels.size(); ++i)
    if (accels[i] == d) return "CUDA" + std::to_string(i);
  return t.deviceIds[static_cast<size_t>(d)];
}

Result<std::vector<TensorOverride>> parseOverrides(const CostTable& t, const std::string& spec) {
  std::vector<TensorOverride> out;
  if (trim(spec).empty()) return makeError("-ot: empty override list (expected REGEX=CPU,REGEX2=CUDA0)");
  for (const std::string& raw : split(spec, ',')) {
    const std::string item = trim(raw);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return makeError("-ot: entry '", item, "' is not REGEX=BUFFER_TYPE");
    TensorOverride o;
    o.pattern = item.substr(0, eq);
    const std::string buft = item.substr(eq + 1);
    try {
      std::regex re(o.pattern);
    } catch (const std::regex_error& e) {
      return makeError("-ot: pattern '", o.pattern, "' is not a regular expression (", e.what(), ")");
    }
    for (DeviceId d = 0; d < t.numDevices() && o.device < 0; ++d)
      if (llamaDeviceName(t, d) == buft || t.deviceIds[static_cast<size_t>(d)] == buft) o.device = d;
    if (o.device < 0)
      for (const char* family : {"CUDA", "Vulkan", "ROCm", "SYCL", "Metal"}) {
        const std::string f = family;
        if (buft.rfind(f, 0) != 0) continue;
        const std::string idx = buft.substr(f.size());
        if (!idx.empty() && idx.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string cuda = "CUDA" + (idx.empty() ? std::string("0") : idx);
        for (DeviceId d = 0; d < t.numDevices() && o.device < 0; ++d)
          if (llamaDeviceName(t, d) == cuda) o.device = d;
      }
    if (o.device < 0)
      return makeError("-ot: buffer type '", buft, "' names no device of the platform (CPU, CUDA0, ... or a device id)");
    out.push_back(std::move(o));
  }
  return out;
}

Status applyOverrides(const CostTable& t, const LlamaTensors& m, const std::vector<TensorOverride>& overrides,
                      TensorPlacement& placement, bool requireMatch) {
  std::vector<std::regex> res;
  res.reserve(overrides.size());
  for (const auto& o : overrides) {
    try {
      res.emplace_back(o.pattern);
    } catch (const std::regex_error& e) {
      return makeError("-ot: pattern '", o.pattern, "' is not a regular expression (", e.what(), ")");
    }
  }
  std::vector<char> matched(overrides.size(), 0);
  for (size_t w = 0; w < m.name.size(); ++w) {
    if (!m.placed(w) || m.cache[w]) continue;
    for (size_t i = 0; i < overrides.size(); ++i) {
      if (!std::regex_search(m.name[w], res[i])) continue;
      matched[i] = 1;
      placement[w] = overrides[i].device;
      break;  // the first matching override wins (llama.cpp's create_tensor)
    }
  }
  if (requireMatch) {
    // Also count matches shadowed by an earlier entry: an entry is an error only when it matches no tensor at all.
    for (size_t i = 0; i < overrides.size(); ++i) {
      if (matched[i]) continue;
      bool any = false;
      for (size_t w = 0; w < m.name.size() && !any; ++w)
        any = m.placed(w) && !m.cache[w] && std::regex_search(m.name[w], res[i]);
      if (!any) return makeError("-ot: pattern '", overrides[i].pattern, "' matches no tensor of '", t.name, "'");
    }
  }
  return {};
}

std::vector<TensorOverride> nCpuMoeOverrides(int n, DeviceId host) {
  std::vector<TensorOverride> out;
  for (int i = 0; i < n; ++i)
    out.push_back({"blk\\." + std::to_string(i) + "\\.ffn_(up|down|gate|gate_up)_(ch|)exps", host});
  return out;
}

std::vector<TensorOverride> cpuMoeOverrides(DeviceId host) {
  return {{"\\.ffn_(up|down|gate|gate_up)_(ch|)exps", host}};
}

std::vector<TensorOverride> nCpuFfnOverrides(int n, DeviceId host) {
  std::vector<TensorOverride> out;
  for (int i = 0; i < n; ++i) out.push_back({"blk\\." + std::to_string(i) + "\\.ffn_(up|down|gate)\\.", host});
  return out;
}

Plan planFromTensors(const CostTable& t, const Constraints& c, const LlamaTensors& m, const TensorPlacement& p) {
  const int n = t.numTasks(), nd = t.numDevices();
  const std::vector<TaskId> order = t.topoOrder();
  std::vector<DeviceId> dev(static_cast<size_t>(n), -1);
  // Pass 1: an operator reading placed tensors runs where the largest of them lives.
  for (TaskId v = 0; v < n; ++v) {
    int64_t most = -1;
    for (int32_t w : weightsOf(t, v)) {
      const size_t wi = static_cast<size_t>(w);
      if (wi >= p.size() || p[wi] < 0 || !m.placed(wi)) continue;
      if (t.weightBytes[wi] > most) {
        most = t.weightBytes[wi];
        dev[static_cast<size_t>(v)] = p[wi];
      }
    }
  }
  // Pass 2 (ggml_backend_sched_split_graph): expand GPU assignments down, then up, skipping the host;
  // then any assignment down and up.
  auto expand = [&](bool skipHost, bool down) {
    DeviceId cur = -1;
    for (size_t i = 0; i < order.size(); ++i) {
      const TaskId v = order[down ? i : order.size() - 1 - i];
      DeviceId& d = dev[static_cast<size_t>(v)];
      if (d >= 0)
        cur = skipHost && d == t.host ? -1 : d;
      else if (cur >= 0 && t.w(v, cur) < kInf)
        d = cur;
    }
  };
  expand(true, true);
  expand(true, false);
  expand(false, true);
  expand(false, false);
  Plan plan;
  plan.device.assign(static_cast<size_t>(n), -1);
  plan.order.assign(static_cast<size_t>(nd), {});
  for (TaskId v : order) {
    DeviceId want = dev[static_cast<size_t>(v)] >= 0 ? dev[static_cast<size_t>(v)] : t.host;
    DeviceId d = -1;
    if (auto pin = c.pinned.find(v); pin != c.pinned.end())
      d = pin->second;
    else if (c.allowed(t, v, want))
      d = want;
    else if (c.allowed(t, v, t.host))
      d = t.host;
    else
      for (DeviceId x = 0; x < nd && d < 0; ++x)
        if (c.allowed(t, v, x)) d = x;
    if (d < 0) d = t.host;
    plan.device[static_cast<size_t>(v)] = d;
    plan.order[static_cast<size_t>(d)].push_back(v);
  }
  return plan;
}

TensorPlacement tensorsOfPlan(const CostTable& t, const LlamaTensors& m, const Plan& plan) {
  const size_t nw = m.slot.size();
  std::vector<std::vector<int>> count(nw, std::vector<int>(static_cast<size_t>(t.numDevices()), 0));
  TensorPlacement first(nw, -1);
  for (TaskId v : t.topoOrder()) {
    const DeviceId d = plan.device[static_cast<size_t>(v)];
    if (d < 0) continue;
    for (int32_t w : weightsOf(t, v)) {
      const size_t wi = static_cast<size_t>(w);
      if (!m.placed(wi)) continue;
      ++count[wi][static_cast<size_t>(d)];
      if (first[wi] < 0) first[wi] = d;
    }
  }
  TensorPlacement p(nw, -1);
  for (size_t w = 0; w < nw; ++w) {
    if (first[w] < 0) continue;
    p[w] = first[w];
    for (DeviceId d = 0; d < t.numDevices(); ++d)
      if (count[w][static_cast<size_t>(d)] > count[w][static_cast<size_t>(p[w])]) p[w] = d;
  }
  return p;
}

LlamaArgs llamaArgsFor(const CostTable& t, const LlamaTensors& m, const TensorPlacement& p, DeviceId accel) {
  LlamaArgs a;
  // The -ngl N closest to the placement: caches first (no override moves them), then tensors.
  int64_t bestScore = -1;
  for (int ngl = m.layers + 1; ngl >= 0; --ngl) {
    const TensorPlacement d = nglPlacement(m, ngl, accel, t.host);
    int64_t score = 0;
    for (size_t w = 0; w < p.size(); ++w)
      if (m.placed(w) && p[w] >= 0 && d[w] != p[w]) score += m.cache[w] ? 1000000 : 1;
    if (bestScore < 0 || score < bestScore) {
      bestScore = score;
      a.ngl = ngl;
    }
  }
  const TensorPlacement d = nglPlacement(m, a.ngl, accel, t.host);
  // Differences, grouped per device: blk tensors by their kind (the name after "blk.<L>.") and the
  // set of layers, the others by name.
  std::map<DeviceId, std::map<std::string, std::set<int>>> blk;  // device -> kind -> layers
  std::map<DeviceId, std::set<std::string>> other;
  for (size_t w = 0; w < p.size(); ++w) {
    if (!m.placed(w) || p[w] < 0 || d[w] == p[w]) continue;
    if (m.cache[w]) {
      a.caches.push_back(m.name[w]);
      continue;
    }
    std::string rest;
    const int L = leadingLayer(m.name[w], "blk.", &rest);
    if (L >= 0)
      blk[p[w]][rest].insert(L);
    else
      other[p[w]].insert(m.name[w]);
  }
  std::set<DeviceId> devices;
  for (const auto& [dv, _] : blk) devices.insert(dv);
  for (const auto& [dv, _] : other) devices.insert(dv);
  for (DeviceId dv : devices) {
    // Kinds with the same layer set share one pattern.
    std::map<std::set<int>, std::vector<std::string>> byLayers;
    for (const auto& [kind, layers] : blk[dv]) byLayers[layers].push_back(kind);
    for (const auto& [layers, kinds] : byLayers) {
      std::vector<std::string> ls;
      for (int L : layers) ls.push_back(std::to_string(L));
      // A common ".weight" (or other) tail is written once.
      std::string tail;
      if (const size_t dot = kinds.front().rfind('.'); dot != std::string::npos) {
        tail = kinds.front().substr(dot);
        for (const auto& k : kinds)
          if (k.size() < tail.size() || k.compare(k.size() - tail.size(), tail.size(), tail) != 0) tail.clear();
      }
      std::vector<std::string> ks;
      for (const auto& k : kinds) ks.push_back(regexEscape(k.substr(0, k.size() - tail.size())));
      const std::string layerPart = ls.size() == 1 ? ls[0] : "(" + join(ls, "|") + ")";
      const std::string kindPart = ks.size() == 1 ? ks[0] : "(" + join(ks, "|") + ")";
      a.overrides.push_back({"^blk\\." + layerPart + "\\." + kindPart + regexEscape(tail) + "$", dv});
    }
    if (!other[dv].empty()) {
      std::vector<std::string> ns;
      for (const auto& n : other[dv]) ns.push_back(regexEscape(n));
      a.overrides.push_back({"^" + (ns.size() == 1 ? ns[0] : "(" + join(ns, "|") + ")") + "$", dv});
    }
  }
  a.text = "-ngl " + std::to_string(a.ngl);
  if (!a.overrides.empty()) {
    std::vector<std::string> items;
    for (const auto& o : a.overrides) items.push_back(o.pattern + "=" + llamaDeviceName(t, o.device));
    a.text += " -ot \"" + join(items, ",") + "\"";
  }
  return a;
}

int64_t tokensOf(const CostTable& t, const LlamaTensors& m) {
  for (TaskId v = 0; v < t.numTasks(); ++v)
    for (int32_t w : weightsOf(t, v))
      if (m.slot[static_cast<size_t>(w)] == LlamaTensors::kInput && !t.inputBytes.empty())
        return std::max<int64_t>(1, t.inputBytes[static_cast<size_t>(v)] / 8);
  return 1;
}

CostTable withOpOffload(const CostTable& t, const LlamaTensors& m, DeviceId accel, const OpOffloadOptions& o) {
  CostTable out = t;
  if (!o.on || accel < 0 || accel == t.host || o.tokens < o.minBatch) return out;
  const size_t nd = static_cast<size_t>(t.numDevices());
  const size_t link = static_cast<size_t>(t.host) * nd + static_cast<size_t>(accel);
  const double bw = t.linkBytesPerUs.empty() ? kInf : t.linkBytesPerUs[link];
  const double lat = t.linkLatencyUs.empty() ? 0.0 : t.linkLatencyUs[link];
  const int64_t copies = (o.tokens + o.ubatch - 1) / std::max<int64_t>(1, o.ubatch);
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const std::string& type = t.taskTypes[static_cast<size_t>(v)];
    // ggml-cuda's offload_op counts a MUL_MAT's ne[1] and a MUL_MAT_ID's ne[2]: the experts' product is
    // offloaded too (ExpertMatMul, ggml_mul_mat_id).
    if (type != "MatMul" && type != "Gemm" && type != "ExpertMatMul") continue;
    int64_t bytes = 0;
    for (int32_t w : weightsOf(t, v))
      if (m.placed(static_cast<size_t>(w)) && !m.cache[static_cast<size_t>(w)]) bytes += t.weightBytes[static_cast<size_t>(w)];
    if (bytes == 0 || t.w(v, accel) == kInf) continue;
    const double copyUs = static_cast<double>(copies) * (lat + (bw == kInf ? 0.0 : static_cast<double>(bytes) / bw));
    out.cost[static_cast<size_t>(v) * nd + static_cast<size_t>(t.host)] = t.w(v, accel) + copyUs;
  }
  return out;
}

}  // namespace partex
