#pragma once
// Internal to the CPU backend: the kernels of the graph-level rewrites (ir/rewrites.h), ops_rewrites.cpp.
// Pad into Conv is built in ops_fused.cpp (it is a Conv chain) with dropInputs().

#include <memory>
#include <vector>

#include "ir/rewrites.h"
#include "kernels/ops.h"

namespace partex::cpu {

/// A kernel that runs `inner` on its inputs less `count` of them from `first` on (a folded Pad's pads
/// and value). Forwards the channels-last and keep-a-copy questions.
std::unique_ptr<OpKernel> dropInputs(std::unique_ptr<OpKernel> inner, size_t first, size_t count);

/// The kernel of rewrite group `ops` of kind `r` (not PadIntoConv, not None).
Result<std::unique_ptr<OpKernel>> makeRewriteKernel(const Graph& g, const std::vector<OpId>& ops, Rewrite r);

}  // namespace partex::cpu
