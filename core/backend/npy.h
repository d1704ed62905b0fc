#pragma once
/// \file NumPy .npy files <-> Tensor: the format `partex-cli execute --input/--outputs` and
/// scripts/ort/run.py exchange tensors in. Versions 1.0, 2.0 and 3.0; C order; little-endian (or
/// byte-order-free) float16/32/64, int8/16/32/64, uint8/16/32/64 and bool. Everything read from a file
/// is checked before it is trusted: a hostile header (bad syntax, a huge shape, a short or long file)
/// gives an Error naming the file, never a crash or an allocation beyond `maxBytes`.

#include <string>

#include "backend/tensor.h"
#include "support/result.h"

namespace partex {

/// Parses .npy bytes; `origin` names the source in messages.
Result<Tensor> readNpyBytes(const std::string& bytes, const std::string& origin,
                            int64_t maxBytes = Tensor::kDefaultMaxBytes);
/// Reads a .npy file (the data straight into the tensor, without a second copy of the file).
Result<Tensor> readNpyFile(const std::string& path, int64_t maxBytes = Tensor::kDefaultMaxBytes);
/// The .npy serialization of `t` (version 1.0, or 2.0 when the header needs it); fails for dtypes
/// NumPy has no code for (bfloat16) and for a default-constructed (Undefined) tensor.
Result<std::string> npyBytes(const Tensor& t);
/// Writes `t` as a .npy file atomically (a temporary file, then a rename: never a half-written file).
Status writeNpyFile(const std::string& path, const Tensor& t);
/// The file name an output called `name` is written to: characters outside [A-Za-z0-9_.-] become '_',
/// then ".npy" (as scripts/ort/run.py names them).
std::string npyFileName(const std::string& name);

}  // namespace partex
