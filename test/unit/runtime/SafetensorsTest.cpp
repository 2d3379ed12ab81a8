//===- SafetensorsTest.cpp - safetensors reading and writing --------------===//

#include "weft/runtime/Safetensors.h"

#include "weft/runtime/Json.h"

#include "TestUtil.h"

#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace weft;
using weft::test::readBytes;
using weft::test::TempDir;
using weft::test::writeBytes;

namespace {

/// A safetensors image: length prefix, `header` verbatim, then `data`.
std::string makeFile(const std::string &header, const std::string &data) {
  std::string out(8, '\0');
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return out + header + data;
}

TEST(Safetensors, DTypeNames) {
  const char *names[] = {"F32", "F16", "BF16", "F64", "I64",
                         "I32", "I8",  "U8",   "BOOL"};
  for (int i = 0; i <= WEFT_BOOL; ++i) {
    EXPECT_STREQ(safetensorsDTypeName(i), names[i]);
    WeftDType d;
    ASSERT_TRUE(parseSafetensorsDType(names[i], d));
    EXPECT_EQ(d, i);
  }
  WeftDType d;
  EXPECT_FALSE(parseSafetensorsDType("F8_E4M3", d));
  EXPECT_FALSE(parseSafetensorsDType("f32", d));
}

TEST(Safetensors, RoundTripEveryDType) {
  TempDir dir;
  std::string path = dir.file("params.safetensors");
  std::vector<std::vector<unsigned char>> storage;
  std::vector<SafetensorsTensorRef> refs;
  const std::vector<int64_t> shapes[] = {{2, 3}, {5},    {},     {1, 1, 3}, {0},
                                         {4},    {3, 1}, {2, 2}, {7}};
  for (int dt = 0; dt <= WEFT_BOOL; ++dt) {
    SafetensorsTensorRef ref;
    // Names out of alphabetical order: the order given is kept.
    ref.name = std::string("t") + std::to_string(9 - dt) + "." + dtypeName(dt);
    ref.dtype = dt;
    ref.shape = shapes[dt];
    int64_t count = 1;
    for (int64_t s : ref.shape)
      count *= s;
    std::vector<unsigned char> bytes(
        static_cast<size_t>(count * weftDTypeSize(dt)));
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = dt == WEFT_BOOL ? (i & 1) : static_cast<unsigned char>(i + dt);
    storage.push_back(std::move(bytes));
    ref.data = storage.back().data();
    refs.push_back(ref);
  }
  SafetensorsMetadata meta = {{"format", "pt"}, {"weft_rank", "0"}};
  std::string error;
  ASSERT_TRUE(writeSafetensors(path, refs, meta, error)) << error;
  EXPECT_EQ(dir.list(), std::vector<std::string>({"params.safetensors"}));

  // Layout: 8-byte length, a JSON header padded with spaces to 8 bytes.
  std::string file = readBytes(path);
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | static_cast<unsigned char>(file[i]);
  EXPECT_EQ(headerLen % 8, 0u);
  std::string header = file.substr(8, headerLen);
  EXPECT_EQ(header[0], '{');
  JsonValue root;
  ASSERT_TRUE(parseJson(header, root, error)) << error;
  ASSERT_EQ(root.size(), refs.size() + 1);
  EXPECT_EQ(root.keyAt(0), "__metadata__");
  EXPECT_EQ(root.get("__metadata__")->get("format")->asString(), "pt");
  EXPECT_EQ(root.keyAt(1), "t9.f32");
  const JsonValue *first = root.get("t9.f32");
  EXPECT_EQ(first->dump(),
            R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})");
  EXPECT_EQ(root.get("t8.f16")->get("data_offsets")->dump(), "[24,34]");

  SafetensorsReader reader;
  ASSERT_TRUE(reader.open(path, error)) << error;
  ASSERT_EQ(reader.tensors().size(), refs.size());
  EXPECT_EQ(reader.metadata(), meta);
  for (size_t i = 0; i < refs.size(); ++i) {
    const SafetensorsEntry &e = reader.tensors()[i];
    EXPECT_EQ(e.name, refs[i].name);
    EXPECT_EQ(e.dtype, refs[i].dtype);
    EXPECT_EQ(e.shape, refs[i].shape);
    EXPECT_EQ(reader.find(refs[i].name), &e);
    HostTensor t;
    ASSERT_TRUE(reader.readTensor(e, t, error)) << error;
    EXPECT_EQ(t.dtype, refs[i].dtype);
    EXPECT_EQ(t.shape, refs[i].shape);
    ASSERT_EQ(t.byteSize(), storage[i].size());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data.data()) % 64, 0u);
    if (t.byteSize()) {
      EXPECT_EQ(std::memcmp(t.data.data(), storage[i].data(), t.byteSize()), 0);
    }
  }
  EXPECT_EQ(reader.find("nope"), nullptr);
}

TEST(Safetensors, NoMetadataNoTensors) {
  TempDir dir;
  std::string path = dir.file("empty.safetensors");
  std::string error;
  ASSERT_TRUE(writeSafetensors(path, {}, {}, error)) << error;
  EXPECT_EQ(readBytes(path), makeFile("{}      ", ""));
  SafetensorsReader reader;
  ASSERT_TRUE(reader.open(path, error)) << error;
  EXPECT_TRUE(reader.tensors().empty());
  EXPECT_TRUE(reader.metadata().empty());
}

TEST(Safetensors, ReadsHandWrittenFile) {
  // Tensors stored out of header order, header padded, trailing spaces.
  TempDir dir;
  std::string path = dir.file("x.safetensors");
  float b[2] = {5, 6};
  int64_t a[1] = {-3};
  std::string data(reinterpret_cast<char *>(b), 8);
  data.append(reinterpret_cast<char *>(a), 8);
  ASSERT_TRUE(writeBytes(
      path,
      makeFile(R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[8,16]},)"
               R"( "b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})"
               "    ",
               data)));
  SafetensorsReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(path, error)) << error;
  HostTensor t;
  ASSERT_TRUE(reader.readTensor(*reader.find("a"), t, error)) << error;
  EXPECT_EQ(static_cast<int64_t *>(t.data.data())[0], -3);
  ASSERT_TRUE(reader.readTensor(*reader.find("b"), t, error)) << error;
  EXPECT_EQ(static_cast<float *>(t.data.data())[1], 6.0f);
}

/// Writes `img` and expects opening it to fail with a message that starts
/// with the path and contains `needle`.
void expectOpenError(const std::string &img, const std::string &needle) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  ASSERT_TRUE(writeBytes(path, img));
  SafetensorsReader reader;
  std::string error;
  EXPECT_FALSE(reader.open(path, error));
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  EXPECT_NE(error.find(needle), std::string::npos) << error;
  EXPECT_TRUE(reader.tensors().empty());
}

TEST(Safetensors, CorruptHeader) {
  std::string data(24, '\0');
  const std::string good =
      R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  expectOpenError("", "too small to be a safetensors file (0 bytes)");
  expectOpenError("abc", "too small");
  expectOpenError(std::string(8, '\0'), "invalid header length 0");
  // Length field larger than the file.
  std::string img = makeFile(good, data);
  img[0] = static_cast<char>(0xff);
  img[1] = static_cast<char>(0xff);
  expectOpenError(img, "header length 65535 exceeds the file size");
  std::string huge = makeFile(good, data);
  huge[7] = 1;
  expectOpenError(huge, "exceeds the file size");
  expectOpenError(makeFile("{\"w\": [1, 2", ""),
                  "invalid JSON header (offsets count from the header's start "
                  "at byte 8): byte 11: unexpected end of input");
  expectOpenError(makeFile("[1,2,3]", ""), "the header is not a JSON object");
  expectOpenError(makeFile(R"({"w":3})", ""),
                  "tensor 'w': entry is not an object");
  expectOpenError(
      makeFile(R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})",
               "ab"),
      "tensor 'w': unsupported dtype 'F8_E4M3'");
  expectOpenError(makeFile(R"({"w":{"shape":[2],"data_offsets":[0,8]}})",
                           std::string(8, '\0')),
                  "tensor 'w': missing or non-string \"dtype\"");
  expectOpenError(makeFile(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})",
                           std::string(8, '\0')),
                  "tensor 'w': missing or non-array \"shape\"");
  expectOpenError(
      makeFile(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
               std::string(8, '\0')),
      "tensor 'w': invalid dimension");
  expectOpenError(
      makeFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})",
               std::string(8, '\0')),
      "tensor 'w': \"data_offsets\" is not an array of two integers");
  expectOpenError(makeFile(R"({"__metadata__":{"a":1}})", ""),
                  "metadata 'a' is not a string");
  expectOpenError(makeFile(R"({"__metadata__":[]})", ""),
                  "\"__metadata__\" is not an object");
  expectOpenError(makeFile(R"({"w":{"dtype":"F32","shape":[2],)"
                           R"("data_offsets":[0,8]},"w":{}})",
                           std::string(8, '\0')),
                  "duplicate member name \"w\"");
}

TEST(Safetensors, BadOffsets) {
  std::string data(24, '\0');
  expectOpenError(
      makeFile(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,28]}})",
               data),
      "tensor 'w': data_offsets [0, 28] run past the end of the file (24 data "
      "bytes)");
  expectOpenError(
      makeFile(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[8,0]}})",
               data),
      "tensor 'w': data_offsets [8, 0] end before they begin");
  expectOpenError(
      makeFile(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})",
               data),
      "tensor 'w': holds 20 bytes but F32[2,3] needs 24");
  expectOpenError(
      makeFile(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
               R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
               data),
      "tensors 'a' and 'b' overlap");
  expectOpenError(
      makeFile(R"({"b":{"dtype":"I8","shape":[8],"data_offsets":[16,24]},)"
               R"("a":{"dtype":"I8","shape":[10],"data_offsets":[7,17]}})",
               data),
      "tensors 'a' and 'b' overlap");
  // Zero-sized tensors may sit anywhere.
  TempDir dir;
  std::string path = dir.file("z.safetensors");
  ASSERT_TRUE(writeBytes(
      path,
      makeFile(R"({"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]},)"
               R"("e":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]}})",
               data)));
  SafetensorsReader reader;
  std::string error;
  EXPECT_TRUE(reader.open(path, error)) << error;
}

TEST(Safetensors, Truncated) {
  TempDir dir;
  std::string path = dir.file("t.safetensors");
  float w[6] = {1, 2, 3, 4, 5, 6};
  std::string error;
  ASSERT_TRUE(writeSafetensors(path, {{"w", WEFT_F32, {2, 3}, w}}, {}, error))
      << error;
  std::string full = readBytes(path);
  // Cut into the data: the offsets now run past the end.
  expectOpenError(full.substr(0, full.size() - 4),
                  "tensor 'w': data_offsets [0, 24] run past the end");
  // Cut into the header.
  expectOpenError(full.substr(0, 20), "exceeds the file size");
}

TEST(Safetensors, MissingFile) {
  TempDir dir;
  SafetensorsReader reader;
  std::string error;
  std::string path = dir.file("none.safetensors");
  EXPECT_FALSE(reader.open(path, error));
  EXPECT_EQ(error, path + ": cannot open: No such file or directory");
}

TEST(Safetensors, WriterRejects) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  float x[1] = {1};
  std::string error;
  EXPECT_FALSE(writeSafetensors(
      path, {{"a", WEFT_F32, {1}, x}, {"a", WEFT_F32, {1}, x}}, {}, error));
  EXPECT_NE(error.find("tensor 'a': written twice"), std::string::npos);
  EXPECT_FALSE(
      writeSafetensors(path, {{"__metadata__", WEFT_F32, {1}, x}}, {}, error));
  EXPECT_NE(error.find("reserved"), std::string::npos);
  EXPECT_FALSE(writeSafetensors(path, {{"a", 99, {1}, x}}, {}, error));
  EXPECT_NE(error.find("invalid dtype"), std::string::npos);
  EXPECT_FALSE(writeSafetensors(path, {{"a", WEFT_F32, {-1}, x}}, {}, error));
  EXPECT_NE(error.find("invalid shape"), std::string::npos);
  EXPECT_TRUE(dir.list().empty());
}

} // namespace
