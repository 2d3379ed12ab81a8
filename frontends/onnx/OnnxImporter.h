//===- OnnxImporter.h - ONNX protobuf to the weft dialect -------*- C++ -*-===//
//
// Imports an ONNX model (opsets 13 to 21 of the default domain) into one
// `func.func @main` of weft ops on static-shape tensors:
//
//   - arguments are the graph inputs that are not initializers, each with
//     `weft.name = "<onnx name>"`; results are the graph outputs, likewise;
//   - float initializers become `weft.param "name"` ops whose data goes to the
//     returned ParamTable; integer and bool initializers become weft.constant
//     (they feed shape computations);
//   - every op is folded while it is created, so the Shape/Gather/Concat
//     chains exporters emit collapse into constants and static shapes.
//
// A structure-only import (loadExternalData = false) builds the same module
// without opening any initializer stored as ONNX external data: such a float
// initializer becomes the same weft.param, with a data-less ParamTable entry
// (ParamEntry::hasData()). An import that needs the values of one (an integer
// initializer, a shape to fold) fails naming it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_FRONTENDS_ONNX_ONNXIMPORTER_H
#define WEFT_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "frontends/onnx/ParamTable.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weft {

struct OnnxImportOptions {
  /// Static shapes for graph inputs, by ONNX input name; they replace the
  /// model's symbolic or unknown dims (and must keep the input's rank).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Whether initializers stored as ONNX external data are read. When false
  /// (structure-only import, e.g. for planning a model too large to load)
  /// their files are never opened and need not exist: float ones become
  /// weft.param ops as usual but their ParamTable entries hold no data, and
  /// an import that needs the values of one fails with an error naming it.
  /// Inline initializers are read either way.
  bool loadExternalData = true;
  /// Whether the import is a training step's. Then training-mode
  /// BatchNormalization updates its running mean and variance when they are
  /// initializers (weft.param_update, PyTorch's rule: the unbiased batch
  /// variance), and training-mode Dropout draws new masks every step (from
  /// the step counter, "weft.step"). An inference import computes ONNX's
  /// outputs only, and its dropouts draw step 0's masks.
  bool trainingStep = false;
};

struct OnnxImportResult {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  ParamTable params;
};

/// Imports the ONNX model at `path`. The dialects it needs are loaded into
/// `ctx`. On failure prints nothing itself; returns the full error text in
/// `error` (possibly several lines, never ending in a newline). Every failure
/// is a problem of the input (bad file, unsupported op or attribute, shapes
/// that are not static).
std::optional<OnnxImportResult> importOnnxFile(mlir::MLIRContext &ctx,
                                               llvm::StringRef path,
                                               const OnnxImportOptions &opts,
                                               std::string &error);

} // namespace weft

#endif // WEFT_FRONTENDS_ONNX_ONNXIMPORTER_H
