#pragma once
/// \file A sweep's results table: one row per case, stored as JSON lines (appended one whole line per
/// finished case, so an interrupted run keeps every finished case and a crash leaves at most one cut
/// line, which the reader skips with a note and the next append removes), and written whole as CSV and
/// JSON lines when a run or a merge ends. Each row carries the Partex version and a hash of its inputs
/// (model bytes, platform, scales, algorithm, parameters, time limit, profiles): a row whose hash differs
/// from the case's is stale and the case runs again.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/result.h"

namespace partex {

struct SweepRow {
  std::string key;   ///< SweepCase::key.
  size_t index = 0;  ///< SweepCase::index when it ran.
  std::string model, dims, platform, algorithm;
  double bandwidthScale = 1, latencyScale = 1, timeLimitSec = 0;
  int tasks = 0, edges = 0, devices = 0;
  bool valid = false;
  double makespanUs = 0, lowerBoundUs = 0, ratioToBound = 0, bestSingleUs = 0, speedup = 0;
  int64_t transfers = 0, bytesMoved = 0;
  int64_t peakDeviceBytes = 0;  ///< The largest per-device peak of live activation bytes.
  bool overCapacity = false;    ///< Some device's peak exceeds its memory.
  int profiles = 0;             ///< Profiles applied to its costs (this-machine cases).
  double schedMs = 0;           ///< Wall time of the scheduler (the one timing column).
  bool timeLimited = false;     ///< The algorithm stopped at its time limit.
  bool optimal = false;         ///< exact proved its plan optimal.
  std::string error;            ///< Why no plan (an error, or "skipped: ...").
  std::string version;          ///< Partex version that computed it.
  std::string modelSha256;      ///< The model file's bytes (a generator reference's text).
  std::string platformSha256;   ///< The platform as loaded, before scaling ("" for task graphs).
  std::string inputsSha256;     ///< Hash of all the case's inputs and the version: the resume rule's.
  /// Throughput sweeps ("objective": "throughput"): the plan's stream (sim/stream.h); 0 otherwise.
  std::string objective = "latency";
  double periodUs = 0, streamLatencyUs = 0;
};

/// The version written into rows and hashes ("0.1.0").
std::string partexVersion();

/// One JSON line (no newline).
std::string rowToJson(const SweepRow& r);
/// Parses one JSON line; errors say what is wrong.
Result<SweepRow> rowFromJson(const std::string& line);

/// The CSV header and one CSV row (the same columns as the JSON, in one order).
std::string csvHeader();
std::string rowToCsv(const SweepRow& r);
/// Columns whose values depend on the machine's speed (sched_ms, time_limited): left out when two
/// tables are compared.
std::vector<std::string> timingColumns();

/// Rows of a JSON-lines results file (none when it does not exist). A cut last line (no newline: an
/// interrupted write) and unreadable lines are skipped, each with a note in `notes` naming the file
/// and line. Errors only when the file exists and cannot be read.
Result<std::vector<SweepRow>> readResults(const std::string& path, std::vector<std::string>* notes);

/// Appends to a results file, one whole line per write(2), creating it and its folder. A cut last line
/// left by a crash is removed on open (with a note).
class ResultsAppender {
 public:
  ResultsAppender() = default;
  ResultsAppender(const ResultsAppender&) = delete;
  ResultsAppender& operator=(const ResultsAppender&) = delete;
  ~ResultsAppender();
  Status open(const std::string& path, std::vector<std::string>* notes);
  Status append(const SweepRow& r);

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace partex
