// Platform queries: device peaks, links, transfer times and exclusive groups.
#include "platform/platform.h"

#include <algorithm>
#include <limits>

namespace partex {

const char* deviceKindName(DeviceKind k) {
  switch (k) {
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::Gpu:
      return "gpu";
    case DeviceKind::Npu:
      return "npu";
    case DeviceKind::Dsp:
      return "dsp";
    case DeviceKind::Pim:
      return "pim";
  }
  return "cpu";
}

double Device::peak(OpClass c, DType t) const {
  auto it = peakGflops.find(c);
  double base = it != peakGflops.end() ? it->second : defaultPeakGflops;
  auto s = dtypeSpeedup.find(t);
  return s != dtypeSpeedup.end() ? base * s->second : base;
}

DeviceId Platform::findDevice(const std::string& id) const {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i].id == id) return static_cast<DeviceId>(i);
  return kNone;
}

DeviceId Platform::hostId() const {
  DeviceId h = findDevice(host);
  return h == kNone ? 0 : h;
}

const Link* Platform::findLink(DeviceId a, DeviceId b) const {
  const auto n = static_cast<DeviceId>(devices.size());
  if (a < 0 || b < 0 || a >= n || b >= n || a == b) return nullptr;
  const std::string& ia = devices[a].id;
  const std::string& ib = devices[b].id;
  for (const Link& l : links) {
    if (l.from == ia && l.to == ib) return &l;
    if (l.bidirectional && l.from == ib && l.to == ia) return &l;
  }
  return nullptr;
}

namespace {
/// One hop over a link: free when the memory is shared, else latency plus bytes at the link's rate.
/// 1 GB/s = 1e9 bytes/s = 1e3 bytes/us.
double hopUs(const Link& l, int64_t bytes) {
  if (l.sharedMemory) return 0.0;
  double b = bytes > 0 ? static_cast<double>(bytes) : 0.0;
  return l.latencyUs + b / (l.bandwidthGBs * 1e3);
}
}  // namespace

double Platform::transferUs(DeviceId a, DeviceId b, int64_t bytes) const {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto n = static_cast<DeviceId>(devices.size());
  if (a < 0 || b < 0 || a >= n || b >= n) return kInf;
  if (a == b) return 0.0;
  if (const Link* l = findLink(a, b)) return hopUs(*l, bytes);
  // No direct link: stage the tensor through the host's memory.
  const DeviceId h = hostId();
  if (a == h || b == h) return kInf;
  const Link* up = findLink(a, h);
  const Link* down = findLink(h, b);
  if (!up || !down) return kInf;
  return hopUs(*up, bytes) + hopUs(*down, bytes);
}

bool Platform::exclusive(DeviceId a, DeviceId b) const {
  const auto n = static_cast<DeviceId>(devices.size());
  if (a < 0 || b < 0 || a >= n || b >= n || a == b) return false;
  const std::string& ia = devices[a].id;
  const std::string& ib = devices[b].id;
  for (const ExclusiveGroup& g : exclusiveGroups) {
    bool hasA = std::find(g.devices.begin(), g.devices.end(), ia) != g.devices.end();
    bool hasB = std::find(g.devices.begin(), g.devices.end(), ib) != g.devices.end();
    if (hasA && hasB) return true;
  }
  return false;
}

}  // namespace partex
