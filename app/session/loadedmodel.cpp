#include "session/loadedmodel.h"

#include "problem/problem.h"

namespace partex::gui {

Result<std::shared_ptr<const LoadedModel>> loadModel(const std::string& path, const std::vector<std::string>& dims) {
  // Core's one loader: ONNX files, generator references and GGUF headers alike.
  auto g = partex::loadModel(path, dims);
  if (!g) return Error{g.message()};
  auto m = std::make_shared<LoadedModel>();
  m->path = path;
  m->dims = dims;
  m->graph = std::move(g).value();
  m->work = characteriseAll(m->graph);
  m->total = summarise(m->graph, m->work);
  return std::shared_ptr<const LoadedModel>(std::move(m));
}

std::string LoadedInstance::formatTitle() const {
  if (format == "saga") return "SAGA instance";
  if (format == "wfcommons") return "WfCommons workflow";
  return "task graph";
}

}  // namespace partex::gui
