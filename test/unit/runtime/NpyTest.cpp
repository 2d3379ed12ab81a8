//===- NpyTest.cpp - .npy reading and writing -----------------------------===//

#include "weft/runtime/Npy.h"

#include "TestUtil.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>
#include <vector>

using namespace weft;
using weft::test::readBytes;
using weft::test::TempDir;
using weft::test::writeBytes;

namespace {

/// A .npy file image with header dict `dict` (padded to 64 bytes) and data.
std::string makeNpy(int major, const std::string &dict,
                    const std::string &data) {
  size_t preamble = major == 1 ? 10 : 12;
  std::string d = dict;
  size_t total = preamble + d.size() + 1;
  d.append((64 - total % 64) % 64, ' ');
  d.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  uint32_t len = static_cast<uint32_t>(d.size());
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>((len >> 8) & 0xff));
  if (major != 1) {
    out.push_back(static_cast<char>((len >> 16) & 0xff));
    out.push_back(static_cast<char>((len >> 24) & 0xff));
  }
  return out + d + data;
}

std::string f32Bytes(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(float));
}

struct DTypeCase {
  WeftDType dtype;
  const char *descr;
};

const DTypeCase kAllDTypes[] = {
    {WEFT_F32, "<f4"}, {WEFT_F16, "<f2"}, {WEFT_BF16, "<u2"},
    {WEFT_F64, "<f8"}, {WEFT_I64, "<i8"}, {WEFT_I32, "<i4"},
    {WEFT_I8, "|i1"},  {WEFT_U8, "|u1"},  {WEFT_BOOL, "|b1"},
};

TEST(Npy, RoundTripEveryDType) {
  TempDir dir;
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 3}, {5}, {}, {0, 4}, {2, 1, 3, 2}};
  for (const DTypeCase &c : kAllDTypes) {
    for (const auto &shape : shapes) {
      SCOPED_TRACE(std::string(dtypeName(c.dtype)) + formatShape(shape));
      int64_t count = 1;
      for (int64_t d : shape)
        count *= d;
      size_t bytes = static_cast<size_t>(count * weftDTypeSize(c.dtype));
      std::vector<unsigned char> data(bytes);
      for (size_t i = 0; i < bytes; ++i)
        data[i] = c.dtype == WEFT_BOOL ? (i % 3 == 0)
                                       : static_cast<unsigned char>(i * 37 + 5);
      std::string path = dir.file(std::string(dtypeName(c.dtype)) + ".npy");
      std::string error;
      ASSERT_TRUE(writeNpy(path, c.dtype, shape, data.data(), error)) << error;

      std::string file = readBytes(path);
      ASSERT_GE(file.size(), 64u);
      EXPECT_EQ(file.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
      size_t headerLen = static_cast<unsigned char>(file[8]) |
                         (static_cast<unsigned char>(file[9]) << 8);
      EXPECT_EQ((10 + headerLen) % 64, 0u);
      EXPECT_EQ(file[10 + headerLen - 1], '\n');
      EXPECT_NE(file.find(std::string("'descr': '") + c.descr + "'"),
                std::string::npos);
      EXPECT_EQ(file.size(), 10 + headerLen + bytes);

      HostTensor t;
      ASSERT_TRUE(readNpy(path, t, error, c.dtype)) << error;
      EXPECT_EQ(t.dtype, c.dtype);
      EXPECT_EQ(t.shape, shape);
      ASSERT_EQ(t.byteSize(), bytes);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data.data()) % 64, 0u);
      if (bytes) {
        EXPECT_EQ(std::memcmp(t.data.data(), data.data(), bytes), 0);
      }
      MappedNpy mapped;
      ASSERT_TRUE(mapNpy(path, mapped, error, c.dtype)) << error;
      EXPECT_EQ(mapped.dtype(), c.dtype);
      EXPECT_EQ(mapped.shape(), shape);
      ASSERT_EQ(mapped.byteSize(), bytes);
      if (bytes) {
        EXPECT_EQ(std::memcmp(mapped.data(), data.data(), bytes), 0);
      }
    }
  }
}

TEST(Npy, HeaderText) {
  EXPECT_EQ(npyHeader(WEFT_F32, {2, 3}).substr(10, 59),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  std::string h1 = npyHeader(WEFT_I64, {7});
  EXPECT_NE(h1.find("'shape': (7,), }"), std::string::npos);
  std::string h0 = npyHeader(WEFT_BOOL, {});
  EXPECT_NE(h0.find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(h0.find("'shape': (), }"), std::string::npos);
  EXPECT_EQ(h0.size() % 64, 0u);
}

TEST(Npy, ParseFromMemory) {
  std::string img =
      makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
              f32Bytes({1.5f, -2.0f}));
  HostTensor t;
  std::string error;
  ASSERT_TRUE(parseNpy(img.data(), img.size(), "mem", t, error)) << error;
  EXPECT_EQ(t.shape, std::vector<int64_t>({2}));
  EXPECT_EQ(static_cast<float *>(t.data.data())[1], -2.0f);
  EXPECT_FALSE(parseNpy(img.data(), img.size() - 1, "mem", t, error));
  EXPECT_EQ(error.rfind("mem: truncated data", 0), 0u) << error;
}

TEST(Npy, Versions2And3) {
  TempDir dir;
  for (int major : {2, 3}) {
    std::string path = dir.file("v" + std::to_string(major) + ".npy");
    ASSERT_TRUE(writeBytes(
        path, makeNpy(major,
                      "{'descr': '<f4', 'fortran_order': False, 'shape': "
                      "(1, 2), }",
                      f32Bytes({3.0f, 4.0f}))));
    HostTensor t;
    std::string error;
    ASSERT_TRUE(readNpy(path, t, error)) << error;
    EXPECT_EQ(t.shape, std::vector<int64_t>({1, 2}));
    EXPECT_EQ(static_cast<float *>(t.data.data())[0], 3.0f);
  }
}

TEST(Npy, HeaderVariants) {
  // Key order, double quotes, Python 2 longs, no trailing comma.
  TempDir dir;
  std::string path = dir.file("x.npy");
  ASSERT_TRUE(writeBytes(
      path, makeNpy(1,
                    "{\"shape\": (2L, 1L), \"fortran_order\": False, "
                    "\"descr\": \"<i4\"}",
                    std::string("\x01\x00\x00\x00\x02\x00\x00\x00", 8))));
  HostTensor t;
  std::string error;
  ASSERT_TRUE(readNpy(path, t, error)) << error;
  EXPECT_EQ(t.dtype, WEFT_I32);
  EXPECT_EQ(t.shape, std::vector<int64_t>({2, 1}));
  EXPECT_EQ(static_cast<int32_t *>(t.data.data())[1], 2);

  // Byte order does not matter for one-byte types.
  ASSERT_TRUE(writeBytes(
      path, makeNpy(1,
                    "{'descr': '<u1', 'fortran_order': False, 'shape': "
                    "(1,), }",
                    "\x07")));
  ASSERT_TRUE(readNpy(path, t, error)) << error;
  EXPECT_EQ(t.dtype, WEFT_U8);
}

TEST(Npy, BFloat16) {
  TempDir dir;
  uint16_t bits[2] = {0x3f80, 0xc000}; // 1.0, -2.0
  std::string path = dir.file("bf.npy");
  std::string error;
  ASSERT_TRUE(writeNpy(path, WEFT_BF16, {2}, bits, error)) << error;
  EXPECT_NE(readBytes(path).find("'descr': '<u2'"), std::string::npos);

  HostTensor t;
  ASSERT_TRUE(readNpy(path, t, error, WEFT_BF16)) << error;
  EXPECT_EQ(t.dtype, WEFT_BF16);
  EXPECT_EQ(static_cast<uint16_t *>(t.data.data())[1], 0xc000);

  // Without bf16 expected, uint16 has no weft dtype.
  EXPECT_FALSE(readNpy(path, t, error));
  EXPECT_NE(error.find(path), std::string::npos);
  EXPECT_NE(error.find("'<u2'"), std::string::npos) << error;
  EXPECT_FALSE(readNpy(path, t, error, WEFT_F32));

  // ml_dtypes' bfloat16 saves as void of two bytes.
  std::string raw(reinterpret_cast<const char *>(bits), 4);
  for (const char *descr : {"|V2", "<V2"}) {
    ASSERT_TRUE(writeBytes(path, makeNpy(1,
                                         std::string("{'descr': '") + descr +
                                             "', 'fortran_order': False, "
                                             "'shape': (2,), }",
                                         raw)));
    ASSERT_TRUE(readNpy(path, t, error, WEFT_BF16)) << error;
    EXPECT_EQ(t.dtype, WEFT_BF16);
    EXPECT_EQ(static_cast<uint16_t *>(t.data.data())[0], 0x3f80);
    EXPECT_FALSE(readNpy(path, t, error, kAnyDType));
  }
}

/// Writes `img` and expects readNpy to fail with a message that starts with
/// the file's name and contains `needle`.
void expectReadError(const std::string &img, const std::string &needle,
                     int expected = kAnyDType) {
  TempDir dir;
  std::string path = dir.file("bad.npy");
  ASSERT_TRUE(writeBytes(path, img));
  HostTensor t;
  std::string error;
  EXPECT_FALSE(readNpy(path, t, error, expected));
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  EXPECT_NE(error.find(needle), std::string::npos) << error;
  // The in-memory parser and the mapping agree.
  std::string memError, mapError;
  EXPECT_FALSE(parseNpy(img.data(), img.size(), path, t, memError, expected));
  EXPECT_EQ(memError, error);
  MappedNpy mapped;
  EXPECT_FALSE(mapNpy(path, mapped, mapError, expected));
  EXPECT_EQ(mapError, error);
}

TEST(Npy, Errors) {
  std::string data = f32Bytes({1, 2, 3, 4, 5, 6});
  expectReadError(
      makeNpy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
              data),
      "fortran_order arrays are not supported");
  expectReadError(
      makeNpy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }",
              data),
      "big-endian data (dtype '>f4') is not supported");
  expectReadError(
      makeNpy(1, "{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }",
              data),
      "big-endian");
  expectReadError(
      makeNpy(1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
              std::string(16, '\0')),
      "object arrays (dtype '|O') are not supported");
  expectReadError(
      makeNpy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }",
              data),
      "unsupported dtype '<c8'");
  expectReadError(
      makeNpy(1, "{'descr': '<u4', 'fortran_order': False, 'shape': (6,), }",
              data),
      "unsupported dtype '<u4'");
  expectReadError(
      makeNpy(1,
              "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': "
              "(6,), }",
              data),
      "structured dtypes are not supported");
  expectReadError(
      makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
              data.substr(0, 20)),
      "truncated data: the header promises f32[2,3] (24 bytes) but only 20 "
      "bytes follow it");
  expectReadError(
      makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
              ""),
      "truncated data");
  expectReadError(
      makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
              data),
      "8 unexpected bytes after the data of f32[2,2]");
  expectReadError("PK\x03\x04 this is a zip", "not a .npy file (bad magic)");
  expectReadError("", "not a .npy file (bad magic)");
  expectReadError(std::string("\x93NUMPY\x04\x00\x10\x00", 10),
                  "unsupported .npy format version 4.0");
  expectReadError(std::string("\x93NUMPY\x01\x00\x80\x00{'descr'", 17),
                  "truncated header");
  expectReadError(std::string("\x93NUMPY\x01", 7), "bad magic");
  expectReadError(makeNpy(1, "{'descr': '<f4', 'shape': (2, 3), }", data),
                  "malformed header (missing 'fortran_order')");
  expectReadError(
      makeNpy(1,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), "
              "'extra': 1}",
              data),
      "unexpected key 'extra'");
  expectReadError(
      makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}",
              data),
      "bad dimension");
  expectReadError(
      makeNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}",
              data),
      "'shape' is not a tuple");
  expectReadError(makeNpy(1, "{'descr': '<f4', 'fortran_order': False, ", data),
                  "malformed header");
  expectReadError(makeNpy(1,
                          "{'descr': '<f4', 'fortran_order': False, 'shape': "
                          "(99999999999, 99999999999, 99999999999)}",
                          data),
                  "is too large");
}

TEST(Npy, MissingFile) {
  TempDir dir;
  HostTensor t;
  std::string error;
  std::string path = dir.file("nope.npy");
  EXPECT_FALSE(readNpy(path, t, error));
  EXPECT_EQ(error, path + ": cannot open: No such file or directory");
  EXPECT_FALSE(readNpy(dir.path(), t, error));
  EXPECT_NE(error.find("not a regular file"), std::string::npos);
}

/// This process's resident set in bytes (/proc/self/statm).
static int64_t residentBytes() {
  long long size = 0, resident = 0;
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return -1;
  int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : -1;
}

// A mapped file is read as it is touched: 64 MiB mapped, one row of it
// read, and the process holds hardly more than before (a --data file larger
// than memory trains); the mapping outlives a move and ends with its owner.
TEST(Npy, MapReadsOnlyWhatIsTouched) {
  TempDir dir;
  const int64_t rows = 16384, cols = 1024; // 64 MiB of f32
  std::string path = dir.file("big.npy");
  {
    std::vector<float> row(cols);
    std::string error;
    std::string file = npyHeader(WEFT_F32, {rows, cols});
    std::FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(file.data(), 1, file.size(), f);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        row[c] = static_cast<float>(r * cols + c);
      std::fwrite(row.data(), sizeof(float), cols, f);
    }
    std::fclose(f);
  }
  // Out of the page cache's accounting for this process: only touched
  // pages count in its resident set.
  const int64_t before = residentBytes();
  ASSERT_GT(before, 0);
  MappedNpy mapped;
  std::string error;
  ASSERT_TRUE(mapNpy(path, mapped, error, WEFT_F32)) << error;
  EXPECT_EQ(mapped.shape(), (std::vector<int64_t>{rows, cols}));
  const float *values = static_cast<const float *>(mapped.data());
  EXPECT_EQ(values[5000 * cols + 7], static_cast<float>(5000 * cols + 7));
  MappedNpy moved = std::move(mapped);
  EXPECT_EQ(mapped.data(), nullptr);
  EXPECT_EQ(static_cast<const float *>(moved.data())[rows * cols - 1],
            static_cast<float>(rows * cols - 1));
  EXPECT_LT(residentBytes() - before, 8 << 20)
      << "mapping 64 MiB should not read it all";
}

// A mapped file truncated under the reader: a bus error said in words, exit
// code 1, not a silent crash.
TEST(NpyDeathTest, TruncatedUnderTheMapping) {
  TempDir dir;
  std::string path = dir.file("cut.npy");
  std::vector<float> values(1 << 16, 1.5f);
  std::string error;
  ASSERT_TRUE(writeNpy(path, WEFT_F32, {1 << 16}, values.data(), error))
      << error;
  EXPECT_EXIT(
      {
        MappedNpy mapped;
        if (!mapNpy(path, mapped, error, WEFT_F32))
          std::_Exit(3);
        if (::truncate(path.c_str(), 128) != 0)
          std::_Exit(4);
        volatile float sink =
            static_cast<const float *>(mapped.data())[(1 << 16) - 1];
        (void)sink;
        std::_Exit(0);
      },
      testing::ExitedWithCode(1),
      "bus error \\(SIGBUS\\) reading a memory-mapped file: a --data .npy "
      "file was truncated");
}

TEST(Npy, AtomicWrite) {
  TempDir dir;
  std::string path = dir.file("out.npy");
  float a[2] = {1, 2}, b[3] = {3, 4, 5};
  std::string error;
  ASSERT_TRUE(writeNpy(path, WEFT_F32, {2}, a, error)) << error;
  ASSERT_TRUE(writeNpy(path, WEFT_F32, {3}, b, error)) << error;
  EXPECT_EQ(dir.list(), std::vector<std::string>({"out.npy"}));
  HostTensor t;
  ASSERT_TRUE(readNpy(path, t, error)) << error;
  EXPECT_EQ(t.shape, std::vector<int64_t>({3}));
  EXPECT_EQ(static_cast<float *>(t.data.data())[2], 5.0f);

  // A missing directory fails and leaves nothing behind.
  EXPECT_FALSE(
      writeNpy(dir.file("no/such/dir/x.npy"), WEFT_F32, {2}, a, error));
  EXPECT_NE(error.find("no/such/dir"), std::string::npos) << error;
  EXPECT_EQ(dir.list(), std::vector<std::string>({"out.npy"}));
}

} // namespace
