// A language model's job (sched/llmjob.h, problem/llmjob.h, partex-cli llm) against hand counts:
//  - the trapezoid over the decode steps: its weights, exact for a step time linear in the cache;
//  - the job time of a tiny MoE decoder (18 operators in a chain) with costs set by hand per phase:
//    -ngl 5 and -ngl 0 on the job, and a placement per phase (the prefill's heavy layers 0-1 and the
//    decode's heavy layers 2-3 on a GPU that holds two layers) against the one placement for both;
//  - the move between phases: the bytes of the tensors and caches that change device over the link;
//  - `partex-cli llm --json`: its -ot string read back with the -ot importer gives its placement, every
//    tensor covered, and its printed arguments carry that -ot, -ngl and -ub; bad arguments are one line
//    and exit 2;
//  - the compute buffer's growth with -ub: the prefill's memory on the graph of one micro-batch, by hand.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <set>

#include "cost/costtable.h"
#include "cost/work.h"
#include "gguf/ggufwriter.h"
#include "problem/llmjob.h"
#include "problem/problem.h"
#include "sched/llamarules.h"
#include "sched/llmjob.h"
#include "sim/memory.h"
#include "sim/simulator.h"
#include "llmtest.h"
#include "testutil.h"

using namespace partex;
using test::kDense;
using test::kExperts;

namespace {

/// The tiny MoE decoder on desktop-rtx4070 with `gpuBytes` of GPU memory; every operator costs `host`
/// on the CPU and `gpu` on the GPU except those of `heavyLayers`, which cost `heavyHost` on the CPU
/// and `gpu` on the GPU; transfers free (the steps' times are sums of operator costs).
CostTable handTable(int64_t gpuBytes, double host, double gpu, std::vector<int> heavyLayers, double heavyHost) {
  const Graph g = test::moeGraph();
  auto t = buildCostTable(g, characteriseAll(g), test::withGpuBytes(gpuBytes));
  if (!t) qFatal("table: %s", t.message().c_str());
  const size_t nd = static_cast<size_t>(t->numDevices());
  for (TaskId v = 0; v < t->numTasks(); ++v) {
    const int L = layerOfName(t->taskNames[static_cast<size_t>(v)]);
    const bool heavy = std::find(heavyLayers.begin(), heavyLayers.end(), L) != heavyLayers.end();
    for (size_t d = 0; d < nd; ++d)
      t->cost[static_cast<size_t>(v) * nd + d] = static_cast<DeviceId>(d) == t->host ? (heavy ? heavyHost : host) : gpu;
  }
  for (auto& b : t->linkBytesPerUs) b = kInf;
  for (auto& l : t->linkLatencyUs) l = 0;
  return std::move(t).value();
}

/// The words of a printed llama.cpp argument string, with llama.cpp's defaults (-ub 512, -b 2048).
struct ArgWords {
  int ngl = -1;
  QString ot;
  int ubatch = 512;
  int batch = 2048;
};
ArgWords argWords(const QString& text) {
  ArgWords w;
  const QStringList words = text.split(' ', Qt::SkipEmptyParts);
  for (int i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == "-ngl") w.ngl = words[i + 1].toInt();
    else if (words[i] == "-ub") w.ubatch = words[i + 1].toInt();
    else if (words[i] == "-b") w.batch = words[i + 1].toInt();
    else if (words[i] == "-ot") {
      QString v = words[i + 1];
      if (v.startsWith('"') && v.endsWith('"') && v.size() >= 2) v = v.mid(1, v.size() - 2);
      w.ot = v;
    }
  }
  return w;
}

/// Runs `partex-cli llm REF --json` (prompt 64, generate 16, the GPU at `gib` GiB) and checks that each
/// placement's -ngl and -ot, read back with the -ot importer on the model's last decode step (cache 79),
/// give the tensor -> device map it reports, every tensor covered. Returns the JSON.
QJsonObject roundTrip(const QString& ref, double gib, bool requireMixed, int prompt = 64, const QStringList& extra = {}) {
  auto r = test::runCli(QStringList{"llm", ref, "--platform", "desktop-rtx4070", "--prompt", QString::number(prompt), "--generate", "16",
                                    "--gpu-memory", QString::number(gib), "--time-limit", "5", "--json"} +
                        extra);
  if (r.code != 0) {
    QTest::qFail(r.err.constData(), __FILE__, __LINE__);
    return {};
  }
  const QJsonObject j = QJsonDocument::fromJson(r.out).object();
  [&] {
    QCOMPARE(j.value("prompt").toInt(), prompt);
    QCOMPARE(j.value("generate").toInt(), 16);
    auto plat = loadPlatform("desktop-rtx4070");
    QVERIFY(plat);
    for (auto& d : plat->devices)
      if (d.id == "gpu") d.memCapacityBytes = static_cast<int64_t>(gib * static_cast<double>(int64_t{1} << 30));
    const std::string model = ref.toStdString();
    auto g = loadModel(model + (model.find('?') == std::string::npos ? "?" : "&") + "phase=decode&seq=" + std::to_string(prompt + 15), {});
    QVERIFY2(g, g.message().c_str());
    auto p = problemFromGraph(std::move(g).value(), *plat, "m");
    QVERIFY2(p, p.message().c_str());
    const CostTable& t = p->table;
    const LlamaTensors m = llamaTensors(t);
    int mixed = 0;
    const int ubatch = j.value("ubatch").toInt();
    auto check = [&](const QJsonObject& pl) {
      const QJsonObject tensors = pl.value("tensors").toObject();
      // The printed string, read as llama.cpp reads it: -ngl, the -ot string, -ub (with -b above 2048).
      const ArgWords w = argWords(pl.value("llama_cpp_args").toString());
      QCOMPARE(w.ngl, pl.value("ngl").toInt());
      QCOMPARE(w.ot, pl.value("ot").toString());
      QCOMPARE(w.ubatch, ubatch);
      QCOMPARE(w.batch, ubatch > 2048 ? ubatch : 2048);
      QVERIFY2(w.ubatch <= w.batch, "llama.cpp takes min(-b, -ub)");
      TensorPlacement back = nglPlacement(m, pl.value("ngl").toInt(), defaultAccelerator(t), t.host);
      const std::string ot = pl.value("ot").toString().toStdString();
      if (!ot.empty()) {
        auto ov = parseOverrides(t, ot);
        QVERIFY2(ov, ov.message().c_str());
        QVERIFY(applyOverrides(t, m, *ov, back, true));
      }
      int covered = 0;
      for (size_t w = 0; w < m.name.size(); ++w) {
        if (!m.placed(w) || m.cache[w]) continue;
        QVERIFY2(tensors.contains(QString::fromStdString(m.name[w])), m.name[w].c_str());
        QCOMPARE(tensors.value(QString::fromStdString(m.name[w])).toString().toStdString(), llamaDeviceName(t, back[w]));
        ++covered;
      }
      QCOMPARE(covered, static_cast<int>(tensors.size()));
      std::set<std::string> devs;
      for (const auto& v : tensors) devs.insert(v.toString().toStdString());
      if (devs.size() > 1) ++mixed;
    };
    check(j.value("best").toObject());
    if (QTest::currentTestFailed()) return;
    if (j.value("two_phase").isObject()) {
      check(j.value("two_phase").toObject().value("prefill").toObject());
      check(j.value("two_phase").toObject().value("decode").toObject());
    }
    if (requireMixed) QVERIFY2(mixed > 0, "the GPU was meant to hold part of the model only");
  }();
  return j;
}

}  // namespace

class TstLlmJob : public QObject {
  Q_OBJECT
 private slots:
  /// G = 4 steps, 3 samples: steps 0, 1, 3 with weights 1, 1.5, 1.5; sum_{i=0}^{3} (a + b i) = 4a + 6b.
  void trapezoid() {
    std::vector<int64_t> cache;
    std::vector<double> weight;
    llmTrapezoid(100, 4, 3, cache, weight);
    QCOMPARE(cache, (std::vector<int64_t>{100, 101, 103}));
    QCOMPARE(weight, (std::vector<double>{1.0, 1.5, 1.5}));
    const double a = 7, b = 3;
    double sum = 0;
    for (size_t k = 0; k < cache.size(); ++k) sum += weight[k] * (a + b * static_cast<double>(cache[k] - 100));
    QCOMPARE(sum, 4 * a + 6 * b);
    // Every step when samples >= G; one step of weight 1 when G = 1.
    llmTrapezoid(10, 3, 8, cache, weight);
    QCOMPARE(cache, (std::vector<int64_t>{10, 11, 12}));
    QCOMPARE(weight, (std::vector<double>{1.0, 1.0, 1.0}));
    llmTrapezoid(10, 1, 3, cache, weight);
    QCOMPARE(cache, (std::vector<int64_t>{10}));
    QCOMPARE(weight, (std::vector<double>{1.0}));
    // 256 steps over 5 samples: the weights sum to G.
    llmTrapezoid(2048, 256, 5, cache, weight);
    double total = 0;
    for (double w : weight) total += w;
    QCOMPARE(total, 256.0);
    QCOMPARE(cache.back(), int64_t{2048 + 255});
  }

  /// The job by hand: prefill (every operator 10 us on the CPU, 2 on the GPU), then G = 4 decode steps
  /// at caches 100..103 whose operators cost 4 on the CPU and 1 + L/100 on the GPU (three sampled:
  /// exact, the step time being linear in L). 18 operators in a chain, the token embedding first.
  void handJob() {
    LlmJobTables jt;
    jt.prompt = 100;
    jt.generate = 4;
    jt.prefill = handTable(0, 10, 2, {}, 0);
    llmTrapezoid(100, 4, 3, jt.decodeCache, jt.decodeWeight);
    for (int64_t L : jt.decodeCache) jt.decode.push_back(handTable(0, 4, 1 + static_cast<double>(L) / 100, {}, 0));
    auto job = LlmJob::make(jt);
    QVERIFY2(job, job.message().c_str());
    QCOMPARE(job->tensors().layers, 4);
    // -ngl 5: the embedding on the CPU, the 17 others on the GPU.
    const LlmJobTime all = job->evaluate(job->fromArgs(5, {}, true));
    QVERIFY2(all.fits, all.why.c_str());
    QCOMPARE(all.prefillUs, 10.0 + 17 * 2.0);
    double decode = 0;
    for (int i = 0; i < 4; ++i) decode += 4 + 17 * (1 + (100.0 + i) / 100);
    QVERIFY2(std::abs(all.decodeTotalUs - decode) < 1e-9, qPrintable(QString("%1 vs %2").arg(all.decodeTotalUs).arg(decode)));
    QVERIFY(std::abs(all.jobUs - (44 + decode)) < 1e-9);  // 44 + 153.02
    QVERIFY(std::abs(all.decodeTokensPerS(4) - 4e6 / decode) < 1e-6);
    // -ngl 0: all 18 on the CPU.
    const LlmJobTime none = job->evaluate(job->fromArgs(0, {}, true));
    QCOMPARE(none.prefillUs, 180.0);
    QCOMPARE(none.decodeTotalUs, 4 * 72.0);
    // The rules on the job: -ngl's best N is all slots; the tiny model has no dense FFN.
    const auto rules = evaluateLlmRules(*job);
    QCOMPARE(rules[0].rule, std::string("-ngl"));
    QVERIFY(rules[0].ok);
    QCOMPARE(rules[0].n, 5);
    QCOMPARE(rules[0].tried, 12);  // N = 0..5, op offload on and off
    QVERIFY(std::abs(rules[0].time.jobUs - (44 + decode)) < 1e-9);
    QCOMPARE(rules[2].rule, std::string("--n-cpu-ffn"));
    QVERIFY(!rules[2].ok);
  }

  /// A placement per phase. The GPU holds two layers' weights (2 x 163,840 bytes, 24 KiB left for the
  /// activations, about 10 KiB, so no further 16,384-byte tensor fits beside them). Every operator costs
  /// 1 us on either device except that, on the CPU, layers 0-1 cost 100 in the prefill and layers 2-3
  /// cost 100 in each of the G = 4 decode steps. All on the CPU: 810 + 4 x 810 = 4,050. One placement
  /// for both phases, a knapsack by hand: an operator of layers 2-3 on the GPU saves 4 x 99, one of
  /// layers 0-1 saves 99; the four 16,384-byte tensors of layers 2-3 (q, router) first, then equal
  /// savings per byte (396 per 65,536-byte expert tensor of layers 2-3, 99 per 16,384-byte tensor of
  /// layers 0-1) fill the other 262,144 bytes exactly: 4 x 396 + 262,144 x 396 / 65,536 = 3,168 saved,
  /// 882. A placement per phase, the move free (free links): layers 0-1 on the GPU for the prefill (18),
  /// layers 2-3 for the decode (4 x 18): 90.
  void twoPhases() {
    const int64_t layer = kDense + kExperts;
    QCOMPARE(layer, int64_t{163840});
    const int64_t cap = 2 * layer + 24 * 1024;
    LlmJobTables jt;
    jt.prompt = 8;
    jt.generate = 4;
    jt.prefill = handTable(cap, 1, 1, {0, 1}, 100);
    llmTrapezoid(8, 4, 2, jt.decodeCache, jt.decodeWeight);
    for (size_t k = 0; k < jt.decodeCache.size(); ++k) jt.decode.push_back(handTable(cap, 1, 1, {2, 3}, 100));
    auto job = LlmJob::make(jt);
    QVERIFY2(job, job.message().c_str());
    const auto rules = evaluateLlmRules(*job);
    auto best = bestLlmJob(*job, rules, Deadline::in(30));
    QVERIFY2(best, best.message().c_str());
    QVERIFY(best->singleTime.fits);
    QVERIFY2(std::abs(best->singleTime.jobUs - 882) < 1e-9, qPrintable(QString::number(best->singleTime.jobUs)));
    QVERIFY(best->twoPhase);
    QCOMPARE(best->moveUs, 0.0);
    QCOMPARE(best->twoPhaseTime.prefillUs, 18.0);
    QCOMPARE(best->twoPhaseTime.decodeTotalUs, 4 * 18.0);
    QCOMPARE(best->twoPhaseTime.jobUs, 90.0);
    const DeviceId gpu = job->accel();
    for (const char* n : {"blk.0.ffn_up_exps.weight", "blk.1.attn_q.weight"}) {
      QCOMPARE(best->prefill.tensors.at(n), gpu);
      QCOMPARE(best->decode.tensors.at(n), job->host());
    }
    for (const char* n : {"blk.2.ffn_down_exps.weight", "blk.3.ffn_gate_inp.weight"}) {
      QCOMPARE(best->prefill.tensors.at(n), job->host());
      QCOMPARE(best->decode.tensors.at(n), gpu);
      QCOMPARE(best->single.tensors.at(n), gpu);
    }
    // Every rule's plan is within memory and none is faster than best.
    for (const auto& r : rules)
      if (r.ok) QVERIFY(r.time.fits && r.time.jobUs >= best->singleTime.jobUs - 1e-9);
  }

  /// The move between phases by hand: -ngl 5 to -ngl 3 sends layers 0 and 1 (weights) to the host over
  /// the GPU -> host link: latency + bytes / bandwidth; the caches do not count (the tiny model has none).
  void moveCost() {
    LlmJobTables jt;
    jt.prompt = 8;
    jt.generate = 2;
    jt.prefill = handTable(0, 1, 1, {}, 1);
    llmTrapezoid(8, 2, 2, jt.decodeCache, jt.decodeWeight);
    for (size_t k = 0; k < 2; ++k) {
      CostTable t = handTable(0, 1, 1, {}, 1);
      for (auto& b : t.linkBytesPerUs) b = 1000;  // 1 GB/s
      for (auto& l : t.linkLatencyUs) l = 5;
      jt.decode.push_back(std::move(t));
    }
    auto job = LlmJob::make(jt);
    QVERIFY2(job, job.message().c_str());
    int64_t up = 0, down = 0;
    const double us = job->moveUs(job->fromArgs(5, {}, true), job->fromArgs(3, {}, true), &up, &down);
    QCOMPARE(up, int64_t{0});
    QCOMPARE(down, 2 * (kDense + kExperts));
    QCOMPARE(us, 5 + static_cast<double>(2 * (kDense + kExperts)) / 1000);
    // Both directions at once: the slower one counts.
    const double both = job->moveUs(job->fromArgs(3, {}, true), job->fromArgs(2, {{"blk\\.0\\.", job->accel()}}, true), &up, &down);
    QCOMPARE(up, kDense + kExperts);
    QCOMPARE(down, kDense + kExperts);
    QCOMPARE(both, 5 + static_cast<double>(kDense + kExperts) / 1000);
  }

  /// partex-cli llm on a small generated MoE decoder: the -ot string of each placement it prints, read back
  /// with the -ot importer on the model's last decode step, gives the placement it reports, every tensor.
  void cliRoundTrip() {
    const QString ref = "gen:moe?layers=4&hidden=512&heads=8&kv-heads=2&experts=4&experts-used=2&expert-ffn=1024&vocab=1000";
    const QJsonObject j = roundTrip(ref, 0.06, true);
    if (QTest::currentTestFailed()) return;
    // Every rule row is there, and best is never slower than a rule that fits.
    const QJsonArray rules = j.value("rules").toArray();
    QCOMPARE(rules.size(), 4);
    for (const auto& x : rules)
      if (x.toObject().value("ok").toBool()) QVERIFY(x.toObject().value("best_speedup").toDouble() >= 1 - 1e-9);
    // The text form prints the arguments.
    auto text = test::runCli({"llm", ref, "--platform", "desktop-rtx4070", "--prompt", "64", "--generate", "16"});
    QVERIFY2(text.code == 0, text.err.constData());
    QVERIFY2(text.out.contains("llama.cpp  -ngl "), text.out.constData());
    QVERIFY2(text.out.contains("--n-cpu-moe"), text.out.constData());
    // --ubatch 4096: the arguments carry -b and -ub, for best and the rules alike.
    auto ub = test::runCli({"llm", ref, "--platform", "desktop-rtx4070", "--prompt", "64", "--generate", "16", "--ubatch", "4096", "--json"});
    QVERIFY2(ub.code == 0, ub.err.constData());
    const QJsonObject uj = QJsonDocument::fromJson(ub.out).object();
    QCOMPARE(uj.value("ubatch").toInt(), 4096);
    QVERIFY(uj.value("best").toObject().value("llama_cpp_args").toString().endsWith(" -b 4096 -ub 4096"));
    QVERIFY(uj.value("rules").toArray()[0].toObject().value("args").toString().endsWith(" -b 4096 -ub 4096"));
  }

  /// The micro-batches best tries: 512, the powers of two above it below the prompt, the prompt itself,
  /// at most 8192.
  void ubatchCandidates() {
    QCOMPARE(llmUbatchCandidates(64), (std::vector<int64_t>{512}));
    QCOMPARE(llmUbatchCandidates(512), (std::vector<int64_t>{512}));
    QCOMPARE(llmUbatchCandidates(2048), (std::vector<int64_t>{512, 1024, 2048}));
    QCOMPARE(llmUbatchCandidates(3000), (std::vector<int64_t>{512, 1024, 2048, 3000}));
    QCOMPARE(llmUbatchCandidates(100000), (std::vector<int64_t>{512, 1024, 2048, 4096, 8192}));
  }

  /// best searches -ub with the placement (prompt 2048: -ub 512, 1024, 2048), the rules stay at 512, and
  /// the JSON gives the best rule at best's -ub; every printed string reads back to its placement with
  /// the -ub it prints (argWords in roundTrip).
  void cliUbatchSearch() {
    const QString ref = "gen:moe?layers=4&hidden=512&heads=8&kv-heads=2&experts=4&experts-used=2&expert-ffn=1024&vocab=1000";
    const QJsonObject j = roundTrip(ref, 0.06, true, 2048);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(j.value("rules_ubatch").toInt(), 512);
    const QJsonArray searched = j.value("ubatches_searched").toArray();
    QCOMPARE(searched.size(), 3);
    QCOMPARE(searched[0].toInt(), 512);
    QCOMPARE(searched[1].toInt(), 1024);
    QCOMPARE(searched[2].toInt(), 2048);
    const int ub = j.value("ubatch").toInt();
    QVERIFY(ub == 512 || ub == 1024 || ub == 2048);
    for (const auto& x : j.value("rules").toArray()) {
      const QJsonObject r = x.toObject();
      if (!r.value("ok").toBool()) continue;
      QVERIFY2(!r.value("args").toString().contains("-ub"), qPrintable(r.value("args").toString()));  // llama.cpp's default
      QVERIFY(r.value("best_speedup").toDouble() >= 1 - 1e-9);
    }
    const QJsonObject at = j.value("best_rule_at_best_ubatch").toObject();
    QVERIFY(at.value("best_speedup").toDouble() >= 1 - 1e-9);
    QCOMPARE(at.value("args").toString().contains(" -ub "), ub != 512);
    // --ubatch 1024 fixes it for both: every printed string says -ub 1024 and reads back (roundTrip).
    const QJsonObject f = roundTrip(ref, 0.06, true, 2048, {"--ubatch", "1024"});
    if (QTest::currentTestFailed()) return;
    QCOMPARE(f.value("ubatch").toInt(), 1024);
    QCOMPARE(f.value("rules_ubatch").toInt(), 1024);
    QVERIFY(f.value("best").toObject().value("llama_cpp_args").toString().endsWith(" -ub 1024"));
    for (const auto& x : f.value("rules").toArray())
      if (x.toObject().value("ok").toBool()) QVERIFY(x.toObject().value("args").toString().endsWith(" -ub 1024"));
  }

  /// llama.cpp's compute buffer grows with -ub (src/llama-context.cpp, sched_reserve: the graph of
  /// n_tokens = min(n_ctx, n_ubatch) tokens with n_outputs = n_tokens, so the logits are F32
  /// n_vocab x n_ubatch). A one-layer generated Llama (hidden 64, 2 heads of 64, float32, vocabulary
  /// 32,000) all on the GPU: the prefill's memory is checked on the graph of one micro-batch, whose
  /// activation peak is at the output head, with N tokens: the logits N x 32,000 x 4, the head's input
  /// (the final norm) N x 64 x 4 and the layer's K and V written (graph outputs) 2 x N x 64 x 4:
  /// 65,929,216 bytes at -ub 512, 263,716,864 at -ub 2048 (the attention scores, 2 x N x N x 4, are
  /// freed before). A GPU between the two holds the job at -ub 512 and not at -ub 2048.
  void computeBufferByUbatch() {
    auto plat = loadPreset("desktop-rtx4070");
    QVERIFY(plat);
    LlmJobSpec spec;
    spec.model = "gen:llama?layers=1&hidden=64&heads=2&kv-heads=2&intermediate=128&vocab=32000";
    spec.prompt = 4096;
    spec.generate = 1;
    spec.ubatches = {512, 2048};
    auto tables = loadLlmJobTables(spec, *plat);
    QVERIFY2(tables, tables.message().c_str());
    QCOMPARE(tables->prefillReserve.size(), size_t{2});
    auto activations = [](const LlmJob& job) {
      const CostTable& t = job.prefillMemoryTable();
      const Plan plan = llmPhasePlan(t, llamaTensors(t), job.fromArgs(2, {}, true), job.accel());
      auto tl = simulate(t, plan);
      if (!tl) qFatal("simulate: %s", tl.message().c_str());
      return deviceMemory(t, plan, *tl)[static_cast<size_t>(job.accel())].activations;
    };
    auto hand = [](int64_t n) { return n * (32000 + 64 + 2 * 64) * 4; };
    QCOMPARE(hand(512), int64_t{65929216});
    QCOMPARE(hand(2048), int64_t{263716864});
    auto j512 = LlmJob::make(*tables, 512), j2048 = LlmJob::make(*tables, 2048);
    QVERIFY2(j512 && j2048, "make");
    QCOMPARE(activations(*j512), hand(512));
    QCOMPARE(activations(*j2048), hand(2048));
    // -ngl 2 (everything but the embedding on the GPU) at each -ub: the GPU's peak is the prefill's.
    const LlmJobTime t512 = j512->evaluate(j512->fromArgs(2, {}, true)), t2048 = j2048->evaluate(j2048->fromArgs(2, {}, true));
    QVERIFY2(t512.fits && t2048.fits, (t512.why + t2048.why).c_str());
    QVERIFY(t2048.accelPeakBytes - t512.accelPeakBytes >= hand(2048) - hand(512));
    // A GPU halfway between: -ub 512 fits, -ub 2048 does not, naming the micro-batch.
    LlmJobTables small = *tables;
    const int64_t cap = (t512.accelPeakBytes + t2048.accelPeakBytes) / 2;
    for (CostTable* t : {&small.prefill, &small.decode[0], &small.prefillReserve.at(512), &small.prefillReserve.at(2048)})
      t->memCapacity[static_cast<size_t>(j512->accel())] = cap;
    auto s512 = LlmJob::make(small, 512), s2048 = LlmJob::make(small, 2048);
    QVERIFY2(s512 && s2048, "make");
    QVERIFY2(s512->evaluate(s512->fromArgs(2, {}, true)).fits, "-ub 512 should fit");
    const LlmJobTime over = s2048->evaluate(s2048->fromArgs(2, {}, true));
    QVERIFY(!over.fits);
    QVERIFY2(QString::fromStdString(over.why).startsWith("prefill at -ub 2048: "), over.why.c_str());
    // A -ub without its table is an error, not a silent fallback to the prefill's memory.
    QVERIFY(!LlmJob::make(small, 1024));
  }

  /// The same on a GGUF file (qwen3moe, Q4_K, written by the project's writer): the arguments name the
  /// file's own tensors and read back to the placement.
  void cliGguf() {
    GenSpec s;
    s.kind = "moe";
    s.layers = 4;
    s.hidden = 512;
    s.heads = 8;
    s.kvHeads = 2;
    s.experts = 8;
    s.expertsUsed = 2;
    s.expertFfn = 512;
    s.vocab = 1000;
    const std::string path = test::tempDir() + "/small-moe.gguf";
    const Status st = ggufForSpec(s, "qwen3moe", QuantType::Q4_K).write(path);
    QVERIFY2(st, st.message().c_str());
    const QJsonObject j = roundTrip(QString::fromStdString(path), 0.01, false);
    if (QTest::currentTestFailed()) return;
    QVERIFY(j.value("best").toObject().value("tensors").toObject().contains("blk.3.ffn_down_exps.weight"));
  }
  void cliErrors_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");
    const QString moe = "gen:moe?layers=2&hidden=64&heads=4&experts=4&experts-used=2&expert-ffn=96&vocab=100";
    QTest::newRow("no platform") << QStringList{"llm", moe} << "--platform is required";
    QTest::newRow("unknown platform") << QStringList{"llm", moe, "--platform", "nope"} << "nope";
    QTest::newRow("onnx file") << QStringList{"llm", "model.onnx", "--platform", "desktop-rtx4070"} << "needs a GGUF file";
    QTest::newRow("missing gguf") << QStringList{"llm", "/nonexistent/m.gguf", "--platform", "desktop-rtx4070"} << "m.gguf";
    QTest::newRow("not a decoder") << QStringList{"llm", "gen:resnet18", "--platform", "desktop-rtx4070"} << "needs a decoder";
    QTest::newRow("phase in ref") << QStringList{"llm", moe + "&phase=decode", "--platform", "desktop-rtx4070"} << "set by the job";
    QTest::newRow("prompt 0") << QStringList{"llm", moe, "--platform", "desktop-rtx4070", "--prompt", "0"} << "--prompt 0";
    QTest::newRow("generate 0") << QStringList{"llm", moe, "--platform", "desktop-rtx4070", "--generate", "0"} << "--generate 0";
    QTest::newRow("samples 1") << QStringList{"llm", moe, "--platform", "desktop-rtx4070", "--samples", "1"} << "--samples 1";
    QTest::newRow("ubatch 0") << QStringList{"llm", moe, "--platform", "desktop-rtx4070", "--ubatch", "0"} << "--ubatch 0";
    QTest::newRow("gpu memory") << QStringList{"llm", moe, "--platform", "desktop-rtx4070", "--gpu-memory", "-2"} << "--gpu-memory";
  }
  void cliErrors() {
    QFETCH(QStringList, args);
    QFETCH(QString, message);
    auto r = test::runCli(args);
    QCOMPARE(r.code, 2);
    const QByteArray err = r.err.trimmed();
    QVERIFY2(err.contains(message.toUtf8()), err.constData());
    QVERIFY2(!err.contains('\n'), err.constData());
  }
};

QTEST_GUILESS_MAIN(TstLlmJob)
#include "tst_llmjob.moc"
