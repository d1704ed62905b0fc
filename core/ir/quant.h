#pragma once
/// \file ggml's weight types (the types of a GGUF file's tensors): block size and bytes per block, the
/// GGUF type id, and a modelled dequantisation cost. A weight Value with a type set (Value::quant) counts
/// its bytes from this table, so every consumer of Value::bytes() (the cost table's weight bytes, memory
/// accounting, bytes read by operators) sees the quantised size.
///
/// Numbers are ggml's own: the block structs and their static_asserts in ggml/src/ggml-common.h and the
/// enum ggml_type in ggml/include/ggml.h of llama.cpp (docs/design-decisions.md cites the commit).

#include <cstdint>
#include <string>
#include <vector>

namespace partex {

/// Model metadata key of the weights' storage types: "NAME TYPE" lines, e.g. "blk.0.attn_q.weight q4_k".
/// Written by the generator (GenSpec::quant, GGUF files), read by the ONNX importer.
inline constexpr const char* kQuantMetadataKey = "partex.quant";
/// The domain of Partex's own operators (ExpertMatMul: a Mixture-of-Experts projection, cost/work.cpp):
/// imported as operators without an unknown-domain warning.
inline constexpr const char* kPartexDomain = "partex";

/// ggml_type ids (the numbers stored in a GGUF tensor info). None: no quantisation type set (the
/// Value's dtype decides its bytes).
enum class QuantType : int16_t {
  None = -1,
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

/// One row of the table.
struct QuantInfo {
  QuantType type = QuantType::None;
  const char* name = "";  ///< ggml's name in lower case: "q4_k", "mxfp4", "f16".
  int64_t blockElements = 1;  ///< Elements per block (ggml's blck_size).
  int64_t blockBytes = 0;     ///< Bytes per block (ggml's type_size: sizeof(block_*)).
  bool quantised = false;     ///< Blocks with scales (not a plain float or integer type).
  /// Modelled arithmetic to dequantise one element inside a matrix kernel (unpack, scale, add the
  /// minimum): an assumption documented in docs/algorithms.md; 0 for plain types.
  double dequantFlopsPerElement = 0;
};

/// Every type of the table, in id order.
const std::vector<QuantInfo>& quantTypes();
/// The row of `t`; nullptr for None and for ids ggml removed (4, 5, 31-33, 36-38) or never had.
const QuantInfo* quantInfo(QuantType t);
/// The row for a GGUF type id; nullptr when the id is not a type of the table.
const QuantInfo* quantInfoById(uint32_t ggmlId);
/// Parses a name ("q4_k", "Q4_K", "mxfp4", "none"); false when unknown. "none" gives QuantType::None.
bool quantFromName(const std::string& name, QuantType& out);
/// "q4_k", ...; "none" for None.
const char* quantName(QuantType t);
/// Bytes of `elements` elements of type `t`: ceil(elements / block) * block bytes (ggml stores whole
/// blocks; a row of a quantised type is always a multiple of the block). -1 for None or an unknown type.
int64_t quantBytes(QuantType t, int64_t elements);
/// Bits per weight of `t` (blockBytes * 8 / blockElements): 4.5 for q4_k.
double quantBitsPerWeight(QuantType t);

}  // namespace partex
