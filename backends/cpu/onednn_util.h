#pragma once
// Internal to the CPU backend: oneDNN helpers shared by the kernel files (engine, memory descriptors in
// the plain and the channels-last layout, weight caches, window geometry of Conv and pooling).

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "cpu/cpu_ops.h"
#include "kernels/kernels.h"

namespace partex::cpu {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline memory::dims toDims(const std::vector<int64_t>& s) {
  return memory::dims(s.begin(), s.end());
}

inline tag plainTag(size_t rank) {
  switch (rank) {
    case 1:
      return tag::a;
    case 2:
      return tag::ab;
    case 3:
      return tag::abc;
    case 4:
      return tag::abcd;
    case 5:
      return tag::abcde;
    case 6:
      return tag::abcdef;
    default:
      return tag::undef;
  }
}

inline memory::desc plainDesc(const std::vector<int64_t>& shape) {
  if (shape.empty()) return memory::desc({1}, dt::f32, tag::a);
  return memory::desc(toDims(shape), dt::f32, plainTag(shape.size()));
}

/// The Nhwc (channels-last) layout of Tensor for a float32 tensor of rank 3-5.
inline memory::desc nhwcDesc(const std::vector<int64_t>& shape) {
  const tag t = shape.size() == 3 ? tag::acb : shape.size() == 4 ? tag::acdb : tag::acdeb;
  return memory::desc(toDims(shape), dt::f32, t);
}

/// The descriptor of a tensor as it is stored (plain or channels-last).
inline memory::desc descOf(const Tensor& t) {
  return t.nhwc() ? nhwcDesc(t.shape()) : plainDesc(t.shape());
}

/// Attributes with a user scratchpad. oneDNN's default ("library") scratchpad is allocated before and freed
/// after every execution of a primitive: for a big convolution glibc maps and unmaps it each time, and
/// every run pays its page faults. Every primitive here takes scratchpadFor() instead.
inline dnnl::primitive_attr scratchAttr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

/// Per-thread scratch: one grow-only buffer per slot and thread, shared by every kernel the thread runs
/// (a thread runs one kernel at a time, and a kernel needs its scratch only while it runs): scratch never
/// adds up over a model's kernels, and no run allocates (page faults) once the buffers have grown.
/// Slots: 0 a source reordered into the primitive's layout, 1 a destination staged before its reorder
/// into the output, 2 oneDNN's scratchpad.
inline void* threadBuffer(int slot, size_t n) {
  struct Buffer {
    void* p = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(p); }
  };
  thread_local Buffer bufs[3];
  Buffer& buf = bufs[slot];
  if (n > buf.size) {
    std::free(buf.p);
    buf.size = 0;
    buf.p = std::aligned_alloc(64, (n + 63) / 64 * 64);
    if (!buf.p) throw std::bad_alloc();
    buf.size = n;
  }
  static char none[64];
  return n ? buf.p : none;
}

/// Memory of descriptor `d` over the calling thread's scratch slot (0 source, 1 destination).
inline memory threadScratch(int slot, const memory::desc& d) {
  return memory(d, engine(), threadBuffer(slot, d.get_size()));
}

/// The calling thread's scratchpad for a primitive (slot 2: an OpenMP team inside a primitive shares
/// its caller's scratchpad as oneDNN divides it).
template <class PD>
memory scratchpadFor(const PD& pd) {
  const memory::desc d = pd.scratchpad_desc();
  return memory(d, engine(), threadBuffer(2, d.get_size()));
}

/// A cached reorder between two descriptors.
struct Reorder {
  memory::desc from, to;
  dnnl::reorder prim;
  void run(dnnl::stream& s, memory& a, memory& b) {
    if (!prim || from != a.get_desc() || to != b.get_desc()) {
      from = a.get_desc();
      to = b.get_desc();
      prim = dnnl::reorder(a, b);
    }
    prim.execute(s, a, b);
  }
};

inline memory userMem(const memory::desc& md, const Tensor& t) {
  return memory(md, engine(), const_cast<void*>(t.raw()));
}

/// A sample hash of a tensor's contents, to notice weights changed in place.
inline uint64_t sampleHash(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw());
  const int64_t n = t.bytes();
  uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(n);
  if (n <= 0) return h;
  for (int i = 0; i < 64; ++i) {
    const int64_t at = n * i / 64;
    h = (h ^ p[at]) * 1099511628211ull;
  }
  return h;
}

/// Reordered weights, valid while the same storage with the same sampled contents is passed.
struct WeightCache {
  const void* ptr = nullptr;
  uint64_t hash = 0;
  memory::desc md;
  memory mem;
  bool valid(const Tensor& w, const memory::desc& want) const {
    return mem && ptr == w.raw() && hash == sampleHash(w) && md == want;
  }
};

/// Whether `from` is the row-major and `to` the channels-last layout of one float32 tensor of rank 3-5
/// (what plainToNhwc converts).
inline bool plainToNhwcPair(const memory::desc& from, const memory::desc& to) {
  const memory::dims d = from.dims();
  if (d.size() < 3 || d.size() > 5 || from.data_type() != dt::f32) return false;
  const std::vector<int64_t> shape(d.begin(), d.end());
  return from == plainDesc(shape) && to == nhwcDesc(shape);
}

/// plainToNhwc between two memories of plainToNhwcPair's layouts.
inline void plainToNhwc(const memory& from, const memory& to) {
  const memory::dims d = from.get_desc().dims();
  int64_t S = 1;
  for (size_t i = 2; i < d.size(); ++i) S *= d[i];
  plainToNhwc(static_cast<const float*>(from.get_data_handle()), static_cast<float*>(to.get_data_handle()), d[0], d[1], S,
              omp_get_max_threads());
}

/// Source memory in the primitive's layout: the user's memory or a conversion of it into the thread's
/// source scratch (row-major to channels-last by plainToNhwc, any other pair by oneDNN's reorder, kept
/// between runs).
inline memory toLayout(dnnl::stream& s, const memory& user, const memory::desc& want, Reorder& reorder) {
  if (user.get_desc() == want) return user;
  memory m = threadScratch(0, want);
  if (plainToNhwcPair(user.get_desc(), want))
    plainToNhwc(user, m);
  else
    reorder.run(s, const_cast<memory&>(user), m);
  return m;
}

inline std::string spatialAttrsCheck(const Node& n, size_t spatial) {
  for (const char* k : {"strides", "dilations", "kernel_shape"}) {
    if (!n.hasAttr(k)) continue;
    auto v = n.attrInts(k);
    if (spatial && v.size() != spatial) return std::string(k) + " has the wrong length";
    for (auto x : v)
      if (x <= 0) return std::string(k) + " must be positive";
  }
  if (n.hasAttr("pads")) {
    auto p = n.attrInts("pads");
    if (spatial && p.size() != 2 * spatial) return "pads has the wrong length";
    for (auto x : p)
      if (x < 0) return "negative pads";
  }
  return "";
}

/// Rank of input i when known (-1 otherwise).
inline int64_t inRank(const Graph& g, const Node& n, size_t i) {
  if (!hasIn(n, i)) return -1;
  const Value& v = g.values[static_cast<size_t>(n.inputs[i])];
  return v.shapeKnown ? static_cast<int64_t>(v.shape.size()) : -1;
}

/// Window geometry of Conv/pooling for one input shape.
struct Window {
  memory::dims strides, dil, padL, padR, kernel, out;
};

/// Computes pads (auto_pad or explicit) and output sizes; error text or "".
inline std::string windowGeometry(const Node& n, const std::vector<int64_t>& inSpatial, const std::vector<int64_t>& kernel,
                           bool ceilMode, Window& w) {
  const size_t s = inSpatial.size();
  auto strides = attrIntsOr(n, "strides", std::vector<int64_t>(s, 1));
  auto dil = attrIntsOr(n, "dilations", std::vector<int64_t>(s, 1));
  auto pads = attrIntsOr(n, "pads", std::vector<int64_t>(2 * s, 0));
  if (strides.size() != s || dil.size() != s || pads.size() != 2 * s) return "window attributes do not match the rank";
  const std::string autoPad = n.attrString("auto_pad", "NOTSET");
  w = Window{};
  for (size_t i = 0; i < s; ++i) {
    const int64_t in = inSpatial[i], k = kernel[i], st = strides[i], d = dil[i];
    if (st <= 0 || d <= 0 || k <= 0) return "non-positive window attribute";
    const int64_t ext = (k - 1) * d + 1;
    int64_t pb = pads[i], pe = pads[i + s], out;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      out = (in + st - 1) / st;
      const int64_t total = std::max<int64_t>(0, (out - 1) * st + ext - in);
      pb = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (autoPad == "VALID") {
      pb = pe = 0;
      out = (in - ext) / st + 1;
      if (in < ext) out = 0;
    } else if (autoPad == "NOTSET") {
      const int64_t span = in + pb + pe - ext;
      if (span < 0) return "window larger than the padded input";
      out = ceilMode ? (span + st - 1) / st + 1 : span / st + 1;
      // ceil_mode: the last window must start inside the input or left padding.
      if (ceilMode && (out - 1) * st >= in + pb) --out;
      // oneDNN wants out = (in + pb + pe' - ext) / st + 1 exactly: extend the right pad.
      pe = (out - 1) * st + ext - in - pb;
    } else {
      return "unknown auto_pad " + autoPad;
    }
    if (out <= 0) return "empty output";
    w.strides.push_back(st);
    w.dil.push_back(d - 1);
    w.padL.push_back(pb);
    w.padR.push_back(pe);
    w.kernel.push_back(k);
    w.out.push_back(out);
  }
  return "";
}


}  // namespace partex::cpu
