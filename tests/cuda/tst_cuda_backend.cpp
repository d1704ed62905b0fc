// The CUDA backend. Without a GPU (CI): detection says why there is none and nothing else changes (the
// registry has the CPU backend alone, nothing crashes), and the backend's graph analysis (what it runs,
// which chains it fuses) is checked on the shared models. With a GPU (scripts/gpu/device_check.sh on
// the device machine): every shared model runs whole on the GPU and matches the CPU backend's outputs
// (max relative difference 1e-3, float32 without TF32), eagerly and replayed as a CUDA graph; every ONNX
// conformance case the backend claims reproduces the reference outputs through the Backend interface
// (host tensors in and out, one operator at a time); a kernel keeps its weights and times itself.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "backend/backend.h"
#include "backend/npy.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "platform/platform.h"
#include "sim/plan.h"
#include "cpu/cpu_backend.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/cuda_conv_graph.h"
#include "cuda/cuda_ops.h"
#include "cuda/cuda_program.h"
#include "gen/generator.h"
#include "graphrun.h"
#include "onnx/importer.h"
#include "onnx/tensorio.h"
#include "profile/executor.h"
#include "testutil.h"

using namespace partex;
namespace fs = std::filesystem;

namespace {

bool haveGpu() { return cuda::gpuCount() > 0; }

#define REQUIRE_GPU()                                                                                        \
  do {                                                                                                     \
    std::string why_;                                                                                      \
    if (cuda::gpuCount(&why_) == 0) QSKIP(("no GPU on this machine (" + why_ + "): GPU checks run on the device machine").c_str()); \
  } while (0)

/// A generated model of `kind`, small enough to run in a test (two transformer blocks, 64 tokens).
GenSpec smallSpec(const std::string& kind) {
  GenSpec spec;
  spec.kind = kind;
  spec.imageSize = 64;
  spec.layers = 2;
  spec.seqLen = 64;
  spec.hidden = 256;
  spec.heads = 4;
  spec.vocab = 1000;
  return spec;
}

Result<Graph> importShared(const std::string& file) { return test::importSharedModel(test::sharedModel(file)); }

std::vector<std::string> sharedFiles() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(test::sharedModelsDir()))
    if (e.path().extension() == ".onnx") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

/// The CPU backend's outputs of `g` on `leaves` (seed 1, as bench_gpu's), through the cache folder
/// PARTEX_GPU_REF_CACHE when it is set (device_check.sh shares it with bench_gpu: on a GPU machine the
/// reference is most of the run's time).
Result<std::map<ValueId, Tensor>> cpuReference(const Graph& g, const std::string& name,
                                               const std::map<ValueId, Tensor>& leaves, const Backend& cpu) {
  const char* dir = std::getenv("PARTEX_GPU_REF_CACHE");
  return test::cachedReference(g, name, leaves, cpu, "cpu-parallel", dir ? dir : "");
}

std::string conformanceDir() {
  if (const char* d = std::getenv("PARTEX_CONFORMANCE_DIR"); d && fs::is_directory(d)) return d;
  return "/usr/share/libonnx-testdata/data/node";
}


}  // namespace

class TestCudaBackend : public QObject {
  Q_OBJECT

 private slots:
  /// Detection never fails hard: without a GPU the count is 0 with a reason, the backend is not made,
  /// and the registry holds the CPU backend alone; with one, what the runtime reports is plausible.
  void detection() {
    std::string why;
    const int n = cuda::gpuCount(&why);
    BackendRegistry reg;
    registerBuiltinBackends(reg);
    QVERIFY(reg.find("cpu") != nullptr);
    std::string makeWhy;
    auto b = makeCudaBackend(&makeWhy);
    if (n == 0) {
      QVERIFY2(!why.empty(), "no GPU and no reason given");
      QVERIFY(b == nullptr);
      QVERIFY(!makeWhy.empty());
      QVERIFY(reg.find("cuda") == nullptr);
      QVERIFY(!cudaUnavailableReason().empty());
      QVERIFY(!cuda::gpuInfo(0).isOk());
      QVERIFY(!cuda::Context::get().isOk());
      return;
    }
    auto info = cuda::gpuInfo(0);
    QVERIFY2(info.isOk(), info.message().c_str());
    QVERIFY(!info->name.empty());
    QVERIFY(info->smCount > 0);
    QVERIFY(info->memoryBytes > (int64_t{1} << 30));
    QVERIFY(info->ccMajor >= 7);
    QVERIFY(b != nullptr);
    QCOMPARE(b->devices().size(), size_t{1});
    QCOMPARE(b->devices()[0].id, std::string("gpu"));
    qInfo("GPU: %s; backend %s", info->describe().c_str(), b->version().c_str());
    // The module beside the executable registers the same backend (unless PARTEX_NO_GPU is set).
    if (!std::getenv("PARTEX_NO_GPU")) QVERIFY2(reg.find("cuda") != nullptr, cudaUnavailableReason().c_str());
  }

  /// Every operator of the shared CNNs is one the backend runs; unsupported ones give a reason.
  void coverage() {
    PARTEX_REQUIRE_SHARED_MODELS();
    for (const auto& f : sharedFiles()) {
      auto g = importShared(f);
      QVERIFY2(g.isOk(), g.message().c_str());
      for (OpId op = 0; op < static_cast<OpId>(g->nodes.size()); ++op) {
        const std::string why = cuda::gpuCheck(*g, op);
        QVERIFY2(why.empty(), (f + ": " + g->nodes[static_cast<size_t>(op)].name + ": " + why).c_str());
      }
    }
    // Something it does not run, with the reason.
    Graph g = test::oneNodeGraph("NonMaxSuppression", {{DType::Float32, {1, 4, 4}}, {DType::Float32, {1, 1, 4}}});
    const std::string why = cuda::gpuCheck(g, 0);
    QVERIFY(!why.empty());
    QVERIFY2(why.find("NonMaxSuppression") != std::string::npos, why.c_str());
    // Dynamic shapes and non-float arithmetic are refused, not run wrongly.
    Graph dyn = test::oneNodeGraph("Relu", {{DType::Float32, {1, -1}}});
    QVERIFY(!cuda::gpuCheck(dyn, 0).empty());
    // What the first GPU run showed it claimed wrongly: reductions over axes that are not contiguous,
    // and Dropout in training mode (an inference backend runs Dropout as the identity).
    Attribute axes;
    axes.value = std::vector<int64_t>{0, 2, 3};
    Graph mvn = test::oneNodeGraph("ReduceMean", {{DType::Float32, {2, 3, 4, 5}}}, 1, {{"axes", axes}});
    mvn.values[static_cast<size_t>(mvn.nodes[0].outputs[0])].shape = {1, 3, 1, 1};
    mvn.values[static_cast<size_t>(mvn.nodes[0].outputs[0])].shapeKnown = true;
    QVERIFY2(cuda::gpuCheck(mvn, 0).find("contiguous") != std::string::npos, cuda::gpuCheck(mvn, 0).c_str());
    Graph drop = test::oneNodeGraph("Dropout", {{DType::Float32, {2, 3}}, {DType::Float32, {}}, {DType::Bool, {}}});
    drop.values[static_cast<size_t>(drop.nodes[0].outputs[0])].shape = {2, 3};
    drop.values[static_cast<size_t>(drop.nodes[0].outputs[0])].shapeKnown = true;
    QVERIFY2(cuda::gpuCheck(drop, 0).find("training") != std::string::npos, cuda::gpuCheck(drop, 0).c_str());
    Graph ints = test::oneNodeGraph("Relu", {{DType::Int64, {2, 3}}});
    ints.values[static_cast<size_t>(ints.nodes[0].outputs[0])].shape = {2, 3};
    ints.values[static_cast<size_t>(ints.nodes[0].outputs[0])].shapeKnown = true;
    QVERIFY(!cuda::gpuCheck(ints, 0).empty());
  }

  /// Every operator of the project's generated models (CNNs, transformers with their masks, Llama,
  /// recommenders) is one the backend runs.
  void generatedCoverage() {
    for (const char* kind : {"resnet18", "mobilenetv2", "inception", "bert", "gpt2", "llama", "widedeep", "multitower"}) {
      auto g = test::generatedGraph(smallSpec(kind));
      QVERIFY2(g.isOk(), g.message().c_str());
      for (OpId op = 0; op < static_cast<OpId>(g->nodes.size()); ++op) {
        const std::string why = cuda::gpuCheck(*g, op);
        QVERIFY2(why.empty(), (std::string(kind) + ": " + g->nodes[static_cast<size_t>(op)].name + ": " + why).c_str());
      }
    }
  }

  /// The generated models whole on the GPU against the CPU backend, as the shared ones.
  void generatedModels() {
    REQUIRE_GPU();
    auto cpu = makeCpuBackend();
    for (const char* kind : {"resnet18", "mobilenetv2", "inception", "bert", "gpt2", "llama", "widedeep", "multitower"}) {
      GenSpec spec = smallSpec(kind);
      spec.weights = true;
      auto g = test::generatedGraph(spec);
      QVERIFY2(g.isOk(), g.message().c_str());
      auto leaves = test::leafTensors(*g, 11);
      QVERIFY2(leaves.isOk(), leaves.message().c_str());
      auto p = cuda::Program::build(*g, *g->topologicalOrder(), test::leafLookup(*leaves));
      QVERIFY2(p.isOk(), (std::string(kind) + ": " + p.message()).c_str());
      auto ref = test::cachedReference(*g, kind, *leaves, *cpu, "cpu-parallel", "");
      QVERIFY2(ref.isOk(), ref.message().c_str());
      QVERIFY2((*p)->run(true).isOk(), kind);
      for (ValueId v : g->outputs) {
        Tensor out;
        QVERIFY((*p)->output(v, out).isOk());
        double maxAbs = 0, maxRel = 0;
        std::string why;
        QVERIFY2(tensorsClose((*ref)[v], out, 1e-3, maxAbs, maxRel, &why), (std::string(kind) + ": " + why).c_str());
      }
      qInfo("%s: %d GPU operations, outputs match", kind, (*p)->launches());
    }
  }

  /// The fused chains on ResNet-50: each Conv takes its BatchNormalization, the residual Sum where there
  /// is one, and the Relu; chains never cross a placement boundary.
  void chains() {
    PARTEX_REQUIRE_SHARED_MODELS();
    auto g = importShared("light_resnet50.onnx");
    QVERIFY2(g.isOk(), g.message().c_str());
    int convs = 0, withBn = 0, withResidual = 0, withRelu = 0;
    const auto chains = cuda::gpuChains(*g, *g->topologicalOrder());
    std::vector<int> seen(g->nodes.size(), 0);
    std::vector<char> written(g->values.size(), 0);
    for (const auto& chain : chains) {
      QVERIFY(cuda::gpuChainOk(*g, chain));
      // Every value the chain reads from another operator was written by an earlier chain.
      for (OpId c : chain)
        for (ValueId v : g->nodes[static_cast<size_t>(c)].inputs) {
          if (v < 0) continue;
          const OpId p = g->values[static_cast<size_t>(v)].producer;
          if (p == kNone || std::find(chain.begin(), chain.end(), p) != chain.end()) continue;
          QVERIFY2(written[static_cast<size_t>(v)], g->values[static_cast<size_t>(v)].name.c_str());
        }
      written[static_cast<size_t>(g->nodes[static_cast<size_t>(chain.back())].outputs[0])] = 1;
      for (ValueId v : g->nodes[static_cast<size_t>(chain.back())].outputs)
        if (v >= 0) written[static_cast<size_t>(v)] = 1;
      convs += g->nodes[static_cast<size_t>(chain[0])].opType == "Conv";
      for (OpId c : chain) {
        ++seen[static_cast<size_t>(c)];
        const std::string& t = g->nodes[static_cast<size_t>(c)].opType;
        withBn += t == "BatchNormalization";
        withResidual += t == "Sum" || t == "Add";
        withRelu += t == "Relu" && c != chain[0];
      }
    }
    for (int s : seen) QCOMPARE(s, 1);  // each operator in exactly one chain
    QCOMPARE(convs, 53);
    QCOMPARE(withBn, 53);       // every BatchNormalization folds
    QCOMPARE(withResidual, 16); // every residual Sum joins its Conv
    QCOMPARE(withRelu, 49);     // every Relu follows a chain
    // A placement that puts a Conv's BatchNormalization elsewhere cuts the chain there.
    OpId conv = kNone;
    for (OpId op = 0; op < static_cast<OpId>(g->nodes.size()) && conv == kNone; ++op)
      if (g->nodes[static_cast<size_t>(op)].opType == "Conv") conv = op;
    const auto full = cuda::gpuChain(*g, conv);
    QVERIFY(full.size() >= 2);
    std::vector<int> place(g->nodes.size(), 0);
    place[static_cast<size_t>(full[1])] = 1;
    QCOMPARE(cuda::gpuChain(*g, conv, &place).size(), size_t{1});
    // Not a chain: a Relu followed by a Conv.
    QVERIFY(!cuda::gpuChainOk(*g, {full.back(), conv}));
  }

  /// Every shared model, whole on the GPU, against the CPU backend (1e-3 relative, float32 without TF32).
  void sharedModels() {
    REQUIRE_GPU();
    PARTEX_REQUIRE_SHARED_MODELS();
    auto cpu = makeCpuBackend();
    for (const auto& f : sharedFiles()) {
      auto g = importShared(f);
      QVERIFY2(g.isOk(), g.message().c_str());
      auto leaves = test::leafTensors(*g, 1);
      QVERIFY2(leaves.isOk(), leaves.message().c_str());
      auto order = g->topologicalOrder();
      QVERIFY(order.isOk());
      auto p = cuda::Program::build(*g, *order, test::leafLookup(*leaves));
      QVERIFY2(p.isOk(), (f + ": " + p.message()).c_str());
      auto ref = cpuReference(*g, f, *leaves, *cpu);
      QVERIFY2(ref.isOk(), (f + ": the CPU reference: " + ref.message()).c_str());
      for (bool graphMode : {false, true, true}) {
        Status st = (*p)->run(graphMode);
        QVERIFY2(st.isOk(), (f + ": " + st.message()).c_str());
        for (ValueId v : g->outputs) {
          Tensor out;
          QVERIFY((*p)->output(v, out).isOk());
          double maxAbs = 0, maxRel = 0;
          std::string why;
          QVERIFY2(tensorsClose((*ref)[v], out, 1e-3, maxAbs, maxRel, &why),
                   (f + (graphMode ? " (graph)" : " (eager)") + ": " + why).c_str());
        }
      }
      qInfo("%s: %d GPU operations, outputs match", f.c_str(), (*p)->launches());
    }
  }

  /// A new input changes the output of a captured graph (the graph reads the input buffer, it did not
  /// bake the first run's values).
  void graphReadsNewInputs() {
    REQUIRE_GPU();
    PARTEX_REQUIRE_SHARED_MODELS();
    auto g = importShared("mnist.onnx");
    QVERIFY(g.isOk());
    auto leaves = test::leafTensors(*g, 3);
    QVERIFY2(leaves.isOk(), leaves.message().c_str());
    auto p = cuda::Program::build(*g, *g->topologicalOrder(), test::leafLookup(*leaves));
    QVERIFY2(p.isOk(), p.message().c_str());
    QVERIFY((*p)->run(true).isOk());
    Tensor a, b;
    QVERIFY((*p)->output(g->outputs[0], a).isOk());
    Tensor in = leaves->at(g->inputs[0]);
    in.fillRandom(99);
    QVERIFY((*p)->setInput(g->inputs[0], in).isOk());
    QVERIFY((*p)->run(true).isOk());
    QVERIFY((*p)->output(g->outputs[0], b).isOk());
    double maxAbs = 0, maxRel = 0;
    QVERIFY(!tensorsClose(a, b, 1e-6, maxAbs, maxRel, nullptr));
    // A wrong input shape is an error naming the input.
    Tensor wrong = *Tensor::make(DType::Float32, {1, 2});
    Status st = (*p)->setInput(g->inputs[0], wrong);
    QVERIFY(!st.isOk());
    QVERIFY2(st.message().find(g->values[static_cast<size_t>(g->inputs[0])].name) != std::string::npos, st.message().c_str());
  }

  /// The Backend interface: a kernel takes host tensors, keeps its weights after the first run (the
  /// caller may then pass an empty tensor), and reports the device time of its run.
  void kernelInterface() {
    REQUIRE_GPU();
    PARTEX_REQUIRE_SHARED_MODELS();
    auto g = importShared("light_squeezenet.onnx");
    QVERIFY(g.isOk());
    auto gpu = makeCudaBackend();
    QVERIFY(gpu != nullptr);
    auto cpu = makeCpuBackend();
    OpId conv = kNone;
    for (OpId op = 0; op < static_cast<OpId>(g->nodes.size()) && conv == kNone; ++op)
      if (g->nodes[static_cast<size_t>(op)].opType == "Conv") conv = op;
    const Node& n = g->nodes[static_cast<size_t>(conv)];
    std::vector<Tensor> in;
    for (ValueId v : n.inputs) in.push_back(*leafTensor(*g, v, 5));
    std::vector<const Tensor*> ptrs;
    for (auto& t : in) ptrs.push_back(&t);
    auto kg = gpu->prepare(*g, conv, "gpu");
    QVERIFY2(kg.isOk(), kg.message().c_str());
    auto kc = cpu->prepare(*g, conv, "cpu-serial");
    QVERIFY(kc.isOk());
    std::vector<Tensor> og, oc;
    QVERIFY((*kg)->run(ptrs, og).isOk());
    QVERIFY((*kc)->run(ptrs, oc).isOk());
    double maxAbs = 0, maxRel = 0;
    std::string why;
    Tensor ocPlain;
    QVERIFY(oc[0].toPlain(ocPlain).isOk());
    QVERIFY2(tensorsClose(ocPlain, og[0], 1e-4, maxAbs, maxRel, &why), why.c_str());
    QVERIFY((*kg)->lastDeviceUs() > 0);
    QVERIFY((*kg)->keepsCopy(1));
    QVERIFY(!(*kg)->keepsCopy(0));
    Tensor empty;
    ptrs[1] = &empty;
    std::vector<Tensor> og2;
    QVERIFY((*kg)->run(ptrs, og2).isOk());
    QVERIFY(tensorsClose(og[0], og2[0], 0, maxAbs, maxRel, &why));
    // From the second run on the kernel replays a captured CUDA graph: new input data (same buffers)
    // must give the new result, run after run.
    for (uint64_t seed : {6, 7}) {
      Tensor other = *leafTensor(*g, n.inputs[0], seed);
      ptrs[0] = &other;
      ptrs[1] = &in[1];
      std::vector<Tensor> og3, oc3;
      QVERIFY((*kg)->run(ptrs, og3).isOk());
      QVERIFY((*kc)->run(ptrs, oc3).isOk());
      Tensor oc3Plain;
      QVERIFY(oc3[0].toPlain(oc3Plain).isOk());
      QVERIFY2(tensorsClose(oc3Plain, og3[0], 1e-4, maxAbs, maxRel, &why), why.c_str());
      QVERIFY(!tensorsClose(og[0], og3[0], 1e-4, maxAbs, maxRel, &why));
    }
    QCOMPARE(gpu->prepare(*g, conv, "core0").isOk(), false);
  }

  /// Plans through the executor on the combined backend, as `partex-cli execute` runs them: all on the
  /// GPU, and blocks alternating between the GPU and a CPU core (device-resident hand-over between GPU
  /// kernels, copies where the plan crosses), over several runs (the kernels replay captured graphs from
  /// the second on): outputs equal the single-device reference.
  void executorPlans() {
    REQUIRE_GPU();
    PARTEX_REQUIRE_SHARED_MODELS();
    auto g = importShared("light_squeezenet.onnx");
    QVERIFY2(g.isOk(), g.message().c_str());
    auto cpu = makeCpuBackend();
    auto gpu = makeCudaBackend();
    QVERIFY(gpu != nullptr);
    auto both = makeCombinedBackend({cpu.get(), gpu.get()});
    Platform pf;
    pf.name = "cpu-serial+gpu";
    pf.host = "cpu-serial";
    Device c, d;
    c.id = "cpu-serial", c.name = "CPU", c.kind = DeviceKind::Cpu;
    d.id = "gpu", d.name = "GPU", d.kind = DeviceKind::Gpu;
    pf.devices = {c, d};
    Link l;
    l.from = "cpu-serial", l.to = "gpu", l.bandwidthGBs = 20, l.latencyUs = 8;
    pf.links = {l};
    auto t = buildCostTable(*g, characteriseAll(*g), pf);
    QVERIFY2(t.isOk(), t.message().c_str());
    const auto topo = t->topoOrder();
    for (int split : {0, 1}) {
      Plan plan;
      plan.algorithm = "test";
      plan.device.assign(topo.size(), 0);
      plan.order.assign(2, {});
      for (size_t i = 0; i < topo.size(); ++i) {
        const DeviceId dev = split == 0 ? 1 : static_cast<DeviceId>((i / 7) % 2);
        plan.device[static_cast<size_t>(topo[i])] = dev;
        plan.order[static_cast<size_t>(dev)].push_back(topo[i]);
      }
      ExecOptions o;
      o.warmup = 1;
      o.reps = 3;
      o.minCpuShare = 0;
      o.maxDiscarded = 0;
      o.rtol = 1e-3;
      auto r = executePlan(*g, *both, *t, plan, o);
      QVERIFY2(r.isOk(), r.message().c_str());
      QVERIFY(r->outputsChecked);
      QVERIFY2(r->outputsMatch, r->mismatch.c_str());
      qInfo("split %d: makespan %.1f us", split, r->makespanUs);
    }
  }

  /// ONNX conformance cases the backend claims, through the Backend interface (one kernel per operator).
  void conformance() {
    REQUIRE_GPU();
    const std::string suite = conformanceDir();
    if (!fs::is_directory(suite)) QSKIP("no ONNX conformance data (libonnx-testdata)");
    auto gpu = makeCudaBackend();
    QVERIFY(gpu != nullptr);
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(suite))
      if (e.is_directory()) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    int claimed = 0, passed = 0;
    std::vector<std::string> failures;
    for (const auto& dir : cases) {
      auto m = importOnnxWithData((dir / "model.onnx").string(), false);
      if (!m || m->graph.nodes.empty()) continue;
      const Graph& g = m->graph;
      bool ok = true;
      for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()) && ok; ++op) ok = gpu->supports(g, op, nullptr);
      if (!ok) continue;
      std::map<ValueId, Tensor> values;
      const auto inFiles = test::numberedFiles((dir / "test_data_set_0").string(), "input_");
      for (size_t i = 0; i < inFiles.size() && ok; ++i) {
        std::string name;
        auto t = readTensorProtoFile(inFiles[i], &name);
        ValueId v = name.empty() ? kNone : g.findValue(name);
        if (v == kNone && i < g.inputs.size()) v = g.inputs[i];
        if (!t || v == kNone) ok = false;
        else values[v] = std::move(*t);
      }
      for (ValueId v = 0; v < static_cast<ValueId>(g.values.size()) && ok; ++v) {
        const Value& val = g.values[static_cast<size_t>(v)];
        if (!val.isWeight || val.consumers.empty() || values.count(v)) continue;
        auto t = leafTensor(g, v, 1);
        if (!t) ok = false;
        else values[v] = std::move(*t);
      }
      for (ValueId v : g.inputs) ok = ok && values.count(v);
      if (!ok) continue;
      ++claimed;
      Status s = test::runGraph(g, *gpu, "gpu", values);
      std::string why = s ? "" : s.message();
      const auto outFiles = test::numberedFiles((dir / "test_data_set_0").string(), "output_");
      for (size_t i = 0; i < outFiles.size() && i < g.outputs.size() && why.empty(); ++i) {
        std::string name;
        auto want = readTensorProtoFile(outFiles[i], &name);
        ValueId v = name.empty() ? kNone : g.findValue(name);
        if (v == kNone) v = g.outputs[i];
        if (!want || !values.count(v)) {
          why = "output " + std::to_string(i) + " missing";
          break;
        }
        double maxAbs = 0, maxRel = 0;
        if (!tensorsClose(*want, values[v], 1e-3, maxAbs, maxRel, &why)) why = "output " + std::to_string(i) + ": " + why;
      }
      if (why.empty()) ++passed;
      else failures.push_back(dir.filename().string() + ": " + why);
    }
    for (const auto& f : failures) qWarning("FAILED %s", f.c_str());
    std::printf("cuda conformance: %d passed of %d claimed (%zu cases in the suite)\n", passed, claimed, cases.size());
    std::fflush(stdout);
    QVERIFY(claimed > 0);
    QCOMPARE(passed, claimed);
  }

  /// (Last: it is the one check that drives cuDNN code not yet run on a GPU, and a fault there ends the
  /// process.) The graph-API convolution plans (cuda_conv_graph.h): for a few geometries, every usable plan
  /// (float32 FMA numerics, TF32 off) reproduces a plain host convolution to 1e-4 relative to the
  /// output's largest magnitude; a common 3x3 convolution has at least one plan.
  void convGraphPlans() {
    REQUIRE_GPU();
    auto c = cuda::Context::get();
    QVERIFY2(c.isOk(), c.message().c_str());
    cuda::Context& ctx = **c;
    auto lock = ctx.lock();
    struct Case {
      const char* name;
      int64_t n, c, h, w, k, kh, kw, pad, stride, dil, groups;
      bool needsPlans;
    };
    const Case cases[] = {
        {"3x3 pad 1", 1, 32, 14, 14, 48, 3, 3, 1, 1, 1, 1, true},
        {"1x1", 1, 64, 7, 7, 32, 1, 1, 0, 1, 1, 1, false},
        {"7x7 stride 2 pad 3", 1, 3, 32, 32, 16, 7, 7, 3, 2, 1, 1, false},
        {"depthwise 3x3", 1, 24, 10, 10, 24, 3, 3, 1, 1, 1, 24, false},
        {"grouped 3x3 dilation 2, batch 2", 2, 16, 9, 11, 8, 3, 3, 2, 1, 2, 4, false},
    };
    std::vector<std::string> failures;
    for (const Case& k : cases) {
      const int64_t cg = k.c / k.groups, kg = k.k / k.groups;
      const int64_t oh = (k.h + 2 * k.pad - ((k.kh - 1) * k.dil + 1)) / k.stride + 1;
      const int64_t ow = (k.w + 2 * k.pad - ((k.kw - 1) * k.dil + 1)) / k.stride + 1;
      std::vector<float> x(static_cast<size_t>(k.n * k.c * k.h * k.w)), w(static_cast<size_t>(k.k * cg * k.kh * k.kw));
      uint32_t r = 7u;
      auto next = [&r] { return r = r * 1664525u + 1013904223u, static_cast<float>(r >> 8) / 16777216.f - 0.5f; };
      for (float& f : x) f = next();
      for (float& f : w) f = next();
      // The reference: cross-correlation, zero padding, groups of cg input and kg output channels.
      std::vector<float> want(static_cast<size_t>(k.n * k.k * oh * ow));
      double scale = 0;
      for (int64_t b = 0; b < k.n; ++b)
        for (int64_t o = 0; o < k.k; ++o)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              double acc = 0;
              const int64_t g = o / kg;
              for (int64_t ci = 0; ci < cg; ++ci)
                for (int64_t u = 0; u < k.kh; ++u)
                  for (int64_t v = 0; v < k.kw; ++v) {
                    const int64_t y = i * k.stride - k.pad + u * k.dil, xx = j * k.stride - k.pad + v * k.dil;
                    if (y < 0 || y >= k.h || xx < 0 || xx >= k.w) continue;
                    acc += static_cast<double>(x[static_cast<size_t>(((b * k.c + g * cg + ci) * k.h + y) * k.w + xx)]) *
                           w[static_cast<size_t>(((o * cg + ci) * k.kh + u) * k.kw + v)];
                  }
              want[static_cast<size_t>(((b * k.k + o) * oh + i) * ow + j)] = static_cast<float>(acc);
              scale = std::max(scale, std::fabs(acc));
            }
      cuda::DeviceBuffer dx, dw, dy;
      QVERIFY(dx.upload(x.data(), x.size() * 4, ctx.stream()).isOk());
      QVERIFY(dw.upload(w.data(), w.size() * 4, ctx.stream()).isOk());
      QVERIFY(dy.ensure(want.size() * 4).isOk());
      const int64_t xd[4] = {k.n, k.c, k.h, k.w}, wd[4] = {k.k, cg, k.kh, k.kw}, yd[4] = {k.n, k.k, oh, ow};
      const int64_t pads[2] = {k.pad, k.pad}, strides[2] = {k.stride, k.stride}, dil[2] = {k.dil, k.dil};
      auto plans = cuda::ConvGraphPlans::build(ctx, xd, wd, yd, pads, strides, dil, false, ctx.workspaceBytes());
      if (!plans) {
        failures.push_back(std::string(k.name) + ": " + plans.message());
        continue;
      }
      std::printf("cuda conv graph %s: %d plans\n", k.name, plans->count());
      if (k.needsPlans && plans->count() == 0) failures.push_back(std::string(k.name) + ": no usable plan");
      for (int p = 0; p < plans->count(); ++p) {
        std::vector<float> got(want.size());
        Status st = cuda::check(cudaMemsetAsync(dy.get(), 0xff, got.size() * 4, ctx.stream()), "memset");
        if (st) st = plans->run(p, ctx, dx.as<float>(), dw.as<float>(), dy.as<float>());
        if (st) st = cuda::check(cudaMemcpyAsync(got.data(), dy.get(), got.size() * 4, cudaMemcpyDeviceToHost, ctx.stream()), "copy");
        if (st) st = cuda::check(cudaStreamSynchronize(ctx.stream()), "synchronize");
        if (!st) {
          failures.push_back(std::string(k.name) + ", " + plans->describe(p) + ": " + st.message());
          continue;
        }
        double diff = 0;
        for (size_t e = 0; e < got.size(); ++e) {
          const double d = std::fabs(static_cast<double>(got[e]) - want[e]);
          diff = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(diff, d);
        }
        std::printf("  %s: workspace %zu, max difference %.3g (scale %.3g)\n", plans->describe(p).c_str(),
                    plans->workspace(p), diff, scale);
        if (diff > 1e-4 * scale)
          failures.push_back(std::string(k.name) + ", " + plans->describe(p) + ": differs by " + std::to_string(diff));
      }
    }
    std::fflush(stdout);
    for (const auto& f : failures) qWarning("FAILED %s", f.c_str());
    QVERIFY(failures.empty());
  }
};

QTEST_GUILESS_MAIN(TestCudaBackend)
#include "tst_cuda_backend.moc"
