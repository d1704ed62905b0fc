#include "sim/stream.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "sim/contention.h"
#include "sim/handoff.h"

namespace partex {

const char* objectiveName(Objective o) {
  return o == Objective::Throughput ? "throughput" : "latency";
}

bool parseObjective(const std::string& s, Objective& out) {
  if (s == "latency") {
    out = Objective::Latency;
    return true;
  }
  if (s == "throughput") {
    out = Objective::Throughput;
    return true;
  }
  return false;
}

const char* dispatchName(ReplicaDispatch d) {
  return d == ReplicaDispatch::NextFree ? "next-free" : "round-robin";
}

bool parseDispatch(const std::string& s, ReplicaDispatch& out) {
  if (s == "round-robin") {
    out = ReplicaDispatch::RoundRobin;
    return true;
  }
  if (s == "next-free") {
    out = ReplicaDispatch::NextFree;
    return true;
  }
  return false;
}

std::vector<int> nextFreeAssignment(const std::vector<double>& occupancyUs, int inferences) {
  std::vector<int> out;
  if (occupancyUs.empty()) return out;
  std::vector<double> freeAt(occupancyUs.size(), 0.0);
  out.reserve(static_cast<size_t>(std::max(0, inferences)));
  for (int c = 0; c < inferences; ++c) {
    const auto k = static_cast<size_t>(std::min_element(freeAt.begin(), freeAt.end()) - freeAt.begin());
    out.push_back(static_cast<int>(k));
    freeAt[k] += occupancyUs[k];
  }
  return out;
}

std::vector<int> inFlightWaits(const std::vector<int>& replicaOf, int replicas, int inFlight) {
  if (inFlight <= 0 || replicas <= 0) return std::vector<int>(replicaOf.size(), -1);
  return inFlightWaits(replicaOf, std::vector<int>(static_cast<size_t>(replicas), std::max(1, inFlight / replicas)));
}

std::vector<int> inFlightWaits(const std::vector<int>& replicaOf, const std::vector<int>& contextsOf) {
  std::vector<int> waits(replicaOf.size(), -1);
  std::vector<std::vector<int>> taken(contextsOf.size());
  for (size_t c = 0; c < replicaOf.size(); ++c) {
    const auto k = static_cast<size_t>(replicaOf[c]);
    if (k >= contextsOf.size()) continue;
    auto& mine = taken[k];
    const auto per = static_cast<size_t>(std::max(1, contextsOf[k]));
    if (mine.size() >= per) waits[c] = mine[mine.size() - per];
    mine.push_back(static_cast<int>(c));
  }
  return waits;
}

std::vector<int> canonicalReplicas(const Plan& plan) {
  const int R = replicaCount(plan);
  std::vector<std::vector<DeviceId>> dev;
  std::vector<int> out(static_cast<size_t>(R));
  for (int k = 0; k < R; ++k) {
    dev.push_back(replicaPlan(plan, k).device);
    out[static_cast<size_t>(k)] = k;
    for (int q = 0; q < k; ++q)
      if (dev[static_cast<size_t>(q)] == dev[static_cast<size_t>(k)]) {
        out[static_cast<size_t>(k)] = q;
        break;
      }
  }
  return out;
}

namespace {

/// Copies a per-task vector `copies` times (empty stays empty).
template <typename T>
std::vector<T> repeat(const std::vector<T>& v, int copies) {
  std::vector<T> out;
  if (v.empty()) return out;
  out.reserve(v.size() * static_cast<size_t>(copies));
  for (int c = 0; c < copies; ++c) out.insert(out.end(), v.begin(), v.end());
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int devicesUsed(const CostTable& t, const Plan& plan) {
  const size_t m = std::min(plan.order.size(), static_cast<size_t>(t.numDevices()));
  std::vector<char> used(m, 0);
  for (size_t d = 0; d < m; ++d) {
    if (plan.order[d].empty()) continue;
    used[d] = 1;
    for (const auto& map : plan.replicas)
      if (d < map.size() && map[d] >= 0 && static_cast<size_t>(map[d]) < m) used[static_cast<size_t>(map[d])] = 1;
  }
  return static_cast<int>(std::count(used.begin(), used.end(), 1));
}

int defaultInFlight(const CostTable& t, const Plan& plan) {
  const int r = replicaCount(plan);
  const int k = devicesUsed(t, plan) + 1;
  return (k + r - 1) / r * r;
}

CostTable unrollStream(const CostTable& t, int copies, int inFlight) {
  copies = std::max(1, copies);
  std::vector<int> waits(static_cast<size_t>(copies), -1);
  if (inFlight > 0)
    for (int c = inFlight; c < copies; ++c) waits[static_cast<size_t>(c)] = c - inFlight;
  return unrollStream(t, waits);
}

CostTable unrollStream(const CostTable& t, const std::vector<int>& waitsFor) {
  const int copies = std::max(1, static_cast<int>(waitsFor.size()));
  const int n = t.numTasks();
  CostTable u = t;  // devices, links, weights, capacities, group functions: shared by every copy
  u.taskNames.clear();
  u.taskNames.reserve(static_cast<size_t>(n) * static_cast<size_t>(copies));
  for (int c = 0; c < copies; ++c)
    for (const auto& name : t.taskNames) u.taskNames.push_back(name + "#" + std::to_string(c));
  u.taskTypes = repeat(t.taskTypes, copies);
  u.cost = repeat(t.cost, copies);
  u.provenance = repeat(t.provenance, copies);
  u.inputBytes = repeat(t.inputBytes, copies);
  u.outputBytes = repeat(t.outputBytes, copies);
  u.keepsOutput = repeat(t.keepsOutput, copies);
  u.keptInPlaceBytes = repeat(t.keptInPlaceBytes, copies);
  u.taskWeights = repeat(t.taskWeights, copies);
  u.work = repeat(t.work, copies);
  u.taskChannels = repeat(t.taskChannels, copies);
  u.taskConvertsInput = repeat(t.taskConvertsInput, copies);
  u.unfusedCost = repeat(t.unfusedCost, copies);
  u.blockAlone = repeat(t.blockAlone, copies);
  u.blockFloor = repeat(t.blockFloor, copies);
  u.fusedGroups.clear();
  u.fusedGroupOf.clear();
  if (!t.fusedGroupOf.empty()) {
    u.fusedGroupOf.reserve(t.fusedGroupOf.size() * static_cast<size_t>(copies));
    for (int c = 0; c < copies; ++c) {
      const int32_t groupBase = static_cast<int32_t>(t.fusedGroups.size()) * c;
      for (const auto& g : t.fusedGroups) {
        std::vector<TaskId> gg;
        gg.reserve(g.size());
        for (TaskId v : g) gg.push_back(v + c * n);
        u.fusedGroups.push_back(std::move(gg));
      }
      for (int32_t gi : t.fusedGroupOf) u.fusedGroupOf.push_back(gi < 0 ? -1 : gi + groupBase);
    }
  }
  // The group cost of a copy's tasks is the original's of the same tasks.
  if (t.groupCost) {
    auto orig = std::make_shared<std::function<double(const std::vector<TaskId>&, DeviceId)>>(t.groupCost);
    u.groupCost = [orig, n](const std::vector<TaskId>& tasks, DeviceId d) {
      std::vector<TaskId> base;
      base.reserve(tasks.size());
      for (TaskId v : tasks) base.push_back(v % n);
      return (*orig)(base, d);
    };
  }
  // Edges: each copy's own, then the in-flight bound.
  u.edges.clear();
  u.edges.reserve(t.edges.size() * static_cast<size_t>(copies));
  // Each copy carries its own data items (a task graph's edges, WfCommons files): item i of copy c is
  // i + c * numItems.
  for (int c = 0; c < copies; ++c)
    for (Edge e : t.edges) {
      e.src += c * n;
      e.dst += c * n;
      if (e.item >= 0) e.item += c * t.numItems;
      u.edges.push_back(e);
    }
  u.numItems = t.numItems * copies;
  if (std::any_of(waitsFor.begin(), waitsFor.end(), [](int w) { return w >= 0; })) {
    std::vector<TaskId> sources, sinks;
    for (TaskId v = 0; v < n; ++v) {
      if (t.inEdges[static_cast<size_t>(v)].empty()) sources.push_back(v);
      if (t.outEdges[static_cast<size_t>(v)].empty()) sinks.push_back(v);
    }
    for (int c = 0; c < static_cast<int>(waitsFor.size()); ++c) {
      const int w = waitsFor[static_cast<size_t>(c)];
      if (w < 0 || w >= c) continue;
      for (TaskId s : sinks)
        for (TaskId r : sources) {
          Edge e;
          e.src = s + w * n;
          e.dst = r + c * n;
          e.bytes = 0;
          e.fixedUs = 0.0;  // a token, not data: no time on any link (indexEdges gives it an item of its own)
          u.edges.push_back(e);
        }
    }
  }
  u.indexEdges();
  return u;
}

Plan unrollPlan(const CostTable& t, const Plan& p, int copies) {
  copies = std::max(1, copies);
  const int R = replicaCount(p);
  std::vector<int> replicaOf(static_cast<size_t>(copies));
  for (int c = 0; c < copies; ++c) replicaOf[static_cast<size_t>(c)] = c % R;
  return unrollPlan(t, p, replicaOf);
}

Plan unrollPlan(const CostTable& t, const Plan& p, const std::vector<int>& replicaOf) {
  const int copies = static_cast<int>(replicaOf.size());
  const int n = t.numTasks();
  Plan u;
  u.algorithm = p.algorithm;
  u.optionsJson = p.optionsJson;
  // Copy c runs on replica replicaOf[c] (sim/plan.h): its tasks on that replica's devices, each device's
  // order the copies' orders there one after another.
  const int R = replicaCount(p);
  std::vector<Plan> rep;
  rep.reserve(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) rep.push_back(replicaPlan(p, r));
  u.device.reserve(p.device.size() * static_cast<size_t>(copies));
  for (int c = 0; c < copies; ++c) {
    const auto& dev = rep[static_cast<size_t>(replicaOf[static_cast<size_t>(c)])].device;
    u.device.insert(u.device.end(), dev.begin(), dev.end());
  }
  u.order.assign(p.order.size(), {});
  for (int c = 0; c < copies; ++c) {
    const Plan& q = rep[static_cast<size_t>(replicaOf[static_cast<size_t>(c)])];
    for (size_t d = 0; d < q.order.size() && d < u.order.size(); ++d)
      for (TaskId v : q.order[d]) u.order[d].push_back(v + c * n);
  }
  for (int c = 0; c < copies; ++c)
    for (PlanBlock b : rep[static_cast<size_t>(replicaOf[static_cast<size_t>(c)])].blocks) {
      for (TaskId& v : b.tasks) v += c * n;
      u.blocks.push_back(std::move(b));
    }
  return u;
}

Result<StreamResult> simulateStream(const CostTable& t, const Plan& plan, const StreamOptions& o, const SimOptions& sim) {
  return StreamJudge(t, o, sim).run(plan);
}

namespace {
/// Each inference's start and end in `tl` (task v of inference c at v + c * n), the steady window [a, b]
/// and the period over it (defined below).
void measureStream(StreamResult& r, const Timeline& tl, int n, ReplicaDispatch dispatch, int& a, int& b);
}  // namespace

StreamJudge::StreamJudge(const CostTable& t, StreamOptions o, SimOptions sim) : t_(t), o_(o), sim_(sim) {}

Result<StreamResult> StreamJudge::run(const Plan& plan) {
  const CostTable& t = t_;
  const StreamOptions& o = o_;
  const SimOptions& sim = sim_;
  if (auto st = checkPlanShape(t, plan); !st) return Error{st.message()};
  StreamResult r;
  const int n = t.numTasks();
  const int m = t.numDevices();
  const int R = replicaCount(plan);
  r.replicas = R;
  r.inFlight = o.inFlight > 0 ? o.inFlight : defaultInFlight(t, plan);
  r.inferences = o.inferences > 0 ? o.inferences : std::max(12, 2 * r.inFlight + 8);
  // With replicas, whole rounds of them in each half (inference t on replica t mod R): the period is
  // then measured over every replica alike.
  // Next free: enough inferences that every replica ends several in the window.
  if (o.inferences <= 0 && o.dispatch == ReplicaDispatch::NextFree && R > 1) r.inferences = std::max(r.inferences, 2 * r.inFlight + 8 * R);
  if (R > 1) r.inferences = (r.inferences + 2 * R - 1) / (2 * R) * (2 * R);
  r.busyPerInference.assign(static_cast<size_t>(m), 0.0);
  r.replicaBusy.assign(static_cast<size_t>(R), std::vector<double>(static_cast<size_t>(m), 0.0));
  // Per replica: the delay each operator's handoffs add to it in the stream (sim/handoff.h), from the
  // order of its one-inference timeline; empty when the table has no handoff costs.
  const bool handoffs = hasHandoffCosts(t);
  std::vector<std::vector<double>> handoffOf(static_cast<size_t>(R));
  for (int k = 0; k < R; ++k) {
    const Plan rp = replicaPlan(plan, k);
    auto single = simulate(t, rp, sim);
    if (!single) return Error{single.message()};
    if (handoffs) handoffOf[static_cast<size_t>(k)] = streamHandoffUs(t, rp, *single);
    r.singleLatencyUs = std::max(r.singleLatencyUs, single->makespan);
    for (DeviceId d = 0; d < m; ++d) {
      const double b = single->busy[static_cast<size_t>(d)];
      r.replicaBusy[static_cast<size_t>(k)][static_cast<size_t>(d)] = b;
      r.busyPerInference[static_cast<size_t>(d)] += b / static_cast<double>(R);
    }
  }
  double busiest = 0;
  for (DeviceId d = 0; d < m; ++d)
    if (r.busyPerInference[static_cast<size_t>(d)] > busiest) {
      busiest = r.busyPerInference[static_cast<size_t>(d)];
      r.bottleneck = d;
    }
  if (n == 0) return r;

  // Which replica takes each inference, and which earlier inference's end lets it in (the in-flight
  // bound: each replica's contexts in turn).
  // Next free: a replica listed twice is one (canonicalReplicas), with the contexts of both.
  const std::vector<int> canon = canonicalReplicas(plan);
  std::vector<int> contextsOf(static_cast<size_t>(R), 0);
  for (int k = 0; k < R; ++k) contextsOf[static_cast<size_t>(canon[static_cast<size_t>(k)])] += std::max(1, r.inFlight / R);
  if (o.dispatch == ReplicaDispatch::NextFree && R > 1) {
    std::vector<int> group;  // the distinct replicas
    std::vector<double> occupancy;
    for (int k = 0; k < R; ++k) {
      if (canon[static_cast<size_t>(k)] != k) continue;
      group.push_back(k);
      double occ = 0;
      for (double b : r.replicaBusy[static_cast<size_t>(k)]) occ = std::max(occ, b);
      occupancy.push_back(occ);
    }
    r.replicaOf = nextFreeAssignment(occupancy, r.inferences);
    for (int& k : r.replicaOf) k = group[static_cast<size_t>(k)];
  } else {
    r.replicaOf.resize(static_cast<size_t>(r.inferences));
    for (int c = 0; c < r.inferences; ++c) r.replicaOf[static_cast<size_t>(c)] = c % R;
  }
  // Round robin: inference c waits for c - K (the same as each replica's contexts in turn when K is a
  // multiple of R, as the executor requires; the simulator also takes other bounds).
  std::vector<int> waits(static_cast<size_t>(r.inferences), -1);
  if (o.dispatch == ReplicaDispatch::NextFree && R > 1)
    waits = inFlightWaits(r.replicaOf, contextsOf);
  else
    for (int c = r.inFlight; c < r.inferences; ++c) waits[static_cast<size_t>(c)] = c - r.inFlight;
  auto it = unrolled_.find(waits);
  if (it == unrolled_.end()) it = unrolled_.emplace(waits, unrollStream(t, waits)).first;
  CostTable& u = it->second;  // its costs get the handoffs and the memory sharing below, and are restored
  const Plan up = unrollPlan(t, plan, r.replicaOf);
  // Handoffs (sim/handoff.h): each copy's operators wait as its replica's do, which occupies their device
  // (its lane is the one waking up or stepping aside).
  std::vector<std::pair<size_t, double>> handoffAdds;  // (index into u.cost, microseconds)
  if (handoffs)
    for (int c = 0; c < r.inferences; ++c) {
      const auto& delay = handoffOf[static_cast<size_t>(r.replicaOf[static_cast<size_t>(c)])];
      for (TaskId v = 0; v < n; ++v)
        if (delay[static_cast<size_t>(v)] > 0) {
          const TaskId uv = v + c * n;
          const DeviceId d = up.device[static_cast<size_t>(uv)];
          handoffAdds.emplace_back(static_cast<size_t>(uv) * static_cast<size_t>(m) + static_cast<size_t>(d),
                                   delay[static_cast<size_t>(v)]);
        }
    }
  const std::vector<double> baseCost = handoffAdds.empty() ? std::vector<double>() : u.cost;
  const std::vector<double> baseUnfused = handoffAdds.empty() ? std::vector<double>() : u.unfusedCost;
  auto addHandoffs = [&] {
    for (const auto& [k, us] : handoffAdds) {
      u.cost[k] += us;
      if (!u.unfusedCost.empty()) u.unfusedCost[k] += us;
    }
  };
  // The unrolled table is shared by every plan this judge runs: its costs go back however run() returns.
  struct Restore {
    CostTable& u;
    const std::vector<double>& cost;
    const std::vector<double>& unfused;
    bool armed = false;
    ~Restore() {
      if (!armed) return;
      u.cost = cost;
      u.unfusedCost = unfused;
    }
  } restore{u, baseCost, baseUnfused, !handoffAdds.empty()};
  addHandoffs();
  auto tl = simulate(u, up, sim);
  if (!tl) return Error{tl.message()};
  const int half = r.inferences / 2;  // >= 6 by default
  int a = half, b = r.inferences - 1;
  measureStream(r, *tl, n, o.dispatch, a, b);

  // Memory shared by cores that run at once (sim/contention.h): an operator on a core takes longer while
  // the other cores of its pool stream beside it. How much of the time they do comes from the stream
  // itself, so it is simulated again with the stretched times until the period settles (a fixed point:
  // stretching the bottleneck lengthens the period, which lowers the others' share of it).
  const std::vector<DeviceId> pools = memoryPools(t);
  std::vector<char> used(static_cast<size_t>(m), 0);
  for (DeviceId d = 0; d < m && static_cast<size_t>(d) < up.order.size(); ++d) used[static_cast<size_t>(d)] = !up.order[static_cast<size_t>(d)].empty();
  auto exclusive = [&](DeviceId x, DeviceId y) {
    const auto& ex = t.exclusiveWith[static_cast<size_t>(x)];
    return std::find(ex.begin(), ex.end(), y) != ex.end();
  };
  std::vector<std::vector<DeviceId>> partners(static_cast<size_t>(m));  // per device: the pool's other cores used
  bool sharing = false;
  for (DeviceId d = 0; d < m; ++d) {
    if (!used[static_cast<size_t>(d)] || pools[static_cast<size_t>(d)] < 0) continue;
    for (DeviceId e = 0; e < m; ++e)
      if (e != d && used[static_cast<size_t>(e)] && pools[static_cast<size_t>(e)] == pools[static_cast<size_t>(d)] && !exclusive(d, e))
        partners[static_cast<size_t>(d)].push_back(e);
    sharing |= !partners[static_cast<size_t>(d)].empty();
  }
  if (sharing) {
    std::vector<SharedMemoryParts> parts(static_cast<size_t>(n) * static_cast<size_t>(m));
    for (DeviceId d = 0; d < m; ++d)
      if (!partners[static_cast<size_t>(d)].empty())
        for (TaskId v = 0; v < n; ++v)
          parts[static_cast<size_t>(v) * static_cast<size_t>(m) + static_cast<size_t>(d)] =
              sharedMemoryParts(t, v, d, pools[static_cast<size_t>(d)]);
    // The costs before the handoffs and the stretch (the handoffs are waits, not memory traffic).
    const std::vector<double> plainCost = handoffAdds.empty() ? u.cost : baseCost;
    const std::vector<double> plainUnfused = handoffAdds.empty() ? u.unfusedCost : baseUnfused;
    std::vector<double> factor(static_cast<size_t>(n) * static_cast<size_t>(m), 1.0);
    for (int iter = 0; iter < 8; ++iter) {
      // Each device's busy share of the period, in the stream as last simulated.
      std::vector<double> share(static_cast<size_t>(m), 0.0);
      for (DeviceId d = 0; d < m; ++d)
        if (used[static_cast<size_t>(d)] && r.periodUs > 0 && static_cast<size_t>(d) < tl->busy.size())
          share[static_cast<size_t>(d)] = std::min(1.0, tl->busy[static_cast<size_t>(d)] / r.inferences / r.periodUs);
      for (DeviceId d = 0; d < m; ++d) {
        if (partners[static_cast<size_t>(d)].empty()) continue;
        double others = 0;
        for (DeviceId e : partners[static_cast<size_t>(d)]) others += share[static_cast<size_t>(e)];
        for (TaskId v = 0; v < n; ++v) {
          const size_t k = static_cast<size_t>(v) * static_cast<size_t>(m) + static_cast<size_t>(d);
          factor[k] = sharedMemoryFactor(parts[k], others, others);
        }
      }
      for (int c = 0; c < r.inferences; ++c)
        for (TaskId v = 0; v < n; ++v)
          for (DeviceId d = 0; d < m; ++d) {
            const size_t k = static_cast<size_t>(v) * static_cast<size_t>(m) + static_cast<size_t>(d);
            const size_t ku = (static_cast<size_t>(c) * static_cast<size_t>(n)) * static_cast<size_t>(m) + k;
            u.cost[ku] = plainCost[ku] * factor[k];
            if (!plainUnfused.empty()) u.unfusedCost[ku] = plainUnfused[ku] * factor[k];
          }
      addHandoffs();
      auto next = simulate(u, up, sim);
      if (!next) {
        u.cost = plainCost;
        u.unfusedCost = plainUnfused;
        return Error{next.message()};
      }
      const double before = r.periodUs;
      tl = std::move(next);
      measureStream(r, *tl, n, o.dispatch, a, b);
      if (std::abs(r.periodUs - before) <= 2e-3 * std::max(before, 1e-9)) break;
    }
    u.cost = plainCost;
    u.unfusedCost = plainUnfused;
    // Busy time per inference as stretched (each replica's tasks on their devices).
    for (int k = 0; k < R; ++k) {
      const Plan q = replicaPlan(plan, k);
      for (TaskId v = 0; v < n && static_cast<size_t>(v) < q.device.size(); ++v) {
        const DeviceId d = q.device[static_cast<size_t>(v)];
        if (d < 0 || d >= m) continue;
        const double f = factor[static_cast<size_t>(v) * static_cast<size_t>(m) + static_cast<size_t>(d)];
        if (f == 1.0) continue;
        const double extra = t.w(v, d) * (f - 1.0);
        r.replicaBusy[static_cast<size_t>(k)][static_cast<size_t>(d)] += extra;
        r.busyPerInference[static_cast<size_t>(d)] += extra / static_cast<double>(R);
      }
    }
    busiest = 0;
    for (DeviceId d = 0; d < m; ++d)
      if (r.busyPerInference[static_cast<size_t>(d)] > busiest) {
        busiest = r.busyPerInference[static_cast<size_t>(d)];
        r.bottleneck = d;
      }
  }
  r.throughputPerS = r.periodUs > 0 ? 1e6 / r.periodUs : 0;
  std::vector<double> lat;
  for (int c = 0; c < r.inferences; ++c) {
    const double l = r.end[static_cast<size_t>(c)] - r.start[static_cast<size_t>(c)];
    r.maxLatencyUs = std::max(r.maxLatencyUs, l);
    if (c >= a && c <= b) lat.push_back(l);
  }
  r.latencyUs = median(lat);
  r.peakBytes = tl->peakBytes;
  r.overCapacity = tl->overCapacity;
  if (o.keepTimeline) r.timeline = std::move(*tl);
  return r;
}

namespace {

void measureStream(StreamResult& r, const Timeline& tl, int n, ReplicaDispatch dispatch, int& a, int& b) {
  const int R = r.replicas;
  r.start.assign(static_cast<size_t>(r.inferences), kInf);
  r.end.assign(static_cast<size_t>(r.inferences), 0.0);
  for (int c = 0; c < r.inferences; ++c)
    for (TaskId v = 0; v < n; ++v) {
      const TaskSlot& s = tl.tasks[static_cast<size_t>(v + c * n)];
      r.start[static_cast<size_t>(c)] = std::min(r.start[static_cast<size_t>(c)], s.start);
      r.end[static_cast<size_t>(c)] = std::max(r.end[static_cast<size_t>(c)], s.end);
    }
  // Outputs returning to the host end an inference too.
  for (const auto& x : tl.transfers)
    if (x.dst < 0 && x.src >= 0) {
      const size_t c = static_cast<size_t>(x.src / n);
      r.end[c] = std::max(r.end[c], x.end);
    }
  // The period over a steady window: the first half fills the pipeline; the last inFlight - 1 inferences
  // drain it. Inference c shares its devices, links and exclusive partners with c + 1 .. c + K - 1 at most
  // (c + K waits for it), so those after N - K run with fewer competitors than in a long stream: a stage
  // on a device exclusive with a busier one (core0 beside cpu-parallel) then finds the gaps it never
  // finds in the steady state, and the last inferences end within microseconds of each other. The
  // window [a, b] ends at N - K and holds whole rounds of the replicas.
  a = r.inferences / 2;
  b = r.inferences - 1;
  if (const int rounds = (r.inferences - r.inFlight - a + 1) / R; rounds >= 1) b = a + rounds * R - 1;
  // Replicas of different speeds may end out of order: the latest end so far stands for each end.
  const double beforeEnd = a > 0 ? *std::max_element(r.end.begin(), r.end.begin() + a) : 0.0;
  const double windowEnd = *std::max_element(r.end.begin(), r.end.begin() + b + 1);
  r.periodUs = (windowEnd - beforeEnd) / static_cast<double>(b - a + 1);
  if (dispatch == ReplicaDispatch::NextFree && R > 1) {
    // The window holds no whole rounds (the assignment follows the replicas' speeds): the stream's rate
    // is the sum of each replica's, each measured over its own inferences in the window (from its last
    // end before the window to its last end in it).
    double rate = 0;
    for (int k = 0; k < R; ++k) {
      double before = -1, last = -1;
      int count = 0;
      for (int c = 0; c <= b; ++c) {
        if (r.replicaOf[static_cast<size_t>(c)] != k) continue;
        const double e = r.end[static_cast<size_t>(c)];
        if (c < a) {
          before = std::max(before, e);
        } else {
          last = std::max(last, e);
          ++count;
        }
      }
      if (count > 0 && before >= 0 && last > before) rate += count / (last - before);
    }
    if (rate > 0) r.periodUs = 1.0 / rate;
  }
}

}  // namespace

std::vector<PlanStage> planStages(const Plan& plan, const std::vector<TaskId>& topo) {
  std::vector<PlanStage> out;
  for (size_t i = 0; i < topo.size(); ++i) {
    const size_t v = static_cast<size_t>(topo[i]);
    const DeviceId d = v < plan.device.size() ? plan.device[v] : -1;
    if (out.empty() || out.back().device != d) out.push_back({d, static_cast<int>(i), static_cast<int>(i)});
    out.back().end = static_cast<int>(i) + 1;
  }
  return out;
}

StageBoundaryMove stageBoundaryMove(const std::vector<PlanStage>& stages, const std::vector<TaskId>& topo, int k, int shift) {
  StageBoundaryMove m;
  if (k < 0 || static_cast<size_t>(k) + 1 >= stages.size() || shift == 0) return m;
  const PlanStage& a = stages[static_cast<size_t>(k)];
  const PlanStage& b = stages[static_cast<size_t>(k) + 1];
  int from = 0, to = 0;
  if (shift < 0) {
    const int n = std::min(-shift, a.size() - 1);
    from = a.end - n;
    to = a.end;
    m.device = b.device;
  } else {
    const int n = std::min(shift, b.size() - 1);
    from = b.begin;
    to = b.begin + n;
    m.device = a.device;
  }
  for (int i = from; i < to && static_cast<size_t>(i) < topo.size(); ++i) m.ops.push_back(topo[static_cast<size_t>(i)]);
  if (m.ops.empty()) m.device = -1;
  return m;
}

}  // namespace partex
