//===- Canonicalization.cpp - Rewrite patterns of weft ops ----------------===//
//
// Canonicalization patterns registered through hasCanonicalizer. Chains that
// collapse into one op of the same kind (reshape, transpose, broadcast_to)
// are folders instead, in Folders.cpp, so that createOrFold applies them too.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/WeftOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace weft;

namespace {
/// matmul(transpose(a), b), where the transpose swaps only the last two
/// dims, is matmul(a, b) with transpose_a flipped; likewise for b. The
/// matmul kernel reads transposed operands in place, saving the copy.
struct FoldTransposeIntoMatMul : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool swapsLastTwoDims(TransposeOp transpose) {
    ArrayRef<int64_t> p = transpose.getPermutation();
    int64_t rank = p.size();
    if (rank < 2 || p[rank - 2] != rank - 1 || p[rank - 1] != rank - 2)
      return false;
    for (int64_t i = 0; i < rank - 2; ++i)
      if (p[i] != i)
        return false;
    return true;
  }

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    Value lhs = op.getLhs(), rhs = op.getRhs();
    bool transposeA = op.getTransposeA(), transposeB = op.getTransposeB();
    bool changed = false;
    if (auto t = lhs.getDefiningOp<TransposeOp>(); t && swapsLastTwoDims(t)) {
      lhs = t.getInput();
      transposeA = !transposeA;
      changed = true;
    }
    if (auto t = rhs.getDefiningOp<TransposeOp>(); t && swapsLastTwoDims(t)) {
      rhs = t.getInput();
      transposeB = !transposeB;
      changed = true;
    }
    if (!changed)
      return rewriter.notifyMatchFailure(op, "no transposed operand");
    // In place: the op keeps what earlier passes marked on it (its
    // pipeline stage, whether it is backward or weight-gradient work).
    rewriter.modifyOpInPlace(op, [&] {
      op.getLhsMutable().assign(lhs);
      op.getRhsMutable().assign(rhs);
      op.setTransposeA(transposeA);
      op.setTransposeB(transposeB);
    });
    return success();
  }
};

} // namespace

void MatMulOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *context) {
  patterns.add<FoldTransposeIntoMatMul>(context);
}
