// partex-cli profile: measures a model's operators on real devices and writes a profile file; and the
// --profile / --import-ort options through which the scheduling commands use measured costs.
#include "cmd_profile.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "commands.h"
#include "onnx/tensorio.h"
#include "profile/ortprofile.h"
#include "profile/profile.h"
#include "profile/profiler.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex::cli {

namespace {

std::atomic<bool> gCancel{false};
extern "C" void onInterrupt(int) {
  gCancel.store(true);
}

/// A short list for notes: the first few names and a count.
std::string listSome(const std::vector<std::string>& names, size_t max = 5) {
  std::vector<std::string> head(names.begin(),
                                names.begin() + static_cast<std::ptrdiff_t>(std::min(max, names.size())));
  std::string s = join(head, ", ");
  if (names.size() > max) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

void printReport(const std::string& file, const ApplyReport& r, const CostTable& t) {
  std::cerr << "partex-cli: note: " << baseName(file) << ": " << r.opsApplied << " operator times applied";
  if (r.groupsApplied) std::cerr << ", " << r.groupsApplied << " group times";
  if (r.pairsApplied) std::cerr << ", " << r.pairsApplied << " transfer models";
  std::cerr << "\n";
  if (!r.unmatchedProfileOps.empty())
    std::cerr << "partex-cli: note: " << baseName(file) << ": " << r.unmatchedProfileOps.size()
              << " profiled nodes are not in the model: " << listSome(r.unmatchedProfileOps) << "\n";
  if (!r.unprofiledOps.empty() && static_cast<int>(r.unprofiledOps.size()) < t.numTasks() * t.numDevices())
    std::cerr << "partex-cli: note: " << baseName(file) << ": " << r.unprofiledOps.size()
              << " model operators have no time in it and keep their modelled cost: " << listSome(r.unprofiledOps)
              << "\n";
  if (!r.typeMismatches.empty())
    std::cerr << "partex-cli: note: " << baseName(file) << ": op types differ for " << listSome(r.typeMismatches, 3)
              << "\n";
  for (const auto& n : r.notes) std::cerr << "partex-cli: note: " << n << "\n";
}

struct ProfileArgs {
  std::string model;
  std::vector<std::string> dims;
  std::string devices;
  std::string backend = "auto";
  std::string output;
  int reps = 10;
  int warmup = 2;
  uint64_t seed = 1;
  std::vector<std::string> inputs;  ///< NAME=FILE
  bool groups = false;
  int maxGroup = 3;
  bool transfers = false;
  bool minimal = false;
  std::string method = "in-context";
  bool methodGiven = false;  ///< --method was on the command line.
  bool force = false;
  bool json = false;
  bool quiet = false;
};

int runProfile(const ProfileArgs& a) {
  if (a.reps < 1) return fail("--reps must be at least 1");
  if (a.warmup < 0) return fail("--warmup must be >= 0");
  auto g = loadModel(a.model, a.dims);
  if (!g) return fail(g.message());
  BackendRegistry reg;
  registerBuiltinBackends(reg);
  const Backend* b = reg.find(a.backend);
  if (!b) {
    std::vector<std::string> names;
    for (auto* x : reg.all()) names.push_back(x->name());
    return fail("unknown backend '" + a.backend + "' (backends: " + join(names, ", ") + ")");
  }
  ProfilerOptions o;
  for (const auto& d : split(a.devices, ','))
    if (!trim(d).empty()) o.devices.push_back(trim(d));
  if (o.devices.empty())
    for (const auto& d : b->devices()) o.devices.push_back(d.id);
  o.reps = a.reps;
  o.warmup = a.warmup;
  o.seed = a.seed;
  auto given = readModelInputs(*g, a.inputs);
  if (!given) return fail(given.message());
  o.inputs = std::move(*given);
  o.groups = a.groups;
  o.maxGroup = a.maxGroup;
  o.transfers = a.transfers;
  if (a.minimal && a.methodGiven && a.method != "minimal")
    return fail("--minimal and --method " + a.method + " contradict each other");
  if (a.minimal || a.method == "minimal")
    o.method = ProfilerOptions::Method::MinimalPlan;
  else if (a.method == "in-context")
    o.method = ProfilerOptions::Method::InContext;
  else if (a.method == "per-operator")
    o.method = ProfilerOptions::Method::PerOperator;
  else
    return fail("unknown --method '" + a.method + "' (methods: per-operator, in-context, minimal)");

  // Reuse: an existing output file measured for this model, backend version and these devices.
  // (A profile measured on given inputs is measured again: the file does not record which inputs.)
  if (!a.force && a.inputs.empty() && !a.output.empty() && access(a.output.c_str(), F_OK) == 0) {
    auto old = loadProfileFile(a.output);
    std::string why;
    bool fits = old && profileMatches(*old, *g, *b, o.devices, &why);
    const bool hasGroups = old && std::any_of(old->devices.begin(), old->devices.end(),
                                              [](const ProfileDevice& d) { return !d.groups.empty(); });
    if (fits && old->reps < a.reps)
      fits = false, why = "it has " + std::to_string(old->reps) + " timed runs per measurement";
    if (fits && old->method != methodName(o.method)) fits = false, why = "it was measured by " + old->method;
    if (fits && a.groups && !hasGroups) fits = false, why = "it has no group times";
    if (fits && a.transfers && old->transfers.empty()) fits = false, why = "it has no transfer times";
    if (!old) why = old.message();
    if (fits) {
      if (a.json)
        std::cout << nlohmann::json{{"reused", true}, {"file", a.output}, {"measured_at", old->measuredAt}}.dump(2)
                  << "\n";
      else
        std::printf("Reusing %s (measured %s for this model, backend %s %s; --force measures again)\n",
                    a.output.c_str(), old->measuredAt.c_str(), old->backendName.c_str(), old->backendVersion.c_str());
      return 0;
    }
    if (!a.quiet) std::cerr << "partex-cli: note: " << a.output << " is stale (" << why << "): measuring again\n";
  }

  const bool tty = isatty(STDERR_FILENO) != 0;
  int lastPercent = -1;
  o.progress = [&](int done, int total, const std::string& what) {
    if (a.quiet) return;
    const int percent = total > 0 ? done * 100 / total : 100;
    if (tty) {
      std::fprintf(stderr, "\r[%3d%%] %-70.70s", percent, what.c_str());
      if (done == total) std::fprintf(stderr, "\n");
    } else if (percent / 10 != lastPercent / 10) {
      std::fprintf(stderr, "partex-cli: profiling %d%% (%s)\n", percent, what.c_str());
    }
    lastPercent = percent;
  };
  gCancel.store(false);
  o.cancel = &gCancel;
  auto previous = std::signal(SIGINT, onInterrupt);
  ProfilerInfo info;
  auto p = profileModel(*g, *b, o, &info);
  std::signal(SIGINT, previous);
  if (tty && !a.quiet) std::fprintf(stderr, "\n");
  if (!p) return fail(baseName(a.model) + ": profiling " + (gCancel.load() ? std::string("cancelled") : p.message()));
  if (!a.output.empty())
    if (auto st = saveProfile(a.output, *p); !st) return fail(st.message());
  const int runs = p->profilingRuns;
  if (a.json) {
    nlohmann::json devs = nlohmann::json::array();
    for (const auto& d : p->devices) {
      double sum = 0;
      for (const auto& op : d.ops) sum += op.time.medianUs;
      devs.push_back({{"id", d.id}, {"ops", d.ops.size()}, {"groups", d.groups.size()}, {"sum_of_medians_us", sum}});
    }
    nlohmann::json j = {{"model", baseName(a.model)},
                        {"backend", b->name() + " " + b->version()},
                        {"method", p->method},
                        {"seconds", info.seconds},
                        {"measurements", info.measurements},
                        {"devices", devs},
                        {"skipped", info.skipped},
                        {"disturbed_runs_discarded", info.disturbedRunsDiscarded},
                        {"notes", info.notes},
                        {"transfers", p->transfers.size()},
                        {"output", a.output}};
    if (runs) j["profiling_runs"] = runs;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("Model        %s (%zu operators)\n", baseName(a.model).c_str(), g->nodes.size());
  std::printf("Backend      %s %s\n", b->name().c_str(), b->version().c_str());
  std::printf("Method       %s, %d warm-up + %d timed runs each\n", p->method.c_str(), a.warmup, a.reps);
  if (runs) std::printf("Profiling    %d whole-model runs (PIM minimal plan: #devices + 1)\n", runs);
  std::printf("Time         %.2f s, %d timed kernel runs\n", info.seconds, info.measurements);
  std::printf("\n%-14s %6s %8s %16s\n", "device", "ops", "groups", "sum_median_us");
  for (const auto& d : p->devices) {
    double sum = 0;
    for (const auto& op : d.ops) sum += op.time.medianUs;
    std::printf("%-14s %6zu %8zu %16.1f\n", d.id.c_str(), d.ops.size(), d.groups.size(), sum);
  }
  for (const auto& t : p->transfers) {
    auto [lat, bpu] = fitTransfer(t.samples);
    std::printf("transfer %s -> %s: %zu sizes, latency %.2f us, %.2f GB/s\n", t.from.c_str(), t.to.c_str(),
                t.samples.size(), lat, bpu / 1e3);
  }
  if (!info.skipped.empty())
    std::printf("Skipped      %zu (%s)\n", info.skipped.size(), listSome(info.skipped, 3).c_str());
  if (info.disturbedRunsDiscarded > 0)
    std::printf("Disturbed    %d whole-model runs discarded and repeated (other programs took the CPUs)\n",
                info.disturbedRunsDiscarded);
  for (const auto& note : info.notes) std::printf("Warning      %s\n", note.c_str());
  if (!a.output.empty()) std::printf("Wrote        %s\n", a.output.c_str());
  return 0;
}

}  // namespace

void addCostSourceOptions(CLI::App* cmd, CostSourceArgs& a) {
  cmd->add_option("--profile", a.profiles, "Measured costs: a profile file from 'partex-cli profile' (repeatable)");
  cmd->add_option("--import-ort", a.ortFiles,
                  "Imported costs: an ONNX Runtime profiling JSON (repeatable; needs --device)");
  cmd->add_option("--device", a.ortDevice, "Device the --import-ort times are for");
  cmd->add_option("--ort-provider", a.ortProvider,
                  "Keep only this execution provider's events (e.g. CPUExecutionProvider)");
}

Status applyCostSources(const CostSourceArgs& a, CostTable& t, const std::string& modelFile,
                        const std::string& modelSha) {
  for (const auto& file : a.profiles) {
    auto p = loadProfileFile(file);
    if (!p) return Error{p.message()};
    auto r = applyCostSource(t, *p, false, modelFile, modelSha, file);
    if (!r) return Error{r.message()};
    printReport(file, *r, t);
  }
  if (!a.ortFiles.empty() && a.ortDevice.empty())
    return makeError("--import-ort needs --device ID (the device the times were measured on)");
  if (a.ortFiles.empty() && !a.ortDevice.empty()) return makeError("--device is only used with --import-ort");
  for (const auto& file : a.ortFiles) {
    OrtImportInfo info;
    auto p = loadOrtProfileFile(file, a.ortDevice, a.ortProvider, &info);
    if (!p) return Error{p.message()};
    auto r = applyCostSource(t, *p, true, modelFile, modelSha, file);
    if (!r) return Error{r.message()};
    printReport(file, *r, t);
    if (!info.otherProviders.empty())
      std::cerr << "partex-cli: note: " << baseName(file) << ": " << info.otherProviders.size()
                << " node events of other providers skipped: " << listSome(info.otherProviders) << "\n";
  }
  return Status::ok();
}

void addProfile(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("profile", "Measure every operator on real devices and write a profile (JSON)");
  auto a = std::make_shared<ProfileArgs>();
  cmd->add_option("model", a->model, "ONNX model")->required();
  cmd->add_option("--devices", a->devices, "Comma-separated device ids (default: all of the backend's)");
  cmd->add_option("--backend", a->backend, "Execution backend: cpu, cuda, or auto (every backend of this machine: cpu, with cuda where there is an NVIDIA GPU)")->capture_default_str();
  cmd->add_option("-o,--output", a->output, "Profile file to write (reused when it matches)");
  cmd->add_option("--reps", a->reps, "Timed runs per measurement")->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "Untimed runs before them")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of the synthetic model inputs (weights are the model's own)")
      ->capture_default_str();
  cmd->add_option("--input", a->inputs,
                  "Feed model input NAME from FILE (NAME=FILE, .npy or .pb, repeatable), as execute does: "
                  "data-dependent operators (If, Loop) are then measured on the path this data takes; others are "
                  "seeded random. A profile measured on given inputs is never reused");
  cmd->add_option("--dim", a->dims, "Bind a symbolic input dimension: NAME=VALUE or INPUT:AXIS=VALUE");
  cmd->add_flag("--groups", a->groups, "Also measure fused groups of consecutive operators");
  cmd->add_option("--max-group", a->maxGroup, "Largest group size")->capture_default_str();
  cmd->add_flag("--transfers", a->transfers, "Also measure transfers between every pair of devices");
  auto* methodOpt =
      cmd->add_option("--method", a->method,
                      "per-operator: each operator alone, repeated on hot caches; in-context: each operator timed "
                      "inside whole-model runs on each device (predicts whole runs best); minimal: the PIM paper's "
                      "minimal plan, in-context runs plus one crossing run for transfers (#devices + 1 runs)")
          ->capture_default_str();
  cmd->add_flag("--minimal", a->minimal, "Same as --method minimal");
  cmd->add_flag("--force", a->force, "Measure even when the output file matches");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress on stderr");
  cmd->add_flag("--json", a->json, "Print a JSON summary");
  cmd->callback([a, methodOpt, &exitCode] {
    a->methodGiven = methodOpt->count() > 0;
    exitCode = runProfile(*a);
  });
}

}  // namespace partex::cli
