// llama.cpp's rules (sched/llamarules.h, offload.cpp, llamasched.cpp) against hand counts:
//  - -ngl N on a small generated decoder: the slots are the layers then the output head; the largest
//    N that fits a GPU sized by hand (weights per slot, each layer's KV cache with it) is the hand count;
//  - a small hand-built MoE decoder with GGUF tensor names: --n-cpu-moe N's GPU bytes, the smallest
//    fitting N, and --fit's split (dense weights kept on the GPU, full layers from the front, one more
//    layer partly) equal hand counts;
//  - -ot: a user's string read as a placement (first match wins), a pattern that matches nothing is a
//    one-line error (exit 2 on the CLI), and the arguments printed for a plan read back to the same
//    placement, every tensor covered;
//  - the prefill op offload: a host weight's matrix product costs the GPU's time plus its bytes over
//    the link per 512-token micro-batch.
#include <QtTest>

#include <QJsonDocument>
#include <QJsonObject>

#include <random>
#include <regex>

#include "cost/costtable.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "sched/llamarules.h"
#include "sched/offload.h"
#include "sched/scheduler.h"
#include "sim/memory.h"
#include "llmtest.h"
#include "testutil.h"

using namespace partex;

namespace {

using test::kHidden;
using test::kInter;
using test::kLayerBytes;
using test::kLayers;
using test::kOutputBytes;
using test::kVocab;
using test::tinyLlama;

/// Decode's cache per layer: key and value, 4 heads x 8 positions x 16, float32.
constexpr int64_t kCacheBytes = 2 * 4 * 8 * 16 * 4;

using test::kDense;
using test::kExperts;
using test::kGateInp;
using test::kMoeOutput;
using test::kUpExps;
using test::moeGraph;

CostTable table(const Graph& g, int64_t gpuBytes) {
  auto t = buildCostTable(g, characteriseAll(g), test::withGpuBytes(gpuBytes));
  if (!t) qFatal("table: %s", t.message().c_str());
  return std::move(t).value();
}

int64_t gpuWeights(const CostTable& t, const Plan& p) { return weightBytesPerDevice(t, p.device)[1]; }

DeviceId deviceOfOp(const CostTable& t, const Plan& p, const std::string& name) {
  for (TaskId v = 0; v < t.numTasks(); ++v)
    if (t.taskNames[static_cast<size_t>(v)] == name) return p.device[static_cast<size_t>(v)];
  qFatal("no operator %s", name.c_str());
  return -1;
}

}  // namespace

class TstLlamaRules : public QObject {
  Q_OBJECT
 private slots:
  void names() {
    QCOMPARE(ggufTensorName("layers.3.mlp.up_proj.weight"), std::string("blk.3.ffn_up.weight"));
    QCOMPARE(ggufTensorName("layers.0.attn.o_proj.weight"), std::string("blk.0.attn_output.weight"));
    QCOMPARE(ggufTensorName("model.layers.12.self_attn.k_proj.weight"), std::string("blk.12.attn_k.weight"));
    QCOMPARE(ggufTensorName("layers.1.post_attention_norm.weight"), std::string("blk.1.ffn_norm.weight"));
    QCOMPARE(ggufTensorName("embed_tokens.weight"), std::string("token_embd.weight"));
    QCOMPARE(ggufTensorName("lm_head.weight"), std::string("output.weight"));
    QCOMPARE(ggufTensorName("norm.weight"), std::string("output_norm.weight"));
    QCOMPARE(ggufTensorName("blk.7.ffn_gate_exps.weight"), std::string("blk.7.ffn_gate_exps.weight"));
    QCOMPARE(ggufTensorName("rope.cos"), std::string());
    QVERIFY(isLlamaRule("offload") && isLlamaRule("n-cpu-moe") && !isLlamaRule("heft"));
  }

  /// -ngl N's slots by hand: N = 3 puts the output head and layers 2-3 on the GPU.
  void nglSlots_data() {
    QTest::addColumn<QString>("phase");
    QTest::newRow("prefill") << "prefill";
    QTest::newRow("decode") << "decode";
  }
  void nglSlots() {
    QFETCH(QString, phase);
    const Graph g = tinyLlama(phase.toStdString());
    const int64_t shared = test::sharedLayerConstants(g), cache = phase == "decode" ? kCacheBytes : 0;
    // Room for the shared constants, the output slot and two layers with their caches, and half a layer:
    // the largest fitting -ngl is 3 (output + layers 2, 3); -ngl 4 needs another layer.
    const int64_t cap = shared + kOutputBytes + 2 * (kLayerBytes + cache) + kLayerBytes / 2;
    const CostTable t = table(g, cap);
    const LlamaTensors m = llamaTensors(t);
    QCOMPARE(m.layers, kLayers);
    const DeviceId gpu = 1;
    for (int n = 2; n <= kLayers + 1; ++n) {
      const Plan p = nglPlan(t, {}, m, n, gpu);
      QCOMPARE(gpuWeights(t, p), shared + kOutputBytes + (n - 1) * (kLayerBytes + cache));
    }
    const Scheduler* s = findScheduler("offload");
    SchedInfo info;
    auto plan = s->schedule(t, {}, SchedOptions{}, &info);
    QVERIFY2(plan, plan.message().c_str());
    QCOMPARE(info.notes[0], std::string("-ngl 3 of 5 slots on gpu"));
    QVERIFY2(info.notes[1].rfind("-ngl 3 is the largest that fits (-ngl 4: device 'gpu'", 0) == 0, info.notes[1].c_str());
    QCOMPARE(info.notes[2], std::string("llama.cpp: -ngl 3"));
    // Output head first: lm_head on the GPU, layers 2-3 there, layers 0-1 and the embedding on the CPU.
    QCOMPARE(deviceOfOp(t, *plan, "lm_head"), gpu);
    QCOMPARE(deviceOfOp(t, *plan, "embed_tokens"), t.host);
    for (int L = 0; L < kLayers; ++L) {
      const std::string p = "layers." + std::to_string(L) + ".";
      const DeviceId want = L >= 2 ? gpu : t.host;
      for (const char* op : {"attn.q_proj", "attn.o_proj", "mlp.down_proj", "post_attention_norm.mul"})
        QCOMPARE(deviceOfOp(t, *plan, p + op), want);
      if (phase == "decode") QCOMPARE(deviceOfOp(t, *plan, p + "attn.cache_k"), want);  // the cache with its layer
    }
    // -ngl 1: the output head alone; -ngl 0: everything on the CPU.
    const Plan one = nglPlan(t, {}, m, 1, gpu);
    QCOMPARE(deviceOfOp(t, one, "lm_head"), gpu);
    QCOMPARE(deviceOfOp(t, one, "layers.3.attn.q_proj"), t.host);
    const Plan zero = nglPlan(t, {}, m, 0, gpu);
    for (DeviceId d : zero.device) QCOMPARE(d, t.host);
    // n=<N> as given; out of range refused.
    SchedOptions o;
    o.params["n"] = "1";
    SchedInfo i1;
    auto p1 = s->schedule(t, {}, o, &i1);
    QVERIFY2(p1, p1.message().c_str());
    QCOMPARE(p1->device, one.device);
    o.params["n"] = "6";
    auto bad = s->schedule(t, {}, o);
    QVERIFY(!bad);
    QVERIFY2(bad.message().find("from 0 to 5") != std::string::npos, bad.message().c_str());
    // --fit on a dense model, no margin: the same -ngl 3.
    SchedOptions fo;
    fo.params["fit-target"] = "0";
    SchedInfo fi;
    auto fit = findScheduler("fit")->schedule(t, {}, fo, &fi);
    QVERIFY2(fit, fit.message().c_str());
    QCOMPARE(fit->device, plan->device);
    QVERIFY(std::find(fi.notes.begin(), fi.notes.end(), "llama.cpp: -ngl 3") != fi.notes.end());
    // No room limits: every slot on the GPU, and fit changes nothing.
    const CostTable free = table(g, 0);
    auto all = chooseOffloadSplit(free, {}, {}, false, -1, Deadline{}, nullptr);
    QVERIFY(all);
    QCOMPARE(all->k, kLayers + 1);
  }

  /// The goal's hand counts: Llama-2-7B in float16 at 8, 12 and 24 GiB. A slot is a layer, 404,766,720
  /// bytes of weights and its 8 MiB KV cache (decode's past, prefill's present), or the output head
  /// (4096 x 32000 + 4096 halves); -ngl's largest N fits them in the GPU, --fit's in the GPU less its
  /// 1 GiB margin (the context is the user's, 512 tokens).
  void llama7bHandCounts_data() { nglSlots_data(); }
  void llama7bHandCounts() {
    QFETCH(QString, phase);
    auto bytes = generateModel(llama2_7b(phase.toStdString()));
    QVERIFY(bytes);
    auto g = importOnnxBytes(*bytes, "llama7b.onnx");
    QVERIFY(g);
    CostTable t = table(*g, 0);
    const int64_t layer = 404766720 + int64_t{2} * 32 * 512 * 128 * 2, out = 2 * (4096 + int64_t{4096} * 32000);
    const int64_t shared = test::sharedLayerConstants(*g);
    for (int gib : {8, 12, 24}) {
      t.memCapacity[1] = int64_t{gib} << 30;
      auto slotsIn = [&](int64_t room) { return static_cast<int>(std::min<int64_t>(33, 1 + (room - shared - out) / layer)); };
      const int ngl = slotsIn(t.memCapacity[1]), fit = slotsIn(t.memCapacity[1] - (int64_t{1} << 30));
      QCOMPARE(ngl, gib == 8 ? 21 : gib == 12 ? 31 : 33);
      QCOMPARE(fit, gib == 8 ? 18 : gib == 12 ? 28 : 33);
      auto rule = chooseOffloadSplit(t, {}, {}, false, -1, Deadline{}, nullptr);
      QVERIFY2(rule, rule.message().c_str());
      QCOMPARE(rule->k, ngl);
      SchedInfo info;
      auto plan = findScheduler("fit")->schedule(t, {}, SchedOptions{}, &info);
      QVERIFY2(plan, plan.message().c_str());
      const std::string args = "llama.cpp: -ngl " + std::to_string(fit);
      QVERIFY2(std::find(info.notes.begin(), info.notes.end(), args) != info.notes.end(), (args + " not in " + info.notes[0]).c_str());
    }
  }

  /// --n-cpu-ffn 2 on the dense decoder: layers 0 and 1's gate, up and down (3 x 64 x 96 float32 each
  /// layer) on the CPU, everything else on the GPU (-ngl 5).
  void nCpuFfn() {
    const Graph g = tinyLlama("decode");
    const CostTable t = table(g, 0);
    SchedOptions o;
    o.params["n"] = "2";
    SchedInfo info;
    auto p = findScheduler("n-cpu-ffn")->schedule(t, {}, o, &info);
    QVERIFY2(p, p.message().c_str());
    const int64_t ffn = 4 * 3 * kHidden * kInter;
    QCOMPARE(gpuWeights(t, *p), test::sharedLayerConstants(g) + kOutputBytes + kLayers * (kLayerBytes + kCacheBytes) - 2 * ffn);
    QCOMPARE(deviceOfOp(t, *p, "layers.1.mlp.down_proj"), t.host);
    QCOMPARE(deviceOfOp(t, *p, "layers.2.mlp.down_proj"), DeviceId{1});
    QCOMPARE(deviceOfOp(t, *p, "layers.0.attn.q_proj"), DeviceId{1});
    QVERIFY(std::find(info.notes.begin(), info.notes.end(), "llama.cpp: -ngl 5 --n-cpu-ffn 2") != info.notes.end());
    // Without limits every N fits; the fastest is chosen and the smallest fitting is 0.
    SchedInfo sweep;
    QVERIFY(findScheduler("n-cpu-ffn")->schedule(t, {}, SchedOptions{}, &sweep));
    QVERIFY2(sweep.notes[1].find("the smallest that fits is 0") != std::string::npos, sweep.notes[1].c_str());
  }

  /// The n-cpu-moe rule on the hand-built MoE decoder.
  void nCpuMoe() {
    const Graph g = moeGraph();
    // Room for the output, every layer's dense weights, two layers' experts and 40,000 bytes of activations.
    const int64_t cap = kMoeOutput + 4 * kDense + 2 * kExperts + 40000;
    const CostTable t = table(g, cap);
    const LlamaTensors m = llamaTensors(t);
    QVERIFY(m.experts);
    QCOMPARE(m.layers, 4);
    const Scheduler* s = findScheduler("n-cpu-moe");
    SchedOptions o;
    o.params["n"] = "2";
    SchedInfo info;
    auto two = s->schedule(t, {}, o, &info);
    QVERIFY2(two, two.message().c_str());
    QCOMPARE(gpuWeights(t, *two), kMoeOutput + 4 * kDense + 2 * kExperts);
    QCOMPARE(deviceOfOp(t, *two, "layers.1.moe.up"), t.host);
    QCOMPARE(deviceOfOp(t, *two, "layers.1.moe.router"), DeviceId{1});
    QCOMPARE(deviceOfOp(t, *two, "layers.2.moe.down"), DeviceId{1});
    QVERIFY(std::find(info.notes.begin(), info.notes.end(), "llama.cpp: -ngl 5 --n-cpu-moe 2") != info.notes.end());
    // Every N: the smallest that fits is 2 (N = 1 leaves three layers' experts, over the capacity).
    SchedInfo sweep;
    auto best = s->schedule(t, {}, SchedOptions{}, &sweep);
    QVERIFY2(best, best.message().c_str());
    QVERIFY2(sweep.notes[1].find("the smallest that fits is 2") != std::string::npos, sweep.notes[1].c_str());
    // --cpu-moe: n=all.
    o.params["n"] = "all";
    auto allCpu = s->schedule(t, {}, o);
    QVERIFY(allCpu);
    QCOMPARE(gpuWeights(t, *allCpu), kMoeOutput + 4 * kDense);
    // A dense model: one line.
    const CostTable dense = table(tinyLlama("decode"), 0);
    auto none = s->schedule(dense, {}, SchedOptions{});
    QVERIFY(!none);
    QVERIFY2(none.message().find("has no routed-expert tensors") != std::string::npos, none.message().c_str());
    QVERIFY(none.message().find('\n') == std::string::npos);
  }

  /// --fit on the MoE decoder, margin 0: all dense weights fit, so full layers from the front (0 and 1),
  /// the experts of 2 and 3 on the CPU; one more layer partly: "up" kept on the GPU does not fit
  /// (+ up_exps - router), so layer 2 gets "attention only" (its router to the CPU too).
  void fitMoe() {
    const Graph g = moeGraph();
    const int64_t cap = kMoeOutput + 4 * kDense + 2 * kExperts + 40000;
    const CostTable t = table(g, cap);
    SchedOptions o;
    o.params["fit-target"] = "0";
    SchedInfo info;
    auto fit = findScheduler("fit")->schedule(t, {}, o, &info);
    QVERIFY2(fit, fit.message().c_str());
    QCOMPARE(gpuWeights(t, *fit), kMoeOutput + 4 * kDense + 2 * kExperts - kGateInp);
    QVERIFY(kMoeOutput + 4 * kDense + 2 * kExperts + kUpExps - kGateInp > cap);  // why "up" did not fit
    QCOMPARE(deviceOfOp(t, *fit, "layers.0.moe.up"), DeviceId{1});
    QCOMPARE(deviceOfOp(t, *fit, "layers.1.moe.down"), DeviceId{1});
    QCOMPARE(deviceOfOp(t, *fit, "layers.2.moe.router"), t.host);
    QCOMPARE(deviceOfOp(t, *fit, "layers.3.moe.router"), DeviceId{1});
    QCOMPARE(deviceOfOp(t, *fit, "layers.3.moe.up"), t.host);
    QCOMPARE(deviceOfOp(t, *fit, "layers.2.attn.q"), DeviceId{1});
    QVERIFY2(info.notes[0].find("-ngl 5, 2 GPU layers full from the front") != std::string::npos, info.notes[0].c_str());
    QVERIFY2(info.notes[0].find("layer 2 partly (attention on the GPU)") != std::string::npos, info.notes[0].c_str());
  }

  /// -ot read as a placement, its errors, and the arguments of a plan read back.
  void overrides() {
    const Graph g = moeGraph();
    const CostTable t = table(g, 0);
    const LlamaTensors m = llamaTensors(t);
    const Scheduler* ot = findScheduler("ot");
    SchedOptions o;
    // First match wins: layer 1's experts match the first entry (to the GPU) before "exps=CPU".
    o.params["ot"] = "blk\\.1\\.ffn_.*_exps=CUDA0,exps=CPU";
    auto p = ot->schedule(t, {}, o);
    QVERIFY2(p, p.message().c_str());
    QCOMPARE(deviceOfOp(t, *p, "layers.1.moe.up"), DeviceId{1});
    QCOMPARE(deviceOfOp(t, *p, "layers.0.moe.up"), t.host);
    QCOMPARE(deviceOfOp(t, *p, "layers.3.moe.down"), t.host);
    QCOMPARE(deviceOfOp(t, *p, "layers.3.attn.q"), DeviceId{1});
    QCOMPARE(gpuWeights(t, *p), kMoeOutput + 4 * kDense + kExperts);
    // A pattern that matches nothing: one line naming it.
    o.params["ot"] = "exps=CPU,blk\\.99\\.=CPU";
    auto bad = ot->schedule(t, {}, o);
    QVERIFY(!bad);
    QCOMPARE(bad.message(), std::string("-ot: pattern 'blk\\.99\\.' matches no tensor of 'tiny-moe'"));
    o.params["ot"] = "exps=GPU7";
    bad = ot->schedule(t, {}, o);
    QVERIFY(!bad);
    QVERIFY2(bad.message().find("buffer type 'GPU7'") != std::string::npos, bad.message().c_str());

    // The inverse: random tensor placements -> plan -> arguments -> read back: the same placement.
    std::mt19937 rng(7);
    for (int trial = 0; trial < 20; ++trial) {
      TensorPlacement want(m.slot.size(), -1);
      for (size_t w = 0; w < want.size(); ++w)
        if (m.placed(w)) want[w] = static_cast<DeviceId>(rng() % 2);
      const Plan plan = planFromTensors(t, {}, m, want);
      const TensorPlacement got = tensorsOfPlan(t, m, plan);
      QCOMPARE(got, want);
      const LlamaArgs args = llamaArgsFor(t, m, got, 1);
      // Read the string back as a user would paste it.
      std::smatch sm;
      QVERIFY(std::regex_match(args.text, sm, std::regex("-ngl (\\d+)(?: -ot \"(.*)\")?")));
      TensorPlacement back = nglPlacement(m, std::stoi(sm[1].str()), 1, t.host);
      if (sm[2].matched) {
        auto ov = parseOverrides(t, sm[2].str());
        QVERIFY2(ov, ov.message().c_str());
        for (const auto& x : *ov) QVERIFY2(x.pattern.front() == '^' && x.pattern.back() == '$', x.pattern.c_str());
        QVERIFY(applyOverrides(t, m, *ov, back, true));
      }
      for (size_t w = 0; w < want.size(); ++w)
        if (m.placed(w)) QVERIFY2(back[w] == want[w], (args.text + ": " + m.name[w]).c_str());
    }
    // n-cpu-moe 2's plan prints the anchored form.
    SchedOptions mo;
    mo.params["n"] = "2";
    auto two = findScheduler("n-cpu-moe")->schedule(t, {}, mo);
    QVERIFY(two);
    QCOMPARE(llamaArgsFor(t, m, tensorsOfPlan(t, m, *two), 1).text,
             std::string("-ngl 5 -ot \"^blk\\.(0|1)\\.(ffn_down_exps|ffn_up_exps)\\.weight$=CPU\""));
  }

  void cli() {
    auto r = test::runCli({"schedule", "gen:llama?layers=2&hidden=64&heads=4&intermediate=96&vocab=100&seq=8", "--platform",
                           "desktop-rtx4070", "--algo", "ot", "--param", "ot=blk\\.99\\.=CPU"});
    QCOMPARE(r.code, 2);
    const QByteArray err = r.err.trimmed();
    QVERIFY2(err.contains("-ot: pattern 'blk\\.99\\.' matches no tensor"), err.constData());
    QVERIFY2(!err.contains('\n'), err.constData());
    auto ok = test::runCli({"schedule", "gen:llama?layers=2&hidden=64&heads=4&intermediate=96&vocab=100&seq=8",
                            "--platform", "desktop-rtx4070", "--algo", "ot", "--param", "ot=ffn_(up|down)=CPU"});
    QVERIFY2(ok.code == 0, ok.err.constData());
    // --op-offload: with everything on the host (-ngl 0) a 64-token prefill's matrix products run on
    // the GPU at their GPU cost plus the weight copies, not at the CPU's.
    const QString prefill = "gen:llama?layers=2&hidden=64&heads=4&intermediate=96&vocab=100&seq=64";
    auto makespan = [&](bool op) {
      QStringList args{"schedule", prefill, "--platform", "desktop-rtx4070", "--algo", "offload", "--param", "n=0", "--json"};
      if (op) args << "--op-offload";
      auto res = test::runCli(args);
      if (res.code != 0) qFatal("%s", res.err.constData());
      return QJsonDocument::fromJson(res.out).object().value("makespan_us").toDouble();
    };
    const double plain = makespan(false), offloaded = makespan(true);
    QVERIFY2(plain > 0 && offloaded > 0 && offloaded != plain, qPrintable(QString("%1 vs %2").arg(plain).arg(offloaded)));
    auto noLayers = test::runCli({"schedule", "gen:resnet18?image-size=32", "--platform", "desktop-rtx4070", "--algo", "heft", "--op-offload"});
    QCOMPARE(noLayers.code, 2);
    QVERIFY2(noLayers.err.contains("--op-offload: 'resnet18' has no layer names"), noLayers.err.constData());
    // The arguments of the plan, anchored, as schedule prints them.
    QVERIFY2(ok.out.contains("llama.cpp    -ngl 3 -ot \"^blk\\.(0|1)\\.(ffn_down|ffn_up)\\.weight$=CPU\""), ok.out.constData());
  }

  /// The prefill op offload by hand: the output matrix (64 x 100 float32) on the host costs, in a
  /// 64-token prefill, the GPU's time plus one copy (64 tokens: one 512-token micro-batch) over the link.
  void opOffload() {
    const Graph g = tinyLlama("prefill", 64);
    const CostTable t = table(g, 0);
    const LlamaTensors m = llamaTensors(t);
    QCOMPARE(tokensOf(t, m), int64_t{64});
    const DeviceId gpu = 1;
    OpOffloadOptions o;
    o.tokens = tokensOf(t, m);
    const CostTable off = withOpOffload(t, m, gpu, o);
    const size_t nd = static_cast<size_t>(t.numDevices()), link = static_cast<size_t>(t.host) * nd + gpu;
    TaskId head = -1, norm = -1;
    for (TaskId v = 0; v < t.numTasks(); ++v) {
      if (t.taskNames[static_cast<size_t>(v)] == "lm_head") head = v;
      if (t.taskNames[static_cast<size_t>(v)] == "layers.0.input_norm.mul") norm = v;
    }
    const double want = t.w(head, gpu) + t.linkLatencyUs[link] + static_cast<double>(kOutputBytes - 4 * kHidden) / t.linkBytesPerUs[link];
    QVERIFY2(std::abs(off.w(head, t.host) - want) < 1e-9 * want, qPrintable(QString("%1 vs %2").arg(off.w(head, t.host)).arg(want)));
    QCOMPARE(off.w(norm, t.host), t.w(norm, t.host));  // not a matrix product
    QCOMPARE(off.w(head, gpu), t.w(head, gpu));
    // 1,100 tokens: three micro-batches, three copies.
    o.tokens = 1100;
    const CostTable three = withOpOffload(t, m, gpu, o);
    QVERIFY(std::abs(three.w(head, t.host) - (t.w(head, gpu) + 3 * (want - t.w(head, gpu)))) < 1e-9 * want);
    // Decode (one token) and --no-op-offload: unchanged.
    o.tokens = 1;
    QCOMPARE(withOpOffload(t, m, gpu, o).w(head, t.host), t.w(head, t.host));
    o.tokens = 64;
    o.on = false;
    QCOMPARE(withOpOffload(t, m, gpu, o).w(head, t.host), t.w(head, t.host));
    const CostTable decode = table(tinyLlama("decode"), 0);
    QCOMPARE(tokensOf(decode, llamaTensors(decode)), int64_t{1});
  }
};

QTEST_GUILESS_MAIN(TstLlamaRules)
#include "tst_llamarules.moc"
