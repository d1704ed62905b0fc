// bench_ort: Partex's CPU runtime against ONNX Runtime (issue 12, part 4), through partex-cli and
// scripts/ort/run.js as a user would run them, for every shared model. Four configurations:
//   Partex core0       partex-cli schedule MODEL -p this-machine --algo single --param device=core0 -o plan.json
//                      partex-cli execute MODEL --plan plan.json --reps 9 --warmup 2 --json
//   ORT 1 thread       taskset -c 0 node scripts/ort/run.js MODEL --threads 1 --reps 9 --warmup 2
//   Partex best plan   partex-cli profile MODEL -o p.json
//                      partex-cli schedule MODEL -p this-machine --profile p.json --algo best -o best.json
//                      partex-cli execute MODEL --plan best.json --profile p.json --reps 9 --warmup 2 --json
//   ORT 2 threads      node scripts/ort/run.js MODEL --threads 2 --reps 9 --warmup 2
// Every round runs every configuration once per model, interleaved (this VM's speed changes in phases of
// seconds); the best plan's flow (profile, schedule, execute) is repeated whole each round. Each run
// reports the median of its 9 timed runs (execute's measured_makespan_us is that median); a
// configuration's result is the minimum over the rounds of these medians. Prints Markdown: the timing
// table with the ratios Partex / ORT and the goals, then the memory table.
// Usage: bench_ort [MODELS_DIR] [--cli PATH] [--rounds R] [--models a.onnx,b.onnx] [--work DIR]
//                  [--node PATH] [--ort-script PATH] [--markdown FILE]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#ifndef PARTEX_ORT_RUN_JS
#define PARTEX_ORT_RUN_JS "scripts/ort/run.js"
#endif

namespace fs = std::filesystem;

namespace {

constexpr int kReps = 9;
constexpr int kWarmup = 2;
constexpr double kBusyLoad = 0.5;  ///< 1-minute load average above which a round is flagged as disturbed.
constexpr double kMiB = 1024.0 * 1024.0;

/// The shared models with the input bindings a user must give (the PP-OCR ones have symbolic sizes);
/// the same list as bench_flow's.
struct ModelCase {
  std::string file;
  std::vector<std::string> dims;
};

const std::vector<ModelCase> kModels = {
    {"mnist.onnx", {}},
    {"light_squeezenet.onnx", {}},
    {"light_shufflenet.onnx", {}},
    {"Ultraface.version-RFB-320.onnx", {}},
    {"yolox_nano.onnx", {}},
    {"light_inception_v1.onnx", {}},
    {"light_inception_v2.onnx", {}},
    {"light_resnet50.onnx", {}},
    {"light_densenet121.onnx", {}},
    {"light_bvlc_alexnet.onnx", {}},
    {"light_zfnet512.onnx", {}},
    {"light_vgg19.onnx", {}},
    {"ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x:0=1", "x:2=48", "x:3=192"}},
    {"ch_PP-OCRv4_det_infer.onnx", {"x:0=1", "x:2=640", "x:3=640"}},
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The first non-empty line of `s`, at most 160 characters, with '|' escaped for a Markdown table.
std::string firstLine(const std::string& s) {
  std::stringstream ss(s);
  std::string line, out;
  while (std::getline(ss, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) break;
  if (line.size() > 160) line = line.substr(0, 157) + "...";
  for (char c : line) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

/// A finished subprocess: its exit code (-1 when it did not exit normally), standard output and error.
struct Proc {
  int rc = -1;
  std::string out, err;
};

/// Runs a shell command; standard error goes through `errFile`.
Proc run(const std::string& cmd, const std::string& errFile) {
  Proc p;
  FILE* f = popen((cmd + " 2>" + quote(errFile)).c_str(), "r");
  if (!f) {
    p.err = "popen failed";
    return p;
  }
  std::array<char, 4096> buf{};
  size_t k;
  while ((k = fread(buf.data(), 1, buf.size(), f)) > 0) p.out.append(buf.data(), k);
  const int st = pclose(f);
  p.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  p.err = readText(errFile);
  return p;
}

/// "STEP failed (exit N): first line of its error output".
std::string failure(const std::string& step, const Proc& p) {
  std::string msg = firstLine(p.err);
  if (msg.empty()) msg = firstLine(p.out);
  return step + " failed (exit " + std::to_string(p.rc) + ")" + (msg.empty() ? "" : ": " + msg);
}

double loadAverage() {
  std::ifstream in("/proc/loadavg");
  double v = -1;
  in >> v;
  return v;
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

/// The first of `keys` that `j` holds as a number.
std::optional<double> numberField(const nlohmann::json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (j.contains(k) && j.at(k).is_number()) return j.at(k).get<double>();
  return std::nullopt;
}

/// One configuration of one model: its per-round medians, or the step that failed.
struct Cell {
  std::vector<double> ms;  ///< Per round: the median of the run's timed runs, milliseconds.
  std::string error;       ///< The last failure, when a round failed.
  int failedRounds = 0;
  std::optional<double> best() const {
    if (ms.empty()) return std::nullopt;
    return *std::min_element(ms.begin(), ms.end());
  }
  void fail(std::string e) {
    error = std::move(e);
    ++failedRounds;
  }
};

struct ModelRow {
  ModelCase mc;
  std::string path, dims, stem;
  Cell core0, ort1, best, ort2;
  std::string core0Plan;  ///< Set once the core0 plan is scheduled.
  std::optional<double> partexRss, ortRss, paramBytes, activationBytes;
  bool outputsMatch = true;
  std::map<std::string, int> bestDevices;  ///< Operators per device in the fastest round's best plan.
  std::string bestAlgorithm;
  double bestRoundMs = 0;
};

std::string fmtMs(const Cell& c) {
  if (auto b = c.best()) {
    char s[64];
    std::snprintf(s, sizeof s, "%.3f", *b);
    return std::string(s) + (c.failedRounds ? " (" + std::to_string(c.failedRounds) +
                                                  (c.failedRounds == 1 ? " round" : " rounds") + " failed)"
                                            : "");
  }
  return "error: " + c.error;
}

std::string fmtRatio(const Cell& partex, const Cell& ort, std::vector<double>& all) {
  const auto p = partex.best(), o = ort.best();
  if (!p || !o || *o <= 0) return "n/a";
  all.push_back(*p / *o);
  char s[32];
  std::snprintf(s, sizeof s, "%.2f", *p / *o);
  return s;
}

std::string fmtMiB(std::optional<double> bytes) {
  if (!bytes) return "n/a";
  char s[32];
  std::snprintf(s, sizeof s, "%.2f", *bytes / kMiB);
  return s;
}

/// Markdown output, kept to be printed and appended to --markdown FILE.
struct Report {
  std::string text;
  void add(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    const int n = std::vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
      std::string s(static_cast<size_t>(n) + 1, '\0');
      std::vsnprintf(s.data(), s.size(), fmt, ap2);
      s.resize(static_cast<size_t>(n));
      text += s;
    }
    va_end(ap2);
  }
};

/// The version of onnxruntime-node that run.js loads (from its package.json), or "unknown".
std::string ortVersion() {
  const char* env = std::getenv("PARTEX_ORT_DIR");
  const char* home = std::getenv("HOME");
  const fs::path dir =
      env && *env ? fs::path(env) : fs::path(home ? home : "") / ".local/share/partex/onnxruntime-node";
  try {
    const auto j = nlohmann::json::parse(readText((dir / "node_modules/onnxruntime-node/package.json").string()));
    return "onnxruntime-node " + j.at("version").get<std::string>();
  } catch (const std::exception&) {
    return "onnxruntime-node (unknown version)";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "../shared/models", cli, work, modelList, node = "node", script = PARTEX_ORT_RUN_JS, markdown;
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--cli")
      cli = next();
    else if (a == "--rounds")
      rounds = std::max(1, std::atoi(next().c_str()));
    else if (a == "--models")
      modelList = next();
    else if (a == "--work")
      work = next();
    else if (a == "--node")
      node = next();
    else if (a == "--ort-script")
      script = next();
    else if (a == "--markdown")
      markdown = next();
    else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: bench_ort [MODELS_DIR] [--cli PATH] [--rounds R] [--models a.onnx,b.onnx] [--work DIR] "
          "[--node PATH] [--ort-script PATH] [--markdown FILE]\n"
          "Partex's CPU runtime (core0; the best plan of the profiled flow) against ONNX Runtime (1 thread on "
          "core 0; 2 threads).\nONNX Runtime for Node: scripts/ort/install.sh.\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "bench_ort: unknown option %s (see --help)\n", a.c_str());
      return 2;
    } else
      dir = a;
  }
  if (cli.empty()) {
    std::error_code ec;
    cli = (fs::read_symlink("/proc/self/exe", ec).parent_path() / "partex-cli").string();
  }
  if (!fs::exists(cli)) {
    std::fprintf(stderr, "bench_ort: no partex-cli at %s (use --cli)\n", cli.c_str());
    return 2;
  }
  if (!fs::exists(script)) {
    std::fprintf(stderr, "bench_ort: no ONNX Runtime script at %s (use --ort-script)\n", script.c_str());
    return 2;
  }
  if (!fs::is_directory(dir)) {
    std::printf("bench_ort: skipped: no models folder %s\n", dir.c_str());
    return 0;
  }
  const bool ownWork = work.empty();
  if (ownWork) work = (fs::temp_directory_path() / ("partex-bench-ort-" + std::to_string(getpid()))).string();
  fs::create_directories(work);
  const std::string errFile = (fs::path(work) / "stderr.txt").string();

  // run.js loads onnxruntime-node before it reads its arguments: without a model it exits 3 when the
  // package is missing and 2 (no model given) when it is there.
  {
    const Proc probe = run(quote(node) + " " + quote(script) + " </dev/null", errFile);
    if (probe.rc == 3) {
      std::fprintf(stderr,
                   "bench_ort: ONNX Runtime for Node is not installed (%s); install it with scripts/ort/install.sh "
                   "(or point PARTEX_ORT_DIR at an installation)\n",
                   firstLine(probe.err).c_str());
      return 2;
    }
    if (probe.rc != 2) {
      std::fprintf(stderr, "bench_ort: cannot run %s %s (exit %d): %s (use --node)\n", node.c_str(), script.c_str(),
                   probe.rc, firstLine(probe.err).c_str());
      return 2;
    }
    if (run("taskset -c 0 true", errFile).rc != 0) {
      std::fprintf(stderr, "bench_ort: taskset -c 0 does not work here (util-linux's taskset is needed)\n");
      return 2;
    }
  }
  std::string nodeVersion = firstLine(run(quote(node) + " --version", errFile).out);

  std::vector<ModelRow> rows;
  const auto only = split(modelList);
  for (const auto& mc : kModels) {
    if (!only.empty() && std::find(only.begin(), only.end(), mc.file) == only.end()) continue;
    ModelRow r;
    r.mc = mc;
    r.path = (fs::path(dir) / mc.file).string();
    if (!fs::exists(r.path)) {
      std::fprintf(stderr, "bench_ort: %s absent, skipped\n", mc.file.c_str());
      continue;
    }
    for (const auto& d : mc.dims) r.dims += " --dim " + quote(d);
    r.stem = (fs::path(work) / fs::path(mc.file).stem()).string();
    rows.push_back(r);
  }
  for (const auto& m : only)
    if (std::none_of(kModels.begin(), kModels.end(), [&](const ModelCase& k) { return k.file == m; }))
      std::fprintf(stderr, "bench_ort: %s is not one of the shared models, skipped\n", m.c_str());
  if (rows.empty()) {
    std::printf("bench_ort: skipped: none of the models is in %s\n", dir.c_str());
    return 0;
  }

  const auto now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  const double loadBefore = loadAverage();
  std::vector<std::string> roundNotes;
  std::vector<double> shares;  ///< cpu_share of every Partex execute.
  std::string backend;         ///< execute's "backend": partex-cpu, oneDNN, OpenMP, ISA.
  const std::string reps = " --reps " + std::to_string(kReps) + " --warmup " + std::to_string(kWarmup);

  // Partex's execute --json: the run's median in ms (and the memory fields where execute reports them).
  auto execute = [&](ModelRow& r, Cell& c, const std::string& cmd, bool memory) -> std::optional<nlohmann::json> {
    const Proc p = run(cmd, errFile);
    // Exit 1 with a report: the outputs differ from the reference run; the timing stands, flagged.
    if (p.rc != 0 && !(p.rc == 1 && !p.out.empty() && p.out[0] == '{')) {
      c.fail(failure("execute", p));
      return std::nullopt;
    }
    try {
      auto j = nlohmann::json::parse(p.out);
      c.ms.push_back(j.at("measured_makespan_us").get<double>() / 1000.0);
      shares.push_back(j.at("cpu_share").get<double>());
      r.outputsMatch = r.outputsMatch && j.value("outputs_match", false);
      if (backend.empty()) backend = j.value("backend", "");
      if (memory) {
        if (auto v = numberField(j, {"peak_rss_bytes"})) r.partexRss = std::max(r.partexRss.value_or(0), *v);
        if (auto v = numberField(j, {"param_bytes", "parameter_bytes"})) r.paramBytes = v;
        if (auto v = numberField(j, {"peak_activation_bytes", "peak_activations_bytes"})) r.activationBytes = v;
      }
      return j;
    } catch (const std::exception& e) {
      c.fail(std::string("execute printed bad JSON: ") + e.what());
      return std::nullopt;
    }
  };
  auto ort = [&](ModelRow& r, Cell& c, const std::string& prefix, int threads) {
    const Proc p = run(prefix + quote(node) + " " + quote(script) + " " + quote(r.path) + r.dims + " --threads " +
                           std::to_string(threads) + reps,
                       errFile);
    if (p.rc != 0) {
      c.fail(failure("ORT", p));
      return;
    }
    try {
      const auto j = nlohmann::json::parse(p.out);
      c.ms.push_back(j.at("median_ms").get<double>());
      if (threads == 1)
        if (auto v = numberField(j, {"peak_rss_bytes"})) r.ortRss = std::max(r.ortRss.value_or(0), *v);
    } catch (const std::exception& e) {
      c.fail(std::string("ORT printed bad JSON: ") + e.what());
    }
  };
  auto fmtLast = [](const Cell& c) -> std::string {
    if (c.ms.empty()) return "failed";
    char s[32];
    std::snprintf(s, sizeof s, "%.3f ms", c.ms.back());
    return s;
  };

  for (int round = 0; round < rounds; ++round) {
    const double load = loadAverage();
    if (load > kBusyLoad) {
      char s[200];
      std::snprintf(s, sizeof s,
                    "Round %d: load average %.2f before the round (above %.1f): other programs were running, its "
                    "timings may be disturbed.",
                    round + 1, load, kBusyLoad);
      roundNotes.push_back(s);
      std::fprintf(stderr, "bench_ort: %s\n", s);
    }
    for (auto& r : rows) {
      const size_t before[4] = {r.core0.ms.size(), r.ort1.ms.size(), r.best.ms.size(), r.ort2.ms.size()};
      // Partex on core0: the plan needs no profile and does not change between rounds.
      if (r.core0Plan.empty()) {
        const std::string plan = r.stem + ".core0.plan.json";
        const Proc p = run(quote(cli) + " schedule " + quote(r.path) + r.dims +
                               " -p this-machine --algo single --param device=core0 -o " + quote(plan) + " --json",
                           errFile);
        if (p.rc == 0)
          r.core0Plan = plan;
        else
          r.core0.fail(failure("schedule (core0)", p));
      }
      if (!r.core0Plan.empty())
        execute(r, r.core0,
                quote(cli) + " execute " + quote(r.path) + r.dims + " --plan " + quote(r.core0Plan) + reps + " --json",
                true);
      // ONNX Runtime, one thread pinned to core 0.
      ort(r, r.ort1, "taskset -c 0 ", 1);
      // The default flow: profile, schedule the best plan on that profile, execute it.
      const std::string profile = r.stem + ".round" + std::to_string(round) + ".profile.json";
      const std::string plan = r.stem + ".round" + std::to_string(round) + ".best.plan.json";
      Proc p =
          run(quote(cli) + " profile " + quote(r.path) + r.dims + " -o " + quote(profile) + " -q --force", errFile);
      if (p.rc != 0) {
        r.best.fail(failure("profile", p));
      } else if ((p = run(quote(cli) + " schedule " + quote(r.path) + r.dims + " -p this-machine --profile " +
                              quote(profile) + " --algo best -o " + quote(plan) + " --json",
                          errFile))
                     .rc != 0) {
        r.best.fail(failure("schedule (best)", p));
      } else if (auto j = execute(r, r.best,
                                  quote(cli) + " execute " + quote(r.path) + r.dims + " --plan " + quote(plan) +
                                      " --profile " + quote(profile) + reps + " --json",
                                  false)) {
        if (r.best.ms.size() == 1 || r.best.ms.back() < r.bestRoundMs) {
          r.bestRoundMs = r.best.ms.back();
          r.bestAlgorithm = j->value("algorithm", "");
          r.bestDevices.clear();
          try {
            for (const auto& op : j->at("ops")) ++r.bestDevices[op.at("device").get<std::string>()];
          } catch (const std::exception&) {
            r.bestDevices.clear();
          }
        }
      }
      // ONNX Runtime, two threads, not pinned (the best plan may use every core too).
      ort(r, r.ort2, "", 2);
      std::fprintf(stderr, "bench_ort: round %d/%d %s: core0 %s, ORT 1 thread %s, best plan %s, ORT 2 threads %s\n",
                   round + 1, rounds, r.mc.file.c_str(),
                   r.core0.ms.size() > before[0] ? fmtLast(r.core0).c_str() : "failed",
                   r.ort1.ms.size() > before[1] ? fmtLast(r.ort1).c_str() : "failed",
                   r.best.ms.size() > before[2] ? fmtLast(r.best).c_str() : "failed",
                   r.ort2.ms.size() > before[3] ? fmtLast(r.ort2).c_str() : "failed");
    }
  }
  const double loadAfter = loadAverage();

  // The memory bound needs the model's parameter and peak activation bytes: from execute where it
  // reports them, else from inspect (not timed, so after the rounds).
  for (auto& r : rows) {
    if (r.paramBytes && r.activationBytes) continue;
    const Proc p = run(quote(cli) + " inspect " + quote(r.path) + r.dims + " --json", errFile);
    if (p.rc != 0) continue;
    try {
      const auto j = nlohmann::json::parse(p.out);
      if (!r.paramBytes) r.paramBytes = numberField(j, {"param_bytes"});
      if (!r.activationBytes) r.activationBytes = numberField(j, {"peak_activation_bytes"});
    } catch (const std::exception&) {
    }
  }

  Report out;
  out.add("### Partex's CPU runtime against ONNX Runtime (bench_ort)\n\n");
  out.add("- %s; %s, %ld CPUs; load average (1 minute) %.2f before and %.2f after\n", date, cpuModel().c_str(),
          sysconf(_SC_NPROCESSORS_ONLN), loadBefore, loadAfter);
  out.add("- Partex: %s\n", backend.empty() ? "backend unknown (no execute succeeded)" : backend.c_str());
  out.add("- ONNX Runtime: %s, CPU execution provider, Node %s\n", ortVersion().c_str(), nodeVersion.c_str());
  if (!shares.empty())
    out.add("- cpu_share of Partex's runs: minimum %.2f, median %.2f (1.00: its threads had their cores)\n",
            *std::min_element(shares.begin(), shares.end()), median(shares));
  out.add("\n");
  out.add(
      "%d interleaved round%s; each run is the median of %d timed runs after %d warm-up runs; a column is the best "
      "(minimum) over the rounds of these medians, in ms; ratio = Partex / ORT.\n\n",
      rounds, rounds == 1 ? "" : "s", kReps, kWarmup);
  for (const auto& n : roundNotes) out.add("- %s\n", n.c_str());
  if (!roundNotes.empty()) out.add("\n");

  out.add(
      "| model | Partex core0 | ORT 1 thread (core 0) | ratio | Partex best plan, profiled | ORT 2 threads | ratio "
      "|\n|---|---:|---:|---:|---:|---:|---:|\n");
  std::vector<double> single, multi;
  double maxSingle = 0;
  std::string maxSingleModel;
  for (const auto& r : rows) {
    const size_t n = single.size();
    const std::string r1 = fmtRatio(r.core0, r.ort1, single);
    if (single.size() > n && single.back() > maxSingle) {
      maxSingle = single.back();
      maxSingleModel = r.mc.file;
    }
    const std::string r2 = fmtRatio(r.best, r.ort2, multi);
    out.add("| %s | %s | %s | %s | %s | %s | %s |\n", r.mc.file.c_str(), fmtMs(r.core0).c_str(), fmtMs(r.ort1).c_str(),
            r1.c_str(), fmtMs(r.best).c_str(), fmtMs(r.ort2).c_str(), r2.c_str());
  }
  const size_t m = rows.size();
  out.add("\n");
  if (!single.empty())
    out.add(
        "Single core (Partex core0 / ORT 1 thread): geometric mean %.3f over %zu of %zu models, largest %.3f (%s).\n",
        geomean(single), single.size(), m, maxSingle, maxSingleModel.c_str());
  if (!multi.empty())
    out.add("Best plan (Partex best plan, profiled / ORT 2 threads): geometric mean %.3f over %zu of %zu models.\n",
            geomean(multi), multi.size(), m);
  // A goal over models some of which failed is not met.
  const bool singlePass = single.size() == m && geomean(single) <= 1.0 && maxSingle <= 1.25;
  const bool multiPass = multi.size() == m && geomean(multi) <= 1.0;
  out.add("\n- single core: geomean <= 1.0 and no model above 1.25: **%s**%s\n", singlePass ? "PASS" : "FAIL",
          single.size() == m ? "" : " (not every model was measured)");
  out.add("- best plan vs ORT 2 threads: geomean <= 1.0: **%s**%s\n", multiPass ? "PASS" : "FAIL",
          multi.size() == m ? "" : " (not every model was measured)");

  bool differ = false;
  for (const auto& r : rows) differ = differ || (!r.outputsMatch);
  if (differ) {
    out.add("\nOutputs that differ from execute's single-device reference run:");
    for (const auto& r : rows)
      if (!r.outputsMatch) out.add(" %s", r.mc.file.c_str());
    out.add(".\n");
  }
  out.add("\nThe fastest round's best plan, operators per device:\n\n");
  for (const auto& r : rows) {
    if (r.bestDevices.empty()) continue;
    std::string devs;
    for (const auto& [d, c] : r.bestDevices) devs += (devs.empty() ? "" : ", ") + d + " " + std::to_string(c);
    out.add("- %s (%s): %s\n", r.mc.file.c_str(), r.bestAlgorithm.c_str(), devs.c_str());
  }

  out.add(
      "\nMemory: peak resident set of Partex's `execute` (the core0 runs) against the bound 1.5 x (parameter bytes + "
      "peak activation bytes) + 64 MiB, and of ONNX Runtime's process (1 thread; Node included); MiB.\n\n");
  out.add(
      "| model | parameters | peak activations | bound | Partex peak RSS | within bound | ORT peak RSS |\n"
      "|---|---:|---:|---:|---:|---|---:|\n");
  int memMeasured = 0, memPass = 0;
  for (const auto& r : rows) {
    std::optional<double> bound;
    if (r.paramBytes && r.activationBytes) bound = 1.5 * (*r.paramBytes + *r.activationBytes) + 64 * kMiB;
    std::string verdict = "n/a";
    if (bound && r.partexRss) {
      ++memMeasured;
      const bool ok = *r.partexRss <= *bound;
      memPass += ok ? 1 : 0;
      verdict = ok ? "PASS" : "FAIL";
    }
    out.add("| %s | %s | %s | %s | %s | %s | %s |\n", r.mc.file.c_str(), fmtMiB(r.paramBytes).c_str(),
            fmtMiB(r.activationBytes).c_str(), fmtMiB(bound).c_str(), fmtMiB(r.partexRss).c_str(), verdict.c_str(),
            fmtMiB(r.ortRss).c_str());
  }
  if (memMeasured == 0)
    out.add("\nPartex's peak RSS: n/a (this partex-cli's `execute --json` does not report `peak_rss_bytes`).\n");
  else
    out.add("\n- memory: %d of %zu models within the bound: **%s**\n", memPass, m,
            memPass == static_cast<int>(m) ? "PASS" : "FAIL");

  std::fputs(out.text.c_str(), stdout);
  std::fflush(stdout);
  int rc = 0;
  if (!markdown.empty()) {
    std::ofstream md(markdown, std::ios::app);
    md << "\n" << out.text;
    if (!md) {
      std::fprintf(stderr, "bench_ort: cannot append to %s\n", markdown.c_str());
      rc = 1;
    } else {
      std::fprintf(stderr, "bench_ort: appended to %s\n", markdown.c_str());
    }
  }
  std::error_code ec;
  if (ownWork) fs::remove_all(work, ec);
  return rc;
}
