#include "cost/instances.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "support/files.h"
#include "support/sha256.h"
#include "support/strings.h"

namespace partex {

namespace {

using json = nlohmann::ordered_json;

Result<json> parseJson(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return makeError(origin, ": not valid JSON (", msg, ")");
  }
}

bool isNonNegative(const json& v) {
  return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0;
}

/// Adds an edge src -> dst, refusing self-loops and duplicates.
Status addEdge(CostTable& t, std::set<std::pair<TaskId, TaskId>>& seen, TaskId a, TaskId b, int64_t bytes,
               double fixedUs, const std::string& origin) {
  if (a == b) return makeError(origin, ": edge from task '", t.taskNames[static_cast<size_t>(a)], "' to itself");
  if (!seen.insert({a, b}).second)
    return makeError(origin, ": edge ", t.taskNames[static_cast<size_t>(a)], " -> ",
                     t.taskNames[static_cast<size_t>(b)], " is listed twice");
  t.edges.push_back(Edge{a, b, bytes, fixedUs});
  return Status::ok();
}

/// Indexes the edges, refuses a cycle and sets a task graph's defaults (free links that never contend).
Status finish(CostTable& t, const std::string& origin) {
  t.indexEdges();
  if (t.topoOrder().size() != t.taskNames.size()) return makeError(origin, ": the task graph has a cycle");
  finishTaskTable(t);
  return Status::ok();
}

/// One link a -> b of `bytesPerUs` (kInf: free, 0: none) and `latencyUs`.
void setLink(CostTable& t, size_t a, size_t b, double bytesPerUs, double latencyUs) {
  const size_t m = t.deviceIds.size();
  t.linkBytesPerUs[a * m + b] = bytesPerUs;
  t.linkLatencyUs[a * m + b] = latencyUs;
}

constexpr double kBytesPerMegabyte = 1e6;

/// Partex's own task graph: devices (names, or objects with a speed), tasks (per-device times, or one
/// amount of work divided by each device's speed), edges (a transfer time, or a size carried over the
/// network's links) and an optional network.
Result<CostTable> parsePartexTaskGraph(const json& j, const std::string& origin) {
  if (!j.contains("devices") || !j["devices"].is_array() || j["devices"].empty())
    return makeError(origin, ": field 'devices' must be a non-empty array of device names");
  if (!j.contains("tasks") || !j["tasks"].is_object() || j["tasks"].empty())
    return makeError(origin, ": field 'tasks' must be a non-empty object {task: [cost per device]}");
  CostTable t;
  t.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : baseName(origin);
  std::map<std::string, size_t> devIndex;
  std::vector<double> speed;
  for (const auto& d : j["devices"]) {
    std::string id;
    double s = 1.0;
    if (d.is_string()) {
      id = d.get<std::string>();
    } else if (d.is_object() && d.contains("name") && d["name"].is_string()) {
      id = d["name"].get<std::string>();
      if (d.contains("speed")) {
        if (!d["speed"].is_number() || !(d["speed"].get<double>() > 0) || !std::isfinite(d["speed"].get<double>()))
          return makeError(origin, ": device '", id, "': 'speed' must be a positive number");
        s = d["speed"].get<double>();
      }
    } else {
      return makeError(origin, ": field 'devices' must hold names or {\"name\": ..., \"speed\": ...} objects");
    }
    if (!devIndex.emplace(id, t.deviceIds.size()).second)
      return makeError(origin, ": device '", id, "' is listed twice");
    t.deviceIds.push_back(id);
    speed.push_back(s);
  }
  const size_t m = t.deviceIds.size();
  std::map<std::string, TaskId> index;
  for (const auto& [name, costs] : j["tasks"].items()) {
    bool any = false;
    if (isNonNegative(costs)) {  // one amount of work: its time on each device is work / speed
      for (size_t d = 0; d < m; ++d) {
        t.cost.push_back(costs.get<double>() / speed[d]);
        t.provenance.push_back(Provenance::Imported);
      }
      any = true;
    } else {
      if (!costs.is_array() || costs.size() != m)
        return makeError(origin, ": task '", name, "' must list ", std::to_string(m),
                         " costs (one per device, null where it cannot run) or be one non-negative amount of work");
      for (const auto& c : costs) {
        if (c.is_null()) {
          t.cost.push_back(kInf);
        } else if (isNonNegative(c)) {
          t.cost.push_back(c.get<double>());
          any = true;
        } else {
          return makeError(origin, ": task '", name, "': costs must be non-negative numbers or null");
        }
        t.provenance.push_back(Provenance::Imported);
      }
    }
    if (!any) return makeError(origin, ": task '", name, "' can run on no device (all costs null)");
    index[name] = static_cast<TaskId>(t.taskNames.size());
    t.taskNames.push_back(name);
    t.taskTypes.emplace_back();
  }
  auto task = [&](const json& v, TaskId& out) -> Status {
    if (!v.is_string()) return makeError(origin, ": an edge names its tasks by string, got ", v.dump());
    auto it = index.find(v.get<std::string>());
    if (it == index.end()) return makeError(origin, ": edge names unknown task '", v.get<std::string>(), "'");
    out = it->second;
    return Status::ok();
  };
  const bool hasNetwork = j.contains("network");
  std::set<std::pair<TaskId, TaskId>> seenEdge;
  if (j.contains("edges")) {
    if (!j["edges"].is_array()) return makeError(origin, ": field 'edges' must be an array of [from, to, cost]");
    for (const auto& e : j["edges"]) {
      TaskId a = 0, b = 0;
      int64_t bytes = 0;
      double fixed = -1.0;
      if (e.is_array() && e.size() == 3 && isNonNegative(e[2])) {
        if (auto s = task(e[0], a); !s) return Error{s.message()};
        if (auto s = task(e[1], b); !s) return Error{s.message()};
        fixed = e[2].get<double>();
      } else if (e.is_object() && e.contains("from") && e.contains("to") &&
                 (e.contains("time") != e.contains("bytes"))) {
        if (auto s = task(e["from"], a); !s) return Error{s.message()};
        if (auto s = task(e["to"], b); !s) return Error{s.message()};
        const json& v = e.contains("time") ? e["time"] : e["bytes"];
        if (!isNonNegative(v) || v.get<double>() > 9e18)
          return makeError(origin, ": edge ", e.dump(), ": '", e.contains("time") ? "time" : "bytes",
                           "' must be a non-negative number");
        if (e.contains("time")) {
          fixed = v.get<double>();
        } else {
          if (!hasNetwork)
            return makeError(origin, ": edge ", e.dump(), " gives bytes, but the file has no 'network' to carry them");
          bytes = std::llround(v.get<double>());
        }
      } else {
        return makeError(origin,
                         ": every edge must be [\"from\", \"to\", non-negative transfer time] or {\"from\", \"to\", "
                         "\"time\" or \"bytes\"}, got ",
                         e.dump());
      }
      if (auto s = addEdge(t, seenEdge, a, b, bytes, fixed, origin); !s) return Error{s.message()};
    }
  }
  if (auto s = finish(t, origin); !s) return Error{s.message()};
  if (!hasNetwork) return t;  // links are free and never contend, as in the papers
  const json& net = j["network"];
  if (!net.is_object()) return makeError(origin, ": field 'network' must be an object {bandwidth, latency, links}");
  auto number = [&](const json& o, const char* key, double def, double& out) -> Status {
    out = def;
    if (!o.contains(key)) return Status::ok();
    if (!isNonNegative(o[key])) return makeError(origin, ": network: '", key, "' must be a non-negative number");
    out = o[key].get<double>();
    return Status::ok();
  };
  double bw = 0, lat = 0;
  if (auto s = number(net, "bandwidth", kInf, bw); !s) return Error{s.message()};
  if (auto s = number(net, "latency", 0.0, lat); !s) return Error{s.message()};
  bool contended = false;
  if (net.contains("contended")) {
    if (!net["contended"].is_boolean()) return makeError(origin, ": network: 'contended' must be true or false");
    contended = net["contended"].get<bool>();
  }
  setUniformLinks(t, lat, bw, contended);
  if (net.contains("links")) {
    if (!net["links"].is_array()) return makeError(origin, ": network: 'links' must be an array");
    for (const auto& l : net["links"]) {
      if (!l.is_object()) return makeError(origin, ": network: every link must be an object");
      std::string from, to;
      bool both = false;
      if (l.contains("between") && l["between"].is_array() && l["between"].size() == 2 && l["between"][0].is_string() &&
          l["between"][1].is_string()) {
        from = l["between"][0].get<std::string>();
        to = l["between"][1].get<std::string>();
        both = true;
      } else if (l.contains("from") && l.contains("to") && l["from"].is_string() && l["to"].is_string()) {
        from = l["from"].get<std::string>();
        to = l["to"].get<std::string>();
      } else {
        return makeError(origin, ": network: a link names its devices as \"between\": [a, b] or \"from\"/\"to\", got ",
                         l.dump());
      }
      auto fa = devIndex.find(from), fb = devIndex.find(to);
      if (fa == devIndex.end() || fb == devIndex.end())
        return makeError(origin, ": network: link names unknown device '", fa == devIndex.end() ? from : to, "'");
      if (fa->second == fb->second) return makeError(origin, ": network: link from device '", from, "' to itself");
      double lb = 0, ll = 0;
      if (auto s = number(l, "bandwidth", bw, lb); !s) return Error{s.message()};
      if (auto s = number(l, "latency", lat, ll); !s) return Error{s.message()};
      setLink(t, fa->second, fb->second, lb, ll);
      if (both) setLink(t, fb->second, fa->second, lb, ll);
    }
  }
  return t;
}

Result<CostTable> sagaTable(const json& j, const std::string& origin) {
  if (!j.is_object() || !j.contains("task_graph") || !j.contains("network"))
    return makeError(origin, ": a SAGA problem instance is an object with 'task_graph' and 'network'");
  const json& tg = j["task_graph"];
  const json& net = j["network"];
  if (!tg.is_object() || !tg.contains("tasks") || !tg["tasks"].is_array() || tg["tasks"].empty())
    return makeError(origin, ": task_graph.tasks must be a non-empty array of {name, cost}");
  if (!net.is_object() || !net.contains("nodes") || !net["nodes"].is_array() || net["nodes"].empty())
    return makeError(origin, ": network.nodes must be a non-empty array of {name, speed}");
  CostTable t;
  t.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : baseName(origin);
  std::map<std::string, size_t> devIndex;
  std::vector<double> speed;
  for (const auto& n : net["nodes"]) {
    if (!n.is_object() || !n.contains("name") || !n["name"].is_string() || !n.contains("speed") ||
        !n["speed"].is_number() || !(n["speed"].get<double>() > 0) || !std::isfinite(n["speed"].get<double>()))
      return makeError(origin, ": network.nodes: every node needs a name and a positive speed, got ", n.dump());
    const std::string id = n["name"].get<std::string>();
    if (!devIndex.emplace(id, t.deviceIds.size()).second)
      return makeError(origin, ": network node '", id, "' is listed twice");
    t.deviceIds.push_back(id);
    speed.push_back(n["speed"].get<double>());
  }
  const size_t m = t.deviceIds.size();
  // Sorted by name, as SAGA's frozen sets have no order: the same instance gives the same table.
  std::vector<std::pair<std::string, double>> tasks;
  std::set<std::string> seenTask;
  for (const auto& v : tg["tasks"]) {
    if (!v.is_object() || !v.contains("name") || !v["name"].is_string() || !v.contains("cost") ||
        !isNonNegative(v["cost"]))
      return makeError(origin, ": task_graph.tasks: every task needs a name and a non-negative cost, got ", v.dump());
    if (!seenTask.insert(v["name"].get<std::string>()).second)
      return makeError(origin, ": task '", v["name"].get<std::string>(), "' is listed twice");
    tasks.emplace_back(v["name"].get<std::string>(), v["cost"].get<double>());
  }
  std::sort(tasks.begin(), tasks.end());
  std::map<std::string, TaskId> index;
  for (const auto& [name, cost] : tasks) {
    index[name] = static_cast<TaskId>(t.taskNames.size());
    t.taskNames.push_back(name);
    t.taskTypes.emplace_back();
    for (size_t d = 0; d < m; ++d) {
      t.cost.push_back(cost / speed[d]);
      t.provenance.push_back(Provenance::Imported);
    }
  }
  std::set<std::pair<TaskId, TaskId>> seenEdge;
  if (tg.contains("dependencies")) {
    if (!tg["dependencies"].is_array()) return makeError(origin, ": task_graph.dependencies must be an array");
    for (const auto& e : tg["dependencies"]) {
      if (!e.is_object() || !e.contains("source") || !e.contains("target") || !e["source"].is_string() ||
          !e["target"].is_string() || (e.contains("size") && !isNonNegative(e["size"])))
        return makeError(
            origin,
            ": task_graph.dependencies: every dependency needs a source, a target and a non-negative size, got ",
            e.dump());
      auto a = index.find(e["source"].get<std::string>()), b = index.find(e["target"].get<std::string>());
      if (a == index.end() || b == index.end())
        return makeError(origin, ": dependency names unknown task '",
                         (a == index.end() ? e["source"] : e["target"]).get<std::string>(), "'");
      const double size = e.contains("size") ? e["size"].get<double>() : 0.0;
      if (size * kBytesPerMegabyte > 9e18) return makeError(origin, ": dependency ", e.dump(), ": size too large");
      if (auto s = addEdge(t, seenEdge, a->second, b->second, std::llround(size * kBytesPerMegabyte), -1.0, origin); !s)
        return Error{s.message()};
    }
  }
  if (auto s = finish(t, origin); !s) return Error{s.message()};
  // Links: undirected, the same speed both ways; a pair the instance leaves out has none (SAGA's
  // Network.create gives it speed 0).
  setUniformLinks(t, 0.0, 0.0, false);
  if (net.contains("edges")) {
    if (!net["edges"].is_array()) return makeError(origin, ": network.edges must be an array");
    for (const auto& e : net["edges"]) {
      if (!e.is_object() || !e.contains("source") || !e.contains("target") || !e["source"].is_string() ||
          !e["target"].is_string())
        return makeError(origin, ": network.edges: every edge needs a source and a target, got ", e.dump());
      auto a = devIndex.find(e["source"].get<std::string>()), b = devIndex.find(e["target"].get<std::string>());
      if (a == devIndex.end() || b == devIndex.end())
        return makeError(origin, ": network edge names unknown node '",
                         (a == devIndex.end() ? e["source"] : e["target"]).get<std::string>(), "'");
      if (a->second == b->second) continue;  // a node to itself: always free
      const json sp = e.contains("speed") ? e["speed"] : json();
      double mbPerUnit = 0;
      if (sp.is_null()) {
        mbPerUnit = kInf;  // pydantic writes infinity as null
      } else if (isNonNegative(sp)) {
        mbPerUnit = sp.get<double>();
      } else {
        return makeError(origin, ": network edge ", e.dump(), ": speed must be a non-negative number or null");
      }
      const double bpu = mbPerUnit == kInf ? kInf : mbPerUnit * kBytesPerMegabyte;
      setLink(t, a->second, b->second, bpu, 0.0);
      setLink(t, b->second, a->second, bpu, 0.0);
    }
  }
  return t;
}

Result<CostTable> wfCommonsTable(const json& j, const std::string& origin, double bytesPerSecond, bool onePerMachine) {
  if (!j.is_object() || !j.contains("workflow") || !j["workflow"].is_object())
    return makeError(origin, ": a WfCommons instance is an object with a 'workflow' object");
  const json& wf = j["workflow"];
  // WfFormat 1.5 and 1.6 split the workflow into specification (tasks, files) and execution
  // (runtimes, machines); 1.4 and before keep everything in workflow.tasks and workflow.machines. 1.6
  // adds optional metrics, which change nothing here.
  const bool v15 = wf.contains("specification");
  const json& specTasks = v15 ? wf["specification"].value("tasks", json()) : wf.value("tasks", json());
  if (!specTasks.is_array() || specTasks.empty())
    return makeError(origin, ": the workflow lists no tasks (", v15 ? "workflow.specification.tasks" : "workflow.tasks",
                     ")");
  const json machines = v15 ? (wf.contains("execution") ? wf["execution"].value("machines", json()) : json())
                            : wf.value("machines", json());
  if (!machines.is_array() || machines.empty())
    return makeError(origin, ": the workflow lists no machines: Partex needs the machines to schedule on");
  CostTable t;
  t.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : baseName(origin);
  // Machines: name, CPU speed, cores.
  std::vector<std::string> machineName;
  std::vector<double> machineSpeed;
  std::vector<int64_t> machineCores;
  std::set<std::string> seenDev;
  for (const auto& mc : machines) {
    if (!mc.is_object() || !mc.contains("nodeName") || !mc["nodeName"].is_string())
      return makeError(origin, ": every machine needs a nodeName, got ", mc.dump().substr(0, 200));
    const std::string id = mc["nodeName"].get<std::string>();
    double s = 1.0;
    int64_t cores = 1;
    if (mc.contains("cpu") && mc["cpu"].is_object()) {
      const json& cpu = mc["cpu"];
      const json& v = cpu.contains("speedInMHz") ? cpu["speedInMHz"] : cpu.value("speed", json(1.0));
      if (!v.is_number() || !(v.get<double>() > 0))
        return makeError(origin, ": machine '", id, "': the CPU speed must be positive");
      s = v.get<double>();
      const json& c = cpu.contains("coreCount") ? cpu["coreCount"] : cpu.value("count", json(1));
      if (!c.is_number() || !(c.get<double>() >= 1) || c.get<double>() > 1e6)
        return makeError(origin, ": machine '", id, "': the core count must be a number from 1 up, got ", c.dump());
      cores = static_cast<int64_t>(c.get<double>());
    }
    if (!seenDev.insert(id).second) continue;  // the same machine listed again (1.4 instances do)
    machineName.push_back(id);
    machineSpeed.push_back(s);
    machineCores.push_back(cores);
  }
  double mean = 0;
  for (double s : machineSpeed) mean += s;
  mean /= static_cast<double>(machineSpeed.size());
  // Processors: one per core (at most one per task: more could never all be busy), or one per
  // machine. `machineOf` says whose memory a processor shares.
  std::vector<double> speed;
  std::vector<size_t> machineOf;
  const auto numTasks = static_cast<int64_t>(specTasks.size());
  for (size_t k = 0; k < machineName.size(); ++k) {
    const int64_t procs = onePerMachine ? 1 : std::min(machineCores[k], numTasks);
    for (int64_t c = 0; c < procs; ++c) {
      t.deviceIds.push_back(onePerMachine || machineCores[k] == 1 ? machineName[k] : machineName[k] + "/" + std::to_string(c));
      speed.push_back(machineSpeed[k]);
      machineOf.push_back(k);
    }
  }
  const size_t m = t.deviceIds.size();
  // Runtimes: in the task (1.4) or in workflow.execution.tasks by id (1.5).
  std::map<std::string, double> runtimeById;
  if (v15 && wf.contains("execution") && wf["execution"].contains("tasks") && wf["execution"]["tasks"].is_array())
    for (const auto& et : wf["execution"]["tasks"])
      if (et.is_object() && et.contains("id") && et["id"].is_string() &&
          isNonNegative(et.value("runtimeInSeconds", json())))
        runtimeById[et["id"].get<std::string>()] = et["runtimeInSeconds"].get<double>();
  std::map<std::string, int64_t> fileBytes;  // 1.5: sizes in specification.files
  if (v15 && wf["specification"].contains("files") && wf["specification"]["files"].is_array())
    for (const auto& f : wf["specification"]["files"])
      if (f.is_object() && f.contains("id") && f["id"].is_string() && isNonNegative(f.value("sizeInBytes", json())))
        fileBytes[f["id"].get<std::string>()] = f["sizeInBytes"].get<int64_t>();
  std::map<std::string, TaskId> index;
  std::vector<std::set<std::string>> reads, parents;
  std::vector<std::map<std::string, int64_t>> writes;
  for (const auto& task : specTasks) {
    if (!task.is_object()) return makeError(origin, ": every task must be an object");
    // Parents name tasks by id in 1.5 and by name before.
    const char* keyField = v15 ? "id" : "name";
    const char* otherField = v15 ? "name" : "id";
    const std::string key = task.contains(keyField) && task[keyField].is_string() ? task[keyField].get<std::string>()
                            : task.contains(otherField) && task[otherField].is_string()
                                ? task[otherField].get<std::string>()
                                : std::string();
    if (key.empty()) return makeError(origin, ": a task has neither an id nor a name");
    double runtime = -1;
    for (const char* k : {"runtimeInSeconds", "runtime"})
      if (runtime < 0 && isNonNegative(task.value(k, json()))) runtime = task[k].get<double>();
    if (runtime < 0 && runtimeById.count(key)) runtime = runtimeById[key];
    if (runtime < 0) return makeError(origin, ": task '", key, "' has no runtime (runtimeInSeconds)");
    if (!index.emplace(key, static_cast<TaskId>(t.taskNames.size())).second)
      return makeError(origin, ": task '", key, "' is listed twice");
    t.taskNames.push_back(key);
    t.taskTypes.push_back(
        task.contains("category") && task["category"].is_string() ? task["category"].get<std::string>() : "");
    for (size_t d = 0; d < m; ++d) {
      t.cost.push_back(runtime * 1e6 * mean / speed[d]);
      t.provenance.push_back(Provenance::Imported);
    }
    std::set<std::string> in, par;
    std::map<std::string, int64_t> out;
    if (task.contains("files") && task["files"].is_array()) {  // 1.4: {name, size(InBytes), link}
      for (const auto& f : task["files"]) {
        if (!f.is_object()) continue;
        const std::string fname = f.contains("name") && f["name"].is_string() ? f["name"].get<std::string>()
                                  : f.contains("id") && f["id"].is_string()   ? f["id"].get<std::string>()
                                                                              : std::string();
        const json& sz = f.contains("sizeInBytes") ? f["sizeInBytes"] : f.value("size", json(0));
        const std::string link = f.value("link", std::string());
        if (link == "input")
          in.insert(fname);
        else if (link == "output")
          out[fname] = isNonNegative(sz) ? static_cast<int64_t>(sz.get<double>()) : 0;
      }
    }
    for (const char* k : {"inputFiles", "outputFiles"})  // 1.5: file ids, sizes in specification.files
      if (task.contains(k) && task[k].is_array())
        for (const auto& f : task[k])
          if (f.is_string()) {
            if (std::string(k) == "inputFiles")
              in.insert(f.get<std::string>());
            else
              out[f.get<std::string>()] = fileBytes.count(f.get<std::string>()) ? fileBytes[f.get<std::string>()] : 0;
          }
    if (task.contains("parents") && task["parents"].is_array())
      for (const auto& p : task["parents"])
        if (p.is_string()) par.insert(p.get<std::string>());
    reads.push_back(std::move(in));
    writes.push_back(std::move(out));
    parents.push_back(std::move(par));
  }
  std::set<std::pair<TaskId, TaskId>> seenEdge;
  // Data items: the edges of one parent that carry the same files share one (sent once to each
  // processor); an edge whose files differ from every other's is its own item.
  std::map<std::pair<TaskId, std::vector<std::string>>, int32_t> itemOf;
  for (size_t c = 0; c < parents.size(); ++c)
    for (const std::string& p : parents[c]) {
      auto it = index.find(p);
      if (it == index.end()) return makeError(origin, ": task '", t.taskNames[c], "' names unknown parent '", p, "'");
      int64_t bytes = 0;
      std::vector<std::string> files;
      for (const auto& [file, size] : writes[static_cast<size_t>(it->second)])
        if (reads[c].count(file)) {
          bytes += size;
          files.push_back(file);  // in the map's order: the same set gives the same list
        }
      if (auto s = addEdge(t, seenEdge, it->second, static_cast<TaskId>(c), bytes, -1.0, origin); !s)
        return Error{s.message()};
      if (!files.empty()) {
        auto [slot, fresh] = itemOf.emplace(std::make_pair(it->second, std::move(files)), t.numItems);
        if (fresh) ++t.numItems;
        t.edges.back().item = slot->second;
      }
    }
  if (auto s = finish(t, origin); !s) return Error{s.message()};  // the other edges get items of their own
  if (!(bytesPerSecond > 0)) return makeError(origin, ": the file system's bandwidth must be positive");
  setUniformLinks(t, 0.0, bytesPerSecond / 1e6, false);
  for (size_t a = 0; a < m; ++a)  // the cores of one machine share its memory
    for (size_t b = 0; b < m; ++b)
      if (a != b && machineOf[a] == machineOf[b]) setLink(t, a, b, kInf, 0.0);
  return t;
}

/// The format of a parsed instance ("saga", "wfcommons", "partex"; "" for none).
std::string formatOf(const json& j) {
  if (!j.is_object()) return "";
  if (j.contains("task_graph") && j.contains("network")) return "saga";
  if (j.contains("workflow")) return "wfcommons";
  if (j.contains("tasks")) return "partex";
  return "";
}

}  // namespace

std::string instanceFormat(const std::string& text) {
  const auto j = json::parse(text, nullptr, false);
  return j.is_discarded() ? "" : formatOf(j);
}

bool looksLikeTaskGraph(const std::string& bytes) {
  // Every format is a JSON object; parseInstance says what is wrong with one that is none of them.
  size_t i = 0;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  return i < bytes.size() && bytes[i] == '{';
}

Result<CostTable> parseTaskGraph(const std::string& text, const std::string& origin) {
  auto j = parseJson(text, origin);
  if (!j) return Error{j.message()};
  if (!j->is_object()) return makeError(origin, ": a task graph must be a JSON object");
  return parsePartexTaskGraph(*j, origin);
}

Result<CostTable> parseSagaInstance(const std::string& text, const std::string& origin) {
  auto j = parseJson(text, origin);
  if (!j) return Error{j.message()};
  return sagaTable(*j, origin);
}

Result<CostTable> parseWfCommons(const std::string& text, const std::string& origin, double bytesPerSecond, bool onePerMachine) {
  auto j = parseJson(text, origin);
  if (!j) return Error{j.message()};
  return wfCommonsTable(*j, origin, bytesPerSecond, onePerMachine);
}

/// The table of a parsed instance in format `f` (formatOf).
static Result<CostTable> instanceTable(const json& j, const std::string& f, const std::string& origin, const InstanceOptions& o) {
  if (f == "saga") return sagaTable(j, origin);
  if (f == "wfcommons") return wfCommonsTable(j, origin, o.wfBytesPerSecond, o.wfOnePerMachine);
  if (f == "partex") return parsePartexTaskGraph(j, origin);
  std::string has;
  if (j.is_object()) {
    std::vector<std::string> keys;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (keys.size() == 6) {
        keys.push_back("...");
        break;
      }
      keys.push_back("'" + it.key() + "'");
    }
    has = keys.empty() ? "an empty object" : "keys " + join(keys, ", ");
  } else {
    has = std::string("a JSON ") + j.type_name();
  }
  return makeError(origin,
                   ": not a scheduling instance: looked for the keys 'tasks' (a Partex task graph), 'task_graph' and "
                   "'network' (a SAGA problem instance) or 'workflow' (a WfCommons workflow), found ",
                   has);
}

Result<CostTable> parseInstance(const std::string& text, const std::string& origin, const InstanceOptions& opts) {
  auto j = parseJson(text, origin);  // parsed once, whatever the format
  if (!j) return Error{j.message()};
  return instanceTable(*j, formatOf(*j), origin, opts);
}

Result<bool> isInstanceFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    char head[256];
    in.read(head, sizeof head);
    const std::streamsize n = in.gcount();
    std::streamsize i = 0;
    while (i < n && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
    if (i < n) return head[i] == '{';  // not JSON: an ONNX model (or something the importer refuses)
  }
  auto bytes = readFile(path);  // JSON, or an error readFile words (missing, a directory, unreadable)
  if (!bytes) return Error{bytes.message()};
  return looksLikeTaskGraph(*bytes);
}

Result<InstanceFile> readInstanceFile(const std::string& path, const InstanceOptions& opts) {
  auto bytes = readFile(path);
  if (!bytes) return Error{bytes.message()};
  auto j = parseJson(*bytes, path);
  if (!j) return Error{j.message()};
  InstanceFile f;
  f.format = formatOf(*j);
  auto t = instanceTable(*j, f.format, path, opts);
  if (!t) return Error{t.message()};
  f.table = std::move(t).value();
  f.sha256 = sha256Hex(*bytes);
  return f;
}

CostTable sagaFamilyInstance(const std::string& family, double ccr, uint64_t seed, const FamilyShape& s) {
  const int m = s.nodes;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> cost(1.0, 10.0), rel(0.5, 2.0);
  std::vector<std::pair<int, int>> edges;
  int n = 0;
  if (family == "chain") {
    n = s.chain;
    for (int i = 1; i < n; ++i) edges.push_back({i - 1, i});
  } else if (family == "out-tree" || family == "in-tree") {
    n = s.tree;  // a binary tree (full for 2^k - 1 tasks)
    for (int i = 1; i < n; ++i) edges.push_back(family == "out-tree" ? std::pair{(i - 1) / 2, i} : std::pair{i, (i - 1) / 2});
    if (family == "in-tree")  // tasks in topological order: leaves first
      for (auto& e : edges) e = {n - 1 - e.first, n - 1 - e.second};
  } else if (family == "fork-join") {
    const int branches = s.forkBranches, stages = s.forkStages;
    n = 2 + branches * stages;
    for (int b = 0; b < branches; ++b) {
      int prev = 0;
      for (int st = 0; st < stages; ++st) {
        const int v = 1 + b * stages + st;
        edges.push_back({prev, v});
        prev = v;
      }
      edges.push_back({prev, n - 1});
    }
  } else {  // layered: 5 layers of 6, each task fed by 1-3 tasks of the layer before
    const int layers = s.layers, width = s.width;
    n = layers * width;
    for (int l = 1; l < layers; ++l)
      for (int w = 0; w < width; ++w) {
        const int k = 1 + static_cast<int>(rng() % 3);
        std::vector<int> from;
        for (int j = 0; j < k; ++j) from.push_back((l - 1) * width + static_cast<int>(rng() % width));
        std::sort(from.begin(), from.end());
        from.erase(std::unique(from.begin(), from.end()), from.end());
        for (int f : from) edges.push_back({f, l * width + w});
      }
  }
  CostTable t;
  t.name = family;
  std::vector<double> speed(static_cast<size_t>(m));
  for (int d = 0; d < m; ++d) {
    t.deviceIds.push_back("n" + std::to_string(d));
    speed[static_cast<size_t>(d)] = rel(rng);
  }
  double meanCost = 0, meanSpeed = 0, meanSize = 0;
  for (int v = 0; v < n; ++v) {
    const double c = cost(rng);
    meanCost += c / n;
    t.taskNames.push_back("t" + std::to_string(v));
    t.taskTypes.emplace_back();
    for (int d = 0; d < m; ++d) {
      t.cost.push_back(c / speed[static_cast<size_t>(d)]);
      t.provenance.push_back(Provenance::Imported);
    }
  }
  for (double sp : speed) meanSpeed += sp / m;
  for (const auto& [a, b] : edges) {
    const double size = cost(rng);
    meanSize += size / static_cast<double>(edges.size());
    t.edges.push_back(Edge{a, b, std::llround(size * 1e6), -1.0});
  }
  finishTaskTable(t);
  // Link speed so that mean size / mean link speed = ccr x mean cost / mean node speed.
  const double linkSpeed = edges.empty() ? 1.0 : meanSize / (ccr * meanCost / meanSpeed);
  for (int a = 0; a < m; ++a)
    for (int b = a + 1; b < m; ++b) {
      const double bpu = linkSpeed * rel(rng) * 1e6;
      t.linkBytesPerUs[static_cast<size_t>(a * m + b)] = bpu;
      t.linkBytesPerUs[static_cast<size_t>(b * m + a)] = bpu;
    }
  return t;
}


}  // namespace partex
