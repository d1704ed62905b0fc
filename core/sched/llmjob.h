#pragma once
/// \file A language model's job as a llama.cpp user runs it (issue 26, item 5): answer a prompt of P
/// tokens and generate G tokens. The job is one prefill step over the P prompt tokens, then G decode
/// steps, step i (0 .. G-1) reading a cache of P + i tokens; its time is
///   prefill(P) + sum_{i=0}^{G-1} decode(P + i),
/// the decode sum integrated over a few sampled cache lengths with the trapezoid rule (llmTrapezoid: exact
/// where one step's time is linear in the cache length between samples). Every placement is held to
/// every device's memory in both phases, the KV cache at P + G tokens included (the last decode sample
/// holds P + G - 1 cached tokens and writes the P + G-th).
///
/// Placements are llama.cpp's: a -ngl N (each layer's KV cache with its slot) and a device for every
/// weight tensor (-ot), operators placed from the tensors as ggml's scheduler does (planFromTensors),
/// and the prefill op offload on or off (--no-op-offload). evaluateLlmRules evaluates every rule of
/// llama.cpp at every N on the job, as llama.cpp runs it (one placement for both phases); bestLlmJob
/// searches tensor placements for the fastest job, and also a placement per phase (KTransformers places
/// the prefill's experts on the GPU layer by layer and the decode's on the CPU), counting the time to
/// move weights and cache between the phases over the host link.

#include <map>
#include <string>
#include <vector>

#include "sched/llamarules.h"
#include "sched/scheduler.h"

namespace partex {

/// The cost tables of one job, built by the caller (problem/llmjob.h builds them from a GGUF file or a
/// generator reference): the prefill at P tokens and the decode at the sampled cache lengths, all on one
/// platform and with the same tensor names.
struct LlmJobTables {
  int64_t prompt = 0;                ///< P.
  int64_t generate = 0;              ///< G.
  CostTable prefill;                 ///< One step over P tokens (no op offload applied: the job applies it).
  std::vector<int64_t> decodeCache;  ///< The sampled cache lengths, increasing: P .. P + G - 1.
  std::vector<double> decodeWeight;  ///< Their trapezoid weights (they sum to G).
  std::vector<CostTable> decode;     ///< One decode step at each sampled length.
  /// The graphs llama.cpp reserves its compute buffer for, by -ub N below P: the prefill at N tokens,
  /// every position's output (src/llama-context.cpp, the llama_context constructor at 4c7103b96d72:
  /// graph_reserve(n_tokens, n_seqs, n_tokens) with n_tokens = min(n_ctx, n_ubatch)). A job at -ub N < P checks the prefill's memory on
  /// this table and times it on `prefill`; at N >= P `prefill` is both.
  std::map<int64_t, CostTable> prefillReserve;
};

/// The composite trapezoid rule over the G decode steps: `samples` step indices spread evenly over
/// 0 .. G-1 (all of them when samples >= G), their cache lengths P + i and weights such that
/// sum_j weight_j f(i_j) = sum_{i=0}^{G-1} f(i) for every f linear between consecutive samples (a segment
/// [a, b] of the sum counts (b - a + 1)(f(a) + f(b)) / 2, each interior sample once). samples >= 2 unless G = 1.
void llmTrapezoid(int64_t prompt, int64_t generate, int samples, std::vector<int64_t>& cache, std::vector<double>& weight);

/// A placement of the job as llama.cpp sets it: the -ngl N that puts each layer's KV cache, a device
/// for every weight tensor by its (GGUF) name, and the prefill op offload.
struct LlmPlacement {
  int ngl = 0;
  std::map<std::string, DeviceId> tensors;  ///< Every placed tensor but the caches.
  bool opOffload = true;                    ///< false: --no-op-offload.
  bool operator==(const LlmPlacement& o) const { return ngl == o.ngl && tensors == o.tensors && opOffload == o.opOffload; }
};

/// One phase's plan of a placement on one table: the tensor placement for the table's own tensors
/// (caches by -ngl), and the operators as ggml places them.
Plan llmPhasePlan(const CostTable& t, const LlamaTensors& m, const LlmPlacement& p, DeviceId accel);

/// A placement evaluated on the job.
struct LlmJobTime {
  bool fits = false;                ///< Within every device's memory in every table.
  std::string why;                  ///< The first capacity error when not.
  double prefillUs = 0;             ///< The prefill step.
  std::vector<double> decodeUs;     ///< One decode step at each sampled cache length.
  double decodeTotalUs = 0;         ///< The trapezoid sum over the G steps.
  double jobUs = 0;                 ///< prefill + decodeTotal (+ the move between phases for two placements).
  int64_t accelPeakBytes = 0;       ///< The GPU's resident peak, the largest over the tables.
  double decodeTokensPerS(int64_t generate) const;  ///< G / decodeTotal.
  double jobTokensPerS(int64_t generate) const;  ///< G / job: generated tokens per second of the whole answer.
};

/// The prepared job: the tables' tensors, the prefill with and without op offload, the GPU.
class LlmJob {
 public:
  /// Errors: no layer names, a platform without a GPU beside the host, tables that disagree (devices).
  /// `ubatch`: llama.cpp's -ub, the micro-batch whose every run copies the host weights of the prefill op
  /// offload (512 by default) and whose graph sizes the compute buffer (the prefill's memory: the table
  /// tables.prefillReserve[ubatch] when ubatch < P, an error when it is missing); the arguments then
  /// carry it (" -ub N", with -b N above -b's default 2048).
  static Result<LlmJob> make(LlmJobTables tables, int64_t ubatch = 512);

  const LlmJobTables& tables() const { return tables_; }
  DeviceId accel() const { return accel_; }
  int64_t ubatch() const { return ubatch_; }
  /// " -ub N" (" -b N -ub N" above 2048) when -ub is not llama.cpp's default 512; "" otherwise.
  std::string ubatchArgs() const;
  DeviceId host() const { return tables_.prefill.host; }
  /// The tensors of the largest decode table (the one with every cache) and its layer count.
  const LlamaTensors& tensors() const { return decodeM_.back(); }
  /// The table on which arguments and placements are written: the last decode step's.
  const CostTable& argTable() const { return tables_.decode.back(); }
  const CostTable& prefillOffloadTable() const { return prefillOffload_; }  ///< The prefill with op offload.
  const LlamaTensors& prefillTensors() const { return prefillM_; }
  /// The prefill graph whose simulated memory stands for llama.cpp's compute buffer at this -ub: the
  /// reserve table at min(ubatch, P) tokens (the prefill itself when ubatch >= P).
  const CostTable& prefillMemoryTable() const { return reserveIsPrefill_ ? tables_.prefill : reserve_; }
  const LlamaTensors& decodeTensors(size_t k) const { return decodeM_[k]; }

  /// A placement from -ngl N and overrides (read on the largest decode table; op offload as given).
  LlmPlacement fromArgs(int ngl, const std::vector<TensorOverride>& overrides, bool opOffload) const;
  /// A placement from one table's plan (each tensor where most of its readers run; the -ngl that
  /// matches the plan's caches best, as llamaArgsFor chooses it).
  LlmPlacement fromPlan(const CostTable& t, const Plan& plan, bool opOffload) const;
  /// The llama.cpp arguments that realise a placement (llamaArgsFor on the largest decode table,
  /// " --no-op-offload" when op offload is off, and -ub when it is not the default).
  LlamaArgs args(const LlmPlacement& p) const;

  /// Which phases to time: both, the prefill alone, or the decode alone (searches per phase).
  enum class Phases { Both, Prefill, Decode };
  LlmJobTime evaluate(const LlmPlacement& p, Phases phases = Phases::Both) const;
  /// Seconds (us) to move from placement a (prefill) to b (decode): the weights whose device changes and
  /// the prefill's KV cache (P tokens) of the layers whose cache changes device, host -> GPU and GPU ->
  /// host on their own links at once (PCIe is full duplex), each direction latency + bytes / bandwidth.
  double moveUs(const LlmPlacement& a, const LlmPlacement& b, int64_t* bytesToAccel = nullptr, int64_t* bytesToHost = nullptr) const;

 private:
  LlmJobTables tables_;
  CostTable prefillOffload_;  ///< The prefill with ggml's op offload (withOpOffload).
  LlamaTensors prefillM_;
  std::vector<LlamaTensors> decodeM_;
  DeviceId accel_ = -1;
  int64_t ubatch_ = 512;
  bool reserveIsPrefill_ = true;  ///< ubatch >= P: the prefill's own graph sizes its memory.
  CostTable reserve_;             ///< Otherwise the reserve table at ubatch tokens,
  LlamaTensors reserveM_;         ///< and its tensors.
};

/// One llama.cpp rule at its best N on the job.
struct LlmRuleResult {
  std::string rule;     ///< "-ngl", "--fit", "--n-cpu-moe", "--n-cpu-ffn".
  bool ok = false;      ///< Some N fits.
  std::string why;      ///< When not: why (no such tensors, nothing fits).
  int n = -1;           ///< The best N (-ngl N, --n-cpu-moe N, ...); -1 for --fit.
  int tried = 0;        ///< Settings evaluated (every N, with and without op offload).
  std::string args;     ///< The llama.cpp arguments.
  LlmPlacement placement;
  LlmJobTime time;
};

/// Every rule of llama.cpp on the job, each at its fastest fitting setting: -ngl N (N = 0 .. n_layer + 1),
/// --n-cpu-moe N and --n-cpu-ffn N (N = 0 .. n_layer, with -ngl all slots as users pair them), --fit
/// (run on the last decode table, default margin), each with op offload on (llama.cpp's default) and off.
std::vector<LlmRuleResult> evaluateLlmRules(const LlmJob& job);

/// best for the job: a local search over tensor placements (per layer: attention, router, dense FFN,
/// each routed-expert projection, shared experts; the output head; the -ngl that places the caches; op
/// offload) from the fastest rule setting, by job time within memory; then the same search per phase
/// (prefill alone, decode alone) and the pair that is fastest with the move between them.
struct LlmBestResult {
  LlmPlacement single;       ///< One placement for both phases (what llama.cpp can run).
  LlmJobTime singleTime;
  bool twoPhase = false;     ///< A placement per phase is faster than `single`, move included.
  LlmPlacement prefill, decode;
  LlmJobTime twoPhaseTime;   ///< prefillUs from `prefill`, decode from `decode`, jobUs with the move.
  double moveUs = 0;
  int64_t moveToAccelBytes = 0, moveToHostBytes = 0;
  int evaluations = 0;       ///< Placements evaluated.
  bool timeLimitReached = false;
  std::vector<std::string> notes;
};
Result<LlmBestResult> bestLlmJob(const LlmJob& job, const std::vector<LlmRuleResult>& rules, const Deadline& deadline);

/// The largest micro-batch best tries: each one costs a job (its rules and a share of the search) and a
/// prefill graph of that many tokens, and the gain of one fewer copy per micro-batch shrinks with -ub.
constexpr int64_t kLlmMaxUbatch = 8192;

/// The micro-batches best tries for a prompt of P tokens: llama.cpp's default 512, then every power of
/// two above it below min(P, kLlmMaxUbatch), then that bound itself (P: one micro-batch). Never below 512: a smaller micro-batch re-reads
/// the GPU's weights more often and runs smaller matrix products, which the cost model's prefill (one
/// P-token graph) does not charge, so a gain there would be the model's, not llama.cpp's.
std::vector<int64_t> llmUbatchCandidates(int64_t prompt);

/// best over the micro-batch as well as the placement (-ub is a result-neutral argument, as -ngl and -ot
/// are): one job per -ub, llama.cpp's rules on each (every rule seeds that -ub's search), then best on
/// each for an equal share of `timeLimitSec` (started after that job's rules; infinite: no limit); the
/// fastest single placement wins. The rules a user gets are
/// those at -ub 512 (`defaultJob`); `bestJob`'s rules are the best rule at best's -ub, so the gain splits
/// into what the micro-batch gives (rule at 512 -> rule at best's -ub) and what the placement gives.
struct LlmUbatchSearch {
  std::vector<LlmJob> jobs;                       ///< One per micro-batch tried.
  std::vector<std::vector<LlmRuleResult>> rules;  ///< The rules on each.
  std::vector<LlmBestResult> best;                ///< best on each (empty `single` where it failed).
  std::vector<std::string> failed;                ///< Per job: why best failed ("" when it did not).
  size_t defaultJob = 0;                          ///< The job at `ruleUbatch`.
  size_t bestJob = 0;                             ///< The job of the fastest single placement.
};
/// Errors: a micro-batch list without `ruleUbatch`, a job that cannot be made, no job where best succeeds.
Result<LlmUbatchSearch> bestLlmJobOverUbatch(const LlmJobTables& tables, const std::vector<int64_t>& ubatches, int64_t ruleUbatch,
                                             double timeLimitSec);

}  // namespace partex
