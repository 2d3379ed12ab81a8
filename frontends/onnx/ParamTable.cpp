//===- ParamTable.cpp - Model parameters held outside the IR --------------===//
#include "frontends/onnx/ParamTable.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

using namespace weft;

ParamEntry ParamEntry::withoutData(std::string name, WeftDType dtype,
                                   std::vector<int64_t> shape) {
  ParamEntry entry;
  entry.name = std::move(name);
  entry.dtype = dtype;
  entry.shape = std::move(shape);
  entry.dataLoaded = false;
  return entry;
}

std::string ParamEntry::describeMissingData() const {
  return "parameter '" + name +
         "' has no data: it is stored as ONNX external data, which a "
         "structure-only import does not load";
}

llvm::ArrayRef<uint8_t> ParamEntry::getData() const {
  if (!dataLoaded)
    llvm::report_fatal_error(llvm::Twine("weft: ") + describeMissingData(),
                             /*gen_crash_diag=*/false);
  return data;
}

int64_t ParamEntry::byteSize() const {
  return numElements() * weftDTypeSize(dtype);
}

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
  int64_t expected = entry.hasData() ? entry.byteSize() : 0;
  if (static_cast<int64_t>(entry.data.size()) != expected)
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
    total += e.byteSize();
  return total;
}

bool ParamTable::hasAllData() const {
  for (const ParamEntry &e : entries)
    if (!e.hasData())
      return false;
  return true;
}

bool ParamTable::checkHasData(std::string &error) const {
  constexpr size_t kNamed = 3;
  std::vector<const ParamEntry *> missing;
  for (const ParamEntry &e : entries)
    if (!e.hasData())
      missing.push_back(&e);
  if (missing.empty())
    return true;
  error = missing.front()->describeMissingData();
  if (missing.size() > 1) {
    error += " (and " + std::to_string(missing.size() - 1) + " more:";
    for (size_t i = 1; i < missing.size() && i <= kNamed; ++i)
      error += (i > 1 ? ", '" : " '") + missing[i]->name + "'";
    error += missing.size() - 1 > kNamed ? ", ...)" : ")";
  }
  return false;
}

void ParamTable::rebuildIndex() {
  index.clear();
  for (size_t i = 0; i < entries.size(); ++i)
    index[entries[i].name] = i;
}
