#include "testutil.h"

#include <QProcess>
#include <QTemporaryDir>

#include <cstdlib>
#include <filesystem>
#include <memory>

namespace partex::test {

std::string sharedModelsDir() {
  const char* env = std::getenv("PARTEX_SHARED_MODELS");
  std::string dir = env ? env : "../shared/models";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  return dir;
}

std::string sharedModel(const std::string& file) {
  auto dir = sharedModelsDir();
  return dir.empty() ? std::string() : dir + "/" + file;
}

std::string testDataDir() {
  const char* env = std::getenv("PARTEX_TEST_DATA");
  return env ? env : "tests/data";
}

QString cliPath() {
  const char* env = std::getenv("PARTEX_CLI");
  return QString::fromLocal8Bit(env ? env : "partex-cli");
}

CliRun runCli(const QStringList& args, int timeoutMs) {
  QProcess p;
  p.start(cliPath(), args);
  if (!p.waitForFinished(timeoutMs)) return {};
  return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

std::string tempDir() {
  static std::unique_ptr<QTemporaryDir> dir = std::make_unique<QTemporaryDir>();
  return dir->path().toStdString();
}

}  // namespace partex::test
