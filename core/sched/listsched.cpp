#include "sched/listsched.h"

#include "sim/memory.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <tuple>

#include <nlohmann/json.hpp>

#include "support/strings.h"

namespace partex::sched_detail {

double numParam(const SchedOptions& o, const std::string& key, double def, bool& ok) {
  auto it = o.params.find(key);
  if (it == o.params.end() || trim(it->second).empty()) return def;
  try {
    size_t used = 0;
    const std::string s = trim(it->second);
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) ok = false;
    return v;
  } catch (...) {
    ok = false;
    return def;
  }
}

namespace {

bool isForbidden(const Constraints& c, DeviceId d) {
  return std::find(c.forbidden.begin(), c.forbidden.end(), d) != c.forbidden.end();
}

/// Tolerance for "equal" times: tiny relative to the magnitudes involved.
double eps(double x) { return 1e-9 * std::max(1.0, std::fabs(x)); }

}  // namespace

Status checkConstraints(const CostTable& t, const Constraints& c) {
  const int n = t.numTasks();
  const int nd = t.numDevices();
  if (nd == 0 && n > 0) return makeError(t.name, ": no devices");
  for (const auto& [v, d] : c.pinned) {
    if (v < 0 || v >= n) return makeError("pinned task ", std::to_string(v), ": no such task");
    if (d < 0 || d >= nd)
      return makeError("task '", t.taskNames[static_cast<size_t>(v)], "': pinned to unknown device ", std::to_string(d));
  }
  for (DeviceId d : c.forbidden)
    if (d < 0 || d >= nd) return makeError("forbidden device ", std::to_string(d), ": no such device");
  for (TaskId v = 0; v < n; ++v) {
    bool any = false;
    for (DeviceId d = 0; d < nd && !any; ++d) any = c.allowed(t, v, d);
    if (!any) {
      std::string why;
      auto it = c.pinned.find(v);
      if (it != c.pinned.end())
        why = " (pinned to " + t.deviceIds[static_cast<size_t>(it->second)] +
              (t.canRun(v, it->second) ? ", which is forbidden)" : ", which cannot run it)");
      return makeError("task '", t.taskNames[static_cast<size_t>(v)], "': no allowed device", why);
    }
  }
  return Status::ok();
}

Error cancelledError() { return Error{"cancelled"}; }

std::string paramsJson(const SchedOptions& o) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : o.params) j[k] = v;
  return j.dump();
}

std::vector<int32_t> topoPositions(const CostTable& t, const std::vector<TaskId>& topo) {
  std::vector<int32_t> pos(static_cast<size_t>(t.numTasks()), 0);
  for (size_t i = 0; i < topo.size(); ++i) pos[static_cast<size_t>(topo[i])] = static_cast<int32_t>(i);
  return pos;
}

std::vector<DeviceId> allowedDevices(const CostTable& t, const Constraints& c, TaskId v) {
  std::vector<DeviceId> out;
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    if (c.allowed(t, v, d)) out.push_back(d);
  return out;
}

std::vector<double> meanCosts(const CostTable& t, const Constraints& c) {
  std::vector<double> w(static_cast<size_t>(t.numTasks()), 0.0);
  for (TaskId v = 0; v < t.numTasks(); ++v) {
    double sum = 0;
    int k = 0;
    for (DeviceId d = 0; d < t.numDevices(); ++d)
      if (c.allowed(t, v, d)) {
        sum += t.w(v, d);
        ++k;
      }
    w[static_cast<size_t>(v)] = k ? sum / k : 0.0;
  }
  return w;
}

std::vector<double> meanComms(const CostTable& t, const Constraints& c) {
  const auto ne = static_cast<int32_t>(t.edges.size());
  std::vector<double> m(static_cast<size_t>(ne), 0.0);
  if (c.forbidden.empty()) {
    for (int32_t e = 0; e < ne; ++e) m[static_cast<size_t>(e)] = t.meanComm(e);
    return m;
  }
  std::vector<DeviceId> usable;
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    if (!isForbidden(c, d)) usable.push_back(d);
  if (usable.size() < 2) return m;
  for (int32_t e = 0; e < ne; ++e) {
    double sum = 0;
    int k = 0;
    for (DeviceId a : usable)
      for (DeviceId b : usable) {
        if (a == b) continue;
        const double x = t.comm(e, a, b);
        if (x == kInf) continue;  // unreachable pairs do not count, as in CostTable::meanComm
        sum += x;
        ++k;
      }
    m[static_cast<size_t>(e)] = k ? sum / k : 0.0;
  }
  return m;
}

std::vector<double> upwardRanks(const CostTable& t, const std::vector<TaskId>& topo, const std::vector<double>& wbar,
                                const std::vector<double>& cbar) {
  std::vector<double> r(static_cast<size_t>(t.numTasks()), 0.0);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const TaskId v = *it;
    double best = 0;
    for (int32_t e : t.outEdges[static_cast<size_t>(v)]) {
      const TaskId s = t.edges[static_cast<size_t>(e)].dst;
      best = std::max(best, cbar[static_cast<size_t>(e)] + r[static_cast<size_t>(s)]);
    }
    r[static_cast<size_t>(v)] = wbar[static_cast<size_t>(v)] + best;
  }
  return r;
}

std::vector<double> downwardRanks(const CostTable& t, const std::vector<TaskId>& topo, const std::vector<double>& wbar,
                                  const std::vector<double>& cbar) {
  std::vector<double> r(static_cast<size_t>(t.numTasks()), 0.0);
  for (TaskId v : topo) {
    double best = 0;
    for (int32_t e : t.inEdges[static_cast<size_t>(v)]) {
      const TaskId p = t.edges[static_cast<size_t>(e)].src;
      best = std::max(best, r[static_cast<size_t>(p)] + wbar[static_cast<size_t>(p)] + cbar[static_cast<size_t>(e)]);
    }
    r[static_cast<size_t>(v)] = best;
  }
  return r;
}

std::vector<double> optimisticCostTable(const CostTable& t, const Constraints& c, const std::vector<TaskId>& topo,
                                        const std::vector<double>& cbar) {
  const auto nd = static_cast<size_t>(t.numDevices());
  std::vector<double> oct(static_cast<size_t>(t.numTasks()) * nd, 0.0);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const auto v = static_cast<size_t>(*it);
    for (int32_t e : t.outEdges[v]) {
      const auto si = static_cast<size_t>(t.edges[static_cast<size_t>(e)].dst);
      const auto s = static_cast<TaskId>(si);
      // min over allowed d' of OCT(s,d') + w(s,d'); staying on d saves the transfer.
      double best = kInf;
      for (size_t dp = 0; dp < nd; ++dp)
        if (c.allowed(t, s, static_cast<DeviceId>(dp))) best = std::min(best, oct[si * nd + dp] + t.w(s, static_cast<DeviceId>(dp)));
      if (best == kInf) continue;  // s has no allowed device: checkConstraints reports it
      const double moved = best + cbar[static_cast<size_t>(e)];
      for (size_t d = 0; d < nd; ++d) {
        double val = moved;
        if (c.allowed(t, s, static_cast<DeviceId>(d))) val = std::min(val, oct[si * nd + d] + t.w(s, static_cast<DeviceId>(d)));
        oct[v * nd + d] = std::max(oct[v * nd + d], val);
      }
    }
  }
  return oct;
}

// ---------------------------------------------------------------------------------------------------
// IntervalSet

namespace {
constexpr size_t kChunk = 128;  // intervals per chunk (split at twice that)
}  // namespace

void IntervalSet::refresh(Chunk& c) {
  c.maxGap = 0;
  for (size_t i = 1; i < c.iv.size(); ++i) c.maxGap = std::max(c.maxGap, c.iv[i].start - c.iv[i - 1].end);
}

void IntervalSet::insert(const Interval& iv) {
  ++size_;
  if (chunks_.empty()) {
    chunks_.push_back(Chunk{{iv}, 0.0});
    return;
  }
  // The last chunk starting at or before iv (or the first chunk).
  auto ct = std::upper_bound(chunks_.begin(), chunks_.end(), iv.start,
                             [](double s, const Chunk& c) { return s < c.iv.front().start; });
  if (ct != chunks_.begin()) --ct;
  Chunk& c = *ct;
  auto it = std::upper_bound(c.iv.begin(), c.iv.end(), iv.start, [](double s, const Interval& x) { return s < x.start; });
  const auto i = static_cast<size_t>(it - c.iv.begin());
  // The new interval splits the gap between its neighbours: the largest gap only changes when that
  // gap was the largest.
  const bool wasMax = i > 0 && i < c.iv.size() && c.iv[i].start - c.iv[i - 1].end >= c.maxGap;
  c.iv.insert(it, iv);
  if (i > 0 && i + 1 == c.iv.size()) c.maxGap = std::max(c.maxGap, iv.start - c.iv[i - 1].end);  // appended
  if (i == 0 && c.iv.size() > 1) c.maxGap = std::max(c.maxGap, c.iv[1].start - iv.end);           // prepended
  if (c.iv.size() > 2 * kChunk) {
    Chunk tail;
    tail.iv.assign(c.iv.begin() + static_cast<std::ptrdiff_t>(kChunk), c.iv.end());
    c.iv.resize(kChunk);
    refresh(c);
    refresh(tail);
    chunks_.insert(ct + 1, std::move(tail));
  } else if (wasMax) {
    refresh(c);
  }
}

void IntervalSet::erase(int64_t id, double start) {
  auto eraseIn = [&](std::vector<Chunk>::iterator ct) {
    for (auto it = ct->iv.begin(); it != ct->iv.end(); ++it)
      if (it->id == id) {
        // Removing an interval merges the gaps on both sides: the largest gap can only grow (at the
        // ends of a chunk it may stay over-estimated, which only costs a scan in fit()).
        const auto i = static_cast<size_t>(ct->iv.erase(it) - ct->iv.begin());
        --size_;
        if (ct->iv.empty())
          chunks_.erase(ct);
        else if (i > 0 && i < ct->iv.size())
          ct->maxGap = std::max(ct->maxGap, ct->iv[i].start - ct->iv[i - 1].end);
        return true;
      }
    return false;
  };
  auto ct = std::upper_bound(chunks_.begin(), chunks_.end(), start + eps(start),
                             [](double s, const Chunk& c) { return s < c.iv.front().start; });
  if (ct != chunks_.begin() && eraseIn(ct - 1)) return;
  for (auto it = chunks_.begin(); it != chunks_.end(); ++it)  // not where expected (cannot happen)
    if (eraseIn(it)) return;
}

double IntervalSet::fit(double ready, double dur) const {
  double s = ready;
  // Intervals do not overlap, so their ends are sorted like their starts: skip the chunks that end
  // before s.
  auto ct = std::upper_bound(chunks_.begin(), chunks_.end(), s + eps(s),
                             [](double x, const Chunk& c) { return x < c.iv.back().end; });
  for (; ct != chunks_.end(); ++ct) {
    const auto& iv = ct->iv;
    if (iv.front().start >= s + dur - eps(s + dur)) return s;  // fits before this chunk
    if (ct->maxGap < dur - eps(iv.back().end + dur)) {        // no gap inside is wide enough
      s = std::max(s, iv.back().end);
      continue;
    }
    auto it = std::upper_bound(iv.begin(), iv.end(), s + eps(s), [](double x, const Interval& y) { return x < y.end; });
    for (; it != iv.end(); ++it) {
      if (it->start >= s + dur - eps(s + dur)) return s;
      if (it->end > s + eps(s)) s = it->end;  // overlap: try right after this interval
    }
  }
  return s;
}

double earliestFit(const std::vector<const IntervalSet*>& sets, double ready, double dur) {
  double s = ready;
  for (;;) {
    bool moved = false;
    for (const IntervalSet* set : sets) {
      const double s2 = set->fit(s, dur);
      if (s2 > s) {
        s = s2;
        moved = true;
      }
    }
    if (!moved || sets.size() == 1) return s;
  }
}

// ---------------------------------------------------------------------------------------------------
// ListTimeline

ListTimeline::ListTimeline(const CostTable& t, const SimOptions& sim)
    : t_(t),
      sim_(sim),
      nd_(t.numDevices()),
      dev_(static_cast<size_t>(t.numTasks()), -1),
      start_(static_cast<size_t>(t.numTasks()), 0.0),
      finish_(static_cast<size_t>(t.numTasks()), 0.0),
      devBusy_(static_cast<size_t>(t.numDevices())),
      groupBusy_(static_cast<size_t>(t.numDevices())),
      cliqueGroup_(static_cast<size_t>(t.numDevices()), 0),
      feeds_(static_cast<size_t>(t.numDevices())),
      linkBusy_(static_cast<size_t>(std::max(0, t.numLinkResources))) {
  auto exclusive = [&](DeviceId a, DeviceId b) {
    if (static_cast<size_t>(a) >= t.exclusiveWith.size()) return false;
    const auto& ex = t.exclusiveWith[static_cast<size_t>(a)];
    return std::find(ex.begin(), ex.end(), b) != ex.end();
  };
  for (DeviceId d = 0; d < nd_; ++d) {
    if (static_cast<size_t>(d) >= t.exclusiveWith.size() || t.exclusiveWith[static_cast<size_t>(d)].empty()) continue;
    std::vector<DeviceId> group = t.exclusiveWith[static_cast<size_t>(d)];
    group.push_back(d);
    bool clique = true;
    for (DeviceId a : group)
      for (DeviceId b : group)
        if (a != b && !exclusive(a, b)) clique = false;
    cliqueGroup_[static_cast<size_t>(d)] = clique;
    if (clique)
      for (DeviceId a : group) feeds_[static_cast<size_t>(a)].push_back(d);
  }
}

ListTimeline::Eval ListTimeline::evaluate(TaskId v, DeviceId d) { return compute(v, d, false); }

ListTimeline::Eval ListTimeline::place(TaskId v, DeviceId d) { return compute(v, d, true); }

double ListTimeline::scheduleTransfer(int32_t link, double ready, double dur, bool commit) {
  if (dur <= 0) return ready;
  if (sim_.unlimitedLinks || link < 0 || link >= static_cast<int32_t>(linkBusy_.size())) return ready + dur;
  IntervalSet& set = linkBusy_[static_cast<size_t>(link)];
  double s = set.fit(ready, dur);
  if (commit) {
    set.insert({s, s + dur, nextId_++});
    return s + dur;
  }
  // The earliest start that also misses this evaluation's earlier transfers on the link: the same
  // answer as inserting them into the set (touching is fine, as in IntervalSet::fit).
  for (bool moved = true; moved;) {
    moved = false;
    for (const Tentative& x : tentative_)
      if (x.link == link && s < x.end && s + dur > x.start) {
        s = set.fit(x.end, dur);
        moved = true;
      }
  }
  tentative_.push_back({link, s, s + dur});
  return s + dur;
}

ListTimeline::Eval ListTimeline::compute(TaskId v, DeviceId d, bool commit) {
  const auto vi = static_cast<size_t>(v);
  const DeviceId host = t_.host;
  tentative_.clear();
  std::vector<std::pair<int64_t, Sent>>& newSent = newSent_;  // tentative reuse entries
  newSent.clear();
  auto linkOf = [&](DeviceId a, DeviceId b) -> int32_t {
    const size_t k = static_cast<size_t>(a) * static_cast<size_t>(nd_) + static_cast<size_t>(b);
    return k < t_.linkResource.size() ? t_.linkResource[k] : -1;
  };

  double ready = 0;
  // Model inputs come from the host.
  if (vi < t_.inputBytes.size() && t_.inputBytes[vi] > 0 && d != host) {
    const double dur = t_.transferUs(host, d, t_.inputBytes[vi]);
    ready = std::max(ready, scheduleTransfer(linkOf(host, d), 0.0, dur, commit));
  }
  // Inputs from predecessors, in the order they were produced.
  std::vector<int32_t>& in = inScratch_;
  in.assign(t_.inEdges[vi].begin(), t_.inEdges[vi].end());
  std::stable_sort(in.begin(), in.end(), [&](int32_t a, int32_t b) {
    return finish_[static_cast<size_t>(t_.edges[static_cast<size_t>(a)].src)] <
           finish_[static_cast<size_t>(t_.edges[static_cast<size_t>(b)].src)];
  });
  for (int32_t e : in) {
    const Edge& edge = t_.edges[static_cast<size_t>(e)];
    const auto ui = static_cast<size_t>(edge.src);
    const DeviceId p = dev_[ui];
    double arrival = finish_[ui];
    if (p != d) {
      const double dur = t_.comm(e, p, d);
      if (dur > 0) {
        // What is sent once per destination device: the edge's data item, or (a model's rule) the
        // producer's result. Keys of items follow the tasks' keys.
        const int64_t key = (edge.item >= 0 ? static_cast<int64_t>(t_.numTasks()) + edge.item : static_cast<int64_t>(edge.src)) * nd_ + d;
        const Sent* prior = nullptr;
        for (const auto& [k, s] : newSent)
          if (k == key) prior = &s;
        if (!prior) {
          auto it = sent_.find(key);
          if (it != sent_.end()) prior = &it->second;
        }
        if (prior && prior->bytes >= edge.bytes) {
          arrival = prior->arrival;
        } else {
          arrival = scheduleTransfer(linkOf(p, d), finish_[ui], dur, commit);
          if (commit)
            sent_[key] = Sent{arrival, edge.bytes};
          else
            newSent.emplace_back(key, Sent{arrival, edge.bytes});
        }
      }
    }
    ready = std::max(ready, arrival);
  }

  // The device and every device exclusive with it must be idle.
  const double w = t_.w(v, d);
  const std::vector<DeviceId> noDevices;
  const std::vector<DeviceId>& excl =
      static_cast<size_t>(d) < t_.exclusiveWith.size() ? t_.exclusiveWith[static_cast<size_t>(d)] : noDevices;
  Eval ev;
  if (excl.empty()) {
    ev.start = devBusy_[static_cast<size_t>(d)].fit(ready, w);
  } else if (cliqueGroup_[static_cast<size_t>(d)]) {
    ev.start = groupBusy_[static_cast<size_t>(d)].fit(ready, w);
  } else {
    std::vector<const IntervalSet*> sets{&devBusy_[static_cast<size_t>(d)]};
    for (DeviceId x : excl) sets.push_back(&devBusy_[static_cast<size_t>(x)]);
    ev.start = earliestFit(sets, ready, w);
  }
  ev.finish = ev.start + w;
  ev.effFinish = ev.finish;
  // Model outputs return to the host.
  if (vi < t_.outputBytes.size() && t_.outputBytes[vi] > 0 && d != host) {
    const double dur = t_.transferUs(d, host, t_.outputBytes[vi]);
    ev.effFinish = std::max(ev.finish, scheduleTransfer(linkOf(d, host), ev.finish, dur, commit));
  }

  if (commit) {
    dev_[vi] = d;
    start_[vi] = ev.start;
    finish_[vi] = ev.finish;
    const IntervalSet::Interval iv{ev.start, ev.finish, nextId_++};
    devBusy_[static_cast<size_t>(d)].insert(iv);
    for (DeviceId x : feeds_[static_cast<size_t>(d)]) groupBusy_[static_cast<size_t>(x)].insert(iv);
    makespan_ = std::max(makespan_, ev.effFinish);
  }
  return ev;
}

Plan ListTimeline::toPlan(const std::vector<int32_t>& topoPos, const std::string& algorithm) const {
  Plan plan;
  plan.algorithm = algorithm;
  plan.device = dev_;
  plan.order.assign(static_cast<size_t>(nd_), {});
  for (TaskId v = 0; v < t_.numTasks(); ++v) plan.order[static_cast<size_t>(dev_[static_cast<size_t>(v)])].push_back(v);
  for (auto& ord : plan.order)
    std::sort(ord.begin(), ord.end(), [&](TaskId a, TaskId b) {
      const auto ai = static_cast<size_t>(a), bi = static_cast<size_t>(b);
      return std::tie(start_[ai], finish_[ai], topoPos[ai]) < std::tie(start_[bi], finish_[bi], topoPos[bi]);
    });
  return plan;
}

// ---------------------------------------------------------------------------------------------------

DeviceId argminAllowed(const CostTable& t, const Constraints& c, TaskId v, const std::function<double(DeviceId)>& score) {
  DeviceId best = -1;
  double bestScore = kInf;
  for (DeviceId d = 0; d < t.numDevices(); ++d) {
    if (!c.allowed(t, v, d)) continue;
    const double s = score(d);
    if (best < 0 || s < bestScore - eps(bestScore)) {
      best = d;
      bestScore = s;
    }
  }
  return best;
}

Result<Plan> listSchedule(const CostTable& t, const Constraints& c, const SchedOptions& o, const std::string& algorithm,
                          const std::vector<double>& priority, const DeviceChooser& choose) {
  if (auto st = checkConstraints(t, c); !st) return Error{st.message()};
  const int n = t.numTasks();
  const std::vector<TaskId> topo = t.topoOrder();
  const std::vector<int32_t> pos = topoPositions(t, topo);

  // Quantised priorities: values within ~1e-9 relative of each other compare equal, so that
  // floating-point noise in the ranks does not decide ties (ties go to the lower task index).
  double scale = 0;
  for (double p : priority)
    if (std::isfinite(p)) scale = std::max(scale, std::fabs(p));
  const double q = scale > 0 ? scale * 1e-9 : 1.0;
  std::vector<double> key(static_cast<size_t>(n));
  for (TaskId v = 0; v < n; ++v) key[static_cast<size_t>(v)] = std::round(priority[static_cast<size_t>(v)] / q);

  auto lower = [&](TaskId a, TaskId b) {  // true when a has lower precedence than b
    const double ka = key[static_cast<size_t>(a)], kb = key[static_cast<size_t>(b)];
    if (ka != kb) return ka < kb;
    return a > b;
  };
  std::priority_queue<TaskId, std::vector<TaskId>, decltype(lower)> readyQ(lower);
  std::vector<int32_t> missing(static_cast<size_t>(n), 0);
  for (TaskId v = 0; v < n; ++v) {
    missing[static_cast<size_t>(v)] = static_cast<int32_t>(t.inEdges[static_cast<size_t>(v)].size());
    if (missing[static_cast<size_t>(v)] == 0) readyQ.push(v);
  }

  ListTimeline tl(t, o.sim);
  WeightLoad load(t);  // weights placed per device, against their capacity
  const int step = std::max(1, n / 100);
  int done = 0;
  o.report(0.0, algorithm + ": scheduling");
  if (o.trace) {
    TraceStep r;
    r.kind = "ranks";
    r.values = priority;
    r.note = algorithm + ": task priorities (the ready list takes the highest first)";
    o.trace(r);
  }
  while (!readyQ.empty()) {
    if (o.cancelled()) return cancelledError();
    TraceStep st;
    if (o.trace) {
      // The ready list in priority order (a copy of the queue, drained).
      auto copy = readyQ;
      while (!copy.empty()) {
        st.ready.push_back(copy.top());
        st.readyPriority.push_back(priority[static_cast<size_t>(copy.top())]);
        copy.pop();
      }
    }
    const TaskId v = readyQ.top();
    readyQ.pop();
    DeviceId d = choose(v, tl);
    if (d < 0 || d >= t.numDevices() || !c.allowed(t, v, d))
      return makeError("task '", t.taskNames[static_cast<size_t>(v)], "': no allowed device");
    if (load.active() && !load.fitsWith(v, d)) {
      // Capacity is checked when placing: the algorithm's choice has no room for v's weights, so v
      // goes to the allowed device with room where it finishes first.
      const std::vector<DeviceId> allowed = allowedDevices(t, c, v);
      DeviceId alt = -1;
      double altFinish = kInf;
      for (DeviceId x : allowed)
        if (load.fitsWith(v, x)) {
          const double f = tl.evaluate(v, x).finish;
          if (alt < 0 || f < altFinish) {
            alt = x;
            altFinish = f;
          }
        }
      if (alt < 0) return noDeviceFits(t, load, v, allowed);
      d = alt;
    }
    load.add(v, d);
    if (o.trace) {
      st.kind = "place";
      st.task = v;
      st.chosen = d;
      st.finish.assign(static_cast<size_t>(t.numDevices()), kInf);
      for (DeviceId x = 0; x < t.numDevices(); ++x)
        if (c.allowed(t, v, x)) st.finish[static_cast<size_t>(x)] = tl.evaluate(v, x).finish;
      st.note = algorithm + ": '" + t.taskNames[static_cast<size_t>(v)] + "' heads the ready list and goes to " +
                t.deviceIds[static_cast<size_t>(d)];
      o.trace(st);
    }
    tl.place(v, d);
    for (int32_t e : t.outEdges[static_cast<size_t>(v)]) {
      const TaskId s = t.edges[static_cast<size_t>(e)].dst;
      if (--missing[static_cast<size_t>(s)] == 0) readyQ.push(s);
    }
    if (++done % step == 0) o.report(static_cast<double>(done) / n, algorithm + ": scheduling");
  }
  if (done != n) return makeError(t.name, ": the task graph has a cycle");
  o.report(1.0, algorithm + ": done");
  Plan plan = tl.toPlan(pos, algorithm);
  plan.optionsJson = paramsJson(o);
  return plan;
}

Result<Plan> topologicalListSchedule(const CostTable& t, const Constraints& c, const SchedOptions& o,
                                     const std::string& algorithm, const DeviceScore& score) {
  const std::vector<TaskId> topo = t.topoOrder();
  std::vector<double> priority(topo.size());
  for (size_t i = 0; i < topo.size(); ++i) priority[static_cast<size_t>(topo[i])] = static_cast<double>(topo.size() - i);
  return listSchedule(t, c, o, algorithm, priority, [&](TaskId v, ListTimeline& tl) {
    return argminAllowed(t, c, v, [&](DeviceId d) { return score(v, d, tl); });
  });
}

Plan finishAssignmentPlan(const CostTable& t, std::vector<DeviceId> device, const std::string& algorithm,
                          const SchedOptions& o) {
  Plan plan;
  plan.device = std::move(device);
  orderByUpwardRank(t, plan);
  plan.algorithm = algorithm;
  plan.optionsJson = paramsJson(o);
  return plan;
}

}  // namespace partex::sched_detail
