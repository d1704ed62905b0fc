#include "sched/workload.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sched/algorithms.h"
#include "sched/scheduler.h"
#include "support/files.h"

namespace partex {

// ---------------------------------------------------------------------------------------------------
// The file

namespace {

using json = nlohmann::json;

std::string shortDump(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

Result<double> positiveNumber(const json& obj, const char* key, const std::string& where, double most) {
  const json& v = obj.at(key);
  if (!v.is_number()) return makeError(where, key, ": must be a number (got ", shortDump(v), ")");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x <= 0) return makeError(where, key, ": must be positive (got ", shortDump(v), ")");
  if (x > most) return makeError(where, key, ": at most ", std::to_string(static_cast<long long>(most)), " (got ", shortDump(v), ")");
  return x;
}

}  // namespace

Result<Workload> parseWorkload(const std::string& text, const std::string& origin) {
  const std::string at = origin + ": ";
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse errors, and numbers out of range ("1e400")
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    return makeError(at, "not JSON: ", what);
  }
  if (!j.is_object()) return makeError(at, "a workload is a JSON object with \"models\"");
  static const std::set<std::string> topKeys = {"format", "version", "name", "horizon_ms", "models"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!topKeys.count(it.key())) return makeError(at, "unknown field \"", it.key(), "\" (fields: format, version, name, horizon_ms, models)");
  if (j.contains("format") && (!j["format"].is_string() || j["format"].get<std::string>() != "partex-workload"))
    return makeError(at, "format: must be \"partex-workload\" (got ", shortDump(j["format"]), ")");
  if (j.contains("version") && (!j["version"].is_number_integer() || j["version"].get<int64_t>() != 1))
    return makeError(at, "version: only 1 is known (got ", shortDump(j["version"]), ")");
  Workload w;
  if (j.contains("name")) {
    if (!j["name"].is_string()) return makeError(at, "name: must be a string (got ", shortDump(j["name"]), ")");
    w.name = j["name"].get<std::string>();
  }
  if (j.contains("horizon_ms")) {
    auto h = positiveNumber(j, "horizon_ms", at, 600000);
    if (!h) return Error{h.message()};
    w.horizonMs = *h;
  }
  if (!j.contains("models")) return makeError(at, "no \"models\"");
  const json& ms = j["models"];
  if (!ms.is_array() || ms.empty()) return makeError(at, "models: must be a non-empty array (got ", shortDump(ms), ")");
  if (ms.size() > 64) return makeError(at, "models: at most 64 (got ", std::to_string(ms.size()), ")");
  std::map<std::string, int> byName;
  static const std::set<std::string> modelKeys = {"name", "model", "rate", "batch", "trigger", "deadline_ms"};
  for (size_t i = 0; i < ms.size(); ++i) {
    const std::string where = at + "models[" + std::to_string(i) + "].";
    const json& m = ms[i];
    if (!m.is_object()) return makeError(at, "models[", std::to_string(i), "]: must be an object (got ", shortDump(m), ")");
    for (auto it = m.begin(); it != m.end(); ++it)
      if (!modelKeys.count(it.key()))
        return makeError(where, it.key(), ": unknown field (fields: name, model, rate, batch, trigger, deadline_ms)");
    WorkloadModel wm;
    if (!m.contains("model") || !m["model"].is_string() || m["model"].get<std::string>().empty())
      return makeError(where, "model: must be a file or a \"gen:\" reference (got ",
                       m.contains("model") ? shortDump(m["model"]) : std::string("nothing"), ")");
    wm.model = m["model"].get<std::string>();
    if (m.contains("name")) {
      if (!m["name"].is_string() || m["name"].get<std::string>().empty())
        return makeError(where, "name: must be a non-empty string (got ", shortDump(m["name"]), ")");
      wm.name = m["name"].get<std::string>();
    } else {
      wm.name = wm.model;
    }
    if (byName.count(wm.name)) return makeError(where, "name: \"", wm.name, "\" is used twice");
    byName[wm.name] = static_cast<int>(i);
    if (!m.contains("deadline_ms")) return makeError(where, "deadline_ms: missing");
    auto dl = positiveNumber(m, "deadline_ms", where, 600000);
    if (!dl) return Error{dl.message()};
    wm.deadlineMs = *dl;
    const bool hasRate = m.contains("rate"), hasTrigger = m.contains("trigger");
    if (hasRate == hasTrigger) return makeError(where, "needs exactly one of \"rate\" and \"trigger\"");
    if (hasRate) {
      auto r = positiveNumber(m, "rate", where, 100000);
      if (!r) return Error{r.message()};
      wm.ratePerS = *r;
      if (m.contains("batch")) {
        if (!m["batch"].is_number_integer() || m["batch"].get<int64_t>() < 1 || m["batch"].get<int64_t>() > 1000)
          return makeError(where, "batch: must be an integer 1 to 1000 (got ", shortDump(m["batch"]), ")");
        wm.batch = static_cast<int>(m["batch"].get<int64_t>());
      }
    } else {
      if (m.contains("batch")) return makeError(where, "batch: only for a model with a rate (a trigger's per_inference says how many)");
      const json& tr = m["trigger"];
      if (!tr.is_object()) return makeError(where, "trigger: must be {\"model\": NAME, \"per_inference\": N} (got ", shortDump(tr), ")");
      for (auto it = tr.begin(); it != tr.end(); ++it)
        if (it.key() != "model" && it.key() != "per_inference")
          return makeError(where, "trigger.", it.key(), ": unknown field (fields: model, per_inference)");
      if (!tr.contains("model") || !tr["model"].is_string())
        return makeError(where, "trigger.model: must be a model's name (got ", tr.contains("model") ? shortDump(tr["model"]) : std::string("nothing"), ")");
      wm.trigger = tr["model"].get<std::string>();
      if (!tr.contains("per_inference") || !tr["per_inference"].is_number_integer())
        return makeError(where, "trigger.per_inference: must be an integer (got ",
                         tr.contains("per_inference") ? shortDump(tr["per_inference"]) : std::string("nothing"), ")");
      const int64_t n = tr["per_inference"].get<int64_t>();
      if (n < 1 || n > 1000) return makeError(where, "trigger.per_inference: must be 1 to 1000 (got ", std::to_string(n), ")");
      wm.perInference = static_cast<int>(n);
    }
    w.models.push_back(std::move(wm));
  }
  // Triggers: known models, no cycles; count the requests.
  const int n = static_cast<int>(w.models.size());
  std::vector<int> parent(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    const WorkloadModel& m = w.models[static_cast<size_t>(i)];
    if (m.ratePerS > 0) continue;
    auto it = byName.find(m.trigger);
    if (it == byName.end()) return makeError(at, "models[", std::to_string(i), "].trigger.model: no model named \"", m.trigger, "\"");
    parent[static_cast<size_t>(i)] = it->second;
  }
  std::vector<double> count(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    // Follow the trigger chain; a chain longer than n is a cycle.
    std::vector<int> chain;
    int k = i;
    while (k >= 0 && count[static_cast<size_t>(k)] < 0) {
      if (static_cast<int>(chain.size()) > n)
        return makeError(at, "models[", std::to_string(i), "].trigger: a cycle of triggers (\"", w.models[static_cast<size_t>(i)].name, "\" triggers itself through others)");
      chain.push_back(k);
      k = parent[static_cast<size_t>(k)];
    }
    for (auto c = chain.rbegin(); c != chain.rend(); ++c) {
      const WorkloadModel& m = w.models[static_cast<size_t>(*c)];
      const int p = parent[static_cast<size_t>(*c)];
      count[static_cast<size_t>(*c)] = m.ratePerS > 0 ? std::ceil(m.ratePerS * w.horizonMs / 1000.0 - 1e-9) * m.batch
                                                      : count[static_cast<size_t>(p)] * m.perInference;
    }
  }
  double total = 0;
  for (double c : count) total += c;
  if (total > kMaxWorkloadRequests)
    return makeError(at, "the horizon holds ", std::to_string(static_cast<long long>(total)), " requests, more than ",
                     std::to_string(kMaxWorkloadRequests), " (lower the rates, triggers or horizon_ms)");
  return w;
}

double workloadRequestCount(const Workload& w) {
  std::map<std::string, int> byName;
  for (size_t i = 0; i < w.models.size(); ++i) byName[w.models[i].name] = static_cast<int>(i);
  std::function<double(int, int)> count = [&](int i, int depth) -> double {
    const WorkloadModel& m = w.models[static_cast<size_t>(i)];
    if (m.ratePerS > 0) return std::ceil(m.ratePerS * w.horizonMs / 1000.0 - 1e-9) * m.batch;
    auto it = byName.find(m.trigger);
    if (it == byName.end() || depth > static_cast<int>(w.models.size())) return 0;
    return count(it->second, depth + 1) * m.perInference;
  };
  double total = 0;
  for (size_t i = 0; i < w.models.size(); ++i) total += count(static_cast<int>(i), 0);
  return total;
}

Result<Workload> loadWorkloadFile(const std::string& path) {
  auto text = readFile(path);
  if (!text) return Error{text.message()};
  return parseWorkload(*text, path);
}

std::vector<WorkloadRequest> expandRequests(const Workload& w) {
  std::vector<WorkloadRequest> out;
  const int n = static_cast<int>(w.models.size());
  std::vector<std::vector<int>> ofModel(static_cast<size_t>(n));
  std::vector<char> done(static_cast<size_t>(n), 0);
  std::map<std::string, int> byName;
  for (int i = 0; i < n; ++i) byName[w.models[static_cast<size_t>(i)].name] = i;
  // Rate-driven models first, then triggered ones once their trigger is expanded (a DAG: parseWorkload).
  for (int i = 0; i < n; ++i) {
    const WorkloadModel& m = w.models[static_cast<size_t>(i)];
    if (m.ratePerS <= 0) continue;
    const double gapUs = 1e6 / m.ratePerS;
    int index = 0;
    for (int k = 0; k * gapUs < w.horizonMs * 1000.0 - 1e-6; ++k)
      for (int b = 0; b < m.batch; ++b) {
        WorkloadRequest r;
        r.model = i;
        r.index = index++;
        r.releaseUs = k * gapUs;
        r.deadlineUs = m.deadlineMs * 1000.0;
        ofModel[static_cast<size_t>(i)].push_back(static_cast<int>(out.size()));
        out.push_back(r);
      }
    done[static_cast<size_t>(i)] = 1;
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (int i = 0; i < n; ++i) {
      const WorkloadModel& m = w.models[static_cast<size_t>(i)];
      if (done[static_cast<size_t>(i)]) continue;
      auto it = byName.find(m.trigger);
      if (it == byName.end() || !done[static_cast<size_t>(it->second)]) continue;
      int k = 0;
      for (int p : ofModel[static_cast<size_t>(it->second)])
        for (int c = 0; c < m.perInference; ++c) {
          WorkloadRequest r;
          r.model = i;
          r.index = k++;
          r.parent = p;
          r.deadlineUs = m.deadlineMs * 1000.0;
          ofModel[static_cast<size_t>(i)].push_back(static_cast<int>(out.size()));
          out.push_back(r);
        }
      done[static_cast<size_t>(i)] = 1;
      progress = true;
    }
  }
  return out;
}

bool looksLikeWorkload(const std::string& text) {
  json j;
  try {
    j = json::parse(text, nullptr, false);
  } catch (const json::exception&) {  // never expected without exceptions; a workload reader must not throw
    return false;
  }
  if (j.is_discarded() || !j.is_object()) return false;
  if (j.contains("format")) return j["format"].is_string() && j["format"].get<std::string>() == "partex-workload";
  return j.contains("models") && !j.contains("tasks") && !j.contains("task_graph") && !j.contains("workflow");
}

bool isWorkloadFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > (16u << 20)) return false;
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
  }
  if (!in || c != '{') return false;
  auto bytes = readFile(path);
  return bytes && looksLikeWorkload(*bytes);
}

std::vector<std::string> workloadAlgorithms() { return {"band", "partex"}; }

// ---------------------------------------------------------------------------------------------------
// Dispatch

namespace {


/// A request in the scheduler's queue.
struct Job {
  int req = 0;
  int done = 0;            ///< Unit subgraphs already run.
  bool coarse = false;     ///< partex: runs on Band's units (begun while overloaded).
  double releaseUs = 0;    ///< Its request's release (the deadline counts from it).
  double deadlineAbs = 0;
};

/// What a model looks like to the schedulers.
struct ModelView {
  const CostTable* t = nullptr;
  std::vector<TaskId> topo;
  // band: unit subgraphs (ranges of `topo` whose operators the same devices support), and the
  // expected time of units [i, j] on d (kInf where d does not support them all).
  std::vector<std::pair<int, int>> units;
  std::vector<double> unitCost;  ///< [unit * m + d]
};

struct Dispatched {
  double estStart = 0;  ///< The scheduler's expected start.
  int seq = 0;          ///< Dispatch order (ties).
  int req = 0;
  std::vector<TaskId> ops;
};

struct Dispatch {
  /// Per device: what it runs, in order of expected start.
  std::vector<std::vector<Dispatched>> log;
  std::vector<int> opsRun;       ///< Per request: operators dispatched.
  std::vector<char> dropped;     ///< Per request.
  std::vector<int> routeTaken;   ///< partex: per request, its route (-1 none); band: steps run.
};

double unitsCost(const ModelView& v, int m, int i, int j, DeviceId d) {
  double s = 0;
  for (int u = i; u <= j; ++u) s += v.unitCost[static_cast<size_t>(u) * static_cast<size_t>(m) + static_cast<size_t>(d)];
  return s;
}

/// Band's GetShortestLatencyWithUnitSubgraph (band/engine.cc): a programme over contiguous ranges of
/// unit subgraphs from `start`; memo[j] is the least expected end of units [start, j], each range on
/// the worker whose max(waiting, start of the range) + expected time is least. Returns the first
/// range's (device, last unit) and the expected latency.
struct BandChoice {
  DeviceId dev = -1;
  int last = -1;
  double latencyUs = kInf;
};
BandChoice bandShortest(const ModelView& v, int m, int start, const std::vector<double>& waiting) {
  const int nu = static_cast<int>(v.units.size());
  std::vector<double> memo(static_cast<size_t>(nu), kInf);
  std::vector<BandChoice> first(static_cast<size_t>(nu));
  for (int j = start; j < nu; ++j) {
    for (int i = j; i >= start; --i) {
      const double begin = i > start ? memo[static_cast<size_t>(i - 1)] : 0.0;
      if (begin >= kInf) continue;
      for (DeviceId d = 0; d < m; ++d) {
        const double c = unitsCost(v, m, i, j, d);
        if (c >= kInf) continue;
        const double end = std::max(waiting[static_cast<size_t>(d)], begin) + c;
        if (end < memo[static_cast<size_t>(j)]) {
          memo[static_cast<size_t>(j)] = end;
          first[static_cast<size_t>(j)] = i > start ? first[static_cast<size_t>(i - 1)] : BandChoice{d, j, 0};
        }
      }
    }
  }
  BandChoice c = first[static_cast<size_t>(nu - 1)];
  c.latencyUs = memo[static_cast<size_t>(nu - 1)];
  return c;
}

/// A device's booked intervals, by start (they never overlap).
using Booked = std::vector<std::pair<double, double>>;

void book(Booked& iv, double s, double e) {
  auto it = std::lower_bound(iv.begin(), iv.end(), std::make_pair(s, e));
  iv.insert(it, {s, e});
}

/// The event loop both schedulers share: requests enter the queue at their release (a triggered one
/// at its parent's expected end), and at every release and every expected end of a device's work the
/// policy dispatches from the queue. Times are the schedulers' own estimates; the simulator judges the
/// resulting plan afterwards.
/// `coarse` (partex only, else empty): each model's Band units, which a job begun while more jobs
/// wait than there are devices runs on instead of `views`' finer ones.
Dispatch dispatchWorkload(const std::vector<WorkloadRequest>& reqs, const std::vector<ModelView>& views, int m, bool startedFirst,
                          const std::vector<ModelView>& coarse = {}) {
  Dispatch out;
  const size_t nr = reqs.size();
  out.log.assign(static_cast<size_t>(m), {});
  out.opsRun.assign(nr, 0);
  out.dropped.assign(nr, 0);
  out.routeTaken.assign(nr, 0);
  std::vector<std::vector<int>> children(nr);
  std::multimap<double, Job> pending;  // by time of entry to the queue
  for (size_t r = 0; r < nr; ++r) {
    if (reqs[r].parent >= 0) {
      children[static_cast<size_t>(reqs[r].parent)].push_back(static_cast<int>(r));
      continue;
    }
    Job j;
    j.req = static_cast<int>(r);
    j.releaseUs = reqs[r].releaseUs;
    j.deadlineAbs = j.releaseUs + reqs[r].deadlineUs;
    pending.emplace(j.releaseUs, j);
  }
  std::vector<double> freeAt(static_cast<size_t>(m), 0.0);  // the end of each device's last booking
  std::vector<Booked> booked(static_cast<size_t>(m));
  int seq = 0;
  std::vector<Job> queue;
  int inFlight = 0;                // jobs begun and not finished or dropped
  std::multiset<double> finishing;  // expected ends of jobs whose last units are dispatched
  std::function<void(int)> dropTree = [&](int r) {
    out.dropped[static_cast<size_t>(r)] = 1;
    for (int c : children[static_cast<size_t>(r)]) dropTree(c);
  };
  auto finished = [&](int r, double endUs) {
    for (int c : children[static_cast<size_t>(r)]) {
      Job j;
      j.req = c;
      j.releaseUs = endUs;
      j.deadlineAbs = endUs + reqs[static_cast<size_t>(c)].deadlineUs;
      pending.emplace(endUs, j);
    }
  };
  double now = 0;
  while (!pending.empty() || !queue.empty()) {
    // Next event: a queue entry, or a device becoming free while requests wait.
    double next = pending.empty() ? kInf : pending.begin()->first;
    if (!queue.empty())
      for (const Booked& iv : booked)
        for (const auto& [s, e] : iv)
          if (e > now + 1e-9) {
            next = std::min(next, e);
            break;
          }
    if (next >= kInf) next = now;  // everything idle: the policy dispatches or drops
    now = std::max(now, next);
    while (!finishing.empty() && *finishing.begin() <= now + 1e-9) {
      finishing.erase(finishing.begin());
      --inFlight;
    }
    while (!pending.empty() && pending.begin()->first <= now + 1e-9) {
      queue.push_back(pending.begin()->second);
      pending.erase(pending.begin());
    }
    for (Booked& iv : booked) {  // what ended is never needed again
      size_t k = 0;
      while (k < iv.size() && iv[k].second <= now + 1e-9) ++k;
      iv.erase(iv.begin(), iv.begin() + static_cast<std::ptrdiff_t>(k));
    }
    std::vector<double> waiting(static_cast<size_t>(m));
    for (DeviceId d = 0; d < m; ++d) waiting[static_cast<size_t>(d)] = std::max(0.0, freeAt[static_cast<size_t>(d)] - now);
    std::vector<char> idle(static_cast<size_t>(m));
    for (DeviceId d = 0; d < m; ++d) idle[static_cast<size_t>(d)] = waiting[static_cast<size_t>(d)] <= 1e-9;
    // Least slack first: slack = deadline - now - expected latency (band/scheduler/least_slack_first_scheduler.cc).
    auto expected = [&](const Job& j) {
      const size_t mi = static_cast<size_t>(reqs[static_cast<size_t>(j.req)].model);
      const ModelView& v = j.coarse ? coarse[mi] : views[mi];
      return bandShortest(v, m, j.done, waiting).latencyUs;
    };
    // partex (startedFirst): a job whose first units ran goes before the ones not started, so that
    // work once begun is not wasted by dropping its rest.
    std::vector<std::pair<double, size_t>> order;
    for (size_t q = 0; q < queue.size(); ++q) order.emplace_back(queue[q].deadlineAbs - now - expected(queue[q]), q);
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      if (startedFirst && (queue[a.second].done > 0) != (queue[b.second].done > 0)) return queue[a.second].done > 0;
      return a.first < b.first;
    });
    std::vector<char> taken(queue.size(), 0);
    bool progress = false;
    for (const auto& [slack, q] : order) {
      (void)slack;
      Job& j = queue[q];
      const WorkloadRequest& r = reqs[static_cast<size_t>(j.req)];
      // partex, overloaded (more jobs waiting than devices): a job not begun takes Band's units for
      // its whole run: split jobs pack the devices worse than whole ranges (docs/benchmarks.md).
      if (!coarse.empty() && j.done == 0) j.coarse = static_cast<int>(queue.size()) > m;
      const ModelView& v = j.coarse ? coarse[static_cast<size_t>(r.model)] : views[static_cast<size_t>(r.model)];
      {
        const BandChoice c = bandShortest(v, m, j.done, waiting);
        // A job whose best plan already misses its deadline is dropped (the SLO check of the
        // scheduler and of Planner::IsSLOViolated).
        if (c.dev < 0 || now + c.latencyUs > j.deadlineAbs + 1e-9) {
          if (j.done > 0) --inFlight;
          dropTree(j.req);
          taken[q] = progress = true;
          continue;
        }
        // partex (startedFirst): a job on the finer units begins only while fewer than one per device
        // run. The programme's estimate sees the devices' booked work but not the rest of jobs already
        // begun, so without a bound every idle moment starts another job and, overloaded, all miss.
        if (startedFirst && !j.coarse && j.done == 0 && inFlight >= m) continue;
        // Dispatched only to a worker idle when this round began (GetIdleWorkers); the worker's
        // waiting time then grows by the range's expected time.
        if (!idle[static_cast<size_t>(c.dev)]) continue;
        const double est = unitsCost(v, m, j.done, c.last, c.dev);
        std::vector<TaskId> ops;
        for (int u = j.done; u <= c.last; ++u)
          for (int k = v.units[static_cast<size_t>(u)].first; k <= v.units[static_cast<size_t>(u)].second; ++k)
            ops.push_back(v.topo[static_cast<size_t>(k)]);
        const double start = std::max(now, freeAt[static_cast<size_t>(c.dev)]);
        freeAt[static_cast<size_t>(c.dev)] = start + est;
        book(booked[static_cast<size_t>(c.dev)], start, start + est);
        waiting[static_cast<size_t>(c.dev)] += est;
        out.opsRun[static_cast<size_t>(j.req)] += static_cast<int>(ops.size());
        out.routeTaken[static_cast<size_t>(j.req)] += 1;
        out.log[static_cast<size_t>(c.dev)].push_back(Dispatched{start, seq++, j.req, std::move(ops)});
        taken[q] = progress = true;
        if (j.done == 0) ++inFlight;
        if (c.last + 1 < static_cast<int>(v.units.size())) {
          Job rest = j;  // the remaining units re-enter the queue when this range ends (Planner::UpdateJobScheduleStatus)
          rest.done = c.last + 1;
          pending.emplace(start + est, rest);
        } else {
          finished(j.req, start + est);
          finishing.insert(start + est);  // leaves the in-flight count at its expected end
        }
      }
    }
    std::vector<Job> rest;
    for (size_t q = 0; q < queue.size(); ++q)
      if (!taken[q]) rest.push_back(queue[q]);
    queue.swap(rest);
    if (!progress && pending.empty()) {
      bool anyBusy = false;
      for (const Booked& iv : booked) anyBusy = anyBusy || !iv.empty();
      if (!anyBusy) {  // cannot happen (an idle platform takes every job); never loop forever
        for (const Job& j : queue) dropTree(j.req);
        queue.clear();
      }
    }
  }
  // Each device runs its pieces in the order of their expected starts (a step booked into an earlier
  // gap runs before the ones booked after it).
  for (auto& dl : out.log)
    std::stable_sort(dl.begin(), dl.end(), [](const Dispatched& a, const Dispatched& b) {
      return a.estStart < b.estStart - 1e-9 || (a.estStart <= b.estStart + 1e-9 && a.seq < b.seq);
    });
  return out;
}

Result<ModelView> viewOf(const CostTable& t, bool band, const WorkloadOptions& o, const std::string& name) {
  ModelView v;
  v.t = &t;
  v.topo = t.topoOrder();
  const int m = t.numDevices();
  const int n = static_cast<int>(v.topo.size());
  for (TaskId x = 0; x < t.numTasks(); ++x) {
    bool any = false;
    for (DeviceId d = 0; d < m; ++d) any = any || t.canRun(x, d);
    if (!any) return makeError("model \"", name, "\": no device runs operator ", t.taskNames[static_cast<size_t>(x)]);
  }
  if (n == 0) return makeError("model \"", name, "\": no operators");
  // Unit subgraphs (band/model_analyzer.cc ModelAnalyzer::GetUnitSubgraphs): operators that the same
  // devices support, grown in topological order; a unit ends where the support set changes.
  std::vector<char> cutBefore(static_cast<size_t>(n) + 1, 0);
  cutBefore[0] = cutBefore[static_cast<size_t>(n)] = 1;
  auto mask = [&](TaskId x) {
    std::vector<char> s(static_cast<size_t>(m));
    for (DeviceId d = 0; d < m; ++d) s[static_cast<size_t>(d)] = t.canRun(x, d);
    return s;
  };
  for (int k = 1; k < n; ++k)
    if (mask(v.topo[static_cast<size_t>(k)]) != mask(v.topo[static_cast<size_t>(k - 1)])) cutBefore[static_cast<size_t>(k)] = 1;
  if (!band) {
    // partex: a unit also ends wherever one of Partex's plans changes device along the same order:
    // best under the latency and the throughput objective, and the pipeline programme's stages. The
    // programme over ranges of units can then run any of those plans, or any mix of their pieces.
    auto best = makeBest();
    auto pipe = makePipeline();
    for (int k = 0; k < 3; ++k) {
      SchedOptions so;
      so.sim = o.sim;
      so.objective = k == 0 ? Objective::Latency : Objective::Throughput;
      so.timeLimitSec = o.searchSec;
      // One replica: its device changes are the cuts (a replicated plan may run whole models, sim/plan.h).
      if (k == 1) so.params["replicas"] = "off";
      auto p = (k < 2 ? best : pipe)->schedule(t, Constraints{}, so);
      if (!p) continue;
      for (int q = 1; q < n; ++q)
        if (p->device[static_cast<size_t>(v.topo[static_cast<size_t>(q)])] != p->device[static_cast<size_t>(v.topo[static_cast<size_t>(q - 1)])])
          cutBefore[static_cast<size_t>(q)] = 1;
    }
  }
  int begin = 0;
  for (int k = 1; k <= n; ++k)
    if (cutBefore[static_cast<size_t>(k)]) {
      v.units.emplace_back(begin, k - 1);
      begin = k;
    }
  v.unitCost.assign(v.units.size() * static_cast<size_t>(m), 0.0);
  for (size_t u = 0; u < v.units.size(); ++u)
    for (DeviceId d = 0; d < m; ++d) {
      double s = 0;
      for (int k = v.units[u].first; k <= v.units[u].second; ++k) s += t.w(v.topo[static_cast<size_t>(k)], d);
      v.unitCost[u * static_cast<size_t>(m) + static_cast<size_t>(d)] = s;
    }
  return v;
}

template <typename T>
void appendOrPad(std::vector<T>& dst, const std::vector<T>& src, size_t index, bool keep, const T& pad) {
  if (!keep) return;
  dst.push_back(src.empty() ? pad : src[index]);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  k = std::clamp<size_t>(k, 1, v.size());
  return v[k - 1];
}

}  // namespace

Result<WorkloadResult> scheduleWorkload(const Workload& w, const std::vector<const CostTable*>& tables, const WorkloadOptions& o) {
  const bool band = o.algo == "band";
  if (!band && o.algo != "partex") return makeError("--algo: unknown workload scheduler \"", o.algo, "\" (band, partex)");
  if (tables.size() != w.models.size() || tables.empty()) return makeError("workload: one cost table per model expected");
  const CostTable& base = *tables[0];
  for (size_t i = 1; i < tables.size(); ++i)
    if (tables[i]->deviceIds != base.deviceIds)
      return makeError("model \"", w.models[i].name, "\": its devices differ from \"", w.models[0].name, "\"'s (a workload runs on one platform)");
  const int m = base.numDevices();
  std::vector<ModelView> views, coarse;
  for (size_t i = 0; i < tables.size(); ++i) {
    auto v = viewOf(*tables[i], band, o, w.models[i].name);
    if (!v) return Error{v.message()};
    views.push_back(std::move(*v));
    if (!band) {
      auto c = viewOf(*tables[i], true, o, w.models[i].name);
      if (!c) return Error{c.message()};
      coarse.push_back(std::move(*c));
    }
  }
  const std::vector<WorkloadRequest> reqs = expandRequests(w);
  const Dispatch dis = dispatchWorkload(reqs, views, m, !band, coarse);

  // The joint table: the clock pseudo-device (index m), its tasks first, then every request's
  // operators that ran.
  bool anyKeeps = false, anyInPlace = false, anyWork = false, anyChannels = false, anyInputs = false, anyConverts = false;
  for (const CostTable* t : tables) {
    anyKeeps |= !t->keepsOutput.empty();
    anyInPlace |= !t->keptInPlaceBytes.empty();
    anyWork |= !t->work.empty();
    anyChannels |= !t->taskChannels.empty();
    anyConverts |= !t->taskConvertsInput.empty();
    anyInputs |= !t->inputBytes.empty();
  }
  const int mj = m + 1;
  CostTable u;
  u.name = w.name.empty() ? "workload" : w.name;
  u.deviceIds = base.deviceIds;
  u.deviceIds.push_back("clock");
  u.host = base.host;
  u.exclusiveWith = base.exclusiveWith;
  u.exclusiveWith.resize(static_cast<size_t>(mj));
  u.linkResource.assign(static_cast<size_t>(mj * mj), -1);
  u.linkLatencyUs.assign(static_cast<size_t>(mj * mj), 0.0);
  u.linkBytesPerUs.assign(static_cast<size_t>(mj * mj), kInf);
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b) {
      const size_t src = static_cast<size_t>(a * m + b), dst = static_cast<size_t>(a * mj + b);
      if (src < base.linkResource.size()) u.linkResource[dst] = base.linkResource[src];
      if (src < base.linkLatencyUs.size()) u.linkLatencyUs[dst] = base.linkLatencyUs[src];
      if (src < base.linkBytesPerUs.size()) u.linkBytesPerUs[dst] = base.linkBytesPerUs[src];
    }
  u.numLinkResources = base.numLinkResources;
  u.linkNames = base.linkNames;
  u.memCapacity = base.memCapacity;
  u.memCapacity.resize(static_cast<size_t>(mj), 0);
  // A per-device vector of the platform's table, the clock pseudo-device's entry added (when it has any).
  auto perDevice = [&](auto member, auto clockValue) {
    u.*member = base.*member;
    if (!(u.*member).empty()) (u.*member).resize(static_cast<size_t>(mj), clockValue);
  };
  perDevice(&CostTable::deviceWorkspaceBytes, int64_t{0});
  perDevice(&CostTable::deviceKinds, std::string("clock"));
  perDevice(&CostTable::deviceCores, 1);
  perDevice(&CostTable::deviceOnChipBytes, int64_t{0});
  perDevice(&CostTable::deviceLaunchUs, 0.0);
  perDevice(&CostTable::deviceWakeUpUs, 0.0);
  perDevice(&CostTable::deviceModeSwitchUs, 0.0);
  perDevice(&CostTable::deviceInlineCopies, char{0});
  perDevice(&CostTable::deviceReaderConvertBytesPerUs, 0.0);
  perDevice(&CostTable::deviceCompilesBlocks, char{0});
  perDevice(&CostTable::speedProbeUs, 0.0);
  u.groupRoofline = base.groupRoofline;
  // Weights: once per model, shared by its requests.
  std::vector<int32_t> weightBase(tables.size(), 0);
  for (size_t i = 0; i < tables.size(); ++i) {
    weightBase[i] = static_cast<int32_t>(u.weightBytes.size());
    u.weightBytes.insert(u.weightBytes.end(), tables[i]->weightBytes.begin(), tables[i]->weightBytes.end());
    if (!tables[i]->weightNames.empty())
      u.weightNames.insert(u.weightNames.end(), tables[i]->weightNames.begin(), tables[i]->weightNames.end());
    else
      u.weightNames.resize(u.weightBytes.size());
  }
  auto addTask = [&](const std::string& name, const std::string& type) {
    u.taskNames.push_back(name);
    u.taskTypes.push_back(type);
    u.inputBytes.push_back(0);
    u.outputBytes.push_back(0);
    u.taskWeights.emplace_back();
    u.cost.insert(u.cost.end(), static_cast<size_t>(mj), kInf);
    u.provenance.insert(u.provenance.end(), static_cast<size_t>(mj), Provenance::Modelled);
    if (anyKeeps) u.keepsOutput.push_back(0);
    if (anyInPlace) u.keptInPlaceBytes.push_back(0);
    if (anyWork) u.work.emplace_back();
    if (anyChannels) u.taskChannels.push_back(0);
    if (anyConverts) u.taskConvertsInput.push_back(0);
    return static_cast<TaskId>(u.taskNames.size() - 1);
  };
  auto token = [&](TaskId a, TaskId b) {
    Edge e;
    e.src = a;
    e.dst = b;
    e.fixedUs = 0.0;
    u.edges.push_back(e);
  };
  Plan plan;
  plan.algorithm = "workload-" + o.algo;
  plan.order.assign(static_cast<size_t>(mj), {});
  // Clock tasks: rate-driven requests by release time, each ending at its release.
  std::vector<int> roots;
  for (size_t r = 0; r < reqs.size(); ++r)
    if (reqs[r].parent < 0) roots.push_back(static_cast<int>(r));
  std::stable_sort(roots.begin(), roots.end(), [&](int a, int b) { return reqs[static_cast<size_t>(a)].releaseUs < reqs[static_cast<size_t>(b)].releaseUs; });
  std::vector<TaskId> clockOf(reqs.size(), -1);
  double prev = 0;
  for (int r : roots) {
    const TaskId c = addTask("release:" + w.models[static_cast<size_t>(reqs[static_cast<size_t>(r)].model)].name + "#" +
                                 std::to_string(reqs[static_cast<size_t>(r)].index),
                             "Release");
    u.cost[static_cast<size_t>(c) * static_cast<size_t>(mj) + static_cast<size_t>(m)] = reqs[static_cast<size_t>(r)].releaseUs - prev;
    prev = reqs[static_cast<size_t>(r)].releaseUs;
    clockOf[static_cast<size_t>(r)] = c;
    plan.device.push_back(m);
    plan.order[static_cast<size_t>(m)].push_back(c);
  }
  // Requests' operators (parents before children: expandRequests' order).
  std::vector<std::vector<TaskId>> ranOps(reqs.size());
  for (const auto& dl : dis.log)
    for (const Dispatched& x : dl) ranOps[static_cast<size_t>(x.req)].insert(ranOps[static_cast<size_t>(x.req)].end(), x.ops.begin(), x.ops.end());
  std::vector<std::vector<TaskId>> globalOf(reqs.size());  // local -> joint (-1: did not run)
  std::vector<int> reqOfTask(u.taskNames.size(), -1);
  std::vector<TaskId> opOfTask(u.taskNames.size(), -1);
  int32_t itemBase = 0;
  for (size_t r = 0; r < reqs.size(); ++r) {
    if (dis.opsRun[r] == 0) continue;
    const int mi = reqs[r].model;
    const CostTable& t = *tables[static_cast<size_t>(mi)];
    const std::string prefix = w.models[static_cast<size_t>(mi)].name + "#" + std::to_string(reqs[r].index) + "/";
    globalOf[r].assign(static_cast<size_t>(t.numTasks()), -1);
    // Which operators ran: those in the dispatch log.
    std::vector<char> ran(static_cast<size_t>(t.numTasks()), 0);
    for (TaskId x : ranOps[r]) ran[static_cast<size_t>(x)] = 1;
    for (TaskId x = 0; x < t.numTasks(); ++x) {
      if (!ran[static_cast<size_t>(x)]) continue;
      const TaskId g = addTask(prefix + t.taskNames[static_cast<size_t>(x)], t.taskTypes.empty() ? "" : t.taskTypes[static_cast<size_t>(x)]);
      reqOfTask.push_back(static_cast<int>(r));
      opOfTask.push_back(x);
      globalOf[r][static_cast<size_t>(x)] = g;
      for (DeviceId d = 0; d < m; ++d) {
        u.cost[static_cast<size_t>(g) * static_cast<size_t>(mj) + static_cast<size_t>(d)] = t.w(x, d);
        if (!t.provenance.empty())
          u.provenance[static_cast<size_t>(g) * static_cast<size_t>(mj) + static_cast<size_t>(d)] = t.provenance[static_cast<size_t>(x) * static_cast<size_t>(m) + static_cast<size_t>(d)];
      }
      if (!t.inputBytes.empty()) u.inputBytes.back() = t.inputBytes[static_cast<size_t>(x)];
      if (!t.outputBytes.empty()) u.outputBytes.back() = t.outputBytes[static_cast<size_t>(x)];
      if (!t.keepsOutput.empty()) u.keepsOutput.back() = t.keepsOutput[static_cast<size_t>(x)];
      if (!t.keptInPlaceBytes.empty()) u.keptInPlaceBytes.back() = t.keptInPlaceBytes[static_cast<size_t>(x)];
      if (!t.work.empty()) u.work.back() = t.work[static_cast<size_t>(x)];
      if (!t.taskChannels.empty()) u.taskChannels.back() = t.taskChannels[static_cast<size_t>(x)];
      if (!t.taskConvertsInput.empty()) u.taskConvertsInput.back() = t.taskConvertsInput[static_cast<size_t>(x)];
      if (!t.taskWeights.empty())
        for (int32_t wi : t.taskWeights[static_cast<size_t>(x)]) u.taskWeights.back().push_back(wi + weightBase[static_cast<size_t>(mi)]);
    }
    for (const Edge& e : t.edges) {
      const TaskId a = globalOf[r][static_cast<size_t>(e.src)], b = globalOf[r][static_cast<size_t>(e.dst)];
      if (a < 0 || b < 0) continue;
      Edge f = e;
      f.src = a;
      f.dst = b;
      if (f.item >= 0) f.item += itemBase;
      u.edges.push_back(f);
    }
    itemBase += t.numItems;
    // Released by the clock, or by the parent's last operators.
    for (TaskId x = 0; x < t.numTasks(); ++x) {
      const TaskId g = globalOf[r][static_cast<size_t>(x)];
      if (g < 0 || !t.inEdges[static_cast<size_t>(x)].empty()) continue;
      if (reqs[r].parent < 0) {
        token(clockOf[r], g);
      } else {
        const size_t p = static_cast<size_t>(reqs[r].parent);
        const CostTable& pt = *tables[static_cast<size_t>(reqs[p].model)];
        for (TaskId y = 0; y < pt.numTasks(); ++y)
          if (pt.outEdges[static_cast<size_t>(y)].empty() && globalOf[p][static_cast<size_t>(y)] >= 0) token(globalOf[p][static_cast<size_t>(y)], g);
      }
    }
  }
  u.numItems = itemBase;
  u.indexEdges();
  u.groupCost = [tab = &u](const std::vector<TaskId>& ts, DeviceId d) {
    double s = 0;
    for (TaskId x : ts) s += tab->w(x, d);
    return s;
  };
  reqOfTask.resize(u.taskNames.size(), -1);
  opOfTask.resize(u.taskNames.size(), -1);
  // The plan: each device's operators in dispatch order.
  plan.device.resize(u.taskNames.size(), 0);
  for (DeviceId d = 0; d < m; ++d)
    for (const Dispatched& dp : dis.log[static_cast<size_t>(d)])
      for (TaskId x : dp.ops) {
        const TaskId g = globalOf[static_cast<size_t>(dp.req)][static_cast<size_t>(x)];
        plan.device[static_cast<size_t>(g)] = d;
        plan.order[static_cast<size_t>(d)].push_back(g);
      }
  auto tl = simulate(u, plan, o.sim);
  if (!tl) return makeError("workload simulation: ", tl.message());

  WorkloadResult res;
  res.algo = o.algo;
  res.deviceIds = base.deviceIds;
  res.requests = static_cast<int>(reqs.size());
  res.release.assign(reqs.size(), 0.0);
  res.end.assign(reqs.size(), -1.0);
  res.dropped.assign(reqs.size(), 0);
  std::vector<double> lastEnd(reqs.size(), -1.0);
  for (size_t g = 0; g < u.taskNames.size(); ++g)
    if (reqOfTask[g] >= 0) lastEnd[static_cast<size_t>(reqOfTask[g])] = std::max(lastEnd[static_cast<size_t>(reqOfTask[g])], tl->tasks[g].end);
  for (const auto& x : tl->transfers)
    if (x.dst < 0 && x.src >= 0 && reqOfTask[static_cast<size_t>(x.src)] >= 0)
      lastEnd[static_cast<size_t>(reqOfTask[static_cast<size_t>(x.src)])] = std::max(lastEnd[static_cast<size_t>(reqOfTask[static_cast<size_t>(x.src)])], x.end);
  std::vector<std::vector<double>> lat(w.models.size());
  std::vector<std::map<std::string, int>> routes(w.models.size());
  res.models.resize(w.models.size());
  for (size_t i = 0; i < w.models.size(); ++i) res.models[i].name = w.models[i].name;
  for (size_t r = 0; r < reqs.size(); ++r) {
    WorkloadModelStats& s = res.models[static_cast<size_t>(reqs[r].model)];
    ++s.requests;
    const bool complete = !dis.dropped[r] && dis.opsRun[r] == tables[static_cast<size_t>(reqs[r].model)]->numTasks();
    res.release[r] = reqs[r].parent < 0 ? reqs[r].releaseUs : res.end[static_cast<size_t>(reqs[r].parent)];
    if (!complete) {
      res.dropped[r] = 1;
      ++s.dropped;
      continue;
    }
    res.end[r] = lastEnd[r];
    res.makespanUs = std::max(res.makespanUs, res.end[r]);
    const double l = res.end[r] - res.release[r];
    lat[static_cast<size_t>(reqs[r].model)].push_back(l);
    if (l <= reqs[r].deadlineUs + 1e-6) {
      ++s.met;
      ++res.met;
    }
    routes[static_cast<size_t>(reqs[r].model)][std::to_string(dis.routeTaken[r]) + (dis.routeTaken[r] == 1 ? " subgraph" : " subgraphs")]++;
  }
  for (size_t i = 0; i < w.models.size(); ++i) {
    res.models[i].p50Us = percentile(lat[i], 0.5);
    res.models[i].p90Us = percentile(lat[i], 0.9);
    for (const auto& [name, k] : routes[i]) res.models[i].route += (res.models[i].route.empty() ? "" : ", ") + name + " x" + std::to_string(k);
  }
  res.utilisation.assign(static_cast<size_t>(m), 0.0);
  for (DeviceId d = 0; d < m; ++d)
    res.utilisation[static_cast<size_t>(d)] = res.makespanUs > 0 ? tl->busy[static_cast<size_t>(d)] / res.makespanUs : 0.0;
  res.requestList = reqs;
  if (o.keepTimeline) {
    auto joint = std::make_shared<CostTable>(std::move(u));
    joint->groupCost = [tab = joint.get()](const std::vector<TaskId>& ts, DeviceId d) {  // it pointed at `u`
      double s = 0;
      for (TaskId x : ts) s += tab->w(x, d);
      return s;
    };
    res.joint.table = std::move(joint);
    res.joint.plan = std::move(plan);
    res.joint.timeline = std::move(tl).value();
    res.joint.requestOfTask = std::move(reqOfTask);
    res.joint.operatorOfTask = std::move(opOfTask);
  }
  return res;
}

}  // namespace partex
