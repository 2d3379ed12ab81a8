//===- OnnxModelLoader.h - Reading ONNX files and tensors -------*- C++ -*-===//
//
// Internal to the ONNX frontend: parsing the protobuf, the checks that need no
// graph walk, and decoding tensor data (raw_data, the typed fields, or
// external data files next to the model).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_FRONTENDS_ONNX_ONNXMODELLOADER_H
#define WEFT_FRONTENDS_ONNX_ONNXMODELLOADER_H

#include "weft/runtime/KernelABI.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::onnx_import {

/// Opsets of the default ONNX domain that the importer handles.
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 21;

/// Reads and parses the model at `path` and checks that it has a graph.
bool loadOnnxModel(llvm::StringRef path, onnx::ModelProto &model,
                   std::string &error);

/// "" and "ai.onnx" both name the default domain.
bool isDefaultDomain(llvm::StringRef domain);

/// The model's opset version of the default domain; -1 when it imports none.
int64_t getDefaultOpsetVersion(const onnx::ModelProto &model);

/// "FLOAT", "STRING", "UINT16", ... for messages; "<code N>" when unknown.
std::string getOnnxDataTypeName(int32_t dataType);

/// The weft dtype of an ONNX TensorProto data type; false for types weft does
/// not handle (strings, complex, 16-bit integers, unsigned above 8 bits, ...).
bool convertOnnxDataType(int32_t dataType, WeftDType &dtype);

/// A decoded tensor: dense, row-major, little-endian, bools one byte each.
struct TensorData {
  WeftDType dtype = WEFT_F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t numElements() const;
  mlir::RankedTensorType getType(mlir::MLIRContext &ctx) const;
  /// The data as an elements attribute of getType().
  mlir::DenseElementsAttr toAttr(mlir::MLIRContext &ctx) const;
};

/// Resolves the external data `location` of a tensor against `modelDir`:
/// refuses an empty location, an absolute path, a '..' component, a file that
/// does not exist or is not a regular file, and one that resolves (through
/// symbolic links) outside `modelDir`. On success `realPath` is the resolved
/// file. `what` names the tensor in messages.
bool resolveExternalDataLocation(llvm::StringRef location,
                                 llvm::StringRef modelDir,
                                 const std::string &what, std::string &realPath,
                                 std::string &error);

/// Whether `tensor` keeps its data in an external file.
bool isExternalTensor(const onnx::TensorProto &tensor);

/// Decodes the dtype and shape of `tensor` and checks what needs no data (a
/// supported element type, a valid shape, no segment); `out.bytes` is left
/// untouched.
bool decodeTensorType(const onnx::TensorProto &tensor, const std::string &what,
                      TensorData &out, std::string &error);

/// For a structure-only import: the dtype and shape of an external-data
/// `tensor`, whose file is never opened (it need not exist). Checks the
/// external_data keys that need no file (a location; offset and length
/// non-negative integers; a length that fits the shape). `out.bytes` is
/// empty.
bool decodeExternalTensorType(const onnx::TensorProto &tensor,
                              const std::string &what, TensorData &out,
                              std::string &error);

/// Decodes `tensor`. External data is looked up relative to `modelDir`;
/// locations outside that directory are refused. `what` names the tensor in
/// messages (e.g. "initializer 'fc.weight'").
bool decodeTensor(const onnx::TensorProto &tensor, llvm::StringRef modelDir,
                  const std::string &what, TensorData &out, std::string &error);

} // namespace weft::onnx_import

#endif // WEFT_FRONTENDS_ONNX_ONNXMODELLOADER_H
