// GGUF header reader. Follows llama.cpp's ggml/src/gguf.cpp (gguf_init_from_file_impl): the same field
// order, version rule (1 refused, 2 and 3 read), alignment key, and checks that a header cannot claim
// more than the file holds. It reads from a buffered stream and stops at the end of the tensor table: the
// weights are never read, so a 60 GB file opens in the time its header takes.
#include "gguf/gguf.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "support/strings.h"

namespace partex {

namespace {

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

/// A bounded little-endian reader over a file or a byte string. Every read checks the bytes remain.
class Reader {
 public:
  Reader(std::istream* in, const std::string* bytes, uint64_t size) : in_(in), bytes_(bytes), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  bool read(void* dst, uint64_t n) {
    if (n > remaining()) return false;
    if (bytes_) {
      std::memcpy(dst, bytes_->data() + pos_, static_cast<size_t>(n));
    } else {
      in_->read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
      if (static_cast<uint64_t>(in_->gcount()) != n) return false;
    }
    pos_ += n;
    return true;
  }
  bool skip(uint64_t n) {
    if (n > remaining()) return false;
    if (!bytes_) {
      // Short skips (a vocabulary's strings, one by one) read through the stream's buffer; a seek
      // each would drop it.
      if (n <= sizeof(scratch_)) {
        in_->read(scratch_, static_cast<std::streamsize>(n));
        if (static_cast<uint64_t>(in_->gcount()) != n) return false;
      } else {
        in_->seekg(static_cast<std::streamoff>(n), std::ios::cur);
        if (!*in_) return false;
      }
    }
    pos_ += n;
    return true;
  }
  template <typename T>
  bool get(T& v) {
    unsigned char b[sizeof(T)];
    if (!read(b, sizeof(T))) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < sizeof(T); ++i) x |= static_cast<uint64_t>(b[i]) << (8 * i);
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (sizeof(T) == 4) {
        const auto u = static_cast<uint32_t>(x);
        std::memcpy(&v, &u, 4);
      } else {
        std::memcpy(&v, &x, 8);
      }
    } else {
      v = static_cast<T>(x);
    }
    return true;
  }

 private:
  std::istream* in_;
  const std::string* bytes_;
  uint64_t size_;
  uint64_t pos_ = 0;
  char scratch_[4096];
};

const char* typeName(GgufType t) {
  switch (t) {
    case GgufType::UInt8: return "uint8";
    case GgufType::Int8: return "int8";
    case GgufType::UInt16: return "uint16";
    case GgufType::Int16: return "int16";
    case GgufType::UInt32: return "uint32";
    case GgufType::Int32: return "int32";
    case GgufType::Float32: return "float32";
    case GgufType::Bool: return "bool";
    case GgufType::String: return "string";
    case GgufType::Array: return "array";
    case GgufType::UInt64: return "uint64";
    case GgufType::Int64: return "int64";
    case GgufType::Float64: return "float64";
  }
  return "?";
}

/// Bytes of one scalar of type t; 0 for string and array.
uint64_t scalarSize(GgufType t) {
  switch (t) {
    case GgufType::UInt8: case GgufType::Int8: case GgufType::Bool: return 1;
    case GgufType::UInt16: case GgufType::Int16: return 2;
    case GgufType::UInt32: case GgufType::Int32: case GgufType::Float32: return 4;
    case GgufType::UInt64: case GgufType::Int64: case GgufType::Float64: return 8;
    default: return 0;
  }
}

bool validType(uint32_t t) {
  return t <= static_cast<uint32_t>(GgufType::Float64);
}

class Parser {
 public:
  Parser(Reader& r, std::string origin) : r_(r), origin_(std::move(origin)) {}

  Result<GgufFile> run(uint64_t fileSize) {
    GgufFile f;
    f.fileSize = fileSize;
    char magic[4];
    if (!r_.read(magic, 4)) return fail("not a GGUF file (shorter than its 4-byte magic)");
    if (std::memcmp(magic, "GGUF", 4) != 0) return fail("not a GGUF file (wrong magic)");
    if (!r_.get(f.version)) return truncated("the version");
    if (f.version == 1) return fail("GGUF version 1 is not supported (32-bit counts; llama.cpp refuses it too)");
    if (f.version != 2 && f.version != 3) {
      if ((f.version & 0xFFFF) == 0 && (f.version >> 16) != 0)
        return fail("GGUF version " + std::to_string(f.version) + ": a big-endian file, not supported");
      return fail("unsupported GGUF version " + std::to_string(f.version) + " (2 and 3 are read)");
    }
    uint64_t nTensors = 0, nKv = 0;
    if (!r_.get(nTensors)) return truncated("the tensor count");
    if (!r_.get(nKv)) return truncated("the metadata count");
    // A tensor info takes at least 8 (name length) + 4 + 4 + 8 bytes, a metadata entry 8 + 4 + 1.
    if (nTensors > r_.remaining() / 24)
      return fail("tensor count " + std::to_string(nTensors) + " is more than the file's " +
                  std::to_string(fileSize) + " bytes can hold");
    if (nKv > r_.remaining() / 13)
      return fail("metadata count " + std::to_string(nKv) + " is more than the file's " + std::to_string(fileSize) +
                  " bytes can hold");

    for (uint64_t i = 0; i < nKv; ++i) {
      std::string key;
      if (!readString(key, "metadata key " + std::to_string(i))) return Error{err_};
      uint32_t type = 0;
      if (!r_.get(type)) return truncated("the type of metadata '" + key + "'");
      if (!validType(type)) return fail("metadata '" + key + "' has unknown type " + std::to_string(type));
      GgufValue v;
      v.type = static_cast<GgufType>(type);
      if (!readValue(v, key)) return Error{err_};
      if (!f.metadata.emplace(key, std::move(v)).second) return fail("duplicate metadata key '" + key + "'");
    }
    if (const GgufValue* a = f.find("general.alignment")) {
      int64_t al = 0;
      if (a->type != GgufType::UInt32 || !a->asInt(al) || al <= 0 || (al & (al - 1)) != 0)
        return fail("general.alignment must be a uint32 power of two");
      f.alignment = static_cast<uint64_t>(al);
    }

    std::set<std::string> names;
    f.tensors.reserve(static_cast<size_t>(nTensors));
    for (uint64_t i = 0; i < nTensors; ++i) {
      GgufTensor t;
      if (!readString(t.name, "tensor " + std::to_string(i) + "'s name")) return Error{err_};
      if (!names.insert(t.name).second) return fail("duplicate tensor '" + t.name + "'");
      uint32_t nDims = 0;
      if (!r_.get(nDims)) return truncated("tensor '" + t.name + "'");
      if (nDims == 0 || nDims > kMaxDims)
        return fail("tensor '" + t.name + "' has " + std::to_string(nDims) + " dimensions (1 to 4)");
      int64_t total = 1;
      for (uint32_t d = 0; d < nDims; ++d) {
        int64_t ne = 0;
        if (!r_.get(ne)) return truncated("tensor '" + t.name + "'");
        if (ne < 0 || (ne > 0 && total > std::numeric_limits<int64_t>::max() / ne))
          return fail("tensor '" + t.name + "' has an invalid dimension " + std::to_string(ne));
        total *= ne;
        t.ne.push_back(ne);
      }
      if (!r_.get(t.ggmlType)) return truncated("tensor '" + t.name + "'");
      const QuantInfo* q = quantInfoById(t.ggmlType);
      if (!q) return fail("tensor '" + t.name + "' has unknown ggml type " + std::to_string(t.ggmlType));
      t.quant = q->type;
      if (t.ne[0] % q->blockElements != 0)
        return fail("tensor '" + t.name + "': its row of " + std::to_string(t.ne[0]) + " elements is not a multiple of " +
                    q->name + "'s block of " + std::to_string(q->blockElements));
      if (!r_.get(t.offset)) return truncated("tensor '" + t.name + "'");
      if (t.offset % f.alignment != 0)
        return fail("tensor '" + t.name + "' data offset " + std::to_string(t.offset) + " is not aligned to " +
                    std::to_string(f.alignment));
      f.tensors.push_back(std::move(t));
    }
    const uint64_t end = r_.pos();
    f.dataOffset = (end + f.alignment - 1) / f.alignment * f.alignment;
    for (const auto& t : f.tensors) {
      const auto bytes = static_cast<uint64_t>(t.bytes());
      if (t.offset > fileSize || f.dataOffset > fileSize - t.offset || bytes > fileSize - f.dataOffset - t.offset)
        return fail("tensor '" + t.name + "' data (" + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(f.dataOffset + t.offset) + ") lies past the end of the file (" +
                    std::to_string(fileSize) + " bytes)");
    }
    return f;
  }

 private:
  Error fail(const std::string& why) {
    err_ = oneLine(origin_ + ": " + why);  // keys and tensor names are arbitrary bytes
    return Error{err_};
  }
  Error truncated(const std::string& what) { return fail("truncated header (ends in " + what + ")"); }

  bool readString(std::string& s, const std::string& what) {
    uint64_t n = 0;
    if (!r_.get(n)) return truncated(what), false;
    if (n > r_.remaining())
      return fail(what + ": string length " + std::to_string(n) + " runs past the end of the file"), false;
    s.resize(static_cast<size_t>(n));
    if (n && !r_.read(s.data(), n)) return truncated(what), false;
    return true;
  }

  bool readScalar(GgufType t, GgufValue& v, const std::string& key) {
    auto bad = [&] { return truncated("metadata '" + key + "'"), false; };
    switch (t) {
      case GgufType::UInt8: { uint8_t x; if (!r_.get(x)) return bad(); v.u = x; v.i = x; v.f = x; break; }
      case GgufType::Int8: { int8_t x; if (!r_.get(x)) return bad(); v.i = x; v.f = x; break; }
      case GgufType::UInt16: { uint16_t x; if (!r_.get(x)) return bad(); v.u = x; v.i = x; v.f = x; break; }
      case GgufType::Int16: { int16_t x; if (!r_.get(x)) return bad(); v.i = x; v.f = x; break; }
      case GgufType::UInt32: { uint32_t x; if (!r_.get(x)) return bad(); v.u = x; v.i = x; v.f = x; break; }
      case GgufType::Int32: { int32_t x; if (!r_.get(x)) return bad(); v.i = x; v.f = x; break; }
      case GgufType::UInt64: { uint64_t x; if (!r_.get(x)) return bad(); v.u = x; v.i = static_cast<int64_t>(std::min<uint64_t>(x, INT64_MAX)); v.f = static_cast<double>(x); break; }
      case GgufType::Int64: { int64_t x; if (!r_.get(x)) return bad(); v.i = x; v.f = static_cast<double>(x); break; }
      case GgufType::Float32: { float x; if (!r_.get(x)) return bad(); v.f = x; break; }
      case GgufType::Float64: { double x; if (!r_.get(x)) return bad(); v.f = x; break; }
      case GgufType::Bool: {
        uint8_t x;
        if (!r_.get(x)) return bad();
        if (x > 1) return fail("metadata '" + key + "': bool value " + std::to_string(x) + " is not 0 or 1"), false;
        v.i = x; v.u = x; v.f = x;
        break;
      }
      case GgufType::String:
        return readString(v.str, "metadata '" + key + "'");
      case GgufType::Array:
        return fail("metadata '" + key + "': nested arrays are not allowed"), false;
    }
    return true;
  }

  bool readValue(GgufValue& v, const std::string& key) {
    if (v.type != GgufType::Array) return readScalar(v.type, v, key);
    uint32_t et = 0;
    if (!r_.get(et)) return truncated("metadata '" + key + "'"), false;
    if (!validType(et)) return fail("metadata '" + key + "': array of unknown type " + std::to_string(et)), false;
    v.arrayType = static_cast<GgufType>(et);
    if (v.arrayType == GgufType::Array) return fail("metadata '" + key + "': nested arrays are not allowed"), false;
    if (!r_.get(v.arrayCount)) return truncated("metadata '" + key + "'"), false;
    const uint64_t each = v.arrayType == GgufType::String ? 8 : scalarSize(v.arrayType);
    if (v.arrayCount > r_.remaining() / each)
      return fail("metadata '" + key + "': array of " + std::to_string(v.arrayCount) + " " + typeName(v.arrayType) +
                  " runs past the end of the file"),
             false;
    if (v.arrayType == GgufType::String) {
      for (uint64_t i = 0; i < v.arrayCount; ++i) {
        uint64_t n = 0;
        if (!r_.get(n)) return truncated("metadata '" + key + "'"), false;
        if (n > r_.remaining() || !r_.skip(n))
          return fail("metadata '" + key + "': string " + std::to_string(i) + " of length " + std::to_string(n) +
                      " runs past the end of the file"),
                 false;
      }
      return true;
    }
    if (v.arrayCount > GgufValue::kMaxKeptArray) return r_.skip(v.arrayCount * each) || (truncated(key), false);
    for (uint64_t i = 0; i < v.arrayCount; ++i) {
      GgufValue e;
      if (!readScalar(v.arrayType, e, key)) return false;
      v.arrayNumbers.push_back(v.arrayType == GgufType::Float32 || v.arrayType == GgufType::Float64
                                   ? e.f
                                   : static_cast<double>(e.i));
    }
    return true;
  }

  Reader& r_;
  std::string origin_;
  std::string err_;
};

}  // namespace

bool GgufValue::asInt(int64_t& out) const {
  switch (type) {
    case GgufType::Float32: case GgufType::Float64: case GgufType::String: return false;
    case GgufType::Array:
      if (arrayNumbers.empty() || arrayType == GgufType::Float32 || arrayType == GgufType::Float64) return false;
      out = static_cast<int64_t>(*std::max_element(arrayNumbers.begin(), arrayNumbers.end()));
      return true;
    default: out = i; return true;
  }
}

int64_t GgufTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

int64_t GgufTensor::bytes() const {
  return quantBytes(quant, elements());
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string GgufFile::architecture() const {
  const GgufValue* v = find("general.architecture");
  return v && v->type == GgufType::String ? v->str : std::string{};
}

Result<GgufFile> readGgufHeader(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return makeError(path, ": cannot open (", ec.message(), ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open");
  std::vector<char> buf(1 << 20);
  in.rdbuf()->pubsetbuf(buf.data(), static_cast<std::streamsize>(buf.size()));
  Reader r(&in, nullptr, static_cast<uint64_t>(size));
  Parser p(r, path);
  auto f = p.run(static_cast<uint64_t>(size));
  if (f) f->path = path;
  return f;
}

Result<GgufFile> parseGgufHeader(const std::string& bytes, const std::string& origin) {
  Reader r(nullptr, &bytes, bytes.size());
  Parser p(r, origin);
  auto f = p.run(bytes.size());
  if (f) f->path = origin;
  return f;
}

bool isGgufRef(const std::string& ref) {
  const std::string path = ref.substr(0, ref.find('?'));
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
}

Result<std::pair<std::string, GgufOptions>> parseGgufRef(const std::string& ref) {
  const size_t q = ref.find('?');
  std::pair<std::string, GgufOptions> out{ref.substr(0, q), {}};
  if (q == std::string::npos) return out;
  for (const auto& kv : split(ref.substr(q + 1), '&')) {
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    const std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
    auto number = [&](int64_t& dst, int64_t lo, int64_t hi) -> Status {
      int64_t x = 0;
      if (!parseInt64(v, x) || x < lo || x > hi)
        return makeError(ref, ": ", k, "=", v, " is not a number in [", std::to_string(lo), ", ", std::to_string(hi), "]");
      dst = x;
      return Status::ok();
    };
    if (k == "phase") {
      if (v != "prefill" && v != "decode") return makeError(ref, ": phase=", v, " is not prefill or decode");
      out.second.phase = v;
    } else if (k == "seq" || k == "tokens") {
      if (auto st = number(out.second.seq, 1, 1 << 20); !st) return Error{st.message()};
    } else if (k == "batch") {
      if (auto st = number(out.second.batch, 1, 65536); !st) return Error{st.message()};
    } else {
      return makeError(ref, ": unknown option '", k, "' (phase, seq, batch)");
    }
  }
  return out;
}

}  // namespace partex
