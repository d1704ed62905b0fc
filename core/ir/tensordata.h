#pragma once
/// \file The element data of a weight: immutable once built, 64-byte aligned, shared through
/// `std::shared_ptr<const TensorData>` by every copy of the Graph (Value::data) and by every Tensor
/// that aliases it (core/backend Tensor::alias), so a model's weights exist once in memory. Storage of
/// 64 KiB or more is mapped on its own, so that freeing a weight gives its pages back at once.
///
/// Layout: dense, row-major, little-endian, in the element encoding a core/backend Tensor stores (Bool
/// one byte 0/1, 16-bit floats as their bit patterns). A splat (the folded ConstantOfShape that builds
/// every weight of the light_* models) keeps one element and is expanded on first access, so importing
/// a model to schedule it never pays for weights that are never run.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace partex {

class TensorData {
 public:
  static constexpr size_t kAlignment = 64;

  /// Zero-filled storage of `bytes` bytes; nullptr when out of memory.
  static std::shared_ptr<TensorData> allocate(size_t bytes);
  /// `count` copies of the `elemBytes`-byte element `pattern` (at most 16 bytes), expanded lazily;
  /// nullptr when the element size is 0 or above 16.
  static std::shared_ptr<TensorData> splat(const void* pattern, size_t elemBytes, size_t count);

  TensorData(const TensorData&) = delete;
  TensorData& operator=(const TensorData&) = delete;
  ~TensorData();

  /// Size in bytes.
  size_t size() const { return size_; }
  /// The bytes; a splat is expanded on the first call (thread-safe). nullptr when that allocation
  /// fails (and for size 0).
  const std::byte* data() const;
  /// Writable bytes, for the code that fills a freshly allocated buffer before sharing it (not for
  /// splats: nullptr).
  std::byte* mutableData() { return splat_ ? nullptr : bytes_; }
  /// True for a splat; `pattern` then receives its element bytes (when not null).
  bool isSplat(std::string* pattern = nullptr) const;

 private:
  TensorData() = default;
  size_t size_ = 0;
  mutable std::byte* bytes_ = nullptr;
  bool splat_ = false;
  size_t elemBytes_ = 0;
  unsigned char pattern_[16] = {};
  mutable std::once_flag expanded_;
};

}  // namespace partex
