#include "support/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace partex {

Result<std::string> readFile(const std::string& path) {
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return makeError(path, ": no such file");
  if (std::filesystem::is_directory(st)) return makeError(path, ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open (", std::strerror(errno), ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return makeError(path, ": read error");
  return ss.str();
}

Status writeFileAtomic(const std::string& path, const std::string& data) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return makeError(path, ": directory ", dir.string(), " does not exist");
  std::random_device rd;
  fs::path tmp = dir / (".partex-tmp-" + target.filename().string() + "-" + std::to_string(rd()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return makeError(path, ": cannot write (", std::strerror(errno), ")");
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      return makeError(path, ": write failed (disk full?)");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    return makeError(path, ": cannot replace file (", ec.message(), ")");
  }
  return Status::ok();
}

std::string baseName(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace partex
