#pragma once
/// \file Internal to the CPU backend: what it adds to the plain kernels of core/kernels (kernels/ops.h):
/// the oneDNN operators, fused groups and the channels-last rule. Its table is the oneDNN entries first,
/// then the plain table.

#include <memory>
#include <vector>

#include "kernels/ops.h"

namespace partex::cpu {

/// Whether value `v` of `g` may be stored channels-last: a float32 rank-4 activation that is no model
/// output and whose every consumer reads channels-last inputs there (Conv's X, pooling's X; element-wise
/// operators, BatchNormalization and channel Concat when their own output may be channels-last too).
bool nhwcOutputOk(const Graph& g, ValueId v);

/// Row-major float32 [N, C, spatial...] (S pixels per image) into the channels-last layout of the same
/// shape: per image the [C][S] plane transposed to [S][C] in cache tiles (transposePlane32), blocks of
/// pixels split over `threads` OpenMP threads (the calling device's). What a CPU kernel pays for a
/// row-major input where an all-CPU plan hands it a channels-last one (a GPU's output arrives on the
/// host row-major; issue 25): its channels-last path, as profiled, then runs on the copy.
void plainToNhwc(const float* src, float* dst, int64_t N, int64_t C, int64_t S, int threads);

/// The kernel of a fused group (ir/fusion.h; `ops` anchor first, a lone Conv included): ops_fused.cpp.
Result<std::unique_ptr<OpKernel>> makeFusedKernel(const Graph& g, const std::vector<OpId>& ops);

/// The backend's table: addOneDnnOps() entries, then plainOpTable(), then the control-flow and Einsum
/// entries; the first entry of a type wins.
const std::vector<OpEntry>& opTable();
void addOneDnnOps(std::vector<OpEntry>& table);
/// LSTM, GRU and RNN through oneDNN's RNN primitives (ops_rnn_onednn.cpp).
void addOneDnnRnnOps(std::vector<OpEntry>& table);
/// If, Loop and Scan (ops_control.cpp): one kernel each, whose bodies run on this table's kernels.
void addControlFlowOps(std::vector<OpEntry>& table);
/// Einsum (ops_einsum.cpp): contractions through oneDNN matmul, transposes and reductions.
void addEinsumOps(std::vector<OpEntry>& table);

}  // namespace partex::cpu
