// partex-cli sweep SWEEP.json | sweep merge | sweep status: design-space sweeps (core/sweep), locally,
// by shard, or as a Slurm job array. This file only parses options, shows progress and prints.
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "sweep/report.h"
#include "sweep/runner.h"
#include "sweep/slurm.h"
#include "sweep/sweepfile.h"

namespace partex::cli {

namespace {

std::atomic<bool> gStop{false};
extern "C" void onSweepInterrupt(int) {
  gStop.store(true);
}

struct SweepArgs {
  std::string file;
  std::string output;
  std::string shard;
  bool slurm = false;
  bool dryRun = false;
  SlurmOptions slurmOpts;
  bool quiet = false;
};

Result<SweepSpec> loadSpec(const SweepArgs& a) {
  if (a.file.empty())
    return makeError("sweep: a sweep file is required (partex-cli sweep SWEEP.json; see docs/sweeps.md)");
  auto spec = loadSweepFile(a.file);
  if (!spec) return spec;
  if (!a.output.empty()) spec->output = std::filesystem::absolute(a.output).lexically_normal().string();
  return spec;
}

int terminalWidth() {
  winsize w{};
  return ::ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20 ? w.ws_col : 100;
}

/// One line of progress: a bar when stderr is a terminal (redrawn in place), else plain lines.
class ProgressDisplay {
 public:
  explicit ProgressDisplay(bool quiet) : tty_(::isatty(STDERR_FILENO) == 1), quiet_(quiet) {}
  void start(const SweepProgress& p) {
    if (tty_ && !quiet_) draw(p, "running " + p.current);
  }
  void row(const SweepProgress& p, const SweepRow& r) {
    if (quiet_) return;
    char what[160];
    if (r.valid)
      std::snprintf(what, sizeof what, "makespan %.3f us, %.3fx LB, %.1f ms", r.makespanUs, r.ratioToBound, r.schedMs);
    else
      std::snprintf(what, sizeof what, "no plan: %.120s", r.error.c_str());
    if (tty_) {
      draw(p, p.current);
    } else {
      std::fprintf(stderr, "[%s] %s: %s\n", progressText(p).c_str(), r.key.c_str(), what);
    }
  }
  void note(const std::string& n) {
    clear();
    std::fprintf(stderr, "partex-cli: note: %s\n", n.c_str());
  }
  void clear() {
    if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
    drawn_ = false;
  }

 private:
  void draw(const SweepProgress& p, const std::string& what) {
    const int width = terminalWidth();
    constexpr int kBar = 24;
    const int filled = p.total ? static_cast<int>(kBar * p.done / p.total) : kBar;
    std::string line = "[" + std::string(static_cast<size_t>(filled), '#') +
                       std::string(static_cast<size_t>(kBar - filled), '.') + "] " + progressText(p) + "  " + what;
    if (static_cast<int>(line.size()) > width - 1) line = line.substr(0, static_cast<size_t>(width - 4)) + "...";
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }
  bool tty_, quiet_, drawn_ = false;
};

/// Array tasks that left cases undone, by index with their logs.
void printTaskStatus(const SweepSpec& spec, const std::vector<SweepCase>& cases, const SweepTable& t) {
  const int shards = lastSubmittedShards(spec.output);
  if (shards <= 0 || t.missing.empty()) return;
  for (const auto& s : slurmTaskStatus(spec.output, cases, t.missing, shards)) {
    std::fprintf(stderr, "partex-cli: array task %d: %zu of %zu cases missing; log %s", s.index, s.missing, s.cases,
                 s.log.c_str());
    if (!s.logExists)
      std::fprintf(stderr, " (none: the task did not start)\n");
    else
      std::fprintf(stderr, " (last line: %s)\n", s.lastLine.empty() ? "empty" : s.lastLine.c_str());
  }
  std::fprintf(stderr, "partex-cli: re-submit with `partex-cli sweep %s --slurm` to run only the missing cases\n",
               spec.file.c_str());
}

int runSlurm(const SweepArgs& a, const SweepSpec& spec) {
  const auto cases = expandSweep(spec);
  auto table = collectResults(spec, cases);
  if (!table) return fail(table.message());
  if (table->missing.empty()) {
    std::printf("All %zu cases are done; nothing to submit (partex-cli sweep merge %s writes the table and report)\n",
                cases.size(), a.file.c_str());
    return 0;
  }
  SlurmOptions o = a.slurmOpts;
  std::error_code ec;
  o.cli = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  o.sweepFile = std::filesystem::absolute(a.file).lexically_normal().string();
  if (o.arrayLimit < 0) return fail("--array-limit must be >= 0");
  if (o.shards < 0) return fail("--shards must be >= 0");
  const SlurmPlan plan = planSlurm(spec, cases, *table, o);
  if (auto st = writeSlurmScripts(spec, plan); !st) return fail(st.message());
  std::printf("%zu of %zu cases to run in %zu array tasks (shards of %d)\n  %s\n  %s\n", plan.missingCases,
              cases.size(), plan.indices.size(), plan.shards, plan.arrayPath.c_str(), plan.mergePath.c_str());
  if (a.dryRun) {
    std::printf(
        "Dry run: submit with\n  jobid=$(sbatch --parsable %s)\n  sbatch --dependency=afterok:$jobid "
        "--kill-on-invalid-dep=yes %s\n",
        plan.arrayPath.c_str(), plan.mergePath.c_str());
    return 0;
  }
  auto sub = submitSlurm(spec, plan);
  if (!sub) return fail(sub.message());
  std::printf("Submitted array job %s and merge job %s (after it); logs in %s\n", sub->arrayJob.c_str(),
              sub->mergeJob.c_str(), std::filesystem::path(slurmTaskLog(spec.output, 0)).parent_path().c_str());
  return 0;
}

int runLocal(const SweepArgs& a, const SweepSpec& spec) {
  SweepRunOptions o;
  if (!a.shard.empty()) {
    auto s = parseShard(a.shard);
    if (!s) return fail(s.message());
    o.shardIndex = s->first;
    o.shardCount = s->second;
  }
  gStop.store(false);
  // Ctrl+C, and SIGTERM (what Slurm sends a task at its time limit or on scancel): the running case
  // stops and is not kept; the finished ones are already written.
  struct sigaction sa = {}, oldInt = {}, oldTerm = {};
  sa.sa_handler = onSweepInterrupt;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &oldInt);
  ::sigaction(SIGTERM, &sa, &oldTerm);
  ProgressDisplay show(a.quiet);
  o.cancel = &gStop;
  o.onStart = [&](const SweepProgress& p) { show.start(p); };
  o.onRow = [&](const SweepProgress& p, const SweepRow& r) { show.row(p, r); };
  o.onNote = [&](const std::string& n) { show.note(n); };
  auto sum = runSweep(spec, o);
  show.clear();
  ::sigaction(SIGINT, &oldInt, nullptr);
  ::sigaction(SIGTERM, &oldTerm, nullptr);
  if (!sum) return fail(sum.message());
  std::fprintf(stderr,
               "partex-cli: %zu cases%s: %zu already done, %zu run now (%zu without a valid plan)%s; results in %s\n",
               sum->cases, o.shardCount ? (" in shard " + a.shard).c_str() : "", sum->skipped, sum->ran, sum->invalid,
               sum->interrupted ? "; interrupted, run again to resume" : "", sum->resultsFile.c_str());
  if (o.shardCount == 0) {  // the whole sweep: the table and report from everything done so far
    const auto cases = expandSweep(spec);
    auto table = collectResults(spec, cases);
    if (!table) return fail(table.message());
    if (auto st = writeSweepOutputs(spec, *table); !st) return fail(st.message());
    std::printf("Table %s/results.csv (%zu of %zu cases), report %s/report.md\n", spec.output.c_str(),
                table->rows.size(), cases.size(), spec.output.c_str());
  }
  return sum->interrupted ? 130 : 0;
}

int runMerge(const SweepArgs& a) {
  auto spec = loadSpec(a);
  if (!spec) return fail(spec.message());
  const auto cases = expandSweep(*spec);
  auto table = collectResults(*spec, cases);
  if (!table) return fail(table.message());
  for (const auto& n : table->notes) std::fprintf(stderr, "partex-cli: note: %s\n", n.c_str());
  if (auto st = writeSweepOutputs(*spec, *table); !st) return fail(st.message());
  std::printf("Merged %zu results files: %zu of %zu cases; table %s/results.csv, report %s/report.md\n",
              table->files.size(), table->rows.size(), cases.size(), spec->output.c_str(), spec->output.c_str());
  if (table->missing.empty()) return 0;
  std::fprintf(stderr, "partex-cli: %zu cases missing%s\n", table->missing.size(),
               table->stale ? (" (" + std::to_string(table->stale) + " with stale results)").c_str() : "");
  printTaskStatus(*spec, cases, *table);
  return 1;
}

int runStatus(const SweepArgs& a) {
  auto spec = loadSpec(a);
  if (!spec) return fail(spec.message());
  const auto cases = expandSweep(*spec);
  auto table = collectResults(*spec, cases);
  if (!table) return fail(table.message());
  for (const auto& n : table->notes) std::fprintf(stderr, "partex-cli: note: %s\n", n.c_str());
  size_t invalid = 0;
  for (const auto& r : table->rows) invalid += !r.valid;
  std::printf(
      "%s: %zu cases, %zu done (%zu without a valid plan), %zu missing (%zu with stale results); results in %s\n",
      a.file.c_str(), cases.size(), table->rows.size(), invalid, table->missing.size(), table->stale,
      spec->output.c_str());
  printTaskStatus(*spec, cases, *table);
  return table->missing.empty() ? 0 : 1;
}

void addOutputOption(CLI::App* cmd, SweepArgs& a) {
  cmd->add_option("-o,--output", a.output,
                  "Results folder (default: the sweep file's \"output\", else SWEEP-results beside it)");
}

}  // namespace

void addSweep(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand(
      "sweep", "Run a design-space sweep (models x platforms x link scales x algorithms), locally or on Slurm");
  cmd->require_subcommand(0, 1);
  auto a = std::make_shared<SweepArgs>();
  cmd->add_option("sweep", a->file, "Sweep file (JSON; see docs/sweeps.md)");
  addOutputOption(cmd, *a);
  cmd->add_option("--shard", a->shard, "Run shard I of N: every N-th case from case I (0 <= I < N)");
  cmd->add_flag("--slurm", a->slurm, "Submit the sweep as a Slurm job array plus a merge job (sbatch from PATH)");
  cmd->add_option("--partition", a->slurmOpts.partition, "Slurm partition");
  cmd->add_option("--array-limit", a->slurmOpts.arrayLimit, "Slurm: array tasks running at once (%K)");
  cmd->add_option("--time", a->slurmOpts.time, "Slurm: time limit per array task (e.g. 01:00:00)");
  cmd->add_option("--shards", a->slurmOpts.shards, "Slurm: number of shards N (default: cases, at most 100)");
  cmd->add_flag("--dry-run", a->dryRun, "Slurm: write the sbatch scripts without submitting them");
  cmd->add_flag("--quiet,-q", a->quiet, "No progress output");
  cmd->callback([cmd, a, &exitCode] {
    if (!cmd->get_subcommands().empty()) return;  // merge or status ran
    if (a->slurm && !a->shard.empty()) {
      exitCode = fail("sweep: --slurm and --shard do not go together (the array's tasks pick their shards)");
      return;
    }
    if (!a->slurm && (a->dryRun || !a->slurmOpts.partition.empty() || a->slurmOpts.arrayLimit ||
                      !a->slurmOpts.time.empty() || a->slurmOpts.shards)) {
      exitCode = fail("sweep: --partition, --array-limit, --time, --shards and --dry-run go with --slurm");
      return;
    }
    auto spec = loadSpec(*a);
    if (!spec) {
      exitCode = fail(spec.message());
      return;
    }
    exitCode = a->slurm ? runSlurm(*a, *spec) : runLocal(*a, *spec);
  });
  {
    auto* m =
        cmd->add_subcommand("merge", "Join the shards' results into one table (results.csv, results.jsonl) and report");
    auto ma = std::make_shared<SweepArgs>();
    m->add_option("sweep", ma->file, "Sweep file")->required();
    addOutputOption(m, *ma);
    m->callback([ma, &exitCode] { exitCode = runMerge(*ma); });
  }
  {
    auto* s =
        cmd->add_subcommand("status", "Cases done and missing; array tasks that left cases undone, with their logs");
    auto sa = std::make_shared<SweepArgs>();
    s->add_option("sweep", sa->file, "Sweep file")->required();
    addOutputOption(s, *sa);
    s->callback([sa, &exitCode] { exitCode = runStatus(*sa); });
  }
}

}  // namespace partex::cli
