// libFuzzer target for the GGUF header reader (core/gguf): any bytes must give either a header whose
// tensors lie inside the file or one error line starting with the origin name; the decoder spec built
// from a header that reads must be refused in one line or hold positive sizes. Never a crash, hang, leak
// or undefined behaviour. With PARTEX_FUZZ_WRITE_SEEDS=DIR the binary writes small GGUF headers (a dense
// llama, a qwen3moe and a gpt-oss with sliding windows) into DIR and exits.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gguf/gguf.h"
#include "gguf/ggufwriter.h"

namespace {

constexpr const char* kOrigin = "fuzz.gguf";

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_gguf: %s: %s\n", what, detail.c_str());
  std::abort();
}

void writeSeeds(const std::string& dir) {
  partex::GenSpec s;
  s.kind = "llama";
  s.layers = 2;
  s.hidden = 64;
  s.heads = 4;
  s.kvHeads = 2;
  s.intermediate = 128;
  s.vocab = 40;
  auto put = [&](const std::string& name, const partex::GgufWriter& w) {
    std::ofstream(dir + "/" + name, std::ios::binary) << w.header() << std::string(64, '\0');
  };
  put("llama.gguf", partex::ggufForSpec(s, "llama", partex::QuantType::F16));
  s.experts = 4;
  s.expertsUsed = 2;
  s.expertFfn = 64;
  put("qwen3moe.gguf", partex::ggufForSpec(s, "qwen3moe", partex::QuantType::Q8_0));
  s.slidingWindow = 16;
  s.slidingPeriod = 2;
  s.postAttentionNormName = true;
  put("gptoss.gguf", partex::ggufForSpec(s, "gpt-oss", partex::QuantType::BF16, partex::QuantType::MXFP4));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("PARTEX_FUZZ_WRITE_SEEDS")) {
    writeSeeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto f = partex::parseGgufHeader(bytes, kOrigin);
  if (!f) {
    const std::string& m = f.message();
    if (m.rfind(std::string(kOrigin) + ": ", 0) != 0 || m.find('\n') != std::string::npos)
      fail("error is not one line naming the origin", m);
    return 0;
  }
  // The data section starts at the header's end rounded up to the alignment: past the end of a file
  // without tensors (llama.cpp reads such a file too), never past it with tensors.
  if (!f->tensors.empty() && f->dataOffset > size) fail("data offset past the end", std::to_string(f->dataOffset));
  for (const auto& t : f->tensors)
    if (t.bytes() < 0 || f->dataOffset + t.offset + static_cast<uint64_t>(t.bytes()) > size)
      fail("tensor data past the end", t.name);
  auto s = partex::ggufToSpec(*f, {});
  if (!s) {
    if (s.message().find('\n') != std::string::npos) fail("spec error is not one line", s.message());
    return 0;
  }
  if (s->layers <= 0 || s->hidden <= 0 || s->heads <= 0 || s->vocab <= 0) fail("spec with a non-positive size", s->kind);
  return 0;
}
