// partex-cli algos | schedule | simulate | compare: the scheduling engine on the command line.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "cmd_profile.h"
#include "commands.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "onnx/importer.h"
#include "plan/exports.h"
#include "plan/fusedkernels.h"
#include "plan/move.h"
#include "plan/planfile.h"
#include "platform/platform.h"
#include "sched/compare.h"
#include "sched/llamarules.h"
#include "sched/offload.h"
#include "sched/scheduler.h"
#include "sim/memory.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex::cli {

namespace {

/// Common options of the scheduling subcommands.
struct ProblemArgs {
  std::string model;
  std::string platform;
  std::vector<std::string> dims;
  std::vector<std::string> pins;
  std::vector<std::string> params;
  double timeLimit = 10.0;
  bool unlimitedLinks = false;
  bool json = false;
  bool opOffload = false;  ///< --op-offload: llama.cpp's prefill op offload in the costs (withOpOffload).
  std::string objective = "latency";  ///< --objective: latency or throughput (sim/stream.h).
  double latencyBound = 0;            ///< --latency-bound: us per inference under the throughput objective.
  InstanceOptions instance;  ///< --wf-one-per-machine: how a WfCommons workflow's machines are read.
  CostSourceArgs costs;  ///< --profile, --import-ort: measured or imported costs over the modelled ones.
};

void addProblemOptions(CLI::App* cmd, ProblemArgs& a) {
  cmd->add_option("model", a.model, "ONNX model or JSON task graph")->required();
  cmd->add_option("--platform,-p", a.platform, "Platform preset name or platform JSON file (optional for task graphs)");
  cmd->add_option("--dim", a.dims, "Bind a symbolic input dimension: NAME=VALUE or INPUT:AXIS=VALUE");
  cmd->add_option("--pin", a.pins, "Pin an operator: OP=DEVICE");
  cmd->add_option("--param", a.params, "Algorithm parameter KEY=VALUE (e.g. priority=npu,cpu)");
  cmd->add_option("--time-limit", a.timeLimit,
                  "Seconds an algorithm may run; it then returns its best plan so far (compare: per algorithm)")
      ->capture_default_str();
  cmd->add_flag("--unlimited-links", a.unlimitedLinks, "Transfers never wait for a link (classic HEFT model)");
  cmd->add_flag("--json", a.json, "Print JSON");
  cmd->add_flag("--wf-one-per-machine", a.instance.wfOnePerMachine,
                "WfCommons workflows: one processor per recorded machine, as SAGA reads them (default: one per core)");
  cmd->add_flag("--op-offload", a.opOffload,
                "Language models: cost llama.cpp's prefill op offload (a batch of 32 tokens or more runs the matrix "
                "products of host weights on the GPU, copying the weights per 512-token micro-batch)");
  cmd->add_option("--objective", a.objective,
                  "latency (one inference's makespan) or throughput (the period of a stream of inferences: "
                  "best and pipeline optimise it; every plan is judged by it)")
      ->capture_default_str();
  cmd->add_option("--latency-bound", a.latencyBound,
                  "Under --objective throughput: each inference's latency at most this many microseconds");
  addCostSourceOptions(cmd, a.costs);
}

Result<Problem> loadProblem(const ProblemArgs& a) { return cli::loadProblem(a.model, a.platform, a.dims, a.instance); }

/// loadProblem() with the profiles and imports applied to the cost table.
Result<Problem> loadCostedProblem(const ProblemArgs& a) {
  auto p = loadProblem(a);
  if (!p) return p;
  if (auto st = applyCostSources(a.costs, p->table, p->id.modelFile, p->id.modelSha256); !st) return Error{st.message()};
  if (a.opOffload) {
    const LlamaTensors m = llamaTensors(p->table);
    const DeviceId accel = defaultAccelerator(p->table);
    if (m.layers == 0) return makeError("--op-offload: '", p->table.name, "' has no layer names (a language model's tensors)");
    if (accel < 0) return makeError("--op-offload: the platform has no GPU beside the host");
    OpOffloadOptions oo;
    oo.tokens = tokensOf(p->table, m);
    p->table = withOpOffload(p->table, m, accel, oo);
  }
  return p;
}

/// The --pin options as constraints. Whether an operator may be placed on a device is core's rule
/// (plan/move.h), the one the GUI's moves follow: the refusal gives the platform's reason.
Result<Constraints> parsePins(const Problem& p, const std::vector<std::string>& pins) {
  const CostTable& t = p.table;
  PlacementContext ctx;
  ctx.graph = p.graph ? &*p.graph : nullptr;
  ctx.platform = p.platform ? &*p.platform : nullptr;
  Constraints c;
  for (const auto& pin : pins) {
    auto eq = pin.rfind('=');
    if (eq == std::string::npos) return makeError("--pin ", pin, ": expected OP=DEVICE");
    std::string op = pin.substr(0, eq), dev = pin.substr(eq + 1);
    auto it = std::find(t.taskNames.begin(), t.taskNames.end(), op);
    if (it == t.taskNames.end()) return makeError("--pin ", pin, ": no operator named '", op, "'");
    auto dt = std::find(t.deviceIds.begin(), t.deviceIds.end(), dev);
    if (dt == t.deviceIds.end()) return makeError("--pin ", pin, ": no device '", dev, "' (devices: ", join(t.deviceIds, ", "), ")");
    auto v = static_cast<TaskId>(it - t.taskNames.begin());
    auto d = static_cast<DeviceId>(dt - t.deviceIds.begin());
    if (auto st = checkPlacement(t, v, d, ctx); !st) return makeError("--pin ", pin, ": ", st.message());
    c.pinned[v] = d;
  }
  return c;
}

Result<SchedOptions> parseOptions(const ProblemArgs& a) {
  SchedOptions o;
  o.timeLimitSec = a.timeLimit;
  o.sim.unlimitedLinks = a.unlimitedLinks;
  if (!parseObjective(a.objective, o.objective))
    return makeError("--objective ", a.objective, ": expected latency or throughput");
  if (!(a.latencyBound >= 0) || !std::isfinite(a.latencyBound))
    return makeError("--latency-bound ", std::to_string(a.latencyBound), ": expected a non-negative number of microseconds");
  if (a.latencyBound > 0 && o.objective != Objective::Throughput)
    return makeError("--latency-bound applies to --objective throughput");
  o.latencyBoundUs = a.latencyBound;
  for (const auto& kv : a.params) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return makeError("--param ", kv, ": expected KEY=VALUE");
    o.params[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return o;
}

std::string algoList() {
  std::vector<std::string> names;
  for (const auto& s : allSchedulers()) names.push_back(s->name());
  return join(names, ", ");
}

void printTimeline(const CostTable& t, const Timeline& tl, const std::string& algo) {
  std::printf("Algorithm    %s\n", algo.c_str());
  std::printf("Makespan     %.3f us\n", tl.makespan);
  std::printf("Transfers    %zu (%s moved)\n", tl.transfers.size(), humanBytes(static_cast<double>(tl.bytesMoved)).c_str());
  std::printf("\n%-16s %8s %12s %8s %14s\n", "device", "ops", "busy_us", "util", "peak_bytes");
  std::vector<int> count(static_cast<size_t>(t.numDevices()), 0);
  for (const auto& s : tl.tasks) ++count[static_cast<size_t>(s.device)];
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    std::printf("%-16s %8d %12.3f %7.1f%% %14lld%s\n", t.deviceIds[static_cast<size_t>(d)].c_str(), count[static_cast<size_t>(d)],
                tl.busy[static_cast<size_t>(d)], tl.utilisation[static_cast<size_t>(d)] * 100.0,
                static_cast<long long>(tl.peakBytes[static_cast<size_t>(d)]), tl.overCapacity[static_cast<size_t>(d)] ? "  OVER CAPACITY" : "");
}

/// A stream's figures (sim/stream.h), for --objective throughput.
void printStream(const CostTable& t, const StreamResult& s) {
  std::printf("Stream       period %.3f us (%.1f inferences/s), latency %.3f us (one alone: %.3f us), %d in flight\n",
              s.periodUs, s.throughputPerS, s.latencyUs, s.singleLatencyUs, s.inFlight);
  if (s.replicas > 1)
    std::printf("Replicas     %d: inference t runs on replica t mod %d (busy per inference averaged over them)\n",
                s.replicas, s.replicas);
  if (s.bottleneck >= 0)
    std::printf("Bottleneck   %s (%.3f us busy per inference)\n", t.deviceIds[static_cast<size_t>(s.bottleneck)].c_str(),
                s.busyPerInference[static_cast<size_t>(s.bottleneck)]);
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    if (s.overCapacity[static_cast<size_t>(d)])
      std::printf("Stream memory %s: %s live at the peak, OVER CAPACITY\n", t.deviceIds[static_cast<size_t>(d)].c_str(),
                  humanBytes(static_cast<double>(s.peakBytes[static_cast<size_t>(d)])).c_str());
}

nlohmann::json streamJson(const CostTable& t, const StreamResult& s) {
  nlohmann::json j = {{"period_us", s.periodUs},       {"throughput_per_s", s.throughputPerS},
                      {"latency_us", s.latencyUs},     {"max_latency_us", s.maxLatencyUs},
                      {"single_latency_us", s.singleLatencyUs}, {"in_flight", s.inFlight},
                      {"inferences_simulated", s.inferences}, {"replicas", s.replicas}};
  j["bottleneck"] = s.bottleneck >= 0 ? nlohmann::json(t.deviceIds[static_cast<size_t>(s.bottleneck)]) : nlohmann::json(nullptr);
  nlohmann::json dev = nlohmann::json::array();
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    dev.push_back({{"device", t.deviceIds[static_cast<size_t>(d)]},
                   {"busy_per_inference_us", s.busyPerInference[static_cast<size_t>(d)]},
                   {"peak_bytes", s.peakBytes[static_cast<size_t>(d)]},
                   {"over_capacity", static_cast<bool>(s.overCapacity[static_cast<size_t>(d)])}});
  j["devices"] = dev;
  return j;
}

/// Each device's memory (sim/memory.h): weights, the peak and its parts, the capacity. Shown when the
/// model has weights or a device a capacity (task graphs without limits have nothing to show).
void printMemory(const CostTable& t, const Plan& plan, const Timeline& tl) {
  if (t.weightBytes.empty() && !hasCapacityLimits(t)) return;
  const std::vector<DeviceMemory> mem = deviceMemory(t, plan, tl);
  std::printf("\n%-16s %12s %12s %12s %12s %12s\n", "memory", "weights", "activations", "received", "peak", "capacity");
  auto b = [](int64_t x) { return humanBytes(static_cast<double>(x)); };
  for (DeviceId d = 0; d < t.numDevices(); ++d) {
    const DeviceMemory& dm = mem[static_cast<size_t>(d)];
    std::printf("%-16s %12s %12s %12s %12s %12s%s\n", t.deviceIds[static_cast<size_t>(d)].c_str(), b(dm.weights).c_str(),
                b(dm.activations + dm.workspace).c_str(), b(dm.received).c_str(), b(dm.peak).c_str(),
                dm.capacity > 0 ? b(dm.capacity).c_str() : "unlimited", dm.over ? "  OVER CAPACITY" : "");
  }
}

/// timelineJson's devices with each one's memory (memoryFields) added.
void addMemoryJson(const CostTable& t, const Plan& plan, const Timeline& tl, nlohmann::json& j) {
  const std::vector<DeviceMemory> mem = deviceMemory(t, plan, tl);
  for (DeviceId d = 0; d < t.numDevices(); ++d) {
    auto& dj = j["devices"][static_cast<size_t>(d)];
    for (const auto& [key, bytes] : memoryFields(mem[static_cast<size_t>(d)])) dj[key] = bytes;
  }
}

nlohmann::json timelineJson(const CostTable& t, const Timeline& tl, const std::string& algo) {
  nlohmann::json devices = nlohmann::json::array();
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    devices.push_back({{"id", t.deviceIds[static_cast<size_t>(d)]},
                       {"busy_us", tl.busy[static_cast<size_t>(d)]},
                       {"utilisation", tl.utilisation[static_cast<size_t>(d)]},
                       {"peak_bytes", tl.peakBytes[static_cast<size_t>(d)]},
                       {"over_capacity", static_cast<bool>(tl.overCapacity[static_cast<size_t>(d)])}});
  nlohmann::json ops = nlohmann::json::array();
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const auto& s = tl.tasks[static_cast<size_t>(v)];
    ops.push_back({{"name", t.taskNames[static_cast<size_t>(v)]},
                   {"device", t.deviceIds[static_cast<size_t>(s.device)]},
                   {"start_us", s.start},
                   {"end_us", s.end}});
  }
  return {{"algo", algo},         {"makespan_us", tl.makespan}, {"transfers", tl.transfers.size()},
          {"bytes_moved", tl.bytesMoved}, {"devices", devices},  {"operators", ops}};
}

/// The plan's fused kernels (plan/fusedkernels.h); none for task graphs.
std::vector<FusedKernel> planKernels(const Problem& p, const Plan& plan, const Timeline& tl) {
  return p.graph ? fusedKernels(*p.graph, p.table, plan.device, &tl) : std::vector<FusedKernel>{};
}

nlohmann::json kernelsJson(const CostTable& t, const std::vector<FusedKernel>& kernels) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : kernels) {
    nlohmann::json names = nlohmann::json::array();
    for (TaskId v : k.ops) names.push_back(t.taskNames[static_cast<size_t>(v)]);
    out.push_back({{"device", t.deviceIds[static_cast<size_t>(k.device)]},
                   {"ops", names},
                   {"start_us", k.startUs},
                   {"end_us", k.endUs}});
  }
  return out;
}

/// "Fused        16 kernels run 48 operators", or why there are none.
void printKernels(const Problem& p, const std::vector<FusedKernel>& kernels) {
  if (!p.graph) return;
  if (kernels.empty()) {
    std::printf("Fused        none%s\n", p.table.fusedGroups.empty()
                                             ? " (the costs know of no fused kernels: apply an in-context profile of "
                                               "the CPU devices with --profile)"
                                             : "");
    return;
  }
  size_t ops = 0;
  for (const auto& k : kernels) ops += k.ops.size();
  std::printf("Fused        %zu kernels run %zu operators\n", kernels.size(), ops);
}

/// Writes every requested export; returns false (after printing) on the first failure.
bool writeExports(const Problem& p, const Plan& plan, const Timeline& tl, const std::string& planOut, const std::string& trace,
                  const std::string& dot, const std::string& csv, const std::string& openvino, const std::string& onert) {
  const Platform* plat = p.platform ? &*p.platform : nullptr;
  auto check = [](const Status& st) {
    if (!st) fail(st.message());
    return st.isOk();
  };
  const Graph* g = p.graph ? &*p.graph : nullptr;
  if (!planOut.empty() && !check(savePlan(planOut, p.table, plan, tl, p.id, g))) return false;
  const auto kernels = planKernels(p, plan, tl);
  if (!trace.empty() && !check(saveExport(trace, traceJson(p.table, tl, plan.algorithm, 1, &kernels)))) return false;
  if (!dot.empty() && !check(saveExport(dot, planToDot(p.table, plan, &tl)))) return false;
  if (!csv.empty() && !check(saveExport(csv, timelineToCsv(p.table, tl)))) return false;
  if (!openvino.empty() && !check(saveExport(openvino, openVinoAffinityJson(p.table, plan, plat)))) return false;
  if (!onert.empty() && !check(saveExport(onert, onertBackendMap(p.table, plan, plat) + "\n"))) return false;
  return true;
}

struct Exports {
  std::string plan, trace, dot, csv, openvino, onert;
};

void addExportOptions(CLI::App* cmd, Exports& e) {
  cmd->add_option("-o,--output", e.plan, "Write the plan file (JSON)");
  cmd->add_option("--trace", e.trace, "Write a Chrome/Perfetto trace (JSON)");
  cmd->add_option("--dot", e.dot, "Write the graph coloured by device (Graphviz DOT)");
  cmd->add_option("--csv", e.csv, "Write one CSV row per operator");
  cmd->add_option("--openvino", e.openvino, "Write an OpenVINO HETERO affinity map (JSON)");
  cmd->add_option("--onert", e.onert, "Write an onert OP_BACKEND_MAP line");
}

int runSchedule(const ProblemArgs& a, const std::string& algo, const Exports& ex) {
  const Scheduler* s = findScheduler(algo);
  if (!s) return fail("unknown algorithm '" + algo + "' (algorithms: " + algoList() + ")");
  auto p = loadCostedProblem(a);
  if (!p) return fail(p.message());
  auto c = parsePins(*p, a.pins);
  if (!c) return fail(c.message());
  auto o = parseOptions(a);
  if (!o) return fail(o.message());
  SchedInfo info;
  auto plan = s->schedule(p->table, *c, *o, &info);
  if (!plan) {
    // Schedulers name themselves in their errors; the algorithm is named once.
    const std::string& m = plan.message();
    return fail(baseName(a.model) + ": " + (m.rfind(algo + ": ", 0) == 0 ? m : algo + ": " + m));
  }
  auto tl = simulate(p->table, *plan, o->sim);
  if (!tl) return fail(baseName(a.model) + ": " + algo + " produced an invalid plan: " + tl.message());
  if (!writeExports(*p, *plan, *tl, ex.plan, ex.trace, ex.dot, ex.csv, ex.openvino, ex.onert)) return 2;
  // On a language model with a GPU: the llama.cpp arguments that realise the plan (sched/llamarules.h).
  std::string llamaArgs;
  if (hasLayerNames(p->table)) {
    const LlamaTensors m = llamaTensors(p->table);
    const DeviceId accel = defaultAccelerator(p->table);
    if (m.layers > 0 && accel >= 0) {
      const LlamaArgs la = llamaArgsFor(p->table, m, tensorsOfPlan(p->table, m, *plan), accel);
      llamaArgs = la.text;
      if (!la.caches.empty()) llamaArgs += " (the KV cache of " + std::to_string(la.caches.size()) + " tensors placed as no -ngl does)";
    }
  }
  std::optional<StreamResult> stream;
  if (o->objective == Objective::Throughput) {
    auto st = simulateStream(p->table, *plan, {}, o->sim);
    if (!st) return fail(baseName(a.model) + ": " + algo + ": the stream does not simulate: " + st.message());
    stream = std::move(st).value();
  }
  if (a.json) {
    auto j = timelineJson(p->table, *tl, algo);
    if (!llamaArgs.empty()) j["llama_cpp_args"] = llamaArgs;
    if (stream) j["stream"] = streamJson(p->table, *stream);
    addMemoryJson(p->table, *plan, *tl, j);
    j["lower_bound_us"] = lowerBound(p->table, *c);
    j["optimal"] = info.optimal;
    j["notes"] = info.notes;
    if (info.profilingRuns) j["profiling_runs"] = info.profilingRuns;
    if (p->graph) j["fused_kernels"] = kernelsJson(p->table, planKernels(*p, *plan, *tl));
    std::cout << j.dump(2) << "\n";
  } else {
    printTimeline(p->table, *tl, s->title());
    printMemory(p->table, *plan, *tl);
    std::printf("Lower bound  %.3f us (makespan / bound = %.3f)\n", lowerBound(p->table, *c),
                tl->makespan / std::max(1e-12, lowerBound(p->table, *c)));
    printKernels(*p, planKernels(*p, *plan, *tl));
    if (stream) printStream(p->table, *stream);
    for (const auto& n : info.notes) std::printf("Note         %s\n", n.c_str());
    if (!llamaArgs.empty()) std::printf("llama.cpp    %s\n", llamaArgs.c_str());
  }
  return 0;
}

int runSimulate(const ProblemArgs& a, const std::string& planPath, const Exports& ex) {
  auto p = loadCostedProblem(a);
  if (!p) return fail(p.message());
  auto plan = loadPlanFile(planPath, p->table, p->id);
  if (!plan) return fail(plan.message());
  SimOptions so;
  so.unlimitedLinks = a.unlimitedLinks;
  auto tl = simulate(p->table, *plan, so);
  if (!tl) return fail(planPath + ": " + tl.message());
  if (!writeExports(*p, *plan, *tl, ex.plan, ex.trace, ex.dot, ex.csv, ex.openvino, ex.onert)) return 2;
  // Under --objective throughput the plan is judged as a stream too (what schedule prints for its plan).
  auto o = parseOptions(a);
  if (!o) return fail(o.message());
  std::optional<StreamResult> stream;
  if (o->objective == Objective::Throughput) {
    auto st = simulateStream(p->table, *plan, {}, so);
    if (!st) return fail(planPath + ": the stream does not simulate: " + st.message());
    stream = std::move(st).value();
  }
  if (a.json) {
    auto j = timelineJson(p->table, *tl, plan->algorithm);
    if (stream) j["stream"] = streamJson(p->table, *stream);
    addMemoryJson(p->table, *plan, *tl, j);
    if (p->graph) j["fused_kernels"] = kernelsJson(p->table, planKernels(*p, *plan, *tl));
    std::cout << j.dump(2) << "\n";
  } else {
    printTimeline(p->table, *tl, plan->algorithm);
    printMemory(p->table, *plan, *tl);
    printKernels(*p, planKernels(*p, *plan, *tl));
    if (stream) printStream(p->table, *stream);
  }
  return 0;
}

int runCompare(const ProblemArgs& a, const std::string& algos) {
  auto p = loadCostedProblem(a);
  if (!p) return fail(p.message());
  auto c = parsePins(*p, a.pins);
  if (!c) return fail(c.message());
  auto o = parseOptions(a);
  if (!o) return fail(o.message());
  std::vector<std::string> chosen;
  if (algos.empty()) {
    chosen = defaultComparison(p->table);  // offload only on models with layer names
  } else {
    for (const auto& name : split(algos, ',')) {
      if (!findScheduler(trim(name))) return fail("unknown algorithm '" + trim(name) + "' (algorithms: " + algoList() + ")");
      chosen.push_back(trim(name));
    }
  }
  const CostTable& t = p->table;
  // The comparison's rules (best single device, exact's size limit) are core's (sched/compare.h).
  const Comparison cmp = compareAlgorithms(t, *c, *o, chosen, !algos.empty());
  const double bestSingle = cmp.bestSingleUs > 0 ? cmp.bestSingleUs : kInf;
  const double lb = cmp.lowerBoundUs;
  const double optimum = cmp.optimumUs > 0 ? cmp.optimumUs : -1;
  struct Row {
    std::string algo;
    double makespan = kInf, ms = 0;
    double period = 0, streamLatency = 0;  ///< Under --objective throughput.
    int replicas = 1;                      ///< replicaCount of the plan (sim/plan.h).
    size_t transfers = 0;
    int64_t bytes = 0;
    bool valid = false, optimal = false, timeLimited = false;
    std::string error;
    std::vector<std::string> notes;
    std::vector<DeviceMemory> memory;  ///< Per device, when valid.
  };
  std::vector<Row> rows;
  for (const ComparisonRow& cr : cmp.rows) {
    Row r;
    r.algo = cr.algorithm;
    r.ms = cr.schedMs;
    r.valid = cr.valid;
    r.optimal = cr.optimal;
    r.timeLimited = cr.timeLimited;
    r.error = cr.error;
    r.notes = cr.notes;
    if (cr.valid) {
      r.makespan = cr.makespanUs;
      r.period = cr.periodUs;
      r.streamLatency = cr.streamLatencyUs;
      r.replicas = replicaCount(cr.plan);
      r.transfers = cr.timeline.transfers.size();
      r.bytes = cr.timeline.bytesMoved;
      r.memory = deviceMemory(t, cr.plan, cr.timeline);
    }
    rows.push_back(r);
  }
  // On language models: why best beats the -ngl split, computed by core (sched/offload.h).
  const std::vector<std::string> why = explainAgainstOffload(t, cmp, "best");
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j = {{"algo", r.algo}, {"valid", r.valid}, {"sched_ms", r.ms}};
      if (r.valid) {
        j["makespan_us"] = r.makespan;
        j["speedup_vs_best_single"] = bestSingle < kInf ? bestSingle / r.makespan : 0.0;
        j["ratio_to_lower_bound"] = lb > 0 ? r.makespan / lb : 0.0;
        if (optimum > 0) j["ratio_to_optimum"] = r.makespan / optimum;
        j["transfers"] = r.transfers;
        j["bytes_moved"] = r.bytes;
        if (r.algo == "exact") j["optimal"] = r.optimal;
        j["time_limit_reached"] = r.timeLimited;
        if (o->objective == Objective::Throughput) {
          j["period_us"] = r.period;
          j["throughput_per_s"] = r.period > 0 ? 1e6 / r.period : 0.0;
          j["stream_latency_us"] = r.streamLatency;
          j["replicas"] = r.replicas;
        }
        nlohmann::json mem = nlohmann::json::array();
        for (DeviceId d = 0; d < t.numDevices(); ++d) {
          nlohmann::json mj = {{"device", t.deviceIds[static_cast<size_t>(d)]}};
          for (const auto& [key, bytes] : memoryFields(r.memory[static_cast<size_t>(d)])) mj[key] = bytes;
          mj["over_capacity"] = r.memory[static_cast<size_t>(d)].over;
          mem.push_back(mj);
        }
        j["memory"] = mem;
        if (r.algo == "offload" && r.notes.size() >= 2) {
          j["split"] = r.notes[0];
          j["split_choice"] = r.notes[1];
        }
        if (r.algo == "best" && !why.empty()) j["vs_offload"] = why;
      } else {
        j["makespan_us"] = nullptr;
        j["speedup_vs_best_single"] = nullptr;
        j["ratio_to_lower_bound"] = nullptr;
        j["transfers"] = 0;
        j["bytes_moved"] = 0;
        j["error"] = r.error;
      }
      out.push_back(j);
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("Model %s, %d operators, %d devices; lower bound %.3f us; best single device %.3f us; time limit %g s per algorithm\n",
              p->id.modelFile.c_str(), t.numTasks(), t.numDevices(), lb, bestSingle, a.timeLimit);
  std::printf("\n%-22s %14s %9s %9s %9s %10s %10s %12s  %s\n", "algorithm", "makespan_us", "speedup", "vs_LB", "vs_opt", "sched_ms",
              "transfers", "bytes_moved", "largest_memory_peak");
  for (const auto& r : rows) {
    if (!r.valid) {
      std::printf("%-22s %s\n", r.algo.c_str(), r.error.c_str());
      continue;
    }
    char opt[16] = "-";
    if (optimum > 0) std::snprintf(opt, sizeof opt, "%.3f", r.makespan / optimum);
    // The device whose resident peak is the largest share of its capacity (of bytes, without limits).
    std::string mem = "-";
    double worst = -1;
    for (DeviceId d = 0; d < t.numDevices(); ++d) {
      const DeviceMemory& dm = r.memory[static_cast<size_t>(d)];
      const double share = dm.capacity > 0 ? static_cast<double>(dm.peak) / static_cast<double>(dm.capacity) : 0.0;
      const double key = hasCapacityLimits(t) ? share : static_cast<double>(dm.peak);
      if (dm.peak > 0 && key > worst) {
        worst = key;
        mem = t.deviceIds[static_cast<size_t>(d)] + " " + humanBytes(static_cast<double>(dm.peak));
        if (dm.capacity > 0) mem += " of " + humanBytes(static_cast<double>(dm.capacity));
        if (dm.over) mem += " OVER CAPACITY";
      }
    }
    std::printf("%-22s %14.3f %9.3f %9.3f %9s %10.1f %10zu %12lld  %s%s\n", r.algo.c_str(), r.makespan,
                bestSingle < kInf ? bestSingle / r.makespan : 0.0, lb > 0 ? r.makespan / lb : 0.0, opt, r.ms, r.transfers,
                static_cast<long long>(r.bytes), mem.c_str(),
                r.algo == "exact" && r.optimal ? "  (proven optimal)" : r.timeLimited ? "  (time limit reached)" : "");
    if (r.algo == "offload" && r.notes.size() >= 2) std::printf("%-22s split: %s; %s\n", "", r.notes[0].c_str(), r.notes[1].c_str());
  }
  if (o->objective == Objective::Throughput) {
    std::printf("\nStreams (objective throughput%s):\n%-22s %14s %14s %18s %9s\n",
                o->latencyBoundUs > 0 ? (", latency bound " + std::to_string(o->latencyBoundUs) + " us").c_str() : "", "algorithm",
                "period_us", "inferences/s", "stream_latency_us", "replicas");
    for (const auto& r : rows)
      if (r.valid && r.period > 0)
        std::printf("%-22s %14.3f %14.1f %18.3f %9d%s\n", r.algo.c_str(), r.period, 1e6 / r.period, r.streamLatency, r.replicas,
                    o->latencyBoundUs > 0 && r.streamLatency > o->latencyBoundUs ? "  (over the latency bound)" : "");
  }
  if (!why.empty()) {
    std::printf("\nbest against llama.cpp's -ngl split:\n");
    for (const auto& line : why) std::printf("  %s\n", line.c_str());
  }
  return 0;
}

}  // namespace

void addSched(CLI::App& app, int& exitCode) {
  {
    auto* cmd = app.add_subcommand("algos", "List the scheduling algorithms");
    auto asJson = std::make_shared<bool>(false);
    cmd->add_flag("--json", *asJson, "Print JSON");
    cmd->callback([asJson, &exitCode] {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& s : allSchedulers()) {
        if (*asJson)
          out.push_back({{"name", s->name()}, {"title", s->title()}, {"description", s->description()}});
        else
          std::printf("%-22s %-44s %s\n", s->name().c_str(), s->title().c_str(), s->description().c_str());
      }
      if (*asJson) std::cout << out.dump(2) << "\n";
      exitCode = 0;
    });
  }
  {
    auto* cmd = app.add_subcommand("schedule", "Schedule a model or task graph with one algorithm");
    auto a = std::make_shared<ProblemArgs>();
    auto algo = std::make_shared<std::string>("best");
    auto ex = std::make_shared<Exports>();
    addProblemOptions(cmd, *a);
    cmd->add_option("--algo,-a", *algo, "Algorithm (see partex-cli algos)")->capture_default_str();
    addExportOptions(cmd, *ex);
    cmd->callback([a, algo, ex, &exitCode] { exitCode = runSchedule(*a, *algo, *ex); });
  }
  {
    auto* cmd = app.add_subcommand("simulate", "Simulate a plan file on a model and platform");
    auto a = std::make_shared<ProblemArgs>();
    auto plan = std::make_shared<std::string>();
    auto ex = std::make_shared<Exports>();
    addProblemOptions(cmd, *a);
    cmd->add_option("--plan", *plan, "Plan file (JSON)")->required();
    addExportOptions(cmd, *ex);
    cmd->callback([a, plan, ex, &exitCode] { exitCode = runSimulate(*a, *plan, *ex); });
  }
  {
    auto* cmd = app.add_subcommand("compare", "Run several algorithms on one cost table and compare them");
    auto a = std::make_shared<ProblemArgs>();
    auto algos = std::make_shared<std::string>();
    addProblemOptions(cmd, *a);
    cmd->add_option("--algos", *algos, "Comma-separated algorithms (default: all)");
    cmd->callback([a, algos, &exitCode] { exitCode = runCompare(*a, *algos); });
  }
}

}  // namespace partex::cli
