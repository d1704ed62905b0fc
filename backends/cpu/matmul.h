#pragma once
/// \file Internal to the CPU backend: the MatMul and Gemm kernels (ops_onednn.cpp) run directly, with the
/// oneDNN implementation they chose, so that tests can require an optimised one (never `ref`).

#include <string>
#include <vector>

#include "kernels/ops.h"

namespace partex::cpu {

/// Runs the MatMul or Gemm kernel of node `n` once, single-threaded; `impl` receives the oneDNN
/// implementation it ran on ("brg:avx512_core", "gemm:jit", with " (folded)" when A's batch dims were
/// folded into M, "loop of ..." when it ran a 2-D primitive per broadcast batch). `forceLoop` takes
/// the per-batch loop whenever the operands have batch dims.
Status runMatMulKernel(const Node& n, const std::vector<const Tensor*>& in, std::vector<Tensor>& out, std::string& impl,
                       bool forceLoop = false);

}  // namespace partex::cpu
