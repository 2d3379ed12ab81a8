//===- ParamTable.h - Model parameters held outside the IR ------*- C++ -*-===//
//
// The ONNX importer keeps float initializers (the weights) out of the IR: the
// IR names them with `weft.param "name" : tensor<...>` and their bytes live in
// a ParamTable, in the order the model lists them. Later stages (training,
// sharding, bundle writing) read and write parameters through this table.
//
// An entry may hold no data: a structure-only import (planning a model far too
// large to load) keeps the name, dtype and shape of an initializer stored as
// ONNX external data but never reads its bytes. hasData() tells them apart;
// getData() on such an entry is a fatal error that names it, and
// ParamTable::checkHasData() lets a tool refuse the table cleanly first.
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
  /// The bytes when hasData(); empty otherwise. Prefer getData(), which
  /// refuses a data-less entry instead of handing out an empty buffer.
  std::vector<uint8_t> data;
  /// False for an entry imported without its data (structure-only import of
  /// an initializer stored as ONNX external data): name, dtype and shape only.
  bool dataLoaded = true;

  /// An entry with a name, dtype and shape but no data.
  static ParamEntry withoutData(std::string name, WeftDType dtype,
                                std::vector<int64_t> shape);

  bool hasData() const { return dataLoaded; }
  /// The bytes. Asking a data-less entry is a bug of the caller (it should
  /// have checked hasData() or ParamTable::checkHasData()): it stops the
  /// program with a message naming the parameter.
  llvm::ArrayRef<uint8_t> getData() const;
  /// The message getData() and ParamTable::checkHasData() give for a
  /// data-less entry.
  std::string describeMissingData() const;

  int64_t numElements() const;
  /// numElements() times the dtype's size, whether or not the data is here.
  int64_t byteSize() const;
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

  /// Adds `entry`. Returns false (and adds nothing) when its name is taken,
  /// its data size does not match its dtype and shape, or it is data-less but
  /// holds bytes.
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
  /// Total bytes of all parameters (their byteSize(), whether or not their
  /// data is loaded).
  int64_t totalBytes() const;
  /// Whether every entry holds its data.
  bool hasAllData() const;
  /// Returns false with a message naming the data-less entries (the first
  /// few, and how many) unless every entry holds its data.
  bool checkHasData(std::string &error) const;

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
