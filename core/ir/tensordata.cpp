#include "ir/tensordata.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

namespace partex {

namespace {

/// Storage from this size on is mapped from the system on its own (mmap), not taken from malloc's heap:
/// a weight is freed while a run goes on (partex-cli execute hands the weights to the run, which frees
/// each once its kernels keep a reordered copy), and only an unmapped block gives its pages back at
/// once. glibc's malloc raises its mmap threshold to the size of every mapped block freed (up to 32
/// MiB), so that later weights of the import would come from the heap, where a freed block in the middle
/// stays resident: a transformer's run then held its weights twice (gpt2, 2 layers: 230 MiB, 176 MiB
/// mapped).
constexpr size_t kMapBytes = 65536;

void release(std::byte* p, size_t bytes) {
  if (!p) return;
  if (bytes >= kMapBytes)
    munmap(p, bytes);
  else
    std::free(p);
}

std::byte* alignedZeroed(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t alloc = (bytes + TensorData::kAlignment - 1) / TensorData::kAlignment * TensorData::kAlignment;
  if (alloc < bytes) return nullptr;  // overflow
  if (bytes >= kMapBytes) {           // zero-filled by the system
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? nullptr : static_cast<std::byte*>(m);
  }
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
  release(bytes_, size_);
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
