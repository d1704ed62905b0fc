// The entry point of libpartex_cuda.so, the CUDA backend as a module that registerBuiltinBackends()
// (backends/builtin.cpp) loads at run time. Only this symbol is exported.
#include <string>

#include "cuda/cuda_backend.h"

extern "C" __attribute__((visibility("default"))) partex::Backend* partex_cuda_backend_create(std::string* why) {
  return partex::makeCudaBackend(why).release();
}
