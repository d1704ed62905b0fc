#pragma once
/// \file The platform presets of resources/platforms/, compiled in: (name, JSON text) pairs.
#include <string>
#include <utility>
#include <vector>

namespace partex {
const std::vector<std::pair<std::string, std::string>>& embeddedPresets();
}
