#include "session/loadedmodel.h"

#include "onnx/importer.h"

namespace partex::gui {

Result<std::shared_ptr<const LoadedModel>> loadModel(const std::string& path, const std::vector<std::string>& dims) {
  ImportOptions opts;
  for (const auto& d : dims) {
    auto b = parseDimBinding(d);
    if (!b) return makeError("--dim ", d, ": ", b.message());
    opts.dims.push_back(*b);
  }
  auto g = importOnnxFile(path, opts);
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
