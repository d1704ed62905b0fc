// bench_flow: the default measured flow of a user on this machine, end to end through partex-cli, for
// every shared model (issue 11, part 2):
//   partex-cli profile MODEL -o p.json                                  (all devices of this-machine)
//   partex-cli schedule MODEL --platform this-machine --profile p.json --algo A -o plan.json
//   partex-cli execute MODEL --plan plan.json --profile p.json --json
// for A in best, heft, single. Each of --rounds rounds profiles the model again and executes every plan
// right after with that profile (this VM's speed changes in phases of seconds); a plan's error is the
// median over the rounds of (predicted - measured) / measured, and its columns are the medians.
// `execute` discards and repeats runs in which its threads got less than 90% of their CPUs; the table
// says how many. Prints Markdown: one row per plan, then the error summary. Each plan's row also gives
// the CPUs' speed during the run over when profiled (execute's speed probes: a time ratio, the slowest
// and fastest device of the plan) and the prediction rescaled to the run's speed, with its error.
// Usage: bench_flow [MODELS_DIR] [--cli PATH] [--rounds R] [--models a.onnx,b.onnx] [--algos a,b]
//                   [--work DIR] [--reps N] [--suite DIR]
// --suite DIR runs the models of a suite folder's manifest.json (scripts/models/fetch_suite.sh,
// docs/model-suite.md) instead of the shared models, with their dims and fixed input files.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../suitemanifest.h"
#include "../benchutil.h"

namespace fs = std::filesystem;

namespace {
using partex::bench::loadAverage;
using partex::bench::cpuModel;
using partex::bench::median;

/// The shared models with the input bindings a user must give (the PP-OCR ones have symbolic sizes).
struct ModelCase {
  std::string file;
  std::vector<std::string> dims;
  std::vector<std::string> inputs;  ///< NAME=FILE for execute's --input (a suite's fixed inputs).
  std::string path;                 ///< Full path; "" = dir / file.
};

/// The models of a suite folder's manifest.json (bench/suitemanifest.h). Throws on a bad manifest.
std::vector<ModelCase> suiteModels(const fs::path& suiteDir) {
  partex::bench::Suite suite;
  std::string error;
  if (!partex::bench::readSuiteManifest(suiteDir.string(), suite, error)) throw std::runtime_error(error);
  std::vector<ModelCase> out;
  for (const auto& m : suite.models) out.push_back({m.name, m.dims, m.inputs, m.path});
  return out;
}

const std::vector<ModelCase> kModels = {
    {"mnist.onnx", {}, {}, {}},
    {"light_squeezenet.onnx", {}, {}, {}},
    {"light_shufflenet.onnx", {}, {}, {}},
    {"Ultraface.version-RFB-320.onnx", {}, {}, {}},
    {"yolox_nano.onnx", {}, {}, {}},
    {"light_inception_v1.onnx", {}, {}, {}},
    {"light_inception_v2.onnx", {}, {}, {}},
    {"light_resnet50.onnx", {}, {}, {}},
    {"light_densenet121.onnx", {}, {}, {}},
    {"light_bvlc_alexnet.onnx", {}, {}, {}},
    {"light_zfnet512.onnx", {}, {}, {}},
    {"light_vgg19.onnx", {}, {}, {}},
    {"ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x:0=1", "x:2=48", "x:3=192"}, {}, {}},
    {"ch_PP-OCRv4_det_infer.onnx", {"x:0=1", "x:2=640", "x:3=640"}, {}, {}},
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Runs a shell command; returns its exit code and standard output.
int run(const std::string& cmd, std::string& out) {
  out.clear();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf{};
  size_t k;
  while ((k = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), k);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

struct PlanRow {
  std::string model, algo, devices;
  std::vector<double> predictedRounds, measured, share;  ///< Per round.
  /// Per round: the prediction at the CPUs' speed during the run (execute's predicted_at_run_speed_us,
  /// -1 when it had none), and the slowest and fastest device's speed then over when profiled.
  std::vector<double> predictedAtRunSpeed, slowest, fastest;
  int discarded = 0, switches = 0, disturbedRounds = 0;
  double sleeps = 0;
  bool outputsMatch = true;
  std::string error;  ///< Set when a step failed.
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "../shared/models", cli, work, modelList, algoList = "best,heft,single", suite;
  int rounds = 3, reps = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--cli")
      cli = next();
    else if (a == "--rounds")
      rounds = std::max(1, std::atoi(next().c_str()));
    else if (a == "--reps")
      reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--models")
      modelList = next();
    else if (a == "--algos")
      algoList = next();
    else if (a == "--work")
      work = next();
    else if (a == "--suite")
      suite = next();
    else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: bench_flow [MODELS_DIR] [--cli PATH] [--rounds R] [--reps N] [--models a,b] [--algos a,b] "
          "[--work DIR] [--suite DIR]\n");
      return 0;
    } else
      dir = a;
  }
  if (cli.empty()) {
    std::error_code ec;
    cli = (fs::read_symlink("/proc/self/exe", ec).parent_path() / "partex-cli").string();
  }
  if (!fs::exists(cli)) {
    std::fprintf(stderr, "bench_flow: no partex-cli at %s (use --cli)\n", cli.c_str());
    return 2;
  }
  if (!suite.empty()) dir = suite;
  if (!fs::is_directory(dir)) {
    std::printf("bench_flow: skipped: no models folder %s\n", dir.c_str());
    return 0;
  }
  std::vector<ModelCase> candidates = kModels;
  if (!suite.empty()) {
    try {
      candidates = suiteModels(suite);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_flow: %s\n", e.what());
      return 2;
    }
  }
  if (work.empty()) work = (fs::temp_directory_path() / ("partex-bench-flow-" + std::to_string(getpid()))).string();
  fs::create_directories(work);
  const auto algos = split(algoList);
  std::vector<ModelCase> models;
  const auto only = split(modelList);
  for (const auto& m : candidates)
    if (only.empty() || std::find(only.begin(), only.end(), m.file) != only.end()) models.push_back(m);

  const auto now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  const double loadBefore = loadAverage();
  std::printf("### Default measured flow, predicted against measured (bench_flow)\n\n");
  std::printf(
      "%s; %s, %ld CPUs; load average %.2f at the start; %d interleaved rounds of `execute` (%d timed "
      "runs each, disturbed runs discarded and repeated by execute)\n\n",
      date, cpuModel().c_str(), sysconf(_SC_NPROCESSORS_ONLN), loadBefore, rounds, reps);
  std::fflush(stdout);

  std::vector<PlanRow> rows;
  for (const auto& mc : models) {
    const std::string path = mc.path.empty() ? (fs::path(dir) / mc.file).string() : mc.path;
    if (!fs::exists(path)) {
      std::fprintf(stderr, "bench_flow: %s absent, skipped\n", mc.file.c_str());
      continue;
    }
    std::string dims;
    for (const auto& d : mc.dims) dims += " --dim " + quote(d);
    std::string inputs;
    for (const auto& in : mc.inputs) inputs += " --input " + quote(in);
    const std::string stem = (fs::path(work) / fs::path(mc.file).stem()).string();
    const std::string profile = stem + ".profile.json";
    std::string out;
    const auto p0 = std::chrono::steady_clock::now();
    if (run(quote(cli) + " profile " + quote(path) + dims + inputs + " -o " + quote(profile) + " -q --force 2>&1",
            out) != 0) {
      PlanRow r;
      r.model = mc.file;
      r.algo = "profile";
      r.error = out.substr(0, out.find('\n'));
      rows.push_back(r);
      continue;
    }
    const double profileSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
    std::fprintf(stderr, "bench_flow: %s profiled in %.1f s\n", mc.file.c_str(), profileSec);
    std::vector<PlanRow> mine;
    for (const auto& algo : algos) {
      PlanRow r;
      r.model = mc.file;
      r.algo = algo;
      const std::string plan = stem + "." + algo + ".plan.json";
      if (run(quote(cli) + " schedule " + quote(path) + dims + " --platform this-machine --profile " + quote(profile) +
                  " --algo " + quote(algo) + " -o " + quote(plan) + " --json 2>/dev/null",
              out) != 0) {
        r.error = "schedule failed";
        mine.push_back(r);
        continue;
      }
      mine.push_back(r);
    }
    // Each round profiles again and executes every plan right after, with that round's profile: the VM's
    // speed changes in phases of seconds, so a profile taken a minute before the execution would add
    // the phase change to the error. The plans stay the ones scheduled on the first profile, as a user's.
    for (int round = 0; round < rounds; ++round) {
      const std::string roundProfile = stem + ".round" + std::to_string(round) + ".profile.json";
      if (round > 0 && run(quote(cli) + " profile " + quote(path) + dims + inputs + " -o " + quote(roundProfile) +
                               " -q --force 2>&1",
                           out) != 0) {
        for (auto& r : mine) r.error = "profile failed: " + out.substr(0, out.find('\n'));
        break;
      }
      const std::string& useProfile = round > 0 ? roundProfile : profile;
      for (auto& r : mine) {
        if (!r.error.empty()) continue;
        const std::string plan = stem + "." + r.algo + ".plan.json";
        if (run(quote(cli) + " execute " + quote(path) + dims + " --plan " + quote(plan) + " --profile " +
                    quote(useProfile) + inputs + " --reps " + std::to_string(reps) + " --json 2>/dev/null",
                out) != 0) {
          r.error = "execute failed: " + out.substr(0, 200);
          continue;
        }
        try {
          const auto j = nlohmann::json::parse(out);
          r.predictedRounds.push_back(j.at("predicted_makespan_us").get<double>());
          r.measured.push_back(j.at("measured_makespan_us").get<double>());
          r.share.push_back(j.at("cpu_share").get<double>());
          const nlohmann::json atRun = j.value("predicted_at_run_speed_us", nlohmann::json());
          r.predictedAtRunSpeed.push_back(atRun.is_number() ? atRun.get<double>() : -1.0);
          double lo = 0, hi = 0;
          const nlohmann::json speeds = j.value("cpu_speed_vs_profile", nlohmann::json::object());
          for (const auto& [dev, f] : speeds.items()) {
            lo = lo == 0 ? f.get<double>() : std::min(lo, f.get<double>());
            hi = std::max(hi, f.get<double>());
          }
          r.fastest.push_back(lo);
          r.slowest.push_back(hi);
          r.discarded += j.value("disturbed_runs_discarded", 0);
          r.disturbedRounds += j.value("disturbed", false) ? 1 : 0;
          r.switches = j.value("mode_switches_per_run", 0);
          r.sleeps += j.value("sleeps_per_run", 0.0) / rounds;
          r.outputsMatch = r.outputsMatch && j.value("outputs_match", false);
          std::map<std::string, int> count;
          for (const auto& op : j.at("ops")) ++count[op.at("device").get<std::string>()];
          std::string devs;
          for (const auto& [d, c] : count) devs += (devs.empty() ? "" : ", ") + d + " " + std::to_string(c);
          r.devices = devs;
        } catch (const std::exception& e) {
          r.error = std::string("bad JSON from execute: ") + e.what();
        }
      }
    }
    for (auto& r : mine) rows.push_back(r);
  }

  std::printf(
      "| model | plan | devices (operators) | predicted us | measured us | error | CPU time ratio run/profile | "
      "at run speed us | error at run speed | cpu_share | switches/run | discarded runs | outputs "
      "|\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  std::vector<double> errs, runSpeedErrs;
  std::map<std::string, std::vector<double>> errsByAlgo;
  int discarded = 0, over20 = 0, disturbed = 0, runSpeedOver20 = 0;
  for (const auto& r : rows) {
    if (!r.error.empty() || r.measured.empty()) {
      std::printf("| %s | %s | error: %s | | | | | | | | | | |\n", r.model.c_str(), r.algo.c_str(), r.error.c_str());
      continue;
    }
    // At the CPUs' speed during the run: a virtual CPU changes speed in phases (up to 1.5x here), which
    // no profile taken at another moment can know; this error is the model's given both speeds.
    std::vector<double> atRunErrs, atRunPred;
    for (size_t k = 0; k < r.measured.size() && k < r.predictedAtRunSpeed.size(); ++k)
      if (r.predictedAtRunSpeed[k] >= 0) {
        atRunPred.push_back(r.predictedAtRunSpeed[k]);
        atRunErrs.push_back((r.predictedAtRunSpeed[k] - r.measured[k]) / r.measured[k]);
      }
    std::string atRunCells = "| - | - |";
    if (!atRunErrs.empty()) {
      const double e = median(atRunErrs);
      runSpeedErrs.push_back(std::fabs(e));
      if (std::fabs(e) > 0.20) ++runSpeedOver20;
      char buf[96];
      std::snprintf(buf, sizeof buf, "| %.0f | %+.1f%% |", median(atRunPred), e * 100.0);
      atRunCells = buf;
    }
    char ratio[64];
    const double lo = median(r.fastest), hi = median(r.slowest);
    if (hi <= 0)
      std::snprintf(ratio, sizeof ratio, "-");
    else if (std::fabs(hi - lo) < 0.005)
      std::snprintf(ratio, sizeof ratio, "%.2f", hi);
    else
      std::snprintf(ratio, sizeof ratio, "%.2f-%.2f", lo, hi);
    const double meas = median(r.measured), pred = median(r.predictedRounds);
    std::vector<double> roundErrs;
    for (size_t k = 0; k < r.measured.size(); ++k)
      roundErrs.push_back((r.predictedRounds[k] - r.measured[k]) / r.measured[k]);
    const double err = median(roundErrs);
    errs.push_back(std::fabs(err));
    errsByAlgo[r.algo].push_back(std::fabs(err));
    discarded += r.discarded;
    disturbed += r.disturbedRounds;
    if (std::fabs(err) > 0.20) ++over20;
    std::printf("| %s | %s | %s | %.0f | %.0f | %+.1f%% | %s %s %.2f | %d | %d | %s |\n", r.model.c_str(),
                r.algo.c_str(), r.devices.c_str(), pred, meas, err * 100.0, ratio, atRunCells.c_str(), median(r.share),
                r.switches, r.discarded, r.outputsMatch ? "match" : "DIFFER");
  }
  std::printf("\n| plans | median abs error | largest abs error | plans above 20%% |\n|---|---:|---:|---:|\n");
  for (const auto& [algo, v] : errsByAlgo)
    std::printf("| %s (%zu) | %.1f%% | %.1f%% | %ld |\n", algo.c_str(), v.size(), median(v) * 100.0,
                *std::max_element(v.begin(), v.end()) * 100.0,
                static_cast<long>(std::count_if(v.begin(), v.end(), [](double e) { return e > 0.20; })));
  if (!errs.empty())
    std::printf("| all (%zu) | %.1f%% | %.1f%% | %d |\n", errs.size(), median(errs) * 100.0,
                *std::max_element(errs.begin(), errs.end()) * 100.0, over20);
  if (!runSpeedErrs.empty())
    std::printf("| all, at run speed (%zu) | %.1f%% | %.1f%% | %d |\n", runSpeedErrs.size(),
                median(runSpeedErrs) * 100.0, *std::max_element(runSpeedErrs.begin(), runSpeedErrs.end()) * 100.0,
                runSpeedOver20);
  std::printf(
      "\nDisturbed runs discarded and repeated by execute: %d; rounds that still kept disturbed runs: %d; "
      "load average %.2f at the end.\n",
      discarded, disturbed, loadAverage());
  std::error_code ec;
  fs::remove_all(work, ec);
  return 0;
}
