// partex-cli: the headless front end over core. Every subcommand prints a clear one-line error and
// exits with 2 on bad input or bad usage.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <string>

#include "backend/backend.h"
#include "cmd_profile.h"
#include "commands.h"
#include "profile/calibration.h"

int main(int argc, char** argv) {
  // The this-machine platform is calibrated on the real CPU kernels when first loaded (cached per machine).
  partex::installThisMachineCalibration(partex::registerBuiltinBackends);
  CLI::App app{"partex-cli: partition explorer for deep-learning models on heterogeneous processors"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "partex-cli 0.1.0");
  int exitCode = 0;
  partex::cli::addInspect(app, exitCode);
  partex::cli::addPlatforms(app, exitCode);
  partex::cli::addGenerate(app, exitCode);
  partex::cli::addSched(app, exitCode);
  partex::cli::addProfile(app, exitCode);
  partex::cli::addExecute(app, exitCode);
  partex::cli::addRender(app, exitCode);
  partex::cli::addSweep(app, exitCode);
  partex::cli::addLlm(app, exitCode);
  partex::cli::addWorkload(app, exitCode);
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "partex-cli: unknown command '" << argv[1] << "' (commands: " << names << ")\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "partex-cli: " << e.what() << " (see partex-cli --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "partex-cli: internal error: " << e.what() << "\n";
    return 2;
  }
  return exitCode;
}
