// Calibration of the this-machine platform: synthetic operators per op class run through the executor on
// core0 and cpu-parallel; the roofline numbers of each class are fitted from their times; cached per machine.
#include "profile/calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "cost/costtable.h"
#include "cost/work.h"
#include "profile/executor.h"
#include "profile/ompenv.h"
#include "sim/plan.h"
#include "support/files.h"

#ifndef PARTEX_VERSION
#define PARTEX_VERSION "unknown"
#endif

namespace partex {

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

/// Bumped whenever the synthetic operators, the fit or the file's content change: older cache files
/// become stale. 2: the this-machine probe is cached with the calibration. 3: so is the GPU.
constexpr int kCalibrationFormat = 6;  // 4: the GPU's reduction step (conv-reduction); 5: its NHWC download probe (issue 25); 6: the stream's handoffs (issue 29)
constexpr const char* kFormatName = "partex-calibration";

/// Element-wise operators with several (broadcast) inputs: in the CPU backend they walk the broadcast
/// index per element and are several times slower per byte than the unary ones; they share one number.
const std::vector<std::string>& broadcastingOps() {
  static const std::vector<std::string> ops{
      "Add", "Sub",   "Mul", "Div",   "Pow",  "Sum",     "Mean",        "Max",
      "Min", "PRelu", "Mod", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
      "And", "Or",    "Xor", "Where"};
  return ops;
}

const char* buildType() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return "sanitizer";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return "sanitizer";
#elif defined(NDEBUG)
  return "release";
#else
  return "debug";
#endif
#elif defined(NDEBUG)
  return "release";
#else
  return "debug";
#endif
}

// ---- The synthetic graph --------------------------------------------------------------------------------

/// A float32 graph built value by value, every shape given (the probes need no shape inference).
class ProbeGraph {
 public:
  ProbeGraph() {
    g_.name = "partex-calibration";
    g_.opsetVersion = 13;
  }

  /// A float graph input.
  ValueId input(std::vector<int64_t> shape) {
    const ValueId v = value(std::move(shape), DType::Float32, false, {});
    g_.inputs.push_back(v);
    return v;
  }
  ValueId weight(std::vector<int64_t> shape) { return value(std::move(shape), DType::Float32, true, {}); }
  ValueId ints(std::vector<int64_t> data) {
    const auto n = static_cast<int64_t>(data.size());
    return value({n}, DType::Int64, true, std::move(data));
  }

  /// Adds node `name` and returns its output value (shape `out`).
  ValueId node(const std::string& name, const std::string& op, std::vector<ValueId> ins, std::vector<int64_t> out,
               std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.name = name;
    n.opType = op;
    n.inputs = std::move(ins);
    n.attrs = std::move(attrs);
    n.outputs = {value(std::move(out), DType::Float32, false, {})};
    g_.addNode(std::move(n));
    return g_.nodes.back().outputs[0];
  }

  Graph finish() {
    std::set<ValueId> consumed;
    for (const Node& n : g_.nodes)
      for (ValueId v : n.inputs) consumed.insert(v);
    for (const Node& n : g_.nodes)
      if (!consumed.count(n.outputs[0])) g_.outputs.push_back(n.outputs[0]);
    g_.rebuildIndex();
    return std::move(g_);
  }

 private:
  ValueId value(std::vector<int64_t> shape, DType t, bool isWeight, std::vector<int64_t> data) {
    Value v;
    v.name = "v" + std::to_string(g_.values.size());
    v.dtype = t;
    v.shape = std::move(shape);
    v.shapeKnown = true;
    v.isWeight = isWeight;
    v.intData = std::move(data);
    return g_.addValue(std::move(v));
  }

  Graph g_;
};

Attribute ints(std::vector<int64_t> v) {
  return Attribute{std::move(v)};
}
Attribute one(int64_t v) {
  return Attribute{v};
}

constexpr int kChain = 24;  ///< Tiny Relus in the overhead chain.

/// The fixed-cost probes: one tiny operator per class (16 channels of one pixel), one after the other,
/// each reading what the previous one wrote, names prefixed with `pass`.
void addCallProbes(ProbeGraph& b, const std::string& pass) {
  ValueId x = b.node(pass + "conv-call", "Conv", {b.input({1, 16, 1, 1}), b.weight({16, 16, 1, 1}), b.weight({16})},
                     {1, 16, 1, 1});
  x = b.node(pass + "normalisation-call", "BatchNormalization",
             {x, b.weight({16}), b.weight({16}), b.weight({16}), b.weight({16})}, {1, 16, 1, 1});
  x = b.node(pass + "elementwise-call", "Relu", {x}, {1, 16, 1, 1});
  x = b.node(pass + "broadcast-call", "Add", {x, b.weight({1, 16, 1, 1})}, {1, 16, 1, 1});
  x = b.node(pass + "pooling-call", "MaxPool", {x}, {1, 16, 1, 1}, {{"kernel_shape", ints({1, 1})}});
  x = b.node(pass + "shape_only-call", "Reshape", {x, b.ints({1, 16})}, {1, 16});
  x = b.node(pass + "matmul-call", "Gemm", {x, b.weight({16, 16}), b.weight({16})}, {1, 16}, {{"transB", one(1)}});
  x = b.node(pass + "reduction-call", "ReduceMean", {x}, {1, 1}, {{"axes", ints({1})}});
  b.node(pass + "data_movement-call", "Concat", {x, b.input({1, 15})}, {1, 16}, {{"axis", one(1)}});
}

/// The probes, as a network runs them: each reads the tensor its predecessor has just written (in cache,
/// as in a model) and writes a buffer of its own. Names: "<class>-call" (tiny: the class's fixed cost),
/// "<class>-memory" (low arithmetic intensity: its bandwidth), "<class>-compute" (high intensity: its
/// GFLOP/s); "broadcast-*" the element-wise ops with broadcasting; op types by their name. Unmeasured
/// helpers start with "lead".
Graph buildProbes() {
  ProbeGraph b;
  auto node = [&](const std::string& name, const std::string& op, std::vector<ValueId> ins, std::vector<int64_t> out,
                  std::map<std::string, Attribute> attrs = {}) {
    return b.node(name, op, std::move(ins), std::move(out), std::move(attrs));
  };
  // The executor's work between operators: a chain of tiny Relus, first (it also warms the threads up).
  ValueId x = b.input({1, 16});
  for (int i = 0; i < kChain; ++i) x = node("chain" + std::to_string(i), "Relu", {x}, {1, 16});

  // Fixed costs: one tiny operator per class (16 channels of one pixel), one after the other, twice: the
  // first pass ("cold-...") on the caches the previous run's large probes left cold, the second on warm
  // ones.
  for (const std::string pass : {"cold-", ""}) addCallProbes(b, pass);

  // Throughput, on 64 channels of 56x56 (784 KiB per tensor: what mid-size networks move).
  const std::vector<int64_t> big{1, 64, 56, 56};
  x = node("lead", "Relu", {b.input(big)}, big);
  x = node("elementwise-memory", "Relu", {x}, big);
  const ValueId sig = node("elementwise-compute", "Sigmoid", {x}, big);
  x = node("broadcast-channel", "Add", {sig, b.weight({1, 64, 1, 1})}, big);
  const ValueId mul = node("broadcast-same", "Mul", {x, sig}, big);
  x = node("normalisation-memory", "BatchNormalization",
           {mul, b.weight({64}), b.weight({64}), b.weight({64}), b.weight({64})}, big);
  x = node("data_movement-memory", "Concat", {x, mul}, {1, 128, 56, 56}, {{"axis", one(1)}});
  node("reduction-memory", "ReduceMean", {x}, {1, 1, 56, 56}, {{"axes", ints({1})}});
  x = node("pooling-memory", "MaxPool", {x}, {1, 128, 28, 28},
           {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  // A 3x3 convolution of 128 to 32 channels: compute-bound (58 MFLOP).
  x = node("conv-compute", "Conv", {x, b.weight({32, 128, 3, 3}), b.weight({32})}, {1, 32, 28, 28},
           {{"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({3, 3})}});
  node("Transpose", "Transpose", {x}, {1, 28, 28, 32}, {{"perm", ints({0, 2, 3, 1})}});
  node("Resize", "Resize", {x, kNone, b.weight({4})}, {1, 32, 56, 56}, {{"mode", Attribute{std::string("nearest")}}});
  x = node("lead-reshape", "Reshape", {x, b.ints({32, 784})}, {32, 784});
  node("matmul-compute", "MatMul", {x, b.weight({784, 256})}, {32, 256});
  // Convolutions of mobile networks (pointwise of few channels, depthwise): bound by the data they stream
  // and the layout reorders around oneDNN's kernels (whose buffers are allocated per call, so that their
  // time varies with the allocator's state: three probes average it).
  x = node("lead-conv", "Relu", {b.input({1, 32, 56, 56})}, {1, 32, 56, 56});
  x = node("conv-memory", "Conv", {x, b.weight({32, 32, 1, 1}), b.weight({32})}, {1, 32, 56, 56});
  node("conv-memory2", "Conv", {x, b.weight({32, 1, 3, 3}), b.weight({32})}, {1, 32, 28, 28},
       {{"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({3, 3})}, {"group", one(32)}, {"strides", ints({2, 2})}});
  x = node("lead-dw", "Relu", {b.input({1, 64, 28, 28})}, {1, 64, 28, 28});
  node("conv-memory3", "Conv", {x, b.weight({64, 1, 3, 3}), b.weight({64})}, {1, 64, 28, 28},
       {{"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({3, 3})}, {"group", one(64)}});
  // Side probes, each after a Relu that writes its input (so that it reads from cache as the others do).
  // LRN (AlexNet, GoogLeNet) computes: about 8 GFLOP/s where batch norm streams.
  x = node("lead-lrn", "Relu", {b.input(big)}, big);
  node("normalisation-compute", "LRN", {x}, big, {{"size", one(5)}});
  // A strided Slice (YOLOX's Focus) gathers.
  x = node("lead-slice", "Relu", {b.input(big)}, big);
  node("Slice", "Slice", {x, b.ints({0, 0}), b.ints({56, 56}), b.ints({2, 3}), b.ints({2, 2})}, {1, 64, 28, 28});
  // Pooling as GoogLeNet (3x3, stride 1) and squeeze-and-excitation blocks (global average) use it.
  x = node("lead-pool", "Relu", {b.input({1, 64, 28, 28})}, {1, 64, 28, 28});
  node("pooling-memory2", "MaxPool", {x}, {1, 64, 28, 28},
       {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}});
  node("pooling-memory3", "GlobalAveragePool", {x}, {1, 64, 1, 1});
  // ConvTranspose (decoders, PP-OCR's detector): oneDNN's deconvolution reaches a few GFLOP/s only.
  x = node("lead-deconv", "Relu", {b.input({1, 16, 20, 20})}, {1, 16, 20, 20});
  node("ConvTranspose", "ConvTranspose", {x, b.weight({16, 16, 2, 2}), b.weight({16})}, {1, 16, 40, 40},
       {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  // A fully connected layer of batch 1 over 8 MiB of weights (what classifiers end with: it streams them):
  // the device's bandwidth for weights.
  node("weights", "Gemm", {b.input({1, 1024}), b.weight({2048, 1024}), b.weight({2048})}, {1, 2048},
       {{"transB", one(1)}});
  return b.finish();
}

/// The probes of a GPU, named as buildProbes names them (so that fitMode fits both), sized for a device a
/// hundred times faster: a tiny operator per class still gives the fixed cost (on a GPU the device time
/// of a kernel that does almost nothing: launch latency and the tail of the grid); the streaming probes
/// move 6 MiB tensors (128 channels of 112x112: what the first stages of the shared models move, and
/// still inside the 50 MiB L2 cache of an H100, where a model's activations are when the next operator
/// reads them). On an H100 they take a few microseconds, of the order of the fixed cost, so the split
/// between fixed cost and bandwidth is rough, but an operator of a model's size is predicted from probes
/// of its size. The compute probes are of about a GFLOP; the weights probe streams 64 MiB (more than the
/// L2 cache: weights come from device memory). Each probe runs on its own, on inputs the calibration
/// makes, so none depends on another.
Graph buildGpuProbes() {
  ProbeGraph b;
  auto node = [&](const std::string& name, const std::string& op, std::vector<ValueId> ins, std::vector<int64_t> out,
                  std::map<std::string, Attribute> attrs = {}) {
    return b.node(name, op, std::move(ins), std::move(out), std::move(attrs));
  };
  addCallProbes(b, "");
  const std::vector<int64_t> big{1, 128, 112, 112};
  node("elementwise-memory", "Relu", {b.input(big)}, big);
  node("elementwise-compute", "Sigmoid", {b.input(big)}, big);
  node("broadcast-channel", "Add", {b.input(big), b.weight({1, 128, 1, 1})}, big);
  node("broadcast-same", "Mul", {b.input(big), b.input(big)}, big);
  node("normalisation-memory", "BatchNormalization",
       {b.input(big), b.weight({128}), b.weight({128}), b.weight({128}), b.weight({128})}, big);
  node("data_movement-memory", "Concat", {b.input(big), b.input(big)}, {1, 256, 112, 112}, {{"axis", one(1)}});
  node("reduction-memory", "ReduceMean", {b.input(big)}, {1, 1, 112, 112}, {{"axes", ints({1})}});
  node("pooling-memory", "MaxPool", {b.input(big)}, {1, 128, 56, 56},
       {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  node("pooling-memory2", "GlobalAveragePool", {b.input(big)}, {1, 128, 1, 1});
  // Depthwise convolutions stream (2 flops per byte); a 3x3 one of 128 channels on 56x56 computes
  // (0.92 GFLOP).
  node("conv-memory", "Conv", {b.input(big), b.weight({128, 1, 3, 3}), b.weight({128})}, big,
       {{"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({3, 3})}, {"group", one(128)}});
  node("conv-memory2", "Conv", {b.input(big), b.weight({128, 1, 3, 3}), b.weight({128})}, {1, 128, 56, 56},
       {{"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({3, 3})}, {"group", one(128)}, {"strides", ints({2, 2})}});
  node("conv-compute", "Conv", {b.input({1, 128, 56, 56}), b.weight({128, 128, 3, 3}), b.weight({128})},
       {1, 128, 56, 56}, {{"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({3, 3})}});
  // A thin convolution: 256 output channels of 14x14 (50,176 outputs: one wave of any GPU of 13 SMs or
  // more) each summing 2,304 products, as ResNet's third stage does. Its time is the serial reduction,
  // not the flops: the step of conv-class kernels whose outputs fill few waves (Device::waveOutputs).
  node("conv-reduction", "Conv", {b.input({1, 256, 14, 14}), b.weight({256, 256, 3, 3}), b.weight({256})},
       {1, 256, 14, 14}, {{"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({3, 3})}});
  node("matmul-compute", "MatMul", {b.input({512, 1024}), b.weight({1024, 1024})}, {512, 1024});
  node("normalisation-compute", "LRN", {b.input({1, 64, 56, 56})}, {1, 64, 56, 56}, {{"size", one(5)}});
  node("Transpose", "Transpose", {b.input({1, 128, 56, 56})}, {1, 56, 56, 128}, {{"perm", ints({0, 2, 3, 1})}});
  node("Resize", "Resize", {b.input({1, 64, 56, 56}), kNone, b.weight({4})}, {1, 64, 112, 112},
       {{"mode", Attribute{std::string("nearest")}}});
  node("Slice", "Slice", {b.input(big), b.ints({0, 0}), b.ints({112, 112}), b.ints({2, 3}), b.ints({2, 2})},
       {1, 128, 56, 56});
  node("ConvTranspose", "ConvTranspose", {b.input({1, 64, 56, 56}), b.weight({64, 64, 2, 2}), b.weight({64})},
       {1, 64, 112, 112}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  node("weights", "Gemm", {b.input({1, 4096}), b.weight({4096, 4096}), b.weight({4096})}, {1, 4096},
       {{"transB", one(1)}});
  return b.finish();
}

// ---- Measuring and fitting -------------------------------------------------------------------------------

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Fits the numbers of each class (and of the op types with numbers of their own) from `m.samples`,
/// `m.executorUs` and `m.callUs`: the probes named as buildProbes names them.
void fitMode(ModeCalibration& m) {
  auto sample = [&](const std::string& name) -> const CalibrationSample* {
    for (const auto& s : m.samples)
      if (s.name == name) return &s;
    return nullptr;
  };
  // A class's fixed cost per kernel call: its tiny probe on warm caches. On cold ones (after the previous
  // run's large probes, the "cold-" pass) it takes 1.5-2.5x longer, as a small operator after large ones
  // in a large network does; but there fixed costs are a few percent of the time (0.1-4.6% on the shared
  // models), while a small network (MNIST) is mostly fixed costs and stays in cache: cold costs made it
  // 1.35x too slow.
  auto callOf = [&](const std::string& family) {
    const CalibrationSample* warm = sample(family + "-call");
    return warm ? warm->us : m.callUs;
  };
  // Time of the work itself: the measured time less the class's fixed cost, never below a tenth of it
  // (so that a noisy tiny measurement cannot make a rate infinite).
  auto workUs = [](const CalibrationSample& s, double callUs) { return std::max(s.us - callUs, 0.1 * s.us); };
  // Weights: the rate a fully connected layer of batch 1 streams its 8 MiB of weights (they are read as
  // laid out once, without the per-call layout conversions of activations). The device's bandwidth.
  if (const auto* s = sample("weights"); s && s->weightBytes > 0) {
    const double call = callOf("matmul");
    m.weightBandwidthGBs = static_cast<double>(s->weightBytes) / workUs(*s, call) * 1e-3;
  }
  // The time a probe spends on its activations: less its fixed cost and its weights' time.
  auto activationUs = [&](const CalibrationSample& s, double callUs) {
    const double w = m.weightBandwidthGBs > 0 ? static_cast<double>(s.weightBytes) / (m.weightBandwidthGBs * 1e3) : 0;
    return std::max(s.us - callUs - w, 0.1 * s.us);
  };
  for (int c = 0; c < kNumOpClasses; ++c) {
    const auto cls = static_cast<OpClass>(c);
    const std::string family = opClassName(cls);
    if (!sample(family + "-call")) continue;
    const double call = callOf(family);
    CalibratedCost cost;
    cost.launchUs = m.executorUs + call;
    // Bandwidth: the activation bytes of the class's memory probes ("-memory", "-memory2", ...) over
    // their time.
    double bytes = 0, t = 0;
    for (const auto& s : m.samples)
      if (s.name.rfind(family + "-memory", 0) == 0 && s.bytes > 0) {
        bytes += static_cast<double>(s.bytes);
        t += activationUs(s, call);
      }
    if (t > 0) cost.bandwidthGBs = bytes / t * 1e-3;
    if (const auto* s = sample(family + "-compute"); s && s->flops > 0)
      cost.peakGflops = static_cast<double>(s->flops) / workUs(*s, call) * 1e-3;
    // The reduction step: the thin probe's time less the fixed cost, per multiply-accumulate of one
    // output (its outputs fill one wave; see buildGpuProbes).
    if (const auto* s = sample(family + "-reduction"); s && s->macs > 0 && s->outputs > 0)
      cost.stepUs = workUs(*s, call) * static_cast<double>(s->outputs) / static_cast<double>(s->macs);
    m.classes[cls] = cost;
  }
  // Broadcasting element-wise ops: their time follows the output elements (the index walk per element),
  // not the bytes (a per-channel Add moves 8 bytes per element, a same-shape Mul 12, and the Add is the
  // slower one): a peak from both patterns' flops over their summed time; the class's bandwidth.
  if (sample("broadcast-call")) {
    const double call = callOf("broadcast");
    CalibratedCost cost;
    cost.launchUs = m.executorUs + call;
    double flops = 0, t = 0;
    for (const char* name : {"broadcast-channel", "broadcast-same"})
      if (const auto* s = sample(name)) {
        flops += static_cast<double>(s->flops);
        t += workUs(*s, call);
      }
    if (t > 0 && flops > 0) cost.peakGflops = flops / t * 1e-3;
    for (const auto& op : broadcastingOps()) m.opTypes[op] = cost;
  }
  // ConvTranspose: its own peak; the class's bandwidth and fixed cost.
  if (const auto* s = sample("ConvTranspose"); s && s->flops > 0) {
    const double call = callOf("conv");
    CalibratedCost cost;
    cost.peakGflops = static_cast<double>(s->flops) / workUs(*s, call) * 1e-3;
    m.opTypes["ConvTranspose"] = cost;
  }
  // Data-movement op types with kernels of their own: bandwidth; fixed cost of the class.
  const double moveCall = callOf("data_movement");
  for (const char* op : {"Transpose", "Resize", "Slice"})
    if (const auto* s = sample(op); s && s->bytes > 0) {
      CalibratedCost cost;
      cost.bandwidthGBs = static_cast<double>(s->bytes) / activationUs(*s, moveCall) * 1e-3;
      m.opTypes[op] = cost;
    }
}

/// Runs the probe graph all on `device` and fits its numbers.
Result<ModeCalibration> measureMode(const Backend& backend, const Graph& g, const std::vector<OpWork>& work,
                                    const CostTable& table, const std::string& device, const CalibrationOptions& o) {
  const auto it = std::find(table.deviceIds.begin(), table.deviceIds.end(), device);
  if (it == table.deviceIds.end()) return makeError("calibration: the platform has no device '", device, "'");
  const auto d = static_cast<DeviceId>(it - table.deviceIds.begin());
  Plan plan;
  plan.device.assign(g.nodes.size(), d);
  plan.order.assign(static_cast<size_t>(table.numDevices()), {});
  for (size_t v = 0; v < g.nodes.size(); ++v) plan.order[static_cast<size_t>(d)].push_back(static_cast<TaskId>(v));
  ExecOptions eo;
  eo.warmup = o.warmup;
  eo.reps = o.reps;
  eo.seed = o.seed;
  eo.checkOutputs = false;
  // A run on a core that other programs share is stretched: measure again (at most twice) when the
  // executor's threads got less than 90% of their core, and keep each operator's fastest median.
  std::vector<double> us(g.nodes.size(), 1e300), starts;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = executePlan(g, backend, table, plan, eo);
    if (!r) return makeError("calibration on ", device, ": ", r.message());
    for (size_t v = 0; v < us.size(); ++v) us[v] = std::min(us[v], r->opUs[v]);
    if (starts.empty() || r->cpuShare >= 0.9) starts = r->opStartUs;
    if (r->cpuShare >= 0.9) break;
  }
  ModeCalibration m;
  m.device = device;
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const Node& n = g.nodes[v];
    if (n.name.rfind("chain", 0) == 0 || n.name.rfind("lead", 0) == 0) continue;
    m.samples.push_back({n.name, n.opType, work[v].cls, work[v].flops,
                         work[v].bytesReadActivations + work[v].bytesWritten, work[v].bytesReadWeights,
                         work[v].macs, work[v].bytesWritten / std::max<int64_t>(1, dtypeSize(work[v].dtype)), us[v]});
  }
  // Executor overhead: in the chain, the time from one Relu's end to the next one's start.
  std::vector<double> gaps, calls;
  for (size_t v = 0; v + 1 < g.nodes.size(); ++v) {
    if (g.nodes[v].name.rfind("chain", 0) != 0) continue;
    calls.push_back(us[v]);
    gaps.push_back(std::max(0.0, starts[v + 1] - starts[v] - us[v]));
  }
  m.executorUs = median(gaps);
  m.callUs = median(calls);
  fitMode(m);
  return m;
}

/// The handoff chain: kHandoffChain 3x3 convolutions of 64 channels over 16x16 pixels, each reading its
/// predecessor's output: about 0.1 ms each on one core, so that a lane waiting for one is asleep when it
/// ends (a waiting lane yields 16 times before it sleeps; a tiny operator ends before), as the stages of
/// a stream are, while the 64 KiB a handoff moves between the cores' caches costs next to nothing.
Graph buildHandoffChain() {
  ProbeGraph b;
  ValueId x = b.input({1, 64, 16, 16});
  for (int i = 0; i < kHandoffChain; ++i)
    x = b.node("handoff" + std::to_string(i), "Conv", {x, b.weight({64, 64, 3, 3}), b.weight({64})}, {1, 64, 16, 16},
               {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}});
  return b.finish();
}

/// Makespan of the handoff chain with operator i on devices[i mod size], waits sleeping (spinUs 0, as
/// execute --stream waits): the fastest run, of up to three sets of runs (measured again while the
/// executor's threads got less than 90% of their CPUs). The fastest, not the median: on a shared machine
/// a wake-up waits for another program's time slice (milliseconds), which is the load's, not the
/// handoff's; the calibration is measured again when the machine is quieter (calibrationIsProvisional).
Result<double> handoffChainUs(const Backend& backend, const Graph& g, const CostTable& table,
                              const std::vector<std::string>& devices, const CalibrationOptions& o) {
  Plan plan;
  plan.device.assign(g.nodes.size(), -1);
  plan.order.assign(static_cast<size_t>(table.numDevices()), {});
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const auto& id = devices[v % devices.size()];
    const auto it = std::find(table.deviceIds.begin(), table.deviceIds.end(), id);
    if (it == table.deviceIds.end()) return makeError("calibration: the platform has no device '", id, "'");
    const auto d = static_cast<DeviceId>(it - table.deviceIds.begin());
    plan.device[v] = d;
    plan.order[static_cast<size_t>(d)].push_back(static_cast<TaskId>(v));
  }
  ExecOptions eo;
  eo.warmup = o.warmup;
  eo.reps = std::max(o.reps, 9);
  eo.seed = o.seed;
  eo.checkOutputs = false;
  eo.spinUs = 0;
  double best = 1e300;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = executePlan(g, backend, table, plan, eo);
    if (!r) return makeError("calibration of the handoffs: ", r.message());
    for (double us : r->makespansUs) best = std::min(best, us);
    if (r->makespansUs.empty()) best = std::min(best, r->makespanUs);
    if (r->cpuShare >= 0.9) break;
  }
  return best;
}

/// The handoff chains (MachineCalibration::handoffs); zeros without core1 and cpu-parallel.
Result<HandoffCalibration> measureHandoffs(const Backend& backend, const Platform& base, const CalibrationOptions& o) {
  HandoffCalibration h;
  if (base.findDevice("core1") < 0 || base.findDevice("core0") < 0 || base.findDevice("cpu-parallel") < 0) return h;
  const Graph g = buildHandoffChain();
  const auto work = characteriseAll(g);
  auto table = buildCostTable(g, work, base);
  if (!table) return makeError("calibration: ", table.message());
  struct Run {
    std::vector<std::string> devices;
    double* out;
  };
  // Interleaved, so that a phase of the machine falls on all of them alike.
  const std::vector<Run> runs{{{"core0"}, &h.core0Us},
                              {{"core0", "core1"}, &h.crossUs},
                              {{"core1"}, &h.core1Us},
                              {{"cpu-parallel", "core1"}, &h.switchChainUs},
                              {{"cpu-parallel"}, &h.parallelUs}};
  for (const Run& run : runs) {
    auto us = handoffChainUs(backend, g, *table, run.devices, o);
    if (!us) return Error{us.message()};
    *run.out = *us;
  }
  deriveHandoffCosts(h);
  return h;
}

std::string isoNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// FNV-1a, 64 bits: a stable file name for a key (std::hash is not specified to be stable).
std::string hashHex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// ---- JSON ------------------------------------------------------------------------------------------------

json costToJson(const CalibratedCost& c) {
  json j = json::object();
  if (c.peakGflops > 0) j["peak_gflops"] = c.peakGflops;
  if (c.bandwidthGBs > 0) j["bandwidth_gbs"] = c.bandwidthGBs;
  if (c.launchUs >= 0) j["launch_us"] = c.launchUs;
  if (c.stepUs > 0) j["step_us"] = c.stepUs;
  return j;
}

json modeToJson(const ModeCalibration& m) {
  json classes = json::object(), types = json::object(), samples = json::array();
  for (const auto& [cls, c] : m.classes) classes[opClassName(cls)] = costToJson(c);
  for (const auto& [op, c] : m.opTypes) types[op] = costToJson(c);
  for (const auto& s : m.samples)
    samples.push_back({{"name", s.name},
                       {"op_type", s.opType},
                       {"class", opClassName(s.cls)},
                       {"flops", s.flops},
                       {"bytes", s.bytes},
                       {"weight_bytes", s.weightBytes},
                       {"macs", s.macs},
                       {"outputs", s.outputs},
                       {"us", s.us}});
  return {{"device", m.device},  {"executor_us", m.executorUs},
          {"call_us", m.callUs}, {"weight_bandwidth_gbs", m.weightBandwidthGBs},
          {"classes", classes},  {"op_types", types},
          {"samples", samples}};
}

json probeToJson(const MachineProbe& p) {
  return {{"isa", p.isa},
          {"cores", p.cores},
          {"serial_gflops", p.serialGflops},
          {"parallel_gflops", p.parallelGflops},
          {"copy_gbs_1", p.copyGBs1},
          {"copy_gbs_n", p.copyGBsN},
          {"fork_join_us", p.forkJoinUs},
          {"copy_bytes", p.copyBytes},
          {"last_level_cache_bytes", p.lastLevelCacheBytes},
          {"seconds", p.seconds},
          {"load_average", p.loadAverage}};
}

json gpuToJson(const GpuDeviceCalibration& g) {
  json facts = json::object();
  for (const auto& [name, v] : g.facts) facts[name] = v;
  return {{"backend", g.backend}, {"device", g.device},         {"name", g.name}, {"memory_bytes", g.memoryBytes},
          {"facts", facts},       {"mode", modeToJson(g.mode)}, {"note", g.note},
          {"exclusive_with", g.exclusiveWith}};
}

/// Reading: every failure throws std::runtime_error with the field's path; parseCalibration turns it
/// into an Error.
struct Reader {
  std::string origin;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw std::runtime_error(origin + ": field '" + field + "' " + what);
  }
  const json& at(const json& o, const std::string& key, const std::string& path) const {
    if (!o.is_object() || !o.contains(key)) fail(path + key, "is missing");
    return o.at(key);
  }
  double num(const json& o, const std::string& key, const std::string& path, bool positive) const {
    const json& v = at(o, key, path);
    if (!v.is_number()) fail(path + key, "must be a number");
    const double d = v.get<double>();
    if (!std::isfinite(d) || (positive ? d <= 0 : d < 0))
      fail(path + key, positive ? "must be a positive number" : "must be a number >= 0");
    return d;
  }
  std::string str(const json& o, const std::string& key, const std::string& path) const {
    const json& v = at(o, key, path);
    if (!v.is_string()) fail(path + key, "must be a string");
    return v.get<std::string>();
  }
  CalibratedCost cost(const json& o, const std::string& path) const {
    if (!o.is_object()) fail(path, "must be an object");
    CalibratedCost c;
    if (o.contains("peak_gflops")) c.peakGflops = num(o, "peak_gflops", path + ".", true);
    if (o.contains("bandwidth_gbs")) c.bandwidthGBs = num(o, "bandwidth_gbs", path + ".", true);
    if (o.contains("launch_us")) c.launchUs = num(o, "launch_us", path + ".", false);
    if (o.contains("step_us")) c.stepUs = num(o, "step_us", path + ".", false);
    return c;
  }
  MachineProbe probe(const json& o, const std::string& path) const {
    if (!o.is_object()) fail(path, "must be an object");
    MachineProbe p;
    p.isa = str(o, "isa", path + ".");
    const double cores = num(o, "cores", path + ".", true);
    if (cores != std::floor(cores) || cores > 1e6) fail(path + ".cores", "must be a whole number of CPUs");
    p.cores = static_cast<int>(cores);
    p.serialGflops = num(o, "serial_gflops", path + ".", true);
    p.parallelGflops = num(o, "parallel_gflops", path + ".", true);
    p.copyGBs1 = num(o, "copy_gbs_1", path + ".", true);
    p.copyGBsN = num(o, "copy_gbs_n", path + ".", true);
    p.forkJoinUs = num(o, "fork_join_us", path + ".", false);
    p.copyBytes = static_cast<int64_t>(num(o, "copy_bytes", path + ".", true));
    p.lastLevelCacheBytes = static_cast<int64_t>(num(o, "last_level_cache_bytes", path + ".", false));
    p.seconds = num(o, "seconds", path + ".", false);
    const json& load = at(o, "load_average", path + ".");
    if (!load.is_number()) fail(path + ".load_average", "must be a number");
    p.loadAverage = load.get<double>();
    return p;
  }
  GpuDeviceCalibration gpu(const json& o, const std::string& path) const {
    if (!o.is_object()) fail(path, "must be an object");
    GpuDeviceCalibration g;
    g.backend = str(o, "backend", path + ".");
    g.device = str(o, "device", path + ".");
    if (g.device.empty()) fail(path + ".device", "must not be empty");
    g.name = str(o, "name", path + ".");
    g.memoryBytes = static_cast<int64_t>(num(o, "memory_bytes", path + ".", false));
    const json& facts = at(o, "facts", path + ".");
    if (!facts.is_object()) fail(path + ".facts", "must be an object");
    for (auto it = facts.begin(); it != facts.end(); ++it)
      g.facts[it.key()] = num(facts, it.key(), path + ".facts.", false);
    g.mode = mode(at(o, "mode", path + "."), path + ".mode.");
    g.note = str(o, "note", path + ".");
    if (o.contains("exclusive_with")) {
      const json& ex = o.at("exclusive_with");
      if (!ex.is_array()) fail(path + ".exclusive_with", "must be an array of device ids");
      for (const json& id : ex) {
        if (!id.is_string() || id.get<std::string>().empty())
          fail(path + ".exclusive_with", "must be an array of device ids");
        g.exclusiveWith.push_back(id.get<std::string>());
      }
    }
    return g;
  }
  ModeCalibration mode(const json& o, const std::string& path) const {
    ModeCalibration m;
    m.device = str(o, "device", path);
    m.executorUs = num(o, "executor_us", path, false);
    m.callUs = num(o, "call_us", path, false);
    m.weightBandwidthGBs = num(o, "weight_bandwidth_gbs", path, true);
    const json& classes = at(o, "classes", path);
    if (!classes.is_object() || classes.empty()) fail(path + "classes", "must be a non-empty object");
    for (auto it = classes.begin(); it != classes.end(); ++it) {
      OpClass cls;
      if (!opClassFromName(it.key(), cls)) fail(path + "classes." + it.key(), "is not an op class");
      m.classes[cls] = cost(it.value(), path + "classes." + it.key());
    }
    const json& types = at(o, "op_types", path);
    if (!types.is_object()) fail(path + "op_types", "must be an object");
    for (auto it = types.begin(); it != types.end(); ++it)
      m.opTypes[it.key()] = cost(it.value(), path + "op_types." + it.key());
    const json& samples = at(o, "samples", path);
    if (!samples.is_array()) fail(path + "samples", "must be an array");
    for (size_t i = 0; i < samples.size(); ++i) {
      const std::string p = path + "samples[" + std::to_string(i) + "].";
      CalibrationSample s;
      s.name = str(samples[i], "name", p);
      s.opType = str(samples[i], "op_type", p);
      if (!opClassFromName(str(samples[i], "class", p), s.cls)) fail(p + "class", "is not an op class");
      s.flops = static_cast<int64_t>(num(samples[i], "flops", p, false));
      s.bytes = static_cast<int64_t>(num(samples[i], "bytes", p, false));
      s.weightBytes = static_cast<int64_t>(num(samples[i], "weight_bytes", p, false));
      if (samples[i].contains("macs")) s.macs = static_cast<int64_t>(num(samples[i], "macs", p, false));
      if (samples[i].contains("outputs")) s.outputs = static_cast<int64_t>(num(samples[i], "outputs", p, false));
      s.us = num(samples[i], "us", p, false);
      m.samples.push_back(s);
    }
    return m;
  }
};

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

/// Rounds to 3 significant digits, as the measured platform does.
double round3(double v) {
  if (!(v > 0) || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(v)));
  return std::round(v * scale) / scale;
}

void applyMode(Device& d, const ModeCalibration& m) {
  d.launchOverheadUs = round3(m.executorUs + m.callUs);
  if (m.weightBandwidthGBs > 0) d.memBandwidthGBs = round3(m.weightBandwidthGBs);
  for (const auto& [cls, c] : m.classes) {
    if (c.peakGflops > 0) d.peakGflops[cls] = round3(c.peakGflops);
    if (c.bandwidthGBs > 0) d.bandwidthGBsByClass[cls] = round3(c.bandwidthGBs);
    if (c.launchUs >= 0) d.launchOverheadUsByClass[cls] = round3(c.launchUs);
    if (c.stepUs > 0) d.reductionStepUsByClass[cls] = std::round(c.stepUs * 1e6) / 1e6;
  }
  for (const auto& [op, c] : m.opTypes) {
    OpTypeCost o;
    o.peakGflops = c.peakGflops > 0 ? round3(c.peakGflops) : 0.0;
    o.bandwidthGBs = c.bandwidthGBs > 0 ? round3(c.bandwidthGBs) : 0.0;
    o.launchOverheadUs = c.launchUs >= 0 ? round3(c.launchUs) : -1.0;
    d.opTypeCosts[op] = o;
  }
}

/// "conv 98 GFLOP/s, 4.1 GB/s, 9.5 us; ..." for the description.
std::string summary(const ModeCalibration& m) {
  std::string s = "weights " + fmt(m.weightBandwidthGBs, 1) + " GB/s";
  for (const auto& [cls, c] : m.classes) {
    std::string part = opClassName(cls);
    if (c.peakGflops > 0) part += " " + fmt(c.peakGflops, c.peakGflops < 10 ? 1 : 0) + " GFLOP/s,";
    if (c.bandwidthGBs > 0) part += " " + fmt(c.bandwidthGBs, 1) + " GB/s,";
    part += " " + fmt(c.launchUs, 1) + " us";
    if (c.stepUs > 0) part += ", " + fmt(c.stepUs * 1e3, 1) + " ns per reduction step";
    s += (s.empty() ? "" : "; ") + part;
  }
  if (auto it = m.opTypes.find("Add"); it != m.opTypes.end())
    s += "; broadcasting element-wise (Add, Mul, ...) " + fmt(it->second.peakGflops, 2) + " GFLOP/s, " +
         fmt(it->second.launchUs, 1) + " us";
  for (const char* op : {"Transpose", "Resize", "Slice"})
    if (auto it = m.opTypes.find(op); it != m.opTypes.end())
      s += std::string("; ") + op + " " + fmt(it->second.bandwidthGBs, 1) + " GB/s";
  if (auto it = m.opTypes.find("ConvTranspose"); it != m.opTypes.end())
    s += "; ConvTranspose " + fmt(it->second.peakGflops, 1) + " GFLOP/s";
  return s;
}

/// The first device of kind "gpu" of `backend`.
std::optional<BackendDevice> firstGpuDevice(const Backend& backend) {
  for (const auto& d : backend.devices())
    if (d.kind == "gpu") return d;
  return std::nullopt;
}

/// The GPU as a platform device, linked to the host (see applyCalibration).
void addGpuDevice(Platform& p, const GpuDeviceCalibration& g) {
  Device d;
  d.id = g.device;
  d.name = g.name.empty() ? "GPU" : g.name;
  d.kind = DeviceKind::Gpu;
  applyMode(d, g.mode);  // Per class; the fixed cost sync_us plus a tiny Relu's device time.
  // The roofs: what the backend measured of the device itself (a copy within device memory, a large
  // FP32 GEMM without TF32); classes without a probe get them.
  if (g.fact("d2d_gbs") > 0) d.memBandwidthGBs = round3(g.fact("d2d_gbs"));
  double roof = g.fact("fp32_gflops");
  if (!(roof > 0))
    for (const auto& [cls, c] : g.mode.classes) roof = std::max(roof, c.peakGflops);
  if (roof > 0) d.defaultPeakGflops = round3(roof);
  if (g.fact("fp32_gflops") > 0 && g.fact("fp16_gflops") > 0)
    d.dtypeSpeedup[DType::Float16] = round3(g.fact("fp16_gflops") / g.fact("fp32_gflops"));
  // Its runtime (the CUDA backend) fuses epilogues into their convolution or matrix product, and a wave
  // is one output tile per SM: 4,096 outputs, the 64x64 tile of cuDNN's and cuBLAS's FP32 kernels (an
  // assumption, not a measurement; docs/design-decisions.md, "The GPU's modelled costs").
  d.fusion = "epilogues";
  // Its kernels make their own transfers (each uploads its host inputs and downloads its host outputs
  // on the GPU's lane, between kernels): they occupy the GPU (Device::copies). Issue 25, the H200 run of 2026-11-27:
  // the GPU's operators with inputs or readers on a CPU took 1.2 ms more than predicted in Inception's
  // best plan, the copies' time, which the simulator had put on the link beside the GPU's kernels.
  d.copies = "inline";
  if (g.fact("sm_count") > 0) d.waveOutputs = static_cast<int64_t>(g.fact("sm_count")) * 4096;
  d.memCapacityBytes = g.memoryBytes;
  p.devices.push_back(d);
  // Two one-way links to the host at the pinned copy rates: the CPU devices share the host's memory
  // (zero-copy links), so transfers between any of them and the GPU are routed through the host and
  // share these two links (one PCIe link each way), as the copies do.
  const double latency = g.fact("h2d_latency_us");
  const double downLatency = g.fact("d2h_latency_us") > 0 ? g.fact("d2h_latency_us") : latency;
  auto link = [&](const std::string& from, const std::string& to, double gbs, double lat) {
    Link l;
    l.from = from;
    l.to = to;
    l.bandwidthGBs = round3(gbs > 0 ? gbs : 1.0);
    l.latencyUs = round3(lat);
    l.sharedMemory = false;
    l.bidirectional = false;
    p.links.push_back(l);
  };
  // At the rates of the executor's paths where the backend measured them (a kernel's input staged from
  // an ordinary host tensor; an output staged back, then turned channels-last by the CPU kernel that reads
  // it, as the CPU's convolutions and pools read a 4-D activation), else of the pinned copies alone.
  auto rate = [&](const char* path, const char* pinned) { return g.fact(path) > 0 ? g.fact(path) : g.fact(pinned); };
  link(p.host, d.id, rate("h2d_staged_gbs", "h2d_gbs"), latency);
  // The download and the conversion apart where both were measured: the GPU's lane makes the download
  // (Device::copies "inline"), the CPU kernel that reads the result converts it on its own CPU
  // (Device::readerConvertGBs; the H200 run of 2026-11-27: Inception v1's CPU convolutions and pools
  // fed by the GPU ran 705 us profiled, 1,479 measured, while the GPU's lane was charged the conversions).
  const double staged = g.fact("d2h_staged_gbs"), nhwc = g.fact("d2h_nhwc_gbs");
  if (staged > 0 && nhwc > 0 && nhwc < staged) {
    p.devices.back().readerConvertGBs = round3(1.0 / (1.0 / nhwc - 1.0 / staged));
    link(d.id, p.host, staged, downLatency);
  } else {
    link(d.id, p.host, rate("d2h_nhwc_gbs", "d2h_gbs"), downLatency);
  }
  // The CPU devices whose CPU the GPU's lane takes: never side by side with the GPU.
  for (const std::string& x : g.exclusiveWith)
    if (p.findDevice(x) >= 0) p.exclusiveGroups.push_back({d.id + "-lane-uses-" + x, {d.id, x}});
}

/// The devices of `cpu` that use logical CPU `core` (as their own CPU or in their team).
std::vector<std::string> cpuDevicesOn(const Backend& cpu, int core) {
  std::vector<std::string> out;
  if (core < 0) return out;
  for (const auto& d : cpu.devices())
    if (d.kind != "gpu" &&
        (d.core == core || std::find(d.teamCores.begin(), d.teamCores.end(), core) != d.teamCores.end()))
      out.push_back(d.id);
  return out;
}

/// The GPU's sentence of the description.
std::string gpuSummary(const GpuDeviceCalibration& g) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  return "GPU '" + g.device + "' (" + g.name + ", " + fmt(static_cast<double>(g.memoryBytes) / gib, 1) +
         " GiB), measured by the " + g.backend + " backend: device memory " + fmt(g.fact("d2d_gbs"), 0) +
         " GB/s (a device-to-device copy, read + write), pinned copies " + fmt(g.fact("h2d_gbs"), 1) +
         " GB/s to the device and " + fmt(g.fact("d2h_gbs"), 1) + " GB/s back with " +
         fmt(g.fact("h2d_latency_us"), 1) + " us latency" +
         (g.fact("h2d_staged_gbs") > 0
              ? "; through the executor's staging buffers " + fmt(g.fact("h2d_staged_gbs"), 1) + " GB/s to the device and " +
                    fmt(g.fact("d2h_nhwc_gbs"), 1) + " GB/s back into a channels-last host tensor (the links to the host)"
              : std::string(" (the links to the host)")) +
         ", FP32 GEMM " +
         fmt(g.fact("fp32_gflops"), 0) + " GFLOP/s (the roof of classes without a probe; FP16 " +
         fmt(g.fact("fp16_gflops"), 0) + "), a launch and wait of " + fmt(g.fact("sync_us"), 1) +
         " us per operator; calibrated per op class from the device time of its kernels (copies excluded) "
         "on synthetic operators: " +
         summary(g.mode) + (g.note.empty() ? "" : "; probes left out: " + g.note) + ". ";
}

int coreCount(const Backend& backend) {
  int cores = 0;
  for (const auto& d : backend.devices())
    if (d.id.rfind("core", 0) == 0) ++cores;
  return std::max(cores, 1);
}

}  // namespace

bool calibrationIsProvisional(const MachineCalibration& c, int cores, double loadNow) {
  const double busy = 0.5 * std::max(cores, 1);
  return c.loadAverage > busy && loadNow >= 0 && loadNow <= 0.5 * c.loadAverage;
}

std::string calibrationKey(const Backend& backend, const Backend* gpu) {
  const int cores = coreCount(backend);
  std::string key = "cpu " + thisMachineCpuModel() + "; " + std::to_string(cores) + " cores; partex " + PARTEX_VERSION +
                    " (" + buildType() + "); backend " + backend.name() + " " + backend.version() + "; calibration " +
                    std::to_string(kCalibrationFormat);
  if (gpu) {
    const auto dev = firstGpuDevice(*gpu);
    key += "; gpu backend " + gpu->name() + " " + gpu->version() + " device " + (dev ? dev->id : std::string("?"));
  }
  return key;
}

const Backend* findGpuBackend(const BackendRegistry& registry) {
  for (const Backend* b : registry.all())
    if (firstGpuDevice(*b)) return b;
  return nullptr;
}

Result<MachineCalibration> calibrateMachine(const Backend& backend, const Platform& base,
                                            const CalibrationOptions& opts) {
  startWithWaitPolicy();  // measured under the policy the runs use (profile/ompenv.h)
  const auto t0 = Clock::now();
  const Graph g = buildProbes();
  for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op) {
    std::string why;
    if (!backend.supports(g, op, &why))
      return makeError("calibration: backend '", backend.name(), "' cannot run ", g.nodes[static_cast<size_t>(op)].name,
                       ": ", why);
  }
  const auto work = characteriseAll(g);
  auto table = buildCostTable(g, work, base);
  if (!table) return makeError("calibration: ", table.message());
  MachineCalibration c;
  c.key = calibrationKey(backend);
  c.measuredAt = isoNow();
  c.loadAverage = thisMachineLoadAverage();
  // One untimed pass first. A process's first large allocations (the reorder buffers oneDNN's
  // convolutions get per call) are mapped and unmapped on every call until glibc's allocator raises its
  // thresholds after the first large free, which a process running a model has long done: without this
  // pass, the first calibration of a process measured the convolutions' bandwidth at half the rate.
  CalibrationOptions once = opts;
  once.warmup = 0;
  once.reps = 1;
  if (auto first = measureMode(backend, g, work, *table, "core0", once); !first) return Error{first.message()};
  auto serial = measureMode(backend, g, work, *table, "core0", opts);
  if (!serial) return Error{serial.message()};
  c.serial = std::move(serial).value();
  auto parallel = measureMode(backend, g, work, *table, "cpu-parallel", opts);
  if (!parallel) return Error{parallel.message()};
  c.parallel = std::move(parallel).value();
  auto handoffs = measureHandoffs(backend, base, opts);
  if (!handoffs) return Error{handoffs.message()};
  c.handoffs = *handoffs;
  c.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return c;
}

Result<GpuDeviceCalibration> calibrateGpuDevice(const Backend& gpu, const CalibrationOptions& opts) {
  const auto dev = firstGpuDevice(gpu);
  if (!dev) return makeError("GPU calibration: backend '", gpu.name(), "' has no device of kind gpu");
  GpuDeviceCalibration c;
  c.backend = gpu.name();
  c.device = dev->id;
  c.name = dev->description;
  auto facts = gpu.deviceFacts(dev->id);
  if (!facts) return makeError("GPU calibration: ", facts.message());
  for (const auto& [name, v] : *facts)
    if (std::isfinite(v) && v >= 0) c.facts[name] = v;  // A fact that is not a number >= 0 is left out.
  c.memoryBytes = dev->memoryBytes > 0 ? dev->memoryBytes : static_cast<int64_t>(c.fact("memory_bytes"));

  // Each probe on its own: prepared for the device, fed synthetic host tensors, run at least once
  // untimed (the first run uploads the weights and may choose algorithms by timing them), then timed.
  const Graph g = buildGpuProbes();
  const auto work = characteriseAll(g);
  ModeCalibration& m = c.mode;
  m.device = dev->id;
  const int warmup = std::max(1, opts.warmup), reps = std::max(1, opts.reps);
  // A probe the backend cannot run is left out (its class keeps the device's defaults), and said.
  auto leaveOut = [&](const Node& n, const std::string& why) {
    c.note += (c.note.empty() ? "" : "; ") + n.name + " (" + n.opType + "): " + why;
  };
  for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op) {
    const Node& n = g.nodes[static_cast<size_t>(op)];
    if (std::string why; !gpu.supports(g, op, &why)) {
      leaveOut(n, "not supported (" + why + ")");
      continue;
    }
    auto k = gpu.prepare(g, op, dev->id);
    if (!k) {
      leaveOut(n, k.message());
      continue;
    }
    std::vector<Tensor> held(n.inputs.size());
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] < 0) continue;
      auto t = syntheticTensor(g, n.inputs[i], opts.seed + i);
      if (!t) return makeError("GPU calibration: ", n.name, ": ", t.message());
      held[i] = std::move(t).value();
      ins[i] = &held[i];
    }
    std::vector<Tensor> outs;
    std::vector<double> times;
    Status ran;  // Ok until a run fails.
    for (int r = 0; r < warmup + reps && ran; ++r) {
      const auto t0 = Clock::now();
      if (auto st = (*k)->run(ins, outs); !st) {
        ran = st;
        break;
      }
      const double wall = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      const double device = (*k)->lastDeviceUs();
      // The device time; a kernel that does not measure one gives its wall time (copies included).
      if (r >= warmup) times.push_back(device >= 0 ? device : wall);
    }
    if (!ran) {
      leaveOut(n, ran.message());
      continue;
    }
    const OpWork& w = work[static_cast<size_t>(op)];
    CalibrationSample smp{n.name, n.opType, w.cls, w.flops, w.bytesReadActivations + w.bytesWritten,
                          w.bytesReadWeights, w.macs, w.bytesWritten / std::max<int64_t>(1, dtypeSize(w.dtype)),
                          median(times)};
    m.samples.push_back(smp);
  }
  // The executor's GPU lane launches each operator and waits for it: the round trip is its cost per
  // operator outside the kernel's device time.
  m.executorUs = c.fact("sync_us");
  for (const auto& s : m.samples)
    if (s.name == "elementwise-call") m.callUs = s.us;
  fitMode(m);
  if (m.classes.empty())
    return makeError("GPU calibration: backend '", gpu.name(), "' ran none of the probes",
                     c.note.empty() ? "" : ": " + c.note);
  // The weights probe left out or unfitted: the device's copy bandwidth (the cache file wants a number).
  if (!(m.weightBandwidthGBs > 0)) m.weightBandwidthGBs = c.fact("d2d_gbs", 1.0) > 0 ? c.fact("d2d_gbs", 1.0) : 1.0;
  return c;
}

std::string calibrationToJson(const MachineCalibration& c) {
  json j = {{"format", kFormatName},
            {"version", kCalibrationFormat},
            {"key", c.key},
            {"measured_at", c.measuredAt},
            {"seconds", c.seconds},
            {"load_average", c.loadAverage},
            {"serial", modeToJson(c.serial)},
            {"parallel", modeToJson(c.parallel)}};
  if (c.probe) j["probe"] = probeToJson(*c.probe);
  if (c.gpu) j["gpu"] = gpuToJson(*c.gpu);
  const HandoffCalibration& h = c.handoffs;
  j["handoffs"] = {{"chain", kHandoffChain},   {"core0_us", h.core0Us},
                   {"core1_us", h.core1Us},    {"parallel_us", h.parallelUs},
                   {"cross_us", h.crossUs},    {"switch_chain_us", h.switchChainUs},
                   {"wake_up_us", h.wakeUpUs}, {"mode_switch_us", h.modeSwitchUs}};
  return j.dump(1) + "\n";
}

Result<MachineCalibration> parseCalibration(const std::string& text, const std::string& origin) {
  try {
    const json j = json::parse(text);
    Reader r{origin};
    if (!j.is_object()) throw std::runtime_error(origin + ": not a JSON object");
    if (r.str(j, "format", "") != kFormatName) r.fail("format", std::string("must be \"") + kFormatName + "\"");
    const json& v = r.at(j, "version", "");
    if (!v.is_number_integer() || v.get<int64_t>() != kCalibrationFormat)
      r.fail("version", "must be " + std::to_string(kCalibrationFormat));
    MachineCalibration c;
    c.key = r.str(j, "key", "");
    c.measuredAt = r.str(j, "measured_at", "");
    c.seconds = r.num(j, "seconds", "", false);
    const json& load = r.at(j, "load_average", "");
    if (!load.is_number()) r.fail("load_average", "must be a number");
    c.loadAverage = load.get<double>();
    c.serial = r.mode(r.at(j, "serial", ""), "serial.");
    c.parallel = r.mode(r.at(j, "parallel", ""), "parallel.");
    if (j.contains("probe")) c.probe = r.probe(j.at("probe"), "probe");
    if (j.contains("gpu")) c.gpu = r.gpu(j.at("gpu"), "gpu");
    const json& h = r.at(j, "handoffs", "");
    c.handoffs.core0Us = r.num(h, "core0_us", "handoffs.", false);
    c.handoffs.core1Us = r.num(h, "core1_us", "handoffs.", false);
    c.handoffs.parallelUs = r.num(h, "parallel_us", "handoffs.", false);
    c.handoffs.crossUs = r.num(h, "cross_us", "handoffs.", false);
    c.handoffs.switchChainUs = r.num(h, "switch_chain_us", "handoffs.", false);
    c.handoffs.wakeUpUs = r.num(h, "wake_up_us", "handoffs.", false);
    c.handoffs.modeSwitchUs = r.num(h, "mode_switch_us", "handoffs.", false);
    return c;
  } catch (const json::exception& e) {
    return makeError(origin, ": not a calibration file (", e.what(), ")");
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
}

std::string defaultCalibrationCacheDir() {
  namespace fs = std::filesystem;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x && fs::path(x).is_absolute())
    return (fs::path(x) / "partex").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "partex").string();
  return "";
}

std::string calibrationCachePath(const std::string& dir, const std::string& key) {
  return (std::filesystem::path(dir) / ("calibration-" + hashHex(key) + ".json")).string();
}

namespace {

/// The valid cached calibration for `key` in `src.path`, or nothing (with the reason in `src.note`).
std::optional<MachineCalibration> readCached(const Backend& backend, const std::string& key, CalibrationSource& src) {
  std::error_code ec;
  if (!std::filesystem::exists(src.path, ec)) return std::nullopt;
  auto text = readFile(src.path);
  auto cached = text ? parseCalibration(*text, src.path) : Result<MachineCalibration>(Error{text.message()});
  if (cached && cached->key == key && !calibrationIsProvisional(*cached, coreCount(backend), thisMachineLoadAverage()))
    return std::move(cached).value();
  if (!cached)
    src.note = cached.message() + "; measured again";
  else if (cached->key != key)
    src.note = src.path + ": measured for another machine or version, measured again";
  else
    src.note = src.path + ": measured under load (load average " + fmt(cached->loadAverage, 1) +
               "), measured again now that the machine is quieter";
  return std::nullopt;
}

/// Writes `c` to `src.path` (creating `cacheDir`); a failure is only noted.
void writeCache(const std::string& cacheDir, const MachineCalibration& c, CalibrationSource& src) {
  std::error_code ec;
  std::filesystem::create_directories(cacheDir, ec);
  if (auto st = writeFileAtomic(src.path, calibrationToJson(c)); !st) {
    src.note += (src.note.empty() ? "" : "; ") + std::string("not cached: ") + st.message();
    src.path.clear();
  }
}

}  // namespace

Result<MachineCalibration> loadOrCalibrate(const Backend& backend, const Platform& base, const std::string& cacheDir,
                                           CalibrationSource* source, const CalibrationOptions& opts) {
  CalibrationSource local;
  CalibrationSource& src = source ? *source : local;
  src = CalibrationSource{};
  const std::string key = calibrationKey(backend);
  if (!cacheDir.empty()) {
    src.path = calibrationCachePath(cacheDir, key);
    if (auto cached = readCached(backend, key, src)) {
      src.fromCache = true;
      src.probeFromCache = cached->probe.has_value();
      return std::move(*cached);
    }
  } else {
    src.note = "no cache folder (neither XDG_CACHE_HOME nor HOME is set)";
  }
  auto c = calibrateMachine(backend, base, opts);
  if (!c) return c;
  if (!cacheDir.empty()) writeCache(cacheDir, *c, src);
  return c;
}

Result<MachineCalibration> loadOrMeasureThisMachine(const Backend& backend, const std::string& cacheDir,
                                                    CalibrationSource* source, const CalibrationOptions& opts,
                                                    const Backend* gpu) {
  CalibrationSource local;
  CalibrationSource& src = source ? *source : local;
  src = CalibrationSource{};
  const std::string key = calibrationKey(backend, gpu);
  std::optional<MachineCalibration> cached;
  if (!cacheDir.empty()) {
    src.path = calibrationCachePath(cacheDir, key);
    cached = readCached(backend, key, src);
  } else {
    src.note = "no cache folder (neither XDG_CACHE_HOME nor HOME is set)";
  }
  if (cached && cached->probe && (!gpu || cached->gpu)) {  // The warm start: nothing measured.
    src.fromCache = src.probeFromCache = true;
    src.probe = cached->probe;
    return std::move(*cached);
  }
  // What the cached file lacks, or everything: measured under the OpenMP policy the runs use (a command
  // that left the policy's second start for later starts again here, once per cold cache).
  startWithWaitPolicy();
  MachineCalibration c;
  if (cached) {
    src.fromCache = true;
    c = std::move(*cached);
    if (c.probe) {
      src.probeFromCache = true;
      src.probe = c.probe;
    } else {  // A calibration of this key without a probe (loadOrCalibrate wrote it): add the probe.
      src.probe = c.probe = probeThisMachine();
      src.note = "the probe was not cached: measured and added";
    }
  } else {
    src.probe = probeThisMachine();
    auto measured = calibrateMachine(backend, thisMachineFromProbe(*src.probe), opts);
    if (!measured) return measured;
    c = std::move(measured).value();
    c.key = key;  // The CPU's key, and the GPU's where there is one.
    c.probe = src.probe;
  }
  // The GPU, where there is one and the file has none (a new file, or its measurement failed last time).
  if (gpu && !c.gpu) {
    auto g = calibrateGpuDevice(*gpu, opts);
    if (g) {
      if (const auto dev = firstGpuDevice(*gpu)) g->exclusiveWith = cpuDevicesOn(backend, dev->core);
      c.gpu = std::move(g).value();
      if (cached)
        src.note += (src.note.empty() ? "" : "; ") + std::string("the GPU was not cached: measured and added");
    } else {
      src.gpuNote = g.message();
    }
  }
  if (!cacheDir.empty()) writeCache(cacheDir, c, src);
  return c;
}

void deriveHandoffCosts(HandoffCalibration& h) {
  constexpr double handoffs = kHandoffChain - 1;
  h.wakeUpUs = h.crossUs > 0 ? std::max(0.0, (h.crossUs - 0.5 * (h.core0Us + h.core1Us)) / handoffs) : 0.0;
  h.modeSwitchUs =
      h.switchChainUs > 0 ? std::max(0.0, (h.switchChainUs - 0.5 * (h.parallelUs + h.core1Us)) / handoffs) : 0.0;
}

void applyCalibration(Platform& p, const MachineCalibration& c, const CalibrationSource& source) {
  for (Device& d : p.devices) {
    if (d.id == "cpu-parallel")
      applyMode(d, c.parallel);
    else if (d.id == "cpu-serial" || d.id.rfind("core", 0) == 0)
      applyMode(d, c.serial);
    // The stream's handoffs (sim/handoff.h): every CPU device's lane may sleep; the team switches.
    if (d.id == "cpu-parallel" || d.id == "cpu-serial" || d.id.rfind("core", 0) == 0) {
      d.wakeUpUs = round3(c.handoffs.wakeUpUs);
      if (d.id == "cpu-parallel") d.modeSwitchUs = round3(c.handoffs.modeSwitchUs);
    }
  }
  if (c.gpu && p.findDevice(c.gpu->device) < 0) addGpuDevice(p, *c.gpu);
  std::string origin = source.fromCache
                           ? "read from " + source.path + (source.probeFromCache ? " with the probe" : "") +
                                 " (measured " + c.measuredAt + " in " + fmt(c.seconds * 1e3, 0) +
                                 " ms, load average " + fmt(c.loadAverage, 1) + ")"
                           : "measured now in " + fmt(c.seconds * 1e3, 0) + " ms" +
                                 (source.path.empty() ? "" : ", cached in " + source.path);
  if (!source.note.empty()) origin += "; " + source.note;
  const std::string text =
      "Calibrated on the real kernels (" + origin +
      "): small synthetic operators of each op class ran through the executor on core0 and on cpu-parallel; a "
      "tiny one on warm caches gives the class's fixed cost per operator (the executor's own " +
      fmt(c.serial.executorUs, 1) +
      " us between kernels included), a low-intensity one the bandwidth at which it streams "
      "activations, a high-intensity one its GFLOP/s, and a fully connected layer of batch 1 the bandwidth "
      "at which kernels stream weights; chains of " + std::to_string(kHandoffChain) +
      " small convolutions with sleeping waits (a stream's) give a wake-up of " + fmt(c.handoffs.wakeUpUs, 1) +
      " us per input from another CPU (core0 and core1 alternating) and a mode switch of " +
      fmt(c.handoffs.modeSwitchUs, 1) + " us per change of a CPU between its own operators and cpu-parallel's. "
      "core0 (also cpu-serial and the other cores): " +
      summary(c.serial) + ". cpu-parallel: " + summary(c.parallel) + ". " + (c.gpu ? gpuSummary(*c.gpu) : "") +
      (source.gpuNote.empty() ? "" : "A GPU was found but not measured, so it is left out: " + source.gpuNote + ". ") +
      "Estimates: the other cores reuse core0's numbers and each assumes core0's bandwidth even when several "
      "run at once; within a class an operator's time is the roofline of the class's numbers (a depthwise "
      "convolution comes out bandwidth-bound, a 3x3 one compute-bound); shape-only operators cost only their "
      "fixed cost; classes without a probe (control flow, unknown) keep the FMA peak and memcpy bandwidth" +
      (c.gpu ? " (on the GPU its FP32 GEMM rate and copy bandwidth); the GPU's operators are costed as one "
               "launch and wait each, with no overlap of copies and kernels"
             : "") +
      ".";
  const auto at = p.description.find(kThisMachineEstimates);
  p.description = (at == std::string::npos ? p.description + " " : p.description.substr(0, at)) + text;
  p.sources.insert(p.sources.begin() + std::min<size_t>(1, p.sources.size()),
                   "Calibrated by calibrateMachine() (core/profile/calibration.cpp): synthetic operators per op "
                   "class through executePlan() on the CPU backend, key '" +
                       c.key + "'");
  if (c.gpu)
    p.sources.insert(p.sources.begin() + std::min<size_t>(2, p.sources.size()),
                     "GPU measured by the " + c.gpu->backend +
                         " backend (Backend::deviceFacts: copies, launch round trip, GEMM rates) and calibrated by "
                         "calibrateGpuDevice() (core/profile/calibration.cpp): synthetic operators per op class "
                         "through its Kernel interface, device times");
}

void installThisMachineCalibration(std::function<void(BackendRegistry&)> registerBackends,
                                   const std::string& cacheDir) {
  if (const char* off = std::getenv("PARTEX_NO_CALIBRATION"); off && *off && std::string(off) != "0") {
    setThisMachineProvider({});
    return;
  }
  if (waitPolicyDeferred()) {
    // A command that left the OpenMP policy's second start for later (profile/ompenv.h) starts again now,
    // before it prints anything, where this machine would be measured: no calibration file at all. Not
    // the file of this machine's key, which needs the backends (the CPU backend starts an OpenMP team):
    // where only a file of another key is cached (a new Partex version), the calibration starts the
    // program again itself, and what was printed before is printed twice, once.
    const std::string dir = cacheDir.empty() ? defaultCalibrationCacheDir() : cacheDir;
    bool any = false;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end && !any; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      any = name.rfind("calibration-", 0) == 0 && it->path().extension() == ".json";
    }
    if (!any) startWithWaitPolicy();
  }
  setThisMachineProvider([registerBackends = std::move(registerBackends), cacheDir]() {
    auto uncalibrated = [](Platform p, const std::string& why) {
      const std::string text = "Not calibrated on the real kernels: " + why + ". ";
      const auto at = p.description.find(kThisMachineEstimates);
      if (at == std::string::npos)
        p.description += " " + text;
      else
        p.description.insert(at, text);
      return p;
    };
    BackendRegistry registry;
    if (registerBackends) registerBackends(registry);
    const Backend* cpu = registry.find("cpu");
    if (!cpu) return uncalibrated(thisMachineFromProbe(probeThisMachine()), "no CPU backend in this program");
    CalibrationSource src;
    auto c = loadOrMeasureThisMachine(*cpu, cacheDir.empty() ? defaultCalibrationCacheDir() : cacheDir, &src, {},
                                      findGpuBackend(registry));
    if (!c) return uncalibrated(thisMachineFromProbe(src.probe ? *src.probe : probeThisMachine()), c.message());
    Platform p = thisMachineFromProbe(*c->probe);
    applyCalibration(p, *c, src);
    return p;
  });
}

}  // namespace partex
