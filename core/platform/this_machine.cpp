// The "this-machine" platform: built from a short measurement of this computer (well under half a
// second): FMA throughput of one core and of all cores, memcpy bandwidth with one and with all threads,
// and the fork/join cost of an OpenMP parallel region.
#include <omp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PARTEX_X86 1
#endif

#include "platform/platform.h"

namespace partex {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- FMA kernels ------------------------------------------------------------------------------------
// Each runs `iters` rounds of independent multiply-add chains a = a*m + c (m < 1, so values stay near 1:
// no overflow, no denormals) and returns a sum so that nothing is optimised away. Enough chains are in
// flight to cover the FMA latency on every current core.

struct FmaKernel {
  const char* isa;
  double flopsPerIter;
  float (*run)(long iters);
};

// Never instrumented: in a sanitizer build the instrumented loop keeps its chains in memory and measures
// a sixth of the peak, while oneDNN (a system library) still runs at full speed.
#define PARTEX_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

constexpr float kMul = 0.99990f;
constexpr float kAdd = 0.00010f;

#if PARTEX_X86
PARTEX_NO_SANITIZE __attribute__((target("avx512f"))) float fmaAvx512(long iters) {
  const __m512 m = _mm512_set1_ps(kMul), c = _mm512_set1_ps(kAdd);
  __m512 a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(k));
  for (long i = 0; i < iters; ++i) {
    a[0] = _mm512_fmadd_ps(a[0], m, c);
    a[1] = _mm512_fmadd_ps(a[1], m, c);
    a[2] = _mm512_fmadd_ps(a[2], m, c);
    a[3] = _mm512_fmadd_ps(a[3], m, c);
    a[4] = _mm512_fmadd_ps(a[4], m, c);
    a[5] = _mm512_fmadd_ps(a[5], m, c);
    a[6] = _mm512_fmadd_ps(a[6], m, c);
    a[7] = _mm512_fmadd_ps(a[7], m, c);
    a[8] = _mm512_fmadd_ps(a[8], m, c);
    a[9] = _mm512_fmadd_ps(a[9], m, c);
    a[10] = _mm512_fmadd_ps(a[10], m, c);
    a[11] = _mm512_fmadd_ps(a[11], m, c);
  }
  __m512 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, a[k]);
  alignas(64) float lanes[16];  // Not _mm512_reduce_add_ps: GCC 12 warns inside it (-Wuninitialized).
  _mm512_store_ps(lanes, s);
  float r = 0;
  for (float v : lanes) r += v;
  return r;
}

PARTEX_NO_SANITIZE __attribute__((target("avx2,fma"))) float fmaAvx2(long iters) {
  const __m256 m = _mm256_set1_ps(kMul), c = _mm256_set1_ps(kAdd);
  __m256 a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm256_set1_ps(1.0f + 0.001f * static_cast<float>(k));
  for (long i = 0; i < iters; ++i) {
    a[0] = _mm256_fmadd_ps(a[0], m, c);
    a[1] = _mm256_fmadd_ps(a[1], m, c);
    a[2] = _mm256_fmadd_ps(a[2], m, c);
    a[3] = _mm256_fmadd_ps(a[3], m, c);
    a[4] = _mm256_fmadd_ps(a[4], m, c);
    a[5] = _mm256_fmadd_ps(a[5], m, c);
    a[6] = _mm256_fmadd_ps(a[6], m, c);
    a[7] = _mm256_fmadd_ps(a[7], m, c);
    a[8] = _mm256_fmadd_ps(a[8], m, c);
    a[9] = _mm256_fmadd_ps(a[9], m, c);
    a[10] = _mm256_fmadd_ps(a[10], m, c);
    a[11] = _mm256_fmadd_ps(a[11], m, c);
  }
  __m256 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm256_add_ps(s, a[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  float r = 0;
  for (float v : lanes) r += v;
  return r;
}
#endif

/// Portable version: a loop over a small array that the compiler vectorises with the baseline ISA.
constexpr int kGenericWidth = 64;
PARTEX_NO_SANITIZE float fmaGeneric(long iters) {
  alignas(64) float a[kGenericWidth];
  for (int k = 0; k < kGenericWidth; ++k) a[k] = 1.0f + 0.001f * static_cast<float>(k);
  for (long i = 0; i < iters; ++i) {
#pragma omp simd
    for (int k = 0; k < kGenericWidth; ++k) {
#if defined(__FP_FAST_FMAF)
      a[k] = std::fma(a[k], kMul, kAdd);
#else
      a[k] = a[k] * kMul + kAdd;
#endif
    }
  }
  float r = 0;
  for (float v : a) r += v;
  return r;
}

FmaKernel pickKernel() {
#if PARTEX_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"AVX-512", 12.0 * 16 * 2, fmaAvx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"AVX2+FMA", 12.0 * 8 * 2, fmaAvx2};
#endif
  return {"generic", kGenericWidth * 2.0, fmaGeneric};
}

volatile float gSink = 0;  // Keeps kernel results alive.

/// Iterations for about `seconds` of work on one thread.
long calibrate(const FmaKernel& k, double seconds) {
  long iters = 1 << 10;
  for (;;) {
    auto t0 = Clock::now();
    gSink = gSink + k.run(iters);
    double t = secondsSince(t0);
    if (t >= 0.002 || iters > (1L << 40))
      return std::max(1L, static_cast<long>(static_cast<double>(iters) * seconds / std::max(t, 1e-9)));
    iters *= 4;
  }
}

/// Repeats `run` (which returns a rate) and keeps the best: at least once, at most `reps` times, and no
/// new repetition after `budget` seconds, so that a busy machine does not stretch the measurement.
template <class Fn>
double bestOf(int minReps, int maxReps, double budget, Fn run) {
  const auto t0 = Clock::now();
  double best = 0;
  for (int r = 0; r < maxReps && (r < minReps || secondsSince(t0) < budget); ++r) best = std::max(best, run());
  return best;
}

double serialGflops(const FmaKernel& k, long iters) {
  return bestOf(1, 3, 0.030, [&] {
    auto t0 = Clock::now();
    gSink = gSink + k.run(iters);
    return k.flopsPerIter * static_cast<double>(iters) / secondsSince(t0) * 1e-9;
  });
}

double parallelGflops(const FmaKernel& k, long iters, int threads) {
  return bestOf(1, 3, 0.030, [&] {
    auto t0 = Clock::now();
    float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    { total += k.run(iters); }
    double t = secondsSince(t0);
    gSink = gSink + total;
    return k.flopsPerIter * static_cast<double>(iters) * threads / t * 1e-9;
  });
}

/// Cost in microseconds of an empty parallel region (fork, join, barrier) with warm threads: the fastest
/// of up to 200 rounds within 20 ms (the fastest, because other processes only ever add to it).
double forkJoinUs(int threads) {
  for (int i = 0; i < 2; ++i) {
#pragma omp parallel num_threads(threads)
    {
      if (omp_get_thread_num() == 0) gSink = gSink + 0.0f;
    }
  }
  const auto t0 = Clock::now();
  double best = 1e300;
  for (int i = 0; i < 200 && (i < 3 || secondsSince(t0) < 0.020); ++i) {
    auto r0 = Clock::now();
#pragma omp parallel num_threads(threads)
    {
      if (omp_get_thread_num() == 0) gSink = gSink + 0.0f;
    }
    best = std::min(best, secondsSince(r0));
  }
  return best * 1e6;
}

/// memcpy bandwidth in GB/s (bytes read + bytes written per second), best of `minReps` to `maxReps`.
double copyGBs(char* dst, const char* src, size_t bytes, int threads, int minReps, int maxReps) {
  double best = bestOf(minReps, maxReps, 0.030, [&] {
    auto t0 = Clock::now();
    if (threads == 1) {
      std::memcpy(dst, src, bytes);
    } else {
#pragma omp parallel num_threads(threads)
      {
        size_t n = static_cast<size_t>(omp_get_num_threads());
        size_t t = static_cast<size_t>(omp_get_thread_num());
        size_t chunk = (bytes + n - 1) / n;
        size_t begin = std::min(bytes, t * chunk), end = std::min(bytes, begin + chunk);
        std::memcpy(dst + begin, src + begin, end - begin);
      }
    }
    return 2.0 * static_cast<double>(bytes) / secondsSince(t0) * 1e-9;
  });
  gSink = gSink + static_cast<float>(dst[bytes / 2]);
  return best;
}

/// A buffer on 2 MiB boundaries, with transparent huge pages requested: touching 64 MiB of 4 KiB pages
/// costs tens of milliseconds in page faults (hundreds in some virtual machines), 2 MiB pages almost nothing.
constexpr size_t kHugePage = size_t(2) << 20;
class Buffer {
 public:
  explicit Buffer(size_t bytes) : p_(static_cast<char*>(std::aligned_alloc(kHugePage, bytes))) {
    if (!p_) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    madvise(p_, bytes, MADV_HUGEPAGE);  // Advice only: failure leaves ordinary pages.
#endif
  }
  ~Buffer() {
    std::free(p_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* get() const {
    return p_;
  }

 private:
  char* p_;
};

/// The copy bandwidths (one thread, `cores` threads) measured in a child process, so that its two buffers
/// of `bytes` never count in this process's own resident memory (the probe is cached with the calibration,
/// so it runs once per machine and version, not at every start; `execute` reports the process tree's
/// peak, which counts this child once it was waited for). The child uses plain threads, not OpenMP (whose
/// pool does not survive fork). False when the child could not run or report within 20 s: the caller
/// then measures in this process.
bool copyGBsInChild(int cores, size_t bytes, double& bw1, double& bwN) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    double out[2] = {0, 0};
    void* a = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void* b = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a != MAP_FAILED && b != MAP_FAILED) {
#ifdef MADV_HUGEPAGE
      madvise(a, bytes, MADV_HUGEPAGE);
      madvise(b, bytes, MADV_HUGEPAGE);
#endif
      char* src = static_cast<char*>(a);
      char* dst = static_cast<char*>(b);
      std::memset(src, 1, bytes);
      auto copy = [&](int threads) {
        double best = 0;
        for (int rep = 0; rep < 3; ++rep) {
          const auto t0 = Clock::now();
          if (threads == 1) {
            std::memcpy(dst, src, bytes);
          } else {
            std::vector<std::thread> team;
            const size_t chunk = (bytes + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
            for (int t = 0; t < threads; ++t)
              team.emplace_back([&, t] {
                const size_t begin = std::min(bytes, static_cast<size_t>(t) * chunk);
                const size_t end = std::min(bytes, begin + chunk);
                std::memcpy(dst + begin, src + begin, end - begin);
              });
            for (auto& th : team) th.join();
          }
          best = std::max(best, 2.0 * static_cast<double>(bytes) / secondsSince(t0) * 1e-9);
        }
        return best;
      };
      out[0] = copy(1);
      out[1] = cores > 1 ? copy(cores) : out[0];
    }
    const ssize_t w = write(fds[1], out, sizeof out);
    _exit(w == static_cast<ssize_t>(sizeof out) ? 0 : 1);
  }
  close(fds[1]);
  double in[2] = {0, 0};
  size_t got = 0;
  pollfd pf{fds[0], POLLIN, 0};
  while (got < sizeof in && poll(&pf, 1, 20000) > 0) {
    const ssize_t r = read(fds[0], reinterpret_cast<char*>(in) + got, sizeof in - got);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fds[0]);
  if (got < sizeof in) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got < sizeof in || !(in[0] > 0) || !(in[1] > 0)) return false;
  bw1 = in[0];
  bwN = in[1];
  return true;
}

std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    if (key.rfind("model name", 0) == 0 || key.rfind("Model", 0) == 0 || key.rfind("Hardware", 0) == 0) {
      std::string v = line.substr(colon + 1);
      auto b = v.find_first_not_of(" \t");
      return b == std::string::npos ? std::string() : v.substr(b);
    }
  }
  return {};
}

/// The one-minute load average, or -1 where unknown.
double loadAverage() {
  std::ifstream in("/proc/loadavg");
  double v = -1;
  if (!(in >> v)) return -1;
  return v;
}

int64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? static_cast<int64_t>(pages) * size : 0;
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

/// Rounds to 3 significant digits so that the JSON form stays readable.
double round3(double v) {
  if (!(v > 0)) return v;
  double scale = std::pow(10.0, 2 - std::floor(std::log10(v)));
  return std::round(v * scale) / scale;
}

std::atomic<int64_t> gProbeRuns{0};

}  // namespace

int64_t lastLevelCacheBytes(const std::string& cacheDir) {
  int64_t best = 0;
  int bestLevel = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cacheDir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    auto read = [&](const char* name) {
      std::ifstream in(entry.path() / name);
      std::string v;
      in >> v;
      return v;
    };
    const std::string type = read("type"), size = read("size");
    if (type == "Instruction" || size.empty()) continue;
    char* end = nullptr;
    const std::string levelText = read("level");
    const long level = std::strtol(levelText.c_str(), &end, 10);
    if (end == levelText.c_str() || level <= 0) continue;
    // sysfs writes "32K", "2048K", "300M" (units of 1024 bytes); a bare number is bytes.
    const double n = std::strtod(size.c_str(), &end);
    if (!(n > 0) || end == size.c_str()) continue;
    double unit = 1;
    if (*end == 'K' || *end == 'k') unit = 1024.0;
    if (*end == 'M' || *end == 'm') unit = 1024.0 * 1024.0;
    if (*end == 'G' || *end == 'g') unit = 1024.0 * 1024.0 * 1024.0;
    const auto bytes = static_cast<int64_t>(n * unit);
    if (level > bestLevel || (level == bestLevel && bytes > best)) {
      bestLevel = static_cast<int>(level);
      best = bytes;
    }
  }
  return best;
}

int64_t probeCopyBytes(int64_t llcBytes) {
  constexpr int64_t kFloor = int64_t(16) << 20, kCeiling = int64_t(64) << 20;
  constexpr auto kPage = static_cast<int64_t>(kHugePage);
  if (llcBytes <= 0) return kCeiling;
  // Whole huge pages: the buffers ask for them.
  return (std::clamp(4 * llcBytes, kFloor, kCeiling) + kPage - 1) / kPage * kPage;
}

int64_t machineProbeRuns() {
  return gProbeRuns.load();
}

MachineProbe probeThisMachine() {
  ++gProbeRuns;
  const auto start = Clock::now();
  MachineProbe probe;
  const int cores = std::max(1, omp_get_num_procs());
  const FmaKernel k = pickKernel();
  probe.isa = k.isa;
  probe.cores = cores;

  // Compute: about 8 ms per run, best of up to three; all threads run the same iteration count.
  const long iters = calibrate(k, 0.008);
  const double g1 = serialGflops(k, iters);
  const double gNmeasured = cores > 1 ? parallelGflops(k, iters, cores) : g1;
  probe.forkJoinUs = cores > 1 ? forkJoinUs(cores) : 0.0;

  // Memory: copies of a few times the last-level cache (probeCopyBytes), so that they stream from memory.
  // In the fallback, the source's pages are touched by all threads first so that they are spread over
  // NUMA nodes as the parallel copy uses them.
  probe.lastLevelCacheBytes = lastLevelCacheBytes();
  probe.copyBytes = probeCopyBytes(probe.lastLevelCacheBytes);
  const auto bytes = static_cast<size_t>(probe.copyBytes);
  double bw1 = 0, bwNmeasured = 0;
  if (!copyGBsInChild(cores, bytes, bw1, bwNmeasured)) {
    Buffer src(bytes), dst(bytes);
    const long chunks = static_cast<long>(bytes / kHugePage);
#pragma omp parallel for num_threads(cores) schedule(static)
    for (long i = 0; i < chunks; ++i)
      std::memset(src.get() + static_cast<size_t>(i) * kHugePage, static_cast<int>(i & 0x7f), kHugePage);
    // The first copy also faults in the destination's pages: at least two runs, keep the best.
    bw1 = copyGBs(dst.get(), src.get(), bytes, 1, 2, 2);
    bwNmeasured = cores > 1 ? copyGBs(dst.get(), src.get(), bytes, cores, 1, 3) : bw1;
  }
  // Other programs competing for the cores can make all threads slower than one: never below one thread.
  probe.serialGflops = g1;
  probe.parallelGflops = std::max(gNmeasured, g1);
  probe.copyGBs1 = bw1;
  probe.copyGBsN = std::max(bwNmeasured, bw1);
  probe.seconds = secondsSince(start);
  probe.loadAverage = loadAverage();
  return probe;
}

Platform measureThisMachine() {
  if (auto provide = thisMachineProvider()) return provide();
  return thisMachineFromProbe(probeThisMachine());
}

Platform thisMachineFromProbe(const MachineProbe& probe) {
  const int cores = std::max(1, probe.cores);
  const double g1 = probe.serialGflops, gN = probe.parallelGflops, bw1 = probe.copyGBs1, bwN = probe.copyGBsN;
  const double forkUs = probe.forkJoinUs, load = probe.loadAverage;
  constexpr double kMiB = 1024.0 * 1024.0;
  const std::string copied =
      fmt(static_cast<double>(probe.copyBytes) / kMiB, 0) + " MiB" +
      (probe.lastLevelCacheBytes > 0 ? " (4x the " + fmt(static_cast<double>(probe.lastLevelCacheBytes) / kMiB, 1) +
                                           " MiB last-level cache, at most 64 MiB)"
                                     : std::string(" (last-level cache unknown)"));
  const std::string model = cpuModelName();
  const int64_t mem = physicalMemoryBytes();
  constexpr double kCallUs = 1.0;  // Per-operator call overhead on the CPU: an estimate, not measured.

  Platform p;
  p.name = "this-machine";
  p.description = "This computer" + (model.empty() ? std::string() : " (" + model + ")") + ", measured in " +
                  fmt(probe.seconds * 1e3, 0) + " ms: " + std::to_string(cores) + " cores; " + probe.isa +
                  " FMA loop: " + fmt(g1, 1) + " GFLOP/s on one thread, " + fmt(gN, 1) + " GFLOP/s on " +
                  std::to_string(cores) + " threads; memcpy of " + copied + " (read + write bytes): " + fmt(bw1, 1) +
                  " GB/s on one thread, " + fmt(bwN, 1) +
                  " GB/s on all (all-thread figures are never set below "
                  "one-thread ones); OpenMP fork/join " +
                  fmt(forkUs, 1) + " us" + (load >= 0 ? "; load average " + fmt(load, 1) : std::string()) +
                  (load > 1.0 + 0.5 * cores ? " (other programs were running: the figures are lower than an idle "
                                              "machine's)"
                                            : std::string()) +
                  ". cpu-serial runs on core 0. " + kThisMachineEstimates + "every op class gets the FMA peak (real " +
                  "kernels reach less), the per-core devices reuse the one-thread numbers and each assumes the " +
                  "one-thread bandwidth even when several run at once, and the per-operator call overhead of " +
                  fmt(kCallUs, 1) + " us is assumed.";
  p.sources = {"Measured on this computer by probeThisMachine() (core/platform/this_machine.cpp): " + probe.isa +
                   " FMA throughput with 12 independent chains per thread, memcpy bandwidth of a buffer of 4x the "
                   "last-level cache (16-64 MiB), and the time of an empty OpenMP parallel region",
               "Devices follow Kim et al., 'Optimal Model Partitioning with Low-Overhead Profiling on the PIM-based "
               "Platform for Deep Learning Inference', ACM TODAES 29(2), 2024, doi:10.1145/3628599 (CPU serial and CPU "
               "parallel as two modes of one resource)"};
  p.host = "cpu-serial";

  auto cpuDevice = [&](std::string id, std::string name, double gflops, double bw, double launch, int nCores) {
    Device d;
    d.id = std::move(id);
    d.name = std::move(name);
    d.kind = DeviceKind::Cpu;
    d.defaultPeakGflops = round3(std::max(gflops, 1e-3));
    d.memBandwidthGBs = round3(std::max(bw, 1e-3));
    d.launchOverheadUs = round3(launch);
    d.memCapacityBytes = mem;
    d.cores = nCores;
    d.fusion = "runtime";  // the CPU runtime runs these devices: its fused groups are one kernel each
    return d;
  };
  p.devices.push_back(cpuDevice("cpu-serial", "CPU serial (1 thread)", g1, bw1, kCallUs, 1));
  p.devices.push_back(cpuDevice("cpu-parallel", "CPU parallel (" + std::to_string(cores) + " threads)", gN, bwN,
                                kCallUs + forkUs, cores));
  for (int i = 0; i < cores; ++i)
    p.devices.push_back(cpuDevice("core" + std::to_string(i), "Core " + std::to_string(i), g1, bw1, kCallUs, 1));

  // One memory: every device reaches every other through the host at no cost (zero-copy).
  for (size_t i = 1; i < p.devices.size(); ++i) {
    Link l;
    l.from = p.host;
    l.to = p.devices[i].id;
    l.bandwidthGBs = round3(std::max(bwN, 1e-3));
    l.latencyUs = 0.0;
    l.sharedMemory = true;
    l.bidirectional = true;
    p.links.push_back(l);
  }
  // Pairwise groups: the cores may run side by side, but not beside the modes that use them.
  p.exclusiveGroups.push_back({"cpu-modes", {"cpu-serial", "cpu-parallel"}});
  p.exclusiveGroups.push_back({"cpu-serial-on-core0", {"cpu-serial", "core0"}});
  for (int i = 0; i < cores; ++i) {
    std::string c = "core" + std::to_string(i);
    p.exclusiveGroups.push_back({"cpu-parallel-uses-" + c, {"cpu-parallel", c}});
  }
  return p;
}

std::string thisMachineCpuModel() {
  return cpuModelName();
}

double thisMachineLoadAverage() {
  return loadAverage();
}

Platform thisMachineCores(int cores) {
  Platform p = measureThisMachine();
  p.name = "this-machine-" + std::to_string(cores) + "-cores";
  std::vector<Device> keep;
  for (int c = 0; c < cores; ++c)
    for (const auto& d : p.devices)
      if (d.id == "core" + std::to_string(c)) keep.push_back(d);
  const double bandwidth = p.links.empty() ? 10.0 : p.links.front().bandwidthGBs;
  p.devices = keep;
  p.host = keep.empty() ? std::string() : keep.front().id;
  p.exclusiveGroups.clear();
  p.links.clear();
  for (size_t a = 0; a < keep.size(); ++a)
    for (size_t b = a + 1; b < keep.size(); ++b) {
      Link l;
      l.from = keep[a].id;
      l.to = keep[b].id;
      l.sharedMemory = true;
      l.bidirectional = true;
      l.bandwidthGBs = bandwidth;
      p.links.push_back(l);
    }
  return p;
}

}  // namespace partex
