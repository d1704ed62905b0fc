// bench_profile: the measurement issue's benchmarks, printed as Markdown tables.
//  (b) profiling time for ResNet-50 on cpu-serial and cpu-parallel (per operator and the PIM minimal plan);
//  (c) predicted against measured makespan for plans on core0 + core1 across the shared models (measured
//      per-operator profile applied, plans from several schedulers executed on the real cores);
//  (d) measured speed-up of the best two-core plan over the best single core.
// Usage: bench_profile [MODELS_DIR] [--reps N] [--only b|c] [--models a.onnx,b.onnx] [--time-limit S]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
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

using namespace partex;

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The this-machine platform cut down to core0 and core1 (host core0), sharing memory.
Platform twoCores() {
  Platform p = measureThisMachine();
  p.name = "two-cores";
  std::vector<Device> keep;
  for (const auto& d : p.devices)
    if (d.id == "core0" || d.id == "core1") keep.push_back(d);
  p.devices = keep;
  p.host = "core0";
  p.exclusiveGroups.clear();
  Link l;
  l.from = "core0";
  l.to = "core1";
  l.sharedMemory = true;
  l.bandwidthGBs = p.links.empty() ? 10.0 : p.links.front().bandwidthGBs;
  p.links = {l};
  return p;
}

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
    for (auto method : {ProfilerOptions::Method::PerOperator, ProfilerOptions::Method::MinimalPlan}) {
      ProfilerOptions o;
      o.devices = {dev};
      o.reps = reps;
      o.warmup = 1;
      o.method = method;
      ProfilerInfo info;
      auto p = profileModel(*g, b, o, &info);
      const bool minimal = method == ProfilerOptions::Method::MinimalPlan;
      if (!p) {
        std::printf("| %s | %s | error: %s | | | |\n", dev, minimal ? "minimal-plan" : "per-operator",
                    p.message().c_str());
        continue;
      }
      double sum = 0;
      for (const auto& op : p->devices[0].ops) sum += op.time.medianUs;
      std::printf(
          "| %s | %s | %s | %d | %.2f | %.1f |\n", dev, p->method.c_str(),
          minimal ? (std::to_string(p->profilingRuns) + " plan x " + std::to_string(1 + reps) + " reps").c_str() : "-",
          info.measurements, info.seconds, sum / 1e3);
      std::fflush(stdout);
    }
  }
}

struct PlanRow {
  std::string model, algo;
  double predicted = 0, measured = 0, error = 0, share = 1, corrected = 0;
  bool twoDevice = false, match = false;
};

void benchPredictedVsMeasured(const std::string& dir, const std::vector<std::string>& only, const Backend& b, int reps,
                              double timeLimit) {
  const Platform plat = twoCores();
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".onnx") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  std::printf("\n### (c) Predicted against measured makespan on core0 + core1 (%d timed runs per plan)\n\n", reps);
  std::printf(
      "| model | ops | plan | devices used | predicted us | measured us | error | CPU share | error at CPU share | "
      "outputs match |\n");
  std::printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---|\n");
  std::vector<PlanRow> rows;
  std::vector<std::string> skipped;
  struct Speedup {
    std::string model;
    double single = 0, two = 0;
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
    ProfilerOptions po;
    po.devices = {"core0", "core1"};
    po.reps = reps;
    po.warmup = 1;
    auto prof = profileModel(*g, b, po);
    if (!prof) {
      skipped.push_back(file + " (profile: " + prof.message() + ")");
      continue;
    }
    auto t = buildCostTable(*g, characteriseAll(*g), plat);
    if (!t) {
      skipped.push_back(file + " (" + t.message() + ")");
      continue;
    }
    ApplyOptions ao;
    ao.modelSha256 = g->graphSha256;
    if (auto r = applyProfile(*t, *prof, ao); !r) {
      skipped.push_back(file + " (" + r.message() + ")");
      continue;
    }
    Speedup sp{file, kInf, kInf, "", ""};
    const std::vector<std::pair<std::string, std::string>> algos = {
        {"single", "core0"}, {"single", "core1"}, {"heft", ""}, {"peft", ""}, {"best", ""}};
    for (const auto& [algo, dev] : algos) {
      const Scheduler* s = findScheduler(algo);
      if (!s) continue;
      SchedOptions so;
      so.timeLimitSec = timeLimit;
      if (!dev.empty()) so.params["device"] = dev;
      auto plan = s->schedule(*t, Constraints{}, so);
      if (!plan) continue;
      auto tl = simulate(*t, *plan);
      if (!tl) continue;
      ExecOptions eo;
      eo.reps = reps;
      eo.warmup = 1;
      auto r = executePlan(*g, b, *t, *plan, eo);
      const std::string name = dev.empty() ? algo : algo + " " + dev;
      if (!r) {
        std::printf("| %s | %zu | %s | - | %.0f | error: %s | | |\n", file.c_str(), g->nodes.size(), name.c_str(),
                    tl->makespan, r.message().c_str());
        continue;
      }
      int used = 0;
      for (const auto& o : plan->order) used += o.empty() ? 0 : 1;
      PlanRow row;
      row.model = file;
      row.algo = name;
      row.predicted = tl->makespan;
      row.measured = r->makespanUs;
      row.error = (tl->makespan - r->makespanUs) / r->makespanUs;
      row.share = r->cpuShare;
      row.corrected = (tl->makespan - r->makespanUs * r->cpuShare) / (r->makespanUs * r->cpuShare);
      row.twoDevice = used > 1;
      row.match = r->outputsMatch;
      rows.push_back(row);
      std::printf("| %s | %zu | %s | %d | %.0f | %.0f | %+.1f%% | %.2f | %+.1f%% | %s |\n", file.c_str(),
                  g->nodes.size(), name.c_str(), used, row.predicted, row.measured, row.error * 100.0, row.share,
                  row.corrected * 100.0, row.match ? "yes" : "NO");
      std::fflush(stdout);
      if (algo == "single") {
        if (row.measured < sp.single) sp.single = row.measured, sp.singleAlgo = name;
      } else if (row.measured < sp.two) {
        sp.two = row.measured, sp.twoAlgo = name;
      }
    }
    if (sp.single < kInf && sp.two < kInf) speedups.push_back(sp);
  }
  std::vector<double> all, two, allC, twoC;
  for (const auto& r : rows) {
    all.push_back(std::fabs(r.error));
    allC.push_back(std::fabs(r.corrected));
    if (r.twoDevice) two.push_back(std::fabs(r.error)), twoC.push_back(std::fabs(r.corrected));
  }
  std::printf(
      "\nMedian |error| over %zu plans: %.1f%% (at CPU share: %.1f%%); over the %zu plans that use both cores: "
      "%.1f%% (at CPU share: %.1f%%).\n",
      all.size(), median(all) * 100.0, median(allC) * 100.0, two.size(), median(two) * 100.0, median(twoC) * 100.0);
  if (!skipped.empty()) std::printf("Skipped: %s.\n", join(skipped, "; ").c_str());

  std::printf("\n### (d) Measured speed-up of the best two-core plan over the best single core\n\n");
  std::printf("| model | best single core | us | best other plan | us | speed-up |\n|---|---|---:|---|---:|---:|\n");
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
  int reps = 5;
  double timeLimit = 2.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
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
          stderr, "usage: bench_profile [MODELS_DIR] [--reps N] [--only b|c] [--models a.onnx,...] [--time-limit S]\n");
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
  if (only.empty() || only == "c") benchPredictedVsMeasured(dir, models, *b, reps, timeLimit);
  return 0;
}
