// registerBuiltinBackends(): the one place that lists the backends compiled into the program.
#include "backend/backend.h"
#include "cpu/cpu_backend.h"

namespace partex {

void registerBuiltinBackends(BackendRegistry& registry) {
  registry.add(makeCpuBackend());
}

}  // namespace partex
