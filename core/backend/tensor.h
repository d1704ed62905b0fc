#pragma once
/// \file A dense, row-major tensor with owned, 64-byte-aligned storage: what backends' kernels read and
/// write. No Qt, no ONNX: the conformance reader in core/onnx and the profiler both produce these.
/// A tensor may instead alias a weight's shared immutable storage (Tensor::alias, ir/tensordata.h):
/// reads see the weight itself, with no copy; the first write access copies it (copy on write).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/result.h"

namespace partex {

/// The C++ element type of a DType (Bool is stored as one byte, 0 or 1).
template <class T>
constexpr DType dtypeOf();
template <>
constexpr DType dtypeOf<float>() {
  return DType::Float32;
}
template <>
constexpr DType dtypeOf<double>() {
  return DType::Float64;
}
template <>
constexpr DType dtypeOf<int64_t>() {
  return DType::Int64;
}
template <>
constexpr DType dtypeOf<int32_t>() {
  return DType::Int32;
}
template <>
constexpr DType dtypeOf<int16_t>() {
  return DType::Int16;
}
template <>
constexpr DType dtypeOf<int8_t>() {
  return DType::Int8;
}
template <>
constexpr DType dtypeOf<uint8_t>() {
  return DType::UInt8;
}
template <>
constexpr DType dtypeOf<uint16_t>() {
  return DType::UInt16;
}
template <>
constexpr DType dtypeOf<uint32_t>() {
  return DType::UInt32;
}
template <>
constexpr DType dtypeOf<uint64_t>() {
  return DType::UInt64;
}
template <>
constexpr DType dtypeOf<bool>() {
  return DType::Bool;
}

/// True for the dtypes a Tensor can hold (every fixed-size numeric type and Bool; not String or complex).
bool tensorDTypeSupported(DType t);
/// Bytes per element as stored in a Tensor (Bool: 1; Float16/BFloat16: 2); 0 when unsupported.
int64_t tensorElementSize(DType t);

/// A dense row-major tensor. Copying copies the data (an alias shares it until either copy writes);
/// moving is cheap. A default-constructed tensor is empty (Undefined dtype, rank 0, no storage). Rank 0
/// with a defined dtype is a scalar (one element).
class Tensor {
 public:
  Tensor() = default;
  Tensor(const Tensor& o);
  Tensor& operator=(const Tensor& o);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  ~Tensor() = default;

  /// A zero-filled tensor. Fails on an unsupported dtype, a negative dim, or more than `maxBytes`.
  static Result<Tensor> make(DType dtype, std::vector<int64_t> shape, int64_t maxBytes = kDefaultMaxBytes);
  /// A read-only view of `data` (a weight's shared storage) as dtype/shape: no copy; every tensor made
  /// from one TensorData reads the same bytes. Fails when the byte sizes differ, the dtype is
  /// unsupported, the tensor exceeds `maxBytes` or (for a splat) its expansion runs out of memory.
  static Result<Tensor> alias(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const TensorData> data,
                              int64_t maxBytes = kDefaultMaxBytes);
  /// True while this tensor reads shared storage (made by alias(), not yet written).
  bool isAlias() const { return shared_ != nullptr; }
  /// (Re)shapes this tensor to dtype/shape, reusing the storage when it is large enough (contents then
  /// undefined), otherwise allocating zeroed storage. Kernels call it on their outputs. An alias gets
  /// storage of its own.
  Status ensure(DType dtype, const std::vector<int64_t>& shape, int64_t maxBytes = kDefaultMaxBytes);
  /// Changes the shape without touching the data; fails unless the element count is the same.
  Status reshape(std::vector<int64_t> shape);

  /// How the elements are stored. Plain: row-major. Nhwc: a float32 tensor of rank 3-5 [N, C, spatial...]
  /// stored channels-last, [N][spatial...][C] (oneDNN's acdb: the layout its convolutions prefer on
  /// this machine's ISA). Only the CPU backend's kernels produce such tensors, between operators that
  /// read them (backends/cpu, nhwcOutputOk); raw() of one is not row-major: call toPlain() first.
  enum class Layout : uint8_t { Plain, Nhwc };
  Layout layout() const { return layout_; }
  bool nhwc() const { return layout_ == Layout::Nhwc; }
  /// Like ensure() for an Nhwc float32 tensor of rank 3-5 (storage reused when its size matches).
  Status ensureNhwc(const std::vector<int64_t>& shape, int64_t maxBytes = kDefaultMaxBytes);
  /// The same values in `out`, row-major (a copy of the storage for a plain tensor).
  Status toPlain(Tensor& out) const;
  /// The same values written row-major into `dst` (bytes() of it; a transposition of a channels-last
  /// tensor, a copy of a plain one): toPlain without a tensor of its own, e.g. straight into a pinned
  /// staging buffer.
  void writePlain(void* dst) const;
  /// Makes this tensor a copy of `o` (dtype, shape, layout, values) in its own storage, which is kept
  /// when large enough: unlike `*this = o`, a kernel's output storage stays the executor's.
  Status copyFrom(const Tensor& o);
  /// Makes this tensor a plain dtype/shape view of `bytes` bytes at `data`, storage it does not own (a
  /// slice of another tensor: a Concat's input written in place). ensure() keeps writing there while
  /// the shape fits; growing, ensureNhwc() or assigning another tensor takes storage of its own. The
  /// owner of `data` must outlive the view. Copies of a view own their storage.
  Status borrow(DType dtype, std::vector<int64_t> shape, void* data, int64_t bytes);
  /// Like borrow(), but storage that belongs to this tensor's value alone (its region of an executor's
  /// activation arena): ensure() and ensureNhwc() keep writing there, in either layout, while the size
  /// fits. The owner of `data` must outlive the view.
  Status place(DType dtype, std::vector<int64_t> shape, void* data, int64_t bytes);
  /// True while this tensor is a view made by borrow() or place().
  bool borrowed() const { return data_ && !data_.get_deleter().owned; }
  /// Bytes of storage (the same in every layout).
  int64_t storageBytes() const { return bytes(); }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  /// Dim i; negative i counts from the back. No bounds check beyond the caller's.
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t numElements() const { return numel_; }
  int64_t bytes() const { return numel_ * tensorElementSize(dtype_); }
  bool empty() const { return dtype_ == DType::Undefined; }

  /// Writable storage: an alias first copies the shared bytes (nullptr if that runs out of memory).
  void* raw() {
    if (shared_) detach();
    return data_.get();
  }
  const void* raw() const { return shared_ ? static_cast<const void*>(sharedBytes_) : data_.get(); }
  /// Typed pointer; nullptr when T does not match dtype() (kernels check dtype() first).
  template <class T>
  T* data() {
    return dtypeOf<T>() == dtype_ ? static_cast<T*>(raw()) : nullptr;
  }
  template <class T>
  const T* data() const {
    return dtypeOf<T>() == dtype_ ? static_cast<const T*>(raw()) : nullptr;
  }
  /// Element i of any numeric dtype converted to double / int64 (for shape inputs, tests, checks).
  double valueAsDouble(int64_t i) const;
  int64_t valueAsInt(int64_t i) const;
  /// All elements as int64 (shape, axes, indices inputs); empty for non-numeric dtypes.
  std::vector<int64_t> toInts() const;

  /// Deterministic pseudo-random fill from `seed`: floats uniform in [lo, hi), integers uniform in
  /// [floor(lo), floor(hi)) (at least 0..1), Bool 0/1.
  void fillRandom(uint64_t seed, double lo = -1.0, double hi = 1.0);
  /// Sets every element to `v` (converted to the dtype).
  void fill(double v);

  /// "float32[1,3,224,224]".
  std::string describe() const;

  static constexpr int64_t kDefaultMaxBytes = int64_t{4} << 30;  ///< 4 GiB: a guard against hostile shapes.
  static constexpr size_t kAlignment = 64;                        ///< Storage alignment (a cache line).

 private:
  struct AlignedFree {
    AlignedFree() noexcept : owned(true) {}
    explicit AlignedFree(bool own) noexcept : owned(own) {}
    bool owned;  ///< false for a view (borrow()): the storage belongs to another tensor
    void operator()(std::byte* p) const noexcept;
  };
  /// Fresh owned storage of `bytes` (contents undefined); false when out of memory.
  bool allocate(int64_t bytes);
  /// Replaces the alias by an owned copy of its bytes.
  void detach();
  /// Storage to read: the alias's shared bytes or the owned ones.
  const std::byte* bytesPtr() const { return shared_ ? sharedBytes_ : data_.get(); }

  DType dtype_ = DType::Undefined;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  int64_t capacity_ = 0;  ///< Allocated bytes.
  Layout layout_ = Layout::Plain;
  bool placed_ = false;  ///< data_ is a view made by place() (not by borrow()).
  std::unique_ptr<std::byte[], AlignedFree> data_;
  std::shared_ptr<const TensorData> shared_;  ///< Set for an alias (then data_ is null).
  const std::byte* sharedBytes_ = nullptr;    ///< shared_->data(), resolved once.
};

/// Element count of a shape (1 for rank 0); -1 on a negative dim or overflow past 2^62.
int64_t shapeElements(const std::vector<int64_t>& shape);
/// "[1,3,224,224]".
std::string shapeString(const std::vector<int64_t>& shape);

}  // namespace partex
