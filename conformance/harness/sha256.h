// SHA-256 (FIPS 180-4), for the library digest a certification report carries:
// a report names exactly which build of a plugin it certifies. Hand-written to
// keep the harness free of a crypto dependency for one hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace oar::conformance {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  // Lowercase hex of the digest; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view data);
// Throws std::runtime_error naming |path| when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace oar::conformance
