#pragma once
/// \file Reading ONNX tensors into backend Tensors: the conformance suite's `input_*.pb`/`output_*.pb`
/// files, and the constant data (initializers, Constant nodes) of small test models, which the IR keeps
/// only as dims. Protobuf stays inside core/onnx; callers see Tensor and Graph only.

#include <map>
#include <string>
#include <vector>

#include "backend/tensor.h"
#include "ir/graph.h"
#include "support/result.h"

namespace partex {

/// Reads a serialized onnx.TensorProto file. `name` (if not null) receives the tensor's name (may be "").
/// Fails on unreadable files, unsupported dtypes (string, complex), external data or a data size that
/// does not match the dims.
Result<Tensor> readTensorProtoFile(const std::string& path, std::string* name = nullptr);
/// Same, from serialized bytes; `origin` names the source in messages.
Result<Tensor> readTensorProtoBytes(const std::string& bytes, const std::string& origin, std::string* name = nullptr);

/// Reads a tensor file by its content: a NumPy .npy file (backend/npy.h) or a serialized
/// onnx.TensorProto (.pb, the ONNX test-data format; `name` receives its name when it has one).
Result<Tensor> readTensorFile(const std::string& path, std::string* name = nullptr);

/// Reads `NAME=FILE` specs (the CLI's --input) into tensors of the model inputs they name, each checked
/// against that input (dtype, and the shape after --dim). Errors are one line naming the file.
Result<std::map<ValueId, Tensor>> readModelInputs(const Graph& g, const std::vector<std::string>& specs);

/// A small model imported for running: the graph, plus the data of its constants by value name
/// (initializers and the outputs of Constant nodes with a tensor, float(s) or int(s) value).
/// Weights the importer produced by folding other nodes have no entry.
struct OnnxModelWithData {
  Graph graph;
  std::map<std::string, Tensor> constants;
};

/// Imports `path` and collects its constants' data. With `constantsAsInputs` (for running small test
/// models), initializers and Constant nodes become graph inputs before import, so that the importer's
/// constant folding keeps every operator and the constants are fed as inputs (by name, from
/// `constants`); otherwise the model imports as importOnnxFile() does (weights carry their data).
/// Tensors larger than `maxConstantBytes` are skipped.
Result<OnnxModelWithData> importOnnxWithData(const std::string& path, bool constantsAsInputs = true,
                                             int64_t maxConstantBytes = int64_t{1} << 28);

}  // namespace partex
