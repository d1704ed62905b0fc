// The bundled presets (resources/platforms/*.json, compiled in), "this-machine", and name-or-path lookup.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "embedded_presets.h"
#include "platform/platform.h"
#include "support/files.h"

namespace partex {

namespace {
constexpr const char* kThisMachine = "this-machine";

std::string presetList() {
  std::string s;
  for (const auto& n : presetNames()) s += (s.empty() ? "" : ", ") + n;
  return s;
}
}  // namespace

std::vector<std::string> presetNames() {
  std::vector<std::string> names;
  for (const auto& [name, text] : embeddedPresets()) names.push_back(name);
  std::sort(names.begin(), names.end());
  names.push_back(kThisMachine);
  return names;
}

Result<Platform> loadPreset(const std::string& name) {
  if (name == kThisMachine) {
    static const Platform measured = measureThisMachine();  // Thread-safe, measured once per process.
    return measured;
  }
  for (const auto& [n, text] : embeddedPresets())
    if (n == name) return parsePlatform(text, "preset " + n + ".json");
  return makeError("unknown platform preset '", name, "' (presets: ", presetList(), ")");
}

Result<Platform> loadPlatform(const std::string& nameOrPath) {
  const auto names = presetNames();
  if (std::find(names.begin(), names.end(), nameOrPath) != names.end()) return loadPreset(nameOrPath);
  std::error_code ec;
  bool looksLikePath = nameOrPath.find('/') != std::string::npos || nameOrPath.find('\\') != std::string::npos ||
                       nameOrPath.find('.') != std::string::npos;
  if (looksLikePath || std::filesystem::exists(nameOrPath, ec)) return loadPlatformFile(nameOrPath);
  return makeError(nameOrPath, ": neither a platform preset (", presetList(), ") nor a file");
}

}  // namespace partex
