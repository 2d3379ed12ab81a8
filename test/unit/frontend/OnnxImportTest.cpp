//===- OnnxImportTest.cpp - ParamTable and the importer's weight data -----===//
//
// The lit tests check the IR the importer prints; these check what the IR
// does not show: the bytes that land in the ParamTable for every way ONNX
// stores tensor data, and the table's own behaviour.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"

#include "dialects/weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "onnx/onnx_pb.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

using namespace weft;

namespace {

/// A fresh directory, removed with its contents at destruction.
class TempDir {
public:
  TempDir() {
    llvm::SmallString<128> dir;
    if (!llvm::sys::fs::createUniqueDirectory("weft-frontend-test", dir))
      path = dir.str().str();
  }
  ~TempDir() {
    if (!path.empty())
      (void)llvm::sys::fs::remove_directories(path);
  }
  std::string file(const std::string &name) const { return path + "/" + name; }

  std::string path;
};

void writeFile(const std::string &path, const void *data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char *>(data), size);
}

/// A model computing y = x + <each initializer> so that every initializer
/// stays in use; `x` has shape `shape`.
onnx::ModelProto makeModel(const std::vector<onnx::TensorProto> &inits,
                           const std::vector<int64_t> &shape) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("g");
  auto *input = graph->add_input();
  input->set_name("x");
  auto *tensorType = input->mutable_type()->mutable_tensor_type();
  tensorType->set_elem_type(onnx::TensorProto::FLOAT);
  tensorType->mutable_shape(); // rank 0 when `shape` is empty
  for (int64_t d : shape)
    tensorType->mutable_shape()->add_dim()->set_dim_value(d);
  std::string last = "x";
  for (size_t i = 0; i < inits.size(); ++i) {
    *graph->add_initializer() = inits[i];
    std::string operand = inits[i].name();
    if (inits[i].data_type() != onnx::TensorProto::FLOAT) {
      onnx::NodeProto *cast = graph->add_node();
      cast->set_op_type("Cast");
      cast->add_input(operand);
      operand += "_f32";
      cast->add_output(operand);
      auto *to = cast->add_attribute();
      to->set_name("to");
      to->set_type(onnx::AttributeProto::INT);
      to->set_i(onnx::TensorProto::FLOAT);
    }
    onnx::NodeProto *add = graph->add_node();
    add->set_op_type("Add");
    add->add_input(last);
    add->add_input(operand);
    last = "sum" + std::to_string(i);
    add->add_output(last);
  }
  graph->add_output()->set_name(last);
  return model;
}

std::optional<OnnxImportResult> importModel(mlir::MLIRContext &ctx,
                                            const TempDir &dir,
                                            const onnx::ModelProto &model,
                                            std::string &error) {
  std::string path = dir.file("model.onnx");
  std::string bytes = model.SerializeAsString();
  writeFile(path, bytes.data(), bytes.size());
  return importOnnxFile(ctx, path, OnnxImportOptions(), error);
}

template <typename T> std::vector<uint8_t> bytesOf(std::vector<T> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TEST(ParamTable, AddLookupAndOrder) {
  ParamTable table;
  ParamEntry a{"a", WEFT_F32, {2}, bytesOf<float>({1, 2})};
  ParamEntry b{"b", WEFT_F16, {3}, std::vector<uint8_t>(6)};
  EXPECT_TRUE(table.add(a));
  EXPECT_TRUE(table.add(b));
  EXPECT_FALSE(table.add(a)) << "a name is taken once";
  ParamEntry bad{"c", WEFT_F32, {3}, std::vector<uint8_t>(8)};
  EXPECT_FALSE(table.add(bad)) << "data size must match shape and dtype";
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table.totalBytes(), 14);
  ASSERT_NE(table.lookup("b"), nullptr);
  EXPECT_EQ(table.lookup("b")->numElements(), 3);
  EXPECT_EQ(table.lookup("c"), nullptr);
  EXPECT_EQ(table.begin()->name, "a");

  table.retainIf([](const ParamEntry &e) { return e.name == "b"; });
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table.lookup("a"), nullptr);
  EXPECT_NE(table.lookup("b"), nullptr);
}

TEST(ParamTable, DTypesRoundTrip) {
  mlir::MLIRContext ctx;
  for (WeftDType dtype : {WEFT_F32, WEFT_F16, WEFT_BF16, WEFT_F64, WEFT_I64,
                          WEFT_I32, WEFT_I8, WEFT_U8, WEFT_BOOL}) {
    mlir::Type type = getElementTypeOf(ctx, dtype);
    ASSERT_TRUE(type);
    EXPECT_EQ(getDTypeOf(type), dtype);
  }
  EXPECT_FALSE(getDTypeOf(mlir::IntegerType::get(&ctx, 16)).has_value());
  ParamEntry e{"w", WEFT_BF16, {2, 3}, std::vector<uint8_t>(12)};
  EXPECT_EQ(e.getTensorType(ctx),
            mlir::RankedTensorType::get({2, 3}, mlir::BFloat16Type::get(&ctx)));
}

TEST(OnnxImport, ParameterBytesFromEveryDataField) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  std::vector<onnx::TensorProto> inits(5);
  // float_data
  inits[0].set_name("typed");
  inits[0].set_data_type(onnx::TensorProto::FLOAT);
  inits[0].add_dims(2);
  inits[0].add_float_data(1.5f);
  inits[0].add_float_data(-2.0f);
  // raw_data
  inits[1].set_name("raw");
  inits[1].set_data_type(onnx::TensorProto::FLOAT);
  inits[1].add_dims(2);
  std::vector<float> raw = {3.0f, 4.25f};
  inits[1].set_raw_data(raw.data(), raw.size() * sizeof(float));
  // f16 bit patterns in int32_data: 1.0 and -2.0
  inits[2].set_name("half");
  inits[2].set_data_type(onnx::TensorProto::FLOAT16);
  inits[2].add_dims(2);
  inits[2].add_int32_data(0x3C00);
  inits[2].add_int32_data(0xC000);
  // double_data
  inits[3].set_name("double");
  inits[3].set_data_type(onnx::TensorProto::DOUBLE);
  inits[3].add_dims(2);
  inits[3].add_double_data(0.5);
  inits[3].add_double_data(8.0);
  // external data at an offset inside the model's directory
  std::vector<float> external = {0.0f, 7.0f, 9.0f};
  writeFile(dir.file("weights.bin"), external.data(), 12);
  inits[4].set_name("external");
  inits[4].set_data_type(onnx::TensorProto::FLOAT);
  inits[4].add_dims(2);
  inits[4].set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, value] :
       {std::pair<const char *, const char *>{"location", "weights.bin"},
        {"offset", "4"},
        {"length", "8"}}) {
    auto *entry = inits[4].add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }

  mlir::MLIRContext ctx;
  std::string error;
  std::optional<OnnxImportResult> result =
      importModel(ctx, dir, makeModel(inits, {2}), error);
  ASSERT_TRUE(result) << error;
  const ParamTable &params = result->params;
  ASSERT_EQ(params.size(), 5u);
  std::vector<std::string> names;
  for (const ParamEntry &e : params)
    names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"typed", "raw", "half", "double",
                                             "external"}));
  EXPECT_EQ(params.lookup("typed")->data, bytesOf<float>({1.5f, -2.0f}));
  EXPECT_EQ(params.lookup("raw")->data, bytesOf<float>({3.0f, 4.25f}));
  EXPECT_EQ(params.lookup("half")->dtype, WEFT_F16);
  EXPECT_EQ(params.lookup("half")->data, bytesOf<uint16_t>({0x3C00, 0xC000}));
  EXPECT_EQ(params.lookup("double")->dtype, WEFT_F64);
  EXPECT_EQ(params.lookup("double")->data, bytesOf<double>({0.5, 8.0}));
  EXPECT_EQ(params.lookup("external")->data, bytesOf<float>({7.0f, 9.0f}));

  // Every entry has its weft.param, of the entry's type.
  int paramOps = 0;
  result->module->walk([&](weft::ParamOp op) {
    ++paramOps;
    const ParamEntry *entry = params.lookup(op.getName());
    ASSERT_NE(entry, nullptr) << op.getName().str();
    EXPECT_EQ(op.getType(), entry->getTensorType(ctx));
  });
  EXPECT_EQ(paramOps, 5);
}

TEST(OnnxImport, UnusedParametersAreDropped) {
  TempDir dir;
  std::vector<onnx::TensorProto> inits(1);
  inits[0].set_name("used");
  inits[0].set_data_type(onnx::TensorProto::FLOAT);
  inits[0].add_float_data(1.0f);
  onnx::ModelProto model = makeModel(inits, {});
  onnx::TensorProto *unused = model.mutable_graph()->add_initializer();
  unused->set_name("unused");
  unused->set_data_type(onnx::TensorProto::FLOAT);
  unused->add_float_data(2.0f);

  mlir::MLIRContext ctx;
  std::string error;
  std::optional<OnnxImportResult> result = importModel(ctx, dir, model, error);
  ASSERT_TRUE(result) << error;
  EXPECT_EQ(result->params.size(), 1u);
  EXPECT_NE(result->params.lookup("used"), nullptr);
  EXPECT_EQ(result->params.lookup("unused"), nullptr);
}

TEST(ParamTable, EntriesWithoutData) {
  ParamTable table;
  ParamEntry a{"a", WEFT_F32, {2}, bytesOf<float>({1, 2})};
  EXPECT_TRUE(a.hasData());
  EXPECT_EQ(a.getData().size(), 8u);
  ParamEntry w = ParamEntry::withoutData("w", WEFT_F16, {3, 4});
  EXPECT_FALSE(w.hasData());
  EXPECT_TRUE(w.data.empty());
  EXPECT_EQ(w.byteSize(), 24);
  ParamEntry bad = ParamEntry::withoutData("bad", WEFT_F32, {1});
  bad.data.resize(4);
  EXPECT_FALSE(table.add(bad)) << "a data-less entry holds no bytes";
  EXPECT_TRUE(table.add(a));
  EXPECT_TRUE(table.hasAllData());
  std::string error;
  EXPECT_TRUE(table.checkHasData(error));
  EXPECT_TRUE(table.add(w));
  EXPECT_TRUE(table.add(ParamEntry::withoutData("v", WEFT_F32, {1})));
  EXPECT_EQ(table.totalBytes(), 8 + 24 + 4) << "counts data-less entries too";
  EXPECT_FALSE(table.hasAllData());
  EXPECT_FALSE(table.checkHasData(error));
  EXPECT_EQ(error, "parameter 'w' has no data: it is stored as ONNX external "
                   "data, which a structure-only import does not load (and 1 "
                   "more: 'v')");
  // Asking for the bytes of a data-less entry stops with a clear message
  // rather than handing out an empty buffer.
  EXPECT_DEATH((void)table.lookup("w")->getData(),
               "parameter 'w' has no data: it is stored as ONNX external data");
}

/// A float initializer `name` of shape `dims` whose data lies in the external
/// file `location` (which need not exist).
onnx::TensorProto externalTensor(const std::string &name, int32_t dataType,
                                 std::vector<int64_t> dims,
                                 const std::string &location,
                                 int64_t length = -1) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(dataType);
  for (int64_t d : dims)
    t.add_dims(d);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  std::vector<std::pair<std::string, std::string>> keys = {
      {"location", location}, {"offset", "0"}};
  if (length >= 0)
    keys.push_back({"length", std::to_string(length)});
  for (const auto &[key, value] : keys) {
    auto *entry = t.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  return t;
}

std::optional<OnnxImportResult> importModelWith(mlir::MLIRContext &ctx,
                                                const TempDir &dir,
                                                const onnx::ModelProto &model,
                                                bool loadExternalData,
                                                std::string &error) {
  std::string path = dir.file("model.onnx");
  std::string bytes = model.SerializeAsString();
  writeFile(path, bytes.data(), bytes.size());
  OnnxImportOptions opts;
  opts.loadExternalData = loadExternalData;
  return importOnnxFile(ctx, path, opts, error);
}

std::string printModule(OnnxImportResult &result) {
  std::string text;
  llvm::raw_string_ostream os(text);
  result.module->print(os);
  return text;
}

TEST(OnnxImport, StructureOnlyLeavesExternalDataUnread) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  std::vector<onnx::TensorProto> inits(2);
  inits[0] = externalTensor("big", onnx::TensorProto::FLOAT, {2, 3},
                            "missing.bin", 24);
  inits[1].set_name("inline");
  inits[1].set_data_type(onnx::TensorProto::FLOAT);
  inits[1].add_dims(3);
  for (float v : {1.0f, 2.0f, 3.0f})
    inits[1].add_float_data(v);
  onnx::ModelProto model = makeModel(inits, {2, 3});

  // The data file does not exist: a full import names it...
  mlir::MLIRContext fullCtx;
  std::string error;
  EXPECT_FALSE(importModelWith(fullCtx, dir, model, true, error));
  EXPECT_NE(error.find("initializer 'big': external data file 'missing.bin' "
                       "not found in"),
            std::string::npos)
      << error;

  // ... a structure-only import never opens it.
  mlir::MLIRContext ctx;
  std::optional<OnnxImportResult> result =
      importModelWith(ctx, dir, model, false, error);
  ASSERT_TRUE(result) << error;
  const ParamTable &params = result->params;
  ASSERT_EQ(params.size(), 2u);
  const ParamEntry *big = params.lookup("big");
  ASSERT_NE(big, nullptr);
  EXPECT_FALSE(big->hasData());
  EXPECT_TRUE(big->data.empty());
  EXPECT_EQ(big->dtype, WEFT_F32);
  EXPECT_EQ(big->shape, (std::vector<int64_t>{2, 3}));
  const ParamEntry *inlined = params.lookup("inline");
  ASSERT_NE(inlined, nullptr);
  EXPECT_TRUE(inlined->hasData()) << "inline initializers are still read";
  EXPECT_EQ(inlined->data, bytesOf<float>({1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(params.totalBytes(), 24 + 12);
  EXPECT_FALSE(params.checkHasData(error));
  EXPECT_NE(error.find("parameter 'big' has no data"), std::string::npos);

  // With the file in place, the full import gives the same module.
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  writeFile(dir.file("missing.bin"), values.data(), 24);
  mlir::MLIRContext fullCtx2;
  std::optional<OnnxImportResult> full =
      importModelWith(fullCtx2, dir, model, true, error);
  ASSERT_TRUE(full) << error;
  EXPECT_TRUE(full->params.lookup("big")->hasData());
  EXPECT_EQ(printModule(*full), printModule(*result));
}

TEST(OnnxImport, StructureOnlyChecksWhatNeedsNoFile) {
  TempDir dir;
  std::vector<onnx::TensorProto> inits = {
      externalTensor("w", onnx::TensorProto::FLOAT, {2, 3}, "w.bin", 20)};
  mlir::MLIRContext ctx;
  std::string error;
  EXPECT_FALSE(
      importModelWith(ctx, dir, makeModel(inits, {2, 3}), false, error));
  EXPECT_NE(error.find("initializer 'w' holds 20 bytes of data but its shape "
                       "[2,3] of FLOAT needs 24"),
            std::string::npos)
      << error;
}

/// y = Reshape(x, shape) with `shape` an int64 initializer [3, 2].
onnx::ModelProto makeReshapeModel(const onnx::TensorProto &shape) {
  onnx::ModelProto model = makeModel({}, {2, 3});
  onnx::GraphProto *graph = model.mutable_graph();
  graph->clear_node();
  graph->clear_output();
  *graph->add_initializer() = shape;
  onnx::NodeProto *reshape = graph->add_node();
  reshape->set_name("reshape");
  reshape->set_op_type("Reshape");
  reshape->add_input("x");
  reshape->add_input(shape.name());
  reshape->add_output("y");
  graph->add_output()->set_name("y");
  return model;
}

TEST(OnnxImport, StructureOnlyNeedsNoValueOfExternalData) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  onnx::ModelProto model = makeReshapeModel(externalTensor(
      "target_shape", onnx::TensorProto::INT64, {2}, "shape.bin", 16));
  std::vector<int64_t> dims = {3, 2};
  writeFile(dir.file("shape.bin"), dims.data(), 16);

  mlir::MLIRContext fullCtx;
  std::string error;
  std::optional<OnnxImportResult> full =
      importModelWith(fullCtx, dir, model, true, error);
  ASSERT_TRUE(full) << error;
  EXPECT_NE(printModule(*full).find("tensor<3x2xf32>"), std::string::npos);

  // The shape to fold is an integer initializer the import did not read.
  mlir::MLIRContext ctx;
  EXPECT_FALSE(importModelWith(ctx, dir, model, false, error));
  EXPECT_NE(error.find("node 'reshape' (Reshape): input initializer "
                       "'target_shape' is stored as external data, which a "
                       "structure-only import does not load"),
            std::string::npos)
      << error;

  // A float initializer small enough to be read as a constant, likewise:
  // Range needs the value of its start.
  onnx::ModelProto range = makeModel({}, {});
  onnx::GraphProto *graph = range.mutable_graph();
  graph->clear_node();
  graph->clear_output();
  *graph->add_initializer() =
      externalTensor("start", onnx::TensorProto::FLOAT, {}, "start.bin", 4);
  for (auto [name, value] :
       {std::pair<const char *, float>{"limit", 4.0f}, {"delta", 1.0f}}) {
    onnx::TensorProto *t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
  }
  onnx::NodeProto *node = graph->add_node();
  node->set_name("range");
  node->set_op_type("Range");
  for (const char *input : {"start", "limit", "delta"})
    node->add_input(input);
  node->add_output("r");
  onnx::NodeProto *add = graph->add_node();
  add->set_op_type("Add");
  add->add_input("x");
  add->add_input("r");
  add->add_output("y");
  graph->add_output()->set_name("y");
  mlir::MLIRContext rangeCtx;
  EXPECT_FALSE(importModelWith(rangeCtx, dir, range, false, error));
  EXPECT_NE(error.find("node 'range' (Range): initializer 'start' is stored "
                       "as external data, which a structure-only import does "
                       "not load; weft needs its value at import time"),
            std::string::npos)
      << error;
}

TEST(OnnxImport, ErrorsNameTheFile) {
  TempDir dir;
  mlir::MLIRContext ctx;
  std::string error;
  std::string path = dir.file("missing.onnx");
  EXPECT_FALSE(importOnnxFile(ctx, path, OnnxImportOptions(), error));
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  EXPECT_NE(error.back(), '\n');
}

} // namespace
