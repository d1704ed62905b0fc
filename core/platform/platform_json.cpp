// Reading and writing platform files (format "partex-platform", version 1; see docs/platform-format.md).
// Validation is strict on the fields it knows and ignores keys it does not: every error names the
// origin, the device (or link, or group) and the field, in one line.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/platform.h"
#include "support/files.h"

namespace partex {

namespace {

using json = nlohmann::ordered_json;

constexpr const char* kFormat = "partex-platform";
constexpr int kVersion = 1;
constexpr const char* kConstraintKinds[] = {"channels_multiple_of", "max_kernel", "dtypes", "max_rank"};
constexpr DeviceKind kKinds[] = {DeviceKind::Cpu, DeviceKind::Gpu, DeviceKind::Npu, DeviceKind::Dsp, DeviceKind::Pim};

/// Thrown inside the parser only; parsePlatform turns it into an Error.
struct ParseFailure {
  std::string message;
};

std::string joinNames(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += v[i];
  }
  return s;
}

/// A short rendering of a JSON value for "(got ...)" in messages, kept on one line.
std::string shortDump(const json& j) {
  std::string s = j.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

/// Where in the file we are: "" (top level), "device 'npu'", "link 2 ('cpu' -> 'npu')", ...
class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    std::string m = origin_ + ": ";
    if (!where.empty()) m += where + ": ";
    m += what;
    for (char& c : m)
      if (c == '\n' || c == '\r') c = ' ';
    throw ParseFailure{std::move(m)};
  }

  [[noreturn]] void failField(const std::string& where, const std::string& field, const std::string& what,
                              const json* got = nullptr) const {
    std::string m = "field '" + field + "' " + what;
    if (got) m += " (got " + shortDump(*got) + ")";
    fail(where, m);
  }

  /// The member `key`, or nullptr when absent or null.
  static const json* member(const json& o, const std::string& key) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::string requiredString(const json& o, const std::string& key, const std::string& where) const {
    const json* v = member(o, key);
    if (!v) failField(where, key, "is missing");
    if (!v->is_string() || v->get<std::string>().empty()) failField(where, key, "must be a non-empty string", v);
    return v->get<std::string>();
  }

  std::string optionalString(const json& o, const std::string& key, const std::string& where,
                             const std::string& def) const {
    const json* v = member(o, key);
    if (!v) return def;
    if (!v->is_string()) failField(where, key, "must be a string", v);
    return v->get<std::string>();
  }

  enum class Sign { Positive, NonNegative };

  double number(const json& v, const std::string& field, const std::string& where, Sign sign) const {
    const char* need = sign == Sign::Positive ? "must be a positive number" : "must be a number >= 0";
    if (!v.is_number()) failField(where, field, need, &v);
    double d = v.get<double>();
    if (!std::isfinite(d) || (sign == Sign::Positive ? d <= 0.0 : d < 0.0)) failField(where, field, need, &v);
    return d;
  }

  double optionalNumber(const json& o, const std::string& key, const std::string& where, Sign sign, double def) const {
    const json* v = member(o, key);
    return v ? number(*v, key, where, sign) : def;
  }

  double requiredNumber(const json& o, const std::string& key, const std::string& where, Sign sign) const {
    const json* v = member(o, key);
    if (!v) failField(where, key, "is missing");
    return number(*v, key, where, sign);
  }

  int64_t integer(const json& v, const std::string& field, const std::string& where, int64_t min) const {
    std::string need = min == 0 ? "must be an integer >= 0" : "must be an integer >= " + std::to_string(min);
    int64_t out = 0;
    if (v.is_number_unsigned()) {
      auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) failField(where, field, need, &v);
      out = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      out = v.get<int64_t>();
    } else if (v.is_number_float()) {
      double d = v.get<double>();
      // 8e9 is a fine way to write a byte count; 2.5 cores is not.
      if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18) failField(where, field, need, &v);
      out = static_cast<int64_t>(d);
    } else {
      failField(where, field, need, &v);
    }
    if (out < min) failField(where, field, need, &v);
    return out;
  }

  int64_t optionalInteger(const json& o, const std::string& key, const std::string& where, int64_t min,
                          int64_t def) const {
    const json* v = member(o, key);
    return v ? integer(*v, key, where, min) : def;
  }

  bool optionalBool(const json& o, const std::string& key, const std::string& where, bool def) const {
    const json* v = member(o, key);
    if (!v) return def;
    if (!v->is_boolean()) failField(where, key, "must be true or false", v);
    return v->get<bool>();
  }

  std::vector<std::string> stringList(const json& o, const std::string& key, const std::string& where) const {
    std::vector<std::string> out;
    const json* v = member(o, key);
    if (!v) return out;
    if (!v->is_array()) failField(where, key, "must be an array of strings", v);
    for (const json& e : *v) {
      if (!e.is_string() || e.get<std::string>().empty())
        failField(where, key, "must be an array of non-empty strings", &e);
      out.push_back(e.get<std::string>());
    }
    return out;
  }

  const json* optionalArray(const json& o, const std::string& key, const std::string& where) const {
    const json* v = member(o, key);
    if (v && !v->is_array()) failField(where, key, "must be an array", v);
    return v;
  }

  Platform parse(const json& root) {
    if (!root.is_object()) fail("", std::string("a platform file must be a JSON object, not ") + typeName(root));
    checkFormat(root);
    Platform p;
    p.name = optionalString(root, "name", "", defaultName());
    p.description = optionalString(root, "description", "", "");
    p.sources = stringList(root, "sources", "");

    const json* devs = member(root, "devices");
    if (!devs) failField("", "devices", "is missing");
    if (!devs->is_array() || devs->empty()) failField("", "devices", "must be a non-empty array of devices", devs);
    for (size_t i = 0; i < devs->size(); ++i) p.devices.push_back(parseDevice((*devs)[i], i, p));

    p.host = requiredString(root, "host", "");
    if (p.findDevice(p.host) == kNone)
      failField("", "host", "names no device: '" + p.host + "' (devices: " + deviceList(p) + ")");

    if (const json* links = optionalArray(root, "links", ""))
      for (size_t i = 0; i < links->size(); ++i) p.links.push_back(parseLink((*links)[i], i, p));

    if (const json* groups = optionalArray(root, "exclusive_groups", ""))
      for (size_t i = 0; i < groups->size(); ++i) p.exclusiveGroups.push_back(parseGroup((*groups)[i], i, p));
    return p;
  }

 private:
  static const char* typeName(const json& j) {
    if (j.is_array()) return "an array";
    if (j.is_string()) return "a string";
    if (j.is_number()) return "a number";
    if (j.is_boolean()) return "a boolean";
    if (j.is_null()) return "null";
    return "an object";
  }

  std::string defaultName() const {
    std::string n = baseName(origin_);
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) n.resize(n.size() - 5);
    return n;
  }

  static std::string deviceList(const Platform& p) {
    std::vector<std::string> ids;
    for (const Device& d : p.devices) ids.push_back(d.id);
    return joinNames(ids);
  }

  void checkFormat(const json& root) const {
    const json* f = member(root, "format");
    if (!f) failField("", "format", std::string("is missing (expected \"") + kFormat + "\")");
    if (!f->is_string() || f->get<std::string>() != kFormat)
      failField("", "format", std::string("must be \"") + kFormat + "\"", f);
    const json* v = member(root, "version");
    if (!v) failField("", "version", "is missing (expected " + std::to_string(kVersion) + ")");
    if (!v->is_number_integer() || v->get<int64_t>() != kVersion)
      failField(
          "", "version",
          "is " + shortDump(*v) + ", but this build reads only platform format version " + std::to_string(kVersion));
  }

  static bool validId(const std::string& id) {
    for (char c : id) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                c == '.';
      if (!ok) return false;
    }
    return !id.empty();
  }

  Device parseDevice(const json& o, size_t index, const Platform& p) const {
    std::string where = "device " + std::to_string(index + 1);
    if (!o.is_object()) fail(where, std::string("must be a JSON object, not ") + typeName(o));
    Device d;
    d.id = requiredString(o, "id", where);
    if (!validId(d.id)) failField(where, "id", "must use only letters, digits, '-', '_' and '.'", member(o, "id"));
    for (size_t j = 0; j < index; ++j)
      if (p.devices[j].id == d.id)
        fail("device '" + d.id + "'", "id is used by devices " + std::to_string(j + 1) + " and " +
                                          std::to_string(index + 1) + "; device ids must be unique");
    where = "device '" + d.id + "'";
    d.name = optionalString(o, "name", where, d.id);
    if (d.name.empty()) d.name = d.id;

    std::string kind = requiredString(o, "kind", where);
    bool found = false;
    for (DeviceKind k : kKinds) {
      if (kind == deviceKindName(k)) {
        d.kind = k;
        found = true;
      }
    }
    if (!found) failField(where, "kind", "must be one of cpu, gpu, npu, dsp, pim", member(o, "kind"));

    parsePeaks(o, where, d);
    parseSpeedups(o, where, d);
    d.memBandwidthGBs = requiredNumber(o, "bandwidth_gbs", where, Sign::Positive);
    d.launchOverheadUs = optionalNumber(o, "launch_overhead_us", where, Sign::NonNegative, 0.0);
    parseClassMap(o, "bandwidth_gbs_by_class", where, Sign::Positive, d.bandwidthGBsByClass);
    parseClassMap(o, "launch_overhead_us_by_class", where, Sign::NonNegative, d.launchOverheadUsByClass);
    parseOpTypes(o, where, d);
    d.memCapacityBytes = optionalInteger(o, "memory_bytes", where, 0, 0);
    d.dequantGElemsPerS = optionalNumber(o, "dequant_gelems_per_s", where, Sign::NonNegative, 0.0);
    d.workspaceBytes = optionalInteger(o, "workspace_bytes", where, 0, 0);
    d.onChipBytes = optionalInteger(o, "on_chip_bytes", where, 0, 0);
    int64_t cores = optionalInteger(o, "cores", where, 1, 1);
    if (cores > 1000000) failField(where, "cores", "must be at most 1000000", member(o, "cores"));
    d.cores = static_cast<int>(cores);
    d.coreSyncUs = optionalNumber(o, "core_sync_us", where, Sign::NonNegative, 0.0);
    d.wakeUpUs = optionalNumber(o, "wake_up_us", where, Sign::NonNegative, 0.0);
    d.modeSwitchUs = optionalNumber(o, "mode_switch_us", where, Sign::NonNegative, 0.0);
    d.compilesBlocks = optionalBool(o, "compiles_blocks", where, false);
    d.fusion = optionalString(o, "fusion", where, "");
    if (!d.fusion.empty() && d.fusion != "epilogues" && d.fusion != "runtime")
      failField(where, "fusion", "must be \"epilogues\", \"runtime\" or absent", member(o, "fusion"));
    d.copies = optionalString(o, "copies", where, "");
    d.readerConvertGBs = optionalNumber(o, "reader_convert_gbs", where, Sign::NonNegative, 0.0);
    if (!d.copies.empty() && d.copies != "inline")
      failField(where, "copies", "must be \"inline\" or absent", member(o, "copies"));
    d.waveOutputs = optionalInteger(o, "wave_outputs", where, 0, 0);
    parseClassMap(o, "reduction_step_us_by_class", where, Sign::NonNegative, d.reductionStepUsByClass);
    for (auto& s : stringList(o, "supported_ops", where)) d.supportedOps.insert(s);
    for (auto& s : stringList(o, "unsupported_ops", where)) d.unsupportedOps.insert(s);
    if (const json* cs = optionalArray(o, "constraints", where))
      for (size_t i = 0; i < cs->size(); ++i) d.constraints.push_back(parseConstraint((*cs)[i], i, where));

    d.color = optionalString(o, "color", where, "");
    if (!d.color.empty()) {
      bool ok = d.color.size() == 7 && d.color[0] == '#';
      for (size_t i = 1; ok && i < d.color.size(); ++i) ok = std::isxdigit(static_cast<unsigned char>(d.color[i]));
      if (!ok) failField(where, "color", "must be a colour \"#rrggbb\"", member(o, "color"));
    }
    return d;
  }

  void parsePeaks(const json& o, const std::string& where, Device& d) const {
    const json* v = member(o, "peak_gflops");
    if (!v) failField(where, "peak_gflops", "is missing");
    if (v->is_number()) {  // Shorthand: one peak for every class.
      d.defaultPeakGflops = number(*v, "peak_gflops", where, Sign::Positive);
      return;
    }
    if (!v->is_object()) failField(where, "peak_gflops", "must be a number or an object of GFLOP/s per op class", v);
    bool haveDefault = false;
    for (auto it = v->begin(); it != v->end(); ++it) {
      const std::string& key = it.key();
      std::string field = "peak_gflops." + key;
      if (key == "default") {
        d.defaultPeakGflops = number(it.value(), field, where, Sign::Positive);
        haveDefault = true;
        continue;
      }
      OpClass cls;
      if (!opClassFromName(key, cls)) {
        std::vector<std::string> known{"default"};
        for (int i = 0; i < kNumOpClasses; ++i) known.push_back(opClassName(static_cast<OpClass>(i)));
        failField(where, "peak_gflops", "has an unknown op class '" + key + "' (known: " + joinNames(known) + ")");
      }
      d.peakGflops[cls] = number(it.value(), field, where, Sign::Positive);
    }
    if (!haveDefault) failField(where, "peak_gflops", "needs a \"default\" entry for op classes not listed");
  }

  /// An optional object of numbers per op class ("conv": 4.2, ...).
  void parseClassMap(const json& o, const std::string& key, const std::string& where, Sign sign,
                     std::map<OpClass, double>& out) const {
    const json* v = member(o, key);
    if (!v) return;
    if (!v->is_object()) failField(where, key, "must be an object of numbers per op class", v);
    for (auto it = v->begin(); it != v->end(); ++it) {
      OpClass cls;
      if (!opClassFromName(it.key(), cls)) {
        std::vector<std::string> known;
        for (int i = 0; i < kNumOpClasses; ++i) known.push_back(opClassName(static_cast<OpClass>(i)));
        failField(where, key, "has an unknown op class '" + it.key() + "' (known: " + joinNames(known) + ")");
      }
      out[cls] = number(it.value(), key + "." + it.key(), where, sign);
    }
  }

  /// "op_types": {"Add": {"peak_gflops": ..., "bandwidth_gbs": ..., "launch_overhead_us": ...}}, each
  /// field optional (absent: the class's number).
  void parseOpTypes(const json& o, const std::string& where, Device& d) const {
    const json* v = member(o, "op_types");
    if (!v) return;
    if (!v->is_object()) failField(where, "op_types", "must be an object of cost numbers per ONNX op type", v);
    for (auto it = v->begin(); it != v->end(); ++it) {
      const std::string field = "op_types." + it.key();
      if (it.key().empty()) failField(where, "op_types", "has an empty op type");
      if (!it.value().is_object()) failField(where, field, "must be an object", &it.value());
      OpTypeCost c;
      c.peakGflops = optionalNumber(it.value(), "peak_gflops", where + ": " + field, Sign::Positive, 0.0);
      c.bandwidthGBs = optionalNumber(it.value(), "bandwidth_gbs", where + ": " + field, Sign::Positive, 0.0);
      c.launchOverheadUs =
          optionalNumber(it.value(), "launch_overhead_us", where + ": " + field, Sign::NonNegative, -1.0);
      d.opTypeCosts[it.key()] = c;
    }
  }

  void parseSpeedups(const json& o, const std::string& where, Device& d) const {
    const json* v = member(o, "dtype_speedup");
    if (!v) return;
    if (!v->is_object()) failField(where, "dtype_speedup", "must be an object of multipliers per dtype", v);
    for (auto it = v->begin(); it != v->end(); ++it) {
      DType t = dtypeFromName(it.key());
      if (t == DType::Undefined)
        failField(where, "dtype_speedup",
                  "has an unknown dtype '" + it.key() + "' (known: float32, float16, bfloat16, int8, uint8, ...)");
      d.dtypeSpeedup[t] = number(it.value(), "dtype_speedup." + it.key(), where, Sign::Positive);
    }
  }

  DeviceConstraint parseConstraint(const json& o, size_t index, const std::string& deviceWhere) const {
    std::string where = deviceWhere + ": constraint " + std::to_string(index + 1);
    if (!o.is_object()) fail(where, std::string("must be a JSON object, not ") + typeName(o));
    DeviceConstraint c;
    c.kind = requiredString(o, "kind", where);
    bool known = false;
    for (const char* k : kConstraintKinds) known = known || c.kind == k;
    if (!known)
      failField(where, "kind", "must be one of channels_multiple_of, max_kernel, dtypes, max_rank", member(o, "kind"));
    where = deviceWhere + ": constraint '" + c.kind + "'";
    c.opTypes = stringList(o, "ops", where);
    c.description = optionalString(o, "description", where, "");
    if (c.kind == "dtypes") {
      const json* v = member(o, "dtypes");
      if (!v) failField(where, "dtypes", "is missing");
      c.dtypes = stringList(o, "dtypes", where);
      if (c.dtypes.empty()) failField(where, "dtypes", "must list at least one dtype");
      for (const auto& t : c.dtypes)
        if (dtypeFromName(t) == DType::Undefined) failField(where, "dtypes", "has an unknown dtype '" + t + "'");
    } else {
      const json* v = member(o, "value");
      if (!v) failField(where, "value", "is missing");
      c.value = integer(*v, "value", where, 1);
    }
    return c;
  }

  Link parseLink(const json& o, size_t index, const Platform& p) const {
    std::string where = "link " + std::to_string(index + 1);
    if (!o.is_object()) fail(where, std::string("must be a JSON object, not ") + typeName(o));
    Link l;
    l.from = requiredString(o, "from", where);
    l.to = requiredString(o, "to", where);
    where += " ('" + l.from + "' -> '" + l.to + "')";
    for (const std::string* end : {&l.from, &l.to})
      if (p.findDevice(*end) == kNone)
        failField(where, end == &l.from ? "from" : "to",
                  "names no device: '" + *end + "' (devices: " + deviceList(p) + ")");
    if (l.from == l.to) fail(where, "a link must connect two different devices");
    l.sharedMemory = optionalBool(o, "shared_memory", where, false);
    l.bidirectional = optionalBool(o, "bidirectional", where, true);
    if (l.sharedMemory) {
      // The rate is never used for zero-copy links; default to the slower device's memory.
      double def =
          std::min(p.devices[p.findDevice(l.from)].memBandwidthGBs, p.devices[p.findDevice(l.to)].memBandwidthGBs);
      l.bandwidthGBs = optionalNumber(o, "bandwidth_gbs", where, Sign::Positive, def);
    } else {
      l.bandwidthGBs = requiredNumber(o, "bandwidth_gbs", where, Sign::Positive);
    }
    l.latencyUs = optionalNumber(o, "latency_us", where, Sign::NonNegative, 0.0);
    for (size_t j = 0; j < p.links.size(); ++j) {
      const Link& k = p.links[j];
      bool same = k.from == l.from && k.to == l.to;
      bool reverse = k.from == l.to && k.to == l.from && (k.bidirectional || l.bidirectional);
      if (same || reverse)
        fail(where, "connects the same devices as link " + std::to_string(j + 1) +
                        " in the same direction; give each direction one link");
    }
    return l;
  }

  ExclusiveGroup parseGroup(const json& o, size_t index, const Platform& p) const {
    std::string where = "exclusive group " + std::to_string(index + 1);
    if (!o.is_object()) fail(where, std::string("must be a JSON object, not ") + typeName(o));
    ExclusiveGroup g;
    g.name = optionalString(o, "name", where, "");
    if (g.name.empty())
      g.name = "group " + std::to_string(index + 1);
    else
      where = "exclusive group '" + g.name + "'";
    if (!member(o, "devices")) failField(where, "devices", "is missing");
    g.devices = stringList(o, "devices", where);
    if (g.devices.size() < 2) failField(where, "devices", "must name at least two devices");
    std::set<std::string> seen;
    for (const auto& id : g.devices) {
      if (p.findDevice(id) == kNone)
        failField(where, "devices", "names no device: '" + id + "' (devices: " + deviceList(p) + ")");
      if (!seen.insert(id).second) failField(where, "devices", "names '" + id + "' twice");
    }
    return g;
  }

  std::string origin_;
};

json deviceToJson(const Device& d) {
  json o;
  o["id"] = d.id;
  o["name"] = d.name;
  o["kind"] = deviceKindName(d.kind);
  json peaks;
  peaks["default"] = d.defaultPeakGflops;
  for (const auto& [cls, v] : d.peakGflops) peaks[opClassName(cls)] = v;
  o["peak_gflops"] = peaks;
  if (!d.dtypeSpeedup.empty()) {
    json s;
    for (const auto& [t, v] : d.dtypeSpeedup) s[dtypeName(t)] = v;
    o["dtype_speedup"] = s;
  }
  o["bandwidth_gbs"] = d.memBandwidthGBs;
  o["launch_overhead_us"] = d.launchOverheadUs;
  if (!d.bandwidthGBsByClass.empty()) {
    json b;
    for (const auto& [cls, v] : d.bandwidthGBsByClass) b[opClassName(cls)] = v;
    o["bandwidth_gbs_by_class"] = b;
  }
  if (!d.launchOverheadUsByClass.empty()) {
    json l;
    for (const auto& [cls, v] : d.launchOverheadUsByClass) l[opClassName(cls)] = v;
    o["launch_overhead_us_by_class"] = l;
  }
  if (!d.opTypeCosts.empty()) {
    json ts;
    for (const auto& [type, c] : d.opTypeCosts) {
      json j = json::object();
      if (c.peakGflops > 0) j["peak_gflops"] = c.peakGflops;
      if (c.bandwidthGBs > 0) j["bandwidth_gbs"] = c.bandwidthGBs;
      if (c.launchOverheadUs >= 0) j["launch_overhead_us"] = c.launchOverheadUs;
      ts[type] = j;
    }
    o["op_types"] = ts;
  }
  o["memory_bytes"] = d.memCapacityBytes;
  if (d.dequantGElemsPerS > 0) o["dequant_gelems_per_s"] = d.dequantGElemsPerS;
  if (d.workspaceBytes > 0) o["workspace_bytes"] = d.workspaceBytes;
  o["on_chip_bytes"] = d.onChipBytes;
  o["cores"] = d.cores;
  if (d.coreSyncUs > 0) o["core_sync_us"] = d.coreSyncUs;
  if (d.wakeUpUs > 0) o["wake_up_us"] = d.wakeUpUs;
  if (d.modeSwitchUs > 0) o["mode_switch_us"] = d.modeSwitchUs;
  if (d.compilesBlocks) o["compiles_blocks"] = true;
  if (!d.fusion.empty()) o["fusion"] = d.fusion;
  if (!d.copies.empty()) o["copies"] = d.copies;
  if (d.readerConvertGBs > 0) o["reader_convert_gbs"] = d.readerConvertGBs;
  if (d.waveOutputs > 0) o["wave_outputs"] = d.waveOutputs;
  if (!d.reductionStepUsByClass.empty()) {
    json r;
    for (const auto& [cls, v] : d.reductionStepUsByClass) r[opClassName(cls)] = v;
    o["reduction_step_us_by_class"] = r;
  }
  if (!d.supportedOps.empty())
    o["supported_ops"] = std::vector<std::string>(d.supportedOps.begin(), d.supportedOps.end());
  if (!d.unsupportedOps.empty())
    o["unsupported_ops"] = std::vector<std::string>(d.unsupportedOps.begin(), d.unsupportedOps.end());
  if (!d.constraints.empty()) {
    json cs = json::array();
    for (const DeviceConstraint& c : d.constraints) {
      json j;
      j["kind"] = c.kind;
      if (!c.opTypes.empty()) j["ops"] = c.opTypes;
      if (c.kind == "dtypes")
        j["dtypes"] = c.dtypes;
      else
        j["value"] = c.value;
      if (!c.description.empty()) j["description"] = c.description;
      cs.push_back(j);
    }
    o["constraints"] = cs;
  }
  if (!d.color.empty()) o["color"] = d.color;
  return o;
}

}  // namespace

Result<Platform> parsePlatform(const std::string& text, const std::string& origin) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 5: ..." -> drop the bracketed tag.
    std::string what = e.what();
    if (!what.empty() && what[0] == '[') {
      auto close = what.find("] ");
      if (close != std::string::npos) what = what.substr(close + 2);
    }
    for (char& c : what)
      if (c == '\n' || c == '\r') c = ' ';
    return makeError(origin, ": invalid JSON: ", what);
  } catch (const json::exception& e) {
    return makeError(origin, ": invalid JSON: ", e.what());
  }
  try {
    return Parser(origin).parse(root);
  } catch (const ParseFailure& f) {
    return Error{f.message};
  } catch (const json::exception& e) {  // Not expected: every access is type-checked first.
    return makeError(origin, ": ", e.what());
  }
}

Result<Platform> loadPlatformFile(const std::string& path) {
  auto text = readFile(path);
  if (!text) return Error{text.message()};
  return parsePlatform(*text, path);
}

std::string platformToJson(const Platform& p) {
  json root;
  root["format"] = kFormat;
  root["version"] = kVersion;
  root["name"] = p.name;
  root["description"] = p.description;
  root["sources"] = p.sources;
  root["host"] = p.host;
  json devs = json::array();
  for (const Device& d : p.devices) devs.push_back(deviceToJson(d));
  root["devices"] = devs;
  json links = json::array();
  for (const Link& l : p.links) {
    json j;
    j["from"] = l.from;
    j["to"] = l.to;
    j["bandwidth_gbs"] = l.bandwidthGBs;
    j["latency_us"] = l.latencyUs;
    j["shared_memory"] = l.sharedMemory;
    j["bidirectional"] = l.bidirectional;
    links.push_back(j);
  }
  root["links"] = links;
  json groups = json::array();
  for (const ExclusiveGroup& g : p.exclusiveGroups) {
    json j;
    j["name"] = g.name;
    j["devices"] = g.devices;
    groups.push_back(j);
  }
  root["exclusive_groups"] = groups;
  return root.dump(2) + "\n";
}

}  // namespace partex
