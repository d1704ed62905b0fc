#include "plan/exports.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "plan/jsonutil.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex {

namespace {

using ojson = nlohmann::ordered_json;
using plandetail::roundUs;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

const std::string& taskName(const CostTable& t, TaskId v) {
  return t.taskNames[static_cast<size_t>(v)];
}
std::string taskType(const CostTable& t, TaskId v) {
  return static_cast<size_t>(v) < t.taskTypes.size() ? t.taskTypes[static_cast<size_t>(v)] : std::string();
}
std::string deviceName(const CostTable& t, DeviceId d) {
  if (d < 0 || d >= t.numDevices()) return "?";
  return t.deviceIds[static_cast<size_t>(d)];
}

/// "12.3 us", "0.05 us", "1.23 ms".
std::string formatUs(double us) {
  char buf[48];
  if (us >= 1000.0)
    std::snprintf(buf, sizeof buf, "%.3g ms", us / 1000.0);
  else
    std::snprintf(buf, sizeof buf, "%.3g us", us);
  return buf;
}

// ---- trace ----

ojson metaEvent(const char* name, int pid, int tid, ojson args) {
  ojson e;
  e["name"] = name;
  e["ph"] = "M";
  e["pid"] = pid;
  if (tid >= 0) e["tid"] = tid;
  e["args"] = std::move(args);
  return e;
}

void appendProcess(const TraceSource& src, int pid, int64_t& nextFlowId, std::vector<ojson>& out) {
  const CostTable& t = *src.table;
  const Timeline& tl = *src.timeline;
  const int numDev = t.numDevices();
  out.push_back(metaEvent("process_name", pid, -1, ojson{{"name", src.label}}));
  out.push_back(metaEvent("process_sort_index", pid, -1, ojson{{"sort_index", pid}}));

  // Threads: devices, then link resources, then device pairs whose uncontended transfers take time.
  auto addThread = [&](int tid, const std::string& name) {
    out.push_back(metaEvent("thread_name", pid, tid, ojson{{"name", name}}));
    out.push_back(metaEvent("thread_sort_index", pid, tid, ojson{{"sort_index", tid}}));
  };
  for (DeviceId d = 0; d < numDev; ++d) addThread(d + 1, t.deviceIds[static_cast<size_t>(d)]);
  const int linkBase = numDev + 1;
  for (int r = 0; r < t.numLinkResources; ++r) {
    std::string name = static_cast<size_t>(r) < t.linkNames.size() && !t.linkNames[static_cast<size_t>(r)].empty()
                           ? t.linkNames[static_cast<size_t>(r)]
                           : "link " + std::to_string(r);
    addThread(linkBase + r, name);
  }
  std::map<std::pair<DeviceId, DeviceId>, int> pairThread;
  for (const auto& x : tl.transfers)
    if ((x.link < 0 || x.link >= t.numLinkResources) && x.end > x.start)
      pairThread.emplace(std::make_pair(x.from, x.to), 0);
  int nextTid = linkBase + t.numLinkResources;
  for (auto& [pair, tid] : pairThread) {
    tid = nextTid++;
    addThread(tid, deviceName(t, pair.first) + "->" + deviceName(t, pair.second));
  }

  if (tl.tasks.size() != static_cast<size_t>(t.numTasks())) return;  // not simulated: threads only

  // Flow ids per cross-device edge.
  std::vector<int64_t> flowId(t.edges.size(), -1);
  auto devOf = [&](TaskId v) { return tl.tasks[static_cast<size_t>(v)].device; };
  auto validTask = [&](TaskId v) { return v >= 0 && v < t.numTasks(); };
  std::vector<std::vector<int32_t>> inFlows(static_cast<size_t>(t.numTasks())),
      outFlows(static_cast<size_t>(t.numTasks()));
  for (size_t e = 0; e < t.edges.size(); ++e) {
    const Edge& ed = t.edges[e];
    if (!validTask(ed.src) || !validTask(ed.dst) || devOf(ed.src) == devOf(ed.dst)) continue;
    flowId[e] = nextFlowId++;
    outFlows[static_cast<size_t>(ed.src)].push_back(static_cast<int32_t>(e));
    inFlows[static_cast<size_t>(ed.dst)].push_back(static_cast<int32_t>(e));
  }
  auto flowEvent = [&](const char* ph, int32_t e, DeviceId d, double ts) {
    ojson f;
    f["name"] = "dataflow";
    f["cat"] = "Flow";
    f["ph"] = ph;
    f["id"] = flowId[static_cast<size_t>(e)];
    f["ts"] = roundUs(ts);
    f["pid"] = pid;
    f["tid"] = d + 1;
    if (ph[0] == 'f') f["bp"] = "e";
    return f;
  };

  // Operators per device thread, by start time: the slice, the flows arriving at its start
  // (bound to it), then the flows leaving at its end.
  std::vector<TaskId> byStart(static_cast<size_t>(t.numTasks()));
  for (TaskId v = 0; v < t.numTasks(); ++v) byStart[static_cast<size_t>(v)] = v;
  std::stable_sort(byStart.begin(), byStart.end(), [&](TaskId a, TaskId b) {
    const auto& sa = tl.tasks[static_cast<size_t>(a)];
    const auto& sb = tl.tasks[static_cast<size_t>(b)];
    if (sa.device != sb.device) return sa.device < sb.device;
    return sa.start < sb.start;
  });
  // Fused kernels whose operators all sit on the kernel's device in this timeline: one slice each,
  // written where its first operator (by start) would have been.
  std::vector<int> kernelOf(static_cast<size_t>(t.numTasks()), -1);
  std::vector<bool> kernelWritten;
  if (src.fused) {
    const auto& ks = *src.fused;
    kernelWritten.assign(ks.size(), false);
    for (size_t k = 0; k < ks.size(); ++k) {
      bool ok = ks[k].ops.size() >= 2;
      for (TaskId v : ks[k].ops)
        ok = ok && validTask(v) && devOf(v) == ks[k].device && kernelOf[static_cast<size_t>(v)] < 0;
      if (!ok) continue;
      for (TaskId v : ks[k].ops) kernelOf[static_cast<size_t>(v)] = static_cast<int>(k);
    }
  }
  for (TaskId v : byStart) {
    const auto& slot = tl.tasks[static_cast<size_t>(v)];
    const int k = kernelOf[static_cast<size_t>(v)];
    if (k < 0) {
      ojson x;
      x["name"] = taskName(t, v);
      x["cat"] = "Node";
      x["ph"] = "X";
      x["ts"] = roundUs(slot.start);
      x["dur"] = roundUs(slot.end - slot.start);
      x["pid"] = pid;
      x["tid"] = slot.device + 1;
      x["args"] =
          ojson{{"op_name", taskName(t, v)}, {"op_type", taskType(t, v)}, {"provider", deviceName(t, slot.device)}};
      out.push_back(std::move(x));
    } else if (!kernelWritten[static_cast<size_t>(k)]) {
      kernelWritten[static_cast<size_t>(k)] = true;
      const FusedKernel& fk = (*src.fused)[static_cast<size_t>(k)];
      double start = slot.start, end = slot.end;
      std::string types;
      ojson names = ojson::array();
      for (TaskId m : fk.ops) {
        start = std::min(start, tl.tasks[static_cast<size_t>(m)].start);
        end = std::max(end, tl.tasks[static_cast<size_t>(m)].end);
        types += (types.empty() ? "" : "+") + taskType(t, m);
        names.push_back(taskName(t, m));
      }
      ojson x;
      x["name"] = taskName(t, fk.anchor());
      x["cat"] = "Node";
      x["ph"] = "X";
      x["ts"] = roundUs(start);
      x["dur"] = roundUs(end - start);
      x["pid"] = pid;
      x["tid"] = slot.device + 1;
      x["args"] = ojson{{"op_name", taskName(t, fk.anchor())},
                        {"op_type", types},
                        {"provider", deviceName(t, slot.device)},
                        {"fused_ops", std::move(names)}};
      out.push_back(std::move(x));
    }
    for (int32_t e : inFlows[static_cast<size_t>(v)]) out.push_back(flowEvent("f", e, slot.device, slot.start));
    for (int32_t e : outFlows[static_cast<size_t>(v)]) out.push_back(flowEvent("s", e, slot.device, slot.end));
  }

  // Transfers that take time, on their link threads, by start time.
  std::vector<size_t> xs;
  for (size_t i = 0; i < tl.transfers.size(); ++i)
    if (tl.transfers[i].end > tl.transfers[i].start) xs.push_back(i);
  auto tidOf = [&](const TransferSlot& x) {
    if (x.link >= 0 && x.link < t.numLinkResources) return linkBase + x.link;
    return pairThread.at(std::make_pair(x.from, x.to));
  };
  std::stable_sort(xs.begin(), xs.end(), [&](size_t a, size_t b) {
    const int ta = tidOf(tl.transfers[a]), tb = tidOf(tl.transfers[b]);
    if (ta != tb) return ta < tb;
    return tl.transfers[a].start < tl.transfers[b].start;
  });
  for (size_t i : xs) {
    const auto& tr = tl.transfers[i];
    const std::string srcName = validTask(tr.src) ? taskName(t, tr.src) : std::string("(input)");
    const std::string dstName = validTask(tr.dst) ? taskName(t, tr.dst) : std::string("(output)");
    ojson x;
    x["name"] = srcName + " -> " + dstName;
    x["cat"] = "Transfer";
    x["ph"] = "X";
    x["ts"] = roundUs(tr.start);
    x["dur"] = roundUs(tr.end - tr.start);
    x["pid"] = pid;
    x["tid"] = tidOf(tr);
    x["args"] = ojson{{"src", validTask(tr.src) ? ojson(srcName) : ojson(nullptr)},
                      {"dst", validTask(tr.dst) ? ojson(dstName) : ojson(nullptr)},
                      {"from", deviceName(t, tr.from)},
                      {"to", deviceName(t, tr.to)},
                      {"bytes", tr.bytes}};
    out.push_back(std::move(x));
  }
}

// ---- DOT ----

std::string dotEscape(const std::string& s) {
  std::string r;
  r.reserve(s.size() + 2);
  for (char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (c == '\n') {
      r += "\\n";
    } else if (c != '\r') {
      r += c;
    }
  }
  return r;
}

/// Black text on light fills, white on dark ones.
const char* fontColorFor(const std::string& hex) {
  if (hex.size() != 7 || hex[0] != '#') return "#000000";
  auto channel = [&](size_t i) { return std::stoi(hex.substr(i, 2), nullptr, 16); };
  const double lum = (0.299 * channel(1) + 0.587 * channel(3) + 0.114 * channel(5)) / 255.0;
  return lum < 0.4 ? "#FFFFFF" : "#000000";
}

// ---- CSV ----

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string r = "\"";
  for (char c : s) {
    if (c == '"') r += '"';
    r += c;
  }
  r += '"';
  return r;
}

std::string fixed3(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", roundUs(v));
  return buf;
}

const Device* platformDevice(const std::string& id, const Platform* p) {
  if (!p) return nullptr;
  DeviceId d = p->findDevice(id);
  if (d < 0 || static_cast<size_t>(d) >= p->devices.size()) return nullptr;
  return &p->devices[static_cast<size_t>(d)];
}

DeviceId planDevice(const Plan& plan, TaskId v) {
  return static_cast<size_t>(v) < plan.device.size() ? plan.device[static_cast<size_t>(v)] : -1;
}

}  // namespace

// ---- trace ----

std::string traceJson(const std::vector<TraceSource>& sources) {
  std::vector<ojson> events;
  int64_t nextFlowId = 1;
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto& s = sources[i];
    if (!s.table || !s.timeline) continue;
    appendProcess(s, s.pid > 0 ? s.pid : static_cast<int>(i) + 1, nextFlowId, events);
  }
  // One event per line: readable, diffable, and still small for big models.
  std::string out = "{\"traceEvents\": [\n";
  for (size_t i = 0; i < events.size(); ++i) {
    out += events[i].dump();
    out += i + 1 < events.size() ? ",\n" : "\n";
  }
  out += "],\n\"displayTimeUnit\": \"ms\"}\n";
  return out;
}

std::string traceJson(const CostTable& t, const Timeline& tl, const std::string& label, int pid,
                      const std::vector<FusedKernel>* fused) {
  return traceJson(std::vector<TraceSource>{TraceSource{label, &t, &tl, pid, fused}});
}

// ---- DOT ----

const std::vector<std::string>& okabeItoPalette() {
  static const std::vector<std::string> kPalette = {"#E69F00", "#56B4E9", "#009E73", "#F0E442",
                                                    "#0072B2", "#D55E00", "#CC79A7", "#999999"};
  return kPalette;
}

std::string deviceColor(DeviceId d) {
  const auto& p = okabeItoPalette();
  if (d < 0) return "#FFFFFF";
  return p[static_cast<size_t>(d) % p.size()];
}

std::string planToDot(const CostTable& t, const Plan& plan, const Timeline* tl) {
  const char* kCrossColor = "#C0392B";
  std::string out;
  out += "digraph \"" + dotEscape(t.name.empty() ? std::string("plan") : t.name) + "\" {\n";
  out += "  graph [rankdir=TB, fontname=\"Helvetica\"];\n";
  out += "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  out += "  edge [color=\"#666666\", fontname=\"Helvetica\", fontsize=9];\n";

  // Legend: one swatch per device, with its operator count.
  std::vector<int> count(static_cast<size_t>(t.numDevices()), 0);
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    DeviceId d = planDevice(plan, v);
    if (d >= 0 && d < t.numDevices()) ++count[static_cast<size_t>(d)];
  }
  out += "  subgraph cluster_legend {\n";
  out += "    label=\"Devices\"; style=rounded; color=\"#999999\"; fontname=\"Helvetica\";\n";
  for (DeviceId d = 0; d < t.numDevices(); ++d) {
    const std::string c = deviceColor(d);
    out += "    legend_" + std::to_string(d) + " [label=\"" + dotEscape(t.deviceIds[static_cast<size_t>(d)]) + " (" +
           std::to_string(count[static_cast<size_t>(d)]) + ")\", fillcolor=\"" + c + "\", fontcolor=\"" +
           fontColorFor(c) + "\"];\n";
  }
  out += "  }\n";

  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const DeviceId d = planDevice(plan, v);
    const std::string c = deviceColor(d);
    const std::string type = taskType(t, v);
    std::string label = type.empty() ? dotEscape(taskName(t, v)) : dotEscape(type) + "\\n" + dotEscape(taskName(t, v));
    out += "  n" + std::to_string(v) + " [label=\"" + label + "\", fillcolor=\"" + c + "\", fontcolor=\"" +
           fontColorFor(c) + "\", tooltip=\"" + dotEscape(taskName(t, v)) + " on " + dotEscape(deviceName(t, d)) +
           "\"];\n";
  }

  // Transfers by (producer, destination device), to label cross-device edges with their time.
  std::map<std::pair<TaskId, DeviceId>, const TransferSlot*> sent;
  if (tl)
    for (const auto& x : tl->transfers)
      if (x.src >= 0) sent.emplace(std::make_pair(x.src, x.to), &x);
  for (const auto& e : t.edges) {
    if (e.src < 0 || e.dst < 0 || e.src >= t.numTasks() || e.dst >= t.numTasks()) continue;
    out += "  n" + std::to_string(e.src) + " -> n" + std::to_string(e.dst);
    const DeviceId a = planDevice(plan, e.src), b = planDevice(plan, e.dst);
    if (a == b) {
      out += ";\n";
      continue;
    }
    std::vector<std::string> parts;
    if (e.bytes > 0) parts.push_back(humanBytes(static_cast<double>(e.bytes)));
    auto it = sent.find(std::make_pair(e.src, b));
    if (it != sent.end())
      parts.push_back(formatUs(it->second->end - it->second->start));
    else if (e.fixedUs >= 0)
      parts.push_back(formatUs(e.fixedUs));
    out += std::string(" [color=\"") + kCrossColor + "\", fontcolor=\"" + kCrossColor + "\", penwidth=2, style=bold";
    if (!parts.empty()) out += ", label=\"" + dotEscape(join(parts, "\n")) + "\"";
    out += "];\n";
  }
  out += "}\n";
  return out;
}

// ---- CSV ----

std::string timelineToCsv(const CostTable& t, const Timeline& tl) {
  std::string out = "name,op_type,device,start_us,end_us,duration_us,provenance\n";
  if (tl.tasks.size() != static_cast<size_t>(t.numTasks())) return out;
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const auto& s = tl.tasks[static_cast<size_t>(v)];
    std::string prov;
    const size_t idx = static_cast<size_t>(v) * static_cast<size_t>(t.numDevices()) + static_cast<size_t>(s.device);
    if (s.device >= 0 && s.device < t.numDevices() && idx < t.provenance.size())
      prov = provenanceName(t.provenance[idx]);
    out += csvField(taskName(t, v)) + "," + csvField(taskType(t, v)) + "," + csvField(deviceName(t, s.device)) + "," +
           fixed3(s.start) + "," + fixed3(s.end) + "," + fixed3(s.end - s.start) + "," + csvField(prov) + "\n";
  }
  return out;
}

// ---- runtime maps ----

std::string openVinoDeviceName(const std::string& deviceId, const Platform* p) {
  if (const Device* d = platformDevice(deviceId, p)) {
    switch (d->kind) {
      case DeviceKind::Cpu:
        return "CPU";
      case DeviceKind::Gpu:
        return "GPU";
      case DeviceKind::Npu:
        return "NPU";
      default:
        break;
    }
  }
  return upper(deviceId);
}

std::string openVinoAffinityJson(const CostTable& t, const Plan& plan, const Platform* p) {
  ojson m = ojson::object();
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const DeviceId d = planDevice(plan, v);
    if (d < 0 || d >= t.numDevices()) continue;
    m[taskName(t, v)] = openVinoDeviceName(t.deviceIds[static_cast<size_t>(d)], p);
  }
  return m.dump(2) + "\n";
}

std::string onertBackendName(const std::string& deviceId, const Platform* p) {
  if (const Device* d = platformDevice(deviceId, p)) {
    switch (d->kind) {
      case DeviceKind::Cpu:
        return "cpu";
      case DeviceKind::Gpu:
        return "acl_cl";
      case DeviceKind::Npu:
        return "npu";
      default:
        return deviceId;
    }
  }
  const std::string l = lower(deviceId);
  if (l == "cpu") return "cpu";
  if (l == "gpu") return "acl_cl";
  if (l == "npu") return "npu";
  return deviceId;
}

std::string onertBackendMap(const CostTable& t, const Plan& plan, const Platform* p) {
  std::vector<std::string> names(static_cast<size_t>(t.numDevices()));
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    names[static_cast<size_t>(d)] = onertBackendName(t.deviceIds[static_cast<size_t>(d)], p);
  std::string out = "OP_BACKEND_MAP=\"";
  bool first = true;
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const DeviceId d = planDevice(plan, v);
    if (d < 0 || d >= t.numDevices()) continue;
    if (!first) out += ';';
    first = false;
    out += std::to_string(v) + "=" + names[static_cast<size_t>(d)];
  }
  out += '"';
  return out;
}

std::string onertBackends(const CostTable& t, const Plan& plan, const Platform* p) {
  std::vector<std::string> used;
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    const DeviceId d = planDevice(plan, v);
    if (d < 0 || d >= t.numDevices()) continue;
    std::string b = onertBackendName(t.deviceIds[static_cast<size_t>(d)], p);
    if (std::find(used.begin(), used.end(), b) == used.end()) used.push_back(std::move(b));
  }
  return join(used, ";");
}

// ---- saving ----

Status saveExport(const std::string& path, const std::string& text) {
  if (!text.empty() && text.back() == '\n') return writeFileAtomic(path, text);
  return writeFileAtomic(path, text + "\n");
}

}  // namespace partex
