//===- ElementTypes.cpp - weft element types and runtime dtypes -----------===//
#include "dialects/weft/ElementTypes.h"

#include "mlir/IR/MLIRContext.h"

using namespace weft;

std::optional<WeftDType> weft::getDTypeOf(mlir::Type type) {
  if (type.isF32())
    return WEFT_F32;
  if (type.isF16())
    return WEFT_F16;
  if (type.isBF16())
    return WEFT_BF16;
  if (type.isF64())
    return WEFT_F64;
  if (type.isSignlessInteger(64))
    return WEFT_I64;
  if (type.isSignlessInteger(32))
    return WEFT_I32;
  if (type.isSignlessInteger(8))
    return WEFT_I8;
  if (type.isUnsignedInteger(8))
    return WEFT_U8;
  if (type.isSignlessInteger(1))
    return WEFT_BOOL;
  return std::nullopt;
}

mlir::Type weft::getElementTypeOf(mlir::MLIRContext &ctx, WeftDType dtype) {
  switch (dtype) {
  case WEFT_F32:
    return mlir::Float32Type::get(&ctx);
  case WEFT_F16:
    return mlir::Float16Type::get(&ctx);
  case WEFT_BF16:
    return mlir::BFloat16Type::get(&ctx);
  case WEFT_F64:
    return mlir::Float64Type::get(&ctx);
  case WEFT_I64:
    return mlir::IntegerType::get(&ctx, 64);
  case WEFT_I32:
    return mlir::IntegerType::get(&ctx, 32);
  case WEFT_I8:
    return mlir::IntegerType::get(&ctx, 8);
  case WEFT_U8:
    return mlir::IntegerType::get(&ctx, 8, mlir::IntegerType::Unsigned);
  case WEFT_BOOL:
    return mlir::IntegerType::get(&ctx, 1);
  }
  return {};
}

llvm::StringRef weft::getDTypeName(mlir::Type elementType) {
  std::optional<WeftDType> dtype = getDTypeOf(elementType);
  return dtype ? weftDTypeName(*dtype) : "unknown";
}

int64_t weft::getTensorBytes(mlir::RankedTensorType type) {
  std::optional<WeftDType> dtype = getDTypeOf(type.getElementType());
  return type.getNumElements() * (dtype ? weftDTypeSize(*dtype) : 0);
}
