#include <iostream>

#include "commands.h"
#include "cost/instances.h"
#include "cost/work.h"
#include "onnx/importer.h"
#include "support/files.h"

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

Result<Problem> loadProblem(const std::string& model, const std::string& platform, const std::vector<std::string>& dims) {
  Problem p;
  auto taskGraph = isInstanceFile(model);
  if (!taskGraph) return Error{taskGraph.message()};
  if (*taskGraph) {
    auto inst = readInstanceFile(model);
    if (!inst) return Error{inst.message()};
    p.table = std::move(inst->table);
    p.id.modelFile = baseName(model);
    p.id.modelSha256 = inst->sha256;
    p.id.platformName = kInstancePlatformName;
    if (!platform.empty()) std::cerr << "partex-cli: note: " << model << " is a task graph; it carries its own devices, --platform is ignored\n";
    return p;
  }
  if (platform.empty()) return makeError(model, ": an ONNX model needs --platform (see partex-cli platforms)");
  auto plat = loadPlatform(platform);
  if (!plat) return Error{plat.message()};
  auto g = loadModel(model, dims);
  if (!g) return Error{g.message()};
  auto work = characteriseAll(*g);
  auto t = buildCostTable(*g, work, *plat);
  if (!t) return Error{t.message()};
  p.table = std::move(t).value();
  p.id.modelFile = baseName(model);
  p.id.modelSha256 = g->graphSha256;
  p.id.platformName = plat->name;
  p.graph = std::move(g).value();
  p.platform = std::move(plat).value();
  return p;
}

int fail(const std::string& message) {
  std::cerr << "partex-cli: " << message << "\n";
  return 2;
}

}  // namespace partex::cli
