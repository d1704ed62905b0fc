#pragma once
/// \file A GGUF file's header (llama.cpp's model format): metadata and tensor table, read without
/// touching the weights, and the decoder it describes as a generator spec (gen/generator.h), so that
/// `partex-cli schedule model.gguf` builds the graph with the file's own tensor names, shapes and
/// storage types. Layout as llama.cpp's ggml/src/gguf.cpp reads it (docs/design-decisions.md cites it):
///   "GGUF", uint32 version (2 or 3), uint64 tensor count, uint64 metadata count,
///   metadata: string key, uint32 type, value (arrays: uint32 element type, uint64 count, elements),
///   tensor infos: string name, uint32 n_dims (<= 4), int64 ne[n_dims], uint32 ggml type, uint64 offset,
///   padding to general.alignment (32 by default), then the data (never read here).
/// Strings are uint64 length + bytes; everything little-endian.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gen/generator.h"
#include "ir/quant.h"
#include "support/result.h"

namespace partex {

/// GGUF metadata value types (gguf_type).
enum class GgufType : uint32_t {
  UInt8 = 0, Int8 = 1, UInt16 = 2, Int16 = 3, UInt32 = 4, Int32 = 5, Float32 = 6, Bool = 7,
  String = 8, Array = 9, UInt64 = 10, Int64 = 11, Float64 = 12,
};

/// One metadata value. Scalars keep their number (integers in `i` or `u`, floats in `f`), strings their
/// text; arrays their element type and count, the numbers of numeric arrays up to kMaxKeptArray
/// elements, and no strings (a tokenizer's vocabulary is counted, not kept).
struct GgufValue {
  GgufType type = GgufType::UInt8;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string str;
  GgufType arrayType = GgufType::UInt8;
  uint64_t arrayCount = 0;
  std::vector<double> arrayNumbers;
  static constexpr uint64_t kMaxKeptArray = 4096;

  /// The value as an integer (any integer or bool type; the first element of a numeric array); false
  /// when it is not one.
  bool asInt(int64_t& out) const;
};

struct GgufTensor {
  std::string name;
  std::vector<int64_t> ne;  ///< ggml's dims, innermost first (a matrix [out, in] is ne = {in, out}).
  uint32_t ggmlType = 0;
  QuantType quant = QuantType::None;
  uint64_t offset = 0;  ///< From the start of the data section.
  int64_t elements() const;
  int64_t bytes() const;  ///< quantBytes(quant, elements()).
};

struct GgufFile {
  std::string path;
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t dataOffset = 0;  ///< Where the data section starts (the header's end, aligned).
  uint64_t fileSize = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensor> tensors;

  const GgufValue* find(const std::string& key) const;
  const GgufTensor* tensor(const std::string& name) const;
  std::string architecture() const;  ///< general.architecture, "" when absent.
};

/// Reads the header of `path` (never the tensor data). Errors are one line naming the file and the reason:
/// wrong magic, a version other than 2 or 3, counts the file cannot hold, strings or arrays past the end,
/// an unknown metadata or tensor type, a tensor whose data lies past the end of the file, ...
Result<GgufFile> readGgufHeader(const std::string& path);
/// The same on bytes in memory (tests, fuzzing); `origin` names them in errors; fileSize = bytes.size().
Result<GgufFile> parseGgufHeader(const std::string& bytes, const std::string& origin);

/// Whether `path` (without a "?..." suffix) names a GGUF file: its extension is ".gguf".
bool isGgufRef(const std::string& path);
/// Splits "model.gguf?phase=decode&seq=4096" into the path and the options phase (prefill|decode), seq
/// (prompt tokens in prefill, cached tokens in decode; 512 by default) and batch.
struct GgufOptions {
  std::string phase = "prefill";
  int64_t seq = 512;
  int64_t batch = 1;
};
Result<std::pair<std::string, GgufOptions>> parseGgufRef(const std::string& ref);

/// The architectures ggufToSpec understands (general.architecture): llama (dense, and Mixtral-style with
/// experts), qwen2, qwen3, qwen3moe, gpt-oss.
std::vector<std::string> ggufArchitectures();

/// The decoder of `file` as a generator spec: hyperparameters from the metadata (block_count,
/// embedding_length, feed_forward_length, attention.head_count(_kv), attention.key_length, expert_count,
/// expert_used_count, expert_feed_forward_length, attention.sliding_window, the vocabulary from
/// tokenizer.ggml.tokens or token_embd), every tensor's storage type (GenSpec::tensorQuant), tied
/// embeddings when the file has no output.weight; activations and KV cache float16 (llama.cpp's default
/// cache type). Error for an unsupported architecture or missing hyperparameters.
Result<GenSpec> ggufToSpec(const GgufFile& file, const GgufOptions& opts);

}  // namespace partex
