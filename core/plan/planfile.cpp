#include "plan/planfile.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "plan/fusedkernels.h"
#include "plan/jsonutil.h"
#include "sim/memory.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex {

namespace {

using ojson = nlohmann::ordered_json;
using plandetail::timeValue;

/// Positions of every task on its device (plan.order); tasks absent from the order come after the
/// last ordered task of their device, in task order.
std::vector<int> positionsOf(const CostTable& t, const Plan& plan) {
  std::vector<int> pos(static_cast<size_t>(t.numTasks()), -1);
  std::vector<int> next(static_cast<size_t>(t.numDevices()), 0);
  for (size_t d = 0; d < plan.order.size() && d < next.size(); ++d) {
    for (TaskId v : plan.order[d]) {
      if (v < 0 || v >= t.numTasks() || pos[static_cast<size_t>(v)] >= 0) continue;
      pos[static_cast<size_t>(v)] = next[d]++;
    }
  }
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    auto& p = pos[static_cast<size_t>(v)];
    if (p >= 0) continue;
    DeviceId d = static_cast<size_t>(v) < plan.device.size() ? plan.device[static_cast<size_t>(v)] : 0;
    if (d < 0 || d >= t.numDevices()) continue;
    p = next[static_cast<size_t>(d)]++;
  }
  return pos;
}

std::string shortSha(const std::string& sha) {
  return sha.size() > 12 ? sha.substr(0, 12) + "..." : sha;
}

std::string describeModel(const std::string& file, const std::string& sha) {
  std::string s = file.empty() ? std::string("another model") : file;
  if (!sha.empty()) s += " (sha256 " + shortSha(sha) + ")";
  return s;
}

/// "'conv1' (Conv)" or "'T1'" for task graphs.
std::string opLabel(const CostTable& t, TaskId v) {
  std::string s = "'" + t.taskNames[static_cast<size_t>(v)] + "'";
  if (static_cast<size_t>(v) < t.taskTypes.size() && !t.taskTypes[static_cast<size_t>(v)].empty())
    s += " (" + t.taskTypes[static_cast<size_t>(v)] + ")";
  return s;
}

/// "at line 3, column 5: syntax error ..." out of nlohmann's parse_error text.
std::string parseErrorText(const nlohmann::json::parse_error& e) {
  std::string w = e.what();
  const std::string marker = "parse error ";
  auto at = w.find(marker);
  if (at != std::string::npos) w = w.substr(at + marker.size());
  return oneLine(w);
}

std::string jsonTypeName(const ojson& v) {
  return v.type_name();
}

}  // namespace

std::string planToJson(const CostTable& t, const Plan& plan, const Timeline& tl, const PlanIdentity& id,
                       const Graph* g) {
  const bool timed = tl.tasks.size() == static_cast<size_t>(t.numTasks());
  ojson doc;
  doc["format"] = kPlanFormat;
  doc["version"] = kPlanFormatVersion;
  ojson model;
  model["file"] = baseName(id.modelFile);
  model["sha256"] = id.modelSha256;
  model["operators"] = t.numTasks();
  doc["model"] = std::move(model);
  ojson platform;
  platform["name"] = id.platformName;
  platform["devices"] = t.deviceIds;
  doc["platform"] = std::move(platform);
  doc["algorithm"] = plan.algorithm;
  ojson options = ojson::object();
  if (!plan.optionsJson.empty()) {
    auto parsed = ojson::parse(plan.optionsJson, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) options = std::move(parsed);
  }
  doc["options"] = std::move(options);
  doc["makespan_us"] = timed ? timeValue(tl.makespan) : ojson(nullptr);

  auto pos = positionsOf(t, plan);
  ojson ops = ojson::array();
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const auto vi = static_cast<size_t>(v);
    ojson op;
    op["name"] = t.taskNames[vi];
    op["op_type"] = vi < t.taskTypes.size() ? t.taskTypes[vi] : std::string();
    DeviceId d = vi < plan.device.size() ? plan.device[vi] : -1;
    op["device"] = (d >= 0 && d < t.numDevices()) ? ojson(t.deviceIds[static_cast<size_t>(d)]) : ojson(nullptr);
    op["order"] = pos[vi] >= 0 ? ojson(pos[vi]) : ojson(nullptr);
    if (timed) {
      op["start_us"] = timeValue(tl.tasks[vi].start);
      op["end_us"] = timeValue(tl.tasks[vi].end);
    }
    ops.push_back(std::move(op));
  }
  doc["operators"] = std::move(ops);

  // Compiled blocks (PlanBlock): written only when the plan has some, so that plans of the schedulers
  // that leave kernels to the runtime keep their files unchanged.
  if (!plan.blocks.empty()) {
    std::vector<double> blockStart(plan.blocks.size(), 0), blockEnd(plan.blocks.size(), 0);
    ojson blocks = ojson::array();
    for (size_t b = 0; b < plan.blocks.size(); ++b) {
      const PlanBlock& blk = plan.blocks[b];
      ojson bj;
      bj["device"] = blk.device >= 0 && blk.device < t.numDevices() ? ojson(t.deviceIds[static_cast<size_t>(blk.device)]) : ojson(nullptr);
      bj["cores"] = blk.cores;
      ojson names = ojson::array();
      for (TaskId v : blk.tasks) names.push_back(v >= 0 && v < t.numTasks() ? ojson(t.taskNames[static_cast<size_t>(v)]) : ojson(nullptr));
      bj["ops"] = std::move(names);
      if (timed && !blk.tasks.empty()) {
        double st = kInf, en = 0;
        for (TaskId v : blk.tasks) {
          st = std::min(st, tl.tasks[static_cast<size_t>(v)].start);
          en = std::max(en, tl.tasks[static_cast<size_t>(v)].end);
        }
        bj["start_us"] = timeValue(st);
        bj["end_us"] = timeValue(en);
      }
      blocks.push_back(std::move(bj));
    }
    doc["blocks"] = std::move(blocks);
  }

  // Replicas for a stream (sim/plan.h): written only when the plan has some, one object per replica
  // after the plan itself, naming each device of the plan that the replica renames.
  if (!plan.replicas.empty()) {
    ojson reps = ojson::array();
    for (const auto& map : plan.replicas) {
      ojson rj = ojson::object();
      for (size_t d = 0; d < map.size() && d < plan.order.size() && d < static_cast<size_t>(t.numDevices()); ++d)
        if (!plan.order[d].empty() && map[d] != static_cast<DeviceId>(d) && map[d] >= 0 && map[d] < t.numDevices())
          rj[t.deviceIds[d]] = t.deviceIds[static_cast<size_t>(map[d])];
      reps.push_back(std::move(rj));
    }
    doc["replicas"] = std::move(reps);
  }

  if (g) {
    ojson kernels = ojson::array();
    for (const FusedKernel& k : fusedKernels(*g, t, plan.device, timed ? &tl : nullptr)) {
      ojson kj;
      kj["device"] = t.deviceIds[static_cast<size_t>(k.device)];
      ojson names = ojson::array();
      for (TaskId v : k.ops) names.push_back(t.taskNames[static_cast<size_t>(v)]);
      kj["ops"] = std::move(names);
      if (timed) {
        kj["start_us"] = timeValue(k.startUs);
        kj["end_us"] = timeValue(k.endUs);
      }
      kernels.push_back(std::move(kj));
    }
    doc["fused_kernels"] = std::move(kernels);
  }

  ojson transfers = ojson::array();
  auto taskName = [&](TaskId v) -> ojson {
    if (v < 0 || v >= t.numTasks()) return nullptr;
    return t.taskNames[static_cast<size_t>(v)];
  };
  auto deviceName = [&](DeviceId d) -> ojson {
    if (d < 0 || d >= t.numDevices()) return nullptr;
    return t.deviceIds[static_cast<size_t>(d)];
  };
  for (const auto& x : tl.transfers) {
    ojson tr;
    tr["src"] = taskName(x.src);
    tr["dst"] = taskName(x.dst);
    tr["from"] = deviceName(x.from);
    tr["to"] = deviceName(x.to);
    tr["start_us"] = timeValue(x.start);
    tr["end_us"] = timeValue(x.end);
    tr["bytes"] = x.bytes;
    transfers.push_back(std::move(tr));
  }
  doc["transfers"] = std::move(transfers);
  // Each device's memory (sim/memory.h): what the plan needs resident, against the capacity.
  if (timed) {
    ojson memory = ojson::array();
    const std::vector<DeviceMemory> mem = deviceMemory(t, plan, tl);
    for (DeviceId d = 0; d < t.numDevices(); ++d) {
      const DeviceMemory& dm = mem[static_cast<size_t>(d)];
      ojson mj;
      mj["device"] = t.deviceIds[static_cast<size_t>(d)];
      for (const auto& [key, bytes] : memoryFields(dm)) mj[key] = bytes;
      mj["peak_us"] = timeValue(dm.peakTime);
      mj["over_capacity"] = dm.over;
      memory.push_back(std::move(mj));
    }
    doc["memory"] = std::move(memory);
  }
  return doc.dump(2) + "\n";
}

Result<Plan> readPlan(const std::string& json, const std::string& origin, const CostTable& t,
                      const PlanIdentity& expect) {
  const std::string o = origin + ": ";
  ojson doc;
  try {
    doc = ojson::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    return makeError(o, "not valid JSON ", parseErrorText(e));
  }
  if (!doc.is_object()) return makeError(o, "not a Partex plan file (a JSON ", jsonTypeName(doc), ", not an object)");
  auto fmt = doc.find("format");
  if (fmt == doc.end() || !fmt->is_string())
    return makeError(o, "not a Partex plan file (no \"format\": \"", kPlanFormat, "\")");
  if (fmt->get<std::string>() != kPlanFormat)
    return makeError(o, "not a Partex plan file (format is '", oneLine(fmt->get<std::string>()), "', expected '",
                     kPlanFormat, "')");
  auto ver = doc.find("version");
  if (ver == doc.end() || !ver->is_number_integer() || ver->get<int64_t>() < 1)
    return makeError(o, "field 'version' must be a positive integer");
  if (ver->get<int64_t>() > kPlanFormatVersion)
    return makeError(o, "plan format version ", std::to_string(ver->get<int64_t>()),
                     " is newer than this Partex reads (version ", std::to_string(kPlanFormatVersion),
                     "); update Partex");

  // Model identity.
  std::string fileModel, fileSha;
  if (auto m = doc.find("model"); m != doc.end()) {
    if (!m->is_object()) return makeError(o, "field 'model' must be an object");
    if (auto f = m->find("file"); f != m->end() && f->is_string()) fileModel = oneLine(f->get<std::string>());
    if (auto s = m->find("sha256"); s != m->end()) {
      if (!s->is_string() && !s->is_null()) return makeError(o, "field 'model.sha256' must be a string");
      if (s->is_string()) fileSha = oneLine(s->get<std::string>());
    }
  }
  if (!expect.modelSha256.empty() && !fileSha.empty() && fileSha != expect.modelSha256)
    return makeError(o, "plan is for model ", describeModel(fileModel, fileSha), ", not for ",
                     describeModel(baseName(expect.modelFile), expect.modelSha256));

  Plan plan;
  plan.algorithm = "manual";
  if (auto a = doc.find("algorithm"); a != doc.end()) {
    if (!a->is_string()) return makeError(o, "field 'algorithm' must be a string");
    plan.algorithm = a->get<std::string>();
  }
  plan.optionsJson = "{}";
  if (auto op = doc.find("options"); op != doc.end() && !op->is_null()) {
    if (!op->is_object()) return makeError(o, "field 'options' must be an object");
    plan.optionsJson = op->dump();
  }

  auto opsIt = doc.find("operators");
  if (opsIt == doc.end() || !opsIt->is_array()) return makeError(o, "field 'operators' must be an array");
  const auto& ops = *opsIt;

  std::unordered_map<std::string, TaskId> taskByName;
  taskByName.reserve(static_cast<size_t>(t.numTasks()));
  for (TaskId v = 0; v < t.numTasks(); ++v) taskByName.emplace(t.taskNames[static_cast<size_t>(v)], v);
  std::unordered_map<std::string, DeviceId> deviceById;
  for (DeviceId d = 0; d < t.numDevices(); ++d) deviceById.emplace(t.deviceIds[static_cast<size_t>(d)], d);
  const std::string modelLabel = expect.modelFile.empty() ? std::string("the model") : baseName(expect.modelFile);

  const auto n = static_cast<size_t>(t.numTasks());
  plan.device.assign(n, -1);
  std::vector<int64_t> orderOf(n, -1);
  std::vector<size_t> entryOf(n, 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& e = ops[i];
    const std::string where = "operators[" + std::to_string(i) + "]";
    if (!e.is_object()) return makeError(o, where, " must be an object");
    auto nm = e.find("name");
    if (nm == e.end() || !nm->is_string()) return makeError(o, where, ": field 'name' must be a string");
    const std::string name = nm->get<std::string>();
    auto it = taskByName.find(name);
    if (it == taskByName.end()) return makeError(o, "operator '", oneLine(name), "' is not in ", modelLabel);
    const TaskId v = it->second;
    const auto vi = static_cast<size_t>(v);
    if (plan.device[vi] >= 0)
      return makeError(o, "operator '", oneLine(name), "' appears twice (operators[", std::to_string(entryOf[vi]),
                       "] and ", where, ")");
    if (auto ty = e.find("op_type"); ty != e.end() && ty->is_string() && !ty->get<std::string>().empty() &&
                                     vi < t.taskTypes.size() && !t.taskTypes[vi].empty() &&
                                     ty->get<std::string>() != t.taskTypes[vi])
      return makeError(o, "operator '", oneLine(name), "' is a ", oneLine(ty->get<std::string>()),
                       " in the plan but a ", t.taskTypes[vi], " in ", modelLabel);
    auto dv = e.find("device");
    if (dv == e.end() || !dv->is_string())
      return makeError(o, "operator '", oneLine(name), "': field 'device' must be a string");
    auto dit = deviceById.find(dv->get<std::string>());
    if (dit == deviceById.end()) {
      std::string known;
      for (const auto& id : t.deviceIds) known += (known.empty() ? "" : ", ") + id;
      return makeError(o, "operator '", oneLine(name), "': unknown device '", oneLine(dv->get<std::string>()),
                       "' (devices: ", known, ")");
    }
    const DeviceId d = dit->second;
    if (!t.canRun(v, d))
      return makeError(o, "operator ", oneLine(opLabel(t, v)), " cannot run on '", t.deviceIds[static_cast<size_t>(d)],
                       "'");
    auto od = e.find("order");
    if (od == e.end() || !od->is_number_integer() || od->get<int64_t>() < 0)
      return makeError(o, "operator '", oneLine(name), "': field 'order' must be a non-negative integer");
    plan.device[vi] = d;
    orderOf[vi] = od->get<int64_t>();
    entryOf[vi] = i;
  }

  // Every operator of the model must be placed.
  size_t missing = 0;
  TaskId firstMissing = -1;
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    if (plan.device[static_cast<size_t>(v)] >= 0) continue;
    if (firstMissing < 0) firstMissing = v;
    ++missing;
  }
  if (missing > 0) {
    std::string more = missing > 1 ? " (and " + std::to_string(missing - 1) + " more)" : std::string();
    return makeError(o, "operator '", oneLine(t.taskNames[static_cast<size_t>(firstMissing)]), "' of ", modelLabel,
                     " is missing from the plan", more);
  }

  // Orders: unique per device; rebuilt by sorting on the "order" value (gaps are allowed).
  plan.order.assign(static_cast<size_t>(t.numDevices()), {});
  for (TaskId v = 0; v < t.numTasks(); ++v)
    plan.order[static_cast<size_t>(plan.device[static_cast<size_t>(v)])].push_back(v);
  for (size_t d = 0; d < plan.order.size(); ++d) {
    auto& ord = plan.order[d];
    std::stable_sort(ord.begin(), ord.end(), [&](TaskId a, TaskId b) {
      return orderOf[static_cast<size_t>(a)] < orderOf[static_cast<size_t>(b)];
    });
    for (size_t k = 1; k < ord.size(); ++k) {
      const auto a = static_cast<size_t>(ord[k - 1]), b = static_cast<size_t>(ord[k]);
      if (orderOf[a] == orderOf[b])
        return makeError(o, "operators '", oneLine(t.taskNames[a]), "' and '", oneLine(t.taskNames[b]),
                         "' both have order ", std::to_string(orderOf[a]), " on '", t.deviceIds[d], "'");
    }
  }

  // Orders must be executable: no operator before one it depends on, on the same device...
  std::vector<int> pos(n, 0);
  for (const auto& ord : plan.order)
    for (size_t k = 0; k < ord.size(); ++k) pos[static_cast<size_t>(ord[k])] = static_cast<int>(k);
  for (const auto& e : t.edges) {
    if (e.src == e.dst || e.src < 0 || e.dst < 0 || e.src >= t.numTasks() || e.dst >= t.numTasks()) continue;
    const auto s = static_cast<size_t>(e.src), q = static_cast<size_t>(e.dst);
    if (plan.device[s] == plan.device[q] && pos[q] < pos[s])
      return makeError(o, "on '", t.deviceIds[static_cast<size_t>(plan.device[s])], "', operator '",
                       oneLine(t.taskNames[q]), "' (order ", std::to_string(orderOf[q]), ") comes before '",
                       oneLine(t.taskNames[s]), "' (order ", std::to_string(orderOf[s]), "), which it depends on");
  }
  // ... and no cycle through the orders of several devices (it would deadlock).
  std::vector<std::vector<TaskId>> preds(n);
  for (const auto& e : t.edges) {
    if (e.src == e.dst || e.src < 0 || e.dst < 0 || e.src >= t.numTasks() || e.dst >= t.numTasks()) continue;
    preds[static_cast<size_t>(e.dst)].push_back(e.src);
  }
  for (const auto& ord : plan.order)
    for (size_t k = 1; k < ord.size(); ++k) preds[static_cast<size_t>(ord[k])].push_back(ord[k - 1]);
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<TaskId>> succs(n);
  for (size_t v = 0; v < n; ++v)
    for (TaskId p : preds[v]) {
      succs[static_cast<size_t>(p)].push_back(static_cast<TaskId>(v));
      ++indeg[v];
    }
  std::vector<TaskId> ready;
  for (size_t v = 0; v < n; ++v)
    if (indeg[v] == 0) ready.push_back(static_cast<TaskId>(v));
  size_t done = 0;
  while (!ready.empty()) {
    TaskId v = ready.back();
    ready.pop_back();
    ++done;
    for (TaskId s : succs[static_cast<size_t>(v)])
      if (--indeg[static_cast<size_t>(s)] == 0) ready.push_back(s);
  }
  if (done < n) {
    // Walk back through unfinished predecessors until a task repeats: that is the cycle.
    TaskId v = 0;
    while (indeg[static_cast<size_t>(v)] == 0) ++v;
    std::vector<int> seenAt(n, -1);
    std::vector<TaskId> walk;
    while (seenAt[static_cast<size_t>(v)] < 0) {
      seenAt[static_cast<size_t>(v)] = static_cast<int>(walk.size());
      walk.push_back(v);
      for (TaskId p : preds[static_cast<size_t>(v)])
        if (indeg[static_cast<size_t>(p)] > 0) {
          v = p;
          break;
        }
    }
    std::vector<TaskId> cycle(walk.begin() + seenAt[static_cast<size_t>(v)], walk.end());
    std::reverse(cycle.begin(), cycle.end());  // in execution direction
    cycle.push_back(cycle.front());
    std::string text;
    const size_t shown = std::min<size_t>(cycle.size(), 8);
    for (size_t k = 0; k < shown; ++k) {
      const auto c = static_cast<size_t>(cycle[k]);
      if (k) text += " -> ";
      text += "'" + oneLine(t.taskNames[c]) + "' (" + t.deviceIds[static_cast<size_t>(plan.device[c])] + ")";
    }
    if (shown < cycle.size()) text += " -> ...";
    return makeError(o, "the device orders deadlock: each of these operators must run before the next: ", text);
  }

  // Compiled blocks: part of the plan (they change its costs); checked like the scheduler's.
  if (auto bk = doc.find("blocks"); bk != doc.end() && !bk->is_null()) {
    if (!bk->is_array()) return makeError(o, "field 'blocks' must be an array");
    for (size_t i = 0; i < bk->size(); ++i) {
      const auto& k = (*bk)[i];
      const std::string where = "blocks[" + std::to_string(i) + "]";
      if (!k.is_object()) return makeError(o, where, " must be an object");
      PlanBlock blk;
      auto dv = k.find("device");
      if (dv == k.end() || !dv->is_string()) return makeError(o, where, ": field 'device' must be a string");
      auto dit = deviceById.find(dv->get<std::string>());
      if (dit == deviceById.end()) return makeError(o, where, ": unknown device '", oneLine(dv->get<std::string>()), "'");
      blk.device = dit->second;
      if (auto c = k.find("cores"); c != k.end() && !c->is_null()) {
        if (!c->is_number_integer() || c->get<int64_t>() < 0 || c->get<int64_t>() > 1000000)
          return makeError(o, where, ": field 'cores' must be an integer >= 0 (0: all cores)");
        blk.cores = static_cast<int>(c->get<int64_t>());
      }
      auto ko = k.find("ops");
      if (ko == k.end() || !ko->is_array() || ko->empty()) return makeError(o, where, ": field 'ops' must be a non-empty array of operator names");
      for (const auto& nm : *ko) {
        if (!nm.is_string()) return makeError(o, where, ": field 'ops' must hold operator names (strings)");
        auto it = taskByName.find(nm.get<std::string>());
        if (it == taskByName.end()) return makeError(o, where, ": operator '", oneLine(nm.get<std::string>()), "' is not in ", modelLabel);
        blk.tasks.push_back(it->second);
      }
      plan.blocks.push_back(std::move(blk));
    }
    if (auto st = checkBlocks(t, plan); !st) return makeError(o, st.message());
  }

  // Replicas (sim/plan.h): each an object from the plan's devices to the devices that replica runs
  // their operators on; a device not named keeps its own.
  if (auto rp = doc.find("replicas"); rp != doc.end() && !rp->is_null()) {
    const std::string form = "field 'replicas' must be an array of objects, each naming devices of the plan and the "
                             "device the replica runs their operators on (e.g. [{\"core0\": \"core1\"}])";
    if (!rp->is_array()) return makeError(o, form);
    if (rp->size() + 1 > static_cast<size_t>(kMaxReplicas))
      return makeError(o, "field 'replicas' lists ", std::to_string(rp->size()), " replicas besides the plan, at most ",
                       std::to_string(kMaxReplicas - 1), " are allowed");
    for (size_t i = 0; i < rp->size(); ++i) {
      const auto& k = (*rp)[i];
      const std::string where = "replicas[" + std::to_string(i) + "]";
      if (!k.is_object())
        return makeError(o, where, " must be an object naming devices of the plan and the device the replica runs "
                         "their operators on (e.g. {\"core0\": \"core1\"}), not a ", jsonTypeName(k));
      std::vector<DeviceId> map(static_cast<size_t>(t.numDevices()));
      for (DeviceId d = 0; d < t.numDevices(); ++d) map[static_cast<size_t>(d)] = d;
      for (auto it = k.begin(); it != k.end(); ++it) {
        auto from = deviceById.find(it.key());
        if (from == deviceById.end()) return makeError(o, where, ": unknown device '", oneLine(it.key()), "'");
        if (plan.order[static_cast<size_t>(from->second)].empty())
          return makeError(o, where, ": the plan runs no operator on '", oneLine(it.key()), "'");
        if (!it.value().is_string())
          return makeError(o, where, ": device '", oneLine(it.key()), "' must map to a device name (a string), not a ",
                           jsonTypeName(it.value()));
        auto to = deviceById.find(it.value().get<std::string>());
        if (to == deviceById.end())
          return makeError(o, where, ": unknown device '", oneLine(it.value().get<std::string>()), "'");
        map[static_cast<size_t>(from->second)] = to->second;
      }
      plan.replicas.push_back(std::move(map));
    }
    if (auto st = checkReplicas(t, plan); !st) return makeError(o, st.message());
  }

  // Fused kernels: informational (they follow from the placement and the costs), but a file that
  // names them must name real operators on the devices this plan puts them on.
  if (auto fk = doc.find("fused_kernels"); fk != doc.end() && !fk->is_null()) {
    if (!fk->is_array()) return makeError(o, "field 'fused_kernels' must be an array");
    std::vector<int64_t> kernelOf(n, -1);
    for (size_t i = 0; i < fk->size(); ++i) {
      const auto& k = (*fk)[i];
      const std::string where = "fused_kernels[" + std::to_string(i) + "]";
      if (!k.is_object()) return makeError(o, where, " must be an object");
      auto dv = k.find("device");
      if (dv == k.end() || !dv->is_string()) return makeError(o, where, ": field 'device' must be a string");
      auto dit = deviceById.find(dv->get<std::string>());
      if (dit == deviceById.end())
        return makeError(o, where, ": unknown device '", oneLine(dv->get<std::string>()), "'");
      auto ko = k.find("ops");
      if (ko == k.end() || !ko->is_array() || ko->size() < 2)
        return makeError(o, where, ": field 'ops' must be an array of at least two operator names");
      for (const auto& nm : *ko) {
        if (!nm.is_string()) return makeError(o, where, ": field 'ops' must hold operator names (strings)");
        auto it = taskByName.find(nm.get<std::string>());
        if (it == taskByName.end())
          return makeError(o, where, ": operator '", oneLine(nm.get<std::string>()), "' is not in ", modelLabel);
        const auto vi = static_cast<size_t>(it->second);
        if (kernelOf[vi] >= 0)
          return makeError(o, where, ": operator '", oneLine(t.taskNames[vi]), "' is already in fused_kernels[",
                           std::to_string(kernelOf[vi]), "]");
        kernelOf[vi] = static_cast<int64_t>(i);
        if (plan.device[vi] != dit->second)
          return makeError(o, where, ": operator '", oneLine(t.taskNames[vi]), "' is on '",
                           t.deviceIds[static_cast<size_t>(plan.device[vi])], "' in the plan, not on '",
                           t.deviceIds[static_cast<size_t>(dit->second)], "'");
      }
    }
  }
  return plan;
}

Status savePlan(const std::string& path, const CostTable& t, const Plan& plan, const Timeline& tl,
                const PlanIdentity& id, const Graph* g) {
  return writeFileAtomic(path, planToJson(t, plan, tl, id, g));
}

Result<Plan> loadPlanFile(const std::string& path, const CostTable& t, const PlanIdentity& expect) {
  auto text = readFile(path);
  if (!text) return Error{text.message()};
  return readPlan(*text, path, t, expect);
}

}  // namespace partex
