//===- WeftDialect.h - The weft graph dialect --------------------*- C++
//-*-===//
#ifndef WEFT_DIALECTS_WEFT_WEFTDIALECT_H
#define WEFT_DIALECTS_WEFT_WEFTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/weft/WeftDialect.h.inc"

namespace weft {
/// Default of CostOpInterface::getBytesAccessed: the bytes of all operands
/// and results.
int64_t defaultBytesAccessed(mlir::Operation *op);
} // namespace weft

#include "dialects/weft/WeftInterfaces.h.inc"

#endif // WEFT_DIALECTS_WEFT_WEFTDIALECT_H
