//===- ExportOnnx.cpp - Trained weights back into an ONNX model -----------===//
#include "tools/weft/ExportOnnx.h"

#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Tensor.h"

#include "onnx/onnx_pb.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

namespace weft {

namespace {

/// Offsets of tensors in the external data file are multiples of this.
constexpr size_t kDataAlignment = 64;

std::string onnxTypeName(int32_t dataType) {
  std::string name;
  if (onnx::TensorProto_DataType_IsValid(dataType))
    name = onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(dataType));
  return name.empty() ? "<code " + std::to_string(dataType) + ">" : name;
}

/// The weft dtype of an ONNX element type; false for the others.
bool weftDTypeOf(int32_t dataType, WeftDType &out) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    out = WEFT_F32;
    return true;
  case onnx::TensorProto::FLOAT16:
    out = WEFT_F16;
    return true;
  case onnx::TensorProto::BFLOAT16:
    out = WEFT_BF16;
    return true;
  case onnx::TensorProto::DOUBLE:
    out = WEFT_F64;
    return true;
  case onnx::TensorProto::INT64:
    out = WEFT_I64;
    return true;
  case onnx::TensorProto::INT32:
    out = WEFT_I32;
    return true;
  case onnx::TensorProto::INT8:
    out = WEFT_I8;
    return true;
  case onnx::TensorProto::UINT8:
    out = WEFT_U8;
    return true;
  case onnx::TensorProto::BOOL:
    out = WEFT_BOOL;
    return true;
  default:
    return false;
  }
}

std::string formatOnnxType(const onnx::TensorProto &tensor) {
  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  return onnxTypeName(tensor.data_type()) + formatShape(dims);
}

/// Calls `fn(tensor, what)` for every TensorProto of `graph`, its nodes'
/// attributes and its subgraphs.
template <typename Fn> void forEachTensor(onnx::GraphProto *graph, Fn &fn);

template <typename Fn>
void forEachTensor(onnx::SparseTensorProto *sparse, Fn &fn) {
  std::string name = sparse->values().name();
  fn(sparse->mutable_values(), "sparse tensor '" + name + "'");
  fn(sparse->mutable_indices(), "indices of sparse tensor '" + name + "'");
}

template <typename Fn> void forEachTensor(onnx::NodeProto *node, Fn &fn) {
  for (onnx::AttributeProto &attr : *node->mutable_attribute()) {
    std::string what = "attribute '" + attr.name() + "' of node '" +
                       node->name() + "' (" + node->op_type() + ")";
    if (attr.has_t())
      fn(attr.mutable_t(), what);
    for (onnx::TensorProto &t : *attr.mutable_tensors())
      fn(&t, what);
    if (attr.has_sparse_tensor())
      forEachTensor(attr.mutable_sparse_tensor(), fn);
    for (onnx::SparseTensorProto &t : *attr.mutable_sparse_tensors())
      forEachTensor(&t, fn);
    if (attr.has_g())
      forEachTensor(attr.mutable_g(), fn);
    for (onnx::GraphProto &g : *attr.mutable_graphs())
      forEachTensor(&g, fn);
  }
}

template <typename Fn> void forEachTensor(onnx::GraphProto *graph, Fn &fn) {
  for (onnx::TensorProto &t : *graph->mutable_initializer())
    fn(&t, "initializer '" + t.name() + "'");
  for (onnx::SparseTensorProto &t : *graph->mutable_sparse_initializer())
    forEachTensor(&t, fn);
  for (onnx::NodeProto &node : *graph->mutable_node())
    forEachTensor(&node, fn);
}

template <typename Fn> void forEachTensor(onnx::ModelProto &model, Fn fn) {
  forEachTensor(model.mutable_graph(), fn);
  for (onnx::TrainingInfoProto &info : *model.mutable_training_info()) {
    if (info.has_initialization())
      forEachTensor(info.mutable_initialization(), fn);
    if (info.has_algorithm())
      forEachTensor(info.mutable_algorithm(), fn);
  }
  for (onnx::FunctionProto &function : *model.mutable_functions())
    for (onnx::NodeProto &node : *function.mutable_node())
      forEachTensor(&node, fn);
}

std::string realPath(const std::string &path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

/// Reads the external data of `tensor`: its location must be a relative
/// path inside `dir` (after resolving symbolic links), as the importer
/// requires.
Status readExternalData(const onnx::TensorProto &tensor, const std::string &dir,
                        const std::string &where, std::string &bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      int64_t value = -1;
      if (!parseInt64(entry.value(), value) || value < 0)
        return Status::badInput(where + ": external data " + entry.key() +
                                " '" + entry.value() +
                                "' is not a non-negative integer");
      (entry.key() == "offset" ? offset : length) = value;
    }
  }
  if (location.empty())
    return Status::badInput(where + ": external data without a 'location'");
  if (location[0] == '/')
    return Status::badInput(where + ": external data location '" + location +
                            "' is an absolute path");
  for (size_t begin = 0; begin <= location.size();) {
    size_t end = location.find('/', begin);
    if (end == std::string::npos)
      end = location.size();
    if (location.compare(begin, end - begin, "..") == 0)
      return Status::badInput(where + ": external data location '" + location +
                              "' escapes the model's directory");
    begin = end + 1;
  }
  std::string realDir = realPath(dir);
  std::string file = realPath(joinPath(dir, location));
  struct stat st;
  if (realDir.empty() || file.empty() || ::stat(file.c_str(), &st) != 0 ||
      !S_ISREG(st.st_mode))
    return Status::badInput(where + ": external data file '" + location +
                            "' not found in '" + dir + "'");
  if (file.compare(0, realDir.size(), realDir) != 0 ||
      file.size() <= realDir.size() || file[realDir.size()] != '/')
    return Status::badInput(where + ": external data location '" + location +
                            "' escapes the model's directory (it resolves "
                            "to '" +
                            file + "')");
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (length < 0)
    length = static_cast<uint64_t>(offset) <= size
                 ? static_cast<int64_t>(size) - offset
                 : 0;
  if (static_cast<uint64_t>(offset) > size ||
      static_cast<uint64_t>(length) > size - static_cast<uint64_t>(offset))
    return Status::badInput(
        where + ": external data file '" + location + "' holds " +
        std::to_string(size) + " bytes, too short for offset " +
        std::to_string(offset) + " + length " + std::to_string(length));
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::badInput(where + ": cannot open external data file '" +
                            location + "': " + std::strerror(errno));
  bytes.resize(static_cast<size_t>(length));
  std::string error;
  bool ok = length == 0 || readFully(fd, &bytes[0], bytes.size(),
                                     static_cast<uint64_t>(offset), error);
  ::close(fd);
  if (!ok)
    return Status::badInput(where + ": cannot read external data file '" +
                            location + "': " + error);
  return Status::success();
}

void clearData(onnx::TensorProto &tensor) {
  tensor.clear_float_data();
  tensor.clear_int32_data();
  tensor.clear_string_data();
  tensor.clear_int64_data();
  tensor.clear_double_data();
  tensor.clear_uint64_data();
  tensor.clear_raw_data();
  tensor.clear_external_data();
  tensor.clear_data_location();
}

void addEntry(onnx::TensorProto &tensor, const std::string &key,
              const std::string &value) {
  onnx::StringStringEntryProto *entry = tensor.add_external_data();
  entry->set_key(key);
  entry->set_value(value);
}

} // namespace

Status exportOnnxModel(const std::string &sourcePath,
                       const std::vector<ExportParam> &params,
                       const std::string &outPath, ExportSummary &summary) {
  summary = ExportSummary();
  std::string text, error;
  if (!readFile(sourcePath, text, error))
    return Status::badInput(error);
  onnx::ModelProto model;
  if (text.empty() || text.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(text.data(), static_cast<int>(text.size())) ||
      !model.has_graph())
    return Status::badInput(sourcePath +
                            " is not an ONNX model (empty, truncated or "
                            "corrupt; recompile the bundle)");
  text.clear();
  text.shrink_to_fit();

  std::unordered_map<std::string, const ExportParam *> byName;
  for (const ExportParam &param : params)
    byName.emplace(param.name, &param);
  std::unordered_map<const onnx::TensorProto *, const ExportParam *> external;
  std::unordered_set<std::string> found;
  for (onnx::TensorProto &tensor :
       *model.mutable_graph()->mutable_initializer()) {
    auto it = byName.find(tensor.name());
    if (it == byName.end()) {
      ++summary.kept;
      continue;
    }
    const ExportParam &param = *it->second;
    std::string where = sourcePath + ": initializer '" + tensor.name() + "'";
    WeftDType dtype;
    std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    if (!weftDTypeOf(tensor.data_type(), dtype) || dtype != param.dtype ||
        dims != param.shape)
      return Status::badInput(
          where + " is " + formatOnnxType(tensor) +
          ", but the checkpoint's parameter of that name is " +
          formatTensorType(param.dtype, param.shape) +
          " (the bundle was compiled from another model?)");
    int64_t count = 0, bytes = -1;
    if (shapeNumElements(param.shape, count, weftDTypeSize(param.dtype)))
      bytes = count * weftDTypeSize(param.dtype);
    if (bytes < 0 || static_cast<size_t>(bytes) != param.byteSize)
      return Status::failure(where + ": the checkpoint's tensor holds " +
                             std::to_string(param.byteSize) +
                             " bytes, not the " + std::to_string(bytes) +
                             " its type needs");
    bool wasExternal = tensor.data_location() == onnx::TensorProto::EXTERNAL;
    clearData(tensor);
    if (wasExternal) {
      tensor.set_data_location(onnx::TensorProto::EXTERNAL);
      external.emplace(&tensor, &param);
    } else {
      tensor.set_raw_data(param.data, param.byteSize);
    }
    found.insert(param.name);
    ++summary.replaced;
  }
  for (const ExportParam &param : params)
    if (!found.count(param.name))
      return Status::badInput(
          sourcePath + " has no initializer '" + param.name +
          "', a parameter of the checkpoint (the bundle was compiled from "
          "another model?)");

  // External data: every tensor the output stores outside goes to one file.
  std::string dataName = fileName(outPath) + ".data";
  std::string sourceDir = parentPath(sourcePath);
  std::deque<std::string> owned; // data read from the source's files
  std::vector<FileChunk> chunks;
  static const char kZeros[kDataAlignment] = {};
  uint64_t offset = 0;
  Status status = Status::success();
  forEachTensor(model, [&](onnx::TensorProto *tensor, const std::string &what) {
    if (!status.ok() || tensor->data_location() != onnx::TensorProto::EXTERNAL)
      return;
    const void *data = nullptr;
    size_t size = 0;
    auto it = external.find(tensor);
    if (it != external.end()) {
      data = it->second->data;
      size = it->second->byteSize;
    } else {
      owned.emplace_back();
      status = readExternalData(*tensor, sourceDir, sourcePath + ": " + what,
                                owned.back());
      if (!status.ok())
        return;
      data = owned.back().data();
      size = owned.back().size();
    }
    size_t pad = (kDataAlignment - offset % kDataAlignment) % kDataAlignment;
    if (pad)
      chunks.push_back({kZeros, pad});
    offset += pad;
    chunks.push_back({data, size});
    clearData(*tensor);
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    addEntry(*tensor, "location", dataName);
    addEntry(*tensor, "offset", std::to_string(offset));
    addEntry(*tensor, "length", std::to_string(size));
    offset += size;
  });
  if (!status.ok())
    return status;

  if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX))
    return Status::badInput("the exported model would be larger than 2 GiB, "
                            "the limit of an ONNX file; store its weights as "
                            "external data in the source model");
  std::string serialized;
  if (!model.SerializeToString(&serialized))
    return Status::failure("cannot serialize the exported model");
  if (!chunks.empty() || !external.empty()) {
    summary.dataFile = joinPath(parentPath(outPath), dataName);
    if (!writeFileAtomic(summary.dataFile, chunks, error))
      return Status::failure(error);
  }
  if (!writeFileAtomic(outPath, {{serialized.data(), serialized.size()}},
                       error))
    return Status::failure(error);
  return Status::success();
}

} // namespace weft
