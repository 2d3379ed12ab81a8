//===- Sha256Test.cpp - SHA-256 against the FIPS 180-4 / NIST vectors -----===//

#include "weft/runtime/Sha256.h"

#include "TestUtil.h"

#include <gtest/gtest.h>
#include <string>

using namespace weft;
using weft::test::TempDir;

namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(
      sha256Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256Hex("The quick brown fox jumps over the lazy dog"),
            "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundaries) {
  // Lengths around the 55/56/64-byte padding edges, checked against a
  // one-shot hash fed in pieces of every size.
  for (size_t len : {55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 128u}) {
    std::string data(len, '\0');
    for (size_t i = 0; i < len; ++i)
      data[i] = static_cast<char>(i * 7 + 3);
    std::string whole = sha256Hex(data);
    for (size_t piece = 1; piece <= len; piece += 5) {
      Sha256 sha;
      for (size_t at = 0; at < len; at += piece)
        sha.update(data.data() + at, std::min(piece, len - at));
      EXPECT_EQ(Sha256::hex(sha.finish()), whole) << len << " " << piece;
    }
  }
  // 64 'a': a known vector exactly one block long.
  EXPECT_EQ(sha256Hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, FinishResets) {
  Sha256 sha;
  sha.update("garbage");
  sha.finish();
  sha.update("abc");
  EXPECT_EQ(Sha256::hex(sha.finish()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, File) {
  TempDir dir;
  std::string data(3 * 1024 * 1024 + 17, 'x');
  ASSERT_TRUE(test::writeBytes(dir.file("f"), data));
  std::string hex, error;
  uint64_t bytes = 0;
  ASSERT_TRUE(sha256File(dir.file("f"), hex, bytes, error)) << error;
  EXPECT_EQ(bytes, data.size());
  EXPECT_EQ(hex, sha256Hex(data));
  EXPECT_FALSE(sha256File(dir.file("missing"), hex, bytes, error));
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
  EXPECT_FALSE(sha256File(dir.path(), hex, bytes, error));
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
}

} // namespace
