#pragma once
/// \file Work classes of operators: devices have one peak throughput per class.

#include <string>

namespace partex {

/// What kind of work an operator does; devices have one peak per class.
enum class OpClass {
  Conv,
  MatMul,
  Elementwise,
  Reduction,
  Normalisation,
  Pooling,
  DataMovement,
  ShapeOnly,
  ControlFlow,
  Unknown,
};
constexpr int kNumOpClasses = 10;
/// "conv", "matmul", "elementwise", "reduction", "normalisation", "pooling", "data_movement",
/// "shape_only", "control_flow", "unknown".
const char* opClassName(OpClass c);
/// Inverse of opClassName; false when unknown.
bool opClassFromName(const std::string& name, OpClass& out);

}  // namespace partex
