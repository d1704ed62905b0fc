#pragma once
/// \file Helpers shared by the tests: where the shared models and test data are.

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <string>

namespace partex::test {

/// ../shared/models (from PARTEX_SHARED_MODELS); empty when the folder is absent.
std::string sharedModelsDir();
/// Full path of a shared model, or empty when the shared folder is absent.
std::string sharedModel(const std::string& file);
/// tests/data.
std::string testDataDir();
/// The partex-cli binary (from PARTEX_CLI).
QString cliPath();
/// One partex-cli run: exit code (-1 when it did not finish in time), stdout, stderr.
struct CliRun {
  int code = -1;
  QByteArray out;
  QByteArray err;
};
/// Runs partex-cli with `args` and waits up to `timeoutMs`.
CliRun runCli(const QStringList& args, int timeoutMs = 300000);
/// A fresh temporary directory path that lives for the process.
std::string tempDir();

}  // namespace partex::test

/// Skips the current test when the shared models folder is absent.
#define PARTEX_REQUIRE_SHARED_MODELS()                                                               \
  do {                                                                                              \
    if (partex::test::sharedModelsDir().empty())                                                    \
      QSKIP("../shared/models is absent: tests that need the real models are skipped");             \
  } while (0)
