#pragma once
/// \file Sweeps on Slurm: the sbatch scripts (a job array whose task I runs shard I of N, and a merge job
/// that waits for the whole array with --dependency=afterok), their submission through `sbatch` found on
/// PATH, and the status of a submitted sweep: which array tasks left cases undone, with their log files.
/// A re-submission's array names only the shards that still have missing cases, and each task skips the
/// cases already done (runner.h's resume rule), so only the missing cases run again.

#include <string>
#include <vector>

#include "support/result.h"
#include "sweep/runner.h"

namespace partex {

struct SlurmOptions {
  std::string partition;  ///< --partition ("" = the cluster's default).
  int arrayLimit = 0;     ///< %K: array tasks running at once (0 = no limit).
  std::string time;       ///< --time per array task ("" = the partition's default).
  int shards = 0;         ///< N (0 = min(cases, 100)).
  std::string cli;        ///< Absolute path of the partex-cli that the tasks run.
  std::string sweepFile;  ///< Absolute path of the sweep file.
};

/// What a submission runs.
struct SlurmPlan {
  int shards = 0;
  std::vector<int> indices;  ///< Shards with missing cases (the array's task ids).
  size_t missingCases = 0;
  std::string arrayScript, mergeScript;  ///< sbatch texts.
  std::string arrayPath, mergePath;      ///< Where they are written (OUT/slurm/).
};

/// "0-15%4" for a full range, "3,7,9%4" otherwise ("" for no index).
std::string slurmArraySpec(const std::vector<int>& indices, int limit);
/// The log file of array task `index` (OUT/slurm/logs/shard-I.log) and of the merge job.
std::string slurmTaskLog(const std::string& outDir, int index);
std::string slurmMergeLog(const std::string& outDir);

/// The plan for the sweep's missing cases (table from collectResults over all cases).
SlurmPlan planSlurm(const SweepSpec& spec, const std::vector<SweepCase>& cases, const SweepTable& table,
                    const SlurmOptions& o);
/// Writes the scripts (executable, atomically) and OUT/slurm/submission.json (shards and indices).
Status writeSlurmScripts(const SweepSpec& spec, const SlurmPlan& plan);

struct SlurmSubmission {
  std::string arrayJob, mergeJob;  ///< Job ids.
};
/// Submits the array, then the merge job after it (afterok; cancelled if a task fails), with `sbatch`
/// from PATH; records the job ids in submission.json. Errors carry sbatch's own message.
Result<SlurmSubmission> submitSlurm(const SweepSpec& spec, const SlurmPlan& plan);

/// An array task that left cases undone.
struct SlurmTaskStatus {
  int index = 0;
  size_t cases = 0, missing = 0;
  std::string log;  ///< Its log file.
  bool logExists = false;
  std::string lastLine;  ///< The log's last non-empty line ("" when none).
};
/// The shard count of the last submission (submission.json), 0 when none was written.
int lastSubmittedShards(const std::string& outDir);
/// Per shard of `shards` with missing cases: counts and its log (from collectResults' missing cases).
std::vector<SlurmTaskStatus> slurmTaskStatus(const std::string& outDir, const std::vector<SweepCase>& cases,
                                             const std::vector<SweepCase>& missing, int shards);

/// Runs a program found on PATH with arguments; returns its exit status and its output (stdout and
/// stderr together). Errors only when it cannot be started.
struct ProcessResult {
  int status = -1;
  std::string output;
};
Result<ProcessResult> runProgram(const std::vector<std::string>& argv);

}  // namespace partex
