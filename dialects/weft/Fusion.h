//===- Fusion.h - What weft.fused may hold ----------------------*- C++ -*-===//
//
// Shared by weft.fused's verifier and kernel encoding (FusionOps.cpp) and
// the pass that builds it (passes/FuseElementwise.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECTS_WEFT_FUSION_H
#define WEFT_DIALECTS_WEFT_FUSION_H

#include "mlir/IR/Operation.h"

#include <optional>

namespace weft {

/// weft_k_fused's instruction code of an elementwise op (WeftFusedOp), or
/// nullopt when the op cannot be fused. Element types are not checked.
std::optional<int64_t> fusedOpcode(mlir::Operation *op);
/// A splat f32, bf16 or f16 weft.constant, which a fused body holds as an
/// immediate.
bool isFusibleConstant(mlir::Operation *op);
/// A static-shape f32, bf16 or f16 tensor type.
bool isFusibleTensor(mlir::Type type);

} // namespace weft

#endif // WEFT_DIALECTS_WEFT_FUSION_H
