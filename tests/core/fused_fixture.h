#pragma once
/// \file A generated ResNet-18 (32x32 input: Conv + BatchNormalization + Relu chains, residual Adds)
/// on a small platform of two CPU cores and an NPU, with an in-context-like profile of both cores
/// applied: the costs then know the fused kernels the CPU runtime runs (CostTable::fusedGroups), as
/// after `partex-cli profile`. Shared by tst_fusedkernels and the Gantt tests; no backend involved.

#include <string>
#include <vector>

#include "cost/costtable.h"
#include "cost/work.h"
#include "ir/fusion.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "profile/profile.h"
#include "sim/plan.h"
#include "sim/simulator.h"

namespace partex::test {

struct FusedProblem {
  Graph graph;
  CostTable table;
  std::string error;  ///< Non-empty when building it failed.
};

/// Platform "two-cores-npu": core0 (host) and core1 (CPUs, shared memory), npu (over a link).
inline Platform twoCoresAndNpu() {
  Platform p;
  p.name = "two-cores-npu";
  p.host = "core0";
  for (const char* id : {"core0", "core1", "npu"}) {
    Device d;
    d.id = id;
    d.name = id;
    d.kind = std::string(id) == "npu" ? DeviceKind::Npu : DeviceKind::Cpu;
    d.defaultPeakGflops = std::string(id) == "npu" ? 200.0 : 20.0;
    d.memBandwidthGBs = 10.0;
    d.launchOverheadUs = 1.0;
    p.devices.push_back(d);
  }
  Link cores;
  cores.from = "core0";
  cores.to = "core1";
  cores.sharedMemory = true;
  p.links.push_back(cores);
  for (const char* from : {"core0", "core1"}) {
    Link l;
    l.from = from;
    l.to = "npu";
    l.bandwidthGBs = 4.0;
    l.latencyUs = 5.0;
    p.links.push_back(l);
  }
  return p;
}

/// The profile the runtime would record on `devices`: every operator timed, a fused kernel's time on
/// its last operator (the others 0.01 us), the kernels the runtime ran listed by name.
inline Profile inContextProfile(const Graph& g, const std::vector<std::string>& devices) {
  Profile prof;
  prof.modelSha256 = g.graphSha256;
  prof.method = "in-context";
  const auto groups = fusedGroups(g);
  const auto groupOf = groupOfOps(g, groups);
  for (const auto& id : devices) {
    ProfileDevice& pd = prof.device(id);
    for (size_t v = 0; v < g.nodes.size(); ++v) {
      ProfileOp op;
      op.name = g.nodes[v].name;
      op.opType = g.nodes[v].opType;
      const bool inner = groupOf[v] >= 0 && groups[static_cast<size_t>(groupOf[v])].ops.back() != static_cast<OpId>(v);
      op.time = summarise({inner ? 0.01 : 10.0});
      pd.ops.push_back(op);
    }
    for (const auto& grp : groups) {
      std::vector<std::string> names;
      for (OpId op : grp.ops) names.push_back(g.nodes[static_cast<size_t>(op)].name);
      pd.fused.push_back(names);
    }
  }
  return prof;
}

/// The model and its cost table, profiled on both cores when `profiled`.
inline FusedProblem fusedProblem(bool profiled = true) {
  FusedProblem p;
  GenSpec spec;
  spec.kind = "resnet18";
  spec.imageSize = 32;
  spec.numClasses = 10;
  auto bytes = generateModel(spec);
  if (!bytes) return {{}, {}, bytes.message()};
  auto g = importOnnxBytes(*bytes, "resnet18.onnx");
  if (!g) return {{}, {}, g.message()};
  p.graph = std::move(g).value();
  auto t = buildCostTable(p.graph, characteriseAll(p.graph), twoCoresAndNpu());
  if (!t) return {{}, {}, t.message()};
  p.table = std::move(t).value();
  if (profiled) {
    ApplyOptions o;
    o.modelSha256 = p.graph.graphSha256;
    auto rep = applyProfile(p.table, inContextProfile(p.graph, {"core0", "core1"}), o);
    if (!rep) return {{}, {}, rep.message()};
  }
  return p;
}

/// Every operator on `d`, except those of `moved`, which go to `to`; ordered by upward rank.
inline Plan placed(const CostTable& t, DeviceId d, const std::vector<std::string>& moved = {}, DeviceId to = 0) {
  Plan p;
  p.algorithm = "manual";
  p.device.assign(static_cast<size_t>(t.numTasks()), d);
  for (const auto& name : moved)
    for (TaskId v = 0; v < t.numTasks(); ++v)
      if (t.taskNames[static_cast<size_t>(v)] == name) p.device[static_cast<size_t>(v)] = to;
  orderByUpwardRank(t, p);
  return p;
}

/// The id of the operator named `name`, -1 when absent.
inline TaskId taskNamed(const CostTable& t, const std::string& name) {
  for (TaskId v = 0; v < t.numTasks(); ++v)
    if (t.taskNames[static_cast<size_t>(v)] == name) return v;
  return -1;
}

}  // namespace partex::test
