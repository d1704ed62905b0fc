#include "sweep/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "platform/platform.h"
#include "problem/problem.h"
#include "profile/profile.h"
#include "sched/compare.h"
#include "support/files.h"
#include "support/sha256.h"
#include "sweep/report.h"

namespace partex {

namespace fs = std::filesystem;

namespace {

std::string fmtDuration(double sec) {
  char buf[48];
  const long s = std::lround(std::max(0.0, sec));
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

std::string exact(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace

std::string progressText(const SweepProgress& p) {
  std::string s = std::to_string(p.done) + "/" + std::to_string(p.total) + " cases";
  if (p.done > 0 && p.elapsedSec > 0) {
    const double rate = static_cast<double>(p.done) / p.elapsedSec;
    char buf[64];
    std::snprintf(buf, sizeof buf, "  %.2f/s", rate);
    s += buf;
    s += "  " + fmtDuration(static_cast<double>(p.total - p.done) / rate) + " left";
  }
  s += "  " + fmtDuration(p.elapsedSec) + " elapsed";
  return s;
}

std::string resultsPath(const std::string& outDir) {
  return (fs::path(outDir) / "results.jsonl").string();
}

std::string shardResultsPath(const std::string& outDir, int index, int count) {
  return (fs::path(outDir) / "shards" / ("shard-" + std::to_string(index) + "-of-" + std::to_string(count) + ".jsonl"))
      .string();
}

Result<CaseHasher::Hashes> CaseHasher::hash(const SweepCase& c) {
  Hashes h;
  const SweepModel& m = spec_.models[c.model];
  auto fileSha = [&](const std::string& path) -> Result<std::string> {
    if (auto it = files_.find(path); it != files_.end()) return it->second;
    auto bytes = readFile(path);
    if (!bytes) return Error{bytes.message()};
    return files_[path] = sha256Hex(*bytes);
  };
  std::string text = "partex " + partexVersion() + "\n";
  if (isGeneratorRef(m.ref)) {
    h.model = sha256Hex(m.ref);  // the generator's output is a function of its reference and the version
    text += "model " + m.ref + "\n";
  } else {
    auto sha = fileSha(m.ref);
    if (!sha) return Error{sha.message()};
    h.model = *sha;
    text += "model " + *sha + "\n";
  }
  text += "dims " + dimsLabel(m.dimSets[c.dimSet]) + "\n";
  if (!m.taskGraph) {
    const std::string& ref = spec_.platforms[c.platform];
    auto it = platforms_.find(ref);
    if (it == platforms_.end()) {
      auto p = loadPlatform(ref);
      if (!p) return Error{p.message()};
      it = platforms_.emplace(ref, sha256Hex(platformToJson(*p))).first;
    }
    h.platform = it->second;
    text += "platform " + it->second + "\n";
    if (ref == "this-machine") {
      if (profiles_.empty()) {
        profiles_ = "-";
        for (const auto& f : spec_.profiles) {
          auto sha = fileSha(f);
          if (!sha) return Error{sha.message()};
          profiles_ += " " + *sha;
        }
      }
      text += "profiles " + profiles_ + "\n";
    }
  }
  text += "bw " + exact(spec_.bandwidthScales[c.bandwidth]) + "\nlat " + exact(spec_.latencyScales[c.latency]) + "\n";
  const SweepAlgorithm& a = spec_.algorithms[c.algorithm];
  text += "algorithm " + a.name + (a.named ? " named" : "") + "\ntime_limit " + exact(a.timeLimitSec) + "\n";
  for (const auto& [k, v] : a.params) text += "param " + k + "=" + v + "\n";
  text += std::string("unlimited_links ") + (spec_.unlimitedLinks ? "1" : "0") + "\n";
  // Only a throughput sweep adds lines: latency sweeps keep the hashes of the rows they already have.
  if (spec_.objective == Objective::Throughput) text += "objective throughput " + exact(spec_.latencyBoundUs) + "\n";
  h.inputs = sha256Hex(text);
  return h;
}

namespace {

/// Loads problems for consecutive cases, keeping the last model's graph and the last problem (cases
/// come model-major, so each model is imported once per run of its cases).
class ProblemCache {
 public:
  explicit ProblemCache(const SweepSpec& spec) : spec_(spec) {}

  struct Entry {
    Result<Problem> problem = Error{"not loaded"};
    int profiles = 0;
  };

  const Entry& get(const SweepCase& c) {
    const auto key = std::make_tuple(c.model, c.dimSet, c.platform, c.bandwidth, c.latency);
    if (entry_ && key == entryKey_) return *entry_;
    entryKey_ = key;
    entry_ = std::make_unique<Entry>(load(c));
    return *entry_;
  }

 private:
  Entry load(const SweepCase& c) {
    const SweepModel& m = spec_.models[c.model];
    const LinkScale scale{spec_.bandwidthScales[c.bandwidth], spec_.latencyScales[c.latency]};
    Entry e;
    if (m.taskGraph) {
      e.problem = loadProblem(m.ref, "", {}, scale);
      return e;
    }
    const auto gkey = std::make_pair(c.model, c.dimSet);
    if (!graph_ || gkey != graphKey_) {
      graphKey_ = gkey;
      graph_ = std::make_unique<Result<Graph>>(loadModel(m.ref, m.dimSets[c.dimSet]));
    }
    if (!*graph_) {
      e.problem = Error{graph_->message()};
      return e;
    }
    const std::string& pref = spec_.platforms[c.platform];
    auto pit = platforms_.find(pref);
    if (pit == platforms_.end()) pit = platforms_.emplace(pref, loadPlatform(pref)).first;
    if (!pit->second) {
      e.problem = Error{pit->second.message()};
      return e;
    }
    e.problem = problemFromGraph(graph_->value(), pit->second.value(), m.label, scale);
    if (e.problem && pref == "this-machine") {
      // A profile applies to the model it measured (its graph hash); the others are for other models.
      for (const auto& f : spec_.profiles) {
        auto pit2 = profiles_.find(f);
        if (pit2 == profiles_.end()) pit2 = profiles_.emplace(f, loadProfileFile(f)).first;
        if (!pit2->second) {
          e.problem = Error{pit2->second.message()};
          return e;
        }
        if (pit2->second->modelSha256.empty() || pit2->second->modelSha256 != e.problem->id.modelSha256) continue;
        auto r = applyCostSource(e.problem->table, *pit2->second, false, m.label, e.problem->id.modelSha256, f);
        if (!r) {
          e.problem = Error{r.message()};
          return e;
        }
        ++e.profiles;
      }
    }
    return e;
  }

  const SweepSpec& spec_;
  std::tuple<size_t, size_t, size_t, size_t, size_t> entryKey_{};
  std::unique_ptr<Entry> entry_;
  std::pair<size_t, size_t> graphKey_{};
  std::unique_ptr<Result<Graph>> graph_;
  std::map<std::string, Result<Platform>> platforms_;
  std::map<std::string, Result<Profile>> profiles_;
};

SweepRow baseRow(const SweepSpec& spec, const SweepCase& c, const CaseHasher::Hashes& h) {
  SweepRow r;
  const SweepModel& m = spec.models[c.model];
  r.key = c.key;
  r.index = c.index;
  r.model = m.label;
  r.dims = dimsLabel(m.dimSets[c.dimSet]);
  r.platform = m.taskGraph ? "task graph" : spec.platformLabels[c.platform];
  r.bandwidthScale = spec.bandwidthScales[c.bandwidth];
  r.latencyScale = spec.latencyScales[c.latency];
  r.algorithm = spec.algorithms[c.algorithm].label;
  r.timeLimitSec = spec.algorithms[c.algorithm].timeLimitSec;
  r.version = partexVersion();
  r.modelSha256 = h.model;
  r.platformSha256 = h.platform;
  r.inputsSha256 = h.inputs;
  r.objective = objectiveName(spec.objective);
  return r;
}

/// Every results file of the output folder: results.jsonl, then the shards' files (sorted).
std::vector<std::string> resultsFiles(const std::string& outDir) {
  std::vector<std::string> files{resultsPath(outDir)};
  std::error_code ec;
  std::vector<std::string> shards;
  for (const auto& e : fs::directory_iterator(fs::path(outDir) / "shards", ec))
    if (e.path().extension() == ".jsonl") shards.push_back(e.path().string());
  std::sort(shards.begin(), shards.end());
  files.insert(files.end(), shards.begin(), shards.end());
  return files;
}

}  // namespace

Result<SweepTable> collectResults(const SweepSpec& spec, const std::vector<SweepCase>& cases) {
  SweepTable t;
  std::map<std::string, std::vector<SweepRow>> byKey;
  for (const auto& f : resultsFiles(spec.output)) {
    std::error_code ec;
    if (!fs::exists(f, ec)) continue;
    auto rows = readResults(f, &t.notes);
    if (!rows) return Error{rows.message()};
    t.files.push_back(f);
    for (auto& r : *rows) byKey[r.key].push_back(std::move(r));
  }
  CaseHasher hasher(spec);
  for (const auto& c : cases) {
    auto h = hasher.hash(c);
    if (!h) return Error{h.message()};
    const SweepRow* found = nullptr;
    bool stale = false;
    if (auto it = byKey.find(c.key); it != byKey.end())
      for (const auto& r : it->second) {  // the last current row wins
        if (r.inputsSha256 == h->inputs)
          found = &r;
        else
          stale = true;
      }
    if (found) {
      SweepRow r = *found;
      r.index = c.index;
      t.rows.push_back(std::move(r));
    } else {
      t.missing.push_back(c);
      if (stale) ++t.stale;
    }
  }
  return t;
}

Result<SweepRunSummary> runSweep(const SweepSpec& spec, const SweepRunOptions& opts) {
  const auto all = expandSweep(spec);
  const auto cases = opts.shardCount > 0 ? selectShard(all, opts.shardIndex, opts.shardCount) : all;
  auto note = [&](const std::string& n) {
    if (opts.onNote) opts.onNote(n);
  };
  auto table = collectResults(spec, cases);
  if (!table) return Error{table.message()};
  for (const auto& n : table->notes) note(n);
  if (table->stale)
    note(std::to_string(table->stale) + " cases have results from other inputs or another version; they run again");

  SweepRunSummary sum;
  sum.cases = cases.size();
  sum.skipped = cases.size() - table->missing.size();
  sum.resultsFile =
      opts.shardCount > 0 ? shardResultsPath(spec.output, opts.shardIndex, opts.shardCount) : resultsPath(spec.output);
  if (table->missing.empty()) return sum;

  ResultsAppender out;
  std::vector<std::string> notes;
  if (auto st = out.open(sum.resultsFile, &notes); !st) return Error{st.message()};
  for (const auto& n : notes) note(n);

  SweepProgress prog;
  prog.total = table->missing.size();
  prog.skipped = sum.skipped;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  ProblemCache problems(spec);
  CaseHasher hasher(spec);
  auto cancelled = [&] { return opts.cancel && opts.cancel->load(); };
  for (const auto& c : table->missing) {
    if (cancelled()) break;
    prog.current = c.key;
    prog.elapsedSec = elapsed();
    if (opts.onStart) opts.onStart(prog);
    auto h = hasher.hash(c);
    if (!h) return Error{h.message()};
    SweepRow row = baseRow(spec, c, *h);
    const auto& entry = problems.get(c);
    if (!entry.problem) {
      row.error = entry.problem.message();
    } else {
      const CostTable& t = entry.problem->table;
      const SweepAlgorithm& a = spec.algorithms[c.algorithm];
      row.tasks = t.numTasks();
      row.edges = static_cast<int>(t.edges.size());
      row.devices = t.numDevices();
      row.profiles = entry.profiles;
      SchedOptions o;
      o.timeLimitSec = a.timeLimitSec;
      o.params = a.params;
      o.sim.unlimitedLinks = spec.unlimitedLinks;
      o.objective = spec.objective;
      o.latencyBoundUs = spec.latencyBoundUs;
      o.cancel = opts.cancel;
      const Comparison cmp = compareAlgorithms(t, {}, o, {a.name}, a.named);
      if (cancelled() || cmp.rows.empty()) break;  // cut short: the case is not kept and runs next time
      const ComparisonRow& cr = cmp.rows.front();
      row.lowerBoundUs = cmp.lowerBoundUs;
      row.bestSingleUs = cmp.bestSingleUs;
      row.valid = cr.valid;
      row.error = cr.error;
      row.schedMs = cr.schedMs;
      row.timeLimited = cr.timeLimited;
      row.optimal = cr.optimal;
      if (cr.valid) {
        row.makespanUs = cr.makespanUs;
        row.periodUs = cr.periodUs;
        row.streamLatencyUs = cr.streamLatencyUs;
        row.ratioToBound = cr.ratioToBound;
        row.speedup = cr.speedup;
        row.transfers = static_cast<int64_t>(cr.timeline.transfers.size());
        row.bytesMoved = cr.timeline.bytesMoved;
        for (size_t d = 0; d < cr.timeline.peakBytes.size(); ++d) {
          row.peakDeviceBytes = std::max(row.peakDeviceBytes, cr.timeline.peakBytes[d]);
          row.overCapacity = row.overCapacity || (d < cr.timeline.overCapacity.size() && cr.timeline.overCapacity[d]);
        }
      }
    }
    if (auto st = out.append(row); !st) return Error{st.message()};
    ++sum.ran;
    if (!row.valid) ++sum.invalid;
    ++prog.done;
    prog.elapsedSec = elapsed();
    if (opts.onRow) opts.onRow(prog, row);
  }
  sum.interrupted = cancelled() || sum.ran < table->missing.size();
  return sum;
}

Status writeSweepOutputs(const SweepSpec& spec, const SweepTable& table) {
  std::string jsonl, csv = csvHeader() + "\n";
  for (const auto& r : table.rows) {
    jsonl += rowToJson(r) + "\n";
    csv += rowToCsv(r) + "\n";
  }
  std::error_code ec;
  fs::create_directories(spec.output, ec);
  if (ec) return makeError(spec.output, ": cannot create the folder: ", ec.message());
  if (auto st = writeFileAtomic(resultsPath(spec.output), jsonl); !st) return st;
  if (auto st = writeFileAtomic((fs::path(spec.output) / "results.csv").string(), csv); !st) return st;
  return writeSweepReport(spec, table);
}

}  // namespace partex
