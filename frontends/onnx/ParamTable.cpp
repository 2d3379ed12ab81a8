//===- ParamTable.cpp - Model parameters held outside the IR --------------===//
#include "frontends/onnx/ParamTable.h"

#include "mlir/IR/MLIRContext.h"

using namespace weft;

int64_t ParamEntry::numElements() const {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  return count;
}

mlir::Type ParamEntry::getElementType(mlir::MLIRContext &ctx) const {
  return getElementTypeOf(ctx, dtype);
}

mlir::RankedTensorType ParamEntry::getTensorType(mlir::MLIRContext &ctx) const {
  return mlir::RankedTensorType::get(shape, getElementType(ctx));
}

bool ParamTable::add(ParamEntry entry) {
  if (index.count(entry.name))
    return false;
  for (int64_t d : entry.shape)
    if (d < 0)
      return false;
  if (static_cast<int64_t>(entry.data.size()) !=
      entry.numElements() * weftDTypeSize(entry.dtype))
    return false;
  index[entry.name] = entries.size();
  entries.push_back(std::move(entry));
  return true;
}

const ParamEntry *ParamTable::lookup(llvm::StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &entries[it->second];
}

ParamEntry *ParamTable::lookup(llvm::StringRef name) {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &entries[it->second];
}

int64_t ParamTable::totalBytes() const {
  int64_t total = 0;
  for (const ParamEntry &e : entries)
    total += static_cast<int64_t>(e.data.size());
  return total;
}

void ParamTable::rebuildIndex() {
  index.clear();
  for (size_t i = 0; i < entries.size(); ++i)
    index[entries[i].name] = i;
}
