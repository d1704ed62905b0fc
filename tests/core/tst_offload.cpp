// llama.cpp's -ngl N (sched/offload.h: of the n_layer + 1 slots, layers then the output head, the last
// N on the GPU, N as large as fits) on a small generated Llama whose GPU capacity is chosen by hand from
// its weight bytes: the N chosen is exactly the largest whose slots fit and N + 1 does not; mode=best-n
// is never slower than the largest; best is never slower than best-n (its portfolio holds the split);
// the explanation names the split and the weights per device; a model without layer names is refused
// in one line (exit 2 on the CLI). Prefill and decode both.
#include <QtTest>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cost/costtable.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "sched/compare.h"
#include "sched/offload.h"
#include "sched/scheduler.h"
#include "sim/memory.h"
#include "support/strings.h"
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

Plan ngl(const CostTable& t, int n) { return nglPlan(t, {}, llamaTensors(t), n, 1); }

int64_t layerWeightBytes(const Graph& g, int layer) {
  // The generator's names before issue 26 ("layers.<L>.") or GGUF's ("blk.<L>.").
  const std::string prefix = "layers." + std::to_string(layer) + ".", gguf = "blk." + std::to_string(layer) + ".";
  int64_t bytes = 0;
  for (const Value& v : g.values)
    if (v.isWeight && (v.name.rfind(prefix, 0) == 0 || v.name.rfind(gguf, 0) == 0)) bytes += v.bytes();
  return bytes;
}

/// Bytes of a layer's KV cache inputs (decode's past_key.L and past_value.L; none in prefill): device
/// state, resident with the layer's weights on its device (isCacheValue).
int64_t layerCacheBytes(const Graph& g, int layer) {
  int64_t bytes = 0;
  for (const Value& v : g.values)
    if (v.isGraphInput && (v.name == "past_key." + std::to_string(layer) || v.name == "past_value." + std::to_string(layer)))
      bytes += v.bytes();
  return bytes;
}

double makespanOf(const CostTable& t, const Plan& p) {
  auto tl = simulate(t, p);
  if (!tl) qFatal("simulate: %s", tl.message().c_str());
  return tl->makespan;
}

}  // namespace

class TstOffload : public QObject {
  Q_OBJECT
 private slots:
  void layersFromNames() {
    CostTable t;
    t.taskNames = {"embed_tokens",
                   "layers.0.attn.q_proj",
                   "layers.12.mlp.down_proj",
                   "model.layers.3.x",
                   "/model/layers.7/MatMul",
                   "players.1.x",
                   "layers.x.y",
                   "layers.4",
                   "lm_head"};
    const std::vector<int> expect{-1, 0, 12, 3, 7, -1, -1, -1, -1};
    QCOMPARE(taskLayers(t), expect);
    QVERIFY(hasLayerNames(t));
    t.taskNames = {"conv1", "relu"};
    QVERIFY(!hasLayerNames(t));
  }

  void largestFittingK_data() {
    QTest::addColumn<QString>("phase");
    QTest::newRow("prefill") << "prefill";
    QTest::newRow("decode") << "decode";
  }
  void largestFittingK() {
    QFETCH(QString, phase);
    const Graph g = tinyLlama(phase.toStdString());
    // The hand count of a layer's weights holds for every layer.
    for (int L = 0; L < kLayers; ++L) QCOMPARE(layerWeightBytes(g, L), kLayerBytes);
    const int64_t shared = test::sharedLayerConstants(g);
    QVERIFY(shared > 0 && shared < kLayerBytes / 4);
    // Room for the shared constants, the output slot, two layers and half a layer more (activations and
    // the KV cache of this tiny model are a few KiB): -ngl 3 (output head, layers 2 and 3) is the largest
    // that fits, -ngl 4 needs half a layer more.
    const int64_t cap = shared + kOutputBytes + 2 * kLayerBytes + kLayerBytes / 2;
    auto t = buildCostTable(g, characteriseAll(g), test::withGpuBytes(cap));
    QVERIFY2(t, t.message().c_str());
    const DeviceId gpu = 1;
    QCOMPARE(t->deviceIds[static_cast<size_t>(gpu)], std::string("gpu"));

    const Scheduler* offload = findScheduler("offload");
    QVERIFY(offload);
    SchedOptions o;
    SchedInfo info;
    auto plan = offload->schedule(*t, {}, o, &info);
    QVERIFY2(plan, plan.message().c_str());
    QVERIFY(info.notes.size() >= 2);
    QCOMPARE(info.notes[0], std::string("-ngl 3 of 5 slots on gpu"));
    QVERIFY2(info.notes[1].find("-ngl 3 is the largest that fits (-ngl 4: device 'gpu'") == 0, info.notes[1].c_str());
    // The plan: layers 2-3 and the output head on the GPU, the embedding and layers 0-1 on the CPU (the
    // operators that read weights; the others follow them as ggml's scheduler expands assignments).
    const std::vector<int> layer = taskLayers(*t);
    for (TaskId v = 0; v < t->numTasks(); ++v) {
      const int L = layer[static_cast<size_t>(v)];
      const std::string& name = t->taskNames[static_cast<size_t>(v)];
      if (t->taskTypes[static_cast<size_t>(v)] == "MatMul" && L >= 0 && name.find("_proj") != std::string::npos)
        QCOMPARE(plan->device[static_cast<size_t>(v)], L >= 2 ? gpu : t->host);
      if (name == "lm_head") QCOMPARE(plan->device[static_cast<size_t>(v)], gpu);
      if (name == "embed_tokens") QCOMPARE(plan->device[static_cast<size_t>(v)], t->host);
    }
    // Its GPU weights are the hand count; k = 3's would be a layer more, over the capacity.
    // The KV cache of a decode step is resident with its layer (none in prefill).
    const int64_t cache = layerCacheBytes(g, 0);
    QCOMPARE(cache > 0, phase == "decode");
    QCOMPARE(weightBytesPerDevice(*t, plan->device)[static_cast<size_t>(gpu)], shared + kOutputBytes + 2 * (kLayerBytes + cache));
    const Plan three = ngl(*t, 4);
    QCOMPARE(weightBytesPerDevice(*t, three.device)[static_cast<size_t>(gpu)], shared + kOutputBytes + 3 * (kLayerBytes + cache));
    QVERIFY(!checkCapacity(*t, three, nullptr));
    auto tl = simulate(*t, *plan);
    QVERIFY(tl);
    QVERIFY(checkCapacity(*t, *plan, &*tl));

    // The same split from the core function, with its trials: -ngl 3 fits, -ngl 4 does not.
    auto split = chooseOffloadSplit(*t, {}, {}, false, -1, Deadline{}, nullptr);
    QVERIFY2(split, split.message().c_str());
    QCOMPARE(split->k, 3);
    QCOMPARE(split->largestK, 3);
    QCOMPARE(split->accel, gpu);
    QCOMPARE(split->layers, kLayers);
    bool sawThree = false;
    for (const auto& tr : split->trials)
      if (tr.k == 4) sawThree = !tr.fits && tr.why.find("device 'gpu'") != std::string::npos;
    QVERIFY(sawThree);

    // One byte less than the output and two layers' weights: -ngl 2 (the output head and layer 3).
    auto t1 = buildCostTable(g, characteriseAll(g), test::withGpuBytes(shared + kOutputBytes + 2 * kLayerBytes - 1));
    QVERIFY(t1);
    auto s1 = chooseOffloadSplit(*t1, {}, {}, false, -1, Deadline{}, nullptr);
    QVERIFY2(s1, s1.message().c_str());
    QCOMPARE(s1->k, 2);
    // Without limits every slot goes to the GPU.
    auto free = buildCostTable(g, characteriseAll(g), test::withGpuBytes(0));
    QVERIFY(free);
    auto sAll = chooseOffloadSplit(*free, {}, {}, false, -1, Deadline{}, nullptr);
    QVERIFY(sAll);
    QCOMPARE(sAll->k, kLayers + 1);
    // Nothing fits (the host too small for what the GPU cannot take): one line naming k = 0's device.
    Platform tight = test::withGpuBytes(1000);
    for (auto& d : tight.devices)
      if (d.id == "cpu") d.memCapacityBytes = 1000;
    auto t0 = buildCostTable(g, characteriseAll(g), tight);
    QVERIFY(t0);
    auto none = chooseOffloadSplit(*t0, {}, {}, false, -1, Deadline{}, nullptr);
    QVERIFY(!none);
    QVERIFY2(none.message().rfind("offload: no -ngl N fits (-ngl 0, everything on 'cpu': device 'cpu' needs ", 0) == 0,
             none.message().c_str());
    QVERIFY(none.message().find('\n') == std::string::npos);
  }

  void bestKAndBest_data() { largestFittingK_data(); }
  void bestKAndBest() {
    QFETCH(QString, phase);
    const Graph g = tinyLlama(phase.toStdString());
    const int64_t cap = test::sharedLayerConstants(g) + kOutputBytes + 2 * kLayerBytes + kLayerBytes / 2;
    auto t = buildCostTable(g, characteriseAll(g), test::withGpuBytes(cap));
    QVERIFY(t);
    const Scheduler* offload = findScheduler("offload");
    SchedOptions o;
    auto largest = offload->schedule(*t, {}, o);
    QVERIFY(largest);
    o.params["mode"] = "best-k";
    SchedInfo info;
    auto bestK = offload->schedule(*t, {}, o, &info);
    QVERIFY2(bestK, bestK.message().c_str());
    const double largestUs = makespanOf(*t, *largest), bestKUs = makespanOf(*t, *bestK);
    QVERIFY(bestKUs <= largestUs);
    // best-n is the minimum over every fitting N (each simulated here again).
    double minUs = kInf;
    for (int k = 0; k <= 3; ++k) minUs = std::min(minUs, makespanOf(*t, ngl(*t, k)));
    QCOMPARE(bestKUs, minUs);
    QVERIFY2(info.notes[1].find("fitting splits") != std::string::npos, info.notes[1].c_str());
    // best holds the split in its portfolio: never slower, and within capacity.
    const Scheduler* best = findScheduler("best");
    SchedOptions bo;
    bo.timeLimitSec = 5;
    bo.params["budget_ms"] = "200";
    bo.params["bnb_nodes"] = "2000";
    auto b = best->schedule(*t, {}, bo);
    QVERIFY2(b, b.message().c_str());
    auto btl = simulate(*t, *b);
    QVERIFY(btl);
    QVERIFY2(btl->makespan <= bestKUs * (1 + 1e-12),
             qPrintable(QString("best %1 us, best-k %2 us").arg(btl->makespan).arg(bestKUs)));
    QVERIFY(checkCapacity(*t, *b, &*btl));
    // Bad params are refused.
    o.params["mode"] = "smallest";
    auto bad = offload->schedule(*t, {}, o);
    QVERIFY(!bad);
    QVERIFY2(bad.message().find("mode") != std::string::npos, bad.message().c_str());
  }

  /// The goal's case: Llama-2-7B in float16 (13.5 GB) on desktop-rtx4070's 12 GiB GPU. The rule's N is
  /// the hand count (the output slot, 4096 x 32000 + 4096 halves, and as many 404,766,720-byte layers,
  /// each with its 8 MiB KV cache, as fit: -ngl 31), and best is never slower than the fastest -ngl, in prefill
  /// and decode.
  void llama7bOnRtx4070_data() { largestFittingK_data(); }
  void llama7bOnRtx4070() {
    QFETCH(QString, phase);
    auto bytes = generateModel(llama2_7b(phase.toStdString()));
    QVERIFY(bytes);
    auto g = importOnnxBytes(*bytes, "llama7b.onnx");
    QVERIFY2(g, g.message().c_str());
    auto p = loadPreset("desktop-rtx4070");
    QVERIFY(p);
    auto t = buildCostTable(*g, characteriseAll(*g), *p);
    QVERIFY2(t, t.message().c_str());
    // q, k, v, o 4096 x 4096, gate and up 4096 x 11008, down 11008 x 4096, two norms; 2 bytes each.
    const int64_t layerBytes = 2 * (4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096);
    QCOMPARE(layerBytes, int64_t{404766720});
    for (int L : {0, 17, 31}) QCOMPARE(layerWeightBytes(*g, L), layerBytes);
    const int64_t outBytes = 2 * (4096 + int64_t{4096} * 32000);
    const int64_t cap = int64_t{12} << 30, shared = test::sharedLayerConstants(*g);
    // Each layer's cache, 2 (k, v) x 32 heads x 512 positions x 128 x 2 bytes, lives with its layer: in
    // decode the past (a resident model input), in prefill the present the layer writes (kept on its device).
    const int64_t cache = int64_t{2} * 32 * 512 * 128 * 2;
    QCOMPARE(layerCacheBytes(*g, 5), phase == "decode" ? cache : 0);
    const int64_t layersFit = (cap - shared - outBytes) / (layerBytes + cache);
    QCOMPARE(layersFit, int64_t{30});
    auto rule = chooseOffloadSplit(*t, {}, {}, false, -1, Deadline{}, nullptr);
    QVERIFY2(rule, rule.message().c_str());
    QCOMPARE(rule->k, static_cast<int>(layersFit + 1));
    QCOMPARE(rule->split, "-ngl " + std::to_string(layersFit + 1) + " of 33 slots on gpu");
    // Decode: -ngl 32 fails on its weights (and caches) alone, the hand count; prefill: on its timeline.
    const std::string next = "-ngl " + std::to_string(layersFit + 2) + ": device 'gpu' needs ";
    QVERIFY2(rule->note.find(phase == "decode" ? next + withCommas(static_cast<uint64_t>(shared + outBytes +
                                                                                         (layersFit + 1) * (layerBytes + cache))) +
                                                     " bytes"
                                               : next) != std::string::npos,
             rule->note.c_str());
    auto fastest = chooseOffloadSplit(*t, {}, {}, true, -1, Deadline{}, nullptr);
    QVERIFY(fastest);
    QVERIFY(fastest->makespanUs <= rule->makespanUs);
    const Scheduler* best = findScheduler("best");
    SchedOptions o;  // its default limit
    auto plan = best->schedule(*t, {}, o);
    QVERIFY2(plan, plan.message().c_str());
    auto tl = simulate(*t, *plan);
    QVERIFY(tl);
    QVERIFY(checkCapacity(*t, *plan, &*tl));
    QVERIFY2(tl->makespan <= fastest->makespanUs * (1 + 1e-12),
             qPrintable(QString("best %1 us, fastest split %2 us").arg(tl->makespan).arg(fastest->makespanUs)));
    qInfo("%s: rule k=%d %.3f ms, fastest k=%d %.3f ms, best %.3f ms", qPrintable(phase), rule->k,
          rule->makespanUs / 1000, fastest->k, fastest->makespanUs / 1000, tl->makespan / 1000);
  }

  void explanation() {
    const Graph g = tinyLlama("decode");
    const int64_t cap = test::sharedLayerConstants(g) + kOutputBytes + 2 * kLayerBytes + kLayerBytes / 2;
    auto t = buildCostTable(g, characteriseAll(g), test::withGpuBytes(cap));
    QVERIFY(t);
    SchedOptions o;
    o.timeLimitSec = 5;
    o.params["budget_ms"] = "200";
    o.params["bnb_nodes"] = "2000";
    const Comparison cmp = compareAlgorithms(*t, {}, o, {"offload", "best"}, true);
    QCOMPARE(cmp.rows.size(), size_t(2));
    QVERIFY(cmp.rows[0].valid && cmp.rows[1].valid);
    QCOMPARE(cmp.rows[0].notes.front(), std::string("-ngl 3 of 5 slots on gpu"));
    const auto lines = explainAgainstOffload(*t, cmp);
    QVERIFY(lines.size() >= 4);
    QVERIFY2(lines[0].find("offload (-ngl 3 of 5 slots on gpu)") != std::string::npos, lines[0].c_str());
    QVERIFY2(lines[1].rfind("weights offload: cpu ", 0) == 0, lines[1].c_str());
    // The split's GPU weights, as the memory model counts them, in the line.
    const std::string gpuWeights =
        "gpu " + humanBytes(static_cast<double>(test::sharedLayerConstants(g) + kOutputBytes + 2 * (kLayerBytes + layerCacheBytes(g, 0))));
    QVERIFY2(lines[1].find(gpuWeights) != std::string::npos, (lines[1] + " lacks " + gpuWeights).c_str());
    QVERIFY2(lines[3].rfind("transfers: offload ", 0) == 0, lines[3].c_str());
    // The plan against itself: nothing placed differently.
    const auto same = explainOffload(*t, "-ngl 3 of 5 slots on gpu", cmp.rows[0].plan, cmp.rows[0].timeline, "offload",
                                     cmp.rows[0].plan, cmp.rows[0].timeline);
    QCOMPARE(same.back(), std::string("offload places every operator as the split does"));
    // Without an offload row, no explanation; the default comparison lists offload on this model only.
    QVERIFY(explainAgainstOffload(*t, compareAlgorithms(*t, {}, o, {"heft"}, true)).empty());
    const auto names = defaultComparison(*t);
    QVERIFY(std::find(names.begin(), names.end(), "offload") != names.end());
    CostTable plain;
    plain.taskNames = {"conv"};
    const auto plainNames = defaultComparison(plain);
    QVERIFY(std::find(plainNames.begin(), plainNames.end(), "offload") == plainNames.end());
  }

  void cli() {
    const std::string dir = test::tempDir();
    // A model without layer names: one line, exit 2.
    auto r =
        test::runCli({"schedule", "gen:resnet18?image-size=32", "--platform", "desktop-rtx4070", "--algo", "offload"});
    QCOMPARE(r.code, 2);
    const QByteArray err = r.err.trimmed();
    QVERIFY2(err.contains("has no layer names"), err.constData());
    QVERIFY2(!err.contains('\n'), err.constData());
    // A language model on a GPU with room for two layers: compare shows the split and why best wins.
    const Graph g = tinyLlama("decode");
    const int64_t cap = test::sharedLayerConstants(g) + kOutputBytes + 2 * kLayerBytes + kLayerBytes / 2;
    auto preset = loadPreset("desktop-rtx4070");
    QVERIFY(preset);
    const std::string platform = dir + "/capped.json";
    {
      auto j = nlohmann::json::parse(platformToJson(test::withGpuBytes(cap)));
      std::ofstream(platform) << j.dump(2);
    }
    const QString model =
        "gen:llama?layers=4&hidden=64&heads=4&kv-heads=4&intermediate=96&vocab=100&seq=8&phase=decode";
    auto c = test::runCli({"compare", model, "--platform", QString::fromStdString(platform), "--algos", "offload,best",
                           "--time-limit", "3"});
    QVERIFY2(c.code == 0, c.err.constData());
    QVERIFY2(c.out.contains("split: -ngl 3 of 5 slots on gpu; -ngl 3 is the largest that fits"), c.out.constData());
    QVERIFY2(c.out.contains("best against llama.cpp's -ngl split:"), c.out.constData());
    QVERIFY2(c.out.contains("weights offload: cpu"), c.out.constData());
    auto s = test::runCli({"schedule", model, "--platform", QString::fromStdString(platform), "--algo", "offload"});
    QVERIFY2(s.code == 0, s.err.constData());
    QVERIFY2(s.out.contains("-ngl 3 of 5 slots on gpu") || s.err.contains("-ngl 3 of 5 slots on gpu"), s.out.constData());
  }
};

QTEST_GUILESS_MAIN(TstOffload)
#include "tst_offload.moc"
