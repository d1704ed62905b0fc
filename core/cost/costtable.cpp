#include "cost/costtable.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "cost/roofline.h"
#include "ir/fusion.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex {

const char* provenanceName(Provenance p) {
  switch (p) {
    case Provenance::Modelled:
      return "modelled";
    case Provenance::Measured:
      return "measured";
    case Provenance::Imported:
      return "imported";
  }
  return "modelled";
}

double CostTable::transferUs(DeviceId a, DeviceId b, int64_t bytes) const {
  if (a == b) return 0.0;
  const size_t idx = static_cast<size_t>(a) * deviceIds.size() + static_cast<size_t>(b);
  if (idx >= linkBytesPerUs.size()) return 0.0;
  const double bpu = linkBytesPerUs[idx];
  const double lat = linkLatencyUs[idx];
  if (bpu == kInf) return lat;
  if (bpu <= 0) return kInf;
  return lat + static_cast<double>(bytes) / bpu;
}

double CostTable::comm(int32_t edge, DeviceId a, DeviceId b) const {
  if (a == b) return 0.0;
  const Edge& e = edges[static_cast<size_t>(edge)];
  if (e.fixedUs >= 0) return e.fixedUs;
  return transferUs(a, b, e.bytes);
}

double CostTable::meanComm(int32_t edge) const {
  const Edge& e = edges[static_cast<size_t>(edge)];
  if (e.fixedUs >= 0) return e.fixedUs;
  const int m = numDevices();
  if (m < 2) return 0.0;
  double sum = 0;
  int n = 0;
  for (DeviceId a = 0; a < m; ++a)
    for (DeviceId b = 0; b < m; ++b) {
      if (a == b) continue;
      double c = transferUs(a, b, e.bytes);
      if (c == kInf) continue;  // unreachable pairs do not count in the mean
      sum += c;
      ++n;
    }
  return n ? sum / n : 0.0;
}

std::vector<TaskId> CostTable::topoOrder() const {
  const int n = numTasks();
  std::vector<int> indeg(static_cast<size_t>(n), 0);
  for (const auto& e : edges) ++indeg[static_cast<size_t>(e.dst)];
  std::vector<TaskId> order;
  order.reserve(static_cast<size_t>(n));
  std::vector<TaskId> ready;
  for (TaskId v = n - 1; v >= 0; --v)
    if (indeg[static_cast<size_t>(v)] == 0) ready.push_back(v);
  // Smallest id first, so already-topological tables keep their order.
  std::make_heap(ready.begin(), ready.end(), std::greater<>());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    TaskId u = ready.back();
    ready.pop_back();
    order.push_back(u);
    for (int32_t ei : outEdges[static_cast<size_t>(u)]) {
      TaskId s = edges[static_cast<size_t>(ei)].dst;
      if (--indeg[static_cast<size_t>(s)] == 0) {
        ready.push_back(s);
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
    }
  }
  return order;
}

void CostTable::indexEdges() {
  for (Edge& e : edges)
    if (e.item < 0 && e.fixedUs >= 0) e.item = numItems++;
  outEdges.assign(taskNames.size(), {});
  inEdges.assign(taskNames.size(), {});
  for (size_t i = 0; i < edges.size(); ++i) {
    outEdges[static_cast<size_t>(edges[i].src)].push_back(static_cast<int32_t>(i));
    inEdges[static_cast<size_t>(edges[i].dst)].push_back(static_cast<int32_t>(i));
  }
}

namespace {

/// Fills the per-pair link tables from the platform: direct links, or two hops through the host.
void fillLinks(CostTable& t, const Platform& p) {
  const size_t m = p.devices.size();
  t.linkResource.assign(m * m, -1);
  t.linkLatencyUs.assign(m * m, 0.0);
  t.linkBytesPerUs.assign(m * m, kInf);
  std::map<std::pair<int, int>, int32_t> resourceOfHop;  // directed (from,to) hop -> resource
  auto hopResource = [&](DeviceId a, DeviceId b) {
    auto key = std::make_pair(static_cast<int>(a), static_cast<int>(b));
    auto it = resourceOfHop.find(key);
    if (it != resourceOfHop.end()) return it->second;
    auto id = static_cast<int32_t>(t.linkNames.size());
    t.linkNames.push_back(p.devices[static_cast<size_t>(a)].id + "->" + p.devices[static_cast<size_t>(b)].id);
    resourceOfHop[key] = id;
    return id;
  };
  const DeviceId host = p.hostId();
  for (DeviceId a = 0; a < static_cast<DeviceId>(m); ++a) {
    for (DeviceId b = 0; b < static_cast<DeviceId>(m); ++b) {
      if (a == b) continue;
      const size_t idx = static_cast<size_t>(a) * m + static_cast<size_t>(b);
      if (const Link* l = p.findLink(a, b)) {
        if (l->sharedMemory) continue;  // zero-copy
        t.linkLatencyUs[idx] = l->latencyUs;
        t.linkBytesPerUs[idx] = l->bandwidthGBs * 1e3;
        t.linkResource[idx] = hopResource(a, b);
        continue;
      }
      // No direct link: route through the host, the transfer occupying the first hop's link.
      const Link* l1 = (a != host) ? p.findLink(a, host) : nullptr;
      const Link* l2 = (b != host) ? p.findLink(host, b) : nullptr;
      if ((a != host && !l1) || (b != host && !l2) || a == host || b == host) {
        t.linkBytesPerUs[idx] = 0.0;  // unreachable: transferUs() returns infinity
        continue;
      }
      double lat = 0, inv = 0;
      bool anyCost = false;
      for (const Link* l : {l1, l2}) {
        if (l->sharedMemory) continue;
        lat += l->latencyUs;
        inv += 1.0 / (l->bandwidthGBs * 1e3);
        anyCost = true;
      }
      if (!anyCost) continue;
      t.linkLatencyUs[idx] = lat;
      t.linkBytesPerUs[idx] = inv > 0 ? 1.0 / inv : kInf;
      t.linkResource[idx] = l1->sharedMemory ? hopResource(host, b) : hopResource(a, host);
    }
  }
  t.numLinkResources = static_cast<int>(t.linkNames.size());
}

}  // namespace

bool isCacheValue(const Value& v) {
  if (!v.isGraphInput && !v.isGraphOutput) return false;
  const std::string& n = v.name;
  auto starts = [&](const char* p) { return n.rfind(p, 0) == 0; };
  return v.isGraphInput ? (starts("past_key") || starts("past_value") || starts("past.")) : (starts("present_key") || starts("present_value") || starts("present."));
}

namespace {

struct GroupModel {
  std::vector<Device> devices;
  std::vector<OpWork> work;
  std::vector<Edge> edges;
  std::vector<std::vector<int32_t>> inEdges, outEdges;
  std::vector<int64_t> inputBytes, outputBytes;
  std::vector<double> cost;  // to check support
  size_t m = 0;

  /// W(S,d): roofline time of `group` fused as one kernel on d with all its cores (rooflineGroupUs).
  double time(const std::vector<TaskId>& group, DeviceId d) const {
    if (group.empty()) return 0.0;
    std::set<TaskId> members(group.begin(), group.end());
    int64_t flops = 0, bytes = 0, bestFlops = -1, dequantElements = 0;
    OpClass cls = OpClass::Unknown;
    DType dt = DType::Float32;
    const Device& dev = devices[static_cast<size_t>(d)];
    const bool dequantRate = dev.dequantGElemsPerS > 0;
    for (TaskId v : group) {
      if (cost[static_cast<size_t>(v) * m + static_cast<size_t>(d)] == kInf) return kInf;
      const OpWork& w = work[static_cast<size_t>(v)];
      flops += w.flops + (dequantRate ? 0 : w.dequantFlops);  // as rooflineUs: dequantisation is compute
      dequantElements += w.dequantElements;
      bytes += w.bytesReadWeights + inputBytes[static_cast<size_t>(v)] + outputBytes[static_cast<size_t>(v)];
      if (w.flops > bestFlops) {
        bestFlops = w.flops;
        cls = w.cls;
        dt = w.dtype;
      }
      for (int32_t ei : inEdges[static_cast<size_t>(v)])
        if (!members.count(edges[static_cast<size_t>(ei)].src)) bytes += edges[static_cast<size_t>(ei)].bytes;
      for (int32_t ei : outEdges[static_cast<size_t>(v)])
        if (!members.count(edges[static_cast<size_t>(ei)].dst)) bytes += edges[static_cast<size_t>(ei)].bytes;
    }
    if (dequantRate && dequantElements > 0) {  // the measured rate's time, as flops at the group's peak
      const double usPerGflop = rooflineGroupParts(dev, cls, dt, 1000000000, 0).computeUs;
      const double dequantUs = static_cast<double>(dequantElements) / (dev.dequantGElemsPerS * 1e3);
      if (usPerGflop > 0) flops += static_cast<int64_t>(dequantUs / usPerGflop * 1e9);
    }
    return rooflineGroupUs(dev, cls, dt, flops, bytes);
  }
};

}  // namespace

CostTable atRunSpeed(const CostTable& t, const std::vector<double>& runProbeUs, std::vector<double>* factor) {
  CostTable s = t;
  const size_t m = t.deviceIds.size();
  std::vector<double> f(m, 1.0);
  for (size_t d = 0; d < m && d < runProbeUs.size() && d < t.speedProbeUs.size(); ++d)
    if (runProbeUs[d] > 0 && t.speedProbeUs[d] > 0) f[d] = runProbeUs[d] / t.speedProbeUs[d];
  for (size_t i = 0; i < s.cost.size(); ++i)
    if (std::isfinite(s.cost[i])) s.cost[i] *= f[i % m];
  for (size_t i = 0; i < s.unfusedCost.size(); ++i)
    if (std::isfinite(s.unfusedCost[i])) s.unfusedCost[i] *= f[i % m];
  if (t.groupCost) {
    auto base = t.groupCost;
    s.groupCost = [base, f](const std::vector<TaskId>& group, DeviceId d) {
      return base(group, d) * f[static_cast<size_t>(d)];
    };
  }
  for (size_t d = 0; d < m && d < runProbeUs.size(); ++d)
    if (runProbeUs[d] > 0 && d < s.speedProbeUs.size() && s.speedProbeUs[d] > 0) s.speedProbeUs[d] = runProbeUs[d];
  if (factor) *factor = std::move(f);
  return s;
}

Result<CostTable> buildCostTable(const Graph& g, const std::vector<OpWork>& work, const Platform& p) {
  if (work.size() != g.nodes.size()) return makeError(g.name, ": work table does not match the graph");
  if (p.devices.empty()) return makeError(p.name, ": platform has no devices");
  CostTable t;
  t.name = g.name.empty() ? baseName(g.sourcePath) : g.name;
  const size_t n = g.nodes.size(), m = p.devices.size();
  for (const auto& d : p.devices) t.deviceIds.push_back(d.id);
  t.taskNames.reserve(n);
  t.taskTypes.reserve(n);
  t.cost.assign(n * m, kInf);
  t.provenance.assign(n * m, Provenance::Modelled);
  for (size_t v = 0; v < n; ++v) {
    const Node& node = g.nodes[v];
    t.taskNames.push_back(node.name);
    t.taskTypes.push_back(node.opType);
    bool any = false;
    std::vector<std::string> reasons;
    for (size_t d = 0; d < m; ++d) {
      std::string reason;
      if (deviceSupports(p.devices[d], g, static_cast<OpId>(v), &reason)) {
        t.cost[v * m + d] = rooflineUs(p.devices[d], work[v], node.opType);
        any = true;
      } else {
        reasons.push_back(reason);
      }
    }
    if (!any)
      return makeError(t.name, ": operator '", node.name, "' (", node.opType, ") can run on no device of platform '",
                       p.name, "' (", join(reasons, "; "), ")");
  }
  // Devices the CPU runtime runs (Device::fusion "runtime"): each of its fused groups (ir/fusion.h
  // fusedGroups, every operator on one device) is one kernel, charged the dearest of its operators (the
  // others are folded into that pass: post-ops of a convolution, the steps of a LayerNorm written out, a
  // channel shuffle's one permutation), on its last operator; the others cost nothing there. The groups
  // go into the table as a profile's do, so a plan that splits one is charged its operators alone
  // (CostTable::wIn); an in-context profile replaces these costs with the kernels it measured.
  bool runtimeFusion = false;
  for (size_t d = 0; d < m; ++d) runtimeFusion = runtimeFusion || p.devices[d].fusion == "runtime";
  if (runtimeFusion) {
    if (t.unfusedCost.empty()) t.unfusedCost = t.cost;
    t.fusedGroupOf.assign(n, -1);
    for (const FusedGroup& grp : fusedGroups(g)) {
      if (grp.ops.size() < 2) continue;
      for (OpId v : grp.ops) t.fusedGroupOf[static_cast<size_t>(v)] = static_cast<int32_t>(t.fusedGroups.size());
      t.fusedGroups.emplace_back(grp.ops.begin(), grp.ops.end());
    }
    for (size_t d = 0; d < m; ++d) {
      if (p.devices[d].fusion != "runtime") continue;
      for (const auto& grp : t.fusedGroups) {
        double kernel = 0;
        for (TaskId v : grp) kernel = std::max(kernel, t.cost[static_cast<size_t>(v) * m + d]);
        if (!std::isfinite(kernel)) continue;  // the device cannot run all of it: no kernel here
        for (TaskId v : grp) t.cost[static_cast<size_t>(v) * m + d] = 0.0;
        t.cost[static_cast<size_t>(grp.back()) * m + d] = kernel;
      }
    }
  }
  // A device whose runtime fuses epilogues (Device::fusion): each chain of ir/fusion.h's epilogueChain,
  // all on that device, is one kernel of the anchor's work: its later operators cost nothing there and
  // its last operator carries the kernel's time (it runs once every input of the chain is ready, a
  // residual Add's other operand included). A plan that splits a chain over devices is charged as if
  // the chain still ran whole on this device: a profile (which measures the kernels the runtime ran)
  // replaces these costs.
  for (size_t d = 0; d < m; ++d) {
    if (p.devices[d].fusion != "epilogues") continue;
    // The costs of operators alone, for a profile's fused groups split by a plan (CostTable::wIn):
    // kept before any chain is charged as one kernel.
    if (t.unfusedCost.empty()) t.unfusedCost = t.cost;
    std::vector<char> taken(n, 0);
    auto runs = [&](OpId c) { return std::isfinite(t.cost[static_cast<size_t>(c) * m + d]); };
    for (size_t v = 0; v < n; ++v) {
      if (taken[v]) continue;
      const std::vector<OpId> chain = epilogueChain(g, static_cast<OpId>(v), nullptr, runs);
      if (chain.size() < 2) continue;
      bool free = true;
      for (OpId c : chain) free = free && !taken[static_cast<size_t>(c)];
      if (!free) continue;
      const double kernel = t.cost[v * m + d];
      for (OpId c : chain) {
        taken[static_cast<size_t>(c)] = 1;
        t.cost[static_cast<size_t>(c) * m + d] = 0.0;
      }
      t.cost[static_cast<size_t>(chain.back()) * m + d] = kernel;
    }
  }
  // Edges: one per (producer, consumer) pair, carrying the bytes of every tensor between them.
  std::map<std::pair<TaskId, TaskId>, int64_t> pairBytes;
  t.inputBytes.assign(n, 0);
  t.outputBytes.assign(n, 0);
  t.keepsOutput.assign(n, 0);
  // A language model's KV cache (isCacheValue) is device state, as runtimes keep it: the past is
  // resident on the device of the layer that reads it (counted with the weights below, never sent
  // from the host), the present stays there (not sent back, alive until the end of the run). The
  // group model still charges the bytes a kernel reads and writes.
  std::vector<int64_t> readBytes(n, 0), writtenBytes(n, 0);
  t.keptInPlaceBytes.assign(n, 0);
  for (size_t v = 0; v < n; ++v) {
    std::set<ValueId> seen;
    int64_t pastRead = 0;
    for (ValueId in : g.nodes[v].inputs) {
      if (in < 0 || !seen.insert(in).second) continue;
      const Value& val = g.values[static_cast<size_t>(in)];
      if (val.producer >= 0) {
        pairBytes[{val.producer, static_cast<TaskId>(v)}] += val.bytes();
      } else if (val.isGraphInput) {
        readBytes[v] += val.bytes();
        if (!isCacheValue(val))
          t.inputBytes[v] += val.bytes();
        else
          pastRead += val.bytes();
      }
    }
    for (ValueId out : g.nodes[v].outputs) {
      if (out < 0 || !g.values[static_cast<size_t>(out)].isGraphOutput) continue;
      const Value& val = g.values[static_cast<size_t>(out)];
      writtenBytes[v] += val.bytes();
      if (isCacheValue(val))
        t.keepsOutput[v] = 1;
      else
        t.outputBytes[v] += val.bytes();
    }
    // Past + new = present, appended in place: the present costs only its new rows.
    if (t.keepsOutput[v] && pastRead > 0) t.keptInPlaceBytes[v] = pastRead;
  }
  t.edges.reserve(pairBytes.size());
  for (const auto& [k, bytes] : pairBytes) t.edges.push_back(Edge{k.first, k.second, bytes, -1.0});
  t.indexEdges();
  t.host = p.hostId();
  t.exclusiveWith.assign(m, {});
  for (DeviceId a = 0; a < static_cast<DeviceId>(m); ++a)
    for (DeviceId b = 0; b < static_cast<DeviceId>(m); ++b)
      if (a != b && p.exclusive(a, b)) t.exclusiveWith[static_cast<size_t>(a)].push_back(b);
  fillLinks(t, p);
  // Weights by identity: a weight read by several operators is one buffer per device.
  {
    std::map<ValueId, int32_t> index;
    t.taskWeights.assign(n, {});
    for (size_t v = 0; v < n; ++v)
      for (ValueId in : g.nodes[v].inputs) {
        if (in < 0) continue;
        const Value& val = g.values[static_cast<size_t>(in)];
        if (!(val.isWeight || (val.isGraphInput && isCacheValue(val))) || val.bytes() <= 0) continue;
        auto [it, fresh] = index.emplace(in, static_cast<int32_t>(t.weightBytes.size()));
        if (fresh) {
          t.weightBytes.push_back(val.bytes());
          t.weightNames.push_back(val.name);
        }
        auto& tw = t.taskWeights[v];
        if (std::find(tw.begin(), tw.end(), it->second) == tw.end()) tw.push_back(it->second);
      }
  }
  for (const auto& d : p.devices) {
    t.memCapacity.push_back(d.memCapacityBytes);
    t.deviceWorkspaceBytes.push_back(d.workspaceBytes);
    t.deviceKinds.emplace_back(deviceKindName(d.kind));
    t.deviceCores.push_back(std::max(1, d.cores));
    t.deviceOnChipBytes.push_back(d.onChipBytes);
    t.deviceLaunchUs.push_back(std::isfinite(d.launchOverheadUs) ? std::max(0.0, d.launchOverheadUs) : 0.0);
    t.deviceWakeUpUs.push_back(std::isfinite(d.wakeUpUs) ? std::max(0.0, d.wakeUpUs) : 0.0);
    t.deviceModeSwitchUs.push_back(std::isfinite(d.modeSwitchUs) ? std::max(0.0, d.modeSwitchUs) : 0.0);
    t.deviceInlineCopies.push_back(d.copies == "inline" ? 1 : 0);
    t.deviceReaderConvertBytesPerUs.push_back(std::isfinite(d.readerConvertGBs) && d.readerConvertGBs > 0 ? d.readerConvertGBs * 1e3 : 0.0);
  }
  // The operators the CPU backend runs channels-last whatever layout their 4-D input arrives in,
  // converting a row-major one first (backends/cpu: convolutions and pools, issue 25's i25-rowmajor).
  t.taskConvertsInput.assign(n, 0);
  for (size_t v = 0; v < n; ++v) {
    const Node& node = g.nodes[v];
    static const std::set<std::string> kConverting{"Conv", "ConvTranspose", "MaxPool", "AveragePool"};
    if (!kConverting.count(node.opType) || node.inputs.empty() || node.inputs[0] < 0) continue;
    const Value& in = g.values[static_cast<size_t>(node.inputs[0])];
    t.taskConvertsInput[v] = in.shapeKnown && in.shape.size() == 4 ? 1 : 0;
  }
  t.taskChannels.assign(n, 0);
  for (size_t v = 0; v < n; ++v) {
    const Node& node = g.nodes[v];
    if (node.outputs.empty() || node.outputs[0] < 0) continue;
    const Value& out = g.values[static_cast<size_t>(node.outputs[0])];
    if (!out.shapeKnown || out.shape.empty()) continue;
    const bool channelsLast = work[v].cls == OpClass::MatMul;  // Gemm/MatMul: features are the last dim
    const int64_t ch = channelsLast || out.shape.size() < 2 ? out.shape.back() : out.shape[1];
    t.taskChannels[v] = std::max<int64_t>(0, ch);
  }
  t.work = work;

  auto gm = std::make_shared<GroupModel>();
  gm->devices = p.devices;
  gm->work = work;
  gm->edges = t.edges;
  gm->inEdges = t.inEdges;
  gm->outEdges = t.outEdges;
  gm->inputBytes = std::move(readBytes);
  gm->outputBytes = std::move(writtenBytes);
  gm->cost = t.cost;
  gm->m = m;
  t.groupCost = [gm](const std::vector<TaskId>& group, DeviceId d) -> double { return gm->time(group, d); };
  setBlockModel(t, p.devices);
  return t;
}

void finishTaskTable(CostTable& t) {
  for (Edge& e : t.edges)
    if (e.item < 0) e.item = t.numItems++;
  t.indexEdges();
  const size_t n = t.taskNames.size(), m = t.deviceIds.size();
  t.inputBytes.assign(n, 0);
  t.outputBytes.assign(n, 0);
  t.host = 0;
  t.exclusiveWith.assign(m, {});
  t.linkResource.assign(m * m, -1);
  t.numLinkResources = 0;
  t.linkNames.clear();
  t.linkLatencyUs.assign(m * m, 0.0);
  t.linkBytesPerUs.assign(m * m, kInf);
  t.memCapacity.assign(m, 0);
  useSumGroupCost(t);
}

void setUniformLinks(CostTable& t, double latencyUs, double bytesPerUs, bool contended) {
  const size_t m = t.deviceIds.size();
  t.linkResource.assign(m * m, -1);
  t.linkLatencyUs.assign(m * m, 0.0);
  t.linkBytesPerUs.assign(m * m, kInf);
  t.numLinkResources = 0;
  t.linkNames.clear();
  for (size_t a = 0; a < m; ++a)
    for (size_t b = 0; b < m; ++b) {
      if (a == b) continue;
      const size_t k = a * m + b;
      t.linkLatencyUs[k] = latencyUs;
      t.linkBytesPerUs[k] = bytesPerUs;
      if (contended) {
        t.linkResource[k] = t.numLinkResources++;
        t.linkNames.push_back(t.deviceIds[a] + "->" + t.deviceIds[b]);
      }
    }
}

void setBlockModel(CostTable& t, const std::vector<Device>& devices) {
  const size_t n = static_cast<size_t>(t.numTasks()), m = static_cast<size_t>(t.numDevices());
  auto devs = std::make_shared<const std::vector<Device>>(devices);
  t.groupRoofline = [devs](DeviceId d, OpClass cls, DType dt, int64_t flops, int64_t bytes) {
    return rooflineGroupParts((*devs)[static_cast<size_t>(d)], cls, dt, flops, bytes);
  };
  t.deviceCompilesBlocks.clear();
  for (const auto& d : devices) t.deviceCompilesBlocks.push_back(d.compilesBlocks ? 1 : 0);
  t.blockAlone.clear();
  t.blockFloor.clear();
  if (!std::any_of(t.deviceCompilesBlocks.begin(), t.deviceCompilesBlocks.end(), [](char c) { return c != 0; })) return;
  // Per task alone (blockTimeUs's denominator), and the floor of its share of any block (the lower
  // bound's cost: rooflineFloorUs, as a fraction of its cost so that it follows a profile).
  t.blockAlone.assign(n * m, 0.0);  // sized first: BlockTimer models only with it
  t.blockFloor.assign(n * m, 1.0);
  for (size_t d = 0; d < m; ++d) {
    if (!t.deviceCompilesBlocks[d]) continue;
    BlockTimer one(t, static_cast<DeviceId>(d));
    for (size_t v = 0; v < n; ++v) {
      if (t.cost[v * m + d] == kInf) continue;
      one.clear();
      one.add(static_cast<TaskId>(v));
      const double alone = one.modelUs(0);
      t.blockAlone[v * m + d] = alone;
      if (alone > 0) t.blockFloor[v * m + d] = std::clamp(rooflineFloorUs(devices[d], t.work[v]) / alone, 0.0, 1.0);
    }
  }
}

BlockTimer::BlockTimer(const CostTable& t, DeviceId d) : t_(t), d_(d) {
  const auto di = static_cast<size_t>(d);
  cores_ = di < t.deviceCores.size() ? std::max(1, t.deviceCores[di]) : 1;
  compiles_ = di < t.deviceCompilesBlocks.size() && t.deviceCompilesBlocks[di] && t.groupRoofline && !t.work.empty() &&
              t.blockAlone.size() == static_cast<size_t>(t.numTasks()) * static_cast<size_t>(t.numDevices());
  in_.assign(static_cast<size_t>(t.numTasks()), 0);
  if (compiles_) spread_.assign(static_cast<size_t>(cores_) + 1, 0.0);
  clear();
}

void BlockTimer::clear() {
  for (TaskId v : members_) in_[static_cast<size_t>(v)] = 0;
  members_.clear();
  cannot_ = false;
  flops_ = bytes_ = 0;
  heaviest_ = -1;
  cls_ = OpClass::Unknown;
  dtype_ = DType::Float32;
  sumW_ = sumAlone_ = 0;
  std::fill(spread_.begin(), spread_.end(), 0.0);
}

void BlockTimer::add(TaskId v) {
  const auto vi = static_cast<size_t>(v);
  in_[vi] = 1;
  members_.push_back(v);
  const double w = t_.w(v, d_);
  sumW_ += w;
  if (!(w < kInf)) cannot_ = true;
  if (!compiles_ || cannot_) return;
  sumAlone_ += t_.blockAlone[vi * static_cast<size_t>(t_.numDevices()) + static_cast<size_t>(d_)];
  const OpWork& wk = t_.work[vi];
  flops_ += wk.flops;
  bytes_ += wk.bytesReadWeights + t_.inputBytes[vi] + t_.outputBytes[vi];
  if (wk.flops > heaviest_) {
    heaviest_ = wk.flops;
    cls_ = wk.cls;
    dtype_ = wk.dtype;
  }
  // A tensor from or to a member stays on chip: it was counted as crossing the boundary when that
  // member joined, and is taken back now.
  for (int32_t ei : t_.inEdges[vi]) {
    const Edge& e = t_.edges[static_cast<size_t>(ei)];
    bytes_ += in_[static_cast<size_t>(e.src)] && e.src != v ? -e.bytes : e.bytes;
  }
  for (int32_t ei : t_.outEdges[vi]) {
    const Edge& e = t_.edges[static_cast<size_t>(ei)];
    bytes_ += in_[static_cast<size_t>(e.dst)] && e.dst != v ? -e.bytes : e.bytes;
  }
  // Each layer is split over the cores by its own output channels.
  const int64_t ch = vi < t_.taskChannels.size() ? t_.taskChannels[vi] : 0;
  for (size_t k = 1; k < spread_.size(); ++k) {
    const double keff = ch > 0 ? static_cast<double>(ch) / std::ceil(static_cast<double>(ch) / static_cast<double>(k)) : static_cast<double>(k);
    spread_[k] += static_cast<double>(wk.flops) * cores_ / keff;
  }
}

double BlockTimer::modelUs(int cores) const {
  if (cannot_) return kInf;
  if (!compiles_ || members_.empty()) return sumW_;
  const int k = cores <= 0 ? cores_ : std::min(cores, cores_);
  // The roofline of the flops as if on all cores at full use, then scaled by the spread.
  const RooflineParts r = t_.groupRoofline(d_, cls_, dtype_, flops_, bytes_);
  const double compute = flops_ > 0 ? r.computeUs * spread_[static_cast<size_t>(k)] / static_cast<double>(flops_) : 0.0;
  const double sync = k > 1 ? r.syncLevelUs * std::ceil(std::log2(static_cast<double>(k))) : 0.0;
  return r.launchUs + std::max(compute, r.memoryUs) + sync;
}

double BlockTimer::timeUs(int cores) const {
  if (cannot_) return kInf;
  if (!compiles_ || members_.empty()) return sumW_;
  if (members_.size() == 1 && (cores <= 0 || cores >= cores_)) return sumW_;  // an op alone on all cores: its own cost
  const double model = modelUs(cores);
  return sumAlone_ > 0 ? sumW_ * model / sumAlone_ : model;
}

double blockTimeUs(const CostTable& t, const std::vector<TaskId>& tasks, DeviceId d, int cores) {
  BlockTimer b(t, d);
  for (TaskId v : tasks) b.add(v);
  return b.timeUs(cores);
}

void useSumGroupCost(CostTable& t) {
  auto costs = std::make_shared<const std::vector<double>>(t.cost);
  const auto m = static_cast<size_t>(t.numDevices());
  t.groupCost = [costs, m](const std::vector<TaskId>& group, DeviceId d) {
    double s = 0;
    for (TaskId v : group) s += (*costs)[static_cast<size_t>(v) * m + static_cast<size_t>(d)];
    return s;
  };
}

}  // namespace partex
