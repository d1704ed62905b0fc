#pragma once
/// \file Internal to the CPU backend: the MatMul and Gemm kernels (ops_onednn.cpp) run directly, with the
/// oneDNN implementation they chose, so that tests can require an optimised one (never `ref`).

#include <string>
#include <vector>

#include "kernels/ops.h"

namespace partex::cpu {

/// Rows of A from which a weight B is packed into oneDNN's layout (MatMul, Gemm); below it the product
/// runs as a matrix-vector product per row (gemvRows), as does a fused Gemm/MatMul chain's.
constexpr int64_t kPackMinRows = 4;

/// c[m, n] (+)= alpha * sum_k a[m, k] * B(k, n) for m < M, n in [n0, n1): A rows of lda, C rows of ldc,
/// B plain [K, N] or, with transB, [N, K] (ops_onednn.cpp).
void gemvRows(const float* a, int64_t lda, const float* b, float* c, int64_t ldc, int64_t M, int64_t K, int64_t N,
              int64_t n0, int64_t n1, bool transB, float alpha, bool accumulate);

/// Runs the MatMul or Gemm kernel of node `n` once, single-threaded; `impl` receives the oneDNN
/// implementation it ran on ("brg:avx512_core", "gemm:jit", with " (folded)" when A's batch dims were
/// folded into M, "loop of ..." when it ran a 2-D primitive per broadcast batch). `forceLoop` takes
/// the per-batch loop whenever the operands have batch dims.
Status runMatMulKernel(const Node& n, const std::vector<const Tensor*>& in, std::vector<Tensor>& out, std::string& impl,
                       bool forceLoop = false);

}  // namespace partex::cpu
