// The list of every scheduler, in display order.
#include "sched/algorithms.h"

namespace partex {

const std::vector<std::unique_ptr<Scheduler>>& allSchedulers() {
  static const std::vector<std::unique_ptr<Scheduler>> all = [] {
    std::vector<std::unique_ptr<Scheduler>> v;
    v.push_back(makeSingleDevice());
    v.push_back(makeManualPriority());
    v.push_back(makeStaticTypeBased());
    v.push_back(makeGreedy());
    v.push_back(makeHeft());
    v.push_back(makeCpop());
    v.push_back(makePeft());
    v.push_back(makeMinMin());
    v.push_back(makeMaxMin());
    v.push_back(makeSufferage());
    v.push_back(makeMct());
    v.push_back(makeMet());
    v.push_back(makeOlb());
    v.push_back(makeDuplex());
    v.push_back(makeEtf());
    v.push_back(makeHbmct());
    v.push_back(makePartitionTuner(true));
    v.push_back(makePartitionTuner(false));
    v.push_back(makeDuet());
    v.push_back(makePimDp());
    v.push_back(makeDlFusion());
    v.push_back(makeCoarseSubgraphs());
    v.push_back(makeOffload());
    v.push_back(makeFit());
    v.push_back(makeNCpuMoe());
    v.push_back(makeNCpuFfn());
    v.push_back(makeOt());
    v.push_back(makePipeline());
    v.push_back(makePipeIt());
    v.push_back(makeExact());
    v.push_back(makeBest());
    return v;
  }();
  return all;
}

const Scheduler* findScheduler(const std::string& name) {
  for (const auto& s : allSchedulers())
    if (s->name() == name) return s.get();
  return nullptr;
}

}  // namespace partex
