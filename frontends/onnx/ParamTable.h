//===- ParamTable.h - Model parameters held outside the IR ------*- C++ -*-===//
//
// The ONNX importer keeps float initializers (the weights) out of the IR: the
// IR names them with `weft.param "name" : tensor<...>` and their bytes live in
// a ParamTable, in the order the model lists them. Later stages (training,
// sharding, bundle writing) read and write parameters through this table.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_FRONTENDS_ONNX_PARAMTABLE_H
#define WEFT_FRONTENDS_ONNX_PARAMTABLE_H

#include "dialects/weft/ElementTypes.h"
#include "weft/runtime/KernelABI.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft {

/// One parameter: a dense, row-major tensor in little-endian byte order.
struct ParamEntry {
  std::string name;
  WeftDType dtype = WEFT_F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t numElements() const;
  /// The MLIR element type of `dtype` (f32, f16, bf16, f64, i64, ...).
  mlir::Type getElementType(mlir::MLIRContext &ctx) const;
  /// tensor<shape x element type>, the type of its `weft.param` op.
  mlir::RankedTensorType getTensorType(mlir::MLIRContext &ctx) const;
};

/// Parameters by name, iterated in insertion order. Move-only: it owns the
/// weights.
class ParamTable {
public:
  ParamTable() = default;
  ParamTable(ParamTable &&) = default;
  ParamTable &operator=(ParamTable &&) = default;
  ParamTable(const ParamTable &) = delete;
  ParamTable &operator=(const ParamTable &) = delete;

  /// Adds `entry`. Returns false (and adds nothing) when its name is taken or
  /// its data size does not match its dtype and shape.
  bool add(ParamEntry entry);
  /// The entry named `name`, or null.
  const ParamEntry *lookup(llvm::StringRef name) const;
  ParamEntry *lookup(llvm::StringRef name);
  bool contains(llvm::StringRef name) const { return lookup(name) != nullptr; }
  /// Removes the entries for which `keep` returns false, keeping the order.
  template <typename Pred> void retainIf(Pred keep) {
    std::vector<ParamEntry> kept;
    for (ParamEntry &e : entries)
      if (keep(static_cast<const ParamEntry &>(e)))
        kept.push_back(std::move(e));
    entries = std::move(kept);
    rebuildIndex();
  }

  size_t size() const { return entries.size(); }
  bool empty() const { return entries.empty(); }
  /// Total bytes of all parameters.
  int64_t totalBytes() const;

  using const_iterator = std::vector<ParamEntry>::const_iterator;
  const_iterator begin() const { return entries.begin(); }
  const_iterator end() const { return entries.end(); }
  llvm::ArrayRef<ParamEntry> getEntries() const { return entries; }

private:
  void rebuildIndex();

  std::vector<ParamEntry> entries;
  llvm::StringMap<size_t> index;
};

} // namespace weft

#endif // WEFT_FRONTENDS_ONNX_PARAMTABLE_H
