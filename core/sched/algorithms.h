#pragma once
/// \file Factories of every scheduler (one .cpp file each). The registry (registry.cpp) lists them.

#include <memory>

#include "sched/scheduler.h"

namespace partex {

// Baselines (baselines.cpp)
std::unique_ptr<Scheduler> makeSingleDevice();     ///< "single": everything on the best single device
                                                   ///< (param "device" picks one); unsupported ops fall back to the host.
std::unique_ptr<Scheduler> makeManualPriority();   ///< "priority": first device in a user list (param "priority": "npu,gpu,cpu").
std::unique_ptr<Scheduler> makeStaticTypeBased();  ///< "static": Conv/Gemm/MatMul -> accelerator, rest -> host.
std::unique_ptr<Scheduler> makeGreedy();           ///< "greedy": each op on its fastest device, ignoring transfers.
// Classic list schedulers
std::unique_ptr<Scheduler> makeHeft();  ///< heft.cpp
std::unique_ptr<Scheduler> makeCpop();  ///< cpop.cpp
std::unique_ptr<Scheduler> makePeft();  ///< peft.cpp
// The list heuristics SAGA collects (one file each)
std::unique_ptr<Scheduler> makeMinMin();     ///< minmin.cpp
std::unique_ptr<Scheduler> makeMaxMin();     ///< maxmin.cpp
std::unique_ptr<Scheduler> makeSufferage();  ///< sufferage.cpp
std::unique_ptr<Scheduler> makeMct();        ///< mct.cpp
std::unique_ptr<Scheduler> makeMet();        ///< met.cpp
std::unique_ptr<Scheduler> makeOlb();        ///< olb.cpp
std::unique_ptr<Scheduler> makeDuplex();     ///< duplex.cpp
std::unique_ptr<Scheduler> makeEtf();        ///< etf.cpp
std::unique_ptr<Scheduler> makeHbmct();      ///< hbmct.cpp
// Published DL partitioners
std::unique_ptr<Scheduler> makePartitionTuner(bool faithful);  ///< partitiontuner.cpp: "partitiontuner", "partitiontuner-clean"
std::unique_ptr<Scheduler> makeDuet();                         ///< duet.cpp
std::unique_ptr<Scheduler> makePimDp();                        ///< pimdp.cpp
std::unique_ptr<Scheduler> makeDlFusion();                     ///< dlfusion.cpp
std::unique_ptr<Scheduler> makeCoarseSubgraphs();              ///< coarse.cpp (OSDI'23)
// The rule language-model users apply
std::unique_ptr<Scheduler> makeOffload();  ///< offload.cpp: llama.cpp's -ngl N (the last N slots on the GPU)
std::unique_ptr<Scheduler> makeFit();      ///< llamasched.cpp: llama.cpp's --fit (memory only)
std::unique_ptr<Scheduler> makeNCpuMoe();  ///< llamasched.cpp: llama.cpp's --n-cpu-moe N / --cpu-moe
std::unique_ptr<Scheduler> makeNCpuFfn();  ///< llamasched.cpp: llama.cpp's --n-cpu-ffn N
std::unique_ptr<Scheduler> makeOt();       ///< llamasched.cpp: a llama.cpp -ot override string as a placement
// References and our own
std::unique_ptr<Scheduler> makePipeline();  ///< pipeline.cpp: contiguous stages on distinct devices, minimum stream period
std::unique_ptr<Scheduler> makePipeIt();    ///< pipeit.cpp: Pipe-it's stages over the CPU clusters (TCAD 2020, reconstructed)
std::unique_ptr<Scheduler> makeExact();  ///< exact.cpp
std::unique_ptr<Scheduler> makeBest();   ///< best.cpp

}  // namespace partex
