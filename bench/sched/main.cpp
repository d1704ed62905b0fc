// bench_sched: scheduling quality and speed.
//
// Usage: bench_sched [quality|papers|speed|small|sim|teach|families|offload|llm|all] [--models DIR] [--max-ms N]
//                    [--tasks 100,1000] [--devices 2,4] [--algos heft,peft]  (speed only)
//   quality  models x presets x algorithms: makespan / lower bound and / best of all
//   papers   the published comparisons in shape (PartitionTuner, DUET, PIM DP, DLFusion)
//   speed    scheduler time against graph size on random DAGs (100 .. 100k tasks, 2-8 devices)
//   small    best against the exact optimum on small random DAGs (8 .. 30 tasks)
//   sim      re-simulation time after one move (1k and 10k tasks)
//   teach    recording a scheduler's decisions for teaching mode (300 and 3000 tasks)
//   families SAGA-style instance families (chains, in-trees, out-trees, fork-join, layered) at CCR 0.1, 1, 10 on
//            heterogeneous nodes and links: every algorithm against the best of all
//   offload  the LLM offload question (issues 15.5, 26): a generated Llama-2-7B (float16) in prefill and decode on
//            desktop-rtx4070 (12 GiB) and an 8 GiB variant: llama.cpp's -ngl N (the last N of n_layer + 1
//            slots on the GPU, the largest N that fits), the fastest N, --fit's split, and best, with the
//            splits and why best wins
//   llm      a language model's job (issue 26, item 5): prompt 2048, generate 256 tokens, on the MoE presets
//            (Mixtral-8x7B and Qwen3-30B-A3B in Q4_K, gpt-oss-20b and -120b in MXFP4; float16 activations)
//            on desktop-rtx3090 with its GPU at 8, 12, 16 and 24 GiB: every llama.cpp rule at its best N
//            against best, one placement for both phases and one per phase (--llm-time-limit S, default 10;
//            --llm-models a,b to pick presets; --llm-gib 8,24 to pick sizes; --llm-ubatch N for -ub N for rules and best alike; by default best searches -ub, the rules keep 512)
// Each algorithm run is cancelled after --max-ms (default 60000) through its cancel token.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cost/costtable.h"
#include "cost/instances.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "problem/llmjob.h"
#include "sched/llamarules.h"
#include "sched/llmjob.h"
#include "sched/offload.h"
#include "sched/scheduler.h"
#include "sim/memory.h"
#include "sim/simulator.h"
#include "support/strings.h"

using namespace partex;

namespace {

double gMaxMs = 60000;

struct RunResult {
  bool ok = false;
  double makespan = kInf;
  double ms = 0;
  std::string error;
};

/// Runs one scheduler with a watchdog that cancels it after gMaxMs.
RunResult runOne(const Scheduler& s, const CostTable& t, SchedOptions o = {}) {
  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::duration<double, std::milli>(gMaxMs), [&] { return done; })) cancel = true;
  });
  RunResult r;
  auto t0 = std::chrono::steady_clock::now();
  auto plan = s.schedule(t, Constraints{}, o);
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  if (!plan) {
    r.error = cancel ? "cancelled after limit" : plan.message();
    return r;
  }
  auto tl = simulate(t, *plan, o.sim);
  if (!tl) {
    r.error = "invalid plan: " + tl.message();
    return r;
  }
  r.ok = true;
  r.makespan = tl->makespan;
  return r;
}

Result<CostTable> tableFor(const std::string& modelPath, const std::string& bytes, const std::vector<DimBinding>& dims,
                           const Platform& p) {
  ImportOptions io;
  io.dims = dims;
  auto g = bytes.empty() ? importOnnxFile(modelPath, io) : importOnnxBytes(bytes, modelPath, io);
  if (!g) return Error{g.message()};
  auto work = characteriseAll(*g);
  return buildCostTable(*g, work, p);
}

struct Model {
  std::string name;
  std::string path;
  std::string bytes;  // generated models
  std::vector<DimBinding> dims;
};

std::vector<Model> models(const std::string& dir) {
  std::vector<Model> out;
  for (const char* f : {"light_squeezenet.onnx", "light_resnet50.onnx", "light_inception_v1.onnx", "mnist.onnx",
                        "yolox_nano.onnx", "Ultraface.version-RFB-320.onnx", "light_densenet121.onnx"}) {
    std::string path = dir + "/" + f;
    if (std::filesystem::exists(path)) out.push_back({f, path, "", {}});
  }
  for (const char* kind : {"resnet18", "mobilenetv2", "inception"}) {
    GenSpec s;
    s.kind = kind;
    if (auto b = generateModel(s)) out.push_back({std::string("gen:") + kind, kind, std::move(b).value(), {}});
  }
  GenSpec bert;
  bert.kind = "bert";
  bert.layers = 4;
  bert.seqLen = 128;
  if (auto b = generateModel(bert)) out.push_back({"gen:bert-L4-S128", "bert", std::move(b).value(), {}});
  return out;
}

const std::vector<std::string> kPresets = {"mobile-soc", "cpu-npu", "cpu-gpu-pcie", "cpu-gpu-shared", "pim", "npu-multicore"};

void quality(const std::string& dir) {
  std::printf("\n## (a) Quality: makespan / lower bound (and / best of all algorithms)\n\n");
  std::vector<std::string> algos;
  for (const auto& s : allSchedulers())
    if (s->name() != "exact" && !isLlamaRule(s->name())) algos.push_back(s->name());  // llama.cpp rules: bench_sched offload
  std::printf("| model | platform |");
  for (const auto& a : algos) std::printf(" %s |", a.c_str());
  std::printf("\n|---|---|");
  for (size_t i = 0; i < algos.size(); ++i) std::printf("---:|");
  std::printf("\n");
  int bestLosses = 0, cases = 0;
  for (const auto& m : models(dir)) {
    for (const auto& pname : kPresets) {
      auto p = loadPreset(pname);
      if (!p) continue;
      auto t = tableFor(m.path, m.bytes, m.dims, *p);
      if (!t) {
        std::printf("| %s | %s | %s |\n", m.name.c_str(), pname.c_str(), t.message().c_str());
        continue;
      }
      const double lb = lowerBound(*t);
      std::map<std::string, RunResult> res;
      double bestOther = kInf;
      for (const auto& a : algos) {
        res[a] = runOne(*findScheduler(a), *t);
        if (a != "best" && res[a].ok) bestOther = std::min(bestOther, res[a].makespan);
      }
      double bestAll = std::min(bestOther, res["best"].makespan);
      ++cases;
      if (res["best"].makespan > bestOther * (1 + 1e-9)) ++bestLosses;
      std::printf("| %s | %s |", m.name.c_str(), pname.c_str());
      for (const auto& a : algos) {
        const auto& r = res[a];
        if (!r.ok)
          std::printf(" - |");
        else
          std::printf(" %.3f (%.3f) |", r.makespan / lb, r.makespan / bestAll);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  std::printf("\n`best` worse than another algorithm in %d of %d cases.\n", bestLosses, cases);
}

void papers(const std::string& dir) {
  std::printf("\n## (b) The papers' comparisons, in shape\n\n");
  auto row = [](const std::string& model, const std::string& plat, const CostTable& t, const std::vector<std::string>& algos,
                const std::string& ref) {
    std::map<std::string, RunResult> r;
    for (const auto& a : algos) r[a] = runOne(*findScheduler(a), t);
    std::printf("| %s | %s |", model.c_str(), plat.c_str());
    for (const auto& a : algos) std::printf(" %s %.1f |", a.c_str(), r[a].makespan);
    if (r[ref].ok)
      for (const auto& a : algos)
        if (a != ref && r[a].ok) std::printf(" %s vs %s: %+.2f%% |", ref.c_str(), a.c_str(), 100.0 * (r[a].makespan - r[ref].makespan) / r[a].makespan);
    std::printf("\n");
    std::fflush(stdout);
  };
  std::printf("PartitionTuner vs static type-based and per-op greedy on cpu-npu (makespan in us; positive %% = PartitionTuner faster):\n\n");
  auto cpuNpu = loadPreset("cpu-npu");
  std::vector<Model> pt;
  if (std::filesystem::exists(dir + "/light_squeezenet.onnx")) pt.push_back({"squeezenet", dir + "/light_squeezenet.onnx", "", {}});
  if (std::filesystem::exists(dir + "/light_resnet50.onnx")) pt.push_back({"resnet50", dir + "/light_resnet50.onnx", "", {}});
  GenSpec r18;
  r18.kind = "resnet18";
  pt.push_back({"resnet18 (generated)", "resnet18", generateModel(r18).value(), {}});
  for (const auto& m : pt) {
    auto t = tableFor(m.path, m.bytes, m.dims, *cpuNpu);
    if (t) row(m.name, "cpu-npu", *t, {"partitiontuner", "partitiontuner-clean", "static", "greedy", "best"}, "partitiontuner");
  }
  // DUET's setting: a coupled CPU-GPU (an integrated GPU sharing the CPU's memory, a few times its
  // peak), CNNs and the models with "complex structures" the paper names (wide parallel branches,
  // recommenders with embedding lookups, multi-tower models).
  std::printf("\nDUET vs each single device on cpu-igpu-coupled (paper: 1.5-2.3x over the GPU alone, 1.3-6.4x over the CPU alone):\n\n");
  std::printf("| model | cpu alone (us) | gpu alone (us) | DUET (us) | DUET vs cpu | DUET vs gpu | best (us) | best vs gpu |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  auto coupled = loadPreset("cpu-igpu-coupled");
  std::vector<Model> duetModels;
  for (const char* f : {"light_squeezenet", "light_inception_v1", "light_resnet50"})
    if (std::filesystem::exists(dir + "/" + f + ".onnx")) duetModels.push_back({f, dir + "/" + f + ".onnx", "", {}});
  GenSpec wd;
  wd.kind = "widedeep";
  wd.batch = 256;
  wd.width = 26;
  wd.layers = 3;
  wd.hidden = 1024;
  duetModels.push_back({"widedeep b256 26 features (generated)", "widedeep", generateModel(wd).value(), {}});
  GenSpec mt;
  mt.kind = "multitower";
  mt.batch = 256;
  mt.width = 6;
  mt.layers = 3;
  mt.hidden = 512;
  duetModels.push_back({"multitower b256 6 towers (generated)", "multitower", generateModel(mt).value(), {}});
  GenSpec inc;
  inc.kind = "inception";
  duetModels.push_back({"inception (generated)", "inception", generateModel(inc).value(), {}});
  for (const auto& m : duetModels) {
    auto t = tableFor(m.path, m.bytes, m.dims, *coupled);
    if (!t) continue;
    auto duet = runOne(*findScheduler("duet"), *t);
    auto best = runOne(*findScheduler("best"), *t);
    double alone[2] = {0, 0};
    for (DeviceId d = 0; d < std::min(2, t->numDevices()); ++d) {
      SchedOptions o;
      o.params["device"] = t->deviceIds[static_cast<size_t>(d)];
      alone[d] = runOne(*findScheduler("single"), *t, o).makespan;
    }
    std::printf("| %s | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.1f | %.2fx |\n", m.name.c_str(), alone[0], alone[1], duet.makespan,
                alone[0] / duet.makespan, alone[1] / duet.makespan, best.makespan, alone[1] / best.makespan);
    std::fflush(stdout);
  }
  std::printf("\nPIM DP vs manual priority and greedy on pim (BERT-base and GPT-2-small, 1 layer... sequence lengths 32-512):\n\n");
  auto pim = loadPreset("pim");
  for (const char* kind : {"bert", "gpt2"})
    for (int seq : {32, 64, 128, 256, 512}) {
      GenSpec s;
      s.kind = kind;
      s.layers = 2;
      s.seqLen = seq;
      auto bytes = generateModel(s);
      if (!bytes) continue;
      auto t = tableFor(kind, *bytes, {}, *pim);
      if (t) row(std::string(kind) + " L2 S" + std::to_string(seq), "pim", *t, {"pimdp", "priority", "greedy", "best"}, "pimdp");
    }
  // DLFusion's setting: one multi-core accelerator whose compiler takes a fusion scheme and a core
  // count per block. Baseline as the paper's: every layer compiled alone on the default core count.
  std::printf("\nDLFusion on npu-multicore (modelled; paper: 3.6-7.9x over no optimisation, close to a reduced brute-force "
              "oracle with much less search time):\n\n");
  std::printf("| model | no optimisation (us) | DLFusion (us) | speed-up | oracle (us) | DLFusion vs oracle | DLFusion search (ms) | "
              "oracle search (ms) | best (us) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  auto npu = loadPreset("npu-multicore");
  std::vector<Model> cnns;
  for (const char* f : {"light_squeezenet", "light_resnet50", "light_inception_v1", "light_vgg19", "light_densenet121", "light_shufflenet"})
    if (std::filesystem::exists(dir + "/" + f + ".onnx")) cnns.push_back({f, dir + "/" + f + ".onnx", "", {}});
  cnns.push_back({"resnet18 (generated)", "resnet18", generateModel(r18).value(), {}});
  auto withMode = [](const std::string& mode) {
    SchedOptions o;
    o.params["mode"] = mode;
    return o;
  };
  for (const auto& m : cnns) {
    auto t = tableFor(m.path, m.bytes, m.dims, *npu);
    if (!t) continue;
    auto base = runOne(*findScheduler("dlfusion"), *t, withMode("none"));
    auto heur = runOne(*findScheduler("dlfusion"), *t, withMode("heuristic"));
    auto orac = runOne(*findScheduler("dlfusion"), *t, withMode("oracle"));
    auto best = runOne(*findScheduler("best"), *t);
    std::printf("| %s | %.1f | %.1f | %.2fx | %.1f | %+.2f%% | %.1f | %.1f | %.1f |\n", m.name.c_str(), base.makespan, heur.makespan,
                base.makespan / heur.makespan, orac.makespan, 100.0 * (heur.makespan - orac.makespan) / orac.makespan, heur.ms, orac.ms,
                best.makespan);
    std::fflush(stdout);
  }
  // The OSDI'23 setting: a domain-specific accelerator whose compiler runs a convex subgraph as one
  // kernel; coarse's DP against its own TVM-like and AStitch-like grouping, on CNNs and transformers.
  std::printf("\nCoarse subgraphs on dsa-ascend (modelled; paper: 11.15x over TVM-like fusion, 6.16x over AStitch-like stitching):\n\n");
  std::printf("| model | ops | TVM-like, elementwise (us) | AStitch-like, memory (us) | coarse (us) | vs TVM-like | vs AStitch-like | "
              "kernels (TVM-like / coarse) | best (us) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  auto dsa = loadPreset("dsa-ascend");
  std::vector<Model> dsaModels = cnns;
  for (const char* kind : {"bert", "gpt2"})
    for (int seq : {128, 512}) {
      GenSpec s;
      s.kind = kind;
      s.layers = 2;
      s.seqLen = seq;
      auto bytes = generateModel(s);
      if (bytes) dsaModels.push_back({std::string(kind) + " L2 S" + std::to_string(seq) + " (generated)", kind, *bytes, {}});
    }
  for (const auto& m : dsaModels) {
    auto t = tableFor(m.path, m.bytes, m.dims, *dsa);
    if (!t) continue;
    auto kernels = [&](const std::string& mode) {
      SchedOptions o = withMode(mode);
      auto p = findScheduler("coarse")->schedule(*t, Constraints{}, o);
      if (!p) return -1;
      int k = t->numTasks();
      for (const auto& b : p->blocks) k -= static_cast<int>(b.tasks.size()) - 1;
      return k;
    };
    auto tvm = runOne(*findScheduler("coarse"), *t, withMode("elementwise"));
    auto ast = runOne(*findScheduler("coarse"), *t, withMode("memory"));
    auto dp = runOne(*findScheduler("coarse"), *t, withMode("dp"));
    auto best = runOne(*findScheduler("best"), *t);
    std::printf("| %s | %d | %.1f | %.1f | %.1f | %.2fx | %.2fx | %d / %d | %.1f |\n", m.name.c_str(), t->numTasks(), tvm.makespan, ast.makespan,
                dp.makespan, tvm.makespan / dp.makespan, ast.makespan / dp.makespan, kernels("elementwise"), kernels("dp"), best.makespan);
    std::fflush(stdout);
  }
}

/// A random layered DAG as a cost table: n tasks, m devices, costs and bytes seeded.
CostTable randomTable(int n, int m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  CostTable t;
  t.name = "random";
  for (int d = 0; d < m; ++d) t.deviceIds.push_back("d" + std::to_string(d));
  std::uniform_real_distribution<double> cost(1, 100);
  for (int v = 0; v < n; ++v) {
    t.taskNames.push_back("t" + std::to_string(v));
    t.taskTypes.emplace_back("Op");
    for (int d = 0; d < m; ++d) {
      t.cost.push_back(cost(rng) * (1 + d % 3));
      t.provenance.push_back(Provenance::Modelled);
    }
  }
  const int width = std::max(2, static_cast<int>(std::sqrt(n)));
  for (int v = 1; v < n; ++v) {
    int k = 1 + static_cast<int>(rng() % 2);
    std::vector<int> preds;
    for (int i = 0; i < k; ++i) preds.push_back(std::max(0, v - 1 - static_cast<int>(rng() % static_cast<uint64_t>(width))));
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (int p : preds) t.edges.push_back(Edge{p, v, static_cast<int64_t>(rng() % 200000), -1.0});
  }
  finishTaskTable(t);
  setUniformLinks(t, 5, 10000, true);
  return t;
}

std::vector<int> gTasks = {100, 1000, 10000, 100000};
std::vector<int> gDevices = {2, 4, 8};
std::vector<std::string> gAlgos = {"greedy", "heft", "cpop", "peft", "partitiontuner-clean", "duet", "pimdp", "best"};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    const size_t b = s.find(',', a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

void speed() {
  std::printf("\n## (c) Scheduler time (ms) against graph size, random DAGs\n\n");
  const std::vector<std::string>& algos = gAlgos;
  std::printf("| tasks | devices |");
  for (const auto& a : algos) std::printf(" %s |", a.c_str());
  std::printf("\n|---:|---:|");
  for (size_t i = 0; i < algos.size(); ++i) std::printf("---:|");
  std::printf("\n");
  for (int n : gTasks)
    for (int m : gDevices) {
      CostTable t = randomTable(n, m, static_cast<uint64_t>(n * 31 + m));
      std::printf("| %d | %d |", n, m);
      for (const auto& a : algos) {
        auto r = runOne(*findScheduler(a), t);
        if (r.ok)
          std::printf(" %.1f |", r.ms);
        else
          std::printf(" %s |", r.error.substr(0, 40).c_str());
        std::fflush(stdout);
      }
      std::printf("\n");
    }
}

/// Small graphs: Partex best against the exact optimum (branch and bound with a generous limit) on
/// seeded random DAGs; the target is best within 2% of the proven optimum on every one.
void small() {
  std::printf("\n## Small graphs: best against the exact optimum\n\n| tasks | devices | seeds | exact proven | best = optimum | worst best/exact | mean best/exact | best ms (max) | exact ms (max) |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  const Scheduler* best = findScheduler("best");
  const Scheduler* exact = findScheduler("exact");
  for (int n : {8, 12, 16, 20, 24, 30})
    for (int m : {2, 3, 4}) {
      int proven = 0, equal = 0, seeds = 0;
      double worst = 1, sum = 0, bestMs = 0, exactMs = 0;
      for (uint64_t seed = 1; seed <= 8; ++seed) {
        CostTable t = randomTable(n, m, seed * 1000 + static_cast<uint64_t>(n * 10 + m));
        SchedOptions eo;
        eo.timeLimitSec = 20;
        SchedInfo info;
        auto t0 = std::chrono::steady_clock::now();
        auto ep = exact->schedule(t, {}, eo, &info);
        exactMs = std::max(exactMs, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (!ep || !info.optimal) continue;
        auto etl = simulate(t, *ep);
        auto b = runOne(*best, t);
        if (!etl || !b.ok) continue;
        ++proven;
        ++seeds;
        bestMs = std::max(bestMs, b.ms);
        const double r = b.makespan / etl->makespan;
        if (r <= 1 + 1e-9) ++equal;
        worst = std::max(worst, r);
        sum += r;
      }
      std::printf("| %d | %d | 8 | %d | %d | %.4f | %.4f | %.0f | %.0f |\n", n, m, proven, equal, worst, seeds ? sum / seeds : 0.0, bestMs, exactMs);
      std::fflush(stdout);
    }
}

void sim() {
  std::printf("\n## Re-simulation after one move (the live Gantt chart)\n\n| tasks | devices | full simulate ms | move + re-simulate ms (median of 200) |\n|---:|---:|---:|---:|\n");
  for (int n : {1000, 10000}) {
    CostTable t = randomTable(n, 4, 99);
    auto plan = findScheduler("heft")->schedule(t, {}, {});
    Simulator s(t);
    auto t0 = std::chrono::steady_clock::now();
    (void)s.run(*plan);
    double full = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::mt19937 rng(1);
    std::vector<double> times;
    for (int i = 0; i < 200; ++i) {
      auto a = std::chrono::steady_clock::now();
      (void)s.move(*plan, static_cast<TaskId>(rng() % static_cast<unsigned>(n)), static_cast<DeviceId>(rng() % 4));
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(times.begin(), times.end());
    std::printf("| %d | 4 | %.3f | %.3f |\n", n, full, times[times.size() / 2]);
  }
}

/// Teaching mode records a scheduler run with SchedOptions::trace (every decision with its ready list
/// and per-device finish times): how long that takes, and how many steps, up to the panel's limit.
void teach() {
  std::printf("\n## Recording a scheduler run for teaching mode (SchedOptions::trace)\n\n| tasks | devices | algorithm | "
              "steps | ms, traced | ms, untraced |\n|---:|---:|---|---:|---:|---:|\n");
  for (int n : {300, 3000}) {
    CostTable t = randomTable(n, 4, 7);
    for (const char* algo : {"heft", "cpop", "peft", "greedy", "partitiontuner", "partitiontuner-clean"}) {
      const Scheduler* s = findScheduler(algo);
      if (!s) continue;
      auto timeOne = [&](bool traced, size_t* steps) {
        SchedOptions o;
        size_t count = 0;
        if (traced) o.trace = [&count](const TraceStep&) { ++count; };
        auto t0 = std::chrono::steady_clock::now();
        auto plan = s->schedule(t, {}, o);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (steps) *steps = count;
        return plan ? ms : -1.0;
      };
      size_t steps = 0;
      const double traced = timeOne(true, &steps);
      const double plain = timeOne(false, nullptr);
      std::printf("| %d | 4 | %s | %zu | %.1f | %.1f |\n", n, algo, steps, traced, plain);
    }
  }
}

void families() {
  std::printf("\n## (f) SAGA-style instance families: makespan / best of all algorithms (mean over 5 seeds)\n\n");
  std::vector<std::string> algos;
  for (const auto& s : allSchedulers())
    if (s->name() != "exact") algos.push_back(s->name());
  std::printf("| family | CCR |");
  for (const auto& a : algos) std::printf(" %s |", a.c_str());
  std::printf("\n|---|---:|");
  for (size_t i = 0; i < algos.size(); ++i) std::printf("---:|");
  std::printf("\n");
  int losses = 0, cases = 0;
  for (const char* fam : {"chain", "in-tree", "out-tree", "fork-join", "layered"})
    for (double ccr : {0.1, 1.0, 10.0}) {
      std::map<std::string, double> sumRatio;
      for (uint64_t seed = 1; seed <= 5; ++seed) {
        const CostTable t = sagaFamilyInstance(fam, ccr, seed * 7919 + static_cast<uint64_t>(ccr * 10));
        std::map<std::string, double> ms;
        double bestOther = kInf, all = kInf;
        for (const auto& a : algos) {
          SchedOptions o;
          o.timeLimitSec = 2.0;
          auto r = runOne(*findScheduler(a), t, o);
          ms[a] = r.ok ? r.makespan : kInf;
          all = std::min(all, ms[a]);
          if (a != "best") bestOther = std::min(bestOther, ms[a]);
        }
        ++cases;
        if (ms["best"] > bestOther * (1 + 1e-9)) ++losses;
        for (const auto& a : algos) sumRatio[a] += ms[a] / all / 5.0;
      }
      std::printf("| %s | %g |", fam, ccr);
      for (const auto& a : algos) std::printf(" %.3f |", sumRatio[a]);
      std::printf("\n");
      std::fflush(stdout);
    }
  std::printf("\n`best` worse than another algorithm in %d of %d instances.\n", losses, cases);
}

}  // namespace

void offload() {
  std::printf("\n## (h) LLM offload: llama.cpp's -ngl N (last N slots on the GPU) and --fit against best (modelled)\n\n");
  std::printf("Llama-2-7B shape (32 layers, hidden 4096, 32 heads, vocab 32000), float16, generated without weights; "
              "best with its default time limit (10 s).\n\n");
  std::printf("| case | GPU | ops | rule: largest -ngl | rule ms | best -ngl | best-n ms | fit ms | best ms | best vs rule | "
              "best vs best-n | best sched s | best's GPU weights |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  struct Case {
    const char* phase;
    int cache;
    int gpuGiB;
  };
  std::vector<std::vector<std::string>> whys;
  for (const Case& c : {Case{"prefill", 512, 12}, Case{"decode", 512, 12}, Case{"decode", 4096, 12}, Case{"prefill", 512, 8},
                        Case{"decode", 512, 8}}) {
    const GenSpec s = llama2_7b(c.phase, c.cache);
    auto bytes = generateModel(s);
    auto p = loadPreset("desktop-rtx4070");
    if (!bytes || !p) {
      std::printf("| %s %d | - | %s |\n", c.phase, c.cache, bytes ? p.message().c_str() : bytes.message().c_str());
      continue;
    }
    for (auto& d : p->devices)
      if (d.id == "gpu") d.memCapacityBytes = int64_t{c.gpuGiB} << 30;
    auto t = tableFor("llama7b.onnx", *bytes, {}, *p);
    if (!t) {
      std::printf("| %s %d | - | %s |\n", c.phase, c.cache, t.message().c_str());
      continue;
    }
    const std::string label = std::string(c.phase) + (std::string(c.phase) == "decode" ? " 1 token, " : " ") + std::to_string(c.cache) +
                              (std::string(c.phase) == "decode" ? "-token cache" : "-token prompt");
    auto rule = chooseOffloadSplit(*t, {}, {}, false, -1, Deadline{}, nullptr);
    auto fastest = chooseOffloadSplit(*t, {}, {}, true, -1, Deadline{}, nullptr);
    if (!rule || !fastest) {
      std::printf("| %s | %d GiB | %d | %s |\n", label.c_str(), c.gpuGiB, t->numTasks(), (rule ? fastest : rule).message().c_str());
      continue;
    }
    const Scheduler* best = findScheduler("best");
    SchedOptions o;
    SchedInfo info;
    const auto t0 = std::chrono::steady_clock::now();
    auto plan = best->schedule(*t, {}, o, &info);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!plan) {
      std::printf("| %s | %d GiB | %d | best: %s |\n", label.c_str(), c.gpuGiB, t->numTasks(), plan.message().c_str());
      continue;
    }
    auto btl = simulate(*t, *plan);
    auto rtl = simulate(*t, rule->plan);
    if (!btl || !rtl) continue;
    // --fit with its default 1 GiB margin.
    double fitMs = -1;
    if (const Scheduler* fit = findScheduler("fit"))
      if (auto fp = fit->schedule(*t, {}, SchedOptions{}); fp)
        if (auto ftl = simulate(*t, *fp); ftl) fitMs = ftl->makespan / 1000;
    const DeviceId gpu = rule->accel;
    const int64_t bw = weightBytesPerDevice(*t, plan->device)[static_cast<size_t>(gpu)];
    std::printf("| %s | %d GiB | %d | %d of %d | %.2f | %d | %.2f | %.2f | %.2f | %.3fx | %.3fx | %.1f | %s |\n", label.c_str(),
                c.gpuGiB, t->numTasks(), rule->k, rule->layers + 1, rule->makespanUs / 1000, fastest->k, fastest->makespanUs / 1000,
                fitMs, btl->makespan / 1000,
                rule->makespanUs / btl->makespan, fastest->makespanUs / btl->makespan, sec, humanBytes(static_cast<double>(bw)).c_str());
    std::fflush(stdout);
    std::vector<std::string> why = {label + ", " + std::to_string(c.gpuGiB) + " GiB GPU: " + rule->note};
    for (const auto& line : explainOffload(*t, rule->split, rule->plan, *rtl, "best", *plan, *btl)) why.push_back("  " + line);
    for (const auto& n : info.notes) why.push_back("  best: " + n);
    whys.push_back(why);
  }
  std::printf("\nWhy (core's explainOffload, as `partex-cli compare` prints it):\n\n```\n");
  for (const auto& w : whys)
    for (const auto& line : w) std::printf("%s\n", line.c_str());
  std::printf("```\n");
}

double gLlmTimeLimit = 30;  ///< best's search, shared by the -ub it tries (10 s each of 512, 1024, 2048).
std::vector<std::string> gLlmModels = {"mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b", "gpt-oss-120b"};
std::vector<int> gLlmGiB = {8, 12, 16, 24};
int64_t gLlmUbatch = 0;  ///< --llm-ubatch N: -ub N for rules and best alike; 0: best searches -ub, the rules keep llama.cpp's 512.

/// A rule's arguments, --fit's long -ot list shown by its length.
std::string shortArgs(const LlmRuleResult* r) {
  std::string a = r ? r->args : "-";
  if (const size_t ot = a.find(" -ot \""); ot != std::string::npos && a.size() > 80) {
    const size_t end = a.find('"', ot + 6);
    a = a.substr(0, ot) + " -ot (" + std::to_string(std::count(a.begin(), a.end(), '=')) + " patterns)" + (end == std::string::npos ? "" : a.substr(end + 1));
  }
  return a;
}

const LlmRuleResult* fastestRule(const std::vector<LlmRuleResult>& rules) {
  const LlmRuleResult* top = nullptr;
  for (const auto& r : rules)
    if (r.ok && (!top || r.time.jobUs < top->time.jobUs)) top = &r;
  return top;
}

void llm() {
  std::printf("\n## (i) LLM job: best against llama.cpp's rules in end-to-end job time (modelled)\n\n");
  std::printf("Prompt 2048 tokens, generate 256; desktop-rtx3090 (RTX 3090, DDR4-3200 dual channel, PCIe 4.0 x16) with the GPU's "
              "memory set; decode integrated by the trapezoid rule over 3 cache lengths (2048, 2175, 2303); every rule at its "
              "fastest N and op-offload setting within memory; ");
  if (gLlmUbatch > 0)
    std::printf("-ub %lld for the rules and best alike; ", static_cast<long long>(gLlmUbatch));
  else
    std::printf("the rules at llama.cpp's default -ub 512, best searching -ub 512, 1024, 2048 with the placement (the prefill's "
                "memory checked on the graph of one micro-batch, llama.cpp's compute buffer); ");
  std::printf("best's search limit %.0f s shared by the -ub it tries (the rules not counted).\n\n", gLlmTimeLimit);
  std::printf("| model | GPU | best rule at -ub 512 (args) | rule job s | best's -ub | best rule at best's -ub (args) | its job s | best job s | "
              "best vs rule | from -ub | from placement | goal 1.15x | two phases vs rule | best's args | evals | tables s | search s | within memory |\n"
              "|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---|\n");
  for (const auto& preset : gLlmModels) {
    const std::string quant = preset.rfind("gpt-oss", 0) == 0 ? "mxfp4" : "q4_k";
    for (int gib : gLlmGiB) {
      auto plat = loadPreset("desktop-rtx3090");
      if (!plat) {
        std::printf("| %s | %d GiB | %s |\n", preset.c_str(), gib, plat.message().c_str());
        continue;
      }
      for (auto& d : plat->devices)
        if (d.kind == DeviceKind::Gpu) d.memCapacityBytes = int64_t{gib} << 30;
      LlmJobSpec spec;
      spec.model = "gen:moe?preset=" + preset + "&quant=" + quant + "&dtype=float16";
      spec.prompt = 2048;
      spec.generate = 256;
      spec.ubatches = gLlmUbatch > 0 ? std::vector<int64_t>{gLlmUbatch} : llmUbatchCandidates(spec.prompt);
      const int64_t ruleUbatch = gLlmUbatch > 0 ? gLlmUbatch : 512;
      const auto t0 = std::chrono::steady_clock::now();
      auto tables = loadLlmJobTables(spec, *plat);
      const auto t1 = std::chrono::steady_clock::now();
      if (!tables) {
        std::printf("| %s | %d GiB | %s |\n", preset.c_str(), gib, tables.message().c_str());
        continue;
      }
      auto search = bestLlmJobOverUbatch(*tables, spec.ubatches, ruleUbatch, gLlmTimeLimit);
      const auto t2 = std::chrono::steady_clock::now();
      if (!search) {
        std::printf("| %s | %d GiB | %s |\n", preset.c_str(), gib, search.message().c_str());
        continue;
      }
      const LlmJob& job = search->jobs[search->bestJob];
      const LlmBestResult& best = search->best[search->bestJob];
      const LlmRuleResult* top = fastestRule(search->rules[search->defaultJob]);
      const LlmRuleResult* topAt = fastestRule(search->rules[search->bestJob]);
      bool within = best.singleTime.fits && (!best.twoPhase || best.twoPhaseTime.fits);
      int evals = 0;
      for (size_t k = 0; k < search->jobs.size(); ++k) {
        evals += search->best[k].evaluations;
        for (const auto& r : search->rules[k])
          if (r.ok) within = within && r.time.fits;
      }
      auto sec = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
      const double ruleS = top ? top->time.jobUs / 1e6 : 0, atS = topAt ? topAt->time.jobUs / 1e6 : 0, bestS = best.singleTime.jobUs / 1e6;
      const double twoS = best.twoPhase ? best.twoPhaseTime.jobUs / 1e6 : bestS;
      const double ratio = bestS > 0 ? ruleS / bestS : 0.0;
      std::printf("| %s %s | %d GiB | %s (%s) | %.2f | %lld | %s (%s) | %.2f | %.2f | %.3fx | %.3fx | %.3fx | %s | %.3fx | `%s` | %d | %.1f | %.1f | %s |\n",
                  preset.c_str(), quant.c_str(), gib, top ? top->rule.c_str() : "-", shortArgs(top).c_str(), ruleS,
                  static_cast<long long>(job.ubatch()), topAt ? topAt->rule.c_str() : "-", shortArgs(topAt).c_str(), atS, bestS, ratio,
                  atS > 0 ? ruleS / atS : 0.0, bestS > 0 ? atS / bestS : 0.0, ratio >= 1.15 ? "met" : "not met",
                  twoS > 0 ? ruleS / twoS : 0.0, job.args(best.single).text.c_str(), evals, sec(t0, t1), sec(t1, t2), within ? "yes" : "NO");
      std::fflush(stdout);
    }
  }
}

int main(int argc, char** argv) {
  std::string what = "all", dir = "../shared/models";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--models" && i + 1 < argc) dir = argv[++i];
    else if (a == "--max-ms" && i + 1 < argc) gMaxMs = std::atof(argv[++i]);
    else if (a == "--tasks" && i + 1 < argc) {
      gTasks.clear();
      for (const auto& x : splitList(argv[++i])) gTasks.push_back(std::atoi(x.c_str()));
    } else if (a == "--devices" && i + 1 < argc) {
      gDevices.clear();
      for (const auto& x : splitList(argv[++i])) gDevices.push_back(std::atoi(x.c_str()));
    } else if (a == "--algos" && i + 1 < argc) gAlgos = splitList(argv[++i]);
    else if (a == "--llm-time-limit" && i + 1 < argc) gLlmTimeLimit = std::atof(argv[++i]);
    else if (a == "--llm-models" && i + 1 < argc) gLlmModels = splitList(argv[++i]);
    else if (a == "--llm-ubatch" && i + 1 < argc) gLlmUbatch = std::atoll(argv[++i]);
    else if (a == "--llm-gib" && i + 1 < argc) {
      gLlmGiB.clear();
      for (const auto& x : splitList(argv[++i])) gLlmGiB.push_back(std::atoi(x.c_str()));
    }
    else what = a;
  }
  if (what == "quality" || what == "all") quality(dir);
  if (what == "papers" || what == "all") papers(dir);
  if (what == "speed" || what == "all") speed();
  if (what == "small" || what == "all") small();
  if (what == "sim" || what == "all") sim();
  if (what == "teach" || what == "all") teach();
  if (what == "families" || what == "all") families();
  if (what == "offload" || what == "all") offload();
  if (what == "llm" || what == "all") llm();
  return 0;
}
