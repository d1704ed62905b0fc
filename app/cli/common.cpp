#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "cost/instances.h"
#include "cost/work.h"
#include "onnx/importer.h"
#include "support/files.h"
#include "support/sha256.h"

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

Result<bool> isTaskGraphFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    char head[256];
    in.read(head, sizeof head);
    const std::streamsize n = in.gcount();
    std::streamsize i = 0;
    while (i < n && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
    if (i < n && head[i] != '{') return false;  // not JSON: an ONNX model (or something the importer refuses)
  }
  auto bytes = readFile(path);  // JSON, or an error readFile words (missing, a directory, unreadable)
  if (!bytes) return Error{bytes.message()};
  return looksLikeTaskGraph(*bytes);
}

Result<Problem> loadProblem(const std::string& model, const std::string& platform, const std::vector<std::string>& dims) {
  Problem p;
  auto taskGraph = isTaskGraphFile(model);
  if (!taskGraph) return Error{taskGraph.message()};
  if (*taskGraph) {
    auto bytes = readFile(model);
    if (!bytes) return Error{bytes.message()};
    auto t = parseInstance(*bytes, model);
    if (!t) return Error{t.message()};
    p.table = std::move(t).value();
    p.id.modelFile = baseName(model);
    p.id.modelSha256 = sha256Hex(*bytes);
    p.id.platformName = "task graph";
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
