#pragma once
/// \file Handoffs between the CPU's threads in a stream of inferences: the time a stage waits to be woken,
/// and the time a CPU takes to change between its own operators and an OpenMP team's (issue 29, item 4's
/// prediction error on plans that use several devices of one CPU).
///
/// `execute --stream` waits without spinning (a stage that spins takes its core from the others): each
/// CPU is one thread (a lane) that runs the operators of the single-core devices on that CPU, and a
/// multi-core device (this machine's cpu-parallel, an OpenMP team) is led by one CPU's lane while the
/// lanes of its other CPUs (its helpers) step aside. Two costs follow that the operators' times do not
/// hold, both measured by the this-machine calibration on chains of small convolutions through the executor
/// (core/profile/calibration.h), never fitted to a model:
///  - a wake-up (Device::wakeUpUs of the consumer's device): an operator whose input comes from a device
///    that runs at the same time as its own (another CPU: the two are not exclusive) starts that long
///    after the input is ready, since its lane was asleep;
///  - a mode switch (Device::modeSwitchUs of the team's device): a helper CPU that changes between its own
///    devices' operators and the team's steps aside (or back) and must be woken; the operator after each
///    change on each helper CPU, in the order its lane runs them (one inference's simulated order, over
///    and over: the first operator follows the last one of the inference before), starts that much later.
///    The team's leading CPU runs the team's operators itself and pays no switch.
///
/// The CPUs of a team are the single-core CPU devices exclusive with it, grouped by mutual exclusivity
/// (cpu-serial and core0 are modes of one CPU); the leading CPU is the group of the first of them in the
/// platform's device order (this-machine: cpu-serial's and core0's, core 0, from which the CPU backend
/// leads cpu-parallel). Each operator pays the largest of its wake-up and its switches, as a lane waits
/// once for all it needs. Platforms without the numbers (the presets, task graphs) pay nothing.

#include <vector>

#include "cost/costtable.h"
#include "sim/plan.h"
#include "sim/simulator.h"

namespace partex {

/// Per task of `plan` (one replica's placement: every operator on one device), the delay its handoffs
/// add to it in a stream, given the plan's one-inference timeline `single` (the order each lane runs
/// its operators in). All zeros when the table has no handoff costs.
std::vector<double> streamHandoffUs(const CostTable& t, const Plan& plan, const Timeline& single);

/// True when the table has any handoff cost (Device::wakeUpUs or Device::modeSwitchUs above 0).
bool hasHandoffCosts(const CostTable& t);

}  // namespace partex
