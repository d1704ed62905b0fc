#include "problem/llmjob.h"

#include "gguf/gguf.h"
#include "problem/problem.h"
#include "support/strings.h"

namespace partex {

namespace {

/// The reference with the job's phase and length appended ("?phase=decode&seq=2100" or "&...").
std::string withPhase(const std::string& ref, const std::string& phase, int64_t seq) {
  return ref + (ref.find('?') == std::string::npos ? "?" : "&") + "phase=" + phase + "&seq=" + std::to_string(seq);
}

}  // namespace

Result<LlmJobTables> loadLlmJobTables(const LlmJobSpec& spec, const Platform& platform) {
  const std::string& ref = spec.model;
  const bool gguf = isGgufRef(ref), gen = isGeneratorRef(ref);
  if (!gguf && !gen)
    return makeError(ref, ": llm needs a GGUF file or a generated decoder (gen:llama?... or gen:moe?preset=...): an ONNX "
                          "file has its phase and sequence length fixed, and the job needs both phases at several lengths");
  if (spec.prompt < 1) return makeError("--prompt ", std::to_string(spec.prompt), ": must be at least 1 token");
  if (spec.generate < 1) return makeError("--generate ", std::to_string(spec.generate), ": must be at least 1 token");
  if (spec.samples < 2) return makeError("--samples ", std::to_string(spec.samples), ": must be at least 2");
  if (spec.prompt + spec.generate > (int64_t{1} << 20))
    return makeError("--prompt + --generate: ", std::to_string(spec.prompt + spec.generate), " tokens, above 1,048,576");
  const size_t q = ref.find('?');
  if (q != std::string::npos)
    for (const auto& kv : split(ref.substr(q + 1), '&')) {
      const std::string k = trim(kv.substr(0, kv.find('=')));
      if (k == "phase" || k == "seq" || k == "tokens")
        return makeError(ref, ": '", k, "' is set by the job (--prompt for the prefill, the cache of each decode step)");
    }
  if (gen) {
    auto g = parseGeneratorRef(ref);
    if (!g) return Error{g.message()};
    if (g->kind != "llama" && g->kind != "moe")
      return makeError(ref, ": llm needs a decoder (gen:llama or gen:moe), not '", g->kind, "'");
  }
  LlmJobTables t;
  t.prompt = spec.prompt;
  t.generate = spec.generate;
  llmTrapezoid(spec.prompt, spec.generate, spec.samples, t.decodeCache, t.decodeWeight);
  auto build = [&](const std::string& phase, int64_t seq) -> Result<CostTable> {
    auto g = loadModel(withPhase(ref, phase, seq), {});
    if (!g) return Error{g.message()};
    auto p = problemFromGraph(std::move(g).value(), platform, ref);
    if (!p) return Error{p.message()};
    return std::move(p->table);
  };
  auto pre = build("prefill", spec.prompt);
  if (!pre) return Error{pre.message()};
  t.prefill = std::move(pre).value();
  for (int64_t ub : spec.ubatches) {
    if (ub < 1) return makeError("--ubatch ", std::to_string(ub), ": must be at least 1 token");
    if (ub >= spec.prompt || t.prefillReserve.count(ub)) continue;
    auto r = build("prefill", ub);
    if (!r) return Error{r.message()};
    t.prefillReserve.emplace(ub, std::move(r).value());
  }
  for (int64_t L : t.decodeCache) {
    auto d = build("decode", L);
    if (!d) return Error{d.message()};
    t.decode.push_back(std::move(d).value());
  }
  return t;
}

}  // namespace partex
