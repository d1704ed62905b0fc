// registerBuiltinBackends(): the one place that lists the backends compiled into the program.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"

namespace partex {

namespace {

/// The CUDA backend from libpartex_cuda.so (backends/cuda/module.cpp), loaded only where the machine
/// has an NVIDIA device node (no driver, no GPU: nothing is loaded, nothing is printed) and
/// PARTEX_NO_GPU is unset. The module lies beside the executable (the build tree) or in
/// ../lib/partex (an installation). The reason a GPU is not used is kept for `cudaUnavailableReason`.
std::string& cudaReason() {
  static std::string why;
  return why;
}

void addCudaBackend(BackendRegistry& registry) {
  if (const char* off = std::getenv("PARTEX_NO_GPU"); off && *off && std::string(off) != "0") {
    cudaReason() = "PARTEX_NO_GPU is set";
    return;
  }
  std::error_code ec;
  if (!std::filesystem::exists("/dev/nvidiactl", ec) && !std::filesystem::exists("/dev/nvidia0", ec)) {
    cudaReason() = "no NVIDIA device on this machine";
    return;
  }
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  void* lib = nullptr;
  for (const auto& dir : {exe.parent_path(), exe.parent_path() / ".." / "lib" / "partex"}) {
    const auto path = dir / "libpartex_cuda.so";
    if (!std::filesystem::exists(path, ec)) continue;
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      cudaReason() = std::string("cannot load ") + path.string() + ": " + (e ? e : "unknown error");
      return;
    }
    break;
  }
  if (!lib) {
    cudaReason() = "this build has no CUDA backend (libpartex_cuda.so)";
    return;
  }
  using Create = Backend* (*)(std::string*);
  auto create = reinterpret_cast<Create>(dlsym(lib, "partex_cuda_backend_create"));
  if (!create) {
    cudaReason() = "libpartex_cuda.so has no entry point";
    return;
  }
  std::string why;
  std::unique_ptr<Backend> b(create(&why));
  if (!b) {
    cudaReason() = why;
    return;
  }
  registry.add(std::move(b));
  // The module stays loaded for the life of the process (its code runs the backend's kernels).
}

}  // namespace

const std::string& cudaUnavailableReason() { return cudaReason(); }

void registerBuiltinBackends(BackendRegistry& registry) {
  registry.add(makeCpuBackend());
  addCudaBackend(registry);
}

}  // namespace partex
