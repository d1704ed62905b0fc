// partex-cli platforms [--json] [--show NAME]: the platform presets.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "commands.h"
#include "platform/platform.h"
#include "support/strings.h"

namespace partex::cli {

namespace {

int runPlatforms(bool asJson, const std::string& show) {
  if (!show.empty()) {
    auto p = loadPlatform(show);
    if (!p) return fail(p.message());
    std::cout << platformToJson(*p) << "\n";
    return 0;
  }
  nlohmann::json list = nlohmann::json::array();
  for (const auto& name : presetNames()) {
    auto p = loadPreset(name);
    if (!p) return fail(p.message());
    std::vector<std::string> ids;
    for (const auto& d : p->devices) ids.push_back(d.id);
    if (asJson) {
      nlohmann::json devices = nlohmann::json::array();
      for (const auto& d : p->devices)
        devices.push_back({{"id", d.id}, {"name", d.name}, {"kind", deviceKindName(d.kind)}});
      list.push_back({{"name", name},
                      {"description", p->description},
                      {"host", p->host},
                      {"devices", devices},
                      {"links", p->links.size()},
                      {"sources", p->sources}});
    } else {
      std::printf("%-16s %-48s %s\n", name.c_str(), join(ids, ", ").c_str(), p->description.c_str());
    }
  }
  if (asJson) std::cout << list.dump(2) << "\n";
  return 0;
}

}  // namespace

void addPlatforms(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("platforms", "List the platform presets (or print one as JSON)");
  auto asJson = std::make_shared<bool>(false);
  auto show = std::make_shared<std::string>();
  cmd->add_flag("--json", *asJson, "Print a JSON array");
  cmd->add_option("--show", *show, "Print one preset (or platform file) as JSON");
  cmd->callback([asJson, show, &exitCode] { exitCode = runPlatforms(*asJson, *show); });
}

}  // namespace partex::cli
