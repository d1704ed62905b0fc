#include <iostream>

#include "commands.h"
#include "onnx/importer.h"

namespace partex::cli {

Result<Graph> loadModel(const std::string& path, const std::vector<std::string>& dims) {
  ImportOptions opts;
  for (const auto& d : dims) {
    auto b = parseDimBinding(d);
    if (!b) return makeError("--dim ", d, ": ", b.message());
    opts.dims.push_back(*b);
  }
  return importOnnxFile(path, opts);
}

int fail(const std::string& message) {
  std::cerr << "partex-cli: " << message << "\n";
  return 2;
}

}  // namespace partex::cli
