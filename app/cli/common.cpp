#include <iostream>

#include "commands.h"

namespace partex::cli {

Result<Problem> loadProblem(const std::string& model, const std::string& platform,
                            const std::vector<std::string>& dims, const InstanceOptions& instance) {
  auto p = partex::loadProblem(model, platform, dims, {}, instance);
  if (p)
    for (const auto& n : p->notes) std::cerr << "partex-cli: note: " << n << "\n";
  return p;
}

int fail(const std::string& message) {
  std::cerr << "partex-cli: " << message << "\n";
  return 2;
}

}  // namespace partex::cli
