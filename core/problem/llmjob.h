#pragma once
/// \file The cost tables of a language model's job (sched/llmjob.h) from a model reference: a GGUF file
/// ("model.gguf") or a generated decoder ("gen:moe?preset=gpt-oss-120b&quant=mxfp4"), built once as a
/// prefill over the prompt and once per sampled decode step, each with its own phase and length.

#include <string>
#include <vector>

#include "platform/platform.h"
#include "sched/llmjob.h"
#include "support/result.h"

namespace partex {

/// What `partex-cli llm` asks: the model, the prompt and generated tokens, the decode samples.
struct LlmJobSpec {
  std::string model;     ///< "model.gguf" or "gen:llama?..." / "gen:moe?..." (without phase or seq: the job sets them).
  int64_t prompt = 2048;
  int64_t generate = 256;
  int samples = 3;       ///< Decode steps simulated (trapezoid over the G steps); clamped to G.
  /// The -ub values the job will be made with: each one below the prompt gets its prefill graph at that
  /// many tokens (LlmJobTables::prefillReserve), the graph llama.cpp sizes its compute buffer by.
  std::vector<int64_t> ubatches = {512};
};

/// Builds the tables. Errors (one line, naming the model): an ONNX file (its phase and length are fixed
/// in the file), a reference that sets phase or seq itself, prompt or generate below 1, samples below 2,
/// a -ub below 1, and every error of loading the model.
Result<LlmJobTables> loadLlmJobTables(const LlmJobSpec& spec, const Platform& platform);

}  // namespace partex
