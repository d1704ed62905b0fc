// ggml's weight types. Block sizes and bytes per block from llama.cpp's ggml/src/ggml-common.h (the
// block_* structs and their static_asserts) and the ids from ggml/include/ggml.h (enum ggml_type);
// docs/design-decisions.md names the commit. QK_K = 256 (the K-quants' and IQ types' super-block).
#include "ir/quant.h"

#include <cctype>

namespace partex {

namespace {

constexpr int64_t kQK = 256;  // QK_K
constexpr double kPlain = 0;   // F32/F16/BF16/ints: converted, not dequantised
constexpr double kLinear = 2;  // one scale multiply and one offset (or min) add per element
constexpr double kGrid = 4;    // codebook (grid) lookup, sign and scale per element (IQ*, TQ*)

}  // namespace

const std::vector<QuantInfo>& quantTypes() {
  static const std::vector<QuantInfo> table = {
      {QuantType::F32, "f32", 1, 4, false, kPlain},
      {QuantType::F16, "f16", 1, 2, false, kPlain},
      {QuantType::Q4_0, "q4_0", 32, 2 + 16, true, kLinear},          // d, qs[16]
      {QuantType::Q4_1, "q4_1", 32, 2 * 2 + 16, true, kLinear},      // d, m, qs[16]
      {QuantType::Q5_0, "q5_0", 32, 2 + 4 + 16, true, kLinear},      // d, qh[4], qs[16]
      {QuantType::Q5_1, "q5_1", 32, 2 * 2 + 4 + 16, true, kLinear},  // d, m, qh[4], qs[16]
      {QuantType::Q8_0, "q8_0", 32, 2 + 32, true, 1},                // d, qs[32]
      {QuantType::Q8_1, "q8_1", 32, 2 * 2 + 32, true, 1},            // d, s, qs[32]
      {QuantType::Q2_K, "q2_k", kQK, 2 * 2 + kQK / 16 + kQK / 4, true, kLinear},         // 84
      {QuantType::Q3_K, "q3_k", kQK, 2 + kQK / 4 + kQK / 8 + 12, true, kLinear},         // 110
      {QuantType::Q4_K, "q4_k", kQK, 2 * 2 + 12 + kQK / 2, true, kLinear},               // 144
      {QuantType::Q5_K, "q5_k", kQK, 2 * 2 + 12 + kQK / 2 + kQK / 8, true, kLinear},     // 176
      {QuantType::Q6_K, "q6_k", kQK, 2 + kQK / 16 + 3 * kQK / 4, true, kLinear},         // 210
      {QuantType::Q8_K, "q8_k", kQK, 4 + kQK + kQK / 16 * 2, true, 1},                   // 292
      {QuantType::IQ2_XXS, "iq2_xxs", kQK, 2 + kQK / 8 * 2, true, kGrid},                // 66
      {QuantType::IQ2_XS, "iq2_xs", kQK, 2 + kQK / 8 * 2 + kQK / 32, true, kGrid},       // 74
      {QuantType::IQ3_XXS, "iq3_xxs", kQK, 2 + 3 * (kQK / 8), true, kGrid},              // 98
      {QuantType::IQ1_S, "iq1_s", kQK, 2 + kQK / 8 + kQK / 16, true, kGrid},             // 50
      {QuantType::IQ4_NL, "iq4_nl", 32, 2 + 16, true, kGrid},                            // 18
      {QuantType::IQ3_S, "iq3_s", kQK, 2 + 13 * (kQK / 32) + kQK / 64, true, kGrid},     // 110
      {QuantType::IQ2_S, "iq2_s", kQK, 2 + kQK / 4 + kQK / 16, true, kGrid},             // 82
      {QuantType::IQ4_XS, "iq4_xs", kQK, 2 + 2 + kQK / 64 + kQK / 2, true, kGrid},       // 136
      {QuantType::I8, "i8", 1, 1, false, kPlain},
      {QuantType::I16, "i16", 1, 2, false, kPlain},
      {QuantType::I32, "i32", 1, 4, false, kPlain},
      {QuantType::I64, "i64", 1, 8, false, kPlain},
      {QuantType::F64, "f64", 1, 8, false, kPlain},
      {QuantType::IQ1_M, "iq1_m", kQK, kQK / 8 + kQK / 16 + kQK / 32, true, kGrid},      // 56
      {QuantType::BF16, "bf16", 1, 2, false, kPlain},
      {QuantType::TQ1_0, "tq1_0", kQK, 2 + kQK / 64 + (kQK - 4 * kQK / 64) / 5, true, kGrid},  // 54
      {QuantType::TQ2_0, "tq2_0", kQK, 2 + kQK / 4, true, kGrid},                                // 66
      {QuantType::MXFP4, "mxfp4", 32, 1 + 16, true, kLinear},  // e (E8M0), qs[16]
  };
  return table;
}

const QuantInfo* quantInfo(QuantType t) {
  if (t == QuantType::None) return nullptr;
  return quantInfoById(static_cast<uint32_t>(static_cast<int16_t>(t)));
}

const QuantInfo* quantInfoById(uint32_t id) {
  for (const auto& q : quantTypes())
    if (static_cast<uint32_t>(static_cast<int16_t>(q.type)) == id) return &q;
  return nullptr;
}

bool quantFromName(const std::string& name, QuantType& out) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "none" || lower.empty()) {
    out = QuantType::None;
    return true;
  }
  for (const auto& q : quantTypes())
    if (lower == q.name) {
      out = q.type;
      return true;
    }
  return false;
}

const char* quantName(QuantType t) {
  const QuantInfo* q = quantInfo(t);
  return q ? q->name : "none";
}

int64_t quantBytes(QuantType t, int64_t elements) {
  const QuantInfo* q = quantInfo(t);
  if (!q || elements < 0) return -1;
  const int64_t blocks = elements / q->blockElements + (elements % q->blockElements != 0 ? 1 : 0);
  return blocks * q->blockBytes;
}

double quantBitsPerWeight(QuantType t) {
  const QuantInfo* q = quantInfo(t);
  return q ? static_cast<double>(q->blockBytes) * 8.0 / static_cast<double>(q->blockElements) : 0.0;
}

}  // namespace partex
