//===- ImportDet.cpp - ONNX Det as Gaussian elimination unrolled ---------===//
//
// Det of [*, M, M]: LAPACK's way (getrf, as numpy and PyTorch): Gaussian
// elimination with partial pivoting, the determinant the product of the
// pivots with the sign of the row swaps. The M - 1 elimination steps are
// unrolled at import into weft ops on all the matrices at once: the pivot
// row is the first largest |a| of the column at or below the diagonal
// (weft.topk), the swap a weft.gather of the rows, the elimination a
// broadcast multiply-subtract. Its gradient is then the ops' own: for an
// invertible matrix det(A) A^-T, as PyTorch's. A zero column (a singular
// matrix) gives a zero pivot and a zero determinant, without dividing by
// it.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

/// The most rows Det unrolls its elimination for (about 20 ops a step).
static constexpr int64_t kMaxDetRows = 256;

LogicalResult onnx_import::importDet(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "X");
  if (!x)
    return failure();
  ArrayRef<int64_t> shape = getShape(x);
  if (shape.size() < 2 || shape.back() != shape[shape.size() - 2] ||
      !isa<FloatType>(getElementType(x)))
    return imp.emitError("input X (" + formatType(x.getType()) +
                         ") should be float square matrices [*, M, M]");
  const int64_t m = shape.back();
  if (m > kMaxDetRows)
    return imp.emitError("matrices of " + Twine(m) +
                         " rows are not supported: weft unrolls the "
                         "elimination at import, for at most " +
                         Twine(kMaxDetRows) + " rows");
  ArrayRef<int64_t> batchShape = shape.drop_back(2);
  int64_t batch = 1;
  for (int64_t d : batchShape)
    batch *= d;
  OpBuilder &b = imp.getBuilder();
  Type i64 = b.getI64Type();
  auto ints = [&](ArrayRef<int64_t> dims, ArrayRef<int64_t> values) {
    return imp.createConstant(
        DenseElementsAttr::get(RankedTensorType::get(dims, i64), values));
  };
  SmallVector<int64_t> rowIndex, matrixStart;
  for (int64_t i = 0; i < m; ++i)
    rowIndex.push_back(i);
  for (int64_t i = 0; i < batch; ++i)
    matrixStart.push_back(i * m * m);
  Value rows = ints({1, m}, rowIndex);
  Value columns = ints({1, 1, m}, rowIndex);
  Value starts = ints({batch, 1, 1}, matrixStart);
  Value a = imp.createReshape(x, {batch, m, m});
  // The rows of each matrix, reordered: a[b, order[b, i], :].
  auto takeRows = [&](Value matrices, Value order) {
    Value at =
        e.add(e.add(starts, e.mul(imp.createReshape(order, {batch, m, 1}),
                                  e.scalar(starts, static_cast<double>(m)))),
              columns);
    Value flat =
        matrices ? imp.createReshape(matrices, {batch * m * m}) : Value();
    Value taken =
        flat && at
            ? imp.createInferred<GatherOp>(flat, at, b.getI64IntegerAttr(0))
            : Value();
    return taken ? imp.createReshape(taken, {batch, m, m}) : Value();
  };
  Value sign;
  for (int64_t k = 0; k + 1 < m && a; ++k) {
    // The pivot: the first largest |a[i, k]|, i >= k.
    Value column = cropAxis(imp, cropAxis(imp, a, 1, k, 0), 2, k, m - k - 1);
    Value magnitude =
        column ? imp.createReshape(e.abs(column), {batch, m - k}) : Value();
    if (!magnitude)
      return failure();
    SmallVector<Value> top = imp.createMulti<TopKOp>(
        TypeRange{RankedTensorType::get({batch, 1}, getElementType(x)),
                  RankedTensorType::get({batch, 1}, i64)},
        magnitude, b.getI64IntegerAttr(1), b.getI64IntegerAttr(1),
        b.getBoolAttr(true));
    if (top.empty())
      return failure();
    Value pivotRow = e.add(top[1], e.scalar(top[1], static_cast<double>(k)));
    // Rows k and pivotRow swapped: order[i] = pivotRow at k, k at pivotRow.
    Value kth = e.scalar(rows, static_cast<double>(k));
    Value order =
        e.select(e.binary<EqualOp>(rows, kth), pivotRow,
                 e.select(e.binary<EqualOp>(rows, pivotRow), kth, rows));
    a = takeRows(a, order);
    Value swapped = e.unary<NotOp>(e.binary<EqualOp>(pivotRow, kth));
    Value flip =
        e.select(swapped, e.scalar(a, -1.0), e.scalar(a, 1.0)); // [B, 1]
    sign = sign ? e.mul(sign, flip) : flip;
    // Rows below k less their multiple of row k.
    Value pivot = cropAxis(imp, cropAxis(imp, a, 1, k, m - k - 1), 2, k,
                           m - k - 1); // [B, 1, 1]
    Value zero = e.scalar(pivot, 0.0);
    Value safe =
        e.select(e.binary<EqualOp>(pivot, zero), e.scalar(pivot, 1.0), pivot);
    Value columnK = cropAxis(imp, a, 2, k, m - k - 1); // [B, M, 1]
    Value below = e.greater(imp.createReshape(rows, {1, m, 1}), kth);
    Value factor = e.select(below, e.div(columnK, safe), zero);
    Value rowK = cropAxis(imp, a, 1, k, m - k - 1); // [B, 1, M]
    a = e.sub(a, e.mul(factor, rowK));
  }
  if (!a)
    return failure();
  // The product of the diagonal.
  SmallVector<int64_t> diagonal;
  for (int64_t i = 0; i < m; ++i)
    diagonal.push_back(i * m + i);
  Value flat = imp.createReshape(a, {batch, m * m});
  Value det;
  for (int64_t i = 0; i < m; ++i) {
    Value entry = e.gatherAt(flat, 1, {diagonal[i]}); // [B, 1]
    det = det ? e.mul(det, entry) : entry;
  }
  if (sign)
    det = e.mul(det, sign);
  return imp.setResult(det ? imp.createReshape(det, batchShape) : Value());
}
