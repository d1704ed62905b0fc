#include "plan/project.h"

#include "plan/move.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "sched/scheduler.h"
#include "support/files.h"

namespace partex {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

/// `path` relative to `base` when it lies in base or below, else unchanged (absolute).
std::string relativeTo(const std::string& path, const fs::path& base) {
  if (path.empty()) return path;
  std::error_code ec;
  const fs::path abs = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return path;
  const fs::path rel = abs.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") return abs.string();
  return rel.generic_string();
}

std::string resolve(const std::string& path, const fs::path& base) {
  if (path.empty()) return path;
  fs::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  return (base / p).lexically_normal().string();
}

fs::path baseOf(const std::string& projectPath) {
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(projectPath), ec).parent_path();
  const fs::path canon = fs::weakly_canonical(dir, ec);
  return ec ? dir : canon;
}

/// A preset name has no path separator and no .json extension.
bool isPresetName(const std::string& s) {
  return s.find('/') == std::string::npos && s.find('\\') == std::string::npos && fs::path(s).extension() != ".json";
}

}  // namespace

std::string projectToJson(const Project& p, const std::string& projectPath) {
  const fs::path base = baseOf(projectPath);
  json j;
  j["format"] = kProjectFormat;
  j["version"] = kProjectFormatVersion;
  json model;
  model["path"] = relativeTo(p.modelPath, base);
  model["sha256"] = p.modelSha256;
  model["dims"] = p.dims;
  j["model"] = model;
  j["platform"] = isPresetName(p.platform) ? p.platform : relativeTo(p.platform, base);
  json profiles = json::array();
  for (const auto& f : p.profiles) profiles.push_back(relativeTo(f, base));
  j["profiles"] = profiles;
  if (!p.ortImports.empty()) {  // written only when used, so that older readers see nothing new
    json imports = json::array();
    for (const auto& o : p.ortImports)
      imports.push_back({{"path", relativeTo(o.path, base)}, {"device", o.device}, {"provider", o.provider}});
    j["ort_imports"] = imports;
  }
  json sched;
  sched["algorithm"] = p.algorithm;
  sched["params"] = p.params;
  j["scheduler"] = sched;
  json pins = json::array();
  for (const auto& [op, dev] : p.pins) pins.push_back({{"op", op}, {"device", dev}});
  j["pins"] = pins;
  json moves = json::array();
  for (const auto& [op, dev] : p.moves) moves.push_back({{"op", op}, {"device", dev}});
  j["moves"] = moves;
  j["plan"] = p.planJson.empty() ? json(nullptr) : json::parse(p.planJson, nullptr, false);
  if (j["plan"].is_discarded()) j["plan"] = nullptr;
  json view = json::parse(p.viewJson.empty() ? "{}" : p.viewJson, nullptr, false);
  j["view"] = view.is_object() ? view : json::object();
  return j.dump(2) + "\n";
}

Result<Project> parseProject(const std::string& text, const std::string& projectPath) {
  const std::string where = baseName(projectPath);
  auto fail = [&](const std::string& why) -> Result<Project> { return makeError(where, ": ", why); };
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail("not a JSON document");
  if (!j.is_object()) return fail("a project file is a JSON object");
  if (!j.contains("format") || j["format"] != kProjectFormat) return fail(std::string("not a Partex project (\"format\" must be \"") + kProjectFormat + "\")");
  if (!j.contains("version") || !j["version"].is_number_integer()) return fail("\"version\" must be an integer");
  const int version = j["version"].get<int>();
  if (version < 1 || version > kProjectFormatVersion)
    return fail("version " + std::to_string(version) + " is not supported (this build reads versions 1 to " + std::to_string(kProjectFormatVersion) + ")");
  const fs::path base = baseOf(projectPath);
  Project p;
  auto str = [&](const json& obj, const char* key, std::string& out, bool required) -> bool {
    if (!obj.contains(key) || obj[key].is_null()) return !required;
    if (!obj[key].is_string()) return false;
    out = obj[key].get<std::string>();
    return true;
  };
  if (!j.contains("model") || !j["model"].is_object()) return fail("\"model\" must be an object with a \"path\"");
  const json& model = j["model"];
  if (!str(model, "path", p.modelPath, true) || p.modelPath.empty()) return fail("\"model.path\" must be a non-empty string");
  p.modelPath = resolve(p.modelPath, base);
  if (!str(model, "sha256", p.modelSha256, false)) return fail("\"model.sha256\" must be a string");
  if (model.contains("dims")) {
    if (!model["dims"].is_array()) return fail("\"model.dims\" must be an array of strings");
    for (const auto& d : model["dims"]) {
      if (!d.is_string()) return fail("\"model.dims\" must be an array of strings");
      p.dims.push_back(d.get<std::string>());
    }
  }
  if (!str(j, "platform", p.platform, true) || p.platform.empty()) return fail("\"platform\" must be a preset name or a platform file path");
  if (!isPresetName(p.platform)) p.platform = resolve(p.platform, base);
  if (j.contains("profiles")) {
    if (!j["profiles"].is_array()) return fail("\"profiles\" must be an array of file paths");
    for (const auto& f : j["profiles"]) {
      if (!f.is_string() || f.get<std::string>().empty()) return fail("\"profiles\" must be an array of file paths");
      p.profiles.push_back(resolve(f.get<std::string>(), base));
    }
  }
  if (j.contains("ort_imports")) {
    const char* shape = "\"ort_imports\" must be an array of {\"path\": FILE, \"device\": ID, \"provider\": NAME}";
    if (!j["ort_imports"].is_array()) return fail(shape);
    for (const auto& e : j["ort_imports"]) {
      ProjectOrtImport o;
      if (!e.is_object() || !str(e, "path", o.path, true) || o.path.empty() || !str(e, "device", o.device, true) ||
          o.device.empty() || !str(e, "provider", o.provider, false))
        return fail(shape);
      o.path = resolve(o.path, base);
      p.ortImports.push_back(std::move(o));
    }
  }
  if (j.contains("scheduler") && !j["scheduler"].is_null()) {
    const json& s = j["scheduler"];
    if (!s.is_object() || !str(s, "algorithm", p.algorithm, false)) return fail("\"scheduler\" must be an object with a string \"algorithm\"");
    if (s.contains("params")) {
      if (!s["params"].is_object()) return fail("\"scheduler.params\" must be an object of strings");
      for (const auto& [k, v] : s["params"].items()) {
        if (!v.is_string()) return fail("\"scheduler.params." + k + "\" must be a string");
        p.params[k] = v.get<std::string>();
      }
    }
  }
  auto pairs = [&](const char* key, std::vector<std::pair<std::string, std::string>>& out) -> bool {
    if (!j.contains(key)) return true;
    if (!j[key].is_array()) return false;
    for (const auto& e : j[key]) {
      if (!e.is_object() || !e.contains("op") || !e.contains("device") || !e["op"].is_string() || !e["device"].is_string()) return false;
      out.emplace_back(e["op"].get<std::string>(), e["device"].get<std::string>());
    }
    return true;
  };
  if (!pairs("pins", p.pins)) return fail("\"pins\" must be an array of {\"op\": NAME, \"device\": ID}");
  if (!pairs("moves", p.moves)) return fail("\"moves\" must be an array of {\"op\": NAME, \"device\": ID}");
  if (j.contains("plan") && !j["plan"].is_null()) {
    if (!j["plan"].is_object()) return fail("\"plan\" must be a plan-file object or null");
    p.planJson = j["plan"].dump(2) + "\n";
  }
  if (j.contains("view") && !j["view"].is_null()) {
    if (!j["view"].is_object()) return fail("\"view\" must be an object");
    p.viewJson = j["view"].dump();
  }
  return p;
}

Status saveProject(const std::string& path, const Project& p) { return writeFileAtomic(path, projectToJson(p, path)); }

Result<Project> loadProjectFile(const std::string& path) {
  auto text = readFile(path);
  if (!text) return Error{text.message()};
  return parseProject(*text, path);
}

Result<Constraints> resolvePins(const Project& p, const CostTable& t, const std::string& origin) {
  Constraints c;
  for (const auto& [op, dev] : p.pins) {
    TaskId v = -1;
    for (TaskId i = 0; i < t.numTasks(); ++i)
      if (t.taskNames[static_cast<size_t>(i)] == op) {
        v = i;
        break;
      }
    if (v < 0) return makeError(baseName(origin), ": pin of '", op, "': the model has no such operator");
    DeviceId d = -1;
    for (DeviceId i = 0; i < t.numDevices(); ++i)
      if (t.deviceIds[static_cast<size_t>(i)] == dev) d = i;
    if (d < 0) return makeError(baseName(origin), ": pin of '", op, "': the platform has no device '", dev, "'");
    if (auto st = checkPlacement(t, v, d); !st) return makeError(baseName(origin), ": pin of '", op, "': ", st.message());
    c.pinned[v] = d;
  }
  return c;
}

}  // namespace partex
