#include "profile/ortprofile.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "support/files.h"
#include "support/strings.h"

namespace partex {

namespace {

constexpr const char* kSuffix = "_kernel_time";

}  // namespace

Result<Profile> parseOrtProfile(const std::string& text, const std::string& origin, const std::string& deviceId,
                                const std::string& provider, OrtImportInfo* info) {
  using json = nlohmann::json;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return makeError(origin, ": not valid JSON (", oneLine(e.what()), ")");
  }
  const json* events = nullptr;
  if (j.is_array()) {
    events = &j;
  } else if (j.is_object()) {
    auto it = j.find("traceEvents");
    if (it == j.end() || !it->is_array())
      return makeError(
          origin, ": not an ONNX Runtime profile (expected an array of trace events or an object with 'traceEvents')");
    events = &*it;
  } else {
    return makeError(origin, ": not an ONNX Runtime profile (expected an array of trace events)");
  }
  if (deviceId.empty()) return makeError(origin, ": no device named for the imported times");
  OrtImportInfo local;
  OrtImportInfo& inf = info ? *info : local;
  inf = OrtImportInfo{};
  struct Acc {
    std::string opType;
    std::vector<double> durs;
    size_t firstSeen = 0;
  };
  std::map<std::string, Acc> nodes;
  size_t order = 0;
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    ++inf.events;
    if (!e.is_object()) return makeError(origin, ": event ", std::to_string(i), " is not an object");
    auto cat = e.find("cat");
    if (cat == e.end() || !cat->is_string() || cat->get<std::string>() != "Node") continue;
    auto nameIt = e.find("name");
    if (nameIt == e.end() || !nameIt->is_string())
      return makeError(origin, ": event ", std::to_string(i), ": 'name' must be a string");
    std::string name = nameIt->get<std::string>();
    const size_t n = std::char_traits<char>::length(kSuffix);
    if (name.size() <= n || name.compare(name.size() - n, n, kSuffix) != 0) continue;  // fence_before/after
    name.resize(name.size() - n);
    auto durIt = e.find("dur");
    if (durIt == e.end() || !durIt->is_number())
      return makeError(origin, ": event ", std::to_string(i), " (node '", oneLine(name), "'): 'dur' must be a number");
    const double dur = durIt->get<double>();
    if (!std::isfinite(dur) || dur < 0)
      return makeError(origin, ": event ", std::to_string(i), " (node '", oneLine(name),
                       "'): negative or non-finite 'dur'");
    std::string opName, prov;
    if (auto args = e.find("args"); args != e.end() && args->is_object()) {
      if (auto o = args->find("op_name"); o != args->end() && o->is_string()) opName = o->get<std::string>();
      if (auto p = args->find("provider"); p != args->end() && p->is_string()) prov = p->get<std::string>();
    }
    if (!provider.empty() && prov != provider) {
      inf.otherProviders.push_back(name + " (" + prov + ")");
      continue;
    }
    ++inf.kernelEvents;
    ++inf.providers[prov.empty() ? std::string("unknown") : prov];
    auto& acc = nodes[name];
    if (acc.durs.empty()) acc.firstSeen = order++;
    if (acc.opType.empty()) acc.opType = opName;
    acc.durs.push_back(dur);
  }
  if (nodes.empty())
    return makeError(origin, ": no node kernel times found (events with \"cat\": \"Node\" named '<node>_kernel_time'",
                     provider.empty() ? std::string() : " from provider " + provider, ")");
  Profile p;
  p.backendName = "onnxruntime";
  p.imported = true;
  p.source = "onnxruntime profiling JSON " + baseName(origin);
  p.method = "import";
  p.measuredAt = isoNowUtc();
  ProfileDevice& d = p.device(deviceId);
  std::vector<std::pair<size_t, ProfileOp>> ops;
  int reps = 0;
  for (auto& [name, acc] : nodes) {
    ProfileOp op{name, acc.opType, summarise(acc.durs)};
    reps = std::max(reps, op.time.reps);
    ops.emplace_back(acc.firstSeen, std::move(op));
  }
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [k, op] : ops) d.ops.push_back(std::move(op));
  p.reps = reps;
  return p;
}

Result<Profile> loadOrtProfileFile(const std::string& path, const std::string& deviceId, const std::string& provider,
                                   OrtImportInfo* info) {
  auto bytes = readFile(path);
  if (!bytes) return Error{bytes.message()};
  return parseOrtProfile(*bytes, path, deviceId, provider, info);
}

}  // namespace partex
