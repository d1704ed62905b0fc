// partex-cli llm MODEL --platform P --prompt 2048 --generate 256: the fastest placement of a language
// model's job (prefill the prompt, generate the tokens) against llama.cpp's rules, and the llama.cpp
// arguments that realise it (core/sched/llmjob.h, core/problem/llmjob.h).
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "problem/llmjob.h"
#include "sched/llmjob.h"
#include "support/strings.h"

namespace partex::cli {

namespace {

struct LlmArgs {
  std::string model;
  std::string platform;
  int64_t prompt = 2048;
  int64_t generate = 256;
  int samples = 3;
  int64_t ubatch = 0;  ///< llama.cpp's -ub for the rules and best alike; 0: best searches it, the rules keep 512.
  double gpuGiB = 0;  ///< > 0: the GPU's memory, GiB.
  double timeLimit = 10.0;
  bool json = false;
  bool ubatchGiven = false;
};

std::string fmtMs(double us) {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f", us / 1000);
  return b;
}
std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}
std::string gib(int64_t bytes) { return fmt("%.1f GiB", static_cast<double>(bytes) / (1 << 30)); }

/// The -ot string of a placement's arguments ("" without overrides).
std::string otString(const LlmJob& job, const LlamaArgs& a) {
  std::vector<std::string> items;
  for (const auto& o : a.overrides) items.push_back(o.pattern + "=" + llamaDeviceName(job.argTable(), o.device));
  return join(items, ",");
}

/// A placement and its times; `phase` "prefill" or "decode" keeps only that phase's times (a pair's half).
nlohmann::json placementJson(const LlmJob& job, const LlmPlacement& p, const LlmJobTime& t, const std::string& phase = "") {
  const LlamaArgs a = job.args(p);
  const int64_t G = job.tables().generate;
  nlohmann::json tensors = nlohmann::json::object();
  for (const auto& [name, d] : p.tensors) tensors[name] = llamaDeviceName(job.argTable(), d);
  nlohmann::json steps = nlohmann::json::array();
  for (size_t k = 0; k < t.decodeUs.size(); ++k)
    steps.push_back({{"cache_tokens", job.tables().decodeCache[k]}, {"step_ms", t.decodeUs[k] / 1000}});
  nlohmann::json j = {{"llama_cpp_args", a.text}, {"ngl", a.ngl}, {"ot", otString(job, a)}, {"op_offload", p.opOffload}, {"tensors", tensors}};
  if (phase != "decode") j["prefill_ms"] = t.prefillUs / 1000;
  if (phase != "prefill") {
    j["decode_steps"] = steps;
    j["decode_ms"] = t.decodeTotalUs / 1000;
    j["decode_tokens_per_s"] = t.decodeTokensPerS(G);
  }
  if (phase.empty()) {
    j["job_s"] = t.jobUs / 1e6;
    j["job_tokens_per_s"] = t.jobTokensPerS(G);
    j["gpu_peak_bytes"] = t.accelPeakBytes;
  }
  return j;
}

int runLlm(const LlmArgs& a) {
  if (a.platform.empty()) return fail("llm: --platform is required (see partex-cli platforms)");
  if (a.ubatchGiven && a.ubatch < 1) return fail("--ubatch " + std::to_string(a.ubatch) + ": must be at least 1 token");
  if (!(a.timeLimit > 0)) return fail("--time-limit " + fmt("%g", a.timeLimit) + ": must be above 0 seconds");
  if (a.gpuGiB < 0 || !std::isfinite(a.gpuGiB)) return fail("--gpu-memory " + fmt("%g", a.gpuGiB) + ": must be a size in GiB above 0");
  auto plat = loadPlatform(a.platform);
  if (!plat) return fail(plat.message());
  if (a.gpuGiB > 0) {
    Device* gpu = nullptr;
    for (auto& d : plat->devices)
      if (!gpu && d.kind == DeviceKind::Gpu) gpu = &d;
    if (!gpu) return fail("--gpu-memory: platform '" + plat->name + "' has no GPU");
    gpu->memCapacityBytes = static_cast<int64_t>(a.gpuGiB * static_cast<double>(int64_t{1} << 30));
  }
  LlmJobSpec spec;
  spec.model = a.model;
  spec.prompt = a.prompt;
  spec.generate = a.generate;
  spec.samples = a.samples;
  // -ub: given, for the rules and best alike; otherwise best searches it and the rules keep llama.cpp's 512.
  const int64_t ruleUbatch = a.ubatchGiven ? a.ubatch : 512;
  spec.ubatches = a.ubatchGiven ? std::vector<int64_t>{a.ubatch} : llmUbatchCandidates(a.prompt);
  auto tables = loadLlmJobTables(spec, *plat);
  if (!tables) return fail(tables.message());
  auto search = bestLlmJobOverUbatch(*tables, spec.ubatches, ruleUbatch, a.timeLimit);
  if (!search) return fail(a.model + ": " + search.message());
  const LlmJob* job = &search->jobs[search->bestJob];
  const LlmBestResult* best = &search->best[search->bestJob];
  const std::vector<LlmRuleResult>& rules = search->rules[search->defaultJob];
  const std::vector<LlmRuleResult>& rulesAtBest = search->rules[search->bestJob];
  const bool otherUbatch = search->bestJob != search->defaultJob;
  const LlmRuleResult* topAtBest = nullptr;
  for (const auto& r : rulesAtBest)
    if (r.ok && (!topAtBest || r.time.jobUs < topAtBest->time.jobUs)) topAtBest = &r;
  std::vector<int64_t> searched;
  for (const auto& x : search->jobs) searched.push_back(x.ubatch());
  const LlmJobTables& jt = job->tables();
  const int64_t P = jt.prompt, G = jt.generate;
  const CostTable& t = job->argTable();
  const DeviceId gpu = job->accel();
  const int64_t cap = t.memCapacity.empty() ? 0 : t.memCapacity[static_cast<size_t>(gpu)];
  double bestRule = 0;
  for (const auto& r : rules)
    if (r.ok && (bestRule == 0 || r.time.jobUs < bestRule)) bestRule = r.time.jobUs;
  std::vector<std::string> lens;
  for (int64_t L : jt.decodeCache) lens.push_back(std::to_string(L));
  const std::string integration = "trapezoid over " + std::to_string(jt.decodeCache.size()) + " of the " + std::to_string(G) +
                                  " decode steps (cache " + join(lens, ", ") + " tokens; exact where a step's time is linear in the cache between them)";
  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["platform"] = plat->name;
    j["gpu"] = t.deviceIds[static_cast<size_t>(gpu)];
    j["gpu_capacity_bytes"] = cap;
    j["prompt"] = P;
    j["generate"] = G;
    j["ubatch"] = job->ubatch();
    j["rules_ubatch"] = ruleUbatch;
    j["ubatches_searched"] = searched;
    if (topAtBest)
      j["best_rule_at_best_ubatch"] = {{"rule", topAtBest->rule}, {"args", topAtBest->args}, {"job_s", topAtBest->time.jobUs / 1e6},
                                       {"best_speedup", topAtBest->time.jobUs / best->singleTime.jobUs}};
    j["layers"] = job->tensors().layers;
    j["decode_integration"] = integration;
    nlohmann::json samples = nlohmann::json::array();
    for (size_t k = 0; k < jt.decodeCache.size(); ++k) samples.push_back({{"cache_tokens", jt.decodeCache[k]}, {"weight", jt.decodeWeight[k]}});
    j["decode_samples"] = samples;
    j["best"] = placementJson(*job, best->single, best->singleTime);
    j["best_vs_rules"] = bestRule > 0 ? bestRule / best->singleTime.jobUs : 0.0;
    if (best->twoPhase) {
      j["two_phase"] = {{"prefill", placementJson(*job, best->prefill, best->twoPhaseTime, "prefill")},
                        {"decode", placementJson(*job, best->decode, best->twoPhaseTime, "decode")},
                        {"gpu_peak_bytes", best->twoPhaseTime.accelPeakBytes},
                        {"move_ms", best->moveUs / 1000},
                        {"move_to_gpu_bytes", best->moveToAccelBytes},
                        {"move_to_host_bytes", best->moveToHostBytes},
                        {"job_s", best->twoPhaseTime.jobUs / 1e6},
                        {"vs_rules", bestRule > 0 ? bestRule / best->twoPhaseTime.jobUs : 0.0}};
    } else {
      j["two_phase"] = nullptr;
    }
    nlohmann::json rj = nlohmann::json::array();
    for (const auto& r : rules) {
      nlohmann::json x = {{"rule", r.rule}, {"ok", r.ok}, {"settings_tried", r.tried}};
      if (r.ok) {
        x["n"] = r.n;
        x["args"] = r.args;
        x["op_offload"] = r.placement.opOffload;
        x["prefill_ms"] = r.time.prefillUs / 1000;
        x["decode_tokens_per_s"] = r.time.decodeTokensPerS(G);
        x["job_s"] = r.time.jobUs / 1e6;
        x["gpu_peak_bytes"] = r.time.accelPeakBytes;
        x["best_speedup"] = r.time.jobUs / best->singleTime.jobUs;
      } else {
        x["why"] = r.why;
      }
      rj.push_back(x);
    }
    j["rules"] = rj;
    j["evaluations"] = best->evaluations;
    j["time_limit_reached"] = best->timeLimitReached;
    j["notes"] = best->notes;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const LlmJobTime& bt = best->singleTime;
  std::printf("Model        %s: %d layers%s, platform %s (%s %s)\n", a.model.c_str(), job->tensors().layers,
              job->tensors().experts ? " with routed experts" : "", plat->name.c_str(), t.deviceIds[static_cast<size_t>(gpu)].c_str(),
              cap > 0 ? gib(cap).c_str() : "unlimited");
  std::printf("Job          a %lld-token prompt, then %lld generated tokens: prefill once, %lld decode steps over a growing cache\n",
              static_cast<long long>(P), static_cast<long long>(G), static_cast<long long>(G));
  std::printf("Decode       %s\n\n", integration.c_str());
  std::printf("Fastest placement (best; one placement for both phases, as llama.cpp runs it)\n");
  std::printf("  prefill    %s ms (%s prompt tokens/s)\n", fmtMs(bt.prefillUs).c_str(), fmt("%.0f", 1e6 * static_cast<double>(P) / bt.prefillUs).c_str());
  std::printf("  decode     %s ms/token at %lld cached tokens, %s at %lld: %s tokens/s\n", fmt("%.2f", bt.decodeUs.front() / 1000).c_str(),
              static_cast<long long>(jt.decodeCache.front()), fmt("%.2f", bt.decodeUs.back() / 1000).c_str(),
              static_cast<long long>(jt.decodeCache.back()), fmt("%.2f", bt.decodeTokensPerS(G)).c_str());
  std::printf("  job        %s s (%s generated tokens/s over the whole answer)\n", fmt("%.3f", bt.jobUs / 1e6).c_str(),
              fmt("%.2f", bt.jobTokensPerS(G)).c_str());
  std::printf("  gpu        %s peak of %s\n", gib(bt.accelPeakBytes).c_str(), cap > 0 ? gib(cap).c_str() : "unlimited");
  std::printf("  llama.cpp  %s\n", job->args(best->single).text.c_str());
  if (bestRule > 0) std::printf("  vs rules   %sx the fastest llama.cpp rule's job time\n", fmt("%.3f", bestRule / bt.jobUs).c_str());
  if (best->twoPhase) {
    const LlmJobTime& tp = best->twoPhaseTime;
    std::printf("\nA placement per phase (as KTransformers does; llama.cpp cannot change placements between phases)\n");
    std::printf("  prefill    %s ms with: %s\n", fmtMs(tp.prefillUs).c_str(), job->args(best->prefill).text.c_str());
    std::printf("  move       %s ms (%s to the GPU, %s to the host)\n", fmtMs(best->moveUs).c_str(),
                humanBytes(static_cast<double>(best->moveToAccelBytes)).c_str(), humanBytes(static_cast<double>(best->moveToHostBytes)).c_str());
    std::printf("  decode     %s tokens/s with: %s\n", fmt("%.2f", tp.decodeTokensPerS(G)).c_str(), job->args(best->decode).text.c_str());
    std::printf("  job        %s s (%sx the single placement)\n", fmt("%.3f", tp.jobUs / 1e6).c_str(), fmt("%.3f", bt.jobUs / tp.jobUs).c_str());
  } else {
    std::printf("\nA placement per phase: none faster than the single placement once the move between phases is counted\n");
  }
  std::printf("\nllama.cpp's rules on the same job (each at its fastest setting within memory)\n");
  std::printf("  %-12s %12s %14s %10s %9s  %s\n", "rule", "prefill ms", "decode tok/s", "job s", "best is", "arguments");
  for (const auto& r : rules) {
    if (!r.ok) {
      std::printf("  %-12s %s\n", r.rule.c_str(), r.why.c_str());
      continue;
    }
    std::printf("  %-12s %12s %14s %10s %8sx  %s\n", r.rule.c_str(), fmtMs(r.time.prefillUs).c_str(),
                fmt("%.2f", r.time.decodeTokensPerS(G)).c_str(), fmt("%.3f", r.time.jobUs / 1e6).c_str(),
                fmt("%.3f", r.time.jobUs / bt.jobUs).c_str(), r.args.c_str());
  }
  if (otherUbatch && topAtBest)
    std::printf("  at best's -ub %lld: %s %s s (best is %sx), %s\n", static_cast<long long>(job->ubatch()), topAtBest->rule.c_str(),
                fmt("%.3f", topAtBest->time.jobUs / 1e6).c_str(), fmt("%.3f", topAtBest->time.jobUs / bt.jobUs).c_str(), topAtBest->args.c_str());
  std::vector<std::string> searchedText;
  for (int64_t u : searched) searchedText.push_back(std::to_string(u));
  std::printf("Note         -ub searched: %s; the rules at -ub %lld (%s)\n", join(searchedText, ", ").c_str(), static_cast<long long>(ruleUbatch),
              a.ubatchGiven ? "--ubatch" : "llama.cpp's default");
  for (const auto& n : best->notes) std::printf("Note         %s\n", n.c_str());
  return 0;
}

}  // namespace

void addLlm(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("llm", "The fastest placement of a language model's job against llama.cpp's rules, as llama.cpp arguments");
  auto a = std::make_shared<LlmArgs>();
  cmd->add_option("model", a->model, "GGUF file, or a generated decoder (gen:moe?preset=gpt-oss-20b&quant=mxfp4)")->required();
  cmd->add_option("--platform,-p", a->platform, "Platform preset name or platform JSON file");
  cmd->add_option("--prompt", a->prompt, "Prompt tokens (one prefill)")->capture_default_str();
  cmd->add_option("--generate", a->generate, "Generated tokens (decode steps)")->capture_default_str();
  cmd->add_option("--samples", a->samples, "Decode steps simulated (trapezoid over the generated tokens)")->capture_default_str();
  cmd->add_option("--gpu-memory", a->gpuGiB, "The GPU's memory in GiB (default: the platform's)");
  cmd->add_option("--ubatch", a->ubatch,
                  "llama.cpp's -ub for the rules and best alike: the prefill's micro-batch, each of which copies the host "
                  "weights the GPU multiplies (op offload) and whose graph sizes the compute buffer (default: best searches "
                  "512, 1024, ... up to the prompt; the rules keep llama.cpp's 512)")
      ->each([a](const std::string&) { a->ubatchGiven = true; });
  cmd->add_option("--time-limit", a->timeLimit, "Seconds best's search may take, shared equally by the -ub it tries (the rules not counted)")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->callback([a, &exitCode] { exitCode = runLlm(*a); });
}

}  // namespace partex::cli
