#include "ir/opclass.h"

namespace partex {

namespace {
constexpr const char* kClassNames[kNumOpClasses] = {
    "conv",         "matmul",        "elementwise", "reduction",    "normalisation",
    "pooling",      "data_movement", "shape_only",  "control_flow", "unknown",
};
}  // namespace

const char* opClassName(OpClass c) {
  auto i = static_cast<int>(c);
  return (i >= 0 && i < kNumOpClasses) ? kClassNames[i] : "unknown";
}

bool opClassFromName(const std::string& name, OpClass& out) {
  for (int i = 0; i < kNumOpClasses; ++i) {
    if (name == kClassNames[i]) {
      out = static_cast<OpClass>(i);
      return true;
    }
  }
  return false;
}

}  // namespace partex
