#pragma once
/// \file The CUDA backend ("cuda"): one device, "gpu", the first NVIDIA GPU the runtime finds. Its
/// kernels (cuda_ops.h) run on the GPU; a Kernel made by prepare() takes host tensors as every Backend
/// kernel does: its first run uploads the weights it reads (kept on the GPU, keepsCopy), each run copies
/// the activations in and the outputs back over pinned buffers and synchronises. Whole models or a plan's
/// GPU part run device-resident through cuda::Program (cuda_program.h).

#include <memory>

#include "backend/backend.h"

namespace partex {

/// The CUDA backend, or null with the reason in `why` when no GPU is usable (no driver, no device).
std::unique_ptr<Backend> makeCudaBackend(std::string* why = nullptr);

}  // namespace partex
