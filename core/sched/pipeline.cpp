// "pipeline": a model cut into stages, contiguous in a topological order, each stage on its own device,
// chosen to minimise the steady-state period of a stream of inferences (issue 29; the partitioning of
// Pipe-it, OpenVINO's HETERO pipeline and OmniBoost, solved exactly for chains by a dynamic programme).
//
// The programme runs over cut positions (at most S of them: consecutive tasks of the order are grouped
// into S segments of about equal best-device work when the model is larger, S chosen so that
// S^2 * 2^D * D^2 stays about 5e7) and the set of devices used so far:
//   f[j][used][d] = the best (period, latency) of the tasks before cut j split into stages on the
//                   devices of `used`, the last stage on d,
// with a stage [i, j) on d costing max(its tasks' time on d, the transfer of the bytes that cross into
// it from the previous stage's device) for the period and their sum for the latency. Devices exclusive
// with each other (a multi-core device and its single cores) are never both in `used`: they could not
// run two stages at once. Bytes crossing from older stages are charged as if they came from the
// previous stage's device (the exact cost comes from the simulator). For each number of stages the
// best programme's plan is simulated as a stream (sim/stream.h) and the plan with the shortest
// simulated period wins (the latency bound, SchedOptions::latencyBoundUs, first where one is set).
// Pinned tasks keep their device (a stage holding one is on its device); forbidden devices hold none.
// Where no split into stages on distinct devices exists (operators an accelerator cannot run, pins
// scattered over the model), a relaxed programme lets stages return to a device used before and runs
// an operator its stage's device may not run on its pinned or fastest allowed device: every model gets
// a plan, judged by the same stream simulation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "sched/algorithms.h"
#include "sched/listsched.h"
#include "sim/stream.h"

namespace partex {

namespace {

using namespace sched_detail;

struct Cell {
  double period = kInf;
  double latency = kInf;
  int32_t fromCut = -1;
  int8_t fromDev = -1;
};

bool better(double p, double l, const Cell& c) {
  return p < c.period - 1e-9 || (p <= c.period + 1e-9 && l < c.latency - 1e-9);
}

class Pipeline final : public Scheduler {
 public:
  std::string name() const override { return "pipeline"; }
  std::string title() const override { return "Pipelined stages (DP)"; }
  std::string description() const override {
    return "Contiguous stages of a topological order, one device each, minimising a stream's period "
           "(dynamic programme; the plan a stream of inferences runs fastest with).";
  }

  Result<Plan> run(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info) const override {
    const int n = t.numTasks();
    const int m = t.numDevices();
    if (m > 16) return makeError("pipeline: at most 16 devices (the table has ", std::to_string(m), ")");
    const Deadline deadline = o.startDeadline(10.0);
    const std::vector<TaskId> topo = t.topoOrder();
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) pos[static_cast<size_t>(topo[static_cast<size_t>(i)])] = i;

    // Per-device prefix sums of the tasks' times in topological order (kInf where one cannot run there).
    std::vector<std::vector<double>> pre(static_cast<size_t>(m), std::vector<double>(static_cast<size_t>(n) + 1, 0.0));
    std::vector<std::vector<int32_t>> bad(static_cast<size_t>(m), std::vector<int32_t>(static_cast<size_t>(n) + 1, 0));
    std::vector<double> bestW(static_cast<size_t>(n), 0.0);
    for (int i = 0; i < n; ++i) {
      const TaskId v = topo[static_cast<size_t>(i)];
      double bw = kInf;
      for (DeviceId d = 0; d < m; ++d) {
        const bool ok = c.allowed(t, v, d);
        const double w = ok ? t.w(v, d) : 0.0;
        pre[static_cast<size_t>(d)][static_cast<size_t>(i) + 1] = pre[static_cast<size_t>(d)][static_cast<size_t>(i)] + (ok ? w : 0.0);
        bad[static_cast<size_t>(d)][static_cast<size_t>(i) + 1] = bad[static_cast<size_t>(d)][static_cast<size_t>(i)] + (ok ? 0 : 1);
        if (ok) bw = std::min(bw, w);
      }
      if (!(bw < kInf)) return makeError("pipeline: task '", t.taskNames[static_cast<size_t>(v)], "' can run on no allowed device");
      bestW[static_cast<size_t>(i)] = bw;
    }

    bool timedOut = false;
    StreamJudge stream(t, {}, o.sim);  // one unrolled table per in-flight bound, for every candidate
    std::optional<Plan> best;
    double bestPeriod = kInf, bestLatency = kInf;
    bool bestMeetsBound = false;
    std::string bestWhat;
    // Judges an assignment (tasks in topological order on each device) by its simulated stream; keeps
    // the best. Tasks the constraints keep off their stage's device go to their pinned device, else to
    // their fastest allowed one (the relaxed programme below counts them so).
    auto consider = [&](std::vector<DeviceId> dev, const std::string& what) -> Status {
      for (TaskId v = 0; v < n; ++v) {
        DeviceId& d = dev[static_cast<size_t>(v)];
        if (c.pinned.count(v) || !c.allowed(t, v, d)) d = c.fallback(t, v);
      }
      Plan plan;
      plan.device = dev;
      plan.order.assign(static_cast<size_t>(m), {});
      for (TaskId v : topo) plan.order[static_cast<size_t>(dev[static_cast<size_t>(v)])].push_back(v);
      auto s = stream.run(plan);
      if (!s) return Error{"pipeline: " + s.message()};
      const bool meets = o.latencyBoundUs <= 0 || s->latencyUs <= o.latencyBoundUs;
      const bool take = !best || (meets && !bestMeetsBound) ||
                        (meets == bestMeetsBound && (meets ? s->periodUs < bestPeriod - 1e-9 : s->latencyUs < bestLatency - 1e-9));
      if (take) {
        best = std::move(plan);
        bestPeriod = s->periodUs;
        bestLatency = s->latencyUs;
        bestMeetsBound = meets;
        bestWhat = what;
      }
      return Status::ok();
    };
    // Cut positions: every task boundary, or S segments of about equal best-device work, S from a
    // budget of DP steps. A coarse grid (at most 24 segments, a few milliseconds) runs first and its
    // plans are judged, then the full grid: under a time limit that stops the full programme early (a
    // few hundred operators on six devices take seconds), the coarse grid's plans are still there,
    // where the full programme alone left only its first stages (yolox_nano on mobile-soc in 1 s: one
    // stage, 20.3 ms, against 5.7 ms with four).
    const double budget = 5e7 / (std::pow(2.0, m) * m * m);
    const int fullS = std::clamp(static_cast<int>(std::sqrt(std::max(1.0, budget))), 1, std::max(1, n));
    std::vector<int> grids;
    if (fullS > 24 && n > 24) grids.push_back(24);
    grids.push_back(fullS);
    int K = 0;
    for (int grid : grids) {
      if (best && (deadline.passed() || o.cancelled())) break;
      timedOut = false;
      // Cut positions: every task boundary, or S segments of about equal best-device work.
      const int S = grid;
      std::vector<int32_t> cuts{0};
      if (n <= S) {
        for (int i = 1; i <= n; ++i) cuts.push_back(i);
      } else {
        double total = 0;
        for (double w : bestW) total += w;
        double acc = 0;
        int next = 1;
        for (int i = 0; i < n; ++i) {
          acc += bestW[static_cast<size_t>(i)];
          if (i + 1 < n && acc >= total * next / S && cuts.back() < i + 1) {
            cuts.push_back(i + 1);
            ++next;
          }
        }
        cuts.push_back(n);
      }
      K = static_cast<int>(cuts.size()) - 1;  // segments

      // Bytes into [cuts[a], cuts[b]) from tasks before cuts[a]: cross[a][b], built edge by edge.
      std::vector<int32_t> segOf(static_cast<size_t>(n));
      for (int k = 0; k < K; ++k)
        for (int i = cuts[static_cast<size_t>(k)]; i < cuts[static_cast<size_t>(k) + 1]; ++i) segOf[static_cast<size_t>(i)] = k;
      std::vector<int64_t> cross(static_cast<size_t>(K + 1) * static_cast<size_t>(K + 1), 0);
      auto X = [&](int a, int b) -> int64_t& { return cross[static_cast<size_t>(a) * static_cast<size_t>(K + 1) + static_cast<size_t>(b)]; };
      for (const Edge& e : t.edges) {
        const int sa = segOf[static_cast<size_t>(pos[static_cast<size_t>(e.src)])];
        const int sb = segOf[static_cast<size_t>(pos[static_cast<size_t>(e.dst)])];
        // Crosses into a stage [a, b) when src's segment < a <= dst's segment < b.
        for (int a = sa + 1; a <= sb; ++a) X(a, sb + 1) += e.bytes;
      }
      for (int a = 0; a <= K; ++a)
        for (int b = a + 1; b <= K; ++b) X(a, b) += X(a, b - 1);

      // Pinned devices per segment: a stage holding a pinned task is on its device.
      std::vector<int32_t> pinDev(static_cast<size_t>(K), -1);
      for (const auto& [v, d] : c.pinned) {
        int32_t& p = pinDev[static_cast<size_t>(segOf[static_cast<size_t>(pos[static_cast<size_t>(v)])])];
        if (p >= 0 && p != d) p = -2;  // two pins in one segment: only a stage boundary inside could serve them
        else if (p != -2) p = d;
      }
      // Per device, segments whose pins it cannot serve, as prefix sums: a stage check in O(1) (the loop
      // over the stage's segments made the programme cubic in the segments: 1.1 s of CPU on yolox_nano).
      std::vector<std::vector<int32_t>> pinBad(static_cast<size_t>(m), std::vector<int32_t>(static_cast<size_t>(K) + 1, 0));
      for (int d = 0; d < m; ++d)
        for (int k = 0; k < K; ++k) {
          const int32_t p = pinDev[static_cast<size_t>(k)];
          pinBad[static_cast<size_t>(d)][static_cast<size_t>(k) + 1] =
              pinBad[static_cast<size_t>(d)][static_cast<size_t>(k)] + ((p == -2 || (p >= 0 && p != d)) ? 1 : 0);
        }
      std::vector<uint32_t> exclMask(static_cast<size_t>(m), 0);
      for (DeviceId d = 0; d < m && static_cast<size_t>(d) < t.exclusiveWith.size(); ++d)
        for (DeviceId e : t.exclusiveWith[static_cast<size_t>(d)]) exclMask[static_cast<size_t>(d)] |= 1u << e;

      std::vector<std::vector<double>> preR(static_cast<size_t>(m), std::vector<double>(static_cast<size_t>(n) + 1, 0.0));
      for (DeviceId d = 0; d < m; ++d)
        for (int i = 0; i < n; ++i) {
          const TaskId v = topo[static_cast<size_t>(i)];
          preR[static_cast<size_t>(d)][static_cast<size_t>(i) + 1] =
              preR[static_cast<size_t>(d)][static_cast<size_t>(i)] + (c.allowed(t, v, d) ? t.w(v, d) : bestW[static_cast<size_t>(i)]);
        }
      // The strict programme: a stage holds only operators its device runs. Then the same with every
      // operator allowed in any stage, those its device cannot run (an accelerator's unsupported
      // operators) charged at their fastest allowed time and run there, beside the stage: on models where
      // such operators are scattered, the strict programme has few or no splits.
      for (bool repair : {false, true}) {
        if (best && (deadline.passed() || o.cancelled())) break;
        const size_t masks = size_t{1} << m;
        std::vector<Cell> f(static_cast<size_t>(K + 1) * masks * static_cast<size_t>(m));
        f.assign(f.size(), Cell{});
        auto F = [&](int j, uint32_t used, int d) -> Cell& {
          return f[(static_cast<size_t>(j) * masks + used) * static_cast<size_t>(m) + static_cast<size_t>(d)];
        };
        auto stageOk = [&](int a, int b, int d) {
          if (!repair && bad[static_cast<size_t>(d)][static_cast<size_t>(cuts[static_cast<size_t>(b)])] -
                             bad[static_cast<size_t>(d)][static_cast<size_t>(cuts[static_cast<size_t>(a)])] >
                             0)
            return false;
          return pinBad[static_cast<size_t>(d)][static_cast<size_t>(b)] == pinBad[static_cast<size_t>(d)][static_cast<size_t>(a)];
        };
        auto stageUs = [&](int a, int b, int d) {
          const auto& P = repair ? preR : pre;
          return P[static_cast<size_t>(d)][static_cast<size_t>(cuts[static_cast<size_t>(b)])] -
                 P[static_cast<size_t>(d)][static_cast<size_t>(cuts[static_cast<size_t>(a)])];
        };
        int64_t steps = 0;
        // First stage: from the host's inputs (their transfer is the simulator's to judge).
        for (int b = 1; b <= K; ++b)
          for (int d = 0; d < m; ++d)
            if (stageOk(0, b, d)) {
              const double w = stageUs(0, b, d);
              Cell& cell = F(b, 1u << d, d);
              if (better(w, w, cell)) cell = Cell{w, w, 0, -1};
            }
        for (int a = 1; a < K && !timedOut; ++a) {
          for (uint32_t used = 1; used < masks && !timedOut; ++used) {
            for (int pd = 0; pd < m; ++pd) {
              if (!(used & (1u << pd))) continue;
              const Cell& from = F(a, used, pd);
              if (!(from.period < kInf)) continue;
              if ((++steps & 0xfff) == 0 && (deadline.passed() || o.cancelled())) {
                timedOut = true;
                break;
              }
              for (int d = 0; d < m; ++d) {
                if ((used & (1u << d)) || (exclMask[static_cast<size_t>(d)] & used)) continue;
                const uint32_t nu = used | (1u << d);
                for (int b = a + 1; b <= K; ++b) {
                  if (!stageOk(a, b, d)) break;  // a longer stage holds the same task or pin d cannot take
                  const double w = stageUs(a, b, d);
                  const double x = t.transferUs(static_cast<DeviceId>(pd), static_cast<DeviceId>(d), X(a, b));
                  const double p = std::max({from.period, w, x});
                  const double l = from.latency + w + x;
                  Cell& cell = F(b, nu, d);
                  if (better(p, l, cell)) cell = Cell{p, l, a, static_cast<int8_t>(pd)};
                }
              }
            }
          }
        }
        if (o.cancelled()) return cancelledError();

        // The best programme per number of stages, simulated as a stream.
        std::vector<std::pair<int, uint32_t>> bestPerCount(static_cast<size_t>(m) + 1, {-1, 0});
        for (uint32_t used = 1; used < masks; ++used)
          for (int d = 0; d < m; ++d) {
            const Cell& cell = F(K, used, d);
            if (!(cell.period < kInf)) continue;
            const int k = __builtin_popcount(used);
            auto& slot = bestPerCount[static_cast<size_t>(k)];
            if (slot.first < 0 || better(cell.period, cell.latency, F(K, slot.second, slot.first))) slot = {d, used};
          }
        for (int k = 1; k <= m; ++k) {
          const auto [d0, used0] = bestPerCount[static_cast<size_t>(k)];
          if (d0 < 0) continue;
          if (best && (deadline.passed() || o.cancelled())) {
            timedOut = true;
            break;
          }
          std::vector<DeviceId> dev(static_cast<size_t>(n), 0);
          int j = K, d = d0;
          uint32_t used = used0;
          while (j > 0) {
            const Cell& cell = F(j, used, d);
            for (int i = cuts[static_cast<size_t>(cell.fromCut)]; i < cuts[static_cast<size_t>(j)]; ++i)
              dev[static_cast<size_t>(topo[static_cast<size_t>(i)])] = static_cast<DeviceId>(d);
            const int pd = cell.fromDev;
            used &= ~(1u << d);
            j = cell.fromCut;
            d = pd;
          }
          if (auto st = consider(std::move(dev), std::to_string(k) + " stage(s) on distinct devices" + (repair ? " (operators a stage's device cannot run beside it)" : "")); !st) return Error{st.message()};
        }

      }
      // The relaxed programme, for models the strict one cannot split (operators a device cannot run, pins
      // scattered over the model, more stages wanted than devices): stages may return to a device used
      // before, and an operator its stage's device may not run counts at its fastest allowed time (it runs
      // there, beside the stage). Its period ignores that a device's stages share it, so it is a candidate
      // for the simulator to judge, like the strict programme's.
      if (!best || !timedOut) {
        std::vector<Cell> g(static_cast<size_t>(K + 1) * static_cast<size_t>(m));
        auto G = [&](int j, int d) -> Cell& { return g[static_cast<size_t>(j) * static_cast<size_t>(m) + static_cast<size_t>(d)]; };
        auto stageR = [&](int a, int b, int d) {
          return preR[static_cast<size_t>(d)][static_cast<size_t>(cuts[static_cast<size_t>(b)])] -
                 preR[static_cast<size_t>(d)][static_cast<size_t>(cuts[static_cast<size_t>(a)])];
        };
        for (int b = 1; b <= K; ++b)
          for (int d = 0; d < m; ++d) {
            const double w = stageR(0, b, d);
            if (better(w, w, G(b, d))) G(b, d) = Cell{w, w, 0, -1};
          }
        for (int a = 1; a < K && !deadline.passed() && !o.cancelled(); ++a)
          for (int pd = 0; pd < m; ++pd) {
            const Cell& from = G(a, pd);
            if (!(from.period < kInf)) continue;
            for (int d = 0; d < m; ++d) {
              if (d == pd) continue;
              for (int b = a + 1; b <= K; ++b) {
                const double w = stageR(a, b, d);
                const double x = t.transferUs(static_cast<DeviceId>(pd), static_cast<DeviceId>(d), X(a, b));
                const double p = std::max({from.period, w, x});
                const double l = from.latency + w + x;
                if (better(p, l, G(b, d))) G(b, d) = Cell{p, l, a, static_cast<int8_t>(pd)};
              }
            }
          }
        int d0 = -1;
        for (int d = 0; d < m; ++d)
          if (G(K, d).period < kInf && (d0 < 0 || better(G(K, d).period, G(K, d).latency, G(K, d0)))) d0 = d;
        if (d0 >= 0) {
          std::vector<DeviceId> dev(static_cast<size_t>(n), 0);
          int stages = 0;
          for (int j = K, d = d0; j > 0; ++stages) {
            const Cell& cell = G(j, d);
            for (int i = cuts[static_cast<size_t>(cell.fromCut)]; i < cuts[static_cast<size_t>(j)]; ++i)
              dev[static_cast<size_t>(topo[static_cast<size_t>(i)])] = static_cast<DeviceId>(d);
            j = cell.fromCut;
            d = cell.fromDev;
          }
          if (auto st = consider(std::move(dev), std::to_string(stages) + " stage(s), devices reused"); !st) return Error{st.message()};
        }
      }
    }
    if (!best) return makeError("pipeline: no split into stages fits the constraints");
    info->notes.push_back(bestWhat + ", simulated period " + std::to_string(bestPeriod) + " us");
    if (!bestMeetsBound) info->notes.push_back("no pipeline meets the latency bound; the lowest latency is kept");
    if (timedOut) info->notes.push_back("time limit reached");
    if (K < n) info->notes.push_back("cuts among " + std::to_string(K) + " segments of about equal work");
    o.report(1.0, "pipeline: done");
    best->algorithm = name();
    best->optionsJson = paramsJson(o);
    return *best;
  }
};

}  // namespace

std::unique_ptr<Scheduler> makePipeline() { return std::make_unique<Pipeline>(); }

}  // namespace partex
