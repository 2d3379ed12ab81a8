//===- DataLoader.h - Training batches from .npy files --------------------===//
//
// `weft train --data NAME=FILE.npy` gives each input of a training model a
// file of N >= B rows (B: the global batch, dim 0 of the input) with the
// input's dtype and dims after dim 0. Step s uses rows [s*B, (s+1)*B) of
// every file, modulo N, wrapping row by row (DESIGN.md, "Data and training
// semantics"). The trainer tracks the absolute row position s*B (the "data
// position" of checkpoints); the loader maps it onto each file.
//
// Several ranks: B is the global batch (an input split along dim 0 over G
// ranks has B / G rows on each) and every rank checks the whole files
// against it; a rank copies only its block of the window (block i of G:
// rows [s*B + i*B/G, s*B + (i+1)*B/G) modulo N), or, for an input split
// along dim 1 (sequence parallelism), its block of every row.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_DATALOADER_H
#define WEFT_RUNTIME_EXECUTOR_DATALOADER_H

#include "weft/runtime/Executor.h"
#include "weft/runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weft {

/// `count` consecutive rows starting at row `start` of a file.
struct RowRange {
  int64_t start = 0;
  int64_t count = 0;
  bool operator==(const RowRange &o) const {
    return start == o.start && count == o.count;
  }
};

/// The rows [position, position + batch) modulo `rows` as contiguous ranges
/// of the file, in order (several when the window wraps; at most two when
/// batch <= rows). Requires position >= 0, batch >= 0 and rows >= 1.
std::vector<RowRange> rowWindow(int64_t position, int64_t batch, int64_t rows);

class DataLoader {
public:
  /// Matches the (name, file) pairs of --data with the signature's inputs
  /// (each exactly once) and reads every file, checking its dtype, its dims
  /// after dim 0 and that it has at least B rows. Errors are bad input.
  Status open(const ModelSignature &sig,
              const std::vector<std::pair<std::string, std::string>> &data);

  /// Rows of the file of input `index`.
  int64_t rows(size_t index) const { return sources_[index].rows; }
  /// The global batch B.
  int64_t batch() const { return batch_; }

  /// Copies the global batch whose first row is the absolute row `position`
  /// into `inputs[i]` (B rows of input i each, in signature order).
  void fill(int64_t position, std::vector<HostTensor *> &inputs) const;

private:
  struct Source {
    std::string file;
    HostTensor data;
    int64_t rows = 0;
    uint64_t rowBytes = 0; ///< of this rank's part of a row
    /// This rank's rows of the global window: [firstRow, + localRows).
    int64_t firstRow = 0, localRows = 0;
    /// Sequence parallelism: the rank's block `column` of `columns` in
    /// every row.
    int64_t column = 0, columns = 1;
  };
  std::vector<Source> sources_;
  int64_t batch_ = 0;
};

} // namespace weft

#endif // WEFT_RUNTIME_EXECUTOR_DATALOADER_H
