// NumPy .npy files (backend/npy.h): round trips of every dtype, the versions and header spellings NumPy
// writes, and hostile files (truncated, bad headers, huge shapes), each refused with one line naming
// the file and without allocating what the header claims. Also the TensorProto/.npy dispatch of
// readTensorFile (onnx/tensorio.h) that `execute --input` uses.

#include <QtTest>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "backend/npy.h"
#include "onnx/tensorio.h"
#include "testutil.h"

using namespace partex;

namespace {

/// A .npy file from parts: version, header text (padded by the caller or not) and data bytes.
std::string npy(int major, const std::string& header, const std::string& data, int minor = 0) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  const auto len = static_cast<uint32_t>(header.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major >= 2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

bool writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

class TestNpy : public QObject {
  Q_OBJECT

 private slots:
  void roundTrip_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QList<qlonglong>>("shape");
    for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::Int16, DType::Int32,
                    DType::Int64, DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64, DType::Bool}) {
      const QByteArray name = dtypeName(t);
      QTest::newRow(name + " [2,3,4]") << static_cast<int>(t) << QList<qlonglong>{2, 3, 4};
      QTest::newRow(name + " []") << static_cast<int>(t) << QList<qlonglong>{};
    }
    QTest::newRow("float32 [5]") << static_cast<int>(DType::Float32) << QList<qlonglong>{5};
    QTest::newRow("float32 [0,3]") << static_cast<int>(DType::Float32) << QList<qlonglong>{0, 3};
  }
  /// Write, read back (bytes and file): same dtype, shape and bits; the header is 64-byte aligned.
  void roundTrip() {
    QFETCH(int, dtype);
    QFETCH(QList<qlonglong>, shape);
    const std::vector<int64_t> dims(shape.begin(), shape.end());
    auto t = Tensor::make(static_cast<DType>(dtype), dims);
    QVERIFY2(t.isOk(), t.message().c_str());
    t->fillRandom(7, -3.0, 3.0);
    auto bytes = npyBytes(*t);
    QVERIFY2(bytes.isOk(), bytes.message().c_str());
    const size_t headerEnd = bytes->size() - static_cast<size_t>(t->bytes());
    QCOMPARE(headerEnd % 64, size_t{0});
    QCOMPARE(bytes->at(headerEnd - 1), '\n');
    auto back = readNpyBytes(*bytes, "t.npy");
    QVERIFY2(back.isOk(), back.message().c_str());
    QCOMPARE(back->dtype(), t->dtype());
    QCOMPARE(back->shape(), t->shape());
    QVERIFY(t->bytes() == 0 || std::memcmp(back->raw(), std::as_const(*t).raw(), static_cast<size_t>(t->bytes())) == 0);
    const std::string path = test::tempDir() + "/roundtrip.npy";
    QVERIFY(writeNpyFile(path, *t).isOk());
    auto file = readNpyFile(path);
    QVERIFY2(file.isOk(), file.message().c_str());
    QCOMPARE(file->shape(), t->shape());
    QVERIFY(t->bytes() == 0 || std::memcmp(file->raw(), std::as_const(*t).raw(), static_cast<size_t>(t->bytes())) == 0);
  }

  /// What NumPy and others write: versions 2.0 and 3.0, keys in any order, double quotes, '=' and '|'
  /// byte orders, Python 2 longs, a one-element tuple; bool bytes other than 0/1 read as true.
  void headerSpellings() {
    const std::string data = floats({1.5f, -2.0f});
    for (const std::string& h :
         {std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"),
          std::string("{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}"),
          std::string("{\"descr\": \"=f4\", \"fortran_order\": False, \"shape\": (2L,)}   \n"),
          std::string("{'descr':'<f4','fortran_order':False,'shape':(1, 2)}")}) {
      for (int major : {1, 2, 3}) {
        auto t = readNpyBytes(npy(major, h, data), "h.npy");
        QVERIFY2(t.isOk(), (t.message() + " for " + h).c_str());
        QCOMPARE(t->numElements(), int64_t{2});
        QCOMPARE(t->valueAsDouble(1), -2.0);
      }
    }
    auto b = readNpyBytes(npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\0\x07\x01", 3)),
                          "b.npy");
    QVERIFY2(b.isOk(), b.message().c_str());
    QCOMPARE(b->toInts(), (std::vector<int64_t>{0, 1, 1}));
    auto u = readNpyBytes(npy(1, "{'descr': '>u1', 'fortran_order': False, 'shape': (1,), }", "\x05"), "u.npy");
    QVERIFY2(u.isOk(), u.message().c_str());  // the byte order of a one-byte type does not matter
  }

  void badFiles_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");  // the message after "bad.npy: "
    const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    const std::string two = floats({1, 2});
    auto row = [](const char* name, const std::string& bytes, const char* expected) {
      QTest::newRow(name) << QByteArray::fromStdString(bytes) << QString(expected);
    };
    row("empty", "", "not a .npy file (no \\x93NUMPY magic)");
    row("not npy", "PK\x03\x04 a zip file, longer than ten bytes", "not a .npy file (no \\x93NUMPY magic)");
    row("version 4", npy(4, ok, two), "unsupported .npy version 4.0");
    row("version 0", npy(0, ok, two), "unsupported .npy version 0.0");
    row("truncated preamble v2", std::string("\x93NUMPY\x02\x00\x10\x00", 10), "truncated .npy header");
    row("header longer than file", npy(1, ok, two).substr(0, 30), "truncated .npy header");
    row("header too long", npy(2, ok, two).substr(0, 8) + std::string("\xff\xff\xff\x7f", 4), ".npy header of 2147483647 bytes is too long");
    row("truncated data", npy(1, ok, two).substr(0, 10 + ok.size() + 6),
        ".npy data has 6 bytes, [2] float32 needs 8 (truncated file)");
    row("trailing data", npy(1, ok, two + "xx"), ".npy data has 10 bytes, [2] float32 needs 8 (trailing bytes)");
    row("no dict", npy(1, "'descr': '<f4'", two), "bad .npy header (no dict)");
    row("missing shape", npy(1, "{'descr': '<f4', 'fortran_order': False}", two),
        "bad .npy header (descr, fortran_order and shape are required)");
    row("unknown key", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", two),
        "bad .npy header (unknown key 'x')");
    row("negative dim", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", two),
        "bad .npy header (shape holds something other than non-negative integers)");
    row("dim overflow", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", two),
        "bad .npy header (shape holds something other than non-negative integers)");
    row("unclosed string", npy(1, "{'descr: '<f4'", two), "bad .npy header (expected ':' after 'descr: ')");
    row("text after dict", npy(1, ok + " junk", two), "bad .npy header (text after the dict)");
    row("bad fortran", npy(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", two),
        "bad .npy header (fortran_order is not True or False)");
    row("fortran order", npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,)}", two),
        "Fortran-order .npy data is not supported (save it in C order)");
    row("big-endian", npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}", two),
        "big-endian .npy data ('>f4') is not supported");
    row("complex", npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,)}", two),
        "unsupported .npy dtype '<c8' (float16/32/64, int8/16/32/64, uint8/16/32/64 and bool are)");
    row("object", npy(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,)}", two),
        "unsupported .npy dtype '|O' (float16/32/64, int8/16/32/64, uint8/16/32/64 and bool are)");
    row("huge shape", npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776)}", two),
        ".npy shape [1099511627776,1099511627776] of float32 is too large (over 4294967296 bytes)");
    row("large shape", npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (65536, 65536)}", two),
        ".npy shape [65536,65536] of float64 is too large (over 4294967296 bytes)");
  }
  /// Each refused with one line naming the file, from bytes and from a file.
  void badFiles() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    auto t = readNpyBytes(bytes.toStdString(), "bad.npy");
    QVERIFY(!t.isOk());
    QCOMPARE(QString::fromStdString(t.message()), "bad.npy: " + expected);
    const std::string path = test::tempDir() + "/bad.npy";
    QVERIFY(writeBytes(path, bytes.toStdString()));
    auto f = readNpyFile(path);
    QVERIFY(!f.isOk());
    QCOMPARE(QString::fromStdString(f.message()), QString::fromStdString(path) + ": " + expected);
  }

  /// A shape of 65 dimensions (each 1) is refused; 64 are fine.
  void rankLimit() {
    auto shapeOf = [](int rank) {
      std::string s = "(";
      for (int i = 0; i < rank; ++i) s += "1, ";
      return s + ")";
    };
    auto ok = readNpyBytes(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': " + shapeOf(64) + "}", floats({1})),
                           "r.npy");
    QVERIFY2(ok.isOk(), ok.message().c_str());
    QCOMPARE(ok->rank(), int64_t{64});
    auto bad = readNpyBytes(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': " + shapeOf(65) + "}", floats({1})),
                            "r.npy");
    QVERIFY(!bad.isOk());
    QCOMPARE(bad.message(), std::string("r.npy: bad .npy header (shape has more than 64 dimensions)"));
  }

  /// A header beyond the first 4 KiB of a file (a second read), and files that are not files.
  void fileCases() {
    const std::string dir = test::tempDir();
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    header.append(6000, ' ');
    QVERIFY(writeBytes(dir + "/long.npy", npy(2, header + "\n", floats({3, 4}))));
    auto t = readNpyFile(dir + "/long.npy");
    QVERIFY2(t.isOk(), t.message().c_str());
    QCOMPARE(t->valueAsDouble(1), 4.0);
    auto missing = readNpyFile(dir + "/nothere.npy");
    QVERIFY(!missing.isOk());
    QCOMPARE(missing.message(), dir + "/nothere.npy: no such file");
    auto folder = readNpyFile(dir);
    QVERIFY(!folder.isOk());
    QCOMPARE(folder.message(), dir + ": not a regular file");
  }

  /// Writing: atomic (no temporary file left), replaces an existing file, fails in a missing folder;
  /// bfloat16 has no NumPy dtype.
  void writing() {
    namespace fs = std::filesystem;
    const std::string dir = test::tempDir() + "/write";
    fs::create_directories(dir);
    auto t = Tensor::make(DType::Int64, {3});
    QVERIFY(t.isOk());
    t->fill(9);
    QVERIFY(writeBytes(dir + "/out.npy", "old contents"));
    QVERIFY(writeNpyFile(dir + "/out.npy", *t).isOk());
    auto back = readNpyFile(dir + "/out.npy");
    QVERIFY2(back.isOk(), back.message().c_str());
    QCOMPARE(back->toInts(), (std::vector<int64_t>{9, 9, 9}));
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
    QCOMPARE(files, 1);
    QVERIFY(!writeNpyFile(dir + "/no/such/folder/out.npy", *t).isOk());
    auto bf = Tensor::make(DType::BFloat16, {1});
    QVERIFY(bf.isOk());
    auto bad = writeNpyFile(dir + "/bf.npy", *bf);
    QVERIFY(!bad.isOk());
    QVERIFY2(bad.message().find("NumPy has no dtype for bfloat16") != std::string::npos, bad.message().c_str());
    QVERIFY(!fs::exists(dir + "/bf.npy"));
  }

  /// Output names become file names as scripts/ort/run.py makes them.
  void fileNames() {
    QCOMPARE(npyFileName("Plus214_Output_0"), std::string("Plus214_Output_0.npy"));
    QCOMPARE(npyFileName("a.b-c_d"), std::string("a.b-c_d.npy"));
    QCOMPARE(npyFileName("scores:0/x y"), std::string("scores_0_x_y.npy"));
    QCOMPARE(npyFileName("../up"), std::string(".._up.npy"));
    QCOMPARE(npyFileName("\xc3\xa9t\xc3\xa9"), std::string("__t__.npy"));
  }

  /// readTensorFile takes .npy and TensorProto .pb by their content.
  void tensorFiles() {
    const std::string dir = test::tempDir();
    auto t = Tensor::make(DType::Float32, {2, 2});
    QVERIFY(t.isOk());
    t->fill(0.5);
    QVERIFY(writeNpyFile(dir + "/in.npy", *t).isOk());
    std::filesystem::copy_file(dir + "/in.npy", dir + "/in.data", std::filesystem::copy_options::overwrite_existing);
    auto a = readTensorFile(dir + "/in.data");  // by content, not by suffix
    QVERIFY2(a.isOk(), a.message().c_str());
    QCOMPARE(a->shape(), (std::vector<int64_t>{2, 2}));
    QVERIFY(writeBytes(dir + "/junk.bin", std::string("\x08\x01\xff\xff\xff", 5)));
    auto junk = readTensorFile(dir + "/junk.bin");
    QVERIFY(!junk.isOk());
    QVERIFY2(junk.message().rfind(dir + "/junk.bin: ", 0) == 0, junk.message().c_str());
    auto none = readTensorFile(dir + "/none.npy");
    QVERIFY(!none.isOk());
    QCOMPARE(none.message(), dir + "/none.npy: no such file");
    const std::string pb = "/usr/share/libonnx-testdata/data/node/test_abs/test_data_set_0/input_0.pb";
    if (!std::filesystem::exists(pb)) QSKIP("libonnx-testdata is absent: the .pb case is skipped");
    std::string name;
    auto p = readTensorFile(pb, &name);
    QVERIFY2(p.isOk(), p.message().c_str());
    QCOMPARE(p->dtype(), DType::Float32);
    QCOMPARE(p->shape(), (std::vector<int64_t>{3, 4, 5}));
    QCOMPARE(name, std::string("x"));
  }
};

QTEST_GUILESS_MAIN(TestNpy)
#include "tst_npy.moc"
