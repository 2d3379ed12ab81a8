//===- WeftDialect.cpp - Registration of the weft dialect -----------------===//
#include "dialects/weft/WeftOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace weft;

#include "dialects/weft/WeftDialect.cpp.inc"
#include "dialects/weft/WeftInterfaces.cpp.inc"

void WeftDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/weft/WeftOps.cpp.inc"
      >();
}

Operation *WeftDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

int64_t weft::defaultBytesAccessed(Operation *op) {
  int64_t bytes = 0;
  auto add = [&](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return;
    unsigned bits = tensor.getElementTypeBitWidth();
    bytes += tensor.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
  };
  for (Type t : op->getOperandTypes())
    add(t);
  for (Type t : op->getResultTypes())
    add(t);
  return bytes;
}

#define GET_OP_CLASSES
#include "dialects/weft/WeftOps.cpp.inc"
