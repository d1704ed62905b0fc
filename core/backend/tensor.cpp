#include "backend/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

namespace partex {

bool tensorDTypeSupported(DType t) {
  return tensorElementSize(t) > 0;
}

int64_t tensorElementSize(DType t) {
  switch (t) {
    case DType::Float32:
    case DType::Int32:
    case DType::UInt32:
      return 4;
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64:
      return 8;
    case DType::Int16:
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      return 1;
    default:
      return 0;
  }
}

int64_t shapeElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > (int64_t{1} << 62) / d) return -1;
    n *= d;
  }
  return n;
}

std::string shapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

void Tensor::AlignedFree::operator()(std::byte* p) const noexcept {
  if (owned) std::free(p);
}

bool Tensor::allocate(int64_t bytes) {
  placed_ = false;
  const size_t alloc = (static_cast<size_t>(bytes) + kAlignment - 1) / kAlignment * kAlignment;
  data_ = std::unique_ptr<std::byte[], AlignedFree>(static_cast<std::byte*>(std::aligned_alloc(kAlignment, alloc)),
                                                    AlignedFree{true});
  capacity_ = data_ ? bytes : 0;
  return data_ != nullptr;
}

Status Tensor::borrow(DType dtype, std::vector<int64_t> shape, void* data, int64_t bytes) {
  const int64_t es = tensorElementSize(dtype);
  const int64_t n = shapeElements(shape);
  if (es == 0 || n < 0 || !data || n * es > bytes) return makeError("tensor: cannot view ", shapeString(shape), " in ", std::to_string(bytes), " bytes");
  *this = Tensor();
  data_ = std::unique_ptr<std::byte[], AlignedFree>(static_cast<std::byte*>(data), AlignedFree{false});
  capacity_ = bytes;
  dtype_ = dtype;
  shape_ = std::move(shape);
  numel_ = n;
  return Status::ok();
}

Status Tensor::place(DType dtype, std::vector<int64_t> shape, void* data, int64_t bytes) {
  if (auto s = borrow(dtype, std::move(shape), data, bytes); !s) return s;
  placed_ = true;
  return Status::ok();
}

Tensor::Tensor(const Tensor& o) : dtype_(o.dtype_), shape_(o.shape_), numel_(o.numel_), layout_(o.layout_) {
  if (o.shared_) {  // shared immutable storage: the copy shares it too (copy on write)
    shared_ = o.shared_;
    sharedBytes_ = o.sharedBytes_;
    return;
  }
  const int64_t n = o.storageBytes();
  if (n > 0 && o.data_) {
    if (allocate(n)) {
      std::memcpy(data_.get(), o.data_.get(), static_cast<size_t>(n));
    } else {  // out of memory: an empty tensor rather than a crash
      *this = Tensor();
    }
  }
}

Tensor& Tensor::operator=(const Tensor& o) {
  if (this != &o) {
    Tensor t(o);
    *this = std::move(t);
  }
  return *this;
}

Result<Tensor> Tensor::make(DType dtype, std::vector<int64_t> shape, int64_t maxBytes) {
  Tensor t;
  Status s = t.ensure(dtype, shape, maxBytes);
  if (!s) return Error{s.message()};
  if (t.bytes() > 0) std::memset(t.raw(), 0, static_cast<size_t>(t.bytes()));
  return t;
}

Result<Tensor> Tensor::alias(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const TensorData> data,
                             int64_t maxBytes) {
  const int64_t es = tensorElementSize(dtype);
  if (es == 0) return makeError("tensor: unsupported dtype ", dtypeName(dtype));
  const int64_t n = shapeElements(shape);
  if (n < 0) return makeError("tensor: invalid shape ", shapeString(shape));
  if (n > maxBytes / es)
    return makeError("tensor: ", shapeString(shape), " ", dtypeName(dtype), " exceeds ", std::to_string(maxBytes),
                     " bytes");
  if (!data) return makeError("tensor: no data to alias");
  if (data->size() != static_cast<size_t>(n * es))
    return makeError("tensor: ", shapeString(shape), " ", dtypeName(dtype), " needs ", std::to_string(n * es),
                     " bytes, the data has ", std::to_string(data->size()));
  const std::byte* bytes = data->data();
  if (!bytes && n > 0) return makeError("tensor: out of memory expanding ", std::to_string(n * es), " bytes");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = n;
  t.shared_ = std::move(data);
  t.sharedBytes_ = bytes;
  return t;
}

void Tensor::detach() {
  const std::byte* src = sharedBytes_;
  const int64_t n = bytes();
  shared_.reset();
  sharedBytes_ = nullptr;
  capacity_ = 0;
  data_.reset();
  placed_ = false;
  if (n <= 0 || !src) return;
  if (!allocate(n)) return;
  std::memcpy(data_.get(), src, static_cast<size_t>(n));
}

Status Tensor::ensure(DType dtype, const std::vector<int64_t>& shape, int64_t maxBytes) {
  const int64_t es = tensorElementSize(dtype);
  if (es == 0) return makeError("tensor: unsupported dtype ", dtypeName(dtype));
  const int64_t n = shapeElements(shape);
  if (n < 0) return makeError("tensor: invalid shape ", shapeString(shape));
  if (n > maxBytes / es)
    return makeError("tensor: ", shapeString(shape), " ", dtypeName(dtype), " exceeds ", std::to_string(maxBytes),
                     " bytes");
  const int64_t bytes = n * es;
  if (shared_) {  // never write into shared storage
    shared_.reset();
    sharedBytes_ = nullptr;
    capacity_ = 0;
  }
  // Storage at least as large is kept (an executor shares one buffer between tensors of different sizes).
  if (bytes > capacity_ || (!data_ && bytes > 0)) {
    data_.reset();
    capacity_ = 0;
    if (bytes > 0) {
      if (!allocate(bytes)) return makeError("tensor: out of memory allocating ", std::to_string(bytes), " bytes");
      std::memset(data_.get(), 0, (static_cast<size_t>(bytes) + kAlignment - 1) / kAlignment * kAlignment);
    }
  }
  dtype_ = dtype;
  shape_ = shape;
  numel_ = n;
  layout_ = Layout::Plain;
  return Status::ok();
}

Status Tensor::ensureNhwc(const std::vector<int64_t>& shape, int64_t maxBytes) {
  if (shape.size() < 3 || shape.size() > 5)
    return makeError("tensor: no channels-last layout for rank ", std::to_string(shape.size()));
  // A borrowed view is a plain slice of another tensor: channels-last data goes elsewhere. A placed one
  // is the value's own region: any layout.
  if (borrowed() && !placed_) *this = Tensor();
  if (auto s = ensure(DType::Float32, shape, maxBytes); !s) return s;
  layout_ = Layout::Nhwc;
  return Status::ok();
}

Status Tensor::copyFrom(const Tensor& o) {
  if (this == &o) return Status::ok();
  if (o.empty()) {
    *this = Tensor();
    return Status::ok();
  }
  auto s = o.nhwc() ? ensureNhwc(o.shape_) : ensure(o.dtype_, o.shape_);
  if (!s) return s;
  if (o.bytes() > 0) std::memcpy(raw(), o.raw(), static_cast<size_t>(o.bytes()));
  return Status::ok();
}

Status Tensor::toPlain(Tensor& out) const {
  if (auto s = out.ensure(dtype_, shape_); !s) return s;
  writePlain(out.raw());
  return Status::ok();
}

void Tensor::writePlain(void* dstRaw) const {
  if (layout_ == Layout::Plain) {
    if (bytes() > 0) std::memcpy(dstRaw, raw(), static_cast<size_t>(bytes()));
    return;
  }
  const int64_t N = shape_[0], C = shape_[1];
  int64_t S = 1;
  for (size_t i = 2; i < shape_.size(); ++i) S *= shape_[i];
  const float* src = static_cast<const float*>(raw());
  float* dst = static_cast<float*>(dstRaw);
  // Transposes [S][C] to [C][S] per image, in tiles that stay in the cache.
  constexpr int64_t kTile = 32;
  for (int64_t n = 0; n < N; ++n) {
    const float* a = src + n * S * C;
    float* b = dst + n * C * S;
    for (int64_t s0 = 0; s0 < S; s0 += kTile)
      for (int64_t c0 = 0; c0 < C; c0 += kTile) {
        const int64_t s1 = std::min(S, s0 + kTile), c1 = std::min(C, c0 + kTile);
        for (int64_t c = c0; c < c1; ++c)
          for (int64_t i = s0; i < s1; ++i) b[c * S + i] = a[i * C + c];
      }
  }
}

Status Tensor::reshape(std::vector<int64_t> shape) {
  if (layout_ != Layout::Plain) return makeError("tensor: cannot reshape a channels-last tensor");
  if (shapeElements(shape) != numel_)
    return makeError("tensor: cannot reshape ", shapeString(shape_), " to ", shapeString(shape));
  shape_ = std::move(shape);
  return Status::ok();
}

namespace {
template <class F>
auto visitNumeric(DType t, const void* p, int64_t i, F&& f) {
  switch (t) {
    case DType::Float32:
      return f(static_cast<const float*>(p)[i]);
    case DType::Float64:
      return f(static_cast<const double*>(p)[i]);
    case DType::Int64:
      return f(static_cast<const int64_t*>(p)[i]);
    case DType::Int32:
      return f(static_cast<const int32_t*>(p)[i]);
    case DType::Int16:
      return f(static_cast<const int16_t*>(p)[i]);
    case DType::Int8:
      return f(static_cast<const int8_t*>(p)[i]);
    case DType::UInt8:
    case DType::Bool:
      return f(static_cast<const uint8_t*>(p)[i]);
    case DType::UInt16:
      return f(static_cast<const uint16_t*>(p)[i]);
    case DType::UInt32:
      return f(static_cast<const uint32_t*>(p)[i]);
    case DType::UInt64:
      return f(static_cast<const uint64_t*>(p)[i]);
    default:
      return f(0);
  }
}

template <class T>
void store(void* p, int64_t i, double v) {
  static_cast<T*>(p)[i] = static_cast<T>(v);
}

void storeAs(DType t, void* p, int64_t i, double v) {
  switch (t) {
    case DType::Float32:
      store<float>(p, i, v);
      break;
    case DType::Float64:
      store<double>(p, i, v);
      break;
    case DType::Int64:
      store<int64_t>(p, i, v);
      break;
    case DType::Int32:
      store<int32_t>(p, i, v);
      break;
    case DType::Int16:
      store<int16_t>(p, i, v);
      break;
    case DType::Int8:
      store<int8_t>(p, i, v);
      break;
    case DType::UInt8:
      store<uint8_t>(p, i, v);
      break;
    case DType::Bool:
      store<uint8_t>(p, i, v != 0.0 ? 1.0 : 0.0);
      break;
    case DType::UInt16:
      store<uint16_t>(p, i, v);
      break;
    case DType::UInt32:
      store<uint32_t>(p, i, v);
      break;
    case DType::UInt64:
      store<uint64_t>(p, i, v);
      break;
    default:
      break;  // half types: left as zero bytes
  }
}
}  // namespace

double Tensor::valueAsDouble(int64_t i) const {
  if (i < 0 || i >= numel_ || !bytesPtr()) return 0.0;
  return visitNumeric(dtype_, bytesPtr(), i, [](auto x) { return static_cast<double>(x); });
}

int64_t Tensor::valueAsInt(int64_t i) const {
  if (i < 0 || i >= numel_ || !bytesPtr()) return 0;
  return visitNumeric(dtype_, bytesPtr(), i, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      if (!std::isfinite(x)) return int64_t{0};
      if (x >= 9.2e18) return std::numeric_limits<int64_t>::max();
      if (x <= -9.2e18) return std::numeric_limits<int64_t>::min();
    }
    return static_cast<int64_t>(x);
  });
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> out;
  if (!tensorDTypeSupported(dtype_)) return out;
  out.reserve(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out.push_back(valueAsInt(i));
  return out;
}

void Tensor::fillRandom(uint64_t seed, double lo, double hi) {
  if (shared_) detach();
  if (!data_) return;
  std::mt19937_64 rng(seed);
  const bool isFloat = dtype_ == DType::Float32 || dtype_ == DType::Float64;
  if (isFloat) {
    std::uniform_real_distribution<double> d(lo, hi > lo ? hi : lo + 1.0);
    for (int64_t i = 0; i < numel_; ++i) storeAs(dtype_, data_.get(), i, d(rng));
  } else if (dtype_ == DType::Bool) {
    for (int64_t i = 0; i < numel_; ++i) storeAs(dtype_, data_.get(), i, static_cast<double>(rng() & 1));
  } else {
    int64_t a = static_cast<int64_t>(std::floor(lo));
    int64_t b = static_cast<int64_t>(std::floor(hi));
    if (b <= a) b = a + 1;
    std::uniform_int_distribution<int64_t> d(a, b - 1);
    for (int64_t i = 0; i < numel_; ++i) storeAs(dtype_, data_.get(), i, static_cast<double>(d(rng)));
  }
}

void Tensor::fill(double v) {
  if (shared_) detach();
  if (!data_) return;
  for (int64_t i = 0; i < numel_; ++i) storeAs(dtype_, data_.get(), i, v);
}

std::string Tensor::describe() const {
  return std::string(dtypeName(dtype_)) + shapeString(shape_);
}

}  // namespace partex
