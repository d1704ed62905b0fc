#pragma once
// The model suite's manifest (scripts/models/fetch_suite.sh and export_suite.sh write DIR/manifest.json;
// docs/model-suite.md): read once here for bench_ort and bench_flow. Header-only, standard library and
// nlohmann-json only, like the bench programs.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace partex::bench {

/// One model of a suite.
struct SuiteModel {
  std::string name;                 ///< Unique in the suite: the row's label.
  std::string file;                 ///< As the manifest gives it, relative to the suite folder.
  std::string path;                 ///< The model file (the suite folder / its "file").
  std::vector<std::string> dims;    ///< --dim bindings: NAME=VALUE or INPUT:AXIS=VALUE.
  std::vector<std::string> inputs;  ///< --input bindings NAME=FILE for inputs random values would break.
};

/// A suite: its models and a Markdown note naming the manifest (and the suite's own name).
struct Suite {
  std::string note;
  std::vector<SuiteModel> models;
};

/// Reads `dir`/manifest.json. False with `error` set (naming the file and the field) on a missing or
/// malformed manifest.
inline bool readSuiteManifest(const std::string& dir, Suite& out, std::string& error) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(dir) / "manifest.json").string();
  std::ifstream in(path);
  if (!in) {
    error = path + ": no such file (scripts/models/fetch_suite.sh writes it)";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const std::exception& e) {
    std::string what = e.what();
    error = path + ": not JSON (" + what.substr(0, what.find('\n')) + ")";
    return false;
  }
  if (!j.is_object() || !j.contains("models") || !j.at("models").is_array()) {
    error = path + ": field 'models' must be an array";
    return false;
  }
  const std::string suite = j.contains("suite") && j.at("suite").is_string() ? j.at("suite").get<std::string>() : "";
  out.note = "`" + path + "`" + (suite.empty() ? "" : " (" + suite + ")");
  out.models.clear();
  const auto& models = j.at("models");
  for (size_t i = 0; i < models.size(); ++i) {
    const auto& m = models[i];
    const std::string where = path + ": models[" + std::to_string(i) + "]";
    for (const char* key : {"name", "file"})
      if (!m.is_object() || !m.contains(key) || !m.at(key).is_string() || m.at(key).get<std::string>().empty()) {
        error = where + ": field '" + key + "' must be a non-empty string";
        return false;
      }
    SuiteModel sm;
    sm.name = m.at("name").get<std::string>();
    sm.file = m.at("file").get<std::string>();
    sm.path = (fs::path(dir) / sm.file).string();
    if (std::any_of(out.models.begin(), out.models.end(), [&](const SuiteModel& o) { return o.name == sm.name; })) {
      error = where + ": name '" + sm.name + "' is used twice";
      return false;
    }
    if (m.contains("dims")) {
      const auto& d = m.at("dims");
      if (!d.is_array() || !std::all_of(d.begin(), d.end(), [](const nlohmann::json& x) {
            return x.is_string() && x.get<std::string>().find('=') != std::string::npos;
          })) {
        error = where + " (" + sm.name + "): field 'dims' must be an array of NAME=VALUE or INPUT:AXIS=VALUE strings";
        return false;
      }
      for (const auto& x : d) sm.dims.push_back(x.get<std::string>());
    }
    if (m.contains("input_files")) {
      const auto& f = m.at("input_files");
      if (!f.is_object() || !std::all_of(f.begin(), f.end(), [](const nlohmann::json& x) { return x.is_string(); })) {
        error = where + " (" + sm.name + "): field 'input_files' must map input names to .npy files";
        return false;
      }
      for (const auto& [name, file] : f.items())
        sm.inputs.push_back(name + "=" + (fs::path(dir) / file.get<std::string>()).string());
    }
    out.models.push_back(std::move(sm));
  }
  return true;
}

}  // namespace partex::bench
