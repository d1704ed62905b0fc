#pragma once
/// \file `best` under the throughput objective (SchedOptions::objective): the plan whose stream of
/// inferences (sim/stream.h) has the shortest steady-state period, each inference within the latency
/// bound where one is set.

#include "sched/scheduler.h"

namespace partex {

/// Candidates: the pipeline programme's plan, Pipe-it's (pipeit), best's own latency plan and every single device, each
/// judged by simulateStream; then a local search that moves the operators at stage boundaries to the
/// neighbouring stage's device while the period falls (or, above the latency bound, the latency). A
/// plan over a device's capacity (the stream's buffers included) is never kept when another fits.
/// Shares `o`'s deadline: pipeline and the latency plan a quarter of it each, pipeit an eighth, the
/// search the rest.
Result<Plan> bestForThroughput(const CostTable& t, const Constraints& c, const SchedOptions& o, SchedInfo* info);

}  // namespace partex
