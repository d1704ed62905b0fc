#include "sweep/slurm.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "support/files.h"
#include "support/strings.h"

extern char** environ;

namespace partex {

namespace fs = std::filesystem;

namespace {

/// Single-quoted for a POSIX shell.
std::string shq(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string slurmDir(const std::string& outDir) {
  return (fs::path(outDir) / "slurm").string();
}
std::string submissionPath(const std::string& outDir) {
  return (fs::path(outDir) / "slurm" / "submission.json").string();
}

std::string jobName(const SweepSpec& spec) {
  std::string n = "partex-" + fs::path(spec.file).stem().string();
  for (auto& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return n;
}

}  // namespace

std::string slurmArraySpec(const std::vector<int>& indices, int limit) {
  if (indices.empty()) return "";
  bool range = true;
  for (size_t i = 1; i < indices.size(); ++i) range = range && indices[i] == indices[i - 1] + 1;
  std::string s;
  if (range && indices.size() > 1) {
    s = std::to_string(indices.front()) + "-" + std::to_string(indices.back());
  } else {
    for (size_t i = 0; i < indices.size(); ++i) s += (i ? "," : "") + std::to_string(indices[i]);
  }
  if (limit > 0) s += "%" + std::to_string(limit);
  return s;
}

std::string slurmTaskLog(const std::string& outDir, int index) {
  return (fs::path(outDir) / "slurm" / "logs" / ("shard-" + std::to_string(index) + ".log")).string();
}
std::string slurmMergeLog(const std::string& outDir) {
  return (fs::path(outDir) / "slurm" / "logs" / "merge.log").string();
}

SlurmPlan planSlurm(const SweepSpec& spec, const std::vector<SweepCase>& cases, const SweepTable& table,
                    const SlurmOptions& o) {
  SlurmPlan p;
  p.shards = o.shards > 0 ? o.shards : static_cast<int>(std::min<size_t>(std::max<size_t>(cases.size(), 1), 100));
  std::set<int> idx;
  for (const auto& c : table.missing) idx.insert(static_cast<int>(c.index % static_cast<size_t>(p.shards)));
  p.indices.assign(idx.begin(), idx.end());
  p.missingCases = table.missing.size();
  p.arrayPath = (fs::path(slurmDir(spec.output)) / "sweep-array.sbatch").string();
  p.mergePath = (fs::path(slurmDir(spec.output)) / "sweep-merge.sbatch").string();
  std::string common;
  if (!o.partition.empty()) common += "#SBATCH --partition=" + o.partition + "\n";
  const std::string logs = (fs::path(slurmDir(spec.output)) / "logs").string();
  const std::string cli = shq(o.cli), file = shq(o.sweepFile), out = shq(spec.output);
  p.arrayScript =
      "#!/bin/bash\n#SBATCH --job-name=" + jobName(spec) +
      "\n#SBATCH --array=" + slurmArraySpec(p.indices, o.arrayLimit) + "\n#SBATCH --output=" + logs +
      "/shard-%a.log\n#SBATCH --open-mode=append\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n" + common +
      (o.time.empty() ? "" : "#SBATCH --time=" + o.time + "\n") +
      "# Written by partex-cli sweep --slurm. Array task I runs shard I of " + std::to_string(p.shards) + " (every " +
      std::to_string(p.shards) +
      "-th case from case I) and skips\n"
      "# the cases already in the results folder, so a re-submission runs only the missing cases. The shard\n"
      "# count is written out rather than read from $SLURM_ARRAY_TASK_COUNT: a re-submitted array names only\n"
      "# the shards that still have missing cases, and its task count is then smaller than N.\n"
      "set -eu\n"
      "echo \"partex sweep: array task ${SLURM_ARRAY_TASK_ID} of job ${SLURM_ARRAY_JOB_ID} on $(hostname) at $(date -u "
      "+%Y-%m-%dT%H:%M:%SZ)\"\n"
      "exec " +
      cli + " sweep " + file + " --output " + out + " --shard \"${SLURM_ARRAY_TASK_ID}/" + std::to_string(p.shards) +
      "\"\n";
  p.mergeScript = "#!/bin/bash\n#SBATCH --job-name=" + jobName(spec) + "-merge\n#SBATCH --output=" + logs +
                  "/merge.log\n#SBATCH --open-mode=append\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n" + common +
                  "# Written by partex-cli sweep --slurm: runs after every array task succeeded (afterok) and joins\n"
                  "# the shards' results into one table (results.jsonl, results.csv) and report (report.md, plots/).\n"
                  "set -eu\n"
                  "echo \"partex sweep: merge job ${SLURM_JOB_ID} on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)\"\n"
                  "exec " +
                  cli + " sweep merge " + file + " --output " + out + "\n";
  return p;
}

Status writeSlurmScripts(const SweepSpec& spec, const SlurmPlan& plan) {
  std::error_code ec;
  fs::create_directories(fs::path(slurmDir(spec.output)) / "logs", ec);
  if (ec) return makeError(slurmDir(spec.output), ": cannot create the folder: ", ec.message());
  for (const auto& [path, text] :
       {std::pair{plan.arrayPath, plan.arrayScript}, std::pair{plan.mergePath, plan.mergeScript}}) {
    if (auto st = writeFileAtomic(path, text); !st) return st;
    ::chmod(path.c_str(), 0755);
  }
  nlohmann::json j = {{"shards", plan.shards}, {"indices", plan.indices}, {"missing_cases", plan.missingCases}};
  return writeFileAtomic(submissionPath(spec.output), j.dump(2) + "\n");
}

Result<ProcessResult> runProgram(const std::vector<std::string>& argv) {
  if (argv.empty()) return makeError("runProgram: no program");
  int fds[2];
  if (::pipe(fds) != 0) return makeError(argv[0], ": cannot create a pipe: ", std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return makeError(argv[0], ": cannot run it (", std::strerror(rc), rc == ENOENT ? "; not found on PATH" : "", ")");
  }
  ProcessResult r;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    r.output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

Result<SlurmSubmission> submitSlurm(const SweepSpec& spec, const SlurmPlan& plan) {
  auto firstLine = [](const std::string& s) {
    std::string l = trim(s.substr(0, s.find('\n')));
    return l.substr(0, l.find(';'));  // --parsable: "jobid[;cluster]"
  };
  SlurmSubmission sub;
  auto a = runProgram({"sbatch", "--parsable", plan.arrayPath});
  if (!a)
    return makeError(a.message(), "; the scripts are in ", slurmDir(spec.output), " (--dry-run only writes them)");
  if (a->status != 0) return makeError("sbatch ", plan.arrayPath, ": ", trim(a->output));
  sub.arrayJob = firstLine(a->output);
  auto m = runProgram(
      {"sbatch", "--parsable", "--dependency=afterok:" + sub.arrayJob, "--kill-on-invalid-dep=yes", plan.mergePath});
  if (!m) return makeError(m.message());
  if (m->status != 0)
    return makeError("sbatch ", plan.mergePath, ": ", trim(m->output), " (the array job ", sub.arrayJob,
                     " is submitted)");
  sub.mergeJob = firstLine(m->output);
  nlohmann::json j = {{"shards", plan.shards},
                      {"indices", plan.indices},
                      {"missing_cases", plan.missingCases},
                      {"array_job", sub.arrayJob},
                      {"merge_job", sub.mergeJob}};
  if (auto st = writeFileAtomic(submissionPath(spec.output), j.dump(2) + "\n"); !st) return Error{st.message()};
  return sub;
}

int lastSubmittedShards(const std::string& outDir) {
  auto text = readFile(submissionPath(outDir));
  if (!text) return 0;
  try {
    auto j = nlohmann::json::parse(*text);
    return j.value("shards", 0);
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
}

std::vector<SlurmTaskStatus> slurmTaskStatus(const std::string& outDir, const std::vector<SweepCase>& cases,
                                             const std::vector<SweepCase>& missing, int shards) {
  std::vector<SlurmTaskStatus> out;
  if (shards < 1) return out;
  std::map<int, SlurmTaskStatus> by;
  for (const auto& c : missing) {
    const int i = static_cast<int>(c.index % static_cast<size_t>(shards));
    by[i].index = i;
    ++by[i].missing;
  }
  for (const auto& c : cases) {
    const int i = static_cast<int>(c.index % static_cast<size_t>(shards));
    if (auto it = by.find(i); it != by.end()) ++it->second.cases;
  }
  for (auto& [i, s] : by) {
    s.log = slurmTaskLog(outDir, i);
    std::error_code ec;
    s.logExists = fs::exists(s.log, ec);
    if (s.logExists) {
      std::ifstream in(s.log);
      std::string line;
      while (std::getline(in, line)) {
        // progress lines redraw with \r: keep the text after the last one
        if (auto cr = line.rfind('\r'); cr != std::string::npos) line = line.substr(cr + 1);
        if (!trim(line).empty()) s.lastLine = trim(line);
      }
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace partex
