// The CPU backend's recurrent layers (LSTM, GRU, RNN through oneDNN's RNN primitives,
// backends/cpu/ops_rnn_onednn.cpp) against the plain kernels (core/kernels/ops_rnn.cpp, which ONNX's
// conformance cases check): random shapes, every direction, batch > 1, initial states, bias or none, all
// outputs, within 1e-4 relative. Also: weights changed between runs, weights given up (keepsCopy),
// sequence_lens (shorter sequences against runs on the truncated sequences), and what still runs the
// plain kernel (cpu::runPlainKernel).

#include <QtTest>

#include <cmath>
#include <cstring>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"
#include "graphrun.h"
#include "kernels/ops.h"

using namespace partex;

namespace {

struct Case {
  std::string op;  // LSTM, GRU, RNN
  std::string direction;
  int64_t T, N, I, H;
  bool bias, initial;
  int64_t lbr = 0;
};

int64_t gatesOf(const std::string& op) {
  return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
}

/// The node of `c` as a one-node graph; inputs X, W, R, [B], [sequence_lens], [initial_h], [initial_c].
Graph rnnGraph(const Case& c, bool seqLens, std::map<std::string, Attribute> extra = {}) {
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, G = gatesOf(c.op);
  extra["hidden_size"] = Attribute{c.H};
  extra["direction"] = Attribute{c.direction};
  if (c.op == "GRU") extra["linear_before_reset"] = Attribute{c.lbr};
  // An empty shape is an omitted input (none of these is a scalar).
  std::vector<test::NodeInput> ins{
      {DType::Float32, {c.T, c.N, c.I}}, {DType::Float32, {D, G * c.H, c.I}}, {DType::Float32, {D, G * c.H, c.H}}};
  ins.push_back({DType::Float32, c.bias ? std::vector<int64_t>{D, 2 * G * c.H} : std::vector<int64_t>{}});
  ins.push_back({DType::Int32, seqLens ? std::vector<int64_t>{c.N} : std::vector<int64_t>{}});
  ins.push_back({DType::Float32, c.initial ? std::vector<int64_t>{D, c.N, c.H} : std::vector<int64_t>{}});
  if (c.op == "LSTM")
    ins.push_back({DType::Float32, c.initial ? std::vector<int64_t>{D, c.N, c.H} : std::vector<int64_t>{}});
  for (auto& in : ins)
    if (in.shape.empty()) in.dtype = DType::Undefined;
  return test::oneNodeGraph(c.op, ins, c.op == "LSTM" ? 3 : 2, std::move(extra), "rnn");
}

/// Random inputs for the node of `g` (sequence_lens, when present, all T).
std::vector<Tensor> randomInputs(const Graph& g, int64_t T, uint64_t seed) {
  std::vector<Tensor> ins;
  for (ValueId v : g.nodes[0].inputs) {
    if (v < 0) {
      ins.emplace_back();
      continue;
    }
    const Value& val = g.values[static_cast<size_t>(v)];
    auto t = Tensor::make(val.dtype, val.shape);
    if (val.dtype == DType::Int32)
      for (int64_t i = 0; i < t->numElements(); ++i) t->data<int32_t>()[i] = static_cast<int32_t>(T);
    else
      t->fillRandom(seed++, -0.6, 0.6);
    ins.push_back(std::move(*t));
  }
  return ins;
}

std::vector<const Tensor*> pointers(const std::vector<Tensor>& ins) {
  std::vector<const Tensor*> p;
  for (const Tensor& t : ins) p.push_back(t.empty() ? nullptr : &t);
  return p;
}

/// "" when every output matches within atol 1e-6 + rtol 1e-4.
std::string compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, size_t count) {
  if (got.size() < count || want.size() < count) return "too few outputs";
  for (size_t k = 0; k < count; ++k) {
    if (got[k].shape() != want[k].shape())
      return "output " + std::to_string(k) + ": shape " + shapeString(got[k].shape()) + ", expected " +
             shapeString(want[k].shape());
    for (int64_t i = 0; i < want[k].numElements(); ++i) {
      const double a = got[k].data<float>()[i], b = want[k].data<float>()[i];
      if (!(std::abs(a - b) <= 1e-6 + 1e-4 * std::abs(b)))
        return "output " + std::to_string(k) + " element " + std::to_string(i) + ": " + std::to_string(a) +
               ", expected " + std::to_string(b);
    }
  }
  return "";
}

}  // namespace

class TestCpuRnn : public QObject {
  Q_OBJECT

 private slots:
  void matchesPlainKernel_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<QString>("direction");
    QTest::addColumn<int>("T");
    QTest::addColumn<int>("N");
    QTest::addColumn<int>("I");
    QTest::addColumn<int>("H");
    QTest::addColumn<bool>("bias");
    QTest::addColumn<bool>("initial");
    QTest::addColumn<int>("lbr");
    QTest::newRow("LSTM bidirectional") << "LSTM"
                                        << "bidirectional" << 5 << 3 << 7 << 6 << true << true << 0;
    QTest::newRow("LSTM forward") << "LSTM"
                                  << "forward" << 9 << 4 << 13 << 17 << true << true << 0;
    QTest::newRow("LSTM reverse, no bias/state") << "LSTM"
                                                 << "reverse" << 4 << 2 << 5 << 8 << false << false << 0;
    QTest::newRow("LSTM bidirectional batch 1") << "LSTM"
                                                << "bidirectional" << 11 << 1 << 40 << 32 << true << false << 0;
    QTest::newRow("GRU bidirectional") << "GRU"
                                       << "bidirectional" << 6 << 3 << 9 << 5 << true << true << 0;
    QTest::newRow("GRU reverse lbr") << "GRU"
                                     << "reverse" << 7 << 2 << 4 << 10 << true << true << 1;
    QTest::newRow("GRU bidirectional lbr") << "GRU"
                                           << "bidirectional" << 5 << 4 << 6 << 7 << true << false << 1;
    QTest::newRow("GRU forward, no bias") << "GRU"
                                          << "forward" << 3 << 5 << 8 << 4 << false << true << 0;
    QTest::newRow("RNN bidirectional") << "RNN"
                                       << "bidirectional" << 8 << 3 << 5 << 9 << true << true << 0;
    QTest::newRow("RNN forward") << "RNN"
                                 << "forward" << 2 << 1 << 3 << 16 << false << false << 0;
  }
  /// oneDNN's result equals the plain kernel's, outputs Y, Y_h (and Y_c), on two runs.
  void matchesPlainKernel() {
    QFETCH(QString, op);
    QFETCH(QString, direction);
    QFETCH(int, T);
    QFETCH(int, N);
    QFETCH(int, I);
    QFETCH(int, H);
    QFETCH(bool, bias);
    QFETCH(bool, initial);
    QFETCH(int, lbr);
    const Case c{op.toStdString(), direction.toStdString(), T, N, I, H, bias, initial, lbr};
    const Graph g = rnnGraph(c, false);
    auto cpu = makeCpuBackend();
    std::string why;
    QVERIFY2(cpu->supports(g, 0, &why), why.c_str());
    auto k = cpu->prepare(g, 0, "cpu-serial");
    QVERIFY2(k.isOk(), k.message().c_str());
    const size_t nOut = c.op == "LSTM" ? 3 : 2;
    for (uint64_t seed : {1u, 100u}) {  // the second run: new weights, the cache must follow
      const auto ins = randomInputs(g, T, seed);
      std::vector<Tensor> got, want;
      Status s = (*k)->run(pointers(ins), got);
      QVERIFY2(s.isOk(), s.message().c_str());
      s = cpu::runPlainKernel(g, 0, pointers(ins), want);
      QVERIFY2(s.isOk(), s.message().c_str());
      const std::string diff = compare(got, want, nOut);
      QVERIFY2(diff.empty(), diff.c_str());
    }
    QVERIFY((*k)->keepsCopy(1));  // oneDNN ran it (the plain kernel keeps no copies)
  }

  /// Weights given up after the first run (keepsCopy) give the same outputs from the cached copies.
  void weightsGivenUp() {
    const Case c{"LSTM", "bidirectional", 6, 2, 5, 7, true, true};
    const Graph g = rnnGraph(c, false);
    auto k = makeCpuBackend()->prepare(g, 0, "cpu-serial");
    QVERIFY2(k.isOk(), k.message().c_str());
    auto ins = randomInputs(g, c.T, 7);
    std::vector<Tensor> first, second;
    QVERIFY((*k)->run(pointers(ins), first).isOk());
    for (size_t i : {1u, 2u, 3u}) {
      QVERIFY((*k)->keepsCopy(i));
      ins[i] = Tensor();
    }
    QVERIFY(!(*k)->keepsCopy(0));
    Status s = (*k)->run(pointers(ins), second);
    QVERIFY2(s.isOk(), s.message().c_str());
    const std::string diff = compare(second, first, 3);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  /// The kernel keeps its memory objects between runs and points them at each run's tensors: new
  /// inputs in new storage, new contents in the same storage, the caller's output tensors reused or new,
  /// initial states given then omitted (another primitive) then given again, and another sequence length
  /// in between; every run equals the plain kernel on the same inputs.
  void cachedBindingsFollowTheData() {
    for (const Case& c : {Case{"LSTM", "forward", 1, 1, 64, 64, true, true}, Case{"GRU", "bidirectional", 4, 2, 5, 6, true, true}}) {
      const size_t nOut = c.op == "LSTM" ? 3 : 2;
      const Graph g = rnnGraph(c, false), g2 = rnnGraph(Case{c.op, c.direction, c.T + 2, c.N, c.I, c.H, c.bias, c.initial}, false);
      auto k = makeCpuBackend()->prepare(g, 0, "cpu-serial");
      QVERIFY2(k.isOk(), k.message().c_str());
      auto ins = randomInputs(g, c.T, 11);
      std::vector<Tensor> got;  // reused by the runs below, as an executor does
      auto check = [&](const std::vector<Tensor>& in, const char* what) {
        std::vector<Tensor> want;
        Status s = (*k)->run(pointers(in), got);
        QVERIFY2(s.isOk(), qPrintable(QString("%1: %2").arg(what).arg(s.message().c_str())));
        QVERIFY(cpu::runPlainKernel(in[0].dim(0) == c.T ? g : g2, 0, pointers(in), want).isOk());
        const std::string diff = compare(got, want, nOut);
        QVERIFY2(diff.empty(), qPrintable(QString("%1: %2").arg(what).arg(diff.c_str())));
      };
      check(ins, "first run");
      ins[0].fillRandom(12, -0.6, 0.6);  // X: new contents, same storage
      ins[5].fillRandom(13, -0.6, 0.6);  // initial_h too
      check(ins, "new contents in place");
      auto fresh = randomInputs(g, c.T, 21);  // X and the states in new storage; the weights kept
      for (size_t i : {0u, 5u, 6u})
        if (i < ins.size() && !ins[i].empty()) ins[i] = std::move(fresh[i]);
      check(ins, "new storage");
      got.clear();
      check(ins, "new output tensors");
      auto noState = ins;
      noState[5] = Tensor();
      if (c.op == "LSTM") noState[6] = Tensor();
      check(noState, "initial states omitted");
      check(ins, "initial states again");
      auto longer = randomInputs(g2, c.T + 2, 31);
      for (size_t i : {1u, 2u, 3u}) longer[i] = ins[i];
      check(longer, "a longer sequence");
      check(ins, "the first length again");
    }
  }

  /// sequence_lens equal to T everywhere is the same as omitted.
  void sequenceLensFull() {
    const Case c{"GRU", "bidirectional", 5, 3, 4, 6, true, true};
    const Graph g = rnnGraph(c, true);
    auto cpu = makeCpuBackend();
    std::string why;
    QVERIFY2(cpu->supports(g, 0, &why), why.c_str());
    auto k = cpu->prepare(g, 0, "cpu-serial");
    QVERIFY2(k.isOk(), k.message().c_str());
    auto ins = randomInputs(g, c.T, 3);
    std::vector<Tensor> got, want;
    QVERIFY((*k)->run(pointers(ins), got).isOk());
    ins[4] = Tensor();
    QVERIFY(cpu::runPlainKernel(rnnGraph(c, false), 0, pointers(ins), want).isOk());
    const std::string diff = compare(got, want, 2);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  void sequenceLensShorter_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<QString>("direction");
    QTest::newRow("GRU bidirectional") << "GRU"
                                       << "bidirectional";
    QTest::newRow("LSTM reverse") << "LSTM"
                                  << "reverse";
    QTest::newRow("LSTM forward") << "LSTM"
                                  << "forward";
  }
  /// Shorter sequences (L = 5, 3, 0, 1 of T 5): batch entry n gives what a run on its first L[n] steps
  /// alone gives, Y is zero after them, and Y_h / Y_c are zero for L = 0 (as ONNX Runtime gives).
  void sequenceLensShorter() {
    QFETCH(QString, op);
    QFETCH(QString, direction);
    const Case c{op.toStdString(), direction.toStdString(), 5, 4, 3, 6, true, true};
    const int64_t D = c.direction == "bidirectional" ? 2 : 1, T = c.T, N = c.N, I = c.I, H = c.H;
    const Graph g = rnnGraph(c, true);
    auto k = makeCpuBackend()->prepare(g, 0, "cpu-serial");
    QVERIFY2(k.isOk(), k.message().c_str());
    auto ins = randomInputs(g, T, 21);
    const int32_t lens[4] = {5, 3, 0, 1};
    for (int64_t n = 0; n < N; ++n) ins[4].data<int32_t>()[n] = lens[n];
    std::vector<Tensor> got;
    Status s = (*k)->run(pointers(ins), got);
    QVERIFY2(s.isOk(), s.message().c_str());
    const size_t nOut = c.op == "LSTM" ? 3 : 2;
    QVERIFY(got.size() >= nOut);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t L = lens[n];
      std::vector<Tensor> want;
      if (L > 0) {  // entry n alone, its first L steps, no sequence_lens
        Case one = c;
        one.T = L;
        one.N = 1;
        std::vector<Tensor> sub = randomInputs(rnnGraph(one, false), L, 99);
        for (int64_t t = 0; t < L; ++t)
          std::memcpy(sub[0].data<float>() + t * I, ins[0].data<float>() + (t * N + n) * I, sizeof(float) * I);
        for (size_t i = 1; i < 4; ++i) sub[i] = ins[i];
        for (size_t i = 5; i < ins.size(); ++i)
          for (int64_t d = 0; d < D; ++d)
            std::memcpy(sub[i].data<float>() + d * H, ins[i].data<float>() + (d * N + n) * H, sizeof(float) * H);
        s = cpu::runPlainKernel(rnnGraph(one, false), 0, pointers(sub), want);
        QVERIFY2(s.isOk(), s.message().c_str());
      }
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d)
          for (int64_t h = 0; h < H; ++h) {
            const float y = got[0].data<float>()[((t * D + d) * N + n) * H + h];
            const float e = t < L ? want[0].data<float>()[(t * D + d) * H + h] : 0.0f;
            QVERIFY2(std::abs(y - e) <= 1e-6 + 1e-4 * std::abs(e),
                     qPrintable(QString("Y t %1 d %2 n %3: %4, expected %5").arg(t).arg(d).arg(n).arg(y).arg(e)));
          }
      for (size_t o = 1; o < nOut; ++o)
        for (int64_t d = 0; d < D; ++d)
          for (int64_t h = 0; h < H; ++h) {
            const float y = got[o].data<float>()[(d * N + n) * H + h];
            const float e = L > 0 ? want[o].data<float>()[d * H + h] : 0.0f;
            QVERIFY2(std::abs(y - e) <= 1e-6 + 1e-4 * std::abs(e),
                     qPrintable(QString("output %1 d %2 n %3: %4, expected %5").arg(o).arg(d).arg(n).arg(y).arg(e)));
          }
    }
    // Out of range: a one-line error.
    ins[4].data<int32_t>()[0] = 6;
    s = (*k)->run(pointers(ins), got);
    QVERIFY(!s.isOk());
    QVERIFY2(s.message().find("sequence_lens") != std::string::npos, s.message().c_str());
    QVERIFY(s.message().find('\n') == std::string::npos);
  }

  /// The default activations spelled out (as tf2onnx writes them) still run oneDNN: the result matches
  /// the plain kernel and the weights are kept (keepsCopy, which only the oneDNN kernel does).
  void defaultActivationsSpelledOut() {
    const Case c{"LSTM", "bidirectional", 4, 2, 3, 5, true, true};
    const std::vector<std::string> acts{"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Tanh"};
    const Graph g = rnnGraph(c, false, {{"activations", Attribute{acts}}});
    auto k = makeCpuBackend()->prepare(g, 0, "cpu-serial");
    QVERIFY2(k.isOk(), k.message().c_str());
    const auto ins = randomInputs(g, c.T, 13);
    std::vector<Tensor> got, want;
    QVERIFY((*k)->run(pointers(ins), got).isOk());
    QVERIFY((*k)->keepsCopy(1));
    QVERIFY(cpu::runPlainKernel(g, 0, pointers(ins), want).isOk());
    const std::string diff = compare(got, want, 3);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  /// What oneDNN's cells have no form for (clip here) still runs, through the plain kernel.
  void clipRunsPlainKernel() {
    const Case c{"LSTM", "forward", 4, 2, 3, 5, true, false};
    const Graph g = rnnGraph(c, false, {{"clip", Attribute{0.25}}});
    auto k = makeCpuBackend()->prepare(g, 0, "cpu-serial");
    QVERIFY2(k.isOk(), k.message().c_str());
    const auto ins = randomInputs(g, c.T, 11);
    std::vector<Tensor> got, want, unclipped;
    QVERIFY((*k)->run(pointers(ins), got).isOk());
    QVERIFY(!(*k)->keepsCopy(1));  // the plain kernel ran it
    QVERIFY(cpu::runPlainKernel(g, 0, pointers(ins), want).isOk());
    QVERIFY(compare(got, want, 3).empty());
    // The clip matters for these inputs: without it the cell state differs.
    QVERIFY(cpu::runPlainKernel(rnnGraph(c, false), 0, pointers(ins), unclipped).isOk());
    QVERIFY(!compare(unclipped, want, 3).empty());
  }

  /// Bad shapes are one-line errors naming the node.
  void badShapes() {
    const Case c{"LSTM", "bidirectional", 3, 2, 4, 5, true, true};
    const Graph g = rnnGraph(c, false);
    auto k = makeCpuBackend()->prepare(g, 0, "cpu-serial");
    QVERIFY2(k.isOk(), k.message().c_str());
    auto ins = randomInputs(g, c.T, 5);
    ins[1] = std::move(*Tensor::make(DType::Float32, {2, 20, 3}));  // I = 3 where X has 4
    std::vector<Tensor> out;
    Status s = (*k)->run(pointers(ins), out);
    QVERIFY(!s.isOk());
    QVERIFY2(s.message().find("node 'rnn'") != std::string::npos, s.message().c_str());
    QVERIFY(s.message().find('\n') == std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TestCpuRnn)
#include "tst_cpu_rnn.moc"
