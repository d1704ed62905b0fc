#include "problem/workloadgraph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "problem/problem.h"
#include "support/sha256.h"

namespace partex {

namespace {
/// A rate as a user writes it: "30", "12.5".
std::string rateText(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", r);
  return buf;
}
}  // namespace

Result<std::vector<int>> workloadRoundCopies(const Workload& w, const std::string& origin) {
  const size_t n = w.models.size();
  std::vector<int> copies(n, 0);
  double slowest = std::numeric_limits<double>::infinity();
  for (const auto& m : w.models)
    if (m.ratePerS > 0) slowest = std::min(slowest, m.ratePerS);
  for (size_t i = 0; i < n; ++i) {
    const WorkloadModel& m = w.models[i];
    if (m.ratePerS <= 0) continue;
    const double per = m.ratePerS * m.batch / slowest;
    const double whole = std::round(per);
    if (whole < 1 || std::abs(per - whole) > 1e-6 * whole)
      return makeError(origin, ": model \"", m.name, "\": ", std::to_string(m.batch), " x ", rateText(m.ratePerS),
                       "/s is not a whole multiple of the slowest rate (", rateText(slowest),
                       "/s): a round of the workload holds whole inferences");
    copies[i] = static_cast<int>(whole);
  }
  std::map<std::string, size_t> byName;
  for (size_t i = 0; i < n; ++i) byName[w.models[i].name] = i;
  // Triggered models after their triggers (parseWorkload refuses cycles), at most n passes.
  for (size_t pass = 0; pass < n; ++pass)
    for (size_t i = 0; i < n; ++i) {
      const WorkloadModel& m = w.models[i];
      if (m.ratePerS > 0 || copies[i] > 0) continue;
      auto it = byName.find(m.trigger);
      if (it == byName.end() || copies[it->second] == 0) continue;
      copies[i] = copies[it->second] * m.perInference;
      if (copies[i] > kMaxWorkloadRoundCopies) break;
    }
  long total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (copies[i] <= 0) return makeError(origin, ": model \"", w.models[i].name, "\": no copy in a round (its trigger has none)");
    total += copies[i];
    if (total > kMaxWorkloadRoundCopies)
      return makeError(origin, ": one round of the workload holds more than ", std::to_string(kMaxWorkloadRoundCopies),
                       " model inferences (the rates' ratios and triggers multiply)");
  }
  return copies;
}

Result<Graph> mergeGraphs(const std::vector<std::pair<std::string, const Graph*>>& parts, const std::string& name) {
  Graph out;
  out.name = name;
  std::string identity;
  for (const auto& [prefix, gp] : parts) {
    const Graph& g = *gp;
    for (const Node& n : g.nodes)
      if (!n.subgraphs.empty())
        return makeError(prefix, ": operator '", n.name, "' (", n.opType,
                         ") has a subgraph, whose body names values of the enclosing graph: a workload graph merges "
                         "models without control flow");
    if (out.irVersion == 0) out.irVersion = g.irVersion;
    out.opsetVersion = std::max(out.opsetVersion, g.opsetVersion);
    identity += prefix + "\n" + g.graphSha256 + "\n";
    const ValueId base = static_cast<ValueId>(out.values.size());
    auto map = [base](ValueId v) { return v == kNone ? kNone : static_cast<ValueId>(v + base); };
    for (Value v : g.values) {
      v.name = prefix + "/" + v.name;
      v.producer = kNone;
      v.consumers.clear();
      out.values.push_back(std::move(v));
    }
    for (Node n : g.nodes) {
      n.name = prefix + "/" + n.name;
      for (ValueId& v : n.inputs) v = map(v);
      for (ValueId& v : n.outputs) v = map(v);
      n.attrs[kWorkloadPartAttr].value = prefix;
      out.nodes.push_back(std::move(n));
    }
    for (ValueId v : g.inputs) out.inputs.push_back(map(v));
    for (ValueId v : g.outputs) out.outputs.push_back(map(v));
    for (const auto& s : g.warnings) out.warnings.push_back(prefix + ": " + s);
    for (const auto& s : g.notes) out.notes.push_back(prefix + ": " + s);
  }
  out.graphSha256 = sha256Hex(identity);
  out.rebuildIndex();
  if (auto st = out.verify(); !st) return makeError(name, ": ", st.message());
  return out;
}

Result<Graph> loadWorkloadGraph(const std::string& workloadFile, const std::vector<std::string>& dims) {
  auto w = loadWorkloadFile(workloadFile);
  if (!w) return Error{w.message()};
  auto copies = workloadRoundCopies(*w, workloadFile);
  if (!copies) return Error{copies.message()};
  std::vector<Graph> graphs;
  graphs.reserve(w->models.size());
  for (const auto& m : w->models) {
    const std::string path = workloadModelPath(m.model, workloadFile);
    if (isWorkloadFile(path))
      return makeError(workloadFile, ": model \"", m.name, "\": a workload is not a model (workloads do not nest)");
    auto tg = isTaskGraphFile(path);
    if (!tg) return makeError(workloadFile, ": model \"", m.name, "\": ", tg.message());
    if (*tg)
      return makeError(workloadFile, ": model \"", m.name,
                       "\": a task graph has no operators to run; a workload graph needs models (ONNX files or gen: references)");
    auto g = loadModel(path, dims);
    if (!g) return makeError(workloadFile, ": model \"", m.name, "\": ", g.message());
    graphs.push_back(std::move(g).value());
  }
  std::vector<std::pair<std::string, const Graph*>> parts;
  for (size_t i = 0; i < graphs.size(); ++i)
    for (int c = 0; c < (*copies)[i]; ++c) parts.emplace_back(w->models[i].name + "#" + std::to_string(c), &graphs[i]);
  auto g = mergeGraphs(parts, w->name.empty() ? "workload" : w->name);
  if (!g) return makeError(workloadFile, ": ", g.message());
  g->sourcePath = workloadFile;
  return g;
}

std::vector<WorkloadPart> workloadParts(const Graph& g) {
  std::vector<WorkloadPart> out;
  std::map<std::string, size_t> index;
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const std::string part = g.nodes[v].attrString(kWorkloadPartAttr, "");
    if (part.empty()) continue;
    auto [it, fresh] = index.emplace(part, out.size());
    if (fresh) out.push_back({part, {}});
    out[it->second].ops.push_back(static_cast<OpId>(v));
  }
  return out;
}

std::string workloadPartModel(const std::string& partName) {
  const auto hash = partName.rfind('#');
  return hash == std::string::npos ? partName : partName.substr(0, hash);
}

std::vector<double> partSpans(const std::vector<OpId>& ops, const std::vector<double>& start,
                              const std::vector<double>& end, int operators, int first, int inferences) {
  std::vector<double> spans;
  for (int i = std::max(0, first); i < inferences; ++i) {
    double s = std::numeric_limits<double>::infinity(), e = -std::numeric_limits<double>::infinity();
    for (OpId v : ops) {
      const size_t k = static_cast<size_t>(i) * static_cast<size_t>(operators) + static_cast<size_t>(v);
      if (k >= start.size() || k >= end.size()) continue;
      s = std::min(s, start[k]);
      e = std::max(e, end[k]);
    }
    if (e >= s) spans.push_back(e - s);
  }
  return spans;
}

}  // namespace partex
