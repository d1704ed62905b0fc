#pragma once
/// \file Running a sweep: each case is one core scheduling call, the one `partex-cli compare` makes
/// (problem/problem.h loads the model on the platform with its links scaled, profiles apply on
/// this-machine, sched/compare.h runs the algorithm and judges it), its row appended to the results as
/// soon as it is done. A run skips the cases whose current row (same key, same inputs hash) is already
/// in any results file of the output folder (resume), and runs one shard of the cases when asked.
/// The table of a sweep collects every case's current row from all those files, in case order.

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sweep/results.h"
#include "sweep/sweepfile.h"

namespace partex {

/// Where a sweep run stands, for progress displays.
struct SweepProgress {
  size_t done = 0;     ///< Cases finished by this run.
  size_t total = 0;    ///< Cases this run runs (its shard, less those already done).
  size_t skipped = 0;  ///< Cases of its shard already in the results.
  double elapsedSec = 0;
  std::string current;  ///< Key of the case running (onStart) or just done (onRow).
};
/// "37/300 cases  2.10/s  1m15s left" (rate and time left once a case is done).
std::string progressText(const SweepProgress& p);

struct SweepRunOptions {
  int shardIndex = 0;
  int shardCount = 0;                         ///< 0: no shard (the whole sweep, results in results.jsonl).
  const std::atomic<bool>* cancel = nullptr;  ///< Set (e.g. by SIGINT): the running case stops and is not kept.
  std::function<void(const SweepProgress&)> onStart;
  std::function<void(const SweepProgress&, const SweepRow&)> onRow;
  std::function<void(const std::string&)> onNote;  ///< Notes for the user (a cut line removed, ...).
};

struct SweepRunSummary {
  size_t cases = 0;    ///< Cases of the shard (or of the sweep).
  size_t skipped = 0;  ///< Already done.
  size_t ran = 0;      ///< Run and kept now.
  size_t invalid = 0;  ///< Of those, rows without a valid plan.
  bool interrupted = false;
  std::string resultsFile;
};

/// results.jsonl in the output folder: a whole run appends to it; merge and the end of a run rewrite it.
std::string resultsPath(const std::string& outDir);
/// shards/shard-I-of-N.jsonl: what shard I of N appends to.
std::string shardResultsPath(const std::string& outDir, int index, int count);

/// Computes the inputs hash of cases (model bytes, platform, scales, algorithm and its options, the
/// profiles on this-machine, the version); caches file hashes and platforms.
class CaseHasher {
 public:
  explicit CaseHasher(const SweepSpec& spec) : spec_(spec) {}
  struct Hashes {
    std::string model;     ///< SHA-256 of the model file's bytes, or of a generator reference.
    std::string platform;  ///< SHA-256 of the platform as loaded, before scaling ("" for task graphs).
    std::string inputs;    ///< SHA-256 over all the inputs above and the version.
  };
  /// Errors when a model or platform file can no longer be read.
  Result<Hashes> hash(const SweepCase& c);

 private:
  const SweepSpec& spec_;
  std::map<std::string, std::string> files_, platforms_;
  std::string profiles_;
};

/// Runs the (shard's) cases that are not done yet; stops early when cancelled.
Result<SweepRunSummary> runSweep(const SweepSpec& spec, const SweepRunOptions& opts);

/// The sweep's table: the current row of every case found in the output folder, in case order.
struct SweepTable {
  std::vector<SweepRow> rows;
  std::vector<SweepCase> missing;  ///< Cases with no current row.
  size_t stale = 0;                ///< Rows found for a case with another inputs hash (or version).
  std::vector<std::string> files;  ///< The results files read.
  std::vector<std::string> notes;  ///< Cut or unreadable lines.
};
Result<SweepTable> collectResults(const SweepSpec& spec, const std::vector<SweepCase>& cases);

/// Writes results.jsonl (the table, rewritten whole), results.csv and the report (report.md and
/// plots/*.svg) into the output folder, each atomically.
Status writeSweepOutputs(const SweepSpec& spec, const SweepTable& table);

}  // namespace partex
