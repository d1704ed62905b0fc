// The Llama-style language-model generator (gen:llama): its structure (layers, KV-cache inputs and
// outputs, node names by layer) in both phases, its weight bytes and FLOPs against a hand count, the
// Llama-2-7B configuration imported without materialising 13.5 GB of weights, and bad parameters
// refused with one line (exit 2 on the CLI).
#include <QtTest>

#include <sys/resource.h>

#include <cctype>
#include <map>
#include <set>

#include "backend/backend.h"
#include "cost/costtable.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "problem/problem.h"
#include "sim/memory.h"
#include "sim/simulator.h"
#include "testutil.h"

using namespace partex;

namespace {

GenSpec small(const std::string& phase, const std::string& dtype = "float32") {
  GenSpec s;
  s.kind = "llama";
  s.layers = 3;
  s.hidden = 64;
  s.heads = 4;
  s.kvHeads = 2;
  s.intermediate = 96;
  s.vocab = 100;
  s.seqLen = 8;
  s.phase = phase;
  s.dtype = dtype;
  return s;
}

Result<Graph> generateAndImport(const GenSpec& spec) {
  auto bytes = generateModel(spec);
  if (!bytes) return Error{bytes.message()};
  return importOnnxBytes(*bytes, "llama.onnx");
}

GenSpec llama7b(const std::string& phase) { return llama2_7b(phase); }

const Value* valueNamed(const Graph& g, const std::string& name) {
  const ValueId id = g.findValue(name);
  return id == kNone ? nullptr : &g.values[static_cast<size_t>(id)];
}

/// Bytes of the model's parameters: the weights named "*.weight" (not the rotary tables, the mask
/// or shape constants).
int64_t namedWeightBytes(const Graph& g) {
  int64_t total = 0;
  for (const auto& v : g.values)
    if (v.isWeight && v.name.size() > 7 && v.name.compare(v.name.size() - 7, 7, ".weight") == 0) total += v.bytes();
  return total;
}

/// Hand count of the parameters of a Llama model.
int64_t paramCount(int64_t L, int64_t H, int64_t kvDim, int64_t F, int64_t V) {
  const int64_t perLayer = H * H + 2 * H * kvDim + H * H + 3 * H * F + 2 * H;
  return V * H + L * perLayer + H + H * V;
}

int64_t peakRssBytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

}  // namespace

class TestLlm : public QObject {
  Q_OBJECT

 private slots:
  void structure_data() {
    QTest::addColumn<QString>("phase");
    QTest::newRow("prefill") << "prefill";
    QTest::newRow("decode") << "decode";
  }
  void structure() {
    QFETCH(QString, phase);
    const bool decode = phase == "decode";
    const GenSpec s = small(phase.toStdString());
    auto g = generateAndImport(s);
    QVERIFY2(g.isOk(), g.message().c_str());
    const int64_t T = decode ? 1 : 8, Tk = decode ? 9 : 8;

    // Inputs: the tokens, and in decode the 8-token cache of every layer (2 kv heads of 16).
    std::set<std::string> inputs;
    for (ValueId id : g->inputs) inputs.insert(g->values[static_cast<size_t>(id)].name);
    QCOMPARE(static_cast<int>(inputs.size()), decode ? 1 + 2 * 3 : 1);
    QCOMPARE(valueNamed(*g, "input_ids")->shape, (std::vector<int64_t>{1, T}));
    for (int l = 0; l < 3; ++l) {
      for (const char* kv : {"key", "value"}) {
        const std::string past = std::string("past_") + kv + "." + std::to_string(l);
        const std::string present = std::string("present_") + kv + "." + std::to_string(l);
        if (decode) {
          QVERIFY2(inputs.count(past), past.c_str());
          QCOMPARE(valueNamed(*g, past)->shape, (std::vector<int64_t>{1, 2, 8, 16}));
        }
        const Value* p = valueNamed(*g, present);
        QVERIFY2(p && p->isGraphOutput, present.c_str());
        QCOMPARE(p->shape, (std::vector<int64_t>{1, 2, Tk, 16}));
        QCOMPARE(p->bytes(), 2 * Tk * 16 * 4);
      }
    }
    QCOMPARE(static_cast<int>(g->outputs.size()), 1 + 2 * 3);
    QCOMPARE(valueNamed(*g, "logits")->shape, (std::vector<int64_t>{1, T, 100}));

    // Layer structure recoverable from node names: layers.<L>.<part>.
    // (Parsed by hand: std::regex under the sanitizers at -O1 draws GCC 12's -Wmaybe-uninitialized from
    // inside libstdc++.)
    std::map<int, std::set<std::string>> perLayer;
    std::set<std::string> names;
    for (const auto& n : g->nodes) {
      names.insert(n.name);
      const std::string prefix = "layers.";
      if (n.name.rfind(prefix, 0) != 0) continue;
      size_t end = prefix.size();
      while (end < n.name.size() && std::isdigit(static_cast<unsigned char>(n.name[end]))) ++end;
      if (end == prefix.size() || end >= n.name.size() || n.name[end] != '.') continue;
      perLayer[std::stoi(n.name.substr(prefix.size(), end - prefix.size()))].insert(n.name.substr(end + 1));
    }
    QCOMPARE(static_cast<int>(perLayer.size()), 3);
    QCOMPARE(perLayer.begin()->first, 0);
    QCOMPARE(perLayer.rbegin()->first, 2);
    for (const auto& [l, parts] : perLayer) {
      for (const char* part : {"attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.o_proj", "attn.softmax",
                               "attn.rope_q.rotate_half", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
                               "input_norm.mean", "post_attention_norm.mean", "residual_attn", "residual_mlp"})
        QVERIFY2(parts.count(part), (std::to_string(l) + "." + part).c_str());
      QCOMPARE(static_cast<int>(parts.count("attn.cache_k")), decode ? 1 : 0);
      QCOMPARE(static_cast<int>(parts.count("attn.causal_mask")), decode ? 0 : 1);
      QVERIFY(parts.count("attn.repeat_k.expand"));  // 4 heads over 2 kv heads
    }
    for (const char* top : {"embed_tokens", "norm", "lm_head"}) QVERIFY2(names.count(top), top);
    // Every operator belongs to a layer or to the embeddings, final norm or head.
    for (const auto& n : g->nodes) {
      const bool known = n.name.rfind("layers.", 0) == 0 || n.name == "embed_tokens" ||
                         n.name.rfind("norm", 0) == 0 || n.name == "lm_head";
      QVERIFY2(known, n.name.c_str());
    }
    // The weights are folded placeholders: no ConstantOfShape left as an operator.
    for (const auto& n : g->nodes) QVERIFY2(n.opType != "ConstantOfShape", n.name.c_str());
  }

  void weightBytesAndFlopsByHand_data() {
    QTest::addColumn<QString>("phase");
    QTest::addColumn<QString>("dtype");
    QTest::newRow("prefill f32") << "prefill" << "float32";
    QTest::newRow("decode f32") << "decode" << "float32";
    QTest::newRow("prefill f16") << "prefill" << "float16";
    QTest::newRow("decode f16") << "decode" << "float16";
  }
  void weightBytesAndFlopsByHand() {
    QFETCH(QString, phase);
    QFETCH(QString, dtype);
    const GenSpec s = small(phase.toStdString(), dtype.toStdString());
    auto g = generateAndImport(s);
    QVERIFY2(g.isOk(), g.message().c_str());
    const bool decode = phase == "decode";
    const int64_t es = dtype == "float16" ? 2 : 4;
    const int64_t L = 3, H = 64, heads = 4, hd = 16, kvd = 32, F = 96, V = 100, N = 8;
    const int64_t T = decode ? 1 : N, Tk = decode ? N + 1 : N;

    QCOMPARE(namedWeightBytes(*g), paramCount(L, H, kvd, F, V) * es);
    // All weights: the parameters, the rotary tables [T, hd] twice, the prefill mask (bool), and
    // small constants (shapes, scalars) below 1 KiB.
    const int64_t constants = g->paramBytes() - paramCount(L, H, kvd, F, V) * es - 2 * T * hd * es -
                              (decode ? 0 : N * N);
    QVERIFY2(constants >= 0 && constants < 1024, std::to_string(constants).c_str());

    const auto work = characteriseAll(*g);
    const GraphWork total = summarise(*g, work);
    const int64_t projMacs = T * (H * H + 2 * H * kvd + H * H + 3 * H * F);
    const int64_t attnMacs = 2 * heads * T * Tk * hd;
    const int64_t macs = L * (projMacs + attnMacs) + T * H * V;
    QCOMPARE(total.macs, macs);
    // Element-wise work as the cost model counts it (core/cost/work.cpp): per RMSNorm Pow 4/elem,
    // ReduceMean, Div, Mul 1/elem over T x H, Add and Sqrt over T; rotary Neg on half, two Mul and an
    // Add; scores Div, Where (prefill), Softmax 5; SiLU Sigmoid 4 + Mul, gate Mul; two residual Adds.
    const int64_t rms = 7 * T * H + 2 * T;
    const int64_t rope = (T * heads * hd + T * kvd) * 7 / 2;
    const int64_t scores = heads * T * Tk * ((decode ? 1 : 2) + 5);
    const int64_t mlp = 6 * T * F;
    const int64_t perLayer = 2 * rms + rope + scores + mlp + 2 * T * H;
    const int64_t flops = 2 * macs + L * perLayer + rms;
    QCOMPARE(total.flops, flops);
  }

  void llama7bWithoutWeights() {
    // Llama-2-7B: 6,738,415,616 parameters, float16. Generated and imported without a byte of weight
    // data: the placeholders fold to one-element splats.
    const int64_t rssBefore = peakRssBytes();
    for (const char* phase : {"decode", "prefill"}) {
      QElapsedTimer t;
      t.start();
      auto bytes = generateModel(llama7b(phase));
      QVERIFY2(bytes.isOk(), bytes.message().c_str());
      QVERIFY2(bytes->size() < 8u << 20, std::to_string(bytes->size()).c_str());  // the file stays small
      auto g = importOnnxBytes(*bytes, "llama7b.onnx");
      QVERIFY2(g.isOk(), g.message().c_str());
      QCOMPARE(namedWeightBytes(*g), int64_t{6738415616} * 2);
      const auto work = characteriseAll(*g);
      const GraphWork total = summarise(*g, work);
      const bool decode = std::string(phase) == "decode";
      const int64_t T = decode ? 1 : 512, Tk = decode ? 513 : 512;
      const int64_t macs = 32 * (T * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 2 * 32 * T * Tk * 128) + T * 4096 * 32000;
      QCOMPARE(total.macs, macs);
      // The KV cache: in decode 64 inputs of [1, 32, 512, 128] float16 (4 MiB each), 64 outputs of 513 rows.
      int64_t pastBytes = 0, presentBytes = 0;
      for (ValueId id : g->inputs)
        if (g->values[static_cast<size_t>(id)].name.rfind("past_", 0) == 0) pastBytes += g->values[static_cast<size_t>(id)].bytes();
      for (ValueId id : g->outputs)
        if (g->values[static_cast<size_t>(id)].name.rfind("present_", 0) == 0)
          presentBytes += g->values[static_cast<size_t>(id)].bytes();
      QCOMPARE(pastBytes, decode ? int64_t{64} * 32 * 512 * 128 * 2 : int64_t{0});
      QCOMPARE(presentBytes, int64_t{64} * 32 * Tk * 128 * 2);
      QVERIFY2(t.elapsed() < 30000, std::to_string(t.elapsed()).c_str());
    }
    // Nothing near the 13.5 GB of weights (nor one 250 MB embedding table) was allocated.
    const int64_t grown = peakRssBytes() - rssBefore;
    QVERIFY2(grown < int64_t{200} << 20, std::to_string(grown).c_str());
  }

  /// The KV cache is device state (isCacheValue): in decode, with every operator on the GPU, only the
  /// ids go in and the logits come out; each layer's past cache is resident on the GPU once (with the
  /// weights), and the present adds only its new row, alive to the end.
  void kvCacheIsDeviceState() {
    auto g = generateAndImport(small("decode"));
    QVERIFY2(g, g.message().c_str());
    auto plat = loadPreset("desktop-rtx4070");
    QVERIFY2(plat, plat.message().c_str());
    auto t = buildCostTable(*g, characteriseAll(*g), *plat);
    QVERIFY2(t, t.message().c_str());
    DeviceId gpu = -1;
    for (DeviceId d = 0; d < t->numDevices(); ++d)
      if (t->deviceIds[static_cast<size_t>(d)] == "gpu") gpu = d;
    QVERIFY(gpu >= 0 && gpu != t->host);
    int64_t weights = 0, cache = 0, ids = 0, logits = 0, presentRows = 0;
    for (const Value& v : g->values) {
      if (v.isWeight) weights += v.bytes();
      if (v.isGraphInput && isCacheValue(v)) cache += v.bytes();
      if (v.isGraphInput && !isCacheValue(v)) ids += v.bytes();
      if (v.isGraphOutput && !isCacheValue(v)) logits += v.bytes();
      if (v.isGraphOutput && isCacheValue(v)) presentRows += v.bytes();
    }
    presentRows -= cache;  // present = past + one new row per layer
    // 3 layers x (k, v) x 2 kv heads x 8 positions x 16 (head dim) x 4 bytes.
    QCOMPARE(cache, int64_t{3 * 2 * 2 * 8 * 16 * 4});
    QCOMPARE(presentRows, int64_t{3 * 2 * 2 * 1 * 16 * 4});
    int64_t in = 0, out = 0;
    for (TaskId v = 0; v < t->numTasks(); ++v) {
      in += t->inputBytes[static_cast<size_t>(v)];
      out += t->outputBytes[static_cast<size_t>(v)];
    }
    QCOMPARE(in, ids);
    QCOMPARE(out, logits);
    Plan p;
    p.device.assign(static_cast<size_t>(t->numTasks()), gpu);
    p.order.assign(static_cast<size_t>(t->numDevices()), {});
    p.order[static_cast<size_t>(gpu)] = t->topoOrder();
    auto tl = simulate(*t, p);
    QVERIFY2(tl, tl.message().c_str());
    int64_t moved = 0;
    for (const auto& x : tl->transfers) moved += x.bytes;
    QCOMPARE(moved, ids + logits);
    const auto mem = deviceMemory(*t, p, *tl);
    const DeviceMemory& dm = mem[static_cast<size_t>(gpu)];
    QCOMPARE(dm.weights, weights + cache);  // every weight is read by some operator on the gpu
    // At the end of the run the new rows are still resident, beside the logits.
    QVERIFY(dm.steps.size() >= 2);
    const int64_t beforeEnd = dm.steps[dm.steps.size() - 2].second;
    QVERIFY2(beforeEnd >= weights + cache + presentRows,
             qPrintable(QString("%1 resident at the end, %2 expected").arg(beforeEnd).arg(weights + cache + presentRows)));
  }

  void runRefusedWhenPlaceholdersDoNotFit() {
    // A run expands placeholder weights: on 8 GB the 7B decode model (13.5 GB of them, and 268 MB of
    // cache inputs) is refused before anything is allocated; a tiny model fits.
    auto bytes = generateModel(llama7b("decode"));
    QVERIFY(bytes.isOk());
    auto g = importOnnxBytes(*bytes, "llama7b.onnx");
    QVERIFY(g.isOk());
    auto st = checkRunMemory(*g, int64_t{8} << 30);
    QVERIFY(!st.isOk());
    QVERIFY2(st.message().find("13.5 GB of them placeholder weights") != std::string::npos, st.message().c_str());
    QVERIFY2(st.message().find("13.7 GB") != std::string::npos, st.message().c_str());  // 13.48 + 0.27 (cache)
    QVERIFY(st.message().find('\n') == std::string::npos);
    QVERIFY(checkRunMemory(*g, int64_t{14} << 30).isOk());
    auto tiny = generateAndImport(small("decode"));
    QVERIFY(tiny.isOk());
    QVERIFY(checkRunMemory(*tiny, int64_t{1} << 20).isOk());
    QVERIFY(!checkRunMemory(*tiny, 1000).isOk());
  }

  void cliExecutesTinyModel() {
    // A tiny float32 model runs on the CPU backend in both phases and writes logits and the cache.
    for (const char* phase : {"prefill", "decode"}) {
      const std::string dir = test::tempDir() + "/" + phase;
      const QString model = QString::fromStdString(dir + ".onnx"), plan = QString::fromStdString(dir + ".plan.json");
      auto r = test::runCli({"generate", "llama", "--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2",
                             "--vocab", "100", "--seq", "8", "--phase", phase, "-o", model});
      QVERIFY2(r.code == 0, r.err.constData());
      r = test::runCli({"schedule", model, "--platform", "this-machine", "--algo", "heft", "-o", plan});
      QVERIFY2(r.code == 0, r.err.constData());
      r = test::runCli({"execute", model, "--plan", plan, "--reps", "1", "--warmup", "0", "--outputs",
                        QString::fromStdString(dir)});
      QVERIFY2(r.code == 0, r.err.constData());
      for (const char* out : {"logits.npy", "present_key.0.npy", "present_value.1.npy"})
        QVERIFY2(QFile::exists(QString::fromStdString(dir + "/" + out)), out);
    }
  }

  void badParameters_data() {
    QTest::addColumn<QString>("ref");
    QTest::addColumn<QString>("reason");
    QTest::newRow("heads") << "gen:llama?hidden=30&heads=4" << "not divisible by heads";
    QTest::newRow("kv-heads") << "gen:llama?hidden=64&heads=4&kv-heads=3" << "not divisible by kv-heads";
    QTest::newRow("odd head") << "gen:llama?hidden=36&heads=4" << "rotary";
    QTest::newRow("phase") << "gen:llama?phase=train" << "phase 'train'";
    QTest::newRow("dtype") << "gen:llama?dtype=int8" << "dtype 'int8'";
    QTest::newRow("not llama") << "gen:gpt2?phase=decode" << "llama only";
  }
  void badParameters() {
    QFETCH(QString, ref);
    QFETCH(QString, reason);
    auto g = loadModel(ref.toStdString(), {});
    QVERIFY(!g.isOk());
    QVERIFY2(QString::fromStdString(g.message()).contains(reason), g.message().c_str());
    QVERIFY(g.message().find('\n') == std::string::npos);
    auto r = test::runCli({"inspect", ref});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY2(r.err.contains(reason.toUtf8()), r.err.constData());
  }

  void cliGenerateRefusesBadParameters() {
    const QString out = QString::fromStdString(test::tempDir() + "/bad.onnx");
    auto r = test::runCli({"generate", "llama", "--hidden", "30", "--heads", "4", "-o", out});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY2(r.err.contains("hidden 30 is not divisible by heads 4"), r.err.constData());
    QVERIFY(!QFile::exists(out));
  }

  void cliGeneratesAndSchedules7b() {
    // The file a user writes for the 7B decode model is small, and inspect and schedule read it.
    const QString out = QString::fromStdString(test::tempDir() + "/llama7b-decode.onnx");
    auto r = test::runCli({"generate", "llama", "--layers", "32", "--hidden", "4096", "--heads", "32", "--vocab",
                           "32000", "--seq", "512", "--phase", "decode", "--dtype", "float16", "-o", out});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(QFileInfo(out).size() < 8 << 20);
    r = test::runCli({"schedule", out, "--platform", "desktop-rtx4070", "--algo", "heft", "--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY2(r.out.contains("\"makespan"), r.out.left(400).constData());
  }
};

QTEST_APPLESS_MAIN(TestLlm)
#include "tst_llm.moc"
