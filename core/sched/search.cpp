// Lean simulator and iterated local search for the search-based schedulers (see search.h).
#include "sched/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>

#include "sched/listsched.h"

namespace partex::search_detail {

// ---------------------------------------------------------------------------------------------------
// FastSim: simulate() without the timeline, step for step the same decisions and arithmetic.

FastSim::FastSim(const CostTable& t, const SimOptions& o) : t_(t), o_(o), n_(t.numTasks()), m_(t.numDevices()) {
  indeg_.assign(static_cast<size_t>(n_), 0);
  for (const auto& e : t.edges) ++indeg_[static_cast<size_t>(e.dst)];
  devBusy_.resize(static_cast<size_t>(m_));
  links_.resize(static_cast<size_t>(std::max(0, t.numLinkResources)));
  perDest_.resize(static_cast<size_t>(m_));
}

double FastSim::run(const Plan& plan) {
  const CostTable& t = t_;
  const auto n = static_cast<size_t>(n_), m = static_cast<size_t>(m_);
  arrival_.assign(n * m, -1.0);
  finish_.assign(n, -1.0);
  start_.assign(n, 0.0);
  pos_.assign(m, 0);
  devFree_.assign(m, 0.0);
  for (auto& b : devBusy_) b.iv.clear();
  for (auto& l : links_) l.iv.clear();
  pending_ = indeg_;
  inputReady_.assign(n, 0.0);
  edgeArrival_.assign(t.edges.size(), -1.0);
  headValid_.assign(m, 0);
  headReady_.resize(m);
  headCause_.resize(m);
  headCauseTask_.resize(m);
  cause_.assign(n, StartCause::Time0);
  causeTask_.assign(n, -1);
  const bool anyExclusive = !t.exclusiveWith.empty();

  auto book = [&](DeviceId a, DeviceId b, double ready, double dur) -> double {
    const int32_t link = t.linkResource.empty() ? -1 : t.linkResource[static_cast<size_t>(a) * m + static_cast<size_t>(b)];
    if (link < 0 || o_.unlimitedLinks) return ready;
    auto& L = links_[static_cast<size_t>(link)];
    const double s = L.firstFit(ready, dur);
    L.insert(s, s + dur);
    return s;
  };

  for (TaskId v = 0; v < n_; ++v) {
    const DeviceId d = plan.device[static_cast<size_t>(v)];
    const int64_t bytes = t.inputBytes.empty() ? 0 : t.inputBytes[static_cast<size_t>(v)];
    if (bytes <= 0 || d == t.host) continue;
    const double dur = t.transferUs(t.host, d, bytes);
    const double s = book(t.host, d, 0.0, dur);
    inputReady_[static_cast<size_t>(v)] = s + dur;
  }

  double makespan = 0;
  lastTask_ = -1;
  sumFinish_ = 0;
  for (int remaining = n_; remaining > 0; --remaining) {
    DeviceId bestDev = -1;
    double bestStart = kInf;
    StartCause bestCause = StartCause::Time0;
    TaskId bestCauseTask = -1;
    for (size_t d = 0; d < m; ++d) {
      const auto& ord = plan.order[d];
      if (pos_[d] >= ord.size()) continue;
      const TaskId v = ord[pos_[d]];
      if (pending_[static_cast<size_t>(v)] > 0) continue;
      // Once its inputs are all there, a head's earliest start (before exclusive devices) is fixed
      // until the device moves on: cache it.
      if (!headValid_[d]) {
        double r = devFree_[d];
        StartCause c = pos_[d] > 0 ? StartCause::DevicePrev : StartCause::Time0;
        TaskId ct = pos_[d] > 0 ? ord[pos_[d] - 1] : -1;
        if (inputReady_[static_cast<size_t>(v)] > r) {
          r = inputReady_[static_cast<size_t>(v)];
          c = StartCause::Input;
          ct = -1;
        }
        for (int32_t ei : t.inEdges[static_cast<size_t>(v)]) {
          const TaskId u = t.edges[static_cast<size_t>(ei)].src;
          const double arr = static_cast<size_t>(plan.device[static_cast<size_t>(u)]) == d ? finish_[static_cast<size_t>(u)]
                             : t.edges[static_cast<size_t>(ei)].fixedUs >= 0      ? edgeArrival_[static_cast<size_t>(ei)]
                                                                                   : arrival_[static_cast<size_t>(u) * m + d];
          if (arr > r) {
            r = arr;
            c = StartCause::Data;
            ct = u;
          }
        }
        headValid_[d] = 1;
        headReady_[d] = r;
        headCause_[d] = c;
        headCauseTask_[d] = ct;
      }
      double ready = headReady_[d];
      StartCause cause = headCause_[d];
      TaskId causeTask = headCauseTask_[d];
      if (anyExclusive) {
        const double dur = t.w(v, static_cast<DeviceId>(d));
        bool moved = true;
        while (moved) {
          moved = false;
          for (DeviceId p : t.exclusiveWith[d]) {
            const double r2 = devBusy_[static_cast<size_t>(p)].firstFit(ready, dur);
            if (r2 > ready) {
              ready = r2;
              moved = true;
              cause = StartCause::Exclusive;
              causeTask = -1;
            }
          }
        }
      }
      if (ready < bestStart) {
        bestStart = ready;
        bestDev = static_cast<DeviceId>(d);
        bestCause = cause;
        bestCauseTask = causeTask;
      }
    }
    if (bestDev < 0) return -1.0;
    const auto d = static_cast<size_t>(bestDev);
    const TaskId v = plan.order[d][pos_[d]++];
    headValid_[d] = 0;
    const double dur = t.w(v, bestDev);
    const double end = bestStart + dur;
    start_[static_cast<size_t>(v)] = bestStart;
    finish_[static_cast<size_t>(v)] = end;
    cause_[static_cast<size_t>(v)] = bestCause;
    causeTask_[static_cast<size_t>(v)] = bestCauseTask;
    sumFinish_ += end;
    devFree_[d] = end;
    if (anyExclusive && !t.exclusiveWith[d].empty()) devBusy_[d].insert(bestStart, end);
    if (end > makespan || lastTask_ < 0) {
      makespan = std::max(makespan, end);
      lastTask_ = v;
    }

    for (auto& pd : perDest_) pd = {-1.0, 0};
    for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) {
      const Edge& e = t.edges[static_cast<size_t>(ei)];
      --pending_[static_cast<size_t>(e.dst)];
      const DeviceId b = plan.device[static_cast<size_t>(e.dst)];
      if (b == bestDev) continue;
      if (e.fixedUs >= 0) {  // task-graph edges are separate messages
        const double c = t.comm(ei, bestDev, b);
        edgeArrival_[static_cast<size_t>(ei)] = book(bestDev, b, end, c) + c;
        continue;
      }
      auto& pd = perDest_[static_cast<size_t>(b)];
      const double c = t.comm(ei, bestDev, b);
      pd.first = std::max(pd.first, c);
      pd.second = std::max(pd.second, e.bytes);
    }
    for (size_t b = 0; b < m; ++b) {
      const auto& pd = perDest_[b];
      if (pd.first < 0) continue;
      const double s = book(bestDev, static_cast<DeviceId>(b), end, pd.first);
      arrival_[static_cast<size_t>(v) * m + b] = s + pd.first;
    }
    const int64_t outBytes = t.outputBytes.empty() ? 0 : t.outputBytes[static_cast<size_t>(v)];
    if (outBytes > 0 && bestDev != t.host) {
      const double c = t.transferUs(bestDev, t.host, outBytes);
      const double s = book(bestDev, t.host, end, c);
      if (s + c > makespan) {
        makespan = s + c;
        lastTask_ = v;
      }
    }
  }
  return makespan;
}

std::vector<TaskId> FastSim::criticalPath(const Plan& plan) const {
  std::vector<TaskId> path;
  TaskId v = lastTask_;
  for (int guard = 0; v >= 0 && guard <= n_; ++guard) {
    path.push_back(v);
    switch (cause_[static_cast<size_t>(v)]) {
      case StartCause::DevicePrev:
      case StartCause::Data:
        v = causeTask_[static_cast<size_t>(v)];
        break;
      case StartCause::Exclusive: {
        // The partner task whose interval pushed v: the one ending exactly at v's start.
        const double s = start_[static_cast<size_t>(v)];
        const DeviceId d = plan.device[static_cast<size_t>(v)];
        TaskId found = -1;
        for (DeviceId p : t_.exclusiveWith[static_cast<size_t>(d)])
          for (TaskId x : plan.order[static_cast<size_t>(p)])
            if (finish_[static_cast<size_t>(x)] == s) found = x;
        v = found;
        break;
      }
      default:
        v = -1;
    }
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// ---------------------------------------------------------------------------------------------------

void orderByAssignedRank(const CostTable& t, Plan& plan, const std::vector<int32_t>& topoPos) {
  const int n = t.numTasks(), m = t.numDevices();
  std::vector<TaskId> topo(static_cast<size_t>(n));
  for (TaskId v = 0; v < n; ++v) topo[static_cast<size_t>(topoPos[static_cast<size_t>(v)])] = v;
  std::vector<double> rank(static_cast<size_t>(n), 0.0);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const TaskId v = *it;
    const DeviceId a = plan.device[static_cast<size_t>(v)];
    double best = 0;
    for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) {
      const TaskId s = t.edges[static_cast<size_t>(ei)].dst;
      const double c = t.comm(ei, a, plan.device[static_cast<size_t>(s)]);
      best = std::max(best, (c < kInf ? c : 0.0) + rank[static_cast<size_t>(s)]);
    }
    const double w = t.w(v, a);
    rank[static_cast<size_t>(v)] = (w < kInf ? w : 0.0) + best;
  }
  for (auto& ord : plan.order) ord.clear();
  plan.order.resize(static_cast<size_t>(m));
  std::vector<TaskId> byRank(topo);
  std::stable_sort(byRank.begin(), byRank.end(), [&](TaskId x, TaskId y) {
    if (rank[static_cast<size_t>(x)] != rank[static_cast<size_t>(y)]) return rank[static_cast<size_t>(x)] > rank[static_cast<size_t>(y)];
    return topoPos[static_cast<size_t>(x)] < topoPos[static_cast<size_t>(y)];
  });
  for (TaskId v : byRank) plan.order[static_cast<size_t>(plan.device[static_cast<size_t>(v)])].push_back(v);
}

// ---------------------------------------------------------------------------------------------------
// Local search.

namespace {

enum class MoveKind : uint8_t { Reassign, Insert, SwapPrev, Segment, Exchange, RankOrder, ListOrder };

struct Move {
  MoveKind kind = MoveKind::Reassign;
  TaskId v = -1;
  DeviceId d = -1;
  int32_t segBegin = 0, segEnd = 0;  ///< Segment: indexes into the critical path.
  int32_t pos = 0;                   ///< Insert: index in d's order once v is removed.
  TaskId u = -1;                     ///< Exchange: the task that trades devices with v.
  double gain = 0;                   ///< Estimated gain (ordering of the candidates).
};

/// Graphs up to this size get the full insertion neighbourhood (every task, every position).
constexpr int kFullInsertTasks = 40;

class Searcher {
 public:
  Searcher(const CostTable& t, const Constraints& c, const SimOptions& sim, const LocalSearchOptions& lo)
      : t_(t), c_(c), sim_(sim), lo_(lo), fs_(t, sim), rng_(lo.seed), n_(t.numTasks()), m_(t.numDevices()) {
    allowed_.resize(static_cast<size_t>(n_));
    for (TaskId v = 0; v < n_; ++v) allowed_[static_cast<size_t>(v)] = sched_detail::allowedDevices(t, c, v);
    topo_ = t.topoOrder();
    topoPos_ = sched_detail::topoPositions(t, topo_);
  }

  LocalSearchResult run(const Plan& start) {
    LocalSearchResult res;
    cur_ = start;
    curMs_ = fs_.run(cur_);
    res.plan = start;
    res.makespan = curMs_;
    if (curMs_ < 0 || n_ == 0 || m_ == 0) return res;
    snapshot();
    best_ = cur_;
    bestMs_ = curMs_;
    // Iterated descent from the start, then simulated annealing from the best plan so far (global
    // moves), then iterated descent again from the best.
    const auto total = static_cast<double>(lo_.maxEvals);
    const double a = n_ >= 2 ? lo_.annealFraction : 0.0;
    iterated(static_cast<int64_t>((1.0 - a) * total));
    if (a > 0 && !stop()) {
      cur_ = best_;
      snapshot();
      anneal(evals_ + static_cast<int64_t>(0.8 * a * total));
      cur_ = best_;
      snapshot();
      iterated(lo_.maxEvals);
    }
    if (curMs_ >= 0 && curMs_ < bestMs_ - tol(bestMs_)) {
      best_ = cur_;
      bestMs_ = curMs_;
    }
    res.plan = best_;
    res.makespan = bestMs_;
    res.evals = evals_;
    res.improvements = improvements_;
    res.stoppedByClock = clockStop_;
    return res;
  }

 private:
  static double tol(double x) { return 1e-9 * std::max(1.0, std::fabs(x)); }

  /// Iterated local search (descent, kick from the best, descent, ...) until `end` evaluations.
  void iterated(int64_t end) {
    phaseEnd_ = std::min(end, lo_.maxEvals);
    int stuck = 0;
    while (!stop()) {
      const int64_t evalsBefore = evals_;
      if (!descend()) break;  // budget ran out inside the descent
      if (curMs_ < bestMs_ - tol(bestMs_)) {
        best_ = cur_;
        bestMs_ = curMs_;
        stuck = 0;
      } else {
        ++stuck;
      }
      if (!perturb(stuck)) break;
      if (evals_ == evalsBefore) break;  // no move applies at all (e.g. one device, a chain)
    }
    if (curMs_ >= 0 && curMs_ < bestMs_ - tol(bestMs_)) {
      best_ = cur_;
      bestMs_ = curMs_;
    }
    phaseEnd_ = lo_.maxEvals;
  }

  /// Called before every move (applicable or not): the evaluation budget, the cancel token, and the
  /// clock every 16th call (counted by calls, not evaluations, so that a run of moves that do not
  /// apply still looks at it).
  bool stop() {
    if (clockStop_) return true;
    if (evals_ >= lo_.maxEvals || evals_ >= phaseEnd_) return true;
    if (lo_.cancel && lo_.cancel->load(std::memory_order_relaxed)) return true;
    if ((++stopCalls_ & 15) == 0 && lo_.deadline.passed()) {
      clockStop_ = true;
      return true;
    }
    return false;
  }

  /// Evaluates trial_; -1 on deadlock.
  double evalTrial() {
    ++evals_;
    if (lo_.progress && (evals_ & 255) == 0) lo_.progress(static_cast<double>(evals_) / static_cast<double>(lo_.maxEvals));
    return fs_.run(trial_);
  }

  /// Records the current plan's timeline (its start times, critical path).
  void snapshot(bool rerun = true) {
    if (rerun) curMs_ = fs_.run(cur_);
    curSum_ = fs_.sumFinish();
    curStart_ = fs_.start();
    curFinish_ = fs_.finish();
    crit_ = fs_.criticalPath(cur_);
    curPos_.resize(static_cast<size_t>(n_));
    for (const auto& ord : cur_.order)
      for (size_t i = 0; i < ord.size(); ++i) curPos_[static_cast<size_t>(ord[i])] = static_cast<int>(i);
  }

  bool better(double ms, double sum) const {
    if (ms < 0) return false;
    if (ms < curMs_ - tol(curMs_)) return true;
    return ms <= curMs_ + tol(curMs_) && sum < curSum_ - tol(curSum_);
  }

  bool before(TaskId a, TaskId b) const {
    const double sa = curStart_[static_cast<size_t>(a)], sb = curStart_[static_cast<size_t>(b)];
    if (sa != sb) return sa < sb;
    return topoPos_[static_cast<size_t>(a)] < topoPos_[static_cast<size_t>(b)];
  }

  /// Moves v to device d in trial_, placed by its current start time.
  void reassign(TaskId v, DeviceId d) {
    const DeviceId old = trial_.device[static_cast<size_t>(v)];
    if (old == d) return;
    auto& from = trial_.order[static_cast<size_t>(old)];
    from.erase(std::find(from.begin(), from.end(), v));
    trial_.device[static_cast<size_t>(v)] = d;
    auto& to = trial_.order[static_cast<size_t>(d)];
    auto it = std::partition_point(to.begin(), to.end(), [&](TaskId x) { return before(x, v); });
    to.insert(it, v);
  }

  bool isAllowed(TaskId v, DeviceId d) const {
    const auto& a = allowed_[static_cast<size_t>(v)];
    return std::find(a.begin(), a.end(), d) != a.end();
  }

  bool adjacentByEdge(TaskId a, TaskId b) const {
    for (int32_t ei : t_.outEdges[static_cast<size_t>(a)])
      if (t_.edges[static_cast<size_t>(ei)].dst == b) return true;
    for (int32_t ei : t_.inEdges[static_cast<size_t>(a)])
      if (t_.edges[static_cast<size_t>(ei)].src == b) return true;
    return false;
  }

  /// Estimated finish of v on d against the current timeline (inputs from the predecessors' finishes).
  double estimateFinish(TaskId v, DeviceId d) const {
    double ready = 0;
    for (int32_t ei : t_.inEdges[static_cast<size_t>(v)]) {
      const TaskId u = t_.edges[static_cast<size_t>(ei)].src;
      const DeviceId du = cur_.device[static_cast<size_t>(u)];
      ready = std::max(ready, curFinish_[static_cast<size_t>(u)] + (du == d ? 0.0 : t_.comm(ei, du, d)));
    }
    return ready + t_.w(v, d);
  }

  /// Insertions of v into d's order at every position consistent with its neighbours there (all of
  /// them when `window` < 0, else those within `window` of the start-time position), except the
  /// start-time position itself (the Reassign move) and v's current place.
  struct InsertRange {
    int lo = 0, hi = 0, self = -1, byStart = 0;  ///< Positions in d's order without v.
  };
  InsertRange insertRange(TaskId v, DeviceId d) const {
    InsertRange r;
    const auto& ord = cur_.order[static_cast<size_t>(d)];
    const bool here = cur_.device[static_cast<size_t>(v)] == d;
    const int self = here ? curPos_[static_cast<size_t>(v)] : -1;
    auto without = [&](int p) { return here && p > self ? p - 1 : p; };  // position once v is removed
    r.self = self;
    r.hi = static_cast<int>(ord.size()) - (here ? 1 : 0);
    for (int32_t ei : t_.inEdges[static_cast<size_t>(v)]) {
      const TaskId u = t_.edges[static_cast<size_t>(ei)].src;
      if (cur_.device[static_cast<size_t>(u)] == d) r.lo = std::max(r.lo, without(curPos_[static_cast<size_t>(u)]) + 1);
    }
    for (int32_t ei : t_.outEdges[static_cast<size_t>(v)]) {
      const TaskId x = t_.edges[static_cast<size_t>(ei)].dst;
      if (cur_.device[static_cast<size_t>(x)] == d) r.hi = std::min(r.hi, without(curPos_[static_cast<size_t>(x)]));
    }
    const auto at = std::partition_point(ord.begin(), ord.end(), [&](TaskId x) { return x == v || before(x, v); }) - ord.begin();
    r.byStart = without(static_cast<int>(at));
    if (here && static_cast<int>(at) > self) r.byStart = static_cast<int>(at) - 1;
    if (r.hi < r.lo) r.hi = r.lo;
    return r;
  }

  void addInserts(std::vector<Move>& moves, TaskId v, int window) {
    const DeviceId own = cur_.device[static_cast<size_t>(v)];
    for (DeviceId d : allowed_[static_cast<size_t>(v)]) {
      const auto [lo, hi, self, byStart] = insertRange(v, d);
      int from = lo, to = hi;
      if (window >= 0) {
        from = std::max(lo, byStart - window);
        to = std::min(hi, byStart + window);
      }
      for (int p = from; p <= to; ++p) {
        if (d == own ? p == self : p == byStart) continue;
        Move mv;
        mv.kind = MoveKind::Insert;
        mv.v = v;
        mv.d = d;
        mv.pos = p;
        moves.push_back(mv);
      }
    }
  }

  bool isPred(TaskId a, TaskId b) const {
    for (int32_t ei : t_.outEdges[static_cast<size_t>(a)])
      if (t_.edges[static_cast<size_t>(ei)].dst == b) return true;
    return false;
  }

  std::vector<Move> neighbourhood() {
    std::vector<Move> moves;
    std::vector<char> onCrit(static_cast<size_t>(n_), 0);
    for (TaskId v : crit_) onCrit[static_cast<size_t>(v)] = 1;
    auto addReassigns = [&](TaskId v, double bonus) {
      const double fin = curFinish_[static_cast<size_t>(v)];
      for (DeviceId d : allowed_[static_cast<size_t>(v)]) {
        if (d == cur_.device[static_cast<size_t>(v)]) continue;
        Move mv;
        mv.kind = MoveKind::Reassign;
        mv.v = v;
        mv.d = d;
        mv.gain = bonus + (fin - estimateFinish(v, d));
        moves.push_back(mv);
      }
    };
    // Critical tasks first, ordered by the estimated gain of their reassignment.
    for (TaskId v : crit_) addReassigns(v, 0.0);
    std::stable_sort(moves.begin(), moves.end(), [](const Move& a, const Move& b) { return a.gain > b.gain; });
    // Order swaps on the critical path.
    for (TaskId v : crit_) {
      Move mv;
      mv.kind = MoveKind::SwapPrev;
      mv.v = v;
      moves.push_back(mv);
      const auto& ord = cur_.order[static_cast<size_t>(cur_.device[static_cast<size_t>(v)])];
      auto it = std::find(ord.begin(), ord.end(), v);
      if (it != ord.end() && it + 1 != ord.end()) {
        mv.v = *(it + 1);  // swap v with its successor on the device
        moves.push_back(mv);
      }
    }
    auto addSegment = [&](size_t i, size_t j) {  // crit_[i, j) to every device that can run it all
      for (DeviceId d = 0; d < m_; ++d) {
        bool ok = true, allThere = true;
        for (size_t k = i; k < j && ok; ++k) {
          ok = isAllowed(crit_[k], d);
          allThere = allThere && cur_.device[static_cast<size_t>(crit_[k])] == d;
        }
        if (!ok || allThere) continue;
        Move mv;
        mv.kind = MoveKind::Segment;
        mv.d = d;
        mv.segBegin = static_cast<int32_t>(i);
        mv.segEnd = static_cast<int32_t>(j);
        moves.push_back(mv);
      }
    };
    if (n_ <= kFullInsertTasks) {
      // Every stretch of 2 to 10 consecutive critical tasks, moved together.
      for (size_t i = 0; i < crit_.size(); ++i)
        for (size_t j = i + 2; j <= std::min(crit_.size(), i + 10); ++j) addSegment(i, j);
    } else {
      // Whole critical-path runs that share a device, and the pairs that cross between runs.
      for (size_t i = 0; i < crit_.size();) {
        size_t j = i + 1;
        const DeviceId a = cur_.device[static_cast<size_t>(crit_[i])];
        while (j < crit_.size() && cur_.device[static_cast<size_t>(crit_[j])] == a) ++j;
        if (j - i >= 2) addSegment(i, j);
        if (j < crit_.size()) addSegment(j - 1, j + 1);
        i = j;
      }
    }
    // Critical tasks trade devices with a task elsewhere (all of them on small graphs, the neighbours
    // by start time on large ones).
    for (TaskId v : crit_) {
      const DeviceId a = cur_.device[static_cast<size_t>(v)];
      for (DeviceId b = 0; b < m_; ++b) {
        if (b == a || !isAllowed(v, b)) continue;
        const auto& ord = cur_.order[static_cast<size_t>(b)];
        size_t from = 0, to = ord.size();
        if (n_ > kFullInsertTasks) {
          const auto at = static_cast<size_t>(std::partition_point(ord.begin(), ord.end(), [&](TaskId x) { return before(x, v); }) - ord.begin());
          from = at >= 3 ? at - 3 : 0;
          to = std::min(ord.size(), at + 3);
        }
        for (size_t i = from; i < to; ++i) {
          const TaskId u = ord[i];
          if (!isAllowed(u, a)) continue;
          Move mv;
          mv.kind = MoveKind::Exchange;
          mv.v = v;
          mv.u = u;
          moves.push_back(mv);
        }
      }
    }
    Move ro;
    ro.kind = MoveKind::RankOrder;
    moves.push_back(ro);
    ro.kind = MoveKind::ListOrder;
    if (n_ <= 20000) moves.push_back(ro);
    // Every other position of the critical tasks (all positions on small graphs).
    const int window = n_ <= kFullInsertTasks ? -1 : 3;
    for (TaskId v : crit_) addInserts(moves, v, window);
    // Off the critical path: every other reassignment on small graphs, a seeded sample on large ones.
    std::vector<TaskId> others;
    for (TaskId v = 0; v < n_; ++v)
      if (!onCrit[static_cast<size_t>(v)]) others.push_back(v);
    std::shuffle(others.begin(), others.end(), rng_);
    const size_t limit = n_ <= 200 ? others.size() : std::min<size_t>(others.size(), 64);
    const size_t firstOther = moves.size();
    for (size_t i = 0; i < limit; ++i) addReassigns(others[i], 0.0);
    std::stable_sort(moves.begin() + static_cast<std::ptrdiff_t>(firstOther), moves.end(),
                     [](const Move& a, const Move& b) { return a.gain > b.gain; });
    if (n_ <= kFullInsertTasks) {
      for (size_t i = 0; i < limit; ++i) addInserts(moves, others[i], -1);
    } else if (n_ <= 200) {
      for (size_t i = 0; i < limit; ++i) {
        Move mv;
        mv.kind = MoveKind::SwapPrev;
        mv.v = others[i];
        moves.push_back(mv);
      }
    }
    return moves;
  }

  /// Builds trial_ from cur_ by the move; false when the move does not apply.
  bool apply(const Move& mv) {
    trial_.device = cur_.device;
    trial_.order = cur_.order;
    switch (mv.kind) {
      case MoveKind::Reassign:
        reassign(mv.v, mv.d);
        return true;
      case MoveKind::Insert: {
        const DeviceId old = trial_.device[static_cast<size_t>(mv.v)];
        auto& from = trial_.order[static_cast<size_t>(old)];
        from.erase(std::find(from.begin(), from.end(), mv.v));
        trial_.device[static_cast<size_t>(mv.v)] = mv.d;
        auto& to = trial_.order[static_cast<size_t>(mv.d)];
        to.insert(to.begin() + std::min<std::ptrdiff_t>(mv.pos, static_cast<std::ptrdiff_t>(to.size())), mv.v);
        return true;
      }
      case MoveKind::SwapPrev: {
        auto& ord = trial_.order[static_cast<size_t>(trial_.device[static_cast<size_t>(mv.v)])];
        auto it = std::find(ord.begin(), ord.end(), mv.v);
        if (it == ord.begin() || it == ord.end()) return false;
        if (adjacentByEdge(*it, *(it - 1))) return false;
        std::iter_swap(it, it - 1);
        return true;
      }
      case MoveKind::Segment:
        for (int32_t k = mv.segBegin; k < mv.segEnd; ++k) reassign(crit_[static_cast<size_t>(k)], mv.d);
        return true;
      case MoveKind::Exchange: {
        const DeviceId a = trial_.device[static_cast<size_t>(mv.v)], b = trial_.device[static_cast<size_t>(mv.u)];
        reassign(mv.v, b);
        reassign(mv.u, a);
        return true;
      }
      case MoveKind::RankOrder:
        orderByAssignedRank(t_, trial_, topoPos_);
        return trial_.order != cur_.order;
      case MoveKind::ListOrder: {
        listOrder(trial_);
        return trial_.order != cur_.order;
      }
    }
    return false;
  }

  /// HEFT-like list scheduling (insertion into idle gaps) with the current assignment.
  void listOrder(Plan& p) {
    // Priority: the assignment-aware upward rank (as in orderByAssignedRank).
    std::vector<double> rank(static_cast<size_t>(n_), 0.0);
    for (auto it = topo_.rbegin(); it != topo_.rend(); ++it) {
      const TaskId v = *it;
      const DeviceId a = p.device[static_cast<size_t>(v)];
      double best = 0;
      for (int32_t ei : t_.outEdges[static_cast<size_t>(v)]) {
        const TaskId s = t_.edges[static_cast<size_t>(ei)].dst;
        const double c = t_.comm(ei, a, p.device[static_cast<size_t>(s)]);
        best = std::max(best, (c < kInf ? c : 0.0) + rank[static_cast<size_t>(s)]);
      }
      rank[static_cast<size_t>(v)] = t_.w(v, a) + best;
    }
    SchedOptions so;
    so.sim = sim_;
    const std::vector<DeviceId> dev = p.device;
    auto r = sched_detail::listSchedule(t_, c_, so, "best", rank, [&](TaskId v, sched_detail::ListTimeline&) {
      return dev[static_cast<size_t>(v)];
    });
    if (r) p.order = std::move(r->order);
  }

  /// Simulated annealing until `evalsEnd` evaluations: random insertions (critical tasks half of the
  /// time), adjacent swaps and rank re-orders; geometric cooling from 2% to 0.02% of the makespan.
  void anneal(int64_t evalsEnd) {
    const int64_t begin = evals_;
    const double span = static_cast<double>(std::max<int64_t>(1, evalsEnd - begin));
    const double t0 = 0.02 * std::max(curMs_, 1e-9), t1 = 0.0002 * std::max(curMs_, 1e-9);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const double perTask = 1e-3 / std::max(1, n_);
    const int64_t maxAttempts = 4 * (evalsEnd - begin) + 100;  // moves that do not apply count too
    for (int64_t attempt = 0; attempt < maxAttempts && evals_ < evalsEnd && !stop(); ++attempt) {
      const double temp = t0 * std::pow(t1 / t0, static_cast<double>(evals_ - begin) / span);
      Move mv;
      const double r = unit(rng_);
      const TaskId v = (!crit_.empty() && (rng_() & 1u)) ? crit_[rng_() % crit_.size()] : static_cast<TaskId>(rng_() % static_cast<uint64_t>(n_));
      const auto& al = allowed_[static_cast<size_t>(v)];
      if (r < 0.45) {
        mv.kind = MoveKind::Insert;
        mv.v = v;
        mv.d = al[rng_() % al.size()];
        const InsertRange ir = insertRange(v, mv.d);
        mv.pos = ir.lo + static_cast<int>(rng_() % static_cast<uint64_t>(ir.hi - ir.lo + 1));
        if (mv.d == cur_.device[static_cast<size_t>(v)] && mv.pos == ir.self) continue;
      } else if (r < 0.8) {
        if (al.size() < 2) continue;
        mv.kind = MoveKind::Reassign;
        mv.v = v;
        mv.d = al[rng_() % al.size()];
        if (mv.d == cur_.device[static_cast<size_t>(v)]) continue;
      } else if (r < 0.99) {
        mv.kind = MoveKind::SwapPrev;
        mv.v = v;
      } else {
        mv.kind = MoveKind::RankOrder;
      }
      if (!apply(mv)) continue;
      const double ms = evalTrial();
      if (ms < 0) continue;
      const double delta = (ms - curMs_) + perTask * (fs_.sumFinish() - curSum_);
      if (delta <= 0 || unit(rng_) < std::exp(-delta / temp)) {
        std::swap(cur_.device, trial_.device);
        std::swap(cur_.order, trial_.order);
        curMs_ = ms;
        snapshot(false);
        if (curMs_ < bestMs_ - tol(bestMs_)) {
          best_ = cur_;
          bestMs_ = curMs_;
          ++improvements_;
        }
      }
    }
  }

  /// Steepest-first descent by first improvement; false when the budget ran out.
  bool descend() {
    while (true) {
      const std::vector<Move> moves = neighbourhood();
      bool improved = false;
      for (const Move& mv : moves) {
        if (stop()) return false;
        if (!apply(mv)) continue;
        const double ms = evalTrial();
        if (better(ms, fs_.sumFinish())) {
          std::swap(cur_.device, trial_.device);
          std::swap(cur_.order, trial_.order);
          curMs_ = ms;
          snapshot(false);
          ++improvements_;
          if (curMs_ < bestMs_ - tol(bestMs_)) {
            best_ = cur_;
            bestMs_ = curMs_;
          }
          improved = true;
          break;
        }
      }
      if (!improved) return true;
    }
  }

  /// Random kick from the best plan; false when the budget ran out.
  bool perturb(int stuck) {
    for (int attempt = 0; attempt < 8; ++attempt) {
      if (stop()) return false;
      trial_.device = best_.device;
      trial_.order = best_.order;
      cur_.device = best_.device;
      cur_.order = best_.order;
      snapshot();
      const int maxK = std::max(1, std::min(n_, 2 + stuck % 4 + n_ / 50));
      const int k = 1 + static_cast<int>(rng_() % static_cast<uint64_t>(maxK));
      bool any = false;
      for (int i = 0; i < k; ++i) {
        const bool critical = !crit_.empty() && (rng_() & 1u);
        const TaskId v = critical ? crit_[rng_() % crit_.size()] : static_cast<TaskId>(rng_() % static_cast<uint64_t>(n_));
        const auto& al = allowed_[static_cast<size_t>(v)];
        if (al.size() >= 2 && (rng_() % 4) != 0) {
          const DeviceId d = al[rng_() % al.size()];
          if (d != trial_.device[static_cast<size_t>(v)]) {
            reassign(v, d);
            any = true;
          }
        } else {
          auto& ord = trial_.order[static_cast<size_t>(trial_.device[static_cast<size_t>(v)])];
          auto it = std::find(ord.begin(), ord.end(), v);
          if (it != ord.begin() && it != ord.end() && !adjacentByEdge(*it, *(it - 1))) {
            std::iter_swap(it, it - 1);
            any = true;
          }
        }
      }
      if (!any) continue;
      if (rng_() % 3 == 0) orderByAssignedRank(t_, trial_, topoPos_);
      const double ms = evalTrial();
      if (ms < 0) continue;
      std::swap(cur_.device, trial_.device);
      std::swap(cur_.order, trial_.order);
      snapshot();
      return true;
    }
    return !stop();
  }

  const CostTable& t_;
  const Constraints& c_;
  SimOptions sim_;
  LocalSearchOptions lo_;
  FastSim fs_;
  std::mt19937_64 rng_;
  int n_, m_;
  std::vector<std::vector<DeviceId>> allowed_;
  std::vector<TaskId> topo_;
  std::vector<int32_t> topoPos_;
  Plan cur_, trial_, best_;
  double curMs_ = 0, curSum_ = 0, bestMs_ = 0;
  std::vector<double> curStart_, curFinish_;
  std::vector<int> curPos_;  ///< Index of every task in its device's order (cur_).
  std::vector<TaskId> crit_;
  int64_t evals_ = 0, improvements_ = 0;
  int64_t phaseEnd_ = INT64_MAX;
  uint64_t stopCalls_ = 0;
  bool clockStop_ = false;
};

}  // namespace

LocalSearchResult localSearch(const CostTable& t, const Constraints& c, const SimOptions& sim, const Plan& start,
                              const LocalSearchOptions& lo) {
  Searcher s(t, c, sim, lo);
  LocalSearchResult r = s.run(start);
  r.plan.algorithm = start.algorithm;
  r.plan.optionsJson = start.optionsJson;
  return r;
}

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

/// The simulator's state after a prefix of the processing sequence.
struct Node {
  std::vector<DeviceId> dev;       ///< -1 until fixed.
  std::vector<double> finish;      ///< -1 until processed.
  std::vector<double> arrival;     ///< [task * m + device], -1 until sent.
  std::vector<double> edgeArrival; ///< Per edge with a fixed cost (a separate message), -1 until sent.
  std::vector<double> devFree;
  std::vector<BusyIntervals> devBusy;
  std::vector<BusyIntervals> links;
  std::vector<double> inputReady;
  std::vector<int> pending;        ///< Unprocessed predecessors (per edge).
  std::vector<Step> seq;
  double makespan = 0;
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
      : t_(t), c_(c), o_(o), n_(t.numTasks()), m_(t.numDevices()), maxNodes_(maxNodes) {
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
    commTab_.resize(t.edges.size() * static_cast<size_t>(m_) * static_cast<size_t>(m_));
    for (size_t e = 0; e < t.edges.size(); ++e)
      for (DeviceId a = 0; a < m_; ++a)
        for (DeviceId b = 0; b < m_; ++b) commTab_[(e * static_cast<size_t>(m_) + static_cast<size_t>(a)) * static_cast<size_t>(m_) + static_cast<size_t>(b)] = t.comm(static_cast<int32_t>(e), a, b);
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
    root.dev.assign(static_cast<size_t>(n_), -1);
    root.finish.assign(static_cast<size_t>(n_), -1.0);
    root.arrival.assign(static_cast<size_t>(n_) * static_cast<size_t>(m_), -1.0);
    root.edgeArrival.assign(t_.edges.size(), -1.0);
    root.devFree.assign(static_cast<size_t>(m_), 0.0);
    root.devBusy.resize(static_cast<size_t>(m_));
    root.links.resize(static_cast<size_t>(std::max(0, t_.numLinkResources)));
    root.inputReady.assign(static_cast<size_t>(n_), 0.0);
    root.pending.assign(static_cast<size_t>(n_), 0);
    for (const auto& e : t_.edges) ++root.pending[static_cast<size_t>(e.dst)];
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
  /// t.comm(e, a, b), precomputed.
  double comm(int32_t e, DeviceId a, DeviceId b) const {
    return commTab_[(static_cast<size_t>(e) * static_cast<size_t>(m_) + static_cast<size_t>(a)) * static_cast<size_t>(m_) + static_cast<size_t>(b)];
  }
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

  // ---- The simulator's arithmetic -------------------------------------------------------------------

  double book(Node& s, DeviceId a, DeviceId b, double ready, double dur) const {
    const int32_t link = t_.linkResource.empty() ? -1 : t_.linkResource[idx(a, b)];
    if (link < 0 || o_.sim.unlimitedLinks) return ready;
    auto& L = s.links[static_cast<size_t>(link)];
    const double st = L.firstFit(ready, dur);
    L.insert(st, st + dur);
    return st;
  }

  /// Arrival on d (!= the producer's device) of the data of edge ei from processed u.
  double arrivalOf(const Node& s, int32_t ei, TaskId u, DeviceId d) const {
    return t_.edges[static_cast<size_t>(ei)].fixedUs >= 0 ? s.edgeArrival[static_cast<size_t>(ei)] : s.arrival[idx(u, d)];
  }

  double startOf(const Node& s, TaskId v, DeviceId d) const {
    double ready = std::max(s.devFree[static_cast<size_t>(d)], s.inputReady[static_cast<size_t>(v)]);
    for (int32_t ei : t_.inEdges[static_cast<size_t>(v)]) {
      const TaskId u = t_.edges[static_cast<size_t>(ei)].src;
      const double arr = s.dev[static_cast<size_t>(u)] == d ? s.finish[static_cast<size_t>(u)] : arrivalOf(s, ei, u, d);
      ready = std::max(ready, arr);
    }
    if (!t_.exclusiveWith.empty()) {
      const double dur = t_.w(v, d);
      bool moved = true;
      while (moved) {
        moved = false;
        for (DeviceId p : t_.exclusiveWith[static_cast<size_t>(d)]) {
          const double r2 = s.devBusy[static_cast<size_t>(p)].firstFit(ready, dur);
          if (r2 > ready) {
            ready = r2;
            moved = true;
          }
        }
      }
    }
    return ready;
  }

  /// Processes v on d at `start` (devices of its successors already fixed), as simulate() does.
  void process(Node& s, TaskId v, DeviceId d, double start) const {
    const auto m = static_cast<size_t>(m_);
    const double end = start + t_.w(v, d);
    s.dev[static_cast<size_t>(v)] = d;
    s.finish[static_cast<size_t>(v)] = end;
    s.devFree[static_cast<size_t>(d)] = end;
    if (!t_.exclusiveWith.empty() && !t_.exclusiveWith[static_cast<size_t>(d)].empty())
      s.devBusy[static_cast<size_t>(d)].insert(start, end);
    s.makespan = std::max(s.makespan, end);
    s.lastStart = start;
    s.seq.push_back(Step{v, d, start});
    double perDest[64];
    std::vector<double> perDestBig;
    double* pd = perDest;
    if (m > 64) {
      perDestBig.assign(m, -1.0);
      pd = perDestBig.data();
    } else {
      std::fill(perDest, perDest + m, -1.0);
    }
    for (int32_t ei : t_.outEdges[static_cast<size_t>(v)]) {
      const Edge& e = t_.edges[static_cast<size_t>(ei)];
      --s.pending[static_cast<size_t>(e.dst)];
      const DeviceId b = s.dev[static_cast<size_t>(e.dst)];
      if (b == d) continue;
      if (e.fixedUs >= 0) {  // a separate message, booked now (the simulator's order)
        const double c = comm(ei, d, b);
        s.edgeArrival[static_cast<size_t>(ei)] = book(s, d, b, end, c) + c;
        continue;
      }
      pd[b] = std::max(pd[b], comm(ei, d, b));
    }
    for (size_t b = 0; b < m; ++b) {
      if (pd[b] < 0) continue;
      const double st = book(s, d, static_cast<DeviceId>(b), end, pd[b]);
      s.arrival[static_cast<size_t>(v) * m + b] = st + pd[b];
    }
    const int64_t outBytes = t_.outputBytes.empty() ? 0 : t_.outputBytes[static_cast<size_t>(v)];
    if (outBytes > 0 && d != t_.host) {
      const double c = t_.transferUs(d, t_.host, outBytes);
      const double st = book(s, d, t_.host, end, c);
      s.makespan = std::max(s.makespan, st + c);
    }
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
    const auto m = static_cast<size_t>(m_);
    double lb = s.makespan;
    auto cand = [&](TaskId v) -> std::pair<const DeviceId*, size_t> {
      const DeviceId& d = s.dev[static_cast<size_t>(v)];
      if (d >= 0) return {&d, 1};
      const auto& a = allowed_[static_cast<size_t>(v)];
      return {a.data(), a.size()};
    };
    for (TaskId v : topo_) {
      if (s.finish[static_cast<size_t>(v)] >= 0) continue;
      auto [cd, cn] = cand(v);
      for (size_t i = 0; i < cn; ++i) {
        const DeviceId d = cd[i];
        double e = std::max({s.lastStart, s.devFree[static_cast<size_t>(d)], s.inputReady[static_cast<size_t>(v)]});
        for (int32_t ei : t_.inEdges[static_cast<size_t>(v)]) {
          const TaskId u = t_.edges[static_cast<size_t>(ei)].src;
          double arr;
          if (s.finish[static_cast<size_t>(u)] >= 0) {
            const DeviceId du = s.dev[static_cast<size_t>(u)];
            arr = du == d ? s.finish[static_cast<size_t>(u)] : std::max(s.finish[static_cast<size_t>(u)], arrivalOf(s, ei, u, d));
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
      if (s.finish[static_cast<size_t>(v)] >= 0) continue;
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
    for (size_t d = 0; d < m; ++d) av[d] = std::max(s.devFree[d], s.lastStart);
    for (TaskId v = 0; v < n_; ++v) {
      if (s.finish[static_cast<size_t>(v)] >= 0) continue;
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
        for (size_t d = 0; d < m; ++d) busy += std::max(0.0, s.devFree[d] - s.lastStart);
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
      for (TaskId v : inputTasks_) {
        const DeviceId d = s.dev[static_cast<size_t>(v)];
        s.inputReady[static_cast<size_t>(v)] = 0.0;
        if (d == t_.host) continue;
        const double dur = t_.transferUs(t_.host, d, t_.inputBytes[static_cast<size_t>(v)]);
        const double st = book(s, t_.host, d, 0.0, dur);
        s.inputReady[static_cast<size_t>(v)] = st + dur;
      }
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
      c.inputReady[static_cast<size_t>(v)] = d == t_.host ? 0.0 : t_.transferUs(t_.host, d, t_.inputBytes[static_cast<size_t>(v)]);
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
      c.inputReady[static_cast<size_t>(v)] = d == t_.host ? 0.0 : t_.transferUs(t_.host, d, t_.inputBytes[static_cast<size_t>(v)]);
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
    if (pruned(s.makespan)) return;
    Plan p;
    p.device = s.dev;
    p.order.assign(static_cast<size_t>(m_), {});
    for (const Step& st : s.seq) p.order[static_cast<size_t>(st.dev)].push_back(st.task);
    p.algorithm = "exact";
    auto tl = simulate(t_, p, o_.sim);
    if (tl) offer(p, tl->makespan);
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
      if (s.finish[static_cast<size_t>(v)] >= 0 || s.pending[static_cast<size_t>(v)] > 0) continue;
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
  const Constraints& c_;
  const SchedOptions& o_;
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
  std::vector<double> commTab_;
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
