#pragma once
/// \file ONNX import into the core IR. The only code that includes onnx/protobuf headers lives in
/// this folder; its public headers expose IR types only.
///
/// Import runs: parse (with size limits) -> IR-version and opset check -> onnx::checker ->
/// binding of symbolic input dims -> onnx::shape_inference -> weights read (initializers and external
/// data into Value::data) -> constant folding (Constant, ConstantOfShape, Shape and shape arithmetic on
/// static shapes become weights, with their data; a fold the folder cannot compute stays an operator)
/// -> shape completion for what ONNX leaves open -> IR graph in topological order -> verify.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/quant.h"
#include "support/result.h"

namespace partex {

/// A user binding of a symbolic dimension: by symbol name ("N=1") or by input and axis ("x:0=1").
struct DimBinding {
  std::string symbol;  ///< Set for NAME=VALUE.
  std::string input;   ///< Set for INPUT:AXIS=VALUE.
  int64_t axis = -1;
  int64_t value = 0;
};

/// Parses "NAME=VALUE" or "INPUT:AXIS=VALUE".
Result<DimBinding> parseDimBinding(const std::string& text);

struct ImportOptions {
  std::vector<DimBinding> dims;
  /// Run the ONNX checker (on by default; the fuzzer may turn it off to reach deeper code).
  bool runChecker = true;
};

/// Imports a model file. Errors are one line starting with the file name. Every weight keeps its data
/// (Value::data), external data included (read relative to the model's folder).
Result<Graph> importOnnxFile(const std::string& path, const ImportOptions& opts = {});
/// Imports serialized model bytes; `origin` names the source in messages (a file name).
/// External data is read from files relative to `baseDir`; with an empty `baseDir` no file is read and
/// external weights keep dims only (a warning says so; runs feed synthetic values for them).
Result<Graph> importOnnxBytes(const std::string& bytes, const std::string& origin, const ImportOptions& opts = {},
                              const std::string& baseDir = "");


}  // namespace partex
