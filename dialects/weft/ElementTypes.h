//===- ElementTypes.h - weft element types and runtime dtypes ----*- C++
//-*-===//
//
// The element types weft tensors may have, and their codes in the runtime's
// KernelABI.h: the one mapping the frontend, the passes and the bundle writer
// share.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECTS_WEFT_ELEMENTTYPES_H
#define WEFT_DIALECTS_WEFT_ELEMENTTYPES_H

#include "weft/runtime/KernelABI.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace weft {

/// The dtype code of an MLIR element type; nullopt for types weft does not
/// store (e.g. i16, complex).
std::optional<WeftDType> getDTypeOf(mlir::Type elementType);
/// The MLIR element type of a dtype code (ui8 for WEFT_U8, i1 for WEFT_BOOL).
mlir::Type getElementTypeOf(mlir::MLIRContext &ctx, WeftDType dtype);
/// The dtype's name in signatures and manifests ("f32", "i64", "bool", ...),
/// or "unknown".
llvm::StringRef getDTypeName(mlir::Type elementType);
/// Bytes of a static tensor, booleans taking one byte each.
int64_t getTensorBytes(mlir::RankedTensorType type);

} // namespace weft

#endif // WEFT_DIALECTS_WEFT_ELEMENTTYPES_H
