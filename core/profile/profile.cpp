#include "profile/profile.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "support/files.h"
#include "support/strings.h"

namespace partex {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

/// Rounds to the nanosecond so that files stay readable.
double roundUs(double us) {
  if (!std::isfinite(us)) return 0.0;
  double r = std::round(us * 1000.0) / 1000.0;
  return r == 0.0 ? 0.0 : r;
}

/// Adds the timing fields to an object.
void addStat(ojson& j, const TimingStat& s) {
  j["median_us"] = roundUs(s.medianUs);
  j["spread_us"] = roundUs(s.spreadUs);
  j["min_us"] = roundUs(s.minUs);
  j["max_us"] = roundUs(s.maxUs);
  j["reps"] = s.reps;
}

/// Reads fields with errors naming the file and the JSON path.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}
  Error err(const std::string& where, const std::string& what) const {
    return makeError(origin_, ": ", where, ": ", what);
  }
  Result<std::string> str(const json& o, const char* key, const std::string& where, bool required) const {
    auto it = o.find(key);
    if (it == o.end()) {
      if (required) return err(where, std::string("missing field '") + key + "'");
      return std::string();
    }
    if (!it->is_string()) return err(where, std::string("field '") + key + "' must be a string");
    return it->get<std::string>();
  }
  Result<double> num(const json& o, const char* key, const std::string& where, bool required, double def = 0) const {
    auto it = o.find(key);
    if (it == o.end()) {
      if (required) return err(where, std::string("missing field '") + key + "'");
      return def;
    }
    if (!it->is_number()) return err(where, std::string("field '") + key + "' must be a number");
    double v = it->get<double>();
    if (!std::isfinite(v) || v < 0) return err(where, std::string("field '") + key + "' must be a finite number >= 0");
    return v;
  }
  Result<int64_t> integer(const json& o, const char* key, const std::string& where, bool required,
                          int64_t def = 0) const {
    auto it = o.find(key);
    if (it == o.end()) {
      if (required) return err(where, std::string("missing field '") + key + "'");
      return def;
    }
    if (!it->is_number_integer() && !it->is_number_unsigned())
      return err(where, std::string("field '") + key + "' must be an integer");
    if (it->is_number_integer() && it->get<int64_t>() < 0)
      return err(where, std::string("field '") + key + "' must be >= 0");
    return it->get<int64_t>();
  }
  Result<TimingStat> stat(const json& o, const std::string& where) const {
    TimingStat s;
    auto med = num(o, "median_us", where, true);
    if (!med) return Error{med.message()};
    s.medianUs = *med;
    auto sp = num(o, "spread_us", where, false);
    if (!sp) return Error{sp.message()};
    s.spreadUs = *sp;
    auto mn = num(o, "min_us", where, false, s.medianUs);
    if (!mn) return Error{mn.message()};
    s.minUs = *mn;
    auto mx = num(o, "max_us", where, false, s.medianUs);
    if (!mx) return Error{mx.message()};
    s.maxUs = *mx;
    auto reps = integer(o, "reps", where, false, 1);
    if (!reps) return Error{reps.message()};
    if (*reps > 1000000000) return err(where, "field 'reps' is too large");
    s.reps = static_cast<int>(*reps);
    if (s.minUs > s.medianUs + 1e-9 || s.maxUs + 1e-9 < s.medianUs)
      return err(where, "min_us <= median_us <= max_us does not hold");
    return s;
  }
  const json* array(const json& o, const char* key, const std::string& where, bool required, Error* e) const {
    auto it = o.find(key);
    if (it == o.end()) {
      if (required) *e = err(where, std::string("missing field '") + key + "'");
      return nullptr;
    }
    if (!it->is_array()) {
      *e = err(where, std::string("field '") + key + "' must be an array");
      return nullptr;
    }
    return &*it;
  }

 private:
  std::string origin_;
};

}  // namespace

TimingStat summarise(std::vector<double> s) {
  TimingStat r;
  if (s.empty()) return r;
  std::sort(s.begin(), s.end());
  auto median = [](const std::vector<double>& v) {
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  r.medianUs = median(s);
  r.minUs = s.front();
  r.maxUs = s.back();
  r.reps = static_cast<int>(s.size());
  std::vector<double> dev;
  dev.reserve(s.size());
  for (double x : s) dev.push_back(std::fabs(x - r.medianUs));
  std::sort(dev.begin(), dev.end());
  r.spreadUs = median(dev);
  return r;
}

const ProfileDevice* Profile::findDevice(const std::string& id) const {
  for (const auto& d : devices)
    if (d.id == id) return &d;
  return nullptr;
}

ProfileDevice& Profile::device(const std::string& id) {
  for (auto& d : devices)
    if (d.id == id) return d;
  devices.push_back(ProfileDevice{id, {}, {}, {}});
  return devices.back();
}

std::string profileToJson(const Profile& p) {
  ojson j;
  j["format"] = kProfileFormat;
  j["version"] = kProfileFormatVersion;
  j["model"] = {{"file", p.modelFile}, {"sha256", p.modelSha256}};
  j["backend"] = {{"name", p.backendName}, {"version", p.backendVersion}};
  j["imported"] = p.imported;
  j["source"] = p.source;
  j["method"] = p.method;
  j["measured_at"] = {{"date", p.measuredAt}, {"machine", p.machine}};
  j["settings"] = {{"warmup", p.warmup}, {"reps", p.reps}, {"seed", p.seed}};
  if (p.profilingRuns > 0) j["profiling_runs"] = p.profilingRuns;
  ojson devs = ojson::array();
  for (const auto& d : p.devices) {
    ojson dj;
    dj["id"] = d.id;
    ojson ops = ojson::array();
    for (const auto& op : d.ops) {
      ojson oj;
      oj["name"] = op.name;
      oj["op_type"] = op.opType;
      addStat(oj, op.time);
      ops.push_back(std::move(oj));
    }
    dj["ops"] = std::move(ops);
    if (!d.groups.empty()) {
      ojson groups = ojson::array();
      for (const auto& g : d.groups) {
        ojson gj;
        gj["ops"] = g.ops;
        addStat(gj, g.time);
        groups.push_back(std::move(gj));
      }
      dj["groups"] = std::move(groups);
    }
    if (!d.fused.empty()) dj["fused"] = d.fused;
    if (d.speedProbeUs > 0) dj["speed_probe_us"] = d.speedProbeUs;
    devs.push_back(std::move(dj));
  }
  j["devices"] = std::move(devs);
  if (!p.transfers.empty()) {
    ojson tr = ojson::array();
    for (const auto& t : p.transfers) {
      ojson tj;
      tj["from"] = t.from;
      tj["to"] = t.to;
      ojson samples = ojson::array();
      for (const auto& s : t.samples) {
        ojson sj;
        sj["bytes"] = s.bytes;
        addStat(sj, s.time);
        samples.push_back(std::move(sj));
      }
      tj["samples"] = std::move(samples);
      tr.push_back(std::move(tj));
    }
    j["transfers"] = std::move(tr);
  }
  return j.dump(2) + "\n";
}

Result<Profile> parseProfile(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return makeError(origin, ": not valid JSON (", oneLine(e.what()), ")");
  }
  Reader r(origin);
  if (!j.is_object()) return makeError(origin, ": a profile must be a JSON object");
  auto fmt = r.str(j, "format", "top level", true);
  if (!fmt) return Error{fmt.message()};
  if (*fmt != kProfileFormat)
    return makeError(origin, ": format is '", oneLine(*fmt), "', expected '", kProfileFormat,
                     "' (is this a profile file?)");
  auto ver = r.integer(j, "version", "top level", true);
  if (!ver) return Error{ver.message()};
  if (*ver < 1 || *ver > kProfileFormatVersion)
    return makeError(origin, ": profile format version ", std::to_string(*ver),
                     " is not supported (this build reads 1 to ", std::to_string(kProfileFormatVersion), ")");
  Profile p;
  if (auto it = j.find("model"); it != j.end()) {
    if (!it->is_object()) return makeError(origin, ": field 'model' must be an object");
    auto file = r.str(*it, "file", "model", false);
    if (!file) return Error{file.message()};
    auto sha = r.str(*it, "sha256", "model", false);
    if (!sha) return Error{sha.message()};
    p.modelFile = *file;
    p.modelSha256 = *sha;
  } else {
    return makeError(origin, ": missing field 'model'");
  }
  if (auto it = j.find("backend"); it != j.end()) {
    if (!it->is_object()) return makeError(origin, ": field 'backend' must be an object");
    auto name = r.str(*it, "name", "backend", true);
    if (!name) return Error{name.message()};
    auto version = r.str(*it, "version", "backend", false);
    if (!version) return Error{version.message()};
    p.backendName = *name;
    p.backendVersion = *version;
  } else {
    return makeError(origin, ": missing field 'backend'");
  }
  if (auto it = j.find("imported"); it != j.end()) {
    if (!it->is_boolean()) return makeError(origin, ": field 'imported' must be true or false");
    p.imported = it->get<bool>();
  }
  auto source = r.str(j, "source", "top level", false);
  if (!source) return Error{source.message()};
  p.source = *source;
  auto method = r.str(j, "method", "top level", false);
  if (!method) return Error{method.message()};
  p.method = *method;
  if (auto it = j.find("measured_at"); it != j.end()) {
    if (!it->is_object()) return makeError(origin, ": field 'measured_at' must be an object");
    auto date = r.str(*it, "date", "measured_at", false);
    if (!date) return Error{date.message()};
    auto machine = r.str(*it, "machine", "measured_at", false);
    if (!machine) return Error{machine.message()};
    p.measuredAt = *date;
    p.machine = *machine;
  }
  if (auto it = j.find("settings"); it != j.end()) {
    if (!it->is_object()) return makeError(origin, ": field 'settings' must be an object");
    auto w = r.integer(*it, "warmup", "settings", false);
    if (!w) return Error{w.message()};
    auto n = r.integer(*it, "reps", "settings", false);
    if (!n) return Error{n.message()};
    auto s = r.integer(*it, "seed", "settings", false);
    if (!s) return Error{s.message()};
    if (*w > 1000000 || *n > 1000000) return makeError(origin, ": settings: warmup and reps must be at most 1000000");
    p.warmup = static_cast<int>(*w);
    p.reps = static_cast<int>(*n);
    p.seed = static_cast<uint64_t>(*s);
  }
  auto runs = r.integer(j, "profiling_runs", "top level", false);
  if (!runs) return Error{runs.message()};
  if (*runs > 1000000) return makeError(origin, ": field 'profiling_runs' is too large");
  p.profilingRuns = static_cast<int>(*runs);

  Error e;
  const json* devs = r.array(j, "devices", "top level", true, &e);
  if (!devs) return e;
  std::set<std::string> seenDevices;
  for (size_t di = 0; di < devs->size(); ++di) {
    const json& dj = (*devs)[di];
    const std::string dwhere = "devices[" + std::to_string(di) + "]";
    if (!dj.is_object()) return r.err(dwhere, "must be an object");
    auto id = r.str(dj, "id", dwhere, true);
    if (!id) return Error{id.message()};
    if (id->empty()) return r.err(dwhere, "device id is empty");
    if (!seenDevices.insert(*id).second) return r.err(dwhere, "device '" + oneLine(*id) + "' appears twice");
    ProfileDevice d;
    d.id = *id;
    const std::string where = "device '" + oneLine(*id) + "'";
    const json* ops = r.array(dj, "ops", where, true, &e);
    if (!ops) return e;
    std::set<std::string> seenOps;
    for (size_t oi = 0; oi < ops->size(); ++oi) {
      const json& oj = (*ops)[oi];
      const std::string owhere = where + ": ops[" + std::to_string(oi) + "]";
      if (!oj.is_object()) return r.err(owhere, "must be an object");
      auto name = r.str(oj, "name", owhere, true);
      if (!name) return Error{name.message()};
      if (!seenOps.insert(*name).second) return r.err(owhere, "operator '" + oneLine(*name) + "' appears twice");
      auto type = r.str(oj, "op_type", owhere, false);
      if (!type) return Error{type.message()};
      auto st = r.stat(oj, where + ": operator '" + oneLine(*name) + "'");
      if (!st) return Error{st.message()};
      d.ops.push_back(ProfileOp{*name, *type, *st});
    }
    const json* groups = r.array(dj, "groups", where, false, &e);
    if (!groups && !e.message.empty()) return e;
    if (groups) {
      for (size_t gi = 0; gi < groups->size(); ++gi) {
        const json& gj = (*groups)[gi];
        const std::string gwhere = where + ": groups[" + std::to_string(gi) + "]";
        if (!gj.is_object()) return r.err(gwhere, "must be an object");
        auto it = gj.find("ops");
        if (it == gj.end() || !it->is_array() || it->size() < 2)
          return r.err(gwhere, "field 'ops' must be an array of at least two operator names");
        ProfileGroup g;
        for (const auto& n : *it) {
          if (!n.is_string()) return r.err(gwhere, "field 'ops' must hold operator names (strings)");
          g.ops.push_back(n.get<std::string>());
        }
        auto st = r.stat(gj, gwhere);
        if (!st) return Error{st.message()};
        g.time = *st;
        d.groups.push_back(std::move(g));
      }
    }
    const json* fused = r.array(dj, "fused", where, false, &e);
    if (!fused && !e.message.empty()) return e;
    if (fused) {
      for (size_t fi = 0; fi < fused->size(); ++fi) {
        const json& fj = (*fused)[fi];
        const std::string fwhere = where + ": fused[" + std::to_string(fi) + "]";
        if (!fj.is_array() || fj.size() < 2) return r.err(fwhere, "must be an array of at least two operator names");
        std::vector<std::string> names;
        for (const auto& n : fj) {
          if (!n.is_string()) return r.err(fwhere, "must hold operator names (strings)");
          names.push_back(n.get<std::string>());
        }
        d.fused.push_back(std::move(names));
      }
    }
    if (auto it = dj.find("speed_probe_us"); it != dj.end()) {
      if (!it->is_number() || !(it->get<double>() >= 0) || !std::isfinite(it->get<double>()))
        return r.err(where, "field 'speed_probe_us' must be a non-negative number");
      d.speedProbeUs = it->get<double>();
    }
    p.devices.push_back(std::move(d));
  }
  const json* trs = r.array(j, "transfers", "top level", false, &e);
  if (!trs && !e.message.empty()) return e;
  if (trs) {
    for (size_t ti = 0; ti < trs->size(); ++ti) {
      const json& tj = (*trs)[ti];
      const std::string where = "transfers[" + std::to_string(ti) + "]";
      if (!tj.is_object()) return r.err(where, "must be an object");
      ProfileTransfer t;
      auto from = r.str(tj, "from", where, true);
      if (!from) return Error{from.message()};
      auto to = r.str(tj, "to", where, true);
      if (!to) return Error{to.message()};
      if (*from == *to) return r.err(where, "'from' and 'to' are the same device");
      t.from = *from;
      t.to = *to;
      const json* samples = r.array(tj, "samples", where, true, &e);
      if (!samples) return e;
      for (size_t si = 0; si < samples->size(); ++si) {
        const json& sj = (*samples)[si];
        const std::string swhere = where + ": samples[" + std::to_string(si) + "]";
        if (!sj.is_object()) return r.err(swhere, "must be an object");
        auto bytes = r.integer(sj, "bytes", swhere, true);
        if (!bytes) return Error{bytes.message()};
        auto st = r.stat(sj, swhere);
        if (!st) return Error{st.message()};
        t.samples.push_back(TransferSample{*bytes, *st});
      }
      p.transfers.push_back(std::move(t));
    }
  }
  return p;
}

Status saveProfile(const std::string& path, const Profile& p) {
  return writeFileAtomic(path, profileToJson(p));
}

Result<Profile> loadProfileFile(const std::string& path) {
  auto bytes = readFile(path);
  if (!bytes) return Error{bytes.message()};
  return parseProfile(*bytes, path);
}

std::pair<double, double> fitTransfer(const std::vector<TransferSample>& samples) {
  if (samples.empty()) return {0.0, kInf};
  if (samples.size() == 1) {
    const auto& s = samples.front();
    if (s.bytes <= 0 || s.time.medianUs <= 0) return {s.time.medianUs, kInf};
    return {0.0, static_cast<double>(s.bytes) / s.time.medianUs};
  }
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(samples.size());
  for (const auto& s : samples) {
    const double x = static_cast<double>(s.bytes), y = s.time.medianUs;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double den = n * sxx - sx * sx;
  double slope = den > 0 ? (n * sxy - sx * sy) / den : 0.0;
  double lat = (sy - slope * sx) / n;
  if (lat < 0) {  // Through the origin instead.
    lat = 0;
    slope = sxx > 0 ? sxy / sxx : 0.0;
  }
  if (!(slope > 0)) return {std::max(0.0, sy / n), kInf};
  return {lat, 1.0 / slope};
}

namespace {

/// A group key independent of the order the caller lists the tasks in.
std::string groupKey(std::vector<TaskId> ids, DeviceId d) {
  std::sort(ids.begin(), ids.end());
  std::string k = std::to_string(d) + ":";
  for (TaskId v : ids) k += std::to_string(v) + ",";
  return k;
}

std::string shortSha(const std::string& sha) {
  return sha.size() > 12 ? sha.substr(0, 12) + "..." : sha;
}

}  // namespace

Result<ApplyReport> applyCostSource(CostTable& t, const Profile& p, bool ortImport, const std::string& modelFile,
                                    const std::string& modelSha256, const std::string& origin) {
  ApplyOptions o;
  o.modelFile = modelFile;
  o.origin = origin;
  if (!ortImport) o.modelSha256 = modelSha256;
  o.matchByName = ortImport || p.imported;
  auto r = applyProfile(t, p, o);
  if (!r) return r;
  if (r->opsApplied == 0 && r->groupsApplied == 0 && r->pairsApplied == 0) {
    size_t ops = 0;
    for (const auto& d : p.devices) ops += d.ops.size();
    return makeError(origin, ": none of its ", std::to_string(ops), " operator times is for an operator of ",
                     modelFile);
  }
  return r;
}

Result<ApplyReport> applyProfile(CostTable& t, const Profile& p, const ApplyOptions& o) {
  const std::string origin = o.origin.empty() ? std::string("profile") : o.origin;
  ApplyReport rep;
  if (!o.matchByName && !p.modelSha256.empty() && !o.modelSha256.empty() && p.modelSha256 != o.modelSha256)
    return makeError(origin, ": profile is for model ", p.modelFile.empty() ? std::string("?") : oneLine(p.modelFile),
                     " (sha256 ", shortSha(p.modelSha256), "), not ",
                     o.modelFile.empty() ? std::string("this model") : o.modelFile, " (sha256 ",
                     shortSha(o.modelSha256), "): profile the model again");
  if (!o.matchByName && p.modelSha256.empty() && !o.modelSha256.empty())
    rep.notes.push_back(origin + ": the profile names no model hash; operators matched by name");
  std::unordered_map<std::string, TaskId> byName;
  for (TaskId v = 0; v < t.numTasks(); ++v) byName.emplace(t.taskNames[static_cast<size_t>(v)], v);
  auto deviceOf = [&](const std::string& id) -> DeviceId {
    auto it = std::find(t.deviceIds.begin(), t.deviceIds.end(), id);
    return it == t.deviceIds.end() ? kNone : static_cast<DeviceId>(it - t.deviceIds.begin());
  };
  if (!o.deviceOverride.empty() && p.devices.size() > 1)
    return makeError(origin, ": --device maps one device but the profile has ", std::to_string(p.devices.size()));
  const Provenance prov = p.imported ? Provenance::Imported : Provenance::Measured;
  const size_t m = t.deviceIds.size();
  auto groups = std::make_shared<std::unordered_map<std::string, double>>();
  std::set<std::string> unmatched;
  std::set<int32_t> countedGroups;  // fused groups the profile measured (rep.fusedGroups counts each once)
  // The costs of operators alone, before measured fused kernels replace them (kept once).
  if (t.unfusedCost.empty()) t.unfusedCost = t.cost;
  std::vector<std::pair<std::string, std::vector<double>>> ratios;  // Per profiled device: measured / modelled.
  for (const auto& pd : p.devices) {
    const std::string devId = o.deviceOverride.empty() ? pd.id : o.deviceOverride;
    const DeviceId d = deviceOf(devId);
    if (d == kNone)
      return makeError(origin, ": device '", oneLine(devId),
                       "' is not on the platform (devices: ", join(t.deviceIds, ", "), ")");
    std::vector<bool> seen(static_cast<size_t>(t.numTasks()), false);
    ratios.emplace_back(devId, std::vector<double>{});
    if (pd.speedProbeUs > 0) {
      t.speedProbeUs.resize(m, 0.0);
      t.speedProbeUs[static_cast<size_t>(d)] = pd.speedProbeUs;
    }
    for (const auto& op : pd.ops) {
      auto it = byName.find(op.name);
      if (it == byName.end()) {
        unmatched.insert(op.name);
        continue;
      }
      const TaskId v = it->second;
      seen[static_cast<size_t>(v)] = true;
      const size_t idx = static_cast<size_t>(v) * m + static_cast<size_t>(d);
      if (!op.opType.empty() && static_cast<size_t>(v) < t.taskTypes.size() &&
          !t.taskTypes[static_cast<size_t>(v)].empty() && op.opType != t.taskTypes[static_cast<size_t>(v)])
        rep.typeMismatches.push_back(op.name + ": profile says " + op.opType + ", model says " +
                                     t.taskTypes[static_cast<size_t>(v)]);
      if (t.provenance[idx] == Provenance::Modelled && std::isfinite(t.cost[idx]) && t.cost[idx] > 0 &&
          op.time.medianUs > 0)
        ratios.back().second.push_back(op.time.medianUs / t.cost[idx]);
      t.cost[idx] = op.time.medianUs;
      t.provenance[idx] = prov;
      ++rep.opsApplied;
    }
    for (TaskId v = 0; v < t.numTasks(); ++v)
      if (!seen[static_cast<size_t>(v)]) rep.unprofiledOps.push_back(t.taskNames[static_cast<size_t>(v)] + "@" + devId);
    for (const auto& g : pd.groups) {
      std::vector<TaskId> ids;
      bool ok = true;
      for (const auto& name : g.ops) {
        auto it = byName.find(name);
        if (it == byName.end()) {
          unmatched.insert(name);
          ok = false;
          break;
        }
        ids.push_back(it->second);
      }
      if (!ok) continue;
      (*groups)[groupKey(ids, d)] = g.time.medianUs;
      ++rep.groupsApplied;
    }
    // Fused kernels: their operators' times hold when they stay together on one device; the simulator
    // charges split ones the cost model's estimate of each operator alone (CostTable::unfusedCost).
    for (const auto& names : pd.fused) {
      std::vector<TaskId> ids;
      for (const auto& name : names) {
        auto it = byName.find(name);
        if (it == byName.end()) break;
        ids.push_back(it->second);
      }
      if (ids.size() != names.size() || ids.size() < 2) continue;
      // Split, the anchor runs alone: charge it the fused kernel's measured time on this device (the
      // anchor is the kernel's work), not the model's estimate; the others keep the model's.
      const size_t anchorIdx = static_cast<size_t>(ids.front()) * m + static_cast<size_t>(d);
      const size_t lastIdx = static_cast<size_t>(ids.back()) * m + static_cast<size_t>(d);
      if (t.provenance[lastIdx] != Provenance::Modelled) t.unfusedCost[anchorIdx] = t.cost[lastIdx];
      if (t.fusedGroupOf.empty()) t.fusedGroupOf.assign(static_cast<size_t>(t.numTasks()), -1);
      const int32_t known = t.fusedGroupOf[static_cast<size_t>(ids[0])];
      if (known >= 0) {
        // Known from another device, or from the cost model (a device that runs the CPU runtime's
        // groups, Device::fusion "runtime"): the same group counts once.
        if (t.fusedGroups[static_cast<size_t>(known)] == ids && countedGroups.insert(known).second) ++rep.fusedGroups;
        continue;
      }
      bool free = true;
      for (TaskId v : ids) free = free && t.fusedGroupOf[static_cast<size_t>(v)] < 0;
      if (!free) continue;
      countedGroups.insert(static_cast<int32_t>(t.fusedGroups.size()));
      for (TaskId v : ids) t.fusedGroupOf[static_cast<size_t>(v)] = static_cast<int32_t>(t.fusedGroups.size());
      t.fusedGroups.push_back(ids);
      ++rep.fusedGroups;
    }
  }
  rep.unmatchedProfileOps.assign(unmatched.begin(), unmatched.end());
  // Devices left with only modelled costs are compared with measured ones by the schedulers: when the
  // measurements are far from the model on the profiled devices, say so (those devices may look
  // cheaper, or dearer, than they are).
  std::vector<std::string> modelledOnly;
  for (DeviceId d = 0; d < t.numDevices(); ++d) {
    bool any = false;
    for (TaskId v = 0; v < t.numTasks() && !any; ++v)
      any = t.provenance[static_cast<size_t>(v) * m + static_cast<size_t>(d)] != Provenance::Modelled;
    if (!any) modelledOnly.push_back(t.deviceIds[static_cast<size_t>(d)]);
  }
  if (!modelledOnly.empty())
    for (auto& [dev, r] : ratios) {
      if (r.size() < 3) continue;
      std::sort(r.begin(), r.end());
      const double med = r[r.size() / 2];
      if (med >= 1.0 / 1.5 && med <= 1.5) continue;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2gx", med);
      rep.notes.push_back(origin + ": on " + dev + " the measured times are " + buf +
                          " the modelled ones (median over " + std::to_string(r.size()) + " operators); " +
                          join(modelledOnly, ", ") + " keep" + (modelledOnly.size() == 1 ? "s" : "") +
                          " modelled costs, so schedulers may misjudge " +
                          (modelledOnly.size() == 1 ? "it" : "them") + ": profile " +
                          (modelledOnly.size() == 1 ? "it" : "them") + " too");
    }
  if (rep.opsApplied > 0 || !groups->empty()) {
    // Groups: a profiled group answers from the profile; a group whose members are all measured on d
    // costs their sum (the measured kernels run back to back; no fusion gain is assumed); anything else
    // keeps the previous (modelled) group cost, so that measured and modelled never mix in one group.
    auto measured = std::make_shared<std::vector<double>>(t.cost);
    auto measuredProv = std::make_shared<std::vector<Provenance>>(t.provenance);
    auto previous = t.groupCost;
    t.groupCost = [groups, previous, measured, measuredProv, m](const std::vector<TaskId>& group,
                                                                DeviceId d) -> double {
      if (group.empty()) return 0.0;
      if (group.size() > 1) {
        auto it = groups->find(groupKey(group, d));
        if (it != groups->end()) return it->second;
      }
      double sum = 0;
      bool allMeasured = true;
      for (TaskId v : group) {
        const size_t idx = static_cast<size_t>(v) * m + static_cast<size_t>(d);
        if (idx >= measured->size()) return kInf;
        allMeasured = allMeasured && (*measuredProv)[idx] != Provenance::Modelled;
        sum += (*measured)[idx];
      }
      if (allMeasured || !previous) return sum;
      return previous(group, d);
    };
  }
  if (o.applyTransfers) {
    for (const auto& tr : p.transfers) {
      const DeviceId a = deviceOf(tr.from), b = deviceOf(tr.to);
      if (a == kNone || b == kNone) {
        rep.notes.push_back(origin + ": transfers " + tr.from + " -> " + tr.to +
                            " skipped: device not on the platform");
        continue;
      }
      if (tr.samples.empty()) continue;
      auto [lat, bpu] = fitTransfer(tr.samples);
      const size_t idx = static_cast<size_t>(a) * m + static_cast<size_t>(b);
      if (idx >= t.linkBytesPerUs.size()) continue;
      t.linkLatencyUs[idx] = lat;
      t.linkBytesPerUs[idx] = bpu;
      ++rep.pairsApplied;
    }
  }
  return rep;
}

std::string isoNowUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string machineDescription() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  std::string cpu;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) cpu = trim(line.substr(colon + 1));
      break;
    }
  }
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  std::string s = host[0] ? std::string(host) : std::string("unknown host");
  if (!cpu.empty()) s += ", " + cpu;
  if (cores > 0) s += ", " + std::to_string(cores) + " cores";
  return s;
}

}  // namespace partex
