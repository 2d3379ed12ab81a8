//===- OnnxModelLoader.cpp - Reading ONNX files and tensors ---------------===//
#include "frontends/onnx/OnnxModelLoader.h"

#include "frontends/onnx/ParamTable.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <climits>
#include <cstring>

using namespace weft;
using namespace weft::onnx_import;

bool onnx_import::loadOnnxModel(llvm::StringRef path, onnx::ModelProto &model,
                                std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read the file: " + buffer.getError().message();
    return false;
  }
  size_t size = (*buffer)->getBufferSize();
  if (size > static_cast<size_t>(INT_MAX)) {
    error = "the file is larger than 2 GiB; store the weights as ONNX "
            "external data";
    return false;
  }
  if (size == 0) {
    error = "not an ONNX model (the file is empty)";
    return false;
  }
  if (!model.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>(size))) {
    error = "not an ONNX model (the protobuf does not parse: not an ONNX "
            "file, or a truncated or corrupt one)";
    return false;
  }
  if (!model.has_graph()) {
    error = "not an ONNX model: it holds no graph";
    return false;
  }
  return true;
}

bool onnx_import::isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

int64_t onnx_import::getDefaultOpsetVersion(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    if (isDefaultDomain(opset.domain()))
      return opset.version();
  return -1;
}

std::string onnx_import::getOnnxDataTypeName(int32_t dataType) {
  static const char *const names[] = {
      "UNDEFINED",      "FLOAT",        "UINT8",          "INT8",
      "UINT16",         "INT16",        "INT32",          "INT64",
      "STRING",         "BOOL",         "FLOAT16",        "DOUBLE",
      "UINT32",         "UINT64",       "COMPLEX64",      "COMPLEX128",
      "BFLOAT16",       "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
      "FLOAT8E5M2FNUZ", "UINT4",        "INT4",           "FLOAT4E2M1"};
  if (dataType >= 0 &&
      dataType < static_cast<int32_t>(sizeof(names) / sizeof(names[0])))
    return names[dataType];
  return "<code " + std::to_string(dataType) + ">";
}

bool onnx_import::convertOnnxDataType(int32_t dataType, WeftDType &dtype) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    dtype = WEFT_F32;
    return true;
  case onnx::TensorProto::FLOAT16:
    dtype = WEFT_F16;
    return true;
  case onnx::TensorProto::BFLOAT16:
    dtype = WEFT_BF16;
    return true;
  case onnx::TensorProto::DOUBLE:
    dtype = WEFT_F64;
    return true;
  case onnx::TensorProto::INT64:
    dtype = WEFT_I64;
    return true;
  case onnx::TensorProto::INT32:
    dtype = WEFT_I32;
    return true;
  case onnx::TensorProto::INT8:
    dtype = WEFT_I8;
    return true;
  case onnx::TensorProto::UINT8:
    dtype = WEFT_U8;
    return true;
  case onnx::TensorProto::BOOL:
    dtype = WEFT_BOOL;
    return true;
  default:
    return false;
  }
}

int64_t TensorData::numElements() const {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  return count;
}

mlir::RankedTensorType TensorData::getType(mlir::MLIRContext &ctx) const {
  return mlir::RankedTensorType::get(shape, getElementTypeOf(ctx, dtype));
}

mlir::DenseElementsAttr TensorData::toAttr(mlir::MLIRContext &ctx) const {
  mlir::RankedTensorType type = getType(ctx);
  if (dtype == WEFT_BOOL) {
    // MLIR packs i1 elements into bits; ONNX stores one byte each.
    llvm::SmallVector<bool> values(bytes.begin(), bytes.end());
    return mlir::DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
  }
  return mlir::DenseElementsAttr::getFromRawBuffer(
      type, llvm::ArrayRef<char>(reinterpret_cast<const char *>(bytes.data()),
                                 bytes.size()));
}

static std::string formatDims(llvm::ArrayRef<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

bool onnx_import::resolveExternalDataLocation(llvm::StringRef location,
                                              llvm::StringRef modelDir,
                                              const std::string &what,
                                              std::string &realPath,
                                              std::string &error) {
  if (location.empty()) {
    error = what + ": external data without a 'location'";
    return false;
  }
  namespace path = llvm::sys::path;
  if (path::is_absolute(location)) {
    error = what + ": external data location '" + location.str() +
            "' is an absolute path; weft only reads files in the model's "
            "directory";
    return false;
  }
  for (auto it = path::begin(location), e = path::end(location); it != e; ++it)
    if (*it == "..") {
      error = what + ": external data location '" + location.str() +
              "' escapes the model's directory";
      return false;
    }
  llvm::SmallString<256> joined(modelDir);
  path::append(joined, location);
  llvm::SmallString<256> realDir, realFile;
  if (llvm::sys::fs::real_path(modelDir, realDir) ||
      llvm::sys::fs::real_path(joined, realFile) ||
      !llvm::sys::fs::is_regular_file(realFile)) {
    error = what + ": external data file '" + location.str() +
            "' not found in '" + modelDir.str() + "'";
    return false;
  }
  llvm::StringRef file = realFile;
  if (!file.starts_with(realDir) || file.size() <= realDir.size() ||
      !path::is_separator(file[realDir.size()])) {
    error = what + ": external data location '" + location.str() +
            "' escapes the model's directory (it resolves to '" + file.str() +
            "')";
    return false;
  }
  realPath = file.str();
  return true;
}

/// The `location`, `offset` and `length` keys of an external-data tensor
/// (offset 0 and length -1 when absent); refuses offsets and lengths that are
/// not non-negative integers.
static bool parseExternalDataKeys(const onnx::TensorProto &tensor,
                                  const std::string &what,
                                  std::string &location, int64_t &offset,
                                  int64_t &length, std::string &error) {
  offset = 0;
  length = -1;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    const std::string &key = entry.key();
    if (key == "location") {
      location = entry.value();
    } else if (key == "offset" || key == "length") {
      int64_t value;
      if (llvm::StringRef(entry.value()).getAsInteger(10, value) || value < 0) {
        error = what + ": external data " + key + " '" + entry.value() +
                "' is not a non-negative integer";
        return false;
      }
      (key == "offset" ? offset : length) = value;
    }
  }
  return true;
}

/// Reads the bytes of an external-data tensor. The file must lie inside
/// `modelDir`, after resolving symlinks.
static bool readExternalData(const onnx::TensorProto &tensor,
                             llvm::StringRef modelDir, const std::string &what,
                             std::vector<uint8_t> &bytes, std::string &error) {
  std::string location;
  int64_t offset, length;
  if (!parseExternalDataKeys(tensor, what, location, offset, length, error))
    return false;
  std::string realFile;
  if (!resolveExternalDataLocation(location, modelDir, what, realFile, error))
    return false;
  uint64_t fileSize = 0;
  if (llvm::sys::fs::file_size(realFile, fileSize)) {
    error = what + ": cannot read external data file '" + location + "'";
    return false;
  }
  if (length < 0)
    length = offset <= static_cast<int64_t>(fileSize)
                 ? static_cast<int64_t>(fileSize) - offset
                 : 0;
  if (static_cast<uint64_t>(offset) > fileSize ||
      static_cast<uint64_t>(length) > fileSize - offset) {
    error = what + ": external data file '" + location + "' holds " +
            std::to_string(fileSize) + " bytes, too short for offset " +
            std::to_string(offset) + " + length " + std::to_string(length);
    return false;
  }
  bytes.resize(length);
  if (length == 0)
    return true;
  auto buffer = llvm::MemoryBuffer::getFileSlice(realFile, length, offset);
  if (!buffer) {
    error = what + ": cannot read external data file '" + location +
            "': " + buffer.getError().message();
    return false;
  }
  std::memcpy(bytes.data(), (*buffer)->getBufferStart(), length);
  return true;
}

/// Copies a typed repeated field into `bytes`, converting each value to
/// `ElemT`.
template <typename ElemT, typename Field>
static void copyTypedField(const Field &field, std::vector<uint8_t> &bytes) {
  bytes.resize(field.size() * sizeof(ElemT));
  for (int i = 0; i < field.size(); ++i) {
    ElemT value = static_cast<ElemT>(field.Get(i));
    std::memcpy(bytes.data() + i * sizeof(ElemT), &value, sizeof(ElemT));
  }
}

/// "holds N bytes of data but its shape [..] of TYPE needs M".
static std::string describeSizeMismatch(const onnx::TensorProto &tensor,
                                        const std::string &what,
                                        const TensorData &out, int64_t bytes) {
  return what + " holds " + std::to_string(bytes) +
         " bytes of data but its shape " + formatDims(out.shape) + " of " +
         getOnnxDataTypeName(tensor.data_type()) + " needs " +
         std::to_string(out.numElements() * weftDTypeSize(out.dtype));
}

bool onnx_import::isExternalTensor(const onnx::TensorProto &tensor) {
  return tensor.data_location() == onnx::TensorProto::EXTERNAL;
}

bool onnx_import::decodeExternalTensorType(const onnx::TensorProto &tensor,
                                           const std::string &what,
                                           TensorData &out,
                                           std::string &error) {
  if (!decodeTensorType(tensor, what, out, error))
    return false;
  out.bytes.clear();
  std::string location;
  int64_t offset, length;
  if (!parseExternalDataKeys(tensor, what, location, offset, length, error))
    return false;
  if (location.empty()) {
    error = what + ": external data without a 'location'";
    return false;
  }
  if (length >= 0 && length != out.numElements() * weftDTypeSize(out.dtype)) {
    error = describeSizeMismatch(tensor, what, out, length);
    return false;
  }
  return true;
}

bool onnx_import::decodeTensorType(const onnx::TensorProto &tensor,
                                   const std::string &what, TensorData &out,
                                   std::string &error) {
  if (!convertOnnxDataType(tensor.data_type(), out.dtype)) {
    error = what + " has element type " +
            getOnnxDataTypeName(tensor.data_type()) +
            ", which weft does not support";
    return false;
  }
  out.shape.assign(tensor.dims().begin(), tensor.dims().end());
  int64_t count = 1;
  const int64_t elemSize = weftDTypeSize(out.dtype);
  for (int64_t d : out.shape) {
    if (d < 0 || (d > 0 && count > (INT64_MAX / elemSize) / d)) {
      error = what + " has an invalid shape " + formatDims(out.shape);
      return false;
    }
    count *= d;
  }
  if (tensor.has_segment()) {
    error = what + " is a segmented tensor, which weft does not support";
    return false;
  }
  return true;
}

bool onnx_import::decodeTensor(const onnx::TensorProto &tensor,
                               llvm::StringRef modelDir,
                               const std::string &what, TensorData &out,
                               std::string &error) {
  if (!decodeTensorType(tensor, what, out, error))
    return false;
  const int64_t count = out.numElements();
  const int64_t elemSize = weftDTypeSize(out.dtype);
  std::vector<uint8_t> &bytes = out.bytes;
  int64_t typedCount = -1;
  if (isExternalTensor(tensor)) {
    if (!readExternalData(tensor, modelDir, what, bytes, error))
      return false;
  } else if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    bytes.assign(raw.begin(), raw.end());
  } else {
    switch (out.dtype) {
    case WEFT_F32:
      typedCount = tensor.float_data_size();
      copyTypedField<float>(tensor.float_data(), bytes);
      break;
    case WEFT_F64:
      typedCount = tensor.double_data_size();
      copyTypedField<double>(tensor.double_data(), bytes);
      break;
    case WEFT_I64:
      typedCount = tensor.int64_data_size();
      copyTypedField<int64_t>(tensor.int64_data(), bytes);
      break;
    case WEFT_I32:
      typedCount = tensor.int32_data_size();
      copyTypedField<int32_t>(tensor.int32_data(), bytes);
      break;
    case WEFT_F16:
    case WEFT_BF16:
      // int32_data holds the 16-bit patterns.
      typedCount = tensor.int32_data_size();
      copyTypedField<uint16_t>(tensor.int32_data(), bytes);
      break;
    case WEFT_I8:
    case WEFT_U8:
    case WEFT_BOOL:
      typedCount = tensor.int32_data_size();
      copyTypedField<uint8_t>(tensor.int32_data(), bytes);
      break;
    }
    if (typedCount != count) {
      error = what + " holds " + std::to_string(typedCount) +
              " values but its shape " + formatDims(out.shape) + " has " +
              std::to_string(count) + " elements";
      return false;
    }
  }
  if (static_cast<int64_t>(bytes.size()) != count * elemSize) {
    error = describeSizeMismatch(tensor, what, out,
                                 static_cast<int64_t>(bytes.size()));
    return false;
  }
  if (out.dtype == WEFT_BOOL)
    for (uint8_t &b : bytes)
      b = b != 0;
  return true;
}
