#include "ir/tensordata.h"

#include <cstdlib>
#include <cstring>

namespace partex {

namespace {

std::byte* alignedZeroed(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t alloc = (bytes + TensorData::kAlignment - 1) / TensorData::kAlignment * TensorData::kAlignment;
  if (alloc < bytes) return nullptr;  // overflow
  auto* p = static_cast<std::byte*>(std::aligned_alloc(TensorData::kAlignment, alloc));
  if (p) std::memset(p, 0, alloc);
  return p;
}

}  // namespace

std::shared_ptr<TensorData> TensorData::allocate(size_t bytes) {
  std::shared_ptr<TensorData> d(new TensorData());
  d->size_ = bytes;
  if (bytes == 0) return d;
  d->bytes_ = alignedZeroed(bytes);
  if (!d->bytes_) return nullptr;
  return d;
}

std::shared_ptr<TensorData> TensorData::splat(const void* pattern, size_t elemBytes, size_t count) {
  if (elemBytes == 0 || elemBytes > sizeof(pattern_) || !pattern) return nullptr;
  if (count > SIZE_MAX / elemBytes) return nullptr;
  std::shared_ptr<TensorData> d(new TensorData());
  d->size_ = elemBytes * count;
  d->splat_ = true;
  d->elemBytes_ = elemBytes;
  std::memcpy(d->pattern_, pattern, elemBytes);
  return d;
}

TensorData::~TensorData() {
  std::free(bytes_);
}

const std::byte* TensorData::data() const {
  if (splat_) {
    std::call_once(expanded_, [this] {
      std::byte* p = alignedZeroed(size_);
      if (!p) return;
      bool zero = true;
      for (size_t i = 0; i < elemBytes_; ++i) zero = zero && pattern_[i] == 0;
      if (!zero)
        for (size_t off = 0; off < size_; off += elemBytes_) std::memcpy(p + off, pattern_, elemBytes_);
      bytes_ = p;
    });
  }
  return bytes_;
}

bool TensorData::isSplat(std::string* pattern) const {
  if (splat_ && pattern) pattern->assign(reinterpret_cast<const char*>(pattern_), elemBytes_);
  return splat_;
}

}  // namespace partex
