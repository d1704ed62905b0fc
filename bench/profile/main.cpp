// bench_profile: the measurement issue's benchmarks, printed as Markdown tables.
//  (b) profiling time for ResNet-50 on cpu-serial and cpu-parallel (per operator and the PIM minimal plan);
//  (c) predicted against measured makespan for plans on core0 + core1 across the shared models (profiles
//      per operator and in context, interleaved with the plans' executions on the real cores);
//  (d) measured speed-up of the best two-core plan over the best single core.
// Usage: bench_profile [MODELS_DIR] [--reps N (b)] [--rounds R (c, d)] [--spin-us N (c, d)] [--only b|c] [--models a.onnx,b.onnx] [--time-limit S]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "profile/executor.h"
#include "profile/profile.h"
#include "profile/profiler.h"
#include "sched/scheduler.h"
#include "sim/simulator.h"
#include "support/strings.h"
#include "../benchutil.h"

using namespace partex;

namespace {
using partex::bench::median;


/// "" when the backend runs every operator, otherwise the first reason.
std::string unsupported(const Graph& g, const Backend& b) {
  for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op) {
    std::string why;
    if (!b.supports(g, op, &why)) return g.nodes[static_cast<size_t>(op)].name + ": " + why;
  }
  return "";
}

void benchProfilingTime(const std::string& dir, const Backend& b, int reps) {
  const std::string path = dir + "/light_resnet50.onnx";
  auto g = importOnnxFile(path);
  if (!g) {
    std::printf("(b) skipped: %s\n", g.message().c_str());
    return;
  }
  std::printf("\n### (b) Profiling time, ResNet-50 (%zu operators), %d warm-up + %d timed runs\n\n", g->nodes.size(), 1,
              reps);
  std::printf(
      "| device | method | whole-model runs | timed kernel runs | wall s | sum of medians ms "
      "|\n|---|---|---:|---:|---:|---:|\n");
  for (const char* dev : {"cpu-serial", "cpu-parallel"}) {
    for (auto method : {ProfilerOptions::Method::PerOperator, ProfilerOptions::Method::InContext,
                        ProfilerOptions::Method::MinimalPlan}) {
      ProfilerOptions o;
      o.devices = {dev};
      o.reps = reps;
      o.warmup = 1;
      o.method = method;
      ProfilerInfo info;
      auto p = profileModel(*g, b, o, &info);
      const bool minimal = method == ProfilerOptions::Method::MinimalPlan;
      if (!p) {
        std::printf("| %s | %s | error: %s | | | |\n", dev, methodName(method), p.message().c_str());
        continue;
      }
      double sum = 0;
      for (const auto& op : p->devices[0].ops) sum += op.time.medianUs;
      std::printf(
          "| %s | %s | %s | %d | %.2f | %.1f |\n", dev, p->method.c_str(),
          minimal ? (std::to_string(p->profilingRuns) + " plan x " + std::to_string(1 + reps) + " reps").c_str()
          : method == ProfilerOptions::Method::InContext ? (std::to_string(1 + reps) + " runs").c_str()
                                                          : "-",
          info.measurements, info.seconds, sum / 1e3);
      std::fflush(stdout);
    }
  }
}

/// Per-operator medians of several profiles of the same model and devices, taken at different times:
/// each round's sample (one timed run per round) becomes one sample of the merged profile.
struct SampleSink {
  std::map<std::string, std::map<std::string, std::vector<double>>> samples;  // device -> op -> samples
  Profile shape;                                                               // The first profile seen.
  void add(const Profile& p) {
    if (shape.devices.empty()) shape = p;
    for (const auto& d : p.devices)
      for (const auto& op : d.ops) samples[d.id][op.name].push_back(op.time.medianUs);
  }
  Profile merged() const {
    Profile p = shape;
    for (auto& d : p.devices)
      for (auto& op : d.ops) {
        auto dit = samples.find(d.id);
        if (dit == samples.end()) continue;
        auto oit = dit->second.find(op.name);
        if (oit != dit->second.end()) op.time = summarise(oit->second);
      }
    p.reps = static_cast<int>(samples.empty() ? 0 : samples.begin()->second.begin()->second.size());
    return p;
  }
};

struct Candidate {
  std::string name;  ///< "single core0", "heft", ...
  Plan plan;
  int used = 0;
  bool match = false;
  std::string error;
  std::vector<double> makespans;
  double cpuShareSum = 0;
};

struct PlanRow {
  std::string model, algo;
  double predictedIso = 0, predictedCtx = 0, measured = 0, errorIso = 0, errorCtx = 0, share = 1;
  bool twoDevice = false, match = false;
};

/// Builds the cost table of `g` on `plat` with `prof` applied; empty on failure (reason in `why`).
std::optional<CostTable> measuredTable(const Graph& g, const Platform& plat, const Profile& prof, std::string& why) {
  auto t = buildCostTable(g, characteriseAll(g), plat);
  if (!t) {
    why = t.message();
    return std::nullopt;
  }
  ApplyOptions ao;
  ao.modelSha256 = g.graphSha256;
  if (auto r = applyProfile(*t, prof, ao); !r) {
    why = r.message();
    return std::nullopt;
  }
  return std::move(*t);
}

double predictedMakespan(const CostTable& t, const Plan& plan) {
  auto tl = simulate(t, plan);
  return tl ? tl->makespan : 0.0;
}

/// (c) and (d). Host noise on a shared VM comes in phases of seconds (the same run of SqueezeNet takes
/// 18 ms for a while, then 34 ms), so profiles and executions are interleaved: every round profiles both
/// cores once (in context and per operator) and then runs every plan once; predictions use the
/// per-operator medians over the rounds and are set against the median makespan over the same rounds.
void benchPredictedVsMeasured(const std::string& dir, const std::vector<std::string>& only, const Backend& b, int rounds,
                              double timeLimit, int spinUs) {
  const Platform plat = thisMachineCores(2);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".onnx") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  std::printf("\n### (c) Predicted against measured makespan on core0 + core1 (%d interleaved rounds)\n\n", rounds);
  std::printf(
      "| model | ops | plan | devices used | measured us | predicted us, per-operator profile | error | predicted us, "
      "in-context profile | error | CPU share | outputs match |\n");
  std::printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
  std::vector<PlanRow> rows;
  std::vector<std::string> skipped;
  struct Speedup {
    std::string model;
    double single = kInf, two = kInf;
    std::string singleAlgo, twoAlgo;
  };
  std::vector<Speedup> speedups;
  for (const auto& file : files) {
    if (!only.empty() && std::find(only.begin(), only.end(), file) == only.end()) continue;
    auto g = importOnnxFile(dir + "/" + file);
    if (!g) {
      skipped.push_back(file + " (import: " + g.message() + ")");
      continue;
    }
    if (auto why = unsupported(*g, b); !why.empty()) {
      skipped.push_back(file + " (" + why + ")");
      continue;
    }
    auto profileOnce = [&](ProfilerOptions::Method method, int reps) {
      ProfilerOptions po;
      po.devices = {"core0", "core1"};
      po.reps = reps;
      po.warmup = 1;
      po.method = method;
      return profileModel(*g, b, po);
    };
    // Plans come from a first in-context profile; the rounds below measure what they predict.
    auto first = profileOnce(ProfilerOptions::Method::InContext, 3);
    if (!first) {
      skipped.push_back(file + " (profile: " + first.message() + ")");
      continue;
    }
    std::string why;
    auto t0 = measuredTable(*g, plat, *first, why);
    if (!t0) {
      skipped.push_back(file + " (" + why + ")");
      continue;
    }
    std::vector<Candidate> cands;
    const std::vector<std::pair<std::string, std::string>> algos = {
        {"single", "core0"}, {"single", "core1"}, {"heft", ""}, {"peft", ""}, {"best", ""}};
    for (const auto& [algo, dev] : algos) {
      const Scheduler* s = findScheduler(algo);
      if (!s) continue;
      SchedOptions so;
      so.timeLimitSec = timeLimit;
      if (!dev.empty()) so.params["device"] = dev;
      auto plan = s->schedule(*t0, Constraints{}, so);
      if (!plan) continue;
      Candidate c;
      c.name = dev.empty() ? algo : algo + " " + dev;
      c.plan = *plan;
      for (const auto& o : plan->order) c.used += o.empty() ? 0 : 1;
      // Outputs checked once, against a single-device run.
      ExecOptions eo;
      eo.reps = 1;
      eo.warmup = 0;
      auto r = executePlan(*g, b, *t0, c.plan, eo);
      if (!r)
        c.error = r.message();
      else
        c.match = r->outputsMatch;
      cands.push_back(std::move(c));
    }
    SampleSink ctx, iso;
    bool failed = false;
    for (int round = 0; round < rounds && !failed; ++round) {
      auto pc = profileOnce(ProfilerOptions::Method::InContext, 1);
      auto pi = profileOnce(ProfilerOptions::Method::PerOperator, 1);
      if (!pc || !pi) {
        skipped.push_back(file + " (profile: " + (pc ? pi.message() : pc.message()) + ")");
        failed = true;
        break;
      }
      ctx.add(*pc);
      iso.add(*pi);
      for (auto& c : cands) {
        if (!c.error.empty()) continue;
        ExecOptions eo;
        eo.reps = 1;
        eo.warmup = 1;
        eo.checkOutputs = false;
        eo.spinUs = spinUs;
        auto r = executePlan(*g, b, *t0, c.plan, eo);
        if (!r) {
          c.error = r.message();
          continue;
        }
        c.makespans.push_back(r->makespanUs);
        c.cpuShareSum += r->cpuShare;
      }
    }
    if (failed) continue;
    auto tCtx = measuredTable(*g, plat, ctx.merged(), why);
    auto tIso = measuredTable(*g, plat, iso.merged(), why);
    if (!tCtx || !tIso) {
      skipped.push_back(file + " (" + why + ")");
      continue;
    }
    Speedup sp;
    sp.model = file;
    for (const auto& c : cands) {
      if (!c.error.empty() || c.makespans.empty()) {
        std::printf("| %s | %zu | %s | %d | error: %s | | | | | | |\n", file.c_str(), g->nodes.size(), c.name.c_str(),
                    c.used, c.error.c_str());
        continue;
      }
      PlanRow row;
      row.model = file;
      row.algo = c.name;
      row.measured = median(c.makespans);
      row.predictedIso = predictedMakespan(*tIso, c.plan);
      row.predictedCtx = predictedMakespan(*tCtx, c.plan);
      row.errorIso = (row.predictedIso - row.measured) / row.measured;
      row.errorCtx = (row.predictedCtx - row.measured) / row.measured;
      row.share = c.cpuShareSum / static_cast<double>(c.makespans.size());
      row.twoDevice = c.used > 1;
      row.match = c.match;
      rows.push_back(row);
      std::printf("| %s | %zu | %s | %d | %.0f | %.0f | %+.1f%% | %.0f | %+.1f%% | %.2f | %s |\n", file.c_str(),
                  g->nodes.size(), c.name.c_str(), c.used, row.measured, row.predictedIso, row.errorIso * 100.0,
                  row.predictedCtx, row.errorCtx * 100.0, row.share, row.match ? "yes" : "NO");
      std::fflush(stdout);
      if (c.used <= 1) {
        if (row.measured < sp.single) sp.single = row.measured, sp.singleAlgo = c.name;
      } else if (row.measured < sp.two) {
        sp.two = row.measured, sp.twoAlgo = c.name;
      }
    }
    if (sp.single < kInf && sp.two < kInf) speedups.push_back(sp);
  }
  std::vector<double> allIso, allCtx, twoIso, twoCtx, oneCtx;
  for (const auto& r : rows) {
    allIso.push_back(std::fabs(r.errorIso));
    allCtx.push_back(std::fabs(r.errorCtx));
    if (r.twoDevice)
      twoIso.push_back(std::fabs(r.errorIso)), twoCtx.push_back(std::fabs(r.errorCtx));
    else
      oneCtx.push_back(std::fabs(r.errorCtx));
  }
  std::printf(
      "\nMedian |error| over %zu plans: per-operator profile %.1f%%, in-context profile %.1f%%. Single-core plans "
      "(%zu), in-context: %.1f%%. Plans using both cores (%zu): per-operator %.1f%%, in-context %.1f%%.\n",
      allIso.size(), median(allIso) * 100.0, median(allCtx) * 100.0, oneCtx.size(), median(oneCtx) * 100.0,
      twoCtx.size(), median(twoIso) * 100.0, median(twoCtx) * 100.0);
  if (!skipped.empty()) std::printf("Skipped: %s.\n", join(skipped, "; ").c_str());

  std::printf("\n### (d) Measured speed-up of the best two-core plan over the best single core\n\n");
  std::printf(
      "| model | best single core | us | best two-core plan | us | speed-up |\n|---|---|---:|---|---:|---:|\n");
  std::vector<double> ups;
  for (const auto& s : speedups) {
    ups.push_back(s.single / s.two);
    std::printf("| %s | %s | %.0f | %s | %.0f | %.2f |\n", s.model.c_str(), s.singleAlgo.c_str(), s.single,
                s.twoAlgo.c_str(), s.two, s.single / s.two);
  }
  std::printf("\nMedian speed-up: %.2f over %zu models.\n", median(ups), ups.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "../shared/models", only;
  std::vector<std::string> models;
  int reps = 5, rounds = 10, spinUs = ExecOptions{}.spinUs;
  double timeLimit = 2.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--spin-us" && i + 1 < argc) {
      spinUs = std::max(0, std::atoi(argv[++i]));
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--models" && i + 1 < argc) {
      for (const auto& m : split(argv[++i], ',')) models.push_back(trim(m));
    } else if (a == "--time-limit" && i + 1 < argc) {
      timeLimit = std::atof(argv[++i]);
    } else if (!a.empty() && a[0] != '-') {
      dir = a;
    } else {
      std::fprintf(
          stderr, "usage: bench_profile [MODELS_DIR] [--reps N] [--rounds R] [--spin-us N] [--only b|c] [--models a.onnx,...] [--time-limit S]\n");
      return 2;
    }
  }
  BackendRegistry reg;
  registerBuiltinBackends(reg);
  const Backend* b = reg.find("cpu");
  if (!b) {
    std::fprintf(stderr, "bench_profile: no cpu backend\n");
    return 2;
  }
  std::printf("Backend: %s %s; machine: %s\n", b->name().c_str(), b->version().c_str(), machineDescription().c_str());
  if (only.empty() || only == "b") benchProfilingTime(dir, *b, reps);
  if (only.empty() || only == "c") benchPredictedVsMeasured(dir, models, *b, rounds, timeLimit, spinUs);
  return 0;
}
