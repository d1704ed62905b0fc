#include "sim/fastsim.h"

#include <algorithm>

namespace partex {

struct FastSim::Recorder {
  static constexpr bool kRecords = false;
  FastSim& f;
  void task(TaskId v, DeviceId, double start, double dur, const ReadyTime& why) {
    const auto vi = static_cast<size_t>(v);
    const double end = start + dur;
    f.start_[vi] = start;
    f.finish_[vi] = end;
    f.cause_[vi] = why.cause;
    f.causeTask_[vi] = why.by;
    f.sumFinish_ += end;
  }
  void transfer(const BookedTransfer&) {}
};

FastSim::FastSim(const CostTable& t, const SimOptions& o) : rules_(t, o), runner_(rules_), n_(t.numTasks()) {
  rules_.precomputeComm();  // the search runs thousands of plans on one table
}

double FastSim::run(const Plan& plan) {
  const auto n = static_cast<size_t>(n_);
  start_.assign(n, 0.0);
  finish_.assign(n, -1.0);
  cause_.assign(n, StartCause::Time0);
  causeTask_.assign(n, -1);
  sumFinish_ = 0;
  lastTask_ = -1;
  Recorder rec{*this};
  if (!runner_.run(plan, rec)) return -1.0;
  lastTask_ = runner_.state().lastTask;
  return runner_.state().makespan;
}

std::vector<TaskId> FastSim::criticalPath(const Plan& plan) const {
  const CostTable& t = rules_.table();
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
        for (DeviceId p : t.exclusiveWith[static_cast<size_t>(d)])
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

}  // namespace partex
