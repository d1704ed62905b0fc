// Iterated local search over plans for `best` (localsearch.h), driven by the simulator's fast path
// (sim/fastsim.h).
#include "sched/localsearch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "sched/listsched.h"
#include "sim/fastsim.h"
#include "sim/memory.h"

namespace partex::search_detail {

// ---------------------------------------------------------------------------------------------------

namespace {

/// The assignment-aware upward rank of every task under `device`: w(v, device v) plus the longest
/// continuation over successors, with the exact transfer time between the assigned devices (what is
/// infinite counts 0). `topo`: a topological order.
std::vector<double> assignedRanks(const CostTable& t, const std::vector<DeviceId>& device,
                                  const std::vector<TaskId>& topo) {
  std::vector<double> rank(static_cast<size_t>(t.numTasks()), 0.0);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const TaskId v = *it;
    const DeviceId a = device[static_cast<size_t>(v)];
    double best = 0;
    for (int32_t ei : t.outEdges[static_cast<size_t>(v)]) {
      const TaskId s = t.edges[static_cast<size_t>(ei)].dst;
      const double c = t.comm(ei, a, device[static_cast<size_t>(s)]);
      best = std::max(best, (c < kInf ? c : 0.0) + rank[static_cast<size_t>(s)]);
    }
    const double w = t.w(v, a);
    rank[static_cast<size_t>(v)] = (w < kInf ? w : 0.0) + best;
  }
  return rank;
}

}  // namespace

void orderByAssignedRank(const CostTable& t, Plan& plan, const std::vector<int32_t>& topoPos) {
  const int n = t.numTasks(), m = t.numDevices();
  std::vector<TaskId> topo(static_cast<size_t>(n));
  for (TaskId v = 0; v < n; ++v) topo[static_cast<size_t>(topoPos[static_cast<size_t>(v)])] = v;
  const std::vector<double> rank = assignedRanks(t, plan.device, topo);
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
      : t_(t), c_(c), sim_(sim), lo_(lo), fs_(t, sim), rng_(lo.seed), n_(t.numTasks()), m_(t.numDevices()), load_(t) {
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
    if (rerun) {
      curMs_ = fs_.run(cur_);
      if (load_.active()) load_.reset(cur_.device);  // cur_ was replaced as a whole
    }
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

  /// Capacity: the device changes trial_ makes to cur_ (recorded by reassign and Insert), checked
  /// against load_ (cur_'s weights per device) in O(weights of the moved tasks), never a recount.
  struct Change {
    TaskId v;
    DeviceId from, to;
  };
  bool trialFits() {
    if (!load_.active() || changes_.empty()) return true;
    for (const Change& ch : changes_) load_.move(ch.v, ch.from, ch.to);
    bool ok = true;
    for (const Change& ch : changes_) ok = ok && load_.fits(ch.to);
    for (auto it = changes_.rbegin(); it != changes_.rend(); ++it) load_.move(it->v, it->to, it->from);
    return ok;
  }
  /// trial_ became cur_: its device changes enter load_.
  void commitChanges() {
    if (!load_.active()) return;
    for (const Change& ch : changes_) load_.move(ch.v, ch.from, ch.to);
    changes_.clear();
  }

  /// Moves v to device d in trial_, placed by its current start time.
  void reassign(TaskId v, DeviceId d) {
    const DeviceId old = trial_.device[static_cast<size_t>(v)];
    if (old == d) return;
    changes_.push_back({v, old, d});
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
    changes_.clear();
    switch (mv.kind) {
      case MoveKind::Reassign:
        reassign(mv.v, mv.d);
        return true;
      case MoveKind::Insert: {
        const DeviceId old = trial_.device[static_cast<size_t>(mv.v)];
        auto& from = trial_.order[static_cast<size_t>(old)];
        from.erase(std::find(from.begin(), from.end(), mv.v));
        if (old != mv.d) changes_.push_back({mv.v, old, mv.d});
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
    const std::vector<double> rank = assignedRanks(t_, p.device, topo_);
    SchedOptions so;
    so.sim = sim_;
    const std::vector<DeviceId> dev = p.device;
    auto r = sched_detail::listSchedule(t_, c_, so, "best", rank, [&](TaskId v, sched_detail::ListTimeline&) {
      return dev[static_cast<size_t>(v)];
    });
    if (r && r->device == dev) p.order = std::move(r->order);
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
      if (!apply(mv) || !trialFits()) continue;
      const double ms = evalTrial();
      if (ms < 0) continue;
      const double delta = (ms - curMs_) + perTask * (fs_.sumFinish() - curSum_);
      if (delta <= 0 || unit(rng_) < std::exp(-delta / temp)) {
        std::swap(cur_.device, trial_.device);
        std::swap(cur_.order, trial_.order);
        curMs_ = ms;
        commitChanges();
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
        if (!apply(mv) || !trialFits()) continue;
        const double ms = evalTrial();
        if (better(ms, fs_.sumFinish())) {
          std::swap(cur_.device, trial_.device);
          std::swap(cur_.order, trial_.order);
          curMs_ = ms;
          commitChanges();
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
      changes_.clear();
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
      if (!trialFits()) continue;
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
  WeightLoad load_;              ///< Weights per device of cur_ (capacity).
  std::vector<Change> changes_;  ///< Device changes of trial_ against cur_.
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


}  // namespace partex::search_detail
