//===- Safetensors.h - safetensors files
//------------------------------------===//
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON header
// (padded with spaces), then the tensors' bytes. The header maps each tensor
// name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative
// to the byte buffer after the header) and may hold "__metadata__", a map of
// strings to strings. dtypes: F32 F16 BF16 F64 I64 I32 I8 U8 BOOL.
//
// The reader validates the header (length, JSON, dtypes, shapes, offsets
// inside the file, sizes equal to shape * dtype size, no overlaps) when the
// file is opened and reads tensors on demand; every message starts with the
// file's name and names the tensor involved.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_SAFETENSORS_H
#define WEFT_RUNTIME_SAFETENSORS_H

#include "weft/runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace weft {

/// "F32", "BF16", ...; "?" for an unknown code.
const char *safetensorsDTypeName(int64_t dtype);
/// Parses "F32", ... Returns false for names weft does not support.
bool parseSafetensorsDType(std::string_view name, WeftDType &out);

struct SafetensorsEntry {
  std::string name;
  WeftDType dtype = WEFT_F32;
  std::vector<int64_t> shape;
  uint64_t fileOffset = 0; ///< absolute offset of the first byte in the file
  uint64_t byteSize = 0;
};

using SafetensorsMetadata = std::vector<std::pair<std::string, std::string>>;

class SafetensorsReader {
public:
  SafetensorsReader() = default;
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader &) = delete;
  SafetensorsReader &operator=(const SafetensorsReader &) = delete;

  /// Opens and validates `path`. The file stays open until destruction (or
  /// the next open).
  bool open(const std::string &path, std::string &error);
  void close();

  const std::string &path() const { return path_; }
  /// Tensors in header order.
  const std::vector<SafetensorsEntry> &tensors() const { return tensors_; }
  const SafetensorsEntry *find(std::string_view name) const;
  const SafetensorsMetadata &metadata() const { return metadata_; }

  /// Reads the bytes of `entry` (entry.byteSize of them) into `dst`.
  bool readData(const SafetensorsEntry &entry, void *dst,
                std::string &error) const;
  /// Reads `entry` into a freshly allocated, 64-byte aligned tensor.
  bool readTensor(const SafetensorsEntry &entry, HostTensor &out,
                  std::string &error) const;

private:
  std::string path_;
  int fd_ = -1;
  std::vector<SafetensorsEntry> tensors_;
  std::unordered_map<std::string, size_t> index_;
  SafetensorsMetadata metadata_;
};

/// One tensor to write.
struct SafetensorsTensorRef {
  std::string name;
  int64_t dtype = WEFT_F32;
  std::vector<int64_t> shape;
  const void *data = nullptr; ///< prod(shape) elements of `dtype`
};

/// Writes `tensors`, in the given order, and `metadata` (as "__metadata__",
/// omitted when empty) atomically to `path` (DIR/.NAME.tmp.PID, fsync,
/// rename).
bool writeSafetensors(const std::string &path,
                      const std::vector<SafetensorsTensorRef> &tensors,
                      const SafetensorsMetadata &metadata, std::string &error);

} // namespace weft

#endif // WEFT_RUNTIME_SAFETENSORS_H
