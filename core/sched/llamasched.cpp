// llama.cpp's placement rules beside -ngl (offload.cpp) as schedulers over the cost table, each
// producing a Plan from a tensor placement (llamarules.h): `fit` (--fit, memory only: common/fit.cpp,
// common_params_fit_impl, one GPU), `n-cpu-moe` (--n-cpu-moe N / --cpu-moe), `n-cpu-ffn` (--n-cpu-ffn N)
// and `ot` (-ot REGEX=BUFTYPE,... read as a placement). Every rule notes the llama.cpp arguments that
// realise its plan and, in prefill, the makespan with ggml's op offload (withOpOffload).
#include <algorithm>
#include <cstdio>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "sched/llamarules.h"
#include "sched/offload.h"
#include "sim/memory.h"
#include "support/strings.h"

namespace partex {

namespace {

std::string ms(double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f ms", us / 1000);
  return buf;
}

/// A placement evaluated: its plan, whether it fits (weights, then the whole model on its timeline;
/// with `budget` > 0 the accelerator's resident peak must also stay within it) and its makespan.
struct Trial {
  bool fits = false;
  double makespanUs = 0;
  int64_t accelPeak = 0;
  std::string why;
  Plan plan;
};

Trial evaluate(const CostTable& t, const Constraints& c, const SimOptions& sim, const LlamaTensors& m,
               const TensorPlacement& placement, DeviceId accel, int64_t budget) {
  Trial tr;
  tr.plan = planFromTensors(t, c, m, placement);
  WeightLoad load(t);
  load.reset(tr.plan.device);
  const bool weightsFit = load.fitsAll();
  auto tl = simulate(t, tr.plan, sim);
  if (!tl) {
    tr.why = tl.message();
    return tr;
  }
  tr.makespanUs = tl->makespan;
  const Status st = checkCapacity(t, tr.plan, weightsFit ? &*tl : nullptr);
  tr.fits = st.isOk() && weightsFit;
  if (!tr.fits) tr.why = st.isOk() ? "weights over capacity" : st.message();
  const auto mem = deviceMemory(t, tr.plan, *tl);
  tr.accelPeak = mem[static_cast<size_t>(accel)].peak;
  if (tr.fits && budget > 0 && tr.accelPeak > budget) {
    tr.fits = false;
    tr.why = "device '" + t.deviceIds[static_cast<size_t>(accel)] + "' needs " + withCommas(static_cast<uint64_t>(tr.accelPeak)) +
             " bytes, over the " + withCommas(static_cast<uint64_t>(budget)) + " bytes left by the margin";
  }
  return tr;
}

struct Common {
  LlamaTensors m;
  DeviceId accel = -1;
  int slots = 0;
};

Result<Common> common(const std::string& rule, const CostTable& t, const SchedOptions& o) {
  Common k;
  k.m = llamaTensors(t);
  if (k.m.layers == 0)
    return makeError(rule, ": '", t.name,
                     "' has no layer names (operators named layers.<L>., weights named blk.<L>.*): the rule cannot tell its layers");
  if (auto it = o.params.find("device"); it != o.params.end()) {
    auto d = std::find(t.deviceIds.begin(), t.deviceIds.end(), it->second);
    if (d == t.deviceIds.end()) return makeError(rule, ": param device: no device '", it->second, "'");
    k.accel = static_cast<DeviceId>(d - t.deviceIds.begin());
  } else {
    k.accel = defaultAccelerator(t);
  }
  if (k.accel < 0 || k.accel == t.host) return makeError(rule, ": the platform has no GPU beside the host");
  k.slots = k.m.layers + 1;
  return k;
}

Result<int> intParam(const std::string& rule, const SchedOptions& o, const std::string& key, int def, int lo, int hi) {
  auto it = o.params.find(key);
  if (it == o.params.end()) return def;
  int64_t v = 0;
  if (!parseInt64(it->second, v) || v < lo || v > hi)
    return makeError(rule, ": param ", key, " must be from ", std::to_string(lo), " to ", std::to_string(hi), ", not '", it->second, "'");
  return static_cast<int>(v);
}

/// The prefill op offload note: the plan's makespan when ggml runs host matrix products on the GPU.
void opOffloadNote(const CostTable& t, const Common& k, const Plan& plan, const SchedOptions& o, SchedInfo* info) {
  OpOffloadOptions oo;
  if (auto it = o.params.find("op-offload"); it != o.params.end()) oo.on = it->second != "off";
  oo.tokens = tokensOf(t, k.m);
  if (oo.tokens < oo.minBatch) return;
  if (!oo.on) {
    info->notes.push_back("prefill op offload off (--no-op-offload)");
    return;
  }
  const CostTable off = withOpOffload(t, k.m, k.accel, oo);
  auto tl = simulate(off, plan, o.sim);
  if (!tl) return;
  info->notes.push_back("with prefill op offload (" + std::to_string(oo.tokens) +
                        " tokens >= 32: host matrix products run on " + t.deviceIds[static_cast<size_t>(k.accel)] +
                        ", weights copied per 512-token micro-batch): " + ms(tl->makespan));
}

/// Rules whose N runs over 0..layers with overrides from a generator: the fastest fitting N (every N
/// simulated), or the given one.
Result<Plan> overrideSweep(const std::string& rule, const std::string& flag, const CostTable& t, const Constraints& c,
                           const SchedOptions& o, SchedInfo* info,
                           std::vector<TensorOverride> (*gen)(int, DeviceId)) {
  auto k = common(rule, t, o);
  if (!k) return Error{k.message()};
  auto ngl = intParam(rule, o, "ngl", k->slots, 0, k->slots);
  if (!ngl) return Error{ngl.message()};
  int fixed = -1;
  if (auto it = o.params.find("n"); it != o.params.end()) {
    if (it->second == "all") {
      fixed = k->m.layers;
    } else {
      auto n = intParam(rule, o, "n", 0, 0, k->m.layers);
      if (!n) return Error{n.message()};
      fixed = *n;
    }
  }
  const int lo = fixed >= 0 ? fixed : 0, hi = fixed >= 0 ? fixed : k->m.layers;
  Trial best;
  int bestN = -1, smallestFit = -1, fitting = 0;
  std::string lastWhy;
  const Deadline deadline = o.startDeadline();
  for (int n = lo; n <= hi; ++n) {
    if (o.cancel && o.cancel->load(std::memory_order_relaxed)) return sched_detail::cancelledError();
    if (fixed < 0 && n > lo && deadline.passed()) break;
    TensorPlacement p = nglPlacement(k->m, *ngl, k->accel, t.host);
    if (Status st = applyOverrides(t, k->m, gen(n, t.host), p, false); !st) return Error{st.message()};
    Trial tr = evaluate(t, c, o.sim, k->m, p, k->accel, 0);
    if (!tr.fits) {
      lastWhy = tr.why;
      if (fixed < 0) continue;
    }
    ++fitting;
    if (smallestFit < 0 && tr.fits) smallestFit = n;
    if (bestN < 0 || tr.makespanUs < best.makespanUs) {
      best = std::move(tr);
      bestN = n;
    }
  }
  if (bestN < 0)
    return makeError(rule, ": no ", flag, " N from 0 to ", std::to_string(k->m.layers), " fits with -ngl ",
                     std::to_string(*ngl), " (", flag, " ", std::to_string(k->m.layers), ": ", lastWhy, ")");
  const std::string args = "-ngl " + std::to_string(*ngl) + " " + flag + " " + std::to_string(bestN);
  info->notes.push_back(args + " (" + std::to_string(bestN) + " of " + std::to_string(k->m.layers) + " layers' " +
                        (flag == "--n-cpu-moe" ? "routed experts" : "dense FFN") + " on " +
                        t.deviceIds[static_cast<size_t>(t.host)] + ")");
  if (fixed >= 0)
    info->notes.push_back(flag + " " + std::to_string(bestN) + " as given" + (best.fits ? "" : " (over capacity: " + best.why + ")"));
  else
    info->notes.push_back(flag + " " + std::to_string(bestN) + " is the fastest of " + std::to_string(fitting) +
                          " fitting N, " + ms(best.makespanUs) + "; the smallest that fits is " + std::to_string(smallestFit));
  info->notes.push_back("llama.cpp: " + args);
  opOffloadNote(t, *k, best.plan, o, info);
  best.plan.algorithm = rule;
  return std::move(best.plan);
}

class NCpuMoe final : public Scheduler {
 public:
  std::string name() const override { return "n-cpu-moe"; }
  std::string title() const override { return "llama.cpp --n-cpu-moe N (routed experts of the first N layers on the CPU)"; }
  std::string description() const override {
    return "llama.cpp's --n-cpu-moe N over -ngl (default all slots): the routed-expert tensors (blk.<L>.ffn_*_exps) of "
           "layers 0..N-1 on the CPU; every N simulated, the fastest that fits; param n=<N> or n=all (--cpu-moe), "
           "ngl=<N>, device=<id>.";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    auto k = common("n-cpu-moe", t, o);
    if (!k) return Error{k.message()};
    const LlamaTensors& m = k->m;
    if (!m.experts)
      return makeError("n-cpu-moe: '", t.name,
                       "' has no routed-expert tensors (blk.<L>.ffn_*_exps): --n-cpu-moe places nothing on it");
    return overrideSweep("n-cpu-moe", "--n-cpu-moe", t, c, o, info, &nCpuMoeOverrides);
  }
};

class NCpuFfn final : public Scheduler {
 public:
  std::string name() const override { return "n-cpu-ffn"; }
  std::string title() const override { return "llama.cpp --n-cpu-ffn N (dense FFN of the first N layers on the CPU)"; }
  std::string description() const override {
    return "llama.cpp's --n-cpu-ffn N over -ngl (default all slots): the dense FFN tensors (blk.<L>.ffn_(up|down|gate).) "
           "of layers 0..N-1 on the CPU; every N simulated, the fastest that fits; param n=<N>, ngl=<N>, device=<id>.";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    auto k = common("n-cpu-ffn", t, o);
    if (!k) return Error{k.message()};
    const LlamaTensors& m = k->m;
    if (!m.denseFfn)
      return makeError("n-cpu-ffn: '", t.name,
                       "' has no dense FFN tensors (blk.<L>.ffn_up/down/gate): --n-cpu-ffn places nothing on it");
    return overrideSweep("n-cpu-ffn", "--n-cpu-ffn", t, c, o, info, &nCpuFfnOverrides);
  }
};

class Ot final : public Scheduler {
 public:
  std::string name() const override { return "ot"; }
  std::string title() const override { return "llama.cpp -ot REGEX=DEVICE,... (a user's override string)"; }
  std::string description() const override {
    return "a llama.cpp --override-tensor string read as a placement: param ot='REGEX=CPU,REGEX2=CUDA0' (each tensor "
           "goes where the first matching pattern says), the rest by -ngl (param ngl=<N>, default all slots); a "
           "pattern that matches no tensor is an error.";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    auto k = common("ot", t, o);
    if (!k) return Error{k.message()};
    auto it = o.params.find("ot");
    if (it == o.params.end()) return makeError("ot: param ot='REGEX=CPU,REGEX2=CUDA0' is required");
    auto ngl = intParam("ot", o, "ngl", k->slots, 0, k->slots);
    if (!ngl) return Error{ngl.message()};
    auto ov = parseOverrides(t, it->second);
    if (!ov) return Error{ov.message()};
    TensorPlacement p = nglPlacement(k->m, *ngl, k->accel, t.host);
    if (Status st = applyOverrides(t, k->m, *ov, p, true); !st) return Error{st.message()};
    Trial tr = evaluate(t, c, o.sim, k->m, p, k->accel, 0);
    info->notes.push_back("-ngl " + std::to_string(*ngl) + " -ot \"" + it->second + "\"");
    info->notes.push_back(tr.fits ? "fits" : "over capacity: " + tr.why);
    info->notes.push_back("llama.cpp: " + llamaArgsFor(t, k->m, p, k->accel).text);
    opOffloadNote(t, *k, tr.plan, o, info);
    tr.plan.algorithm = "ot";
    return std::move(tr.plan);
  }
};

/// --fit on one GPU, as common_params_fit_impl does it: nothing changes when the default (-ngl all)
/// leaves the margin free; a dense model gets the largest -ngl that leaves it; a MoE model first
/// "dense-only" layers (their experts on the CPU, the first GPU layer full) filled back to front, then,
/// when all dense weights fit, full layers from the front with the experts of the rest on the CPU,
/// and one more layer partly (up, then gate, kept on the GPU; else attention only).
class Fit final : public Scheduler {
 public:
  std::string name() const override { return "fit"; }
  std::string title() const override { return "llama.cpp --fit (memory only)"; }
  std::string description() const override {
    return "llama.cpp's --fit on one GPU: the default -ngl (all slots) if it leaves the margin free, else the largest "
           "-ngl that does (MoE: experts to the CPU first, dense weights kept on the GPU); memory only, no speed "
           "model; param fit-target=<MiB> (the margin, default 1024), device=<id>.";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    auto k = common("fit", t, o);
    if (!k) return Error{k.message()};
    auto marginMiB = intParam("fit", o, "fit-target", 1024, 0, 1 << 20);
    if (!marginMiB) return Error{marginMiB.message()};
    const int64_t cap = t.memCapacity.empty() ? 0 : t.memCapacity[static_cast<size_t>(k->accel)];
    const int64_t target = cap > 0 ? cap - (int64_t{*marginMiB} << 20) : 0;
    const LlamaTensors& m = k->m;
    const int slots = k->slots, layers = m.layers;
    const DeviceId host = t.host;
    auto fitsTarget = [&](const Trial& tr, bool strict) {
      return cap <= 0 || (strict ? tr.accelPeak < target : tr.accelPeak <= target);
    };
    // ngl slots on the GPU; the GPU layers after the first nFull get `pattern` (the first of them
    // `first`) sent to the CPU.
    enum Frac { Moe, Attn, Up, Gate };
    auto pattern = [](int il, Frac f) {
      const std::string b = "blk\\." + std::to_string(il) + "\\.";
      switch (f) {
        case Attn: return b + "ffn_(gate|up|gate_up|down).*";
        case Up: return b + "ffn_(gate|gate_up|down).*";
        case Gate: return b + "ffn_down.*";
        default: return b + "ffn_(up|down|gate_up|gate)_(ch|)exps";
      }
    };
    std::vector<TensorOverride> used;
    auto config = [&](int ngl, int nFull, Frac first) {
      TensorPlacement p = nglPlacement(m, ngl, k->accel, host);
      std::vector<TensorOverride> ov;
      const int il0 = slots - ngl + nFull;
      for (int il = il0; il < slots; ++il) ov.push_back({pattern(il, il == il0 ? first : Moe), host});
      (void)applyOverrides(t, m, ov, p, false);  // generated patterns: always valid
      used = ov;
      Trial tr = evaluate(t, c, o.sim, m, p, k->accel, 0);
      return tr;
    };
    std::string how;
    Trial chosen;
    int chosenNgl = slots, chosenFull = slots;
    Frac chosenFirst = Moe;
    Trial full = config(slots, slots, Moe);
    if (fitsTarget(full, false)) {
      chosen = std::move(full);
      how = "the default (-ngl " + std::to_string(slots) + ") leaves the margin free: no change";
    } else if (!m.experts) {
      // Dense: the largest -ngl that fits (false position in llama.cpp; the same N).
      chosenNgl = 0;
      for (int n = slots - 1; n >= 0; --n) {
        Trial tr = config(n, n, Moe);
        if (fitsTarget(tr, false) || n == 0) {
          chosen = std::move(tr);
          chosenNgl = chosenFull = n;
          break;
        }
      }
      how = "-ngl " + std::to_string(chosenNgl) + " is the largest that leaves the margin free";
    } else {
      // Step 3: dense-only layers back to front (the first GPU slot full, the others' experts on the CPU).
      chosenNgl = 0;
      chosenFull = 0;
      chosen = config(0, 0, Moe);
      for (int n = slots; n >= 1; --n) {
        Trial tr = config(n, 1, Moe);
        if (fitsTarget(tr, false)) {
          chosen = std::move(tr);
          chosenNgl = n;
          chosenFull = 1;
          break;
        }
      }
      how = "-ngl " + std::to_string(chosenNgl) + " with the routed experts of all but its first GPU layer on the CPU";
      // All dense weights fit (every expert on the CPU leaves a surplus): step 4, full layers from the front.
      TensorPlacement allMoe = nglPlacement(m, slots, k->accel, host);
      (void)applyOverrides(t, m, {{"blk\\.\\d+\\.ffn_(up|down|gate_up|gate)_(ch|)exps", host}}, allMoe, false);
      const Trial surplus = evaluate(t, c, o.sim, m, allMoe, k->accel, 0);
      if (chosenNgl >= 1 && fitsTarget(surplus, true)) {
        // The GPU slots of step 3 stay; their partial layers become full from the front.
        const int ngl = chosenNgl;
        int nFull = 1;
        for (int f = ngl; f > 1; --f) {
          Trial tr = config(ngl, f, Moe);
          if (fitsTarget(tr, false)) {
            chosen = std::move(tr);
            nFull = f;
            break;
          }
        }
        chosenFull = nFull;
        const int first = slots - ngl + nFull;  // the first partial layer
        how = "-ngl " + std::to_string(ngl) + ", " + std::to_string(std::min(nFull, layers)) +
              " GPU layers full from the front, the routed experts of the rest on the CPU";
        if (first < layers && ngl > 1) {
          Trial up = config(ngl, nFull, Up);
          if (fitsTarget(up, true)) {
            chosen = std::move(up);
            chosenFirst = Up;
            Trial gate = config(ngl, nFull, Gate);
            if (fitsTarget(gate, true)) {
              chosen = std::move(gate);
              chosenFirst = Gate;
            }
          } else {
            Trial attn = config(ngl, nFull, Attn);
            if (fitsTarget(attn, true)) {
              chosen = std::move(attn);
              chosenFirst = Attn;
            }
          }
          if (chosenFirst != Moe)
            how += std::string("; layer ") + std::to_string(first) + " partly (" +
                   (chosenFirst == Up ? "attention and up" : chosenFirst == Gate ? "attention, up and gate" : "attention") +
                   " on the GPU)";
        }
      }
    }
    // The arguments llama.cpp's --fit sets, as a command line.
    config(chosenNgl, chosenFull, chosenFirst);
    std::string args = "-ngl " + std::to_string(chosenNgl);
    if (!used.empty()) {
      std::vector<std::string> items;
      for (const auto& ov : used)
        if (ov.pattern.find("\\." + std::to_string(layers) + "\\.") == std::string::npos)  // the output slot has no blk tensors
          items.push_back(ov.pattern + "=CPU");
      if (!items.empty()) args += " -ot \"" + join(items, ",") + "\"";
    }
    info->notes.push_back("--fit: " + how + " (margin " + std::to_string(*marginMiB) + " MiB" +
                          (cap > 0 ? ", target " + withCommas(static_cast<uint64_t>(std::max<int64_t>(0, target))) + " bytes" : "") +
                          ")");
    info->notes.push_back("the graph's context is taken as set by the user (-c): --fit shrinks only an automatic context, "
                          "toward --fit-ctx 4096, before it moves weights");
    info->notes.push_back("llama.cpp: " + args);
    opOffloadNote(t, *k, chosen.plan, o, info);
    if (!chosen.fits) info->notes.push_back("over capacity: " + chosen.why);
    chosen.plan.algorithm = "fit";
    return std::move(chosen.plan);
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeFit() { return std::make_unique<Fit>(); }
std::unique_ptr<Scheduler> makeNCpuMoe() { return std::make_unique<NCpuMoe>(); }
std::unique_ptr<Scheduler> makeNCpuFfn() { return std::make_unique<NCpuFfn>(); }
std::unique_ptr<Scheduler> makeOt() { return std::make_unique<Ot>(); }

}  // namespace partex
