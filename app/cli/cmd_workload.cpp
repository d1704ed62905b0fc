// partex-cli workload: several models sharing one platform, scheduled jointly (core/sched/workload.h).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "sched/workload.h"

namespace partex::cli {

namespace {

struct WorkloadArgs {
  std::string file;
  std::string platform;
  std::string algos = "band,partex";
  double searchSec = 1.0;
  double horizonMs = 0;
  double rateScale = 1.0;
  bool json = false;
};

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    std::string part = s.substr(b, e - b);
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    if (!part.empty()) out.push_back(part);
    b = e + 1;
  }
  return out;
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

int runWorkload(const WorkloadArgs& a) {
  auto w = loadWorkloadFile(a.file);
  if (!w) return fail(w.message());
  if (a.horizonMs < 0 || a.horizonMs > 600000) return fail("--horizon-ms: must be 0 (the file's) to 600000");
  if (!(a.rateScale > 0) || a.rateScale > 1000) return fail("--rate-scale: must be above 0 and at most 1000");
  if (a.horizonMs > 0 || a.rateScale != 1.0) {
    if (a.horizonMs > 0) w->horizonMs = a.horizonMs;
    for (auto& m : w->models) m.ratePerS *= a.rateScale;
    // The request count depends on the horizon: re-check through the parser's rule.
    if (workloadRequestCount(*w) > kMaxWorkloadRequests) return fail(a.file + ": --horizon-ms or --rate-scale gives more than " + std::to_string(kMaxWorkloadRequests) + " requests");
  }
  if (!(a.searchSec > 0) || a.searchSec > 600) return fail("--search-sec: must be above 0 and at most 600");
  const std::vector<std::string> algos = splitComma(a.algos);
  if (algos.empty()) return fail("--algo: none given (" + std::string("band, partex") + ")");
  for (const auto& al : algos) {
    bool known = false;
    for (const auto& k : workloadAlgorithms()) known = known || k == al;
    if (!known) return fail("--algo: unknown workload scheduler '" + al + "' (band, partex)");
  }
  // The models, each on the platform (core's loader, the GUI's too).
  auto loaded = loadWorkloadProblems(*w, a.file, a.platform);
  if (!loaded) return fail(loaded.message());
  const std::vector<Problem>& problems = *loaded;
  std::vector<const CostTable*> tables;
  for (const auto& p : problems) tables.push_back(&p.table);
  std::vector<WorkloadResult> results;
  for (const auto& al : algos) {
    WorkloadOptions o;
    o.algo = al;
    o.searchSec = a.searchSec;
    auto r = scheduleWorkload(*w, tables, o);
    if (!r) return fail(a.file + ": " + r.message());
    results.push_back(std::move(*r));
  }
  const std::string platformName = problems.front().platform->name;
  if (a.json) {
    nlohmann::json out = {{"workload", w->name}, {"platform", platformName}, {"horizon_ms", w->horizonMs}};
    nlohmann::json rs = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json j = {{"algo", r.algo}, {"requests", r.requests}, {"met", r.met}, {"makespan_us", r.makespanUs}};
      nlohmann::json ms = nlohmann::json::array();
      for (const auto& s : r.models)
        ms.push_back({{"model", s.name}, {"requests", s.requests}, {"met", s.met}, {"dropped", s.dropped},
                      {"p50_us", s.p50Us}, {"p90_us", s.p90Us}, {"routes", s.route}});
      j["models"] = ms;
      nlohmann::json ut = nlohmann::json::object();
      for (size_t d = 0; d < r.deviceIds.size(); ++d) ut[r.deviceIds[d]] = r.utilisation[d];
      j["utilisation"] = ut;
      rs.push_back(j);
    }
    out["results"] = rs;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "workload " << (w->name.empty() ? a.file : w->name) << " on " << platformName << ", horizon "
            << fmt("%g", w->horizonMs) << " ms, " << (results.empty() ? 0 : results.front().requests) << " requests\n";
  std::printf("%-8s %-16s %8s %6s %8s %10s %10s  %s\n", "algo", "model", "requests", "met", "dropped", "p50 ms", "p90 ms", "routes");
  for (const auto& r : results) {
    for (const auto& s : r.models)
      std::printf("%-8s %-16s %8d %6d %8d %10.2f %10.2f  %s\n", r.algo.c_str(), s.name.c_str(), s.requests, s.met, s.dropped,
                  s.p50Us / 1000.0, s.p90Us / 1000.0, s.route.c_str());
    std::printf("%-8s %-16s %8d %6d %8s  deadlines met %.1f%%; utilisation:", r.algo.c_str(), "(all)", r.requests, r.met, "",
                r.requests ? 100.0 * r.met / r.requests : 0.0);
    for (size_t d = 0; d < r.deviceIds.size(); ++d) std::printf(" %s %.0f%%", r.deviceIds[d].c_str(), 100.0 * r.utilisation[d]);
    std::printf("\n");
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

void addWorkload(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("workload", "Schedule several models sharing one platform (a workload file) and report deadlines met");
  auto a = std::make_shared<WorkloadArgs>();
  cmd->add_option("file", a->file, "Workload file (JSON, docs/reference.md)")->required();
  cmd->add_option("--platform", a->platform, "Platform preset or file")->required();
  cmd->add_option("--algo", a->algos, "Comma-separated: band, partex (default: both)");
  cmd->add_option("--horizon-ms", a->horizonMs, "Override the file's horizon (ms)");
  cmd->add_option("--rate-scale", a->rateScale, "Multiply every rate (a heavier or lighter load of the same workload)");
  cmd->add_option("--search-sec", a->searchSec, "partex: time limit of each plan search per model (default 1)");
  cmd->add_flag("--json", a->json, "JSON output");
  cmd->callback([a, &exitCode] { exitCode = runWorkload(*a); });
}

}  // namespace partex::cli
