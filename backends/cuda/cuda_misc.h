#pragma once
/// \file Small kernels of the CUDA backend for what transformers' masks and embeddings use (cuda_misc.cu):
/// Cast between numeric types, Where and the logical operators with broadcasting. Shapes and the
/// broadcasting rules as in cuda_kernels.h (numpy, right-aligned).

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels.h"

namespace partex::cuda {

/// Element types these kernels convert between (Bool is one byte, 0 or 1).
enum class ElemType : int { F32, F64, I64, I32, I8, U8, Bool };

/// out[i] = (To) in[i], n elements (to Bool: x != 0; float to integer truncates toward zero, as C++).
cudaError_t castTensor(const void* in, ElemType from, void* out, ElemType to, int64_t n, cudaStream_t stream);

/// out = cond ? x : y with broadcasting; x, y and out of one element size (1, 2, 4 or 8 bytes).
cudaError_t whereTensor(const uint8_t* cond, const Shape& condShape, const void* x, const Shape& xShape, const void* y,
                        const Shape& yShape, void* out, const Shape& outShape, int elemBytes, cudaStream_t stream);

/// Bool And (0), Or (1), Xor (2) with broadcasting.
cudaError_t logicalBinary(int op, const uint8_t* a, const Shape& aShape, const uint8_t* b, const Shape& bShape,
                          uint8_t* out, const Shape& outShape, cudaStream_t stream);

}  // namespace partex::cuda
