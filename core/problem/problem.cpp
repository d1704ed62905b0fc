#include "problem/problem.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "cost/instances.h"
#include "cost/work.h"
#include "gguf/gguf.h"
#include "onnx/importer.h"
#include "support/files.h"
#include "support/sha256.h"
#include "support/strings.h"
#include "problem/workloadgraph.h"

namespace partex {

void scaleLinks(Platform& p, LinkScale s) {
  for (auto& l : p.links) {
    l.bandwidthGBs *= s.bandwidth;
    l.latencyUs *= s.latency;
  }
}

void scaleLinks(CostTable& t, LinkScale s) {
  for (auto& l : t.linkLatencyUs) l *= s.latency;
  for (auto& b : t.linkBytesPerUs) b *= s.bandwidth;  // kInf (free) stays kInf
  for (auto& e : t.edges)
    if (e.fixedUs >= 0) e.fixedUs /= s.bandwidth;
}

bool isGeneratorRef(const std::string& model) {
  return model.rfind(kGeneratorPrefix, 0) == 0;
}

Result<GenSpec> parseGeneratorRef(const std::string& ref) {
  if (!isGeneratorRef(ref)) return makeError(ref, ": not a generator reference (gen:KIND?key=value&...)");
  std::string body = ref.substr(std::string(kGeneratorPrefix).size());
  GenSpec spec;
  const auto q = body.find('?');
  spec.kind = trim(body.substr(0, q));
  const auto kinds = generatorKinds();
  if (std::find(kinds.begin(), kinds.end(), spec.kind) == kinds.end())
    return makeError(ref, ": unknown generator '", spec.kind, "' (generators: ", join(kinds, ", "), ")");
  if (q == std::string::npos) return spec;
  struct Key {
    const char* name;
    int64_t GenSpec::*field;
  };
  static const Key kKeys[] = {{"batch", &GenSpec::batch},        {"image-size", &GenSpec::imageSize},
                              {"classes", &GenSpec::numClasses}, {"layers", &GenSpec::layers},
                              {"seq", &GenSpec::seqLen},         {"hidden", &GenSpec::hidden},
                              {"heads", &GenSpec::heads},        {"vocab", &GenSpec::vocab},
                              {"nodes", &GenSpec::nodes},        {"width", &GenSpec::width},
                              {"kv-heads", &GenSpec::kvHeads},   {"intermediate", &GenSpec::intermediate},
                              {"head-dim", &GenSpec::headDim},   {"experts", &GenSpec::experts},
                              {"experts-used", &GenSpec::expertsUsed}, {"expert-ffn", &GenSpec::expertFfn},
                              {"shared-ffn", &GenSpec::sharedFfn},     {"sliding-window", &GenSpec::slidingWindow},
                              {"sliding-period", &GenSpec::slidingPeriod}};
  struct TextKey {
    const char* name;
    std::string GenSpec::*field;
  };
  static const TextKey kTextKeys[] = {{"phase", &GenSpec::phase}, {"dtype", &GenSpec::dtype}, {"quant", &GenSpec::quant}};
  for (const auto& kv : split(body.substr(q + 1), '&')) {
    const auto eq = kv.find('=');
    std::string key = trim(kv.substr(0, eq));
    std::replace(key.begin(), key.end(), '_', '-');
    const std::string value = eq == std::string::npos ? "" : trim(kv.substr(eq + 1));
    int64_t n = 0;
    if (key == "preset") {  // a published decoder's shape; keys after it override its fields
      if (auto st = applyDecoderPreset(value, spec); !st) return makeError(ref, ": ", st.message());
      continue;
    }
    if (key == "weights") {
      if (value != "" && value != "1" && value != "true" && value != "0" && value != "false")
        return makeError(ref, ": weights must be true or false");
      spec.weights = value == "" || value == "1" || value == "true";
      continue;
    }
    const TextKey* tk = nullptr;
    for (const auto& c : kTextKeys)
      if (key == c.name) tk = &c;
    if (tk) {
      if (value.empty()) return makeError(ref, ": '", kv, "' is not KEY=VALUE");
      spec.*(tk->field) = value;  // checked by generateModel
      continue;
    }
    if (eq == std::string::npos || !parseInt64(value, n)) return makeError(ref, ": '", kv, "' is not KEY=INTEGER");
    if (key == "seed") {
      if (n < 0) return makeError(ref, ": seed must be >= 0");
      spec.seed = static_cast<uint64_t>(n);
      continue;
    }
    const Key* k = nullptr;
    for (const auto& c : kKeys)
      if (key == c.name) k = &c;
    if (!k) {
      std::vector<std::string> names{"weights", "seed"};
      for (const auto& c : kKeys) names.emplace_back(c.name);
      for (const auto& c : kTextKeys) names.emplace_back(c.name);
      return makeError(ref, ": unknown parameter '", key, "' (parameters: ", join(names, ", "), ")");
    }
    spec.*(k->field) = n;
  }
  return spec;
}

Result<bool> isTaskGraphFile(const std::string& path) {
  if (isGeneratorRef(path) || isGgufRef(path) || isWorkloadFile(path)) return false;  // a workload: loadModel merges its models
  return isInstanceFile(path);
}

namespace {

/// A GGUF file ("model.gguf?phase=decode&seq=4096"): its header's decoder, generated and imported.
Result<Graph> loadGgufModel(const std::string& ref, const ImportOptions& opts) {
  auto parsed = parseGgufRef(ref);
  if (!parsed) return Error{parsed.message()};
  const auto& [path, gopts] = *parsed;
  auto file = readGgufHeader(path);
  if (!file) return Error{file.message()};
  auto spec = ggufToSpec(*file, gopts);
  if (!spec) return Error{spec.message()};
  auto bytes = generateModel(*spec);
  if (!bytes) return makeError(path, ": ", bytes.message());
  auto g = importOnnxBytes(*bytes, path, opts);
  if (!g) return g;
  // The graph's weights against the file's tensors: same elements (the architecture read right), and the
  // file's tensors the graph leaves out (biases, q/k norms, attention sinks) said in a note.
  int64_t leftOut = 0, leftOutBytes = 0;
  for (const auto& t : file->tensors) {
    const ValueId id = g->findValue(t.name);
    if (id == kNone) {
      ++leftOut;
      leftOutBytes += t.bytes();
      continue;
    }
    const Value& v = g->values[static_cast<size_t>(id)];
    if (v.numElements() != t.elements())
      return makeError(path, ": tensor '", t.name, "' has ", std::to_string(t.elements()), " elements in the file, ",
                       std::to_string(v.numElements()), " in the ", file->architecture(), " graph built from its metadata");
  }
  g->sourcePath = path;
  g->notes.push_back("GGUF " + file->architecture() + " (version " + std::to_string(file->version) + ", " +
                     std::to_string(file->tensors.size()) + " tensors) read from its header: " + gopts.phase + ", " +
                     std::to_string(gopts.seq) + (gopts.phase == "decode" ? " cached tokens" : " prompt tokens"));
  if (leftOut > 0)
    g->notes.push_back(std::to_string(leftOut) + " tensors of the file are not in the graph (biases, norms of q/k, "
                       "attention sinks): " + std::to_string(leftOutBytes) + " bytes not counted");
  return g;
}

}  // namespace

Result<Graph> loadModel(const std::string& path, const std::vector<std::string>& dims) {
  if (isWorkloadFile(path)) return loadWorkloadGraph(path, dims);  // one round of its models as one graph
  ImportOptions opts;
  for (const auto& d : dims) {
    auto b = parseDimBinding(d);
    if (!b) return makeError("--dim ", d, ": ", b.message());
    opts.dims.push_back(*b);
  }
  if (isGgufRef(path)) return loadGgufModel(path, opts);
  if (!isGeneratorRef(path)) return importOnnxFile(path, opts);
  auto spec = parseGeneratorRef(path);
  if (!spec) return Error{spec.message()};
  auto bytes = generateModel(*spec);
  if (!bytes) return makeError(path, ": ", bytes.message());
  return importOnnxBytes(*bytes, path, opts);
}

Result<Problem> problemFromGraph(Graph g, Platform platform, const std::string& modelName, LinkScale scale) {
  Problem p;
  scaleLinks(platform, scale);
  auto work = characteriseAll(g);
  auto t = buildCostTable(g, work, platform);
  if (!t) return Error{t.message()};
  p.table = std::move(t).value();
  p.id.modelFile = modelName;
  p.id.modelSha256 = g.graphSha256;
  p.id.platformName = platform.name;
  p.graph = std::move(g);
  p.platform = std::move(platform);
  return p;
}

Result<Problem> loadProblem(const std::string& model, const std::string& platform, const std::vector<std::string>& dims,
                            LinkScale scale, const InstanceOptions& instance) {
  auto taskGraph = isTaskGraphFile(model);
  if (!taskGraph) return Error{taskGraph.message()};
  if (*taskGraph) {
    Problem p;
    auto inst = readInstanceFile(model, instance);
    if (!inst) return Error{inst.message()};
    p.table = std::move(inst->table);
    if (!scale.identity()) scaleLinks(p.table, scale);
    p.id.modelFile = baseName(model);
    p.id.modelSha256 = inst->sha256;
    p.id.platformName = kInstancePlatformName;
    if (!platform.empty())
      p.notes.push_back(model + " is a task graph; it carries its own devices, --platform is ignored");
    return p;
  }
  if (platform.empty()) return makeError(model, ": an ONNX model needs --platform (see partex-cli platforms)");
  auto plat = loadPlatform(platform);
  if (!plat) return Error{plat.message()};
  auto g = loadModel(model, dims);
  if (!g) return Error{g.message()};
  return problemFromGraph(std::move(g).value(), std::move(plat).value(),
                          isGeneratorRef(model) ? model : baseName(model), scale);
}

std::string workloadModelPath(const std::string& model, const std::string& workloadFile) {
  const std::filesystem::path dir = std::filesystem::path(workloadFile).parent_path();
  if (isGeneratorRef(model) || !std::filesystem::path(model).is_relative() || dir.empty()) return model;
  return (dir / model).string();
}

Result<std::vector<Problem>> loadWorkloadProblems(const Workload& w, const std::string& workloadFile,
                                                  const std::string& platform) {
  std::vector<Problem> problems;
  problems.reserve(w.models.size());
  for (const auto& m : w.models) {
    auto p = loadProblem(workloadModelPath(m.model, workloadFile), platform, {});  // its notes (a task graph's ignored platform) are not for a workload
    if (!p) return makeError(workloadFile, ": model \"", m.name, "\": ", p.message());
    if (!p->platform)
      return makeError(workloadFile, ": model \"", m.name,
                       "\": a task graph carries its own devices; a workload needs models (ONNX files or gen: references) on one platform");
    problems.push_back(std::move(p).value());
  }
  return problems;
}

}  // namespace partex
