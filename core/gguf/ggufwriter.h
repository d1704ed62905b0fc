#pragma once
/// \file A small GGUF writer: metadata and a tensor table in llama.cpp's layout (gguf.h), with the tensor
/// data left as a hole (a sparse file of the right size), so that tests and benchmarks make GGUF files of
/// any size without weights. Not a converter: it writes what it is told.

#include <cstdint>
#include <string>
#include <vector>

#include "gen/generator.h"
#include "ir/quant.h"
#include "support/result.h"

namespace partex {

class GgufWriter {
 public:
  void setU32(const std::string& key, uint32_t v);
  void setU64(const std::string& key, uint64_t v);
  void setI32(const std::string& key, int32_t v);
  void setF32(const std::string& key, float v);
  void setBool(const std::string& key, bool v);
  void setString(const std::string& key, const std::string& v);
  /// An array of `count` strings "t0", "t1", ... (a tokenizer vocabulary's stand-in).
  void setStringArray(const std::string& key, uint64_t count);
  void setI32Array(const std::string& key, const std::vector<int32_t>& v);
  /// A tensor of ggml dims `ne` (innermost first) and type `t`; offsets follow in order, aligned.
  void addTensor(const std::string& name, const std::vector<int64_t>& ne, QuantType t);

  /// The header: magic, version, counts, metadata, tensor infos, padding to the alignment.
  std::string header(uint32_t version = 3) const;
  /// Bytes of the data section (every tensor, each padded to the alignment).
  uint64_t dataBytes() const;
  /// Writes the header and extends the file to header + data without writing the data (a sparse file).
  Status write(const std::string& path, uint32_t version = 3) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> ne;
    QuantType type;
    uint64_t offset;
  };
  std::vector<std::string> kv_;  ///< Serialized metadata entries.
  std::vector<Tensor> tensors_;
  uint64_t next_ = 0;
  uint64_t alignment_ = 32;
};

/// A GGUF of the decoder `spec` describes (generate llama|moe), as llama.cpp names things for `arch`
/// ("llama", "qwen3moe", "gpt-oss", ...): the hyperparameter keys, a vocabulary of spec.vocab tokens,
/// and every weight the generator builds with its GGUF name and ggml dims, matrices of type `matrices`
/// and norms F32; the routed experts of type `experts` (None: `matrices`).
GgufWriter ggufForSpec(const GenSpec& spec, const std::string& arch, QuantType matrices,
                       QuantType experts = QuantType::None);

}  // namespace partex
