//===- WeftRtOps.h - Runtime-level ops of weft --------------------*- C++
//-*-===//
#ifndef WEFT_DIALECTS_WEFTRT_WEFTRTOPS_H
#define WEFT_DIALECTS_WEFTRT_WEFTRTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/weftrt/WeftRtDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/weftrt/WeftRtTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/weftrt/WeftRtOps.h.inc"

namespace weft::rt {
/// Decodes the tensor part of a launch descriptor. Returns the index of the
/// attribute count, or -1 when the descriptor is malformed.
int64_t describedTensorsEnd(llvm::ArrayRef<int64_t> desc);
} // namespace weft::rt

#endif // WEFT_DIALECTS_WEFTRT_WEFTRTOPS_H
