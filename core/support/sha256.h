#pragma once
/// \file SHA-256 (FIPS 180-4): model identity in plan files and profiles (the graph's hash), and of
/// any bytes. No dependency: the importer streams protobuf's serializer output into it.

#include <cstddef>
#include <cstdint>
#include <string>

namespace partex {

/// Incremental SHA-256: update() any number of times, then hex().
class Sha256 {
 public:
  void update(const void* data, size_t n);
  /// The digest in lowercase hex (64 characters); call once.
  std::string hex();

 private:
  void block(const unsigned char* p);               // the portable rounds
  void blocks(const unsigned char* p, size_t count);  // SHA extensions where the CPU has them
  uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char buf_[64] = {};
  size_t fill_ = 0;
  uint64_t total_ = 0;
};

/// SHA-256 (hex) of `bytes`.
std::string sha256Hex(const std::string& bytes);

}  // namespace partex
