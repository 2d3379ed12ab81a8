//===- Npy.h - NumPy .npy files
//---------------------------------------------===//
//
// Reads format versions 1.0, 2.0 and 3.0 of little-endian, C-order arrays of
// the dtypes
//
//     <f4 f32   <f2 f16   <f8 f64   <i8 i64   <i4 i32   |i1 i8   |u1 u8
//     |b1 bool
//
// bfloat16 has no NumPy dtype: a file whose dtype is <u2, |V2 or <V2 (the
// latter is what ml_dtypes' bfloat16 saves as) is read as bf16 when the
// caller expects bf16, and bf16 is written as <u2.
//
// Errors (fortran_order, big-endian, object or other dtypes, truncated
// data, ...) come back as a message that starts with the file's name.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_NPY_H
#define WEFT_RUNTIME_NPY_H

#include "weft/runtime/Tensor.h"

#include <cstddef>
#include <string>
#include <vector>

namespace weft {

/// Pass as `expectedDType` when any supported dtype is acceptable.
constexpr int kAnyDType = -1;

/// Reads the .npy file `path` into `out` (64-byte aligned data).
/// `expectedDType` only decides how <u2/|V2/<V2 are read (bf16 when it is
/// WEFT_BF16, an error otherwise); checking the dtype is the caller's job.
bool readNpy(const std::string &path, HostTensor &out, std::string &error,
             int expectedDType = kAnyDType);

/// A .npy file's data mapped read-only: its pages are read when first
/// touched and shared (through the page cache) by every process that maps
/// the same file, so N ranks of one host hold one copy of a --data file,
/// whatever its size. Move-only; unmapped when destroyed.
class MappedNpy {
public:
  MappedNpy() = default;
  ~MappedNpy();
  MappedNpy(MappedNpy &&other) noexcept;
  MappedNpy &operator=(MappedNpy &&other) noexcept;
  MappedNpy(const MappedNpy &) = delete;
  MappedNpy &operator=(const MappedNpy &) = delete;

  int64_t dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  /// The elements, C order (null for an empty array).
  const void *data() const { return data_; }
  uint64_t byteSize() const { return bytes_; }
  void reset();

private:
  friend bool mapNpy(const std::string &, MappedNpy &, std::string &, int);
  int64_t dtype_ = 0;
  std::vector<int64_t> shape_;
  void *base_ = nullptr;
  size_t length_ = 0;
  const unsigned char *data_ = nullptr;
  uint64_t bytes_ = 0;
};

/// Maps the .npy file `path` (the checks and messages of readNpy).
bool mapNpy(const std::string &path, MappedNpy &out, std::string &error,
            int expectedDType = kAnyDType);

/// Same as readNpy for the bytes of a .npy file held in memory; `name`
/// stands for the file in messages.
bool parseNpy(const void *bytes, size_t size, const std::string &name,
              HostTensor &out, std::string &error,
              int expectedDType = kAnyDType);

/// The NumPy dtype string weft writes for `dtype` ("<f4", ..., bf16 "<u2").
const char *npyDescr(int64_t dtype);

/// The header of a version 1.0 (or 2.0 when it does not fit) .npy file:
/// magic, version, length and the dict, padded to a multiple of 64 bytes.
std::string npyHeader(int64_t dtype, const std::vector<int64_t> &shape);

/// Writes a .npy file atomically (DIR/.NAME.tmp.PID, fsync, rename). `data`
/// holds prod(shape) elements of `dtype`.
bool writeNpy(const std::string &path, int64_t dtype,
              const std::vector<int64_t> &shape, const void *data,
              std::string &error);
bool writeNpy(const std::string &path, const HostTensor &tensor,
              std::string &error);

} // namespace weft

#endif // WEFT_RUNTIME_NPY_H
