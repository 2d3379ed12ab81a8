//===- CollectiveCall.h - What the collective kernels share ---------------===//
//
// Every collective kernel is x -> y of one dtype (mesh_offset: y alone),
// some leading attributes, then the mesh axes of its group ([count,
// axes...]). CollectiveCall reads
// that head once and checks it; BlockLayout describes a tensor as the g
// blocks of one of its dims, which are not contiguous unless the dim is
// the leading one (every dim before it has extent 1).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_COMM_COLLECTIVECALL_H
#define WEFT_RUNTIME_COMM_COLLECTIVECALL_H

#include "../kernels/cpu/KernelArgs.h"
#include "weft/runtime/Comm.h"

#include <string>
#include <vector>

namespace weft {
namespace comm {

/// A bucket's pieces, each the group's blocks of one tensor: data and the
/// element count of one block.
struct Pieces {
  std::vector<void *> data;
  std::vector<int64_t> counts;
};

class CollectiveCall {
public:
  /// For `tensors`: any number from two on, all of one dtype (a bucket).
  static constexpr int kBucket = -1;

  /// `leading`: the attributes before the mesh axes; `tensors`: 2 (x -> y,
  /// one dtype), 1 (y alone) or kBucket.
  CollectiveCall(const char *kernel, void *const *bufs, const int64_t *desc,
                 int64_t leading, int tensors = 2);

  const cpu::KernelArgs &args() const { return args_; }
  const cpu::TensorArg &x() const { return args_.tensor(0); }
  const cpu::TensorArg &y() const { return args_.tensor(1); }
  int64_t attr(int64_t i) const { return args_.attr(i); }
  /// The group over the call's mesh axes.
  int64_t groupSize() const { return groupSize_; }
  int64_t groupIndex() const;
  Communicator &group() const;

  /// Reads attribute `i` as a reduction code.
  Reduction reduction(int64_t i) const;
  /// Reads attribute `i` as a dim of tensor `t`.
  int64_t dim(int64_t i, const cpu::TensorArg &t, const char *what) const;

  /// Fails unless `big` is g blocks of `small` joined along `dim` (the
  /// other dims equal).
  void expectJoined(const cpu::TensorArg &small, const char *smallName,
                    const cpu::TensorArg &big, const char *bigName,
                    int64_t dim) const;
  /// Tensors [first, first + n) as pieces of g blocks each, of which
  /// `whole` holds one block apiece, one after the other.
  Pieces pieces(int first, int n, const cpu::TensorArg &whole,
                const char *wholeName) const;
  /// A bucket kernel's collective, started: reduce_scatter_pieces (x_1..x_n
  /// -> y, the reduction in attribute `reduction`) or all_gather_pieces
  /// (x -> y_1..y_n). `result` is y, or y_1.
  Request reduceScatterPieces(int64_t reduction, void *&result) const;
  Request allGatherPieces(void *&result) const;
  /// Fails unless `a` and `b` have the same shape.
  void expectSameShape() const;
  /// all_to_all: x's `split` dim cuts into g blocks that, joined along
  /// `concat`, make y. Returns one block's element count.
  int64_t expectAllToAll(int64_t split, int64_t concat) const;
  /// broadcast: x and y alike, attribute i a group index (the root, which
  /// it returns); the root's x is copied into y.
  int64_t expectBroadcast(int64_t i) const;
  [[noreturn]] void fail(const std::string &what) const;

  /// "f32[2,3]".
  static std::string typeOf(const cpu::TensorArg &t);

private:
  cpu::KernelArgs args_;
  const int64_t *axes_ = nullptr;
  int64_t numAxes_ = 0;
  int64_t groupSize_ = 1;
};

/// A tensor viewed as [outer][g][row bytes] around one dim split into g
/// blocks; packed, the same bytes are [g][outer][row].
struct BlockLayout {
  int64_t outer = 1; ///< product of the dims before the split one
  int64_t row = 0;   ///< bytes of one block per outer index
  int64_t blocks = 1;

  BlockLayout(const cpu::TensorArg &whole, int64_t dim, int64_t g);
  /// The blocks are contiguous already (packing is a plain copy).
  bool contiguous() const { return outer == 1; }
  int64_t blockBytes() const { return outer * row; }

  /// whole [outer][g][row] -> packed [g][outer][row].
  void pack(const void *whole, void *packed) const;
  /// packed [g][outer][row] -> whole [outer][g][row].
  void unpack(const void *packed, void *whole) const;
  /// Block j of whole -> dst [outer][row].
  void extract(const void *whole, int64_t j, void *dst) const;
};

} // namespace comm
} // namespace weft

#endif // WEFT_RUNTIME_COMM_COLLECTIVECALL_H
