// llama.cpp's -ngl N (`--n-gpu-layers N`) as llama.cpp applies it (src/llama-model.cpp, load_tensors):
// the last N of the n_layer + 1 slots (layers, then the output head) on the GPU, the token embedding on
// the CPU, each layer's KV cache with its layer; N as large as fits (mode=largest, the users' rule) or
// the fastest N that fits (mode=best-n, every N simulated), or given (n=<N>). A split fits when
// checkCapacity passes on its simulated timeline: weights, the KV cache and activations of every device
// within its capacity.
#include "sched/offload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "sim/memory.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

std::string fmtTime(double us) {
  char buf[64];
  if (us >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3f s", us / 1e6);
  else if (us >= 1000)
    std::snprintf(buf, sizeof buf, "%.3f ms", us / 1000);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", us);
  return buf;
}

/// "0-3,7,9-10".
std::string ranges(const std::set<int>& xs) {
  std::string out;
  for (auto it = xs.begin(); it != xs.end();) {
    int a = *it, b = a;
    ++it;
    while (it != xs.end() && *it == b + 1) b = *it++;
    if (!out.empty()) out += ",";
    out += std::to_string(a);
    if (b > a) out += "-" + std::to_string(b);
  }
  return out;
}

/// What an operator is, for the explanation: the part of a layer, or the operator outside the layers.
std::string roleOf(const std::string& name, int layer) {
  if (layer < 0) {
    if (name.find("lm_head") != std::string::npos || name == "output" || name.rfind("output.", 0) == 0)
      return "output head (lm_head)";
    if (name.find("embed") != std::string::npos || name.find("token_embd") != std::string::npos) return "token embedding";
    if (name == "norm" || name.rfind("norm.", 0) == 0) return "final norm";
    return name;
  }
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("q_proj") || has("k_proj") || has("v_proj") || has("o_proj")) return "attention projections (q, k, v, o)";
  if (has(".attn.")) return "attention over the KV cache (rope, scores, softmax, cache concat)";
  if (has("_exps") || has(".experts")) return "routed experts";
  if (has("shexp") || has("shared_expert")) return "shared experts";
  if (has("gate_proj") || has("up_proj") || has("down_proj")) return "MLP projections (gate, up, down)";
  if (has(".mlp.")) return "MLP activation (SiLU, gate product)";
  if (has("norm")) return "RMS norms";
  if (has("residual")) return "residual adds";
  return "other layer operators";
}

class Offload final : public Scheduler {
 public:
  std::string name() const override { return "offload"; }
  std::string title() const override { return "llama.cpp -ngl N (last N slots on the GPU)"; }
  std::string description() const override {
    return "llama.cpp's -ngl / --n-gpu-layers as llama.cpp applies it: of the n_layer + 1 slots (layers, then the "
           "output head) the last N on the GPU, the token embedding on the CPU, each layer's KV cache with its "
           "layer; param mode=largest (N as large as fits, the users' rule) or best-n (the fastest N that fits), "
           "n=<N> (this N), device=<id> (default: the first gpu).";
  }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    std::string mode = "largest";
    if (auto it = o.params.find("mode"); it != o.params.end()) mode = it->second;
    if (mode == "best-k") mode = "best-n";
    if (mode != "largest" && mode != "best-n")
      return makeError("offload: param mode must be 'largest' or 'best-n', not '", mode, "'");
    DeviceId accel = -1;
    if (auto it = o.params.find("device"); it != o.params.end()) {
      auto d = std::find(t.deviceIds.begin(), t.deviceIds.end(), it->second);
      if (d == t.deviceIds.end()) return makeError("offload: param device: no device '", it->second, "'");
      accel = static_cast<DeviceId>(d - t.deviceIds.begin());
    }
    if (auto it = o.params.find("n"); it != o.params.end()) {
      const LlamaTensors m = llamaTensors(t);
      int64_t n = -1;
      if (!parseInt64(it->second, n) || n < 0 || n > m.layers + 1)
        return makeError("offload: param n must be an -ngl N from 0 to ", std::to_string(m.layers + 1), " (n_layer + 1), not '",
                         it->second, "'");
      if (m.layers == 0) return makeError("offload: '", t.name, "' has no layers the rule can find");
      if (accel < 0) accel = defaultAccelerator(t);
      if (accel < 0 || accel == t.host) return makeError("offload: the platform has no device beside the host");
      Plan p = nglPlan(t, c, m, static_cast<int>(n), accel);
      p.algorithm = "offload";
      info->notes.push_back("-ngl " + std::to_string(n) + " of " + std::to_string(m.layers + 1) + " slots on " +
                            t.deviceIds[static_cast<size_t>(accel)]);
      info->notes.push_back("-ngl " + std::to_string(n) + " as given");
      info->notes.push_back("llama.cpp: -ngl " + std::to_string(n));
      return p;
    }
    const Deadline deadline = o.startDeadline();
    auto split = chooseOffloadSplit(t, c, o.sim, mode == "best-n", accel, deadline, o.cancel);
    if (!split) return Error{split.message()};
    info->notes.push_back(split->split);
    info->notes.push_back(split->note);
    info->notes.push_back("llama.cpp: " + split->args);
    if (mode == "best-n" && deadline.passed()) info->notes.push_back("time limit reached");
    return std::move(split->plan);
  }
};

}  // namespace

std::vector<int> taskLayers(const CostTable& t) {
  std::vector<int> out(static_cast<size_t>(t.numTasks()), -1);
  for (TaskId v = 0; v < t.numTasks(); ++v) out[static_cast<size_t>(v)] = layerOfName(t.taskNames[static_cast<size_t>(v)]);
  return out;
}

bool hasLayerNames(const CostTable& t) {
  for (const auto& n : t.taskNames)
    if (layerOfName(n) >= 0) return true;
  return false;
}

Plan nglPlan(const CostTable& t, const Constraints& c, const LlamaTensors& m, int ngl, DeviceId accel) {
  return planFromTensors(t, c, m, nglPlacement(m, ngl, accel, t.host));
}

Result<OffloadSplit> chooseOffloadSplit(const CostTable& t, const Constraints& c, const SimOptions& sim, bool bestK,
                                        DeviceId accel, const Deadline& deadline, const std::atomic<bool>* cancel) {
  const LlamaTensors m = llamaTensors(t);
  const int layers = m.layers;
  if (layers == 0)
    return makeError("offload: '", t.name,
                     "' has no layer names (operators named layers.<L>., weights named blk.<L>.*, as partex-cli generate "
                     "llama writes them): -ngl cannot tell its layers");
  if (t.numDevices() < 2)
    return makeError("offload: the platform has one device; the rule needs a GPU beside the host");
  OffloadSplit s;
  s.host = t.host;
  s.layers = layers;
  if (accel < 0) accel = defaultAccelerator(t);
  if (accel == t.host)
    return makeError("offload: param device names the host '", t.deviceIds[static_cast<size_t>(accel)], "'");
  s.accel = accel;
  const std::string gpu = t.deviceIds[static_cast<size_t>(accel)];
  const int slots = layers + 1;

  // Weights alone bound N from above at no simulation: they only grow with N on the accelerator.
  WeightLoad load(t);
  int kWeights = slots;
  if (load.active()) {
    for (int k = 0; k <= slots; ++k) {
      load.reset(nglPlan(t, c, m, k, accel).device);
      if (!load.fits(accel)) {
        kWeights = k - 1;
        break;
      }
    }
  }
  auto trial = [&](int k, Plan* keep) {
    OffloadTrial tr;
    tr.k = k;
    Plan p = nglPlan(t, c, m, k, accel);
    load.reset(p.device);
    const bool weightsFit = load.fitsAll();
    auto tl = simulate(t, p, sim);
    if (!tl) {
      tr.why = tl.message();
      return tr;
    }
    tr.makespanUs = tl->makespan;
    const Status st = checkCapacity(t, p, weightsFit ? &*tl : nullptr);
    tr.fits = st.isOk() && weightsFit;
    if (!tr.fits) tr.why = st.isOk() ? "weights over capacity" : st.message();
    if (keep) *keep = std::move(p);
    return tr;
  };
  auto stopped = [&] { return (cancel && cancel->load(std::memory_order_relaxed)) || deadline.passed(); };

  // The users' rule: from the most slots the weights allow down, the first that fits (a few
  // simulations: not cut by the deadline, only by Cancel).
  Plan largestPlan;
  for (int k = std::max(0, kWeights); k >= 0; --k) {  // N = 0 is always simulated: its error is the reason
    if (cancel && cancel->load(std::memory_order_relaxed)) return cancelledError();
    OffloadTrial tr = trial(k, &largestPlan);
    s.trials.push_back(tr);
    if (tr.fits) {
      s.largestK = k;
      s.k = k;
      s.makespanUs = tr.makespanUs;
      break;
    }
  }
  // N + 1 (when there is one) is kept as the reason the rule stops there.
  if (s.largestK >= 0 && s.largestK < slots && s.largestK == kWeights) s.trials.push_back(trial(s.largestK + 1, nullptr));
  if (s.largestK < 0) {
    const std::string why = s.trials.back().why;  // N = 0's
    return makeError("offload: no -ngl N fits (-ngl 0, everything on '", t.deviceIds[static_cast<size_t>(s.host)],
                     "': ", why, ")");
  }
  s.plan = std::move(largestPlan);
  if (bestK) {
    for (int k = 0; k < s.largestK && !stopped(); ++k) {
      Plan p;
      OffloadTrial tr = trial(k, &p);
      s.trials.push_back(tr);
      if (tr.fits && tr.makespanUs < s.makespanUs) {
        s.k = k;
        s.makespanUs = tr.makespanUs;
        s.plan = std::move(p);
      }
    }
  }
  std::sort(s.trials.begin(), s.trials.end(), [](const OffloadTrial& a, const OffloadTrial& b) { return a.k < b.k; });
  s.split = "-ngl " + std::to_string(s.k) + " of " + std::to_string(slots) + " slots on " + gpu;
  s.args = "-ngl " + std::to_string(s.k);
  const OffloadTrial* next = nullptr;
  for (const auto& tr : s.trials)
    if (tr.k == s.largestK + 1) next = &tr;
  s.note = s.largestK == slots
               ? "all " + std::to_string(slots) + " slots (" + std::to_string(layers) + " layers and the output head) fit on " + gpu
               : "-ngl " + std::to_string(s.largestK) + " is the largest that fits" +
                     (next ? " (-ngl " + std::to_string(next->k) + ": " + next->why + ")" : std::string());
  if (bestK) {
    int feasible = 0;
    for (const auto& tr : s.trials) feasible += tr.fits ? 1 : 0;
    s.note += "; -ngl " + std::to_string(s.k) + " is the fastest of " + std::to_string(feasible) + " fitting splits";
    for (const auto& tr : s.trials)
      if (tr.k == s.largestK && s.k != s.largestK)
        s.note += ", the largest (-ngl " + std::to_string(tr.k) + ") takes " + fmtTime(tr.makespanUs);
    if (stopped()) s.note += " (stopped at the time limit)";
  }
  s.plan.algorithm = "offload";
  return s;
}

std::vector<std::string> explainOffload(const CostTable& t, const std::string& split, const Plan& rule,
                                        const Timeline& ruleTl, const std::string& otherName, const Plan& other,
                                        const Timeline& otherTl) {
  std::vector<std::string> out;
  const std::string ruleName = "offload (" + split + ")";
  const double a = ruleTl.makespan, b = otherTl.makespan;
  char buf[256];
  if (b < a)
    std::snprintf(buf, sizeof buf, "%s %s vs %s %s: %s is %.2fx as fast (%s, %.1f%% less time)", otherName.c_str(),
                  fmtTime(b).c_str(), ruleName.c_str(), fmtTime(a).c_str(), otherName.c_str(), a / b,
                  fmtTime(a - b).c_str(), 100.0 * (a - b) / a);
  else if (b > a)
    std::snprintf(buf, sizeof buf, "%s %s vs %s %s: the split is %.2fx as fast", otherName.c_str(), fmtTime(b).c_str(),
                  ruleName.c_str(), fmtTime(a).c_str(), b / a);
  else
    std::snprintf(buf, sizeof buf, "%s and %s take the same time, %s", otherName.c_str(), ruleName.c_str(),
                  fmtTime(a).c_str());
  out.push_back(buf);

  auto perDevice = [&](const char* what, auto value) {
    std::string line = what;
    for (const auto& [label, plan, tl] :
         {std::tuple<std::string, const Plan*, const Timeline*>{"offload", &rule, &ruleTl},
          std::tuple<std::string, const Plan*, const Timeline*>{otherName, &other, &otherTl}}) {
      line += (line == what ? " " : "; ") + label + ":";
      for (DeviceId d = 0; d < t.numDevices(); ++d)
        line += (d ? ", " : " ") + t.deviceIds[static_cast<size_t>(d)] + " " + value(*plan, *tl, d);
    }
    out.push_back(line);
  };
  const auto wOf = [&](const Plan& p) { return weightBytesPerDevice(t, p.device); };
  const std::vector<int64_t> wr = wOf(rule), wo = wOf(other);
  perDevice("weights", [&](const Plan& p, const Timeline&, DeviceId d) {
    const int64_t w = (&p == &rule ? wr : wo)[static_cast<size_t>(d)];
    std::string s = humanBytes(static_cast<double>(w));
    if (t.memCapacity[static_cast<size_t>(d)] > 0)
      s += " of " + humanBytes(static_cast<double>(t.memCapacity[static_cast<size_t>(d)]));
    return s;
  });
  perDevice("busy",
            [&](const Plan&, const Timeline& tl, DeviceId d) { return fmtTime(tl.busy[static_cast<size_t>(d)]); });
  // Model inputs and outputs (the KV cache, the token ids, the logits) start and end on the host in the
  // simulator's model: a layer whose attention runs on the GPU pays its cache over the link.
  auto transfers = [&](const std::string& label, const Timeline& tl) {
    double us = 0, ioUs = 0;
    int64_t ioBytes = 0;
    for (const auto& x : tl.transfers) {
      us += x.end - x.start;
      if (x.src < 0 || x.dst < 0) {
        ioUs += x.end - x.start;
        ioBytes += x.bytes;
      }
    }
    return label + " " + std::to_string(tl.transfers.size()) + " (" + humanBytes(static_cast<double>(tl.bytesMoved)) +
           ", " + fmtTime(us) + " on the links, of which model inputs and outputs " +
           humanBytes(static_cast<double>(ioBytes)) + ", " + fmtTime(ioUs) + ")";
  };
  out.push_back("transfers: " + transfers("offload", ruleTl) + "; " + transfers(otherName, otherTl));

  // Operators placed differently, grouped by role and direction, with their layers.
  struct Group {
    std::set<int> layers;
    int ops = 0;
    double deltaUs = 0;  ///< Sum of (cost where other puts it - cost where the rule puts it).
  };
  std::map<std::tuple<std::string, DeviceId, DeviceId>, Group> groups;
  const std::vector<int> layer = taskLayers(t);
  int moved = 0;
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const DeviceId from = rule.device[static_cast<size_t>(v)], to = other.device[static_cast<size_t>(v)];
    if (from == to) continue;
    ++moved;
    Group& g = groups[{roleOf(t.taskNames[static_cast<size_t>(v)], layer[static_cast<size_t>(v)]), from, to}];
    if (layer[static_cast<size_t>(v)] >= 0) g.layers.insert(layer[static_cast<size_t>(v)]);
    ++g.ops;
    g.deltaUs += t.w(v, to) - t.w(v, from);
  }
  if (moved == 0) {
    out.push_back(otherName + " places every operator as the split does");
    return out;
  }
  out.push_back(otherName + " places " + std::to_string(moved) + " operators differently:");
  std::vector<std::pair<std::tuple<std::string, DeviceId, DeviceId>, Group>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& x, const auto& y) { return x.second.ops > y.second.ops; });
  const size_t shown = std::min<size_t>(sorted.size(), 10);
  for (size_t i = 0; i < shown; ++i) {
    const auto& [key, g] = sorted[i];
    const auto& [role, from, to] = key;
    std::string line = "  " + role;
    if (!g.layers.empty()) line += ", layer" + std::string(g.layers.size() > 1 ? "s " : " ") + ranges(g.layers);
    line += ": " + std::to_string(g.ops) + " operator" + (g.ops > 1 ? "s " : " ") +
            t.deviceIds[static_cast<size_t>(from)] + " -> " + t.deviceIds[static_cast<size_t>(to)];
    line += std::string(" (compute ") + (g.deltaUs <= 0 ? "-" : "+") + fmtTime(std::abs(g.deltaUs)) + ")";
    out.push_back(line);
  }
  if (sorted.size() > shown) out.push_back("  and " + std::to_string(sorted.size() - shown) + " smaller groups");
  return out;
}

std::unique_ptr<Scheduler> makeOffload() {
  return std::make_unique<Offload>();
}

}  // namespace partex
