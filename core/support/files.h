#pragma once
/// \file File helpers: whole-file reads with clear errors, and atomic writes (temporary file, then
/// rename) so that a failed or interrupted export never leaves a half-written file behind.

#include <string>

#include "support/result.h"

namespace partex {

/// Reads a whole file. Errors name the file and the reason (missing, a directory, unreadable).
Result<std::string> readFile(const std::string& path);
/// Writes `data` to `path` through a temporary file in the same directory and a rename.
Status writeFileAtomic(const std::string& path, const std::string& data);
/// The last path component, for messages.
std::string baseName(const std::string& path);

}  // namespace partex
