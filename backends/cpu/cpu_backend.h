#pragma once
/// \file The CPU backend: oneDNN primitives where oneDNN has the operator, OpenMP C++ kernels otherwise.
/// Devices follow the this-machine platform preset: "cpu-serial" (one thread, pinned to the first
/// allowed CPU, as the preset says), "cpu-parallel" (every allowed CPU, unpinned), and "core0".."coreN-1"
/// (one thread pinned to the K-th allowed CPU, so that kernels on different cores run side by side).

#include <memory>

#include "backend/backend.h"

namespace partex {

/// The CPU backend, named "cpu".
std::unique_ptr<Backend> makeCpuBackend();

}  // namespace partex
