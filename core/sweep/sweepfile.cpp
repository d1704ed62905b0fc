#include "sweep/sweepfile.h"

#include <glob.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "platform/platform.h"
#include "sched/llamarules.h"
#include "problem/problem.h"
#include "profile/profile.h"
#include "sched/scheduler.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Errors carry the file and the entry: "sweep.json: models[2]: no file matches 'x/*.onnx'".
struct Ctx {
  std::string file;
  Error err(const std::string& entry, const std::string& what) const {
    return makeError(file, ": ", entry, ": ", what);
  }
};

bool hasGlob(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

std::string absolute(const std::string& dir, const std::string& p) {
  const fs::path path(p);
  return (path.is_absolute() ? path : fs::path(dir) / path).lexically_normal().string();
}

std::string relativeLabel(const std::string& dir, const std::string& abs) {
  const fs::path rel = fs::path(abs).lexically_relative(dir);
  const std::string r = rel.string();
  return r.empty() || r.rfind("..", 0) == 0 ? abs : r;
}

/// The files a pattern names (sorted); the pattern itself when it has no wildcard and exists.
Result<std::vector<std::string>> matchFiles(const Ctx& c, const std::string& entry, const std::string& dir,
                                            const std::string& pattern) {
  const std::string abs = absolute(dir, pattern);
  std::vector<std::string> out;
  if (!hasGlob(pattern)) {
    std::error_code ec;
    if (!fs::exists(abs, ec)) return c.err(entry, "no such file '" + pattern + "'");
    if (fs::is_directory(abs, ec))
      return c.err(entry, "'" + pattern + "' is a directory (a glob such as '" + pattern + "/*.onnx' names its files)");
    out.push_back(abs);
    return out;
  }
  glob_t g{};
  const int rc = ::glob(abs.c_str(), 0, nullptr, &g);
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::error_code ec;
      if (fs::is_regular_file(g.gl_pathv[i], ec)) out.emplace_back(g.gl_pathv[i]);
    }
  globfree(&g);
  if (out.empty()) return c.err(entry, "no file matches '" + pattern + "'");
  return out;
}

std::string numText(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

/// A JSON scalar as parameter text (strings as they are, numbers as written, booleans true/false).
Result<std::string> scalarText(const Ctx& c, const std::string& entry, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return numText(v.get<double>());
  if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
  return c.err(entry, "must be a string, a number or a boolean, not " + std::string(v.type_name()));
}

/// Cartesian product of named value lists, in key order: [[k1=v, k2=w], ...].
std::vector<std::vector<std::string>> product(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& axes) {
  std::vector<std::vector<std::string>> out{{}};
  for (const auto& [name, values] : axes) {
    std::vector<std::vector<std::string>> next;
    for (const auto& partial : out)
      for (const auto& v : values) {
        auto p = partial;
        p.push_back(name + "=" + v);
        next.push_back(std::move(p));
      }
    out = std::move(next);
  }
  return out;
}

/// "dims": {"NAME": 8 or [1, 8], "INPUT:AXIS": ...} -> binding sets.
Result<std::vector<std::vector<std::string>>> parseDims(const Ctx& c, const std::string& entry, const json& d) {
  if (!d.is_object()) return c.err(entry, "must be an object of NAME: value or [values]");
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  for (const auto& [name, v] : d.items()) {
    std::vector<std::string> values;
    const json list = v.is_array() ? v : json::array({v});
    if (list.empty()) return c.err(entry + "." + name, "is an empty list");
    for (const auto& x : list) {
      if (!x.is_number_integer() || x.get<int64_t>() < 1)
        return c.err(entry + "." + name, "values must be positive integers");
      values.push_back(std::to_string(x.get<int64_t>()));
    }
    axes.emplace_back(name, std::move(values));
  }
  return product(axes);
}

Result<std::vector<double>> parseScales(const Ctx& c, const std::string& entry, const json& v) {
  const json list = v.is_array() ? v : json::array({v});
  if (list.empty()) return c.err(entry, "is an empty list");
  std::vector<double> out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_number() || !(list[i].get<double>() > 0) || !std::isfinite(list[i].get<double>()))
      return c.err(entry + "[" + std::to_string(i) + "]", "must be a positive number");
    out.push_back(list[i].get<double>());
  }
  return out;
}

Status checkKeys(const Ctx& c, const std::string& entry, const json& obj, const std::set<std::string>& allowed) {
  for (const auto& [k, v] : obj.items())
    if (!allowed.count(k)) {
      std::vector<std::string> names(allowed.begin(), allowed.end());
      return c.err(entry, "unknown field '" + k + "' (fields: " + join(names, ", ") + ")");
    }
  return Status::ok();
}

}  // namespace

std::string dimsLabel(const std::vector<std::string>& dims) {
  return join(dims, ",");
}

Result<SweepSpec> parseSweep(const std::string& text, const std::string& file) {
  const Ctx c{file};
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    return makeError(file, ": bad JSON: ", e.what());
  }
  if (!root.is_object()) return makeError(file, ": a sweep file is a JSON object (see docs/sweeps.md)");
  if (auto st = checkKeys(c, "top level", root,
                          {"description", "models", "dims", "platforms", "link_bandwidth_scale", "link_latency_scale",
                           "algorithms", "time_limit", "profiles", "unlimited_links", "objective", "latency_bound_us",
                           "output"});
      !st)
    return Error{st.message()};
  SweepSpec s;
  s.file = file;
  std::error_code ec;
  s.dir = fs::absolute(fs::path(file), ec).parent_path().lexically_normal().string();

  std::vector<std::vector<std::string>> topDims{{}};
  if (root.contains("dims")) {
    auto d = parseDims(c, "dims", root["dims"]);
    if (!d) return Error{d.message()};
    topDims = *d;
  }

  // ---- models ----
  if (!root.contains("models")) return makeError(file, ": models: missing (files, globs or gen: generators)");
  const json& models = root["models"];
  if (!models.is_array() || models.empty()) return c.err("models", "must be a non-empty list");
  std::set<std::string> seenModels;
  for (size_t i = 0; i < models.size(); ++i) {
    const std::string entry = "models[" + std::to_string(i) + "]";
    const json& m = models[i];
    std::vector<std::string> refs;
    auto dims = topDims;
    auto addFiles = [&](const std::string& pattern) -> Status {
      auto files = matchFiles(c, entry, s.dir, pattern);
      if (!files) return Error{files.message()};
      for (auto& f : *files) refs.push_back(f);
      return Status::ok();
    };
    if (m.is_string()) {
      const std::string v = m.get<std::string>();
      if (isGeneratorRef(v)) {
        if (auto g = parseGeneratorRef(v); !g) return c.err(entry, g.message());
        refs.push_back(v);
      } else if (auto st = addFiles(v); !st) {
        return Error{st.message()};
      }
    } else if (m.is_object()) {
      if (m.contains("dims")) {
        auto d = parseDims(c, entry + ".dims", m["dims"]);
        if (!d) return Error{d.message()};
        dims = *d;
      }
      if (m.contains("file") == m.contains("gen"))
        return c.err(entry, "an object entry names either \"file\" (a path or glob) or \"gen\" (a generator kind)");
      if (m.contains("file")) {
        if (auto st = checkKeys(c, entry, m, {"file", "dims"}); !st) return Error{st.message()};
        if (!m["file"].is_string()) return c.err(entry + ".file", "must be a string");
        if (auto st = addFiles(m["file"].get<std::string>()); !st) return Error{st.message()};
      } else {
        if (!m["gen"].is_string())
          return c.err(entry + ".gen", "must be a generator kind (" + join(generatorKinds(), ", ") + ")");
        std::vector<std::pair<std::string, std::vector<std::string>>> axes;
        for (const auto& [k, v] : m.items()) {
          if (k == "gen" || k == "dims") continue;
          std::vector<std::string> values;
          const json list = v.is_array() ? v : json::array({v});
          if (list.empty()) return c.err(entry + "." + k, "is an empty list");
          for (const auto& x : list) {
            auto t = scalarText(c, entry + "." + k, x);
            if (!t) return Error{t.message()};
            values.push_back(*t);
          }
          axes.emplace_back(k, std::move(values));
        }
        for (const auto& set : product(axes)) {
          std::string ref = kGeneratorPrefix + m["gen"].get<std::string>();
          if (!set.empty()) ref += "?" + join(set, "&");
          if (auto g = parseGeneratorRef(ref); !g) return c.err(entry, g.message());
          refs.push_back(ref);
        }
      }
    } else {
      return c.err(entry, "must be a path, a glob, \"gen:KIND?key=value&...\" or an object");
    }
    for (const auto& ref : refs) {
      if (!seenModels.insert(ref).second) continue;  // overlapping globs name a file once
      SweepModel sm;
      sm.ref = ref;
      sm.label = isGeneratorRef(ref) ? ref : relativeLabel(s.dir, ref);
      if (!isGeneratorRef(ref)) {
        auto tg = isTaskGraphFile(ref);
        if (!tg) return c.err(entry, tg.message());
        sm.taskGraph = *tg;
      }
      sm.dimSets = dims;
      s.models.push_back(std::move(sm));
    }
  }

  // ---- platforms ----
  const bool needPlatforms =
      std::any_of(s.models.begin(), s.models.end(), [](const SweepModel& m) { return !m.taskGraph; });
  if (root.contains("platforms")) {
    const json list = root["platforms"].is_array() ? root["platforms"] : json::array({root["platforms"]});
    if (list.empty()) return c.err("platforms", "is an empty list");
    const auto presets = presetNames();
    std::set<std::string> seen;
    auto add = [&](const std::string& ref, const std::string& label) {
      if (seen.insert(ref).second) {
        s.platforms.push_back(ref);
        s.platformLabels.push_back(label);
      }
    };
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string entry = "platforms[" + std::to_string(i) + "]";
      if (!list[i].is_string()) return c.err(entry, "must be a preset name or a platform file");
      const std::string v = list[i].get<std::string>();
      if (v == "*") {  // every bundled preset; this-machine is measured, so it is named explicitly
        for (const auto& p : presets)
          if (p != "this-machine") add(p, p);
      } else if (std::find(presets.begin(), presets.end(), v) != presets.end()) {
        add(v, v);
      } else if (!hasGlob(v) && !fs::exists(absolute(s.dir, v), ec)) {
        return c.err(entry, "unknown platform '" + v + "' (presets: " + join(presets, ", ") + "; or a platform file)");
      } else {
        auto files = matchFiles(c, entry, s.dir, v);
        if (!files) return Error{files.message()};
        for (const auto& f : *files) {
          if (auto p = loadPlatformFile(f); !p) return c.err(entry, p.message());
          add(f, relativeLabel(s.dir, f));
        }
      }
    }
  } else if (needPlatforms) {
    return makeError(file, ": platforms: missing (preset names, platform files or \"*\" for every preset)");
  }

  // ---- scales ----
  if (root.contains("link_bandwidth_scale")) {
    auto v = parseScales(c, "link_bandwidth_scale", root["link_bandwidth_scale"]);
    if (!v) return Error{v.message()};
    s.bandwidthScales = *v;
  }
  if (root.contains("link_latency_scale")) {
    auto v = parseScales(c, "link_latency_scale", root["link_latency_scale"]);
    if (!v) return Error{v.message()};
    s.latencyScales = *v;
  }

  // ---- objective ----
  if (root.contains("objective")) {
    if (!root["objective"].is_string() || !parseObjective(root["objective"].get<std::string>(), s.objective))
      return c.err("objective", "must be \"latency\" or \"throughput\"");
  }
  if (root.contains("latency_bound_us")) {
    if (!root["latency_bound_us"].is_number() || !(root["latency_bound_us"].get<double>() > 0))
      return c.err("latency_bound_us", "must be a positive number of microseconds");
    if (s.objective != Objective::Throughput) return c.err("latency_bound_us", "applies to \"objective\": \"throughput\"");
    s.latencyBoundUs = root["latency_bound_us"].get<double>();
  }

  // ---- algorithms ----
  double defaultLimit = 10.0;
  if (root.contains("time_limit")) {
    if (!root["time_limit"].is_number() || !(root["time_limit"].get<double>() > 0))
      return c.err("time_limit", "must be a positive number of seconds");
    defaultLimit = root["time_limit"].get<double>();
  }
  if (!root.contains("algorithms"))
    return makeError(file, ": algorithms: missing (names, objects or \"*\" for every algorithm)");
  {
    const json list = root["algorithms"].is_array() ? root["algorithms"] : json::array({root["algorithms"]});
    if (list.empty()) return c.err("algorithms", "is an empty list");
    std::vector<std::string> all;
    // offload (the first-k-layers rule) refuses models without layer names, which most are: like
    // this-machine among the platforms, it is not in "*" but runs when named.
    for (const auto& sch : allSchedulers())
      if (!isLlamaRule(sch->name())) all.push_back(sch->name());
    std::set<std::string> seen;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string entry = "algorithms[" + std::to_string(i) + "]";
      const json& a = list[i];
      std::vector<SweepAlgorithm> add;
      if (a.is_string() && a.get<std::string>() == "*") {
        for (const auto& n : all) {
          SweepAlgorithm x;
          x.name = n;
          x.timeLimitSec = defaultLimit;
          add.push_back(x);
        }
      } else if (a.is_string() || a.is_object()) {
        SweepAlgorithm x;
        x.named = true;
        x.timeLimitSec = defaultLimit;
        if (a.is_object()) {
          if (auto st = checkKeys(c, entry, a, {"name", "params", "time_limit", "label"}); !st)
            return Error{st.message()};
          if (!a.contains("name") || !a["name"].is_string()) return c.err(entry, "needs \"name\" (an algorithm)");
          x.name = a["name"].get<std::string>();
          if (a.contains("params")) {
            if (!a["params"].is_object()) return c.err(entry + ".params", "must be an object of KEY: value");
            for (const auto& [k, v] : a["params"].items()) {
              auto t = scalarText(c, entry + ".params." + k, v);
              if (!t) return Error{t.message()};
              x.params[k] = *t;
            }
          }
          if (a.contains("time_limit")) {
            if (!a["time_limit"].is_number() || !(a["time_limit"].get<double>() > 0))
              return c.err(entry + ".time_limit", "must be a positive number of seconds");
            x.timeLimitSec = a["time_limit"].get<double>();
          }
          if (a.contains("label")) {
            if (!a["label"].is_string() || a["label"].get<std::string>().empty())
              return c.err(entry + ".label", "must be a non-empty string");
            x.label = a["label"].get<std::string>();
          }
        } else {
          x.name = a.get<std::string>();
        }
        if (!findScheduler(x.name))
          return c.err(entry, "unknown algorithm '" + x.name + "' (algorithms: " + join(all, ", ") + ")");
        add.push_back(x);
      } else {
        return c.err(entry, "must be an algorithm name, an object or \"*\"");
      }
      for (auto& x : add) {
        if (x.label.empty()) {
          x.label = x.name;
          if (!x.params.empty()) {
            std::vector<std::string> kv;
            for (const auto& [k, v] : x.params) kv.push_back(k + "=" + v);
            x.label += "(" + join(kv, ",") + ")";
          }
        }
        if (x.label.find('|') != std::string::npos) return c.err(entry, "a label may not contain '|'");
        if (seen.insert(x.label).second) s.algorithms.push_back(std::move(x));
      }
    }
  }

  // ---- profiles, options ----
  if (root.contains("profiles")) {
    const json list = root["profiles"].is_array() ? root["profiles"] : json::array({root["profiles"]});
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string entry = "profiles[" + std::to_string(i) + "]";
      if (!list[i].is_string()) return c.err(entry, "must be a profile file or glob");
      auto files = matchFiles(c, entry, s.dir, list[i].get<std::string>());
      if (!files) return Error{files.message()};
      for (const auto& f : *files) {
        if (auto p = loadProfileFile(f); !p) return c.err(entry, p.message());
        s.profiles.push_back(f);
      }
    }
  }
  if (root.contains("unlimited_links")) {
    if (!root["unlimited_links"].is_boolean()) return c.err("unlimited_links", "must be true or false");
    s.unlimitedLinks = root["unlimited_links"].get<bool>();
  }
  if (root.contains("output")) {
    if (!root["output"].is_string() || root["output"].get<std::string>().empty())
      return c.err("output", "must be a folder path");
    s.output = absolute(s.dir, root["output"].get<std::string>());
  } else {
    s.output = (fs::path(s.dir) / (fs::path(file).stem().string() + "-results")).string();
  }
  if (expandSweep(s).empty()) return makeError(file, ": the sweep expands to no case");
  return s;
}

Result<SweepSpec> loadSweepFile(const std::string& path) {
  auto text = readFile(path);
  if (!text) return Error{text.message()};
  return parseSweep(*text, path);
}

std::vector<SweepCase> expandSweep(const SweepSpec& s) {
  std::vector<SweepCase> out;
  std::set<std::string> keys;
  for (size_t m = 0; m < s.models.size(); ++m) {
    const SweepModel& model = s.models[m];
    const size_t platforms = model.taskGraph ? 1 : s.platforms.size();
    for (size_t d = 0; d < model.dimSets.size(); ++d)
      for (size_t p = 0; p < platforms; ++p)
        for (size_t b = 0; b < s.bandwidthScales.size(); ++b)
          for (size_t l = 0; l < s.latencyScales.size(); ++l)
            for (size_t a = 0; a < s.algorithms.size(); ++a) {
              SweepCase c;
              c.model = m;
              c.dimSet = d;
              c.platform = p;
              c.bandwidth = b;
              c.latency = l;
              c.algorithm = a;
              c.key = model.label + "|" + dimsLabel(model.dimSets[d]) + "|" +
                      (model.taskGraph ? "task graph" : s.platformLabels[p]) + "|bw=" + numText(s.bandwidthScales[b]) +
                      "|lat=" + numText(s.latencyScales[l]) + "|" + s.algorithms[a].label;
              if (!keys.insert(c.key).second) continue;
              c.index = out.size();
              out.push_back(std::move(c));
            }
  }
  return out;
}

std::vector<SweepCase> selectShard(const std::vector<SweepCase>& cases, int index, int count) {
  std::vector<SweepCase> out;
  if (count < 1 || index < 0 || index >= count) return out;
  for (size_t i = static_cast<size_t>(index); i < cases.size(); i += static_cast<size_t>(count))
    out.push_back(cases[i]);
  return out;
}

Result<std::pair<int, int>> parseShard(const std::string& text) {
  const auto slash = text.find('/');
  int64_t i = 0, n = 0;
  if (slash == std::string::npos || !parseInt64(text.substr(0, slash), i) || !parseInt64(text.substr(slash + 1), n) ||
      n < 1 || i < 0 || i >= n || n > 1000000)
    return makeError("--shard ", text, ": expected I/N with 0 <= I < N (e.g. 3/16)");
  return std::make_pair(static_cast<int>(i), static_cast<int>(n));
}

}  // namespace partex
