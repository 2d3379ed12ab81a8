//===- Registration.h - Everything weft's tools register ----------*- C++
//-*-===//
//
// The one place listing the dialects and passes that weft-opt and weftc know,
// so both tools always agree.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_REGISTRATION_H
#define WEFT_TOOLS_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace weft {
void registerAllDialects(mlir::DialectRegistry &registry);
void registerAllPasses();
} // namespace weft

#endif // WEFT_TOOLS_REGISTRATION_H
