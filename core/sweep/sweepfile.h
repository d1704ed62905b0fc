#pragma once
/// \file Sweep files: which models, dimension bindings, platforms, link scales and algorithms a
/// design-space sweep crosses, read and validated before anything runs, and expanded to cases in one
/// fixed order (model, dims, platform, bandwidth scale, latency scale, algorithm), so that a case's
/// index, its shard and its key are the same on every machine. The format is in docs/sweeps.md.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "sim/stream.h"
#include "support/result.h"

namespace partex {

/// One model of a sweep: a file (ONNX or JSON task graph) or a generator reference ("gen:...").
struct SweepModel {
  std::string ref;         ///< What core/problem loads: an absolute path or "gen:KIND?key=value&...".
  std::string label;       ///< In results: the path relative to the sweep file's folder, or the generator reference.
  bool taskGraph = false;  ///< A task graph carries its own devices: it crosses no platform.
  /// Dimension binding sets ("NAME=VALUE" each); one empty set when the model binds none.
  std::vector<std::vector<std::string>> dimSets;
};

/// One algorithm entry: a scheduler with its parameters and time limit.
struct SweepAlgorithm {
  std::string name;                           ///< Scheduler name (sched/registry).
  std::map<std::string, std::string> params;  ///< SchedOptions::params.
  double timeLimitSec = 10.0;
  bool named = false;  ///< Named one by one (not through "*"): exact then runs on any graph size.
  std::string label;   ///< In results: name, or name(key=value,...) with parameters, or the entry's "label".
};

struct SweepSpec {
  std::string file;  ///< The sweep file as given.
  std::string dir;   ///< Its folder: relative paths in it are relative to this.
  std::vector<SweepModel> models;
  std::vector<std::string> platforms;       ///< Preset names or absolute platform-file paths.
  std::vector<std::string> platformLabels;  ///< In results: preset name or the path relative to dir.
  std::vector<double> bandwidthScales{1.0};
  std::vector<double> latencyScales{1.0};
  std::vector<SweepAlgorithm> algorithms;
  std::vector<std::string> profiles;  ///< Profile files (absolute) applied to cases on "this-machine".
  bool unlimitedLinks = false;
  /// "objective": what every case's schedulers minimise and the rows report (sim/stream.h): latency (one
  /// inference) or throughput (the period of a stream, with "latency_bound_us" per inference).
  Objective objective = Objective::Latency;
  double latencyBoundUs = 0;
  std::string output;  ///< Results folder (absolute): "output" of the file, else <dir>/<file stem>-results.
};

/// One case: indexes into the spec.
struct SweepCase {
  size_t index = 0;  ///< Position in the expansion.
  size_t model = 0, dimSet = 0, platform = 0, bandwidth = 0, latency = 0, algorithm = 0;
  std::string key;  ///< "model|dims|platform|bw=..|lat=..|algorithm": identity in results tables.
};

/// Reads and validates a sweep file: bad JSON, an unknown field, a model file that does not exist, a
/// glob that matches nothing, an unknown generator, platform or algorithm, a bad scale or an empty list
/// is one error naming the file and the entry ("sweep.json: models[2]: no file matches 'x/*.onnx'").
Result<SweepSpec> loadSweepFile(const std::string& path);
/// The same from text; `file` names it in messages and its folder anchors relative paths.
Result<SweepSpec> parseSweep(const std::string& text, const std::string& file);

/// Every case of the sweep in the fixed order (see the file comment).
std::vector<SweepCase> expandSweep(const SweepSpec& spec);

/// Shard `index` of `count` (0 <= index < count): every count-th case starting at `index`.
std::vector<SweepCase> selectShard(const std::vector<SweepCase>& cases, int index, int count);
/// Parses "I/N" (0 <= I < N).
Result<std::pair<int, int>> parseShard(const std::string& text);

/// The bindings of a case's dimension set as one text ("" when none): "batch=8,seq=128".
std::string dimsLabel(const std::vector<std::string>& dims);

}  // namespace partex
