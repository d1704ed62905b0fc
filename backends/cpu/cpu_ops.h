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
