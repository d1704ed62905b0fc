#pragma once
/// \file Small string helpers shared by the core, the CLI and the tests.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace partex {

/// Splits on a single character; empty fields are kept.
std::vector<std::string> split(std::string_view s, char sep);
/// Removes leading and trailing ASCII whitespace.
std::string trim(std::string_view s);
/// Joins with a separator.
std::string join(const std::vector<std::string>& parts, std::string_view sep);
/// "[1,3,224,224]"; -1 dims print as "?".
std::string shapeToString(const std::vector<int64_t>& dims);
/// Thousands separators: 4,089,184,256.
std::string withCommas(uint64_t v);
/// Human bytes: "3.2 MiB".
std::string humanBytes(double bytes);
/// Human count with SI suffix: "4.09 G".
std::string humanCount(double v);
/// Keeps a message on one line whatever the input held (names in models, plans and GGUF files are
/// arbitrary bytes): newline and carriage return become "\\n" and "\\r", other control bytes "\\xNN".
std::string oneLine(std::string_view s);
/// Parses a whole string as a signed 64-bit integer; false on any junk.
bool parseInt64(std::string_view s, int64_t& out);

}  // namespace partex
