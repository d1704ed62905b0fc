// partex-cli inspect MODEL [--dim ...] [--json]: summary and per-operator table of a model.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "commands.h"
#include "cost/work.h"
#include "support/files.h"
#include "support/strings.h"

namespace partex::cli {

namespace {

nlohmann::json tensorJson(const Value& v) {
  nlohmann::json shape = nlohmann::json::array();
  for (int64_t d : v.shape) shape.push_back(d);
  return {{"name", v.name}, {"dtype", dtypeName(v.dtype)}, {"shape", shape}};
}

std::string outputShapes(const Graph& g, const Node& n) {
  std::vector<std::string> parts;
  for (ValueId v : n.outputs)
    if (v >= 0) parts.push_back(g.values[static_cast<size_t>(v)].shapeKnown ? shapeToString(g.values[static_cast<size_t>(v)].shape) : "?");
  return join(parts, " ");
}

int runInspect(const std::string& path, const std::vector<std::string>& dims, bool asJson) {
  auto g = loadModel(path, dims);
  if (!g) return fail(g.message());
  const Graph& graph = *g;
  auto work = characteriseAll(graph);
  auto total = summarise(graph, work);
  std::map<std::string, int> histogram;
  for (const auto& n : graph.nodes) ++histogram[n.opType];

  if (asJson) {
    nlohmann::json j;
    j["model"] = baseName(path);
    j["operators"] = graph.nodes.size();
    j["op_types"] = histogram;
    j["macs"] = total.macs;
    j["flops"] = total.flops;
    j["param_bytes"] = total.paramBytes;
    j["peak_activation_bytes"] = total.peakActivationBytes;
    j["opset"] = graph.opsetVersion;
    j["warnings"] = graph.warnings;
    j["notes"] = graph.notes;
    j["inputs"] = nlohmann::json::array();
    for (ValueId v : graph.inputs) j["inputs"].push_back(tensorJson(graph.values[static_cast<size_t>(v)]));
    j["outputs"] = nlohmann::json::array();
    for (ValueId v : graph.outputs) j["outputs"].push_back(tensorJson(graph.values[static_cast<size_t>(v)]));
    auto& nodes = j["nodes"] = nlohmann::json::array();
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node& n = graph.nodes[i];
      const OpWork& w = work[i];
      nlohmann::json shapes = nlohmann::json::array();
      for (ValueId v : n.outputs) {
        nlohmann::json s = nlohmann::json::array();
        if (v >= 0)
          for (int64_t d : graph.values[static_cast<size_t>(v)].shape) s.push_back(d);
        shapes.push_back(s);
      }
      nodes.push_back({{"name", n.name},
                       {"op_type", n.opType},
                       {"class", opClassName(w.cls)},
                       {"macs", w.macs},
                       {"flops", w.flops},
                       {"bytes_in", w.bytesRead()},
                       {"bytes_in_weights", w.bytesReadWeights},
                       {"bytes_out", w.bytesWritten},
                       {"output_shapes", shapes}});
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  std::printf("Model        %s (%s, opset %lld)\n", baseName(path).c_str(),
              graph.producerName.empty() ? "unknown producer" : graph.producerName.c_str(),
              static_cast<long long>(graph.opsetVersion));
  std::printf("Operators    %zu (after folding constants)\n", graph.nodes.size());
  std::printf("MACs         %s (%s)\n", withCommas(static_cast<uint64_t>(total.macs)).c_str(), humanCount(static_cast<double>(total.macs)).c_str());
  std::printf("FLOPs        %s (%s)\n", withCommas(static_cast<uint64_t>(total.flops)).c_str(), humanCount(static_cast<double>(total.flops)).c_str());
  std::printf("Parameters   %s\n", humanBytes(static_cast<double>(total.paramBytes)).c_str());
  std::printf("Peak activations %s\n", humanBytes(static_cast<double>(total.peakActivationBytes)).c_str());
  for (ValueId v : graph.inputs) {
    const Value& val = graph.values[static_cast<size_t>(v)];
    std::printf("Input        %s %s %s\n", val.name.c_str(), dtypeName(val.dtype), shapeToString(val.shape).c_str());
  }
  for (ValueId v : graph.outputs) {
    const Value& val = graph.values[static_cast<size_t>(v)];
    std::printf("Output       %s %s %s\n", val.name.c_str(), dtypeName(val.dtype),
                val.shapeKnown ? shapeToString(val.shape).c_str() : "?");
  }
  for (const auto& w : graph.notes) std::printf("Note         %s\n", w.c_str());
  for (const auto& w : graph.warnings) std::printf("Warning      %s\n", w.c_str());
  std::vector<std::pair<std::string, int>> hist(histogram.begin(), histogram.end());
  std::stable_sort(hist.begin(), hist.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::printf("\nOp types\n");
  for (const auto& [type, count] : hist) std::printf("  %-24s %6d\n", type.c_str(), count);
  std::printf("\n%-5s %-40s %-20s %-13s %15s %15s %12s %12s  %s\n", "#", "name", "op_type", "class", "MACs", "FLOPs",
              "bytes_in", "bytes_out", "output shapes");
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    const OpWork& w = work[i];
    std::printf("%-5zu %-40s %-20s %-13s %15lld %15lld %12lld %12lld  %s\n", i, n.name.c_str(), n.opType.c_str(),
                opClassName(w.cls), static_cast<long long>(w.macs), static_cast<long long>(w.flops),
                static_cast<long long>(w.bytesRead()), static_cast<long long>(w.bytesWritten),
                outputShapes(graph, n).c_str());
  }
  return 0;
}

}  // namespace

void addInspect(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("inspect", "Summary and per-operator table of an ONNX model");
  struct Args {
    std::string model;
    std::vector<std::string> dims;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "ONNX model file")->required();
  cmd->add_option("--dim", args->dims, "Bind a symbolic input dimension: NAME=VALUE or INPUT:AXIS=VALUE")
      ->allow_extra_args(false);
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, &exitCode] { exitCode = runInspect(args->model, args->dims, args->json); });
}

}  // namespace partex::cli
