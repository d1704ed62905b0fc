// partex-cli: the headless front end over core. Every subcommand prints a clear one-line error and
// exits with 2 on bad input or bad usage.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"partex-cli: partition explorer for deep-learning models on heterogeneous processors"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "partex-cli 0.1.0");
  int exitCode = 0;
  partex::cli::addInspect(app, exitCode);
  partex::cli::addPlatforms(app, exitCode);
  partex::cli::addGenerate(app, exitCode);
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
