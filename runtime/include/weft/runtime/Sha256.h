//===- Sha256.h - SHA-256 (FIPS 180-4) ------------------------------------===//
//
// Checkpoints record the SHA-256 of every file they hold and of the model
// signature that wrote them, so a corrupted, truncated or foreign checkpoint
// is refused on --resume.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_SHA256_H
#define WEFT_RUNTIME_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft {

class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;

  Sha256() { reset(); }
  void reset();
  /// Hashes `size` more bytes.
  void update(const void *data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  /// The digest of everything hashed since the last reset(); the object is
  /// reset afterwards.
  Digest finish();

  /// 64 lowercase hex digits.
  static std::string hex(const Digest &digest);

private:
  void compress(const uint8_t *block);

  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

/// The hex digest of `bytes`.
std::string sha256Hex(std::string_view bytes);

/// Hashes the file `path`, reading it in chunks; `bytes` receives its size.
/// On failure returns false with `error` naming the path and the reason.
bool sha256File(const std::string &path, std::string &hexDigest,
                uint64_t &bytes, std::string &error);

} // namespace weft

#endif // WEFT_RUNTIME_SHA256_H
