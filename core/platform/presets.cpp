// The bundled presets (resources/platforms/*.json, compiled in), "this-machine", and name-or-path lookup.
#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "embedded_presets.h"
#include "platform/platform.h"
#include "support/files.h"

namespace partex {

namespace {
constexpr const char* kThisMachine = "this-machine";

/// The installed provider and the this-machine platform built with it (once per process and provider).
/// Two mutexes: loadPreset holds `platformMu` while it builds, and measureThisMachine reads the provider.
struct ThisMachineState {
  std::mutex providerMu;
  ThisMachineProvider provider;
  std::mutex platformMu;
  std::optional<Platform> measured;
};

ThisMachineState& thisMachineState() {
  static ThisMachineState s;
  return s;
}

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
    auto& s = thisMachineState();
    std::lock_guard lk(s.platformMu);  // Built once per process (and per installed provider).
    if (!s.measured) s.measured = measureThisMachine();
    return *s.measured;
  }
  for (const auto& [n, text] : embeddedPresets())
    if (n == name) return parsePlatform(text, "preset " + n + ".json");
  return makeError("unknown platform preset '", name, "' (presets: ", presetList(), ")");
}

void setThisMachineProvider(ThisMachineProvider provider) {
  auto& s = thisMachineState();
  {
    std::lock_guard lk(s.providerMu);
    s.provider = std::move(provider);
  }
  std::lock_guard lk(s.platformMu);
  s.measured.reset();
}

ThisMachineProvider thisMachineProvider() {
  auto& s = thisMachineState();
  std::lock_guard lk(s.providerMu);
  return s.provider;
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
