// A language model's job (llmjob.h): prefill once, G decode steps over a growing cache; llama.cpp's
// rules on it, and best's search over tensor placements, one for both phases or one per phase.
#include "sched/llmjob.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/memory.h"
#include "support/strings.h"

namespace partex {

void llmTrapezoid(int64_t prompt, int64_t generate, int samples, std::vector<int64_t>& cache, std::vector<double>& weight) {
  cache.clear();
  weight.clear();
  if (generate <= 0) return;
  if (generate == 1) {
    cache = {prompt};
    weight = {1.0};
    return;
  }
  const int64_t s = std::clamp<int64_t>(samples, 2, generate);
  std::vector<int64_t> idx;
  for (int64_t j = 0; j < s; ++j) idx.push_back(j * (generate - 1) / (s - 1));
  for (int64_t j = 0; j < s; ++j) {
    double w = 0;
    if (j > 0) w += static_cast<double>(idx[static_cast<size_t>(j)] - idx[static_cast<size_t>(j - 1)] + 1) / 2;
    if (j + 1 < s) w += static_cast<double>(idx[static_cast<size_t>(j + 1)] - idx[static_cast<size_t>(j)] + 1) / 2;
    if (j > 0 && j + 1 < s) w -= 1;  // an interior sample ends one segment and starts the next: counted once
    cache.push_back(prompt + idx[static_cast<size_t>(j)]);
    weight.push_back(w);
  }
}

double LlmJobTime::decodeTokensPerS(int64_t generate) const {
  return decodeTotalUs > 0 ? 1e6 * static_cast<double>(generate) / decodeTotalUs : 0;
}

double LlmJobTime::jobTokensPerS(int64_t generate) const { return jobUs > 0 ? 1e6 * static_cast<double>(generate) / jobUs : 0; }

namespace {

/// The tensor placement of p on a table: caches by -ngl, the named tensors as p says, the rest by -ngl.
TensorPlacement tensorPlacement(const CostTable& t, const LlamaTensors& m, const LlmPlacement& p, DeviceId accel) {
  TensorPlacement tp = nglPlacement(m, p.ngl, accel, t.host);
  for (size_t w = 0; w < m.name.size(); ++w) {
    if (!m.placed(w) || m.cache[w]) continue;
    if (auto it = p.tensors.find(m.name[w]); it != p.tensors.end()) tp[w] = it->second;
  }
  return tp;
}

struct PhaseEval {
  bool fits = false;
  double us = 0;
  int64_t accelPeak = 0;
  std::string why;
};

/// One table under a placement: its weights within memory, its simulated time, and (`memory`) every
/// device's resident peak within capacity. Without `memory` the table is timed only (`fits` when its
/// weights fit): the prefill at -ub below P has its memory checked on the reserve table.
PhaseEval evalTable(const CostTable& t, const LlamaTensors& m, const LlmPlacement& p, DeviceId accel, bool memory = true) {
  PhaseEval e;
  const Plan plan = llmPhasePlan(t, m, p, accel);
  WeightLoad load(t);
  load.reset(plan.device);
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    if (!load.fits(d)) {
      e.why = "device '" + t.deviceIds[static_cast<size_t>(d)] + "' would hold " + withCommas(static_cast<uint64_t>(load.bytes(d))) +
              " bytes of weights, " + withCommas(static_cast<uint64_t>(load.capacity(d))) + " available";
      return e;
    }
  auto tl = simulate(t, plan);
  if (!tl) {
    e.why = tl.message();
    return e;
  }
  e.us = tl->makespan;
  if (!memory) {
    e.fits = true;
    return e;
  }
  const Status st = checkCapacity(t, plan, &*tl);
  e.fits = st.isOk();
  if (!e.fits) e.why = st.message();
  const auto mem = deviceMemory(t, plan, *tl);
  e.accelPeak = mem[static_cast<size_t>(accel)].peak;
  return e;
}

}  // namespace

Plan llmPhasePlan(const CostTable& t, const LlamaTensors& m, const LlmPlacement& p, DeviceId accel) {
  return planFromTensors(t, {}, m, tensorPlacement(t, m, p, accel));
}

Result<LlmJob> LlmJob::make(LlmJobTables tables, int64_t ubatch) {
  LlmJob j;
  if (ubatch < 1) return makeError("--ubatch ", std::to_string(ubatch), ": must be at least 1 token");
  if (tables.decode.empty() || tables.decode.size() != tables.decodeCache.size() || tables.decode.size() != tables.decodeWeight.size())
    return makeError("llm: the job has no decode step");
  for (const auto& d : tables.decode)
    if (d.deviceIds != tables.prefill.deviceIds) return makeError("llm: the prefill and decode tables have different devices");
  j.accel_ = defaultAccelerator(tables.prefill);
  if (j.accel_ < 0 || j.accel_ == tables.prefill.host) return makeError("llm: the platform has no GPU beside the host");
  j.prefillM_ = llamaTensors(tables.prefill);
  for (const auto& d : tables.decode) j.decodeM_.push_back(llamaTensors(d));
  if (j.prefillM_.layers == 0 || j.decodeM_.back().layers == 0)
    return makeError("llm: '", tables.prefill.name, "' has no layer names (a language model's tensors, blk.<L>.*)");
  j.ubatch_ = ubatch;
  if (ubatch < tables.prompt) {
    auto it = tables.prefillReserve.find(ubatch);
    if (it == tables.prefillReserve.end())
      return makeError("llm: no prefill graph at ", std::to_string(ubatch), " tokens for -ub ", std::to_string(ubatch));
    if (it->second.deviceIds != tables.prefill.deviceIds) return makeError("llm: the prefill and reserve tables have different devices");
    j.reserveIsPrefill_ = false;
    j.reserve_ = it->second;
    j.reserveM_ = llamaTensors(j.reserve_);
  }
  tables.prefillReserve.clear();  // the job keeps its own
  OpOffloadOptions oo;
  oo.tokens = tokensOf(tables.prefill, j.prefillM_);
  oo.ubatch = ubatch;
  j.prefillOffload_ = withOpOffload(tables.prefill, j.prefillM_, j.accel_, oo);
  j.tables_ = std::move(tables);
  return j;
}

LlmPlacement LlmJob::fromArgs(int ngl, const std::vector<TensorOverride>& overrides, bool opOffload) const {
  const LlamaTensors& m = tensors();
  TensorPlacement tp = nglPlacement(m, ngl, accel_, host());
  (void)applyOverrides(argTable(), m, overrides, tp, false);
  LlmPlacement p;
  p.ngl = ngl;
  p.opOffload = opOffload;
  for (size_t w = 0; w < m.name.size(); ++w)
    if (m.placed(w) && !m.cache[w] && tp[w] >= 0) p.tensors[m.name[w]] = tp[w];
  return p;
}

LlmPlacement LlmJob::fromPlan(const CostTable& t, const Plan& plan, bool opOffload) const {
  const LlamaTensors m = llamaTensors(t);
  TensorPlacement tp = tensorsOfPlan(t, m, plan);
  const LlamaArgs a = llamaArgsFor(t, m, tp, accel_);
  const TensorPlacement d = nglPlacement(m, a.ngl, accel_, t.host);
  LlmPlacement p;
  p.ngl = a.ngl;
  p.opOffload = opOffload;
  for (size_t w = 0; w < m.name.size(); ++w)
    if (m.placed(w) && !m.cache[w]) p.tensors[m.name[w]] = tp[w] >= 0 ? tp[w] : d[w];
  return p;
}

LlamaArgs LlmJob::args(const LlmPlacement& p) const {
  const LlamaTensors& m = tensors();
  LlamaArgs a = llamaArgsFor(argTable(), m, tensorPlacement(argTable(), m, p, accel_), accel_);
  if (!p.opOffload && tables_.prompt >= 32) a.text += " --no-op-offload";
  a.text += ubatchArgs();
  return a;
}

std::string LlmJob::ubatchArgs() const {
  if (ubatch_ == 512) return "";
  const std::string n = std::to_string(ubatch_);
  return ubatch_ > 2048 ? " -b " + n + " -ub " + n : " -ub " + n;
}

LlmJobTime LlmJob::evaluate(const LlmPlacement& p, Phases phases) const {
  LlmJobTime r;
  r.fits = true;
  if (phases != Phases::Prefill) {
    r.decodeUs.assign(tables_.decode.size(), 0.0);
    // The largest cache first: most placements that do not fit fail there.
    for (size_t k = tables_.decode.size(); k-- > 0;) {
      const PhaseEval e = evalTable(tables_.decode[k], decodeM_[k], p, accel_);
      if (!e.fits) {
        r.fits = false;
        r.why = "decode at " + std::to_string(tables_.decodeCache[k]) + " cached tokens: " + e.why;
        return r;
      }
      r.decodeUs[k] = e.us;
      r.decodeTotalUs += tables_.decodeWeight[k] * e.us;
      r.accelPeakBytes = std::max(r.accelPeakBytes, e.accelPeak);
    }
  }
  if (phases != Phases::Decode) {
    // Timed on the P-token prefill; its memory is llama.cpp's compute buffer at this -ub (the reserve
    // table's activations) beside the weights and the cache, or the prefill's own when -ub >= P.
    const PhaseEval e = evalTable(p.opOffload ? prefillOffload_ : tables_.prefill, prefillM_, p, accel_, reserveIsPrefill_);
    if (!e.fits) {
      r.fits = false;
      r.why = "prefill of " + std::to_string(tables_.prompt) + " tokens: " + e.why;
      return r;
    }
    r.prefillUs = e.us;
    int64_t peak = e.accelPeak;
    if (!reserveIsPrefill_) {
      const PhaseEval mem = evalTable(reserve_, reserveM_, p, accel_);
      if (!mem.fits) {
        r.fits = false;
        r.why = "prefill at -ub " + std::to_string(ubatch_) + ": " + mem.why;
        return r;
      }
      peak = mem.accelPeak;
    }
    r.accelPeakBytes = std::max(r.accelPeakBytes, peak);
  }
  r.jobUs = r.prefillUs + r.decodeTotalUs;
  return r;
}

double LlmJob::moveUs(const LlmPlacement& a, const LlmPlacement& b, int64_t* toAccel, int64_t* toHost) const {
  const CostTable& t = argTable();
  const LlamaTensors& m = tensors();
  int64_t up = 0, down = 0;
  for (size_t w = 0; w < m.name.size(); ++w) {
    if (!m.placed(w) || m.cache[w]) continue;
    auto ia = a.tensors.find(m.name[w]), ib = b.tensors.find(m.name[w]);
    if (ia == a.tensors.end() || ib == b.tensors.end() || ia->second == ib->second) continue;
    (ib->second == accel_ ? up : down) += t.weightBytes[w];
  }
  // The prefill's cache (P tokens: the first decode sample's past) of the layers whose cache moves.
  const CostTable& first = tables_.decode.front();
  const LlamaTensors& fm = decodeM_.front();
  const TensorPlacement ca = nglPlacement(fm, a.ngl, accel_, host()), cb = nglPlacement(fm, b.ngl, accel_, host());
  for (size_t w = 0; w < fm.name.size(); ++w)
    if (fm.cache[w] && ca[w] != cb[w]) (cb[w] == accel_ ? up : down) += first.weightBytes[w];
  if (toAccel) *toAccel = up;
  if (toHost) *toHost = down;
  const size_t nd = static_cast<size_t>(t.numDevices());
  auto dir = [&](DeviceId from, DeviceId to, int64_t bytes) {
    if (bytes == 0) return 0.0;
    const size_t l = static_cast<size_t>(from) * nd + static_cast<size_t>(to);
    const double bw = t.linkBytesPerUs.empty() ? kInf : t.linkBytesPerUs[l];
    const double lat = t.linkLatencyUs.empty() ? 0.0 : t.linkLatencyUs[l];
    return lat + (bw == kInf ? 0.0 : static_cast<double>(bytes) / bw);
  };
  return std::max(dir(host(), accel_, up), dir(accel_, host(), down));
}

namespace {

/// The better of a placement's op offload on and off (the decode does not depend on it).
LlmJobTime bestOffload(const LlmJob& job, LlmPlacement& p, int* evaluations) {
  p.opOffload = true;
  LlmJobTime dec = job.evaluate(p, LlmJob::Phases::Decode);
  ++*evaluations;
  if (!dec.fits) return dec;
  LlmJobTime best;
  bool have = false;
  for (bool on : {true, false}) {
    LlmPlacement q = p;
    q.opOffload = on;
    const LlmJobTime pre = job.evaluate(q, LlmJob::Phases::Prefill);
    if (!pre.fits) {
      if (!have) best = pre;
      continue;
    }
    LlmJobTime t = dec;
    t.prefillUs = pre.prefillUs;
    t.accelPeakBytes = std::max(dec.accelPeakBytes, pre.accelPeakBytes);
    t.jobUs = t.prefillUs + t.decodeTotalUs;
    if (!have || t.jobUs < best.jobUs) {  // on first: a tie keeps llama.cpp's default
      best = t;
      p.opOffload = on;
      have = true;
    }
  }
  return best;
}

}  // namespace

std::vector<LlmRuleResult> evaluateLlmRules(const LlmJob& job) {
  std::vector<LlmRuleResult> out;
  const LlamaTensors& m = job.tensors();
  const int slots = m.layers + 1;
  const DeviceId host = job.host();
  auto sweep = [&](const std::string& rule, int lo, int hi, auto overridesOf, int ngl) {
    LlmRuleResult r;
    r.rule = rule;
    std::string lastWhy;
    for (int n = lo; n <= hi; ++n) {
      LlmPlacement p = job.fromArgs(ngl < 0 ? n : ngl, overridesOf(n), true);
      int evals = 0;
      const LlmJobTime t = bestOffload(job, p, &evals);
      r.tried += 2;
      if (!t.fits) {
        lastWhy = t.why;
        continue;
      }
      if (!r.ok || t.jobUs < r.time.jobUs) {
        r.ok = true;
        r.n = n;
        r.placement = p;
        r.time = t;
      }
    }
    if (!r.ok) r.why = "no N from " + std::to_string(lo) + " to " + std::to_string(hi) + " fits (" + lastWhy + ")";
    else {
      r.args = (ngl < 0 ? "-ngl " + std::to_string(r.n) : "-ngl " + std::to_string(ngl) + " " + rule + " " + std::to_string(r.n)) +
               (r.placement.opOffload || job.tables().prompt < 32 ? "" : " --no-op-offload") + job.ubatchArgs();
    }
    out.push_back(std::move(r));
  };
  sweep("-ngl", 0, slots, [](int) { return std::vector<TensorOverride>{}; }, -1);
  if (m.experts)
    sweep("--n-cpu-moe", 0, m.layers, [&](int n) { return nCpuMoeOverrides(n, host); }, slots);
  else
    out.push_back({"--n-cpu-moe", false, "the model has no routed-expert tensors", -1, 0, "", {}, {}});
  if (m.denseFfn)
    sweep("--n-cpu-ffn", 0, m.layers, [&](int n) { return nCpuFfnOverrides(n, host); }, slots);
  else
    out.push_back({"--n-cpu-ffn", false, "the model has no dense FFN tensors", -1, 0, "", {}, {}});
  // --fit: memory only, its default margin, sized on the table of the last decode step (the largest
  // cache); when that split does not leave room for the prefill's activations, sized on the graph of
  // one micro-batch (llama.cpp's --fit measures its compute buffers, which -ub sizes).
  LlmRuleResult fit;
  fit.rule = "--fit";
  if (const Scheduler* s = findScheduler("fit")) {
    for (const CostTable* t : {&job.argTable(), &job.prefillMemoryTable()}) {
      SchedInfo info;
      auto plan = s->schedule(*t, {}, SchedOptions{}, &info);
      if (!plan) {
        if (fit.why.empty()) fit.why = plan.message();
        continue;
      }
      LlmPlacement p = job.fromPlan(*t, *plan, true);
      int evals = 0;
      const LlmJobTime time = bestOffload(job, p, &evals);
      fit.tried += 2;
      if (!time.fits) {
        if (fit.why.empty() || fit.why == plan.message()) fit.why = time.why;
        continue;
      }
      fit.placement = p;
      fit.time = time;
      fit.ok = true;
      fit.why.clear();
      for (const auto& n : info.notes)
        if (n.rfind("llama.cpp: ", 0) == 0) fit.args = n.substr(11);
      if (!p.opOffload && job.tables().prompt >= 32) fit.args += " --no-op-offload";
      fit.args += job.ubatchArgs();
      break;
    }
  }
  out.push_back(std::move(fit));
  return out;
}

namespace {

/// The group a tensor moves with in best's search: per layer its attention (and norms), router, dense
/// FFN, each routed-expert projection, shared experts; the output head; the token embedding.
std::string groupOf(const std::string& name) {
  if (name == "output.weight" || name == "output_norm.weight") return "output";
  if (name.rfind("blk.", 0) != 0) return name;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos) return name;
  const std::string layer = name.substr(0, dot + 1), rest = name.substr(dot + 1);
  std::string kind = rest.substr(0, rest.find('.'));
  if (kind.find("_exps") != std::string::npos) return layer + kind;
  if (kind.find("_shexp") != std::string::npos) return layer + "shexp";
  if (kind == "ffn_gate_inp") return layer + "router";
  if (kind == "ffn_up" || kind == "ffn_gate" || kind == "ffn_down") return layer + "ffn";
  return layer + "attn";
}

using Phases = LlmJob::Phases;

struct Search {
  const LlmJob& job;
  Deadline deadline;  ///< This stage's.
  int evaluations = 0;
  bool limit = false;

  std::vector<std::string> groups;                      ///< Non-cache groups, by name.
  std::map<std::string, std::vector<std::string>> members;  ///< Group -> its tensors.
  std::map<std::string, int64_t> bytes;                 ///< Group -> weight bytes.
  std::vector<int64_t> cacheBytes;                      ///< Per layer: the KV cache at the last decode step.

  /// The phase objective: both (job), the prefill alone, the decode alone; op offload at its better setting.
  LlmJobTime score(LlmPlacement& p, Phases ph) {
    if (ph == Phases::Both) return bestOffload(job, p, &evaluations);
    if (ph == Phases::Decode) {
      ++evaluations;
      return job.evaluate(p, Phases::Decode);
    }
    LlmJobTime best;
    bool have = false;
    for (bool on : {true, false}) {
      LlmPlacement q = p;
      q.opOffload = on;
      ++evaluations;
      const LlmJobTime t = job.evaluate(q, Phases::Prefill);
      if (!t.fits) {
        if (!have) best = t;
        continue;
      }
      if (!have || t.jobUs < best.jobUs) {
        best = t;
        p.opOffload = on;
        have = true;
      }
    }
    return best;
  }

  explicit Search(const LlmJob& j) : job(j) {
    const LlamaTensors& m = job.tensors();
    const CostTable& t = job.argTable();
    cacheBytes.assign(static_cast<size_t>(m.layers), 0);
    for (size_t w = 0; w < m.name.size(); ++w) {
      if (!m.placed(w)) continue;
      if (m.cache[w]) {
        if (m.slot[w] >= 0 && m.slot[w] < m.layers) cacheBytes[static_cast<size_t>(m.slot[w])] += t.weightBytes[w];
        continue;
      }
      const std::string g = groupOf(m.name[w]);
      if (!members.count(g)) groups.push_back(g);
      members[g].push_back(m.name[w]);
      bytes[g] += t.weightBytes[w];
    }
  }

  /// Per group: what placing it on the GPU saves in the phase objective, summed over the operators that
  /// run with its tensors (each where its largest tensor lives), host cost minus GPU cost; transfers
  /// are left out (the evaluation counts them). Caches are "cache.<L>".
  std::map<std::string, double> gains(bool opOffload, Phases ph) const {
    std::map<std::string, double> out;
    auto add = [&](const CostTable& t, const LlamaTensors& m, double weight) {
      for (TaskId v = 0; v < t.numTasks(); ++v) {
        int64_t most = -1;
        size_t wv = 0;
        for (int32_t w : t.taskWeights[static_cast<size_t>(v)]) {
          const size_t wi = static_cast<size_t>(w);
          if (!m.placed(wi) || t.weightBytes[wi] <= most) continue;
          most = t.weightBytes[wi];
          wv = wi;
        }
        if (most < 0) continue;
        const double h = t.w(v, job.host()), a = t.w(v, job.accel());
        if (h == kInf || a == kInf) continue;
        const std::string g = m.cache[wv] ? "cache." + std::to_string(m.slot[wv]) : groupOf(m.name[wv]);
        out[g] += weight * (h - a);
      }
    };
    if (ph != Phases::Decode) {
      add(opOffload ? job.prefillOffloadTable() : job.tables().prefill, job.prefillTensors(), 1.0);
    }
    if (ph != Phases::Prefill)
      for (size_t k = 0; k < job.tables().decode.size(); ++k) add(job.tables().decode[k], job.decodeTensors(k), job.tables().decodeWeight[k]);
    return out;
  }

  /// The placement that fills the GPU by gain per byte within `budget` bytes of weights, the caches of
  /// layers 0 .. hostCaches-1 on the host (-ngl slots - hostCaches), the rest of the caches on the GPU.
  LlmPlacement fill(const std::map<std::string, double>& gain, int hostCaches, int64_t budget, bool opOffload) const {
    const int slots = job.tensors().layers + 1;
    LlmPlacement p;
    p.ngl = slots - hostCaches;
    p.opOffload = opOffload;
    int64_t left = budget;
    for (int L = hostCaches; L < job.tensors().layers; ++L) left -= cacheBytes[static_cast<size_t>(L)];
    std::vector<std::pair<double, std::string>> order;
    for (const auto& g : groups) {
      auto it = gain.find(g);
      const double gv = it == gain.end() ? 0.0 : it->second;
      const int64_t b = std::max<int64_t>(1, bytes.at(g));
      if (gv > 0) order.push_back({gv / static_cast<double>(b), g});
    }
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    std::set<std::string> onAccel;
    for (const auto& [density, g] : order) {
      if (bytes.at(g) > left) continue;
      left -= bytes.at(g);
      onAccel.insert(g);
    }
    for (const auto& g : groups)
      for (const auto& n : members.at(g)) p.tensors[n] = onAccel.count(g) ? job.accel() : job.host();
    return p;
  }

  /// A local search from `start` under the phase objective: flip one group, move the -ngl by one (the
  /// first layer's cache), or swap a group on the host for one on the GPU (the most and least gain per
  /// byte); the first improving move is taken; until none improves or the deadline.
  void improve(LlmPlacement& cur, LlmJobTime& curT, Phases ph) {
    const int slots = job.tensors().layers + 1;
    bool improved = true;
    while (improved && !limit) {
      improved = false;
      auto tryMove = [&](LlmPlacement cand) {
        if (deadline.passed()) {
          limit = true;
          return false;
        }
        if (cand.ngl < 0 || cand.ngl > slots) return false;
        LlmJobTime t = score(cand, ph);
        if (!t.fits || t.jobUs >= curT.jobUs * (1 - 1e-6)) return false;
        cur = std::move(cand);
        curT = std::move(t);
        return true;
      };
      for (int dn : {-1, 1}) {
        LlmPlacement c = cur;
        c.ngl += dn;
        if (tryMove(std::move(c))) improved = true;
      }
      const auto gain = gains(cur.opOffload, ph);
      for (const auto& g : groups) {
        if (limit) break;
        LlmPlacement c = cur;
        const DeviceId now = c.tensors[members.at(g).front()];
        for (const auto& n : members.at(g)) c.tensors[n] = now == job.accel() ? job.host() : job.accel();
        if (tryMove(std::move(c))) improved = true;
      }
      // Swaps: the six host groups of most gain per byte against the six GPU groups of least.
      std::vector<std::pair<double, std::string>> in, out;
      for (const auto& g : groups) {
        auto it = gain.find(g);
        const double d = (it == gain.end() ? 0.0 : it->second) / static_cast<double>(std::max<int64_t>(1, bytes.at(g)));
        (cur.tensors[members.at(g).front()] == job.accel() ? out : in).push_back({d, g});
      }
      std::sort(in.rbegin(), in.rend());
      std::sort(out.begin(), out.end());
      for (size_t i = 0; i < std::min<size_t>(6, in.size()) && !limit; ++i)
        for (size_t k = 0; k < std::min<size_t>(6, out.size()) && !limit; ++k) {
          LlmPlacement c = cur;
          for (const auto& n : members.at(in[i].second)) c.tensors[n] = job.accel();
          for (const auto& n : members.at(out[k].second)) c.tensors[n] = job.host();
          if (tryMove(std::move(c))) improved = true;
        }
    }
  }

  /// Greedy fills at several cache splits (each retried with less room for weights until it fits), then
  /// the local search from the best of them and `cur`.
  void optimise(LlmPlacement& cur, LlmJobTime& curT, Phases ph) {
    const int layers = job.tensors().layers;
    const int64_t cap = job.argTable().memCapacity.empty() ? 0 : job.argTable().memCapacity[static_cast<size_t>(job.accel())];
    std::set<int> splits;
    const int step = std::max(1, layers / 6);
    for (int c = 0; c <= layers; c += step) splits.insert(c);
    splits.insert(layers);
    splits.insert(std::clamp(layers + 1 - cur.ngl, 0, layers));
    for (bool on : {true, false}) {
      if (ph == Phases::Decode && !on) break;  // the decode does not depend on the prefill's op offload
      const auto gain = gains(on, ph);
      for (int c : splits) {
        int64_t budget = cap > 0 ? cap : (int64_t{1} << 60);
        for (int attempt = 0; attempt < 8 && !limit; ++attempt) {
          if (deadline.passed()) {
            limit = true;
            break;
          }
          LlmPlacement p = fill(gain, c, budget, on);
          LlmJobTime t = score(p, ph);
          if (t.fits) {
            if (t.jobUs < curT.jobUs * (1 - 1e-6)) {
              cur = p;
              curT = t;
            }
            break;
          }
          if (cap <= 0) break;
          budget -= std::max<int64_t>(int64_t{64} << 20, cap / 32);  // activations and compute buffers need room
        }
      }
    }
    improve(cur, curT, ph);
  }
};

}  // namespace

Result<LlmBestResult> bestLlmJob(const LlmJob& job, const std::vector<LlmRuleResult>& rules, const Deadline& deadline) {
  LlmBestResult r;
  const LlmRuleResult* start = nullptr;
  for (const auto& x : rules)
    if (x.ok && (!start || x.time.jobUs < start->time.jobUs)) start = &x;
  if (!start) {
    std::string why;
    for (const auto& x : rules)
      if (!x.why.empty()) why = x.rule + ": " + x.why;
    return makeError("llm: no llama.cpp rule places the job within memory (", why, ")");
  }
  Search s(job);
  // The deadline's time: 60% to the one placement, the rest to the two phases' searches.
  auto stage = [&](double share) { return deadline.never() ? Deadline{} : Deadline::in(deadline.leftSec() * share); };
  s.deadline = stage(0.6);
  r.single = start->placement;
  r.singleTime = start->time;
  s.optimise(r.single, r.singleTime, Phases::Both);
  bool limit = s.limit;
  r.notes.push_back("best: from " + start->rule + " (" + start->args + "), " + std::to_string(s.evaluations) + " placements evaluated");
  // A placement per phase (KTransformers' split): the prefill alone and the decode alone, from the
  // single placement, then the fastest pair with the move between them.
  LlmPlacement pre = r.single, dec = r.single;
  LlmJobTime preT = s.score(pre, Phases::Prefill), decT = s.score(dec, Phases::Decode);
  if (preT.fits && decT.fits) {
    s.deadline = stage(0.5);
    s.limit = false;
    s.optimise(pre, preT, Phases::Prefill);
    limit = limit || s.limit;
    s.deadline = deadline;
    s.limit = false;
    s.optimise(dec, decT, Phases::Decode);
    limit = limit || s.limit;
    struct Pair {
      const LlmPlacement* a;
      const LlmJobTime* at;
      const LlmPlacement* b;
      const LlmJobTime* bt;
    };
    LlmJobTime singlePre = r.singleTime, singleDec = r.singleTime;
    for (const Pair& pr : {Pair{&pre, &preT, &dec, &decT}, Pair{&pre, &preT, &r.single, &singleDec}, Pair{&r.single, &singlePre, &dec, &decT}}) {
      int64_t up = 0, down = 0;
      const double mv = job.moveUs(*pr.a, *pr.b, &up, &down);
      const double total = pr.at->prefillUs + mv + pr.bt->decodeTotalUs;
      const bool better = r.twoPhase ? total < r.twoPhaseTime.jobUs : total < r.singleTime.jobUs * (1 - 1e-6);
      if (!better || *pr.a == *pr.b) continue;
      r.twoPhase = true;
      r.prefill = *pr.a;
      r.decode = *pr.b;
      r.twoPhaseTime = *pr.bt;
      r.twoPhaseTime.prefillUs = pr.at->prefillUs;
      r.twoPhaseTime.accelPeakBytes = std::max(pr.at->accelPeakBytes, pr.bt->accelPeakBytes);
      r.twoPhaseTime.jobUs = total;
      r.moveUs = mv;
      r.moveToAccelBytes = up;
      r.moveToHostBytes = down;
    }
  }
  r.evaluations = s.evaluations;
  r.timeLimitReached = limit;
  if (limit) r.notes.push_back("time limit reached: the search returned its best placement so far");
  return r;
}

std::vector<int64_t> llmUbatchCandidates(int64_t prompt) {
  std::vector<int64_t> out = {512};
  const int64_t top = std::min<int64_t>(prompt, kLlmMaxUbatch);
  for (int64_t u = 1024; u < top; u *= 2) out.push_back(u);
  if (top > 512) out.push_back(top);
  return out;
}

Result<LlmUbatchSearch> bestLlmJobOverUbatch(const LlmJobTables& tables, const std::vector<int64_t>& ubatches, int64_t ruleUbatch,
                                             double timeLimitSec) {
  LlmUbatchSearch r;
  if (std::find(ubatches.begin(), ubatches.end(), ruleUbatch) == ubatches.end())
    return makeError("llm: the micro-batches searched do not include the rules' -ub ", std::to_string(ruleUbatch));
  for (int64_t ub : ubatches) {
    auto job = LlmJob::make(tables, ub);
    if (!job) return Error{job.message()};
    r.jobs.push_back(std::move(job).value());
  }
  std::string lastError;
  bool any = false;
  for (size_t k = 0; k < r.jobs.size(); ++k) {
    if (r.jobs[k].ubatch() == ruleUbatch) r.defaultJob = k;
    r.rules.push_back(evaluateLlmRules(r.jobs[k]));
    // An equal share of the search's time, from now (the rules are not counted).
    auto b = bestLlmJob(r.jobs[k], r.rules.back(), Deadline::in(timeLimitSec / static_cast<double>(r.jobs.size())));
    if (!b) {
      lastError = b.message();
      r.failed.push_back(b.message());
      r.best.emplace_back();
      continue;
    }
    r.failed.emplace_back();
    r.best.push_back(std::move(b).value());
    // Ties keep the earlier (smaller, llama.cpp's default first) micro-batch.
    if (!any || r.best.back().singleTime.jobUs < r.best[r.bestJob].singleTime.jobUs * (1 - 1e-9)) r.bestJob = k;
    any = true;
  }
  if (!any) return Error{lastError};
  return r;
}

}  // namespace partex
