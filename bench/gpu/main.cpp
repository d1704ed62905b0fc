// bench_gpu: the CUDA backend on every model of a folder (the shared models by default), as a user's
// GPU runs it. For each model: the whole graph on the GPU (cuda::Program: weights resident, fused
// chains, one stream), its outputs against the CPU backend's reference (max relative difference), the
// latency of a run launched operator by operator and of a run replayed as one CUDA graph (median of
// --reps, host wall time from the launch to the end of the run, synchronised), and each fused
// operator's GPU time measured with CUDA events (the GPU profile), with its FLOPs and bytes so that the
// cost model can be checked against it. Also the same model all on the GPU through the executor, as
// `partex-cli execute` runs a plan (the CUDA backend's kernels one by one, each launched and waited for
// by the GPU's lane): its makespan against the CUDA graph's is the executor's cost per kernel. Also the
// GPU's calibration (bandwidths, launch overhead, GEMM rates). Writes one JSON file (--out) and prints
// a table.
//
//   bench_gpu --models ../shared/models --out gpu.json [--reps 200] [--tf32] [--generated bert,gpt2,...]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cost/work.h"
#include "cpu/cpu_backend.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_calibrate.h"
#include "cuda/cuda_program.h"
#include "gen/generator.h"
#include "graphrun.h"
#include "onnx/importer.h"
#include "profile/executor.h"
#include "support/files.h"
#include "support/strings.h"
#include "../benchutil.h"

using namespace partex;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
using partex::bench::median;

struct Args {
  std::string models;
  std::string out;
  int reps = 200;
  bool tf32 = false;
  std::vector<std::string> generated;  ///< --generated bert,gpt2,...
  std::string refCache;                ///< --ref-cache DIR: CPU reference outputs kept between runs
};

nlohmann::json benchGraph(const Graph& g, const std::string& name, const Args& args, const Backend& cpu);

/// The CUDA backend as the executor sees it (made once).
const Backend* cudaBackend() {
  static const std::unique_ptr<Backend> b = makeCudaBackend();
  return b.get();
}

nlohmann::json benchModel(const fs::path& file, const Args& args, const Backend& cpu) {
  auto gr = test::importSharedModel(file.string());
  if (!gr) return {{"model", file.filename().string()}, {"error", gr.message()}};
  return benchGraph(*gr, file.filename().string(), args, cpu);
}

/// A generated model at its default size (BERT-base and GPT-2-small at 128 tokens, the CNNs at 224x224)
/// with seeded weights, as `partex-cli generate KIND --weights` writes it.
nlohmann::json benchGenerated(const std::string& kind, const Args& args, const Backend& cpu) {
  GenSpec spec;
  spec.kind = kind;
  spec.weights = true;
  if (kind == "llama") spec.layers = 4, spec.hidden = 1024, spec.heads = 16;  // the 7B default does not fit a quick run
  auto bytes = generateModel(spec);
  if (!bytes) return {{"model", "gen_" + kind}, {"error", bytes.message()}};
  auto g = importOnnxBytes(*bytes, kind + ".onnx");
  if (!g) return {{"model", "gen_" + kind}, {"error", g.message()}};
  return benchGraph(*g, "gen_" + kind, args, cpu);
}

nlohmann::json benchGraph(const Graph& g, const std::string& name, const Args& args, const Backend& cpu) {
  nlohmann::json r;
  r["model"] = name;
  r["operators"] = g.nodes.size();
  std::vector<std::string> unsupported;
  for (OpId op = 0; op < static_cast<OpId>(g.nodes.size()); ++op)
    if (auto why = cuda::gpuCheck(g, op); !why.empty()) unsupported.push_back(g.nodes[static_cast<size_t>(op)].name + ": " + why);
  if (!unsupported.empty()) {
    r["unsupported"] = unsupported;
    r["error"] = "unsupported operators";
    return r;
  }
  // Leaves: the model's weights and seeded inputs, the ones the CPU reference reads.
  auto leaves = test::leafTensors(g, 1);
  if (!leaves) {
    r["error"] = leaves.message();
    return r;
  }
  auto order = g.topologicalOrder();
  if (!order) {
    r["error"] = order.message();
    return r;
  }
  auto t0 = Clock::now();
  auto prog = cuda::Program::build(g, *order, test::leafLookup(*leaves));
  r["build_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!prog) {
    r["error"] = prog.message();
    return r;
  }
  auto& p = **prog;
  r["gpu_ops"] = p.launches();
  r["device_bytes"] = p.deviceBytes();
  // Outputs against the CPU reference (all CPUs), read from --ref-cache when an earlier run of the
  // same model wrote it there (the reference is most of a run's time on a GPU machine).
  t0 = Clock::now();
  bool cached = false;
  auto refr = test::cachedReference(g, name, *leaves, cpu, "cpu-parallel", args.refCache, &cached);
  if (!refr) {
    r["error"] = "CPU reference: " + refr.message();
    return r;
  }
  auto& ref = *refr;
  r["cpu_reference_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
  r["cpu_reference_cached"] = cached;
  for (int graphMode = 0; graphMode < 2; ++graphMode) {
    if (auto st = p.run(graphMode == 1); !st) {
      r["error"] = std::string(graphMode ? "graph run: " : "eager run: ") + st.message();
      return r;
    }
    double maxAbs = 0, maxRel = 0;
    bool ok = true;
    std::string why;
    for (ValueId v : g.outputs) {
      Tensor out;
      if (auto st = p.output(v, out); !st) {
        r["error"] = st.message();
        return r;
      }
      std::string w;
      // TF32 keeps 10 mantissa bits of float32's 23: its outputs are held to 1e-2.
      if (!tensorsClose(ref[v], out, args.tf32 ? 1e-2 : 1e-3, maxAbs, maxRel, &w))
        ok = false, why = g.values[static_cast<size_t>(v)].name + ": " + w;
    }
    const char* key = graphMode ? "graph" : "eager";
    r[key]["outputs_match"] = ok;
    r[key]["tolerance"] = args.tf32 ? 1e-2 : 1e-3;
    r[key]["max_abs_diff"] = maxAbs;
    r[key]["max_rel_diff"] = maxRel;
    if (!ok) r[key]["mismatch"] = why;
  }
  // Latency: interleaved eager and graph runs.
  std::vector<double> eager, graph;
  for (int i = 0; i < 20; ++i) (void)p.run(false), (void)p.run(true);
  for (int i = 0; i < args.reps; ++i) {
    auto a = Clock::now();
    (void)p.run(false);
    eager.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
    a = Clock::now();
    (void)p.run(true);
    graph.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
  }
  r["eager_ms"] = median(eager);
  r["graph_ms"] = median(graph);
  std::sort(graph.begin(), graph.end());
  r["graph_p10_ms"] = graph[graph.size() / 10];
  r["graph_p90_ms"] = graph[graph.size() * 9 / 10];
  // Per fused operator: GPU time with events, and its work.
  auto times = p.timeOps(3, 20);
  if (!times) {
    r["error"] = times.message();
    return r;
  }
  double sumUs = 0;
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& t : *times) {
    int64_t flops = 0, bytesIn = 0, bytesW = 0, bytesOut = 0;
    std::string types;
    for (size_t i = 0; i < t.ops.size(); ++i) {
      const auto w = characterise(g, t.ops[i]);
      flops += w.flops;
      // A chain reads its first operator's inputs and writes its last one's output.
      if (i == 0) bytesIn += w.bytesReadActivations, bytesW += w.bytesReadWeights;
      else bytesW += w.bytesReadWeights;
      if (i + 1 == t.ops.size()) bytesOut = w.bytesWritten;
      types += (i ? "+" : "") + g.nodes[static_cast<size_t>(t.ops[i])].opType;
    }
    sumUs += t.us;
    ops.push_back({{"name", t.name}, {"types", types}, {"us", t.us}, {"flops", flops}, {"bytes_in", bytesIn},
                   {"bytes_weights", bytesW}, {"bytes_out", bytesOut}});
  }
  r["op_sum_us"] = sumUs;
  r["ops"] = ops;
  // The executor: every operator on "gpu" in topological order (executeOnDevice, as the in-context
  // profile and an all-GPU plan run), median makespan, and each kernel's host time (launch + wait).
  if (const Backend* cb = cudaBackend()) {
    ExecOptions eo;
    eo.warmup = 3;
    eo.reps = std::max(5, std::min(args.reps, 30));
    eo.minCpuShare = 0;
    eo.maxDiscarded = 0;
    auto er = executeOnDevice(g, *cb, "gpu", *order, eo);
    if (!er) {
      r["executor_error"] = er.message();
    } else {
      r["executor_ms"] = er->makespanUs / 1000.0;
      int kernels = 0;
      for (size_t v = 0; v < er->opUs.size(); ++v)
        kernels += er->fusedInto.empty() || er->fusedInto[v] < 0 || er->fusedInto[v] == static_cast<OpId>(v);
      r["executor_kernels"] = kernels;
      r["executor_cpu_share"] = er->cpuShare;
    }
  }
  return r;
}

/// Writes the document (atomically: a crash never leaves half a file); false with a message on failure.
bool save(const nlohmann::json& doc, const std::string& out) {
  if (out.empty()) return true;
  if (auto st = writeFileAtomic(out, doc.dump(1) + "\n"); !st) {
    std::fprintf(stderr, "bench_gpu: %s\n", st.message().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_gpu: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--models") args.models = next();
    else if (a == "--out") args.out = next();
    else if (a == "--reps") args.reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--tf32") args.tf32 = true;
    else if (a == "--ref-cache") args.refCache = next();
    else if (a == "--generated") {
      for (const auto& k : split(next(), ','))
        if (!k.empty()) args.generated.push_back(k);
    }
    else {
      std::fprintf(stderr, "usage: bench_gpu --models DIR [--out FILE.json] [--reps N] [--tf32] [--generated KIND,...] [--ref-cache DIR]\n");
      return 2;
    }
  }
  if (args.models.empty() || !fs::is_directory(args.models)) {
    std::fprintf(stderr, "bench_gpu: --models DIR: '%s' is not a folder\n", args.models.c_str());
    return 2;
  }
  std::string why;
  if (cuda::gpuCount(&why) == 0) {
    std::fprintf(stderr, "bench_gpu: %s\n", why.c_str());
    return 2;
  }
  nlohmann::json doc;
  auto cal = cuda::calibrateGpu();
  if (!cal) {
    std::fprintf(stderr, "bench_gpu: calibration: %s\n", cal.message().c_str());
    return 1;
  }
  doc["calibration"] = nlohmann::json::parse(cal->toJson());
  std::printf("GPU: %s\ncalibration: %s\n", cal->info.describe().c_str(), cal->toJson().c_str());
  auto ctx = cuda::Context::get();
  if (args.tf32) (*ctx)->setAllowTf32(true);
  doc["tf32"] = args.tf32;
  auto cpu = makeCpuBackend();
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(args.models))
    if (e.path().extension() == ".onnx") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::printf("%-36s %5s %6s %10s %10s %10s %10s %10s %s\n", "model", "ops", "gpuops", "eager ms", "graph ms", "sum-op ms",
              "exec ms", "max rel", "outputs");
  std::vector<std::pair<std::string, fs::path>> runs;
  for (const auto& f : files) runs.push_back({"", f});
  for (const auto& k : args.generated) runs.push_back({k, fs::path("gen_" + k)});
  for (const auto& [kind, f] : runs) {
    auto r = kind.empty() ? benchModel(f, args, *cpu) : benchGenerated(kind, args, *cpu);
    doc["models"].push_back(r);
    (void)save(doc, args.out);  // after every model: a crash later keeps what was measured
    if (r.contains("error")) {
      std::printf("%-36s ERROR %s\n", f.filename().c_str(), r["error"].get<std::string>().c_str());
      if (r.contains("unsupported"))
        for (const auto& u : r["unsupported"]) std::printf("    %s\n", u.get<std::string>().c_str());
      std::fflush(stdout);
      continue;
    }
    std::printf("%-36s %5d %6d %10.3f %10.3f %10.3f %10.3f %10.2e %s\n", f.filename().c_str(), r["operators"].get<int>(),
                r["gpu_ops"].get<int>(), r["eager_ms"].get<double>(), r["graph_ms"].get<double>(),
                r["op_sum_us"].get<double>() / 1000.0, r.value("executor_ms", -1.0), r["graph"]["max_rel_diff"].get<double>(),
                r["graph"]["outputs_match"].get<bool>() && r["eager"]["outputs_match"].get<bool>() ? "match"
                                                                                                            : "MISMATCH");
    std::fflush(stdout);
  }
  return save(doc, args.out) ? 0 : 1;
}
