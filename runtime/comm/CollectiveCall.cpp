//===- CollectiveCall.cpp - What the collective kernels share -------------===//
#include "CollectiveCall.h"

#include "weft/runtime/Diagnostics.h"

#include <climits>
#include <cstring>
#include <vector>

namespace weft {
namespace comm {

using cpu::TensorArg;

CollectiveCall::CollectiveCall(const char *kernel, void *const *bufs,
                               const int64_t *desc, int64_t leading,
                               int tensors)
    : args_(kernel, bufs, desc) {
  if (tensors == kBucket) {
    args_.expectTensors(2, INT_MAX);
    for (int t = 1; t < args_.numTensors(); ++t)
      args_.expectDType(t, args_.tensor(0).dtype);
  } else {
    args_.expectTensors(tensors, tensors);
    if (tensors == 2)
      args_.expectDType(1, args_.tensor(0).dtype);
  }
  args_.expectAttrs(leading + 1);
  numAxes_ = args_.attr(leading);
  if (numAxes_ < 0)
    args_.invalid("negative number of mesh axes");
  axes_ = args_.attrArray(leading + 1, numAxes_);
  std::string why;
  if (!context().mesh().validAxes(axes_, numAxes_, why))
    fail(why);
  groupSize_ = context().mesh().groupSize(axes_, numAxes_);
}

int64_t CollectiveCall::groupIndex() const {
  return context().mesh().groupIndex(axes_, numAxes_);
}

Communicator &CollectiveCall::group() const {
  return context().mesh().group(axes_, numAxes_);
}

Reduction CollectiveCall::reduction(int64_t i) const {
  int64_t code = args_.attr(i);
  if (!isReduction(code))
    fail("unknown reduction code " + std::to_string(code) +
         " (0 sum, 1 max, 2 min, 3 avg)");
  return static_cast<Reduction>(code);
}

int64_t CollectiveCall::dim(int64_t i, const TensorArg &t,
                            const char *what) const {
  int64_t d = args_.attr(i);
  if (d < 0 || d >= t.rank)
    fail(std::string(what) + " " + std::to_string(d) + " is not a dim of " +
         typeOf(t));
  return d;
}

std::string CollectiveCall::typeOf(const TensorArg &t) {
  std::string s = std::string(weftDTypeName(t.dtype)) + "[";
  for (int d = 0; d < t.rank; ++d)
    s += (d ? "," : "") + std::to_string(t.dims[d]);
  return s + "]";
}

void CollectiveCall::fail(const std::string &what) const {
  std::string group = context().mesh().groupName(axes_, numAxes_);
  fatal(kExitFailure, "kernel %s over %s: %s", args_.kernel(), group.c_str(),
        what.c_str());
}

Pieces CollectiveCall::pieces(int first, int n, const TensorArg &whole,
                              const char *wholeName) const {
  Pieces p;
  int64_t total = 0;
  for (int t = first; t < first + n; ++t) {
    const TensorArg &piece = args_.tensor(t);
    if (piece.numel % groupSize_ != 0)
      fail("piece " + std::to_string(t - first) + " " + typeOf(piece) +
           " does not split into " + std::to_string(groupSize_) +
           " blocks (the group has " + std::to_string(groupSize_) + " ranks)");
    p.data.push_back(piece.data);
    p.counts.push_back(piece.numel / groupSize_);
    total += p.counts.back();
  }
  if (total != whole.numel)
    fail(std::string(wholeName) + " " + typeOf(whole) + " holds " +
         std::to_string(whole.numel) + " elements, not one block of each of " +
         "the " + std::to_string(n) + " pieces (" + std::to_string(total) +
         ")");
  return p;
}

Request CollectiveCall::reduceScatterPieces(int64_t reduction,
                                            void *&result) const {
  const int n = args_.numTensors() - 1;
  const TensorArg &y = args_.tensor(n);
  Pieces p = pieces(0, n, y, "y");
  std::vector<const void *> in(p.data.begin(), p.data.end());
  result = y.data;
  return group().reduceScatterPiecesStart(in, p.counts, y.data, y.dtype,
                                          this->reduction(reduction));
}

Request CollectiveCall::allGatherPieces(void *&result) const {
  const TensorArg &in = x();
  Pieces p = pieces(1, args_.numTensors() - 1, in, "x");
  result = p.data[0];
  return group().allGatherPiecesStart(in.data, p.data, p.counts, in.dtype);
}

void CollectiveCall::expectJoined(const TensorArg &small, const char *smallName,
                                  const TensorArg &big, const char *bigName,
                                  int64_t dim) const {
  bool ok = small.rank == big.rank;
  for (int d = 0; ok && d < small.rank; ++d)
    ok = big.dims[d] == (d == dim ? small.dims[d] * groupSize_ : small.dims[d]);
  if (!ok)
    fail(std::string(bigName) + " " + typeOf(big) + " is not " +
         std::to_string(groupSize_) + " blocks of " + smallName + " " +
         typeOf(small) + " joined along dim " + std::to_string(dim) +
         " (the group has " + std::to_string(groupSize_) + " ranks)");
}

void CollectiveCall::expectSameShape() const {
  const TensorArg &a = x(), &b = y();
  bool ok = a.rank == b.rank;
  for (int d = 0; ok && d < a.rank; ++d)
    ok = a.dims[d] == b.dims[d];
  if (!ok)
    fail("x " + typeOf(a) + " and y " + typeOf(b) + " differ in shape");
}

int64_t CollectiveCall::expectAllToAll(int64_t split, int64_t concat) const {
  const TensorArg &a = x();
  const int64_t g = groupSize_;
  if (a.dims[split] % g != 0)
    fail("x " + typeOf(a) + " cannot be cut into " + std::to_string(g) +
         " blocks along split_dim " + std::to_string(split));
  std::vector<int64_t> blockDims(a.dims, a.dims + a.rank);
  blockDims[split] /= g;
  TensorArg block = a;
  block.dims = blockDims.data();
  block.numel = a.numel / g;
  expectJoined(block, "one block of x", y(), "y", concat);
  return block.numel;
}

int64_t CollectiveCall::expectBroadcast(int64_t i) const {
  expectSameShape();
  const int64_t root = attr(i);
  if (root < 0 || root >= groupSize_)
    fail("root " + std::to_string(root) + " is not a group index (the " +
         "group has " + std::to_string(groupSize_) + " ranks)");
  if (x().data != y().data && groupIndex() == root)
    std::memcpy(y().data, x().data, static_cast<size_t>(x().bytes()));
  return root;
}

BlockLayout::BlockLayout(const TensorArg &whole, int64_t dim, int64_t g)
    : blocks(g) {
  for (int64_t d = 0; d < dim; ++d)
    outer *= whole.dims[d];
  int64_t inner = whole.elemSize();
  for (int64_t d = dim + 1; d < whole.rank; ++d)
    inner *= whole.dims[d];
  row = whole.dims[dim] / g * inner;
}

void BlockLayout::pack(const void *whole, void *packed) const {
  const uint8_t *from = static_cast<const uint8_t *>(whole);
  uint8_t *to = static_cast<uint8_t *>(packed);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(to + (b * outer + o) * row, from + (o * blocks + b) * row,
                  static_cast<size_t>(row));
}

void BlockLayout::unpack(const void *packed, void *whole) const {
  const uint8_t *from = static_cast<const uint8_t *>(packed);
  uint8_t *to = static_cast<uint8_t *>(whole);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(to + (o * blocks + b) * row, from + (b * outer + o) * row,
                  static_cast<size_t>(row));
}

void BlockLayout::extract(const void *whole, int64_t j, void *dst) const {
  const uint8_t *from = static_cast<const uint8_t *>(whole);
  uint8_t *to = static_cast<uint8_t *>(dst);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(to + o * row, from + (o * blocks + j) * row,
                static_cast<size_t>(row));
}

} // namespace comm
} // namespace weft
