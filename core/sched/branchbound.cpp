// Branch and bound over the simulator's own decisions for `exact` and `best` (branchbound.h); the
// algorithm and its proof of exactness are described at the top of exact.cpp. Every step of the
// simulator is taken through sim/simrules.h, the rules simulate() itself runs.
#include "sched/branchbound.h"
#include "sim/memory.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "sched/listsched.h"
#include "sim/simrules.h"

namespace partex::search_detail {

// ---------------------------------------------------------------------------------------------------
// Branch and bound (the algorithm and its proof of exactness are described at the top of exact.cpp).

namespace {

using sched_detail::allowedDevices;

double tol(double x) { return 1e-9 * std::max(1.0, std::fabs(x)); }

struct Step {
  TaskId task = 0;
  DeviceId dev = 0;
  double start = 0;
};

/// A prefix of the processing sequence: the simulator's state after it, and the devices fixed so far.
struct Node {
  SimState sim;
  std::vector<DeviceId> dev;       ///< -1 until fixed.
  std::vector<Step> seq;
  double lastStart = 0;
};

struct Child {
  double lb = 0;
  double start = 0;
  TaskId v = 0;
  DeviceId d = 0;
  int64_t combo = 0;  ///< Devices of v's unassigned successors (mixed radix); -1: chosen one by one (expandSuccs).
};

/// Above this many device combinations of a task's unassigned successors, the child (task, device) is
/// one child and the successors' devices are branched on one successor at a time, each level with its
/// own bound (a fork of 27 tasks on 4 devices has 4^27 combinations: enumerating them flat never ends).
/// Param flat_combos of exact changes it (tests compare both ways of branching).
constexpr int64_t kMaxFlatCombos = 64;

class BranchAndBound {
 public:
  BranchAndBound(const CostTable& t, const Constraints& c, const SchedOptions& o, Deadline deadline, int64_t maxNodes)
      : t_(t), c_(c), o_(o), rules_(t, o.sim), n_(t.numTasks()), m_(t.numDevices()), maxNodes_(maxNodes) {
    bool ok = true;
    maxFlat_ = static_cast<int64_t>(std::clamp(sched_detail::numParam(o, "flat_combos", static_cast<double>(kMaxFlatCombos), ok), 1.0, 1e15));
    t0_ = std::chrono::steady_clock::now();
    deadline_ = deadline;
    allowed_.resize(static_cast<size_t>(n_));
    for (TaskId v = 0; v < n_; ++v) allowed_[static_cast<size_t>(v)] = allowedDevices(t, c, v);
    topo_ = t.topoOrder();
    isPred_.assign(static_cast<size_t>(n_) * static_cast<size_t>(n_), 0);
    succ_.resize(static_cast<size_t>(n_));
    for (const auto& e : t.edges) {
      char& p = isPred_[static_cast<size_t>(e.src) * static_cast<size_t>(n_) + static_cast<size_t>(e.dst)];
      if (!p) succ_[static_cast<size_t>(e.src)].push_back(e.dst);
      p = 1;
    }
    outUs_.assign(static_cast<size_t>(n_) * static_cast<size_t>(m_), 0.0);
    for (TaskId v = 0; v < n_; ++v) {
      const int64_t ob = t.outputBytes.empty() ? 0 : t.outputBytes[static_cast<size_t>(v)];
      if (ob <= 0) continue;
      for (DeviceId d = 0; d < m_; ++d)
        if (d != t.host) outUs_[idx(v, d)] = t.transferUs(d, t.host, ob);
    }
    for (DeviceId d = 0; d < m_; ++d) {
      bool forbidden = std::find(c.forbidden.begin(), c.forbidden.end(), d) != c.forbidden.end();
      if (!forbidden) usable_.push_back(d);
    }
    if (!t.exclusiveWith.empty())
      for (DeviceId d = 0; d < m_; ++d)
        for (DeviceId p : t.exclusiveWith[static_cast<size_t>(d)]) {
          if (p <= d || p >= m_) continue;
          const auto& back = t.exclusiveWith[static_cast<size_t>(p)];
          if (std::find(back.begin(), back.end(), d) != back.end()) exclusivePairs_.push_back({d, p});
        }
    // How many usable devices can run at once: a maximum independent set of the (mutual) exclusivity
    // graph; exact up to 20 usable devices, else the count (still a valid bound).
    concurrent_ = static_cast<int>(usable_.size());
    if (!exclusivePairs_.empty() && usable_.size() <= 20) {
      const size_t k = usable_.size();
      std::vector<uint32_t> conflict(k, 0);
      for (const auto& [a, b] : exclusivePairs_) {
        const auto ia = std::find(usable_.begin(), usable_.end(), a) - usable_.begin();
        const auto ib = std::find(usable_.begin(), usable_.end(), b) - usable_.begin();
        if (static_cast<size_t>(ia) >= k || static_cast<size_t>(ib) >= k) continue;
        conflict[static_cast<size_t>(ia)] |= 1u << ib;
        conflict[static_cast<size_t>(ib)] |= 1u << ia;
      }
      int best = 0;
      for (uint32_t mask = 1; mask < (1u << k); ++mask) {
        const int bits = __builtin_popcount(mask);
        if (bits <= best) continue;
        bool ok = true;
        for (size_t i = 0; i < k && ok; ++i)
          if ((mask >> i & 1u) && (conflict[i] & mask)) ok = false;
        if (ok) best = bits;
      }
      concurrent_ = std::max(1, best);
    }
    rules_.precomputeComm();
    est_.assign(static_cast<size_t>(n_) * static_cast<size_t>(m_), 0.0);
    eft_.assign(static_cast<size_t>(n_) * static_cast<size_t>(m_), 0.0);
    tail_.assign(static_cast<size_t>(n_) * static_cast<size_t>(m_), 0.0);
  }

  void offer(const Plan& p, double ms) {
    if (ms < incumbent_) {
      incumbent_ = ms;
      best_ = p;
      haveBest_ = true;
    }
  }

  void solve() {
    Node root;
    rules_.reset(root.sim);
    root.dev.assign(static_cast<size_t>(n_), -1);
    root.seq.reserve(static_cast<size_t>(n_));
    for (TaskId v = 0; v < n_; ++v)
      if (!t_.inputBytes.empty() && t_.inputBytes[static_cast<size_t>(v)] > 0) inputTasks_.push_back(v);
    rootBound_ = lowerBoundOf(root);
    preassign(root, 0);
    // Stopped among the root's own children: only the root bound is proven for them.
    if (aborted_) abortBound_ = std::min(abortBound_, rootBound_);
  }

  bool complete() const { return !aborted_; }
  bool timedOut() const { return timedOut_; }
  bool nodeLimited() const { return nodeLimited_; }
  bool cancelled() const { return cancelled_; }
  bool haveBest() const { return haveBest_; }
  double incumbent() const { return incumbent_; }
  const Plan& best() const { return best_; }
  int64_t nodes() const { return nodes_; }
  int64_t leaves() const { return leaves_; }
  /// Best proven lower bound on the optimum.
  double bound() const {
    if (!aborted_) return incumbent_;
    return std::max(rootBound_, std::min(incumbent_, abortBound_));
  }

 private:
  size_t idx(TaskId v, DeviceId d) const { return static_cast<size_t>(v) * static_cast<size_t>(m_) + static_cast<size_t>(d); }
  /// t.comm(e, a, b), precomputed (unless the table is too large for that: sim/simrules.h).
  double comm(int32_t e, DeviceId a, DeviceId b) const { return rules_.comm(e, a, b); }
  bool pruned(double lb) const { return lb >= incumbent_ - tol(incumbent_); }

  /// Called once per node: the node limit, then poll().
  bool checkStop() {
    ++nodes_;
    if (aborted_) return true;
    if (maxNodes_ > 0 && nodes_ > maxNodes_) {
      aborted_ = nodeLimited_ = true;
      return true;
    }
    return poll();
  }

  /// Called at every unit of work (a node, a bound, a leaf: microseconds each, a node's children can
  /// be thousands of them): the cancel token every time, the clock every 16th call, so that the search
  /// stops within well under a millisecond of the deadline or the cancel.
  bool poll() {
    if (aborted_) return true;
    if (o_.cancelled()) {
      aborted_ = cancelled_ = true;
      return true;
    }
    if ((++polls_ & 15) != 0) return false;
    if (deadline_.passed()) {
      aborted_ = timedOut_ = true;
      return true;
    }
    if ((polls_ & 262143) == 0) {
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
      const double left = deadline_.leftSec();
      o_.report(std::min(0.99, 0.2 + 0.8 * el / std::max(1e-9, el + left)),
                "exact: " + std::to_string(nodes_) + " nodes, best " + formatDouble(incumbent_));
    }
    return false;
  }

  static std::string formatDouble(double x) {
    if (!std::isfinite(x)) return "none";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    return buf;
  }

  // ---- The simulator's steps (sim/simrules.h) ------------------------------------------------------

  /// Arrival on d (!= the producer's device) of the data of edge ei from processed u.
  double arrivalOf(const Node& s, int32_t ei, TaskId u, DeviceId d) const {
    const int32_t item = t_.edges[static_cast<size_t>(ei)].item;
    return item >= 0 ? s.sim.itemArrival[static_cast<size_t>(item) * static_cast<size_t>(m_) + static_cast<size_t>(d)] : s.sim.arrival[idx(u, d)];
  }

  /// The start of v on d after the prefix s, as the simulator would compute it.
  double startOf(const Node& s, TaskId v, DeviceId d) const {
    return rules_.startOf(s.sim, v, d, rules_.duration(v, d, s.dev), s.dev).time;
  }

  /// Processes v on d at `start` (devices of its successors already fixed), as simulate() does.
  void process(Node& s, TaskId v, DeviceId d, double start) const {
    s.dev[static_cast<size_t>(v)] = d;
    rules_.process(s.sim, v, d, start, rules_.duration(v, d, s.dev), s.dev, NoTransferSink{});
    s.lastStart = start;
    s.seq.push_back(Step{v, d, start});
  }

  /// Canonical order on equal starts: the simulator takes the lowest device first, unless the later
  /// task depends on one of the steps with that start or waits behind one on its device.
  bool tieOk(const Node& s, TaskId v, DeviceId b, double start) const {
    for (size_t j = s.seq.size(); j-- > 0;) {
      const Step& st = s.seq[j];
      if (st.start != start) break;
      if (st.dev == b) break;
      if (isPred_[static_cast<size_t>(st.task) * static_cast<size_t>(n_) + static_cast<size_t>(v)]) break;
      if (st.dev > b) return false;
    }
    return true;
  }

  // ---- Bound ------------------------------------------------------------------------------------

  double lowerBoundOf(const Node& s) {
    // Capacity as a constraint of the search: weights only grow as devices get fixed, so a prefix whose
    // fixed devices already hold more weights than a device's capacity has no feasible completion.
    if (weights_.active()) {
      weights_.reset(s.dev);
      if (!weights_.fitsAll()) return kInf;
    }
    const auto m = static_cast<size_t>(m_);
    double lb = s.sim.makespan;
    auto cand = [&](TaskId v) -> std::pair<const DeviceId*, size_t> {
      const DeviceId& d = s.dev[static_cast<size_t>(v)];
      if (d >= 0) return {&d, 1};
      const auto& a = allowed_[static_cast<size_t>(v)];
      return {a.data(), a.size()};
    };
    for (TaskId v : topo_) {
      if (s.sim.finish[static_cast<size_t>(v)] >= 0) continue;
      auto [cd, cn] = cand(v);
      for (size_t i = 0; i < cn; ++i) {
        const DeviceId d = cd[i];
        double e = std::max({s.lastStart, s.sim.devFree[static_cast<size_t>(d)], s.sim.inputReady[static_cast<size_t>(v)]});
        for (int32_t ei : t_.inEdges[static_cast<size_t>(v)]) {
          const TaskId u = t_.edges[static_cast<size_t>(ei)].src;
          double arr;
          if (s.sim.finish[static_cast<size_t>(u)] >= 0) {
            const DeviceId du = s.dev[static_cast<size_t>(u)];
            arr = du == d ? s.sim.finish[static_cast<size_t>(u)] : std::max(s.sim.finish[static_cast<size_t>(u)], arrivalOf(s, ei, u, d));
          } else {
            arr = kInf;
            auto [ud, un] = cand(u);
            for (size_t k = 0; k < un; ++k) {
              const DeviceId du = ud[k];
              arr = std::min(arr, eft_[idx(u, du)] + (du == d ? 0.0 : comm(ei, du, d)));
            }
          }
          e = std::max(e, arr);
        }
        est_[idx(v, d)] = e;
        eft_[idx(v, d)] = e + t_.w(v, d);
      }
    }
    for (auto it = topo_.rbegin(); it != topo_.rend(); ++it) {
      const TaskId v = *it;
      if (s.sim.finish[static_cast<size_t>(v)] >= 0) continue;
      auto [cd, cn] = cand(v);
      double bestV = kInf;
      for (size_t i = 0; i < cn; ++i) {
        const DeviceId d = cd[i];
        double tl = outUs_[idx(v, d)];
        for (int32_t ei : t_.outEdges[static_cast<size_t>(v)]) {
          const TaskId x = t_.edges[static_cast<size_t>(ei)].dst;
          auto [xd, xn] = cand(x);
          double best = kInf;
          for (size_t k = 0; k < xn; ++k) {
            const DeviceId dx = xd[k];
            best = std::min(best, (dx == d ? 0.0 : comm(ei, d, dx)) + tail_[idx(x, dx)]);
          }
          tl = std::max(tl, best);
        }
        tail_[idx(v, d)] = t_.w(v, d) + tl;
        bestV = std::min(bestV, est_[idx(v, d)] + tail_[idx(v, d)]);
      }
      lb = std::max(lb, bestV);
      if (pruned(lb)) return lb;  // enough to prune: the rest cannot lower it
    }
    // Loads.
    availSorted_.assign(m, 0.0);
    double* av = availSorted_.data();
    load_.assign(m, 0.0);
    minEst_.assign(m, kInf);
    auto& load = load_;
    auto& minEst = minEst_;
    double freeWork = 0;
    for (size_t d = 0; d < m; ++d) av[d] = std::max(s.sim.devFree[d], s.lastStart);
    for (TaskId v = 0; v < n_; ++v) {
      if (s.sim.finish[static_cast<size_t>(v)] >= 0) continue;
      const DeviceId d = s.dev[static_cast<size_t>(v)];
      if (d >= 0) {
        load[static_cast<size_t>(d)] += t_.w(v, d);
        minEst[static_cast<size_t>(d)] = std::min(minEst[static_cast<size_t>(d)], est_[idx(v, d)]);
      } else {
        double b = kInf;
        for (DeviceId x : allowed_[static_cast<size_t>(v)]) b = std::min(b, t_.w(v, x));
        freeWork += b;
      }
    }
    double fixedWork = 0;
    for (size_t d = 0; d < m; ++d) {
      fixedWork += load[d];
      if (load[d] > 0) lb = std::max(lb, std::max(av[d], minEst[d]) + load[d]);
    }
    for (const auto& [a, b] : exclusivePairs_) {
      const double l = load[static_cast<size_t>(a)] + load[static_cast<size_t>(b)];
      if (l > 0) lb = std::max(lb, std::min(av[static_cast<size_t>(a)], av[static_cast<size_t>(b)]) + l);
    }
    // Remaining work water-filled over the usable devices' free times.
    const double work = fixedWork + freeWork;
    if (work > 0 && !usable_.empty()) {
      double abuf[64];
      std::vector<double> big;
      double* a = abuf;
      if (usable_.size() > 64) {
        big.resize(usable_.size());
        a = big.data();
      }
      const size_t na = usable_.size();
      for (size_t k = 0; k < na; ++k) a[k] = av[static_cast<size_t>(usable_[k])];
      std::sort(a, a + na);
      double sum = 0, level = kInf;
      for (size_t k = 0; k < na; ++k) {
        sum += a[k];
        const double l = (work + sum) / static_cast<double>(k + 1);
        if (k + 1 == na || l <= a[k + 1]) {
          level = l;
          break;
        }
      }
      lb = std::max(lb, level);
      // At most concurrent_ devices run at once (exclusive groups): from the last start t0 on, the
      // remaining work plus what processed tasks still occupy fits in concurrent_ * (makespan - t0).
      if (concurrent_ < static_cast<int>(na)) {
        double busy = work;
        for (size_t d = 0; d < m; ++d) busy += std::max(0.0, s.sim.devFree[d] - s.lastStart);
        lb = std::max(lb, s.lastStart + busy / concurrent_);
      }
    }
    return lb;
  }

  // ---- Search -----------------------------------------------------------------------------------

  /// Root levels: devices of the tasks that read model inputs, then the input transfers in task order.
  void preassign(Node& s, size_t k) {
    if (checkStop()) return;
    if (k == inputTasks_.size()) {
      rules_.sendInputs(s.sim, s.dev, NoTransferSink{});  // replaces the provisional input times
      pool_.resize(static_cast<size_t>(n_) + 2);  // never resized during the search: references stay valid
      kids_.resize(static_cast<size_t>(n_) + 2);
      partial_.resize(static_cast<size_t>(n_) + 2);
      pending_.resize(static_cast<size_t>(n_) + 2);
      pool_[0] = s;
      dfs(0);
      return;
    }
    const TaskId v = inputTasks_[k];
    std::vector<std::pair<double, DeviceId>> kids;
    for (DeviceId d : allowed_[static_cast<size_t>(v)]) {
      Node c = s;
      c.dev[static_cast<size_t>(v)] = d;
      // Until booked, the input arrives no earlier than its transfer time.
      c.sim.inputReady[static_cast<size_t>(v)] = d == t_.host ? 0.0 : t_.transferUs(t_.host, d, t_.inputBytes[static_cast<size_t>(v)]);
      const double lb = lowerBoundOf(c);
      if (!pruned(lb)) kids.push_back({lb, d});
      if (poll()) return;  // the caller records this node's bound
    }
    std::stable_sort(kids.begin(), kids.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [lb, d] : kids) {
      if (aborted_) {
        abortBound_ = std::min(abortBound_, lb);
        continue;
      }
      if (pruned(lb)) continue;
      Node c = s;
      c.dev[static_cast<size_t>(v)] = d;
      c.sim.inputReady[static_cast<size_t>(v)] = d == t_.host ? 0.0 : t_.transferUs(t_.host, d, t_.inputBytes[static_cast<size_t>(v)]);
      preassign(c, k + 1);
      if (aborted_) abortBound_ = std::min(abortBound_, lb);
    }
  }

  /// Unassigned successors of v in s.
  void unassignedSuccs(const Node& s, TaskId v, std::vector<TaskId>& out) const {
    out.clear();
    for (TaskId x : succ_[static_cast<size_t>(v)])
      if (s.dev[static_cast<size_t>(x)] < 0) out.push_back(x);
  }

  /// Fixes the devices of `succs` from the mixed-radix combination index.
  void assignCombo(Node& s, const std::vector<TaskId>& succs, int64_t combo) const {
    for (TaskId x : succs) {
      const auto& a = allowed_[static_cast<size_t>(x)];
      const auto r = static_cast<int64_t>(a.size());
      s.dev[static_cast<size_t>(x)] = a[static_cast<size_t>(combo % r)];
      combo /= r;
    }
  }

  void leaf(const Node& s) {
    ++leaves_;
    if (pruned(s.sim.makespan)) return;
    Plan p;
    p.device = s.dev;
    p.order.assign(static_cast<size_t>(m_), {});
    for (const Step& st : s.seq) p.order[static_cast<size_t>(st.dev)].push_back(st.task);
    p.algorithm = "exact";
    auto tl = simulate(t_, p, o_.sim);
    // The whole memory model (activations over time) on the leaf's timeline: only plans within
    // capacity become the incumbent.
    if (tl && (!capped_ || checkCapacity(t_, p, &*tl))) offer(p, tl->makespan);
    poll();
  }

  /// Explores pool_[depth] (the node after `depth` processing steps); children go to pool_[depth + 1].
  void dfs(size_t depth) {
    if (checkStop()) return;
    const Node& s = pool_[depth];
    if (static_cast<int>(s.seq.size()) == n_) {
      leaf(s);
      return;
    }
    std::vector<Child>& kids = kids_[depth];
    kids.clear();
    std::vector<TaskId>& succs = succs_;
    for (TaskId v = 0; v < n_; ++v) {
      if (s.sim.finish[static_cast<size_t>(v)] >= 0 || s.sim.pending[static_cast<size_t>(v)] > 0) continue;
      const DeviceId& fixed = s.dev[static_cast<size_t>(v)];
      const DeviceId* devs = fixed >= 0 ? &fixed : allowed_[static_cast<size_t>(v)].data();
      const size_t ndevs = fixed >= 0 ? 1 : allowed_[static_cast<size_t>(v)].size();
      unassignedSuccs(s, v, succs);
      int64_t combos = 1;  // stops growing above maxFlat_ (no overflow)
      for (TaskId x : succs)
        if (combos <= maxFlat_) combos *= static_cast<int64_t>(allowed_[static_cast<size_t>(x)].size());
      for (size_t i = 0; i < ndevs; ++i) {
        const DeviceId d = devs[i];
        const double st = startOf(s, v, d);
        if (st < s.lastStart || !tieOk(s, v, d, st)) continue;
        if (combos > maxFlat_) {
          // One child; its bound: v fixed on d, nothing starts before st, successors still free.
          scratch_ = s;
          scratch_.dev[static_cast<size_t>(v)] = d;
          scratch_.lastStart = st;
          const double lb = lowerBoundOf(scratch_);
          if (!pruned(lb)) kids.push_back(Child{lb, st, v, d, -1});
          if (poll()) return;  // the parent records this node's bound
          continue;
        }
        for (int64_t k = 0; k < combos; ++k) {
          scratch_ = s;
          scratch_.dev[static_cast<size_t>(v)] = d;
          assignCombo(scratch_, succs, k);
          process(scratch_, v, d, st);
          const double lb = lowerBoundOf(scratch_);
          if (!pruned(lb)) kids.push_back(Child{lb, st, v, d, k});
          if (poll()) return;
        }
      }
    }
    std::stable_sort(kids.begin(), kids.end(), [](const Child& a, const Child& b) {
      if (a.lb != b.lb) return a.lb < b.lb;
      return a.start < b.start;
    });
    for (size_t i = 0; i < kids.size(); ++i) {
      const Child k = kids[i];
      if (aborted_) {
        abortBound_ = std::min(abortBound_, k.lb);
        continue;
      }
      if (pruned(k.lb)) continue;
      if (k.combo < 0) {
        expandSuccs(depth, k);
      } else {
        const Node& cur = pool_[depth];
        Node& c = pool_[depth + 1];
        c = cur;
        unassignedSuccs(cur, k.v, succs_);
        c.dev[static_cast<size_t>(k.v)] = k.d;
        assignCombo(c, succs_, k.combo);
        process(c, k.v, k.d, k.start);
        dfs(depth + 1);
      }
      if (aborted_) abortBound_ = std::min(abortBound_, k.lb);
    }
  }

  /// The child k of pool_[depth] whose successors have too many device combinations to list: their
  /// devices are fixed one successor at a time in partial_[depth] (which differs from pool_[depth]
  /// only in devices and the last start, so a level changes one entry and puts it back, no copies),
  /// children best bound first; once all are fixed, v is processed into pool_[depth + 1].
  void expandSuccs(size_t depth, const Child& k) {
    Node& p = partial_[depth];
    p = pool_[depth];
    p.dev[static_cast<size_t>(k.v)] = k.d;
    p.lastStart = k.start;
    std::vector<TaskId>& list = pending_[depth];
    unassignedSuccs(pool_[depth], k.v, list);
    assignSucc(depth, k, 0);
  }

  void assignSucc(size_t depth, const Child& k, size_t j) {
    Node& p = partial_[depth];
    const std::vector<TaskId>& list = pending_[depth];
    if (j == list.size()) {
      Node& c = pool_[depth + 1];
      c = p;  // process() sets the last start again
      process(c, k.v, k.d, k.start);
      const double lb = lowerBoundOf(c);
      if (pruned(lb)) return;
      dfs(depth + 1);
      if (aborted_) abortBound_ = std::min(abortBound_, lb);
      return;
    }
    const TaskId x = list[j];
    auto& slot = p.dev[static_cast<size_t>(x)];
    std::vector<std::pair<double, DeviceId>> opts;
    for (DeviceId d : allowed_[static_cast<size_t>(x)]) {
      slot = d;
      const double lb = lowerBoundOf(p);
      if (!pruned(lb)) opts.push_back({lb, d});
      if (poll()) break;
    }
    slot = -1;
    if (aborted_) return;  // the caller records this level's bound
    std::stable_sort(opts.begin(), opts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [lb, d] : opts) {
      if (aborted_) {
        abortBound_ = std::min(abortBound_, lb);
        continue;
      }
      if (pruned(lb)) continue;
      slot = d;
      assignSucc(depth, k, j + 1);
      slot = -1;
      if (aborted_) abortBound_ = std::min(abortBound_, lb);
    }
  }

  const CostTable& t_;
  WeightLoad weights_{t_};  ///< The weights of a node's fixed devices (-1: not yet), recounted per bound.
  const Constraints& c_;
  const SchedOptions& o_;
  SimRules rules_;
  bool capped_ = hasCapacityLimits(t_);
  int n_, m_;
  int64_t maxNodes_;
  int64_t maxFlat_ = kMaxFlatCombos;
  std::chrono::steady_clock::time_point t0_;
  Deadline deadline_;
  uint64_t polls_ = 0;
  std::vector<std::vector<DeviceId>> allowed_;
  std::vector<TaskId> topo_;
  std::vector<char> isPred_;
  std::vector<std::vector<TaskId>> succ_;
  std::vector<double> outUs_;
  std::vector<DeviceId> usable_;
  std::vector<std::pair<DeviceId, DeviceId>> exclusivePairs_;
  int concurrent_ = 1;
  std::vector<TaskId> inputTasks_;
  std::vector<double> est_, eft_, tail_;
  std::vector<Node> pool_;                ///< pool_[k]: the node at depth k of the current path.
  std::vector<std::vector<Child>> kids_;  ///< kids_[k]: the children of pool_[k].
  std::vector<Node> partial_;             ///< partial_[k]: pool_[k] while its child's successors get devices.
  std::vector<std::vector<TaskId>> pending_;  ///< pending_[k]: those successors.
  Node scratch_;
  std::vector<TaskId> succs_;
  std::vector<double> load_, minEst_, availSorted_;
  double incumbent_ = kInf;
  Plan best_;
  bool haveBest_ = false;
  double rootBound_ = 0;
  double abortBound_ = kInf;
  bool aborted_ = false, timedOut_ = false, nodeLimited_ = false, cancelled_ = false;
  int64_t nodes_ = 0, leaves_ = 0;
};


}  // namespace

BnbResult branchAndBound(const CostTable& t, const Constraints& c, const SchedOptions& o, Deadline deadline, int64_t maxNodes,
                         const Plan* warm, double warmMakespan) {
  BranchAndBound bb(t, c, o, deadline, maxNodes);
  if (warm) bb.offer(*warm, warmMakespan);
  bb.solve();
  BnbResult r;
  r.complete = bb.complete();
  r.timedOut = bb.timedOut();
  r.nodeLimited = bb.nodeLimited();
  r.cancelled = bb.cancelled();
  r.found = bb.haveBest();
  if (r.found) r.plan = bb.best();
  r.makespan = bb.incumbent();
  r.bound = bb.bound();
  r.nodes = bb.nodes();
  r.leaves = bb.leaves();
  return r;
}

}  // namespace partex::search_detail
