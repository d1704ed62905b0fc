#include "profile/executor.h"

#include <malloc.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "profile/ompenv.h"
#include "profile/profiler.h"
#include "sim/simulator.h"
#include "sim/stream.h"
#include "support/strings.h"


namespace partex {

namespace {

using Clock = std::chrono::steady_clock;

/// Weights from this size on are handed over to a run (handOverWeights) and may be kept by kernels in
/// a reordered copy; smaller ones stay in the graph (the fusion rules read constants).
constexpr int64_t kLargeWeightBytes = 65536;

/// Gives the pages of freed heap memory back to the system (glibc keeps them for reuse otherwise).
void returnFreePages() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

double medianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Everything one placement needs to run repeatedly: kernels, output storage, input pointers.
class Prepared {
 public:
  Prepared(const Graph& g, std::vector<Tensor>& leaves) : g_(g), leaves_(leaves) {}

  /// Prepares every operator on the device of `devOf` (ids into `deviceIds`). With `fuse`, each fused
  /// group (ir/fusion.h) of operators placed together runs as one kernel in the slot of its last
  /// operator (when all its external inputs are ready); its other operators become empty steps.
  Status prepare(const Backend& b, const std::vector<DeviceId>& devOf, const std::vector<std::string>& deviceIds,
                 bool fuse = true) {
    const size_t n = g_.nodes.size();
    kernels_.clear();
    kernels_.resize(n);
    outs_.assign(n, {});
    for (size_t v = 0; v < n; ++v) outs_[v].resize(g_.nodes[v].outputs.size());
    valuePtr_.assign(g_.values.size(), nullptr);
    for (size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].producer < 0) valuePtr_[v] = &leaves_[v];
    for (size_t op = 0; op < n; ++op) {
      const Node& node = g_.nodes[op];
      for (size_t k = 0; k < node.outputs.size(); ++k)
        if (node.outputs[k] >= 0) valuePtr_[static_cast<size_t>(node.outputs[k])] = &outs_[op][k];
    }
    ins_.assign(n, {});
    fusedInto_.assign(n, -1);
    groups_.clear();
    if (fuse) groups_ = fusedGroups(g_, std::vector<int>(devOf.begin(), devOf.end()));
    resolveAliases();
    for (const FusedGroup& grp : groups_) {
      const OpId last = grp.ops.back();
      const std::string& dev = deviceIds[static_cast<size_t>(devOf[static_cast<size_t>(last)])];
      auto k = b.prepareGroup(g_, grp, dev);
      if (!k) continue;  // the backend does not fuse this group: its operators run one by one
      kernels_[static_cast<size_t>(last)] = std::move(k).value();
      for (ValueId in : grp.inputs) ins_[static_cast<size_t>(last)].push_back(in >= 0 ? valuePtr_[static_cast<size_t>(in)] : nullptr);
      for (OpId op : grp.ops) fusedInto_[static_cast<size_t>(op)] = last;
    }
    for (size_t op = 0; op < n; ++op) {
      if (fusedInto_[op] >= 0 || aliasOf_[op] >= 0) continue;
      const Node& node = g_.nodes[op];
      const std::string& dev = deviceIds[static_cast<size_t>(devOf[op])];
      std::string why;
      if (!b.supports(g_, static_cast<OpId>(op), &why))
        return makeError("operator '", node.name, "' (", node.opType, "): backend '", b.name(),
                         "' cannot run it: ", why);
      auto k = b.prepare(g_, static_cast<OpId>(op), dev);
      if (!k) return makeError("operator '", node.name, "' (", node.opType, ") on ", dev, ": ", k.message());
      kernels_[op] = std::move(k).value();
      for (ValueId in : node.inputs) ins_[op].push_back(in >= 0 ? valuePtr_[static_cast<size_t>(in)] : nullptr);
    }
    resolveViews();
    placeConcatInputs();
    linkDeviceResident(devOf);
    return Status::ok();
  }

  /// Identity and inference Dropout (runsAsAlias) outside fused groups get no kernel: their output
  /// value is the tensor of their input's producer (through chains of them), so readers read it in
  /// place. Called before any kernel's inputs are bound. planMemory keeps the source alive until the
  /// alias's last reader (readersOf).
  void resolveAliases() {
    const size_t n = g_.nodes.size();
    aliasOf_.assign(n, -1);
    std::vector<bool> grouped(n, false);
    for (const FusedGroup& grp : groups_)
      for (OpId op : grp.ops) grouped[static_cast<size_t>(op)] = true;
    auto order = g_.topologicalOrder();
    if (!order) return;
    for (OpId op : *order) {
      const auto oi = static_cast<size_t>(op);
      if (grouped[oi] || !runsAsAlias(g_, op)) continue;
      const Node& node = g_.nodes[oi];
      const ValueId src = node.inputs[0];
      // The source may itself be an alias's output: valuePtr_ of it is resolved already (topological order).
      aliasOf_[oi] = src;
      valuePtr_[static_cast<size_t>(node.outputs[0])] = valuePtr_[static_cast<size_t>(src)];
    }
  }

  /// Reshape and its kin (runsAsView) that run alone on a kernel that can view its input
  /// (Kernel::canViewInput) make their output a view of input 0's storage: no copy, and no storage of
  /// their own in the memory plan, which keeps input 0 alive until the view's last reader (readersOf).
  /// Called once the kernels are prepared, before Concat's inputs are placed.
  void resolveViews() {
    viewOf_.assign(g_.nodes.size(), -1);
    for (size_t op = 0; op < g_.nodes.size(); ++op) {
      if (!kernels_[op] || fusedInto_[op] >= 0 || !kernels_[op]->canViewInput() ||
          !runsAsView(g_, static_cast<OpId>(op)))
        continue;
      viewOf_[op] = g_.nodes[op].inputs[0];
      kernels_[op]->viewInput();
    }
  }

  /// The operators that read value `v`'s tensor: its consumers, and the readers of an alias or a view
  /// of it (a view's own kernel reads it too).
  void readersOf(ValueId v, std::vector<OpId>& to) const {
    for (OpId c : g_.values[static_cast<size_t>(v)].consumers) {
      const auto ci = static_cast<size_t>(c);
      if (aliasOf_[ci] == v) {
        readersOf(g_.nodes[ci].outputs[0], to);
        continue;
      }
      to.push_back(c);
      if (viewOf_[ci] == v) readersOf(g_.nodes[ci].outputs[0], to);
    }
  }

  /// Makes the operators that read leaf `v` (a model input) read `t` instead, without a copy: a stream
  /// gives each inference of a context its own input set. `t` must outlive the runs that read it.
  void bindLeaf(ValueId v, const Tensor* t) {
    const Tensor* old = valuePtr_[static_cast<size_t>(v)];
    if (old == t) return;
    for (OpId c : g_.values[static_cast<size_t>(v)].consumers)
      for (const Tensor*& p : ins_[static_cast<size_t>(runner(c))])
        if (p == old) p = t;
    valuePtr_[static_cast<size_t>(v)] = t;
  }

  /// The operator whose kernel runs `op` (a fused group runs in its last operator's slot).
  OpId runner(OpId op) const {
    return fusedInto_[static_cast<size_t>(op)] >= 0 ? fusedInto_[static_cast<size_t>(op)] : op;
  }

  /// Accelerator kernels hand tensors to each other in the accelerator's memory (Kernel::linkInput):
  /// each kernel is offered, for every input produced by a kernel on the same device, that producer;
  /// then each kernel learns which of its outputs the host still reads (a consumer that did not link,
  /// one on another device, a model output), so that a GPU copies back only what crosses to the CPU,
  /// as the plan's transfers say. CPU kernels decline (the default), and nothing changes for them.
  void linkDeviceResident(const std::vector<DeviceId>& devOf) {
    const size_t n = g_.nodes.size();
    // The kernel output slot that holds value v: (runner op, output index).
    auto slotOf = [&](ValueId v, OpId& op, size_t& k) {
      const OpId p = g_.values[static_cast<size_t>(v)].producer;
      if (p < 0) return false;
      op = runner(p);
      const int gi = fusedInto_[static_cast<size_t>(p)] >= 0 ? groupIndexOf(p) : -1;
      if (gi >= 0) {
        if (groups_[static_cast<size_t>(gi)].output != v) return false;  // a group's inner tensor
        k = 0;
        return true;
      }
      const auto& outs = g_.nodes[static_cast<size_t>(p)].outputs;
      for (k = 0; k < outs.size(); ++k)
        if (outs[k] == v) return true;
      return false;
    };
    std::vector<char> hostNeeded(g_.values.size(), 0);
    for (size_t v = 0; v < g_.values.size(); ++v) hostNeeded[v] = g_.values[v].isGraphOutput;
    // An alias's readers read its source on the host.
    for (size_t op = 0; op < n; ++op)
      if (aliasOf_[op] >= 0) hostNeeded[static_cast<size_t>(aliasOf_[op])] = 1;
    // A kernel that would write channels-last for a reader that cannot read it as it is (an
    // accelerator's, which would transpose it on its host thread at every run) writes row-major.
    for (size_t op = 0; op < n; ++op) {
      if (!kernels_[op]) continue;
      const int gi = fusedInto_[op] >= 0 ? groupIndexOf(static_cast<OpId>(op)) : -1;
      const std::vector<ValueId>& ins = gi >= 0 ? groups_[static_cast<size_t>(gi)].inputs : g_.nodes[op].inputs;
      if (kernels_[op]->readsOtherLayout()) continue;
      for (ValueId v : ins) {
        OpId p = kNone;
        size_t k = 0;
        if (v >= 0 && slotOf(v, p, k) && kernels_[static_cast<size_t>(p)] &&
            kernels_[static_cast<size_t>(p)]->mayWriteOtherLayout())
          kernels_[static_cast<size_t>(p)]->writeRowMajor();
      }
    }
    for (size_t op = 0; op < n; ++op) {
      if (!kernels_[op]) continue;
      const int gi = fusedInto_[op] >= 0 ? groupIndexOf(static_cast<OpId>(op)) : -1;
      const std::vector<ValueId>& ins = gi >= 0 ? groups_[static_cast<size_t>(gi)].inputs : g_.nodes[op].inputs;
      for (size_t i = 0; i < ins.size(); ++i) {
        const ValueId v = ins[i];
        if (v < 0) continue;
        OpId p = kNone;
        size_t k = 0;
        bool linked = false;
        if (slotOf(v, p, k) && kernels_[static_cast<size_t>(p)] && devOf[static_cast<size_t>(p)] == devOf[op])
          linked = kernels_[op]->linkInput(i, *kernels_[static_cast<size_t>(p)], k);
        if (!linked) hostNeeded[static_cast<size_t>(v)] = 1;
      }
    }
    for (size_t op = 0; op < n; ++op) {
      if (!kernels_[op]) continue;
      const int gi = fusedInto_[op] >= 0 ? groupIndexOf(static_cast<OpId>(op)) : -1;
      if (gi >= 0) {
        kernels_[op]->setHostOutput(0, hostNeeded[static_cast<size_t>(groups_[static_cast<size_t>(gi)].output)] != 0);
        continue;
      }
      const auto& outs = g_.nodes[op].outputs;
      for (size_t k = 0; k < outs.size(); ++k)
        if (outs[k] >= 0) kernels_[op]->setHostOutput(k, hostNeeded[static_cast<size_t>(outs[k])] != 0);
    }
  }

  /// Concat into pre-placed slices: where a Concat's output is a row of contiguous slices (every
  /// dimension before the axis is 1), each input whose only reader is that Concat is made a view of its
  /// slice (Tensor::borrow), so its producer writes there and the Concat copies nothing for it. The
  /// Concat's output then has storage of its own, outside the memory plan (its slices are written
  /// before it runs). A producer that writes elsewhere after all (channels-last, another size) takes
  /// storage of its own and the Concat copies that input as usual: the kernel skips only an input
  /// already at its place. Channel concatenation in channels-last is strided, and oneDNN 2.6's
  /// convolutions fall back to their reference code for a strided destination, so it keeps its copy.
  void placeConcatInputs() {
    pinned_.assign(g_.values.size(), false);
    for (size_t c = 0; c < g_.nodes.size(); ++c) {
      const Node& node = g_.nodes[c];
      if (!kernels_[c] || fusedInto_[c] >= 0 || node.opType != "Concat" || (!node.domain.empty() && node.domain != "ai.onnx") ||
          node.outputs.size() != 1 || node.outputs[0] < 0)
        continue;
      const Value& out = g_.values[static_cast<size_t>(node.outputs[0])];
      const int64_t rank = static_cast<int64_t>(out.shape.size());
      int64_t axis = node.attrInt("axis", 0);
      if (axis < 0) axis += rank;
      if (!out.shapeKnown || axis < 0 || axis >= rank || out.isGraphOutput ||
          !tensorDTypeSupported(out.dtype))
        continue;
      bool contiguous = true;
      for (int64_t d = 0; d < axis; ++d) contiguous = contiguous && out.shape[static_cast<size_t>(d)] == 1;
      if (!contiguous) continue;
      // The inputs that can be written in place: produced by a kernel's own output, read by this Concat
      // alone (once), of the output's dtype and a known shape. Through views (resolveViews): for an input
      // that a Reshape makes of a tensor read by that Reshape alone, that tensor's producer writes the
      // slice, the Reshape views it there, and neither copies (Ultraface's Transpose, Reshape, Concat).
      std::vector<std::pair<size_t, ValueId>> slots;  // (input, the value whose producer writes it)
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        ValueId v = node.inputs[i];
        if (v < 0 || std::count(node.inputs.begin(), node.inputs.end(), v) != 1) continue;
        const int64_t bytes = g_.values[static_cast<size_t>(v)].bytes();
        bool ok = true;
        for (;;) {
          const Value& val = g_.values[static_cast<size_t>(v)];
          const OpId p = val.producer;
          // A producer that may write channels-last would drop the view, and the Concat's output would
          // sit outside the memory plan for nothing (DenseNet's concatenations: 30 MB more).
          ok = p >= 0 && kernels_[static_cast<size_t>(p)] && !kernels_[static_cast<size_t>(p)]->mayWriteOtherLayout() &&
               !val.isGraphOutput && val.shapeKnown && val.dtype == out.dtype && val.consumers.size() == 1 &&
               val.bytes() == bytes;
          if (!ok || viewOf_[static_cast<size_t>(p)] < 0) break;
          v = viewOf_[static_cast<size_t>(p)];
        }
        if (ok) slots.emplace_back(i, v);
      }
      if (slots.empty() || kernels_[c]->mayWriteOtherLayout()) continue;
      Tensor& dst = outs_[c][0];
      if (!dst.ensure(out.dtype, out.shape)) continue;
      auto* base = static_cast<std::byte*>(dst.raw());
      int64_t at = 0;
      size_t next = 0;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const ValueId v = node.inputs[i];
        const Value* val = v >= 0 ? &g_.values[static_cast<size_t>(v)] : nullptr;
        const int64_t bytes = val && val->shapeKnown ? val->bytes() : -1;
        if (bytes < 0) break;  // an unknown size: later slices' places are unknown
        if (next < slots.size() && slots[next].first == i) {
          const ValueId w = slots[next++].second;
          const Value& wv = g_.values[static_cast<size_t>(w)];
          const Node& prod = g_.nodes[static_cast<size_t>(wv.producer)];
          for (size_t k = 0; k < prod.outputs.size(); ++k)
            if (prod.outputs[k] == w && outs_[static_cast<size_t>(wv.producer)][k].borrow(wv.dtype, wv.shape, base + at, bytes))
              pinned_[static_cast<size_t>(w)] = true;
        }
        at += bytes;
      }
      pinned_[static_cast<size_t>(node.outputs[0])] = true;
    }
  }

  /// Shares activation storage between values whose lifetimes cannot overlap in any run of `seqs` (per
  /// lane, the operators in order; `preds` the data dependencies), as a runtime's memory planner does:
  /// value B may take value A's storage when A's producer and every operator that reads A happen before
  /// B's producer starts, through the lane orders and the dependencies. Each value gets a region of one
  /// arena (Tensor::place), the same in every run, regions overlapping only between values that are
  /// never alive together. Model outputs, Concat's pre-placed inputs and values of unknown size keep
  /// storage of their own. Peak activation memory then follows the plan's live tensors rather than the
  /// sum of all of them.
  void planMemory(const std::vector<std::vector<TaskId>>& seqs, const std::vector<std::vector<OpId>>& preds) {
    const size_t n = g_.nodes.size();
    // Happens-before as bitsets over the DAG of dependencies and lane orders.
    std::vector<std::vector<OpId>> before(n);
    for (size_t v = 0; v < n; ++v) before[v] = preds[v];
    for (const auto& seq : seqs)
      for (size_t i = 1; i < seq.size(); ++i)
        if (seq[i - 1] != seq[i]) before[static_cast<size_t>(seq[i])].push_back(seq[i - 1]);
    std::vector<int> indeg(n, 0);
    std::vector<std::vector<OpId>> after(n);
    for (size_t v = 0; v < n; ++v)
      for (OpId p : before[v]) {
        after[static_cast<size_t>(p)].push_back(static_cast<OpId>(v));
        ++indeg[v];
      }
    std::vector<OpId> order;
    for (size_t v = 0; v < n; ++v)
      if (indeg[v] == 0) order.push_back(static_cast<OpId>(v));
    for (size_t i = 0; i < order.size(); ++i)
      for (OpId s : after[static_cast<size_t>(order[i])])
        if (--indeg[static_cast<size_t>(s)] == 0) order.push_back(s);
    if (order.size() != n) return;  // not a DAG (cannot happen for a valid program): no sharing
    const size_t words = (n + 63) / 64;
    std::vector<uint64_t> hb(n * words, 0);  // hb[b] has bit a when a happens before b
    for (OpId b : order) {
      uint64_t* row = &hb[static_cast<size_t>(b) * words];
      for (OpId a : before[static_cast<size_t>(b)]) {
        const uint64_t* ra = &hb[static_cast<size_t>(a) * words];
        for (size_t w = 0; w < words; ++w) row[w] |= ra[w];
        row[static_cast<size_t>(a) / 64] |= uint64_t{1} << (static_cast<size_t>(a) % 64);
      }
    }
    auto happensBefore = [&](OpId a, OpId b) {
      return (hb[static_cast<size_t>(b) * words + static_cast<size_t>(a) / 64] >> (static_cast<size_t>(a) % 64)) & 1;
    };
    // Offsets in one arena, as TensorFlow Lite's arena does (tensorflow/lite/simple_memory_arena.cc,
    // SimpleMemoryArena::Allocate): the largest values first, each at the smallest gap between the
    // values already placed whose lifetimes meet its own (sorted by offset) that fits it, else after
    // the last of them. Two smaller values alive together can then share the place of a larger one
    // that died before them, which storage passed along per slot could not (the PP-OCRv5 detector's
    // slots summed to 46.0 MiB, its arena takes 40.6).
    struct Item {
      OpId op;
      size_t k;
      ValueId v;
      int64_t bytes;  ///< Rounded up to Tensor::kAlignment.
    };
    std::vector<Item> items;
    for (OpId x : order) {
      const auto xi = static_cast<size_t>(x);
      if (!kernels_[xi]) continue;
      const Node& node = g_.nodes[xi];
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        const ValueId v = node.outputs[k];
        if (v < 0 || g_.values[static_cast<size_t>(v)].isGraphOutput || pinned_[static_cast<size_t>(v)]) continue;
        if (k == 0 && viewOf_[xi] >= 0) continue;  // a view: its input's storage
        const Value& val = g_.values[static_cast<size_t>(v)];
        if (!val.shapeKnown || !tensorDTypeSupported(val.dtype)) continue;
        const int64_t bytes = val.bytes();
        constexpr auto kAlign = static_cast<int64_t>(Tensor::kAlignment);
        if (bytes > 0) items.push_back({x, k, v, (bytes + kAlign - 1) / kAlign * kAlign});
      }
    }
    // a ends before b starts: a's producer and every reader of a happen before b's producer.
    // Readers through aliases (resolveAliases) and views (resolveViews): an Identity's or a Reshape's
    // reader reads its source's region.
    std::vector<std::vector<OpId>> readers(items.size());
    for (size_t i = 0; i < items.size(); ++i) readersOf(items[i].v, readers[i]);
    std::vector<size_t> itemOf(g_.values.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) itemOf[static_cast<size_t>(items[i].v)] = i;
    auto endsBefore = [&](const Item& a, const Item& b) {
      if (!happensBefore(a.op, b.op)) return false;
      for (OpId c : readers[itemOf[static_cast<size_t>(a.v)]])
        if (!happensBefore(runner(c), b.op)) return false;
      return true;
    };
    std::vector<size_t> bySize(items.size());
    for (size_t i = 0; i < items.size(); ++i) bySize[i] = i;
    std::stable_sort(bySize.begin(), bySize.end(), [&](size_t a, size_t b) { return items[a].bytes > items[b].bytes; });
    std::vector<int64_t> offset(items.size(), -1);
    std::vector<size_t> placed;  // by offset
    int64_t total = 0;
    for (size_t i : bySize) {
      int64_t best = -1, bestGap = std::numeric_limits<int64_t>::max(), at = 0;
      for (size_t j : placed) {
        if (endsBefore(items[j], items[i]) || endsBefore(items[i], items[j])) continue;
        const int64_t gap = offset[j] - at;
        if (gap >= items[i].bytes && gap < bestGap) {
          best = at;
          bestGap = gap;
        }
        at = std::max(at, offset[j] + items[j].bytes);
      }
      offset[i] = best >= 0 ? best : at;
      total = std::max(total, offset[i] + items[i].bytes);
      placed.insert(std::upper_bound(placed.begin(), placed.end(), i,
                                     [&](size_t a, size_t b) { return offset[a] < offset[b]; }),
                    i);
    }
    arena_.reset(total > 0 ? static_cast<std::byte*>(std::aligned_alloc(Tensor::kAlignment, static_cast<size_t>(total)))
                           : nullptr);
    plannedBytes_ = arena_ ? total : 0;
    if (!arena_) return;  // out of memory (or nothing to plan): every value takes storage of its own
    for (size_t i = 0; i < items.size(); ++i) {
      const Item& it = items[i];
      const Value& val = g_.values[static_cast<size_t>(it.v)];
      // Failure leaves the tensor empty: its kernel then allocates, as without a plan.
      (void)outs_[static_cast<size_t>(it.op)][it.k].place(val.dtype, val.shape, arena_.get() + offset[i], it.bytes);
    }
  }

  /// Bytes of the activation arena planMemory made (0 before, or when it could not allocate it).
  int64_t plannedBytes() const { return plannedBytes_; }

  Status runOne(size_t op) {
    if (!kernels_[op]) return Status::ok();  // an operator fused into a later one's kernel
    auto st = kernels_[op]->run(ins_[op], outs_[op]);
    if (!st) {
      const Node& node = g_.nodes[op];
      return makeError("operator '", node.name, "' (", node.opType, "): ", st.message());
    }
    if (transient_) {
      kernels_[op]->releaseCaches();
      // A kernel that read a large weight may have held a reordered copy of it: give its pages back
      // now, or glibc keeps them (its mmap threshold grows with every large block freed) and the next
      // kernel's copy stacks on them, so that a run made once peaks at the sum of the copies.
      if (readsLargeWeight(op)) returnFreePages();
    }
    if (!releasing_.empty() && !ranOnce_[op]) {
      ranOnce_[op] = true;
      // Weights this kernel now keeps its own copy of: the last reader to take its copy frees them.
      for (size_t i = 0; i < insValue_[op].size(); ++i) {
        const ValueId v = insValue_[op][i];
        if (v < 0 || !releasing_[static_cast<size_t>(v)]) continue;
        if (!kernels_[op]->keepsCopy(i)) {
          releasable_[static_cast<size_t>(v)].store(-1000000, std::memory_order_relaxed);
          continue;
        }
        if (releasable_[static_cast<size_t>(v)].fetch_sub(1, std::memory_order_acq_rel) == 1)
          leaves_[static_cast<size_t>(v)] = Tensor();
      }
    }
    return Status::ok();
  }

  /// Frees each weight once every kernel that reads it keeps its own copy (after its first run), so
  /// that the weights are held once, not twice (plain and reordered). The leaves are then gone: no other
  /// run may use them afterwards.
  void releaseWeightsAsTaken() {
    const size_t n = g_.nodes.size();
    releasing_.assign(g_.values.size(), false);
    releasable_ = std::make_unique<std::atomic<int>[]>(g_.values.size());
    for (size_t v = 0; v < g_.values.size(); ++v) releasable_[v].store(0, std::memory_order_relaxed);
    ranOnce_.assign(n, false);
    insValue_.assign(n, {});
    for (size_t op = 0; op < n; ++op) {
      if (!kernels_[op]) continue;
      const int gi = fusedInto_[op] >= 0 ? groupIndexOf(static_cast<OpId>(op)) : -1;
      insValue_[op] = gi >= 0 ? groups_[static_cast<size_t>(gi)].inputs : g_.nodes[op].inputs;
      for (ValueId v : insValue_[op])
        if (v >= 0 && g_.values[static_cast<size_t>(v)].isWeight && !leaves_[static_cast<size_t>(v)].empty()) {
          releasing_[static_cast<size_t>(v)] = true;
          releasable_[static_cast<size_t>(v)].fetch_add(1, std::memory_order_relaxed);
        }
    }
  }
  /// Operators whose output was a view of their input in the last run (resolveViews; a channels-last
  /// input is copied instead).
  int viewsOfInputs() const {
    int count = 0;
    for (size_t op = 0; op < viewOf_.size(); ++op)
      if (viewOf_[op] >= 0 && !outs_[op].empty() && outs_[op][0].borrowed()) ++count;
    return count;
  }
  /// Concat inputs whose producer wrote them in their pre-placed slice in the last run (its output is
  /// still a view: a producer that wrote elsewhere took storage of its own).
  int concatInputsInPlace() const {
    int count = 0;
    for (size_t v = 0; v < pinned_.size(); ++v) {
      const Value& val = g_.values[v];
      if (!pinned_[v] || val.producer < 0) continue;
      const Node& prod = g_.nodes[static_cast<size_t>(val.producer)];
      for (size_t k = 0; k < prod.outputs.size(); ++k)
        if (prod.outputs[k] == static_cast<ValueId>(v) && outs_[static_cast<size_t>(val.producer)][k].borrowed()) ++count;
    }
    return count;
  }
  /// Kernels free their caches after every run (a run made once, as the reference run).
  void setTransient(bool t) { transient_ = t; }
  /// Whether operator `op` reads a weight of kLargeWeightBytes or more (one a kernel may keep a copy of).
  bool readsLargeWeight(size_t op) const {
    for (ValueId v : g_.nodes[op].inputs)
      if (v >= 0 && g_.values[static_cast<size_t>(v)].isWeight &&
          g_.values[static_cast<size_t>(v)].bytes() >= kLargeWeightBytes)
        return true;
    return false;
  }
  /// Per operator: the last operator of the fused group whose kernel ran it; -1 when it ran alone.
  const std::vector<OpId>& fusedInto() const { return fusedInto_; }
  const std::vector<FusedGroup>& groups() const { return groups_; }
  const Tensor* value(ValueId v) const { return valuePtr_[static_cast<size_t>(v)]; }
  /// Takes the row-major result of a model output out of the run (no copy), when a kernel of this
  /// program wrote it into storage of its own; false otherwise (a leaf, channels-last, a view, absent:
  /// the caller copies value(v)). The program must not run again afterwards.
  bool takeOutput(ValueId v, Tensor& to) {
    const OpId p = g_.values[static_cast<size_t>(v)].producer;
    if (p < 0) return false;
    const Node& prod = g_.nodes[static_cast<size_t>(p)];
    for (size_t k = 0; k < prod.outputs.size(); ++k) {
      if (prod.outputs[k] != v) continue;
      Tensor& t = outs_[static_cast<size_t>(p)][k];
      if (valuePtr_[static_cast<size_t>(v)] != &t || t.empty() || t.nhwc() || t.borrowed()) return false;
      to = std::move(t);
      return true;
    }
    return false;
  }

 private:
  const Graph& g_;
  std::vector<Tensor>& leaves_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<std::vector<Tensor>> outs_;
  std::vector<const Tensor*> valuePtr_;
  std::vector<std::vector<const Tensor*>> ins_;
  std::vector<OpId> fusedInto_;  ///< Per operator: the last operator of its fused group, -1 when alone.
  std::vector<ValueId> aliasOf_;  ///< Per operator: the value it passes through (resolveAliases), else -1.
  std::vector<ValueId> viewOf_;   ///< Per operator: the value its output views (resolveViews), else -1.
  std::vector<FusedGroup> groups_;
  /// The activation arena (planMemory): every planned value's tensor is a view of its region.
  struct FreeBytes {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte[], FreeBytes> arena_;
  int64_t plannedBytes_ = 0;
  std::vector<bool> pinned_;  ///< Per value: outside the memory plan (a Concat's pre-placed slices and output).
  /// The group (index into groups_) whose kernel runs in this operator's slot; -1 when none.
  int groupIndexOf(OpId op) const {
    for (size_t i = 0; i < groups_.size(); ++i)
      if (groups_[i].ops.back() == op && fusedInto_[static_cast<size_t>(op)] == op) return static_cast<int>(i);
    return -1;
  }
  bool transient_ = false;
  std::vector<bool> releasing_, ranOnce_;
  std::unique_ptr<std::atomic<int>[]> releasable_;
  std::vector<std::vector<ValueId>> insValue_;
};

struct RunTimes {
  double makespanUs = 0;
  std::vector<double> startUs, endUs;
  double cpuUs = 0;   ///< CPU time of the lanes while they ran or spun (waits inside a team excluded).
  double busyUs = 0;  ///< Their wall time from the start to their last operator, less sleeps and team waits.
  int sleeps = 0;     ///< Waits that outlasted the spin and slept.
  std::vector<double> probeUs;  ///< Per lane: cpuSpeedProbeUs() just before the run; 0 for an idle lane.
};

/// CPU time of the calling thread in microseconds.
double threadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

/// Puts the calling thread under SCHED_IDLE (true) or back under SCHED_OTHER; false on failure.
bool setIdlePolicy(bool idle) {
  sched_param sp{};
  sp.sched_priority = 0;
  return pthread_setschedparam(pthread_self(), idle ? SCHED_IDLE : SCHED_OTHER, &sp) == 0;
}

/// Which thread runs what. A lane is one worker thread, pinned to one logical CPU (or unpinned for a
/// device the backend does not pin). Every device of a CPU is served by that CPU's lane, so two
/// devices that are modes of one core (cpu-serial and core0) never have two threads competing for it;
/// a multi-thread device (cpu-parallel) is led by the lane of its first CPU, and the lanes of its other
/// CPUs take part in each of its operators by stepping aside (yielding their CPU to the OpenMP thread
/// pinned there) until it ends. Each lane runs its operators in the order of their predicted start
/// times, which is the simulator's order for every device and, for devices that share a lane, the
/// order the simulator interleaves them in.
struct LaneLayout {
  std::vector<int> laneCore;                 ///< Per lane: the CPU it is pinned to, -1 unpinned.
  std::vector<int> masterLane;               ///< Per device: the lane that runs its kernels (-1: none).
  std::vector<std::vector<int>> helperLanes; ///< Per device: the other lanes its kernels occupy.
  std::vector<char> team;                    ///< Per device: a multi-thread (OpenMP team) device.
};

LaneLayout layoutLanes(const std::vector<std::string>& deviceIds, const std::vector<BackendDevice>& backendDevices,
                       const std::vector<std::vector<DeviceId>>& exclusiveWith = {}) {
  LaneLayout L;
  const int m = static_cast<int>(deviceIds.size());
  L.masterLane.assign(static_cast<size_t>(m), -1);
  L.helperLanes.assign(static_cast<size_t>(m), {});
  L.team.assign(static_cast<size_t>(m), 0);
  auto laneOfCore = [&](int core) {
    for (size_t i = 0; i < L.laneCore.size(); ++i)
      if (L.laneCore[i] == core) return static_cast<int>(i);
    L.laneCore.push_back(core);
    return static_cast<int>(L.laneCore.size() - 1);
  };
  for (DeviceId d = 0; d < m; ++d) {
    const auto& id = deviceIds[static_cast<size_t>(d)];
    auto it = std::find_if(backendDevices.begin(), backendDevices.end(),
                         [&](const BackendDevice& b) { return b.id == id; });
    if (it == backendDevices.end()) continue;
    if (it->core < 0) {  // Unpinned: a lane of its own.
      L.laneCore.push_back(-1);
      L.masterLane[static_cast<size_t>(d)] = static_cast<int>(L.laneCore.size() - 1);
      continue;
    }
    L.masterLane[static_cast<size_t>(d)] = laneOfCore(it->core);
    L.team[static_cast<size_t>(d)] = it->threads > 1;
    for (int c : it->teamCores)
      if (c != it->core) L.helperLanes[static_cast<size_t>(d)].push_back(laneOfCore(c));
  }
  // Devices the platform makes mutually exclusive but that use no lane in common (two unpinned
  // devices, say): the other's lane steps aside for each operator of the first, which orders the two
  // devices' operators as the predicted timeline does.
  auto lanesOf = [&](DeviceId d) {
    std::vector<int> l = L.helperLanes[static_cast<size_t>(d)];
    l.push_back(L.masterLane[static_cast<size_t>(d)]);
    return l;
  };
  for (DeviceId a = 0; a < m && static_cast<size_t>(a) < exclusiveWith.size(); ++a)
    for (DeviceId b : exclusiveWith[static_cast<size_t>(a)]) {
      if (b <= a || b >= m || L.masterLane[static_cast<size_t>(a)] < 0 || L.masterLane[static_cast<size_t>(b)] < 0)
        continue;
      const auto la = lanesOf(a), lb = lanesOf(b);
      if (std::any_of(la.begin(), la.end(), [&](int x) { return std::find(lb.begin(), lb.end(), x) != lb.end(); }))
        continue;
      L.helperLanes[static_cast<size_t>(a)].push_back(L.masterLane[static_cast<size_t>(b)]);
    }
  return L;
}

/// What each lane does in one run of a plan.
struct LaneProgram {
  std::vector<std::vector<TaskId>> seq;  ///< Per lane: operators it runs or takes part in, in order.
  int modeSwitches = 0;  ///< Per run: times a lane goes from its own operators to a team's or back.
  std::vector<std::string> notes;
};

Result<LaneProgram> programLanes(const CostTable& t, const Plan& plan, const LaneLayout& L) {
  const int n = t.numTasks();
  auto tl = simulate(t, plan);
  if (!tl) return Error{tl.message()};
  const auto topo = t.topoOrder();
  std::vector<int> topoPos(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < topo.size(); ++i) topoPos[static_cast<size_t>(topo[i])] = static_cast<int>(i);
  // All operators by predicted start (ties: topological position): a linear extension of the graph, so
  // lanes that follow sub-sequences of it cannot deadlock.
  std::vector<TaskId> all(static_cast<size_t>(n));
  for (TaskId v = 0; v < n; ++v) all[static_cast<size_t>(v)] = v;
  std::sort(all.begin(), all.end(), [&](TaskId a, TaskId b) {
    const double sa = tl->tasks[static_cast<size_t>(a)].start, sb = tl->tasks[static_cast<size_t>(b)].start;
    if (sa != sb) return sa < sb;
    return topoPos[static_cast<size_t>(a)] < topoPos[static_cast<size_t>(b)];
  });
  LaneProgram P;
  P.seq.assign(L.laneCore.size(), {});
  std::vector<double> laneFree(L.laneCore.size(), 0.0);
  std::vector<int> lastKind(L.laneCore.size(), -1);  // 0: own operator, 1: a team's
  std::set<std::string> overlapping;
  for (TaskId v : all) {
    const DeviceId d = plan.device[static_cast<size_t>(v)];
    const int master = L.masterLane[static_cast<size_t>(d)];
    if (master < 0) return makeError("executor: device '", t.deviceIds[static_cast<size_t>(d)], "' has no lane");
    const auto& slot = tl->tasks[static_cast<size_t>(v)];
    auto use = [&](int lane, int kind) {
      const auto l = static_cast<size_t>(lane);
      P.seq[l].push_back(v);
      if (lastKind[l] >= 0 && lastKind[l] != kind) ++P.modeSwitches;
      lastKind[l] = kind;
      if (slot.start < laneFree[l] - 1e-6 && slot.end > slot.start)
        overlapping.insert(t.deviceIds[static_cast<size_t>(d)]);
      laneFree[l] = std::max(laneFree[l], slot.end);
    };
    const bool team = !L.helperLanes[static_cast<size_t>(d)].empty();
    use(master, team ? 1 : 0);
    for (int h : L.helperLanes[static_cast<size_t>(d)]) use(h, 1);
  }
  if (!overlapping.empty()) {
    std::string list;
    for (const auto& id : overlapping) list += (list.empty() ? "" : ", ") + id;
    P.notes.push_back("the plan runs " + list +
                      " at the same time as another device on the same CPU (the platform does not make them "
                      "exclusive): the executor runs them one after the other, so the measured makespan is not "
                      "the predicted one");
  }
  return P;
}

/// One persistent thread per lane, created and pinned once and kept for every run, as a runtime keeps
/// its threads: a fresh thread per run would time its first touches (stack, the OpenMP and oneDNN
/// per-thread state and scratchpads) inside the kernels. run() hands each lane the same job and returns
/// when all have finished it.
class LaneTeam {
 public:
  explicit LaneTeam(const std::vector<int>& laneCore) {
    threads_.reserve(laneCore.size());
    for (size_t i = 0; i < laneCore.size(); ++i)
      threads_.emplace_back([this, i, core = laneCore[i]] {
        pinThisThread(core);
        uint64_t seen = 0;
        for (;;) {
          std::unique_lock lk(mu_);
          cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
          if (stop_) return;
          seen = generation_;
          const auto* job = job_;
          lk.unlock();
          (*job)(static_cast<int>(i));
          lk.lock();
          if (--pending_ == 0) doneCv_.notify_all();
        }
      });
  }
  ~LaneTeam() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  LaneTeam(const LaneTeam&) = delete;
  LaneTeam& operator=(const LaneTeam&) = delete;

  /// Runs job(lane) on every lane (concurrently) and waits for all; `whileRunning` runs on the calling
  /// thread meanwhile (it starts the clock).
  void run(const std::function<void(int)>& job, const std::function<void()>& whileRunning) {
    {
      std::lock_guard lk(mu_);
      job_ = &job;
      pending_ = threads_.size();
      ++generation_;
    }
    cv_.notify_all();
    whileRunning();
    std::unique_lock lk(mu_);
    doneCv_.wait(lk, [&] { return pending_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_, doneCv_;
  const std::function<void(int)>* job_ = nullptr;
  size_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

/// What the lanes of one run share to wait for each other (runLanes, executeStream): a lane spins
/// (yielding) up to `spinUs` for its condition, then sleeps on `cv`; a lane that ends an operator wakes
/// the sleepers; the first failure is kept and stops every wait.
struct LaneWaits {
  std::mutex& mu;
  std::condition_variable& cv;
  std::atomic<int>& sleepers;
  std::atomic<int>& sleeps;
  std::atomic<bool>& failed;
  std::string& error;
  int spinUs;

  void wake() const {
    if (sleepers.load(std::memory_order_acquire) > 0) {
      { std::lock_guard lk(mu); }  // A sleeper checks its condition under mu: no lost wake-up.
      cv.notify_all();
    }
  }
  void fail(const std::string& msg) const {
    {
      std::lock_guard lk(mu);
      if (!failed.load()) error = msg;
      failed.store(true);
    }
    cv.notify_all();
  }
  /// Waits until cond() holds or the run failed; returns the microseconds slept.
  template <class Cond>
  double waitFor(Cond cond) const {
    if (cond() || failed.load(std::memory_order_relaxed)) return 0;
    const auto spinUntil = Clock::now() + std::chrono::microseconds(spinUs);
    for (int i = 1; !cond() && !failed.load(std::memory_order_relaxed); ++i) {
      std::this_thread::yield();
      if (i % 16 == 0 && Clock::now() >= spinUntil) {
        const auto s0 = Clock::now();
        sleeps.fetch_add(1, std::memory_order_relaxed);
        sleepers.fetch_add(1, std::memory_order_acq_rel);
        {
          std::unique_lock lk(mu);
          cv.wait(lk, [&] { return cond() || failed.load(); });
        }
        sleepers.fetch_sub(1, std::memory_order_acq_rel);
        return std::chrono::duration<double, std::micro>(Clock::now() - s0).count();
      }
    }
    return 0;
  }
};

/// One run of a lane program: each lane walks its sequence; an operator starts when its inputs are
/// ready (atomic dependency counters) and, for a team's operator, when the helper lanes have arrived
/// (finished everything before it). A waiting lane spins, yielding its CPU at every turn so that a
/// team thread or another program scheduled there runs at once, and sleeps after `spinUs`.
Result<RunTimes> runLanes(LaneTeam& team, Prepared& prep, const std::vector<DeviceId>& devOf,
                          const LaneLayout& L, const LaneProgram& P, const std::vector<std::vector<OpId>>& preds,
                          const std::vector<std::vector<OpId>>& succs, int spinUs, const std::atomic<bool>* cancel) {
  const size_t n = preds.size();
  const size_t lanes = L.laneCore.size();
  auto remaining = std::make_unique<std::atomic<int>[]>(n);
  auto arrived = std::make_unique<std::atomic<int>[]>(n);  // helper lanes at a team operator
  auto done = std::make_unique<std::atomic<bool>[]>(n);
  for (size_t v = 0; v < n; ++v) {
    remaining[v].store(static_cast<int>(preds[v].size()), std::memory_order_relaxed);
    arrived[v].store(0, std::memory_order_relaxed);
    done[v].store(false, std::memory_order_relaxed);
  }
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> sleepers{0};
  std::atomic<bool> failed{false};
  std::string error;
  RunTimes times;
  times.startUs.assign(n, 0);
  times.endUs.assign(n, 0);
  std::vector<double> cpuOf(lanes, 0.0), busyOf(lanes, 0.0);
  times.probeUs.assign(lanes, 0.0);
  std::atomic<int> sleeps{0};
  int active = 0;
  for (size_t l = 0; l < lanes; ++l)
    if (!P.seq[l].empty()) ++active;
  std::atomic<int> atStart{0};
  std::atomic<bool> go{false};
  Clock::time_point t0;
  const LaneWaits waits{mu, cv, sleepers, sleeps, failed, error, spinUs};
  auto wakeSleepers = [&] { waits.wake(); };
  auto fail = [&](const std::string& msg) { waits.fail(msg); };

  auto worker = [&](int lane) {
    const auto& seq = P.seq[static_cast<size_t>(lane)];
    if (seq.empty()) return;
    // The CPU's speed right now (it changes in phases on a virtual machine): before the clock starts.
    times.probeUs[static_cast<size_t>(lane)] = cpuSpeedProbeUs();
    atStart.fetch_add(1, std::memory_order_acq_rel);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    const double cpu0 = threadCpuUs();
    double sleptUs = 0, teamWaitUs = 0, teamWaitCpuUs = 0;
    bool stuckIdle = false;
    auto waitFor = [&](auto cond) { sleptUs += waits.waitFor(cond); };
    for (size_t at = 0; at < seq.size(); ++at) {
      const TaskId v = seq[at];
      const auto vi = static_cast<size_t>(v);
      const DeviceId d = devOf[vi];
      if (L.masterLane[static_cast<size_t>(d)] != lane) {
        // A run of consecutive operators of the same team in this lane's sequence: the lane has nothing
        // of its own between them, so it arrives at all of them at once and steps aside until the last
        // is done, instead of a handshake (and two scheduling-policy changes) per operator, which held
        // each team operator up for the lane to be scheduled again.
        size_t last = at;
        while (last + 1 < seq.size() && devOf[static_cast<size_t>(seq[last + 1])] == d) ++last;
        // A helper of a team operator: arrive, then step aside until the team has finished it.
        const auto w0 = Clock::now();
        const double c0 = threadCpuUs();
        // Stepping aside for an OpenMP team thread pinned to this CPU: under SCHED_IDLE, because CFS does
        // not hand the CPU to a thread far ahead in virtual runtime on sched_yield (a team thread that has
        // done real work is), so a plainly yielding lane kept the team thread off its CPU for a scheduler
        // tick per operator (4 ms here); an idle-policy thread is preempted at once by any thread that
        // wakes there. Going back to SCHED_OTHER needs privilege (or RLIMIT_NICE) where the process
        // lacks it the lane stays idle-policy for the rest of the plan's runs, and other programs then
        // take its CPU first (such runs count as disturbed).
        const bool team = L.team[static_cast<size_t>(d)];
        if (team && !stuckIdle) setIdlePolicy(true);
        for (size_t k = at; k <= last; ++k)
          arrived[static_cast<size_t>(seq[k])].fetch_add(1, std::memory_order_acq_rel);
        wakeSleepers();
        waitFor([&] {
          for (size_t k = at; k <= last; ++k)
            if (!done[static_cast<size_t>(seq[k])].load(std::memory_order_acquire)) return false;
          return true;
        });
        at = last;
        if (team && !stuckIdle && !setIdlePolicy(false)) stuckIdle = true;
        teamWaitCpuUs += threadCpuUs() - c0;
        teamWaitUs += std::chrono::duration<double, std::micro>(Clock::now() - w0).count();
        if (failed.load()) break;
        continue;
      }
      const int helpers = static_cast<int>(L.helperLanes[static_cast<size_t>(d)].size());
      waitFor([&] {
        return remaining[vi].load(std::memory_order_acquire) == 0 &&
               arrived[vi].load(std::memory_order_acquire) == helpers;
      });
      if (failed.load()) break;
      if (cancel && cancel->load(std::memory_order_relaxed)) {
        fail("cancelled");
        break;
      }
      // A team operator counts in the lane's CPU share: when another program holds a CPU of the team,
      // the leader finishes its part and sleeps at the team's barrier, so its CPU time falls behind.
      const auto s = Clock::now();
      Status st = prep.runOne(vi);
      const auto e = Clock::now();
      times.startUs[vi] = std::chrono::duration<double, std::micro>(s - t0).count();
      times.endUs[vi] = std::chrono::duration<double, std::micro>(e - t0).count();
      if (!st) {
        fail(st.message());
        break;
      }
      for (OpId sc : succs[vi]) remaining[static_cast<size_t>(sc)].fetch_sub(1, std::memory_order_acq_rel);
      done[vi].store(true, std::memory_order_release);
      wakeSleepers();
    }
    const double laneEnd = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    cpuOf[static_cast<size_t>(lane)] = threadCpuUs() - cpu0 - teamWaitCpuUs;
    busyOf[static_cast<size_t>(lane)] = std::max(0.0, laneEnd - sleptUs - teamWaitUs);
  };
  team.run(worker, [&] {
    while (atStart.load(std::memory_order_acquire) < active) std::this_thread::yield();
    t0 = Clock::now();
    go.store(true, std::memory_order_release);
  });
  if (failed.load()) return Error{error};
  for (size_t v = 0; v < n; ++v) times.makespanUs = std::max(times.makespanUs, times.endUs[v]);
  times.sleeps = sleeps.load();
  for (size_t l = 0; l < lanes; ++l) {
    times.cpuUs += cpuOf[l];
    times.busyUs += busyOf[l];
  }
  return times;
}

}  // namespace

double tensorScale(const Tensor& ref) {
  const int64_t n = ref.numElements();
  double scale = 0;
  if (ref.dtype() == DType::Float32 && ref.raw()) {
    const float* a = static_cast<const float*>(ref.raw());
    float s = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float x = std::fabs(a[i]);
      if (x <= std::numeric_limits<float>::max() && x > s) s = x;  // finite (NaN compares false)
    }
    return s;
  }
  if (ref.dtype() == DType::Float64 || ref.dtype() == DType::Float16 || ref.dtype() == DType::BFloat16)
    for (int64_t i = 0; i < n; ++i) {
      const double a = std::fabs(ref.valueAsDouble(i));
      if (std::isfinite(a)) scale = std::max(scale, a);
    }
  return scale;
}

bool tensorsClose(const Tensor& ref, const Tensor& got, double rtol, double& maxAbs, double& maxRel, std::string* why) {
  return tensorsClose(ref, tensorScale(ref), got, rtol, maxAbs, maxRel, why);
}

namespace {

/// One element pair of a floating-point comparison (tensorsClose's rule): updates the largest differences,
/// false when the pair is out of tolerance.
inline bool closePair(double a, double b, double rtol, double floorAbs, double& maxAbs, double& maxRel) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return true;
  const double diff = std::fabs(a - b);
  const double mag = std::max(std::fabs(a), std::fabs(b));
  maxAbs = std::max(maxAbs, diff);
  if (mag > 0) maxRel = std::max(maxRel, diff / mag);
  return diff <= rtol * mag || diff <= floorAbs;
}

void describeMismatch(int64_t i, double a, double b, std::string* why) {
  if (!why) return;
  char buf[160];
  std::snprintf(buf, sizeof buf, "element %lld: expected %.9g, got %.9g", static_cast<long long>(i), a, b);
  *why = buf;
}

}  // namespace

bool tensorsClose(const Tensor& ref, double refScale, const Tensor& got, double rtol, double& maxAbs, double& maxRel,
                  std::string* why) {
  if (ref.dtype() != got.dtype() || ref.shape() != got.shape()) {
    if (why) *why = "expected " + ref.describe() + ", got " + got.describe();
    return false;
  }
  const int64_t n = ref.numElements();
  if (n > 0 && ref.raw() && got.raw() && std::memcmp(ref.raw(), got.raw(), static_cast<size_t>(ref.bytes())) == 0)
    return true;
  const double floorAbs = rtol * refScale;
  bool ok = true;
  if (ref.dtype() == DType::Float32 && ref.raw() && got.raw()) {
    // Typed, in blocks: a pass without branches (equal and unequal pairs alike, so no mispredicted
    // branch where outputs differ in some elements and not in others) takes the block's largest
    // differences, unless a pair is out of tolerance or not a number (a NaN, infinities of one sign:
    // their difference is NaN); then the block is taken again pair by pair with closePair, the rule
    // itself. The same maxima either way: closePair's are maxima of the same quotients.
    const float* a = static_cast<const float*>(ref.raw());
    const float* b = static_cast<const float*>(got.raw());
    constexpr int64_t kBlock = 512;
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t e = std::min(n, s + kBlock);
      double blockAbs = maxAbs, blockRel = maxRel;
      bool odd = false;
      for (int64_t i = s; i < e; ++i) {
        const double x = a[i], y = b[i];
        const double diff = std::fabs(x - y);
        const double mag = std::max(std::fabs(x), std::fabs(y));
        blockAbs = diff > blockAbs ? diff : blockAbs;
        const double rel = diff / (mag > 0 ? mag : 1.0);
        blockRel = rel > blockRel ? rel : blockRel;
        odd |= !((diff <= rtol * mag) | (diff <= floorAbs));
      }
      if (!odd) {
        maxAbs = blockAbs;
        maxRel = blockRel;
        continue;
      }
      for (int64_t i = s; i < e; ++i)
        if (!closePair(a[i], b[i], rtol, floorAbs, maxAbs, maxRel) && ok) {
          describeMismatch(i, a[i], b[i], why);
          ok = false;
        }
    }
    return ok;
  }
  const bool isFloat = ref.dtype() == DType::Float64 || ref.dtype() == DType::Float16 || ref.dtype() == DType::BFloat16;
  for (int64_t i = 0; i < n; ++i) {
    if (!isFloat) {
      if (ref.valueAsInt(i) != got.valueAsInt(i)) {
        if (ok && why)
          *why = "element " + std::to_string(i) + ": expected " + std::to_string(ref.valueAsInt(i)) + ", got " +
                 std::to_string(got.valueAsInt(i));
        ok = false;
        maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(ref.valueAsInt(i) - got.valueAsInt(i))));
      }
      continue;
    }
    const double a = ref.valueAsDouble(i), b = got.valueAsDouble(i);
    if (!closePair(a, b, rtol, floorAbs, maxAbs, maxRel) && ok) {
      describeMismatch(i, a, b, why);
      ok = false;
    }
  }
  return ok;
}

namespace {

/// The model's weights (aliases of their data: one copy for every device and the reference run),
/// its inputs (the caller's, or synthetic by seed as the profiler's), and each operator's predecessors
/// and successors.
struct RunInputs {
  std::vector<Tensor> leaves;
  std::vector<std::vector<OpId>> preds, succs;
};

Result<RunInputs> makeRunInputs(const Graph& g, uint64_t seed, std::map<ValueId, Tensor> given = {}) {
  RunInputs in;
  const size_t n = g.nodes.size();
  in.leaves.resize(g.values.size());
  for (const auto& [v, t] : given) {
    if (v < 0 || static_cast<size_t>(v) >= g.values.size() ||
        !(g.values[static_cast<size_t>(v)].isGraphInput || g.values[static_cast<size_t>(v)].isWeight))
      return makeError("executor: a given tensor is neither a model input nor a weight");
    const Value& val = g.values[static_cast<size_t>(v)];
    if (t.dtype() != val.dtype || t.shape() != val.shape)
      return makeError("input '", val.name, "': expected ", dtypeName(val.dtype), shapeString(val.shape), ", got ",
                       t.describe());
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (val.producer >= 0 || (!val.isWeight && !val.isGraphInput)) continue;
    if (auto it = given.find(static_cast<ValueId>(v)); it != given.end()) {
      in.leaves[v] = std::move(it->second);
      continue;
    }
    auto tn = leafTensor(g, static_cast<ValueId>(v), seed + v);
    if (!tn) return makeError("input '", val.name, "': ", tn.message());
    in.leaves[v] = std::move(tn).value();
  }
  in.preds.resize(n);
  in.succs.resize(n);
  for (size_t v = 0; v < n; ++v) {
    in.preds[v] = g.predecessors(static_cast<OpId>(v));
    in.succs[v] = g.successors(static_cast<OpId>(v));
  }
  return in;
}

/// The model outputs of a finished program, row-major: moved out of its storage where a kernel wrote
/// them there (the program is not run again), copied otherwise. A large output (a segmentation map at
/// full resolution) is then held once more, not twice more, beside the run's buffers.
Result<std::vector<Tensor>> takeOutputs(const Graph& g, Prepared& prep) {
  std::vector<Tensor> out(g.outputs.size());
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const ValueId v = g.outputs[i];
    const auto first = static_cast<size_t>(std::find(g.outputs.begin(), g.outputs.end(), v) - g.outputs.begin());
    if (first < i) {  // the same value listed again: the first one's copy
      out[i] = out[first];
      continue;
    }
    if (prep.takeOutput(v, out[i])) continue;
    if (const Tensor* t = prep.value(v); t && !t->empty())
      if (auto st = t->toPlain(out[i]); !st) return Error{st.message()};
  }
  return out;
}

/// The single-device reference run: every operator on `refId`, in topological order, one kernel per
/// operator (so that fused kernels are checked against the operators they replace), each kernel's
/// caches freed after it ran; only the model outputs are kept (row-major). `bind` makes model inputs
/// read other tensors for this run (a stream's input sets).
Result<std::vector<Tensor>> referenceRun(const Graph& g, const Backend& backend, const CostTable& t,
                                         const LaneLayout& layout, LaneTeam& team, RunInputs& in,
                                         const std::string& refId, int spinUs, const std::atomic<bool>* cancel,
                                         const std::vector<std::pair<ValueId, const Tensor*>>& bind = {}) {
  const size_t n = g.nodes.size();
  auto it = std::find(t.deviceIds.begin(), t.deviceIds.end(), refId);
  if (it == t.deviceIds.end()) return makeError("executor: no reference device '", refId, "'");
  const auto ref = static_cast<DeviceId>(it - t.deviceIds.begin());
  Plan single;
  single.device.assign(n, ref);
  single.order.assign(static_cast<size_t>(t.numDevices()), {});
  auto topo = g.topologicalOrder();
  if (!topo) return Error{topo.message()};
  single.order[static_cast<size_t>(ref)] = *topo;
  Prepared refPrep(g, in.leaves);
  if (auto st = refPrep.prepare(backend, single.device, t.deviceIds, /*fuse=*/false); !st)
    return makeError("reference run: ", st.message());
  for (const auto& [v, tensor] : bind) refPrep.bindLeaf(v, tensor);
  auto refProgram = programLanes(t, single, layout);
  if (!refProgram) return makeError("reference run: ", refProgram.message());
  refPrep.planMemory(refProgram->seq, in.preds);
  refPrep.setTransient(true);
  auto refTimes = runLanes(team, refPrep, single.device, layout, *refProgram, in.preds, in.succs, spinUs, cancel);
  if (!refTimes) {
    if (cancel && cancel->load(std::memory_order_relaxed)) return makeError("cancelled");
    return makeError("reference run: ", refTimes.message());
  }
  return takeOutputs(g, refPrep);
}

/// `asked` (ExecOptions::warmupMinMs), raised to kGpuWarmupMs when a device the run uses (`used`, ids) is
/// one of kind "gpu" among `devices`: its clocks ramp up from idle over tens of milliseconds, and a model
/// of a few milliseconds would be measured (and profiled) partly at idle clocks after one warm-up run
/// (the H200's first convolution: 203 us in a profile, 110 us in the plan's run).
double warmupMinFor(double asked, const std::vector<BackendDevice>& devices, const std::vector<std::string>& used) {
  for (const auto& bd : devices)
    if (bd.kind == "gpu" && std::find(used.begin(), used.end(), bd.id) != used.end())
      return std::max(asked, kGpuWarmupMs);
  return asked;
}

/// The warm-up and timed runs of one lane program (prepared in `prep`), with disturbed runs discarded
/// and repeated. `step` reports progress.
Status timedRuns(LaneTeam& team, Prepared& prep, const std::vector<DeviceId>& devOf, const LaneLayout& layout,
                 const LaneProgram& program, const RunInputs& in, const ExecOptions& o,
                 const std::function<void(const std::string&)>& step, ExecResult& r,
                 const std::vector<OpId>* chain = nullptr) {
  const size_t n = in.preds.size();
  auto cancelled = [&] { return o.cancel && o.cancel->load(std::memory_order_relaxed); };
  r.opSamplesUs.assign(n, {});
  std::vector<std::vector<double>> startSamples(n);
  std::vector<std::vector<double>> probeSamples(layout.laneCore.size());
  double cpuSum = 0, wallSum = 0;
  // A timed run whose lanes got less than minCpuShare of their CPUs (other programs ran) is discarded
  // and run again, up to maxDiscarded times; after that the disturbed runs are kept and flagged.
  const int maxDiscarded = o.maxDiscarded >= 0 ? o.maxDiscarded : 2 * o.reps;
  int timed = 0, stepped = -1;
  const auto warmStart = Clock::now();
  for (int rep = 0; timed < o.reps; ++rep) {
    if (cancelled()) return makeError("cancelled");
    // The warm-up runs asked for, and more until o.warmupMinMs have passed (reported as one step).
    const bool extra = rep >= o.warmup && timed == 0 && r.makespansUs.empty() && o.warmupMinMs > 0 &&
                       std::chrono::duration<double, std::milli>(Clock::now() - warmStart).count() < o.warmupMinMs;
    const bool warm = rep < o.warmup || extra;
    if ((warm && !extra) || (!warm && timed != stepped)) step(warm ? "warm-up run" : "timed run " + std::to_string(timed + 1));
    if (!warm) stepped = timed;  // A disturbed run's repetition is the same step.
    auto times = runLanes(team, prep, devOf, layout, program, in.preds, in.succs, o.spinUs, o.cancel);
    if (!times) return Error{times.message()};
    if (warm) continue;
    const double share = times->busyUs > 0 ? std::min(1.0, times->cpuUs / times->busyUs) : 1.0;
    if (share < o.minCpuShare) {
      if (r.discardedRuns < maxDiscarded) {
        ++r.discardedRuns;
        continue;
      }
      r.disturbed = true;
    }
    ++timed;
    r.makespansUs.push_back(times->makespanUs);
    for (size_t v = 0; v < n; ++v) {
      r.opSamplesUs[v].push_back(times->endUs[v] - times->startUs[v]);
      startSamples[v].push_back(times->startUs[v]);
    }
    if (chain) {  // One lane, each operator ready when the previous one ends: charge it the gap too.
      double prevEnd = 0;
      for (OpId v : *chain) {
        const auto vi = static_cast<size_t>(v);
        r.opSamplesUs[vi].back() = times->endUs[vi] - prevEnd;
        prevEnd = times->endUs[vi];
      }
    }
    for (size_t l = 0; l < probeSamples.size() && l < times->probeUs.size(); ++l)
      if (times->probeUs[l] > 0) probeSamples[l].push_back(times->probeUs[l]);
    cpuSum += times->cpuUs;
    wallSum += times->busyUs;
    r.sleepsPerRun += static_cast<double>(times->sleeps) / static_cast<double>(o.reps);
  }
  if (r.disturbed)
    r.notes.push_back("other programs took the CPUs during the runs (" + std::to_string(r.discardedRuns) +
                      " disturbed runs discarded, later ones kept): the measured times are stretched");
  r.makespanUs = medianOf(r.makespansUs);
  r.opUs.resize(n);
  r.opStartUs.resize(n);
  for (size_t v = 0; v < n; ++v) {
    r.opUs[v] = medianOf(r.opSamplesUs[v]);
    r.opStartUs[v] = medianOf(startSamples[v]);
  }
  r.cpuShare = wallSum > 0 ? std::min(1.0, cpuSum / wallSum) : 1.0;
  // A device's speed is its slowest lane's: a team operator ends when its slowest thread does.
  r.deviceProbeUs.assign(layout.masterLane.size(), 0.0);
  std::vector<char> used(layout.masterLane.size(), 0);
  for (DeviceId d : devOf) used[static_cast<size_t>(d)] = 1;
  for (size_t d = 0; d < layout.masterLane.size(); ++d) {
    if (!used[d] || layout.masterLane[d] < 0) continue;
    std::vector<int> lanesOfDevice = layout.helperLanes[d];
    lanesOfDevice.push_back(layout.masterLane[d]);
    for (int l : lanesOfDevice)
      if (!probeSamples[static_cast<size_t>(l)].empty())
        r.deviceProbeUs[d] = std::max(r.deviceProbeUs[d], medianOf(probeSamples[static_cast<size_t>(l)]));
  }
  return Status::ok();
}

/// Notes what the run's OpenMP wait policy means for a plan that uses a multi-thread device.
void noteWaitPolicy(const LaneLayout& layout, const std::vector<DeviceId>& devOf, ExecResult& r) {
  r.ompWaitPolicy = ompWaitPolicy();
  bool usesTeam = false;
  for (DeviceId d : devOf) usesTeam = usesTeam || layout.team[static_cast<size_t>(d)];
  if (usesTeam && ompWaitPolicyFromUser())
    r.notes.push_back("OMP_WAIT_POLICY=" + r.ompWaitPolicy +
                      " (set before Partex started): the OpenMP team of a multi-thread device waits for its next "
                      "operator as you chose, not as Partex's predictions assume (active with a spin count of "
                      "100000, then sleep); unset it to let Partex choose");
}

}  // namespace

Result<ExecResult> executeOnDevice(const Graph& g, const Backend& backend, const std::string& device,
                                   const std::vector<OpId>& order, const ExecOptions& o) {
  const size_t n = g.nodes.size();
  if (order.size() != n) return makeError("executor: the order must list every operator once");
  if (o.reps < 1) return makeError("executor: reps must be at least 1");
  const std::vector<std::string> ids{device};
  const LaneLayout layout = layoutLanes(ids, backend.devices());
  if (layout.masterLane[0] < 0)
    return makeError("executor: device '", device, "' is not a device of backend '", backend.name(), "'");
  LaneProgram program;
  program.seq.assign(layout.laneCore.size(), {});
  program.seq[static_cast<size_t>(layout.masterLane[0])] = order;
  for (int h : layout.helperLanes[0]) program.seq[static_cast<size_t>(h)] = order;
  auto in = makeRunInputs(g, o.seed, o.inputs);
  if (!in) return Error{in.message()};
  int done = 0;
  const int total = o.warmup + o.reps + 1;
  auto step = [&](const std::string& what) {
    ++done;
    if (o.progress) o.progress(done, total, what);
  };
  step("preparing kernels on " + device);
  const std::vector<DeviceId> devOf(n, 0);
  LaneTeam team(layout.laneCore);
  Prepared prep(g, in->leaves);
  if (auto st = prep.prepare(backend, devOf, ids, o.fuse); !st) return Error{st.message()};
  prep.planMemory(program.seq, in->preds);
  ExecResult r;
  r.fusedInto = prep.fusedInto();
  noteWaitPolicy(layout, devOf, r);
  ExecOptions timing = o;
  timing.warmupMinMs = warmupMinFor(o.warmupMinMs, backend.devices(), ids);
  if (auto st = timedRuns(team, prep, devOf, layout, program, *in, timing, step, r, &order); !st)
    return Error{st.message()};
  return r;
}

Status checkReferenceRunnable(const Graph& g, const Backend& backend) {
  for (size_t op = 0; op < g.nodes.size(); ++op) {
    std::string why;
    if (!backend.supports(g, static_cast<OpId>(op), &why))
      return makeError("reference run: operator '", g.nodes[op].name, "' (", g.nodes[op].opType, "): backend '",
                       backend.name(), "' cannot run it: ", why);
  }
  return Status::ok();
}

Status handOverWeights(Graph& g, ExecOptions& opts) {
  if (auto st = checkRunMemory(g); !st) return st;
  for (size_t v = 0; v < g.values.size(); ++v) {
    Value& val = g.values[v];
    if (!val.isWeight || !val.data || opts.inputs.count(static_cast<ValueId>(v))) continue;
    // Small weights stay: the fusion rules read constants (HardSwish's 3 and 6), and they cost nothing.
    if (static_cast<int64_t>(val.data->size()) < kLargeWeightBytes) continue;
    auto t = leafTensor(g, static_cast<ValueId>(v), 0);
    if (!t) continue;  // left in the graph: the run reports the error where it makes the tensor
    opts.inputs[static_cast<ValueId>(v)] = std::move(t).value();
    val.data.reset();
  }
  return Status::ok();
}

namespace {
/// The output check's tolerance for `plan`: o.rtol, or kAcceleratorRtol when the plan runs an operator
/// on a GPU, whose float32 kernels (cuDNN's and cuBLAS's algorithms, reductions in another order)
/// round differently from the CPU reference: issue 25 holds the GPU's outputs to 1e-3 of the
/// reference, and YOLOX on the H200 differs by 1.4e-4 of its largest output, all on the GPU.
double checkTolerance(const CostTable& t, const Plan& plan, double rtol) {
  constexpr double kAcceleratorRtol = 1e-3;
  if (t.deviceKinds.empty()) return rtol;
  for (DeviceId d : plan.device)
    if (d >= 0 && static_cast<size_t>(d) < t.deviceKinds.size() && t.deviceKinds[static_cast<size_t>(d)] == "gpu")
      return std::max(rtol, kAcceleratorRtol);
  return rtol;
}
}  // namespace

Result<ExecResult> executePlan(const Graph& g, const Backend& backend, const CostTable& t, const Plan& plan,
                               ExecOptions o) {
  const size_t n = g.nodes.size();
  if (static_cast<size_t>(t.numTasks()) != n)
    return makeError("executor: the plan is for a task graph, not for this model");
  for (size_t v = 0; v < n; ++v)
    if (t.taskNames[v] != g.nodes[v].name)
      return makeError("executor: the cost table does not match the model at '", g.nodes[v].name, "'");
  if (auto st = checkPlanShape(t, plan); !st) return Error{st.message()};
  if (o.reps < 1) return makeError("executor: reps must be at least 1");
  const auto backendDevices = backend.devices();
  const LaneLayout layout = layoutLanes(t.deviceIds, backendDevices, t.exclusiveWith);
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    if (!plan.order[static_cast<size_t>(d)].empty() && layout.masterLane[static_cast<size_t>(d)] < 0)
      return makeError("executor: device '", t.deviceIds[static_cast<size_t>(d)], "' is not a device of backend '",
                       backend.name(), "' (it can only be simulated)");
  {
    std::vector<std::string> used;  // the devices the plan runs operators on
    for (DeviceId d = 0; d < t.numDevices(); ++d)
      if (!plan.order[static_cast<size_t>(d)].empty()) used.push_back(t.deviceIds[static_cast<size_t>(d)]);
    o.warmupMinMs = warmupMinFor(o.warmupMinMs, backendDevices, used);
  }
  int done = 0;
  const int total = o.warmup + o.reps + (o.checkOutputs ? 1 : 0) + 1;
  auto step = [&](const std::string& what) {
    ++done;
    if (o.progress) o.progress(done, total, what);
  };
  auto cancelled = [&] { return o.cancel && o.cancel->load(std::memory_order_relaxed); };
  if (o.checkOutputs)
    if (auto st = checkReferenceRunnable(g, backend); !st) return Error{st.message()};
  auto in = makeRunInputs(g, o.seed, std::move(o.inputs));
  if (!in) return Error{in.message()};

  auto program = programLanes(t, plan, layout);
  if (!program) return Error{program.message()};
  LaneTeam team(layout.laneCore);

  // The reference first: every operator on one device, in topological order, one kernel per operator
  // (so that fused kernels are checked against the operators they replace), each kernel's caches freed
  // after it ran; only the model outputs are kept. The plan's run then lets its kernels take the
  // weights over, so that neither run holds two copies of them.
  std::vector<Tensor> refOut(g.outputs.size());
  if (cancelled()) return makeError("cancelled");
  std::string refId = o.referenceDevice.empty() ? t.deviceIds[static_cast<size_t>(t.host)] : o.referenceDevice;
  if (o.checkOutputs) {
    step("single-device reference run on " + refId);
    auto ref = referenceRun(g, backend, t, layout, team, *in, refId, o.spinUs, o.cancel);
    if (!ref) return Error{ref.message()};
    refOut = std::move(ref).value();
  }
  // The reference run's buffers are free now: give their pages back, so that the plan's run does not
  // stack its peak on memory glibc keeps for reuse.
  returnFreePages();
  if (cancelled()) return makeError("cancelled");

  step("preparing kernels");
  auto prep = std::make_unique<Prepared>(g, in->leaves);
  if (auto st = prep->prepare(backend, plan.device, t.deviceIds, o.fuse); !st) return Error{st.message()};
  prep->planMemory(program->seq, in->preds);
  prep->releaseWeightsAsTaken();
  const int64_t planned = prep->plannedBytes();
  ExecResult r;
  r.fusedInto = prep->fusedInto();
  r.modeSwitchesPerRun = program->modeSwitches;
  r.notes = program->notes;
  noteWaitPolicy(layout, plan.device, r);
  if (auto st = timedRuns(team, *prep, plan.device, layout, *program, *in, o, step, r); !st) return Error{st.message()};
  r.concatInputsInPlace = prep->concatInputsInPlace();
  r.viewsOfInputs = prep->viewsOfInputs();
  r.plannedActivationBytes = planned;
  if (o.checkOutputs) {
    r.outputsChecked = true;
    r.outputsMatch = true;
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      const ValueId out = g.outputs[i];
      const Tensor* got = prep->value(out);
      if (!got || got->empty() || refOut[i].empty()) continue;
      // Compared where it lies when row-major (model outputs are: nhwcOutputOk), not copied first.
      Tensor b;
      if (got->nhwc()) {
        if (auto st = got->toPlain(b); !st) return Error{st.message()};
        got = &b;
      }
      std::string why;
      if (!tensorsClose(refOut[i], *got, checkTolerance(t, plan, o.rtol), r.maxAbsDiff, r.maxRelDiff, &why) &&
          r.outputsMatch) {
        r.outputsMatch = false;
        r.mismatch = "output '" + g.values[static_cast<size_t>(out)].name + "': " + why;
      }
    }
  }
  refOut.clear();
  if (o.keepOutputs) {  // the plan run's outputs, row-major (the program is not run again)
    auto outs = takeOutputs(g, *prep);
    if (!outs) return Error{outs.message()};
    r.outputs = std::move(outs).value();
  }
  return r;
}

// ---------------------------------------------------------------------------------------------------
// A stream of inferences (issue 29, item 4).

namespace {

/// What one stream of inferences measured, in microseconds from its start.
struct StreamTimes {
  std::vector<double> start, end;            ///< Per inference.
  std::vector<double> stageStart, stageEnd;  ///< [inference * devices + device]; -1 where none.
  std::vector<double> stageBusy;             ///< [inference * devices + device]: its kernels' summed time.
  std::vector<double> opStart, opEnd;        ///< [inference * operators + operator], when kept.
  std::vector<double> probeUs;               ///< Per lane: cpuSpeedProbeUs() before the stream, when asked.
  std::vector<double> checkUs;               ///< Per inference: its completion on the lane that ended it.
  std::vector<int> replicaOf;                ///< Per inference: the replica that ran it.
  double cpuUs = 0, busyUs = 0;
  int sleeps = 0;
};

/// The output check of a stream: every inference against the reference outputs of its input set.
struct StreamCheck {
  const std::vector<std::vector<Tensor>>* reference = nullptr;  ///< Per input set, per model output.
  std::vector<std::vector<double>> scale;                       ///< tensorScale of each reference, once.
  double rtol = 1e-4;
  std::mutex mu;
  int mismatched = 0;
  double maxAbs = 0, maxRel = 0;
  std::string first;
};

/// One input set: the model inputs' tensors, bound into a context before an inference of that set.
using InputBinding = std::vector<std::pair<ValueId, const Tensor*>>;

/// Runs `inferences` inferences through the contexts (inference i in context i % ctx.size(), input set
/// i % sets.size(), replica i % R of the plan: programs[r] and devOf[r], R = programs.size(), a divisor
/// of the number of contexts): each lane walks its one-inference sequence of the inference's replica
/// (empty where that replica leaves the lane idle) once per inference, in order. An
/// operator starts when its inputs of the same inference are ready; a source operator of inference i
/// also waits until inference i - K (K = contexts) has finished, its outputs checked and its context
/// given the next input set: the bounded queue. Helpers of a team device step aside as in runLanes.
/// Waits yield for at most `spinUs`, then sleep on a condition variable that every operator's end
/// signals. Per-context counters are re-armed by the lane that consumed them, before the operator
/// runs, so that the next inference of the context finds them ready: no reset between inferences.
Result<StreamTimes> runStream(LaneTeam& team, std::vector<std::unique_ptr<Prepared>>& ctx, const Graph& g,
                              const std::vector<std::vector<DeviceId>>& devOfReplica, int numDevices, const LaneLayout& L,
                              const std::vector<LaneProgram>& programs, const RunInputs& in,
                              const std::vector<InputBinding>& sets,
                              int inferences, int inFlight, int spinUs, bool keepOpTimes, bool probe,
                              StreamCheck* check, const std::atomic<bool>* cancel, bool nextFree = false) {
  const size_t n = in.preds.size();
  const int N = inferences;
  const int K = inFlight;
  const size_t m = static_cast<size_t>(numDevices);
  const size_t lanes = L.laneCore.size();
  const size_t slots = ctx.size() * n;
  const int R = static_cast<int>(programs.size());
  auto remaining = std::make_unique<std::atomic<int>[]>(slots);
  auto arrived = std::make_unique<std::atomic<int>[]>(slots);
  auto doneAt = std::make_unique<std::atomic<int>[]>(slots);  // the last inference of the context it ended for
  auto opsLeft = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(N));
  auto finished = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(N));
  for (size_t c = 0; c < ctx.size(); ++c)
    for (size_t v = 0; v < n; ++v) {
      remaining[c * n + v].store(static_cast<int>(in.preds[v].size()), std::memory_order_relaxed);
      arrived[c * n + v].store(0, std::memory_order_relaxed);
      doneAt[c * n + v].store(-1, std::memory_order_relaxed);
    }
  for (int i = 0; i < N; ++i) {
    opsLeft[static_cast<size_t>(i)].store(static_cast<int>(n), std::memory_order_relaxed);
    finished[static_cast<size_t>(i)].store(false, std::memory_order_relaxed);
  }
  // Which replica runs inference i and in which context. Round robin: replica i % R, context i % K,
  // fixed in advance. Next free (executeStream checked that no lane serves two replicas): the first lane
  // of each replica (its entry lane) claims the next inference not yet claimed when it gets there, takes
  // its replica's next context in turn, waits until that context's previous inference has finished,
  // binds the inputs and admits the inference; the replica's other lanes wait for the admission.
  nextFree = nextFree && R > 1;
  auto claimedBy = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(N));
  auto admitted = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(N));
  std::vector<int> ctxOf(static_cast<size_t>(N), 0);
  for (int i = 0; i < N; ++i) {
    claimedBy[static_cast<size_t>(i)].store(nextFree ? -1 : i % R, std::memory_order_relaxed);
    admitted[static_cast<size_t>(i)].store(!nextFree, std::memory_order_relaxed);
    ctxOf[static_cast<size_t>(i)] = nextFree ? -1 : i % K;
  }
  // A replica listed twice (the same devices) is one replica here, with the contexts of both, claimed
  // under the first one's number (canonicalReplicas).
  std::vector<int> canon(static_cast<size_t>(R));
  for (int k = 0; k < R; ++k) {
    canon[static_cast<size_t>(k)] = k;
    for (int q = 0; q < k; ++q)
      if (devOfReplica[static_cast<size_t>(q)] == devOfReplica[static_cast<size_t>(k)]) {
        canon[static_cast<size_t>(k)] = q;
        break;
      }
  }
  std::vector<int> entryLane(static_cast<size_t>(R), -1);
  std::vector<std::vector<int>> ctxOfReplica(static_cast<size_t>(R));
  std::vector<int> taken(static_cast<size_t>(R), 0), lastInCtx(ctx.size(), -1);
  for (int k = 0; k < R; ++k) {
    if (canon[static_cast<size_t>(k)] != k) continue;
    for (size_t v = 0; v < n && entryLane[static_cast<size_t>(k)] < 0; ++v)
      if (in.preds[v].empty())
        entryLane[static_cast<size_t>(k)] = L.masterLane[static_cast<size_t>(devOfReplica[static_cast<size_t>(k)][v])];
  }
  for (size_t c = 0; c < ctx.size(); ++c)
    ctxOfReplica[static_cast<size_t>(canon[c % static_cast<size_t>(R)])].push_back(static_cast<int>(c));
  auto bind = [&](int i, int c) {
    for (const auto& [v, tensor] : sets[static_cast<size_t>(i) % sets.size()]) ctx[static_cast<size_t>(c)]->bindLeaf(v, tensor);
  };
  if (!nextFree)
    for (int i = 0; i < std::min(K, N); ++i) bind(i, i % K);

  StreamTimes times;
  times.start.assign(static_cast<size_t>(N), 0.0);
  times.end.assign(static_cast<size_t>(N), 0.0);
  times.stageStart.assign(static_cast<size_t>(N) * m, -1.0);
  times.stageEnd.assign(static_cast<size_t>(N) * m, -1.0);
  times.stageBusy.assign(static_cast<size_t>(N) * m, 0.0);
  if (keepOpTimes) {
    times.opStart.assign(static_cast<size_t>(N) * n, 0.0);
    times.opEnd.assign(static_cast<size_t>(N) * n, 0.0);
  }
  times.probeUs.assign(lanes, 0.0);
  times.checkUs.assign(static_cast<size_t>(N), 0.0);
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> sleepers{0}, sleeps{0};
  std::atomic<bool> failed{false};
  std::string error;
  std::vector<double> cpuOf(lanes, 0.0), busyOf(lanes, 0.0);
  int active = 0;
  auto laneIdle = [&](size_t l) {
    return std::all_of(programs.begin(), programs.end(), [&](const LaneProgram& P) { return P.seq[l].empty(); });
  };
  for (size_t l = 0; l < lanes; ++l)
    if (!laneIdle(l)) ++active;
  std::atomic<int> atStart{0};
  std::atomic<bool> go{false};
  Clock::time_point t0;
  const LaneWaits waits{mu, cv, sleepers, sleeps, failed, error, spinUs};
  auto wakeSleepers = [&] { waits.wake(); };
  auto fail = [&](const std::string& msg) { waits.fail(msg); };
  std::vector<Tensor> plainOut(ctx.size());  // per context: a channels-last output made row-major (reused)
  // Inference i has ended (its last operator, at `endUs`): check its outputs, give its context the
  // input set of inference i + K, and let i + K in. Runs on the lane that ended it.
  auto complete = [&](int i, double endUs) {
    times.end[static_cast<size_t>(i)] = endUs;
    Prepared& c = *ctx[static_cast<size_t>(ctxOf[static_cast<size_t>(i)])];
    const auto check0 = Clock::now();
    if (check) {
      // On the lane that ended the inference, before the next one it runs: compared where the output
      // lies (model outputs are row-major, nhwcOutputOk), against the reference's scale computed once,
      // and only the result taken under the lock (two lanes ending inferences do not wait for each
      // other's comparisons). The check is in the measured period; ONNX Runtime's stream has none.
      const size_t set = static_cast<size_t>(i) % sets.size();
      const auto& ref = (*check->reference)[set];
      for (size_t k = 0; k < g.outputs.size(); ++k) {
        const Tensor* got = c.value(g.outputs[k]);
        if (!got || got->empty() || k >= ref.size() || ref[k].empty()) continue;
        if (got->nhwc()) {
          Tensor& plain = plainOut[static_cast<size_t>(ctxOf[static_cast<size_t>(i)])];
          if (auto st = got->toPlain(plain); !st) {
            fail(st.message());
            return;
          }
          got = &plain;
        }
        double maxAbs = 0, maxRel = 0;
        std::string why;
        const bool close = tensorsClose(ref[k], check->scale[set][k], *got, check->rtol, maxAbs, maxRel, &why);
        std::lock_guard lk(check->mu);
        check->maxAbs = std::max(check->maxAbs, maxAbs);
        check->maxRel = std::max(check->maxRel, maxRel);
        if (!close) {
          if (check->first.empty())
            check->first = "inference " + std::to_string(i) + ": output '" +
                           g.values[static_cast<size_t>(g.outputs[k])].name + "': " + why;
          ++check->mismatched;
          break;
        }
      }
    }
    if (!nextFree && i + K < N) bind(i + K, (i + K) % K);
    times.checkUs[static_cast<size_t>(i)] = std::chrono::duration<double, std::micro>(Clock::now() - check0).count();
    finished[static_cast<size_t>(i)].store(true, std::memory_order_release);
  };

  auto worker = [&](int lane) {
    if (laneIdle(static_cast<size_t>(lane))) return;
    if (probe) times.probeUs[static_cast<size_t>(lane)] = cpuSpeedProbeUs();
    atStart.fetch_add(1, std::memory_order_acq_rel);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    const double cpu0 = threadCpuUs();
    double sleptUs = 0, teamWaitUs = 0, teamWaitCpuUs = 0;
    bool stuckIdle = false;
    auto waitFor = [&](auto cond) { sleptUs += waits.waitFor(cond); };
    auto now = [&] { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); };
    for (int i = 0; i < N && !failed.load(); ++i) {
      const auto ii = static_cast<size_t>(i);
      int k = claimedBy[ii].load(std::memory_order_acquire);
      if (k < 0) {
        int mine = -1;
        for (int q = 0; q < R; ++q)
          if (entryLane[static_cast<size_t>(q)] == lane) mine = q;
        int expected = -1;
        if (mine >= 0 && claimedBy[ii].compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) {
          // Claimed: the replica's next context, once its previous inference has finished.
          const auto& cs = ctxOfReplica[static_cast<size_t>(mine)];
          const int cx = cs[static_cast<size_t>(taken[static_cast<size_t>(mine)]++) % cs.size()];
          const int prev = lastInCtx[static_cast<size_t>(cx)];
          if (prev >= 0) waitFor([&] { return finished[static_cast<size_t>(prev)].load(std::memory_order_acquire); });
          if (failed.load()) break;
          bind(i, cx);
          lastInCtx[static_cast<size_t>(cx)] = i;
          ctxOf[ii] = cx;
          admitted[ii].store(true, std::memory_order_release);
          wakeSleepers();
          k = mine;
        } else if (mine >= 0) {
          k = expected;
        } else {
          waitFor([&] { return claimedBy[ii].load(std::memory_order_acquire) >= 0; });
          if (failed.load()) break;
          k = claimedBy[ii].load(std::memory_order_acquire);
        }
      }
      const auto& seq = programs[static_cast<size_t>(k)].seq[static_cast<size_t>(lane)];
      if (seq.empty()) continue;
      if (!admitted[ii].load(std::memory_order_acquire)) {
        waitFor([&] { return admitted[ii].load(std::memory_order_acquire); });
        if (failed.load()) break;
      }
      const size_t base = static_cast<size_t>(ctxOf[ii]) * n;
      Prepared& c = *ctx[static_cast<size_t>(ctxOf[ii])];
      const auto& devOf = devOfReplica[static_cast<size_t>(k)];
      for (size_t at = 0; at < seq.size(); ++at) {
        const TaskId v = seq[at];
        const auto vi = static_cast<size_t>(v);
        const DeviceId d = devOf[vi];
        if (L.masterLane[static_cast<size_t>(d)] != lane) {
          // A helper of a team (or exclusive) device: arrive at the run of its consecutive operators, step
          // aside until the team has ended them all (as in runLanes).
          size_t last = at;
          while (last + 1 < seq.size() && devOf[static_cast<size_t>(seq[last + 1])] == d) ++last;
          const auto w0 = Clock::now();
          const double c0 = threadCpuUs();
          const bool isTeam = L.team[static_cast<size_t>(d)];
          if (isTeam && !stuckIdle) setIdlePolicy(true);
          for (size_t k = at; k <= last; ++k)
            arrived[base + static_cast<size_t>(seq[k])].fetch_add(1, std::memory_order_acq_rel);
          wakeSleepers();
          waitFor([&] {
            for (size_t k = at; k <= last; ++k)
              if (doneAt[base + static_cast<size_t>(seq[k])].load(std::memory_order_acquire) < i) return false;
            return true;
          });
          at = last;
          if (isTeam && !stuckIdle && !setIdlePolicy(false)) stuckIdle = true;
          teamWaitCpuUs += threadCpuUs() - c0;
          teamWaitUs += std::chrono::duration<double, std::micro>(Clock::now() - w0).count();
          if (failed.load()) break;
          continue;
        }
        // The bounded queue: the first operators of inference i wait for inference i - K to finish.
        if (!nextFree && i >= K && in.preds[vi].empty())
          waitFor([&] { return finished[static_cast<size_t>(i - K)].load(std::memory_order_acquire); });
        const int helpers = static_cast<int>(L.helperLanes[static_cast<size_t>(d)].size());
        waitFor([&] {
          return remaining[base + vi].load(std::memory_order_acquire) == 0 &&
                 arrived[base + vi].load(std::memory_order_acquire) == helpers;
        });
        if (failed.load()) break;
        if (cancel && cancel->load(std::memory_order_relaxed)) {
          fail("cancelled");
          break;
        }
        // Re-armed for inference i + K of this context: its predecessors there end only after inference
        // i has finished, which is after this operator (the chain of acquire/release operations).
        remaining[base + vi].store(static_cast<int>(in.preds[vi].size()), std::memory_order_relaxed);
        arrived[base + vi].store(0, std::memory_order_relaxed);
        const double s = now();
        Status st = c.runOne(vi);
        const double e = now();
        if (!st) {
          fail("inference " + std::to_string(i) + ": " + st.message());
          break;
        }
        const size_t sd = static_cast<size_t>(i) * m + static_cast<size_t>(d);
        if (times.stageStart[sd] < 0) times.stageStart[sd] = s;
        times.stageEnd[sd] = e;
        times.stageBusy[sd] += e - s;
        if (keepOpTimes) {
          times.opStart[static_cast<size_t>(i) * n + vi] = s;
          times.opEnd[static_cast<size_t>(i) * n + vi] = e;
        }
        for (OpId sc : in.succs[vi]) remaining[base + static_cast<size_t>(sc)].fetch_sub(1, std::memory_order_acq_rel);
        doneAt[base + vi].store(i, std::memory_order_release);
        if (opsLeft[static_cast<size_t>(i)].fetch_sub(1, std::memory_order_acq_rel) == 1) complete(i, e);
        wakeSleepers();
      }
    }
    const double laneEnd = now();
    cpuOf[static_cast<size_t>(lane)] = threadCpuUs() - cpu0 - teamWaitCpuUs;
    busyOf[static_cast<size_t>(lane)] = std::max(0.0, laneEnd - sleptUs - teamWaitUs);
  };
  team.run(worker, [&] {
    while (atStart.load(std::memory_order_acquire) < active) std::this_thread::yield();
    t0 = Clock::now();
    go.store(true, std::memory_order_release);
  });
  if (failed.load()) return Error{error};
  for (int i = 0; i < N; ++i) {
    double first = -1;
    for (size_t d = 0; d < m; ++d) {
      const double s = times.stageStart[static_cast<size_t>(i) * m + d];
      if (s >= 0 && (first < 0 || s < first)) first = s;
    }
    times.start[static_cast<size_t>(i)] = std::max(0.0, first);
  }
  times.sleeps = sleeps.load();
  times.replicaOf.resize(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i) times.replicaOf[static_cast<size_t>(i)] = claimedBy[static_cast<size_t>(i)].load();
  for (size_t l = 0; l < lanes; ++l) {
    times.cpuUs += cpuOf[l];
    times.busyUs += busyOf[l];
  }
  return times;
}

}  // namespace

Result<StreamExecResult> executeStream(const Graph& g, const Backend& backend, const CostTable& t, const Plan& plan,
                                       StreamExecOptions o) {
  const size_t n = g.nodes.size();
  if (static_cast<size_t>(t.numTasks()) != n)
    return makeError("executor: the plan is for a task graph, not for this model");
  for (size_t v = 0; v < n; ++v)
    if (t.taskNames[v] != g.nodes[v].name)
      return makeError("executor: the cost table does not match the model at '", g.nodes[v].name, "'");
  if (auto st = checkPlanShape(t, plan); !st) return Error{st.message()};
  if (o.inferences < 1) return makeError("executor: a stream needs at least 1 inference, not ", o.inferences);
  if (o.inFlight < 0)
    return makeError("executor: the in-flight bound must be at least 1 (0: the simulator's default), not ", o.inFlight);
  if (n == 0) return makeError("executor: the model has no operators");
  const LaneLayout layout = layoutLanes(t.deviceIds, backend.devices(), t.exclusiveWith);
  // Replicas (sim/plan.h): inference t runs on replica t mod R, in context t mod K; K a multiple of R, so
  // that every context always runs one replica and its kernels are prepared for that replica's devices.
  const int R = replicaCount(plan);
  std::vector<Plan> replica;
  for (int k = 0; k < R; ++k) replica.push_back(replicaPlan(plan, k));
  std::vector<char> used(static_cast<size_t>(t.numDevices()), 0);
  for (const Plan& q : replica)
    for (DeviceId d = 0; d < t.numDevices(); ++d)
      if (!q.order[static_cast<size_t>(d)].empty()) used[static_cast<size_t>(d)] = 1;
  for (DeviceId d = 0; d < t.numDevices(); ++d)
    if (used[static_cast<size_t>(d)] && layout.masterLane[static_cast<size_t>(d)] < 0)
      return makeError("executor: device '", t.deviceIds[static_cast<size_t>(d)], "' is not a device of backend '",
                       backend.name(), "' (it can only be simulated)");
  StreamExecResult r;
  r.inferences = o.inferences;
  r.replicas = R;
  r.inFlight = o.inFlight > 0 ? o.inFlight : defaultInFlight(t, plan);
  if (r.inFlight % R != 0)
    return makeError("executor: the in-flight bound (", std::to_string(r.inFlight), ") must be a multiple of the plan's ",
                     std::to_string(R), " replicas (context t mod K runs replica t mod R)");
  const int K = r.inFlight;
  const int contexts = std::min(K, o.inferences);
  const bool nextFree = o.dispatch == ReplicaDispatch::NextFree && R > 1;
  r.dispatch = nextFree ? ReplicaDispatch::NextFree : ReplicaDispatch::RoundRobin;
  auto cancelled = [&] { return o.cancel && o.cancel->load(std::memory_order_relaxed); };
  if (o.checkOutputs)
    if (auto st = checkReferenceRunnable(g, backend); !st) return Error{st.message()};

  // Input sets: the given inputs in every set; the others synthetic, one seed per set. Two
  // inferences of one context (t and t + K) read different sets: sets = the smallest count from 2 up
  // that K is not a multiple of.
  std::vector<ValueId> synthetic;
  for (ValueId v : g.inputs)
    if (v >= 0 && !o.inputs.count(v) && g.values[static_cast<size_t>(v)].producer < 0 &&
        !g.values[static_cast<size_t>(v)].isWeight)
      synthetic.push_back(v);
  int sets = 1;
  if (!synthetic.empty()) {
    sets = 2;
    while (K % sets == 0) ++sets;
  }
  r.inputSets = sets;
  auto in = makeRunInputs(g, o.seed, std::move(o.inputs));
  if (!in) return Error{in.message()};
  std::vector<std::vector<Tensor>> extra(static_cast<size_t>(sets));
  std::vector<InputBinding> bindings(static_cast<size_t>(sets));
  for (int s = 0; s < sets; ++s) {
    extra[static_cast<size_t>(s)].reserve(synthetic.size());
    for (ValueId v : synthetic) {
      if (s == 0) {
        bindings[0].push_back({v, &in->leaves[static_cast<size_t>(v)]});
        continue;
      }
      auto tn = leafTensor(g, v, o.seed + static_cast<uint64_t>(s) * 1000003u + static_cast<uint64_t>(v));
      if (!tn) return makeError("input '", g.values[static_cast<size_t>(v)].name, "': ", tn.message());
      extra[static_cast<size_t>(s)].push_back(std::move(tn).value());
      bindings[static_cast<size_t>(s)].push_back({v, &extra[static_cast<size_t>(s)].back()});
    }
  }

  int done = 0;
  const int total = (o.checkOutputs ? sets : 0) + contexts + (o.warmup ? 1 : 0) + 1;
  auto step = [&](const std::string& what) {
    ++done;
    if (o.progress) o.progress(done, total, what);
  };
  std::vector<LaneProgram> programs;
  std::vector<std::vector<DeviceId>> devOf;
  for (const Plan& q : replica) {
    auto program = programLanes(t, q, layout);
    if (!program) return Error{program.message()};
    programs.push_back(std::move(program).value());
    devOf.push_back(q.device);
  }
  if (nextFree) {
    // Each lane serves one replica at most: a replica's entry lane then only ever waits for its own
    // replica's inferences, and the claims need no order between replicas.
    std::vector<int> laneReplica(layout.laneCore.size(), -1);
    for (int k = 0; k < R; ++k)
      for (size_t l = 0; l < laneReplica.size(); ++l) {
        if (programs[static_cast<size_t>(k)].seq[l].empty()) continue;
        bool same = false;  // a replica listed twice: one replica under next free
        for (int q = 0; q < k && !same; ++q) same = devOf[static_cast<size_t>(q)] == devOf[static_cast<size_t>(k)];
        if (same) continue;
        if (laneReplica[l] >= 0)
          return makeError("executor: next-free dispatch needs replicas on disjoint CPUs; CPU ",
                           std::to_string(layout.laneCore[l]), " runs replicas ", std::to_string(laneReplica[l]), " and ",
                           std::to_string(k));
        laneReplica[l] = k;
      }
    if (contexts < K)
      return makeError("executor: next-free dispatch needs at least as many inferences as contexts (", std::to_string(K), ")");
  }
  LaneTeam team(layout.laneCore);

  std::vector<std::vector<Tensor>> reference;
  const std::string refId = o.referenceDevice.empty() ? t.deviceIds[static_cast<size_t>(t.host)] : o.referenceDevice;
  if (o.checkOutputs)
    for (int s = 0; s < sets; ++s) {
      if (cancelled()) return makeError("cancelled");
      step("single-device reference run on " + refId + " (input set " + std::to_string(s + 1) + ")");
      auto ref =
          referenceRun(g, backend, t, layout, team, *in, refId, o.spinUs, o.cancel, bindings[static_cast<size_t>(s)]);
      if (!ref) return Error{ref.message()};
      reference.push_back(std::move(ref).value());
    }
  returnFreePages();

  // One context per inference in flight: its own kernels (and their weight caches) and buffers, planned
  // as one inference's; the plain weights are shared (not released as in executePlan: every context's
  // kernels read them).
  std::vector<std::unique_ptr<Prepared>> ctx;
  for (int c = 0; c < contexts; ++c) {
    if (cancelled()) return makeError("cancelled");
    step("preparing context " + std::to_string(c + 1) + " of " + std::to_string(contexts));
    auto p = std::make_unique<Prepared>(g, in->leaves);
    const auto rc = static_cast<size_t>(c % R);
    if (auto st = p->prepare(backend, devOf[rc], t.deviceIds, o.fuse); !st) return Error{st.message()};
    p->planMemory(programs[rc].seq, in->preds);
    ctx.push_back(std::move(p));
  }
  if (o.warmup) {
    step("warm-up: each context once");
    auto w = runStream(team, ctx, g, devOf, t.numDevices(), layout, programs, *in, bindings, contexts, K,
                       o.spinUs, false, false, nullptr, o.cancel);
    if (!w) return Error{w.message()};
  }
  step("stream of " + std::to_string(o.inferences) + " inferences");
  StreamCheck check;
  check.reference = &reference;
  check.rtol = checkTolerance(t, plan, o.rtol);
  for (const auto& ref : reference) {
    check.scale.emplace_back();
    for (const Tensor& x : ref) check.scale.back().push_back(tensorScale(x));
  }
  auto tm = runStream(team, ctx, g, devOf, t.numDevices(), layout, programs, *in, bindings, o.inferences, K,
                      o.spinUs, o.keepOpTimes, true, o.checkOutputs ? &check : nullptr, o.cancel, nextFree);
  if (!tm) return Error{tm.message()};

  const int N = o.inferences;
  const size_t m = static_cast<size_t>(t.numDevices());
  r.startUs = tm->start;
  r.endUs = tm->end;
  r.stageStartUs.assign(static_cast<size_t>(N), std::vector<double>(m, -1.0));
  r.stageEndUs.assign(static_cast<size_t>(N), std::vector<double>(m, -1.0));
  r.stageBusyUs.assign(static_cast<size_t>(N), std::vector<double>(m, 0.0));
  for (size_t i = 0; i < static_cast<size_t>(N); ++i)
    for (size_t d = 0; d < m; ++d) {
      r.stageStartUs[i][d] = tm->stageStart[i * m + d];
      r.stageEndUs[i][d] = tm->stageEnd[i * m + d];
      r.stageBusyUs[i][d] = tm->stageBusy[i * m + d];
    }
  r.opStartUs = std::move(tm->opStart);
  r.replicaOf = std::move(tm->replicaOf);
  r.opEndUs = std::move(tm->opEnd);
  // Steady state: completions after the first K (the pipeline filling), keeping at least two.
  r.warmupCompletions = std::min(K, std::max(0, N - 2));
  const auto W = static_cast<size_t>(r.warmupCompletions);
  std::vector<double> ends = tm->end;
  std::sort(ends.begin(), ends.end());
  std::vector<double> gaps, lat;
  for (size_t j = W + 1; j < ends.size(); ++j) gaps.push_back(ends[j] - ends[j - 1]);
  for (size_t i = W; i < static_cast<size_t>(N); ++i) lat.push_back(tm->end[i] - tm->start[i]);
  std::sort(lat.begin(), lat.end());
  r.latencyMedianUs = medianOf(lat);
  r.checkMedianUs = medianOf(std::vector<double>(tm->checkUs.begin() + static_cast<std::ptrdiff_t>(W), tm->checkUs.end()));
  r.latencyP90Us = lat.empty() ? 0 : lat[static_cast<size_t>(std::ceil(0.9 * static_cast<double>(lat.size()))) - 1];
  r.periodUs = gaps.empty() ? r.latencyMedianUs : medianOf(gaps);
  r.throughputPerS = r.periodUs > 0 ? 1e6 / r.periodUs : 0;
  const double span = ends.back() - ends[W];
  r.steadyThroughputPerS = span > 0 ? static_cast<double>(ends.size() - 1 - W) * 1e6 / span : r.throughputPerS;
  r.wallUs = ends.back() - *std::min_element(tm->start.begin(), tm->start.end());
  r.cpuShare = tm->busyUs > 0 ? std::min(1.0, tm->cpuUs / tm->busyUs) : 1.0;
  r.sleeps = tm->sleeps;
  r.deviceProbeUs.assign(m, 0.0);
  for (size_t d = 0; d < m; ++d) {
    if (!used[d] || layout.masterLane[d] < 0) continue;
    std::vector<int> lanesOfDevice = layout.helperLanes[d];
    lanesOfDevice.push_back(layout.masterLane[d]);
    for (int l : lanesOfDevice) r.deviceProbeUs[d] = std::max(r.deviceProbeUs[d], tm->probeUs[static_cast<size_t>(l)]);
  }
  for (const LaneProgram& q : programs) {
    r.modeSwitchesPerInference = std::max(r.modeSwitchesPerInference, q.modeSwitches);
    for (const auto& note : q.notes)
      if (std::find(r.notes.begin(), r.notes.end(), note) == r.notes.end()) r.notes.push_back(note);
  }
  std::vector<DeviceId> allDevices;
  for (const auto& dv : devOf) allDevices.insert(allDevices.end(), dv.begin(), dv.end());
  ExecResult forPolicy;
  noteWaitPolicy(layout, allDevices, forPolicy);
  r.ompWaitPolicy = forPolicy.ompWaitPolicy;
  for (auto& note : forPolicy.notes) r.notes.push_back(std::move(note));
  if (o.checkOutputs) {
    r.outputsChecked = true;
    r.mismatchedInferences = check.mismatched;
    r.outputsMatch = check.mismatched == 0;
    r.maxAbsDiff = check.maxAbs;
    r.maxRelDiff = check.maxRel;
    r.mismatch = check.first;
  }
  return r;
}

}  // namespace partex
