#include "sim/simrules.h"

#include <algorithm>

namespace partex {

SimRules::SimRules(const CostTable& t, const SimOptions& o)
    : t_(t), o_(o), n_(t.numTasks()), m_(t.numDevices()), mm_(static_cast<size_t>(t.numDevices())), anyExclusive_(!t.exclusiveWith.empty()) {
  indeg_.assign(static_cast<size_t>(n_), 0);
  for (const auto& e : t.edges) ++indeg_[static_cast<size_t>(e.dst)];
  anyInline_ = t.deviceInlineCopies.size() == mm_ &&
               std::any_of(t.deviceInlineCopies.begin(), t.deviceInlineCopies.end(), [](char c) { return c != 0; });
  anyConvert_ = anyInline_ && t.deviceReaderConvertBytesPerUs.size() == mm_ &&
                t.taskConvertsInput.size() == static_cast<size_t>(n_) && t.deviceKinds.size() == mm_ &&
                std::any_of(t.deviceReaderConvertBytesPerUs.begin(), t.deviceReaderConvertBytesPerUs.end(),
                            [](double r) { return r > 0; });
  if (anyConvert_)
    for (const auto& k : t.deviceKinds) cpuDevice_.push_back(k == "cpu" ? 1 : 0);
}

double SimRules::readerConvertUs(TaskId v, DeviceId d, const std::vector<DeviceId>& placement) const {
  const auto vi = static_cast<size_t>(v);
  if (!t_.taskConvertsInput[vi] || !cpuDevice_[static_cast<size_t>(d)]) return 0.0;
  double us = 0;
  for (int32_t ei : t_.inEdges[vi]) {
    const Edge& e = t_.edges[static_cast<size_t>(ei)];
    const DeviceId a = placement[static_cast<size_t>(e.src)];
    if (a < 0 || a == d) continue;
    const double rate = t_.deviceReaderConvertBytesPerUs[static_cast<size_t>(a)];
    if (rate > 0) us += static_cast<double>(e.bytes) / rate;
  }
  return us;
}

double SimRules::inlineCopyUs(TaskId v, DeviceId d, const std::vector<DeviceId>& placement) const {
  const auto vi = static_cast<size_t>(v);
  double up = 0, down = 0;
  for (int32_t ei : t_.inEdges[vi]) {
    const DeviceId a = placement[static_cast<size_t>(t_.edges[static_cast<size_t>(ei)].src)];
    if (a >= 0 && a != d) up += t_.comm(ei, a, d);
  }
  if (!t_.inputBytes.empty() && t_.inputBytes[vi] > 0 && d != t_.host) up += t_.transferUs(t_.host, d, t_.inputBytes[vi]);
  for (int32_t ei : t_.outEdges[vi]) {
    const DeviceId b = placement[static_cast<size_t>(t_.edges[static_cast<size_t>(ei)].dst)];
    if (b >= 0 && b != d) down = std::max(down, t_.comm(ei, d, b));
  }
  if (!t_.outputBytes.empty() && t_.outputBytes[vi] > 0 && d != t_.host)
    down = std::max(down, t_.transferUs(d, t_.host, t_.outputBytes[vi]));
  return up + down;
}

void SimRules::precomputeComm() {
  // A workflow on hundreds of processors would need gigabytes: such tables compute c(e, a, b) as
  // they go (the same values).
  constexpr size_t kMaxEntries = size_t{1} << 24;
  if (mm_ > 0 && t_.edges.size() > kMaxEntries / (mm_ * mm_)) return;
  commTab_.resize(t_.edges.size() * mm_ * mm_);
  for (size_t e = 0; e < t_.edges.size(); ++e)
    for (DeviceId a = 0; a < m_; ++a)
      for (DeviceId b = 0; b < m_; ++b)
        commTab_[(e * mm_ + static_cast<size_t>(a)) * mm_ + static_cast<size_t>(b)] =
            isInline(a) || isInline(b) ? 0.0 : t_.comm(static_cast<int32_t>(e), a, b);
  comm_ = commTab_.data();
}

void SimRules::reset(SimState& s) const {
  const auto n = static_cast<size_t>(n_);
  s.finish.assign(n, -1.0);
  s.arrival.assign(n * mm_, -1.0);
  // Items are cleared where they were set: a workflow on hundreds of processors has far more
  // (item, device) pairs than transfers.
  const size_t items = static_cast<size_t>(std::max(0, t_.numItems)) * mm_;
  if (s.itemArrival.size() != items) {
    s.itemArrival.assign(items, -1.0);
  } else {
    for (size_t k : s.itemSent) s.itemArrival[k] = -1.0;
  }
  s.itemSent.clear();
  s.devFree.assign(mm_, 0.0);
  s.lastOnDevice.assign(mm_, -1);
  s.devBusy.resize(mm_);
  for (auto& b : s.devBusy) b.iv.clear();
  s.links.resize(static_cast<size_t>(std::max(0, t_.numLinkResources)));
  for (auto& l : s.links) l.iv.clear();
  s.inputReady.assign(n, 0.0);
  s.pending = indeg_;
  s.makespan = 0;
  s.lastTask = -1;
}

}  // namespace partex
