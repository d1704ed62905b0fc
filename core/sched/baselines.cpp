// The baselines of algorithms.md: single device, manual priority (ONNX Runtime style), static
// type-based, per-op greedy. Each outputs an assignment; the per-device order is by decreasing upward
// rank (orderByUpwardRank), as for every assignment-only algorithm.
#include <cstdio>
#include <map>
#include <optional>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "sim/simulator.h"
#include "support/strings.h"

namespace partex {

namespace {

using namespace sched_detail;

DeviceId findDeviceId(const CostTable& t, const std::string& id) {
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    if (t.deviceIds[static_cast<size_t>(d)] == id) return d;
  return -1;
}

std::string deviceList(const CostTable& t) { return join(t.deviceIds, ", "); }

/// Where a task goes when its preferred device may not run it: the host, else its fastest allowed device.
DeviceId fallback(const CostTable& t, const Constraints& c, TaskId v) {
  if (c.allowed(t, v, t.host)) return t.host;
  return argminAllowed(t, c, v, [&](DeviceId d) { return t.w(v, d); });
}

bool isForbidden(const Constraints& c, DeviceId d) {
  for (DeviceId f : c.forbidden)
    if (f == d) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------------

class SingleDevice final : public Scheduler {
 public:
  std::string name() const override { return "single"; }
  std::string title() const override { return "Single device"; }
  std::string description() const override {
    return "Everything on one device (param device=ID, default: the fastest one); ops it cannot run fall "
           "back to the host.";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    auto assign = [&](DeviceId d) {
      std::vector<DeviceId> dev(static_cast<size_t>(t.numTasks()));
      for (TaskId v = 0; v < t.numTasks(); ++v) dev[static_cast<size_t>(v)] = c.allowed(t, v, d) ? d : fallback(t, c, v);
      return dev;
    };
    auto it = o.params.find("device");
    if (it != o.params.end()) {
      const DeviceId d = findDeviceId(t, trim(it->second));
      if (d < 0) return makeError("single: unknown device '", it->second, "' (devices: ", deviceList(t), ")");
      if (isForbidden(c, d)) return makeError("single: device '", it->second, "' is forbidden");
      if (info) info->notes.push_back("device " + t.deviceIds[static_cast<size_t>(d)]);
      o.report(1.0, "single: done");
      return finishAssignmentPlan(t, assign(d), name(), o);
    }
    // The device whose all-on-it plan simulates fastest; at the time limit, the fastest so far (a
    // workflow's hundreds of processors take seconds).
    const Deadline deadline = o.startDeadline();
    std::optional<Plan> best;
    double bestMakespan = kInf;
    DeviceId bestDev = -1;
    bool timeUp = false;
    for (DeviceId d = 0; d < t.numDevices(); ++d) {
      if (o.cancelled()) return cancelledError();
      if (best && deadline.passed()) {
        timeUp = true;
        break;
      }
      o.report(static_cast<double>(d) / t.numDevices(), "single: trying " + t.deviceIds[static_cast<size_t>(d)]);
      if (isForbidden(c, d)) continue;
      Plan plan = finishAssignmentPlan(t, assign(d), name(), o);
      auto tl = simulate(t, plan, o.sim);
      if (!tl) return Error{tl.message()};
      if (!best || tl->makespan < bestMakespan) {
        bestMakespan = tl->makespan;
        best = std::move(plan);
        bestDev = d;
      }
    }
    if (!best) return makeError("single: every device is forbidden");
    if (info) info->notes.push_back("device " + t.deviceIds[static_cast<size_t>(bestDev)]);
    if (info && timeUp) info->notes.push_back("time limit reached: not every device tried");
    o.report(1.0, "single: done");
    return std::move(*best);
  }
};

// ---------------------------------------------------------------------------------------------------

class ManualPriority final : public Scheduler {
 public:
  std::string name() const override { return "priority"; }
  std::string title() const override { return "Manual device priority"; }
  std::string description() const override {
    return "ONNX Runtime style: each op on the first device of a user list that can run it "
           "(param priority=npu,gpu,cpu; default: accelerators in platform order, then the host).";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    std::vector<DeviceId> list;
    auto it = o.params.find("priority");
    if (it != o.params.end() && !trim(it->second).empty()) {
      for (const std::string& part : split(it->second, ',')) {
        const std::string id = trim(part);
        if (id.empty()) continue;
        const DeviceId d = findDeviceId(t, id);
        if (d < 0) return makeError("priority: unknown device '", id, "' (devices: ", deviceList(t), ")");
        list.push_back(d);
      }
    } else {
      for (DeviceId d = 0; d < t.numDevices(); ++d)
        if (d != t.host) list.push_back(d);
      list.push_back(t.host);
    }
    if (info) {
      std::vector<std::string> ids;
      for (DeviceId d : list) ids.push_back(t.deviceIds[static_cast<size_t>(d)]);
      info->notes.push_back("priority " + join(ids, ","));
    }
    std::vector<DeviceId> dev(static_cast<size_t>(t.numTasks()), -1);
    for (TaskId v = 0; v < t.numTasks(); ++v) {
      for (DeviceId d : list)
        if (c.allowed(t, v, d)) {
          dev[static_cast<size_t>(v)] = d;
          break;
        }
      if (dev[static_cast<size_t>(v)] < 0) dev[static_cast<size_t>(v)] = fallback(t, c, v);
    }
    if (o.cancelled()) return cancelledError();
    o.report(1.0, "priority: done");
    return finishAssignmentPlan(t, std::move(dev), name(), o);
  }
};

// ---------------------------------------------------------------------------------------------------

class StaticTypeBased final : public Scheduler {
 public:
  std::string name() const override { return "static"; }
  std::string title() const override { return "Static type-based"; }
  std::string description() const override {
    return "A table op type -> device: Conv/ConvTranspose/Gemm/MatMul on the accelerator, the rest on the "
           "host (param table=Conv=npu,MatMul=gpu,*=cpu).";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* /*info*/) const override {
    constexpr DeviceId kAccelerator = -2;  // the first non-host device that may run the op
    std::map<std::string, DeviceId> table;
    for (const char* type : {"Conv", "ConvTranspose", "Gemm", "MatMul", "FusedConv", "FusedGemm", "FusedMatMul",
                             "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"})
      table[type] = kAccelerator;
    DeviceId rest = t.host;
    auto it = o.params.find("table");
    if (it != o.params.end()) {
      for (const std::string& part : split(it->second, ',')) {
        if (trim(part).empty()) continue;
        const auto eq = part.find('=');
        if (eq == std::string::npos) return makeError("static: table entry '", trim(part), "' is not TYPE=DEVICE");
        const std::string type = trim(std::string_view(part).substr(0, eq));
        const std::string id = trim(std::string_view(part).substr(eq + 1));
        DeviceId d = id == "accelerator" ? kAccelerator : findDeviceId(t, id);
        if (d == -1) return makeError("static: unknown device '", id, "' (devices: ", deviceList(t), ")");
        if (type.empty()) return makeError("static: table entry '", trim(part), "' has no op type");
        if (type == "*")
          rest = d;
        else
          table[type] = d;
      }
    }
    auto accelerator = [&](TaskId v) -> DeviceId {
      for (DeviceId d = 0; d < t.numDevices(); ++d)
        if (d != t.host && c.allowed(t, v, d)) return d;
      return -1;
    };
    std::vector<DeviceId> dev(static_cast<size_t>(t.numTasks()), -1);
    for (TaskId v = 0; v < t.numTasks(); ++v) {
      const auto vi = static_cast<size_t>(v);
      const std::string& type = vi < t.taskTypes.size() ? t.taskTypes[vi] : std::string();
      auto tt = table.find(type);
      DeviceId want = tt != table.end() ? tt->second : rest;
      if (want == kAccelerator) want = accelerator(v);
      dev[vi] = want >= 0 && c.allowed(t, v, want) ? want : fallback(t, c, v);
    }
    if (o.cancelled()) return cancelledError();
    o.report(1.0, "static: done");
    return finishAssignmentPlan(t, std::move(dev), name(), o);
  }
};

// ---------------------------------------------------------------------------------------------------

class Greedy final : public Scheduler {
 public:
  std::string name() const override { return "greedy"; }
  std::string title() const override { return "Per-op greedy"; }
  std::string description() const override {
    return "Profiling-based: each op on its fastest device, ignoring transfers.";
  }
  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* /*info*/) const override {
    std::vector<DeviceId> dev(static_cast<size_t>(t.numTasks()));
    for (TaskId v = 0; v < t.numTasks(); ++v)
      dev[static_cast<size_t>(v)] = argminAllowed(t, c, v, [&](DeviceId d) { return t.w(v, d); });
    if (o.cancelled()) return cancelledError();
    if (o.trace) {
      // Teaching mode: one decision per operator, in dependency order; the device table shows the costs
      // the choice looked at (nothing else: no finish times, no transfers).
      for (TaskId v : t.topoOrder()) {
        TraceStep st;
        st.kind = "place";
        st.task = v;
        st.chosen = dev[static_cast<size_t>(v)];
        st.finish.assign(static_cast<size_t>(t.numDevices()), kInf);
        for (DeviceId x = 0; x < t.numDevices(); ++x)
          if (c.allowed(t, v, x)) st.finish[static_cast<size_t>(x)] = t.w(v, x);
        const double w = st.chosen >= 0 ? t.w(v, st.chosen) : kInf;
        char cost[48];
        std::snprintf(cost, sizeof cost, "%.3f us", w);
        st.note = "greedy: '" + t.taskNames[static_cast<size_t>(v)] + "' goes to its cheapest allowed device, " +
                  (st.chosen >= 0 ? t.deviceIds[static_cast<size_t>(st.chosen)] : std::string("none")) + " (" + cost +
                  "); greedy ignores transfers and waiting, so the devices show costs, not finish times";
        o.trace(st);
      }
    }
    o.report(1.0, "greedy: done");
    return finishAssignmentPlan(t, std::move(dev), name(), o);
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeSingleDevice() { return std::make_unique<SingleDevice>(); }
std::unique_ptr<Scheduler> makeManualPriority() { return std::make_unique<ManualPriority>(); }
std::unique_ptr<Scheduler> makeStaticTypeBased() { return std::make_unique<StaticTypeBased>(); }
std::unique_ptr<Scheduler> makeGreedy() { return std::make_unique<Greedy>(); }

}  // namespace partex
