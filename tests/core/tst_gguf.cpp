// Issue 26's model side: ggml's weight types (bytes per block against ggml's block structs, counted by
// hand), quantised weights in the cost model and in memory, Mixture-of-Experts decoders (published
// parameter totals, the experts an operator reads at T tokens), and GGUF headers (read back, built into
// the decoder graph, every corrupt variant refused in one line, the CLI's exit 2, and the `gguf` Python
// package as an independent reader where it is installed).
#include <QtTest>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cost/costtable.h"
#include "cost/roofline.h"
#include "cost/work.h"
#include "gen/generator.h"
#include "gguf/gguf.h"
#include "gguf/ggufwriter.h"
#include "ir/quant.h"
#include "onnx/importer.h"
#include "platform/platform.h"
#include "problem/problem.h"
#include "support/files.h"
#include "testutil.h"

using namespace partex;

namespace {

Result<Graph> build(const GenSpec& spec) {
  auto bytes = generateModel(spec);
  if (!bytes) return Error{bytes.message()};
  return importOnnxBytes(*bytes, spec.kind + ".onnx");
}

GenSpec preset(const std::string& name, const std::string& phase, int64_t tokens) {
  GenSpec s;
  s.phase = phase;
  s.seqLen = tokens;
  s.dtype = "float16";
  const auto st = applyDecoderPreset(name, s);
  if (!st) qFatal("%s", st.message().c_str());
  return s;
}

/// Parameters: elements of the weights named "*.weight".
int64_t paramCount(const Graph& g) {
  int64_t n = 0;
  for (const auto& v : g.values)
    if (v.isWeight && v.name.size() > 7 && v.name.compare(v.name.size() - 7, 7, ".weight") == 0) n += v.numElements();
  return n;
}

/// Weight bytes the ExpertMatMul operators read, and the bytes of their weights.
std::pair<int64_t, int64_t> expertBytes(const Graph& g) {
  int64_t read = 0, held = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].opType != "ExpertMatMul") continue;
    read += characterise(g, static_cast<OpId>(i)).bytesReadWeights;
    held += g.values[static_cast<size_t>(g.nodes[i].inputs[1])].bytes();
  }
  return {read, held};
}

std::string writeSmall(const std::string& name, const GenSpec& s, const std::string& arch, QuantType q) {
  const std::string path = test::tempDir() + "/" + name;
  const auto st = ggufForSpec(s, arch, q).write(path);
  if (!st) qFatal("%s", st.message().c_str());
  return path;
}

GenSpec smallDense() {
  GenSpec s;
  s.kind = "llama";
  s.layers = 2;
  s.hidden = 256;
  s.heads = 4;
  s.kvHeads = 2;
  s.intermediate = 512;
  s.vocab = 300;
  return s;
}

/// smallDense with 8 routed experts of 256, 2 used per token.
GenSpec smallMoe() {
  GenSpec s = smallDense();
  s.kind = "moe";
  s.experts = 8;
  s.expertsUsed = 2;
  s.expertFfn = 256;
  return s;
}


}  // namespace

class TestGguf : public QObject {
  Q_OBJECT

 private slots:
  // ggml's block sizes, counted from the block structs of ggml-common.h.
  void quantTable() {
    auto bytes = [](const char* name, int64_t n) {
      QuantType t;
      if (!quantFromName(name, t)) return int64_t{-2};
      return quantBytes(t, n);
    };
    const int64_t n = 4096LL * 4096;
    QCOMPARE(bytes("q4_k", n), n / 256 * 144);  // d, dmin (2 x 2) + scales 12 + qs 128
    QCOMPARE(bytes("q5_k", n), n / 256 * 176);  // + qh 32
    QCOMPARE(bytes("q6_k", n), n / 256 * 210);  // ql 128 + qh 64 + scales 16 + d 2
    QCOMPARE(bytes("q8_0", n), n / 32 * 34);    // d 2 + qs 32
    QCOMPARE(bytes("q4_0", n), n / 32 * 18);
    QCOMPARE(bytes("q2_k", n), n / 256 * 84);
    QCOMPARE(bytes("q3_k", n), n / 256 * 110);
    QCOMPARE(bytes("mxfp4", n), n / 32 * 17);  // e 1 + qs 16
    QCOMPARE(bytes("iq4_xs", n), n / 256 * 136);
    QCOMPARE(bytes("iq2_xxs", n), n / 256 * 66);
    QCOMPARE(bytes("f16", n), n * 2);
    QCOMPARE(bytes("bf16", n), n * 2);
    QCOMPARE(bytes("F32", n), n * 4);
    QCOMPARE(bytes("q7_k", n), int64_t{-2});
    QCOMPARE(quantBitsPerWeight(QuantType::Q4_K), 4.5);
    QCOMPARE(quantBitsPerWeight(QuantType::Q6_K), 6.5625);
    // GGUF ids (enum ggml_type).
    QCOMPARE(quantInfoById(12)->type, QuantType::Q4_K);
    QCOMPARE(quantInfoById(39)->type, QuantType::MXFP4);
    QCOMPARE(quantInfoById(30)->type, QuantType::BF16);
    QVERIFY(quantInfoById(4) == nullptr);   // Q4_2, removed
    QVERIFY(quantInfoById(31) == nullptr);  // Q4_0_4_4, removed from GGUF
    QVERIFY(quantInfoById(1000) == nullptr);

    Value v;
    v.dtype = DType::Float16;
    v.shape = {4096, 4096};
    v.shapeKnown = true;
    v.isWeight = true;
    QCOMPARE(v.bytes(), n * 2);
    v.quant = QuantType::Q4_K;
    QCOMPARE(v.bytes(), n / 256 * 144);
  }

  // A generated Llama with --quant q4_k: matrices in Q4_K, norms in the dtype; the cost table's weight
  // bytes and the operators' bytes read follow; the dequantisation is counted per element.
  void quantisedGeneratedModel() {
    GenSpec s = smallDense();
    s.phase = "decode";
    s.seqLen = 16;
    s.dtype = "float16";
    s.quant = "q4_k";
    auto g = build(s);
    QVERIFY2(g, g ? "" : g.message().c_str());
    const int64_t H = 256, F = 512, V = 300, kv = 128;
    const int64_t q4 = 144, blk = 256;
    const int64_t perLayer = (H * H + H * kv + H * kv + H * H + 3 * H * F) / blk * q4 + 2 * H * 2;
    const int64_t expect = 2 * perLayer + (V * H) / blk * q4 * 2 + H * 2;
    // V * H = 76800 = 300 blocks of 256.
    int64_t named = 0;
    for (const auto& v : g->values)
      if (v.isWeight && v.name.size() > 7 && v.name.compare(v.name.size() - 7, 7, ".weight") == 0) named += v.bytes();
    QCOMPARE(named, expect);
    // Memory counts the quantised bytes: the cost table's resident bytes (weights and the decode cache).
    auto plat = loadPreset("desktop-rtx4070");
    QVERIFY(plat);
    auto table = buildCostTable(*g, characteriseAll(*g), *plat);
    QVERIFY(table);
    int64_t resident = 0, cache = 0, constants = 0;
    for (int64_t b : table->weightBytes) resident += b;
    for (const auto& v : g->values) {
      if (v.isGraphInput && v.name.rfind("past_", 0) == 0) cache += v.bytes();
      if (v.isWeight && !(v.name.size() > 7 && v.name.compare(v.name.size() - 7, 7, ".weight") == 0) &&
          !v.consumers.empty())
        constants += v.bytes();
    }
    QCOMPARE(cache, int64_t{2 * 2 * 1 * 2 * 16 * 64 * 2});  // layers x (k, v) x [1, 2 heads, 16, 64] float16
    QCOMPARE(resident, expect + cache + constants);
    QCOMPARE(g->values[static_cast<size_t>(g->findValue("blk.0.attn_q.weight"))].quant, QuantType::Q4_K);
    QCOMPARE(g->values[static_cast<size_t>(g->findValue("blk.0.attn_norm.weight"))].quant, QuantType::None);
    const OpId q = g->findNode("layers.0.attn.q_proj");
    const OpWork w = characterise(*g, q);
    QCOMPARE(w.bytesReadWeights, H * H / blk * q4);
    QCOMPARE(w.dequantElements, H * H);
    QCOMPARE(w.dequantFlops, 2 * H * H);
    // The roofline: a measured dequantisation rate adds elements / rate to the compute side.
    Device d;
    d.defaultPeakGflops = 1e6;  // compute negligible
    d.memBandwidthGBs = 1e6;
    const double base = rooflineUs(d, w, "MatMul");
    d.dequantGElemsPerS = 1.0;  // 1e9 elements/s: H*H elements take 65.536 us
    QVERIFY(std::abs(rooflineUs(d, w, "MatMul") - base - H * H / 1e3) < 1e-3);
    // A different quantisation is a different model (plans are keyed by the graph's hash).
    GenSpec s8 = s;
    s8.quant = "q8_0";
    auto g8 = build(s8);
    QVERIFY(g8);
    QVERIFY(g8->graphSha256 != g->graphSha256);
    // Unknown types are refused in one line.
    s8.quant = "q9_k";
    auto bad = generateModel(s8);
    QVERIFY(!bad);
    QVERIFY(bad.message().find("q9_k") != std::string::npos);
  }

  void distinctExperts() {
    QCOMPARE(expectedDistinctExperts(8, 2, 1), 2.0);
    QCOMPARE(expectedDistinctExperts(8, 8, 5), 8.0);
    // Qwen3-30B-A3B, 16 tokens: 128 (1 - (15/16)^16) = 82.42.
    QVERIFY(std::abs(expectedDistinctExperts(128, 8, 16) - 82.42) < 0.01);
    QVERIFY(expectedDistinctExperts(128, 8, 512) > 127.99);
  }

  // Parameters of the presets against the published totals, and the expert bytes read at T = 1 and T = 512.
  void moePresets_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<double>("publishedTotal");
    // Hand counts of the graph's parameters (attention q,k,v,o + experts 3 E H F + router H E + 2 norms per
    // layer; embedding, output and final norm), and the totals on the model cards.
    QTest::addColumn<qlonglong>("handCount");
    // Active parameters per token as published: Mixtral and Qwen count the token embedding, OpenAI's
    // gpt-oss model card does not (it counts the unembedding).
    QTest::addColumn<double>("publishedActive");
    QTest::addColumn<bool>("activeCountsEmbedding");
    auto count = [](int64_t L, int64_t H, int64_t q, int64_t kv, int64_t E, int64_t F, int64_t V) {
      return L * (2 * H * q + 2 * H * kv + 3 * E * H * F + H * E + 2 * H) + 2 * V * H + H;
    };
    QTest::newRow("mixtral-8x7b") << "mixtral-8x7b" << 46.7e9 << qlonglong(count(32, 4096, 4096, 1024, 8, 14336, 32000)) << 12.9e9 << true;
    QTest::newRow("qwen3-30b-a3b") << "qwen3-30b-a3b" << 30.5e9 << qlonglong(count(48, 2048, 4096, 512, 128, 768, 151936)) << 3.3e9 << true;
    QTest::newRow("gpt-oss-20b") << "gpt-oss-20b" << 20.9e9 << qlonglong(count(24, 2880, 4096, 512, 32, 2880, 201088)) << 3.6e9 << false;
    QTest::newRow("gpt-oss-120b") << "gpt-oss-120b" << 116.8e9 << qlonglong(count(36, 2880, 4096, 512, 128, 2880, 201088)) << 5.1e9 << false;
  }
  void moePresets() {
    QFETCH(QString, name);
    QFETCH(double, publishedTotal);
    QFETCH(qlonglong, handCount);
    auto g = build(preset(name.toStdString(), "decode", 256));
    QVERIFY2(g, g ? "" : g.message().c_str());
    const int64_t params = paramCount(*g);
    QCOMPARE(params, static_cast<int64_t>(handCount));
    // Within 0.5% of the published total (biases, q/k norms and attention sinks are left out).
    QVERIFY2(std::abs(static_cast<double>(params) - publishedTotal) / publishedTotal < 0.005,
             qPrintable(QString::number(static_cast<double>(params))));
    // Active parameters: everything but the experts, and k of E experts (within 2% of the model card).
    QFETCH(double, publishedActive);
    QFETCH(bool, activeCountsEmbedding);
    GenSpec s = preset(name.toStdString(), "decode", 256);
    int64_t expertParams = 0;
    for (const auto& v : g->values)
      if (v.isWeight && v.name.find("_exps.weight") != std::string::npos) expertParams += v.numElements();
    double active = static_cast<double>(params - expertParams) +
                    static_cast<double>(expertParams) * static_cast<double>(s.expertsUsed) / static_cast<double>(s.experts);
    if (!activeCountsEmbedding) active -= static_cast<double>(s.vocab * s.hidden);
    QVERIFY2(std::abs(active - publishedActive) / publishedActive < 0.02, qPrintable(QString::number(active)));
    // Decode at batch 1: each expert operator reads k of E experts; memory holds all E.
    auto [read, held] = expertBytes(*g);
    QCOMPARE(read, held / s.experts * s.expertsUsed);
  }

  void moeActiveBytes() {
    // Mixtral at T = 1 (decode) and T = 512 (prefill): 2 of 8 experts, then 8 (1 - (3/4)^512) = 8.
    const int64_t H = 4096, F = 14336, L = 32;
    auto decode = build(preset("mixtral-8x7b", "decode", 64));
    QVERIFY(decode);
    QCOMPARE(expertBytes(*decode).first, L * 3 * 2 * H * F * 2);  // 2 experts of 3 float16 matrices per layer
    // Qwen3-30B-A3B prefill of 16 tokens: 82.42 of 128 experts' bytes read.
    auto q = build(preset("qwen3-30b-a3b", "prefill", 16));
    QVERIFY(q);
    auto [read, held] = expertBytes(*q);
    QVERIFY(std::abs(static_cast<double>(read) / static_cast<double>(held) - 82.42 / 128) < 1e-4);
    // gpt-oss: sliding-window layers cache min(N, 128) tokens in decode, the others N.
    auto o = build(preset("gpt-oss-20b", "decode", 1024));
    QVERIFY(o);
    QCOMPARE(o->values[static_cast<size_t>(o->findValue("past_key.0"))].shape[2], int64_t{128});
    QCOMPARE(o->values[static_cast<size_t>(o->findValue("past_key.1"))].shape[2], int64_t{1024});
    QVERIFY(o->findValue("blk.0.post_attention_norm.weight") != kNone);
  }

  // A written GGUF read back: header fields, metadata of every type, tensor table; never the data.
  void readBack() {
    GgufWriter w = ggufForSpec(smallMoe(), "qwen3moe", QuantType::Q4_K);
    w.setF32("test.f32", 0.5f);
    w.setBool("test.bool", true);
    w.setI32Array("test.arr", {3, 1, 2});
    w.setU64("test.u64", 1ULL << 40);
    const std::string path = test::tempDir() + "/moe.gguf";
    QVERIFY(w.write(path));
    auto f = readGgufHeader(path);
    QVERIFY2(f, f ? "" : f.message().c_str());
    QCOMPARE(f->version, 3u);
    QCOMPARE(f->architecture(), std::string("qwen3moe"));
    QCOMPARE(f->find("tokenizer.ggml.tokens")->arrayCount, uint64_t{300});
    QCOMPARE(f->find("test.f32")->f, 0.5);
    QCOMPARE(f->find("test.bool")->i, int64_t{1});
    QCOMPARE(f->find("test.arr")->arrayNumbers.size(), size_t{3});
    QCOMPARE(f->find("test.u64")->u, uint64_t{1} << 40);
    // 1 embedding + 2 layers x (2 norms + 4 attention + router + 3 experts) + output norm + output.
    QCOMPARE(f->tensors.size(), size_t{1 + 2 * 10 + 2});
    const GgufTensor* e = f->tensor("blk.1.ffn_down_exps.weight");
    QVERIFY(e);
    QCOMPARE(e->ne, (std::vector<int64_t>{256, 256, 8}));
    QCOMPARE(e->quant, QuantType::Q4_K);
    QCOMPARE(e->bytes(), int64_t{256 * 256 * 8 / 256 * 144});
    QCOMPARE(f->fileSize, f->dataOffset + w.dataBytes());
  }

  // The graph of a GGUF: the file's names, element counts and storage types; prefill and decode.
  void ggufGraph() {
    const std::string path = writeSmall("qwen3moe.gguf", smallMoe(), "qwen3moe", QuantType::Q4_K);
    auto f = readGgufHeader(path);
    QVERIFY(f);
    auto g = loadModel(path + "?phase=decode&seq=64", {});
    QVERIFY2(g, g ? "" : g.message().c_str());
    int64_t fileBytes = 0;
    for (const auto& t : f->tensors) {
      const ValueId id = g->findValue(t.name);
      QVERIFY2(id != kNone, t.name.c_str());
      const Value& v = g->values[static_cast<size_t>(id)];
      QCOMPARE(v.bytes(), t.bytes());
      fileBytes += t.bytes();
    }
    int64_t graphBytes = 0;
    for (const auto& v : g->values)
      if (v.isWeight && v.name.size() > 7 && v.name.compare(v.name.size() - 7, 7, ".weight") == 0) graphBytes += v.bytes();
    QCOMPARE(graphBytes, fileBytes);
    QCOMPARE(g->values[static_cast<size_t>(g->findValue("past_key.0"))].shape[2], int64_t{64});
    // Prefill of 32 tokens: logits [1, 32, 300].
    auto p = loadModel(path + "?seq=32", {});
    QVERIFY(p);
    QCOMPARE(p->values[static_cast<size_t>(p->findValue("logits"))].shape, (std::vector<int64_t>{1, 32, 300}));
    // A dense llama with tied embeddings (no output.weight).
    GenSpec d = smallDense();
    d.tiedEmbeddings = true;
    auto t = loadModel(writeSmall("tied.gguf", d, "llama", QuantType::Q8_0), {});
    QVERIFY2(t, t ? "" : t.message().c_str());
    QVERIFY(t->findValue("output.weight") == kNone);
    QCOMPARE(t->nodes[static_cast<size_t>(t->findNode("lm_head"))].opType, std::string("Gemm"));
    // A problem on a platform schedules from it (the loader behind the CLI's commands).
    auto prob = loadProblem(path, "desktop-rtx4070", {});
    QVERIFY2(prob, prob ? "" : prob.message().c_str());
  }

  // Corrupt and unsupported files: one line naming the file and the reason, never a crash.
  void corrupt() {
    const std::string path = writeSmall("good.gguf", smallDense(), "llama", QuantType::Q4_K);
    auto read = readFile(path);
    QVERIFY2(read, read ? "" : read.message().c_str());
    const std::string bytes = *read;
    auto f = parseGgufHeader(bytes, "x.gguf");
    QVERIFY(f);
    const uint64_t header = f->dataOffset;
    auto refuse = [&](const std::string& data, const char* reason) {
      auto r = parseGgufHeader(data, "x.gguf");
      QVERIFY2(!r, reason);
      QVERIFY2(r.message().rfind("x.gguf: ", 0) == 0, r.message().c_str());
      QVERIFY2(r.message().find('\n') == std::string::npos, r.message().c_str());
      QVERIFY2(r.message().find(reason) != std::string::npos, r.message().c_str());
    };
    // Truncated at every tenth of the header.
    for (int i = 0; i < 10; ++i) {
      const std::string cut = bytes.substr(0, header * static_cast<uint64_t>(i) / 10);
      auto r = parseGgufHeader(cut, "x.gguf");
      QVERIFY(!r);
      QVERIFY2(r.message().rfind("x.gguf: ", 0) == 0, r.message().c_str());
    }
    // The header whole, the data cut: the tensors' data lies past the end.
    refuse(bytes.substr(0, header + 10), "past the end of the file");
    std::string m = bytes;
    m[0] = 'X';
    refuse(m, "wrong magic");
    m = bytes;
    m[4] = 1;
    refuse(m, "version 1");
    m = bytes;
    m[4] = 7;
    refuse(m, "unsupported GGUF version 7");
    m = bytes;
    for (int i = 8; i < 16; ++i) m[static_cast<size_t>(i)] = '\x7f';  // tensor count
    refuse(m, "tensor count");
    // The first key's length made huge.
    m = bytes;
    for (int i = 24; i < 32; ++i) m[static_cast<size_t>(i)] = '\x7f';
    refuse(m, "runs past the end of the file");
    // A key holding a newline and an unknown type: the message quotes the key escaped, on one line (found
    // by fuzz_gguf).
    {
      uint64_t keyLen = 0;
      std::memcpy(&keyLen, bytes.data() + 24, 8);
      QVERIFY(keyLen > 2 && 32 + keyLen + 4 < header);
      m = bytes;
      m[33] = '\n';
      m[32 + keyLen] = 99;
      refuse(m, "has unknown type 99");
      QVERIFY(parseGgufHeader(m, "x.gguf").message().find("\\n") != std::string::npos);
    }
    // An unknown tensor type: the first tensor info's type field (after its name and dims).
    {
      const std::string name = "token_embd.weight";
      const size_t at = bytes.find(name, 24) + name.size() + 4 + 2 * 8;
      m = bytes;
      m[at] = 100;
      refuse(m, "unknown ggml type 100");
    }
    // An unsupported architecture.
    GgufWriter w = ggufForSpec(smallDense(), "mamba", QuantType::F16);
    const std::string mamba = test::tempDir() + "/mamba.gguf";
    QVERIFY(w.write(mamba));
    auto g = loadModel(mamba, {});
    QVERIFY(!g);
    QVERIFY2(g.message().find("architecture 'mamba' is not supported") != std::string::npos, g.message().c_str());
    QVERIFY(g.message().find(mamba) != std::string::npos);
    // The CLI: exit 2 and one line.
    std::ofstream(test::tempDir() + "/bad.gguf", std::ios::binary) << "GGUF\x03";
    for (const std::string& bad : {mamba, test::tempDir() + "/bad.gguf"}) {
      auto r = test::runCli({"schedule", QString::fromStdString(bad), "--platform", "desktop-rtx4070", "--algo", "heft"});
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains(QByteArray::fromStdString(bad)), r.err.constData());
    }
  }

  // The CLI schedules a GGUF and generates the MoE presets.
  void cli() {
    const std::string path = writeSmall("cli.gguf", smallMoe(), "qwen3moe", QuantType::Q4_K);
    auto r = test::runCli({"schedule", QString::fromStdString(path) + "?phase=decode&seq=128", "--platform",
                           "desktop-rtx4070", "--algo", "heft"});
    QVERIFY2(r.code == 0, r.err.constData());
    const QString out = QString::fromStdString(test::tempDir() + "/mixtral.onnx");
    r = test::runCli({"generate", "moe", "--preset", "mixtral-8x7b", "--quant", "q4_k", "--phase", "decode", "-o", out});
    QVERIFY2(r.code == 0, r.err.constData());
    auto g = importOnnxFile(out.toStdString());
    QVERIFY(g);
    QCOMPARE(g->values[static_cast<size_t>(g->findValue("blk.3.ffn_up_exps.weight"))].quant, QuantType::Q4_K);
    r = test::runCli({"generate", "moe", "--preset", "nope", "-o", out});
    QCOMPARE(r.code, 2);
  }

  // llama.cpp's own reader (the `gguf` PyPI package) on a file the writer made: same tensors, types, dims.
  void pythonGguf() {
    const std::string path = writeSmall("py.gguf", smallMoe(), "qwen3moe", QuantType::Q6_K);
    // The virtual environment scripts/ort/install.sh (run by scripts/deps.sh) puts gguf in; else python3.
    const QByteArray venv = qgetenv("PARTEX_ORT_VENV");
    QString python = (venv.isEmpty() ? QDir::homePath() + "/.local/share/partex/ort-venv" : QString::fromUtf8(venv)) +
                     "/bin/python";
    if (!QFileInfo(python).isExecutable()) python = "python3";
    QProcess py;
    py.start(python, {"-c",
                         "import sys\n"
                         "try:\n import gguf\nexcept ImportError:\n print('absent'); sys.exit(0)\n"
                         "r = gguf.GGUFReader(sys.argv[1])\n"
                         "print(len(r.tensors))\n"
                         "for t in r.tensors: print(t.name, int(t.tensor_type), ','.join(str(int(d)) for d in t.shape), int(t.n_bytes))\n"
                         "print(r.fields['general.architecture'].contents())\n",
                         QString::fromStdString(path)});
    if (!py.waitForFinished(60000) || py.exitCode() != 0) QSKIP("python3 did not run the gguf check");
    const QStringList lines = QString::fromUtf8(py.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    if (lines.value(0) == "absent") QSKIP("the gguf Python package is not installed (scripts/deps.sh installs it)");
    auto f = readGgufHeader(path);
    QVERIFY(f);
    QCOMPARE(lines.value(0).toULongLong(), static_cast<qulonglong>(f->tensors.size()));
    for (size_t i = 0; i < f->tensors.size(); ++i) {
      const auto& t = f->tensors[i];
      QStringList dims;
      for (int64_t d : t.ne) dims << QString::number(d);
      const QString want = QString::fromStdString(t.name) + " " + QString::number(t.ggmlType) + " " + dims.join(',') +
                           " " + QString::number(t.bytes());
      QCOMPARE(lines.value(static_cast<int>(i) + 1), want);
    }
    QCOMPARE(lines.last(), QString("qwen3moe"));
  }
};

QTEST_GUILESS_MAIN(TestGguf)
#include "tst_gguf.moc"
