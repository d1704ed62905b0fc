#include "backend/npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "support/files.h"

namespace partex {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
/// A header longer than this is refused (NumPy itself writes a few hundred bytes at most).
constexpr uint32_t kMaxHeaderLen = 1u << 20;

struct NpyDType {
  const char* code;  ///< descr without the byte-order character
  DType dtype;
};
constexpr NpyDType kDTypes[] = {
    {"f4", DType::Float32}, {"f8", DType::Float64}, {"f2", DType::Float16}, {"i4", DType::Int32},
    {"i8", DType::Int64},   {"i2", DType::Int16},   {"i1", DType::Int8},    {"u1", DType::UInt8},
    {"u2", DType::UInt16},  {"u4", DType::UInt32},  {"u8", DType::UInt64},  {"b1", DType::Bool},
};

/// What a header says.
struct NpyHeader {
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;
  size_t dataOffset = 0;  ///< Bytes before the data.
};

/// A tokenizer for the header's Python dict literal: {'descr': '<f4', 'fortran_order': False,
/// 'shape': (1, 3), }.
class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}
  void skipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool accept(char c) {
    skipSpace();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool peek(char c) {
    skipSpace();
    return i_ < s_.size() && s_[i_] == c;
  }
  bool string(std::string& out) {
    skipSpace();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return false;
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    if (end == std::string_view::npos) return false;
    out.assign(s_.substr(i_, end - i_));
    i_ = end + 1;
    return true;
  }
  bool word(std::string& out) {
    skipSpace();
    const size_t start = i_;
    while (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]))) ++i_;
    out.assign(s_.substr(start, i_ - start));
    return !out.empty();
  }
  bool integer(int64_t& out) {
    skipSpace();
    const size_t start = i_;
    int64_t v = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      const int d = s_[i_] - '0';
      if (v > (INT64_MAX - d) / 10) return false;
      v = v * 10 + d;
      ++i_;
    }
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 longs
    out = v;
    return i_ > start;
  }
  bool atEnd() {
    skipSpace();
    return i_ == s_.size();
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

/// Parses the 10- or 12-byte preamble and the header dict of `head` (which holds at least the whole
/// header once `need` is satisfied). Returns 0 with `need` set when more bytes are needed.
Status parseHeader(std::string_view head, const std::string& origin, NpyHeader& h, size_t& need) {
  need = 0;
  if (head.size() < 10 || std::memcmp(head.data(), kMagic, kMagicLen) != 0)
    return makeError(origin, ": not a .npy file (no \\x93NUMPY magic)");
  const auto major = static_cast<unsigned char>(head[6]), minor = static_cast<unsigned char>(head[7]);
  if (major < 1 || major > 3)
    return makeError(origin, ": unsupported .npy version ", std::to_string(major), ".", std::to_string(minor));
  const size_t pre = major == 1 ? 10 : 12;
  if (head.size() < pre) return makeError(origin, ": truncated .npy header");
  uint32_t len = 0;
  if (major == 1)
    len = static_cast<uint32_t>(static_cast<unsigned char>(head[8])) |
          (static_cast<uint32_t>(static_cast<unsigned char>(head[9])) << 8);
  else
    for (int b = 0; b < 4; ++b) len |= static_cast<uint32_t>(static_cast<unsigned char>(head[8 + b])) << (8 * b);
  if (len > kMaxHeaderLen) return makeError(origin, ": .npy header of ", std::to_string(len), " bytes is too long");
  if (head.size() < pre + len) {
    need = pre + len;
    return Status::ok();
  }
  h.dataOffset = pre + len;
  Lexer lx(head.substr(pre, len));
  auto bad = [&](const std::string& why) { return makeError(origin, ": bad .npy header (", why, ")"); };
  if (!lx.accept('{')) return bad("no dict");
  std::string descr;
  bool haveDescr = false, haveOrder = false, haveShape = false, fortran = false;
  while (!lx.accept('}')) {
    std::string key;
    if (!lx.string(key)) return bad("expected a key");
    if (!lx.accept(':')) return bad("expected ':' after '" + key + "'");
    if (key == "descr") {
      if (!lx.string(descr)) return bad("descr is not a string");
      haveDescr = true;
    } else if (key == "fortran_order") {
      std::string w;
      if (!lx.word(w) || (w != "True" && w != "False")) return bad("fortran_order is not True or False");
      fortran = w == "True";
      haveOrder = true;
    } else if (key == "shape") {
      if (!lx.accept('(')) return bad("shape is not a tuple");
      h.shape.clear();
      while (!lx.accept(')')) {
        int64_t d = 0;
        if (!lx.integer(d)) return bad("shape holds something other than non-negative integers");
        if (h.shape.size() >= 64) return bad("shape has more than 64 dimensions");
        h.shape.push_back(d);
        if (!lx.accept(',') && !lx.peek(')')) return bad("expected ',' or ')' in shape");
      }
      haveShape = true;
    } else {
      return bad("unknown key '" + key + "'");
    }
    if (!lx.accept(',') && !lx.peek('}')) return bad("expected ',' or '}'");
  }
  if (!lx.atEnd()) return bad("text after the dict");
  if (!haveDescr || !haveOrder || !haveShape) return bad("descr, fortran_order and shape are required");
  if (fortran) return makeError(origin, ": Fortran-order .npy data is not supported (save it in C order)");
  if (descr.size() < 2) return makeError(origin, ": unsupported .npy dtype '", descr, "'");
  const char order = descr[0];
  const std::string code = (order == '<' || order == '>' || order == '|' || order == '=') ? descr.substr(1) : descr;
  for (const auto& d : kDTypes)
    if (code == d.code) h.dtype = d.dtype;
  if (h.dtype == DType::Undefined)
    return makeError(origin, ": unsupported .npy dtype '", descr,
                     "' (float16/32/64, int8/16/32/64, uint8/16/32/64 and bool are)");
  if (order == '>' && tensorElementSize(h.dtype) > 1)
    return makeError(origin, ": big-endian .npy data ('", descr, "') is not supported");
  return Status::ok();
}

/// Checks the data size and makes the (zeroed) tensor the data is read into.
Result<Tensor> makeTarget(const NpyHeader& h, uint64_t dataBytes, const std::string& origin, int64_t maxBytes) {
  const int64_t n = shapeElements(h.shape);
  const int64_t es = tensorElementSize(h.dtype);
  if (n < 0 || n > maxBytes / es)
    return makeError(origin, ": .npy shape ", shapeString(h.shape), " of ", dtypeName(h.dtype), " is too large (over ",
                     std::to_string(maxBytes), " bytes)");
  const auto want = static_cast<uint64_t>(n * es);
  if (dataBytes != want)
    return makeError(origin, ": .npy data has ", std::to_string(dataBytes), " bytes, ", shapeString(h.shape), " ",
                     dtypeName(h.dtype), " needs ", std::to_string(want),
                     dataBytes < want ? " (truncated file)" : " (trailing bytes)");
  auto t = Tensor::make(h.dtype, h.shape, maxBytes);
  if (!t) return makeError(origin, ": ", t.message());
  return t;
}

void normaliseBools(Tensor& t) {
  if (t.dtype() != DType::Bool) return;
  auto* p = static_cast<uint8_t*>(t.raw());
  for (int64_t i = 0; i < t.numElements(); ++i) p[i] = p[i] != 0;
}

const char* npyCode(DType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.code;
  return nullptr;
}

}  // namespace

Result<Tensor> readNpyBytes(const std::string& bytes, const std::string& origin, int64_t maxBytes) {
  NpyHeader h;
  size_t need = 0;
  if (auto st = parseHeader(bytes, origin, h, need); !st) return Error{st.message()};
  if (need > 0) return makeError(origin, ": truncated .npy header");
  auto t = makeTarget(h, bytes.size() - h.dataOffset, origin, maxBytes);
  if (!t) return t;
  if (t->bytes() > 0) std::memcpy(t->raw(), bytes.data() + h.dataOffset, static_cast<size_t>(t->bytes()));
  normaliseBools(*t);
  return t;
}

Result<Tensor> readNpyFile(const std::string& path, int64_t maxBytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return makeError(path, ": no such file");
  if (!fs::is_regular_file(st)) return makeError(path, ": not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) return makeError(path, ": cannot read its size");
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open (", std::strerror(errno), ")");
  std::string head(static_cast<size_t>(std::min<uintmax_t>(size, 4096)), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  NpyHeader h;
  size_t need = 0;
  if (auto s = parseHeader(head, path, h, need); !s) return Error{s.message()};
  if (need > 0) {
    if (need > size) return makeError(path, ": truncated .npy header");
    head.resize(need);
    in.seekg(0);
    in.read(head.data(), static_cast<std::streamsize>(need));
    if (!in) return makeError(path, ": read error");
    if (auto s = parseHeader(head, path, h, need); !s) return Error{s.message()};
    if (need > 0) return makeError(path, ": truncated .npy header");
  }
  if (h.dataOffset > size) return makeError(path, ": truncated .npy header");
  auto t = makeTarget(h, size - h.dataOffset, path, maxBytes);
  if (!t) return t;
  if (t->bytes() > 0) {
    in.clear();
    in.seekg(static_cast<std::streamoff>(h.dataOffset));
    in.read(static_cast<char*>(t->raw()), static_cast<std::streamsize>(t->bytes()));
    if (!in || in.gcount() != static_cast<std::streamsize>(t->bytes())) return makeError(path, ": read error");
  }
  normaliseBools(*t);
  return t;
}

Result<std::string> npyBytes(const Tensor& t) {
  const char* code = npyCode(t.dtype());
  if (!code) return makeError("tensor ", t.describe(), ": NumPy has no dtype for ", dtypeName(t.dtype()));
  const std::string descr = std::string(tensorElementSize(t.dtype()) == 1 ? "|" : "<") + code;
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  if (t.shape().size() == 1) shape += ",";
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const bool v2 = header.size() + 1 + 10 > 65535;
  const size_t pre = v2 ? 12 : 10;
  header.append((64 - (pre + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out;
  out.reserve(pre + header.size() + static_cast<size_t>(t.bytes()));
  out.append(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const auto len = static_cast<uint32_t>(header.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += header;
  if (t.bytes() > 0 && t.raw()) out.append(static_cast<const char*>(t.raw()), static_cast<size_t>(t.bytes()));
  return out;
}

Status writeNpyFile(const std::string& path, const Tensor& t) {
  auto bytes = npyBytes(t);
  if (!bytes) return makeError(path, ": ", bytes.message());
  return writeFileAtomic(path, *bytes);
}

std::string npyFileName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return out + ".npy";
}

}  // namespace partex
