// bench_ort: Partex's CPU runtime against ONNX Runtime (issue 12, part 4; issue 24), through partex-cli and
// scripts/ort/run.py (ONNX Runtime 1.30.0 from PyPI, in the virtual environment scripts/ort/install.sh
// makes) as a user would run them. Four configurations per model:
//   Partex core0       partex-cli schedule MODEL -p this-machine --algo single --param device=core0 -o plan.json
//                      partex-cli execute MODEL --plan plan.json --reps 9 --warmup 2 --json
//   ORT 1 thread       taskset -c 0 PYTHON scripts/ort/run.py MODEL --threads 1 --reps 9 --warmup 2
//   Partex best plan   partex-cli profile MODEL -o p.json
//                      partex-cli schedule MODEL -p this-machine --profile p.json --algo best -o best.json
//                      partex-cli execute MODEL --plan best.json --profile p.json --reps 9 --warmup 2 --json
//   ORT 2 threads      PYTHON scripts/ort/run.py MODEL --threads 2 --reps 9 --warmup 2
// (every command gets the model's --dim bindings). Three sets of models, each with its own table and
// geometric means: the shared models (MODELS_DIR), a model suite (--suite DIR: DIR/manifest.json, the
// format of scripts/models/fetch_suite.sh), and the generated transformers with weights (--generated:
// BERT, GPT-2 and Llama at small sizes, written by partex-cli generate into the work folder).
// Every round runs every configuration once per model, interleaved (this VM's speed changes in phases of
// seconds); the best plan's flow (profile, schedule, execute) is repeated whole each round. Each run
// reports the median of its 9 timed runs (execute's measured_makespan_us is that median); a
// configuration's result is the minimum over the rounds of these medians. A step that fails or runs past
// --timeout is reported in the model's row (a configuration that timed out is not tried again) and the
// benchmark goes on. Prints Markdown: per set the timing table with the ratios Partex / ORT and the
// issue's goals, then the memory table.
// Usage: bench_ort [MODELS_DIR] [--no-shared] [--suite DIR] [--generated] [--cli PATH] [--rounds R]
//                  [--models a.onnx,b.onnx] [--work DIR] [--python PATH] [--ort-script PATH]
//                  [--timeout S] [--markdown FILE]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
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

#include "../suitemanifest.h"
#include "../benchutil.h"

#ifndef PARTEX_ORT_RUN_PY
#define PARTEX_ORT_RUN_PY "scripts/ort/run.py"
#endif

namespace fs = std::filesystem;

namespace {
using partex::bench::loadAverage;
using partex::bench::cpuModel;
using partex::bench::median;
using partex::bench::geomean;

constexpr int kReps = 9;
constexpr int kWarmup = 2;
constexpr double kBusyLoad = 0.5;  ///< 1-minute load average above which a round is flagged as disturbed.
constexpr double kMiB = 1024.0 * 1024.0;

/// A model of one set: the name its row shows, its file (relative to the set's folder for the shared
/// models and the suite) and the input bindings a user must give (the PP-OCR ones have symbolic sizes).
struct ModelCase {
  std::string file;
  std::vector<std::string> dims;
  std::string label;  ///< "" = the file name.
};

/// The shared models; the same list as bench_flow's.
const std::vector<ModelCase> kModels = {
    {"mnist.onnx", {}, ""},
    {"light_squeezenet.onnx", {}, ""},
    {"light_shufflenet.onnx", {}, ""},
    {"Ultraface.version-RFB-320.onnx", {}, ""},
    {"yolox_nano.onnx", {}, ""},
    {"light_inception_v1.onnx", {}, ""},
    {"light_inception_v2.onnx", {}, ""},
    {"light_resnet50.onnx", {}, ""},
    {"light_densenet121.onnx", {}, ""},
    {"light_bvlc_alexnet.onnx", {}, ""},
    {"light_zfnet512.onnx", {}, ""},
    {"light_vgg19.onnx", {}, ""},
    {"ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x:0=1", "x:2=48", "x:3=192"}, ""},
    {"ch_PP-OCRv4_det_infer.onnx", {"x:0=1", "x:2=640", "x:3=640"}, ""},
};

/// The generated transformers with seeded random weights (`partex-cli generate KIND --weights ARGS`), at
/// sizes ONNX Runtime runs in well under a second on one thread (about 60-70 ms each on the development
/// VM): two blocks each, sequence 128, hidden 768 (BERT's is the 1,930x case), the language
/// models' vocabulary cut to 8,192 (their output projection would otherwise be most of the work and
/// 100-250 MB more weights). Their inputs have fixed shapes: no --dim.
struct GeneratedCase {
  std::string name;
  std::vector<std::string> args;
};
const std::vector<GeneratedCase> kGenerated = {
    {"bert-2-layers", {"bert", "--weights", "--layers", "2"}},
    {"gpt2-2-layers", {"gpt2", "--weights", "--layers", "2", "--vocab", "8192"}},
    {"llama-2-layers", {"llama", "--weights", "--layers", "2", "--vocab", "8192"}},
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
  bool timedOut = false;  ///< Killed by timeout(1) after the limit.
  std::string out, err;
};

int gTimeoutS = 600;  ///< Limit of one command (--timeout); 0 = none.

/// Runs a shell command under timeout(1) (coreutils: exit 124, or 137 after its KILL); standard error
/// goes through `errFile`.
Proc run(const std::string& cmd, const std::string& errFile) {
  Proc p;
  const std::string limited =
      gTimeoutS > 0 ? "timeout -k 10 " + std::to_string(gTimeoutS) + " sh -c " + quote(cmd) : cmd;
  FILE* f = popen((limited + " 2>" + quote(errFile)).c_str(), "r");
  if (!f) {
    p.err = "popen failed";
    return p;
  }
  std::array<char, 4096> buf{};
  size_t k;
  while ((k = fread(buf.data(), 1, buf.size(), f)) > 0) p.out.append(buf.data(), k);
  const int st = pclose(f);
  p.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  p.timedOut = gTimeoutS > 0 && (p.rc == 124 || p.rc == 137);
  p.err = readText(errFile);
  return p;
}

/// "STEP failed (exit N): first line of its error output", or "STEP timed out after S s".
std::string failure(const std::string& step, const Proc& p) {
  if (p.timedOut) return step + " timed out after " + std::to_string(gTimeoutS) + " s";
  std::string msg = firstLine(p.err);
  if (msg.empty()) msg = firstLine(p.out);
  return step + " failed (exit " + std::to_string(p.rc) + ")" + (msg.empty() ? "" : ": " + msg);
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
  bool gaveUp = false;  ///< A step timed out (or the model is absent): not tried again.
  std::optional<double> best() const {
    if (ms.empty()) return std::nullopt;
    return *std::min_element(ms.begin(), ms.end());
  }
  void fail(std::string e, bool final = false) {
    error = std::move(e);
    ++failedRounds;
    gaveUp = gaveUp || final;
  }
  void fail(const std::string& step, const Proc& p) { fail(failure(step, p), p.timedOut); }
};

struct ModelRow {
  ModelCase mc;
  std::string path, dims, stem, label;
  std::string inputs;  ///< " --input NAME=FILE" for each of a suite model's fixed inputs (execute and run.py).
  Cell core0, ort1, best, ort2;
  std::string core0Plan;  ///< Set once the core0 plan is scheduled.
  std::optional<double> partexRss, ortRss, paramBytes, activationBytes;
  bool outputsMatch = true;
  std::map<std::string, int> bestDevices;  ///< Operators per device in the fastest round's best plan.
  std::string bestAlgorithm;
  double bestRoundMs = 0;
};

/// One set of models, reported with its own tables and geometric means.
struct ModelSet {
  std::string title;  ///< Heading of its section.
  std::string note;   ///< Where its models come from.
  std::vector<ModelRow> rows;
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

/// The virtual environment's interpreter that scripts/ort/install.sh makes.
std::string defaultPython() {
  const char* env = std::getenv("PARTEX_ORT_VENV");
  const char* home = std::getenv("HOME");
  const fs::path dir = env && *env ? fs::path(env) : fs::path(home ? home : "") / ".local/share/partex/ort-venv";
  return (dir / "bin" / "python").string();
}

/// The rows of a model suite (bench/suitemanifest.h): each model's name, file, --dim and --input bindings.
bool readSuite(const std::string& dir, ModelSet& set, std::string& error) {
  partex::bench::Suite suite;
  if (!partex::bench::readSuiteManifest(dir, suite, error)) return false;
  set.note = suite.note;
  for (const auto& m : suite.models) {
    ModelRow r;
    r.mc.label = m.name;
    r.mc.file = m.file;
    r.mc.dims = m.dims;
    r.label = m.name;
    r.path = m.path;
    for (const auto& in : m.inputs) r.inputs += " --input " + quote(in);
    set.rows.push_back(r);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "../shared/models", cli, work, modelList, python = defaultPython(), script = PARTEX_ORT_RUN_PY,
              markdown, suiteDir;
  int rounds = 3;
  bool shared = true, generated = false;
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
    else if (a == "--python")
      python = next();
    else if (a == "--ort-script")
      script = next();
    else if (a == "--markdown")
      markdown = next();
    else if (a == "--suite")
      suiteDir = next();
    else if (a == "--generated")
      generated = true;
    else if (a == "--no-shared")
      shared = false;
    else if (a == "--timeout")
      gTimeoutS = std::max(0, std::atoi(next().c_str()));
    else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: bench_ort [MODELS_DIR] [--no-shared] [--suite DIR] [--generated] [--cli PATH] [--rounds R] "
          "[--models a.onnx,b.onnx] [--work DIR] [--python PATH] [--ort-script PATH] [--timeout S] "
          "[--markdown FILE]\n"
          "Partex's CPU runtime (core0; the best plan of the profiled flow) against ONNX Runtime (1 thread on "
          "core 0; 2 threads),\non the shared models in MODELS_DIR (default ../shared/models; --models picks some, "
          "--no-shared none),\na model suite (--suite DIR: DIR/manifest.json) and the generated transformers with "
          "weights (--generated).\n--timeout S limits every command (default 600; 0 = none). ONNX Runtime: "
          "scripts/ort/install.sh makes the venv whose\npython --python names (default $PARTEX_ORT_VENV/bin/python, "
          "else ~/.local/share/partex/ort-venv/bin/python).\n");
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

  std::vector<ModelSet> sets;
  if (shared) {
    ModelSet set;
    set.title = "Shared models";
    set.note = "`" + dir + "`";
    const auto only = split(modelList);
    if (!fs::is_directory(dir)) {
      std::fprintf(stderr, "bench_ort: no models folder %s: the shared models are skipped\n", dir.c_str());
    } else {
      for (const auto& mc : kModels) {
        if (!only.empty() && std::find(only.begin(), only.end(), mc.file) == only.end()) continue;
        ModelRow r;
        r.mc = mc;
        r.label = mc.file;
        r.path = (fs::path(dir) / mc.file).string();
        if (!fs::exists(r.path)) {
          std::fprintf(stderr, "bench_ort: %s absent, skipped\n", mc.file.c_str());
          continue;
        }
        set.rows.push_back(r);
      }
      for (const auto& m : only)
        if (std::none_of(kModels.begin(), kModels.end(), [&](const ModelCase& k) { return k.file == m; }))
          std::fprintf(stderr, "bench_ort: %s is not one of the shared models, skipped\n", m.c_str());
    }
    if (!set.rows.empty()) sets.push_back(std::move(set));
  }
  if (!suiteDir.empty()) {
    ModelSet set;
    set.title = "Model suite";
    std::string error;
    if (!readSuite(suiteDir, set, error)) {
      std::fprintf(stderr, "bench_ort: %s\n", error.c_str());
      return 2;
    }
    if (set.rows.empty()) std::fprintf(stderr, "bench_ort: the suite in %s lists no model\n", suiteDir.c_str());
    // --models picks suite models too, by their name (the manifest's) or file name.
    if (const auto only = split(modelList); !only.empty()) {
      std::vector<ModelRow> kept;
      for (auto& r : set.rows) {
        const std::string file = fs::path(r.path).filename().string();
        if (std::find(only.begin(), only.end(), r.label) != only.end() ||
            std::find(only.begin(), only.end(), file) != only.end() ||
            std::find(only.begin(), only.end(), r.mc.file) != only.end())
          kept.push_back(std::move(r));
      }
      if (kept.empty()) std::fprintf(stderr, "bench_ort: --models picks none of the suite's models\n");
      set.rows = std::move(kept);
    }
    if (!set.rows.empty()) sets.push_back(std::move(set));
  }
  if (generated) {
    ModelSet set;
    set.title = "Generated transformers with weights";
    set.note = "`partex-cli generate`:";
    for (const auto& g : kGenerated) {
      ModelRow r;
      r.mc.label = r.label = g.name;
      std::string args;
      for (const auto& a : g.args) args += (args.empty() ? "" : " ") + a;
      set.note += std::string(set.rows.empty() ? " " : "; ") + "`" + args + "`";
      set.rows.push_back(r);
    }
    sets.push_back(std::move(set));
  }
  if (sets.empty()) {
    std::printf("bench_ort: skipped: no models (no shared models in %s, no --suite, no --generated)\n", dir.c_str());
    return 0;
  }

  const bool ownWork = work.empty();
  if (ownWork) work = (fs::temp_directory_path() / ("partex-bench-ort-" + std::to_string(getpid()))).string();
  fs::create_directories(work);
  const std::string errFile = (fs::path(work) / "stderr.txt").string();

  // run.py imports onnxruntime before it reads its arguments: without a model it exits 3 when the
  // package is missing and 2 (no model given) when it is there.
  {
    const Proc probe = run(quote(python) + " " + quote(script) + " </dev/null", errFile);
    if (probe.rc == 3) {
      std::fprintf(stderr,
                   "bench_ort: ONNX Runtime is not installed for %s (%s); install it with scripts/ort/install.sh "
                   "(or point PARTEX_ORT_VENV or --python at a venv that has it)\n",
                   python.c_str(), firstLine(probe.err).c_str());
      return 2;
    }
    if (probe.rc != 2) {
      std::fprintf(stderr, "bench_ort: cannot run %s %s (exit %d): %s (use --python)\n", python.c_str(), script.c_str(),
                   probe.rc, firstLine(probe.err).c_str());
      return 2;
    }
    if (run("taskset -c 0 true", errFile).rc != 0) {
      std::fprintf(stderr, "bench_ort: taskset -c 0 does not work here (util-linux's taskset is needed)\n");
      return 2;
    }
  }
  std::string ortVersion =
      firstLine(run(quote(python) + " -c 'import onnxruntime, platform; print(\"onnxruntime \" + "
                                    "onnxruntime.__version__ + \", Python \" + platform.python_version())'",
                    errFile)
                    .out);
  if (ortVersion.empty()) ortVersion = "onnxruntime (unknown version)";

  // Per model: its stem in the work folder and its --dim arguments; the generated models are written now.
  for (size_t s = 0; s < sets.size(); ++s)
    for (auto& r : sets[s].rows) {
      for (const auto& d : r.mc.dims) r.dims += " --dim " + quote(d);
      std::string stem = r.label;
      for (char& c : stem)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
      r.stem = (fs::path(work) / ("set" + std::to_string(s) + "-" + stem)).string();
      if (r.path.empty()) {  // generated
        const auto g = std::find_if(kGenerated.begin(), kGenerated.end(),
                                    [&](const GeneratedCase& k) { return k.name == r.label; });
        r.path = r.stem + ".onnx";
        std::string cmd = quote(cli) + " generate";
        for (const auto& a : g->args) cmd += " " + quote(a);
        const Proc p = run(cmd + " -o " + quote(r.path), errFile);
        if (p.rc != 0) {
          const std::string why = failure("generate", p);
          for (Cell* c : {&r.core0, &r.ort1, &r.best, &r.ort2}) c->fail(why, true);
          std::fprintf(stderr, "bench_ort: %s: %s\n", r.label.c_str(), why.c_str());
        }
      } else if (!fs::exists(r.path)) {
        for (Cell* c : {&r.core0, &r.ort1, &r.best, &r.ort2}) c->fail("model file absent: " + r.path, true);
        std::fprintf(stderr, "bench_ort: %s: %s absent\n", r.label.c_str(), r.path.c_str());
      }
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
      c.fail("execute", p);
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
    if (c.gaveUp) return;
    const Proc p = run(prefix + quote(python) + " " + quote(script) + " " + quote(r.path) + r.dims + r.inputs +
                           " --threads " + std::to_string(threads) + reps,
                       errFile);
    if (p.rc != 0) {
      c.fail("ORT", p);
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
    for (auto& set : sets)
      for (auto& r : set.rows) {
        const size_t before[4] = {r.core0.ms.size(), r.ort1.ms.size(), r.best.ms.size(), r.ort2.ms.size()};
        // Partex on core0: the plan needs no profile and does not change between rounds.
        if (r.core0Plan.empty() && !r.core0.gaveUp) {
          const std::string plan = r.stem + ".core0.plan.json";
          const Proc p = run(quote(cli) + " schedule " + quote(r.path) + r.dims +
                                 " -p this-machine --algo single --param device=core0 -o " + quote(plan) + " --json",
                             errFile);
          if (p.rc == 0)
            r.core0Plan = plan;
          else
            r.core0.fail("schedule (core0)", p);
        }
        if (!r.core0Plan.empty() && !r.core0.gaveUp)
          execute(r, r.core0,
                  quote(cli) + " execute " + quote(r.path) + r.dims + r.inputs + " --plan " + quote(r.core0Plan) +
                      reps + " --json",
                  true);
        // ONNX Runtime, one thread pinned to core 0.
        ort(r, r.ort1, "taskset -c 0 ", 1);
        // The default flow: profile, schedule the best plan on that profile, execute it.
        const std::string profile = r.stem + ".round" + std::to_string(round) + ".profile.json";
        const std::string plan = r.stem + ".round" + std::to_string(round) + ".best.plan.json";
        Proc p;
        if (r.best.gaveUp) {
        } else if ((p = run(quote(cli) + " profile " + quote(r.path) + r.dims + r.inputs + " -o " + quote(profile) +
                                " -q --force",
                            errFile))
                       .rc != 0) {
          r.best.fail("profile", p);
        } else if ((p = run(quote(cli) + " schedule " + quote(r.path) + r.dims + " -p this-machine --profile " +
                                quote(profile) + " --algo best -o " + quote(plan) + " --json",
                            errFile))
                       .rc != 0) {
          r.best.fail("schedule (best)", p);
        } else if (auto j = execute(r, r.best,
                                    quote(cli) + " execute " + quote(r.path) + r.dims + r.inputs + " --plan " +
                                        quote(plan) + " --profile " + quote(profile) + reps + " --json",
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
                     round + 1, rounds, r.label.c_str(),
                     r.core0.ms.size() > before[0] ? fmtLast(r.core0).c_str() : "failed",
                     r.ort1.ms.size() > before[1] ? fmtLast(r.ort1).c_str() : "failed",
                     r.best.ms.size() > before[2] ? fmtLast(r.best).c_str() : "failed",
                     r.ort2.ms.size() > before[3] ? fmtLast(r.ort2).c_str() : "failed");
      }
  }
  const double loadAfter = loadAverage();

  // The memory bound needs the model's parameter and peak activation bytes: from execute where it
  // reports them, else from inspect (not timed, so after the rounds).
  for (auto& set : sets)
    for (auto& r : set.rows) {
      if ((r.paramBytes && r.activationBytes) || !fs::exists(r.path)) continue;
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
  out.add("- ONNX Runtime: %s (PyPI wheel in a venv, scripts/ort/run.py), CPU execution provider\n",
          ortVersion.c_str());
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

  for (const auto& set : sets) {
    const auto& rows = set.rows;
    out.add("#### %s (%zu): %s\n\n", set.title.c_str(), rows.size(), set.note.c_str());
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
        maxSingleModel = r.label;
      }
      const std::string r2 = fmtRatio(r.best, r.ort2, multi);
      out.add("| %s | %s | %s | %s | %s | %s | %s |\n", r.label.c_str(), fmtMs(r.core0).c_str(), fmtMs(r.ort1).c_str(),
              r1.c_str(), fmtMs(r.best).c_str(), fmtMs(r.ort2).c_str(), r2.c_str());
    }
    const size_t m = rows.size();
    out.add("\n");
    if (!single.empty())
      out.add(
          "Single core (Partex core0 / ORT 1 thread): geometric mean %.3f over %zu of %zu models, largest %.3f "
          "(%s).\n",
          geomean(single), single.size(), m, maxSingle, maxSingleModel.c_str());
    if (!multi.empty())
      out.add("Best plan (Partex best plan, profiled / ORT 2 threads): geometric mean %.3f over %zu of %zu models.\n",
              geomean(multi), multi.size(), m);
    // A goal over models some of which failed is not met.
    const bool singlePass = single.size() == m && geomean(single) <= 1.0 && maxSingle <= 1.25;
    const bool multiPass = multi.size() == m && geomean(multi) <= 0.95;
    out.add("\n- single core: geomean <= 1.0 and no model above 1.25: **%s**%s\n", singlePass ? "PASS" : "FAIL",
            single.size() == m ? "" : " (not every model was measured)");
    out.add("- best plan vs ORT 2 threads: geomean <= 0.95: **%s**%s\n", multiPass ? "PASS" : "FAIL",
            multi.size() == m ? "" : " (not every model was measured)");

    bool differ = false;
    for (const auto& r : rows) differ = differ || (!r.outputsMatch);
    if (differ) {
      out.add("\nOutputs that differ from execute's single-device reference run:");
      for (const auto& r : rows)
        if (!r.outputsMatch) out.add(" %s", r.label.c_str());
      out.add(".\n");
    }
    bool anyDevices = false;
    for (const auto& r : rows) anyDevices = anyDevices || !r.bestDevices.empty();
    if (anyDevices) out.add("\nThe fastest round's best plan, operators per device:\n\n");
    for (const auto& r : rows) {
      if (r.bestDevices.empty()) continue;
      std::string devs;
      for (const auto& [d, c] : r.bestDevices) devs += (devs.empty() ? "" : ", ") + d + " " + std::to_string(c);
      out.add("- %s (%s): %s\n", r.label.c_str(), r.bestAlgorithm.c_str(), devs.c_str());
    }

    out.add(
        "\nMemory: peak resident set of Partex's `execute` (the core0 runs; its process tree) against the bound 1.5 x "
        "(parameter bytes + peak activation bytes) + 64 MiB, and of ONNX Runtime's process (1 thread; Python and "
        "NumPy included); MiB.\n\n");
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
      out.add("| %s | %s | %s | %s | %s | %s | %s |\n", r.label.c_str(), fmtMiB(r.paramBytes).c_str(),
              fmtMiB(r.activationBytes).c_str(), fmtMiB(bound).c_str(), fmtMiB(r.partexRss).c_str(), verdict.c_str(),
              fmtMiB(r.ortRss).c_str());
    }
    if (memMeasured == 0)
      out.add("\nPartex's peak RSS: n/a (no `execute --json` of this set reported `peak_rss_bytes`).\n\n");
    else
      out.add("\n- memory: %d of %zu models within the bound: **%s**\n\n", memPass, m,
              memPass == static_cast<int>(m) ? "PASS" : "FAIL");
  }

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
