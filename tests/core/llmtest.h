#pragma once
// Helpers of the tests of the language-model placement rules (tst_offload, tst_llamarules).

#include <QtTest>

#include <set>

#include "ir/graph.h"
#include "platform/platform.h"

namespace partex::test {

/// Bytes of the distinct weights read by operators of the layers ("layers.<L>." operators) that are not
/// a layer's own (the rotary tables and scalar constants every layer shares): counted once on every
/// device that runs a layer.
inline int64_t sharedLayerConstants(const Graph& g) {
  std::set<ValueId> seen;
  int64_t bytes = 0;
  for (const Node& n : g.nodes) {
    if (n.name.rfind("layers.", 0) != 0) continue;
    for (ValueId id : n.inputs) {
      if (id == kNone || !g.values[static_cast<size_t>(id)].isWeight) continue;
      const std::string& name = g.values[static_cast<size_t>(id)].name;
      if (name.rfind("layers.", 0) == 0 || name.rfind("blk.", 0) == 0) continue;  // a layer's own (either naming)
      if (seen.insert(id).second) bytes += g.values[static_cast<size_t>(id)].bytes();
    }
  }
  return bytes;
}

/// desktop-rtx4070 with the GPU's memory set to `gpuBytes`.
inline Platform withGpuBytes(int64_t gpuBytes) {
  auto p = loadPreset("desktop-rtx4070");
  if (!p) qFatal("preset: %s", p.message().c_str());
  for (auto& d : p->devices)
    if (d.id == "gpu") d.memCapacityBytes = gpuBytes;
  return *p;
}

}  // namespace partex::test
