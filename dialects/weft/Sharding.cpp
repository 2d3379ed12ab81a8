//===- Sharding.cpp - How weft tensors are laid out over a device mesh ----===//
#include "dialects/weft/Sharding.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace weft;

TensorSharding TensorSharding::replicated(int64_t rank) {
  TensorSharding s;
  s.dims.resize(rank);
  return s;
}

bool TensorSharding::isReplicated() const {
  if (!partial.empty())
    return false;
  for (const DimSharding &d : dims)
    if (!d.empty())
      return false;
  return true;
}

MeshAxes TensorSharding::usedAxes() const {
  MeshAxes all;
  for (const DimSharding &d : dims) {
    MeshAxes axes = d.allAxes();
    all.append(axes.begin(), axes.end());
  }
  all.append(partial.begin(), partial.end());
  return all;
}

static void printAxes(llvm::raw_ostream &os, ArrayRef<MeshAxis> axes) {
  os << "[";
  llvm::interleaveComma(axes, os);
  os << "]";
}

std::string TensorSharding::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(dims, os, [&](const DimSharding &d) {
    printAxes(os, d.axes);
    if (!d.empty() && d.outer != 1)
      os << " outer " << d.outer;
    if (!d.outerAxes.empty()) {
      os << " over ";
      printAxes(os, d.outerAxes);
    }
  });
  os << "]";
  if (!partial.empty()) {
    os << " partial ";
    printAxes(os, partial);
  }
  return s;
}

int64_t Mesh::numDevices() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t Mesh::groupSize(ArrayRef<MeshAxis> axes) const {
  int64_t n = 1;
  for (MeshAxis a : axes)
    n *= shape[a];
  return n;
}

std::string Mesh::axisName(MeshAxis axis) const {
  if (axis >= 0 && static_cast<size_t>(axis) < names.size())
    return names[axis];
  return "axis " + std::to_string(axis);
}

FailureOr<RankedTensorType> weft::localType(RankedTensorType global,
                                            const TensorSharding &sharding,
                                            const Mesh &mesh,
                                            std::string &error) {
  if (static_cast<int64_t>(sharding.dims.size()) != global.getRank()) {
    error = "sharding " + sharding.str() + " does not fit a tensor of rank " +
            std::to_string(global.getRank());
    return failure();
  }
  SmallVector<int64_t> shape(global.getShape());
  for (auto [d, dim] : llvm::enumerate(sharding.dims)) {
    int64_t parts = mesh.groupSize(dim.axes);
    int64_t outerParts = mesh.groupSize(dim.outerAxes);
    if (parts == 0 || outerParts == 0 || dim.outer < 1 ||
        shape[d] % (parts * dim.outer) != 0 || dim.outer % outerParts != 0) {
      error = "dimension " + std::to_string(d) + " of size " +
              std::to_string(shape[d]) + " does not split into " +
              std::to_string(parts * outerParts) + " equal blocks";
      return failure();
    }
    shape[d] /= parts * outerParts;
  }
  return global.clone(shape);
}

DictionaryAttr weft::shardingToAttr(Builder &b,
                                    const TensorSharding &sharding) {
  SmallVector<Attribute> dims, outerAxes;
  SmallVector<int64_t> outer;
  bool strided = false, outerSplit = false;
  for (const DimSharding &d : sharding.dims) {
    dims.push_back(b.getDenseI16ArrayAttr(d.axes));
    outer.push_back(d.empty() ? 1 : d.outer);
    outerAxes.push_back(b.getDenseI16ArrayAttr(d.outerAxes));
    strided |= outer.back() != 1;
    outerSplit |= !d.outerAxes.empty();
  }
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("dims", b.getArrayAttr(dims)),
      b.getNamedAttr("partial", b.getDenseI16ArrayAttr(sharding.partial))};
  if (strided)
    fields.push_back(b.getNamedAttr("outer", b.getDenseI64ArrayAttr(outer)));
  if (outerSplit)
    fields.push_back(b.getNamedAttr("outer_axes", b.getArrayAttr(outerAxes)));
  return b.getDictionaryAttr(fields);
}

FailureOr<TensorSharding> weft::shardingFromAttr(Attribute attr, int64_t rank) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  if (!dict)
    return failure();
  auto dims = dict.getAs<ArrayAttr>("dims");
  if (!dims || static_cast<int64_t>(dims.size()) != rank)
    return failure();
  TensorSharding s;
  for (Attribute d : dims) {
    auto axes = dyn_cast<DenseI16ArrayAttr>(d);
    if (!axes)
      return failure();
    s.dims.emplace_back(MeshAxes(axes.asArrayRef()));
  }
  if (Attribute o = dict.get("outer")) {
    auto outer = dyn_cast<DenseI64ArrayAttr>(o);
    if (!outer || static_cast<int64_t>(outer.size()) != rank)
      return failure();
    for (int64_t d = 0; d < rank; ++d)
      s.dims[d].outer = outer[d];
  }
  if (Attribute o = dict.get("outer_axes")) {
    auto all = dyn_cast<ArrayAttr>(o);
    if (!all || static_cast<int64_t>(all.size()) != rank)
      return failure();
    for (int64_t d = 0; d < rank; ++d) {
      auto axes = dyn_cast<DenseI16ArrayAttr>(all[d]);
      if (!axes)
        return failure();
      s.dims[d].outerAxes.assign(axes.asArrayRef().begin(),
                                 axes.asArrayRef().end());
      if (!s.dims[d].outerAxes.empty() &&
          (s.dims[d].axes.empty() || s.dims[d].outer < 2))
        return failure();
    }
  }
  if (Attribute p = dict.get("partial")) {
    auto axes = dyn_cast<DenseI16ArrayAttr>(p);
    if (!axes)
      return failure();
    s.partial.assign(axes.asArrayRef().begin(), axes.asArrayRef().end());
  }
  return s;
}

FailureOr<Mesh> weft::getModuleMesh(ModuleOp module, std::string &error) {
  SmallVector<shard::GridOp> grids(module.getOps<shard::GridOp>());
  if (grids.size() != 1) {
    error = grids.empty() ? "the module has no device mesh (shard.grid)"
                          : "the module has several device meshes";
    return failure();
  }
  shard::GridOp grid = grids.front();
  Mesh mesh;
  mesh.symbol = grid.getSymName().str();
  for (int64_t d : grid.getShape()) {
    if (d <= 0) {
      error = "the mesh @" + mesh.symbol + " needs static, positive sizes";
      return failure();
    }
    mesh.shape.push_back(d);
  }
  if (auto names = grid->getAttrOfType<ArrayAttr>("weft.mesh_axes"))
    for (Attribute n : names)
      if (auto s = dyn_cast<StringAttr>(n))
        mesh.names.push_back(s.str());
  return mesh;
}

std::optional<int64_t> weft::runtimeReductionCode(shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return 0;
  case shard::ReductionKind::Max:
    return 1;
  case shard::ReductionKind::Min:
    return 2;
  case shard::ReductionKind::Average:
    return 3;
  default:
    return std::nullopt;
  }
}
