// partex-cli execute: runs a model with a plan's placement on the real devices, checks its outputs
// against a single-device run and sets the measured makespan beside the simulator's prediction. The
// model runs on its own weights; its inputs are seeded random unless --input gives them, and
// --outputs writes what it computed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/npy.h"
#include "cmd_profile.h"
#include "commands.h"
#include "cost/instances.h"
#include "cost/work.h"
#include "ir/rewrites.h"
#include "onnx/tensorio.h"
#include "plan/fusedkernels.h"
#include "plan/planfile.h"
#include "platform/platform.h"
#include "problem/workloadgraph.h"
#include "profile/executor.h"
#include "sim/simulator.h"
#include "sim/stream.h"
#include "support/files.h"
#include "support/peakrss.h"
#include "support/strings.h"

namespace partex::cli {

namespace {

struct ExecuteArgs {
  std::string model;
  std::string plan;
  std::string platform = "this-machine";
  std::string backend = "auto";
  std::string reference;
  std::vector<std::string> dims;
  std::vector<std::string> inputs;  ///< NAME=FILE
  std::string outputsDir;
  CostSourceArgs costs;
  int reps = 5;
  int spinUs = ExecOptions{}.spinUs;
  int warmup = 1;
  uint64_t seed = 1;
  bool json = false;
  bool streamGiven = false;  ///< --stream N: a stream of N inferences through the plan (issue 29)
  int stream = 0;
  bool inFlightGiven = false;
  int inFlight = 0;
  bool spinGiven = false;
  std::string dispatch;  ///< --dispatch: round-robin (default) or next-free (sim/stream.h)
};

/// The largest --stream: the run keeps each inference's start and end per device.
constexpr int kMaxStream = 100000;

double medianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Writes every model output as DIR/NAME.npy (npyFileName), each atomically.
Status writeOutputs(const Graph& g, const std::vector<Tensor>& outputs, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return makeError(dir, ": cannot create the folder (", ec.message(), ")");
  std::map<std::string, std::string> files;  // file name -> output name
  for (ValueId v : g.outputs) {
    const std::string& name = g.values[static_cast<size_t>(v)].name;
    auto [it, fresh] = files.emplace(npyFileName(name), name);
    if (!fresh && it->second != name)
      return makeError(dir, ": outputs '", it->second, "' and '", name, "' would both be written to ", it->first);
  }
  for (size_t i = 0; i < g.outputs.size() && i < outputs.size(); ++i) {
    const std::string& name = g.values[static_cast<size_t>(g.outputs[i])].name;
    const std::string path = (std::filesystem::path(dir) / npyFileName(name)).string();
    if (auto st = writeNpyFile(path, outputs[i]); !st) return makeError("output '", name, "': ", st.message());
  }
  return Status::ok();
}

/// execute --stream N: N inferences through the plan as a pipeline, measured beside simulateStream's
/// prediction for the same plan and in-flight bound.
int runExecuteStream(const ExecuteArgs& a, const Graph& g, const CostTable& t, const Plan& plan, const Backend& b,
                     std::map<ValueId, Tensor> inputs) {
  if (auto st = checkRunMemory(g); !st) return fail(baseName(a.model) + ": " + st.message());
  StreamExecOptions o;
  o.inferences = a.stream;
  o.inFlight = a.inFlightGiven ? a.inFlight : 0;
  o.warmup = a.warmup > 0;
  o.seed = a.seed;
  o.referenceDevice = a.reference;
  o.inputs = std::move(inputs);
  o.spinUs = a.spinGiven ? a.spinUs : 0;
  ReplicaDispatch dispatch = ReplicaDispatch::RoundRobin;
  if (!a.dispatch.empty()) parseDispatch(a.dispatch, dispatch);  // checked in runExecute
  o.dispatch = dispatch;
  const std::vector<WorkloadPart> parts = workloadParts(g);  // a workload file: one round of its models
  o.keepOpTimes = !parts.empty();
  auto r = executeStream(g, b, t, plan, std::move(o));
  if (!r) return fail(baseName(a.model) + ": " + baseName(a.plan) + ": " + r.message());
  const int64_t peakRss = peakResidentSet().tree();
  StreamOptions so;
  so.inFlight = r->inFlight;
  so.dispatch = dispatch;
  so.keepTimeline = !parts.empty();
  auto pred = simulateStream(t, plan, so);
  if (!pred) return fail(a.plan + ": " + pred.message());
  // A workload: per model, its copies' spans in each steady round (measured; the simulator's over its
  // steady window), and its throughput (the round's times its copies per round; measured: completions over
  // the steady part, the figure bench/stream reports).
  struct ModelFigures {
    std::string name;
    int copies = 0;
    std::vector<double> measured, predicted;
  };
  std::vector<ModelFigures> models;
  if (!parts.empty()) {
    const int n = t.numTasks();
    std::vector<double> ps, pe;
    for (const auto& slot : pred->timeline.tasks) {
      ps.push_back(slot.start);
      pe.push_back(slot.end);
    }
    for (const auto& part : parts) {
      const std::string model = workloadPartModel(part.name);
      auto it = std::find_if(models.begin(), models.end(), [&](const ModelFigures& m) { return m.name == model; });
      if (it == models.end()) it = models.insert(models.end(), ModelFigures{model, 0, {}, {}});
      ++it->copies;
      for (double x : partSpans(part.ops, r->opStartUs, r->opEndUs, n, r->warmupCompletions, r->inferences))
        it->measured.push_back(x);
      for (double x : partSpans(part.ops, ps, pe, n, pred->inferences / 2, pred->inferences - pred->inFlight + 1))
        it->predicted.push_back(x);
    }
  }
  // The prediction at the CPUs' speed during the stream (as execute without --stream does).
  double predPeriodAtRun = -1, predLatencyAtRun = -1;
  {
    bool known = !t.speedProbeUs.empty();
    std::vector<char> used(plan.order.size(), 0);
    for (int k = 0; k < replicaCount(plan); ++k) {
      const Plan q = replicaPlan(plan, k);
      for (size_t d = 0; d < q.order.size() && d < used.size(); ++d)
        if (!q.order[d].empty()) used[d] = 1;
    }
    for (size_t d = 0; d < plan.order.size() && known; ++d)
      if (used[d])
        known = d < t.speedProbeUs.size() && t.speedProbeUs[d] > 0 && d < r->deviceProbeUs.size() &&
                r->deviceProbeUs[d] > 0;
    if (known)
      if (auto s = simulateStream(atRunSpeed(t, r->deviceProbeUs), plan, so)) {
        predPeriodAtRun = s->periodUs;
        predLatencyAtRun = s->latencyUs;
      }
  }
  auto rel = [](double predicted, double measured) { return measured > 0 ? (predicted - measured) / measured : 0.0; };
  const double periodErr = rel(pred->periodUs, r->periodUs), latencyErr = rel(pred->latencyUs, r->latencyMedianUs);
  // Per device of each replica (one replica without them): each steady inference's span there (first
  // start to last end), median over the inferences of that replica, beside the simulator's busy time of
  // one inference of the replica there.
  struct Stage {
    std::string device;
    int replica = 0;
    double measuredSpanUs = 0, measuredBusyUs = 0, predictedBusyUs = 0;
  };
  std::vector<Stage> stages;
  const int R = replicaCount(plan);
  for (int k = 0; k < R; ++k) {
    const Plan q = replicaPlan(plan, k);
    for (size_t d = 0; d < q.order.size(); ++d) {
      if (q.order[d].empty()) continue;
      std::vector<double> spans, busy;
      for (size_t i = static_cast<size_t>(r->warmupCompletions); i < r->stageStartUs.size(); ++i)
        if (i < r->replicaOf.size() && r->replicaOf[i] == k && r->stageStartUs[i][d] >= 0) {
          spans.push_back(r->stageEndUs[i][d] - r->stageStartUs[i][d]);
          busy.push_back(r->stageBusyUs[i][d]);
        }
      if (spans.empty() && r->dispatch == ReplicaDispatch::NextFree) continue;  // a listing of another replica's devices
      const auto& predBusy = static_cast<size_t>(k) < pred->replicaBusy.size() ? pred->replicaBusy[static_cast<size_t>(k)]
                                                                               : pred->busyPerInference;
      stages.push_back({t.deviceIds[d], k, medianOf(spans), medianOf(busy), d < predBusy.size() ? predBusy[d] : 0.0});
    }
  }
  const std::string refDev = a.reference.empty() ? t.deviceIds[static_cast<size_t>(t.host)] : a.reference;
  const std::string bottleneck = pred->bottleneck >= 0 ? t.deviceIds[static_cast<size_t>(pred->bottleneck)] : "";
  if (a.json) {
    nlohmann::json st = nlohmann::json::array();
    for (const auto& s : stages)
      st.push_back({{"device", s.device},
                    {"replica", s.replica},
                    {"measured_span_us", s.measuredSpanUs},
                    {"measured_busy_us", s.measuredBusyUs},
                    {"predicted_busy_us", s.predictedBusyUs}});
    nlohmann::json inf = nlohmann::json::array();
    for (size_t i = 0; i < r->startUs.size(); ++i)
      inf.push_back({{"start_us", r->startUs[i]}, {"end_us", r->endUs[i]}});
    auto orNull = [](double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
    nlohmann::json j = {{"model", baseName(a.model)},
                        {"plan", baseName(a.plan)},
                        {"algorithm", plan.algorithm},
                        {"backend", b.name() + " " + b.version()},
                        {"inferences", r->inferences},
                        {"in_flight", r->inFlight},
                        {"replicas", r->replicas},
                        {"dispatch", dispatchName(r->dispatch)},
                        {"input_sets", r->inputSets},
                        {"warmup_completions", r->warmupCompletions},
                        {"measured_period_us", r->periodUs},
                        {"measured_throughput_per_s", r->throughputPerS},
                        {"measured_steady_throughput_per_s", r->steadyThroughputPerS},
                        {"measured_latency_median_us", r->latencyMedianUs},
                        {"measured_latency_p90_us", r->latencyP90Us},
                        {"measured_check_median_us", r->checkMedianUs},
                        {"measured_wall_us", r->wallUs},
                        {"predicted_period_us", pred->periodUs},
                        {"predicted_throughput_per_s", pred->throughputPerS},
                        {"predicted_latency_us", pred->latencyUs},
                        {"predicted_max_latency_us", pred->maxLatencyUs},
                        {"predicted_single_latency_us", pred->singleLatencyUs},
                        {"predicted_bottleneck", bottleneck},
                        {"period_error", periodErr},
                        {"latency_error", latencyErr},
                        {"predicted_period_at_run_speed_us", orNull(predPeriodAtRun)},
                        {"predicted_latency_at_run_speed_us", orNull(predLatencyAtRun)},
                        {"outputs_match", r->outputsMatch},
                        {"mismatched_inferences", r->mismatchedInferences},
                        {"reference_device", refDev},
                        {"max_abs_diff", r->maxAbsDiff},
                        {"max_rel_diff", r->maxRelDiff},
                        {"cpu_share", r->cpuShare},
                        {"sleeps", r->sleeps},
                        {"omp_wait_policy", r->ompWaitPolicy},
                        {"peak_rss_bytes", peakRss},
                        {"notes", r->notes},
                        {"stages", st},
                        {"inferences_us", inf}};
    if (!r->mismatch.empty()) j["mismatch"] = r->mismatch;
    if (!models.empty()) {
      nlohmann::json jm = nlohmann::json::array();
      for (const auto& m : models)
        jm.push_back({{"model", m.name},
                      {"copies_per_round", m.copies},
                      {"measured_throughput_per_s", r->steadyThroughputPerS * m.copies},
                      {"predicted_throughput_per_s", pred->throughputPerS * m.copies},
                      {"measured_latency_median_us", medianOf(m.measured)},
                      {"predicted_latency_us", medianOf(m.predicted)}});
      j["workload_models"] = jm;
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("Model        %s, plan %s (%s)\n", baseName(a.model).c_str(), baseName(a.plan).c_str(),
                plan.algorithm.c_str());
    std::printf(
        "Stream       %d inferences, at most %d in flight, %d input sets; the first %d completions are the "
        "warm-up\n",
        r->inferences, r->inFlight, r->inputSets, r->warmupCompletions);
    if (r->replicas > 1 && r->dispatch == ReplicaDispatch::NextFree) {
      std::vector<int> share(static_cast<size_t>(r->replicas), 0);
      for (int k : r->replicaOf)
        if (k >= 0 && k < r->replicas) ++share[static_cast<size_t>(k)];
      std::string shares;
      for (int k = 0; k < r->replicas; ++k)
        shares += (k ? ", " : "") + std::to_string(share[static_cast<size_t>(k)]) + " on replica " + std::to_string(k);
      std::printf("Replicas     %d, next free: each inference to the replica free first (%s)\n", r->replicas,
                  shares.c_str());
    } else if (r->replicas > 1) {
      std::printf("Replicas     %d: inference t runs on replica t mod %d (each context on one replica)\n", r->replicas,
                  r->replicas);
    }
    std::printf(
        "Measured     period %.1f us (%.2f inferences/s; %.2f/s over the steady part), latency median %.1f us, "
        "p90 %.1f us\n",
        r->periodUs, r->throughputPerS, r->steadyThroughputPerS, r->latencyMedianUs, r->latencyP90Us);
    if (r->outputsChecked)
      std::printf("Check        %.1f us per inference (median) on the lane that ended it, in the measured period\n",
                  r->checkMedianUs);
    std::printf(
        "Predicted    period %.1f us (%.2f inferences/s), latency %.1f us (simulator, same plan and bound; "
        "bottleneck %s)\n",
        pred->periodUs, pred->throughputPerS, pred->latencyUs, bottleneck.c_str());
    std::printf("Error        period %+.1f%%, latency %+.1f%% (predicted against measured)\n", periodErr * 100.0,
                latencyErr * 100.0);
    if (predPeriodAtRun >= 0)
      std::printf(
          "At run speed period %.1f us (%+.1f%%), latency %.1f us (%+.1f%%) predicted at the CPUs' speed "
          "during the stream\n",
          predPeriodAtRun, rel(predPeriodAtRun, r->periodUs) * 100.0, predLatencyAtRun,
          rel(predLatencyAtRun, r->latencyMedianUs) * 100.0);
    if (r->cpuShare < 0.9)
      std::printf(
          "Note         the lanes got %.0f%% of their cores while they ran (other programs are running): "
          "measured times are stretched\n",
          r->cpuShare * 100.0);
    for (const auto& note : r->notes) std::printf("Warning      %s\n", note.c_str());
    if (r->mismatchedInferences == 0)
      std::printf("Outputs      all %d match the single-device runs on %s (max abs diff %.3g, max rel diff %.3g)\n",
                  r->inferences, refDev.c_str(), r->maxAbsDiff, r->maxRelDiff);
    else
      std::printf("Outputs      %d of %d DIFFER from the single-device runs on %s: %s\n", r->mismatchedInferences,
                  r->inferences, refDev.c_str(), r->mismatch.c_str());
    for (const auto& m : models)
      std::printf(
          "Per model    %s (%d per round): measured %.2f/s over the steady part, latency median %.1f us; predicted "
          "%.2f/s, latency %.1f us\n",
          m.name.c_str(), m.copies, r->steadyThroughputPerS * m.copies, medianOf(m.measured), pred->throughputPerS * m.copies,
          medianOf(m.predicted));
    std::printf("Memory       peak RSS %s (%d contexts of kernels and buffers)\n",
                humanBytes(static_cast<double>(peakRss)).c_str(), std::min(r->inFlight, r->inferences));
    // With replicas, each line is one device of one replica (busy per inference of that replica).
    if (R > 1) {
      std::printf("\n%-14s %8s %16s %16s %18s\n", "device", "replica", "measured_span", "measured_busy",
                  "predicted_busy");
      for (const auto& s : stages)
        std::printf("%-14s %8d %13.1f us %13.1f us %15.1f us\n", s.device.c_str(), s.replica, s.measuredSpanUs,
                    s.measuredBusyUs, s.predictedBusyUs);
    } else {
      std::printf("\n%-14s %16s %16s %18s\n", "device", "measured_span", "measured_busy", "predicted_busy");
      for (const auto& s : stages)
        std::printf("%-14s %13.1f us %13.1f us %15.1f us\n", s.device.c_str(), s.measuredSpanUs, s.measuredBusyUs,
                    s.predictedBusyUs);
    }
  }
  return r->outputsMatch ? 0 : 1;
}

int runExecute(const ExecuteArgs& a) {
  if (a.reps < 1) return fail("--reps must be at least 1");
  if (a.spinUs < 0) return fail("--spin-us must be >= 0");
  if (a.warmup < 0) return fail("--warmup must be >= 0");
  if (a.streamGiven && (a.stream < 1 || a.stream > kMaxStream))
    return fail("--stream must be between 1 and " + std::to_string(kMaxStream) + " inferences, not " +
                std::to_string(a.stream));
  if (a.inFlightGiven && !a.streamGiven) return fail("--in-flight needs --stream N");
  if (a.inFlightGiven && a.inFlight < 1)
    return fail("--in-flight must be at least 1, not " + std::to_string(a.inFlight));
  if (a.streamGiven && !a.outputsDir.empty()) return fail("--outputs cannot be combined with --stream");
  if (!a.dispatch.empty()) {
    ReplicaDispatch d;
    if (!parseDispatch(a.dispatch, d))
      return fail("--dispatch must be round-robin or next-free, not '" + a.dispatch + "'");
    if (!a.streamGiven) return fail("--dispatch needs --stream N");
  }
  auto taskGraph = isTaskGraphFile(a.model);
  if (!taskGraph) return fail(taskGraph.message());
  if (*taskGraph) return fail(a.model + ": a task graph has no operators to execute (an ONNX model is needed)");
  auto plat = loadPlatform(a.platform);
  if (!plat) return fail(plat.message());
  auto g = loadModel(a.model, a.dims);
  if (!g) return fail(g.message());
  const auto work = characteriseAll(*g);
  const GraphWork totals = summarise(*g, work);  // parameter and peak activation bytes, as inspect reports them
  auto t = buildCostTable(*g, work, *plat);
  if (!t) return fail(t.message());
  if (auto st = applyCostSources(a.costs, *t, baseName(a.model), g->graphSha256); !st) return fail(st.message());
  PlanIdentity id{baseName(a.model), g->graphSha256, plat->name};
  auto plan = loadPlanFile(a.plan, *t, id);
  if (!plan) return fail(plan.message());
  if (a.streamGiven && a.inFlightGiven && a.inFlight % replicaCount(*plan) != 0)
    return fail("--in-flight " + std::to_string(a.inFlight) + " must be a multiple of the " +
                std::to_string(replicaCount(*plan)) + " replicas of " + baseName(a.plan) +
                " (each context runs one replica)");
  auto predicted = simulate(*t, *plan);
  if (!predicted) return fail(a.plan + ": " + predicted.message());
  auto inputs = readModelInputs(*g, a.inputs);
  if (!inputs) return fail(inputs.message());

  BackendRegistry reg;
  registerBuiltinBackends(reg);
  const Backend* b = reg.find(a.backend);
  if (!b) return fail("unknown backend '" + a.backend + "'");
  if (a.streamGiven) {
    if (auto st = checkReferenceRunnable(*g, *b); !st)
      return fail(baseName(a.model) + ": " + baseName(a.plan) + ": " + st.message());
    return runExecuteStream(a, *g, *t, *plan, *b, std::move(inputs).value());
  }
  ExecOptions o;
  o.reps = a.reps;
  o.spinUs = a.spinUs;
  o.warmup = a.warmup;
  o.seed = a.seed;
  o.referenceDevice = a.reference;
  o.inputs = std::move(inputs).value();
  o.keepOutputs = !a.outputsDir.empty();
  if (auto st = checkReferenceRunnable(*g, *b); !st)
    return fail(baseName(a.model) + ": " + baseName(a.plan) + ": " + st.message());
  // The run holds the weights alone: each is freed once its kernels copied it.
  if (auto st = handOverWeights(*g, o); !st) return fail(baseName(a.model) + ": " + st.message());
  auto r = executePlan(*g, *b, *t, *plan, std::move(o));
  if (!r) return fail(baseName(a.model) + ": " + baseName(a.plan) + ": " + r.message());
  if (!a.outputsDir.empty())
    if (auto st = writeOutputs(*g, r->outputs, a.outputsDir); !st) return fail(st.message());
  // The process tree's peak, as GNU time and cgroups count it: a forked helper (the this-machine probe,
  // when the calibration was not cached yet) counts once it was waited for.
  const int64_t peakRss = peakResidentSet().tree();

  const double measured = r->makespanUs, pred = predicted->makespan;
  const double err = measured > 0 ? (pred - measured) / measured : 0.0;
  // The prediction at the CPUs' speed during this run: a virtual CPU changes speed in phases (up to 1.5x
  // on this project's VMs), and the profile describes the speed of its moment. Both the profile and the
  // run probe each CPU (cpuSpeedProbeUs); -1 when the costs carry no probe for a device of the plan.
  std::vector<double> speedFactor;
  double predAtRunSpeed = -1;
  {
    bool known = !t->speedProbeUs.empty();
    for (size_t v = 0; v < g->nodes.size() && known; ++v) {
      const auto d = static_cast<size_t>(plan->device[v]);
      known = d < t->speedProbeUs.size() && t->speedProbeUs[d] > 0 && d < r->deviceProbeUs.size() &&
              r->deviceProbeUs[d] > 0;
    }
    if (known) {
      const CostTable atRun = atRunSpeed(*t, r->deviceProbeUs, &speedFactor);
      if (auto tl = simulate(atRun, *plan)) predAtRunSpeed = tl->makespan;
    }
  }
  const double errAtRunSpeed = predAtRunSpeed >= 0 && measured > 0 ? (predAtRunSpeed - measured) / measured : 0.0;
  // Per device of the plan: its CPUs' speed during the run over when profiled ("core1 x1.42": slower).
  nlohmann::json speedJson = nlohmann::json::object();
  std::string speedText;
  for (size_t d = 0; d < speedFactor.size(); ++d) {
    if (plan->order[d].empty()) continue;
    speedJson[t->deviceIds[d]] = speedFactor[d];
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s x%.2f", speedText.empty() ? "" : ", ", t->deviceIds[d].c_str(),
                  speedFactor[d]);
    speedText += buf;
  }
  std::vector<double> opErrors;
  const size_t n = g->nodes.size();
  for (size_t v = 0; v < n; ++v) {
    const double pv = predicted->tasks[v].end - predicted->tasks[v].start;
    if (r->opUs[v] > 0) opErrors.push_back(std::fabs(pv - r->opUs[v]) / r->opUs[v]);
  }
  // A prediction from modelled costs is the device model's guess, not a measurement of this machine:
  // say how much of the plan it covers.
  int modelledOps = 0;
  for (size_t v = 0; v < n; ++v) {
    const size_t idx = v * static_cast<size_t>(t->numDevices()) + static_cast<size_t>(plan->device[v]);
    if (idx < t->provenance.size() && t->provenance[idx] == Provenance::Modelled) ++modelledOps;
  }
  if (modelledOps > 0)
    r->notes.push_back(std::to_string(modelledOps) + " of " + std::to_string(n) +
                       " operators have modelled, not measured, costs on their devices (no --profile covers "
                       "them): the prediction is the device model's estimate");
  const std::string refDev = a.reference.empty() ? t->deviceIds[static_cast<size_t>(t->host)] : a.reference;
  // The kernels the run fused (the executor's fusedInto), against the plan's predicted ones: a kernel
  // the costs did not know was predicted as its operators one by one.
  const std::vector<FusedKernel> ran = kernelsFromFusedInto(r->fusedInto, plan->device);
  const std::vector<int> ranOf = kernelOfTasks(static_cast<int>(n), ran);
  const std::vector<int> predictedOf =
      kernelOfTasks(static_cast<int>(n), fusedKernels(*g, *t, plan->device, &*predicted));
  // A kernel's times are its operators' summed: the measured kernel time sits on its last operator
  // (the others ran in it, 0), the predicted one too when the costs knew the kernel. (Not the span from
  // its first operator's start to its last one's end: other operators may be scheduled in between.)
  struct KernelTimes {
    double predictedUs = 0, measuredUs = 0;
    bool predictedFused = false;
  };
  std::vector<KernelTimes> kernelTimes;
  for (const auto& k : ran) {
    KernelTimes kt;
    const int predictedAs = predictedOf[static_cast<size_t>(k.ops.front())];
    kt.predictedFused = predictedAs >= 0;
    for (TaskId v : k.ops) {
      const auto& slot = predicted->tasks[static_cast<size_t>(v)];
      kt.predictedUs += slot.end - slot.start;
      kt.measuredUs += r->opUs[static_cast<size_t>(v)];
      kt.predictedFused = kt.predictedFused && predictedOf[static_cast<size_t>(v)] == predictedAs;
    }
    kernelTimes.push_back(kt);
  }
  if (a.json) {
    nlohmann::json ops = nlohmann::json::array();
    for (size_t v = 0; v < n; ++v) {
      const auto& s = predicted->tasks[v];
      nlohmann::json outs = nlohmann::json::array(), ins = nlohmann::json::array();
      for (ValueId o : g->nodes[v].outputs) outs.push_back(o >= 0 ? g->values[static_cast<size_t>(o)].name : "");
      // (With the outputs, which operator's tensor each one reads: flow.sh's CPU readers of GPU tensors.)
      for (ValueId i : g->nodes[v].inputs) ins.push_back(i >= 0 ? g->values[static_cast<size_t>(i)].name : "");
      ops.push_back({{"name", g->nodes[v].name},
                     {"op_type", g->nodes[v].opType},
                     {"inputs", ins},
                     {"outputs", outs},
                     {"device", t->deviceIds[static_cast<size_t>(plan->device[v])]},
                     {"measured_us", r->opUs[v]},
                     {"predicted_us", s.end - s.start},
                     {"measured_start_us", r->opStartUs[v]},
                     {"predicted_start_us", s.start},
                     {"fused_into", v < r->fusedInto.size() && r->fusedInto[v] >= 0
                                        ? nlohmann::json(g->nodes[static_cast<size_t>(r->fusedInto[v])].name)
                                        : nlohmann::json(nullptr)}});
    }
    nlohmann::json kernels = nlohmann::json::array();
    for (size_t k = 0; k < ran.size(); ++k) {
      nlohmann::json names = nlohmann::json::array();
      for (TaskId v : ran[k].ops) names.push_back(g->nodes[static_cast<size_t>(v)].name);
      kernels.push_back({{"ops", names},
                         {"rewrite", rewriteName(rewriteOf(*g, std::vector<OpId>(ran[k].ops.begin(), ran[k].ops.end())))},
                         {"device", t->deviceIds[static_cast<size_t>(ran[k].device)]},
                         {"predicted_us", kernelTimes[k].predictedUs},
                         {"measured_us", kernelTimes[k].measuredUs},
                         {"predicted_fused", kernelTimes[k].predictedFused}});
    }
    nlohmann::json j = {{"model", baseName(a.model)},
                        {"plan", baseName(a.plan)},
                        {"algorithm", plan->algorithm},
                        {"backend", b->name() + " " + b->version()},
                        {"reps", a.reps},
                        {"measured_makespan_us", measured},
                        {"measured_makespans_us", r->makespansUs},
                        {"predicted_makespan_us", pred},
                        {"error", err},
                        {"abs_error", std::fabs(err)},
                        {"median_op_abs_error", medianOf(opErrors)},
                        {"outputs_match", r->outputsMatch},
                        {"reference_device", refDev},
                        {"max_abs_diff", r->maxAbsDiff},
                        {"max_rel_diff", r->maxRelDiff},
                        {"cpu_share", r->cpuShare},
                        {"sleeps_per_run", r->sleepsPerRun},
                        {"mode_switches_per_run", r->modeSwitchesPerRun},
                        {"disturbed_runs_discarded", r->discardedRuns},
                        {"disturbed", r->disturbed},
                        {"omp_wait_policy", r->ompWaitPolicy},
                        {"concat_inputs_in_place", r->concatInputsInPlace},
                        {"views_of_inputs", r->viewsOfInputs},
                        {"peak_rss_bytes", peakRss},
                        {"param_bytes", totals.paramBytes},
                        {"peak_activation_bytes", totals.peakActivationBytes},
                        {"planned_activation_bytes", r->plannedActivationBytes},
                        {"notes", r->notes},
                        {"ops", ops},
                        {"fused_kernels", kernels}};
    if (!r->mismatch.empty()) j["mismatch"] = r->mismatch;
    // null where the costs carry no speed probe for a device of the plan (a modelled or imported cost).
    j["predicted_at_run_speed_us"] = predAtRunSpeed >= 0 ? nlohmann::json(predAtRunSpeed) : nlohmann::json(nullptr);
    j["error_at_run_speed"] = predAtRunSpeed >= 0 ? nlohmann::json(errAtRunSpeed) : nlohmann::json(nullptr);
    j["cpu_speed_vs_profile"] = speedJson;
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("Model        %s, plan %s (%s)\n", baseName(a.model).c_str(), baseName(a.plan).c_str(),
                plan->algorithm.c_str());
    std::printf("Measured     %.1f us (median of %d runs)\n", measured, a.reps);
    std::printf("Predicted    %.1f us (simulator)\n", pred);
    std::printf("Error        %+.1f%% (predicted against measured); median per-operator error %.1f%%\n", err * 100.0,
                medianOf(opErrors) * 100.0);
    if (predAtRunSpeed >= 0)
      std::printf(
          "At run speed %.1f us predicted, %+.1f%%: the CPUs ran at %s their speed when profiled (time "
          "ratio; a virtual CPU changes speed in phases)\n",
          predAtRunSpeed, errAtRunSpeed * 100.0, speedText.c_str());
    if (r->discardedRuns > 0)
      std::printf(
          "Disturbed    %d runs discarded and repeated: other programs took the CPUs (cpu share below %.0f%%)\n",
          r->discardedRuns, ExecOptions{}.minCpuShare * 100.0);
    if (r->cpuShare < 0.9)
      std::printf(
          "Note         the kernels' threads got %.0f%% of their cores (other programs are running): measured times "
          "are stretched\n",
          r->cpuShare * 100.0);
    if (r->modeSwitchesPerRun > 0)
      std::printf("Switches     %d per run between the per-core devices and the OpenMP team of a multi-thread device\n",
                  r->modeSwitchesPerRun);
    if (r->sleepsPerRun > 0)
      std::printf(
          "Waits        %.1f per run outlasted the %d us spin and slept (a wake-up the simulator does not "
          "predict; see --spin-us)\n",
          r->sleepsPerRun, a.spinUs);
    for (const auto& note : r->notes) std::printf("Warning      %s\n", note.c_str());
    std::printf("Outputs      %s single-device run on %s (max abs diff %.3g, max rel diff %.3g)%s%s\n",
                r->outputsMatch ? "match the" : "DIFFER from the", refDev.c_str(), r->maxAbsDiff, r->maxRelDiff,
                r->mismatch.empty() ? "" : ": ", r->mismatch.c_str());
    if (!a.outputsDir.empty()) std::printf("Written      %zu outputs to %s\n", g->outputs.size(), a.outputsDir.c_str());
    std::printf("Memory       peak RSS %s; parameters %s, peak activations %s\n",
                humanBytes(static_cast<double>(peakRss)).c_str(),
                humanBytes(static_cast<double>(totals.paramBytes)).c_str(),
                humanBytes(static_cast<double>(totals.peakActivationBytes)).c_str());
    std::printf("\n%-32s %-12s %12s %12s %8s  %s\n", "operator", "device", "measured_us", "predicted_us", "error",
                "fused");
    for (size_t v = 0; v < n; ++v) {
      const double pv = predicted->tasks[v].end - predicted->tasks[v].start;
      // "k3": ran inside fused kernel 3 (listed below), whose time is on its last operator.
      const std::string fused = ranOf[v] >= 0 ? "k" + std::to_string(ranOf[v] + 1) : std::string();
      std::printf("%-32.32s %-12s %12.1f %12.1f %+7.1f%%  %s\n", g->nodes[v].name.c_str(),
                  t->deviceIds[static_cast<size_t>(plan->device[v])].c_str(), r->opUs[v], pv,
                  r->opUs[v] > 0 ? (pv - r->opUs[v]) / r->opUs[v] * 100.0 : 0.0, fused.c_str());
    }
    if (ran.empty()) {
      std::printf("\nFused kernels: none (every operator ran as its own kernel)\n");
    } else {
      size_t fusedOps = 0, unpredicted = 0;
      for (size_t k = 0; k < ran.size(); ++k) {
        fusedOps += ran[k].ops.size();
        if (!kernelTimes[k].predictedFused) ++unpredicted;
      }
      std::printf("\nFused kernels: %zu ran %zu operators", ran.size(), fusedOps);
      if (unpredicted > 0)
        std::printf(" (%zu predicted as separate operators: the costs did not know them; see --profile)", unpredicted);
      std::printf("\n%-5s %-12s %12s %12s  %s\n", "", "device", "measured_us", "predicted_us", "operators");
      for (size_t k = 0; k < ran.size(); ++k) {
        std::string names;
        for (TaskId v : ran[k].ops) names += (names.empty() ? "" : " + ") + g->nodes[static_cast<size_t>(v)].name;
        // A graph rewrite (ir/rewrites.h) says which: "gelu: a + b + c".
        const std::string rw = rewriteName(rewriteOf(*g, std::vector<OpId>(ran[k].ops.begin(), ran[k].ops.end())));
        if (!rw.empty()) names = rw + ": " + names;
        std::printf("%-5s %-12s %12.1f %12.1f  %s%s\n", ("k" + std::to_string(k + 1)).c_str(),
                    t->deviceIds[static_cast<size_t>(ran[k].device)].c_str(), kernelTimes[k].measuredUs,
                    kernelTimes[k].predictedUs, names.c_str(), kernelTimes[k].predictedFused ? "" : "  (unpredicted)");
      }
    }
  }
  return r->outputsMatch ? 0 : 1;
}

}  // namespace

void addExecute(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("execute", "Run a model with a plan on the real devices; measured against predicted");
  auto a = std::make_shared<ExecuteArgs>();
  cmd->add_option("model", a->model, "ONNX model")->required();
  cmd->add_option("--plan", a->plan, "Plan file (JSON)")->required();
  cmd->add_option("--platform,-p", a->platform, "Platform the plan was made for")->capture_default_str();
  cmd->add_option("--backend", a->backend, "Execution backend: cpu, cuda, or auto (every backend of this machine: cpu, with cuda where there is an NVIDIA GPU)")->capture_default_str();
  cmd->add_option("--reference", a->reference, "Device of the single-device reference run (default: the host)");
  cmd->add_option("--reps", a->reps, "Timed runs")->capture_default_str();
  auto* spinOpt =
      cmd->add_option("--spin-us", a->spinUs,
                      "How long a worker waiting for an input spins before it sleeps (waking a sleeper costs tens "
                      "of microseconds; with --stream the default is 0: a stage waiting for another sleeps)")
          ->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "Untimed runs before them")->capture_default_str();
  cmd->add_option("--seed", a->seed,
                  "Seed of the synthetic model inputs (and of weights a model lacks, e.g. external data "
                  "without its folder)")
      ->capture_default_str();
  cmd->add_option("--dim", a->dims, "Bind a symbolic input dimension: NAME=VALUE or INPUT:AXIS=VALUE");
  cmd->add_option("--input", a->inputs,
                  "Feed model input NAME from FILE: NumPy .npy or ONNX TensorProto .pb, of the input's dtype and "
                  "shape (NAME=FILE; repeatable; inputs not given are seeded random)");
  cmd->add_option("--outputs", a->outputsDir,
                  "Write every model output as DIR/NAME.npy (characters outside [A-Za-z0-9_.-] become _)");
  auto* streamOpt = cmd->add_option(
      "--stream", a->stream,
      "Run N inferences through the plan as a pipeline (inference t+1 enters a device while t is on a later "
      "one) and report the measured period and latency beside the simulator's (--reps is not used)");
  auto* inFlightOpt = cmd->add_option(
      "--in-flight", a->inFlight,
      "With --stream: inferences in the system at once (default: the simulator's, the devices the plan uses + 1)");
  cmd->add_option("--dispatch", a->dispatch,
                  "With --stream and a plan with replicas: round-robin (inference t on replica t mod R, the "
                  "default) or next-free (each inference to the replica free first; replicas on disjoint CPUs)");
  addCostSourceOptions(cmd, a->costs);
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->callback([a, &exitCode, streamOpt, inFlightOpt, spinOpt] {
    a->streamGiven = streamOpt->count() > 0;
    a->inFlightGiven = inFlightOpt->count() > 0;
    a->spinGiven = spinOpt->count() > 0;
    exitCode = runExecute(*a);
  });
}

}  // namespace partex::cli
